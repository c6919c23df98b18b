//! `laya-bench speed`: balanced, audit-grade latency and throughput of one or more arms.

use std::path::Path;

use anyhow::{anyhow, Context};
use indicatif::ProgressBar;

use super::bench::{self, Setup};
use super::predict::load_bundle;
use super::{interrupt, Failure, Outcome};
use crate::cli::SpeedArgs;
use crate::laya::bundle::Bundle;
use crate::laya::host::{HostError, StateResult};
use crate::protocol::{
    self, answer_label, probabilities, Arm, BlockLimit, Clock, Controls, Observer, Plan, Progress, RunEnd,
    RunError,
};
use crate::report::raw::{Header, RawWriter, Record};
use crate::report::speed::{ratio_in_words, ArmResult, OutlierCall, SpeedReport};
use crate::stats::LatencySummary;
use crate::summary::bootstrap::speed_gain_intervals;

fn plan(args: &SpeedArgs) -> Result<Plan, Failure> {
    if args.cycles == 0 {
        return Err(Failure::input(anyhow!("--cycles must be at least 1")));
    }
    let block = match args.calls {
        Some(0) => return Err(Failure::input(anyhow!("--calls must be at least 1"))),
        Some(k) => BlockLimit::Calls(k),
        None => BlockLimit::Duration(bench::positive_duration("--seconds", &args.seconds)?),
    };
    Ok(Plan::saturated(args.cycles, block, args.run.warmup))
}

struct RawObserver<'p> {
    raw: RawWriter,
    bar: &'p ProgressBar,
    answers: Vec<Vec<String>>,
    total_calls: u64,
}

impl Observer for RawObserver<'_> {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &protocol::WarmupRecord) -> std::io::Result<()> {
        let (record, answers) = bench::warmup_record(arms, rec);
        self.raw.write(&record)?;
        self.answers.push(answers);
        self.raw.sync()
    }

    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &protocol::BlockRecord,
        calls: &[protocol::CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> std::io::Result<()> {
        for r in bench::block_records(arms, rec, calls, unstable, &self.answers) {
            self.raw.write(&r)?;
        }
        self.total_calls += calls.len() as u64;
        self.bar.inc(1);
        self.raw.sync()
    }

    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> std::io::Result<()> {
        self.raw.write(&Record::Error { arm: arms[arm].name.clone(), block, message: error.to_string() })?;
        self.raw.sync()
    }

    fn progress(&mut self, arms: &[Arm<'_>], p: &Progress) {
        let rate = if p.elapsed_s > 0.0 { p.calls as f64 / p.elapsed_s } else { 0.0 };
        self.bar.set_message(format!(
            "arm {} · cycle {} · {:.0} calls/s",
            arms[p.arm].name,
            p.cycle + 1,
            rate
        ));
    }
}

fn footer(status: &str, total_calls: u64, reason: Option<String>) -> Record {
    Record::Footer {
        status: status.into(),
        ended_unix_s: bench::unix_now(),
        total_calls,
        reason,
        rejections: vec![],
    }
}

pub(crate) fn run(args: &SpeedArgs) -> Outcome {
    let common = &args.run;
    let specs = bench::arm_specs(common)?;
    let plan = plan(args)?;
    let parsed = bench::check_inputs(common, &specs)?;
    let (raw_path, output_path) = bench::output_paths(common, "speed");
    bench::check_output_files(common, &raw_path, &output_path)?;
    let bundle = load_bundle(&common.model.model)?;
    let setup = bench::build_setup(&bundle, common, &specs, &parsed)?;
    let mut header = bench::header("speed", &bundle, &setup, common, &plan);
    let Setup { mut arms, workload, .. } = setup;
    let writer = RawWriter::open(&raw_path, common.overwrite)
        .with_context(|| format!("cannot create the raw file {}", raw_path.display()))
        .map_err(Failure::input)?;
    let stop = interrupt::install_or_warn();
    let clock = Clock::start();
    header.started_unix_s = bench::unix_now();
    let bar = bench::progress_bar(header.plan.order.len() as u64, common.no_progress);
    let mut obs = RawObserver { raw: writer, bar: &bar, answers: Vec::new(), total_calls: 0 };
    obs.raw.write(&Record::Header(Box::new(header.clone()))).map_err(|e| Failure::run(anyhow!(e)))?;
    obs.raw.sync().map_err(|e| Failure::run(anyhow!(e)))?;
    let controls = Controls { stop, ..Controls::default() };
    let outcome = protocol::run_with(&mut arms, &workload, &plan, &clock, &mut obs, controls);
    bar.finish_and_clear();
    let stopped = |obs: &mut RawObserver<'_>, reason: String, code: u8, e: anyhow::Error| {
        let _ = obs.raw.write(&footer("failed", obs.total_calls, Some(reason)));
        let _ = obs.raw.sync();
        Failure {
            code,
            error: e
                .context(format!("the run stopped; everything measured so far is in {}", raw_path.display())),
        }
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(stopped(&mut obs, e.to_string(), 1, anyhow!(e))),
    };
    let (status, reason) = match outcome.end {
        RunEnd::Completed => ("complete", None),
        RunEnd::Interrupted { during } => ("incomplete", Some(interrupt::reason(&during))),
        RunEnd::CallFailed { arm, phase, error } => {
            let code = if phase == "warm-up" && error.is_input_error() { 2 } else { 1 };
            let e = RunError::Call { arm, phase, error };
            return Err(stopped(&mut obs, e.to_string(), code, anyhow!(e)));
        }
        RunEnd::SensorStopped { during } => {
            let e = anyhow!("the run stopped during {during}");
            return Err(stopped(&mut obs, e.to_string(), 1, e));
        }
    };
    let totals = outcome.totals;
    obs.raw
        .write(&footer(status, obs.total_calls, reason.clone()))
        .and_then(|_| obs.raw.sync())
        .map_err(|e| Failure::run(anyhow!(e).context("cannot finish the raw file")))?;
    let mut report =
        build_report(&header, &totals, &arms, &raw_path, gflop_per_decision(&bundle, common.length));
    report.status = status.into();
    report.status_reason = reason.clone();
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.to_markdown();
    bench::write_outputs(common, &output_path, &json, &markdown, &report.to_csv())?;
    println!("{markdown}");
    println!("raw record: {}\nreport: {}", raw_path.display(), output_path.display());
    for w in &report.warnings {
        eprintln!("{w}");
    }
    if let Some(r) = reason {
        return Err(Failure::run(anyhow!(
            "the run is INCOMPLETE ({r}); everything measured so far is in {}",
            raw_path.display()
        )));
    }
    if !report.stable {
        return Err(Failure::run(anyhow!(
            "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in {})",
            output_path.display()
        )));
    }
    Ok(())
}

/// FLOP of one decision at the padded length, in GFLOP (dense MACs × 2 with the scorer over
/// the 32 marker slots and the action head; see `laya-bench bounds`).
fn gflop_per_decision(bundle: &Bundle, length: usize) -> Option<f64> {
    crate::bounds::flops_per_decision(&bundle.encoder, &bundle.agent, length, 32)
        .ok()
        .map(|f| f.with_tail_flop() as f64 / 1e9)
}

/// Resamples of the speed ratio's bootstrap interval.
const RATIO_RESAMPLES: usize = 10_000;

/// The (decisions, seconds) of every arm per balanced cycle that ran whole (both of its blocks
/// on every arm, none cut short): what the ratio's bootstrap resamples.
fn whole_cycles(totals: &protocol::RunTotals, arms: usize) -> Vec<Vec<(f64, f64)>> {
    let cycles = totals.blocks.iter().map(|b| b.cycle as usize + 1).max().unwrap_or(0);
    let mut out = Vec::new();
    for c in 0..cycles {
        let blocks: Vec<&protocol::BlockRecord> =
            totals.blocks.iter().filter(|b| b.cycle as usize == c).collect();
        if blocks.len() != 2 * arms || blocks.iter().any(|b| b.ended_early) {
            continue;
        }
        let mut row = vec![(0.0, 0.0); arms];
        for b in blocks {
            row[b.arm].0 += b.calls as f64;
            row[b.arm].1 += (b.end_ns - b.start_ns) as f64 / 1e9;
        }
        out.push(row);
    }
    out
}

/// The calls of arm `a` that are statistical outliers, named by block and position.
fn outlier_calls(totals: &protocol::RunTotals, a: usize) -> Vec<OutlierCall> {
    let durations = &totals.durations_ns[a];
    let xs: Vec<f64> = durations.iter().map(|&d| d as f64 / 1e9).collect();
    let mut found = crate::stats::outliers(&xs).into_iter().peekable();
    let mut out = Vec::new();
    let mut first = 0usize;
    for b in totals.blocks.iter().filter(|b| b.arm == a) {
        let end = first + b.calls as usize;
        while let Some(&k) = found.peek().filter(|&&k| k < end) {
            out.push(OutlierCall { block: b.index, call: (k - first) as u64, duration_s: xs[k] });
            found.next();
        }
        first = end;
    }
    out
}

/// The warning for an arm with outlier calls: which, against its P99, and what to do.
fn outlier_warning(r: &ArmResult) -> Option<String> {
    if r.outliers.is_empty() {
        return None;
    }
    let shown: Vec<String> = r
        .outliers
        .iter()
        .take(5)
        .map(|o| format!("block {} call {} ({:.3} ms)", o.block, o.call, o.duration_s * 1e3))
        .collect();
    let more =
        if r.outliers.len() > 5 { format!(" and {} more", r.outliers.len() - 5) } else { String::new() };
    Some(format!(
        "WARNING: arm `{}` has {} statistical outlier call(s) against a median of {:.3} ms and a P99 of {:.3} ms: {}{more}. They are kept in every figure. Something else probably used the machine (another program, frequency scaling, swapping): close other programs and run again, or run more cycles so one disturbance weighs less.",
        r.arm.name,
        r.outliers.len(),
        r.latency.p50_s * 1e3,
        r.latency.p99_s * 1e3,
        shown.join(", ")
    ))
}

fn build_report(
    header: &Header,
    totals: &protocol::RunTotals,
    arms: &[Arm<'_>],
    raw_path: &Path,
    gflop: Option<f64>,
) -> SpeedReport {
    let none: Vec<crate::laya::host::StateResult> = Vec::new();
    let warmup = |i: usize| totals.warmup.get(i).unwrap_or(&none);
    let base_t = if totals.durations_ns[0].is_empty() {
        f64::NAN
    } else {
        totals.block_ns[0] as f64 / 1e9 / totals.durations_ns[0].len() as f64
    };
    let base_probs: Vec<Vec<f64>> = warmup(0).iter().map(probabilities).collect();
    let base_answers: Vec<String> = warmup(0).iter().map(answer_label).collect();
    let mut results = Vec::with_capacity(arms.len());
    for (i, info) in header.arms.iter().enumerate() {
        let calls = totals.durations_ns[i].len() as u64;
        let total_s = totals.block_ns[i] as f64 / 1e9;
        let t = if calls > 0 { total_s / calls as f64 } else { f64::NAN };
        let mut lat: Vec<f64> = totals.durations_ns[i].iter().map(|&d| d as f64 / 1e9).collect();
        let latency = LatencySummary::from_latencies(&mut lat).unwrap_or(LatencySummary {
            calls: 0,
            mean_s: f64::NAN,
            std_s: None,
            p50_s: f64::NAN,
            p90_s: None,
            p95_s: f64::NAN,
            p99_s: f64::NAN,
            min_s: f64::NAN,
            max_s: f64::NAN,
        });
        let answers: Vec<String> = warmup(i).iter().map(answer_label).collect();
        let mut max_diff = 0.0f64;
        for (mine, base) in warmup(i).iter().map(probabilities).zip(&base_probs) {
            for (a, b) in mine.iter().zip(base) {
                max_diff = max_diff.max((a - b).abs());
            }
        }
        let mismatches = answers.iter().zip(&base_answers).filter(|(a, b)| a != b).count();
        results.push(ArmResult {
            arm: info.clone(),
            calls,
            total_s,
            time_per_decision_s: t,
            decisions_per_s: 1.0 / t,
            latency,
            speed_ratio_vs_baseline: base_t / t,
            unstable_calls: totals.unstable[i],
            gflop_per_decision: gflop,
            // A scripted arm does no model arithmetic: a FLOP rate of it would be fiction.
            achieved_gflops: gflop.filter(|_| !info.is_scripted()).map(|g| g / t),
            answers,
            max_probability_diff_vs_baseline: max_diff,
            answer_mismatches_vs_baseline: mismatches,
            speed_ratio_interval: None,
            speed_ratio_interval_missing_reason: None,
            speed_ratio_words: ratio_in_words(base_t / t),
            outliers: outlier_calls(totals, i),
            identical_to: header.arms[..i]
                .iter()
                .find(|o| {
                    o.fingerprint == info.fingerprint && o.backend == info.backend && !info.is_scripted()
                })
                .map(|o| o.name.clone()),
        });
    }
    let _ = arms;
    let names: Vec<String> = header.arms.iter().map(|a| a.name.clone()).collect();
    let cycles = whole_cycles(totals, names.len());
    if cycles.len() >= 2 {
        let intervals = speed_gain_intervals(&cycles, 0, RATIO_RESAMPLES, 0, 0.95);
        for (r, iv) in results.iter_mut().zip(intervals) {
            r.speed_ratio_interval = iv;
        }
    } else {
        for r in &mut results {
            r.speed_ratio_interval_missing_reason = Some(format!(
                "{} whole balanced cycle{}: resampling whole cycles needs at least 2 (10 or more for an interval worth reading); pass --cycles",
                cycles.len(),
                if cycles.len() == 1 { "" } else { "s" }
            ));
        }
    }
    let mut warnings = Vec::new();
    for r in &results {
        if let Some(w) = outlier_warning(r) {
            warnings.push(w);
        }
        if let Some(same) = &r.identical_to {
            warnings.push(format!(
                "WARNING: arm `{}` ({}) is IDENTICAL to `{same}`: the same weights (fingerprint {}) on the same engine, so it measures the same model twice{}",
                r.arm.name,
                r.arm.spec,
                &r.arm.fingerprint[..r.arm.fingerprint.len().min(12)],
                if r.arm.spec.contains("w8") || r.arm.spec.contains("palette") {
                    " (nothing was palettized: on a small model every matrix is below the palettization threshold)"
                } else {
                    ""
                }
            ));
        }
    }
    SpeedReport {
        schema_version: crate::report::speed::SCHEMA_VERSION,
        tool: header.tool.clone(),
        host: header.host.clone(),
        model: header.model.clone(),
        workload: header.workload.clone(),
        plan: header.plan.clone(),
        raw_path: Some(raw_path.display().to_string()),
        stable: totals.unstable.iter().all(|&u| u == 0),
        arms: results,
        status: "complete".into(),
        status_reason: None,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(
        index: u32,
        cycle: u32,
        arm: usize,
        calls: u64,
        start_ns: u64,
        end_ns: u64,
    ) -> protocol::BlockRecord {
        protocol::BlockRecord {
            index,
            cycle,
            arm,
            start_ns,
            end_ns,
            calls,
            unstable_calls: 0,
            missed_deadlines: 0,
            scheduled_calls: None,
            ended_early: false,
        }
    }

    #[test]
    fn outlier_calls_are_named_by_block_and_position() {
        // Arm 0: blocks 0 and 3 with 4 calls each; the 7th call (block 3, call 2) took 321 ms.
        let mut d: Vec<u64> = vec![7_800_000; 8];
        d[6] = 321_000_000;
        d[1] = 7_700_000;
        let totals = protocol::RunTotals {
            durations_ns: vec![d, vec![5_000_000; 4]],
            blocks: vec![block(0, 0, 0, 4, 0, 40), block(1, 0, 1, 4, 40, 80), block(3, 1, 0, 4, 90, 400)],
            ..protocol::RunTotals::default()
        };
        let found = outlier_calls(&totals, 0);
        assert_eq!(found, vec![OutlierCall { block: 3, call: 2, duration_s: 0.321 }]);
        assert!(outlier_calls(&totals, 1).is_empty());
    }

    #[test]
    fn only_whole_cycles_are_resampled() {
        let mut cut = block(3, 1, 0, 2, 60, 70);
        cut.ended_early = true;
        let totals = protocol::RunTotals {
            blocks: vec![
                block(0, 0, 0, 10, 0, 1_000_000_000),
                block(1, 0, 0, 30, 1_000_000_000, 3_000_000_000),
                block(2, 1, 0, 5, 3_000_000_000, 3_500_000_000),
                cut,
            ],
            ..protocol::RunTotals::default()
        };
        // One arm: cycle 0 has its two blocks (40 calls in 3 s); cycle 1 was cut short.
        assert_eq!(whole_cycles(&totals, 1), vec![vec![(40.0, 3.0)]]);
    }
}
