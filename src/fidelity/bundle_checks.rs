//! Static checks of a candidate model folder against its source, on any OS: the tokenizer
//! and config files must match, and an ANE bundle's `host_weights.safetensors` must hold the
//! source checkpoint's embedding, type embedding and action head (exactly, or within FP16
//! rounding when stored as FP16). The manifest's per-file sha256 and the fixed B1/K32/L shape
//! are verified when the bundle loads (`laya::bundle`); [`BundleChecks`] reports them.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::coreml::description::DeclaredFeature;
use crate::laya::bundle::{builtin, CoreMlBundle, ModelSpec};
use crate::model::weights::DecisionWeights;

/// The ANE host tensors compared with the source checkpoint, in docs/host-path.md §1.7 order.
pub use crate::laya::bundle::ANE_HOST_TENSORS as HOST_TENSORS;

/// A candidate that is not the source's model, or a file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Tokenizer or config differs between source and candidate.
    #[error("the candidate's {what} differs from the source's ({detail}); convert-check compares a candidate with the checkpoint it was made from")]
    Mismatch {
        /// Which file, e.g. `tokenizer/tokenizer.json`.
        what: String,
        /// Which keys differ.
        detail: String,
    },
    /// A file could not be read or parsed.
    #[error("{path}: {detail}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong and what to do.
        detail: String,
    },
}

/// The four files that define what a model reads: configs and tokenizer, parsed as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFiles {
    /// `encoder/config.json` (`None` for a synthetic shape, which has no file).
    pub encoder: Option<Value>,
    /// `rl_agent_config.json` (`None` for a synthetic shape).
    pub agent: Option<Value>,
    /// `tokenizer/tokenizer.json`.
    pub tokenizer: Value,
    /// `tokenizer/tokenizer_config.json`.
    pub tokenizer_config: Value,
}

fn parse_json(bytes: &[u8], path: &str) -> Result<Value, CheckError> {
    serde_json::from_slice(bytes)
        .map_err(|e| CheckError::Io { path: path.into(), detail: format!("not valid JSON ({e})") })
}

fn read_json(path: &Path) -> Result<Value, CheckError> {
    let bytes = std::fs::read(path).map_err(|e| CheckError::Io {
        path: path.display().to_string(),
        detail: format!("cannot read ({e})"),
    })?;
    parse_json(&bytes, &path.display().to_string())
}

impl ModelFiles {
    /// The files of a model spec (embedded for `builtin:tiny`; synthetic shapes use the
    /// embedded tokenizer and have no config files).
    pub fn load(spec: &ModelSpec) -> Result<Self, CheckError> {
        let tok = || -> Result<(Value, Value), CheckError> {
            Ok((
                parse_json(builtin::TOKENIZER, "builtin:tiny/tokenizer/tokenizer.json")?,
                parse_json(builtin::TOKENIZER_CONFIG, "builtin:tiny/tokenizer/tokenizer_config.json")?,
            ))
        };
        match spec {
            ModelSpec::Builtin => {
                let (tokenizer, tokenizer_config) = tok()?;
                Ok(Self {
                    encoder: Some(parse_json(builtin::ENCODER_CONFIG.as_bytes(), "encoder/config.json")?),
                    agent: Some(parse_json(builtin::AGENT_CONFIG.as_bytes(), "rl_agent_config.json")?),
                    tokenizer,
                    tokenizer_config,
                })
            }
            ModelSpec::Synthetic(_) => {
                let (tokenizer, tokenizer_config) = tok()?;
                Ok(Self { encoder: None, agent: None, tokenizer, tokenizer_config })
            }
            ModelSpec::Dir(dir) => Ok(Self {
                encoder: Some(read_json(&dir.join("encoder/config.json"))?),
                agent: Some(read_json(&dir.join("rl_agent_config.json"))?),
                tokenizer: read_json(&dir.join("tokenizer/tokenizer.json"))?,
                tokenizer_config: read_json(&dir.join("tokenizer/tokenizer_config.json"))?,
            }),
        }
    }
}

/// Top-level keys whose values differ between two JSON documents (sorted; `(document)` when
/// either is not an object).
pub fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<String> = x
                .iter()
                .filter(|(k, v)| y.get(*k) != Some(*v))
                .map(|(k, _)| k.clone())
                .chain(y.keys().filter(|k| !x.contains_key(*k)).cloned())
                .collect();
            keys.sort();
            keys.dedup();
            keys
        }
        _ if a == b => Vec::new(),
        _ => vec!["(document)".into()],
    }
}

/// [`check_same_model`] for `--backend SPEC` against `--model SOURCE_SPEC`: bad input (exit
/// 2) saying the candidate is not a conversion of the source, with why.
pub fn check_conversion(
    (source_spec, source): (&str, &ModelFiles),
    (spec, candidate): (&str, &ModelFiles),
    configs_equal: (bool, bool),
) -> Result<(), crate::error::Error> {
    check_same_model(source, candidate, configs_equal).map_err(|e| {
        crate::error::Error::input(format!("--backend {spec} is not a conversion of --model {source_spec}"))
            .because(e)
    })
}

/// Fail unless the candidate reads the same tokenizer and configs as the source. Configs are
/// compared as resolved by the loader (`configs_equal`) when a side has no files.
pub fn check_same_model(
    source: &ModelFiles,
    candidate: &ModelFiles,
    configs_equal: (bool, bool),
) -> Result<(), CheckError> {
    let compare = |what: &str, a: Option<&Value>, b: Option<&Value>, resolved_equal: bool| match (a, b) {
        (Some(a), Some(b)) => {
            let keys = differing_keys(a, b);
            if keys.is_empty() {
                Ok(())
            } else {
                Err(CheckError::Mismatch { what: what.into(), detail: format!("keys {}", keys.join(", ")) })
            }
        }
        _ if resolved_equal => Ok(()),
        _ => Err(CheckError::Mismatch { what: what.into(), detail: "the resolved configs differ".into() }),
    };
    compare("tokenizer/tokenizer.json", Some(&source.tokenizer), Some(&candidate.tokenizer), true)?;
    compare(
        "tokenizer/tokenizer_config.json",
        Some(&source.tokenizer_config),
        Some(&candidate.tokenizer_config),
        true,
    )?;
    compare("encoder/config.json", source.encoder.as_ref(), candidate.encoder.as_ref(), configs_equal.0)?;
    compare("rl_agent_config.json", source.agent.as_ref(), candidate.agent.as_ref(), configs_equal.1)
}

/// How one host tensor compares with the source checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostTensorCheck {
    /// Tensor name.
    pub name: String,
    /// Stored dtype: `F32` or `F16`.
    pub dtype: String,
    /// `exact` (F32: every bit equal) or `fp16_rounding` (F16: every value equals the source's
    /// FP32 value rounded to nearest-even FP16).
    pub comparison: String,
    /// Elements compared.
    pub elements: usize,
    /// Elements that do not match under `comparison`.
    pub mismatched_elements: usize,
    /// Largest |stored − source| (as f64).
    pub max_abs_difference: f64,
    /// `mismatched_elements == 0`.
    pub matches: bool,
}

/// The static checks of a Core ML candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleChecks {
    /// `laya-coreml-ane` or `laya-coreml`.
    pub format: String,
    /// The manifest's `precision`.
    pub precision: Option<String>,
    /// Files re-hashed against the manifest (all matched, or the bundle would not load).
    pub verified_files: Vec<VerifiedFile>,
    /// Rows per call.
    pub batch_size: usize,
    /// Fixed (ANE) or maximum length.
    pub max_length: usize,
    /// Marker slots.
    pub max_options: usize,
    /// Whether the shape is the ANE runtime's fixed B1/K32/L.
    pub fixed_b1_k32: bool,
    /// Per host tensor (ANE bundles); empty for an ordinary Core ML export.
    pub host_weights: Vec<HostTensorCheck>,
    /// Why host weights were not compared, when they were not.
    pub host_weights_note: Option<String>,
    /// The package's declared inputs (names, data types, shapes, flexible shapes), read from
    /// its model specification on any OS.
    pub declared_inputs: Vec<DeclaredFeature>,
    /// The package's declared outputs.
    pub declared_outputs: Vec<DeclaredFeature>,
    /// What the declared interface was checked against (it matched, or the bundle would not
    /// have loaded).
    pub declared_interface_check: String,
    /// Every static check passed.
    pub passed: bool,
}

/// One manifest entry that was re-hashed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifiedFile {
    /// Path relative to the bundle.
    pub path: String,
    /// Its sha256 (equal to the manifest's).
    pub sha256: String,
}

/// Compare `host_weights.safetensors` with the source weights, tensor by tensor.
pub fn check_host_weights(path: &Path, source: &DecisionWeights) -> Result<Vec<HostTensorCheck>, CheckError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| CheckError::Io { path: file.clone(), detail: format!("cannot read ({e})") })?;
    let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| CheckError::Io {
        path: file.clone(),
        detail: format!("not a valid safetensors file ({e})"),
    })?;
    let mut expected: Vec<(String, Vec<f32>)> = Vec::new();
    source.visit_tensors(&mut |name, t| {
        if HOST_TENSORS.contains(&name) {
            expected.push((name.to_string(), t.to_f32().1));
        }
    });
    let mut out = Vec::with_capacity(HOST_TENSORS.len());
    for name in HOST_TENSORS {
        let missing = || CheckError::Io { path: file.clone(), detail: format!("tensor `{name}` is missing") };
        let t = st.tensor(name).map_err(|_| missing())?;
        let want = expected.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(missing)?;
        let data = t.data();
        let (dtype, comparison, stored): (&str, &str, Vec<(f32, bool)>) = match t.dtype() {
            safetensors::Dtype::F32 => (
                "F32",
                "exact",
                data.chunks_exact(4)
                    .zip(want)
                    .map(|(c, &w)| {
                        let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        (v, v.to_bits() == w.to_bits())
                    })
                    .collect(),
            ),
            safetensors::Dtype::F16 => (
                "F16",
                "fp16_rounding",
                data.chunks_exact(2)
                    .zip(want)
                    .map(|(c, &w)| {
                        let bits = u16::from_le_bytes([c[0], c[1]]);
                        (half::f16::from_bits(bits).to_f32(), half::f16::from_f32(w).to_bits() == bits)
                    })
                    .collect(),
            ),
            other => {
                return Err(CheckError::Io {
                    path: file.clone(),
                    detail: format!("tensor `{name}` is {other:?}; the ANE host reads F16 or F32 only"),
                })
            }
        };
        let size_ok = stored.len() == want.len();
        let mismatched = stored.iter().filter(|(_, ok)| !ok).count() + want.len().abs_diff(stored.len());
        let max_abs_difference = stored
            .iter()
            .zip(want)
            .map(|((v, _), &w)| (f64::from(*v) - f64::from(w)).abs())
            .fold(0.0, f64::max);
        out.push(HostTensorCheck {
            name: name.into(),
            dtype: dtype.into(),
            comparison: comparison.into(),
            elements: want.len(),
            mismatched_elements: mismatched,
            max_abs_difference,
            matches: size_ok && mismatched == 0,
        });
    }
    Ok(out)
}

/// What the load-time check of the declared interface compared (`backend::coreml::check_declared_*`).
fn declared_interface_check(coreml: &CoreMlBundle) -> String {
    if coreml.format == "laya-coreml-ane" {
        format!(
            "matches the adapter: it feeds exactly embeddings, full_mask, local_mask, type_vectors and marker_map as fixed float16 (or float32) tensors for L = {} (coreml_config.json shape.max_length) and D = encoder/config.json hidden_size, and reads logits (1, 1, 1, 32) and the pooled CLS (1, D, 1, 1) by shape as float16 or float32",
            coreml.max_length
        )
    } else {
        format!(
            "matches the adapter and coreml_config.json: int32 input_ids/attention_mask [{b}, L] accepting exactly the manifest's lengths (up to {}), marker_pos/marker_mask [{b}, {}] and qtype [{b}] fixed, float outputs logits [{b}, K] and action_logits [{b}, A] (A from rl_agent_config.json)",
            coreml.max_length,
            coreml.max_options,
            b = coreml.batch_size
        )
    }
}

/// The static checks of a loaded Core ML bundle; `source` (the source's FP32 weights) is
/// compared with the host weights of an ANE bundle.
pub fn bundle_checks(
    coreml: &CoreMlBundle,
    source: Option<&DecisionWeights>,
) -> Result<BundleChecks, CheckError> {
    let (host_weights, host_weights_note) = match (&coreml.host_weights, source) {
        (Some(path), Some(w)) => (check_host_weights(path, w)?, None),
        (Some(_), None) => {
            (Vec::new(), Some("the source has no FP32 checkpoint to compare with".to_string()))
        }
        (None, _) => {
            (Vec::new(), Some("an ordinary Core ML export keeps its embeddings inside the package".into()))
        }
    };
    let fixed_b1_k32 = coreml.batch_size == 1 && coreml.max_options == 32;
    let passed = host_weights.iter().all(|t| t.matches)
        && (coreml.format != "laya-coreml-ane" || (fixed_b1_k32 && !host_weights.is_empty()));
    Ok(BundleChecks {
        format: coreml.format.clone(),
        precision: coreml.precision.clone(),
        verified_files: coreml
            .verified_files
            .iter()
            .map(|(path, sha256)| VerifiedFile { path: path.clone(), sha256: sha256.clone() })
            .collect(),
        batch_size: coreml.batch_size,
        max_length: coreml.max_length,
        max_options: coreml.max_options,
        fixed_b1_k32,
        host_weights,
        host_weights_note,
        declared_inputs: coreml.description.inputs.clone(),
        declared_outputs: coreml.description.outputs.clone(),
        declared_interface_check: declared_interface_check(coreml),
        passed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differing_keys_lists_changed_added_and_removed_keys() {
        let a = json!({"a": 1, "b": 2, "c": 3});
        let b = json!({"a": 1, "b": 5, "d": 4});
        assert_eq!(differing_keys(&a, &b), ["b", "c", "d"]);
        assert!(differing_keys(&a, &a).is_empty());
        assert_eq!(differing_keys(&json!(1), &json!(2)), ["(document)"]);
        // Key order does not matter.
        assert!(differing_keys(&json!({"x": 1, "y": 2}), &json!({"y": 2, "x": 1})).is_empty());
    }

    #[test]
    fn a_different_tokenizer_or_config_is_named() {
        let files = ModelFiles::load(&ModelSpec::Builtin).unwrap();
        assert!(check_same_model(&files, &files, (true, true)).is_ok());
        let mut other = files.clone();
        other.agent.as_mut().unwrap()["max_len"] = json!(96);
        let e = check_same_model(&files, &other, (true, true)).unwrap_err().to_string();
        assert!(e.contains("rl_agent_config.json differs") && e.contains("keys max_len"), "{e}");
        let mut other = files.clone();
        other.tokenizer_config["cls_token"] = json!("[BOS]");
        let e = check_same_model(&files, &other, (true, true)).unwrap_err().to_string();
        assert!(e.contains("tokenizer/tokenizer_config.json differs"), "{e}");
        let synth = ModelFiles::load(&ModelSpec::Synthetic("english".into())).unwrap();
        assert!(check_same_model(&synth, &files, (true, true)).is_ok());
        let e = check_same_model(&synth, &files, (false, true)).unwrap_err().to_string();
        assert!(e.contains("encoder/config.json differs"), "{e}");
        // as the command says it: bad input naming both flags, the difference as its cause
        let e = check_conversion(("src", &synth), ("cand", &files), (false, true)).unwrap_err();
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Input);
        assert_eq!(e.to_string(), "--backend cand is not a conversion of --model src");
        assert!(crate::error::chain(&e).contains("encoder/config.json differs"));
        assert!(check_conversion(("src", &files), ("cand", &files), (true, true)).is_ok());
    }

    fn write_host_weights(
        dir: &Path,
        w: &DecisionWeights,
        f16: bool,
        nudge: Option<&str>,
    ) -> std::path::PathBuf {
        let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
        w.visit_tensors(&mut |name, t| {
            if HOST_TENSORS.contains(&name) {
                let (shape, mut v) = t.to_f32();
                if nudge == Some(name) {
                    v[0] += 0.5;
                }
                let data = if f16 {
                    v.iter().flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes()).collect()
                } else {
                    v.iter().flat_map(|x| x.to_le_bytes()).collect()
                };
                tensors.push((name.into(), shape, data));
            }
        });
        let dtype = if f16 { safetensors::Dtype::F16 } else { safetensors::Dtype::F32 };
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
            .iter()
            .map(|(n, s, d)| (n.clone(), safetensors::tensor::TensorView::new(dtype, s.clone(), d).unwrap()))
            .collect();
        let path = dir.join(if f16 { "hw16.safetensors" } else { "hw32.safetensors" });
        std::fs::write(&path, safetensors::serialize(views, None).unwrap()).unwrap();
        path
    }

    fn tiny() -> DecisionWeights {
        let bundle = crate::laya::bundle::Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        crate::model::loader::load_source("portable:f32", &bundle).unwrap().0
    }

    #[test]
    fn host_weights_match_exactly_or_within_fp16_rounding() {
        let dir = tempfile::tempdir().unwrap();
        let w = tiny();
        for f16 in [false, true] {
            let checks = check_host_weights(&write_host_weights(dir.path(), &w, f16, None), &w).unwrap();
            assert_eq!(checks.len(), 6);
            for c in &checks {
                assert!(c.matches, "{c:?}");
                assert_eq!(c.comparison, if f16 { "fp16_rounding" } else { "exact" });
            }
            let emb = &checks[0];
            assert_eq!(emb.elements, 1400 * 64);
            if f16 {
                // Round-to-nearest FP16 moves a normal value by at most 2^-11 of its magnitude.
                let mut largest = 0f64;
                w.visit_tensors(&mut |name, t| {
                    if name == HOST_TENSORS[0] {
                        largest = t.to_f32().1.iter().fold(0.0, |m, v| m.max(f64::from(v.abs())));
                    }
                });
                let bound = largest * 2f64.powi(-11);
                assert!(
                    emb.max_abs_difference > 0.0 && emb.max_abs_difference <= bound,
                    "{emb:?} bound {bound}"
                );
            } else {
                assert_eq!(emb.max_abs_difference, 0.0);
            }
        }
    }

    #[test]
    fn a_changed_host_tensor_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let w = tiny();
        let checks =
            check_host_weights(&write_host_weights(dir.path(), &w, true, Some("act_head.2.bias")), &w)
                .unwrap();
        let bad: Vec<&str> = checks.iter().filter(|c| !c.matches).map(|c| c.name.as_str()).collect();
        assert_eq!(bad, ["act_head.2.bias"]);
        assert_eq!(checks[5].mismatched_elements, 1);
        assert!((checks[5].max_abs_difference - 0.5).abs() < 1e-3);
    }
}
