//! The `summary` report (schema_version 1): the audit of one or more raw records, their
//! statistics with bootstrap intervals, the claim rule, corrections and a side-by-side
//! comparison; exported as JSON, Markdown (the published-style table) and CSV (one row per
//! block). A missing value is `null` with a reason, never 0.

use crate::report::render::Render;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::energy::reject::SeriesSummary;
use crate::energy::run::{Aggregate, Ratios, RejectionDetail};
use crate::energy::BlockEnergy;
use crate::host::HostInfo;
use crate::power::PowerBoundary;
use crate::record::provenance::ToolInfo;
use crate::record::{PlanInfo, WorkloadInfo};
use crate::report::context::{RowContext, CSV_COLUMNS};
use crate::report::energy::RATIO_RULE;
use crate::report::format::{count, csv_field, csv_num, missing_markdown, num};
pub use crate::report::{ArmIntervals, Interval};
use crate::stats::LatencySummary;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// What the idle-subtracted figures are, printed wherever they appear, for a run whose sensor
/// measures `boundary`.
pub fn idle_boundary(boundary: &PowerBoundary) -> String {
    format!(
        "Idle-subtracted energy is energy above the mean of the two adjacent stable idle windows, kept with its sign: a different boundary from {}. A larger idle-subtracted gain does not mean the measured boundary draws that much less, and the claim rule never uses it.",
        boundary.noun("energy")
    )
}

/// How a summarized run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryStatus {
    /// Every audit check passed and no rule rejected the samples.
    Complete,
    /// A rejection rule holds on the samples: no energy figure of this run may be used.
    Rejected,
    /// The record has no footer, or its footer says it was interrupted.
    Incomplete,
    /// The run's footer says it failed.
    Failed,
    /// The record does not hold up: an audit check failed, so no figure is derived from it.
    AuditFailed,
}

impl SummaryStatus {
    /// The status word.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryStatus::Complete => "complete",
            SummaryStatus::Rejected => "rejected",
            SummaryStatus::Incomplete => "incomplete",
            SummaryStatus::Failed => "failed",
            SummaryStatus::AuditFailed => "audit_failed",
        }
    }
}

/// The result of one audit check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    /// The record holds up.
    Pass,
    /// It does not; `detail` says where.
    Fail,
    /// Not applicable to this record (e.g. energy checks on a speed record).
    NotApplicable,
}

impl CheckOutcome {
    /// How the Markdown tables show it.
    pub fn word(self) -> &'static str {
        match self {
            CheckOutcome::Pass => "pass",
            CheckOutcome::Fail => "**FAIL**",
            CheckOutcome::NotApplicable => "n/a",
        }
    }
}

/// One named audit check with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditCheck {
    /// The check (`header_and_footer`, `balanced_cycles`, ...).
    pub name: String,
    /// Pass, fail or not applicable.
    pub outcome: CheckOutcome,
    /// What was checked and, on failure, where it failed.
    pub detail: String,
    /// The numbers behind it (counts, largest relative difference, ...).
    pub numbers: BTreeMap<String, f64>,
}

/// One arm's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    /// Arm name.
    pub name: String,
    /// Backend spec.
    pub spec: String,
    /// Decisions, t, P, E = P × t, idle-subtracted energy (re-derived from the raw samples).
    pub totals: Aggregate,
    /// Per-call latency over the full boundary.
    pub latency: Option<LatencySummary>,
    /// Calls whose result differed from the arm's warm-up result.
    pub unstable_calls: u64,
    /// S, R, S × R against the baseline.
    pub vs_baseline: Ratios,
    /// Bootstrap intervals.
    pub intervals: ArmIntervals,
    /// An earlier arm this one is the same model as (same weights on the same engine): its
    /// ratios compare one model with itself, the run's noise. Absent otherwise, and in
    /// summaries written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identical_to: Option<String>,
    /// Its warm-up answers against the baseline's, from the record's `warmup` results (absent
    /// for the baseline and where the record keeps none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_vs_baseline: Option<crate::report::answers::AnswersVsBaseline>,
}

/// One block, re-derived from the raw record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockSummary {
    /// Block index.
    pub index: u32,
    /// Balanced cycle.
    pub cycle: u32,
    /// Arm name.
    pub arm: String,
    /// Start, s since the origin.
    pub start_s: f64,
    /// End, s since the origin.
    pub end_s: f64,
    /// Decisions (calls).
    pub decisions: u64,
    /// The block's time, s: its wall time from the integer ns stamps (as `energy` computes
    /// it), except in a speed record of an arm that timed itself (a `ref:` arm), where it is
    /// `runtime_s`, as `speed` reports it.
    pub time_s: f64,
    /// `time_s` / decisions, s.
    pub time_per_decision_s: Option<f64>,
    /// Σ the runtime's own durations of the block's calls (a `ref:` arm: its predict timed
    /// in its worker), s; `null` for arms that do not time themselves.
    #[serde(default)]
    pub runtime_s: Option<f64>,
    /// Block wall time, s (the round trips of a `ref:` arm, and what its energy spans).
    pub wall_s: f64,
    /// Energy recomputed from the samples (`None` with `energy_missing_reason`).
    pub energy: Option<BlockEnergy>,
    /// Why `energy` is `None`.
    pub energy_missing_reason: Option<String>,
    /// Block energy / decisions, J.
    pub energy_per_decision_j: Option<f64>,
    /// Calls whose result differed from warm-up.
    pub unstable_calls: u64,
    /// Cut short.
    pub ended_early: bool,
}

/// The bootstrap as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInfo {
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Balanced cycles resampled (whole cycles, with replacement).
    pub cycles: usize,
    /// Distinct resamples that exist (multisets of cycles).
    pub distinct_resamples: f64,
    /// Central interval level (0.95: the 2.5th and 97.5th percentiles).
    pub level: f64,
}

/// A pass/fail gate of the claim rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// Whether it passed.
    pub passed: bool,
    /// Why, with the numbers.
    pub detail: String,
}

/// The claim rule applied to one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmClaim {
    /// Arm name.
    pub arm: String,
    /// Whether the target is reached: lower bound ≥ target and both gates pass.
    pub reached: bool,
    /// Measured energy gain S × R.
    pub energy_gain: Option<f64>,
    /// Its bootstrap interval.
    pub energy_gain_interval: Option<Interval>,
    /// Lower bound ≥ target.
    pub lower_bound_reaches_target: bool,
    /// Latency gate.
    pub latency_gate: Gate,
    /// Stability gate.
    pub stability_gate: Gate,
    /// Idle-subtracted energy gain (reported separately, never used for the claim).
    pub idle_subtracted_energy_gain: Option<f64>,
    /// Its interval.
    pub idle_subtracted_energy_gain_interval: Option<Interval>,
    /// The sentence to report.
    pub statement: String,
}

/// The claim rule for `--target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// The target energy gain.
    pub target: f64,
    /// The rule in words.
    pub rule: String,
    /// Per non-baseline arm.
    pub arms: Vec<ArmClaim>,
}

/// A metadata correction appended to the raw record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    /// When it was appended, Unix seconds.
    pub timestamp_unix_s: f64,
    /// The header field it corrects.
    pub field: String,
    /// The note.
    pub note: String,
}

/// One raw record summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The raw file.
    pub source: String,
    /// `speed` or `energy`.
    pub kind: String,
    /// How it stands.
    pub status: SummaryStatus,
    /// Why it is not complete (each reason in words).
    pub status_reasons: Vec<String>,
    /// Every rejection rule the samples violate (re-checked on the samples).
    pub rejections: Vec<RejectionDetail>,
    /// Writer of the raw record.
    pub tool: ToolInfo,
    /// Machine it ran on.
    pub host: HostInfo,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
    /// The sensor spec, when an energy run.
    pub sensor_spec: Option<String>,
    /// Whether the sensor was live (`false`: replayed or scripted readings).
    pub sensor_live: Option<bool>,
    /// What the sensor's total measures (the raw header's `power_boundary`, else derived from
    /// its sensor kind): every power and energy figure is of this boundary.
    #[serde(default)]
    pub power_boundary: PowerBoundary,
    /// Corrections appended to the raw record, in order.
    pub metadata_corrections: Vec<Correction>,
    /// Every audit check.
    pub audit: Vec<AuditCheck>,
    /// `--whole-cycles` on an incomplete record: the whole cycles used and their own audit.
    /// When `usable`, `plan`, `blocks`, `arms` and the intervals cover only those cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_cycles: Option<WholeCycles>,
    /// Sample count, longest gap, power range (energy runs that were not rejected).
    pub samples: Option<SeriesSummary>,
    /// The baseline arm.
    pub baseline: String,
    /// Per arm (empty when the record is not summarized: see `statistics_missing_reason`).
    pub arms: Vec<ArmSummary>,
    /// Why `arms` is empty.
    pub statistics_missing_reason: Option<String>,
    /// Per block, in run order.
    pub blocks: Vec<BlockSummary>,
    /// The sensor's total against the same quantity read another way, recomputed from the
    /// raw samples (NVML's counter next to its power); absent when the sensor records none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_check: Option<crate::energy::cross::CrossCheck>,
    /// The sampling re-derived from the raw samples: the realized interval (median and largest
    /// gap) beside the requested one, and the samples strictly inside each block and stable
    /// idle window (energy records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<crate::energy::sampling::SamplingAudit>,
    /// The bootstrap, when it ran.
    pub bootstrap: Option<BootstrapInfo>,
    /// Why it did not.
    pub bootstrap_missing_reason: Option<String>,
    /// The claim rule, when `--target` was given.
    pub claim: Option<Claim>,
    /// What the reader must keep in mind (few cycles, replayed sensor, ...).
    pub warnings: Vec<String>,
    /// The model, machine, tool and date every exported row carries (from the raw header);
    /// empty in summaries written before it.
    #[serde(default)]
    pub row_context: RowContext,
}

/// The whole balanced cycles of an incomplete record, summarized as a run of that many
/// cycles (`summary --whole-cycles`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeCycles {
    /// Whole cycles at the start of the record, used.
    pub cycles_used: usize,
    /// Cycles the run's plan had.
    pub cycles_planned: usize,
    /// Blocks of those cycles.
    pub blocks_used: usize,
    /// Blocks the record holds (the cut one included).
    pub blocks_recorded: usize,
    /// Whether their audit passed and no rule rejected their samples: the figures are theirs.
    pub usable: bool,
    /// Their audit: `whole_cycles` first, then the checks of a whole record.
    pub audit: Vec<AuditCheck>,
}

/// One quantity of one arm across runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedValue {
    /// The run's raw file.
    pub source: String,
    /// Point estimate.
    pub value: Option<f64>,
    /// Bootstrap interval.
    pub interval: Option<Interval>,
}

/// One arm's quantity side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// Arm name.
    pub arm: String,
    /// `speed_gain`, `power_ratio`, `energy_gain`, `energy_per_decision_j`, ...
    pub quantity: String,
    /// Per run, in input order.
    pub runs: Vec<ComparedValue>,
    /// Pairs of runs (input indices) whose intervals do not overlap.
    pub non_overlapping: Vec<(usize, usize)>,
    /// Why overlap could not be judged (a run lacks the interval).
    pub overlap_missing_reason: Option<String>,
}

/// Several runs of the same arms side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The arms every run has.
    pub arms: Vec<String>,
    /// One row per arm and quantity.
    pub rows: Vec<ComparisonRow>,
    /// Whether any two runs' intervals fail to overlap for any quantity.
    pub intervals_disjoint: bool,
}

/// A picture written by `--plots`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlotFile {
    /// Index of the run in `runs`.
    pub run: usize,
    /// `power_timeline`, `latency_cdf` or `energy_per_block`.
    pub kind: String,
    /// The file, as linked from the Markdown.
    pub path: String,
}

/// The settings the summary ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummarySettings {
    /// Bootstrap resamples (`--bootstrap`).
    pub bootstrap_resamples: usize,
    /// Seed (`--seed`).
    pub seed: u64,
    /// Interval level.
    pub level: f64,
    /// Target energy gain (`--target`).
    pub target: Option<f64>,
    /// Baseline arm asked for (`--baseline`); `None`: each record's first arm.
    pub baseline: Option<String>,
}

/// The `summary` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryReport {
    /// Report schema version.
    pub schema_version: u32,
    /// Writer.
    pub tool: ToolInfo,
    /// Settings.
    pub settings: SummarySettings,
    /// One per raw record, in input order.
    pub runs: Vec<RunSummary>,
    /// Side by side, when several records were given.
    pub comparison: Option<Comparison>,
    /// Each run against `--baseline-record` (the regression gate); empty without it. Absent in
    /// summaries written without it (additive, no version bump).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regression: Vec<crate::summary::regression::Regression>,
    /// Pictures written (`--plots`).
    pub plots: Vec<PlotFile>,
}

/// What a speed record's Markdown says instead of its energy rows.
const SPEED_ONLY: &str = "A speed record has no power samples, so no power or energy figure is shown (run `laya-bench energy` for them).";

/// The figures a speed record has; its Markdown leaves out the others (power and energy).
const TIME_QUANTITIES: [&str; 2] = ["time_per_decision_s", "speed_gain"];

/// `value [low–high]`, or `n/a`.
fn with_interval(v: Option<f64>, i: Option<&Interval>, digits: usize, scale: f64) -> String {
    let v = num(v.map(|x| x * scale), digits);
    match i {
        Some(i) => format!("{v} [{:.digits$}–{:.digits$}]", i.low * scale, i.high * scale),
        None => v,
    }
}

/// A Markdown table of audit checks under `title`, with a blank line after it.
fn audit_table(title: &str, checks: &[AuditCheck]) -> String {
    let mut out = format!("{title}\n\n| Check | Result | Detail |\n|:---|:---|:---|\n");
    for c in checks {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            c.name,
            c.outcome.word(),
            c.detail.replace('|', "\\|")
        ));
    }
    out.push('\n');
    out
}

impl RunSummary {
    /// This run's Markdown section.
    pub fn to_markdown(&self, level: f64) -> String {
        let mut out = format!("## Summary of `{}`: {}\n\n", self.source, self.status.as_str().to_uppercase());
        match self.status {
            SummaryStatus::Complete => {}
            SummaryStatus::Rejected => out.push_str("**REJECTED**: the energy figures of this run must not be used; its recorded energy aggregates were not used. The raw record keeps every sample unchanged.\n\n"),
            SummaryStatus::Incomplete => match self.whole_cycles.as_ref().filter(|w| w.usable) {
                Some(w) => out.push_str(&format!(
                    "**INCOMPLETE**: the record does not hold a finished run; the figures below cover its {} of {} planned (`--whole-cycles`), audited as a run of {}.\n\n",
                    crate::report::first_cycles(w.cycles_used),
                    w.cycles_planned,
                    count(w.cycles_used, "cycle", "cycles")
                )),
                None => out.push_str("**INCOMPLETE**: the record does not hold a finished run; no figure is derived from it.\n\n"),
            },
            SummaryStatus::Failed => out.push_str("**FAILED**: the run failed; no figure is derived from it.\n\n"),
            SummaryStatus::AuditFailed => out.push_str("**AUDIT FAILED**: the record does not hold up (see the failed checks); no figure is derived from it.\n\n"),
        }
        for r in &self.status_reasons {
            out.push_str(&format!("- {r}\n"));
        }
        if !self.status_reasons.is_empty() {
            out.push('\n');
        }
        if !self.rejections.is_empty() {
            out.push_str(&format!("Rejections ({}):\n\n", self.rejections.len()));
            for r in &self.rejections {
                out.push_str(&format!("- {}\n", r.message));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "`{}` record by {} {} ({}), workload `{}`, {}, {}; host {} {} ({} CPUs).",
            self.kind,
            self.tool.name,
            self.tool.version,
            self.tool.git_revision,
            self.workload.name,
            count(self.plan.cycles, "balanced cycle", "balanced cycles"),
            count(self.blocks.len(), "block", "blocks"),
            self.host.os,
            self.host.arch,
            self.host.logical_cpus
        ));
        if let Some(spec) = &self.sensor_spec {
            let live = if self.sensor_live == Some(true) { "live" } else { "NOT A LIVE MEASUREMENT" };
            out.push_str(&format!(" Sensor `{spec}` ({live})."));
            out.push_str(&format!(" {}", crate::report::energy::boundary_line(&self.power_boundary)));
        }
        if let Some(s) = &self.samples {
            out.push_str(&format!(
                " {} samples, max gap {} s, power {}–{} W.",
                s.count,
                num(s.max_gap_s, 3),
                num(s.min_watts, 2),
                num(s.max_watts, 2)
            ));
        }
        if let Some(s) = &self.sampling {
            out.push_str(&format!(" {}", s.sentence()));
        }
        out.push_str(&audit_table("\n\n### Audit", &self.audit));
        if let Some(w) = &self.whole_cycles {
            let title =
                format!("### Audit of the {} (`--whole-cycles`)", crate::report::first_cycles(w.cycles_used));
            out.push_str(&audit_table(&title, &w.audit));
        }
        if self.arms.is_empty() {
            if let Some(r) = &self.statistics_missing_reason {
                out.push_str(&format!("No statistics: {r}\n\n"));
            }
        } else {
            out.push_str(&self.table_markdown(level));
            if let Some(r) = &self.bootstrap_missing_reason {
                out.push_str(&format!("No bootstrap intervals: {r}.\n\n"));
            }
        }
        if let Some(c) = &self.cross_check {
            out.push_str("### Sensor cross-check\n\n");
            out.push_str(&crate::report::energy::cross_check_markdown(c));
            out.push('\n');
        }
        if let Some(c) = &self.claim {
            out.push_str(&format!("### Claim rule (target {}×)\n\n{}\n\n", c.target, c.rule));
            for a in &c.arms {
                out.push_str(&format!("- `{}`: {}\n", a.arm, a.statement));
            }
            out.push('\n');
        }
        if !self.warnings.is_empty() {
            out.push_str("### Warnings\n\n");
            for w in &self.warnings {
                out.push_str(&format!("- {w}\n"));
            }
            out.push('\n');
        }
        if !self.metadata_corrections.is_empty() {
            out.push_str("### Metadata corrections (appended; the original fields are unchanged)\n\n");
            for c in &self.metadata_corrections {
                out.push_str(&format!("- `{}` (at Unix {:.0} s): {}\n", c.field, c.timestamp_unix_s, c.note));
            }
            out.push('\n');
        }
        out
    }

    /// The published-style table: one column per arm.
    fn table_markdown(&self, level: f64) -> String {
        let mut out = String::new();
        let pct = format!("{:.0} %", level * 100.0);
        let few =
            self.bootstrap.as_ref().filter(|b| !crate::stats::resamples::names_a_level_interval(b.cycles));
        let intervals = match (&self.bootstrap_missing_reason, few) {
            (None, Some(b)) => format!("; [{}]", crate::stats::resamples::interval_name(b.cycles, level)),
            (None, None) => format!("; [{pct} bootstrap interval]"),
            (Some(_), _) => "; no intervals (see below)".to_string(),
        };
        out.push_str(&format!("### Results (baseline `{}`{intervals})\n\n", self.baseline));
        out.push_str(&self.row_context.markdown_line());
        out.push_str("| metric |");
        for a in &self.arms {
            match &a.identical_to {
                Some(same) => out.push_str(&format!(
                    " `{}`{} |",
                    a.name,
                    crate::report::speed::identical_mark(same, &self.baseline)
                )),
                None => out.push_str(&format!(" `{}` |", a.name)),
            }
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(self.arms.len()));
        out.push('\n');
        let mut row = |label: &str, cell: &dyn Fn(&ArmSummary) -> String| {
            out.push_str(&format!("| {label} |"));
            for a in &self.arms {
                out.push_str(&format!(" {} |", cell(a)));
            }
            out.push('\n');
        };
        // What tells the arms of different runs apart: the model, its precision and batch,
        // the threads and where it ran.
        let cx = &self.row_context;
        for (i, label) in ["model", "precision", "batch", "threads", "CPU/GPU"].into_iter().enumerate() {
            row(label, &|a| cx.markdown_cells(&a.name)[i].clone());
        }
        row("P50 / P95 / P99", &|a| match &a.latency {
            Some(l) => format!("{:.2} / {:.2} / {:.2} ms", l.p50_s * 1e3, l.p95_s * 1e3, l.p99_s * 1e3),
            None => "n/a".into(),
        });
        row("decisions", &|a| a.totals.decisions.to_string());
        row("t per decision [ms]", &|a| {
            with_interval(a.totals.time_per_decision_s, a.intervals.time_per_decision_s.as_ref(), 3, 1e3)
        });
        let b = &self.power_boundary;
        // A speed record has no power samples: its energy rows would be n/a throughout, so
        // they are left out, with one sentence saying why.
        let energy = self.kind != "speed";
        if energy {
            row(&format!("mean {}", b.label("power", "W")), &|a| {
                with_interval(a.totals.mean_power_w, a.intervals.mean_power_w.as_ref(), 2, 1.0)
            });
            row(&b.label("energy / decision", "J"), &|a| {
                with_interval(
                    a.totals.energy_per_decision_j,
                    a.intervals.energy_per_decision_j.as_ref(),
                    4,
                    1.0,
                )
            });
        }
        row("speed gain S", &|a| {
            with_interval(a.vs_baseline.speed_gain, a.intervals.speed_gain.as_ref(), 3, 1.0)
        });
        if energy {
            row("power ratio R", &|a| {
                with_interval(a.vs_baseline.power_ratio, a.intervals.power_ratio.as_ref(), 3, 1.0)
            });
            row("energy gain S × R", &|a| {
                with_interval(a.vs_baseline.energy_gain, a.intervals.energy_gain.as_ref(), 3, 1.0)
            });
            row("idle-subtracted energy gain (different boundary)", &|a| {
                with_interval(
                    a.vs_baseline.idle_subtracted_energy_gain,
                    a.intervals.idle_subtracted_energy_gain.as_ref(),
                    2,
                    1.0,
                )
            });
        }
        row("unstable calls", &|a| a.unstable_calls.to_string());
        if energy {
            out.push_str(&format!("\n{RATIO_RULE}\n\n{}\n\n", idle_boundary(b)));
        } else {
            out.push_str(&format!("\nS = t_base / t_arm (speed gain). {SPEED_ONLY}\n\n"));
        }
        let answers = crate::report::answers::line(
            &self.baseline,
            self.arms.iter().map(|a| (a.name.as_str(), a.answers_vs_baseline.as_ref())),
        );
        if !answers.is_empty() {
            out.push_str(&answers);
            out.push('\n');
        }
        let arms: Vec<(&str, Vec<(&str, &str)>)> = self
            .arms
            .iter()
            .map(|a| {
                let all = a.totals.missing.iter().chain(&a.vs_baseline.missing).chain(&a.intervals.missing);
                let shown = all.filter(|(f, _)| energy || TIME_QUANTITIES.contains(&f.as_str()));
                (a.name.as_str(), shown.map(|(f, why)| (f.as_str(), why.as_str())).collect())
            })
            .collect();
        out.push_str(&missing_markdown(&arms));
        out
    }
}

/// How a compared quantity is shown: the label of the per-run table, decimals and scale. Power
/// and energy are labelled by the runs' boundary, `boundary`, when they share one; `None` (they
/// differ) says so.
fn quantity_display(quantity: &str, boundary: Option<&PowerBoundary>) -> (String, usize, f64) {
    let by_boundary = |q: &str, unit: &str| match boundary {
        Some(b) => b.label(q, unit),
        None => format!("{q} [{unit}] (the runs' boundaries differ)"),
    };
    match quantity {
        "time_per_decision_s" => ("t per decision [ms]".into(), 3, 1000.0),
        "mean_power_w" => (format!("mean {}", by_boundary("power", "W")), 2, 1.0),
        "energy_per_decision_j" => (by_boundary("energy / decision", "J"), 4, 1.0),
        "speed_gain" => ("speed gain S".into(), 3, 1.0),
        "power_ratio" => ("power ratio R".into(), 3, 1.0),
        "energy_gain" => ("energy gain S × R".into(), 3, 1.0),
        other => (other.into(), 4, 1.0),
    }
}

/// The IDENTICAL mark of `arm` in the side-by-side table: the runs in which it is the same
/// model as an earlier arm, and which (` · IDENTICAL to `f32` (same model) in runs 0, 1`); empty
/// where it is identical in none.
pub(crate) fn identical_in_runs(arm: &str, runs: &[RunSummary]) -> String {
    let mut marks: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let Some(same) = r.arms.iter().find(|a| a.name == arm).and_then(|a| a.identical_to.as_ref()) else {
            continue;
        };
        match marks.iter_mut().find(|(s, _)| s == same) {
            Some((_, ids)) => ids.push(i),
            None => marks.push((same.clone(), vec![i])),
        }
    }
    marks
        .iter()
        .map(|(same, ids)| {
            let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            let runs_word = if ids.len() == 1 { "run" } else { "runs" };
            format!(" · IDENTICAL to `{same}` (same model) in {runs_word} {}", ids.join(", "))
        })
        .collect()
}

impl Comparison {
    /// Markdown: one table per quantity, runs as columns, disjoint intervals flagged.
    pub fn to_markdown(&self, runs: &[RunSummary]) -> String {
        let mut out = String::from("## Runs side by side\n\n");
        if self.intervals_disjoint {
            out.push_str("**Intervals do not overlap** for at least one figure (marked ⚠): the runs disagree beyond their bootstrap intervals; background load or conditions differed.\n\n");
        } else {
            out.push_str("Every pair of intervals that could be formed overlaps.\n\n");
        }
        out.push_str("| arm | quantity |");
        for (i, r) in runs.iter().enumerate() {
            out.push_str(&format!(" run {i} (`{}`) |", r.source));
        }
        out.push_str(" intervals |\n|:---|:---|");
        out.push_str(&"---:|".repeat(runs.len()));
        out.push_str(":---|\n");
        let boundary =
            runs.first().map(|r| &r.power_boundary).filter(|b| runs.iter().all(|r| &r.power_boundary == *b));
        // Speed records only: their power and energy rows would be n/a throughout.
        let energy = runs.iter().any(|r| r.kind != "speed");
        for row in self.rows.iter().filter(|r| energy || TIME_QUANTITIES.contains(&r.quantity.as_str())) {
            let (label, digits, scale) = quantity_display(&row.quantity, boundary);
            out.push_str(&format!("| `{}`{} | {label} |", row.arm, identical_in_runs(&row.arm, runs)));
            for v in &row.runs {
                out.push_str(&format!(" {} |", with_interval(v.value, v.interval.as_ref(), digits, scale)));
            }
            let verdict = match (&row.overlap_missing_reason, row.non_overlapping.is_empty()) {
                (Some(why), _) => format!("n/a ({why})"),
                (None, true) => "overlap".into(),
                (None, false) => {
                    let pairs: Vec<String> =
                        row.non_overlapping.iter().map(|(a, b)| format!("{a}–{b}")).collect();
                    format!("⚠ disjoint: runs {}", pairs.join(", "))
                }
            };
            out.push_str(&format!(" {verdict} |\n"));
        }
        out.push('\n');
        out
    }
}

impl Render for SummaryReport {
    /// The Markdown table, printed as it is.
    fn terminal(&self) -> String {
        self.markdown()
    }

    /// Markdown: per run the status, audit, published-style table with intervals, claim,
    /// corrections and pictures; then the comparison.
    fn markdown(&self) -> String {
        let mut out = String::new();
        for (i, run) in self.runs.iter().enumerate() {
            out.push_str(&run.to_markdown(self.settings.level));
            let plots: Vec<&PlotFile> = self.plots.iter().filter(|p| p.run == i).collect();
            if !plots.is_empty() {
                out.push_str("### Pictures\n\n");
                for p in plots {
                    out.push_str(&format!(
                        "![{} of {}]({})\n\n",
                        p.kind.replace('_', " "),
                        run.source,
                        p.path
                    ));
                }
            }
        }
        if let Some(c) = &self.comparison {
            out.push_str(&c.to_markdown(&self.runs));
        }
        for r in &self.regression {
            out.push_str(&r.to_markdown());
        }
        out
    }

    /// CSV: one row per block of every run, the run's context ([`RowContext::csv_cells`])
    /// after the arm's name; empty cells are missing values.
    fn csv(&self) -> Option<String> {
        let mut out = format!(
            "run,source,status,block,cycle,arm,{CSV_COLUMNS},decisions,start_s,end_s,time_s,time_per_decision_s,energy_j,mean_power_w,energy_per_decision_j,idle_before_w,idle_after_w,idle_power_w,idle_subtracted_energy_j,unstable_calls,ended_early,energy_missing_reason,power_boundary,identical_to\n",
        );
        for (i, run) in self.runs.iter().enumerate() {
            for b in &run.blocks {
                let e = b.energy.as_ref();
                let same = run.arms.iter().find(|a| a.name == b.arm).and_then(|a| a.identical_to.as_deref());
                out.push_str(&format!(
                    "{i},{},{},{},{},{},{}{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    csv_field(&run.source),
                    run.status.as_str(),
                    b.index,
                    b.cycle,
                    csv_field(&b.arm),
                    run.row_context.csv_cells(&b.arm),
                    b.decisions,
                    b.start_s,
                    b.end_s,
                    b.time_s,
                    csv_num(b.time_per_decision_s),
                    csv_num(e.map(|e| e.energy_j)),
                    csv_num(e.map(|e| e.mean_power_w)),
                    csv_num(b.energy_per_decision_j),
                    csv_num(e.map(|e| e.idle_before.power_w)),
                    csv_num(e.map(|e| e.idle_after.power_w)),
                    csv_num(e.map(|e| e.idle_power_w)),
                    csv_num(e.map(|e| e.incremental_energy_j)),
                    b.unstable_calls,
                    b.ended_early,
                    csv_field(b.energy_missing_reason.as_deref().unwrap_or("")),
                    csv_field(&run.power_boundary.name()),
                    csv_field(same.unwrap_or("")),
                ));
            }
        }
        Some(out)
    }
}
