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
            p50_s: f64::NAN,
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
            achieved_gflops: gflop.filter(|_| info.backend != "mock").map(|g| g / t),
            answers,
            max_probability_diff_vs_baseline: max_diff,
            answer_mismatches_vs_baseline: mismatches,
        });
    }
    let _ = arms;
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
    }
}
