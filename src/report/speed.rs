//! The `speed` report (schema_version 1) and its Markdown and CSV exports.

use serde::{Deserialize, Serialize};

use super::raw::{ArmInfo, HostInfo, PlanInfo, ToolInfo, WorkloadInfo};
use crate::stats::LatencySummary;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// One arm's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    /// The arm.
    pub arm: ArmInfo,
    /// Timed calls (= decisions: one request per call).
    pub calls: u64,
    /// Σ block wall time, seconds.
    pub total_s: f64,
    /// Mean time per decision over all completed work: total time / decisions.
    pub time_per_decision_s: f64,
    /// Decisions per second (1 / time per decision).
    pub decisions_per_s: f64,
    /// Per-call latency over the full boundary.
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
}

/// The final `speed` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    /// Report schema version.
    pub schema_version: u32,
    /// Writer.
    pub tool: ToolInfo,
    /// Machine.
    pub host: HostInfo,
    /// Model spec and shape.
    pub model: serde_json::Value,
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
    /// then cover only the blocks that ran, and the raw record's footer says the same.
    #[serde(default = "complete")]
    pub status: String,
    /// Why the run is not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// What a reader must know before using the table (outlier calls, identical arms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn complete() -> String {
    "complete".into()
}

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

impl SpeedReport {
    /// hyperfine-style Markdown table.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if self.status != "complete" {
            out.push_str(&format!(
                "**{}**: {}; the figures below cover only the blocks that ran.\n\n",
                self.status.to_uppercase(),
                self.status_reason.as_deref().unwrap_or("the run did not finish")
            ));
        }
        out.push_str(&format!(
            "Workload `{}` ({} requests, padded length {}), {} balanced cycle{}.\n\n",
            self.workload.name,
            self.workload.requests,
            self.workload.length,
            self.plan.cycles,
            if self.plan.cycles == 1 { "" } else { "s" }
        ));
        out.push_str("| Arm | Spec | Mean [ms] | P50 [ms] | P95 [ms] | P99 [ms] | Min…Max [ms] | Decisions/s | Relative | GFLOP/s | Unstable |\n");
        out.push_str("|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for a in &self.arms {
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} | {} | {} | {}…{} | {:.1} | {:.3} | {} | {} |\n",
                a.arm.name,
                a.arm.spec,
                ms(a.latency.mean_s),
                ms(a.latency.p50_s),
                ms(a.latency.p95_s),
                ms(a.latency.p99_s),
                ms(a.latency.min_s),
                ms(a.latency.max_s),
                a.decisions_per_s,
                a.speed_ratio_vs_baseline,
                a.achieved_gflops.map(|g| format!("{g:.1}")).unwrap_or_else(|| "n/a".into()),
                a.unstable_calls
            ));
        }
        out.push_str("\nRelative = t(baseline) / t(arm), t = total block time / decisions (interval means of all completed work).\n");
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
            "arm,spec,precision,calls,total_s,time_per_decision_s,decisions_per_s,mean_s,p50_s,p95_s,p99_s,min_s,max_s,speed_ratio_vs_baseline,achieved_gflops,unstable_calls,max_probability_diff_vs_baseline\n",
        );
        for a in &self.arms {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&a.arm.name),
                csv_field(&a.arm.spec),
                csv_field(&a.arm.precision),
                a.calls,
                a.total_s,
                a.time_per_decision_s,
                a.decisions_per_s,
                a.latency.mean_s,
                a.latency.p50_s,
                a.latency.p95_s,
                a.latency.p99_s,
                a.latency.min_s,
                a.latency.max_s,
                a.speed_ratio_vs_baseline,
                a.achieved_gflops.map(|g| g.to_string()).unwrap_or_default(),
                a.unstable_calls,
                a.max_probability_diff_vs_baseline
            ));
        }
        out
    }
}

/// Quote a CSV field when it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
