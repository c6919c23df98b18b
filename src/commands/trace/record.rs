//! `trace record`: the traced `trace run` child, Instruments attached once it is warm, the
//! exports and their summary. Portable plumbing ([`record_with`]) driven by a thin macOS-only
//! entry point that names the real programs; tests drive it with a stand-in for `xcrun`.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
#[cfg(target_os = "macos")]
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};

use super::{print_summary, workload_plan, write_json, RecordTools};
use crate::cli::{TraceRecordArgs, TraceWorkloadArgs};
use crate::commands::{Failure, Outcome};
use crate::run::duration_flags::positive;
use crate::settings::Settings;
use crate::time::timestamp_stem;
#[cfg(not(target_os = "macos"))]
use crate::trace::child::RECORD_NEEDS_MACOS;
use crate::trace::child::{self, XcrunError};
use crate::trace::recorder::{record_args, table_export_args, toc_export_args, ArtifactLayout};
use crate::trace::{plan_evidence, summarize_files, SummarizeInputs, TableKind, TraceToc};

pub(super) fn record(args: &TraceRecordArgs, settings: &Settings) -> Outcome {
    #[cfg(target_os = "macos")]
    {
        macos::record(args, settings)
    }
    #[cfg(not(target_os = "macos"))]
    {
        let _ = (args, settings);
        Err(Failure::input(anyhow!(RECORD_NEEDS_MACOS)))
    }
}

/// The macOS entry point: the real executable and `xcrun`. Compiled only on macOS.
#[cfg(target_os = "macos")]
mod macos {
    use super::*;

    pub(super) fn record(args: &TraceRecordArgs, settings: &Settings) -> Outcome {
        let exe = std::env::current_exe()
            .context("cannot find the laya-bench executable to start `trace run`")
            .map_err(Failure::run)?;
        record_with(args, &RecordTools { exe, xcrun: PathBuf::from("xcrun") }, settings)
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
    let mut args: Vec<OsString> = vec![
        "trace".into(),
        "run".into(),
        "--model".into(),
        w.model.model.clone().into(),
        "--arm".into(),
        w.arm.text().into(),
        "--workload".into(),
        w.workload.clone().into(),
    ];
    // as given: the child applies the same default, and refuses it with a request file
    if let Some(t) = w.tokens {
        args.extend(["--tokens".into(), t.to_string().into()]);
    }
    args.extend([
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
    ]);
    args
}

/// `trace record` with explicit programs: start `tools.exe trace run ... --ready F`, wait for
/// F, attach `tools.xcrun xctrace record`, export the TOC and the tables, and summarize.
/// On macOS `trace record` calls this with this executable and `xcrun`; tests call it on any
/// OS with a stand-in for `xcrun`. `settings` are the process's (the Core ML compile cache of
/// the compute-plan evidence is under their `HOME`).
pub fn record_with(args: &TraceRecordArgs, tools: &RecordTools, settings: &Settings) -> Outcome {
    let w = &args.workload;
    let choice = &w.arm;
    let seconds = positive("--seconds", args.seconds)?;
    let margin = args.margin;
    let ready_timeout = positive("--ready-timeout", args.ready_timeout)?;
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
        ready.target_pid(),
        seconds,
        args.template
    );
    xcrun(tools, &record_args(&args.template, ready.target_pid(), seconds, &layout.trace()), "record")?;
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
    if target_pid != Some(ready.target_pid()) {
        summary.notes.push(format!(
            "The TOC names target pid {}, but the traced run was pid {}; check the recording.",
            target_pid.map(|p| p.to_string()).unwrap_or_else(|| "none".into()),
            ready.target_pid()
        ));
    }
    write_json(&summary, &layout.summary_json())?;
    let (plan_line, plan) = plan_evidence::evidence_for(&choice.name, &choice.spec, &choice.parsed, settings);
    if let Some(plan) = &plan {
        write_json(plan, &layout.dir.join("compute-plan.json"))?;
    }
    let status =
        child.finish().map_err(|e| Failure::run(anyhow!(e).context("cannot wait for `trace run`")))?;
    print_summary(&summary, args.json)?;
    if !args.json {
        outln!("\nCompute plan: {plan_line}")?;
        outln!(
            "\nArtifacts: {} (run.trace, toc.xml, ane-hw-intervals.xml{}, summary.json{}, trace-run.raw.jsonl, \
             trace-run.log, ready.json)",
            layout.dir.display(),
            if signpost_xml.is_some() { ", coreml-os-signpost.xml" } else { "" },
            if plan.is_some() { ", compute-plan.json" } else { "" }
        )?;
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
    use crate::cli::{ModelArgs, TraceArgs, TraceCommand};
    use crate::run::arm::ArmSpec;

    fn workload_args() -> TraceWorkloadArgs {
        TraceWorkloadArgs {
            model: ModelArgs { model: "builtin:tiny".into() },
            arm: ArmSpec::parse_named("f32=portable:f32").unwrap(),
            workload: "invoice".into(),
            tokens: Some(91),
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
            assert_eq!(err.kind, crate::error::Kind::Input, "{bad}");
        }
    }
}
