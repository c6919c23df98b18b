//! What an arm answered against the baseline arm, request by request of the warm-up: by the
//! fields both results carry (answers, probabilities, noul values, act_probability, the rows'
//! token count), naming what one of them lacks instead of comparing a made-up value.

use serde::{Deserialize, Serialize};

use crate::laya::decode::{AnswerValue, ResultShape};
use crate::laya::host::StateResult;

/// One arm's answers against the baseline's, over the warm-up's requests (one result each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswersVsBaseline {
    /// Requests compared (those both arms answered).
    pub requests: usize,
    /// Requests where a question's selected answer (choice, rounded score, noul value's side)
    /// differs, or a question one result has is missing from the other.
    pub answers_differ: usize,
    /// The largest |Δ| over the probabilities both carry (option probabilities, P(true),
    /// act_probability), as the runtimes rounded them; `None` with nothing to compare.
    pub max_probability_diff: Option<f64>,
    /// Requests whose rows hold another number of tokens (`usage.input_tokens`): the runtime
    /// built other rows, so it did other work; `None` where either arm does not say.
    pub rows_differ: Option<usize>,
    /// Fields the baseline's results carry and this arm's lack (`answer_confidence`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
}

/// The side of a question's answer that decides: the choice key, the score's expected level
/// rounded to the nearest level, P(true) > 0.5 for noul.
fn decided(v: &AnswerValue) -> String {
    match v {
        AnswerValue::Choice { choice, .. } => choice.to_string(),
        AnswerValue::Score { score, .. } => format!("level {}", score.round()),
        AnswerValue::Noul { noul } => (if *noul > 0.5 { "true" } else { "false" }).to_string(),
    }
}

/// The probabilities of one answer, in a fixed order (choice by key).
fn probabilities(v: &AnswerValue) -> Vec<(String, f64)> {
    match v {
        AnswerValue::Choice { probabilities, .. } => probabilities.clone(),
        AnswerValue::Score { probabilities, .. } => {
            probabilities.iter().enumerate().map(|(i, p)| (i.to_string(), *p)).collect()
        }
        AnswerValue::Noul { noul } => vec![("true".into(), *noul)],
    }
}

/// `arm`'s results against `base`'s, request by request (the shorter list bounds both).
pub fn compare(base: &[StateResult], arm: &[StateResult]) -> AnswersVsBaseline {
    let mut out = AnswersVsBaseline {
        requests: 0,
        answers_differ: 0,
        max_probability_diff: None,
        rows_differ: Some(0),
        lacks: Vec::new(),
    };
    let mut lacks_confidence = false;
    let mut lacks_state_tokens = false;
    for (b, a) in base.iter().zip(arm) {
        out.requests += 1;
        let mut differs = b.answers.len() != a.answers.len();
        for (qid, ba) in &b.answers {
            let Some((_, aa)) = a.answers.iter().find(|(k, _)| k == qid) else {
                differs = true;
                continue;
            };
            if ba.qtype != aa.qtype || decided(&ba.value) != decided(&aa.value) {
                differs = true;
            }
            lacks_confidence |= ba.answer_confidence.is_some() && aa.answer_confidence.is_none();
            let mut pairs: Vec<(f64, f64)> = vec![(ba.act_probability, aa.act_probability)];
            let theirs = probabilities(&aa.value);
            for (k, p) in probabilities(&ba.value) {
                match theirs.iter().find(|(j, _)| *j == k) {
                    Some((_, q)) => pairs.push((p, *q)),
                    None => differs = true,
                }
            }
            for (p, q) in pairs {
                let d = (p - q).abs();
                if d.is_finite() {
                    out.max_probability_diff = Some(out.max_probability_diff.map_or(d, |m: f64| m.max(d)));
                }
            }
        }
        out.answers_differ += usize::from(differs);
        match (&b.usage, &a.usage) {
            (Some(bu), Some(au)) => {
                lacks_state_tokens |= bu.state_tokens.is_some() && au.state_tokens.is_none();
                if let Some(n) = out.rows_differ.as_mut() {
                    *n += usize::from(bu.input_tokens != au.input_tokens);
                }
            }
            (None, None) => {}
            _ => out.rows_differ = None,
        }
    }
    if lacks_confidence {
        out.lacks.push("answer_confidence".into());
    }
    if lacks_state_tokens {
        out.lacks.push("usage.state_tokens".into());
    }
    out
}

/// Arm `i`'s warm-up results against the baseline's (arm 0), from each arm's warm-up results in
/// arm order; `None` for the baseline and an arm without any.
pub fn of_arm(warmups: &[Vec<StateResult>], i: usize) -> Option<AnswersVsBaseline> {
    match (i, warmups.first(), warmups.get(i)) {
        (1.., Some(base), Some(mine)) if !mine.is_empty() => Some(compare(base, mine)),
        _ => None,
    }
}

/// [`compare`] of two arms' warm-up result dicts as a raw record keeps them (`warmup`'s
/// `results`), each read in whatever shape it was stated (a field it lacks stays absent);
/// `None` when either list is empty or a dict is not a result.
pub fn compare_stated(base: &[serde_json::Value], arm: &[serde_json::Value]) -> Option<AnswersVsBaseline> {
    if base.is_empty() || arm.is_empty() {
        return None;
    }
    let read = |v: &[serde_json::Value]| -> Option<Vec<StateResult>> {
        v.iter().map(|r| StateResult::from_json_as(r, ResultShape::Laya03).ok()).collect()
    };
    Some(compare(&read(base)?, &read(arm)?))
}

/// The report line of the arms compared with `baseline` ("Answers against the baseline `b`
/// (…): `x` same answers on 8 requests, ….\n"); empty with no arm compared.
pub fn line<'a>(
    baseline: &str,
    arms: impl IntoIterator<Item = (&'a str, Option<&'a AnswersVsBaseline>)>,
) -> String {
    let parts: Vec<String> =
        arms.into_iter().filter_map(|(name, c)| c.map(|c| format!("`{name}` {}", c.words()))).collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "Answers against the baseline `{baseline}` (each warm-up request's result, as each runtime states it): {}.\n",
        parts.join("; ")
    )
}

impl AnswersVsBaseline {
    /// One clause for a report line: "same answers on 8 requests, max |Δp| 0.0003" or
    /// "3 of 8 requests answered differently, …", with the rows and the fields it lacks.
    pub fn words(&self) -> String {
        let mut s = if self.answers_differ == 0 {
            format!("same answers on {} request{}", self.requests, if self.requests == 1 { "" } else { "s" })
        } else {
            format!("{} of {} requests answered differently", self.answers_differ, self.requests)
        };
        if let Some(d) = self.max_probability_diff {
            s.push_str(&format!(", max |Δp| {d:.4}"));
        }
        match self.rows_differ {
            Some(0) => {}
            Some(n) => s.push_str(&format!(", rows of another length in {n} of {}", self.requests)),
            None => s.push_str(", row lengths not reported by both"),
        }
        if !self.lacks.is_empty() {
            s.push_str(&format!(
                " (its results lack {})",
                self.lacks.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn current(noul: f64, choice: &str, pa: f64, act: f64, tokens: u64) -> StateResult {
        StateResult::from_json(&json!({
            "answers": {
                "n": {"type": "noul", "noul": noul, "confidence": noul.max(1.0 - noul), "answer_confidence": noul.max(1.0 - noul), "action": {"act_probability": act}},
                "c": {"type": "choice", "choice": choice, "probabilities": {"a": pa, "b": 1.0 - pa}, "confidence": 0.1, "answer_confidence": pa.max(1.0 - pa), "action": {"act_probability": act}}
            },
            "usage": {"input_tokens": tokens, "output_tokens": 0, "state_tokens": 7, "state_tokens_dropped": 0, "truncated": false, "truncated_questions": []}
        }))
        .unwrap()
    }

    fn laya03(noul: f64, choice: &str, pa: f64, act: f64, tokens: u64) -> StateResult {
        StateResult::from_json_as(
            &json!({
                "answers": {
                    "n": {"type": "noul", "confidence": noul.max(1.0 - noul), "action": {"act_probability": act}, "noul": noul},
                    "c": {"type": "choice", "confidence": 0.1, "action": {"act_probability": act}, "probabilities": {"a": pa, "b": 1.0 - pa}, "choice": choice}
                },
                "usage": {"input_tokens": tokens, "output_tokens": 0}
            }),
            ResultShape::Laya03,
        )
        .unwrap()
    }

    #[test]
    fn the_same_answers_differ_only_by_their_probabilities() {
        let base = vec![current(0.25, "b", 0.4, 0.5, 40), current(0.75, "a", 0.6, 0.5, 41)];
        let arm = vec![laya03(0.2501, "b", 0.4003, 0.4998, 40), laya03(0.75, "a", 0.6, 0.5, 41)];
        let c = compare(&base, &arm);
        assert_eq!((c.requests, c.answers_differ, c.rows_differ), (2, 0, Some(0)));
        // |0.4 − 0.4003| = 0.0003 (and its complement) is the largest difference
        assert!((c.max_probability_diff.unwrap() - 0.0003).abs() < 1e-12, "{c:?}");
        assert_eq!(c.lacks, ["answer_confidence", "usage.state_tokens"]);
        assert_eq!(
            c.words(),
            "same answers on 2 requests, max |Δp| 0.0003 (its results lack `answer_confidence`, `usage.state_tokens`)"
        );
    }

    #[test]
    fn another_answer_or_other_rows_are_counted_per_request() {
        let base = vec![current(0.25, "b", 0.4, 0.5, 40), current(0.75, "a", 0.6, 0.5, 41)];
        // request 0: noul flips to true; request 1: the same answers on a row 3 tokens longer
        let arm = vec![current(0.55, "b", 0.4, 0.5, 40), current(0.75, "a", 0.6, 0.5, 44)];
        let c = compare(&base, &arm);
        assert_eq!((c.answers_differ, c.rows_differ), (1, Some(1)));
        assert!((c.max_probability_diff.unwrap() - 0.3).abs() < 1e-12);
        assert!(c.lacks.is_empty());
        assert_eq!(
            c.words(),
            "1 of 2 requests answered differently, max |Δp| 0.3000, rows of another length in 1 of 2"
        );
        // an arm against itself: nothing differs
        let same = compare(&base, &base);
        assert_eq!(
            (same.answers_differ, same.max_probability_diff, same.rows_differ),
            (0, Some(0.0), Some(0))
        );
    }

    /// laya-cuda's own results (fixtures/reference/laya-cuda/results.json, made by
    /// scripts/make_laya_cuda_fixtures.py): the one it returned on the H200, and its host code
    /// around laya-mlx's FP32 forward beside laya-mlx's own answers (laya 0.4's shape).
    #[test]
    fn laya_cuda_results_are_read_in_their_shape_and_compare_by_what_both_carry() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../fixtures/reference/laya-cuda/results.json")).unwrap();
        let emulated = doc["emulated"].as_array().unwrap();
        assert_eq!(emulated.len(), 4);
        let (mut base, mut cuda) = (Vec::new(), Vec::new());
        for e in emulated {
            // laya 0.4's shape requires `answer_confidence`: the shape must be declared
            let e0 = StateResult::from_json(&e["laya_cuda_result"]).unwrap_err().to_string();
            assert!(e0.contains("no `answer_confidence`"), "{e0}");
            let c = StateResult::from_json_as(&e["laya_cuda_result"], ResultShape::Laya03).unwrap();
            assert!(c.answers.iter().all(|(_, a)| a.answer_confidence.is_none()));
            let u = c.usage.as_ref().unwrap();
            assert_eq!((u.state_tokens, u.state_tokens_dropped), (None, None));
            // written back, it is the runtime's dict: nothing added, nothing made up
            let back = c.to_json();
            assert_eq!(back["answers"], e["laya_cuda_result"]["answers"]);
            assert_eq!(
                back["usage"],
                serde_json::json!({"input_tokens": u.input_tokens, "output_tokens": 0})
            );
            base.push(StateResult::from_json(&e["laya_mlx_result"]).unwrap());
            cuda.push(c);
        }
        // laya-cuda's rows and decoding are laya-mlx's: the same answers, the same numbers
        let c = compare(&base, &cuda);
        assert_eq!(
            (c.requests, c.answers_differ, c.rows_differ, c.max_probability_diff),
            (4, 0, Some(0), Some(0.0))
        );
        assert_eq!(c.lacks, ["answer_confidence", "usage.state_tokens"]);
        // The invoice workload: laya-cuda's own rows are 91 tokens, as laya-bench builds them
        // for every arm, so its arm does the same work; the same answers as laya-mlx's
        let read = |key: &str, shape| -> Vec<StateResult> {
            doc["invoice"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| StateResult::from_json_as(&e[key], shape).unwrap())
                .collect()
        };
        let (mlx, cuda) =
            (read("laya_mlx_result", ResultShape::Current), read("laya_cuda_result", ResultShape::Laya03));
        assert_eq!(cuda.len(), 8);
        assert!(cuda.iter().all(|r| r.usage.as_ref().unwrap().input_tokens == 91), "{cuda:?}");
        let c = compare(&mlx, &cuda);
        assert_eq!(
            (c.requests, c.answers_differ, c.rows_differ, c.max_probability_diff),
            (8, 0, Some(0), Some(0.0))
        );
        // On the H200 (FP16 kernels) it answered the first request within 1e-4 of the FP32
        // emulation: the same answer, the same 40 tokens.
        let h200 = StateResult::from_json_as(&doc["recorded"][0]["result"], ResultShape::Laya03).unwrap();
        let c = compare(&base[..1], std::slice::from_ref(&h200));
        assert_eq!((c.answers_differ, c.rows_differ), (0, Some(0)));
        assert!(c.max_probability_diff.unwrap() <= 1e-4 + 1e-12, "{c:?}");
    }

    #[test]
    fn only_an_arm_after_the_baseline_with_results_is_compared() {
        let base = vec![current(0.25, "b", 0.4, 0.5, 40)];
        let warmups = vec![base.clone(), base.clone(), Vec::new()];
        assert_eq!(of_arm(&warmups, 0), None);
        assert_eq!(of_arm(&warmups, 1), Some(compare(&base, &base)));
        assert_eq!(of_arm(&warmups, 2), None);
        assert_eq!(of_arm(&warmups, 3), None);
    }

    #[test]
    fn stated_results_are_compared_as_the_record_keeps_them() {
        let base = vec![current(0.25, "b", 0.4, 0.5, 40)];
        let arm = vec![laya03(0.2501, "b", 0.4, 0.5, 40)];
        let stated = |r: &[StateResult]| r.iter().map(StateResult::to_json).collect::<Vec<_>>();
        assert_eq!(compare_stated(&stated(&base), &stated(&arm)), Some(compare(&base, &arm)));
        assert_eq!(compare_stated(&[], &stated(&arm)), None);
        assert_eq!(compare_stated(&stated(&base), &[json!({"answers": 3})]), None);
    }

    #[test]
    fn a_missing_question_or_option_is_a_difference_never_a_zero() {
        let base = vec![current(0.25, "b", 0.4, 0.5, 40)];
        let mut arm = base.clone();
        arm[0].answers.remove(1);
        let c = compare(&base, &arm);
        assert_eq!(c.answers_differ, 1);
        // usage missing on one side: the rows are not compared
        let mut no_usage = base.clone();
        no_usage[0].usage = None;
        assert_eq!(compare(&base, &no_usage).rows_differ, None);
        assert!(compare(&base, &no_usage).words().ends_with("row lengths not reported by both"));
    }
}
