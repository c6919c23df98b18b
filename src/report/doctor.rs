//! The `doctor --json` report (schema_version 1): every power sensor and backend spec kind and
//! whether each is usable here, the Apple probes, and whether each `--backend SPEC` loads for
//! the model. Assembled by [`crate::run::survey::survey`]; `commands/doctor.rs` prints it.

use std::fmt::{Display, Write as _};

use serde::Serialize;

use super::Render;
use crate::backend::registry::BackendStatus;
use crate::laya::coreml_format::description::DeclaredFeature;
use crate::power::SensorStatus;
use crate::record::provenance::Provenance;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// `doctor --json` (schema_version 1).
#[derive(Debug, Serialize)]
pub struct DoctorReport {
    /// Schema version, this build and this machine.
    #[serde(flatten)]
    pub provenance: Provenance,
    /// What `energy` uses without `--sensor`, or `null` with the reason.
    pub default_sensor: Option<String>,
    /// Why `default_sensor` is `null`.
    pub default_sensor_missing_reason: Option<String>,
    /// Every sensor kind and whether it opened.
    pub sensors: Vec<SensorStatus>,
    /// Every backend spec kind and whether it can run here.
    pub backends: Vec<BackendStatus>,
    /// The Apple probes, or `null` with the reason.
    pub apple: Option<AppleReport>,
    /// Why `apple` is `null`.
    pub apple_missing_reason: Option<String>,
    /// One entry per `--backend SPEC`: whether it loads for `--model`.
    pub loads: Vec<LoadCheck>,
}

/// The survey as `doctor` prints it, for the `--model` its loads were asked for.
#[derive(Debug, Clone, Copy)]
pub struct DoctorText<'a> {
    /// The survey.
    pub report: &'a DoctorReport,
    /// `--model` as given.
    pub model: &'a str,
}

impl Render for DoctorText<'_> {
    /// The machine, every sensor and backend kind with why each is usable or not, the Apple
    /// probes and each `--backend` load.
    fn terminal(&self) -> String {
        let doc = self.report;
        let mut out = String::new();
        let (tool, host) = (&doc.provenance.tool, &doc.provenance.host);
        let _ = writeln!(
            out,
            "laya-bench {} on {} {} ({} logical CPUs)\n",
            tool.version, host.os, host.arch, host.logical_cpus
        );
        let _ = writeln!(out, "Power sensors (--sensor):");
        let width = doc.sensors.iter().map(|s| s.spec.chars().count()).max().unwrap_or(0);
        for s in &doc.sensors {
            let _ = writeln!(out, "  {:<width$} usable: {:<3}  {}", s.spec, mark(s.usable), s.detail);
        }
        match (&doc.default_sensor, &doc.default_sensor_missing_reason) {
            (Some(d), _) => {
                let _ = writeln!(out, "  default for `energy`: {d}");
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "  default for `energy`: none ({why})");
            }
            (None, None) => {}
        }
        let _ = writeln!(out, "\nBackends (--arm NAME=SPEC, --backend):");
        let width = doc.backends.iter().map(|b| b.spec.chars().count()).max().unwrap_or(0);
        for b in &doc.backends {
            let _ = writeln!(out, "  {:<width$} usable: {:<3}  {}", b.spec, mark(b.usable), b.detail);
        }
        if let Some(apple) = &doc.apple {
            let _ = writeln!(out, "\nApple hardware:");
            for line in apple.lines() {
                let _ = writeln!(out, "{line}");
            }
        }
        if !doc.loads.is_empty() {
            let _ = writeln!(out, "\nBackend loads (--backend SPEC for --model {}):", self.model);
            for l in &doc.loads {
                let _ = writeln!(out, "  {}  loads: {:<3}  {}", l.spec, mark(l.loaded), l.detail);
                let list =
                    |v: &[DeclaredFeature]| v.iter().map(|f| f.summary()).collect::<Vec<_>>().join("; ");
                if let (Some(i), Some(o)) = (&l.declared_inputs, &l.declared_outputs) {
                    let _ = writeln!(out, "    declared_inputs:  {}", list(i));
                    let _ = writeln!(out, "    declared_outputs: {}", list(o));
                    let _ = writeln!(out, "    (read from the package's model specification; they match what the adapter feeds and reads)");
                }
            }
        }
        out
    }
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
    /// `machdep.cpu.brand_string`, e.g. `Apple M3 Max`, or `null` with the reason.
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
    /// Assemble from the probes' results (a failed probe's error is kept as its reason).
    pub fn new(
        chip: Result<String, impl Display>,
        os_version: Result<String, impl Display>,
        core_ml: Probe,
        mlx: Probe,
        pstr_w: Result<f64, impl Display>,
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

/// A value, or `None` with the reason (the error's text).
pub fn split<T>(r: Result<T, impl Display>) -> (Option<T>, Option<String>) {
    match r {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// `yes` or `no`.
pub fn mark(usable: bool) -> &'static str {
    if usable {
        "yes"
    } else {
        "no"
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
            Ok::<_, &str>("Apple M3 Max".into()),
            Err("sw_vers printed nothing"),
            Probe { available: true, detail: "present".into() },
            Probe { available: false, detail: "not built in".into() },
            Ok::<_, &str>(12.25),
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
            Err("x"),
            Ok::<_, &str>("macOS 15.1 (24B83)".into()),
            Probe { available: false, detail: "missing".into() },
            Probe { available: false, detail: "m".into() },
            Err("sensor unavailable: pstr: no SMC"),
        );
        assert_eq!(failed.lines()[4], "  PSTR:     no   sensor unavailable: pstr: no SMC");
        assert!(serde_json::to_value(&failed).unwrap()["pstr_w"].is_null());
    }
}
