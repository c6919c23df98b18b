//! `laya-bench summary`: read raw records, audit and summarize them (`summary/`), write the
//! JSON, Markdown and CSV exports and the SVG pictures, print the Markdown; or append a
//! metadata correction to a raw record (`--correct`).
//!
//! Exit codes: 0 when every record is summarized as complete; 1 when one is rejected,
//! incomplete, failed or fails its audit (everything is still written); 2 for bad input (an
//! unreadable or garbled file, with its line number; a bad flag).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use super::{Failure, Outcome};
use crate::cli::SummaryArgs;
use crate::record::{self, RawRun};
use crate::report::write_atomic;
use crate::report::Render;
use crate::run::outputs::{check_folder, check_new_files};
use crate::summary::report::{PlotFile, RunSummary};
use crate::summary::{self, correct::resolve, pictures::pictures, Options};
use crate::time::unix_now;

/// The most bootstrap resamples accepted.
const MAX_RESAMPLES: usize = 10_000_000;

pub(crate) fn run(args: &SummaryArgs) -> Outcome {
    if let Some(raw_path) = &args.correct {
        return correct(args, raw_path);
    }
    // clap lets a flag's `requires` go when the required flag conflicts with one given
    if let Some(flag) = [("--field", args.field.is_some()), ("--note", args.note.is_some())]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    {
        return Err(Failure::input(anyhow!(
            "{flag} belongs to a correction: use `summary --correct RAW --field PATH --note TEXT` (nothing is summarized or corrected otherwise)"
        )));
    }
    let output = args.output.as_ref();
    if args.raws.is_empty() {
        return Err(Failure::input(anyhow!(
            "give at least one raw record (the `--raw` file of `speed` or `energy`)"
        )));
    }
    // every output checked before anything is read: none replaces a raw record given, another
    // output or (without --overwrite) an existing file
    let outputs: Vec<(&str, &std::path::Path)> =
        [("--output", &args.output), ("--markdown", &args.markdown), ("--csv", &args.csv)]
            .into_iter()
            .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
            .collect();
    let inputs: Vec<&std::path::Path> = args.raws.iter().map(|p| p.as_path()).collect();
    check_new_files(&outputs, &inputs, args.overwrite)?;
    if let Some(dir) = args.plots.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        return Err(Failure::input(anyhow!("--plots {}: is a file, not a folder", dir.display())));
    }
    if let Some(dir) = &args.plots {
        // The folder itself when it exists, else the one it will be created in.
        let probe = if dir.is_dir() { dir.join("plot.svg") } else { dir.clone() };
        check_folder("--plots", &probe)?;
    }
    if args.bootstrap > MAX_RESAMPLES {
        return Err(Failure::input(anyhow!(
            "--bootstrap {} is more than {MAX_RESAMPLES} resamples (each arm keeps 7 figures per resample in memory); 10,000 is plenty for 95 % intervals",
            args.bootstrap
        )));
    }
    if let Some(t) = args.target.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(Failure::input(anyhow!("--target must be a positive factor such as 10, got {t}")));
    }
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        level: 0.95,
        target: args.target,
        baseline: args.baseline.clone(),
        whole_cycles: args.whole_cycles,
    };
    if let Some((a, b, how)) = same_record(&args.raws)? {
        let msg = format!(
            "{} and {} are {how}: a run compared with itself shows agreement that was never measured",
            a.display(),
            b.display()
        );
        if !args.allow_same {
            return Err(Failure::input(anyhow!(
                "{msg}; give each record once, or pass --allow-same to compare it with itself on purpose"
            )));
        }
        eprintln!("warning: {msg} (--allow-same)");
    }
    if (1..1000).contains(&args.bootstrap) {
        eprintln!(
            "warning: --bootstrap {} resamples give rough percentile intervals; use at least 1000 (the default is 10000)",
            args.bootstrap
        );
    }
    let mut raws = Vec::with_capacity(args.raws.len());
    let mut runs = Vec::with_capacity(args.raws.len());
    for path in &args.raws {
        let run = record::read(path)
            .map_err(|e| Failure::input(anyhow!(e).context("cannot read the raw record")))?;
        if !matches!(run.header.kind.as_str(), "speed" | "energy") {
            return Err(Failure::input(anyhow!(
                "{} is a `{}` record; summary reads the raw records of `speed` and `energy`",
                path.display(),
                run.header.kind
            )));
        }
        let s = summary::summarize(&run, &path.display().to_string(), &opts).map_err(Failure::input)?;
        runs.push(s);
        raws.push(run);
    }
    let (mut report, warning) = summary::report(runs, &opts).map_err(Failure::input)?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    if let Some(dir) = &args.plots {
        report.plots = write_plots(dir, args.markdown.as_deref(), &report.runs, &raws)?;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.markdown();
    if let Some(output) = output {
        write(output, &json)?;
    }
    if let Some(p) = &args.markdown {
        write(p, markdown.as_bytes())?;
    }
    if let Some(p) = &args.csv {
        write(p, report.csv().unwrap_or_default().as_bytes())?;
    }
    let printed = outln!("{markdown}").and_then(|()| match output {
        Some(o) => outln!("summary: {}", o.display()),
        None => outln!("(no --output: the summary JSON was not written)"),
    });
    let written = output.map(|o| format!("the summary is written to {}", o.display()));
    let bad = summary::not_complete(&report.runs);
    let verdict = if bad.is_empty() {
        Ok(())
    } else {
        Err(Failure::run(anyhow!(
            "not every record holds up as a complete run ({}):\n  - {}",
            written.unwrap_or_else(|| "no --output was given".into()),
            bad.join("\n  - ")
        )))
    };
    super::printed_then(printed, verdict)
}

/// The first two raw records that are the same record: the same file (by path, another path
/// or a link) or byte-identical copies; with how they are the same.
fn same_record(raws: &[PathBuf]) -> Result<Option<(&PathBuf, &PathBuf, &'static str)>, Failure> {
    if raws.len() < 2 {
        return Ok(None);
    }
    // Bytes are compared only between regular files of the same size, read in bounded pieces;
    // a device or pipe is compared by path only (the reader's bounds refuse it if it is no
    // record).
    let size = |p: &PathBuf| std::fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| m.len());
    let sizes: Vec<Option<u64>> = raws.iter().map(size).collect();
    let mut seen: Vec<(&PathBuf, Option<PathBuf>, Option<String>)> = Vec::with_capacity(raws.len());
    for (i, path) in raws.iter().enumerate() {
        let twin = sizes[i].is_some() && sizes.iter().enumerate().any(|(j, s)| j != i && *s == sizes[i]);
        let digest = if twin {
            record::file_digest(path)
                .map_err(|e| Failure::input(anyhow!(e).context("cannot read the raw record")))?
        } else {
            None
        };
        let canonical = path.canonicalize().ok();
        for (other, other_canonical, other_digest) in &seen {
            if canonical.is_some() && canonical == *other_canonical {
                return Ok(Some((other, path, "the same file")));
            }
            if digest.is_some() && digest == *other_digest {
                return Ok(Some((other, path, "byte-identical copies of one record")));
            }
        }
        seen.push((path, canonical, digest));
    }
    Ok(None)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    write_atomic(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::run)
}

/// `--correct RAW --field PATH --note TEXT`: append one `metadata_correction` record.
fn correct(args: &SummaryArgs, raw_path: &Path) -> Outcome {
    let (Some(field), Some(note)) = (&args.field, &args.note) else {
        return Err(Failure::input(anyhow!("--correct needs --field PATH and --note TEXT")));
    };
    if note.trim().is_empty() {
        return Err(Failure::input(anyhow!("--note is empty: say what is wrong and what is right")));
    }
    let run = record::read(raw_path)
        .map_err(|e| Failure::input(anyhow!(e).context("cannot read the raw record")))?;
    let header = serde_json::to_value(&run.header).map_err(|e| Failure::run(anyhow!(e)))?;
    if let Err(why) = resolve(&header, field) {
        return Err(Failure::input(anyhow!(
            "--field `{field}` names no field of the header of {}: {why}; give a dotted path such as `host.cpu_model` or `arms.0.precision`",
            raw_path.display()
        )));
    }
    record::append_correction(raw_path, field, note, unix_now()).map_err(|e| Failure::input(anyhow!(e)))?;
    outln!(
        "appended a metadata_correction of `{field}` to {} (the original fields and measurements are unchanged)",
        raw_path.display()
    )?;
    Ok(())
}

/// The path to put in the Markdown: relative to the Markdown's folder when the picture is
/// inside it, else as written.
fn link(file: &Path, markdown: Option<&Path>) -> String {
    let base =
        markdown.and_then(|m| m.parent()).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    let rel = base.and_then(|b| {
        let (b, f) = (b.canonicalize().ok()?, file.canonicalize().ok()?);
        f.strip_prefix(&b).ok().map(Path::to_path_buf)
    });
    rel.unwrap_or_else(|| file.to_path_buf()).display().to_string()
}

fn write_plots(
    dir: &Path,
    markdown: Option<&Path>,
    runs: &[RunSummary],
    raws: &[RawRun],
) -> Result<Vec<PlotFile>, Failure> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the plots folder {}", dir.display()))
        .map_err(Failure::input)?;
    let mut files = Vec::new();
    for (i, (s, run)) in runs.iter().zip(raws).enumerate() {
        let prefix = if runs.len() > 1 { format!("run{i}-") } else { String::new() };
        // A run summarized by its whole cycles is drawn from them (every sample kept).
        let view =
            s.whole_cycles.as_ref().filter(|w| w.usable).map(|w| record::whole::cut(run, w.cycles_used));
        for (kind, svg) in pictures(s, view.as_ref().unwrap_or(run)) {
            let svg = svg.map_err(|e| Failure::run(anyhow!(e)))?;
            let path: PathBuf = dir.join(format!("{prefix}{kind}.svg"));
            write(&path, svg.as_bytes())?;
            files.push(PlotFile { run: i, kind: kind.into(), path: link(&path, markdown) });
        }
    }
    Ok(files)
}
