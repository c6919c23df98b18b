//! `trace run`: `speed` with one block on one arm, and a ready file once it is warm
//! ([`crate::run::WhenWarm`] writing a [`ReadyFile`]).

use std::path::PathBuf;

use anyhow::anyhow;

use super::workload_plan;
use crate::cli::TraceRunArgs;
use crate::commands::common::load_bundle;
use crate::commands::{Failure, Outcome};
use crate::report::Render;
use crate::run::duration_flags::positive;
use crate::run::measure_speed;
use crate::run::outputs::{check_folder, given_or_claimed, refuse_existing};
use crate::run::recorder::{HeaderInput, RunIo};
use crate::run::setup::Setup;
use crate::run::{BlockLimit, Plan, WhenWarm};
use crate::stats::LatencySummary;
use crate::time::unix_now;
use crate::trace::recorder::{prepare_ready, ReadyFile, READY_SCHEMA_VERSION};
use crate::trace::run_report::{BlockLatency, ReadyShown, TraceRunReport};

pub(super) fn run(args: &TraceRunArgs, cx: &crate::backend::Context) -> Outcome {
    // From the start, so a signal while the model loads is not lost
    let stop = crate::commands::interrupt::install_or_warn();
    let (w, arm) = (&args.workload, &args.workload.arm);
    let seconds = positive("--seconds", args.seconds)?;
    let workload = workload_plan(w)?;
    // a default name is claimed for this run (`-2`… when a run of the same second took it)
    let (raw_path, claim) = given_or_claimed(args.raw.as_deref(), "trace-run", ".raw.jsonl", "raw file")?;
    if claim.is_none() {
        refuse_existing(&raw_path, args.overwrite)?;
        check_folder("--raw", &raw_path)?;
    }
    if let Some(ready) = &args.ready {
        check_folder("--ready", ready)?;
        prepare_ready(ready)?;
    }
    let bundle = load_bundle(&w.model.model, &cx.hub)?;
    let mut setup = Setup::build(&bundle, std::slice::from_ref(arm), &workload, cx)?;
    let plan = Plan::saturated(1, BlockLimit::Duration(seconds), w.warmup);
    let order = [(0, 0)];
    let command_line = std::env::args().collect();
    let input = HeaderInput { kind: "trace-run", command_line, workload: &workload, order: Some(&order) };
    let mut file = ReadyFile {
        schema_version: READY_SCHEMA_VERSION,
        pid: std::process::id(),
        model_pid: setup.arms[0].backend.answers_requests().and_then(|w| w.process_id()),
        started_unix_s: 0.0,
        ready_unix_s: 0.0,
        arm: arm.name.clone(),
        spec: arm.spec.clone(),
        block_seconds: seconds.as_secs_f64(),
        raw_path: raw_path.display().to_string(),
    };
    let shown = ReadyShown { path: PathBuf::new(), pid: file.pid, model_pid: file.model_pid };
    let mut watch = WhenWarm::new(args.ready.as_deref().map(|path| {
        move |started: f64| {
            (file.started_unix_s, file.ready_unix_s) = (started, unix_now());
            file.write(path)
        }
    }));
    let hurry = stop.map(|_| crate::commands::interrupt::hurry());
    let io = RunIo { raw: &raw_path, overwrite: args.overwrite || claim.is_some(), stop, hurry };
    let measured = measure_speed::measure(&bundle, &mut setup, &input, &plan, io, &mut watch)?;
    let (totals, reason) = (measured.totals, measured.reason);
    if let Some(r) = &reason {
        eprintln!("the run is INCOMPLETE ({r}); the figures below cover what ran");
    }
    let block_s = totals.block_ns[0] as f64 / 1e9;
    let mut latencies: Vec<f64> = totals.durations_ns[0].iter().map(|&d| d as f64 / 1e9).collect();
    let report = TraceRunReport {
        arm: arm.name.clone(),
        spec: arm.spec.clone(),
        block_s,
        warmup_calls: w.warmup.max(setup.workload.requests.len()),
        latency: LatencySummary::from_latencies(&mut latencies).map(|l| BlockLatency {
            calls: l.calls,
            mean_s: l.mean_s,
            p50_s: l.p50_s,
            p95_s: l.p95_s,
        }),
        raw_path: raw_path.clone(),
        ready: args.ready.clone().map(|path| ReadyShown { path, ..shown }),
    };
    crate::commands::write_stdout(&report.terminal())?;
    if let Some(r) = reason {
        return Err(Failure::run(anyhow!(
            "the run is INCOMPLETE ({r}); everything measured so far is in {}",
            raw_path.display()
        )));
    }
    if totals.unstable[0] > 0 {
        return Err(Failure::run(anyhow!(
            "unstable: {} calls did not reproduce the warm-up result (see the call records in {})",
            totals.unstable[0],
            raw_path.display()
        )));
    }
    Ok(())
}
