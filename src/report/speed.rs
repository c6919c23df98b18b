//! The `speed` report (schema_version 1) and its Markdown and CSV exports.

use serde::{Deserialize, Serialize};

use super::format::{csv_field, csv_num, ms, num};
use super::model::ModelInfo;
use super::provenance::Provenance;
use super::raw::{ArmInfo, PlanInfo, WorkloadInfo};
use super::status::RunStatus;
use super::summary::Interval;
use crate::stats::LatencySummary;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// One arm's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    /// The arm.
    pub arm: ArmInfo,
    /// Timed calls (one request each, or `plan.batch` requests each with `--batch N`).
    pub calls: u64,
    /// Requests answered = calls × `plan.batch` (what t and decisions/s count).
    #[serde(default)]
    pub decisions: u64,
    /// Σ block wall time, seconds.
    pub total_s: f64,
    /// Mean time per decision over all completed work: total time / decisions.
    pub time_per_decision_s: f64,
    /// Decisions per second (1 / time per decision).
    pub decisions_per_s: f64,
    /// Per-call latency over the full boundary (with `--batch N`: per batch of N requests).
    pub latency: LatencySummary,
    /// `t_baseline / t_arm` (1 for the baseline).
    pub speed_ratio_vs_baseline: f64,
    /// Calls whose result differed from the arm's warm-up result.
    pub unstable_calls: u64,
    /// FLOP of one decision at the padded length (dense MACs × 2), if known.
    pub gflop_per_decision: Option<f64>,
    /// Achieved GFLOP/s = GFLOP per decision / time per decision.
    pub achieved_gflops: Option<f64>,
    /// Selected answers per request (warm-up result).
    pub answers: Vec<String>,
    /// Largest absolute difference of any probability from the baseline, over all requests.
    pub max_probability_diff_vs_baseline: f64,
    /// Requests whose selected answers differ from the baseline's.
    pub answer_mismatches_vs_baseline: usize,
    /// The 95 % interval of `speed_ratio_vs_baseline`: a seeded percentile bootstrap over whole
    /// balanced cycles (10,000 resamples, seed 0; `docs/speed.md`); `None` with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_ratio_interval: Option<Interval>,
    /// Why there is no interval (fewer than two whole cycles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_ratio_interval_missing_reason: Option<String>,
    /// The ratio in words: `1.39× faster`, `0.92× = 8 % slower`.
    #[serde(default)]
    pub speed_ratio_words: String,
    /// Why this arm's times, rates and latencies are `null`: it made no call (the run stopped
    /// before its first block). Absent when it made calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reason: Option<String>,
    /// Calls that are statistical outliers (kept in every figure; see [`crate::stats::outliers`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<OutlierCall>,
    /// An earlier arm this one is the same model as (same weights fingerprint and precision):
    /// its numbers measure the same thing twice, not a second precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identical_to: Option<String>,
    /// A reference arm (`ref:…`): t, the ratio and the latency above are the runtime's own
    /// predict timed in its worker; this is the mean round trip over the pipes, s (absent for
    /// our arms, whose call is the boundary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_mean_s: Option<f64>,
    /// `--batch N` above 1: whether every request's batched warm-up result equals the same
    /// request answered alone, one row per forward (absent at batch 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unbatched_identical: Option<bool>,
    /// `--batch N` above 1: the largest absolute difference of any probability between the
    /// batched and the unbatched results, over all requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_probability_diff_vs_unbatched: Option<f64>,
    /// CPU time the hypervisor gave to other guests over this arm's blocks, and all CPU time
    /// then (every CPU, `USER_HZ` ticks); absent where the OS keeps no such counter. Its share
    /// is in `host_steal.steal_ticks / host_steal.cpu_ticks`; from 2 % the report warns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal: Option<crate::report::steal::StealTicks>,
}

/// One call that is a statistical outlier of its arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierCall {
    /// Block index.
    pub block: u32,
    /// The call's position in its block, from 0.
    pub call: u64,
    /// Its duration, s.
    pub duration_s: f64,
}

/// A speed ratio S = t(baseline) / t(arm) in words: `1.39× faster`, `0.92× = 8 % slower`,
/// `1.00× (same speed)`.
pub fn ratio_in_words(s: f64) -> String {
    if !s.is_finite() {
        return "no ratio (an arm made no call)".into();
    }
    let pct = (s - 1.0).abs() * 100.0;
    if pct < 0.5 {
        format!("{s:.2}× (same speed)")
    } else if s > 1.0 {
        format!("{s:.2}× faster")
    } else {
        format!("{s:.2}× = {pct:.0} % slower")
    }
}

/// The final `speed` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    /// Report schema version, writer and machine (the raw header's).
    #[serde(flatten)]
    pub provenance: Provenance,
    /// Model spec and shape.
    pub model: ModelInfo,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
    /// Raw record this report derives from.
    pub raw_path: Option<String>,
    /// Per arm, baseline first.
    pub arms: Vec<ArmResult>,
    /// Every call of every arm matched its warm-up result.
    pub stable: bool,
    /// `complete`, or `incomplete` when a signal (Ctrl-C, SIGTERM) stopped the run: its figures
    /// then cover its whole cycles ([`Self::whole_cycles`]) or, before one finished, the blocks
    /// that ran; the raw record's footer says the same.
    #[serde(default = "complete")]
    pub status: RunStatus,
    /// Why the run is not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// An incomplete run's whole balanced cycles from the start, which its figures cover (the
    /// blocks of the cut cycle left out); absent for a complete run, or when no cycle finished
    /// (then the figures cover every block that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_cycles: Option<usize>,
    /// What a reader must know before using the table (outlier calls, identical arms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn complete() -> RunStatus {
    RunStatus::Complete
}

impl SpeedReport {
    /// hyperfine-style Markdown table.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if self.status != RunStatus::Complete {
            let cover = match self.whole_cycles {
                Some(k) => format!(
                    "the figures below cover its {} of {} planned (the blocks of the cut cycle are left out, so that every arm weighs the same)",
                    super::first_cycles(k),
                    self.plan.cycles
                ),
                None => "the figures below cover only the blocks that ran (no balanced cycle finished, so the arms did not run alike)".into(),
            };
            out.push_str(&format!(
                "**{}**: {}; {cover}.\n\n",
                self.status.as_str().to_uppercase(),
                self.status_reason.as_deref().unwrap_or("the run did not finish")
            ));
        }
        out.push_str(&format!(
            "Workload `{}` ({} requests, padded length {}), {} balanced cycle{}{}.\n\n",
            self.workload.name,
            self.workload.requests,
            self.workload.length,
            self.plan.cycles,
            if self.plan.cycles == 1 { "" } else { "s" },
            if self.plan.batch > 1 {
                format!(
                    ", {0} requests per call in one packed forward (--batch {0}; latency is per batch of {0})",
                    self.plan.batch
                )
            } else {
                String::new()
            }
        ));
        out.push_str("| Arm | Spec | Mean ± σ [ms] | P50 [ms] | P90 [ms] | P99 [ms] | Min…Max [ms] | Decisions/s | vs baseline (95 % CI) | GFLOP/s | Unstable |\n");
        out.push_str("|:---|:---|---:|---:|---:|---:|---:|---:|:---|---:|---:|\n");
        for (i, a) in self.arms.iter().enumerate() {
            let relative = if i == 0 {
                "baseline".to_string()
            } else if let Some(same) = &a.identical_to {
                format!("IDENTICAL to `{same}` (same model)")
            } else {
                let ci = a
                    .speed_ratio_interval
                    .map(|iv| format!(" [{:.2}, {:.2}]", iv.low, iv.high))
                    .unwrap_or_else(|| " (no CI)".into());
                format!("{}{ci}", ratio_in_words(a.speed_ratio_vs_baseline))
            };
            out.push_str(&format!(
                "| `{}` | `{}` | {} ± {} | {} | {} | {} | {}…{} | {} | {} | {} | {} |\n",
                a.arm.name,
                a.arm.spec,
                ms(Some(a.latency.mean_s)),
                ms(a.latency.std_s),
                ms(Some(a.latency.p50_s)),
                ms(a.latency.p90_s),
                ms(Some(a.latency.p99_s)),
                ms(Some(a.latency.min_s)),
                ms(Some(a.latency.max_s)),
                num(Some(a.decisions_per_s), 1),
                relative,
                num(a.achieved_gflops, 1),
                a.unstable_calls
            ));
        }
        out.push_str("\nvs baseline = S = t(baseline) / t(arm), t = total block time / decisions (interval means of all completed work); above 1 is faster. The 95 % CI is a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0).\n");
        if let Some(reason) = self.arms.iter().find_map(|a| a.speed_ratio_interval_missing_reason.as_ref()) {
            out.push_str(&format!("No CI: {reason}.\n"));
        }
        for w in &self.warnings {
            out.push_str(&format!("\n{w}\n"));
        }
        for a in &self.arms {
            for note in &a.arm.notes {
                out.push_str(&format!("\nNote on `{}`: {note}\n", a.arm.name));
            }
        }
        out
    }

    /// One CSV row per arm.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "arm,spec,precision,calls,total_s,time_per_decision_s,decisions_per_s,mean_s,p50_s,p95_s,p99_s,min_s,max_s,speed_ratio_vs_baseline,achieved_gflops,unstable_calls,max_probability_diff_vs_baseline,std_s,p90_s,speed_ratio_low,speed_ratio_high,outlier_calls,identical_to,decisions,round_trip_mean_s\n",
        );
        for a in &self.arms {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&a.arm.name),
                csv_field(&a.arm.spec),
                csv_field(&a.arm.precision),
                a.calls,
                csv_num(Some(a.total_s)),
                csv_num(Some(a.time_per_decision_s)),
                csv_num(Some(a.decisions_per_s)),
                csv_num(Some(a.latency.mean_s)),
                csv_num(Some(a.latency.p50_s)),
                csv_num(Some(a.latency.p95_s)),
                csv_num(Some(a.latency.p99_s)),
                csv_num(Some(a.latency.min_s)),
                csv_num(Some(a.latency.max_s)),
                csv_num(Some(a.speed_ratio_vs_baseline)),
                csv_num(a.achieved_gflops),
                a.unstable_calls,
                a.max_probability_diff_vs_baseline,
                a.latency.std_s.map(|x| x.to_string()).unwrap_or_default(),
                a.latency.p90_s.map(|x| x.to_string()).unwrap_or_default(),
                a.speed_ratio_interval.map(|iv| iv.low.to_string()).unwrap_or_default(),
                a.speed_ratio_interval.map(|iv| iv.high.to_string()).unwrap_or_default(),
                a.outliers.len(),
                csv_field(a.identical_to.as_deref().unwrap_or("")),
                a.decisions,
                a.round_trip_mean_s.map(|x| x.to_string()).unwrap_or_default()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_in_words() {
        assert_eq!(ratio_in_words(1.3912), "1.39× faster");
        assert_eq!(ratio_in_words(0.917), "0.92× = 8 % slower");
        assert_eq!(ratio_in_words(1.002), "1.00× (same speed)");
        assert_eq!(ratio_in_words(0.5), "0.50× = 50 % slower");
        assert!(ratio_in_words(f64::NAN).starts_with("no ratio"));
    }
}
