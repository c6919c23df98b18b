//! What `doctor` surveys: every power sensor (and the one `energy` uses without `--sensor`),
//! every backend spec kind, and whether each `--backend SPEC` loads for the model, assembled
//! into the [`DoctorReport`]. The Apple probes are the command's macOS leaf
//! (`commands/doctor_apple.rs`), passed in; nothing here prints.

use crate::backend::registry::{self, BackendSpec};
use crate::backend::Context;
use crate::error::{chain, Error};
use crate::hub::{Hub, HubError};
use crate::laya::bundle::{Bundle, BundleError, ModelSpec, Weights};
use crate::laya::coreml_format::description::DeclaredFeature;
use crate::model::synthetic::published_shape;
use crate::power::sampler::max_gap;
use crate::power::{self, SensorStatus};
use crate::record::provenance::Provenance;
use crate::report::doctor::{split, AppleReport, DoctorReport, LoadCheck, SCHEMA_VERSION};

/// Survey this machine, in this order: sensors (and the default one), the host, backends,
/// `apple` (the probes, or why there are none), and a load check of every spec in `specs` for
/// `model`, under the process's settings and hub (`context`).
pub fn survey(
    model: &str,
    specs: &[String],
    context: &Context,
    apple: impl FnOnce() -> Result<AppleReport, Error>,
) -> DoctorReport {
    let timeout = max_gap(std::time::Duration::from_millis(500));
    let sensors = power::survey(timeout, &context.settings);
    let (default_sensor, default_sensor_missing_reason) =
        split(default_sensor(&sensors).map_err(|e| chain(&e)));
    let provenance = Provenance::current(SCHEMA_VERSION);
    let backends = registry::survey(&context.settings);
    let (apple, apple_missing_reason) = split(apple().map_err(|e| chain(&e)));
    DoctorReport {
        provenance,
        default_sensor,
        default_sensor_missing_reason,
        sensors,
        backends,
        apple,
        apple_missing_reason,
        loads: load_checks(model, specs, context),
    }
}

/// The first default sensor spec that is usable here, or why none is.
fn default_sensor(sensors: &[SensorStatus]) -> Result<String, Error> {
    let defaults = power::default_specs();
    defaults
        .iter()
        .find(|d| sensors.iter().any(|s| s.usable && s.spec == d.to_string()))
        .map(|d| d.to_string())
        .ok_or_else(|| {
            let names: Vec<String> = defaults.iter().map(|d| d.to_string()).collect();
            Error::run(format!(
                "none of {} is usable here; pass --sensor exec:CMD with an external meter",
                names.join(", ")
            ))
        })
}

/// The declared interface of a `coreml:` spec's bundle, when it verifies.
fn declared(spec: &str) -> Option<(Vec<DeclaredFeature>, Vec<DeclaredFeature>)> {
    let BackendSpec::CoreMl(cm) = BackendSpec::parse(spec).ok()? else {
        return None;
    };
    let bundle = Bundle::load(&ModelSpec::Dir(cm.bundle), |_| None).ok()?;
    match bundle.weights {
        Weights::CoreMl(c) => {
            let d = *c.description;
            Some((d.inputs, d.outputs))
        }
        _ => None,
    }
}

/// Why the model `doctor --model` names did not load; each load check reports its chain.
#[derive(Debug, thiserror::Error)]
enum ModelUnavailable {
    /// A `hub:` model did not resolve.
    #[error(transparent)]
    Hub(Box<HubError>),
    /// The spec does not parse.
    #[error(transparent)]
    Spec(#[from] BundleError),
    /// The checkpoint did not load.
    #[error(transparent)]
    Load(#[from] Error),
}

/// The model `doctor --model` names, loaded as every command loads it.
fn load_model(model: &str, hub: &Hub) -> Result<Bundle, ModelUnavailable> {
    let spec = match model.strip_prefix("hub:") {
        Some(rest) => ModelSpec::Dir(hub.resolve_spec(rest).map_err(|e| ModelUnavailable::Hub(Box::new(e)))?),
        None => ModelSpec::parse(model)?,
    };
    Ok(Bundle::load(&spec, published_shape).map_err(|e| Error::input("cannot load the model").because(e))?)
}

/// Try to build every spec for `model` (nothing is run).
pub fn load_checks(model: &str, specs: &[String], context: &Context) -> Vec<LoadCheck> {
    if specs.is_empty() {
        return Vec::new();
    }
    let bundle = load_model(model, &context.hub).map_err(|e| chain(&e));
    specs
        .iter()
        .map(|spec| {
            let result = match &bundle {
                Err(e) => Err(e.clone()),
                Ok(b) => BackendSpec::parse(spec).map_err(|e| chain(&e)).and_then(|parsed| {
                    registry::build(&parsed, spec, b, None, context).map_err(|e| chain(&e))
                }),
            };
            let (loaded, detail) = match result {
                Ok(backend) => {
                    let i = backend.info();
                    let mut detail =
                        format!("{} {} on {}, weights {}", i.name, i.precision, i.device, i.fingerprint);
                    for note in &i.notes {
                        detail.push_str(&format!("; note: {note}"));
                    }
                    (true, detail)
                }
                Err(e) => (false, e),
            };
            let (declared_inputs, declared_outputs) = declared(spec).unzip();
            LoadCheck {
                spec: spec.clone(),
                model: model.to_string(),
                loaded,
                detail,
                declared_inputs,
                declared_outputs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_checks_build_each_spec_or_say_why() {
        let ctx = Context::of_test_process();
        let checks = load_checks("builtin:tiny", &["portable:f32".into(), "gpu:fast".into()], &ctx);
        assert_eq!(checks.len(), 2);
        assert!(checks[0].loaded && checks[0].detail.starts_with("portable f32 on "), "{:?}", checks[0]);
        assert!(!checks[1].loaded && checks[1].detail.contains("unknown backend"), "{:?}", checks[1]);
        let bad_model = load_checks("builtin:nope", &["portable:f32".into()], &ctx);
        assert!(!bad_model[0].loaded && bad_model[0].detail.contains("builtin:nope"), "{:?}", bad_model[0]);
        assert!(load_checks("builtin:tiny", &[], &ctx).is_empty());
        // On the tiny model a palettized arm is the f32 weights, and the check says so.
        let w8 = load_checks("builtin:tiny", &["portable:w8".into()], &ctx);
        assert!(w8[0].loaded && w8[0].detail.contains("note: nothing palettized"), "{:?}", w8[0]);
    }

    #[test]
    fn the_default_sensor_is_the_first_usable_default_or_why_none_is() {
        let none = default_sensor(&[]).unwrap_err().to_string();
        assert!(none.starts_with("none of ") && none.contains("--sensor exec:CMD"), "{none}");
        let first = power::default_specs()[0].to_string();
        let usable = SensorStatus {
            spec: first.clone(),
            kind: power::SensorKind::Exec,
            usable: true,
            detail: String::new(),
        };
        assert_eq!(default_sensor(&[usable]).unwrap(), first);
    }
}
