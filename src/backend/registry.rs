//! Backend specs (`portable:f32`, later `coreml:…`, `mlx:…`) and their constructors. The only
//! place besides the leaf files that knows which backends exist on this platform.

use super::portable::PortableBackend;
use super::{Backend, ShapeCaps, ShapeMode};
use crate::laya::bundle::{sha256_hex, Bundle, Weights};
use crate::model::synthetic::random_weights;
use crate::model::weights::DecisionWeights;

/// A backend spec that cannot be built here.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Not a spec we know.
    #[error("unknown backend `{spec}`; available here: {available}")]
    Unknown { spec: String, available: String },
    /// Known, but this platform cannot run it.
    #[error("backend `{spec}` needs {needs}; this build runs on {os}. On this machine use portable:f32")]
    Unavailable { spec: String, needs: &'static str, os: &'static str },
    /// The model cannot run on this backend.
    #[error("backend `{spec}` cannot run model `{model}`: {reason}")]
    Incompatible { spec: String, model: String, reason: String },
    /// The weights failed to load.
    #[error("{0}")]
    Weights(String),
}

/// Portable weight precisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// FP32 weights, FP32 compute.
    F32,
}

impl Precision {
    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
        }
    }
}

/// A parsed backend spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// The portable CPU engine.
    Portable(Precision),
    /// Scripted outputs for tests and smoke runs, never a measurement of a model:
    /// `mock:ok`, `mock:drift-after=N` (results change after N calls), `mock:fail-after=N`
    /// (calls fail after N), optional `:delay-us=D` per call.
    Mock {
        /// Calls before results drift.
        drift_after: Option<usize>,
        /// Calls before calls fail.
        fail_after: Option<usize>,
        /// Sleep per call.
        delay_us: u64,
    },
}

/// The specs this build can run, for messages.
pub const AVAILABLE: &str = "portable:f32";

impl BackendSpec {
    /// Parse a spec string.
    pub fn parse(spec: &str) -> Result<Self, RegistryError> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        match kind {
            "portable" => match rest {
                "" | "f32" => Ok(Self::Portable(Precision::F32)),
                _ => Err(RegistryError::Unknown { spec: spec.into(), available: AVAILABLE.into() }),
            },
            "mock" => {
                let (mut drift_after, mut fail_after, mut delay_us) = (None, None, 0);
                for part in rest.split(':').filter(|p| !p.is_empty() && *p != "ok") {
                    let (key, value) = part.split_once('=').unwrap_or((part, ""));
                    let n: u64 = value.parse().map_err(|_| RegistryError::Unknown {
                        spec: spec.into(),
                        available: "mock:ok, mock:drift-after=N, mock:fail-after=N, mock:...:delay-us=D"
                            .into(),
                    })?;
                    match key {
                        "drift-after" => drift_after = Some(n as usize),
                        "fail-after" => fail_after = Some(n as usize),
                        "delay-us" => delay_us = n,
                        _ => {
                            return Err(RegistryError::Unknown {
                                spec: spec.into(),
                                available:
                                    "mock:ok, mock:drift-after=N, mock:fail-after=N, mock:...:delay-us=D"
                                        .into(),
                            })
                        }
                    }
                }
                Ok(Self::Mock { drift_after, fail_after, delay_us })
            }
            "coreml" if !cfg!(target_os = "macos") => Err(RegistryError::Unavailable {
                spec: spec.into(),
                needs: "macOS with Core ML (Apple silicon for the Neural Engine)",
                os: std::env::consts::OS,
            }),
            "mlx" if !cfg!(target_os = "macos") => Err(RegistryError::Unavailable {
                spec: spec.into(),
                needs: "macOS on Apple silicon with MLX",
                os: std::env::consts::OS,
            }),
            _ => Err(RegistryError::Unknown { spec: spec.into(), available: AVAILABLE.into() }),
        }
    }
}

/// The portable precisions a plain `speed` run compares, baseline first.
pub fn portable_precisions() -> &'static [Precision] {
    &[Precision::F32]
}

/// Whether one backend spec kind is usable in this build on this machine (`laya-bench doctor`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendStatus {
    /// The spec (or its pattern) to pass to `--arm NAME=SPEC` / `--backend`.
    pub spec: String,
    /// Whether it can run here.
    pub usable: bool,
    /// What it is, or why it cannot run and what to use instead.
    pub detail: String,
}

/// Every backend spec kind: each portable precision, `coreml:`, `mlx:` and `mock:`.
pub fn survey() -> Vec<BackendStatus> {
    let mut out: Vec<BackendStatus> = portable_precisions()
        .iter()
        .map(|p| BackendStatus {
            spec: format!("portable:{}", p.name()),
            usable: true,
            detail: format!(
                "portable CPU engine, {} weights and compute, {} thread(s)",
                p.name().to_uppercase(),
                default_threads()
            ),
        })
        .collect();
    for (spec, what) in
        [("coreml:BUNDLE", "Core ML (Neural Engine) bundle"), ("mlx:CHECKPOINT", "MLX on Apple silicon")]
    {
        let detail = match BackendSpec::parse(spec) {
            Err(RegistryError::Unavailable { needs, os, .. }) => {
                format!("{what}: needs {needs}; this build runs on {os}")
            }
            Err(RegistryError::Unknown { .. }) => {
                format!(
                    "{what}: not built into this binary yet (the macOS adapter is a separate piece of work)"
                )
            }
            Err(e) => e.to_string(),
            Ok(_) => format!("{what}: available"),
        };
        let usable = BackendSpec::parse(spec).is_ok();
        out.push(BackendStatus { spec: spec.into(), usable, detail });
    }
    out.push(BackendStatus {
        spec: "mock:ok".into(),
        usable: true,
        detail: "scripted outputs for tests and smoke runs (also mock:drift-after=N, mock:fail-after=N, :delay-us=D); never a measurement of a model".into(),
    });
    out
}

/// Threads the portable engine uses: all available cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Default shapes of the portable engine for a model: any multiple of 16 up to the model's
/// `max_len`, up to 8 rows per call and 255 option slots.
pub fn portable_shapes(bundle: &Bundle) -> ShapeCaps {
    ShapeCaps {
        batch_size: 8,
        max_length: bundle.agent.max_len,
        min_length: 16,
        max_options: 255,
        mode: ShapeMode::Range,
    }
}

/// Build a backend for a bundle.
pub fn build(
    spec: &BackendSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<ShapeCaps>,
) -> Result<Box<dyn Backend>, RegistryError> {
    match spec {
        BackendSpec::Mock { drift_after, fail_after, delay_us } => {
            use super::mock::{Script, ScriptedBackend};
            let shapes = shapes.unwrap_or_else(|| portable_shapes(bundle));
            let script = match drift_after {
                Some(after) => Script::Drift { num_actions: bundle.agent.num_actions, after: *after },
                None => Script::Synthetic { num_actions: bundle.agent.num_actions },
            };
            let mut b = ScriptedBackend::new(shapes, script, std::time::Duration::from_micros(*delay_us));
            b.record = false;
            b.fail_after = *fail_after;
            Ok(Box::new(b))
        }
        BackendSpec::Portable(Precision::F32) => {
            let shapes = shapes.unwrap_or_else(|| portable_shapes(bundle));
            let (weights, fingerprint) = match &bundle.weights {
                Weights::Safetensors(bytes) => (load(bytes, bundle)?, sha256_hex(bytes)),
                Weights::Static(bytes) => (load(bytes, bundle)?, sha256_hex(bytes)),
                Weights::Synthetic { seed } => (
                    random_weights(&bundle.encoder, &bundle.agent, *seed),
                    format!("synthetic:{}:seed={seed}", bundle.source.trim_start_matches("synthetic:")),
                ),
                Weights::CoreMl(c) => {
                    return Err(RegistryError::Incompatible {
                        spec: spec_text.into(),
                        model: bundle.source.clone(),
                        reason: format!(
                            "it is a Core ML bundle ({}) whose body runs only through Core ML on macOS (coreml:{}); point --model at the original checkpoint folder to run it portably",
                            c.format, bundle.source
                        ),
                    })
                }
            };
            Ok(Box::new(PortableBackend::new(
                weights,
                bundle.encoder.clone(),
                bundle.agent.clone(),
                shapes,
                fingerprint,
                default_threads(),
            )))
        }
    }
}

fn load(bytes: &[u8], bundle: &Bundle) -> Result<DecisionWeights, RegistryError> {
    let file = format!("{}/model.safetensors", bundle.source);
    DecisionWeights::from_safetensors(bytes, &bundle.encoder, &bundle.agent, &file)
        .map_err(|e| RegistryError::Weights(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_survey_lists_every_spec_kind_with_a_reason() {
        let s = survey();
        let specs: Vec<&str> = s.iter().map(|b| b.spec.as_str()).collect();
        assert_eq!(specs, ["portable:f32", "coreml:BUNDLE", "mlx:CHECKPOINT", "mock:ok"]);
        assert!(s[0].usable && s[3].usable);
        #[cfg(not(target_os = "macos"))]
        assert!(!s[1].usable && s[1].detail.contains("macOS"), "{:?}", s[1]);
    }

    #[test]
    fn parses_portable_and_rejects_unknown_specs() {
        assert_eq!(BackendSpec::parse("portable:f32").unwrap(), BackendSpec::Portable(Precision::F32));
        assert_eq!(BackendSpec::parse("portable").unwrap(), BackendSpec::Portable(Precision::F32));
        assert!(matches!(BackendSpec::parse("gpu:fast"), Err(RegistryError::Unknown { .. })));
        #[cfg(not(target_os = "macos"))]
        assert!(matches!(BackendSpec::parse("coreml:bundle"), Err(RegistryError::Unavailable { .. })));
    }
}
