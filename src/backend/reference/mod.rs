//! `ref:` arms: a published Python runtime (laya-mlx, laya, laya-apple, laya-coreml, laya-mnn,
//! laya-cuda, or any factory) run in a persistent worker process (docs/reference-runtimes.md).
//!
//! The worker is started once per arm when the arm is built; it loads (and the runtime warms)
//! the model outside every measured interval, then answers one request per line. A ref arm has
//! no forward and no host path of ours: it answers whole requests ([`RequestAnswerer`]); the
//! protocol times the round trip, and the worker times the runtime's own
//! `predict(state, questions)` in its process with a monotonic ns clock (`runtime_ns`), the
//! published boundary, which speed's t and ratios use.

pub mod spec;
pub mod worker;

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

pub use spec::RefSpec;
use worker::{Ready, Worker, WorkerError};

use super::{Backend, BackendInfo, BackendKind, HostHints, RequestAnswerer, ShapeCaps};
use crate::laya::batch::{BackendError, ForwardOutput, PreparedBatch};
use crate::laya::decode::{MinConfidence, ResultShape};
use crate::laya::host::{CallOptions, HostError, StateResult};
use crate::settings::Settings;

/// The interpreter a worker starts with: `LAYA_BENCH_PYTHON`, else the venv under the cache
/// folder, as the command edge read them into `settings` (nothing below `commands/` reads the
/// environment).
pub fn python(settings: &Settings) -> PathBuf {
    worker::interpreter(settings.python.as_deref(), settings.cache_home.as_deref())
}

/// Why a `ref:` arm cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The spec does not parse.
    #[error("{0}")]
    Spec(String),
    /// The worker could not start or load.
    #[error(transparent)]
    Worker(#[from] WorkerError),
}

/// A reference runtime in its worker, as a backend that answers whole requests.
pub struct ReferenceBackend {
    info: BackendInfo,
    worker: Worker,
    ready: Ready,
}

/// sha256 of `model.safetensors` in the checkpoint folder the spec names, where it has one.
fn fingerprint(spec: &RefSpec) -> String {
    spec.checkpoint()
        .map(|c| Path::new(c).join("model.safetensors"))
        .and_then(|p| std::fs::read(p).ok())
        .map(|b| crate::laya::bundle::sha256_hex(&b))
        .unwrap_or_else(|| format!("reference:{}", spec.kind))
}

impl ReferenceBackend {
    /// Start the worker for `spec` and wait for its runtime to load. `shapes` is what the
    /// arm is asked to run (the runtime picks its own shapes; it is recorded as asked). The
    /// interpreter is [`python`] under `settings`.
    pub fn start(spec: &RefSpec, shapes: ShapeCaps, settings: &Settings) -> Result<Self, ReferenceError> {
        let python = python(settings);
        let config = json!({"kind": spec.kind, "args": spec.args});
        let (worker, ready) = Worker::start(&python, &config, spec.load_timeout, spec.call_timeout)?;
        let mut packages: Vec<String> = ready.packages.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if packages.is_empty() {
            packages.push(format!(
                "{} {}",
                ready.runtime,
                ready.version.as_deref().unwrap_or("(no version)")
            ));
        }
        let options = match &ready.options {
            Value::Object(m) if !m.is_empty() => format!("; options {}", ready.options),
            _ => String::new(),
        };
        let name = match &ready.version {
            Some(v) => format!("{} {v}", ready.runtime),
            None => ready.runtime.clone(),
        };
        let info = BackendInfo {
            kind: BackendKind::Reference,
            name,
            precision: ready.precision.clone().unwrap_or_else(|| spec.precision().to_string()),
            device: format!("Python {} worker ({}); {}{options}", ready.python, worker.python(), packages.join(", ")),
            shapes,
            fingerprint: fingerprint(spec),
            notes: std::iter::once(format!(
                "reference runtime in a Python worker: t is the runtime's own predict(state, questions) timed in the worker (time.perf_counter_ns); the round trip over the pipes is recorded beside it; loaded in {:.2} s",
                ready.load_ns as f64 / 1e9
            ))
            .chain(shape_notes(&ready))
            .collect(),
            blas: None,
            host_hints: HostHints::default(),
            weight_bytes: None,
        };
        Ok(Self { info, worker, ready })
    }

    /// What the worker said when it was ready (versions, options, load time).
    pub fn ready(&self) -> &Ready {
        &self.ready
    }
}

/// The per-call options a request passes, by their keyword names.
fn passed(options: &CallOptions) -> Vec<&'static str> {
    let mut names = Vec::new();
    if options.max_len.is_some() {
        names.push("max_len");
    }
    if options.head_max_len.is_some() {
        names.push("head_max_len");
    }
    if options.min_confidence.is_some() {
        names.push("min_confidence");
    }
    names
}

/// Why `runtime`, whose predict takes only `takes` (`None`: every option), cannot answer a
/// request passing `options`; `None` when it can.
pub fn refusal_of(runtime: &str, takes: Option<&[String]>, options: &CallOptions) -> Option<String> {
    let takes = takes?;
    let refused: Vec<&str> = passed(options).into_iter().filter(|o| !takes.iter().any(|t| t == o)).collect();
    if refused.is_empty() {
        return None;
    }
    let takes = if takes.is_empty() {
        "takes no per-call options".to_string()
    } else {
        format!("takes only {}", takes.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "))
    };
    let names = refused.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ");
    let flags = refused.iter().map(|o| format!("--{}", o.replace('_', "-"))).collect::<Vec<_>>().join(", ");
    Some(format!(
        "{runtime}'s predict(state, questions) {takes}, and the request passes {names}; drop {} from the request, or the {} ({flags}), so the runtime uses its checkpoint's own, or leave this runtime out",
        if refused.len() == 1 { "it" } else { "them" },
        if refused.len() == 1 { "flag that sets it" } else { "flags that set them" }
    ))
}

/// The notes of an arm whose runtime answers in another shape or takes fewer options.
fn shape_notes(ready: &Ready) -> Vec<String> {
    let mut notes = Vec::new();
    if ready.result_shape != ResultShape::Current {
        notes.push(format!(
            "its results are in {}'s shape: they lack {}; answers, probabilities, noul values, confidence and act_probability are compared with the other arms, the fields it lacks are not (none is made up)",
            match ready.result_shape {
                ResultShape::Laya03 => "laya 0.3",
                ResultShape::Current => "laya 0.4",
            },
            ready.result_shape.lacks().iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(takes) = &ready.call_options {
        notes.push(if takes.is_empty() {
            "its predict takes no per-call options: requests run at its checkpoint's max_len and head_max_len, with no abstention gate".to_string()
        } else {
            format!("its predict takes only these per-call options: {}", takes.join(", "))
        });
    }
    notes
}

fn min_confidence_json(m: &MinConfidence) -> Value {
    match m {
        MinConfidence::Scalar(x) => json!(x),
        MinConfidence::Map(pairs) => {
            Value::Object(pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
        }
    }
}

/// The request line: state, questions and the per-call options the runtime takes as keyword
/// arguments (only those given).
pub fn request_json(state: &Value, questions: &Value, options: &CallOptions) -> Value {
    let mut kwargs = Map::new();
    if let Some(n) = options.max_len {
        kwargs.insert("max_len".into(), json!(n));
    }
    if let Some(n) = options.head_max_len {
        kwargs.insert("head_max_len".into(), json!(n));
    }
    if let Some(m) = &options.min_confidence {
        kwargs.insert("min_confidence".into(), min_confidence_json(m));
    }
    json!({"state": state, "questions": questions, "kwargs": kwargs})
}

impl RequestAnswerer for ReferenceBackend {
    fn answer(
        &mut self,
        state: &Value,
        questions: &Value,
        options: &CallOptions,
    ) -> Result<(StateResult, Option<u64>), HostError> {
        let failed = |m: String| HostError::Backend(BackendError::Runtime(m));
        let (result, ns) =
            self.worker.call(&request_json(state, questions, options)).map_err(|e| failed(e.to_string()))?;
        let parsed = StateResult::from_json_as(&result, self.ready.result_shape).map_err(|why| {
            let text = result.to_string();
            let shown: String = text.chars().take(200).collect();
            failed(format!(
                "the runtime returned a result of another shape ({why}): {shown}{}",
                self.worker.error_tail()
            ))
        })?;
        Ok((parsed, Some(ns)))
    }

    fn process_id(&self) -> Option<u32> {
        Some(self.worker.pid())
    }

    fn refusal(&self, options: &CallOptions) -> Option<String> {
        refusal_of(&self.ready.runtime, self.ready.call_options.as_deref(), options)
    }
}

impl Backend for ReferenceBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn forward(&mut self, _batch: &PreparedBatch, _out: &mut ForwardOutput) -> Result<(), BackendError> {
        Err(BackendError::Runtime(
            "a reference runtime answers whole requests in its worker; it has no forward over our packed batches".into(),
        ))
    }

    fn answers_requests(&mut self) -> Option<&mut dyn RequestAnswerer> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_refuses_only_the_options_it_does_not_take() {
        let opts = CallOptions {
            max_len: Some(96),
            min_confidence: Some(MinConfidence::Scalar(0.5)),
            ..CallOptions::default()
        };
        // no list: every option is taken; nothing passed: nothing to refuse
        assert_eq!(refusal_of("laya", None, &opts), None);
        assert_eq!(refusal_of("laya-cuda", Some(&[]), &CallOptions::default()), None);
        assert_eq!(
            refusal_of("laya-cuda", Some(&[]), &opts).unwrap(),
            "laya-cuda's predict(state, questions) takes no per-call options, and the request passes `max_len`, `min_confidence`; drop them from the request, or the flags that set them (--max-len, --min-confidence), so the runtime uses its checkpoint's own, or leave this runtime out"
        );
        let takes = ["max_len".to_string()];
        let why = refusal_of("laya-mnn", Some(&takes), &opts).unwrap();
        assert!(why.starts_with("laya-mnn's predict(state, questions) takes only `max_len`, and the request passes `min_confidence`; drop it"), "{why}");
    }

    #[test]
    fn the_request_carries_only_the_options_given() {
        let r = request_json(&json!("s"), &json!({}), &CallOptions::default());
        assert_eq!(r.to_string(), r#"{"state":"s","questions":{},"kwargs":{}}"#);
        let opts = CallOptions {
            max_len: Some(96),
            min_confidence: Some(MinConfidence::Scalar(0.5)),
            ..CallOptions::default()
        };
        let r = request_json(&json!({"a": 1}), &json!({}), &opts);
        assert_eq!(r["kwargs"].to_string(), r#"{"max_len":96,"min_confidence":0.5}"#);
    }
}
