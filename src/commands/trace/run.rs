//! `trace run`: `speed` with one block on one arm, and a ready file once it is warm.

use std::path::{Path, PathBuf};

use anyhow::anyhow;

use super::workload_plan;
use crate::cli::TraceRunArgs;
use crate::commands::common::load_bundle;
use crate::commands::{Failure, Outcome};
use crate::report::write_atomic;
use crate::run::duration_flags::positive;
use crate::run::measure_speed;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::run::recorder::{HeaderInput, RunIo};
use crate::run::setup::Setup;
use crate::run::{Arm, BlockLimit, Observer, Plan, RunError, WarmupRecord};
use crate::stats::LatencySummary;
use crate::time::{timestamp_stem, unix_now};
use crate::trace::recorder::{ReadyFile, READY_SCHEMA_VERSION};

/// Writes the ready file once the arm is warm, so a profiler attaches to the measured block only.
struct ReadyWatch {
    ready: Option<(PathBuf, ReadyFile)>,
}

impl Observer for ReadyWatch {
    fn started(&mut self, started_unix_s: f64) {
        if let Some((_, ready)) = &mut self.ready {
            ready.started_unix_s = started_unix_s;
        }
    }

    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        if rec.arm + 1 < arms.len() {
            return Ok(());
        }
        if let Some((path, ready)) = &mut self.ready {
            ready.ready_unix_s = unix_now();
            write_atomic(path, &ready.to_bytes()).map_err(|e| {
                RunError::Observer(
                    crate::error::Error::run(format!("cannot write the ready file {}", path.display()))
                        .because(e),
                )
            })?;
        }
        Ok(())
    }
}

/// Removes a stale ready file so no waiter mistakes it for this run's; the folder must exist.
fn prepare_ready(path: &Path) -> Result<(), Failure> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Failure::input(anyhow!(
            "--ready {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => {
            Err(Failure::input(anyhow!("--ready {}: cannot remove the stale file: {e}", path.display())))
        }
    }
}

pub(super) fn run(args: &TraceRunArgs, cx: &crate::backend::Context) -> Outcome {
    // From the start, so a signal while the model loads is not lost
    let stop = crate::commands::interrupt::install_or_warn();
    let w = &args.workload;
    let arm = w.arm.clone();
    let seconds = positive("--seconds", args.seconds)?;
    let workload = workload_plan(w)?;
    let raw_path = args
        .raw
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.raw.jsonl", timestamp_stem("trace-run"))));
    refuse_existing(&raw_path, args.overwrite)?;
    check_folder("--raw", &raw_path)?;
    if let Some(ready) = &args.ready {
        check_folder("--ready", ready)?;
        prepare_ready(ready)?;
    }
    let bundle = load_bundle(&w.model.model, &cx.hub)?;
    let mut setup = Setup::build(&bundle, std::slice::from_ref(&arm), &workload, cx)?;
    let plan = Plan::saturated(1, BlockLimit::Duration(seconds), w.warmup);
    let order = [(0, 0)];
    let input = HeaderInput {
        kind: "trace-run",
        command_line: std::env::args().collect(),
        workload: &workload,
        order: Some(&order),
    };
    let ready = args.ready.clone().map(|path| {
        let file = ReadyFile {
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
        (path, file)
    });
    let mut watch = ReadyWatch { ready };
    let measured = measure_speed::measure(
        &bundle,
        &mut setup,
        &input,
        &plan,
        RunIo {
            raw: &raw_path,
            overwrite: args.overwrite,
            stop,
            hurry: stop.map(|_| crate::commands::interrupt::hurry()),
        },
        &mut watch,
    )?;
    let totals = measured.totals;
    let reason = measured.reason;
    if let Some(r) = &reason {
        eprintln!("the run is INCOMPLETE ({r}); the figures below cover what ran");
    }
    let block_s = totals.block_ns[0] as f64 / 1e9;
    let mut latencies: Vec<f64> = totals.durations_ns[0].iter().map(|&d| d as f64 / 1e9).collect();
    outln!(
        "trace run: arm `{}` ({}), one {:.2} s block after {} warm-up calls",
        arm.name,
        arm.spec,
        block_s,
        w.warmup.max(setup.workload.requests.len())
    )?;
    match LatencySummary::from_latencies(&mut latencies) {
        Some(l) => outln!(
            "  calls {} · {:.1} calls/s · latency mean {:.3} ms · p50 {:.3} ms · p95 {:.3} ms",
            l.calls,
            l.calls as f64 / block_s,
            l.mean_s * 1e3,
            l.p50_s * 1e3,
            l.p95_s * 1e3
        )?,
        None => outln!("  calls 0")?,
    }
    outln!("  raw record: {}", raw_path.display())?;
    if let Some((path, file)) = &watch.ready {
        match file.model_pid {
            Some(model) => outln!(
                "  ready file: {} (pid {}; the model runs in the worker, pid {model}: attach there)",
                path.display(),
                file.pid
            )?,
            None => outln!("  ready file: {} (pid {})", path.display(), file.pid)?,
        }
    }
    outln!(
        "  note: this run is meant to be traced; an attached profiler perturbs its timing, so these \
         are not speed results (use `laya-bench speed`)"
    )?;
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
