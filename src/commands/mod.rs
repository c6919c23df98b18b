//! One file per subcommand: turn arguments into a plan, call the layers below, print results.
//! Standard output is written through `write_stdout` (`outln!`), never `println!`, so a
//! failed write is an error (exit 1), not a panic.

/// `println!` that returns `Err(Failure)` (exit 1, "cannot write to standard output: …")
/// instead of panicking when standard output cannot be written: `outln!("{x}")?;`.
macro_rules! outln {
    () => {
        $crate::commands::write_stdout("\n")
    };
    ($($arg:tt)*) => {
        $crate::commands::write_stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub mod bounds;
pub mod common;
pub mod convert_check;
pub mod doctor;
#[cfg(target_os = "macos")]
mod doctor_apple;
pub mod energy;
pub mod export;
mod hub_progress;
mod interrupt;
pub mod palettize;
pub mod predict;
mod progress;
pub mod settings;
pub mod snake;
pub mod speed;
pub mod summary;
mod terminal;
mod ticker;
pub mod trace;
pub mod verify;

use std::fmt;

use crate::backend::Context;
use crate::error::{Classify, Kind};

/// How a command failed: its [`Kind`] (which `main` alone turns into the exit code, by
/// [`Kind::exit_code`]) and the error with its causes.
#[derive(Debug)]
pub struct Failure {
    /// Whether the input or the run failed.
    pub kind: Kind,
    /// What happened, with context.
    pub error: anyhow::Error,
}

impl fmt::Display for Failure {
    /// The error and its causes as [`crate::error::chain`] prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::error::chain(self.error.as_ref()))
    }
}

impl Failure {
    /// A library error, of the kind it says it is: the one way a classified error becomes a
    /// failure (`?` uses it through `From`).
    pub fn of<E>(error: E) -> Self
    where
        E: Classify + std::error::Error + Send + Sync + 'static,
    {
        Self { kind: error.kind(), error: error.into() }
    }

    /// Bad invocation or input, found by the command itself (exit 2).
    pub fn input(error: impl Into<anyhow::Error>) -> Self {
        Self { kind: Kind::Input, error: error.into() }
    }

    /// The run failed, as the command itself found (exit 1).
    pub fn run(error: impl Into<anyhow::Error>) -> Self {
        Self { kind: Kind::Run, error: error.into() }
    }

    /// The same failure with `context` before its message (`--backend x: …`).
    pub fn context(self, context: impl fmt::Display + Send + Sync + 'static) -> Self {
        Self { kind: self.kind, error: self.error.context(context) }
    }
}

impl<E> From<E> for Failure
where
    E: Classify + std::error::Error + Send + Sync + 'static,
{
    fn from(e: E) -> Self {
        Failure::of(e)
    }
}

/// The result of a command.
pub type Outcome = Result<(), Failure>;

/// The outcome of a run whose files are written and whose results were printed (`printed`),
/// with its `verdict`: a failed print is the failure (exit 1); a failed verdict is then said on
/// stderr too, so neither is lost.
pub(crate) fn printed_then(printed: Result<(), Failure>, verdict: Outcome) -> Outcome {
    match (printed, verdict) {
        (Err(p), Err(v)) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: {v}");
            Err(p)
        }
        (Err(p), Ok(())) => Err(p),
        (Ok(()), v) => v,
    }
}

/// Write `text` to standard output and flush it: a failed write (a full disk, `>/dev/full`,
/// a closed descriptor) is a failed run (exit 1) saying so, never a panic. A closed pipe
/// (`| head`) ends the process by SIGPIPE before this returns (main.rs restores its default
/// action; every file of a run is written before its results are printed); where SIGPIPE is
/// ignored, the broken pipe is the reader's choice and not an error.
pub(crate) fn write_stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::run(anyhow::Error::new(e).context("cannot write to standard output")))
        }
        _ => Ok(()),
    }
}

/// A JSON document a command prints: `schema_version` (1) and `kind` first, then `body`'s
/// own fields (an object); a body that is not an object is kept under `body`.
pub(crate) fn versioned(kind: &str, body: impl serde::Serialize) -> Result<String, Failure> {
    let body = serde_json::to_value(body).map_err(|e| Failure::run(anyhow::anyhow!(e)))?;
    let mut out = serde_json::Map::new();
    out.insert("schema_version".into(), 1.into());
    out.insert("kind".into(), kind.into());
    match body {
        serde_json::Value::Object(fields) => out.extend(fields),
        other => {
            out.insert("body".into(), other);
        }
    }
    serde_json::to_string_pretty(&out).map_err(|e| Failure::run(anyhow::anyhow!(e)))
}

/// Run a parsed command line. The process's [`Context`] (the hub and the settings, read from
/// the environment here and nowhere else) is built once and passed to the command, and so is
/// how `speed` and `energy` show their results (`terminal::Output`: `--color`, `--quiet`).
pub fn dispatch(cli: crate::cli::Cli) -> Outcome {
    let out = terminal::Output::from_flags(cli.color, cli.quiet);
    if cli.quiet && !matches!(cli.command, crate::cli::Command::Speed(_) | crate::cli::Command::Energy(_)) {
        return Err(Failure::input(anyhow::anyhow!(
            "--quiet applies to speed and energy only; leave it out for this command"
        )));
    }
    let context = Context { hub: hub_progress::from_env(), settings: settings::from_env() };
    let cx = &context;
    match cli.command {
        crate::cli::Command::Predict(args) => predict::run(&args, cx),
        crate::cli::Command::Speed(args) => speed::run(&args, cx, out),
        crate::cli::Command::Palettize(args) => palettize::run(&args, cx),
        crate::cli::Command::Export(args) => export::run(&args, cx),
        crate::cli::Command::Bounds(args) => bounds::run(&args, cx),
        crate::cli::Command::Trace(args) => trace::run(&args, cx),
        crate::cli::Command::Energy(args) => energy::run(&args, cx, out),
        crate::cli::Command::Doctor(args) => doctor::run(&args, cx),
        crate::cli::Command::Snake(args) => snake::run(&args, cx),
        crate::cli::Command::ConvertCheck(args) => convert_check::run(&args, cx),
        crate::cli::Command::Summary(args) => summary::run(&args),
        crate::cli::Command::Verify(args) => verify::run(&args, cx),
    }
}

#[cfg(test)]
mod tests {
    use super::Failure;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Quoting {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_printed_document_leads_with_its_version_and_kind() {
        let text = super::versioned("laya-bench-x", serde_json::json!({"steps": 3, "seconds": 0.5})).unwrap();
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["schema_version", "kind", "steps", "seconds"]);
        let bare = super::versioned("k", 7).unwrap();
        assert!(bare.contains("\"body\": 7") && bare.contains("\"schema_version\": 1"), "{bare}");
    }

    #[test]
    fn a_cause_quoted_by_its_error_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err: Result<(), Quoting> = Err(Quoting { path: "run.jsonl".into(), source: io });
        let failure = Failure::input(err.context("cannot read the raw record").unwrap_err());
        assert_eq!(failure.to_string(), "cannot read the raw record: run.jsonl: no such file");
        // Causes that are not quoted are all kept, in order.
        let err = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(Failure::run(err).to_string(), "outer: middle: inner");
    }
}
