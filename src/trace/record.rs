//! `trace record` as one call, [`record`]: start the traced `trace run` child, wait for its
//! ready file, attach `xcrun xctrace record`, export the TOC and the tables, summarize them and
//! write the summary and the compute-plan evidence into the artifacts folder. It runs only the
//! programs it is given ([`RecordTools`]), so tests drive it on any OS with a stand-in for
//! `xcrun`; what it has to say on the way goes to the caller's `note`.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use super::child::{self, ReadyWaitError, RecordTools, XcrunError};
use super::recorder::{record_args, table_export_args, toc_export_args, ArtifactLayout};
use super::{plan_evidence, summarize_files, SummarizeInputs, TableKind, TraceError, TraceSummary, TraceToc};
use crate::backend::registry::BackendSpec;
use crate::error::{Classify, Kind};

/// What one recording runs with; the command checks the flags it comes from.
pub struct RecordPlan<'a> {
    /// The parent of the new artifacts folder (`--artifacts`), created when missing.
    pub artifacts: &'a Path,
    /// The new artifacts folder inside `artifacts`.
    pub layout: &'a ArtifactLayout,
    /// The arguments after the executable that start the traced `trace run` child.
    pub run_args: &'a [OsString],
    /// The Instruments template (`--template`).
    pub template: &'a str,
    /// How long xctrace records (`--seconds`).
    pub seconds: Duration,
    /// How long to wait for the child's ready file (`--ready-timeout`).
    pub ready_timeout: Duration,
    /// The traced arm: its name, spec text and parsed spec, for the compute-plan evidence.
    pub arm: (&'a str, &'a str, &'a BackendSpec),
}

/// A finished recording: its summary (also in `summary.json`), the compute-plan evidence and
/// how the traced child ended.
pub struct Recorded {
    /// The summary of the exports.
    pub summary: TraceSummary,
    /// The compute-plan line shown next to the summary.
    pub plan_line: String,
    /// Whether `compute-plan.json` was written.
    pub wrote_plan: bool,
    /// Whether the recording had a Core ML signpost table (exported beside the others).
    pub has_signposts: bool,
    /// How the traced `trace run` child exited.
    pub status: ExitStatus,
}

/// A recording that failed, naming the step and the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The artifacts folder cannot be created (a bad `--artifacts`: exit 2).
    #[error("cannot create the artifacts folder {}", dir.display())]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file of the recording cannot be created or written.
    #[error("cannot {what} {}", path.display())]
    File {
        /// `create` or `write`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A document cannot be turned into JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The traced child cannot be started.
    #[error("cannot start {} trace run", exe.display())]
    Start {
        /// The laya-bench executable.
        exe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The traced child did not become ready.
    #[error("see {} and the messages above", log.display())]
    Ready {
        /// The child's log.
        log: PathBuf,
        /// Why.
        source: ReadyWaitError,
    },
    /// An `xcrun xctrace` step failed (cannot start xcrun: exit 2).
    #[error(transparent)]
    Xcrun(#[from] XcrunError),
    /// The recording's table of contents cannot be read or has no run.
    #[error("{0}")]
    Toc(#[source] TraceError),
    /// The recording lacks the Neural Engine hardware-intervals table.
    #[error(
        "the recording has no Neural Engine hardware-intervals table (expected schema {:?}; tables \
         found: {found:?}); the template '{template}' may lack the Neural Engine instrument",
        TableKind::NeuralEngineHardware.schema_names()
    )]
    NoHardwareTable {
        /// The tables the recording has.
        found: Vec<String>,
        /// The template it was recorded with.
        template: String,
    },
    /// The exports cannot be summarized.
    #[error("cannot summarize the recording's exports: {0}")]
    Summarize(#[source] TraceError),
    /// The traced child cannot be waited for.
    #[error("cannot wait for `trace run`")]
    Wait(#[source] std::io::Error),
}

impl Classify for RecordError {
    fn kind(&self) -> Kind {
        match self {
            RecordError::Folder { .. } | RecordError::Xcrun(XcrunError::Start { .. }) => Kind::Input,
            _ => Kind::Run,
        }
    }
}

/// Record the traced run `plan` describes with `tools` (this executable and `xcrun` on macOS)
/// into `plan.layout`; `settings` are the process's (the Core ML compile cache of the
/// compute-plan evidence is under their `HOME`).
pub fn record(
    plan: &RecordPlan<'_>,
    tools: &RecordTools,
    settings: &crate::settings::Settings,
    note: &mut dyn FnMut(&str),
) -> Result<Recorded, RecordError> {
    let layout = plan.layout;
    std::fs::create_dir_all(plan.artifacts)
        .and_then(|_| std::fs::create_dir(&layout.dir))
        .map_err(|source| RecordError::Folder { dir: layout.dir.clone(), source })?;
    let log = File::create(layout.run_log()).map_err(|source| RecordError::File {
        what: "create",
        path: layout.run_log(),
        source,
    })?;
    let mut child = child::spawn_run(tools, plan.run_args, log)
        .map_err(|source| RecordError::Start { exe: tools.exe.clone(), source })?;
    note(&format!(
        "trace record: waiting for `trace run` (pid {}) to load the model and warm up",
        child.id()
    ));
    let ready = child::wait_for_ready(&layout.ready(), &mut child, plan.ready_timeout)
        .map_err(|source| RecordError::Ready { log: layout.run_log(), source })?;
    let pid = ready.target_pid();
    note(&format!(
        "trace record: recording pid {pid} for {:?} with template '{}'",
        plan.seconds, plan.template
    ));
    child::xcrun(tools, &record_args(plan.template, pid, plan.seconds, &layout.trace()), "record")?;
    child::xcrun(tools, &toc_export_args(&layout.trace(), &layout.toc_xml()), "export --toc")?;
    let toc = TraceToc::read(&layout.toc_xml()).map_err(RecordError::Toc)?;
    let run = toc.select_run(None).map_err(RecordError::Toc)?;
    let hardware_xpath = run.export_xpath(TableKind::NeuralEngineHardware).ok_or_else(|| {
        RecordError::NoHardwareTable { found: run.schema_names(), template: plan.template.to_string() }
    })?;
    let export = table_export_args(&layout.trace(), &hardware_xpath, &layout.hardware_xml());
    child::xcrun(tools, &export, "export --xpath")?;
    let signpost_xml = match run.export_xpath(TableKind::CoreMlSignpost) {
        Some(xpath) => {
            let export = table_export_args(&layout.trace(), &xpath, &layout.signpost_xml());
            child::xcrun(tools, &export, "export --xpath")?;
            Some(layout.signpost_xml())
        }
        None => {
            note(&format!(
                "trace record: the recording has no Core ML signpost table (tables: {}); summarizing \
                 without it",
                run.schema_names().join(", ")
            ));
            None
        }
    };
    let mut summary = summarize_files(SummarizeInputs {
        hardware_xml: &layout.hardware_xml(),
        toc_xml: &layout.toc_xml(),
        signpost_xml: signpost_xml.as_deref(),
        run_number: None,
    })
    .map_err(RecordError::Summarize)?;
    check_target(&mut summary, pid);
    write_json(&summary, &layout.summary_json())?;
    let (name, spec, parsed) = plan.arm;
    let (plan_line, compute_plan) = plan_evidence::evidence_for(name, spec, parsed, settings);
    if let Some(compute_plan) = &compute_plan {
        write_json(compute_plan, &layout.dir.join("compute-plan.json"))?;
    }
    let status = child.finish().map_err(RecordError::Wait)?;
    Ok(Recorded {
        summary,
        plan_line,
        wrote_plan: compute_plan.is_some(),
        has_signposts: signpost_xml.is_some(),
        status,
    })
}

/// A note on the summary when its TOC names another process than the one traced.
fn check_target(summary: &mut TraceSummary, traced: u32) {
    let target_pid = summary.recording.target_process.as_ref().and_then(|p| p.pid);
    if target_pid != Some(traced) {
        summary.notes.push(format!(
            "The TOC names target pid {}, but the traced run was pid {traced}; check the recording.",
            target_pid.map(|p| p.to_string()).unwrap_or_else(|| "none".into()),
        ));
    }
}

/// `value` as pretty JSON, written atomically to `path`.
fn write_json<T: serde::Serialize>(value: &T, path: &Path) -> Result<(), RecordError> {
    let json = serde_json::to_vec_pretty(value)?;
    crate::report::write_atomic(path, &json).map_err(|source| RecordError::File {
        what: "write",
        path: path.to_path_buf(),
        source,
    })
}

/// A duration as `trace run --seconds` takes it, in whole milliseconds.
fn duration_text(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// The workload of the traced child, as `trace record` was given it.
pub struct ChildWorkload<'a> {
    /// `--model`.
    pub model: &'a str,
    /// `--arm` as `NAME=SPEC`.
    pub arm: String,
    /// `--workload`.
    pub workload: &'a str,
    /// `--tokens` as given (the child applies the same default, and refuses it with a request
    /// file).
    pub tokens: Option<usize>,
    /// `--length`.
    pub length: usize,
    /// `--warmup`.
    pub warmup: usize,
}

/// The arguments (after the executable) that start the traced `trace run` child for
/// `run_for`, writing its ready file at `ready` and its raw record at `raw`.
pub fn child_run_args(w: &ChildWorkload<'_>, run_for: Duration, ready: &Path, raw: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["trace".into(), "run".into(), "--model".into(), w.model.into()];
    args.extend(["--arm".into(), w.arm.clone().into(), "--workload".into(), w.workload.into()]);
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

/// The child workload the tests build arguments of (`builtin:tiny`, arm `f32=portable:f32`,
/// the invoice workload at 91 tokens in rows of 96, 20 warm-up calls).
#[cfg(test)]
pub(crate) fn test_workload() -> ChildWorkload<'static> {
    ChildWorkload {
        model: "builtin:tiny",
        arm: "f32=portable:f32".into(),
        workload: "invoice",
        tokens: Some(91),
        length: 96,
        warmup: 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_runs_trace_run_with_the_same_workload_and_the_ready_file() {
        let args = child_run_args(
            &test_workload(),
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
        let untold = ChildWorkload { tokens: None, ..test_workload() };
        let args = child_run_args(&untold, Duration::from_micros(10), Path::new("r"), Path::new("w"));
        assert!(!args.iter().any(|a| a == "--tokens"), "{args:?}");
        assert!(args.windows(2).any(|w| w[0] == "--seconds" && w[1] == "1ms"), "{args:?}");
    }

    #[test]
    fn only_a_bad_folder_or_a_missing_xcrun_is_the_input_s_fault() {
        let io = || std::io::Error::other("x");
        let folder = RecordError::Folder { dir: "a".into(), source: io() };
        assert_eq!(folder.kind(), Kind::Input);
        let start = RecordError::Start { exe: "laya-bench".into(), source: io() };
        assert_eq!(start.kind(), Kind::Run);
        let xcrun = XcrunError::Start { program: "xcrun".into(), error: io(), needs: "Xcode" };
        assert_eq!(RecordError::from(xcrun).kind(), Kind::Input);
        let wait = RecordError::Wait(io());
        assert_eq!(
            (wait.kind(), crate::error::chain(&wait).as_str()),
            (Kind::Run, "cannot wait for `trace run`: x")
        );
    }
}
