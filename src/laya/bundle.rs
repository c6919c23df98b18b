//! Model bundles on disk and built in (docs/host-path.md §1): the original checkpoint layout, the
//! Core ML ANE bundle (`laya-coreml-ane`), the ordinary Core ML export (`laya-coreml`), the
//! embedded `builtin:tiny` model and in-memory `synthetic:NAME` shapes. A `hub:NAME[@REVISION]`
//! checkpoint reaches this module as a folder: the caller (the command edge, or the MLX backend
//! for its source) resolves it to its verified snapshot folder first.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::config::{AgentConfig, ConfigError, EncoderConfig, OptionLayout};
use super::coreml_format::description::{self, ModelDescription};
use super::coreml_format::{check_declared_ane, check_declared_ordinary, ordinary_caps, AneShape};
use super::tokenizer::{Tokenizer, TokenizerError};

/// The embedded default model's files (`fixtures/tiny`).
pub mod builtin {
    /// `model.safetensors`.
    pub static MODEL: &[u8] = include_bytes!("../../fixtures/tiny/model.safetensors");
    /// `rl_agent_config.json`.
    pub static AGENT_CONFIG: &str = include_str!("../../fixtures/tiny/rl_agent_config.json");
    /// `encoder/config.json`.
    pub static ENCODER_CONFIG: &str = include_str!("../../fixtures/tiny/encoder/config.json");
    /// `tokenizer/tokenizer.json`.
    pub static TOKENIZER: &[u8] = include_bytes!("../../fixtures/tiny/tokenizer/tokenizer.json");
    /// `tokenizer/tokenizer_config.json`.
    pub static TOKENIZER_CONFIG: &[u8] =
        include_bytes!("../../fixtures/tiny/tokenizer/tokenizer_config.json");
    /// `tokenizer/special_tokens_map.json` (not read by the host; transformers takes the
    /// special tokens' names from it where `tokenizer_config.json` gives one as an object).
    pub static SPECIAL_TOKENS_MAP: &[u8] =
        include_bytes!("../../fixtures/tiny/tokenizer/special_tokens_map.json");
}

/// A bundle that cannot be used, naming the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The model spec is not one we know.
    #[error("unknown model `{0}`: use builtin:tiny, synthetic:multilingual, synthetic:english, hub:NAME[@REVISION], or a checkpoint folder")]
    UnknownSpec(String),
    /// A `hub:` spec reached [`ModelSpec::parse`] unresolved: its caller resolves `hub:`
    /// specs to their snapshot folders first.
    #[error("model `hub:{0}`: a hub checkpoint is resolved to its folder before it is parsed")]
    HubUnresolved(String),
    /// A required file is missing or unreadable.
    #[error("{path}: {detail}")]
    Io { path: String, detail: String },
    /// A config file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The tokenizer folder is invalid.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// A Core ML manifest is invalid or does not match its files.
    #[error("{file}: {detail}")]
    Manifest { file: String, detail: String },
    /// A Core ML package's model description cannot be read, or disagrees with the bundle's
    /// `coreml_config.json` and configs (the message names the file, input or field).
    #[error("{0}")]
    Package(String),
}

/// How a model spec names a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `builtin:tiny`, embedded in the binary.
    Builtin,
    /// `synthetic:NAME`: published shape, random weights built in memory.
    Synthetic(String),
    /// A folder on disk.
    Dir(PathBuf),
}

impl ModelSpec {
    /// Parse `builtin:tiny`, `synthetic:NAME` or a path, without I/O. A `hub:` spec is
    /// refused ([`BundleError::HubUnresolved`]): the caller resolves it to its snapshot folder
    /// ([`ModelSpec::Dir`]) first.
    pub fn parse(spec: &str) -> Result<Self, BundleError> {
        if let Some(rest) = spec.strip_prefix("hub:") {
            return Err(BundleError::HubUnresolved(rest.into()));
        }
        if let Some(name) = spec.strip_prefix("builtin:") {
            return if name == "tiny" {
                Ok(Self::Builtin)
            } else {
                Err(BundleError::UnknownSpec(spec.into()))
            };
        }
        if let Some(name) = spec.strip_prefix("synthetic:") {
            return if matches!(name, "multilingual" | "english") {
                Ok(Self::Synthetic(name.into()))
            } else {
                Err(BundleError::UnknownSpec(spec.into()))
            };
        }
        if spec.is_empty() {
            return Err(BundleError::UnknownSpec(spec.into()));
        }
        Ok(Self::Dir(PathBuf::from(spec)))
    }
}

/// Where a bundle's weights come from.
#[derive(Debug, Clone)]
pub enum Weights {
    /// Bytes of a `model.safetensors` with every tensor of docs/host-path.md §1.4.
    Safetensors(std::sync::Arc<Vec<u8>>),
    /// Embedded bytes (`builtin:tiny`).
    Static(&'static [u8]),
    /// Random weights of a published shape, built on demand with this seed.
    Synthetic {
        /// PRNG seed.
        seed: u64,
    },
    /// A Core ML package whose body runs only through Core ML.
    CoreMl(CoreMlBundle),
}

/// The Core ML parts of a bundle (validated on any OS, run only on macOS).
#[derive(Debug, Clone, PartialEq)]
pub struct CoreMlBundle {
    /// `laya-coreml-ane` or `laya-coreml`.
    pub format: String,
    /// Precision named by the manifest.
    pub precision: Option<String>,
    /// Fixed or maximum length.
    pub max_length: usize,
    /// Rows per call.
    pub batch_size: usize,
    /// Marker slots.
    pub max_options: usize,
    /// `model.mlpackage` path.
    pub package: PathBuf,
    /// `host_weights.safetensors` (ANE bundles).
    pub host_weights: Option<PathBuf>,
    /// Files verified against the manifest: (relative path, sha256).
    pub verified_files: Vec<(String, String)>,
    /// The package's declared inputs and outputs, read from its model specification and
    /// checked against the manifest and configs when the bundle loads (boxed: it is read
    /// rarely and would make every `Weights` value large).
    pub description: Box<ModelDescription>,
}

/// A loaded bundle: configs, tokenizer and a weight source.
pub struct Bundle {
    /// How the user named it.
    pub source: String,
    /// Encoder config.
    pub encoder: EncoderConfig,
    /// Agent config.
    pub agent: AgentConfig,
    /// Tokenizer with specials resolved.
    pub tokenizer: Tokenizer,
    /// Weights.
    pub weights: Weights,
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle").field("source", &self.source).field("encoder", &self.encoder).finish()
    }
}

/// Lowercase hex sha256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn read(path: &Path) -> Result<Vec<u8>, BundleError> {
    std::fs::read(path).map_err(|e| BundleError::Io {
        path: path.display().to_string(),
        detail: format!("cannot read ({e}); is this a Laya checkpoint folder?"),
    })
}

fn read_text(path: &Path) -> Result<String, BundleError> {
    String::from_utf8(read(path)?)
        .map_err(|_| BundleError::Io { path: path.display().to_string(), detail: "is not UTF-8 text".into() })
}

/// The embedded model's two configs.
fn builtin_configs() -> Result<(EncoderConfig, AgentConfig), BundleError> {
    Ok((
        EncoderConfig::from_json(builtin::ENCODER_CONFIG, "builtin:tiny/encoder/config.json")?,
        AgentConfig::from_json(builtin::AGENT_CONFIG, "builtin:tiny/rl_agent_config.json")?,
    ))
}

/// A checkpoint folder's two configs (`encoder/config.json`, `rl_agent_config.json`).
fn dir_configs(dir: &Path) -> Result<(EncoderConfig, AgentConfig), BundleError> {
    if !dir.is_dir() {
        let what = if dir.exists() { "is not a folder" } else { "does not exist" };
        return Err(BundleError::Io {
            path: dir.display().to_string(),
            detail: format!(
                "{what}; pass a checkpoint folder, builtin:tiny, synthetic:NAME or hub:NAME (laya, laya-multilingual, laya-typed-decisions)"
            ),
        });
    }
    let config = |rel: &str| -> Result<(String, String), BundleError> {
        let path = dir.join(rel);
        Ok((read_text(&path)?, path.display().to_string()))
    };
    let (text, name) = config("encoder/config.json")?;
    let encoder = EncoderConfig::from_json(&text, &name)?;
    let (text, name) = config("rl_agent_config.json")?;
    Ok((encoder, AgentConfig::from_json(&text, &name)?))
}

/// The embedded tokenizer (also used by synthetic models).
pub fn builtin_tokenizer() -> Result<Tokenizer, BundleError> {
    Ok(Tokenizer::from_bytes(builtin::TOKENIZER, builtin::TOKENIZER_CONFIG, "builtin:tiny/tokenizer")?)
}

impl Bundle {
    /// Load a bundle from a spec. Synthetic shapes take their configs from `synthetic_configs`.
    pub fn load(
        spec: &ModelSpec,
        synthetic_configs: impl Fn(&str) -> Option<(EncoderConfig, AgentConfig)>,
    ) -> Result<Self, BundleError> {
        match spec {
            ModelSpec::Builtin => {
                let (encoder, agent) = builtin_configs()?;
                Ok(Self {
                    source: "builtin:tiny".into(),
                    encoder,
                    agent,
                    tokenizer: builtin_tokenizer()?,
                    weights: Weights::Static(builtin::MODEL),
                })
            }
            ModelSpec::Synthetic(name) => {
                let (encoder, agent) = Self::read_configs(spec, synthetic_configs)?;
                Ok(Self {
                    source: format!("synthetic:{name}"),
                    encoder,
                    agent,
                    tokenizer: builtin_tokenizer()?,
                    weights: Weights::Synthetic { seed: 0x1a7a_5eed },
                })
            }
            ModelSpec::Dir(dir) => Self::load_dir(dir),
        }
    }

    /// The two configs of a model spec, without its tokenizer or weights (what `bounds` reads
    /// of a model): the same files [`Bundle::load`] reads them from.
    pub fn read_configs(
        spec: &ModelSpec,
        synthetic_configs: impl Fn(&str) -> Option<(EncoderConfig, AgentConfig)>,
    ) -> Result<(EncoderConfig, AgentConfig), BundleError> {
        match spec {
            ModelSpec::Builtin => Ok(builtin_configs()?),
            ModelSpec::Synthetic(name) => {
                synthetic_configs(name).ok_or_else(|| BundleError::UnknownSpec(format!("synthetic:{name}")))
            }
            ModelSpec::Dir(dir) => dir_configs(dir),
        }
    }

    fn load_dir(dir: &Path) -> Result<Self, BundleError> {
        let (encoder, agent) = dir_configs(dir)?;
        let file = |rel: &str| dir.join(rel);
        let tok_dir = file("tokenizer");
        let tokenizer = Tokenizer::from_bytes(
            &read(&tok_dir.join("tokenizer.json"))?,
            &read(&tok_dir.join("tokenizer_config.json"))?,
            &tok_dir.display().to_string(),
        )?;
        let manifest_path = file("coreml_config.json");
        let weights = if manifest_path.exists() {
            Weights::CoreMl(load_coreml_manifest(dir, &encoder, &agent)?)
        } else {
            Weights::Safetensors(std::sync::Arc::new(read(&file("model.safetensors"))?))
        };
        Ok(Self { source: dir.display().to_string(), encoder, agent, tokenizer, weights })
    }
}

fn manifest_err(file: &Path, detail: impl Into<String>) -> BundleError {
    BundleError::Manifest { file: file.display().to_string(), detail: detail.into() }
}

/// Validate a `coreml_config.json` and re-hash every file it lists.
fn load_coreml_manifest(
    dir: &Path,
    encoder: &EncoderConfig,
    agent: &AgentConfig,
) -> Result<CoreMlBundle, BundleError> {
    let path = dir.join("coreml_config.json");
    let manifest: Value = serde_json::from_str(&read_text(&path)?)
        .map_err(|e| manifest_err(&path, format!("not valid JSON ({e})")))?;
    let format = manifest.get("format").and_then(Value::as_str).unwrap_or("");
    let version = manifest.get("format_version").and_then(Value::as_i64);
    let shape = manifest.get("shape").and_then(Value::as_object);
    let get_usize = |key: &str| shape.and_then(|s| s.get(key)).and_then(Value::as_u64).map(|v| v as usize);
    let (batch_size, max_options, max_length) = match format {
        "laya-coreml-ane" => {
            if version != Some(1) {
                return Err(manifest_err(&path, "Unsupported ANE bundle format (format_version must be 1); re-export the bundle with laya-coreml 0.5"));
            }
            let flexible = shape.and_then(|s| s.get("flexible")).and_then(Value::as_bool);
            if get_usize("batch_size") != Some(1) || get_usize("max_options") != Some(32) || flexible != Some(false) {
                return Err(manifest_err(
                    &path,
                    "ANE runtime requires a fixed B1/K32 bundle (shape.batch_size 1, shape.max_options 32, shape.flexible false)",
                ));
            }
            if agent.option_layout != OptionLayout::Sequential {
                return Err(manifest_err(
                    &dir.join("rl_agent_config.json"),
                    "Legacy ANE bundles use sequential RoPE; export this checkpoint with laya_coreml.convert",
                ));
            }
            let l = get_usize("max_length")
                .filter(|&l| l > 0)
                .ok_or_else(|| manifest_err(&path, "shape.max_length must be a positive integer"))?;
            (1, 32, l)
        }
        "laya-coreml" => {
            if version != Some(1) {
                return Err(manifest_err(&path, "Unsupported Core ML export format (format_version must be 1)"));
            }
            let b = get_usize("batch_size").ok_or_else(|| manifest_err(&path, "shape.batch_size is missing"))?;
            let k = get_usize("max_options").unwrap_or(32);
            let l = get_usize("max_length").ok_or_else(|| manifest_err(&path, "shape.max_length is missing"))?;
            let layout = manifest.get("option_layout").and_then(Value::as_str).unwrap_or("sequential");
            let want = match agent.option_layout {
                OptionLayout::Sequential => "sequential",
                OptionLayout::Parallel => "parallel",
            };
            if layout != want {
                return Err(manifest_err(&path, "Checkpoint option_layout does not match the exported graph; re-export it"));
            }
            (b, k, l)
        }
        _ => {
            return Err(manifest_err(
                &path,
                format!("Unsupported Core ML export format {format:?}; expected \"laya-coreml-ane\" or \"laya-coreml\""),
            ))
        }
    };
    let files = manifest
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(|| manifest_err(&path, "`files` must map each relative path to {\"sha256\": ...}"))?;
    let mut verified = Vec::with_capacity(files.len());
    for (rel, entry) in files {
        if !is_safe_relative(rel) {
            return Err(manifest_err(
                &path,
                format!("Bundle file names must be relative paths inside the model directory (got {rel:?})"),
            ));
        }
        let want = entry
            .get("sha256")
            .and_then(Value::as_str)
            .ok_or_else(|| manifest_err(&path, format!("files[{rel:?}].sha256 is missing")))?;
        let target = dir.join(rel);
        let got = if target.is_dir() { tree_sha256(&target)? } else { sha256_hex(&read(&target)?) };
        if got != want {
            return Err(manifest_err(&path, format!(
                "Bundle file does not match its manifest: {rel} (sha256 {got}, manifest {want}); the download is corrupt or was modified, fetch the bundle again"
            )));
        }
        verified.push((rel.clone(), got));
    }
    let host_weights = (format == "laya-coreml-ane").then(|| dir.join("host_weights.safetensors"));
    if let Some(hw) = &host_weights {
        check_host_weights(hw, encoder, agent)?;
    }
    let package = dir.join("model.mlpackage");
    let description = declared_interface(&package, &manifest, &path, format, max_length, encoder, agent)?;
    Ok(CoreMlBundle {
        format: format.into(),
        precision: manifest.get("precision").and_then(Value::as_str).map(str::to_string),
        max_length,
        batch_size,
        max_options,
        package,
        host_weights,
        verified_files: verified,
        description: Box::new(description),
    })
}

/// Read the package's model description and check it against what the manifest and configs
/// promise and the adapter will feed and read ([`super::coreml_format::check_declared_ane`],
/// [`super::coreml_format::check_declared_ordinary`]), on every OS. Nothing is compiled or
/// loaded.
fn declared_interface(
    package: &Path,
    manifest: &Value,
    manifest_path: &Path,
    format: &str,
    max_length: usize,
    encoder: &EncoderConfig,
    agent: &AgentConfig,
) -> Result<ModelDescription, BundleError> {
    let desc = description::read_package(package).map_err(|e| BundleError::Package(e.to_string()))?;
    let fail = |detail: String, fields: &str| {
        BundleError::Package(format!("{}: {detail} (checked against {fields})", desc.file))
    };
    if format == "laya-coreml-ane" {
        let shape = AneShape {
            length: max_length,
            width: encoder.hidden_size,
            vocab: encoder.vocab_size,
            half_window: encoder.local_attention / 2,
        };
        check_declared_ane(&desc, shape).map_err(|e| {
            fail(
                e.to_string(),
                &format!(
                    "L = {} shape.max_length {max_length} and D = encoder/config.json hidden_size {}",
                    manifest_path.display(),
                    encoder.hidden_size
                ),
            )
        })?;
    } else {
        let caps = ordinary_caps(manifest, &manifest_path.display().to_string())
            .map_err(|e| BundleError::Package(e.to_string()))?;
        let parallel = agent.option_layout == OptionLayout::Parallel;
        check_declared_ordinary(&desc, &caps, parallel, agent.num_actions).map_err(|e| {
            fail(
                e.to_string(),
                &format!(
                    "{} shape and rl_agent_config.json ({} actions, {} layout)",
                    manifest_path.display(),
                    agent.num_actions,
                    if parallel { "parallel" } else { "sequential" }
                ),
            )
        })?;
    }
    Ok(desc)
}

fn is_safe_relative(name: &str) -> bool {
    if name.is_empty() || name.contains('\\') {
        return false;
    }
    let p = Path::new(name);
    p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// sha256 over a folder: every file's relative path and bytes, in sorted order.
pub fn tree_sha256(dir: &Path) -> Result<String, BundleError> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for rel in files {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(read(&dir.join(&rel))?);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), BundleError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| BundleError::Io { path: dir.display().to_string(), detail: e.to_string() })?;
    for entry in entries {
        let entry =
            entry.map_err(|e| BundleError::Io { path: dir.display().to_string(), detail: e.to_string() })?;
        let path = entry.path();
        if path.is_dir() {
            collect_files(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// The tensors an ANE bundle's `host_weights.safetensors` holds (docs/host-path.md §1.7).
pub const ANE_HOST_TENSORS: [&str; 6] = [
    "encoder.embeddings.tok_embeddings.weight",
    "type_emb.weight",
    "act_head.0.weight",
    "act_head.0.bias",
    "act_head.2.weight",
    "act_head.2.bias",
];

/// The ANE host tensors: embedding, type embedding and action head, F16 or F32, right shapes.
fn check_host_weights(path: &Path, encoder: &EncoderConfig, agent: &AgentConfig) -> Result<(), BundleError> {
    let bytes = read(path)?;
    let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
        manifest_err(path, format!("not a valid safetensors file ({e}); fetch the bundle again"))
    })?;
    let d = encoder.hidden_size;
    let a = agent.num_actions;
    let shapes: [Vec<usize>; 6] =
        [vec![encoder.vocab_size, d], vec![3, d], vec![256, d + 4], vec![256], vec![a, 256], vec![a]];
    for (name, shape) in ANE_HOST_TENSORS.into_iter().zip(shapes) {
        let t = st
            .tensor(name)
            .map_err(|_| manifest_err(path, format!("tensor `{name}` is missing; the ANE host needs it")))?;
        if !matches!(t.dtype(), safetensors::Dtype::F16 | safetensors::Dtype::F32) {
            return Err(manifest_err(
                path,
                format!("tensor `{name}` is {:?}; the ANE host reads F16 or F32 only", t.dtype()),
            ));
        }
        if t.shape() != shape.as_slice() {
            return Err(manifest_err(
                path,
                format!("tensor `{name}` has shape {:?}, expected {:?}", t.shape(), shape),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_model_specs() {
        assert_eq!(ModelSpec::parse("builtin:tiny").unwrap(), ModelSpec::Builtin);
        assert_eq!(ModelSpec::parse("synthetic:english").unwrap(), ModelSpec::Synthetic("english".into()));
        assert!(ModelSpec::parse("builtin:huge").is_err());
        assert!(ModelSpec::parse("synthetic:xl").is_err());
        assert_eq!(ModelSpec::parse("ckpt").unwrap(), ModelSpec::Dir("ckpt".into()));
        // a hub: spec is resolved to its folder by the caller, never parsed as a path
        assert!(matches!(ModelSpec::parse("hub:laya"), Err(BundleError::HubUnresolved(n)) if n == "laya"));
    }

    #[test]
    fn manifest_paths_must_stay_inside_the_bundle() {
        assert!(is_safe_relative("model.mlpackage/Manifest.json"));
        assert!(!is_safe_relative("/etc/passwd"));
        assert!(!is_safe_relative("../x"));
        assert!(!is_safe_relative("a\\b"));
        assert!(!is_safe_relative(""));
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
