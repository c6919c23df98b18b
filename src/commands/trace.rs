//! `laya-bench trace`: run one arm for a profiler to attach to (`run`), summarize xctrace
//! exports (`summarize`, any OS), or do both with Instruments in one command (`record`, macOS).
//!
//! `record` is portable plumbing ([`record_with`]) driven by a thin macOS-only entry point
//! that names the real programs (this executable and `xcrun`); tests drive the same plumbing
//! on any OS with a stand-in for `xcrun`.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};

use super::predict::load_bundle;
use super::{Failure, Outcome};
use crate::bench::arm::ArmSpec;
use crate::bench::outputs::{check_folder, refuse_existing};
use crate::bench::record::{HeaderInput, RunIo, Watch};
use crate::bench::setup::{Setup, WorkloadPlan};
use crate::bench::speed;
use crate::bench::time::{self, timestamp_stem, unix_now};
use crate::cli::{
    TraceArgs, TraceCommand, TraceRecordArgs, TraceRunArgs, TraceSummarizeArgs, TraceWorkloadArgs,
};
use crate::protocol::{BlockLimit, Plan};
use crate::report::write_atomic;
use crate::stats::LatencySummary;
use crate::trace::child::{self, XcrunError};
pub use crate::trace::child::{RecordTools, RECORD_NEEDS_MACOS};
use crate::trace::recorder::{
    record_args, table_export_args, toc_export_args, ArtifactLayout, ReadyFile, READY_SCHEMA_VERSION,
};
use crate::trace::render::render_summary;
use crate::trace::{plan_evidence, summarize_files, SummarizeInputs, TableKind, TraceSummary, TraceToc};

/// Run a `trace` subcommand.
pub(crate) fn run(args: &TraceArgs) -> Outcome {
    match &args.command {
        TraceCommand::Run(a) => run_traced(a),
        TraceCommand::Summarize(a) => summarize(a),
        TraceCommand::Record(a) => record(a),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared validation

fn duration_arg(flag: &str, text: &str, allow_zero: bool) -> Result<Duration, Failure> {
    Ok(if allow_zero { time::duration(flag, text)? } else { time::positive_duration(flag, text)? })
}

fn workload_plan(w: &TraceWorkloadArgs) -> Result<WorkloadPlan, Failure> {
    let plan = WorkloadPlan { name: w.workload.clone(), tokens: w.tokens, length: w.length };
    plan.check()?;
    Ok(plan)
}

// ---------------------------------------------------------------------------------------------
// trace run: `speed` with one block on one arm, and a ready file once it is warm

/// Writes the ready file once the arm is warm, so a profiler attaches to the measured block only.
struct ReadyWatch {
    ready: Option<(PathBuf, ReadyFile)>,
}

impl Watch for ReadyWatch {
    fn started(&mut self, started_unix_s: f64) {
        if let Some((_, ready)) = &mut self.ready {
            ready.started_unix_s = started_unix_s;
        }
    }

    fn warmed_up(&mut self, arm: usize, arms: usize) -> Result<(), String> {
        if arm + 1 < arms {
            return Ok(());
        }
        if let Some((path, ready)) = &mut self.ready {
            ready.ready_unix_s = unix_now();
            write_atomic(path, &ready.to_bytes())
                .map_err(|e| format!("cannot write the ready file {}: {e}", path.display()))?;
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

fn run_traced(args: &TraceRunArgs) -> Outcome {
    let w = &args.workload;
    let arm = ArmSpec::parse_named(&w.arm)?;
    let seconds = duration_arg("--seconds", &args.seconds, false)?;
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
    let bundle = load_bundle(&w.model.model)?;
    let mut setup = Setup::build(&bundle, std::slice::from_ref(&arm), &workload)?;
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
    let stop = super::interrupt::install_or_warn();
    let measured = speed::measure(
        &bundle,
        &mut setup,
        &input,
        &plan,
        RunIo { raw: &raw_path, overwrite: args.overwrite, stop },
        &mut watch,
    )?;
    let totals = measured.totals;
    let reason = measured.reason;
    if let Some(r) = &reason {
        eprintln!("the run is INCOMPLETE ({r}); the figures below cover what ran");
    }
    let block_s = totals.block_ns[0] as f64 / 1e9;
    let mut latencies: Vec<f64> = totals.durations_ns[0].iter().map(|&d| d as f64 / 1e9).collect();
    println!(
        "trace run: arm `{}` ({}), one {:.2} s block after {} warm-up calls",
        arm.name,
        arm.spec,
        block_s,
        w.warmup.max(setup.workload.requests.len())
    );
    match LatencySummary::from_latencies(&mut latencies) {
        Some(l) => println!(
            "  calls {} · {:.1} calls/s · latency mean {:.3} ms · p50 {:.3} ms · p95 {:.3} ms",
            l.calls,
            l.calls as f64 / block_s,
            l.mean_s * 1e3,
            l.p50_s * 1e3,
            l.p95_s * 1e3
        ),
        None => println!("  calls 0"),
    }
    println!("  raw record: {}", raw_path.display());
    if let Some((path, file)) = &watch.ready {
        println!("  ready file: {} (pid {})", path.display(), file.pid);
    }
    println!(
        "  note: this run is meant to be traced; an attached profiler perturbs its timing, so these \
         are not speed results (use `laya-bench speed`)"
    );
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

// ---------------------------------------------------------------------------------------------
// trace summarize

fn summarize(args: &TraceSummarizeArgs) -> Outcome {
    if let Some(path) = &args.output {
        check_folder("--output", path)?;
    }
    let summary = summarize_files(SummarizeInputs {
        hardware_xml: &args.hardware_xml,
        toc_xml: &args.toc_xml,
        signpost_xml: args.signpost_xml.as_deref(),
        run_number: args.run,
    })
    // The error's message already holds its cause; `anyhow!(e)` would print the cause twice.
    .map_err(|e| Failure::input(anyhow!("cannot summarize the xctrace exports: {e}")))?;
    if let Some(path) = &args.output {
        write_json(&summary, path)?;
    }
    print_summary(&summary, args.json)
}

fn write_json<T: serde::Serialize>(value: &T, path: &Path) -> Result<(), Failure> {
    let json = serde_json::to_vec_pretty(value).map_err(|e| Failure::run(anyhow!(e)))?;
    write_atomic(path, &json)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::run)
}

fn print_summary(summary: &TraceSummary, json: bool) -> Outcome {
    if json {
        let text = serde_json::to_string_pretty(summary).map_err(|e| Failure::run(anyhow!(e)))?;
        println!("{text}");
    } else {
        print!("{}", render_summary(summary));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// trace record

fn record(args: &TraceRecordArgs) -> Outcome {
    #[cfg(target_os = "macos")]
    {
        macos::record(args)
    }
    #[cfg(not(target_os = "macos"))]
    {
        let _ = args;
        Err(Failure::input(anyhow!(RECORD_NEEDS_MACOS)))
    }
}

/// The macOS entry point: the real executable and `xcrun`. Compiled only on macOS.
#[cfg(target_os = "macos")]
mod macos {
    use super::*;

    pub(super) fn record(args: &TraceRecordArgs) -> Outcome {
        let exe = std::env::current_exe()
            .context("cannot find the laya-bench executable to start `trace run`")
            .map_err(Failure::run)?;
        record_with(args, &RecordTools { exe, xcrun: PathBuf::from("xcrun") })
    }
}

/// An `xcrun xctrace` step: exit 2 when xcrun cannot be started, 1 when the step fails.
fn xcrun(tools: &RecordTools, args: &[OsString], what: &str) -> Result<(), Failure> {
    child::xcrun(tools, args, what).map_err(|e| match e {
        XcrunError::Start { .. } => Failure::input(e),
        XcrunError::Failed { .. } => Failure::run(e),
    })
}

/// A duration as `trace run --seconds` takes it, in whole milliseconds.
fn duration_text(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// The arguments (after the executable) that start the traced `trace run` child.
fn child_run_args(w: &TraceWorkloadArgs, run_for: Duration, ready: &Path, raw: &Path) -> Vec<OsString> {
    vec![
        "trace".into(),
        "run".into(),
        "--model".into(),
        w.model.model.clone().into(),
        "--arm".into(),
        w.arm.clone().into(),
        "--workload".into(),
        w.workload.clone().into(),
        "--tokens".into(),
        w.tokens.to_string().into(),
        "--length".into(),
        w.length.to_string().into(),
        "--warmup".into(),
        w.warmup.to_string().into(),
        "--seconds".into(),
        duration_text(run_for).into(),
        "--ready".into(),
        ready.into(),
        "--raw".into(),
        raw.into(),
    ]
}

/// `trace record` with explicit programs: start `tools.exe trace run ... --ready F`, wait for
/// F, attach `tools.xcrun xctrace record`, export the TOC and the tables, and summarize.
/// On macOS `trace record` calls this with this executable and `xcrun`; tests call it on any
/// OS with a stand-in for `xcrun`.
pub fn record_with(args: &TraceRecordArgs, tools: &RecordTools) -> Outcome {
    let w = &args.workload;
    let choice = ArmSpec::parse_named(&w.arm)?;
    let seconds = duration_arg("--seconds", &args.seconds, false)?;
    let margin = duration_arg("--margin", &args.margin, true)?;
    let ready_timeout = duration_arg("--ready-timeout", &args.ready_timeout, false)?;
    workload_plan(w)?;
    if args.template.trim().is_empty() {
        return Err(Failure::input(anyhow!("--template must name an Instruments template, e.g. 'Core ML'")));
    }
    let layout = ArtifactLayout::new(&args.artifacts, &timestamp_stem("trace"));
    std::fs::create_dir_all(&args.artifacts)
        .and_then(|_| std::fs::create_dir(&layout.dir))
        .with_context(|| format!("cannot create the artifacts folder {}", layout.dir.display()))
        .map_err(Failure::input)?;
    let log = File::create(layout.run_log())
        .with_context(|| format!("cannot create {}", layout.run_log().display()))
        .map_err(Failure::run)?;
    let run_args = child_run_args(w, seconds + margin, &layout.ready(), &layout.raw());
    let mut child = child::spawn_run(tools, &run_args, log)
        .with_context(|| format!("cannot start {} trace run", tools.exe.display()))
        .map_err(Failure::run)?;
    eprintln!("trace record: waiting for `trace run` (pid {}) to load the model and warm up", child.id());
    let ready = child::wait_for_ready(&layout.ready(), &mut child, ready_timeout).map_err(|e| {
        Failure::run(anyhow!(e).context(format!("see {} and the messages above", layout.run_log().display())))
    })?;
    eprintln!(
        "trace record: recording pid {} for {:?} with template '{}'",
        ready.pid, seconds, args.template
    );
    xcrun(tools, &record_args(&args.template, ready.pid, seconds, &layout.trace()), "record")?;
    xcrun(tools, &toc_export_args(&layout.trace(), &layout.toc_xml()), "export --toc")?;
    let toc = TraceToc::read(&layout.toc_xml()).map_err(|e| Failure::run(anyhow!("{e}")))?;
    let run = toc.select_run(None).map_err(|e| Failure::run(anyhow!("{e}")))?;
    let hardware_xpath = run.export_xpath(TableKind::NeuralEngineHardware).ok_or_else(|| {
        Failure::run(anyhow!(
            "the recording has no Neural Engine hardware-intervals table (expected schema {:?}; tables \
             found: {:?}); the template '{}' may lack the Neural Engine instrument",
            TableKind::NeuralEngineHardware.schema_names(),
            run.schema_names(),
            args.template
        ))
    })?;
    xcrun(
        tools,
        &table_export_args(&layout.trace(), &hardware_xpath, &layout.hardware_xml()),
        "export --xpath",
    )?;
    let signpost_xml = match run.export_xpath(TableKind::CoreMlSignpost) {
        Some(xpath) => {
            xcrun(
                tools,
                &table_export_args(&layout.trace(), &xpath, &layout.signpost_xml()),
                "export --xpath",
            )?;
            Some(layout.signpost_xml())
        }
        None => {
            eprintln!(
                "trace record: the recording has no Core ML signpost table (tables: {}); summarizing \
                 without it",
                run.schema_names().join(", ")
            );
            None
        }
    };
    let mut summary = summarize_files(SummarizeInputs {
        hardware_xml: &layout.hardware_xml(),
        toc_xml: &layout.toc_xml(),
        signpost_xml: signpost_xml.as_deref(),
        run_number: None,
    })
    .map_err(|e| Failure::run(anyhow!("cannot summarize the recording's exports: {e}")))?;
    let target_pid = summary.recording.target_process.as_ref().and_then(|p| p.pid);
    if target_pid != Some(ready.pid) {
        summary.notes.push(format!(
            "The TOC names target pid {}, but the traced run was pid {}; check the recording.",
            target_pid.map(|p| p.to_string()).unwrap_or_else(|| "none".into()),
            ready.pid
        ));
    }
    write_json(&summary, &layout.summary_json())?;
    let (plan_line, plan) = plan_evidence::evidence_for(&choice.name, &choice.spec, &choice.parsed);
    if let Some(plan) = &plan {
        write_json(plan, &layout.dir.join("compute-plan.json"))?;
    }
    let status =
        child.finish().map_err(|e| Failure::run(anyhow!(e).context("cannot wait for `trace run`")))?;
    print_summary(&summary, args.json)?;
    if !args.json {
        println!("\nCompute plan: {plan_line}");
        println!(
            "\nArtifacts: {} (run.trace, toc.xml, ane-hw-intervals.xml{}, summary.json{}, trace-run.raw.jsonl, \
             trace-run.log, ready.json)",
            layout.dir.display(),
            if signpost_xml.is_some() { ", coreml-os-signpost.xml" } else { "" },
            if plan.is_some() { ", compute-plan.json" } else { "" }
        );
    }
    if !status.success() {
        return Err(Failure::run(anyhow!(
            "the traced `trace run` exited with {status}; the recording and its summary are in {} (see \
             trace-run.log)",
            layout.dir.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ModelArgs;

    fn workload_args() -> TraceWorkloadArgs {
        TraceWorkloadArgs {
            model: ModelArgs { model: "builtin:tiny".into() },
            arm: "f32=portable:f32".into(),
            workload: "invoice".into(),
            tokens: 91,
            length: 96,
            warmup: 20,
        }
    }

    #[test]
    fn the_child_runs_trace_run_with_the_same_workload_and_the_ready_file() {
        let args = child_run_args(
            &workload_args(),
            Duration::from_millis(25_000),
            Path::new("a/ready.json"),
            Path::new("a/r.raw.jsonl"),
        );
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "trace",
                "run",
                "--model",
                "builtin:tiny",
                "--arm",
                "f32=portable:f32",
                "--workload",
                "invoice",
                "--tokens",
                "91",
                "--length",
                "96",
                "--warmup",
                "20",
                "--seconds",
                "25000ms",
                "--ready",
                "a/ready.json",
                "--raw",
                "a/r.raw.jsonl"
            ]
        );
        // The child parses what the parent builds.
        let mut argv = vec![OsString::from("laya-bench")];
        argv.extend(child_run_args(&workload_args(), Duration::from_secs(1), Path::new("r"), Path::new("w")));
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();
        assert!(matches!(
            cli.command,
            crate::cli::Command::Trace(TraceArgs { command: TraceCommand::Run(_) })
        ));
    }

    #[test]
    fn arms_must_be_name_equals_spec() {
        assert!(ArmSpec::parse_named("f32=portable:f32").is_ok());
        assert!(ArmSpec::parse_named("m=mock:drift-after=3").is_ok());
        for bad in ["portable:f32", "=portable:f32", "x=", "x=nope:1"] {
            let err = Failure::from(ArmSpec::parse_named(bad).err().unwrap());
            assert_eq!(err.code, 2, "{bad}");
        }
    }
}
