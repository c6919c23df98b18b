//! `laya-bench doctor`: every power sensor and every backend spec kind, and why each is or is
//! not usable on this machine; on macOS also the chip, OS version, Core ML and MLX
//! availability and one real PSTR read (`doctor_apple.rs`); with `--backend SPEC`, whether each
//! spec loads for `--model`. Always exits 0: it reports, it does not judge.

use anyhow::anyhow;
use serde::Serialize;

use super::{Failure, Outcome};
use crate::backend::coreml::description::DeclaredFeature;
use crate::backend::registry::{self, BackendStatus};
use crate::cli::DoctorArgs;
use crate::power::sampler::max_gap;
use crate::power::{self, SensorStatus};
use crate::report::raw::{HostInfo, ToolInfo};

/// `doctor --json` (schema_version 1).
#[derive(Debug, Serialize)]
struct Doctor {
    schema_version: u32,
    tool: ToolInfo,
    host: HostInfo,
    /// What `energy` uses without `--sensor`, or `null` with the reason.
    default_sensor: Option<String>,
    default_sensor_missing_reason: Option<String>,
    sensors: Vec<SensorStatus>,
    backends: Vec<BackendStatus>,
    /// The Apple probes, or `null` with the reason.
    apple: Option<AppleReport>,
    apple_missing_reason: Option<String>,
    /// One entry per `--backend SPEC`: whether it loads for `--model`.
    loads: Vec<LoadCheck>,
}

/// One availability question and its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    /// Whether the thing is usable.
    pub available: bool,
    /// What was found, or why it is not usable.
    pub detail: String,
}

/// What `doctor` finds on a Mac.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppleReport {
    /// `sysctl -n machdep.cpu.brand_string`, e.g. `Apple M3 Max`, or `null` with the reason.
    pub chip: Option<String>,
    /// Why `chip` is `null`.
    pub chip_missing_reason: Option<String>,
    /// `macOS 14.5 (23F79)`, or `null` with the reason.
    pub os_version: Option<String>,
    /// Why `os_version` is `null`.
    pub os_version_missing_reason: Option<String>,
    /// Core ML framework and MLComputePlan availability.
    pub core_ml: Probe,
    /// MLX: built in (`--features mlx`) and a Metal device answering.
    pub mlx: Probe,
    /// One real PSTR read in watts, or `null` with the error.
    pub pstr_w: Option<f64>,
    /// Why `pstr_w` is `null`.
    pub pstr_error: Option<String>,
}

impl AppleReport {
    /// Assemble from the probes' results.
    pub fn new(
        chip: Result<String, String>,
        os_version: Result<String, String>,
        core_ml: Probe,
        mlx: Probe,
        pstr_w: Result<f64, String>,
    ) -> Self {
        let (chip, chip_missing_reason) = split(chip);
        let (os_version, os_version_missing_reason) = split(os_version);
        let (pstr_w, pstr_error) = split(pstr_w);
        AppleReport {
            chip,
            chip_missing_reason,
            os_version,
            os_version_missing_reason,
            core_ml,
            mlx,
            pstr_w,
            pstr_error,
        }
    }

    /// The human-readable lines of this report.
    pub fn lines(&self) -> Vec<String> {
        let or_why = |v: &Option<String>, why: &Option<String>| match (v, why) {
            (Some(v), _) => v.clone(),
            (None, Some(w)) => format!("unknown ({w})"),
            (None, None) => "unknown".into(),
        };
        vec![
            format!("  chip:     {}", or_why(&self.chip, &self.chip_missing_reason)),
            format!("  OS:       {}", or_why(&self.os_version, &self.os_version_missing_reason)),
            format!("  Core ML:  {:<3}  {}", mark(self.core_ml.available), self.core_ml.detail),
            format!("  MLX:      {:<3}  {}", mark(self.mlx.available), self.mlx.detail),
            match (&self.pstr_w, &self.pstr_error) {
                (Some(w), _) => format!("  PSTR:     yes  one read: {w:.3} W (total system power)"),
                (None, Some(e)) => format!("  PSTR:     no   {e}"),
                (None, None) => "  PSTR:     no".into(),
            },
        ]
    }
}

fn split<T>(r: Result<T, String>) -> (Option<T>, Option<String>) {
    match r {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    }
}

/// Whether a macOS version (`14.4`, `15.0.1`) has `MLComputePlan` (macOS 14.4 or newer).
pub fn compute_plan_supported(version: &str) -> bool {
    let mut parts = version.trim().split('.').map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), minor) => {
            let minor = minor.and_then(Result::ok).unwrap_or(0);
            (major, minor) >= (14, 4)
        }
        _ => false,
    }
}

/// Whether one `--backend SPEC` loads for the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadCheck {
    /// The spec as given.
    pub spec: String,
    /// The model it was loaded for.
    pub model: String,
    /// Whether it loaded.
    pub loaded: bool,
    /// Name, precision, device and weight fingerprint, or the error chain.
    pub detail: String,
    /// For a `coreml:` spec whose bundle verifies (on any OS): the package's declared inputs,
    /// read from its model specification and checked against what the adapter feeds; `null`
    /// for other specs or when the bundle does not verify (`detail` says why).
    pub declared_inputs: Option<Vec<DeclaredFeature>>,
    /// The package's declared outputs, checked against what the adapter reads.
    pub declared_outputs: Option<Vec<DeclaredFeature>>,
}

/// The declared interface of a `coreml:` spec's bundle, when it verifies.
fn declared(spec: &str) -> Option<(Vec<DeclaredFeature>, Vec<DeclaredFeature>)> {
    let registry::BackendSpec::CoreMl(cm) = registry::BackendSpec::parse(spec).ok()? else {
        return None;
    };
    let bundle =
        crate::laya::bundle::Bundle::load(&crate::laya::bundle::ModelSpec::Dir(cm.bundle), |_| None).ok()?;
    match bundle.weights {
        crate::laya::bundle::Weights::CoreMl(c) => {
            let d = *c.description;
            Some((d.inputs, d.outputs))
        }
        _ => None,
    }
}

/// Try to build every spec for `model` (nothing is run).
pub fn load_checks(model: &str, specs: &[String]) -> Vec<LoadCheck> {
    if specs.is_empty() {
        return Vec::new();
    }
    let bundle = super::predict::load_bundle(model);
    specs
        .iter()
        .map(|spec| {
            let result = match &bundle {
                Err(f) => Err(f.to_string()),
                Ok(b) => super::predict::build_backend(spec, b).map_err(|f| f.to_string()),
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

fn mark(usable: bool) -> &'static str {
    if usable {
        "yes"
    } else {
        "no"
    }
}

pub(crate) fn run(args: &DoctorArgs) -> Outcome {
    let timeout = max_gap(std::time::Duration::from_millis(500));
    let sensors = power::survey(timeout);
    let defaults = power::default_specs();
    let default_sensor = defaults
        .iter()
        .find(|d| sensors.iter().any(|s| s.usable && s.spec == d.to_string()))
        .map(|d| d.to_string());
    let default_sensor_missing_reason = default_sensor.is_none().then(|| {
        let names: Vec<String> = defaults.iter().map(|d| d.to_string()).collect();
        format!("none of {} is usable here; pass --sensor exec:CMD with an external meter", names.join(", "))
    });
    let doc = Doctor {
        schema_version: 1,
        tool: ToolInfo::current(),
        host: HostInfo::detect(),
        default_sensor,
        default_sensor_missing_reason,
        sensors,
        backends: registry::survey(),
        apple: apple_report(),
        apple_missing_reason: (!cfg!(target_os = "macos"))
            .then(|| format!("the Apple probes run only on macOS; this is {}", std::env::consts::OS)),
        loads: load_checks(&args.model, &args.backends),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&doc).map_err(|e| Failure::run(anyhow!(e)))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "laya-bench {} on {} {} ({} logical CPUs)\n",
        doc.tool.version, doc.host.os, doc.host.arch, doc.host.logical_cpus
    );
    println!("Power sensors (--sensor):");
    let width = doc.sensors.iter().map(|s| s.spec.chars().count()).max().unwrap_or(0);
    for s in &doc.sensors {
        println!("  {:<width$} usable: {:<3}  {}", s.spec, mark(s.usable), s.detail);
    }
    match (&doc.default_sensor, &doc.default_sensor_missing_reason) {
        (Some(d), _) => println!("  default for `energy`: {d}"),
        (None, Some(why)) => println!("  default for `energy`: none ({why})"),
        (None, None) => {}
    }
    println!("\nBackends (--arm NAME=SPEC, --backend):");
    let width = doc.backends.iter().map(|b| b.spec.chars().count()).max().unwrap_or(0);
    for b in &doc.backends {
        println!("  {:<width$} usable: {:<3}  {}", b.spec, mark(b.usable), b.detail);
    }
    if let Some(apple) = &doc.apple {
        println!("\nApple hardware:");
        for line in apple.lines() {
            println!("{line}");
        }
    }
    if !doc.loads.is_empty() {
        println!("\nBackend loads (--backend SPEC for --model {}):", args.model);
        for l in &doc.loads {
            println!("  {}  loads: {:<3}  {}", l.spec, mark(l.loaded), l.detail);
            let list = |v: &[DeclaredFeature]| v.iter().map(|f| f.summary()).collect::<Vec<_>>().join("; ");
            if let (Some(i), Some(o)) = (&l.declared_inputs, &l.declared_outputs) {
                println!("    declared_inputs:  {}", list(i));
                println!("    declared_outputs: {}", list(o));
                println!("    (read from the package's model specification; they match what the adapter feeds and reads)");
            }
        }
    }
    Ok(())
}

#[cfg(target_os = "macos")]
fn apple_report() -> Option<AppleReport> {
    Some(super::doctor_apple::probe())
}

#[cfg(not(target_os = "macos"))]
fn apple_report() -> Option<AppleReport> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_plan_needs_macos_14_4() {
        for (v, want) in [
            ("14.4", true),
            ("14.4.1", true),
            ("15.0", true),
            ("26", true),
            ("14.3.1", false),
            ("13.6", false),
        ] {
            assert_eq!(compute_plan_supported(v), want, "{v}");
        }
        assert!(!compute_plan_supported("Darwin"));
        assert!(!compute_plan_supported(""));
    }

    #[test]
    fn apple_report_keeps_values_or_reasons() {
        let r = AppleReport::new(
            Ok("Apple M3 Max".into()),
            Err("sw_vers printed nothing".into()),
            Probe { available: true, detail: "present".into() },
            Probe { available: false, detail: "not built in".into() },
            Ok(12.25),
        );
        assert_eq!(r.chip.as_deref(), Some("Apple M3 Max"));
        assert_eq!(
            (r.os_version.as_deref(), r.os_version_missing_reason.as_deref()),
            (None, Some("sw_vers printed nothing"))
        );
        let lines = r.lines();
        assert_eq!(lines[0], "  chip:     Apple M3 Max");
        assert_eq!(lines[1], "  OS:       unknown (sw_vers printed nothing)");
        assert_eq!(lines[2], "  Core ML:  yes  present");
        assert_eq!(lines[3], "  MLX:      no   not built in");
        assert_eq!(lines[4], "  PSTR:     yes  one read: 12.250 W (total system power)");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["pstr_w"], 12.25);
        assert!(json["os_version"].is_null());
        let failed = AppleReport::new(
            Err("x".into()),
            Ok("macOS 15.1 (24B83)".into()),
            Probe { available: false, detail: "missing".into() },
            Probe { available: false, detail: "m".into() },
            Err("sensor unavailable: pstr: no SMC".into()),
        );
        assert_eq!(failed.lines()[4], "  PSTR:     no   sensor unavailable: pstr: no SMC");
        assert!(serde_json::to_value(&failed).unwrap()["pstr_w"].is_null());
    }

    #[test]
    fn load_checks_build_each_spec_or_say_why() {
        let checks = load_checks("builtin:tiny", &["portable:f32".into(), "gpu:fast".into()]);
        assert_eq!(checks.len(), 2);
        assert!(checks[0].loaded && checks[0].detail.starts_with("portable f32 on "), "{:?}", checks[0]);
        assert!(!checks[1].loaded && checks[1].detail.contains("unknown backend"), "{:?}", checks[1]);
        let bad_model = load_checks("builtin:nope", &["portable:f32".into()]);
        assert!(!bad_model[0].loaded && bad_model[0].detail.contains("builtin:nope"), "{:?}", bad_model[0]);
        assert!(load_checks("builtin:tiny", &[]).is_empty());
        // On the tiny model a palettized arm is the f32 weights, and the check says so.
        let w8 = load_checks("builtin:tiny", &["portable:w8".into()]);
        assert!(w8[0].loaded && w8[0].detail.contains("note: nothing palettized"), "{:?}", w8[0]);
    }
}
