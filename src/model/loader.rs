//! A bundle's weights as the engines load them: the FP32 source weights of a checkpoint
//! (`model.safetensors`, the embedded `builtin:tiny`, or a synthetic shape's random weights)
//! and its fingerprint, and the on-the-fly conversions to another precision with theirs.
//! `backend::registry` builds engines from these; `palettize` and `convert-check` read them.

use crate::laya::bundle::{sha256_hex, Bundle, Weights};
use crate::model::lowp::HalfKind;
use crate::model::palettize::{palettize, PaletteConfig, PaletteReport, METHOD as PALETTE_METHOD};
use crate::model::synthetic::random_weights;
use crate::model::weights::DecisionWeights;
use crate::model::Precision;

/// Weights that cannot be loaded or converted (shown as is; `backend::registry::RegistryError`
/// has the same two kinds with the same texts).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The weights failed to load or convert.
    #[error("{0}")]
    Weights(String),
    /// The bundle has no weights an engine outside Core ML can load (a Core ML bundle).
    #[error("backend `{spec}` cannot run model `{model}`: {reason}")]
    Incompatible { spec: String, model: String, reason: String },
}

/// Convert FP32 weights to `precision`: FP16/BF16 round the projection weights; W8/W6/W4
/// palettize the projection weights above 65,536 elements with the default
/// [`PaletteConfig`] (and return its report); FP32 returns the weights unchanged.
pub fn convert_weights(
    weights: DecisionWeights,
    precision: Precision,
) -> Result<(DecisionWeights, Option<PaletteReport>), LoadError> {
    match precision {
        Precision::F32 => Ok((weights, None)),
        Precision::F16 => Ok((weights.into_half(HalfKind::F16), None)),
        Precision::Bf16 => Ok((weights.into_half(HalfKind::BF16), None)),
        p => {
            let cfg = PaletteConfig::new(p.palette_bits().unwrap_or(8));
            let (w, report) = palettize(weights, &cfg).map_err(weights_err)?;
            Ok((w, Some(report)))
        }
    }
}

/// Fingerprint of weights converted on the fly from the checkpoint `source` (its
/// fingerprint): `source` itself for FP32, else the lowercase sha256 of the text
/// `laya-bench-convert/1` + source + precision (+ for palettes the [`PaletteConfig`] and
/// method), one `key=value` per line.
pub fn converted_fingerprint(source: &str, precision: Precision) -> String {
    let mut text = format!("laya-bench-convert/1\nsource={source}\nprecision={}\n", precision.name());
    match precision {
        Precision::F32 => return source.to_string(),
        Precision::F16 | Precision::Bf16 => text.push_str("scope=projections\nrounding=nearest-even\n"),
        p => {
            let c = PaletteConfig::new(p.palette_bits().unwrap_or(8));
            text.push_str(&format!(
                "bits={}\ngroup_size={}\nseed={}\nabove_elements={}\nmax_iters={}\ntolerance={:e}\nmethod={}\n",
                c.bits, c.group_size, c.seed, c.above_elements, c.max_iters, c.tolerance, PALETTE_METHOD
            ));
        }
    }
    sha256_hex(text.as_bytes())
}

fn weights_err(e: impl std::fmt::Display) -> LoadError {
    LoadError::Weights(e.to_string())
}

/// The FP32 weights of a bundle and their fingerprint.
pub fn load_source(spec_text: &str, bundle: &Bundle) -> Result<(DecisionWeights, String), LoadError> {
    let fingerprint = source_fingerprint(spec_text, bundle)?;
    let weights = match &bundle.weights {
        Weights::Safetensors(bytes) => load(bytes, bundle)?,
        Weights::Static(bytes) => load(bytes, bundle)?,
        Weights::Synthetic { seed } => random_weights(&bundle.encoder, &bundle.agent, *seed),
        Weights::CoreMl(_) => return Err(core_ml(spec_text, bundle)),
    };
    Ok((weights, fingerprint))
}

/// Fingerprint of a bundle's FP32 checkpoint without loading it: the sha256 of
/// `model.safetensors`, or `synthetic:NAME:seed=S`.
pub fn source_fingerprint(spec_text: &str, bundle: &Bundle) -> Result<String, LoadError> {
    Ok(match &bundle.weights {
        Weights::Safetensors(bytes) => sha256_hex(bytes),
        Weights::Static(bytes) => sha256_hex(bytes),
        Weights::Synthetic { seed } => {
            format!("synthetic:{}:seed={seed}", bundle.source.trim_start_matches("synthetic:"))
        }
        Weights::CoreMl(_) => return Err(core_ml(spec_text, bundle)),
    })
}

fn core_ml(spec_text: &str, bundle: &Bundle) -> LoadError {
    let format = match &bundle.weights {
        Weights::CoreMl(c) => c.format.as_str(),
        _ => "?",
    };
    LoadError::Incompatible {
        spec: spec_text.into(),
        model: bundle.source.clone(),
        reason: format!(
            "it is a Core ML bundle ({format}) whose body runs only through Core ML on macOS (coreml:{}); point --model at the original checkpoint folder to run it portably",
            bundle.source
        ),
    }
}

fn load(bytes: &[u8], bundle: &Bundle) -> Result<DecisionWeights, LoadError> {
    let file = format!("{}/model.safetensors", bundle.source);
    DecisionWeights::from_safetensors(bytes, &bundle.encoder, &bundle.agent, &file)
        .map_err(|e| LoadError::Weights(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converted_fingerprints_name_source_and_conversion() {
        let src = "ab".repeat(32);
        assert_eq!(converted_fingerprint(&src, Precision::F32), src);
        let all: Vec<String> = Precision::ALL.iter().map(|&p| converted_fingerprint(&src, p)).collect();
        for (i, a) in all.iter().enumerate() {
            assert_eq!(a.len(), 64);
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_ne!(converted_fingerprint(&"cd".repeat(32), Precision::W8), all[3]);
    }
}
