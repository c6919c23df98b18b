//! The claim rule: a target energy gain is reported as reached only when the LOWER bound of the
//! energy-gain interval reaches it and the latency and stability gates pass; otherwise the
//! report states the measured ratio and its interval. Idle-subtracted gains are reported next
//! to it, labelled as a different boundary, and never decide the claim.

use crate::power::PowerBoundary;
use crate::summary::report::{ArmClaim, ArmSummary, Claim, Gate, Interval};

use super::bootstrap;

/// The rule in words, as the report prints it.
pub const CLAIM_RULE: &str = "A target energy gain is reached only if the LOWER bound of the bootstrap interval of S × R is at least the target, the latency gate passes (the arm's P50 and P95 latency are no higher than the baseline's) and the stability gate passes (every call of the arm and the baseline reproduced its warm-up result, and the record passed its audit). Otherwise the measured ratio and its interval are reported. Idle-subtracted gains have a different boundary and never decide a claim.";

/// The latency gate: the arm's P50 and P95 are no higher than the baseline's.
pub fn latency_gate(base: &ArmSummary, arm: &ArmSummary) -> Gate {
    match (&base.latency, &arm.latency) {
        (Some(b), Some(a)) => {
            let passed = a.p50_s <= b.p50_s && a.p95_s <= b.p95_s;
            Gate {
                passed,
                detail: format!(
                    "P50 {:.3} ms vs baseline {:.3} ms, P95 {:.3} ms vs baseline {:.3} ms{}",
                    a.p50_s * 1e3,
                    b.p50_s * 1e3,
                    a.p95_s * 1e3,
                    b.p95_s * 1e3,
                    if passed { "" } else { ": slower than the baseline" }
                ),
            }
        }
        _ => Gate { passed: false, detail: "no latency recorded for the arm or the baseline".into() },
    }
}

/// The stability gate: no unstable call in either arm, and the audit passed.
pub fn stability_gate(base: &ArmSummary, arm: &ArmSummary, audit_passed: bool) -> Gate {
    let passed = audit_passed && base.unstable_calls == 0 && arm.unstable_calls == 0;
    Gate {
        passed,
        detail: format!(
            "{} unstable calls in the arm, {} in the baseline; audit {}",
            arm.unstable_calls,
            base.unstable_calls,
            if audit_passed { "passed" } else { "FAILED" }
        ),
    }
}

/// An interval from a bootstrap over `cycles` whole cycles in words: `95 % interval 9.800–11.000`,
/// or, with too few distinct resamples to be called that ([`bootstrap::interval_name`]),
/// `3.189–3.189, the range of 10 possible resamples, not a 95 % interval`.
fn interval_text(i: Option<&Interval>, level: f64, cycles: usize) -> String {
    match i {
        Some(i) if bootstrap::names_a_level_interval(cycles) => {
            format!("{:.0} % interval {:.3}–{:.3}", level * 100.0, i.low, i.high)
        }
        Some(i) => format!("{:.3}–{:.3}, the {}", i.low, i.high, bootstrap::interval_name(cycles, level)),
        None => "no interval".into(),
    }
}

/// Apply the rule to one arm whose intervals resample `cycles` whole cycles, its energy
/// measured at `boundary` (which the statement names).
pub fn judge(
    target: f64,
    base: &ArmSummary,
    arm: &ArmSummary,
    audit_passed: bool,
    level: f64,
    cycles: usize,
    boundary: &PowerBoundary,
) -> ArmClaim {
    let gain = arm.vs_baseline.energy_gain;
    let interval = arm.intervals.energy_gain;
    let lower_bound_reaches_target = interval.is_some_and(|i| i.low >= target);
    let latency = latency_gate(base, arm);
    let stability = stability_gate(base, arm, audit_passed);
    let reached = lower_bound_reaches_target && latency.passed && stability.passed;
    let measured = match gain {
        Some(g) => {
            format!(
                "measured energy gain {g:.3}× {} ({})",
                boundary.scope(),
                interval_text(interval.as_ref(), level, cycles)
            )
        }
        None => format!(
            "no energy gain: {}",
            arm.vs_baseline
                .missing
                .get("energy_gain")
                .map(String::as_str)
                .unwrap_or("it could not be formed")
        ),
    };
    let statement = if reached {
        format!(
            "{target}× REACHED: {measured}; its lower bound is at least {target}, and the latency and stability gates pass."
        )
    } else {
        let mut why = Vec::new();
        match interval {
            Some(i) if i.low < target => why.push(format!("the lower bound {:.3} is below {target}", i.low)),
            None => why.push("a claim needs the lower bound of a bootstrap interval".to_string()),
            _ => {}
        }
        if !latency.passed {
            why.push(format!("latency gate failed ({})", latency.detail));
        }
        if !stability.passed {
            why.push(format!("stability gate failed ({})", stability.detail));
        }
        format!("{target}× not reached: {measured}; {}.", why.join("; "))
    };
    let idle = arm.vs_baseline.idle_subtracted_energy_gain;
    let idle_interval = arm.intervals.idle_subtracted_energy_gain;
    let statement = match idle {
        Some(g) => format!(
            "{statement} Idle-subtracted energy gain {g:.3}× ({}) is a different boundary from {} (energy above idle) and decides no claim.",
            interval_text(idle_interval.as_ref(), level, cycles),
            boundary.noun("energy")
        ),
        None => statement,
    };
    ArmClaim {
        arm: arm.name.clone(),
        reached,
        energy_gain: gain,
        energy_gain_interval: interval,
        lower_bound_reaches_target,
        latency_gate: latency,
        stability_gate: stability,
        idle_subtracted_energy_gain: idle,
        idle_subtracted_energy_gain_interval: idle_interval,
        statement,
    }
}

/// The claim rule over every non-baseline arm, its intervals resampling `cycles` whole cycles,
/// its energy measured at `boundary`.
pub fn claim(
    target: f64,
    arms: &[ArmSummary],
    baseline: usize,
    audit_passed: bool,
    level: f64,
    cycles: usize,
    boundary: &PowerBoundary,
) -> Claim {
    let base = &arms[baseline];
    Claim {
        target,
        rule: CLAIM_RULE.into(),
        arms: arms
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != baseline)
            .map(|(_, a)| judge(target, base, a, audit_passed, level, cycles, boundary))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::run::{aggregate, Ratios};
    use crate::stats::LatencySummary;
    use crate::summary::report::ArmIntervals;
    use std::collections::BTreeMap;

    const GPU: PowerBoundary = PowerBoundary::GpuBoard;

    fn arm(name: &str, gain: f64, low: f64, high: f64, p50_ms: f64, unstable: u64) -> ArmSummary {
        let lat = LatencySummary {
            calls: 10,
            mean_s: p50_ms / 1e3,
            std_s: None,
            p50_s: p50_ms / 1e3,
            p90_s: None,
            p95_s: p50_ms * 1.1 / 1e3,
            p99_s: p50_ms * 1.2 / 1e3,
            min_s: 0.0,
            max_s: 1.0,
        };
        ArmSummary {
            name: name.into(),
            spec: "mock:ok".into(),
            totals: aggregate(&[], "none"),
            latency: Some(lat),
            unstable_calls: unstable,
            vs_baseline: Ratios {
                speed_gain: Some(1.0),
                power_ratio: Some(gain),
                energy_gain: Some(gain),
                idle_subtracted_energy_gain: Some(gain * 1.5),
                missing: BTreeMap::new(),
            },
            intervals: ArmIntervals {
                energy_gain: Some(Interval { low, high, valid_resamples: 100 }),
                ..ArmIntervals::default()
            },
            identical_to: None,
            answers_vs_baseline: None,
        }
    }

    #[test]
    fn only_the_lower_bound_decides() {
        let base = arm("base", 1.0, 1.0, 1.0, 7.0, 0);
        // Point estimate above the target, lower bound below: not reached.
        let c = judge(10.0, &base, &arm("a", 10.5, 9.8, 11.0, 5.0, 0), true, 0.95, 10, &GPU);
        assert!(!c.reached && !c.lower_bound_reaches_target);
        assert!(
            c.statement.contains("not reached: measured energy gain 10.500× on the GPU board"),
            "{}",
            c.statement
        );
        assert!(c.statement.contains("95 % interval 9.800–11.000"), "{}", c.statement);
        assert!(c.statement.contains("lower bound 9.800 is below 10"), "{}", c.statement);
        // Lower bound exactly at the target: reached.
        let c = judge(10.0, &base, &arm("a", 12.0, 10.0, 14.0, 5.0, 0), true, 0.95, 10, &GPU);
        assert!(c.reached, "{}", c.statement);
        assert!(c.statement.starts_with("10× REACHED"));
    }

    /// From 3 cycles the bootstrap has 10 distinct resamples: the claim names the range for
    /// what it is; its verdict is the same.
    #[test]
    fn an_interval_from_few_resamples_is_not_called_95_percent() {
        let base = arm("base", 1.0, 1.0, 1.0, 7.0, 0);
        let c = judge(10.0, &base, &arm("a", 10.5, 9.8, 11.0, 5.0, 0), true, 0.95, 3, &GPU);
        assert!(!c.reached);
        assert!(
            c.statement.contains(
                "measured energy gain 10.500× on the GPU board (9.800–11.000, the range of 10 possible resamples, not a 95 % interval)"
            ),
            "{}",
            c.statement
        );
        assert!(!c.statement.contains("95 % interval 9.800"), "{}", c.statement);
        let four = judge(10.0, &base, &arm("a", 10.5, 9.8, 11.0, 5.0, 0), true, 0.95, 4, &GPU);
        assert!(four.statement.contains("95 % interval 9.800–11.000"), "{}", four.statement);
    }

    #[test]
    fn the_gates_can_refuse_a_reached_bound() {
        let base = arm("base", 1.0, 1.0, 1.0, 7.0, 0);
        let slow = judge(2.0, &base, &arm("a", 3.0, 2.5, 3.5, 8.0, 0), true, 0.95, 10, &GPU);
        assert!(slow.lower_bound_reaches_target && !slow.latency_gate.passed && !slow.reached);
        assert!(slow.statement.contains("latency gate failed"));
        let unstable = judge(2.0, &base, &arm("a", 3.0, 2.5, 3.5, 5.0, 1), true, 0.95, 10, &GPU);
        assert!(!unstable.stability_gate.passed && !unstable.reached);
        let audit = judge(2.0, &base, &arm("a", 3.0, 2.5, 3.5, 5.0, 0), false, 0.95, 10, &GPU);
        assert!(!audit.reached && audit.stability_gate.detail.contains("audit FAILED"));
    }

    #[test]
    fn idle_subtracted_gains_are_labelled_and_never_decide() {
        let base = arm("base", 1.0, 1.0, 1.0, 7.0, 0);
        // Idle-subtracted gain 15 ≥ 10, the measured gain's interval below: still not reached.
        let c = judge(10.0, &base, &arm("a", 10.0, 9.0, 11.0, 5.0, 0), true, 0.95, 10, &GPU);
        assert!(!c.reached);
        assert_eq!(c.idle_subtracted_energy_gain, Some(15.0));
        assert!(c.statement.contains("a different boundary from GPU board energy"), "{}", c.statement);
        assert!(!c.statement.contains("system"), "{}", c.statement);
        let all = claim(10.0, &[base.clone(), arm("a", 3.0, 2.0, 4.0, 5.0, 0)], 0, true, 0.95, 10, &GPU);
        assert_eq!(all.arms.len(), 1);
        assert_eq!(all.arms[0].arm, "a");
    }
}
