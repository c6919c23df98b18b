//! `laya-bench trace`: run one arm for a profiler to attach to (`run`), summarize xctrace
//! exports (`summarize`, any OS), or do both with Instruments in one command (`record`, macOS).
//!
//! `record` is portable plumbing ([`record_with`]) driven by a thin macOS-only entry point
//! that names the real programs (this executable and `xcrun`); tests drive the same plumbing
//! on any OS with a stand-in for `xcrun`.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use super::bench::{self, arm_info, model_json, refuse_existing, timestamp_stem, unix_now};
use super::predict::load_bundle;
use super::{Failure, Outcome};
use crate::backend::registry::{self, BackendSpec};
use crate::backend::{ShapeCaps, ShapeMode};
use crate::cli::{
    TraceArgs, TraceCommand, TraceRecordArgs, TraceRunArgs, TraceSummarizeArgs, TraceWorkloadArgs,
};
use crate::laya::bundle::Bundle;
use crate::laya::host::{HostError, StateResult};
use crate::protocol::{self, Arm, BlockLimit, Clock, Controls, Observer, Plan, RunEnd, RunError};
use crate::report::raw::{self, Header, HostInfo, PlanInfo, RawWriter, Record, ToolInfo, WorkloadInfo};
use crate::report::write_atomic;
use crate::stats::LatencySummary;
use crate::trace::recorder::{
    record_args, table_export_args, toc_export_args, ArtifactLayout, ReadyFile, READY_SCHEMA_VERSION,
};
use crate::trace::summary::{ActivityTotals, TableSummary};
use crate::trace::{summarize_files, SummarizeInputs, TableKind, TraceSummary, TraceToc};

/// What `trace record` says on an OS without Instruments.
pub const RECORD_NEEDS_MACOS: &str = "trace record needs macOS with Xcode command-line tools (xcrun \
     xctrace); on Linux use `trace run --ready FILE` and attach perf";

/// How often a waiter looks for the ready file.
const READY_POLL: Duration = Duration::from_millis(50);

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

/// The arm as `(name, spec text, parsed spec)`.
struct ArmChoice {
    name: String,
    spec: String,
    parsed: BackendSpec,
}

fn arm_choice(arm: &str) -> Result<ArmChoice, Failure> {
    let (name, spec) =
        arm.split_once('=').filter(|(n, s)| !n.is_empty() && !s.is_empty()).ok_or_else(|| {
            Failure::input(anyhow!("--arm `{arm}`: write it as NAME=SPEC, e.g. --arm f32=portable:f32"))
        })?;
    let parsed =
        BackendSpec::parse(spec).map_err(|e| Failure::input(anyhow!(e).context(format!("--arm `{arm}`"))))?;
    Ok(ArmChoice { name: name.to_owned(), spec: spec.to_owned(), parsed })
}

fn duration_arg(flag: &str, text: &str, allow_zero: bool) -> Result<Duration, Failure> {
    let d =
        crate::power::parse_duration(text).map_err(|e| Failure::input(anyhow!("{flag} `{text}`: {e}")))?;
    if d.is_zero() && !allow_zero {
        return Err(Failure::input(anyhow!("{flag} must be longer than zero")));
    }
    Ok(d)
}

fn check_shape(w: &TraceWorkloadArgs) -> Result<(), Failure> {
    super::bench::check_length(&w.workload, w.tokens, w.length)
}

// ---------------------------------------------------------------------------------------------
// trace run

/// Receives the run's records, writes them to the raw file, and writes the ready file once warm.
struct TraceObserver {
    raw: RawWriter,
    /// Warm-up answers per arm (one arm here), as [`bench::block_records`] reads them.
    answers: Vec<Vec<String>>,
    total_calls: u64,
    ready: Option<(PathBuf, ReadyFile)>,
    ready_error: Option<String>,
}

impl Observer for TraceObserver {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &protocol::WarmupRecord) -> std::io::Result<()> {
        let (record, answers) = bench::warmup_record(arms, rec);
        self.raw.write(&record)?;
        self.raw.sync()?;
        self.answers.push(answers);
        if let Some((path, ready)) = &mut self.ready {
            ready.ready_unix_s = unix_now();
            if let Err(e) = write_atomic(path, &ready.to_bytes()) {
                let message = format!("cannot write the ready file {}: {e}", path.display());
                self.ready_error = Some(message.clone());
                return Err(std::io::Error::new(e.kind(), message));
            }
        }
        Ok(())
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

fn build_arm<'b>(bundle: &'b Bundle, choice: &ArmChoice, length: usize) -> Result<Arm<'b>, Failure> {
    let shapes = ShapeCaps {
        batch_size: 1,
        max_length: length,
        min_length: length,
        max_options: 32,
        mode: ShapeMode::Fixed,
    };
    let backend = registry::build(&choice.parsed, &choice.spec, bundle, Some(shapes))
        .map_err(|e| Failure::input(anyhow!(e).context(format!("arm `{}`", choice.name))))?;
    let caps = backend.info().shapes.clone();
    if caps.max_length != length || caps.mode != ShapeMode::Fixed && !matches!(caps.mode, ShapeMode::Range) {
        return Err(Failure::input(anyhow!(
            "arm `{}` cannot run length {length} (it runs {})",
            choice.name,
            caps.max_length
        )));
    }
    let host = registry::host_for(bundle, caps, backend.info());
    Ok(Arm { name: choice.name.clone(), spec: choice.spec.clone(), backend, host })
}

fn run_traced(args: &TraceRunArgs) -> Outcome {
    let w = &args.workload;
    let choice = arm_choice(&w.arm)?;
    let seconds = duration_arg("--seconds", &args.seconds, false)?;
    check_shape(w)?;
    let raw_path = args
        .raw
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.raw.jsonl", timestamp_stem("trace-run"))));
    refuse_existing(&raw_path, args.overwrite)?;
    bench::check_folder("--raw", &raw_path)?;
    if let Some(ready) = &args.ready {
        bench::check_folder("--ready", ready)?;
        prepare_ready(ready)?;
    }
    let bundle = load_bundle(&w.model.model)?;
    let mut arms = vec![build_arm(&bundle, &choice, w.length)?];
    let invoice = w.workload == "invoice";
    let (built, work) = super::bench::build_workload(&arms[0].host, &w.workload, w.tokens, w.length)?;
    let plan = Plan::saturated(1, BlockLimit::Duration(seconds), w.warmup);
    let mut header = Header {
        schema_version: raw::SCHEMA_VERSION,
        kind: "trace-run".into(),
        tool: ToolInfo::current(),
        command_line: std::env::args().collect(),
        started_unix_s: 0.0,
        clock: "monotonic ns since started_unix_s".into(),
        host: HostInfo::detect(),
        model: model_json(&bundle),
        arms: vec![arm_info(&arms[0])],
        workload: WorkloadInfo {
            name: built.name.clone(),
            requests: built.requests.len(),
            tokens_per_row: built.tokens_per_row.clone(),
            target_tokens: invoice.then_some(w.tokens),
            length: w.length,
        },
        plan: PlanInfo {
            cycles: 1,
            block_seconds: Some(seconds.as_secs_f64()),
            block_calls: None,
            warmup_calls: w.warmup,
            order: vec![choice.name.clone()],
        },
        sensor: None,
        energy: None,
    };
    let writer = RawWriter::open(&raw_path, args.overwrite)
        .with_context(|| format!("cannot create the raw file {}", raw_path.display()))
        .map_err(Failure::input)?;
    let clock = Clock::start();
    header.started_unix_s = unix_now();
    let ready = args.ready.clone().map(|path| {
        let file = ReadyFile {
            schema_version: READY_SCHEMA_VERSION,
            pid: std::process::id(),
            started_unix_s: header.started_unix_s,
            ready_unix_s: 0.0,
            arm: choice.name.clone(),
            spec: choice.spec.clone(),
            block_seconds: seconds.as_secs_f64(),
            raw_path: raw_path.display().to_string(),
        };
        (path, file)
    });
    let mut obs =
        TraceObserver { raw: writer, answers: Vec::new(), total_calls: 0, ready, ready_error: None };
    obs.raw.write(&Record::Header(Box::new(header))).map_err(|e| Failure::run(anyhow!(e)))?;
    obs.raw.sync().map_err(|e| Failure::run(anyhow!(e)))?;
    let stop = super::interrupt::install_or_warn();
    let order = [(0, 0)];
    let controls = Controls { stop, order: Some(&order), ..Controls::default() };
    let outcome = protocol::run_with(&mut arms, &work, &plan, &clock, &mut obs, controls);
    let footer = |status: &str, total_calls: u64, reason: Option<String>| Record::Footer {
        status: status.into(),
        ended_unix_s: unix_now(),
        total_calls,
        reason,
        rejections: vec![],
    };
    let failed = |obs: &mut TraceObserver, code: u8, e: anyhow::Error| {
        let _ = obs.raw.write(&footer("failed", obs.total_calls, Some(e.to_string())));
        let _ = obs.raw.sync();
        let error = match obs.ready_error.take() {
            Some(message) => anyhow!(message),
            None => e,
        };
        Failure {
            code,
            error: error
                .context(format!("the run stopped; everything measured so far is in {}", raw_path.display())),
        }
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(failed(&mut obs, 1, anyhow!(e))),
    };
    let reason = match outcome.end {
        RunEnd::Completed => None,
        RunEnd::Interrupted { during } => Some(super::interrupt::reason(&during)),
        RunEnd::CallFailed { arm, phase, error } => {
            let code = if phase == "warm-up" && error.is_input_error() { 2 } else { 1 };
            return Err(failed(&mut obs, code, anyhow!(RunError::Call { arm, phase, error })));
        }
        RunEnd::SensorStopped { during } => {
            return Err(failed(&mut obs, 1, anyhow!("the run stopped during {during}")))
        }
    };
    let totals = outcome.totals;
    let status = if reason.is_some() { "incomplete" } else { "complete" };
    obs.raw
        .write(&footer(status, obs.total_calls, reason.clone()))
        .and_then(|_| obs.raw.sync())
        .map_err(|e| Failure::run(anyhow!(e).context("cannot finish the raw file")))?;
    if let Some(r) = &reason {
        eprintln!("the run is INCOMPLETE ({r}); the figures below cover what ran");
    }
    let block_s = totals.block_ns[0] as f64 / 1e9;
    let mut latencies: Vec<f64> = totals.durations_ns[0].iter().map(|&d| d as f64 / 1e9).collect();
    println!(
        "trace run: arm `{}` ({}), one {:.2} s block after {} warm-up calls",
        choice.name,
        choice.spec,
        block_s,
        w.warmup.max(work.requests.len())
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
    if let Some((path, file)) = &obs.ready {
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
        bench::check_folder("--output", path)?;
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

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn activity_line(what: &str, a: &ActivityTotals, recording_s: Option<f64>) -> String {
    let duty = match (a.duty_cycle_fraction, recording_s) {
        (Some(f), Some(s)) => format!("duty cycle {:.3} % of the {s:.3} s recording", f * 100.0),
        (Some(f), None) => format!("duty cycle {:.3} %", f * 100.0),
        (None, _) => {
            format!(
                "duty cycle n/a ({})",
                a.duty_cycle_missing_reason.as_deref().unwrap_or("no reason given")
            )
        }
    };
    format!(
        "  {what}: {} intervals · active {} · busy union {} · {duty}\n",
        a.interval_count,
        ms(a.active_ns),
        ms(a.busy_union_ns)
    )
}

fn render_table(title: &str, t: &TableSummary, recording_s: Option<f64>) -> String {
    let mut out = format!(
        "{title} (`{}`): {} rows ({} without start, {} without duration, {} idle)\n",
        t.schema, t.row_count, t.rows_without_start, t.rows_without_duration, t.rows_idle
    );
    let width = t.by_label.iter().map(|l| l.label.as_deref().unwrap_or("(no label)").chars().count()).max();
    let width = width.unwrap_or(0).max(5);
    out.push_str(&format!(
        "  {:<width$}  {:<10}  {:>5}  {:>5}  {:>12}\n",
        "label", "kind", "rows", "timed", "total"
    ));
    for l in &t.by_label {
        let kind =
            serde_json::to_value(l.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        out.push_str(&format!(
            "  {:<width$}  {:<10}  {:>5}  {:>5}  {:>12}\n",
            l.label.as_deref().unwrap_or("(no label)"),
            kind,
            l.count,
            l.timed_count,
            ms(l.total_duration_ns)
        ));
    }
    out.push_str(&activity_line("all", &t.all, recording_s));
    out.push_str(&activity_line("without load/compile", &t.excluding_load_and_compile, recording_s));
    out
}

/// The human-readable summary: the caveats first, then the recording, the tables, the
/// containment count and the notes.
fn render_summary(s: &TraceSummary) -> String {
    let mut out = String::from("Caveats:\n");
    for statement in &s.caveats.statements {
        out.push_str(&format!("  - {statement}\n"));
    }
    let r = &s.recording;
    let unknown = || "unknown".to_owned();
    out.push_str(&format!(
        "\nRecording: run {} · template {} · duration {}\n",
        r.run_number.map(|n| n.to_string()).unwrap_or_else(unknown),
        r.template_name.as_deref().map(|t| format!("\"{t}\"")).unwrap_or_else(unknown),
        r.duration_s.map(|d| format!("{d:.3} s")).unwrap_or_else(unknown),
    ));
    let target = match &r.target_process {
        Some(p) => format!(
            "{} (pid {}, {})",
            p.name.as_deref().unwrap_or("unnamed"),
            p.pid.map(|p| p.to_string()).unwrap_or_else(unknown),
            p.attach_type.as_deref().unwrap_or("how targeted unknown")
        ),
        None => unknown(),
    };
    out.push_str(&format!("  target process: {target}\n"));
    if let Some(start) = &r.start_date {
        out.push_str(&format!("  started: {start}"));
        if let Some(reason) = &r.end_reason {
            out.push_str(&format!(" · ended: {reason}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("  tables: {}\n\n", r.tables.join(", ")));
    out.push_str(&render_table("Neural Engine hardware intervals", &s.hardware, r.duration_s));
    if let Some(signposts) = &s.signposts {
        out.push('\n');
        out.push_str(&render_table("Core ML signposts", signposts, r.duration_s));
    }
    if let Some(c) = &s.containment {
        out.push_str(&format!(
            "\nContainment: {} of {} timed hardware intervals (without load/compile) lie inside this \
             recording's signposted predictions\n",
            c.within_signpost_predictions, c.hardware_intervals
        ));
    }
    if !s.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for note in &s.notes {
            out.push_str(&format!("  - {note}\n"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// trace record

/// The programs `trace record` runs: the laya-bench executable (for `trace run`) and `xcrun`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTools {
    /// The laya-bench executable started as `laya-bench trace run ...`.
    pub exe: PathBuf,
    /// The `xcrun` program (`xcrun xctrace record|export ...`).
    pub xcrun: PathBuf,
}

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

/// A child process that is killed and reaped if it is dropped before [`ChildGuard::finish`].
struct ChildGuard(Option<Child>);

impl ChildGuard {
    fn id(&self) -> u32 {
        self.0.as_ref().map(Child::id).unwrap_or(0)
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self.0.as_mut() {
            Some(child) => child.try_wait(),
            None => Ok(None),
        }
    }

    fn finish(mut self) -> std::io::Result<ExitStatus> {
        match self.0.take() {
            Some(mut child) => child.wait(),
            None => Err(std::io::Error::other("the child was already reaped")),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Why waiting for a ready file failed.
#[derive(Debug, thiserror::Error)]
enum ReadyWaitError {
    #[error("the traced run exited ({0}) before it was warm")]
    Exited(ExitStatus),
    #[error(
        "the traced run did not write {path} within {timeout:?} (raise --ready-timeout for a large model)"
    )]
    Timeout { path: String, timeout: Duration },
    #[error("{path} names pid {found}, but the traced run is pid {expected}")]
    WrongPid { path: String, found: u32, expected: u32 },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("cannot watch the traced run: {0}")]
    Io(#[from] std::io::Error),
}

/// Polls `path` until it holds a ready file of `child`, the child exits, or `timeout` passes.
fn wait_for_ready(
    path: &Path,
    child: &mut ChildGuard,
    timeout: Duration,
) -> Result<ReadyFile, ReadyWaitError> {
    let deadline = Instant::now() + timeout;
    let shown = || path.display().to_string();
    loop {
        match std::fs::read(path) {
            Ok(bytes) => {
                let ready = ReadyFile::parse(&bytes)
                    .map_err(|e| ReadyWaitError::Invalid { path: shown(), message: e.to_string() })?;
                if ready.pid != child.id() {
                    return Err(ReadyWaitError::WrongPid {
                        path: shown(),
                        found: ready.pid,
                        expected: child.id(),
                    });
                }
                return Ok(ready);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ReadyWaitError::Io(e)),
        }
        if let Some(status) = child.try_wait()? {
            return Err(ReadyWaitError::Exited(status));
        }
        if Instant::now() >= deadline {
            return Err(ReadyWaitError::Timeout { path: shown(), timeout });
        }
        std::thread::sleep(READY_POLL);
    }
}

/// Runs `xcrun` with `args`, its standard output sent to our standard error.
fn xcrun(tools: &RecordTools, args: &[OsString], what: &str) -> Result<(), Failure> {
    let status = Command::new(&tools.xcrun)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| {
            Failure::input(anyhow!("cannot start {} ({e}); {RECORD_NEEDS_MACOS}", tools.xcrun.display()))
        })?;
    if !status.success() {
        return Err(Failure::run(anyhow!("`xcrun xctrace {what}` failed ({status})")));
    }
    Ok(())
}

/// Compute-plan evidence for the traced arm, shown next to the trace summary.
///
/// For a Core ML arm, the one-line summary of its `MLComputePlan` placement
/// ([`crate::backend::coreml::compute_plan_for`], the [`crate::trace::ComputePlanReport`] that
/// `convert-check` also prints) with the report itself; for other arms, why there is none.
fn compute_plan_evidence(choice: &ArmChoice) -> (String, Option<crate::trace::ComputePlanReport>) {
    match &choice.parsed {
        BackendSpec::Portable(_)
        | BackendSpec::PortablePalette { .. }
        | BackendSpec::Mock { .. }
        | BackendSpec::Mlx(_) => {
            (format!("not applicable: arm `{}` is {}, not a Core ML arm", choice.name, choice.spec), None)
        }
        BackendSpec::CoreMl(cm) => {
            let units = cm.units.unwrap_or_else(|| crate::backend::coreml::default_units_for(&cm.bundle));
            match crate::backend::coreml::compute_plan_for(&cm.bundle, units) {
                Ok(r) => (
                    format!(
                        "MLComputePlan ({}): {} operations, {} placed, Neural Engine share of placed {} \
                         (expected placement before running, not proof of execution; the intervals \
                         above are the execution evidence)",
                        units.name(),
                        r.op_count,
                        r.placed_op_count,
                        r.neural_engine_share_of_placed_fraction.map_or_else(
                            || "n/a (nothing placed)".to_string(),
                            |f| format!("{:.1} %", f * 100.0)
                        )
                    ),
                    Some(r),
                ),
                Err(e) => (format!("unavailable for arm `{}`: {e}", choice.name), None),
            }
        }
    }
}

/// `trace record` with explicit programs: start `tools.exe trace run ... --ready F`, wait for
/// F, attach `tools.xcrun xctrace record`, export the TOC and the tables, and summarize.
/// On macOS `trace record` calls this with this executable and `xcrun`; tests call it on any
/// OS with a stand-in for `xcrun`.
pub fn record_with(args: &TraceRecordArgs, tools: &RecordTools) -> Outcome {
    let w = &args.workload;
    let choice = arm_choice(&w.arm)?;
    let seconds = duration_arg("--seconds", &args.seconds, false)?;
    let margin = duration_arg("--margin", &args.margin, true)?;
    let ready_timeout = duration_arg("--ready-timeout", &args.ready_timeout, false)?;
    check_shape(w)?;
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
    let child = Command::new(&tools.exe)
        .args(child_run_args(w, seconds + margin, &layout.ready(), &layout.raw()))
        .stdin(Stdio::null())
        .stdout(log)
        .spawn()
        .with_context(|| format!("cannot start {} trace run", tools.exe.display()))
        .map_err(Failure::run)?;
    let mut child = ChildGuard(Some(child));
    eprintln!("trace record: waiting for `trace run` (pid {}) to load the model and warm up", child.id());
    let ready = wait_for_ready(&layout.ready(), &mut child, ready_timeout).map_err(|e| {
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
    let (plan_line, plan) = compute_plan_evidence(&choice);
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
        assert!(arm_choice("f32=portable:f32").is_ok());
        assert!(arm_choice("m=mock:drift-after=3").is_ok());
        for bad in ["portable:f32", "=portable:f32", "x=", "x=nope:1"] {
            let err = arm_choice(bad).err().unwrap();
            assert_eq!(err.code, 2, "{bad}");
        }
    }

    #[test]
    fn the_human_summary_puts_the_caveats_first_and_reports_the_fixture_totals() {
        let summary = summarize_files(SummarizeInputs {
            hardware_xml: Path::new("fixtures/trace/synthetic_ane_hw_intervals.xml"),
            toc_xml: Path::new("fixtures/trace/synthetic_toc.xml"),
            signpost_xml: Some(Path::new("fixtures/trace/synthetic_coreml_os_signpost.xml")),
            run_number: None,
        })
        .unwrap();
        let text = render_summary(&summary);
        assert!(
            text.starts_with("Caveats:\n  - The Neural Engine hardware-intervals table is global"),
            "{text}"
        );
        assert!(text.find("never latency results").unwrap() < text.find("Recording:").unwrap());
        assert!(text.contains("template \"Core ML\" · duration 3.000 s"), "{text}");
        assert!(text.contains("laya-bench (pid 4242, attached)"), "{text}");
        assert!(
            text.contains("all: 5 intervals · active 10.092 ms · busy union 9.092 ms · duty cycle 0.303 %"),
            "{text}"
        );
        assert!(text.contains("Containment: 2 of 5"), "{text}");
        assert!(text.contains("mobilenet_main Prediction"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn waiting_for_ready_reports_a_child_that_exits_first() {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let mut guard = ChildGuard(Some(child));
        let err =
            wait_for_ready(&dir.path().join("ready.json"), &mut guard, Duration::from_secs(10)).unwrap_err();
        assert!(matches!(err, ReadyWaitError::Exited(s) if s.code() == Some(3)), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn waiting_for_ready_times_out_and_refuses_another_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready.json");
        let child = Command::new("sh").args(["-c", "sleep 5"]).spawn().unwrap();
        let mut guard = ChildGuard(Some(child));
        let err = wait_for_ready(&path, &mut guard, Duration::from_millis(120)).unwrap_err();
        assert!(matches!(err, ReadyWaitError::Timeout { .. }), "{err}");
        let ready = ReadyFile {
            schema_version: READY_SCHEMA_VERSION,
            pid: guard.id() + 1,
            started_unix_s: 0.0,
            ready_unix_s: 0.0,
            arm: "a".into(),
            spec: "mock:ok".into(),
            block_seconds: 1.0,
            raw_path: "r".into(),
        };
        std::fs::write(&path, ready.to_bytes()).unwrap();
        let err = wait_for_ready(&path, &mut guard, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, ReadyWaitError::WrongPid { .. }), "{err}");
        // Dropping the guard kills and reaps the sleeping child.
    }
}
