//! The processes `trace record` drives: the traced `laya-bench trace run` child (killed and
//! reaped unless it finishes), the wait for its ready file, and `xcrun xctrace` steps. The
//! command lines themselves are plain data in [`super::recorder`]; only this file starts
//! processes, and only the programs it is given (tests pass a stand-in for `xcrun`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::recorder::ReadyFile;

/// What `trace record` says on an OS without Instruments.
pub const RECORD_NEEDS_MACOS: &str = "trace record needs macOS with Xcode command-line tools (xcrun \
     xctrace); on Linux use `trace run --ready FILE` and attach perf";

/// How often a waiter looks for the ready file.
const READY_POLL: Duration = Duration::from_millis(50);

/// The programs `trace record` runs: the laya-bench executable (for `trace run`) and `xcrun`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTools {
    /// The laya-bench executable started as `laya-bench trace run ...`.
    pub exe: PathBuf,
    /// The `xcrun` program (`xcrun xctrace record|export ...`).
    pub xcrun: PathBuf,
}

/// A child process that is killed and reaped if it is dropped before [`ChildGuard::finish`].
pub struct ChildGuard(Option<Child>);

impl ChildGuard {
    /// The child's pid (0 once reaped).
    pub fn id(&self) -> u32 {
        self.0.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Whether the child has exited, without waiting.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self.0.as_mut() {
            Some(child) => child.try_wait(),
            None => Ok(None),
        }
    }

    /// Wait for the child to exit, and keep it from being killed.
    pub fn finish(mut self) -> std::io::Result<ExitStatus> {
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
pub enum ReadyWaitError {
    /// The child exited first.
    #[error("the traced run exited ({0}) before it was warm")]
    Exited(ExitStatus),
    /// No ready file in time.
    #[error(
        "the traced run did not write {path} within {timeout:?} (raise --ready-timeout for a large model)"
    )]
    Timeout {
        /// The ready file.
        path: String,
        /// How long it waited.
        timeout: Duration,
    },
    /// The ready file belongs to another process.
    #[error("{path} names pid {found}, but the traced run is pid {expected}")]
    WrongPid {
        /// The ready file.
        path: String,
        /// The pid it names.
        found: u32,
        /// The child's pid.
        expected: u32,
    },
    /// The ready file does not parse.
    #[error("{path}: {message}")]
    Invalid {
        /// The ready file.
        path: String,
        /// Why.
        message: String,
    },
    /// The child or the file could not be asked.
    #[error("cannot watch the traced run: {0}")]
    Io(#[from] std::io::Error),
}

/// Polls `path` until it holds a ready file of `child`, the child exits, or `timeout` passes.
pub fn wait_for_ready(
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

/// Why an `xcrun` step failed.
#[derive(Debug, thiserror::Error)]
pub enum XcrunError {
    /// The program could not be started (no Xcode command-line tools).
    #[error("cannot start {program} ({error}); {needs}")]
    Start {
        /// The program.
        program: String,
        /// The OS error.
        error: std::io::Error,
        /// What it needs.
        needs: &'static str,
    },
    /// It ran and failed.
    #[error("`xcrun xctrace {what}` failed ({status})")]
    Failed {
        /// The step (`record`, `export --toc`, ...).
        what: String,
        /// Its exit status.
        status: ExitStatus,
    },
}

/// Runs `xcrun` with `args`, its standard output sent to our standard error.
pub fn xcrun(tools: &RecordTools, args: &[OsString], what: &str) -> Result<(), XcrunError> {
    let status = Command::new(&tools.xcrun)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|error| XcrunError::Start {
            program: tools.xcrun.display().to_string(),
            error,
            needs: RECORD_NEEDS_MACOS,
        })?;
    if !status.success() {
        return Err(XcrunError::Failed { what: what.into(), status });
    }
    Ok(())
}

/// Start `tools.exe` with `args`, its standard output into `log`, guarded.
pub fn spawn_run(tools: &RecordTools, args: &[OsString], log: std::fs::File) -> std::io::Result<ChildGuard> {
    let child = Command::new(&tools.exe).args(args).stdin(Stdio::null()).stdout(log).spawn()?;
    Ok(ChildGuard(Some(child)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::recorder::READY_SCHEMA_VERSION;

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
            model_pid: None,
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
