//! Package accounting: the weight payload of source and candidate in decimal MB, without the
//! host embedding tables, and the weight bytes one decision streams. Sizes only — a smaller
//! payload is not a speed claim.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bounds::body_weight_bytes;
use crate::laya::bundle::CoreMlBundle;
use crate::laya::config::{AgentConfig, EncoderConfig};
use crate::model::weights::WeightBytes;
use crate::model::Precision;

/// The tables the host gathers rows from (never part of the payload or the stream).
pub const HOST_EMBEDDING_TABLES: [&str; 2] = ["encoder.embeddings.tok_embeddings.weight", "type_emb.weight"];

/// Fixed statement printed with every accounting.
pub const SIZE_NOT_SPEED: &str =
    "sizes in decimal MB (10^6 bytes); a smaller payload is not a measured speed-up";

/// One side's weight sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageSide {
    /// The spec this side was built from.
    pub spec: String,
    /// Stored weight bytes without the host embedding tables (`null` + reason when unknown).
    pub weight_payload_bytes: Option<u64>,
    /// The same in decimal MB.
    pub weight_payload_mb: Option<f64>,
    /// Weight bytes one decision (one B1 forward) reads.
    pub streamed_bytes_per_decision: Option<u64>,
    /// The same in decimal MB.
    pub streamed_mb_per_decision: Option<f64>,
    /// How the numbers were obtained.
    pub method: String,
    /// Why a number is missing.
    pub missing_reason: Option<String>,
}

/// Source and candidate side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageAccounting {
    /// The FP32 source.
    pub source: PackageSide,
    /// The candidate.
    pub candidate: PackageSide,
    /// Tables left out of every number.
    pub excluded_tables: Vec<String>,
    /// [`SIZE_NOT_SPEED`].
    pub note: String,
}

impl PackageAccounting {
    /// Pair two sides.
    pub fn new(source: PackageSide, candidate: PackageSide) -> Self {
        Self {
            source,
            candidate,
            excluded_tables: HOST_EMBEDDING_TABLES.iter().map(|s| s.to_string()).collect(),
            note: SIZE_NOT_SPEED.into(),
        }
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// A portable engine's weights: every stored tensor except the host tables is the payload,
/// and a B1 forward reads each of them once, so the stream equals the payload.
pub fn portable_side(spec: &str, bytes: WeightBytes) -> PackageSide {
    let payload = bytes.total.saturating_sub(bytes.host_embeddings) as u64;
    PackageSide {
        spec: spec.into(),
        weight_payload_bytes: Some(payload),
        weight_payload_mb: Some(mb(payload)),
        streamed_bytes_per_decision: Some(payload),
        streamed_mb_per_decision: Some(mb(payload)),
        method: "portable engine storage: every tensor at its stored precision (projections FP32/FP16/BF16 or packed palette indices plus f32 tables; norms, biases, scorer and action head FP32), less the host embedding tables; a B1 forward reads each once".into(),
        missing_reason: None,
    }
}

/// A side with no weights to count.
pub fn missing_side(spec: &str, reason: &str) -> PackageSide {
    PackageSide {
        spec: spec.into(),
        weight_payload_bytes: None,
        weight_payload_mb: None,
        streamed_bytes_per_decision: None,
        streamed_mb_per_decision: None,
        method: "none".into(),
        missing_reason: Some(reason.into()),
    }
}

/// The storage precision a Core ML manifest names (`float16`, `float32`, or a `w8`/`w6`/`w4`
/// palettized variant), as the bounds contract knows it.
pub fn coreml_precision(precision: Option<&str>, quantization: Option<&str>) -> Option<Precision> {
    match quantization.map(str::to_ascii_lowercase).as_deref() {
        Some(q) if q.starts_with("w8") => return Some(Precision::W8),
        Some(q) if q.starts_with("w6") => return Some(Precision::W6),
        Some(q) if q.starts_with("w4") => return Some(Precision::W4),
        _ => {}
    }
    match precision {
        Some("float16") | Some("fp16") => Some(Precision::F16),
        Some("float32") | Some("fp32") => Some(Precision::F32),
        _ => None,
    }
}

/// The manifest's optional quantization name (`w8`, `w8-pt`, ...), re-read from the bundle's
/// `coreml_config.json`.
pub fn manifest_quantization(c: &CoreMlBundle) -> Option<String> {
    let dir = c.package.parent()?;
    let text = std::fs::read_to_string(dir.join("coreml_config.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    ["quantization", "ane_quantization"]
        .iter()
        .find_map(|k| v.get(*k).and_then(serde_json::Value::as_str).map(str::to_string))
}

fn tree_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        total += if path.is_dir() { tree_bytes(&path)? } else { std::fs::metadata(&path)?.len() };
    }
    Ok(total)
}

/// A Core ML bundle: the payload is `model.mlpackage` on disk (its weights and program); the
/// stream is the bounds contract's body weights at the manifest's precision (encoder and
/// decision-head matrices, one FP16 table per palettized matrix), an analytic count.
pub fn coreml_side(
    spec: &str,
    bundle: &CoreMlBundle,
    quantization: Option<&str>,
    enc: &EncoderConfig,
    agent: &AgentConfig,
) -> PackageSide {
    let payload = tree_bytes(&bundle.package).ok();
    let precision = coreml_precision(bundle.precision.as_deref(), quantization);
    let streamed = precision.and_then(|p| body_weight_bytes(enc, agent, p).ok()).map(|b| b.bytes);
    let mut reasons = Vec::new();
    if payload.is_none() {
        reasons.push(format!("{} could not be read", bundle.package.display()));
    }
    if streamed.is_none() {
        reasons.push(format!(
            "the manifest's precision {:?} is not float16, float32 or a w8/w6/w4 quantization",
            bundle.precision
        ));
    }
    PackageSide {
        spec: spec.into(),
        weight_payload_bytes: payload,
        weight_payload_mb: payload.map(mb),
        streamed_bytes_per_decision: streamed,
        streamed_mb_per_decision: streamed.map(mb),
        method: format!(
            "payload: bytes of model.mlpackage on disk (the host tables live in host_weights.safetensors); stream: bounds.rs body weights at {} (encoder and decision-head matrices), analytic",
            precision.map_or("an unknown precision", |p| p.name())
        ),
        missing_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_payload_excludes_the_host_tables() {
        let side = portable_side(
            "portable:f16",
            WeightBytes { projections: 600, total: 1_500_000, host_embeddings: 500_000 },
        );
        assert_eq!(side.weight_payload_bytes, Some(1_000_000));
        assert_eq!(side.weight_payload_mb, Some(1.0));
        assert_eq!(side.streamed_bytes_per_decision, Some(1_000_000));
        assert!(side.missing_reason.is_none());
        let m = missing_side("mock:ok", "scripted outputs have no weights");
        assert!(m.weight_payload_bytes.is_none() && m.missing_reason.is_some());
    }

    #[test]
    fn manifest_precisions_map_to_the_bounds_contract() {
        assert_eq!(coreml_precision(Some("float16"), None), Some(Precision::F16));
        assert_eq!(coreml_precision(Some("float16"), Some("w8-pt")), Some(Precision::W8));
        assert_eq!(coreml_precision(Some("float32"), None), Some(Precision::F32));
        assert_eq!(coreml_precision(Some("int3"), None), None);
        assert_eq!(coreml_precision(None, None), None);
    }

    #[test]
    fn tiny_builtin_payload_is_counted_from_real_storage() {
        let bundle =
            crate::laya::bundle::Bundle::load(&crate::laya::bundle::ModelSpec::Builtin, |_| None).unwrap();
        let (w, _) = crate::model::loader::load_source("portable:f32", &bundle).unwrap();
        let bytes = w.weight_bytes();
        // Token embedding 1400 × 64 and type embedding 3 × 64, FP32.
        assert_eq!(bytes.host_embeddings, (1400 * 64 + 3 * 64) * 4);
        let side = portable_side("portable:f32", bytes);
        assert_eq!(side.weight_payload_bytes, Some((bytes.total - bytes.host_embeddings) as u64));
        let half =
            portable_side("portable:f16", w.into_half(crate::model::lowp::HalfKind::F16).weight_bytes());
        // Every projection halves: the payload shrinks by exactly half the FP32 projection bytes.
        assert_eq!(
            side.weight_payload_bytes.unwrap() - half.weight_payload_bytes.unwrap(),
            bytes.projections as u64 / 2
        );
    }
}
