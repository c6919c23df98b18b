//! What the commands share at the edge: loading `--model` and building a `--backend` (exit 2
//! on a bad one), and for `speed` and `energy` their common arguments as the library's plans
//! and the set-up's notes on stderr (their live progress is `progress.rs`'s).

use std::path::{Path, PathBuf};

use anyhow::anyhow;

use super::Failure;
use crate::backend::registry::{self, BackendSpec};
use crate::backend::Backend;
use crate::cli::RunArgs;
use crate::laya::bundle::Bundle;
use crate::model::synthetic::published_shape;
use crate::run::arm::{ArmSpec, Swept};
use crate::run::outputs::{ClaimedFile, OutputFiles};
use crate::run::recorder::HeaderInput;
use crate::run::setup::Setup;
use crate::run::workload::WorkloadPlan;

/// Load a model spec into a bundle (exit 2 on any problem).
pub fn load_bundle(spec: &str, hub: &crate::hub::Hub) -> Result<Bundle, Failure> {
    let spec = super::hub_progress::model_spec(spec, hub).map_err(Failure::input)?;
    Bundle::load(&spec, published_shape)
        .map_err(|e| Failure::input(anyhow!(e).context("cannot load the model")))
}

/// Build a backend for a bundle (exit 2 on an unknown or unavailable spec or bad weights).
pub fn build_backend(
    spec: &str,
    bundle: &Bundle,
    cx: &crate::backend::Context,
) -> Result<Box<dyn Backend>, Failure> {
    let parsed = BackendSpec::parse(spec).map_err(Failure::input)?;
    registry::build(&parsed, spec, bundle, None, cx).map_err(Failure::input)
}

/// `--arm NAME=SPEC…`, or every default portable precision (exit 2 on a bad name or spec).
pub(crate) fn arms(args: &RunArgs) -> Result<Vec<ArmSpec>, Failure> {
    Ok(ArmSpec::defaults_or(&args.arms)?)
}

/// [`arms`] over `speed`'s `--batch` and `--threads` lists ([`crate::run::arm::sweep`]: one arm
/// per value of a list, exit 2 for a sweep that cannot run).
pub(crate) fn swept_arms(args: &RunArgs, batch: &[usize], threads: &[usize]) -> Result<Swept, Failure> {
    Ok(crate::run::arm::sweep(arms(args)?, batch, threads)?)
}

/// `--workload`, `--tokens`, `--length`, checked (exit 2).
fn workload(args: &RunArgs) -> Result<WorkloadPlan, Failure> {
    Ok(WorkloadPlan::checked(&args.workload, args.tokens, args.length)?)
}

/// The raw record, report and exports, default names with `prefix`.
fn output_files(args: &RunArgs, prefix: &str) -> OutputFiles {
    OutputFiles::resolve(
        args.raw.clone(),
        args.output.clone(),
        args.export_markdown.clone(),
        args.export_csv.clone(),
        args.overwrite,
        prefix,
    )
}

/// Print a run's table and where its files are; when the report or an export went to
/// standard output (`-`), print neither the table nor the paths there (the export stays clean:
/// `speed --export-csv - > x.csv`) and name the files on standard error instead.
pub(crate) fn print_results(
    files: &OutputFiles,
    markdown: &str,
    out: super::terminal::Output,
) -> Result<(), Failure> {
    let shown = crate::run::outputs::shown;
    let paths = format!("raw record: {}\nreport: {}", files.raw.display(), shown(&files.report));
    if files.to_stdout() {
        eprintln!("{paths}");
        return Ok(());
    }
    if out.quiet {
        return outln!("{paths}");
    }
    outln!("{}", out.style.apply(markdown)).and_then(|()| outln!("{paths}"))
}

/// A `speed`/`energy` run before its arms are built: the workload plan and the output files
/// checked (a default raw name claimed), the model loaded.
pub(crate) struct Prepared {
    pub workload: WorkloadPlan,
    pub files: OutputFiles,
    pub bundle: Bundle,
    /// The default raw name this run created, removed again if the run never writes to it.
    pub claim: Option<ClaimedFile>,
}

impl Prepared {
    /// Whether the run may replace its raw file: `--overwrite`, or the empty file it claimed.
    pub fn replace_raw(&self) -> bool {
        self.files.overwrite || self.claim.is_some()
    }
}

/// A `speed`/`energy` run's workload plan and output files, checked, a default raw name
/// claimed; nothing loaded yet ([`Checked::load`] loads the model).
pub(crate) struct Checked {
    workload: WorkloadPlan,
    files: OutputFiles,
    claim: Option<ClaimedFile>,
}

/// Check the workload flags and every output file and claim a default raw name (exit 2 on any
/// of them). `more_inputs` are files the run reads besides the model and the workload (a
/// replayed record): no output may be one of them.
pub(crate) fn check(args: &RunArgs, prefix: &str, more_inputs: &[&Path]) -> Result<Checked, Failure> {
    let workload = workload(args)?;
    let mut files = output_files(args, prefix);
    // what the run reads: no output may replace it, even with --overwrite
    let mut inputs: Vec<PathBuf> = model_files(&args.model.model);
    if !workload.is_invoice() {
        inputs.push(PathBuf::from(&workload.name));
    }
    inputs.extend(more_inputs.iter().map(|p| p.to_path_buf()));
    files.check(&inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    let claim = files.claim()?;
    Ok(Checked { workload, files, claim })
}

impl Checked {
    /// Load the model `--model` names (exit 2).
    pub(crate) fn load(self, args: &RunArgs, hub: &crate::hub::Hub) -> Result<Prepared, Failure> {
        let bundle = load_bundle(&args.model.model, hub)?;
        let Checked { workload, files, claim } = self;
        Ok(Prepared { workload, files, bundle, claim })
    }
}

/// The files a checkpoint folder given as `--model` is made of (weights and configs at its top,
/// everything in `encoder/`, `tokenizer/` and a Core ML package), or none for a spec that is
/// not a folder. Other files there (a report written beside the model) are not the model's.
pub(crate) fn model_files(spec: &str) -> Vec<PathBuf> {
    const TOP: [&str; 4] =
        ["model.safetensors", "host_weights.safetensors", "rl_agent_config.json", "coreml_config.json"];
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() {
                out.push(p);
            } else if depth > 0 && p.is_dir() {
                walk(&p, depth - 1, out);
            }
        }
    }
    let dir = Path::new(spec);
    if !dir.is_dir() {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = TOP.iter().map(|f| dir.join(f)).filter(|p| p.is_file()).collect();
    for sub in ["encoder", "tokenizer", "model.mlpackage"] {
        walk(&dir.join(sub), 4, &mut out);
    }
    out
}

/// Build the arms and the workload, print their notes (unless `quiet`), and the raw header's
/// inputs for `kind`.
pub(crate) fn set_up<'b>(
    kind: &'static str,
    prepared: &'b Prepared,
    arms: &[ArmSpec],
    cx: &crate::backend::Context,
    quiet: bool,
) -> Result<(Setup<'b>, HeaderInput<'b>), Failure> {
    set_up_batched(kind, prepared, arms, 1, cx, quiet)
}

/// [`set_up`] for calls of `batch` requests each (`speed --batch N`).
pub(crate) fn set_up_batched<'b>(
    kind: &'static str,
    prepared: &'b Prepared,
    arms: &[ArmSpec],
    batch: usize,
    cx: &crate::backend::Context,
    quiet: bool,
) -> Result<(Setup<'b>, HeaderInput<'b>), Failure> {
    let setup = Setup::build_batched(&prepared.bundle, arms, &prepared.workload, batch, cx)?;
    if !quiet {
        print_setup(&setup);
    }
    let input = HeaderInput {
        kind,
        command_line: std::env::args().collect(),
        workload: &prepared.workload,
        order: None,
    };
    Ok((setup, input))
}

/// The set-up's notes and the checkpoint's load warnings, before anything is measured.
fn print_setup(setup: &Setup<'_>) {
    for note in &setup.notes {
        eprintln!("note: {note}");
    }
    for w in &setup.warnings {
        eprintln!("warning: {w}");
    }
}

/// The report's warnings again on stderr, after the Markdown on stdout, unless both streams
/// end in the same place (a terminal, or one log for both), where they were just printed:
/// so `> report.md` still shows them, and a terminal shows them once.
pub(crate) fn repeat_on_stderr<'a>(warnings: impl IntoIterator<Item = &'a String>) {
    if same_destination() {
        return;
    }
    for w in warnings {
        eprintln!("{w}");
    }
}

/// Whether stdout and stderr are the same file, pipe or terminal (device and inode).
#[cfg(unix)]
fn same_destination() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let meta = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned().ok().and_then(|owned| std::fs::File::from(owned).metadata().ok())
    };
    match (meta(std::io::stdout().as_fd()), meta(std::io::stderr().as_fd())) {
        (Some(a), Some(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_destination() -> bool {
    false
}
