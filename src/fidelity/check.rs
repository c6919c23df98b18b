//! Run a suite through the source and the candidate over the shared host path and judge every
//! fitting question ([`super::gates`]). Rows are built once, with the candidate's tokenizer and
//! shape, and the very same rows go to both backends.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::gates::{bit_identical, judge, Decision, Judgement};
use super::suite::{Suite, SuiteItem};
use crate::backend::registry::RegistryError;
use crate::backend::{Backend, PreparedBatch};
use crate::error::Error;
use crate::laya::decode::calibrated_probabilities;
use crate::laya::decode::AnswerValue;
use crate::laya::host::{CallOptions, Host, HostError, StateResult};
use crate::laya::prompt::Row;
use crate::laya::question::{QType, Question};

/// How the gates run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Largest allowed |Δ| of a calibrated or action probability.
    pub gate: f64,
    /// Identical candidate calls per question (≥ 2); all must be bit-identical.
    pub repeats: usize,
    /// Per-call options (the `--max-len` override).
    pub opts: CallOptions,
}

/// The engines of one check. `rows_host` carries the candidate's tokenizer, calibration and
/// shape; `source_host` the source's calibration with the same shape.
pub struct Engines<'h, 'b> {
    /// Builds and packs rows (the candidate's host).
    pub rows_host: &'h Host<'h>,
    /// Decodes the source's outputs.
    pub source_host: &'h Host<'h>,
    /// The FP32 source on the portable engine.
    pub source: &'b mut dyn Backend,
    /// The candidate, or why its decisions cannot be computed here (a backend this build or
    /// machine cannot run).
    pub candidate: Result<&'b mut dyn Backend, &'b RegistryError>,
}

/// A row or backend failure that is not a finding about the candidate.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Tokenization failed for a suite state.
    #[error("suite state {state:?}: {source}")]
    Tokenizer {
        /// The state key.
        state: String,
        /// The tokenizer's error.
        source: HostError,
    },
    /// The source model failed (it is the reference, so the check cannot continue).
    #[error("question {id:?}: the source model failed: {source}")]
    Source {
        /// The question id.
        id: String,
        /// The host's error.
        source: HostError,
    },
}

/// One suite question in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    /// Suite id.
    pub id: String,
    /// State key.
    pub state: String,
    /// `choice`, `score` or `noul`.
    pub qtype: String,
    /// Options the question defines.
    pub options: usize,
    /// The suite's note.
    pub note: Option<String>,
    /// Its row fits the candidate's shape.
    pub fits: bool,
    /// Why it does not fit (the host's message), when it does not.
    pub not_fitting_reason: Option<String>,
    /// Tokens of the row (`null` when it does not fit).
    pub row_tokens: Option<usize>,
    /// State tokens the row dropped (`null` when it does not fit).
    pub state_tokens_dropped: Option<usize>,
    /// The source's selected option label (`null` when it did not run).
    pub source_answer: Option<String>,
    /// The candidate's selected option label (`null` when it did not run).
    pub candidate_answer: Option<String>,
    /// The gates (`null` when the question does not fit or the gates could not run).
    pub gates: Option<Judgement>,
    /// Why the gates did not run, when they did not.
    pub gates_not_run_reason: Option<String>,
}

/// Totals over the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSummary {
    /// Questions in the suite.
    pub question_count: usize,
    /// Questions the run got to (fewer than `question_count` when it was stopped).
    #[serde(default)]
    pub questions_run: usize,
    /// Questions whose row fits the candidate's shape.
    pub fitting_count: usize,
    /// `"N/M fitting"`.
    pub fitting: String,
    /// Ids of the questions that do not fit (listed and excluded).
    pub not_fitting: Vec<String>,
    /// Why the first of them does not fit (what to change), when none fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none_fits_reason: Option<String>,
    /// Whether the candidate's decisions were computed.
    pub gates_run: bool,
    /// Why not, when they were not.
    pub gates_not_run_reason: Option<String>,
    /// Fitting questions that passed every gate.
    pub passed_count: usize,
    /// Ids of fitting questions that failed a gate, in suite order.
    pub failed: Vec<String>,
    /// Ids where the answer flipped below the margin exception (allowed, reported).
    pub allowed_flips: Vec<String>,
    /// Largest drift over the fitting questions (`null` when no gate ran).
    pub max_drift: Option<f64>,
    /// The question that set it.
    pub max_drift_question: Option<String>,
    /// Why there is no max drift.
    pub max_drift_missing_reason: Option<String>,
}

/// The label of option `index` as the answer names it: the choice key, the score level, or
/// `false`/`true` for noul.
pub fn option_label(q: &Question, index: usize) -> String {
    match q.qtype {
        QType::Choice => q.key_texts.get(index).cloned().unwrap_or_else(|| index.to_string()),
        QType::Score => format!("level {index}"),
        QType::Noul => (if index == 1 { "true" } else { "false" }).to_string(),
    }
}

/// Build the question's row with the candidate's host and check that it packs into the
/// candidate's shape; the inner `Err` is the host's reason when it does not fit, the outer one
/// a tokenizer failure.
fn fit(
    host: &Host<'_>,
    state: &Value,
    item: &SuiteItem,
    opts: &CallOptions,
) -> Result<Result<Row, HostError>, HostError> {
    let rows =
        match host.prepare_rows(std::slice::from_ref(state), std::slice::from_ref(&item.compiled), opts) {
            Ok(rows) => rows,
            Err(e @ HostError::Tokenizer(_)) => return Err(e),
            Err(e) => return Ok(Err(e)),
        };
    let mut batch = PreparedBatch::default();
    let length = rows.iter().map(|r| r.ids.len()).max().unwrap_or(0);
    Ok(host.pack(&rows, length, &mut batch).and_then(|()| {
        rows.into_iter().next().ok_or_else(|| HostError::Shape("the host built no row".into()))
    }))
}

/// Run one row on a backend: the slot logits and the action probability, or `None` when the
/// outputs were not finite.
fn call(host: &Host<'_>, backend: &mut dyn Backend, row: &Row) -> Result<Option<(Vec<f32>, f32)>, HostError> {
    match host.run_rows(backend, std::slice::from_ref(row), None) {
        Ok(mut out) => Ok(out.pop()),
        Err(HostError::NonFinite(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What the candidate said about one question: its slot logits and action probability through
/// our host path (`None` when not finite), or a reference runtime's whole result dict.
#[derive(Debug, Clone)]
enum Said {
    /// Slot logits and softmax(action)[0].
    Slots(Option<(Vec<f32>, f32)>),
    /// The runtime's result.
    Result(StateResult),
}

impl Said {
    /// Whether a repeat said exactly the same: bit-identical outputs, or an equal dict.
    fn identical(&self, again: &Said) -> bool {
        match (self, again) {
            (Said::Slots(Some(a)), Said::Slots(Some(b))) => bit_identical(a, b),
            (Said::Slots(None), Said::Slots(None)) => true,
            (Said::Result(a), Said::Result(b)) => a.to_json() == b.to_json(),
            _ => false,
        }
    }
}

/// Ask the candidate one question: over the shared host path with `row`, or, for a backend
/// that answers whole requests (a `ref:` arm), the state and the question as a request.
fn ask(
    host: &Host<'_>,
    backend: &mut dyn Backend,
    row: &Row,
    state: &Value,
    item: &SuiteItem,
    opts: &CallOptions,
) -> Result<Said, HostError> {
    if let Some(worker) = backend.answers_requests() {
        let (result, _) = worker.answer(state, &item.questions_value(), opts)?;
        return Ok(Said::Result(result));
    }
    call(host, backend, row).map(Said::Slots)
}

/// The decision a runtime's result states for question `id`: the calibrated probabilities in
/// label order (noul: `[1 − P(true), P(true)]`) and the action probability, as the runtime
/// rounds them. `Err` (a failed run) says how the result does not answer the question.
fn stated_decision(result: &StateResult, id: &str, q: &Question) -> Result<Decision, Error> {
    let answer = result
        .answers
        .iter()
        .find(|(qid, _)| qid == id)
        .map(|(_, a)| a)
        .ok_or_else(|| Error::run(format!("the runtime's result has no answer for question {id:?}")))?;
    let probabilities: Vec<f32> = match (&answer.value, q.qtype) {
        (AnswerValue::Noul { noul }, QType::Noul) => vec![(1.0 - noul) as f32, *noul as f32],
        (AnswerValue::Choice { probabilities, .. }, QType::Choice) => q
            .key_texts
            .iter()
            .map(|k| {
                probabilities.iter().find(|(key, _)| key == k).map(|(_, p)| *p as f32).ok_or_else(|| {
                    Error::run(format!("question {id:?}: the runtime gave no probability for option {k:?}"))
                })
            })
            .collect::<Result<_, _>>()?,
        (AnswerValue::Score { probabilities, .. }, QType::Score) => {
            probabilities.iter().map(|&p| p as f32).collect()
        }
        _ => {
            return Err(Error::run(format!(
                "question {id:?}: the runtime answered a {} question as {}",
                q.qtype.name(),
                answer.qtype.name()
            )))
        }
    };
    Ok(Decision { probabilities, act_probability: answer.act_probability as f32 })
}

fn decision(host: &Host<'_>, q: &Question, out: Option<&(Vec<f32>, f32)>, k: usize) -> Decision {
    let mut scratch = Vec::new();
    match out {
        Some((logits, p0)) => Decision {
            probabilities: calibrated_probabilities(
                q,
                &host.temperatures,
                &logits[..k.min(logits.len())],
                &mut scratch,
            ),
            act_probability: *p0,
        },
        None => Decision { probabilities: vec![f32::NAN; k], act_probability: f32::NAN },
    }
}

/// Run every question of `suite`; candidate failures are findings, source and tokenizer
/// failures are errors. `stop` is asked before each question and between repeated calls: when
/// it answers `true` the run ends early with the questions finished so far (a question cut
/// mid-way is left out, never judged on part of its repeats), so fewer results than suite
/// items means the run was stopped. `at_question` is told how many questions are done before
/// each one starts (for progress).
pub fn run_suite(
    suite: &Suite,
    engines: Engines<'_, '_>,
    plan: &Plan,
    stop: &dyn Fn() -> bool,
    at_question: &dyn Fn(usize),
) -> Result<(Vec<QuestionResult>, SuiteSummary), RunError> {
    let Engines { rows_host, source_host, source, mut candidate } = engines;
    let not_run_reason = candidate.as_ref().err().map(|e| e.to_string());
    let mut results = Vec::with_capacity(suite.items.len());
    'questions: for item in &suite.items {
        at_question(results.len());
        if stop() {
            break;
        }
        let q = &item.compiled;
        let mut r = QuestionResult {
            id: item.id.clone(),
            state: item.state.clone(),
            qtype: q.qtype.name().into(),
            options: q.option_count(),
            note: item.note.clone(),
            fits: false,
            not_fitting_reason: None,
            row_tokens: None,
            state_tokens_dropped: None,
            source_answer: None,
            candidate_answer: None,
            gates: None,
            gates_not_run_reason: None,
        };
        let state = suite.state(&item.state).cloned().unwrap_or(Value::Null);
        let row = match fit(rows_host, &state, item, &plan.opts)
            .map_err(|source| RunError::Tokenizer { state: item.state.clone(), source })?
        {
            Ok(row) => row,
            Err(reason) => {
                r.not_fitting_reason = Some(reason.to_string());
                r.gates_not_run_reason = Some("the question does not fit the candidate's shape".into());
                results.push(r);
                continue;
            }
        };
        r.fits = true;
        r.row_tokens = Some(row.ids.len());
        r.state_tokens_dropped = Some(row.state.state_tokens_dropped);
        let k = row.markers.len();
        let src_out = call(source_host, source, &row)
            .map_err(|source| RunError::Source { id: item.id.clone(), source })?;
        let src = decision(source_host, q, src_out.as_ref(), k);
        r.source_answer = src.is_finite().then(|| option_label(q, src.selected()));
        let backend = match candidate.as_mut() {
            Ok(b) => &mut **b,
            Err(reason) => {
                r.gates_not_run_reason = Some(reason.to_string());
                results.push(r);
                continue;
            }
        };
        let mut failure = None;
        let first = match ask(rows_host, backend, &row, &state, item, &plan.opts) {
            Ok(out) => out,
            Err(e) => {
                failure = Some(format!("the candidate failed: {e}"));
                Said::Slots(None)
            }
        };
        let mut identical = true;
        if failure.is_none() {
            for _ in 1..plan.repeats {
                if stop() {
                    break 'questions;
                }
                match ask(rows_host, backend, &row, &state, item, &plan.opts) {
                    Ok(again) => identical &= first.identical(&again),
                    Err(e) => {
                        failure = Some(format!("a repeated candidate call failed: {e}"));
                        identical = false;
                        break;
                    }
                }
            }
        }
        let cand = match &first {
            Said::Slots(out) => decision(rows_host, q, out.as_ref(), k),
            Said::Result(result) => stated_decision(result, &item.id, q).unwrap_or_else(|why| {
                failure.get_or_insert(why.to_string());
                decision(rows_host, q, None, k)
            }),
        };
        let mut j = judge(&src, &cand, identical, plan.gate);
        if let Some(f) = failure {
            j.passed = false;
            j.failures.insert(0, f);
        }
        r.candidate_answer = cand.is_finite().then(|| option_label(q, cand.selected()));
        r.gates = Some(j);
        results.push(r);
    }
    let summary = summarize(&results, suite.items.len(), not_run_reason);
    Ok((results, summary))
}

/// Totals, the failed questions and the max drift with the question that set it, over the
/// `results` of a suite of `questions` (fewer results: the run was stopped).
pub fn summarize(
    results: &[QuestionResult],
    questions: usize,
    not_run_reason: Option<String>,
) -> SuiteSummary {
    let stopped = results.len() < questions;
    // a run stopped before any question was judged computed no decision either
    let not_run_reason = not_run_reason.or_else(|| {
        (stopped && results.iter().all(|r| r.gates.is_none())).then(|| {
            format!(
                "the run was stopped after {} of {questions} questions, before any was judged",
                results.len()
            )
        })
    });
    let fitting_count = results.iter().filter(|r| r.fits).count();
    let judged: Vec<(&QuestionResult, &Judgement)> =
        results.iter().filter_map(|r| r.gates.as_ref().map(|g| (r, g))).collect();
    let mut max: Option<(f64, &str)> = None;
    for (r, g) in &judged {
        let d = if g.drift.is_finite() { g.drift } else { f64::INFINITY };
        if max.is_none_or(|(m, _)| d > m) {
            max = Some((d, r.id.as_str()));
        }
    }
    let max_drift_missing_reason = if !judged.is_empty() && max.is_some_and(|(m, _)| !m.is_finite()) {
        Some("a question's outputs were not finite, so its drift has no value".into())
    } else if judged.is_empty() {
        Some(match (&not_run_reason, fitting_count) {
            (Some(r), _) => format!("the gates did not run: {r}"),
            (None, 0) => "no question fits the candidate's shape".into(),
            (None, _) => "no question was judged".into(),
        })
    } else {
        None
    };
    SuiteSummary {
        question_count: questions,
        questions_run: results.len(),
        fitting_count,
        fitting: if stopped {
            format!(
                "{fitting_count}/{} fitting ({} of {questions} questions run)",
                results.len(),
                results.len()
            )
        } else {
            format!("{fitting_count}/{} fitting", results.len())
        },
        not_fitting: results.iter().filter(|r| !r.fits).map(|r| r.id.clone()).collect(),
        none_fits_reason: (fitting_count == 0)
            .then(|| results.iter().find_map(|r| r.not_fitting_reason.clone()))
            .flatten(),
        gates_run: not_run_reason.is_none(),
        gates_not_run_reason: not_run_reason,
        passed_count: judged.iter().filter(|(_, g)| g.passed).count(),
        failed: judged.iter().filter(|(_, g)| !g.passed).map(|(r, _)| r.id.clone()).collect(),
        allowed_flips: judged.iter().filter(|(_, g)| g.allowed_flip).map(|(r, _)| r.id.clone()).collect(),
        max_drift: max.map(|(m, _)| m).filter(|m| m.is_finite()),
        max_drift_question: max.map(|(_, id)| id.to_string()),
        max_drift_missing_reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mock::{Script, ScriptedBackend};
    use crate::backend::registry::{build_portable, BackendSpec, Precision};
    use crate::backend::{ShapeCaps, ShapeMode};
    use crate::laya::bundle::{Bundle, ModelSpec};

    fn suite() -> Suite {
        let text = serde_json::json!({
            "schema_version": 1, "name": "t",
            "states": {"s": "I was charged twice, please refund one charge.", "long": "word ".repeat(400)},
            "questions": [
                {"id": "n", "state": "s", "question": {"type": "noul", "instructions": "Refund?"}},
                {"id": "c", "state": "s", "question": {"type": "choice", "instructions": "Topic?", "criteria": ["billing", "shipping", "account"]}},
                {"id": "many", "state": "long", "question": {"type": "choice", "instructions": "Pick", "criteria": (0..40).map(|i| format!("option {i}")).collect::<Vec<_>>()}},
            ]
        });
        Suite::parse(&text.to_string(), "t.json").unwrap()
    }

    fn shapes(max_length: usize) -> ShapeCaps {
        ShapeCaps { batch_size: 1, max_length, min_length: 16, max_options: 32, mode: ShapeMode::Range }
    }

    fn f32_engine(bundle: &Bundle, caps: &ShapeCaps) -> crate::backend::portable::PortableBackend {
        let spec = BackendSpec::Portable(Precision::F32);
        build_portable(
            &spec,
            "portable:f32",
            bundle,
            Some(caps.clone()),
            1,
            &crate::settings::Settings::of_test_process(),
        )
        .unwrap()
        .0
    }

    fn plan() -> Plan {
        Plan { gate: 0.02, repeats: 3, opts: CallOptions::default() }
    }

    /// The builtin FP32 engine against itself at L512, stopped at once or not at all.
    fn self_check(stopped: bool) -> (Vec<QuestionResult>, SuiteSummary) {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let caps = shapes(512);
        let mut src = f32_engine(&bundle, &caps);
        let mut cand = f32_engine(&bundle, &caps);
        let host = Host::new(&bundle.tokenizer, &bundle.agent, caps);
        let engines =
            Engines { rows_host: &host, source_host: &host, source: &mut src, candidate: Ok(&mut cand) };
        run_suite(&suite(), engines, &plan(), &|| stopped, &|_| {}).unwrap()
    }

    #[test]
    fn the_source_against_itself_passes_with_zero_drift_and_lists_what_does_not_fit() {
        let (results, summary) = self_check(false);
        assert_eq!(summary.fitting, "2/3 fitting");
        assert_eq!(summary.not_fitting, ["many"]);
        assert!(
            results[2].not_fitting_reason.as_deref().unwrap().contains("max_options"),
            "{:?}",
            results[2]
        );
        assert_eq!(summary.passed_count, 2);
        assert!(summary.failed.is_empty());
        assert_eq!(summary.max_drift, Some(0.0));
        assert_eq!(summary.max_drift_question.as_deref(), Some("n"));
        assert_eq!(results[0].source_answer, results[0].candidate_answer);
    }

    #[test]
    fn a_drifting_candidate_fails_its_repeats_and_its_gates() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let caps = shapes(512);
        let mut src = f32_engine(&bundle, &caps);
        let mut cand = ScriptedBackend::new(
            caps.clone(),
            Script::Drift { num_actions: 2, after: 1 },
            std::time::Duration::ZERO,
        );
        let host = Host::new(&bundle.tokenizer, &bundle.agent, caps);
        let engines =
            Engines { rows_host: &host, source_host: &host, source: &mut src, candidate: Ok(&mut cand) };
        let (results, summary) = run_suite(&suite(), engines, &plan(), &|| false, &|_| {}).unwrap();
        assert_eq!(summary.failed, ["n", "c"]);
        let g = results[0].gates.as_ref().unwrap();
        assert!(!g.repeats_identical, "{g:?}");
        assert!(summary.max_drift.unwrap() > 0.0);
    }

    #[test]
    fn gates_not_run_are_reported_with_the_reason() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let caps = shapes(64);
        let mut src = f32_engine(&bundle, &caps);
        let host = Host::new(&bundle.tokenizer, &bundle.agent, caps);
        let why = RegistryError::Unavailable { spec: "coreml:b".into(), needs: "macOS", os: "linux" };
        let engines =
            Engines { rows_host: &host, source_host: &host, source: &mut src, candidate: Err(&why) };
        let (results, summary) = run_suite(&suite(), engines, &plan(), &|| false, &|_| {}).unwrap();
        assert!(!summary.gates_run);
        assert_eq!(summary.fitting, "2/3 fitting");
        assert!(summary.max_drift.is_none());
        assert!(summary.max_drift_missing_reason.as_deref().unwrap().contains("needs macOS"));
        assert_eq!(results[0].gates_not_run_reason, Some(why.to_string()));
        assert!(results[0].source_answer.is_some() && results[0].gates.is_none());
        // The 64-token shape truncates the state but keeps the markers.
        assert!(results[0].row_tokens.unwrap() <= 64);
    }

    #[test]
    fn a_suite_stopped_before_any_question_says_so_not_that_none_fits() {
        let (results, summary) = self_check(true);
        assert!(results.is_empty());
        assert_eq!((summary.question_count, summary.questions_run), (3, 0));
        assert_eq!(summary.fitting, "0/0 fitting (0 of 3 questions run)");
        assert!(!summary.gates_run);
        let why = summary.max_drift_missing_reason.as_deref().unwrap();
        assert_eq!(
            why,
            "the gates did not run: the run was stopped after 0 of 3 questions, before any was judged"
        );
        // A whole run: every question counted as run.
        let (_, whole) = self_check(false);
        assert_eq!((whole.question_count, whole.questions_run, whole.gates_run), (3, 3, true));
        assert_eq!(whole.fitting, "2/3 fitting");
    }

    #[test]
    fn labels_name_the_selected_option() {
        let s = suite();
        assert_eq!(option_label(&s.items[1].compiled, 1), "shipping");
        assert_eq!(option_label(&s.items[0].compiled, 1), "true");
    }

    fn result(answers: serde_json::Value) -> StateResult {
        let usage = serde_json::json!({"input_tokens": 0, "output_tokens": 0});
        StateResult::from_json(
            &serde_json::json!({"model": "laya-rl-agent", "answers": answers, "usage": usage}),
        )
        .unwrap()
    }

    #[test]
    fn a_runtime_result_states_its_decision_in_label_order() {
        let s = suite();
        let (noul, choice) = (&s.items[0].compiled, &s.items[1].compiled);
        let r = result(serde_json::json!({
            "n": {"type": "noul", "noul": 0.75, "confidence": 0.75, "answer_confidence": 0.75, "action": {"act_probability": 0.25}},
            "c": {"type": "choice", "choice": "shipping", "probabilities": {"shipping": 0.5, "account": 0.125, "billing": 0.375},
                  "confidence": 0.1, "answer_confidence": 0.5, "action": {"act_probability": 0.5}},
        }));
        // Noul: [1 - P(true), P(true)]; choice: the question's label order, not the dict's.
        let d = stated_decision(&r, "n", noul).unwrap();
        assert_eq!((d.probabilities, d.act_probability), (vec![0.25, 0.75], 0.25));
        let d = stated_decision(&r, "c", choice).unwrap();
        assert_eq!((d.probabilities.clone(), d.act_probability), (vec![0.375, 0.5, 0.125], 0.5));
        assert_eq!(d.selected(), 1);
        let e = stated_decision(&r, "missing", noul).unwrap_err();
        assert_eq!(e.to_string(), "the runtime's result has no answer for question \"missing\"");
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Run);
        let e = stated_decision(&r, "n", choice).unwrap_err().to_string();
        assert!(e.contains("answered a choice question as noul"), "{e}");
        let partial = result(serde_json::json!({
            "c": {"type": "choice", "choice": "billing", "probabilities": {"billing": 1.0},
                  "confidence": 1.0, "answer_confidence": 1.0, "action": {"act_probability": 0.5}},
        }));
        let e = stated_decision(&partial, "c", choice).unwrap_err().to_string();
        assert!(e.contains("no probability for option \"shipping\""), "{e}");
    }

    #[test]
    fn repeats_compare_bit_for_bit_or_as_whole_results() {
        let a = Said::Slots(Some((vec![1.0, -0.0], 0.5)));
        assert!(a.identical(&a.clone()));
        assert!(!a.identical(&Said::Slots(Some((vec![1.0, 0.0], 0.5)))));
        assert!(!a.identical(&Said::Slots(None)));
        let answer = |p: f64| {
            Said::Result(result(serde_json::json!({"n": {"type": "noul", "noul": p, "confidence": p,
                "answer_confidence": p, "action": {"act_probability": 0.5}}})))
        };
        assert!(answer(0.75).identical(&answer(0.75)));
        assert!(!answer(0.75).identical(&answer(0.7501)));
        assert!(!answer(0.75).identical(&a));
    }
}
