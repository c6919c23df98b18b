//! `laya-bench trace`: run one arm for a profiler to attach to (`run`), summarize xctrace
//! exports (`summarize`, any OS), or do both with Instruments in one command (`record`, macOS).
//!
//! `record` is portable plumbing ([`record_with`]) driven by a thin macOS-only entry point
//! that names the real programs (this executable and `xcrun`); tests drive the same plumbing
//! on any OS with a stand-in for `xcrun`.

mod record;
mod run;

use anyhow::{anyhow, Context};

use super::{Failure, Outcome};
use crate::cli::{TraceArgs, TraceCommand, TraceSummarizeArgs, TraceWorkloadArgs};
use crate::report::write_atomic;
use crate::report::Render;
use crate::run::outputs::{check_folder, is_stdout, write_output};
use crate::run::workload::WorkloadPlan;
pub use crate::trace::child::{RecordTools, RECORD_NEEDS_MACOS};
use crate::trace::{summarize_files, SummarizeInputs, TraceSummary};
pub use record::record_with;

/// Run a `trace` subcommand.
pub(crate) fn run(args: &TraceArgs, cx: &crate::backend::Context) -> Outcome {
    match &args.command {
        TraceCommand::Run(a) => run::run(a, cx),
        TraceCommand::Summarize(a) => summarize(a),
        TraceCommand::Record(a) => record::run(a, &cx.settings),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared validation

pub(super) fn workload_plan(w: &TraceWorkloadArgs) -> Result<WorkloadPlan, Failure> {
    Ok(WorkloadPlan::checked(&w.workload, w.tokens, w.length)?)
}

// ---------------------------------------------------------------------------------------------
// trace summarize

fn summarize(args: &TraceSummarizeArgs) -> Outcome {
    let output = args.output.as_deref();
    if let Some(path) = output.filter(|p| !is_stdout(p)) {
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
    if let Some(path) = output {
        let json = serde_json::to_vec_pretty(&summary).map_err(|e| Failure::run(anyhow!(e)))?;
        if is_stdout(path) {
            // `--output -`: standard output carries the JSON alone
            return Ok(write_output(path, &json)?);
        }
        write_atomic(path, &json)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(Failure::run)?;
    }
    print_summary(&summary, args.json)
}

pub(super) fn print_summary(summary: &TraceSummary, json: bool) -> Outcome {
    if json {
        let text = serde_json::to_string_pretty(summary).map_err(|e| Failure::run(anyhow!(e)))?;
        outln!("{text}")?;
    } else {
        crate::commands::write_stdout(&summary.terminal())?;
    }
    Ok(())
}
