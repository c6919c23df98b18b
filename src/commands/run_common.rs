//! What `speed` and `energy` share at the command edge: their common arguments as the
//! library's plans, the set-up's notes on stderr, and the live progress bar.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::predict::load_bundle;
use super::Failure;
use crate::bench::arm::ArmSpec;
use crate::bench::outputs::OutputFiles;
use crate::bench::record::{HeaderInput, Watch};
use crate::bench::setup::{Setup, WorkloadPlan};
use crate::cli::RunArgs;
use crate::laya::bundle::Bundle;
use crate::protocol::BlockRecord;

/// `--arm NAME=SPEC…`, or every default portable precision (exit 2 on a bad name or spec).
pub(crate) fn arms(args: &RunArgs) -> Result<Vec<ArmSpec>, Failure> {
    Ok(ArmSpec::defaults_or(&args.arms)?)
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

/// A `speed`/`energy` run before its arms are built: the workload plan and the output files
/// checked, the model loaded.
pub(crate) struct Prepared {
    pub workload: WorkloadPlan,
    pub files: OutputFiles,
    pub bundle: Bundle,
}

/// Check the workload flags and every output file, then load the model (exit 2 on any of them).
pub(crate) fn prepare(args: &RunArgs, prefix: &str) -> Result<Prepared, Failure> {
    let workload = workload(args)?;
    let files = output_files(args, prefix);
    // what the run reads: no output may replace it, even with --overwrite
    let mut inputs: Vec<PathBuf> = model_files(&args.model.model);
    if !workload.is_invoice() {
        inputs.push(PathBuf::from(&workload.name));
    }
    files.check(&inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    let bundle = load_bundle(&args.model.model)?;
    Ok(Prepared { workload, files, bundle })
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

/// Build the arms and the workload, print their notes, and the raw header's inputs for `kind`.
pub(crate) fn set_up<'b>(
    kind: &'static str,
    prepared: &'b Prepared,
    arms: &[ArmSpec],
) -> Result<(Setup<'b>, HeaderInput<'b>), Failure> {
    set_up_batched(kind, prepared, arms, 1)
}

/// [`set_up`] for calls of `batch` requests each (`speed --batch N`).
pub(crate) fn set_up_batched<'b>(
    kind: &'static str,
    prepared: &'b Prepared,
    arms: &[ArmSpec],
    batch: usize,
) -> Result<(Setup<'b>, HeaderInput<'b>), Failure> {
    let setup = Setup::build_batched(&prepared.bundle, arms, &prepared.workload, batch)?;
    print_setup(&setup);
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

/// The progress line: blocks done, elapsed time and the estimated time left (from the blocks
/// done so far), and the live message.
pub(crate) const PROGRESS_TEMPLATE: &str =
    "{spinner} [{bar:30}] {pos}/{len} blocks · {elapsed_precise} elapsed · ETA {eta} · {msg}";

/// The block progress bar (hidden with `--no-progress`); with idle windows it says which one
/// follows a block.
pub(crate) struct Bar {
    bar: ProgressBar,
    idle_windows: bool,
    /// Requests per call (`speed --batch N`): the live rate is shown in decisions.
    batch: usize,
}

impl Bar {
    pub(crate) fn new(blocks: u64, hidden: bool, idle_windows: bool) -> Self {
        let bar = ProgressBar::new(blocks);
        if hidden {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template(PROGRESS_TEMPLATE).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar, idle_windows, batch: 1 }
    }

    /// Show the live rate in decisions of `batch` requests per call (`speed --batch N`).
    pub(crate) fn batched(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Watch for Bar {
    fn block_done(&mut self, rec: &BlockRecord) {
        self.bar.inc(1);
        if self.idle_windows {
            self.bar.set_message(format!("idle window {}", rec.index + 1));
        }
    }

    fn progress(&mut self, arm: &str, cycle: usize, calls_per_s: f64) {
        self.bar.set_message(progress_message(arm, cycle, calls_per_s, self.batch));
    }
}

/// The live message: the arm, the cycle (from 1) and the rate, in decisions per second (with
/// the calls of a batched run beside it).
fn progress_message(arm: &str, cycle: usize, calls_per_s: f64, batch: usize) -> String {
    if batch > 1 {
        let decisions = calls_per_s * batch as f64;
        format!(
            "arm {arm} · cycle {} · {decisions:.0} decisions/s ({calls_per_s:.0} calls/s of {batch})",
            cycle + 1
        )
    } else {
        format!("arm {arm} · cycle {} · {calls_per_s:.0} calls/s", cycle + 1)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_progress_line_shows_the_time_left() {
        let style = indicatif::ProgressStyle::with_template(super::PROGRESS_TEMPLATE);
        assert!(style.is_ok());
        assert!(super::PROGRESS_TEMPLATE.contains("ETA {eta}"));
    }

    #[test]
    fn the_live_rate_is_in_decisions() {
        assert_eq!(super::progress_message("f32", 0, 7.4, 1), "arm f32 · cycle 1 · 7 calls/s");
        assert_eq!(
            super::progress_message("f32", 2, 2.5, 4),
            "arm f32 · cycle 3 · 10 decisions/s (2 calls/s of 4)"
        );
    }
}
