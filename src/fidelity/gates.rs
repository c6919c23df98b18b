//! The decision gates of one question (docs/convert-check.md): the selected answer, the
//! drift of every calibrated probability and of the action probability, finiteness and
//! bit-identical repeats. Pure functions over plain numbers.

use serde::{Deserialize, Serialize};

/// The default maximum absolute drift (the published study's gate).
pub const DEFAULT_GATE: f64 = 0.02;

/// What one model said about one question, unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Calibrated option probabilities in label order (softmax of logits / temperature).
    pub probabilities: Vec<f32>,
    /// `softmax(action logits)[0]`.
    pub act_probability: f32,
}

impl Decision {
    /// Index of the selected option: the first largest probability (the host's argmax).
    pub fn selected(&self) -> usize {
        let mut best = 0;
        for (i, &v) in self.probabilities.iter().enumerate() {
            if v > self.probabilities[best] {
                best = i;
            }
        }
        best
    }

    /// Top-1 minus top-2 probability (top-1 alone for a single option).
    pub fn margin(&self) -> f64 {
        let (mut top1, mut top2) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for &p in &self.probabilities {
            let p = f64::from(p);
            if p > top1 {
                top2 = top1;
                top1 = p;
            } else if p > top2 {
                top2 = p;
            }
        }
        if top2 == f64::NEG_INFINITY {
            top1
        } else {
            top1 - top2
        }
    }

    /// Whether every number is finite.
    pub fn is_finite(&self) -> bool {
        self.act_probability.is_finite() && self.probabilities.iter().all(|p| p.is_finite())
    }
}

/// The verdict of one fitting question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// max |Δ| over the calibrated probabilities and the action probability.
    pub drift: f64,
    /// max |Δ| over the calibrated probabilities alone.
    pub probability_drift: f64,
    /// |Δ| of the action probability.
    pub action_probability_drift: f64,
    /// The source's top-1 minus top-2 calibrated probability.
    pub source_margin: f64,
    /// Index of the source's selected option.
    pub source_selected: usize,
    /// Index of the candidate's selected option.
    pub candidate_selected: usize,
    /// The candidate selected the same option.
    pub answer_match: bool,
    /// The answers differ but the source's margin is below 2 × gate, so the flip is allowed
    /// (and reported).
    pub allowed_flip: bool,
    /// Every output of both models was finite.
    pub finite: bool,
    /// The candidate's repeated calls were bit-identical.
    pub repeats_identical: bool,
    /// Every gate passed.
    pub passed: bool,
    /// Each failed gate, in words.
    pub failures: Vec<String>,
}

/// Judge one question: `source` and `candidate` decisions, whether the candidate's repeats
/// were bit-identical, and the drift gate.
pub fn judge(source: &Decision, candidate: &Decision, repeats_identical: bool, gate: f64) -> Judgement {
    let finite = source.is_finite() && candidate.is_finite();
    let mut failures = Vec::new();
    let probability_drift = if source.probabilities.len() == candidate.probabilities.len() {
        source
            .probabilities
            .iter()
            .zip(&candidate.probabilities)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
            .fold(0.0, f64::max)
    } else {
        failures.push(format!(
            "the candidate returned {} probabilities, the source {}",
            candidate.probabilities.len(),
            source.probabilities.len()
        ));
        f64::INFINITY
    };
    let action_probability_drift =
        (f64::from(source.act_probability) - f64::from(candidate.act_probability)).abs();
    let drift = probability_drift.max(action_probability_drift);
    let source_margin = source.margin();
    let (source_selected, candidate_selected) = (source.selected(), candidate.selected());
    let answer_match = source_selected == candidate_selected;
    let allowed_flip = !answer_match && source_margin < 2.0 * gate;
    if !finite {
        failures.push("non-finite output".into());
    }
    if !answer_match && !allowed_flip {
        failures.push(format!(
            "answer flipped from option {source_selected} to {candidate_selected} with a source margin of {source_margin:.6} (flips are allowed only below 2 × gate = {:.6})",
            2.0 * gate
        ));
    }
    if finite && drift > gate {
        failures.push(format!("drift {drift:.6} exceeds the gate {gate}"));
    }
    if !repeats_identical {
        failures.push("repeated identical calls were not bit-identical".into());
    }
    Judgement {
        drift,
        probability_drift,
        action_probability_drift,
        source_margin,
        source_selected,
        candidate_selected,
        answer_match,
        allowed_flip,
        finite,
        repeats_identical,
        passed: failures.is_empty(),
        failures,
    }
}

/// Whether two calls' raw outputs (slot logits and action probability) are bit-identical.
pub fn bit_identical(a: &(Vec<f32>, f32), b: &(Vec<f32>, f32)) -> bool {
    a.0.len() == b.0.len()
        && a.0.iter().zip(&b.0).all(|(x, y)| x.to_bits() == y.to_bits())
        && a.1.to_bits() == b.1.to_bits()
}

/// A check's `--gate` (a number in (0, 1)) and `--repeats` (at least 2), checked before any
/// model loads (exit 2 otherwise).
pub fn check_gate_and_repeats(gate: f64, repeats: usize) -> Result<(), crate::error::Error> {
    if !(gate.is_finite() && gate > 0.0 && gate < 1.0) {
        return Err(crate::error::Error::input(format!(
            "--gate {gate} must be a number in (0, 1), e.g. 0.02"
        )));
    }
    if repeats < 2 {
        return Err(crate::error::Error::input(format!(
            "--repeats {repeats} must be at least 2: the bit-identity gate compares repeated calls"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_a_fraction_and_repeats_are_at_least_two() {
        check_gate_and_repeats(DEFAULT_GATE, 2).unwrap();
        for (gate, repeats) in [(0.0, 2), (1.0, 2), (f64::NAN, 2), (0.02, 1)] {
            let e = check_gate_and_repeats(gate, repeats).unwrap_err();
            assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Input, "{gate} {repeats}");
        }
        let e = check_gate_and_repeats(2.0, 5).unwrap_err();
        assert_eq!(e.to_string(), "--gate 2 must be a number in (0, 1), e.g. 0.02");
    }

    fn d(p: &[f32], act: f32) -> Decision {
        Decision { probabilities: p.to_vec(), act_probability: act }
    }

    #[test]
    fn margin_and_selection_follow_the_hosts_argmax() {
        assert_eq!(d(&[0.2, 0.5, 0.3], 1.0).selected(), 1);
        assert!((d(&[0.2, 0.5, 0.3], 1.0).margin() - 0.2).abs() < 1e-7);
        assert_eq!(d(&[0.5, 0.5], 1.0).selected(), 0, "first max on ties");
        assert_eq!(d(&[0.5, 0.5], 1.0).margin(), 0.0);
        assert_eq!(d(&[1.0], 1.0).margin(), 1.0);
    }

    #[test]
    fn drift_is_the_largest_difference_including_the_action_probability() {
        // |0.60-0.62| = 0.02, |0.40-0.38| = 0.02, action |0.9-0.93| = 0.03.
        let j = judge(&d(&[0.6, 0.4], 0.9), &d(&[0.62, 0.38], 0.93), true, 0.05);
        assert!((j.probability_drift - 0.02).abs() < 1e-6, "{j:?}");
        assert!((j.action_probability_drift - 0.03).abs() < 1e-6);
        assert!((j.drift - 0.03).abs() < 1e-6);
        assert!(j.passed && j.answer_match);
        let j = judge(&d(&[0.6, 0.4], 0.9), &d(&[0.62, 0.38], 0.93), true, 0.02);
        assert!(!j.passed && j.failures[0].contains("exceeds the gate 0.02"), "{j:?}");
    }

    #[test]
    fn a_flip_is_allowed_only_below_twice_the_gate() {
        // Source margin 0.52 - 0.48 = 0.04 ≥ 2 × 0.01: the flip fails.
        let j = judge(&d(&[0.52, 0.48], 0.5), &d(&[0.49, 0.51], 0.5), true, 0.01);
        assert!(!j.answer_match && !j.allowed_flip && !j.passed, "{j:?}");
        assert!(j.failures.iter().any(|f| f.contains("answer flipped from option 0 to 1")));
        // Margin 0.02 < 2 × 0.05 = 0.1: allowed, reported, and the drift 0.03 passes.
        let j = judge(&d(&[0.51, 0.49], 0.5), &d(&[0.48, 0.52], 0.5), true, 0.05);
        assert!(!j.answer_match && j.allowed_flip && j.passed, "{j:?}");
    }

    #[test]
    fn non_finite_and_unstable_outputs_fail() {
        let j = judge(&d(&[0.5, 0.5], 0.5), &d(&[f32::NAN, 0.5], 0.5), true, 0.02);
        assert!(!j.finite && !j.passed && j.failures.contains(&"non-finite output".to_string()));
        let j = judge(&d(&[0.7, 0.3], 0.5), &d(&[0.7, 0.3], 0.5), false, 0.02);
        assert!(!j.passed && j.drift == 0.0 && j.failures[0].contains("bit-identical"));
        let j = judge(&d(&[0.7, 0.3], 0.5), &d(&[0.7, 0.2, 0.1], 0.5), true, 0.02);
        assert!(!j.passed && j.failures[0].contains("3 probabilities"));
    }

    #[test]
    fn bit_identity_distinguishes_signed_zero() {
        assert!(bit_identical(&(vec![1.0, 2.0], 0.5), &(vec![1.0, 2.0], 0.5)));
        assert!(!bit_identical(&(vec![0.0], 0.5), &(vec![-0.0], 0.5)));
        assert!(!bit_identical(&(vec![1.0], 0.5), &(vec![1.0, 2.0], 0.5)));
    }
}
