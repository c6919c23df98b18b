//! `trace record`: the traced `trace run` child, Instruments attached once it is warm, the
//! exports and their summary ([`crate::trace::record`]). Portable plumbing ([`record_with`])
//! driven by a thin macOS-only entry point that names the real programs; tests drive it with a
//! stand-in for `xcrun`.

use anyhow::anyhow;

use super::{print_summary, workload_plan, RecordTools};
use crate::cli::TraceRecordArgs;
use crate::commands::{Failure, Outcome};
use crate::run::duration_flags::positive;
use crate::settings::Settings;
use crate::time::timestamp_stem;
#[cfg(not(target_os = "macos"))]
use crate::trace::child::RECORD_NEEDS_MACOS;
use crate::trace::record::{child_run_args, record, ChildWorkload, RecordPlan};
use crate::trace::recorder::ArtifactLayout;

pub(super) fn run(args: &TraceRecordArgs, settings: &Settings) -> Outcome {
    #[cfg(target_os = "macos")]
    {
        let exe = std::env::current_exe().map_err(|e| {
            Failure::run(anyhow!(e).context("cannot find the laya-bench executable to start `trace run`"))
        })?;
        record_with(args, &RecordTools { exe, xcrun: std::path::PathBuf::from("xcrun") }, settings)
    }
    #[cfg(not(target_os = "macos"))]
    {
        let _ = (args, settings);
        Err(Failure::input(anyhow!(RECORD_NEEDS_MACOS)))
    }
}

/// `trace record` with explicit programs: start `tools.exe trace run ... --ready F`, wait for
/// F, attach `tools.xcrun xctrace record`, export the TOC and the tables, and summarize.
/// On macOS `trace record` calls this with this executable and `xcrun`; tests call it on any
/// OS with a stand-in for `xcrun`. `settings` are the process's (the Core ML compile cache of
/// the compute-plan evidence is under their `HOME`).
pub fn record_with(args: &TraceRecordArgs, tools: &RecordTools, settings: &Settings) -> Outcome {
    let w = &args.workload;
    let seconds = positive("--seconds", args.seconds)?;
    let ready_timeout = positive("--ready-timeout", args.ready_timeout)?;
    workload_plan(w)?;
    if args.template.trim().is_empty() {
        return Err(Failure::input(anyhow!("--template must name an Instruments template, e.g. 'Core ML'")));
    }
    let layout = ArtifactLayout::new(&args.artifacts, &timestamp_stem("trace"));
    let child = ChildWorkload {
        model: &w.model.model,
        arm: w.arm.text(),
        workload: &w.workload,
        tokens: w.tokens,
        length: w.length,
        warmup: w.warmup,
    };
    let plan = RecordPlan {
        artifacts: &args.artifacts,
        layout: &layout,
        run_args: &child_run_args(&child, seconds + args.margin, &layout.ready(), &layout.raw()),
        template: &args.template,
        seconds,
        ready_timeout,
        arm: (&w.arm.name, &w.arm.spec, &w.arm.parsed),
    };
    let recorded = record(&plan, tools, settings, &mut |note: &str| eprintln!("{note}"))?;
    print_summary(&recorded.summary, args.json)?;
    if !args.json {
        outln!("\nCompute plan: {}", recorded.plan_line)?;
        outln!(
            "\nArtifacts: {} (run.trace, toc.xml, ane-hw-intervals.xml{}, summary.json{}, trace-run.raw.jsonl, \
             trace-run.log, ready.json)",
            layout.dir.display(),
            if recorded.has_signposts { ", coreml-os-signpost.xml" } else { "" },
            if recorded.wrote_plan { ", compute-plan.json" } else { "" }
        )?;
    }
    if !recorded.status.success() {
        return Err(Failure::run(anyhow!(
            "the traced `trace run` exited with {}; the recording and its summary are in {} (see \
             trace-run.log)",
            recorded.status,
            layout.dir.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;
    use std::time::Duration;

    use crate::cli::{TraceArgs, TraceCommand};
    use crate::trace::record::{child_run_args, test_workload};

    #[test]
    fn the_child_parses_what_the_parent_builds() {
        let mut argv = vec![OsString::from("laya-bench")];
        argv.extend(child_run_args(&test_workload(), Duration::from_secs(1), Path::new("r"), Path::new("w")));
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();
        assert!(matches!(
            cli.command,
            crate::cli::Command::Trace(TraceArgs { command: TraceCommand::Run(_) })
        ));
    }
}
