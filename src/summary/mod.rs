//! `summary`: re-derive every published number from raw records alone (no backend, no sensor).
//!
//! - [`audit`]: every check by name (header and footer, balanced cycles, call counts, stable
//!   calls, idle windows, rejection rules, active energy, idle power, idle-subtracted energy),
//!   recomputing energies from the raw samples with the `energy` module's own functions.
//! - [`bootstrap`]: a seeded bootstrap over whole balanced cycles ([`rng`] is the generator).
//! - [`claim`]: the claim rule (the LOWER bound decides; latency and stability gates).
//! - [`compare`]: several runs of the same arms side by side; [`report()`] assembles the
//!   summary report of one or more runs.
//! - [`mod@report`]: the `summary --json` report types (schema_version 1) and their Markdown
//!   and CSV.
//! - [`pictures`]: the power timeline (with counter sensors' implied power), latency CDF and
//!   energy per block of a run, as SVG text.
//! - [`correct`]: the header field a metadata correction names (`--correct --field`).
//! - [`regression`]: the regression gate (`--baseline-record`, `--fail-if-slower`): each arm's
//!   change of time per decision against an earlier record, with a bootstrap interval.
//! - [`files`]: the file side of the command: the checks of its inputs and outputs, a record
//!   given twice, the pictures written, a correction appended.
//! - [`whole`]: `--whole-cycles`, whether the whole balanced cycles of an interrupted record
//!   may be summarized (the cut itself is [`crate::record::whole`]).
//!
//! The records are read, checked line by line and cut through [`crate::record`], which owns
//! their format.
//!
//! Pure but for [`files`]: nothing else here reads or writes a file, a clock or the
//! environment.
#![warn(missing_docs)]

pub mod audit;
pub mod bootstrap;
pub mod claim;
pub mod compare;
pub mod correct;
pub mod files;
pub mod pictures;
pub mod regression;
pub mod report;
pub mod rng;
pub mod whole;

use crate::energy::run::{aggregate, ratios, BlockFigures};
use crate::record::provenance::ToolInfo;
use crate::record::status::RunStatus;
use crate::record::RawRun;
use crate::report::steal::{self, StealTicks};
use crate::stats::LatencySummary;
use crate::summary::report::{
    ArmIntervals, ArmSummary, BlockSummary, BootstrapInfo, CheckOutcome, RunSummary, SummaryReport,
    SummarySettings, SummaryStatus, WholeCycles, SCHEMA_VERSION,
};

use audit::{Audit, RunData};
use bootstrap::{CycleSums, CycleTable};

/// Below this many cycles the report warns that the interval cannot capture all background load.
pub const FEW_CYCLES: usize = 10;

/// How to summarize.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Bootstrap resamples (0: none).
    pub bootstrap: usize,
    /// Seed of the bootstrap's generator.
    pub seed: u64,
    /// Central interval level, e.g. 0.95.
    pub level: f64,
    /// Target energy gain for the claim rule.
    pub target: Option<f64>,
    /// Baseline arm by name; `None`: the record's first arm.
    pub baseline: Option<String>,
    /// Summarize an incomplete record's whole balanced cycles ([`whole`]).
    pub whole_cycles: bool,
    /// `--fail-if-slower PCT` of the regression gate ([`regression`]).
    pub fail_if_slower: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bootstrap: 10_000,
            seed: 0,
            level: 0.95,
            target: None,
            baseline: None,
            whole_cycles: false,
            fail_if_slower: None,
        }
    }
}

/// The most bootstrap resamples accepted.
pub const MAX_RESAMPLES: usize = 10_000_000;

/// Check a summary's settings and the flags given with them before anything is read (exit 2):
/// at least one raw record, a bootstrap that fits in memory, a positive `--target`, a
/// `--fail-if-slower` of 0 % or more, and no correction flag (`flags` given: `--field`,
/// `--note`) without `--correct`.
pub fn check_invocation<P>(
    opts: &Options,
    raws: &[P],
    flags: [(&str, &Option<String>); 2],
) -> Result<(), crate::error::Error> {
    use crate::error::Error;
    // clap lets a flag's `requires` go when the required flag conflicts with one given
    if let Some((flag, _)) = flags.iter().find(|(_, v)| v.is_some()) {
        return Err(Error::input(format!(
            "{flag} belongs to a correction: use `summary --correct RAW --field PATH --note TEXT` (nothing is summarized or corrected otherwise)"
        )));
    }
    if raws.is_empty() {
        return Err(Error::input("give at least one raw record (the `--raw` file of `speed` or `energy`)"));
    }
    if opts.bootstrap > MAX_RESAMPLES {
        return Err(Error::input(format!(
            "--bootstrap {} is more than {MAX_RESAMPLES} resamples (each arm keeps 7 figures per resample in memory); 10,000 is plenty for 95 % intervals",
            opts.bootstrap
        )));
    }
    if let Some(t) = opts.target.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(Error::input(format!("--target-gain must be a positive factor such as 10, got {t}")));
    }
    if let Some(p) = opts.fail_if_slower.filter(|p| !(p.is_finite() && *p >= 0.0)) {
        return Err(Error::input(format!(
            "--fail-if-slower must be a slowdown of 0 % or more, such as 10, got {p}"
        )));
    }
    Ok(())
}

/// The warning for fewer than 1000 resamples (but some).
pub fn few_resamples(bootstrap: usize) -> Option<String> {
    (1..1000).contains(&bootstrap).then(|| format!(
        "--bootstrap {bootstrap} resamples give rough percentile intervals; use at least 1000 (the default is 10000)"
    ))
}

/// Summarize every raw record (`sources` name them) into one report, compared side by side
/// when there are several, and each against `baseline` (its path and record) when given: the
/// regression gate, for every run with statistics (one without fails as not complete). The
/// warning says why several runs are not compared side by side.
pub fn summarize_all<P: AsRef<std::path::Path>>(
    raws: &[RawRun],
    sources: &[P],
    baseline: Option<(&std::path::Path, &RawRun)>,
    opts: &Options,
) -> Result<(SummaryReport, Option<String>), SummaryError> {
    let name = |p: &std::path::Path| p.display().to_string();
    let mut runs = Vec::with_capacity(raws.len());
    for (run, path) in raws.iter().zip(sources) {
        if let Some((b, base)) = baseline {
            regression::comparable((&name(path.as_ref()), &run.header), (&name(b), &base.header))?;
        }
        runs.push(summarize(run, &name(path.as_ref()), opts)?);
    }
    let (mut report, warning) = report(runs, opts)?;
    if let Some((b, base)) = baseline {
        let base = summarize(base, &name(b), opts)?;
        let gate = regression::Gate {
            fail_if_slower_pct: opts.fail_if_slower,
            resamples: opts.bootstrap,
            seed: opts.seed,
            level: opts.level,
        };
        for run in report.runs.iter().filter(|r| !r.arms.is_empty()) {
            report.regression.push(regression::regression(run, &base, &gate)?);
        }
    }
    Ok((report, warning))
}

/// Why a record cannot be summarized at all (bad input, exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    /// `--baseline` names no arm of the record.
    #[error("{file}: --baseline `{baseline}` is not an arm of this record (its arms: {})", arms.join(", "))]
    UnknownBaseline {
        /// The raw file.
        file: String,
        /// The name asked for.
        baseline: String,
        /// The arms it has.
        arms: Vec<String>,
    },
    /// The header lists no arm.
    #[error("{file}: the header lists no arm; is this the raw record of a `speed` or `energy` run?")]
    NoArms {
        /// The raw file.
        file: String,
    },
    /// Nothing to compare.
    #[error("no run to compare")]
    NoRuns,
    /// A run cannot stand next to the first.
    #[error("{file} cannot be compared with the other runs: {reason}")]
    NotComparable {
        /// The raw file.
        file: String,
        /// Why.
        reason: String,
    },
    /// `--baseline-record` holds a record of another model, workload, length or batch.
    #[error("{file} and the --baseline-record {baseline} differ in `{field}` ({value} here, {baseline_value} in the baseline record): their times measure different things; give a baseline record of the same command, model, workload, length and batch")]
    BaselineDiffers {
        /// The run's raw file.
        file: String,
        /// The baseline record.
        baseline: String,
        /// The header field that differs (`workload.length`, …).
        field: String,
        /// Its value in the run.
        value: String,
        /// Its value in the baseline record.
        baseline_value: String,
    },
    /// No arm of the run has the name of an arm of the baseline record.
    #[error("{file} has no arm of the --baseline-record {baseline} (its arms: {}; the baseline record's: {}): arms are matched by name; record the baseline with the same --arm NAME=SPEC", arms.join(", "), baseline_arms.join(", "))]
    NoCommonArm {
        /// The run's raw file.
        file: String,
        /// The baseline record.
        baseline: String,
        /// The run's arms.
        arms: Vec<String>,
        /// The baseline record's arms.
        baseline_arms: Vec<String>,
    },
    /// The baseline record has no figures to compare with.
    #[error("the --baseline-record {baseline} has no figures to compare with ({reason}); record a complete baseline")]
    BaselineUnusable {
        /// The baseline record.
        baseline: String,
        /// Why.
        reason: String,
    },
    /// `--bootstrap 0` with `--baseline-record`.
    #[error("--baseline-record needs bootstrap intervals (its verdict reads the interval of each arm's change): drop --bootstrap 0")]
    GateNeedsResamples,
    /// Too few cycles for an interval of the change.
    #[error("{file} has {cycles} balanced cycle(s): the regression gate resamples whole cycles and needs at least 2 in each record (10 or more for an interval worth a verdict); record with more --cycles")]
    GateNeedsCycles {
        /// The raw file.
        file: String,
        /// Its cycles.
        cycles: usize,
    },
}

impl crate::error::Classify for SummaryError {
    /// The input's: the records or flags given cannot be summarized as asked (exit 2).
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::Input
    }
}

/// The checks a run cut short by its own rejection fails as a consequence: its cycles are not
/// whole and its idle windows end early.
const CUT_SHORT_CHECKS: [&str; 2] = ["balanced_cycles", "idle_windows"];

fn status_of(d: &RunData<'_>, audit: &Audit) -> (SummaryStatus, Vec<String>) {
    let failed = audit.failed();
    let detail = |name: &str| audit.check(name).map(|c| c.detail.clone()).unwrap_or_default();
    match d.footer.as_ref().map(|f| f.status) {
        None | Some(RunStatus::Incomplete) => {
            return (SummaryStatus::Incomplete, vec![detail("header_and_footer")])
        }
        Some(RunStatus::Failed) => {
            let mut why = vec![detail("header_and_footer")];
            why.extend(d.errors.iter().cloned());
            return (SummaryStatus::Failed, why);
        }
        _ => {}
    }
    let footer_rejected = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Rejected);
    // A rejection the raw samples confirm stands even where the run was cut short by it (a
    // sensor that stopped, a probe reading that refused the run): the checks that only a
    // whole run passes then fail as its consequence, not as a sign the record is wrong.
    let confirmed = footer_rejected
        && audit.recomputed.as_ref().is_some_and(|r| r.rejected())
        && audit.check("rejection_rules").is_some_and(|c| c.outcome == CheckOutcome::Pass);
    let (failed, cut_short): (Vec<_>, Vec<_>) =
        failed.into_iter().partition(|c| !(confirmed && CUT_SHORT_CHECKS.contains(&c.name.as_str())));
    if !failed.is_empty() {
        let why = failed.iter().map(|c| format!("audit check `{}` failed: {}", c.name, c.detail)).collect();
        return (SummaryStatus::AuditFailed, why);
    }
    match &audit.recomputed {
        Some(r) if r.rejected() || footer_rejected => {
            let mut rules: Vec<&str> = Vec::new();
            for rule in r.rejections.iter().map(|x| x.rejection.rule()) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            let mut why = Vec::new();
            if !rules.is_empty() {
                why.push(format!("rule {} violated (re-checked on the raw samples)", rules.join(", ")));
            }
            // E.g. a sensor that stopped mid-run: the footer says why.
            why.extend(d.footer.as_ref().and_then(|f| f.reason.clone()));
            why.extend(cut_short.iter().map(|c| format!("so `{}` does not hold: {}", c.name, c.detail)));
            if why.is_empty() {
                why.push("the footer records the run as rejected".into());
            }
            (SummaryStatus::Rejected, why)
        }
        _ => (SummaryStatus::Complete, Vec::new()),
    }
}

fn no_energy_reason(kind_energy: bool, status: SummaryStatus) -> &'static str {
    match (kind_energy, status) {
        (false, _) => "a speed record has no power samples (run `laya-bench energy` for energy figures)",
        (true, SummaryStatus::Rejected) => "the run was rejected; its energy figures must not be used",
        (true, SummaryStatus::Complete) => "",
        (true, _) => "the record did not pass as complete; no energy figure is derived from it",
    }
}

/// Summarize one raw record: audit, statistics, bootstrap and claim.
pub fn summarize(run: &RawRun, source: &str, opts: &Options) -> Result<RunSummary, SummaryError> {
    let h = &run.header;
    let names: Vec<String> = h.arms.iter().map(|a| a.name.clone()).collect();
    if names.is_empty() {
        return Err(SummaryError::NoArms { file: source.into() });
    }
    let baseline = match &opts.baseline {
        None => 0,
        Some(b) => names.iter().position(|n| n == b).ok_or_else(|| SummaryError::UnknownBaseline {
            file: source.into(),
            baseline: b.clone(),
            arms: names.clone(),
        })?,
    };
    let full = RunData::new(run);
    let audit = audit::audit(run, &full);
    let (status, mut status_reasons) = status_of(&full, &audit);
    // --whole-cycles: an incomplete record's whole cycles, audited and summarized as the run a
    // plan of that many cycles would have made.
    let mut whole_missing = None;
    let view = match (status, opts.whole_cycles) {
        (SummaryStatus::Incomplete, true) => match whole::eligible(&full, &audit) {
            Ok(k) => Some((crate::record::whole::cut(run, k), k)),
            Err(why) => {
                whole_missing = Some(why);
                None
            }
        },
        _ => None,
    };
    // The cut record's data and audit, with the number of cycles it holds.
    let cut = view.as_ref().map(|(v, k)| {
        let vd = RunData::new(v);
        let a = audit::audit_whole_cycles(v, &vd, audit::whole_cycles_check(&full, *k, vd.blocks.len()));
        (*k, vd, a)
    });
    let usable = match cut.as_ref().map(|(_, _, a)| whole::judge(a)) {
        Some(Ok(())) => true,
        Some(Err(why)) => {
            whole_missing = Some(why);
            false
        }
        None => false,
    };
    let (d, recomputed) = match (&cut, usable) {
        (Some((_, vd, a)), true) => (vd, a.recomputed.as_ref()),
        _ => (&full, audit.recomputed.as_ref()),
    };
    let whole_cycles = cut.as_ref().map(|(k, vd, a)| WholeCycles {
        cycles_used: *k,
        cycles_planned: h.plan.cycles,
        blocks_used: vd.blocks.len(),
        blocks_recorded: full.blocks.len(),
        usable,
        audit: a.checks.clone(),
    });
    if let Some(w) = whole_cycles.as_ref().filter(|w| w.usable) {
        status_reasons.push(format!(
            "--whole-cycles: the figures cover its {} of the {} planned ({} of the {} recorded), audited as a run of {}; where a run stops is not part of its plan, so no claim is made from them",
            crate::report::first_cycles(w.cycles_used),
            w.cycles_planned,
            crate::report::count(w.blocks_used, "block", "blocks"),
            w.blocks_recorded,
            crate::report::count(w.cycles_used, "cycle", "cycles")
        ));
    }
    let no_energy = no_energy_reason(d.is_energy(), if usable { SummaryStatus::Complete } else { status });
    let energy_ok = (status == SummaryStatus::Complete || usable) && d.is_energy();
    let energy_of = |index: u32| -> (Option<crate::energy::BlockEnergy>, Option<String>) {
        if !energy_ok {
            return (None, Some(no_energy.to_string()));
        }
        match recomputed.and_then(|r| r.blocks.iter().find(|b| b.index == index)) {
            Some(b) => (b.energy, b.missing_reason.clone()),
            None => (None, Some("no energy was computed for this block".into())),
        }
    };
    let blocks: Vec<BlockSummary> = d
        .blocks
        .iter()
        .map(|b| {
            let (energy, why) = energy_of(b.index);
            // A call of a batched arm (`speed --batch N`, or its value in a `--batch 1,2,4`
            // sweep) answered N requests: N decisions.
            let decisions = h.decisions(&b.arm, b.calls);
            let per = |x: f64| (decisions > 0).then(|| x / decisions as f64);
            let runtime_s = d.calls.get(&b.index).and_then(|c| c.runtime_s());
            // Energy spans the wall, so an energy record keeps the wall time; a speed record
            // times a self-timing arm by its runtime, as `speed` does.
            let time_s = match runtime_s {
                Some(r) if !d.is_energy() => r,
                _ => b.duration_s(),
            };
            BlockSummary {
                index: b.index,
                cycle: b.cycle,
                arm: b.arm.clone(),
                start_s: b.start_ns as f64 / 1e9,
                end_s: b.end_ns as f64 / 1e9,
                decisions,
                time_s,
                time_per_decision_s: per(time_s),
                runtime_s,
                wall_s: b.duration_s(),
                energy_per_decision_j: energy.and_then(|e| per(e.energy_j)),
                energy,
                energy_missing_reason: why,
                unstable_calls: b.unstable_calls,
                ended_early: b.ended_early,
            }
        })
        .collect();
    let mut summary = RunSummary {
        source: source.into(),
        kind: h.kind.clone(),
        status,
        status_reasons,
        rejections: recomputed.map(|r| r.rejections.clone()).unwrap_or_default(),
        tool: h.tool.clone(),
        host: h.host.clone(),
        workload: h.workload.clone(),
        plan: d.header.plan.clone(),
        sensor_spec: h.sensor.as_ref().map(|s| s.spec.clone()),
        sensor_live: h.sensor.as_ref().map(|s| s.live),
        power_boundary: h.power_boundary(),
        metadata_corrections: d.corrections.clone(),
        samples: recomputed.and_then(|r| r.summary),
        baseline: names[baseline].clone(),
        arms: Vec::new(),
        statistics_missing_reason: None,
        blocks,
        cross_check: if energy_ok { recomputed.and_then(|r| r.cross_check.clone()) } else { None },
        sampling: recomputed.and_then(|r| r.sampling.clone()),
        bootstrap: None,
        bootstrap_missing_reason: None,
        claim: None,
        warnings: Vec::new(),
        audit: audit.checks.clone(),
        whole_cycles,
        row_context: crate::report::RowContext::of(h),
    };
    if h.plan.batch > 1 {
        summary.warnings.push(format!(
            "--batch {0}: every call answered {0} requests in one packed forward; decisions = calls × {0}, and the latencies are per batch of {0} (one call).",
            h.plan.batch
        ));
    }
    let swept: Vec<String> =
        h.arms.iter().filter_map(|a| a.requests_per_call.map(|n| format!("`{}` {n}", a.name))).collect();
    if !swept.is_empty() {
        summary.warnings.push(format!(
            "--batch sweep: requests per call by arm: {}; an arm's decisions = its calls × its value, and its latencies are per call (per batch of that many requests).",
            swept.join(", ")
        ));
    }
    if h.sensor.as_ref().is_some_and(|s| !s.live) {
        summary.warnings.push("NOT A LIVE MEASUREMENT: the sensor replayed or scripted its readings.".into());
    }
    if !d.corrections.is_empty() {
        summary.warnings.push(format!(
            "{} metadata correction(s) were appended to this record; the original fields are unchanged (see below).",
            d.corrections.len()
        ));
    }
    for (i, info) in h.arms.iter().enumerate() {
        if let Some(same) = h.arms[..i].iter().find(|o| info.same_model_as(o)) {
            summary.warnings.push(format!(
                "arm `{}` ({}) is IDENTICAL to `{}`: the same weights (fingerprint {}) on the same engine, so its ratios compare one model with itself (run noise, not a difference)",
                info.name,
                info.spec,
                same.name,
                info.fingerprint.chars().take(12).collect::<String>()
            ));
        }
    }
    for name in &names {
        let steal = StealTicks::sum(d.blocks.iter().filter(|b| &b.arm == name).map(|b| b.steal));
        if let Some(w) = steal::warning(&format!("arm `{name}`'s blocks"), steal) {
            summary.warnings.push(w);
        }
    }
    if !matches!(status, SummaryStatus::Complete | SummaryStatus::Rejected) && !usable {
        let mut why = format!("the record is {}: no figure is derived from it", status.as_str());
        match (&whole_missing, status) {
            (Some(w), _) => why.push_str(&format!("; --whole-cycles: {w}")),
            (None, SummaryStatus::Incomplete) => {
                let k = whole::count(&full);
                if k > 0 {
                    why.push_str(&format!(
                        "; its {} can be summarized with --whole-cycles",
                        crate::report::first_cycles(k)
                    ));
                }
            }
            _ => {}
        }
        summary.statistics_missing_reason = Some(why);
        return Ok(summary);
    }
    statistics(&mut summary, d, baseline, energy_ok, no_energy, opts);
    if usable && opts.target.is_some() {
        summary.warnings.push(
            "--target-gain: no claim is made from part of a run (--whole-cycles): where a run is stopped is chosen during it, so its whole cycles are no plan fixed in advance; run the plan to its end for a claim".into(),
        );
    } else if let Some(target) = opts.target {
        let passed = audit.checks.iter().all(|c| c.outcome != CheckOutcome::Fail);
        let cycles = summary.bootstrap.as_ref().map_or(summary.plan.cycles, |b| b.cycles);
        summary.claim = Some(claim::claim(
            target,
            &summary.arms,
            baseline,
            passed,
            opts.level,
            cycles,
            &summary.power_boundary,
        ));
    }
    Ok(summary)
}

/// The summary report of summarized runs (no pictures yet): with several runs, side by side
/// when every one has statistics; otherwise the warning why there is no comparison, for the
/// caller to show.
pub fn report(
    runs: Vec<RunSummary>,
    opts: &Options,
) -> Result<(SummaryReport, Option<String>), SummaryError> {
    let mut warning = None;
    let comparison = if runs.len() > 1 {
        match runs.iter().find(|r| r.arms.is_empty()) {
            Some(r) => {
                warning = Some(format!(
                    "no side-by-side comparison: {} has no statistics ({})",
                    r.source,
                    r.statistics_missing_reason.as_deref().unwrap_or("not complete")
                ));
                None
            }
            None => Some(compare::compare(&runs)?),
        }
    } else {
        None
    };
    let report = SummaryReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::current(),
        settings: SummarySettings {
            bootstrap_resamples: opts.bootstrap,
            seed: opts.seed,
            level: opts.level,
            target: opts.target,
            baseline: opts.baseline.clone(),
        },
        runs,
        comparison,
        regression: Vec::new(),
        plots: Vec::new(),
    };
    Ok((report, warning))
}

/// Every run that does not hold up as complete, as `SOURCE: STATUS: reason; reason`.
pub fn not_complete(runs: &[RunSummary]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.status != SummaryStatus::Complete)
        .map(|r| {
            format!("{}: {}: {}", r.source, r.status.as_str().to_uppercase(), r.status_reasons.join("; "))
        })
        .collect()
}

/// Why the summary does not pass (exit 1), or `None`: the runs that are not complete, and the
/// arms the regression gate finds slower than `--fail-if-slower` allows; `written` says where
/// the summary is.
pub fn not_passed(report: &SummaryReport, written: &str) -> Option<String> {
    let list = |v: Vec<String>| v.join("\n  - ");
    let bad = not_complete(&report.runs);
    let slower: Vec<String> = report.regression.iter().flat_map(regression::failures).collect();
    let mut why = Vec::new();
    if !bad.is_empty() {
        why.push(format!("not every record holds up as a complete run ({written}):\n  - {}", list(bad)));
    }
    if !slower.is_empty() {
        why.push(format!(
            "regression: slower than the baseline record allows ({written}):\n  - {}",
            list(slower)
        ));
    }
    (!why.is_empty()).then(|| why.join("\n"))
}

/// Per-arm figures, ratios, latency and bootstrap intervals.
fn statistics(
    s: &mut RunSummary,
    d: &RunData<'_>,
    baseline: usize,
    energy_ok: bool,
    no_energy: &str,
    opts: &Options,
) {
    let h = d.header;
    let mut totals = Vec::with_capacity(h.arms.len());
    let mut latencies = Vec::with_capacity(h.arms.len());
    for arm in &h.arms {
        let mine: Vec<&BlockSummary> = s.blocks.iter().filter(|b| b.arm == arm.name).collect();
        let figs: Vec<BlockFigures> = mine
            .iter()
            .map(|b| BlockFigures { decisions: b.decisions, duration_s: b.time_s, energy: b.energy })
            .collect();
        let why =
            mine.iter().find_map(|b| b.energy_missing_reason.clone()).unwrap_or_else(|| no_energy.into());
        totals.push(aggregate(&figs, &why));
        let mut lat: Vec<f64> = mine
            .iter()
            .filter_map(|b| d.calls.get(&b.index))
            .flat_map(|c| {
                let ns = if d.is_energy() { c.durations_ns.as_slice() } else { c.latencies_ns() };
                ns.iter().map(|&n| n as f64 / 1e9)
            })
            .collect();
        latencies.push(LatencySummary::from_latencies(&mut lat));
    }
    let names: Vec<String> = h.arms.iter().map(|a| a.name.clone()).collect();
    let intervals = bootstrap_intervals(s, &names, baseline, energy_ok, no_energy, opts);
    s.arms = h
        .arms
        .iter()
        .enumerate()
        .map(|(a, info)| ArmSummary {
            name: info.name.clone(),
            spec: info.spec.clone(),
            vs_baseline: ratios(&totals[baseline], &totals[a]),
            totals: totals[a].clone(),
            latency: latencies[a],
            unstable_calls: s.blocks.iter().filter(|b| b.arm == info.name).map(|b| b.unstable_calls).sum(),
            intervals: intervals.get(a).cloned().unwrap_or_default(),
            identical_to: h.arms[..a].iter().find(|o| info.same_model_as(o)).map(|o| o.name.clone()),
            answers_vs_baseline: match (a == baseline, d.warmup_results.get(&h.arms[baseline].name)) {
                (false, Some(base)) => d
                    .warmup_results
                    .get(&info.name)
                    .and_then(|mine| crate::report::answers::compare_stated(base, mine)),
                _ => None,
            },
        })
        .collect();
}

/// The cycle table of a summarized run's blocks.
pub fn cycle_table(s: &RunSummary, arms: &[String], baseline: usize, with_energy: bool) -> CycleTable {
    let zero = CycleSums { decisions: 0.0, time_s: 0.0, energy_j: None, incremental_j: None };
    let start =
        CycleSums { energy_j: with_energy.then_some(0.0), incremental_j: with_energy.then_some(0.0), ..zero };
    let mut cycles = vec![vec![start; arms.len()]; s.plan.cycles];
    for b in &s.blocks {
        let (Some(row), Some(a)) = (cycles.get_mut(b.cycle as usize), arms.iter().position(|n| *n == b.arm))
        else {
            continue;
        };
        let c = &mut row[a];
        c.decisions += b.decisions as f64;
        c.time_s += b.time_s;
        c.energy_j = c.energy_j.zip(b.energy.map(|e| e.energy_j)).map(|(x, y)| x + y);
        c.incremental_j = c.incremental_j.zip(b.energy.map(|e| e.incremental_energy_j)).map(|(x, y)| x + y);
    }
    CycleTable { cycles, baseline, with_energy }
}

fn bootstrap_intervals(
    s: &mut RunSummary,
    names: &[String],
    baseline: usize,
    energy_ok: bool,
    no_energy: &str,
    opts: &Options,
) -> Vec<ArmIntervals> {
    let cycles = s.plan.cycles;
    if opts.bootstrap == 0 {
        s.bootstrap_missing_reason = Some("--bootstrap 0: no resampling, no intervals".into());
        return Vec::new();
    }
    if cycles < 2 {
        s.bootstrap_missing_reason = Some(format!(
            "{cycles} balanced cycle: resampling whole cycles can only reproduce it, so no interval is formed; run at least 2 cycles (10 or more for an interval worth reading)"
        ));
        return Vec::new();
    }
    let distinct = bootstrap::distinct_resamples(cycles);
    if cycles < FEW_CYCLES {
        s.warnings.push(format!(
            "only {cycles} balanced cycles: the bootstrap resamples whole cycles, so it has at most {distinct:.0} distinct resamples and its intervals show only the variation these {cycles} cycles saw; they cannot capture all background load. Run more cycles (at least {FEW_CYCLES}) for intervals worth a claim."
        ));
    }
    let table = cycle_table(s, names, baseline, energy_ok);
    let resampled = bootstrap::resample(&table, opts.bootstrap, opts.seed);
    s.bootstrap = Some(BootstrapInfo {
        resamples: opts.bootstrap,
        seed: opts.seed,
        cycles,
        distinct_resamples: distinct,
        level: opts.level,
    });
    bootstrap::intervals(resampled, opts.level, |q| bootstrap::missing_reason(q, energy_ok, no_energy))
}

#[cfg(test)]
mod tests;
