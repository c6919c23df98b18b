//! A model written as a checkpoint folder in the original layout (docs/host-path.md §1.1):
//! `model.safetensors`, `encoder/config.json`, `rl_agent_config.json`, `tokenizer/`, so that
//! other runtimes (laya-mlx, laya on PyTorch, laya-cuda) load exactly the weights laya-bench
//! runs. `builtin:tiny` keeps its weight bytes; `synthetic:NAME` is built in memory from its
//! seed, so a published-size checkpoint never has to be downloaded or committed.
//!
//! The folder also holds `laya-bench-export.json`: the source spec and seed and every file's
//! size and sha256, so a run on the folder can be traced back to what was written.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::laya::bundle::{builtin, sha256_hex, Bundle, Weights};
use crate::model::synthetic::random_weights;

/// Name of the provenance file written beside the checkpoint.
pub const MANIFEST: &str = "laya-bench-export.json";

/// A model that cannot be exported, or a folder that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The model is already a folder (or a Core ML bundle): there is nothing to export.
    #[error("{0}")]
    NotExportable(String),
    /// The output folder holds files and `overwrite` was not given.
    #[error("{0} is not empty: choose a new folder, or pass --overwrite to replace its checkpoint files")]
    NotEmpty(PathBuf),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The weights could not be serialized.
    #[error("cannot serialize the weights: {0}")]
    Weights(String),
}

/// One written file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedFile {
    /// Path relative to the folder, `/`-separated.
    pub path: String,
    /// Size.
    pub bytes: u64,
    /// sha256 (hex) of the bytes written.
    pub sha256: String,
}

/// The provenance file's content (`schema_version` 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportManifest {
    /// Format version of this file.
    pub schema_version: u32,
    /// `laya-bench VERSION`.
    pub tool: String,
    /// The model spec exported (`builtin:tiny`, `synthetic:multilingual`).
    pub source: String,
    /// Seed of synthetic weights; `None` for `builtin:tiny`.
    pub seed: Option<u64>,
    /// Every checkpoint file, in write order.
    pub files: Vec<ExportedFile>,
}

/// `max_position_embeddings` written to `encoder/config.json`: ModernBERT's 8192, or the
/// checkpoint's `max_len` where that is larger (runtimes require `max_len` ≤ it).
fn max_positions(bundle: &Bundle) -> usize {
    bundle.agent.max_len.max(8192)
}

/// Writes `bundle` (`builtin:tiny` or `synthetic:NAME`) as a checkpoint folder at `dir`.
pub fn export_checkpoint(
    bundle: &Bundle,
    dir: &Path,
    overwrite: bool,
) -> Result<ExportManifest, ExportError> {
    let (weights, seed) = match &bundle.weights {
        Weights::Static(bytes) => (bytes.to_vec(), None),
        Weights::Synthetic { seed } => (
            random_weights(&bundle.encoder, &bundle.agent, *seed)
                .to_safetensors()
                .map_err(|e| ExportError::Weights(e.to_string()))?,
            Some(*seed),
        ),
        Weights::Safetensors(_) => {
            return Err(ExportError::NotExportable(format!(
                "{} is already a checkpoint folder: use it as it is",
                bundle.source
            )))
        }
        Weights::CoreMl(_) => {
            return Err(ExportError::NotExportable(format!(
                "{} is a Core ML bundle: export its FP32 source checkpoint instead",
                bundle.source
            )))
        }
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExportError::Io { path, source }
    };
    if dir.exists() && !overwrite && std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
        return Err(ExportError::NotEmpty(dir.to_path_buf()));
    }
    let t = &bundle.tokenizer;
    let ids = crate::laya::config::SpecialIds { cls: t.cls.id, sep: t.sep.id, pad: t.pad.id };
    let encoder = bundle.encoder.to_json(max_positions(bundle), ids);
    let agent = bundle.agent.to_json(&format!("laya-bench export of {}", bundle.source));
    let files: [(&str, &[u8]); 6] = [
        ("tokenizer/tokenizer.json", builtin::TOKENIZER),
        ("tokenizer/tokenizer_config.json", builtin::TOKENIZER_CONFIG),
        ("tokenizer/special_tokens_map.json", builtin::SPECIAL_TOKENS_MAP),
        ("encoder/config.json", encoder.as_bytes()),
        ("rl_agent_config.json", agent.as_bytes()),
        ("model.safetensors", &weights),
    ];
    let mut written = Vec::with_capacity(files.len());
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, bytes).map_err(io(&path))?;
        written.push(ExportedFile { path: rel.into(), bytes: bytes.len() as u64, sha256: sha256_hex(bytes) });
    }
    let manifest = ExportManifest {
        schema_version: 1,
        tool: format!("laya-bench {}", env!("CARGO_PKG_VERSION")),
        source: bundle.source.clone(),
        seed,
        files: written,
    };
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| ExportError::Weights(e.to_string()))?;
    let path = dir.join(MANIFEST);
    std::fs::write(&path, text + "\n").map_err(io(&path))?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::ModelSpec;
    use crate::model::synthetic::tiny_shape;

    /// `builtin:tiny`, a folder, or `synthetic:tiny`: the tiny test shape with the embedded
    /// tokenizer's 1400-token vocabulary (ModelSpec::parse knows only the published names).
    fn load(spec: &str) -> Bundle {
        let model = match spec.strip_prefix("synthetic:") {
            Some(name) => ModelSpec::Synthetic(name.into()),
            None => ModelSpec::parse(spec).unwrap(),
        };
        Bundle::load(&model, |name| {
            (name == "tiny").then(|| {
                let (mut e, a) = tiny_shape();
                e.vocab_size = 1400;
                (e, a)
            })
        })
        .unwrap()
    }

    #[test]
    fn an_exported_model_loads_back_with_the_same_configs_and_weights() {
        let dir = tempfile::tempdir().unwrap();
        for spec in ["builtin:tiny", "synthetic:tiny"] {
            let b = load(spec);
            let out = dir.path().join(spec.replace(':', "-"));
            let m = export_checkpoint(&b, &out, false).unwrap();
            let back = load(&out.display().to_string());
            assert_eq!(back.encoder, b.encoder, "{spec}");
            assert_eq!(back.agent, b.agent, "{spec}");
            let Weights::Safetensors(bytes) = &back.weights else { panic!("a folder loads safetensors") };
            let model = m.files.iter().find(|f| f.path == "model.safetensors").unwrap();
            assert_eq!(sha256_hex(bytes), model.sha256);
            match &b.weights {
                Weights::Static(original) => assert_eq!(bytes.as_slice(), *original, "builtin bytes kept"),
                Weights::Synthetic { seed } => {
                    assert_eq!(m.seed, Some(*seed));
                    let w = random_weights(&b.encoder, &b.agent, *seed);
                    assert_eq!(bytes.as_slice(), w.to_safetensors().unwrap().as_slice());
                }
                _ => unreachable!(),
            }
            let manifest: ExportManifest =
                serde_json::from_str(&std::fs::read_to_string(out.join(MANIFEST)).unwrap()).unwrap();
            assert_eq!(manifest, m);
            assert_eq!(manifest.files.len(), 6);
        }
    }

    #[test]
    fn a_used_folder_or_a_checkpoint_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), b"x").unwrap();
        let b = load("builtin:tiny");
        let e = export_checkpoint(&b, dir.path(), false).unwrap_err();
        assert!(matches!(e, ExportError::NotEmpty(_)) && e.to_string().contains("--overwrite"), "{e}");
        export_checkpoint(&b, dir.path(), true).unwrap();
        let folder = load(&dir.path().display().to_string());
        let e = export_checkpoint(&folder, &dir.path().join("again"), false).unwrap_err();
        assert!(e.to_string().contains("already a checkpoint folder"), "{e}");
    }
}
