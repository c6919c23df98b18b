//! The plumbing of `trace run` and `trace record` as plain data, portable and tested on any OS.
//!
//! - [`ReadyFile`]: the JSON file `trace run --ready FILE` writes once warm, so any profiler
//!   (Instruments on macOS, perf on Linux) knows which process to attach to and when.
//! - [`ArtifactLayout`]: where `trace record` keeps the `.trace` archive, the raw exports, the
//!   child's raw record and the summary.
//! - The exact `xcrun xctrace` argument vectors: [`record_args`], [`toc_export_args`],
//!   [`table_export_args`].
//!
//! Nothing here starts a process; [`super::child`] does, driven by [`super::record`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Version of the [`ReadyFile`] JSON layout.
pub const READY_SCHEMA_VERSION: u32 = 1;

/// The Instruments template `trace record` uses unless told otherwise.
pub const DEFAULT_TEMPLATE: &str = "Core ML";

/// What `trace run --ready FILE` writes once warm-up has finished and the measured block
/// starts: which process to attach a profiler to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadyFile {
    /// Layout version, [`READY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The process id of the `trace run` process.
    pub pid: u32,
    /// The process that runs the model when it is another one: a `ref:` arm's Python worker,
    /// where a profiler must attach to see the runtime's work (`null` otherwise).
    #[serde(default)]
    pub model_pid: Option<u32>,
    /// Wall-clock time of the run's clock origin (the raw header's `started_unix_s`), Unix s.
    pub started_unix_s: f64,
    /// Wall-clock time warm-up finished and this file was written, Unix s.
    pub ready_unix_s: f64,
    /// The arm's name.
    pub arm: String,
    /// The arm's backend spec.
    pub spec: String,
    /// How long the measured block runs after this file is written, in seconds.
    pub block_seconds: f64,
    /// The raw record the run writes.
    pub raw_path: String,
}

/// A ready file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    /// The file is not a ready file (not JSON, or fields missing).
    #[error("invalid ready file: {0}")]
    Invalid(#[from] serde_json::Error),
    /// A newer layout than this build reads.
    #[error(
        "ready file schema_version {found} is newer than this laya-bench reads ({READY_SCHEMA_VERSION})"
    )]
    Version {
        /// The version found.
        found: u32,
    },
}

impl ReadyFile {
    /// The process a profiler attaches to: the model's (a `ref:` arm's worker) where it runs
    /// in another process, else the `trace run` process.
    pub fn target_pid(&self) -> u32 {
        self.model_pid.unwrap_or(self.pid)
    }

    /// Parses a ready file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, ReadyError> {
        let ready: ReadyFile = serde_json::from_slice(bytes)?;
        if ready.schema_version > READY_SCHEMA_VERSION {
            return Err(ReadyError::Version { found: ready.schema_version });
        }
        Ok(ready)
    }

    /// The file's bytes: one JSON object and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Write the file at `path` atomically (a waiter never reads half of it); a failure is a
    /// failed run (exit 1) naming the file.
    pub fn write(&self, path: &Path) -> Result<(), crate::error::Error> {
        crate::report::write_atomic(path, &self.to_bytes()).map_err(|e| {
            crate::error::Error::run(format!("cannot write the ready file {}", path.display())).because(e)
        })
    }
}

/// Before `trace run --ready FILE` loads anything: the folder must exist, and a stale ready
/// file is removed so no waiter mistakes it for this run's (bad input, exit 2, otherwise).
pub fn prepare_ready(path: &Path) -> Result<(), crate::error::Error> {
    use crate::error::Error;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Error::input(format!(
            "--ready {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::input(format!("--ready {}: cannot remove the stale file: {e}", path.display()))),
    }
}

/// The files of one `trace record` run, all inside one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactLayout {
    /// The folder, e.g. `artifacts/trace-20261129T151500Z`.
    pub dir: PathBuf,
}

impl ArtifactLayout {
    /// The layout of the folder `<root>/<stem>`.
    pub fn new(root: &Path, stem: &str) -> Self {
        Self { dir: root.join(stem) }
    }

    /// The Instruments archive xctrace records.
    pub fn trace(&self) -> PathBuf {
        self.dir.join("run.trace")
    }

    /// The table-of-contents export.
    pub fn toc_xml(&self) -> PathBuf {
        self.dir.join("toc.xml")
    }

    /// The Neural Engine hardware-intervals export.
    pub fn hardware_xml(&self) -> PathBuf {
        self.dir.join("ane-hw-intervals.xml")
    }

    /// The Core ML signpost export.
    pub fn signpost_xml(&self) -> PathBuf {
        self.dir.join("coreml-os-signpost.xml")
    }

    /// The ready file of the traced `trace run` child.
    pub fn ready(&self) -> PathBuf {
        self.dir.join("ready.json")
    }

    /// The raw record of the traced `trace run` child.
    pub fn raw(&self) -> PathBuf {
        self.dir.join("trace-run.raw.jsonl")
    }

    /// The standard output of the traced `trace run` child.
    pub fn run_log(&self) -> PathBuf {
        self.dir.join("trace-run.log")
    }

    /// The `trace summarize` JSON of the recording.
    pub fn summary_json(&self) -> PathBuf {
        self.dir.join("summary.json")
    }
}

/// A duration as xctrace's `--time-limit` takes it: whole seconds as `15s`, else `1500ms`.
pub fn format_time_limit(limit: Duration) -> String {
    if limit.subsec_nanos() == 0 {
        format!("{}s", limit.as_secs())
    } else {
        format!("{}ms", limit.as_millis().max(1))
    }
}

/// The `xcrun` arguments that record `template` from process `pid` for `limit` into `output`.
pub fn record_args(template: &str, pid: u32, limit: Duration, output: &Path) -> Vec<OsString> {
    vec![
        "xctrace".into(),
        "record".into(),
        "--template".into(),
        template.into(),
        "--attach".into(),
        pid.to_string().into(),
        "--time-limit".into(),
        format_time_limit(limit).into(),
        "--output".into(),
        output.into(),
        "--no-prompt".into(),
    ]
}

/// The `xcrun` arguments that export the table of contents of `input` into `output`.
pub fn toc_export_args(input: &Path, output: &Path) -> Vec<OsString> {
    vec![
        "xctrace".into(),
        "export".into(),
        "--input".into(),
        input.into(),
        "--toc".into(),
        "--output".into(),
        output.into(),
    ]
}

/// The `xcrun` arguments that export the table at `xpath` (from
/// [`TocRun::export_xpath`](super::TocRun::export_xpath)) of `input` into `output`.
pub fn table_export_args(input: &Path, xpath: &str, output: &Path) -> Vec<OsString> {
    vec![
        "xctrace".into(),
        "export".into(),
        "--input".into(),
        input.into(),
        "--xpath".into(),
        xpath.into(),
        "--output".into(),
        output.into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{TableKind, TraceToc};

    fn strings(args: &[OsString]) -> Vec<&str> {
        args.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn record_args_attach_to_the_pid_with_the_template_and_time_limit() {
        let args = record_args("Core ML", 4242, Duration::from_secs(15), Path::new("artifacts/t/run.trace"));
        assert_eq!(
            strings(&args),
            [
                "xctrace",
                "record",
                "--template",
                "Core ML",
                "--attach",
                "4242",
                "--time-limit",
                "15s",
                "--output",
                "artifacts/t/run.trace",
                "--no-prompt"
            ]
        );
    }

    #[test]
    fn time_limits_are_whole_seconds_or_milliseconds() {
        assert_eq!(format_time_limit(Duration::from_secs(15)), "15s");
        assert_eq!(format_time_limit(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_time_limit(Duration::from_micros(10)), "1ms");
    }

    #[test]
    fn export_args_name_the_input_the_query_and_the_output() {
        let toc = toc_export_args(Path::new("d/run.trace"), Path::new("d/toc.xml"));
        assert_eq!(
            strings(&toc),
            ["xctrace", "export", "--input", "d/run.trace", "--toc", "--output", "d/toc.xml"]
        );
        let xml = std::fs::read_to_string("fixtures/trace/synthetic_toc.xml").unwrap();
        let toc = TraceToc::parse_str(&xml).unwrap();
        let run = toc.select_run(None).unwrap();
        let xpath = run.export_xpath(TableKind::NeuralEngineHardware).unwrap();
        let table = table_export_args(Path::new("d/run.trace"), &xpath, Path::new("d/hw.xml"));
        assert_eq!(
            strings(&table),
            [
                "xctrace",
                "export",
                "--input",
                "d/run.trace",
                "--xpath",
                "/trace-toc/run[@number=\"1\"]/data/table[@schema=\"ane-hw-intervals\"]",
                "--output",
                "d/hw.xml"
            ]
        );
    }

    #[test]
    fn a_ready_file_round_trips_and_a_newer_layout_is_refused() {
        let ready = ReadyFile {
            schema_version: READY_SCHEMA_VERSION,
            pid: 77,
            started_unix_s: 1.5,
            ready_unix_s: 2.5,
            model_pid: Some(78),
            arm: "f32".into(),
            spec: "portable:f32".into(),
            block_seconds: 10.0,
            raw_path: "r.raw.jsonl".into(),
        };
        assert_eq!(ReadyFile::parse(&ready.to_bytes()).unwrap(), ready);
        assert_eq!(ready.target_pid(), 78);
        assert_eq!(ReadyFile { model_pid: None, ..ready.clone() }.target_pid(), 77);
        // A ready file written before `model_pid` existed still reads (as `None`).
        let old = r#"{"schema_version":1,"pid":5,"started_unix_s":0.0,"ready_unix_s":0.0,"arm":"a","spec":"mock:ok","block_seconds":1.0,"raw_path":"r"}"#;
        assert_eq!(ReadyFile::parse(old.as_bytes()).unwrap().target_pid(), 5);
        let newer = ReadyFile { schema_version: READY_SCHEMA_VERSION + 1, ..ready };
        assert!(matches!(ReadyFile::parse(&newer.to_bytes()), Err(ReadyError::Version { .. })));
        assert!(matches!(ReadyFile::parse(b"{\"pid\": 1}"), Err(ReadyError::Invalid(_))));
    }

    #[test]
    fn preparing_a_ready_file_removes_a_stale_one_and_refuses_a_missing_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready.json");
        // absent: nothing to remove
        prepare_ready(&path).unwrap();
        std::fs::write(&path, b"stale").unwrap();
        prepare_ready(&path).unwrap();
        assert!(!path.exists());
        let missing = dir.path().join("no/ready.json");
        let e = prepare_ready(&missing).unwrap_err();
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Input);
        let folder = dir.path().join("no");
        assert_eq!(
            e.to_string(),
            format!("--ready {}: the folder {} does not exist", missing.display(), folder.display())
        );
    }

    #[test]
    fn a_ready_file_is_written_whole_and_a_failed_write_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let ready = ReadyFile {
            schema_version: READY_SCHEMA_VERSION,
            pid: 7,
            model_pid: None,
            started_unix_s: 1.0,
            ready_unix_s: 2.0,
            arm: "a".into(),
            spec: "mock:ok".into(),
            block_seconds: 3.0,
            raw_path: "r".into(),
        };
        let path = dir.path().join("ready.json");
        ready.write(&path).unwrap();
        assert_eq!(ReadyFile::parse(&std::fs::read(&path).unwrap()).unwrap(), ready);
        let bad = dir.path().join("no/ready.json");
        let e = ready.write(&bad).unwrap_err();
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Run);
        assert_eq!(e.to_string(), format!("cannot write the ready file {}", bad.display()));
    }

    #[test]
    fn the_artifact_layout_keeps_everything_in_one_folder() {
        let layout = ArtifactLayout::new(Path::new("artifacts"), "trace-x");
        for path in [
            layout.trace(),
            layout.toc_xml(),
            layout.hardware_xml(),
            layout.signpost_xml(),
            layout.ready(),
            layout.raw(),
            layout.run_log(),
            layout.summary_json(),
        ] {
            assert_eq!(path.parent(), Some(Path::new("artifacts/trace-x")));
        }
    }
}
