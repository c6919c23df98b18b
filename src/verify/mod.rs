//! `verify`: a model and backends against parity goldens (laya-apple 1.7.0's format, made by
//! upstream laya on PyTorch CPU FP32).
//!
//! Per case, four checks:
//! - **prompt**: the host's rows for the case's state and questions equal the goldens' token ids,
//!   markers and qtypes exactly (backend-independent);
//! - **forward**: the goldens' own token ids through the backend (so the forward is checked even
//!   where the prompt differs): every slot logit and raw action logit within
//!   `|got − ref| ≤ atol + rtol·|ref|`;
//! - **answers**: the whole host path (our rows → backend → decode) gives the goldens' answers:
//!   same keys, labels and choices, numbers within `answer_tol` (a score within
//!   `answer_tol × (levels − 1)`); a choice flip is forgiven only where the reference's
//!   top-1/top-2 margin is below `2 × answer_tol` (listed as a near tie, as laya-apple's gate does);
//! - **decode**: the goldens' logits decoded by our decoder give the goldens' answers
//!   (backend-independent).
//!
//! [`report`] holds the `verify --output` report with each backend's verdict and the table the
//! command prints.

pub mod goldens;
pub mod report;
pub mod weights;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::backend::Backend;
use crate::error::{Classify, Kind};
use crate::laya::decode::{decode_answer, softmax_f32};
use crate::laya::host::{CallOptions, Host, HostError};
use crate::laya::prompt::{OptionStats, Row, StateStats};
use crate::laya::question::{compile_questions, Question};
pub use goldens::{Case, Goldens, GoldensError, Item};

/// The JSON report's schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The tolerance of one backend.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute part of the logit rule.
    pub logit_atol: f64,
    /// Relative part of the logit rule (raw action logits are ±1e3 on the published models).
    pub logit_rtol: f64,
    /// Largest difference of an answer's number (probability, confidence, noul).
    pub answer_tol: f64,
}

impl Tolerance {
    /// FP32 arms: logits within 1e-3 + 1e-4·|ref|, answers within one step of their 4-decimal
    /// rounding (1e-4: laya-apple's FP32 gate on probabilities). Other precisions: 0.1 + 0.01·|ref|
    /// and 0.02 (laya-apple's FP16 gate).
    pub fn for_precision(precision: &str) -> Self {
        if is_fp32(precision) {
            Self { logit_atol: 1e-3, logit_rtol: 1e-4, answer_tol: 1e-4 }
        } else {
            Self { logit_atol: 0.1, logit_rtol: 0.01, answer_tol: 0.02 }
        }
    }

    fn allows(&self, got: f32, reference: f32) -> bool {
        let (g, r) = (f64::from(got), f64::from(reference));
        g.is_finite() && (g - r).abs() <= self.logit_atol + self.logit_rtol * r.abs()
    }
}

/// Whether a backend's precision name is FP32.
pub fn is_fp32(precision: &str) -> bool {
    matches!(precision, "f32" | "fp32" | "float32")
}

/// A case that cannot run (exit 2) or a backend that failed (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The goldens do not fit this model, or the host contract rejects a case.
    #[error(transparent)]
    Input(#[from] GoldensError),
    /// The backend failed at run time.
    #[error("case `{case}`: {detail}")]
    Run {
        /// The case.
        case: String,
        /// What failed.
        detail: String,
    },
}

impl Classify for VerifyError {
    fn kind(&self) -> Kind {
        match self {
            VerifyError::Input(_) => Kind::Input,
            VerifyError::Run { .. } => Kind::Run,
        }
    }
}

/// What of the model the goldens must fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFacts {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Actions.
    pub num_actions: usize,
    /// The checkpoint's `max_len` (a longer golden row means goldens of another model).
    pub checkpoint_max_len: usize,
    /// Marker slots the backend takes.
    pub max_options: usize,
    /// The checkpoint's option layout is parallel.
    pub parallel: bool,
}

impl ModelFacts {
    /// The facts of `bundle` run by a backend that takes `max_options` marker slots.
    pub fn of(bundle: &crate::laya::bundle::Bundle, max_options: usize) -> Self {
        ModelFacts {
            vocab_size: bundle.encoder.vocab_size,
            num_actions: bundle.agent.num_actions,
            checkpoint_max_len: bundle.agent.max_len,
            max_options,
            parallel: bundle.agent.option_layout == crate::laya::config::OptionLayout::Parallel,
        }
    }
}

/// Refuse goldens that do not fit the model (exit 2), naming the case and field.
pub fn check_fits(g: &Goldens, m: &ModelFacts) -> Result<(), GoldensError> {
    let err = |case: &str, field: String, detail: String| GoldensError::Case {
        file: g.file.clone(),
        case: case.to_string(),
        field,
        detail,
    };
    if m.parallel {
        return Err(GoldensError::Format {
            file: g.file.clone(),
            detail: "the checkpoint uses the parallel option layout; parity goldens hold sequential rows only (upstream laya 0.3.20)".into(),
        });
    }
    for c in &g.cases {
        for (j, it) in c.items.iter().enumerate() {
            if let Some((t, id)) = it.ids.iter().enumerate().find(|(_, &id)| id as usize >= m.vocab_size) {
                return Err(err(
                    &c.name,
                    format!("items[{j}].ids[{t}]"),
                    format!(
                        "token id {id} is outside the checkpoint's vocabulary (vocab_size {}); these goldens are for `{}`, another model",
                        m.vocab_size, g.model
                    ),
                ));
            }
            if it.ids.len() > m.checkpoint_max_len {
                return Err(err(
                    &c.name,
                    format!("items[{j}].ids"),
                    format!(
                        "{} tokens, more than the checkpoint's max_len {}",
                        it.ids.len(),
                        m.checkpoint_max_len
                    ),
                ));
            }
            if it.markers.len() > m.max_options {
                return Err(err(
                    &c.name,
                    format!("items[{j}].markers"),
                    format!("{} options, the backend takes at most {}", it.markers.len(), m.max_options),
                ));
            }
            if c.action_logits[j].len() != m.num_actions {
                return Err(err(
                    &c.name,
                    format!("action_logits[{j}]"),
                    format!(
                        "{} actions, the checkpoint has {} (len(act_costs) + 1); these goldens are for `{}`, another model",
                        c.action_logits[j].len(),
                        m.num_actions,
                        g.model
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn compile(g: &Goldens, c: &Case) -> Result<Vec<Question>, GoldensError> {
    let qs = compile_questions(&c.questions).map_err(|e| GoldensError::Case {
        file: g.file.clone(),
        case: c.name.clone(),
        field: "questions".into(),
        detail: format!("the host contract rejects it: {e}"),
    })?;
    for (j, (q, it)) in qs.iter().zip(&c.items).enumerate() {
        if q.qtype as i32 != it.qtype {
            return Err(GoldensError::Case {
                file: g.file.clone(),
                case: c.name.clone(),
                field: format!("items[{j}].qtype"),
                detail: format!("{} but question `{}` is {:?}", it.qtype, q.id, q.qtype),
            });
        }
    }
    Ok(qs)
}

/// Why a case is skipped on a backend: a row longer than the rows it takes (a fixed-shape
/// export such as the 96-token ANE bundle). Such rows are never cut; the case is reported.
pub fn skip_reason(c: &Case, max_length: usize) -> Option<String> {
    let longest = c.items.iter().map(|i| i.ids.len()).max().unwrap_or(0);
    (longest > max_length).then(|| format!("a {longest}-token row, the backend takes at most {max_length}"))
}

/// The prompt check of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptCase {
    /// Case name.
    pub case: String,
    /// Rows (questions).
    pub rows: usize,
    /// Rows whose ids, markers and qtype equal the goldens'.
    pub rows_equal: usize,
    /// Per differing row, where it first differs.
    pub differences: Vec<String>,
    /// Why the case was not checked, if it was not.
    pub skipped: Option<String>,
}

fn first_difference(ours: &Row, golden: &Item, qid: &str) -> Option<String> {
    if ours.ids != golden.ids {
        let at = ours
            .ids
            .iter()
            .zip(&golden.ids)
            .position(|(a, b)| a != b)
            .unwrap_or(ours.ids.len().min(golden.ids.len()));
        let show = |v: &[u32]| {
            v.get(at..(at + 4).min(v.len())).map(|s| format!("{s:?}")).unwrap_or_else(|| "[]".into())
        };
        return Some(format!(
            "{qid}: ids differ from token {at} (ours {} tokens {}, goldens {} tokens {})",
            ours.ids.len(),
            show(&ours.ids),
            golden.ids.len(),
            show(&golden.ids)
        ));
    }
    if ours.markers != golden.markers {
        return Some(format!("{qid}: markers {:?}, goldens {:?}", ours.markers, golden.markers));
    }
    (ours.qtype != golden.qtype).then(|| format!("{qid}: qtype {}, goldens {}", ours.qtype, golden.qtype))
}

/// Build every case's rows with the host and compare them with the goldens' (exit 2 when the
/// host contract rejects a case).
pub fn check_prompts(host: &Host<'_>, g: &Goldens) -> Result<Vec<PromptCase>, GoldensError> {
    let mut out = Vec::with_capacity(g.cases.len());
    for c in &g.cases {
        let qs = compile(g, c)?;
        if let Some(why) = skip_reason(c, host.shapes.max_length) {
            let (case, rows) = (c.name.clone(), c.items.len());
            out.push(PromptCase { case, rows, rows_equal: 0, differences: Vec::new(), skipped: Some(why) });
            continue;
        }
        let rows =
            host.prepare_rows(std::slice::from_ref(&c.state), &qs, &CallOptions::default()).map_err(|e| {
                GoldensError::Case {
                    file: g.file.clone(),
                    case: c.name.clone(),
                    field: "state".into(),
                    detail: format!("the host contract rejects it: {e}"),
                }
            })?;
        let differences: Vec<String> = rows
            .iter()
            .zip(&c.items)
            .zip(&qs)
            .filter_map(|((r, it), q)| first_difference(r, it, &q.id))
            .collect();
        out.push(PromptCase {
            case: c.name.clone(),
            rows: rows.len(),
            rows_equal: rows.len() - differences.len(),
            differences,
            skipped: None,
        });
    }
    Ok(out)
}

/// The answers comparison of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerCheck {
    /// Differences beyond the tolerance (each names the question and field).
    pub differences: Vec<String>,
    /// Choice flips inside the reference's near-tie band (reported, not failed).
    pub near_tie_flips: Vec<String>,
    /// Largest difference of any answer number.
    pub max_abs_difference: f64,
}

impl AnswerCheck {
    /// No difference beyond the tolerance.
    pub fn equal(&self) -> bool {
        self.differences.is_empty()
    }
}

fn compare_value(path: &str, ours: &Value, golden: &Value, tol: f64, out: &mut AnswerCheck) {
    match (ours, golden) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
            if ka != kb {
                out.differences.push(format!("{path}: keys {ka:?}, goldens {kb:?}"));
                return;
            }
            for (k, v) in b {
                compare_value(&format!("{path}.{k}"), &a[k], v, tol, out);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (x, y) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            let d = (x - y).abs();
            if d.is_finite() {
                out.max_abs_difference = out.max_abs_difference.max(d);
            }
            if d.is_nan() || d > tol + 1e-9 {
                out.differences.push(format!("{path}: {x}, goldens {y} (|Δ| {d:.2e} > {tol:.0e})"));
            }
        }
        _ if ours == golden => {}
        _ => out.differences.push(format!("{path}: {ours}, goldens {golden}")),
    }
}

/// Compare our answers dict with the goldens' (see the module doc for the rule).
pub fn compare_answers(ours: &Map<String, Value>, golden: &Map<String, Value>, tol: f64) -> AnswerCheck {
    let mut out = AnswerCheck::default();
    for (qid, g) in golden {
        let Some(o) = ours.get(qid) else {
            out.differences.push(format!("{qid}: missing"));
            continue;
        };
        let (mut o, mut g) = (o.clone(), g.clone());
        // The decision of a choice: a flip counts unless the reference itself is near a tie.
        if let (Some(Value::String(a)), Some(Value::String(b))) = (o.get("choice"), g.get("choice")) {
            if a != b {
                let mut p: Vec<f64> = g
                    .get("probabilities")
                    .and_then(Value::as_object)
                    .map(|m| m.values().filter_map(Value::as_f64).collect())
                    .unwrap_or_default();
                p.sort_by(|x, y| y.total_cmp(x));
                let margin = if p.len() > 1 { p[0] - p[1] } else { 1.0 };
                let text = format!("{qid}.choice: {a:?}, goldens {b:?} (reference margin {margin:.4})");
                if margin < 2.0 * tol {
                    out.near_tie_flips.push(text);
                } else {
                    out.differences.push(text);
                }
            }
            for v in [&mut o, &mut g] {
                if let Some(m) = v.as_object_mut() {
                    m.remove("choice");
                }
            }
        }
        // A score is an expectation over levels: its tolerance scales with the level range.
        if let (Some(a), Some(b)) =
            (o.get("score").and_then(Value::as_f64), g.get("score").and_then(Value::as_f64))
        {
            let levels = g.get("legend").and_then(Value::as_object).map(Map::len).unwrap_or(2).max(2);
            let st = tol * (levels - 1) as f64;
            let d = (a - b).abs();
            out.max_abs_difference = out.max_abs_difference.max(d);
            if d.is_nan() || d > st + 1e-9 {
                out.differences.push(format!("{qid}.score: {a}, goldens {b} (|Δ| {d:.2e} > {st:.0e})"));
            }
            for v in [&mut o, &mut g] {
                if let Some(m) = v.as_object_mut() {
                    m.remove("score");
                }
            }
        }
        compare_value(qid, &o, &g, tol, &mut out);
    }
    for qid in ours.keys().filter(|k| !golden.contains_key(*k)) {
        out.differences.push(format!("{qid}: not in the goldens"));
    }
    out
}

/// The decode check of one case (the goldens' logits through our decoder).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeCase {
    /// Case name.
    pub case: String,
    /// The comparison with the goldens' answers (FP32 tolerance).
    pub answers: AnswerCheck,
}

/// Decode every case's golden logits with the host's calibration and compare the answers.
pub fn check_decoding(host: &Host<'_>, g: &Goldens) -> Result<Vec<DecodeCase>, GoldensError> {
    let tol = Tolerance::for_precision("f32").answer_tol;
    let mut out = Vec::with_capacity(g.cases.len());
    let (mut scratch, mut probs) = (Vec::new(), Vec::new());
    for c in &g.cases {
        let qs = compile(g, c)?;
        let mut answers = Map::new();
        for (j, q) in qs.iter().enumerate() {
            softmax_f32(&c.action_logits[j], &mut probs);
            let a = decode_answer(
                q,
                &host.temperatures,
                &c.logits[j],
                probs.first().copied().unwrap_or(f32::NAN),
                &mut scratch,
            );
            answers.insert(q.id.clone(), a.to_json());
        }
        out.push(DecodeCase { case: c.name.clone(), answers: compare_answers(&answers, &c.answers, tol) });
    }
    Ok(out)
}

/// One case through one backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendCase {
    /// Case name.
    pub case: String,
    /// Rows.
    pub rows: usize,
    /// The prompt check passed (copied from the prompt check, for the verdict).
    pub tokens_equal: bool,
    /// Largest |Δ| of a slot logit, the goldens' ids through this backend (`None`: skipped).
    pub logit_max_abs: Option<f64>,
    /// Largest |Δ| of a raw action logit.
    pub action_logit_max_abs: Option<f64>,
    /// Largest |Δ|/|ref| of a raw action logit whose reference is not zero (`None`: skipped,
    /// or every reference is zero, where a relative difference means nothing).
    pub action_logit_max_rel: Option<f64>,
    /// Values outside `atol + rtol·|ref|` (slot and action logits).
    pub values_outside_tolerance: usize,
    /// The host path's answers against the goldens'.
    pub answers: AnswerCheck,
    /// The decode check passed (copied from the decode check, for the verdict).
    pub decode_equal: bool,
    /// Why the case was not run on this backend, if it was not (it then neither passes nor fails).
    pub skipped: Option<String>,
    /// Every check of the case passed.
    pub passed: bool,
}

/// One backend's whole check, as `verify` runs it ([`check_one`]).
pub struct BackendChecked {
    /// What the backend is.
    pub info: crate::backend::BackendInfo,
    /// The tolerance its cases were judged with.
    pub tolerance: Tolerance,
    /// The prompt checks on its host path.
    pub prompts: Vec<PromptCase>,
    /// The decoding checks on its host path.
    pub decodes: Vec<DecodeCase>,
    /// Every case that ran ([`check_backend`]; fewer than the goldens' when stopped).
    pub cases: Vec<BackendCase>,
}

/// Check the backend `spec` (built on `bundle`) against `goldens`: the goldens must fit the
/// model at the backend's shapes, then the prompt and decoding checks on its host path and
/// every case ([`check_backend`]) at its precision's tolerance with `overrides` in place.
/// Goldens that do not fit, or a failed backend, are errors naming `--backend SPEC`.
pub fn check_one(
    spec: &str,
    bundle: &crate::laya::bundle::Bundle,
    backend: &mut dyn Backend,
    goldens: &Goldens,
    overrides: &weights::Overrides,
    stop: &dyn Fn() -> bool,
) -> Result<BackendChecked, crate::error::Error> {
    use crate::error::Error;
    let flag = || format!("--backend {spec}");
    let info = backend.info().clone();
    let host = crate::backend::registry::host_for(bundle, info.shapes.clone(), &info);
    let facts = ModelFacts::of(bundle, info.shapes.max_options);
    check_fits(goldens, &facts).map_err(|e| Error::input(flag()).because(e))?;
    let prompts = check_prompts(&host, goldens).map_err(|e| Error::input(e.to_string()))?;
    let decodes = check_decoding(&host, goldens).map_err(|e| Error::input(e.to_string()))?;
    let tolerance = overrides.apply(Tolerance::for_precision(&info.precision));
    let cases = check_backend(&host, backend, goldens, &prompts, &decodes, tolerance, stop)
        .map_err(|e| Error::new(e.kind(), flag()).because(e))?;
    Ok(BackendChecked { info, tolerance, prompts, decodes, cases })
}

/// Run every case through one backend: the goldens' ids (forward check) and the whole host path
/// (answers check). `stop` is asked before each case; when it answers `true` the cases so far
/// are returned (fewer than the goldens': the run was stopped).
pub fn check_backend(
    host: &Host<'_>,
    backend: &mut dyn Backend,
    g: &Goldens,
    prompts: &[PromptCase],
    decodes: &[DecodeCase],
    tol: Tolerance,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<BackendCase>, VerifyError> {
    let mut out = Vec::with_capacity(g.cases.len());
    for ((c, p), d) in g.cases.iter().zip(prompts).zip(decodes) {
        if stop() {
            break;
        }
        if let Some(why) = skip_reason(c, host.shapes.max_length) {
            out.push(BackendCase {
                case: c.name.clone(),
                rows: c.items.len(),
                tokens_equal: false,
                logit_max_abs: None,
                action_logit_max_abs: None,
                action_logit_max_rel: None,
                values_outside_tolerance: 0,
                answers: AnswerCheck::default(),
                decode_equal: d.answers.equal(),
                skipped: Some(why),
                passed: false,
            });
            continue;
        }
        let run = |e: HostError| -> VerifyError {
            if e.kind() == Kind::Input {
                VerifyError::Input(GoldensError::Case {
                    file: g.file.clone(),
                    case: c.name.clone(),
                    field: "items".into(),
                    detail: format!("the backend refuses the rows: {e}"),
                })
            } else {
                VerifyError::Run { case: c.name.clone(), detail: e.to_string() }
            }
        };
        let rows: Vec<Row> = c
            .items
            .iter()
            .map(|it| Row {
                ids: it.ids.clone(),
                markers: it.markers.clone(),
                qtype: it.qtype,
                layout: None,
                options: OptionStats {
                    options: it.markers.len(),
                    distinct: it.markers.len(),
                    tokens_per_option: None,
                },
                state: StateStats { state_tokens: 0, state_tokens_used: 0, state_tokens_dropped: 0 },
            })
            .collect();
        let (logits, actions) = goldens::forward_rows(host, backend, &rows).map_err(run)?;
        let (mut lmax, mut amax, mut arel, mut outside) = (0f64, 0f64, None::<f64>, 0usize);
        for j in 0..rows.len() {
            for (&got, &r) in logits[j].iter().zip(&c.logits[j]) {
                lmax = lmax.max(diff(got, r));
                outside += usize::from(!tol.allows(got, r));
            }
            outside += c.logits[j].len().saturating_sub(logits[j].len());
            for (&got, &r) in actions[j].iter().zip(&c.action_logits[j]) {
                let d = diff(got, r);
                amax = amax.max(d);
                if r != 0.0 {
                    arel = Some(arel.unwrap_or(0.0).max(d / f64::from(r).abs()));
                }
                outside += usize::from(!tol.allows(got, r));
            }
        }
        let result =
            host.predict(backend, &c.state, &c.questions, &CallOptions::default(), None).map_err(run)?;
        let ours = result.to_json()["answers"].as_object().cloned().unwrap_or_default();
        let answers = compare_answers(&ours, &c.answers, tol.answer_tol);
        let tokens_equal = p.differences.is_empty();
        let decode_equal = d.answers.equal();
        let passed = tokens_equal && outside == 0 && answers.equal() && decode_equal;
        out.push(BackendCase {
            case: c.name.clone(),
            rows: rows.len(),
            tokens_equal,
            logit_max_abs: Some(lmax),
            action_logit_max_abs: Some(amax),
            action_logit_max_rel: arel,
            values_outside_tolerance: outside,
            answers,
            decode_equal,
            skipped: None,
            passed,
        });
    }
    Ok(out)
}

fn diff(got: f32, reference: f32) -> f64 {
    let d = (f64::from(got) - f64::from(reference)).abs();
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_case_with_rows_longer_than_the_backend_takes_is_skipped_not_cut() {
        let item = |n: usize| Item { ids: vec![1; n], markers: vec![1], qtype: 2 };
        let case = Case {
            name: "c".into(),
            state: json!(""),
            questions: json!({}),
            items: vec![item(64), item(97)],
            logits: vec![],
            action_logits: vec![],
            length: None,
            answers: Map::new(),
        };
        assert_eq!(skip_reason(&case, 96).as_deref(), Some("a 97-token row, the backend takes at most 96"));
        assert_eq!(skip_reason(&case, 97), None);
    }

    #[test]
    fn the_logit_rule_is_absolute_plus_relative() {
        let t = Tolerance::for_precision("f32");
        assert!(t.allows(1.0009, 1.0)); // 0.0009 <= 0.001 + 0.0001
        assert!(!t.allows(1.0012, 1.0)); // 0.0012 > 0.0011
        assert!(t.allows(1500.1, 1500.0)); // 0.1 <= 0.001 + 0.15
        assert!(!t.allows(1500.2, 1500.0));
        assert!(!t.allows(f32::NAN, 1.0));
        assert_eq!(Tolerance::for_precision("f16").answer_tol, 0.02);
        assert!(is_fp32("fp32") && !is_fp32("w8"));
    }

    #[test]
    fn answers_compare_by_label_and_by_number_within_the_tolerance() {
        let golden = obj(json!({
            "q0": {"type": "noul", "noul": 0.2212, "confidence": 0.7788, "answer_confidence": 0.7788, "action": {"act_probability": 1.0}},
            "q1": {"type": "choice", "choice": "b", "probabilities": {"a": 0.3, "b": 0.7}, "confidence": 0.12, "answer_confidence": 0.7, "action": {"act_probability": 1.0}},
            "q2": {"type": "score", "score": 2.178, "legend": {"0": "x", "1": "y", "2": "z", "3": "w"}, "probabilities": {"0": 0.1, "1": 0.2, "2": 0.1, "3": 0.6}}
        }));
        let same = compare_answers(&golden, &golden, 1e-4);
        assert!(same.equal() && same.near_tie_flips.is_empty() && same.max_abs_difference == 0.0);
        // One rounding step passes; two fail, naming the field.
        let mut ours = golden.clone();
        ours["q0"]["noul"] = json!(0.2213);
        assert!(compare_answers(&ours, &golden, 1e-4).equal());
        ours["q0"]["noul"] = json!(0.2214);
        let c = compare_answers(&ours, &golden, 1e-4);
        assert_eq!(c.differences.len(), 1);
        assert!(c.differences[0].starts_with("q0.noul: 0.2214, goldens 0.2212"), "{:?}", c.differences);
        // A score may move by tol × (levels − 1) = 3e-4.
        let mut ours = golden.clone();
        ours["q2"]["score"] = json!(2.1783);
        assert!(compare_answers(&ours, &golden, 1e-4).equal());
        ours["q2"]["score"] = json!(2.1785);
        assert!(compare_answers(&ours, &golden, 1e-4).differences[0].starts_with("q2.score"));
        // A flip fails when the reference margin (0.4) is wide, is listed when it is a near tie.
        let mut ours = golden.clone();
        ours["q1"]["choice"] = json!("a");
        assert!(compare_answers(&ours, &golden, 1e-4).differences[0]
            .starts_with("q1.choice: \"a\", goldens \"b\""));
        let c = compare_answers(&ours, &golden, 0.25);
        assert!(c.equal() && c.near_tie_flips.len() == 1);
        // Labels and keys must match exactly.
        let mut ours = golden.clone();
        ours["q2"]["legend"]["3"] = json!("W");
        assert!(compare_answers(&ours, &golden, 1e-4).differences[0].starts_with("q2.legend.3"));
        let mut ours = golden.clone();
        ours["q0"].as_object_mut().unwrap().remove("action");
        assert!(compare_answers(&ours, &golden, 1e-4).differences[0].starts_with("q0: keys"));
    }
}
