//! `laya-bench summary`: read raw records, audit and summarize them (`summary/`), compare them
//! with a baseline record (the regression gate), write the JSON, Markdown and CSV exports and
//! the SVG pictures (derived files, replaced), print the Markdown; or append a metadata
//! correction to a raw record (`--correct`).
//!
//! Exit codes: 0 when every record is summarized as complete and no arm is slower than
//! `--fail-if-slower` allows; 1 when one is rejected, incomplete, failed, fails its audit or is
//! slower (everything is still written); 2 for bad input (an unreadable or garbled file, with
//! its line number; a report given instead of its raw record; a baseline record of another
//! model, workload, length or batch; a bad flag).

use std::path::Path;

use anyhow::anyhow;

use super::{Failure, Outcome};
use crate::cli::SummaryArgs;
use crate::report::Render;
use crate::run::outputs::{check_folder, check_new_files, is_stdout, write_output};
use crate::summary::{self, files, Options};

pub(crate) fn run(args: &SummaryArgs) -> Outcome {
    if let Some(raw) = &args.correct {
        let (Some(field), Some(note)) = (&args.field, &args.note) else {
            return Err(Failure::input(anyhow!("--correct needs --field PATH and --note TEXT")));
        };
        files::append_correction(raw, field, note, crate::time::unix_now())?;
        return outln!("appended a metadata_correction of `{field}` to {} (the original fields and measurements are unchanged)", raw.display());
    }
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        level: 0.95,
        target: args.target,
        baseline: args.baseline.clone(),
        whole_cycles: args.whole_cycles,
        fail_if_slower: args.fail_if_slower,
    };
    summary::check_invocation(&opts, &args.raws, [("--field", &args.field), ("--note", &args.note)])?;
    // Every output checked before anything is read: replaced when it exists (derived files),
    // but never a raw record, an input or another output.
    let outputs: Vec<(&str, &Path)> =
        [("--output", &args.output), ("--export-markdown", &args.markdown), ("--export-csv", &args.csv)]
            .into_iter()
            .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
            .collect();
    let inputs: Vec<(&str, &Path)> = args
        .raws
        .iter()
        .map(|p| ("RAW", p.as_path()))
        .chain(args.baseline_record.as_deref().map(|p| ("--baseline-record", p)))
        .collect();
    let paths: Vec<&Path> = inputs.iter().map(|(_, p)| *p).collect();
    check_new_files(&outputs, &paths, true)?;
    let to_stdout = outputs.iter().any(|(_, p)| is_stdout(p));
    files::check_outputs(&outputs)?;
    files::check_inputs(inputs.iter().copied())?;
    if let Some(dir) = &args.plots {
        if dir.exists() && !dir.is_dir() {
            return Err(Failure::input(anyhow!("--plots {}: is a file, not a folder", dir.display())));
        }
        // The folder itself when it exists, else the one it will be created in.
        check_folder("--plots", &if dir.is_dir() { dir.join("plot.svg") } else { dir.clone() })?;
    }
    if let Some(w) = files::refuse_same(&paths, args.allow_same)? {
        eprintln!("warning: {w}");
    }
    if let Some(w) = summary::few_resamples(opts.bootstrap) {
        eprintln!("warning: {w}");
    }
    let raws = args.raws.iter().map(|p| files::read(p)).collect::<Result<Vec<_>, _>>()?;
    let base = args.baseline_record.as_deref().map(|p| files::read(p).map(|r| (p, r))).transpose()?;
    let (mut report, warning) =
        summary::summarize_all(&raws, &args.raws, base.as_ref().map(|(p, r)| (*p, r)), &opts)?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    if let Some(dir) = &args.plots {
        report.plots = files::write_plots(dir, args.markdown.as_deref(), &report.runs, &raws)?;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.markdown();
    for (path, bytes) in [
        (&args.output, json),
        (&args.markdown, markdown.clone().into_bytes()),
        (&args.csv, report.csv().unwrap_or_default().into_bytes()),
    ] {
        if let Some(path) = path {
            write_output(path, &bytes)?;
        }
    }
    // An output on standard output (`-`) keeps it to itself: nothing else is printed there.
    let printed = if to_stdout {
        Ok(())
    } else {
        outln!("{markdown}").and_then(|()| match &args.output {
            Some(o) => outln!("summary: {}", o.display()),
            None => outln!("(no --output: the summary JSON was not written)"),
        })
    };
    let written = args
        .output
        .as_ref()
        .map_or("no --output was given".into(), |o| format!("the summary is written to {}", o.display()));
    let verdict = match summary::not_passed(&report, &written) {
        None => Ok(()),
        Some(why) => Err(Failure::run(anyhow!(why))),
    };
    super::printed_then(printed, verdict)
}
