//! The `convert-check` report (schema_version 1): what was compared, the gates, every
//! question, the static bundle checks, package sizes and the expected compute placement.

use serde::{Deserialize, Serialize};

use super::bundle_checks::BundleChecks;
use super::check::{QuestionResult, SuiteSummary};
use super::gates::Judgement;
use super::package::PackageAccounting;
use super::suite::Suite;
use crate::backend::coreml::description::DeclaredFeature;
use crate::backend::{ShapeCaps, ShapeMode};
use crate::laya::coreml_format::compute_plan::ComputePlanReport;
use crate::record::provenance::ToolInfo;
use crate::report::format::num;
use crate::report::{pad, Render};
use std::fmt::Write as _;

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
        let why = match &summary.none_fits_reason {
            Some(r) => format!("no suite question fits the candidate's shape; the first: {r}"),
            None => "no suite question fits the candidate's shape".into(),
        };
        return ("failed".into(), why);
    }
    if !summary.failed.is_empty() {
        return (
            "failed".into(),
            format!("{} of {} fitting questions failed a gate", summary.failed.len(), summary.fitting_count),
        );
    }
    ("passed".into(), "every gate passed on every fitting question".into())
}

/// The verdict of a whole check: `incomplete` when the suite was stopped before its last
/// question (`stopped` says why), else [`verdict`], with `identical` instead of `passed` when
/// the candidate ran the source's own weights ([`identical_model`]).
pub fn final_verdict(
    summary: &SuiteSummary,
    bundle: Option<&BundleChecks>,
    (answered, asked): (usize, usize),
    stopped: impl FnOnce() -> String,
    sides: (&SideInfo, &SideInfo),
) -> (String, String) {
    if answered < asked {
        return (
            "incomplete".to_string(),
            format!(
                "{} after {answered} of {asked} questions; the figures cover only those, so no verdict is given",
                stopped()
            ),
        );
    }
    let (v, why) = verdict(summary, bundle);
    match identical_model(sides.0, sides.1) {
        Some(same) if v == "passed" => ("identical".to_string(), same),
        _ => (v, why),
    }
}

/// Whether a verdict is a pass (`passed`, or `identical`: every gate passed, on itself).
pub fn is_pass(verdict: &str) -> bool {
    verdict == "passed" || verdict == "identical"
}

/// What a check that did not pass says: `convert-check VERDICT: REASON`, the verdict in words
/// (`INCOMPLETE` for a stopped suite).
pub fn failure_text(verdict: &str, reason: &str) -> String {
    let word = if verdict == "incomplete" { "INCOMPLETE".to_string() } else { verdict.replace('_', " ") };
    format!("convert-check {word}: {reason}")
}

/// When the candidate is the source model itself (the same weights fingerprint on the same
/// engine, e.g. a palettization that changed nothing), what the verdict says instead of
/// PASSED: the check compared it with itself.
pub fn identical_model(source: &SideInfo, candidate: &SideInfo) -> Option<String> {
    let fingerprint = source.fingerprint.as_ref()?;
    // Same weights on another engine (e.g. mlx:fp32 of the source) is a real comparison.
    let same_engine = candidate.backend.as_deref().is_some_and(|b| b.starts_with("portable:"))
        || candidate.backend == source.backend;
    (same_engine && candidate.fingerprint.as_ref() == Some(fingerprint)).then(|| {
        format!(
            "the candidate runs the source's own weights (fingerprint {}, {}): every gate passed because it was compared with itself, which says nothing about a conversion",
            &fingerprint[..fingerprint.len().min(12)],
            source.backend.as_deref().unwrap_or("-")
        )
    })
}

/// Where the candidate's compute would be placed. Only Core ML's `MLComputePlan` answers
/// that; every other candidate gets `None` and the reason.
pub fn compute_placement(
    candidate: &SideInfo,
    settings: &crate::settings::Settings,
) -> (Option<ComputePlanReport>, String) {
    use crate::backend::coreml::{compute_plan_for, default_units_for};
    use crate::backend::registry::BackendSpec;
    if candidate.kind != "coreml_bundle" {
        return (
            None,
            format!(
                "not applicable: placement comes from Core ML's MLComputePlan, and the candidate is a {} on {}",
                match candidate.kind.as_str() {
                    "backend" => "backend spec",
                    "reference_runtime" => "reference runtime",
                    _ => "checkpoint",
                },
                candidate.backend.as_deref().unwrap_or("no backend")
            ),
        );
    }
    let units = match BackendSpec::parse(&candidate.spec) {
        Ok(BackendSpec::CoreMl(spec)) => spec.units,
        _ => None,
    };
    let bundle = std::path::Path::new(&candidate.model);
    let units = units.unwrap_or_else(|| default_units_for(bundle));
    match compute_plan_for(bundle, units, settings) {
        Ok(report) => (
            Some(report),
            format!(
                "expected placement from MLComputePlan with compute units {} (what Core ML prefers \
                 before running; not proof that the accelerator ran: use `laya-bench trace` for that)",
                units.name()
            ),
        ),
        Err(e) => (None, format!("not computed: {e}")),
    }
}

impl ShapeInfo {
    /// The shape as the report names it.
    pub fn of(shapes: &ShapeCaps) -> Self {
        ShapeInfo {
            batch_size: shapes.batch_size,
            max_length_tokens: shapes.max_length,
            max_options: shapes.max_options,
            mode: match shapes.mode {
                ShapeMode::Fixed => "fixed",
                ShapeMode::Range => "range",
                ShapeMode::Enumerated(_) => "enumerated",
            }
            .into(),
        }
    }
}

impl GateInfo {
    /// The settings of a check at `gate` (flips allowed below 2 × gate).
    pub fn new(gate: f64, repeats: usize, max_len_tokens: Option<usize>) -> Self {
        GateInfo { max_abs_drift: gate, flip_allowed_below_margin: 2.0 * gate, repeats, max_len_tokens }
    }
}

impl SuiteInfo {
    /// Where the suite came from, its name and digest.
    pub fn of(suite: &Suite) -> Self {
        SuiteInfo { source: suite.source.clone(), name: suite.name.clone(), sha256: suite.sha256.clone() }
    }
}

/// The judged questions, worst first: failed before passed, then by falling drift (a NaN
/// drift compares equal to any other, so it keeps its place).
pub fn worst_questions(questions: &[QuestionResult]) -> Vec<&QuestionResult> {
    let mut judged: Vec<&QuestionResult> = questions.iter().filter(|q| q.gates.is_some()).collect();
    judged.sort_by(|a, b| {
        let (ga, gb) = (a.gates.as_ref(), b.gates.as_ref());
        let key = |g: Option<&Judgement>| g.map_or((true, 0.0), |g| (g.passed, -g.drift));
        key(ga).partial_cmp(&key(gb)).unwrap_or(std::cmp::Ordering::Equal)
    });
    judged
}

/// What a finished check gathered: the sides, the shape, the gate, the suite and its results,
/// the static checks and the package sizes ([`ConvertCheckReport::assemble`] adds the rest).
#[derive(Debug, Clone)]
pub struct Gathered {
    /// The FP32 source.
    pub source: SideInfo,
    /// The candidate.
    pub candidate: SideInfo,
    /// The shape every question was built for.
    pub shape: ShapeInfo,
    /// The gate settings.
    pub gate: GateInfo,
    /// The suite that ran.
    pub suite: SuiteInfo,
    /// How many questions it asked.
    pub asked: usize,
    /// Its summary.
    pub summary: SuiteSummary,
    /// Every question that ran.
    pub questions: Vec<QuestionResult>,
    /// The static checks of a Core ML bundle.
    pub bundle_checks: Option<BundleChecks>,
    /// Source and candidate package sizes.
    pub package: PackageAccounting,
}

impl ConvertCheckReport {
    /// The report of a check: its verdict ([`final_verdict`]; `stopped` says why a suite that
    /// answered fewer questions than it asked stopped) and where the candidate's compute would
    /// be placed ([`compute_placement`]).
    pub fn assemble(
        g: Gathered,
        stopped: impl FnOnce() -> String,
        command_line: Vec<String>,
        settings: &crate::settings::Settings,
    ) -> Self {
        let (verdict, verdict_reason) = final_verdict(
            &g.summary,
            g.bundle_checks.as_ref(),
            (g.questions.len(), g.asked),
            stopped,
            (&g.source, &g.candidate),
        );
        let (compute_placement, compute_placement_note) = compute_placement(&g.candidate, settings);
        ConvertCheckReport {
            schema_version: REPORT_SCHEMA_VERSION,
            kind: "convert-check".into(),
            tool: ToolInfo::current(),
            command_line,
            passed: is_pass(&verdict),
            verdict,
            verdict_reason,
            source: g.source,
            candidate: g.candidate,
            shape: g.shape,
            gate: g.gate,
            suite: g.suite,
            summary: g.summary,
            questions: g.questions,
            bundle_checks: g.bundle_checks,
            package: g.package,
            compute_placement,
            compute_placement_note,
        }
    }
}

impl Render for ConvertCheckReport {
    /// What `convert-check` prints: the verdict first, then the worst questions, the bundle,
    /// the package and the expected compute placement.
    fn terminal(&self) -> String {
        let r = self;
        let mut o = String::new();
        let s = &r.summary;
        let _ = writeln!(
            o,
            "convert-check: {} — {} ({}, gate {}, {} repeats)",
            r.verdict.to_uppercase().replace('_', " "),
            r.verdict_reason,
            s.fitting,
            r.gate.max_abs_drift,
            r.gate.repeats
        );
        match (&s.max_drift, &s.max_drift_question) {
            (Some(d), Some(q)) => {
                let _ = writeln!(o, "max drift {d:.6} on `{q}`");
            }
            _ => {
                let _ = writeln!(
                    o,
                    "max drift: none ({})",
                    s.max_drift_missing_reason.as_deref().unwrap_or("not computed")
                );
            }
        }
        let _ = writeln!(
            o,
            "source    {} on {} (fingerprint {})",
            r.source.spec,
            r.source.backend.as_deref().unwrap_or("-"),
            r.source.fingerprint.as_deref().unwrap_or("-")
        );
        let _ = writeln!(
            o,
            "candidate {} [{}] precision {} (fingerprint {})",
            r.candidate.spec,
            r.candidate.kind,
            r.candidate.precision.as_deref().unwrap_or("-"),
            r.candidate.fingerprint.as_deref().unwrap_or("-")
        );
        for n in &r.candidate.notes {
            let _ = writeln!(o, "  note: {n}");
        }
        let judged = worst_questions(&r.questions);
        if !judged.is_empty() {
            let _ = writeln!(o, "worst questions:");
            let _ = writeln!(
                o,
                "  {:<16} {:<6} {:>10} {:>10}  {:<32} verdict",
                "id", "type", "drift", "margin", "answer (source -> candidate)"
            );
            for q in judged.iter().take(10) {
                let Some(g) = &q.gates else { continue };
                let answer = format!(
                    "{} -> {}",
                    q.source_answer.as_deref().unwrap_or("?"),
                    q.candidate_answer.as_deref().unwrap_or("?")
                );
                let mark = if !g.passed {
                    format!("FAIL: {}", g.failures.join("; "))
                } else if g.allowed_flip {
                    "pass (flip below margin)".into()
                } else {
                    "pass".into()
                };
                let drift = if g.drift.is_finite() { format!("{:.6}", g.drift) } else { "non-finite".into() };
                // Ids and answers may hold wide characters (今日): pad by terminal columns.
                let _ = writeln!(
                    o,
                    "  {} {:<6} {:>10} {:>10.6}  {} {mark}",
                    pad(&q.id, 16),
                    q.qtype,
                    drift,
                    g.source_margin,
                    pad(&answer, 32)
                );
            }
        }
        if !s.not_fitting.is_empty() {
            let _ = writeln!(o, "not fitting ({}): {}", s.not_fitting.len(), s.not_fitting.join(", "));
        }
        if !s.allowed_flips.is_empty() {
            let _ = writeln!(
                o,
                "allowed flips (source margin below {}): {}",
                r.gate.flip_allowed_below_margin,
                s.allowed_flips.join(", ")
            );
        }
        if let Some(b) = &r.bundle_checks {
            let bad: Vec<&str> =
                b.host_weights.iter().filter(|t| !t.matches).map(|t| t.name.as_str()).collect();
            let _ = writeln!(
                o,
                "bundle: {} {} files verified, shape B{} L{} K{}{}; host weights {}",
                b.format,
                b.verified_files.len(),
                b.batch_size,
                b.max_length,
                b.max_options,
                if b.fixed_b1_k32 { " (fixed)" } else { "" },
                if b.host_weights.is_empty() {
                    b.host_weights_note.clone().unwrap_or_default()
                } else if bad.is_empty() {
                    format!(
                        "match the source ({})",
                        b.host_weights.first().map_or("", |t| t.comparison.as_str())
                    )
                } else {
                    format!("DIFFER: {}", bad.join(", "))
                }
            );
            let list = |v: &[DeclaredFeature]| v.iter().map(|f| f.summary()).collect::<Vec<_>>().join("; ");
            let _ = writeln!(o, "declared_inputs:  {}", list(&b.declared_inputs));
            let _ = writeln!(o, "declared_outputs: {}", list(&b.declared_outputs));
            let _ = writeln!(o, "  {}", b.declared_interface_check);
        }
        let p = &r.package;
        let _ = writeln!(o,
            "package (weights without host embedding tables, {}): source {} MB payload, {} MB per decision; candidate {} MB payload, {} MB per decision",
            p.note,
            num(p.source.weight_payload_mb, 3),
            num(p.source.streamed_mb_per_decision, 3),
            num(p.candidate.weight_payload_mb, 3),
            num(p.candidate.streamed_mb_per_decision, 3)
        );
        let _ = writeln!(o, "compute placement: {}", r.compute_placement_note);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_says_its_verdict_in_words() {
        assert_eq!(
            failure_text("not_passed", "no question fits"),
            "convert-check not passed: no question fits"
        );
        assert_eq!(failure_text("incomplete", "stopped"), "convert-check INCOMPLETE: stopped");
    }

    fn summary(fitting: usize, failed: &[&str], not_run: Option<&str>) -> SuiteSummary {
        SuiteSummary {
            question_count: 3,
            questions_run: 3,
            fitting_count: fitting,
            fitting: format!("{fitting}/3 fitting"),
            not_fitting: Vec::new(),
            none_fits_reason: None,
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

    fn side(backend: &str, fingerprint: &str) -> SideInfo {
        SideInfo {
            spec: backend.into(),
            kind: "backend".into(),
            model: "builtin:tiny".into(),
            backend: Some(backend.into()),
            precision: None,
            device: None,
            fingerprint: Some(fingerprint.into()),
            notes: Vec::new(),
        }
    }

    fn gathered(summary: SuiteSummary, source: SideInfo, candidate: SideInfo) -> Gathered {
        use super::super::package::missing_side;
        Gathered {
            source,
            candidate,
            shape: ShapeInfo { batch_size: 1, max_length_tokens: 96, max_options: 32, mode: "fixed".into() },
            gate: GateInfo::new(0.05, 3, None),
            suite: SuiteInfo { source: "builtin".into(), name: "s".into(), sha256: String::new() },
            asked: 3,
            summary,
            questions: Vec::new(),
            bundle_checks: None,
            package: PackageAccounting::new(missing_side("a", "x"), missing_side("b", "y")),
        }
    }

    #[test]
    fn an_assembled_report_carries_its_verdict_and_placement() {
        let settings = crate::settings::Settings::default();
        let line = vec!["laya-bench".to_string(), "convert-check".to_string()];
        // no question ran of the 3 asked: incomplete, told why
        let g = gathered(summary(3, &[], None), side("portable:f32", "aa"), side("mlx:fp32", "bb"));
        let stopped = || "stopped by SIGINT".to_string();
        let r = ConvertCheckReport::assemble(g.clone(), stopped, line.clone(), &settings);
        assert_eq!((r.verdict.as_str(), r.passed), ("incomplete", false));
        assert_eq!(
            r.verdict_reason,
            "stopped by SIGINT after 0 of 3 questions; the figures cover only those, so no verdict is given"
        );
        assert_eq!((r.schema_version, r.kind.as_str(), &r.command_line), (1, "convert-check", &line));
        // none asked: the suite's own verdict; a backend candidate has no Core ML placement
        let r = ConvertCheckReport::assemble(Gathered { asked: 0, ..g }, || unreachable!(), line, &settings);
        assert_eq!((r.verdict.as_str(), r.passed), ("passed", true));
        assert!(r.compute_placement.is_none());
        assert!(r.compute_placement_note.starts_with("not applicable: placement comes from Core ML"));
    }

    #[test]
    fn a_stopped_suite_is_incomplete_and_the_source_against_itself_is_identical() {
        let (src, same) = (side("portable:f32", "0123456789abcdef"), side("portable:w8", "0123456789abcdef"));
        let (v, why) =
            final_verdict(&summary(3, &[], None), None, (2, 3), || "stopped".into(), (&src, &same));
        assert_eq!(v, "incomplete");
        assert_eq!(
            why,
            "stopped after 2 of 3 questions; the figures cover only those, so no verdict is given"
        );
        let (v, why) = final_verdict(&summary(3, &[], None), None, (3, 3), String::new, (&src, &same));
        assert_eq!(v, "identical");
        assert!(why.contains("fingerprint 0123456789ab, portable:f32"), "{why}");
        assert!(is_pass(&v) && is_pass("passed") && !is_pass("not_passed"));
        // The same weights on another engine is a real comparison; a failed check stays failed.
        let mlx = side("mlx:fp32:builtin:tiny", "0123456789abcdef");
        assert_eq!(
            final_verdict(&summary(3, &[], None), None, (3, 3), String::new, (&src, &mlx)).0,
            "passed"
        );
        assert_eq!(
            final_verdict(&summary(3, &["a"], None), None, (3, 3), String::new, (&src, &same)).0,
            "failed"
        );
        assert_eq!(GateInfo::new(0.02, 3, None).flip_allowed_below_margin, 0.04);
    }

    #[test]
    fn the_worst_questions_are_the_failed_then_the_largest_drifts() {
        let q = |id: &str, passed: bool, drift: f64| {
            let gates = crate::fidelity::gates::judge(
                &crate::fidelity::Decision { probabilities: vec![0.9, 0.1], act_probability: 0.5 },
                &crate::fidelity::Decision {
                    probabilities: vec![0.9 - drift as f32, 0.1 + drift as f32],
                    act_probability: 0.5,
                },
                true,
                0.02,
            );
            assert_eq!(gates.passed, passed, "{id}");
            QuestionResult {
                id: id.into(),
                state: "s".into(),
                qtype: "noul".into(),
                options: 2,
                note: None,
                fits: true,
                not_fitting_reason: None,
                row_tokens: Some(10),
                state_tokens_dropped: Some(0),
                source_answer: None,
                candidate_answer: None,
                gates: Some(gates),
                gates_not_run_reason: None,
            }
        };
        let mut skipped = q("skipped", true, 0.0);
        skipped.gates = None;
        let qs = [
            q("small", true, 0.001),
            skipped,
            q("bad", false, 0.1),
            q("big", true, 0.01),
            q("worse", false, 0.2),
        ];
        let ids: Vec<&str> = worst_questions(&qs).iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["worse", "bad", "big", "small"]);
    }

    #[test]
    fn the_verdict_passes_only_when_gates_ran_and_every_fitting_question_passed() {
        assert_eq!(verdict(&summary(3, &[], None), None).0, "passed");
        let (v, why) = verdict(&summary(3, &["a"], None), None);
        assert_eq!((v.as_str(), why.as_str()), ("failed", "1 of 3 fitting questions failed a gate"));
        assert_eq!(verdict(&summary(0, &[], None), None).0, "failed");
        let none_fits = SuiteSummary {
            none_fits_reason: Some("question 'q': raise max_len".into()),
            ..summary(0, &[], None)
        };
        assert_eq!(
            verdict(&none_fits, None).1,
            "no suite question fits the candidate's shape; the first: question 'q': raise max_len"
        );
        let (v, why) = verdict(&summary(3, &[], Some("needs macOS")), None);
        assert_eq!(v, "not_passed");
        assert!(why.ends_with("needs macOS"), "{why}");
    }
}
