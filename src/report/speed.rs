//! The `speed` report (schema_version 2) and its Markdown and CSV exports.

use super::render::Render;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::context::{CSV_COLUMNS, MARKDOWN_ALIGN, MARKDOWN_COLUMNS};
use super::format::{csv_field, csv_num, ms, num};
use super::{Interval, RowContext};
use crate::record::model::ModelInfo;
use crate::record::provenance::Provenance;
use crate::record::status::RunStatus;
use crate::record::{ArmInfo, PlanInfo, WorkloadInfo};
use crate::stats::LatencySummary;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 2;

/// One arm's results. Schema 2 names what the `energy` report and `summary` also report as
/// they do: `totals` (decisions, time, t), `latency` (P50/P95/P99), `vs_baseline.speed_gain` S
/// and `intervals.speed_gain`; a schema-1 arm (flat `total_s`, `speed_ratio_vs_baseline`, ...)
/// is read into the same places ([`SpeedReport::arms`], `docs/formats.md` §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    /// The arm.
    pub arm: ArmInfo,
    /// Timed calls (one request each, or `plan.batch` requests each with `--batch N`).
    pub calls: u64,
    /// Decisions and time summed over the arm's blocks.
    pub totals: SpeedTotals,
    /// Per-call latency over the full boundary (with `--batch N`: per batch of N requests).
    pub latency: LatencySummary,
    /// S and the answers against the first arm (the baseline).
    pub vs_baseline: SpeedVsBaseline,
    /// The bootstrap interval of S, or why there is none.
    pub intervals: SpeedIntervals,
    /// Calls whose result differed from the arm's warm-up result.
    pub unstable_calls: u64,
    /// FLOP of one decision at the padded length (dense MACs × 2), if known.
    pub gflop_per_decision: Option<f64>,
    /// Achieved GFLOP/s = GFLOP per decision / time per decision.
    pub achieved_gflops: Option<f64>,
    /// Selected answers per request (warm-up result).
    pub answers: Vec<String>,
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
    /// Its warm-up answers against the baseline's, by what both results carry (absent for the
    /// baseline and in reports written before it; `vs_baseline` keeps the older two counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_vs_baseline: Option<super::answers::AnswersVsBaseline>,
}

/// An arm's decisions and time: the same names as the `energy` report's and `summary`'s
/// `totals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedTotals {
    /// Requests answered = calls × `plan.batch` (what t and decisions/s count).
    pub decisions: u64,
    /// Σ block wall time, s (a `ref:` arm: Σ its runtime's own durations).
    pub time_s: f64,
    /// t = `time_s` / decisions, s: the mean time per decision over all completed work.
    pub time_per_decision_s: f64,
    /// Decisions per second (1 / t).
    pub decisions_per_s: f64,
}

/// An arm against the baseline: the speed gain S under the name the `energy` report's and
/// `summary`'s `vs_baseline` give it, and how the arm's answers compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedVsBaseline {
    /// S = t(baseline) / t(arm) (1 for the baseline).
    pub speed_gain: f64,
    /// S in words, its interval deciding the direction ([`ratio_in_words`]): `1.39× faster`,
    /// `0.92× = 8 % slower`, `1.03× (no clear difference)`.
    #[serde(default)]
    pub speed_gain_words: String,
    /// Which way S goes as far as its interval shows ([`direction`]): `above` (faster), `below`
    /// (slower), `no_clear_difference` (the interval contains 1), `no_interval`, `no_ratio`.
    /// Absent in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_gain_direction: Option<Direction>,
    /// Largest absolute difference of any probability from the baseline, over all requests.
    pub max_probability_diff: f64,
    /// Requests whose selected answers differ from the baseline's.
    pub answer_mismatches: usize,
}

/// The bootstrap interval of an arm's S, under the name `summary`'s `intervals` gives it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedIntervals {
    /// The 95 % interval of `vs_baseline.speed_gain`: a seeded percentile bootstrap over whole
    /// balanced cycles (10,000 resamples, seed 0; `docs/speed.md`); `null` with the reason in
    /// `missing`.
    #[serde(default)]
    pub speed_gain: Option<Interval>,
    /// Why an interval is `null`: field name (`speed_gain`) → reason (fewer than two whole
    /// cycles).
    #[serde(default)]
    pub missing: BTreeMap<String, String>,
}

/// Each flat field of a schema-1 arm and its path in schema 2 (`docs/formats.md` §6).
pub const SCHEMA_1_NAMES: [(&str, &str); 11] = [
    ("decisions", "totals.decisions"),
    ("total_s", "totals.time_s"),
    ("time_per_decision_s", "totals.time_per_decision_s"),
    ("decisions_per_s", "totals.decisions_per_s"),
    ("speed_ratio_vs_baseline", "vs_baseline.speed_gain"),
    ("speed_ratio_words", "vs_baseline.speed_gain_words"),
    ("speed_ratio_direction", "vs_baseline.speed_gain_direction"),
    ("max_probability_diff_vs_baseline", "vs_baseline.max_probability_diff"),
    ("answer_mismatches_vs_baseline", "vs_baseline.answer_mismatches"),
    ("speed_ratio_interval", "intervals.speed_gain"),
    ("speed_ratio_interval_missing_reason", "intervals.missing.speed_gain"),
];

/// Sets `path` (`a.b.c`) in `map` to `value`, making the objects on the way.
fn put(map: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            map.insert(path.into(), value);
        }
        Some((head, rest)) => {
            if let Value::Object(inner) = map.entry(head).or_insert_with(|| Value::Object(Map::new())) {
                put(inner, rest, value);
            }
        }
    }
}

/// A schema-1 arm (one without `totals`) with its flat fields moved to their schema-2 paths
/// ([`SCHEMA_1_NAMES`]); one written before `decisions` reads 0 decisions, as schema 1 did. A
/// schema-2 arm, or anything that is not an object, is returned as it is.
fn arm_to_schema_2(arm: Value) -> Value {
    let Value::Object(mut arm) = arm else { return arm };
    if arm.contains_key("totals") {
        return Value::Object(arm);
    }
    put(&mut arm, "totals.decisions", Value::from(0));
    put(&mut arm, "intervals.missing", Value::Object(Map::new()));
    for (flat, path) in SCHEMA_1_NAMES {
        if let Some(v) = arm.remove(flat) {
            put(&mut arm, path, v);
        }
    }
    Value::Object(arm)
}

/// Reads `arms` of either schema: each schema-1 arm is moved to schema 2 first
/// ([`arm_to_schema_2`]).
fn arms_of_either_schema<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ArmResult>, D::Error> {
    Vec::<Value>::deserialize(d)?
        .into_iter()
        .map(|arm| serde_json::from_value(arm_to_schema_2(arm)).map_err(serde::de::Error::custom))
        .collect()
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

/// Which way a ratio against the baseline goes, as far as its interval shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The whole interval is above 1 (the arm is faster).
    Above,
    /// The whole interval is below 1 (the arm is slower).
    Below,
    /// The interval contains 1: no direction is shown.
    NoClearDifference,
    /// There is no interval (too few whole cycles to resample): no direction is claimed.
    NoInterval,
    /// There is no finite ratio (an arm made no call).
    NoRatio,
}

/// The direction a ratio may be read in: above or below 1 only when its whole interval is on
/// that side (an end exactly at 1 counts as containing it); without an interval, none.
pub fn direction(ratio: f64, interval: Option<&Interval>) -> Direction {
    if !ratio.is_finite() {
        return Direction::NoRatio;
    }
    match interval {
        None => Direction::NoInterval,
        Some(iv) if iv.low > 1.0 => Direction::Above,
        Some(iv) if iv.high < 1.0 => Direction::Below,
        Some(_) => Direction::NoClearDifference,
    }
}

/// A speed ratio S = t(baseline) / t(arm) in words, with its interval deciding the direction
/// ([`direction`]): `1.39× faster` and `0.92× = 8 % slower` only when the whole interval is on
/// that side of 1, `1.03× (no clear difference)` when it contains 1, `1.03× (no interval, no
/// direction claimed)` without one. A difference that rounds to 1.00 gets a third decimal
/// (`1.004× faster`, `0.996× = 0.4 % slower`).
pub fn ratio_in_words(s: f64, interval: Option<&Interval>) -> String {
    let pct = (s - 1.0).abs() * 100.0;
    match direction(s, interval) {
        Direction::NoRatio => "no ratio (an arm made no call)".into(),
        Direction::NoInterval => format!("{s:.2}× (no interval, no direction claimed)"),
        Direction::NoClearDifference => format!("{s:.2}× (no clear difference)"),
        Direction::Above if pct < 0.5 => format!("{s:.3}× faster"),
        Direction::Above => format!("{s:.2}× faster"),
        Direction::Below if pct < 0.5 => format!("{s:.3}× = {pct:.1} % slower"),
        Direction::Below => format!("{s:.2}× = {pct:.0} % slower"),
    }
}

impl Direction {
    /// The name the JSON report and the CSV export use.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Above => "above",
            Direction::Below => "below",
            Direction::NoClearDifference => "no_clear_difference",
            Direction::NoInterval => "no_interval",
            Direction::NoRatio => "no_ratio",
        }
    }
}

/// A non-baseline arm's `vs baseline` cell: the ratio in words ([`ratio_in_words`]), its
/// interval, and for an arm that is the same model as an earlier one ([`identical_mark`]) the
/// mark. An identical arm keeps its measured ratio: against the same model it is the run's own
/// noise, which is what an A/A run is for.
pub fn vs_baseline_cell(
    s: f64,
    interval: Option<&Interval>,
    identical_to: Option<&str>,
    baseline: &str,
) -> String {
    let ci = super::format::interval_bracket(interval, 2);
    let mark = identical_to.map(|same| identical_mark(same, baseline)).unwrap_or_default();
    format!("{}{ci}{mark}", ratio_in_words(s, interval))
}

/// The warning for arm `arm`, the same model as the earlier arm `same` (speed and energy): its
/// ratio stays in the tables, marked, because against the same model it is the run's noise.
pub fn identical_warning(arm: &crate::record::ArmInfo, same: &str) -> String {
    format!(
        "WARNING: arm `{}` ({}) is IDENTICAL to `{same}`: the same weights (fingerprint {}) on the same engine, so it measures the same model twice{}; its ratio stays in the table, marked: against the same model it is the run's noise, not a difference between models",
        arm.name,
        arm.spec,
        &arm.fingerprint[..arm.fingerprint.len().min(12)],
        if arm.spec.contains("w8") || arm.spec.contains("palette") {
            " (nothing was palettized: on a small model every matrix is below the palettization threshold)"
        } else {
            ""
        }
    )
}

/// The mark beside an identical arm's ratio (the same model as the earlier arm `same`), for
/// the table: against the baseline itself the ratio is the run's noise
/// (` · IDENTICAL to `f32` (same model: the run's noise)`); against another arm, the
/// difference between the two arms' ratios is.
pub fn identical_mark(same: &str, baseline: &str) -> String {
    if same == baseline {
        format!(" · IDENTICAL to `{same}` (same model: the run's noise)")
    } else {
        format!(
            " · IDENTICAL to `{same}` (same model: its difference from `{same}`'s ratio is the run's noise)"
        )
    }
}

/// The wording rule printed under the table.
pub const WORDS_RULE: &str = "A ratio reads faster or slower only when its whole interval is on that side of 1; one whose interval contains 1 reads \"no clear difference\", and one without an interval claims no direction.";

/// How the intervals of `speed` and `energy` (and by default `summary`'s) are formed.
pub const BOOTSTRAP_METHOD: &str =
    "a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0)";

/// What the bracket beside each ratio is, for a bootstrap over `cycles` whole cycles: a 95 %
/// interval when `level_named`, else the range of its few possible resamples.
fn interval_note(cycles: usize, level_named: bool) -> String {
    use crate::stats::resamples::{distinct_resamples, interval_name};
    let method = BOOTSTRAP_METHOD;
    if level_named {
        format!("The 95 % CI is {method}.")
    } else {
        format!(
            "The bracket is {method}, but {cycles} whole cycles have only {:.0} distinct resamples: it is the {}.",
            distinct_resamples(cycles),
            interval_name(cycles, 0.95)
        )
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
    /// Per arm, baseline first (a schema-1 report's arms are read into schema 2's places).
    #[serde(deserialize_with = "arms_of_either_schema")]
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
    /// The model, machine, tool and date every exported row carries (from the raw header);
    /// empty in reports written before it.
    #[serde(default)]
    pub row_context: RowContext,
}

fn complete() -> RunStatus {
    RunStatus::Complete
}

impl SpeedReport {
    /// The whole balanced cycles the ratio's interval resamples: an interrupted run's whole
    /// cycles, else the plan's.
    pub fn resampled_cycles(&self) -> usize {
        self.whole_cycles.unwrap_or(self.plan.cycles)
    }
}

impl Render for SpeedReport {
    /// The Markdown table, printed as it is.
    fn terminal(&self) -> String {
        self.markdown()
    }

    /// hyperfine-style Markdown table.
    fn markdown(&self) -> String {
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
        let cycles = self.resampled_cycles();
        let level_named = crate::stats::resamples::names_a_level_interval(cycles);
        let any_interval = self.arms.iter().any(|a| a.intervals.speed_gain.is_some());
        let column = if level_named || !any_interval {
            "vs baseline (95 % CI)"
        } else {
            "vs baseline [resample range]"
        };
        let cx = &self.row_context;
        out.push_str(&cx.markdown_line());
        out.push_str(&format!("| Arm | {MARKDOWN_COLUMNS}Spec | Mean ± σ [ms] | P50 [ms] | P95 [ms] | P99 [ms] | Min…Max [ms] | Decisions/s | {column} | GFLOP/s | Unstable |\n"));
        out.push_str(&format!("|:---|{MARKDOWN_ALIGN}:---|---:|---:|---:|---:|---:|---:|:---|---:|---:|\n"));
        for (i, a) in self.arms.iter().enumerate() {
            let relative = if i == 0 {
                "baseline".to_string()
            } else {
                vs_baseline_cell(
                    a.vs_baseline.speed_gain,
                    a.intervals.speed_gain.as_ref(),
                    a.identical_to.as_deref(),
                    &self.arms[0].arm.name,
                )
            };
            out.push_str(&format!(
                "| `{}` | {} | `{}` | {} ± {} | {} | {} | {} | {}…{} | {} | {} | {} | {} |\n",
                a.arm.name,
                cx.markdown_cells(&a.arm.name).join(" | "),
                a.arm.spec,
                ms(Some(a.latency.mean_s)),
                ms(a.latency.std_s),
                ms(Some(a.latency.p50_s)),
                ms(Some(a.latency.p95_s)),
                ms(Some(a.latency.p99_s)),
                ms(Some(a.latency.min_s)),
                ms(Some(a.latency.max_s)),
                num(Some(a.totals.decisions_per_s), 1),
                relative,
                num(a.achieved_gflops, 1),
                a.unstable_calls
            ));
        }
        out.push_str(&format!(
            "\nvs baseline = S = t(baseline) / t(arm), t = total block time / decisions (interval means of all completed work); above 1 is faster. {WORDS_RULE} {}\n",
            interval_note(cycles, level_named || !any_interval)
        ));
        if let Some(reason) = self.arms.iter().find_map(|a| a.intervals.missing.get("speed_gain")) {
            out.push_str(&format!("No CI: {reason}.\n"));
        }
        out.push_str(&super::answers::line(
            &self.arms.first().map(|a| a.arm.name.clone()).unwrap_or_default(),
            self.arms.iter().map(|a| (a.arm.name.as_str(), a.answers_vs_baseline.as_ref())),
        ));
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

    /// One CSV row per arm: its name, the run's context ([`RowContext::csv_cells`]), then the
    /// figures.
    fn csv(&self) -> Option<String> {
        let mut out = format!(
            "arm,{CSV_COLUMNS},spec,precision,calls,total_s,time_per_decision_s,decisions_per_s,mean_s,p50_s,p95_s,p99_s,min_s,max_s,speed_ratio_vs_baseline,achieved_gflops,unstable_calls,max_probability_diff_vs_baseline,std_s,p90_s,speed_ratio_low,speed_ratio_high,outlier_calls,identical_to,decisions,round_trip_mean_s,speed_ratio_direction\n",
        );
        for a in &self.arms {
            out.push_str(&format!(
                "{},{}{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&a.arm.name),
                self.row_context.csv_cells(&a.arm.name),
                csv_field(&a.arm.spec),
                csv_field(&a.arm.precision),
                a.calls,
                csv_num(Some(a.totals.time_s)),
                csv_num(Some(a.totals.time_per_decision_s)),
                csv_num(Some(a.totals.decisions_per_s)),
                csv_num(Some(a.latency.mean_s)),
                csv_num(Some(a.latency.p50_s)),
                csv_num(Some(a.latency.p95_s)),
                csv_num(Some(a.latency.p99_s)),
                csv_num(Some(a.latency.min_s)),
                csv_num(Some(a.latency.max_s)),
                csv_num(Some(a.vs_baseline.speed_gain)),
                csv_num(a.achieved_gflops),
                a.unstable_calls,
                a.vs_baseline.max_probability_diff,
                a.latency.std_s.map(|x| x.to_string()).unwrap_or_default(),
                a.latency.p90_s.map(|x| x.to_string()).unwrap_or_default(),
                a.intervals.speed_gain.map(|iv| iv.low.to_string()).unwrap_or_default(),
                a.intervals.speed_gain.map(|iv| iv.high.to_string()).unwrap_or_default(),
                a.outliers.len(),
                csv_field(a.identical_to.as_deref().unwrap_or("")),
                a.totals.decisions,
                a.round_trip_mean_s.map(|x| x.to_string()).unwrap_or_default(),
                direction(a.vs_baseline.speed_gain, a.intervals.speed_gain.as_ref()).as_str()
            ));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(low: f64, high: f64) -> Interval {
        Interval { low, high, valid_resamples: 10_000 }
    }

    #[test]
    fn ratios_read_in_words_when_the_whole_interval_is_on_one_side() {
        assert_eq!(ratio_in_words(1.3912, Some(&iv(1.2, 1.5))), "1.39× faster");
        assert_eq!(ratio_in_words(0.917, Some(&iv(0.9, 0.95))), "0.92× = 8 % slower");
        assert_eq!(ratio_in_words(0.5, Some(&iv(0.4, 0.6))), "0.50× = 50 % slower");
        // A clear but small difference keeps a third decimal instead of reading 1.00×.
        assert_eq!(ratio_in_words(1.004, Some(&iv(1.001, 1.006))), "1.004× faster");
        assert_eq!(ratio_in_words(0.996, Some(&iv(0.994, 0.999))), "0.996× = 0.4 % slower");
        assert_eq!(direction(1.3912, Some(&iv(1.2, 1.5))), Direction::Above);
        assert_eq!(direction(0.917, Some(&iv(0.9, 0.95))), Direction::Below);
    }

    /// Issue 48: `f16 1.03× faster [0.93, 1.12]` and `bf16 0.97× = 3 % slower [0.82, 1.05]`
    /// both had intervals containing 1.
    #[test]
    fn a_ratio_whose_interval_contains_1_is_neither_faster_nor_slower() {
        assert_eq!(ratio_in_words(1.03, Some(&iv(0.93, 1.12))), "1.03× (no clear difference)");
        assert_eq!(ratio_in_words(0.97, Some(&iv(0.82, 1.05))), "0.97× (no clear difference)");
        assert_eq!(ratio_in_words(1.002, Some(&iv(0.99, 1.01))), "1.00× (no clear difference)");
        // An end exactly at 1 contains it.
        assert_eq!(direction(1.2, Some(&iv(1.0, 1.4))), Direction::NoClearDifference);
        assert_eq!(direction(0.8, Some(&iv(0.6, 1.0))), Direction::NoClearDifference);
    }

    #[test]
    fn a_ratio_without_an_interval_claims_no_direction() {
        assert_eq!(ratio_in_words(1.39, None), "1.39× (no interval, no direction claimed)");
        assert_eq!(ratio_in_words(0.5, None), "0.50× (no interval, no direction claimed)");
        assert_eq!(direction(0.5, None), Direction::NoInterval);
        assert!(ratio_in_words(f64::NAN, Some(&iv(0.9, 1.1))).starts_with("no ratio"));
        assert_eq!(direction(f64::INFINITY, None), Direction::NoRatio);
    }

    /// Issue 48, item 5: an identical arm (an A/A run, or `w8` on builtin:tiny) keeps its
    /// measured ratio and interval, the run's own noise, and carries the mark.
    #[test]
    fn an_identical_arm_shows_its_ratio_interval_and_the_mark() {
        assert_eq!(
            vs_baseline_cell(1.013, Some(&iv(0.98, 1.03)), Some("f32"), "f32"),
            "1.01× (no clear difference) [0.98, 1.03] · IDENTICAL to `f32` (same model: the run's noise)"
        );
        assert_eq!(
            vs_baseline_cell(0.9, None, Some("a"), "a"),
            "0.90× (no interval, no direction claimed) · IDENTICAL to `a` (same model: the run's noise)"
        );
        // The same model as an arm other than the baseline: the two ratios' difference is noise.
        assert_eq!(
            vs_baseline_cell(1.5, Some(&iv(1.4, 1.6)), Some("f16"), "f32"),
            "1.50× faster [1.40, 1.60] · IDENTICAL to `f16` (same model: its difference from `f16`'s ratio is the run's noise)"
        );
        // Another model's arm has no mark.
        assert_eq!(vs_baseline_cell(1.39, Some(&iv(1.2, 1.5)), None, "f32"), "1.39× faster [1.20, 1.50]");
    }

    #[test]
    fn directions_serialize_as_the_csv_writes_them() {
        for d in [
            Direction::Above,
            Direction::Below,
            Direction::NoClearDifference,
            Direction::NoInterval,
            Direction::NoRatio,
        ] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }

    /// A `speed` report of schema 1, as its writer (commit 7fd263e) wrote it: 2 mock arms,
    /// 2 cycles.
    const SCHEMA_1: &str = include_str!("../../fixtures/reports/speed-schema-1.json");

    /// Issue 51: a schema-1 report reads, each flat field in its schema-2 place, and writes
    /// back as schema 2.
    #[test]
    fn a_schema_1_report_reads_into_the_schema_2_names() {
        let old: Value = serde_json::from_str(SCHEMA_1).unwrap();
        let r: SpeedReport = serde_json::from_str(SCHEMA_1).unwrap();
        assert_eq!(r.provenance.schema_version, 1);
        for (a, o) in r.arms.iter().zip(old["arms"].as_array().unwrap()) {
            assert_eq!(a.totals.decisions, o["decisions"].as_u64().unwrap());
            assert_eq!(a.totals.time_s, o["total_s"].as_f64().unwrap());
            assert_eq!(a.totals.time_per_decision_s, o["time_per_decision_s"].as_f64().unwrap());
            assert_eq!(a.totals.decisions_per_s, o["decisions_per_s"].as_f64().unwrap());
            assert_eq!(a.vs_baseline.speed_gain, o["speed_ratio_vs_baseline"].as_f64().unwrap());
            assert_eq!(a.vs_baseline.speed_gain_words, o["speed_ratio_words"].as_str().unwrap());
            assert_eq!(
                serde_json::to_value(a.vs_baseline.speed_gain_direction).unwrap(),
                o["speed_ratio_direction"]
            );
            assert_eq!(
                a.vs_baseline.max_probability_diff,
                o["max_probability_diff_vs_baseline"].as_f64().unwrap()
            );
            assert_eq!(
                a.vs_baseline.answer_mismatches as u64,
                o["answer_mismatches_vs_baseline"].as_u64().unwrap()
            );
            assert_eq!(serde_json::to_value(a.intervals.speed_gain).unwrap(), o["speed_ratio_interval"]);
            assert!(a.intervals.missing.is_empty());
        }
        assert_eq!(r.arms[1].vs_baseline.speed_gain_direction, Some(Direction::Above));
        // Written again, it is schema 2: no flat name is left, and it reads back the same.
        let again = serde_json::to_value(&r).unwrap();
        for (flat, _) in SCHEMA_1_NAMES {
            assert!(again["arms"][1].get(flat).is_none(), "{flat}");
        }
        assert_eq!(again["arms"][1]["totals"]["time_s"], old["arms"][1]["total_s"]);
        assert_eq!(serde_json::from_value::<SpeedReport>(again).unwrap(), r);
    }

    /// A schema-1 arm without an interval keeps its reason, and one written before `decisions`
    /// reads 0 decisions, as schema 1 did.
    #[test]
    fn a_schema_1_arm_without_an_interval_or_decisions_reads() {
        let mut old: Value = serde_json::from_str(SCHEMA_1).unwrap();
        let arm = old["arms"][1].as_object_mut().unwrap();
        arm.remove("speed_ratio_interval");
        arm.remove("decisions");
        arm.insert("speed_ratio_interval_missing_reason".into(), "1 whole balanced cycle".into());
        let r: SpeedReport = serde_json::from_value(old).unwrap();
        let a = &r.arms[1];
        assert_eq!((a.totals.decisions, a.intervals.speed_gain), (0, None));
        assert_eq!(a.intervals.missing.get("speed_gain").map(String::as_str), Some("1 whole balanced cycle"));
        assert!(r.markdown().contains("No CI: 1 whole balanced cycle."));
    }

    #[test]
    fn the_bracket_is_named_by_its_distinct_resamples() {
        assert_eq!(
            interval_note(3, false),
            "The bracket is a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0), but 3 whole cycles have only 10 distinct resamples: it is the range of 10 possible resamples, not a 95 % interval."
        );
        assert!(interval_note(10, true).starts_with("The 95 % CI is a seeded percentile bootstrap"));
    }
}
