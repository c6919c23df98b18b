//! The `convert-check` report (schema_version 1): what was compared, the gates, every
//! question, the static bundle checks, package sizes and the expected compute placement.

use serde::{Deserialize, Serialize};

use super::bundle_checks::BundleChecks;
use super::check::{QuestionResult, SuiteSummary};
use super::package::PackageAccounting;
use crate::report::raw::ToolInfo;
use crate::trace::ComputePlanReport;

/// Version of the [`ConvertCheckReport`] layout.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// One side of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    /// As the user wrote it.
    pub spec: String,
    /// `backend` (a backend spec on the source model), `checkpoint` (a folder on
    /// portable:f32) or `coreml_bundle`; the source is always `checkpoint`.
    pub kind: String,
    /// The model it runs.
    pub model: String,
    /// The backend spec it runs on (`null` + note when it cannot run here).
    pub backend: Option<String>,
    /// Stored weight precision as the backend names it.
    pub precision: Option<String>,
    /// Where it computes.
    pub device: Option<String>,
    /// sha256 fingerprint of the weights it ran (see docs/PRECISION.md).
    pub fingerprint: Option<String>,
    /// Facts that qualify the result (e.g. nothing was palettized).
    pub notes: Vec<String>,
}

/// The shape every question was built and packed for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeInfo {
    /// Rows per call.
    pub batch_size: usize,
    /// Longest row in tokens (the ANE bundle's fixed L).
    pub max_length_tokens: usize,
    /// Marker slots K.
    pub max_options: usize,
    /// `fixed`, `range` or `enumerated`.
    pub mode: String,
}

/// The gate settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateInfo {
    /// Largest allowed |Δ| of any calibrated probability or the action probability.
    pub max_abs_drift: f64,
    /// A flipped answer is allowed (and reported) only below this source margin (2 × gate).
    pub flip_allowed_below_margin: f64,
    /// Identical candidate calls per question, all required bit-identical.
    pub repeats: usize,
    /// The `--max-len` override (`null`: the model's own max_len, clamped to the shape).
    pub max_len_tokens: Option<usize>,
}

/// The suite that ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteInfo {
    /// Path, or the embedded default.
    pub source: String,
    /// Its `name`.
    pub name: String,
    /// sha256 of its bytes.
    pub sha256: String,
}

/// The whole `convert-check` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvertCheckReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `convert-check`.
    pub kind: String,
    /// The tool that wrote it.
    pub tool: ToolInfo,
    /// The command line.
    pub command_line: Vec<String>,
    /// `passed`, `failed`, or `not_passed` (the gates could not run here).
    pub verdict: String,
    /// `verdict == "passed"`.
    pub passed: bool,
    /// One sentence saying why.
    pub verdict_reason: String,
    /// The FP32 source.
    pub source: SideInfo,
    /// The candidate.
    pub candidate: SideInfo,
    /// The shape rows were built for.
    pub shape: ShapeInfo,
    /// Gate settings.
    pub gate: GateInfo,
    /// The suite.
    pub suite: SuiteInfo,
    /// Totals, failures and the max drift.
    pub summary: SuiteSummary,
    /// Every question in suite order.
    pub questions: Vec<QuestionResult>,
    /// Static checks of a Core ML candidate (`null` for other candidates).
    pub bundle_checks: Option<BundleChecks>,
    /// Weight sizes, source next to candidate.
    pub package: PackageAccounting,
    /// Expected placement from Core ML's compute plan (`null` unless a Core ML candidate was
    /// planned on macOS).
    pub compute_placement: Option<ComputePlanReport>,
    /// Why `compute_placement` is what it is.
    pub compute_placement_note: String,
}

/// The verdict from the suite, the static checks and whether the gates ran.
pub fn verdict(summary: &SuiteSummary, bundle: Option<&BundleChecks>) -> (String, String) {
    let bundle_failed = bundle.is_some_and(|b| !b.passed);
    if bundle_failed {
        return ("failed".into(), "a static bundle check failed (see bundle_checks)".into());
    }
    if let Some(reason) = &summary.gates_not_run_reason {
        return (
            "not_passed".into(),
            format!("static checks done; the decision gates did not run: {reason}"),
        );
    }
    if summary.fitting_count == 0 {
        return ("failed".into(), "no suite question fits the candidate's shape".into());
    }
    if !summary.failed.is_empty() {
        return (
            "failed".into(),
            format!("{} of {} fitting questions failed a gate", summary.failed.len(), summary.fitting_count),
        );
    }
    ("passed".into(), "every gate passed on every fitting question".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(fitting: usize, failed: &[&str], not_run: Option<&str>) -> SuiteSummary {
        SuiteSummary {
            question_count: 3,
            fitting_count: fitting,
            fitting: format!("{fitting}/3 fitting"),
            not_fitting: Vec::new(),
            gates_run: not_run.is_none(),
            gates_not_run_reason: not_run.map(str::to_string),
            passed_count: fitting - failed.len(),
            failed: failed.iter().map(|s| s.to_string()).collect(),
            allowed_flips: Vec::new(),
            max_drift: None,
            max_drift_question: None,
            max_drift_missing_reason: None,
        }
    }

    #[test]
    fn the_verdict_passes_only_when_gates_ran_and_every_fitting_question_passed() {
        assert_eq!(verdict(&summary(3, &[], None), None).0, "passed");
        let (v, why) = verdict(&summary(3, &["a"], None), None);
        assert_eq!((v.as_str(), why.as_str()), ("failed", "1 of 3 fitting questions failed a gate"));
        assert_eq!(verdict(&summary(0, &[], None), None).0, "failed");
        let (v, why) = verdict(&summary(3, &[], Some("needs macOS")), None);
        assert_eq!(v, "not_passed");
        assert!(why.ends_with("needs macOS"), "{why}");
    }
}
