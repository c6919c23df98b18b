//! The `verify --output` report (schema_version 1) and its verdict: per backend the cases that
//! ran with their tolerance, whether the backend passed, and whether the whole run did; and the
//! per-backend table `verify` prints.

use serde::Serialize;
use serde_json::Value;

use super::{BackendCase, DecodeCase, Goldens, PromptCase, Tolerance, SCHEMA_VERSION};
use crate::backend::BackendInfo;
use crate::report::Render;

/// What each measured quantity of the report is in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Units {
    /// Logit differences.
    pub logit_max_abs: &'static str,
    /// Action-logit differences.
    pub action_logit_max_abs: &'static str,
    /// Relative action-logit differences.
    pub action_logit_max_rel: &'static str,
    /// Answer differences.
    #[serde(rename = "answers.max_abs_difference")]
    pub answers_max_abs_difference: &'static str,
    /// The tolerance rule.
    pub tolerance: &'static str,
}

/// The units every report states.
pub const UNITS: Units = Units {
    logit_max_abs: "raw logit units (dimensionless)",
    action_logit_max_abs: "raw action-logit units (dimensionless)",
    action_logit_max_rel: "fraction of |reference|, over references that are not zero (null where every one is)",
    answers_max_abs_difference: "probability (0..1), or score levels for a score",
    tolerance: "logits: |got - ref| <= logit_atol + logit_rtol * |ref|; answers: |Δ| <= answer_tol (score: answer_tol * (levels - 1))",
};

/// The goldens file checked against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoldensInfo {
    /// The file as given.
    pub file: String,
    /// Its sha256.
    pub sha256: String,
    /// The model the goldens name.
    pub model: String,
    /// The reference that made them.
    pub reference: String,
    /// The weights they were made from, where they say.
    pub source_weights_sha256: Option<String>,
    /// The reference's packages, as the file gives them.
    pub reference_packages: Option<Value>,
    /// How many cases.
    pub cases: usize,
    /// How many prompt rows over every case.
    pub rows: usize,
}

impl GoldensInfo {
    /// The header of `goldens`.
    pub fn of(goldens: &Goldens) -> Self {
        GoldensInfo {
            file: goldens.file.clone(),
            sha256: goldens.sha256.clone(),
            model: goldens.model.clone(),
            reference: goldens.reference.clone(),
            source_weights_sha256: goldens.source_weights_sha256.clone(),
            reference_packages: goldens.reference_packages.clone(),
            cases: goldens.cases.len(),
            rows: goldens.cases.iter().map(|c| c.items.len()).sum(),
        }
    }
}

/// The model checked, and whether its weights are the goldens'.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCheck {
    /// `--model` as given.
    pub spec: String,
    /// Where the bundle came from.
    pub source: String,
    /// Its weights' sha256, where it has weights to hash.
    pub weights_sha256: Option<String>,
    /// Whether they are the goldens' weights (`None`: not comparable).
    pub weights_match_goldens: Option<bool>,
}

impl ModelCheck {
    /// The model `--model SPEC` loaded from `source`, and its weights against the goldens'.
    pub fn new(spec: &str, source: &str, weights: &super::weights::WeightsCheck) -> Self {
        ModelCheck {
            spec: spec.to_string(),
            source: source.to_string(),
            weights_match_goldens: weights.matches(),
            weights_sha256: weights.found.clone(),
        }
    }
}

/// One backend's cases and verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendReport {
    /// `--backend` as given.
    pub spec: String,
    /// The backend's name.
    pub name: String,
    /// Its precision.
    pub precision: String,
    /// Its device.
    pub device: String,
    /// Its weights' fingerprint.
    pub fingerprint: String,
    /// Notes a reader must see.
    pub notes: Vec<String>,
    /// The tolerance its cases were judged with.
    pub tolerance: Tolerance,
    /// Cases that passed.
    pub cases_passed: usize,
    /// Cases that ran and failed.
    pub cases_failed: usize,
    /// Cases skipped (with their reason in `cases`).
    pub cases_skipped: usize,
    /// Whether the backend passed: not cut short, at least one case checked, and every case
    /// that ran passed.
    pub passed: bool,
    /// Every case, in order.
    pub cases: Vec<BackendCase>,
}

impl BackendReport {
    /// The verdict of `cases` on the backend `info` built from `spec`; `cut` says the run
    /// stopped part-way, which leaves the backend without a verdict whatever its first cases
    /// gave.
    pub fn new(
        spec: &str,
        info: &BackendInfo,
        tolerance: Tolerance,
        cases: Vec<BackendCase>,
        cut: bool,
    ) -> Self {
        let checked = cases.iter().filter(|c| c.skipped.is_none()).count();
        let passed = !cut && checked > 0 && cases.iter().all(|c| c.passed || c.skipped.is_some());
        BackendReport {
            spec: spec.to_string(),
            name: info.name.clone(),
            precision: info.precision.clone(),
            device: info.device.clone(),
            fingerprint: info.fingerprint.clone(),
            notes: info.notes.clone(),
            tolerance,
            cases_passed: cases.iter().filter(|c| c.passed).count(),
            cases_failed: cases.iter().filter(|c| !c.passed && c.skipped.is_none()).count(),
            cases_skipped: cases.len() - checked,
            passed,
            cases,
        }
    }
}

/// One backend's cases as `verify` prints them, beside the goldens' prompt checks.
#[derive(Debug, Clone, Copy)]
pub struct BackendTable<'a> {
    /// The backend's cases and verdict.
    pub backend: &'a BackendReport,
    /// The prompt checks, case by case (their token differences are listed under a case).
    pub prompts: &'a [PromptCase],
}

impl Render for BackendTable<'_> {
    /// The per-case table (each line ends in a newline; a blank line closes the table).
    fn terminal(&self) -> String {
        let b = self.backend;
        let (spec, precision, tol, cases, prompts) =
            (&b.spec, &b.precision, &b.tolerance, &b.cases, self.prompts);
        let mut out = format!(
            "backend {spec} ({precision}): logits |Δ| ≤ {:e} + {:e}·|ref|, answers |Δ| ≤ {:e}\n",
            tol.logit_atol, tol.logit_rtol, tol.answer_tol
        );
        let width = cases.iter().map(|c| c.case.len()).max().unwrap_or(4).max(4);
        out.push_str(&format!(
            "{:<width$}  {:>4}  {:<6}  {:>12}  {:>13}  {:>8}  {:<7}  {:<7}  verdict\n",
            "case", "rows", "tokens", "logit max|Δ|", "action max|Δ|", "outside", "answers", "decode"
        ));
        let num = |v: Option<f64>| v.map(|x| format!("{x:.3e}")).unwrap_or_else(|| "-".into());
        for (c, p) in cases.iter().zip(prompts) {
            if let Some(why) = &c.skipped {
                out.push_str(&format!("{:<width$}  {:>4}  skipped: {why}\n", c.case, c.rows));
                continue;
            }
            out.push_str(&format!(
                "{:<width$}  {:>4}  {:<6}  {:>12}  {:>13}  {:>8}  {:<7}  {:<7}  {}\n",
                c.case,
                c.rows,
                if c.tokens_equal { "exact" } else { "DIFFER" },
                num(c.logit_max_abs),
                num(c.action_logit_max_abs),
                c.values_outside_tolerance,
                if c.answers.equal() { "equal" } else { "DIFFER" },
                if c.decode_equal { "equal" } else { "DIFFER" },
                if c.passed { "pass" } else { "FAIL" }
            ));
            for d in p.differences.iter().take(3) {
                out.push_str(&format!("{:<width$}    tokens: {d}\n", ""));
            }
            for d in c.answers.differences.iter().take(3) {
                out.push_str(&format!("{:<width$}    answers: {d}\n", ""));
            }
            for d in &c.answers.near_tie_flips {
                out.push_str(&format!("{:<width$}    near tie (not failed): {d}\n", ""));
            }
        }
        let passed = cases.iter().filter(|c| c.passed).count();
        let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
        let skipped = if skipped > 0 { format!(" ({skipped} skipped)") } else { String::new() };
        out.push_str(&format!(
            "{passed}/{} cases passed{skipped}\n\n",
            cases.len() - cases.iter().filter(|c| c.skipped.is_some()).count()
        ));
        out
    }
}

/// `verify --output` (schema_version 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `laya-bench-verify`.
    pub kind: &'static str,
    /// What the numbers are in.
    pub units: Units,
    /// The goldens file.
    pub goldens: GoldensInfo,
    /// The model.
    pub model: ModelCheck,
    /// The prompt checks (of the first backend that ran; `null` when none did).
    pub prompt: Option<Vec<PromptCase>>,
    /// The decoding checks (likewise).
    pub decode: Option<Vec<DecodeCase>>,
    /// Every backend that ran, in order.
    pub backends: Vec<BackendReport>,
    /// Whether every backend ran every case.
    pub complete: bool,
    /// Why not.
    pub incomplete_reason: Option<String>,
    /// The verdict: complete, and every backend passed.
    pub passed: bool,
}

impl VerifyReport {
    /// The report of `backends` (with the first one's prompt and decoding checks) and its
    /// verdict; `incomplete` is why the run stopped early, if it did.
    pub fn new(
        goldens: GoldensInfo,
        model: ModelCheck,
        checks: Option<(Vec<PromptCase>, Vec<DecodeCase>)>,
        backends: Vec<BackendReport>,
        incomplete: Option<String>,
    ) -> Self {
        let passed = incomplete.is_none() && backends.iter().all(|b| b.passed);
        let (prompt, decode) = checks.map_or((None, None), |(p, d)| (Some(p), Some(d)));
        VerifyReport {
            schema_version: SCHEMA_VERSION,
            kind: "laya-bench-verify",
            units: UNITS,
            goldens,
            model,
            prompt,
            decode,
            backends,
            complete: incomplete.is_none(),
            incomplete_reason: incomplete,
            passed,
        }
    }

    /// Cases that ran and failed, over every backend.
    pub fn cases_failed(&self) -> usize {
        self.backends.iter().map(|b| b.cases_failed).sum()
    }

    /// Why the run did not pass (`None` when it did), checked against the goldens `file`:
    /// stopped early (no verdict), every case skipped, or cases failed; `saved` says the
    /// report was written, so the text can point there.
    pub fn failure(&self, file: &str, saved: bool) -> Option<String> {
        if let Some(reason) = &self.incomplete_reason {
            let holds = if saved { " (the report holds the cases that ran)" } else { "" };
            return Some(format!("verify INCOMPLETE: {reason}; no verdict is given{holds}"));
        }
        match self.cases_failed() {
            _ if self.passed => None,
            0 => Some(format!(
                "no case of {file} could run on a backend asked (every case was skipped; see the table)"
            )),
            failed => Some(format!(
                "{failed} case(s) failed against {file} (see the table{})",
                if saved { " and the report" } else { "" }
            )),
        }
    }

    /// The report file's bytes: pretty JSON and a newline.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(backends: Vec<BackendReport>, incomplete: Option<&str>) -> VerifyReport {
        let goldens = GoldensInfo {
            file: "g.json".into(),
            sha256: String::new(),
            model: "m".into(),
            reference: "r".into(),
            source_weights_sha256: None,
            reference_packages: None,
            cases: 2,
            rows: 2,
        };
        let model = ModelCheck {
            spec: "builtin".into(),
            source: "s".into(),
            weights_sha256: None,
            weights_match_goldens: None,
        };
        VerifyReport::new(goldens, model, None, backends, incomplete.map(str::to_string))
    }

    fn backend(passed: bool, cases_failed: usize) -> BackendReport {
        BackendReport {
            spec: "mock".into(),
            name: "mock".into(),
            precision: "f32".into(),
            device: "cpu".into(),
            fingerprint: String::new(),
            notes: vec![],
            tolerance: Tolerance::for_precision("f32"),
            cases_passed: 0,
            cases_failed,
            cases_skipped: 2 - cases_failed,
            passed,
            cases: vec![],
        }
    }

    #[test]
    fn the_failure_text_says_why_and_points_to_the_report_only_when_saved() {
        let stopped = report(vec![], Some("interrupted"));
        assert_eq!(
            stopped.failure("g.json", false).unwrap(),
            "verify INCOMPLETE: interrupted; no verdict is given"
        );
        assert_eq!(
            stopped.failure("g.json", true).unwrap(),
            "verify INCOMPLETE: interrupted; no verdict is given (the report holds the cases that ran)"
        );
        // passed: no text; every case skipped: no case could run; else the count failed
        assert_eq!(report(vec![backend(true, 0)], None).failure("g.json", true), None);
        assert_eq!(
            report(vec![backend(false, 0)], None).failure("g.json", true).unwrap(),
            "no case of g.json could run on a backend asked (every case was skipped; see the table)"
        );
        let failed = report(vec![backend(false, 1), backend(false, 2)], None);
        assert_eq!(
            failed.failure("g.json", false).unwrap(),
            "3 case(s) failed against g.json (see the table)"
        );
        assert_eq!(
            failed.failure("g.json", true).unwrap(),
            "3 case(s) failed against g.json (see the table and the report)"
        );
        let json = report(vec![], None).to_json().unwrap();
        assert!(json.ends_with(b"}\n") && json.starts_with(b"{\n  \"schema_version\": 1,"));
    }
}
