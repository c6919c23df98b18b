//! The `energy` report (schema_version 1) and its Markdown and CSV exports.
//!
//! Per arm and per block: decisions, mean time per decision t, mean power P, energy per
//! decision E = P × t, active and idle-subtracted energy; per arm the ratios against the
//! baseline S = t_base / t_arm, R = P_base / P_arm and S × R = E_base / E_arm. A missing value
//! is `null` with a reason in `missing`, never 0. A rejected run carries every reason and no
//! energy figure at all.

use super::render::Render;
use super::ArmIntervals;
use serde::{Deserialize, Serialize};

use super::context::{RowContext, CSV_COLUMNS, MARKDOWN_ALIGN, MARKDOWN_COLUMNS};
use super::format::{count, csv_field, csv_num, interval_bracket, missing_markdown, ms, num};
use super::speed::{identical_mark, BOOTSTRAP_METHOD};
use crate::energy::reject::SeriesSummary;
use crate::energy::run::{Aggregate, Ratios, RejectionDetail, SeriesKind};
use crate::host::HostInfo;
use crate::power::sampler::SamplerReport;
use crate::power::{PowerBoundary, SensorInfo};
use crate::record::model::ModelInfo;
use crate::record::provenance::ToolInfo;
pub use crate::record::status::RunStatus;
use crate::record::{ArmInfo, EnergyPlanInfo, PlanInfo, WorkloadInfo};
use crate::stats::LatencySummary;

/// Current report schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The wording rule printed with every ratio table.
pub const RATIO_RULE: &str = "S = t_base / t_arm (speed gain), R = P_base / P_arm (power ratio), S × R = E_base / E_arm (energy gain). E = P × t already contains the time, so multiplying S × R by S again double-counts time.";

/// One arm's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyArm {
    /// The arm.
    pub arm: ArmInfo,
    /// Sums over its blocks: decisions, t, P, E = P × t, active and idle-subtracted energy.
    pub totals: Aggregate,
    /// Per-call latency over the full boundary (`None` without calls).
    pub latency: Option<LatencySummary>,
    /// Calls whose result differed from the arm's warm-up result.
    pub unstable_calls: u64,
    /// Equal-load mode: calls that ended after the next call was due (absent when saturated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_deadlines: Option<u64>,
    /// S, R and S × R against the first arm (the baseline).
    pub vs_baseline: Ratios,
    /// Bootstrap intervals of t, P, E and the ratios: the seeded percentile bootstrap over whole
    /// balanced cycles that `summary` uses and `speed` prints beside S (10,000 resamples, seed 0,
    /// 95 %); a `null` has its reason in `missing`. Empty in reports written before it.
    #[serde(default)]
    pub intervals: ArmIntervals,
    /// The earlier arm this one is the same model as (same weights, same engine): its ratios
    /// compare one model with itself, the run's noise. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identical_to: Option<String>,
    /// Its warm-up answers against the baseline's, by what both results carry (absent for the
    /// baseline and in reports written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_vs_baseline: Option<super::answers::AnswersVsBaseline>,
}

/// One block's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyBlock {
    /// Block index.
    pub index: u32,
    /// Balanced cycle.
    pub cycle: u32,
    /// Arm name.
    pub arm: String,
    /// Start, seconds since the origin.
    pub start_s: f64,
    /// End, seconds since the origin.
    pub end_s: f64,
    /// Decisions, t, P, E and idle figures of this block alone.
    pub totals: Aggregate,
    /// Idle power of the stable idle window before the block, W.
    pub idle_before_w: Option<f64>,
    /// Idle power of the stable idle window after the block, W.
    pub idle_after_w: Option<f64>,
    /// Resident memory after the block (the shared process, all models resident), bytes.
    pub rss_bytes: Option<u64>,
    /// Equal-load mode: calls that missed their deadline (absent when saturated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_deadlines: Option<u64>,
    /// Calls whose result differed from warm-up.
    pub unstable_calls: u64,
    /// Cut short (interrupt, sensor stopped, failed call).
    pub ended_early: bool,
    /// CPU time the hypervisor gave to other guests during the block, and all CPU time then
    /// (every CPU, `USER_HZ` ticks); absent where the OS keeps no such counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal: Option<crate::report::steal::StealTicks>,
}

/// The final `energy` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyReport {
    /// Report schema version. With `tool` and `host` it is filled from one
    /// [`crate::record::provenance::Provenance`]; the status fields sit between them in the JSON, so
    /// they stay three fields rather than one flattened one.
    pub schema_version: u32,
    /// `complete`, `rejected`, `incomplete` or `failed`.
    pub status: RunStatus,
    /// Why the run is not complete, in words (`None` when complete).
    pub status_reason: Option<String>,
    /// Every rule the samples violated, with the samples' raw values.
    pub rejections: Vec<RejectionDetail>,
    /// Writer.
    pub tool: ToolInfo,
    /// Machine.
    pub host: HostInfo,
    /// Model spec and shape.
    pub model: ModelInfo,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
    /// Energy protocol settings.
    pub energy_plan: EnergyPlanInfo,
    /// The sensor (`live: false` for replayed or scripted readings).
    pub sensor: SensorInfo,
    /// What the sensor's total measures: every power and energy figure is of this boundary
    /// (`unknown` when reading a report older than the field).
    #[serde(default)]
    pub power_boundary: PowerBoundary,
    /// The sampler's own report (counts, CPU time, why it stopped).
    pub sampler: Option<SamplerReport>,
    /// Sampler thread CPU time / wall time.
    pub sampler_cpu_fraction: Option<f64>,
    /// The series the sensor gave.
    pub series: SeriesKind,
    /// Sample count, longest gap and power range (`None` when rejected).
    pub samples: Option<SeriesSummary>,
    /// Raw record this report derives from.
    pub raw_path: Option<String>,
    /// Per arm, baseline first.
    pub arms: Vec<EnergyArm>,
    /// Per block, in run order.
    pub blocks: Vec<EnergyBlock>,
    /// The sensor's total against the same quantity read another way, per block (NVML: the
    /// energy counter next to board power); absent when the sensor records no such channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_check: Option<crate::energy::cross::CrossCheck>,
    /// The sampling the run got: the realized interval (median and largest gap,
    /// `realized_sample_interval_median_s`, `realized_sample_interval_max_s`) beside the
    /// requested one, and the samples strictly inside each block and stable idle window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<crate::energy::sampling::SamplingAudit>,
    /// Every call of every arm matched its warm-up result.
    pub stable: bool,
    /// An interrupted run's whole balanced cycles from the start, which its figures cover (the
    /// blocks of the cut cycle left out); absent for a run whose figures are its own (a
    /// complete run), or that gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_cycles: Option<usize>,
    /// Reading rules and caveats (the ratio wording rule, idle-subtraction boundary, ...).
    pub notes: Vec<String>,
    /// The model, machine, tool and date every exported row carries (from the raw header);
    /// empty in reports written before it.
    #[serde(default)]
    pub row_context: RowContext,
}

/// The ratios the arm table shows with their intervals: (column, field name).
const RATIO_COLUMNS: [(&str, &str); 3] = [("S", "speed_gain"), ("R", "power_ratio"), ("S×R", "energy_gain")];

impl EnergyReport {
    /// What the run's status means for its user, printed after its results: `None` for a
    /// complete, stable run; otherwise why the figures must not be used (rejected: the first ten
    /// rules broken), cover less than the plan (incomplete: how to audit the whole cycles), or
    /// are missing (failed), naming the raw record `raw` and the JSON report `report`.
    pub fn verdict(&self, raw: &std::path::Path, report: &std::path::Path) -> Option<String> {
        let (raw, report) = (raw.display(), report.display());
        let reason = self.status_reason.as_deref().unwrap_or_default();
        match self.status {
            RunStatus::Complete if self.stable => None,
            RunStatus::Complete => Some(format!(
                "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in {report})"
            )),
            RunStatus::Rejected => {
                let mut msg = format!(
                    "the run was REJECTED: its energy figures must not be used; the raw record {raw} keeps every sample unchanged"
                );
                if let Some(r) = &self.status_reason {
                    msg.push_str(&format!("\n  {r}"));
                }
                for r in self.rejections.iter().take(10) {
                    msg.push_str(&format!("\n  - {}", r.message));
                }
                if self.rejections.len() > 10 {
                    msg.push_str(&format!("\n  ... and {} more (see {report})", self.rejections.len() - 10));
                }
                Some(msg)
            }
            RunStatus::Incomplete => {
                let mut msg = format!("the run is INCOMPLETE ({reason}); everything measured so far is in {raw}");
                if let Some(k) = self.whole_cycles {
                    msg.push_str(&format!(
                        "\n  the report's figures cover its {} (the cut cycle left out); `laya-bench summary {raw} --whole-cycles` audits {} as a run of {}",
                        super::first_cycles(k),
                        if k == 1 { "it" } else { "them" },
                        count(k, "cycle", "cycles")
                    ));
                }
                Some(msg)
            }
            RunStatus::Failed => {
                Some(format!("the run FAILED: {reason}; everything measured so far is in {raw}"))
            }
        }
    }

    /// The whole balanced cycles the intervals resample: an interrupted run's whole cycles,
    /// else the plan's.
    pub fn resampled_cycles(&self) -> usize {
        self.whole_cycles.unwrap_or(self.plan.cycles)
    }

    /// The answers line ([`super::answers::line`]).
    fn answers_line(&self) -> String {
        let baseline = self.arms.first().map(|a| a.arm.name.as_str()).unwrap_or_default();
        super::answers::line(
            baseline,
            self.arms.iter().map(|a| (a.arm.name.as_str(), a.answers_vs_baseline.as_ref())),
        )
    }

    /// The lines under the arm table about its brackets: what they are (as `speed` says it),
    /// and why a ratio shown has none, one line per reason. Empty for a report without
    /// intervals (one written before them).
    fn interval_lines(&self) -> String {
        use crate::stats::resamples::{distinct_resamples, interval_name, names_a_level_interval};
        let mut out = String::new();
        let others = self.arms.iter().skip(1);
        let value = |a: &EnergyArm, field: &str| match field {
            "speed_gain" => a.vs_baseline.speed_gain,
            "power_ratio" => a.vs_baseline.power_ratio,
            _ => a.vs_baseline.energy_gain,
        };
        let interval = |a: &EnergyArm, field: &str| match field {
            "speed_gain" => a.intervals.speed_gain,
            "power_ratio" => a.intervals.power_ratio,
            _ => a.intervals.energy_gain,
        };
        let shown = others
            .clone()
            .any(|a| RATIO_COLUMNS.iter().any(|(_, f)| value(a, f).is_some() && interval(a, f).is_some()));
        if shown {
            let cycles = self.resampled_cycles();
            if names_a_level_interval(cycles) {
                out.push_str(&format!("[low, high] beside a ratio is its 95 % CI, {BOOTSTRAP_METHOD}.\n"));
            } else {
                out.push_str(&format!(
                    "[low, high] beside a ratio is {BOOTSTRAP_METHOD}, but {cycles} whole cycles have only {:.0} distinct resamples: it is the {}.\n",
                    distinct_resamples(cycles),
                    interval_name(cycles, 0.95)
                ));
            }
        }
        // reason -> the columns it leaves without a bracket, in column order.
        let mut why: Vec<(&str, Vec<&str>)> = Vec::new();
        for (column, field) in RATIO_COLUMNS {
            for a in others.clone() {
                if value(a, field).is_none() || interval(a, field).is_some() {
                    continue;
                }
                let Some(reason) = a.intervals.missing.get(field) else { continue };
                match why.iter_mut().find(|(r, _)| *r == reason.as_str()) {
                    Some((_, cols)) if !cols.contains(&column) => cols.push(column),
                    Some(_) => {}
                    None => why.push((reason, vec![column])),
                }
            }
        }
        for (reason, columns) in why {
            out.push_str(&format!("No CI ({}): {reason}.\n", columns.join(", ")));
        }
        out
    }
}

/// The sentence that says what P and E measure: `Power boundary `gpu-board`: P is GPU board
/// power [W], E GPU board energy [J] (...)`.
pub fn boundary_line(b: &PowerBoundary) -> String {
    let what = match b {
        PowerBoundary::WholeSystem => "the whole machine, as its own estimate sees it",
        PowerBoundary::GpuBoard => "one GPU board only, not the host CPU, memory or the rest of the machine",
        PowerBoundary::CpuPackage => "the CPU package(s) only, not DRAM, GPUs or the rest of the machine",
        PowerBoundary::CpuPackageDram => {
            "the CPU package(s) and DRAM only, not GPUs or the rest of the machine"
        }
        PowerBoundary::Wall => "the machine at its wall socket, power-supply losses included",
        PowerBoundary::Other(_) => "as declared with --boundary",
        PowerBoundary::Unknown => "not known: no boundary was declared for this meter (`energy --boundary`)",
    };
    format!(
        "Power boundary `{}`: P is {}, E {} ({what}).",
        b.name(),
        b.label("power", "W"),
        b.label("energy", "J")
    )
}

/// The cross-check table: per block the total's energy, the other channel's, and their
/// difference.
pub fn cross_check_markdown(c: &crate::energy::cross::CrossCheck) -> String {
    let mut out = format!(
        "Cross-check: `{}` (the total) against `{}` ({}), per block; {} sample(s) without a value on `{}`; largest |difference| {} %.\n\n",
        c.total_channel,
        c.channel,
        c.quantity.replace('_', " "),
        c.samples_without_value,
        c.channel,
        num(c.max_abs_difference_pct, 2)
    );
    out.push_str("| Block | Total E [J] | Other E [J] | Difference [J] | Difference [%] | Missing |\n");
    out.push_str("|---:|---:|---:|---:|---:|:---|\n");
    for b in &c.blocks {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            b.index,
            num(b.total_j, 3),
            num(b.other_j, 3),
            num(b.difference_j, 3),
            num(b.difference_pct, 2),
            b.missing_reason.as_deref().unwrap_or("")
        ));
    }
    out
}

impl Render for EnergyReport {
    /// The Markdown table, printed as it is.
    fn terminal(&self) -> String {
        self.markdown()
    }

    /// Markdown: status, sensor, arms with ratios, blocks, the wording rule and missing values.
    fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("## Energy run: {}\n\n", self.status.as_str().to_uppercase()));
        match self.status {
            RunStatus::Complete => {}
            RunStatus::Rejected => out.push_str(
                "**REJECTED**: the energy figures of this run must not be used. The raw record keeps every sample unchanged.\n\n",
            ),
            RunStatus::Incomplete => match self.whole_cycles {
                Some(k) => out.push_str(&format!(
                    "**INCOMPLETE**: the run was stopped before its plan was done; the figures below cover its {} of {} planned (the blocks of the cut cycle are left out, so that every arm weighs the same), as `summary --whole-cycles` derives them from the raw record. Where a run stops is not part of its plan: no claim is made from them.\n\n",
                    super::first_cycles(k),
                    self.plan.cycles
                )),
                None => out.push_str("**INCOMPLETE**: the run was stopped before its plan was done; no energy figure is given.\n\n"),
            },
            RunStatus::Failed => out.push_str("**FAILED**: no energy figure is given.\n\n"),
        }
        if let Some(r) = &self.status_reason {
            out.push_str(&format!("Reason: {r}\n\n"));
        }
        if !self.rejections.is_empty() {
            out.push_str(&format!("Rejections ({}):\n\n", self.rejections.len()));
            for r in &self.rejections {
                // The message starts with the rule's name; faults are quoted in it already.
                out.push_str(&format!("- {}", r.message));
                let raws: Vec<String> = r
                    .evidence
                    .iter()
                    .filter_map(|e| e.raw.as_ref().map(|raw| format!("#{} `{raw}`", e.seq)))
                    .collect();
                if !raws.is_empty() {
                    out.push_str(&format!(" (raw: {})", raws.join(", ")));
                }
                out.push('\n');
            }
            out.push('\n');
        }
        let live = if self.sensor.live { "live" } else { "NOT A LIVE MEASUREMENT" };
        out.push_str(&format!(
            "Sensor `{}` ({}, {}; {}), sample interval {} s, cap {} W, max gap allowed {} s.\n",
            self.sensor.spec,
            self.sensor.source,
            self.sensor.device,
            live,
            self.energy_plan.sample_interval_s,
            self.energy_plan.max_watts,
            self.energy_plan.max_gap_s
        ));
        out.push_str(&format!("{}\n", boundary_line(&self.power_boundary)));
        if let Some(why) = &self.energy_plan.sample_interval_reason {
            out.push_str(&format!("Sample interval chosen from {why}.\n"));
        }
        if let Some(s) = &self.sampling {
            out.push_str(&format!("{}\n", s.sentence()));
        }
        if let Some(s) = &self.samples {
            out.push_str(&format!(
                "{} samples, max gap {} s, power {}–{} W.\n",
                s.count,
                num(s.max_gap_s, 3),
                num(s.min_watts, 2),
                num(s.max_watts, 2)
            ));
        }
        if let Some(sr) = &self.sampler {
            out.push_str(&format!(
                "Sampler: {} samples sent ({} faults), CPU {} ms over {} s ({}).\n",
                sr.samples_sent,
                sr.faults,
                num(sr.cpu_time_ns.map(|n| n as f64 / 1e6), 1),
                num(Some(sr.wall_ns as f64 / 1e9), 2),
                self.sampler_cpu_fraction
                    .map(|f| format!("{:.3} % of one core", f * 100.0))
                    .unwrap_or_else(|| "n/a".into())
            ));
        }
        let mode = match self.energy_plan.rate_hz {
            Some(r) => format!(
                "equal load at {r} requests/s ({} calls per block)",
                self.energy_plan.calls_per_block.map(|c| c.to_string()).unwrap_or_else(|| "n/a".into())
            ),
            None => "saturated serial blocks".into(),
        };
        out.push_str(&format!(
            "Workload `{}` ({} requests, padded length {}), {} of {} s blocks, {}; idle windows of {} s (first {} s discarded).\n\n",
            self.workload.name,
            self.workload.requests,
            self.workload.length,
            count(self.plan.cycles, "balanced cycle", "balanced cycles"),
            num(self.plan.block_seconds, 3),
            mode,
            self.energy_plan.idle_seconds,
            self.energy_plan.idle_discard_s
        ));
        let b = &self.power_boundary;
        let cx = &self.row_context;
        out.push_str(&cx.markdown_line());
        out.push_str(&format!(
            "| Arm | {MARKDOWN_COLUMNS}Spec | Decisions | t [ms] | {} | {} | {} | {} | {} | S | R | S×R | Missed deadlines |\n",
            b.label("P", "W"),
            b.label("E = P×t", "J"),
            b.label("active E", "J"),
            b.label("idle P", "W"),
            b.label("idle-sub. E/decision", "J"),
        ));
        out.push_str(&format!(
            "|:---|{MARKDOWN_ALIGN}:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        ));
        let baseline = self.arms.first().map(|a| a.arm.name.as_str()).unwrap_or_default();
        for (i, a) in self.arms.iter().enumerate() {
            let t = &a.totals;
            // The baseline's ratios are 1 by definition: no bracket.
            let ratio = |v: Option<f64>, iv: Option<&super::Interval>| {
                let ci = if i == 0 || v.is_none() { String::new() } else { interval_bracket(iv, 3) };
                format!("{}{ci}", num(v, 3))
            };
            out.push_str(&format!(
                "| `{}`{} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                a.arm.name,
                a.identical_to.as_deref().map(|same| identical_mark(same, baseline)).unwrap_or_default(),
                cx.markdown_cells(&a.arm.name).join(" | "),
                a.arm.spec,
                t.decisions,
                ms(t.time_per_decision_s),
                num(t.mean_power_w, 2),
                num(t.energy_per_decision_j, 4),
                num(t.active_energy_j, 2),
                num(t.idle_power_w, 2),
                num(t.idle_subtracted_energy_per_decision_j, 4),
                ratio(a.vs_baseline.speed_gain, a.intervals.speed_gain.as_ref()),
                ratio(a.vs_baseline.power_ratio, a.intervals.power_ratio.as_ref()),
                ratio(a.vs_baseline.energy_gain, a.intervals.energy_gain.as_ref()),
                a.missed_deadlines.map(|m| m.to_string()).unwrap_or_else(|| "–".into())
            ));
        }
        out.push_str(&format!("\n{RATIO_RULE}\n"));
        out.push_str(&self.interval_lines());
        out.push_str(&self.answers_line());
        out.push('\n');
        out.push_str(&cx.markdown_line());
        out.push_str(&format!(
            "| Block | Cycle | Arm | Model | Decisions | Time [s] | t [ms] | {} | {} | {} | {} | {} | RSS [MiB] |\n",
            b.label("P", "W"),
            b.label("E = P×t", "J"),
            b.label("active E", "J"),
            b.label("idle before/after", "W"),
            b.label("idle-sub. E", "J"),
        ));
        out.push_str("|---:|---:|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for b in &self.blocks {
            let t = &b.totals;
            out.push_str(&format!(
                "| {}{} | {} | `{}` | {} | {} | {:.3} | {} | {} | {} | {} | {} / {} | {} | {} |\n",
                b.index,
                if b.ended_early { " (cut)" } else { "" },
                b.cycle,
                b.arm,
                cx.markdown_cells(&b.arm)[0],
                t.decisions,
                t.time_s,
                ms(t.time_per_decision_s),
                num(t.mean_power_w, 2),
                num(t.energy_per_decision_j, 4),
                num(t.active_energy_j, 2),
                num(b.idle_before_w, 2),
                num(b.idle_after_w, 2),
                num(t.idle_subtracted_energy_j, 2),
                num(b.rss_bytes.map(|r| r as f64 / 1048576.0), 1)
            ));
        }
        if let Some(c) = &self.cross_check {
            out.push('\n');
            out.push_str(&cross_check_markdown(c));
        }
        let arms: Vec<(&str, Vec<(&str, &str)>)> = self
            .arms
            .iter()
            .map(|a| {
                let all = a.totals.missing.iter().chain(&a.vs_baseline.missing);
                (a.arm.name.as_str(), all.map(|(f, why)| (f.as_str(), why.as_str())).collect())
            })
            .collect();
        let missing = missing_markdown(&arms);
        if !missing.is_empty() {
            out.push('\n');
            out.push_str(missing.trim_end_matches('\n'));
            out.push('\n');
        }
        let notes: Vec<&String> = self.notes.iter().filter(|n| n.as_str() != RATIO_RULE).collect();
        if !notes.is_empty() {
            out.push_str("\nNotes:\n\n");
            for n in notes {
                out.push_str(&format!("- {n}\n"));
            }
        }
        out
    }

    /// CSV: one row per arm, then one per block (`level` says which); after the arm's name
    /// the run's context ([`RowContext::csv_cells`]); empty cells are missing.
    fn csv(&self) -> Option<String> {
        let mut out = format!(
            "level,status,index,cycle,arm,{CSV_COLUMNS},spec,decisions,time_s,time_per_decision_s,mean_power_w,energy_per_decision_j,active_energy_j,idle_power_w,idle_subtracted_energy_j,idle_subtracted_energy_per_decision_j,speed_gain,power_ratio,energy_gain,missed_deadlines,rss_bytes,power_boundary,identical_to\n",
        );
        let status = self.status.as_str();
        let boundary = csv_field(&self.power_boundary.name());
        for (i, a) in self.arms.iter().enumerate() {
            let t = &a.totals;
            out.push_str(&format!(
                "arm,{status},{i},,{},{}{},{},{},{},{},{},{},{},{},{},{},{},{},{},,{boundary},{}\n",
                csv_field(&a.arm.name),
                self.row_context.csv_cells(&a.arm.name),
                csv_field(&a.arm.spec),
                t.decisions,
                t.time_s,
                csv_num(t.time_per_decision_s),
                csv_num(t.mean_power_w),
                csv_num(t.energy_per_decision_j),
                csv_num(t.active_energy_j),
                csv_num(t.idle_power_w),
                csv_num(t.idle_subtracted_energy_j),
                csv_num(t.idle_subtracted_energy_per_decision_j),
                csv_num(a.vs_baseline.speed_gain),
                csv_num(a.vs_baseline.power_ratio),
                csv_num(a.vs_baseline.energy_gain),
                a.missed_deadlines.map(|m| m.to_string()).unwrap_or_default(),
                csv_field(a.identical_to.as_deref().unwrap_or("")),
            ));
        }
        let identical_of = |arm: &str| {
            self.arms.iter().find(|a| a.arm.name == arm).and_then(|a| a.identical_to.as_deref()).unwrap_or("")
        };
        for b in &self.blocks {
            let t = &b.totals;
            let spec = self
                .arms
                .iter()
                .find(|a| a.arm.name == b.arm)
                .map(|a| a.arm.spec.clone())
                .unwrap_or_default();
            out.push_str(&format!(
                "block,{status},{},{},{},{}{},{},{},{},{},{},{},{},{},{},,,,{},{},{boundary},{}\n",
                b.index,
                b.cycle,
                csv_field(&b.arm),
                self.row_context.csv_cells(&b.arm),
                csv_field(&spec),
                t.decisions,
                t.time_s,
                csv_num(t.time_per_decision_s),
                csv_num(t.mean_power_w),
                csv_num(t.energy_per_decision_j),
                csv_num(t.active_energy_j),
                csv_num(t.idle_power_w),
                csv_num(t.idle_subtracted_energy_j),
                csv_num(t.idle_subtracted_energy_per_decision_j),
                b.missed_deadlines.map(|m| m.to_string()).unwrap_or_default(),
                b.rss_bytes.map(|m| m.to_string()).unwrap_or_default(),
                csv_field(identical_of(&b.arm)),
            ));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Interval;
    use serde_json::json;

    /// A hand-built complete report of two arms: `base`, and `fast` twice as fast at 0.8× the
    /// baseline's power (S = 2, R = 1.25, S × R = 2.5), over `cycles` balanced cycles.
    fn report(cycles: usize) -> EnergyReport {
        let arm = |name: &str, t: f64, p: f64, ratios: [f64; 3]| {
            json!({
                "arm": {"name": name, "spec": "mock:ok", "backend": "mock", "precision": "scripted",
                        "device": "none", "fingerprint": name, "batch": 1, "length": 96, "max_options": 32},
                "totals": {"blocks": 2 * cycles, "decisions": 1000, "time_s": t * 1000.0,
                           "time_per_decision_s": t, "active_energy_j": p * t * 1000.0, "mean_power_w": p,
                           "energy_per_decision_j": p * t, "idle_power_w": 10.0,
                           "idle_subtracted_energy_j": 1.0, "idle_subtracted_power_w": 0.5,
                           "idle_subtracted_energy_per_decision_j": 0.001, "block_power_min_w": p,
                           "block_power_max_w": p, "missing": {}},
                "latency": null,
                "unstable_calls": 0,
                "vs_baseline": {"speed_gain": ratios[0], "power_ratio": ratios[1], "energy_gain": ratios[2],
                                "idle_subtracted_energy_gain": 1.0, "missing": {}}
            })
        };
        serde_json::from_value(json!({
            "schema_version": 1, "status": "complete", "status_reason": null, "rejections": [],
            "tool": {"name": "laya-bench", "version": "0.1.0", "git_revision": "abc"},
            "host": {"hostname": "h", "os": "linux", "arch": "x86_64", "cpu_model": "cpu",
                     "logical_cpus": 2, "memory_bytes": 1},
            "model": {"spec": "builtin:tiny", "hidden_size": 64, "layers": 4, "heads": 4,
                      "intermediate_size": 96, "vocab_size": 1400, "head_layers": 2, "max_len": 512},
            "workload": {"name": "invoice", "requests": 8, "tokens_per_row": [[91]], "target_tokens": 91, "length": 96},
            "plan": {"cycles": cycles, "block_seconds": 1.0, "block_calls": null, "warmup_calls": 3, "order": []},
            "energy_plan": {"sample_interval_s": 0.05, "idle_seconds": 1.0, "idle_discard_s": 0.1,
                            "max_watts": 500.0, "max_gap_s": 2.0, "rate_hz": null, "calls_per_block": null},
            "sensor": {"kind": "exec", "spec": "exec:x", "source": "measured-external", "device": "d",
                       "live": false, "notes": []},
            "power_boundary": "gpu-board",
            "sampler": null, "sampler_cpu_fraction": null,
            "series": {"kind": "power", "channels": ["system"]},
            "samples": null, "raw_path": null,
            "arms": [arm("base", 0.002, 100.0, [1.0, 1.0, 1.0]), arm("fast", 0.001, 80.0, [2.0, 1.25, 2.5])],
            "blocks": [], "stable": true, "notes": []
        }))
        .unwrap()
    }

    #[test]
    fn the_verdict_says_what_each_status_means_and_names_the_files() {
        let (raw, json) = (std::path::Path::new("r.raw.jsonl"), std::path::Path::new("r.json"));
        let mut r = report(3);
        assert_eq!(r.verdict(raw, json), None);
        r.stable = false;
        assert_eq!(
            r.verdict(raw, json).unwrap(),
            "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in r.json)"
        );
        r.status = RunStatus::Incomplete;
        r.status_reason = Some("interrupted by SIGINT".into());
        r.whole_cycles = Some(1);
        assert_eq!(
            r.verdict(raw, json).unwrap(),
            "the run is INCOMPLETE (interrupted by SIGINT); everything measured so far is in r.raw.jsonl\n  \
             the report's figures cover its first whole balanced cycle (the cut cycle left out); `laya-bench summary \
             r.raw.jsonl --whole-cycles` audits it as a run of 1 cycle"
        );
        r.status = RunStatus::Failed;
        r.status_reason = Some("the sensor stopped".into());
        assert_eq!(
            r.verdict(raw, json).unwrap(),
            "the run FAILED: the sensor stopped; everything measured so far is in r.raw.jsonl"
        );
    }

    #[test]
    fn a_rejected_verdict_lists_ten_rules_and_counts_the_rest() {
        let mut r = report(3);
        r.status = RunStatus::Rejected;
        r.status_reason = Some("12 readings broke the rules".into());
        let rule = |i: usize| RejectionDetail {
            rejection: crate::energy::reject::Rejection::NoSamples,
            message: format!("reading {i} is 0 W"),
            channel: None,
            evidence: Vec::new(),
        };
        r.rejections = (0..12).map(rule).collect();
        let msg = r.verdict(std::path::Path::new("r.raw.jsonl"), std::path::Path::new("r.json")).unwrap();
        let lines: Vec<&str> = msg.lines().collect();
        assert_eq!(lines.len(), 13, "{msg}");
        assert_eq!(
            lines[0],
            "the run was REJECTED: its energy figures must not be used; the raw record r.raw.jsonl keeps every sample unchanged"
        );
        assert_eq!(
            (lines[1], lines[2], lines[11]),
            ("  12 readings broke the rules", "  - reading 0 is 0 W", "  - reading 9 is 0 W")
        );
        assert_eq!(lines[12], "  ... and 2 more (see r.json)");
    }

    fn iv(low: f64, high: f64) -> Option<Interval> {
        Some(Interval { low, high, valid_resamples: 10_000 })
    }

    /// The arm table's row of `arm`.
    fn row<'a>(md: &'a str, arm: &str) -> &'a str {
        md.lines().find(|l| l.starts_with(&format!("| `{arm}`"))).unwrap()
    }

    fn with_intervals(mut r: EnergyReport) -> EnergyReport {
        for a in &mut r.arms {
            a.intervals.speed_gain = iv(1.8, 2.2);
            a.intervals.power_ratio = iv(1.2, 1.3125);
            a.intervals.energy_gain = iv(2.25, 2.75);
        }
        r
    }

    #[test]
    fn each_ratio_shows_its_interval_as_speed_does() {
        let md = with_intervals(report(10)).markdown();
        // Three decimals for the ratio and its bounds (1.3125 rounds half to even: 1.312).
        assert!(
            row(&md, "fast")
                .ends_with(" | 2.000 [1.800, 2.200] | 1.250 [1.200, 1.312] | 2.500 [2.250, 2.750] | – |"),
            "{md}"
        );
        // The baseline's ratios are 1 by definition: no bracket.
        assert!(row(&md, "base").ends_with(" | 1.000 | 1.000 | 1.000 | – |"), "{md}");
        assert!(
            md.contains(&format!("{RATIO_RULE}\n[low, high] beside a ratio is its 95 % CI, a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0).\n\n")),
            "{md}"
        );
        assert!(!md.contains("No CI"), "{md}");
        // The printed table is the Markdown.
        assert_eq!(with_intervals(report(10)).terminal(), md);
    }

    #[test]
    fn few_cycles_name_the_bracket_a_range_of_resamples() {
        // 3 cycles: C(5, 3) = 10 distinct resamples, too few to call the bracket 95 %.
        let md = with_intervals(report(3)).markdown();
        assert!(md.contains("[low, high] beside a ratio is a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0), but 3 whole cycles have only 10 distinct resamples: it is the range of 10 possible resamples, not a 95 % interval.\n"), "{md}");
        // An interrupted run resamples its whole cycles, not the plan's.
        let mut r = with_intervals(report(10));
        r.whole_cycles = Some(2);
        assert!(
            r.markdown().contains("but 2 whole cycles have only 3 distinct resamples"),
            "{}",
            r.markdown()
        );
    }

    #[test]
    fn a_ratio_without_its_interval_says_why_once() {
        let mut r = report(1);
        let why = "1 whole balanced cycle: resampling whole cycles needs at least 2";
        for q in ["speed_gain", "power_ratio", "energy_gain"] {
            r.arms[1].intervals.missing.insert(q.into(), why.into());
        }
        let md = r.markdown();
        assert!(row(&md, "fast").ends_with(" | 2.000 | 1.250 | 2.500 | – |"), "{md}");
        assert!(md.contains(&format!("{RATIO_RULE}\nNo CI (S, R, S×R): {why}.\n\n")), "{md}");
        assert!(!md.contains("[low, high]"), "{md}");
        // Only R is without an interval: the others keep theirs and the note.
        let mut r = with_intervals(report(10));
        r.arms[1].intervals.power_ratio = None;
        r.arms[1].intervals.missing.insert("power_ratio".into(), "no resample could form it".into());
        let md = r.markdown();
        assert!(
            row(&md, "fast").ends_with(" | 2.000 [1.800, 2.200] | 1.250 | 2.500 [2.250, 2.750] | – |"),
            "{md}"
        );
        assert!(md.contains("95 % CI, a seeded"), "{md}");
        assert!(md.contains("\nNo CI (R): no resample could form it.\n"), "{md}");
        // A ratio that is itself missing (n/a) says nothing about its interval.
        r.arms[1].vs_baseline.power_ratio = None;
        assert!(!r.markdown().contains("No CI"), "{}", r.markdown());
    }

    #[test]
    fn a_report_written_before_the_intervals_reads_and_renders_without_them() {
        let r = report(10);
        let mut old = serde_json::to_value(&r).unwrap();
        for a in old["arms"].as_array_mut().unwrap() {
            a.as_object_mut().unwrap().remove("intervals");
        }
        let back: EnergyReport = serde_json::from_value(old).unwrap();
        assert_eq!(back, r);
        let md = back.markdown();
        assert!(row(&md, "fast").ends_with(" | 2.000 | 1.250 | 2.500 | – |"), "{md}");
        assert!(md.contains(&format!("{RATIO_RULE}\n\n")), "{md}");
        // The JSON carries the intervals under each arm, as `summary`'s arms do.
        let json = serde_json::to_value(with_intervals(report(10))).unwrap();
        assert_eq!(
            json["arms"][1]["intervals"]["energy_gain"],
            json!({"low": 2.25, "high": 2.75, "valid_resamples": 10000})
        );
        assert_eq!(json["arms"][1]["intervals"]["mean_power_w"], json!(null));
    }
}
