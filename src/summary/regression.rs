//! The regression gate (`summary RUN --baseline-record BASE --fail-if-slower PCT`): how much
//! slower or faster each arm's time per decision is in RUN than in an earlier record BASE of the
//! same model, workload, length and batch, with a bootstrap interval, and whether a CI run
//! should fail.
//!
//! The change is `t_run / t_base − 1`, with t = Σ time / Σ decisions over the whole balanced
//! cycles of each record (each block's own time: its runtime for a self-timing arm of a `speed`
//! record, its wall time otherwise, as everywhere in `summary`). A resample draws each record's
//! cycles independently (as many as it has, with replacement; RUN's first, then BASE's, from
//! one generator seeded by `--seed`) and forms the change again; the interval is the central
//! percentile interval of the resampled changes.
//!
//! The verdict reads the interval against the threshold PCT (0 without `--fail-if-slower`):
//! slower when even its lower bound is a slowdown above PCT, faster when even its upper bound
//! is a speed-up beyond PCT, otherwise no change detected (the interval contains 0, or the
//! change nearest 0 it allows is within PCT). Only "slower" fails the gate.

use serde::{Deserialize, Serialize};

use super::bootstrap::percentile_interval;
use super::rng::Rng;
use super::SummaryError;
use crate::record::Header;
use crate::report::Interval;
use crate::summary::report::RunSummary;

/// How to compare, from the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// `--fail-if-slower PCT`: the slowdown, in percent, the lower bound must exceed to fail;
    /// `None`: compare and report only (read against 0 %).
    pub fail_if_slower_pct: Option<f64>,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// Central interval level, e.g. 0.95.
    pub level: f64,
}

/// What the interval of one arm's change says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval contains 0, or the change nearest 0 it allows is within the threshold.
    NoChange,
    /// Even the interval's lower bound is a slowdown above the threshold: fails the gate.
    Slower,
    /// Even the interval's upper bound is a speed-up beyond the threshold.
    Faster,
}

/// One arm of RUN against the arm of the same name in BASE.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmChange {
    /// Arm name (arms are matched by name).
    pub arm: String,
    /// The arm's backend spec in RUN.
    pub spec: String,
    /// The arm's backend spec in BASE (may differ: arms are matched by name).
    pub baseline_spec: String,
    /// RUN's time per decision, s.
    pub time_per_decision_s: f64,
    /// BASE's time per decision, s.
    pub baseline_time_per_decision_s: f64,
    /// `(t_run / t_base − 1) × 100`: positive is slower.
    pub change_pct: f64,
    /// Its bootstrap interval, in percent.
    pub interval_pct: Interval,
    /// What the interval says.
    pub verdict: Verdict,
    /// The verdict in words, as printed.
    pub statement: String,
}

/// A run compared with its baseline record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    /// RUN's raw file.
    pub run: String,
    /// BASE's raw file (`--baseline-record`).
    pub baseline_record: String,
    /// `--fail-if-slower`, percent; `None`: reported only, never failed.
    pub fail_if_slower_pct: Option<f64>,
    /// Interval level.
    pub level: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed.
    pub seed: u64,
    /// The arms both records have, in RUN's order.
    pub arms: Vec<ArmChange>,
    /// Arms of one record only, not compared (`` `x` only in RUN ``).
    pub unmatched: Vec<String>,
    /// Whether an arm is slower beyond the threshold (the command exits 1).
    pub failed: bool,
}

/// Σ seconds / Σ decisions of `(decisions, seconds)` per cycle; `None` without decisions.
fn per_decision<'a>(cycles: impl Iterator<Item = &'a (f64, f64)>) -> Option<f64> {
    let (d, t) = cycles.fold((0.0, 0.0), |(d, t), (cd, ct)| (d + cd, t + ct));
    let q = t / d;
    (d > 0.0 && q.is_finite()).then_some(q)
}

/// The change `t_run / t_base − 1` of time per decision (a fraction: 0.2 is 20 % slower), from
/// each record's `(decisions, seconds)` per whole balanced cycle.
pub fn change(run: &[(f64, f64)], base: &[(f64, f64)]) -> Option<f64> {
    let (r, b) = (per_decision(run.iter())?, per_decision(base.iter())?);
    let c = r / b - 1.0;
    (b > 0.0 && c.is_finite()).then_some(c)
}

/// The central `level` bootstrap interval of [`change`]: each of `resamples` resamples draws
/// `run.len()` cycles of `run` and then `base.len()` of `base`, with replacement, from one
/// generator seeded by `seed`. `None` when no resample forms a change (or either side is empty).
pub fn change_interval(
    run: &[(f64, f64)],
    base: &[(f64, f64)],
    resamples: usize,
    seed: u64,
    level: f64,
) -> Option<Interval> {
    if run.is_empty() || base.is_empty() {
        return None;
    }
    let mut rng = Rng::seeded(seed);
    let mut draw = |cycles: &[(f64, f64)]| {
        let n = cycles.len() as u64;
        (0..n).map(|_| cycles[rng.below(n) as usize]).collect::<Vec<_>>()
    };
    let mut changes: Vec<f64> = (0..resamples).filter_map(|_| change(&draw(run), &draw(base))).collect();
    if changes.is_empty() {
        return None;
    }
    percentile_interval(&mut changes, level)
}

/// What `interval` (percent) says against `threshold_pct`: slower when its lower bound is above
/// it, faster when its upper bound is below minus it, else no change detected.
pub fn verdict(interval: &Interval, threshold_pct: f64) -> Verdict {
    if interval.low > threshold_pct {
        Verdict::Slower
    } else if interval.high < -threshold_pct {
        Verdict::Faster
    } else {
        Verdict::NoChange
    }
}

/// The verdict in words: `slower by 20.1 % [17.3, 23.0]`, `faster by …`, or `no change
/// detected (…)` saying why.
pub fn statement(change_pct: f64, interval: &Interval, threshold_pct: f64, level: f64) -> String {
    let iv = format!("[{:.1}, {:.1}]", interval.low, interval.high);
    let level = format!("{:.0} %", level * 100.0);
    match verdict(interval, threshold_pct) {
        Verdict::Slower => format!("slower by {change_pct:.1} % {iv} ({level} interval)"),
        Verdict::Faster => format!("faster by {:.1} % [{:.1}, {:.1}] ({level} interval)", -change_pct, -interval.high, -interval.low),
        Verdict::NoChange if interval.low <= 0.0 && interval.high >= 0.0 => {
            format!("no change detected ({change_pct:+.1} % {iv}: the {level} interval contains 0)")
        }
        Verdict::NoChange => format!(
            "no change detected ({change_pct:+.1} % {iv}: the {level} interval allows a change within the {threshold_pct} % threshold)"
        ),
    }
}

/// Whether two records measure the same thing, so that their times may be compared: the same
/// command, model, workload, length and batch. The error names the first field that differs.
pub fn comparable(run: (&str, &Header), base: (&str, &Header)) -> Result<(), SummaryError> {
    let (r, b) = (run.1, base.1);
    let fields: [(&str, String, String); 5] = [
        ("kind", r.kind.clone(), b.kind.clone()),
        ("model.spec", r.model.spec.clone(), b.model.spec.clone()),
        ("workload.name", r.workload.name.clone(), b.workload.name.clone()),
        ("workload.length", r.workload.length.to_string(), b.workload.length.to_string()),
        ("plan.batch", r.plan.batch.to_string(), b.plan.batch.to_string()),
    ];
    // An arm of the same name in both must answer the same requests per call (a sweep's
    // `NAME-b4` of one record against a `NAME-b4` of another run at another batch).
    let per_arm = r.arms.iter().filter(|a| b.arms.iter().any(|o| o.name == a.name)).map(|a| {
        (
            format!("arms[`{}`].requests_per_call", a.name),
            r.requests_per_call(&a.name).to_string(),
            b.requests_per_call(&a.name).to_string(),
        )
    });
    let fields = fields.into_iter().map(|(f, x, y)| (f.to_string(), x, y)).chain(per_arm);
    match fields.into_iter().find(|(_, x, y)| x != y) {
        None => Ok(()),
        Some((field, value, baseline_value)) => Err(SummaryError::BaselineDiffers {
            file: run.0.into(),
            baseline: base.0.into(),
            field,
            value,
            baseline_value,
        }),
    }
}

/// Each arm's `(decisions, seconds)` per whole balanced cycle of a summarized run.
fn cycles_of(s: &RunSummary, arm: &str) -> Vec<(f64, f64)> {
    let mut cycles = vec![(0.0, 0.0); s.plan.cycles];
    for b in s.blocks.iter().filter(|b| b.arm == arm) {
        if let Some(c) = cycles.get_mut(b.cycle as usize) {
            c.0 += b.decisions as f64;
            c.1 += b.time_s;
        }
    }
    cycles
}

/// Compare the summarized run `run` with the summarized baseline record `base` (both with
/// statistics, from records [`comparable`] has accepted): every arm of the same name.
pub fn regression(run: &RunSummary, base: &RunSummary, gate: &Gate) -> Result<Regression, SummaryError> {
    if base.arms.is_empty() {
        return Err(SummaryError::BaselineUnusable {
            baseline: base.source.clone(),
            reason: base.statistics_missing_reason.clone().unwrap_or_else(|| "it has no statistics".into()),
        });
    }
    if gate.resamples == 0 {
        return Err(SummaryError::GateNeedsResamples);
    }
    for s in [run, base] {
        if s.plan.cycles < 2 {
            return Err(SummaryError::GateNeedsCycles { file: s.source.clone(), cycles: s.plan.cycles });
        }
    }
    let threshold = gate.fail_if_slower_pct.unwrap_or(0.0);
    let mut arms = Vec::new();
    for a in &run.arms {
        let Some(b) = base.arms.iter().find(|b| b.name == a.name) else { continue };
        let (rc, bc) = (cycles_of(run, &a.name), cycles_of(base, &a.name));
        let (Some(tr), Some(tb), Some(c)) =
            (per_decision(rc.iter()), per_decision(bc.iter()), change(&rc, &bc))
        else {
            continue;
        };
        let Some(iv) = change_interval(&rc, &bc, gate.resamples, gate.seed, gate.level) else { continue };
        let interval_pct =
            Interval { low: iv.low * 100.0, high: iv.high * 100.0, valid_resamples: iv.valid_resamples };
        let change_pct = c * 100.0;
        let mut statement = statement(change_pct, &interval_pct, threshold, gate.level);
        if a.spec != b.spec {
            statement.push_str(&format!(
                "; matched by name, the spec differs (baseline `{}`, this run `{}`)",
                b.spec, a.spec
            ));
        }
        arms.push(ArmChange {
            arm: a.name.clone(),
            spec: a.spec.clone(),
            baseline_spec: b.spec.clone(),
            time_per_decision_s: tr,
            baseline_time_per_decision_s: tb,
            change_pct,
            verdict: verdict(&interval_pct, threshold),
            interval_pct,
            statement,
        });
    }
    if arms.is_empty() {
        return Err(SummaryError::NoCommonArm {
            file: run.source.clone(),
            baseline: base.source.clone(),
            arms: run.arms.iter().map(|a| a.name.clone()).collect(),
            baseline_arms: base.arms.iter().map(|a| a.name.clone()).collect(),
        });
    }
    let only = |of: &RunSummary, other: &RunSummary, which: &str| -> Vec<String> {
        of.arms
            .iter()
            .filter(|a| !other.arms.iter().any(|o| o.name == a.name))
            .map(|a| format!("`{}` only in {which}", a.name))
            .collect()
    };
    let mut unmatched = only(run, base, "this run");
    unmatched.extend(only(base, run, "the baseline record"));
    let failed = gate.fail_if_slower_pct.is_some() && arms.iter().any(|a| a.verdict == Verdict::Slower);
    Ok(Regression {
        run: run.source.clone(),
        baseline_record: base.source.clone(),
        fail_if_slower_pct: gate.fail_if_slower_pct,
        level: gate.level,
        resamples: gate.resamples,
        seed: gate.seed,
        arms,
        unmatched,
        failed,
    })
}

/// Every arm that fails the gate, as `RUN: arm `x` slower by … against BASE`.
pub fn failures(r: &Regression) -> Vec<String> {
    r.arms
        .iter()
        .filter(|a| r.failed && a.verdict == Verdict::Slower)
        .map(|a| {
            format!(
                "{}: arm `{}` {} against {}, more than --fail-if-slower {} %",
                r.run,
                a.arm,
                a.statement,
                r.baseline_record,
                r.fail_if_slower_pct.unwrap_or(0.0)
            )
        })
        .collect()
}

impl Regression {
    /// The Markdown section: one line per arm, the arms not compared, the gate's verdict.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "## Regression gate: `{}` against `{}`\n\nTime per decision of each arm of the same name, change = t_run / t_base − 1 with a {:.0} % bootstrap interval ({} resamples of each record's whole balanced cycles, seed {}).\n\n",
            self.run,
            self.baseline_record,
            self.level * 100.0,
            self.resamples,
            self.seed
        );
        for a in &self.arms {
            out.push_str(&format!(
                "- `{}`: {} ({:.3} ms vs {:.3} ms per decision)\n",
                a.arm,
                a.statement,
                a.time_per_decision_s * 1e3,
                a.baseline_time_per_decision_s * 1e3
            ));
        }
        for u in &self.unmatched {
            out.push_str(&format!("- not compared: {u}\n"));
        }
        out.push('\n');
        match self.fail_if_slower_pct {
            Some(p) if self.failed => out.push_str(&format!(
                "**REGRESSION**: an arm is slower by more than --fail-if-slower {p} % even at its interval's lower bound.\n\n"
            )),
            Some(p) => out.push_str(&format!(
                "Gate passed: no arm is slower by more than --fail-if-slower {p} % at its interval's lower bound.\n\n"
            )),
            None => out.push_str("No --fail-if-slower: compared and reported only.\n\n"),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(low: f64, high: f64) -> Interval {
        Interval { low, high, valid_resamples: 100 }
    }

    #[test]
    fn the_change_is_the_ratio_of_times_per_decision_minus_one() {
        // 12 ms per decision against 10 ms: 20 % slower; 8 ms: 20 % faster.
        let base = [(10.0, 0.1), (10.0, 0.1)];
        let c = change(&[(5.0, 0.06), (5.0, 0.06)], &base).unwrap();
        assert!((c - 0.2).abs() < 1e-12, "{c}");
        let c = change(&[(10.0, 0.08)], &base).unwrap();
        assert!((c + 0.2).abs() < 1e-12, "{c}");
        // Σ time / Σ decisions, not the mean of per-cycle ratios: (0.1 + 0.4) / (10 + 20) = 1/60 s.
        let c = change(&[(10.0, 0.1), (20.0, 0.4)], &[(1.0, 0.01)]).unwrap();
        assert!((c - (1.0 / 60.0 / 0.01 - 1.0)).abs() < 1e-12, "{c}");
        assert_eq!(change(&[], &base), None);
        assert_eq!(change(&[(0.0, 1.0)], &base), None);
    }

    #[test]
    fn identical_cycles_give_a_point_interval_at_the_change() {
        let iv = change_interval(&[(2.0, 0.012); 4], &[(2.0, 0.010); 3], 200, 7, 0.95).unwrap();
        assert!((iv.low - 0.2).abs() < 1e-9 && (iv.high - 0.2).abs() < 1e-9, "{iv:?}");
        assert_eq!(iv.valid_resamples, 200);
    }

    #[test]
    fn each_record_is_resampled_independently() {
        // RUN's two cycles take 1 s and 3 s per decision; BASE is 1 s throughout. A resample of
        // RUN averages to 1, 2 or 3 s (1/4, 1/2, 1/4), so the change is 0, 1 or 2 and the 95 %
        // interval runs from 0 to 2.
        let iv = change_interval(&[(1.0, 1.0), (1.0, 3.0)], &[(1.0, 1.0); 5], 4000, 1, 0.95).unwrap();
        assert_eq!((iv.low, iv.high), (0.0, 2.0));
        // The same spread in BASE instead: t_base is 1, 2 or 3, the change 0, −0.5 or −2/3.
        let iv = change_interval(&[(1.0, 1.0); 5], &[(1.0, 1.0), (1.0, 3.0)], 4000, 1, 0.95).unwrap();
        assert!((iv.low + 2.0 / 3.0).abs() < 1e-12 && iv.high == 0.0, "{iv:?}");
        // Seeded: the same seed gives the same interval.
        let a = change_interval(&[(1.0, 1.0), (1.0, 1.5), (1.0, 1.2)], &[(1.0, 1.0), (1.0, 1.1)], 50, 3, 0.9);
        let b = change_interval(&[(1.0, 1.0), (1.0, 1.5), (1.0, 1.2)], &[(1.0, 1.0), (1.0, 1.1)], 50, 3, 0.9);
        assert_eq!(a, b);
        assert_eq!(change_interval(&[], &[(1.0, 1.0)], 50, 3, 0.9), None);
    }

    #[test]
    fn only_a_lower_bound_above_the_threshold_is_slower() {
        assert_eq!(verdict(&iv(12.0, 30.0), 10.0), Verdict::Slower);
        assert_eq!(verdict(&iv(10.0, 30.0), 10.0), Verdict::NoChange, "at the threshold is not above it");
        assert_eq!(verdict(&iv(5.0, 30.0), 10.0), Verdict::NoChange);
        assert_eq!(verdict(&iv(-1.0, 30.0), 0.0), Verdict::NoChange, "contains 0");
        assert_eq!(verdict(&iv(0.5, 3.0), 0.0), Verdict::Slower);
        assert_eq!(verdict(&iv(-30.0, -12.0), 10.0), Verdict::Faster);
        assert_eq!(verdict(&iv(-30.0, -5.0), 10.0), Verdict::NoChange);
        assert!(statement(20.0, &iv(12.0, 30.0), 10.0, 0.95).starts_with("slower by 20.0 % [12.0, 30.0]"));
        assert!(statement(-20.0, &iv(-30.0, -12.0), 10.0, 0.95).starts_with("faster by 20.0 % [12.0, 30.0]"));
        let s = statement(1.0, &iv(-1.0, 3.0), 10.0, 0.95);
        assert!(s.starts_with("no change detected (+1.0 % [-1.0, 3.0]") && s.contains("contains 0"), "{s}");
        assert!(statement(8.0, &iv(5.0, 11.0), 10.0, 0.95).contains("within the 10 % threshold"));
    }
}
