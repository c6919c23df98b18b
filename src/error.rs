//! The one error model of the crate. Every library error says whose fault it is — the input's
//! (a bad invocation, file, model or spec, found before anything was measured: exit 2) or the
//! run's (it started and failed, or was rejected: exit 1) — by its [`Kind`], and keeps its
//! source chain. [`Kind::exit_code`] is the only place a kind becomes an exit code, and
//! [`chain`] the only printer of a chain (`main` prints it once).
//!
//! Modules keep their own typed errors (`thiserror` enums naming what failed) and implement
//! [`Classify`]; where a module has nothing to name beyond a message and a cause, it returns
//! [`Error`]. This module depends on no other module of the crate, so every layer may use it.

use std::fmt;

/// Whose fault a failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad invocation or input, found before anything was measured (exit 2).
    Input,
    /// The run failed after it started, or its result was rejected (exit 1).
    Run,
}

impl Kind {
    /// The process's exit code for a failure of this kind: the only function that decides it.
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Input => 2,
            Kind::Run => 1,
        }
    }
}

/// An error that knows its [`Kind`].
pub trait Classify {
    /// Whether the input or the run failed.
    fn kind(&self) -> Kind;
}

/// The boxed cause of an [`Error`].
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure with its kind, what failed (`message`) and, where there is one, its cause.
/// `Display` prints the message alone; [`chain`] prints it with its causes.
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
    source: Option<Source>,
}

impl Error {
    /// A failure of `kind`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), source: None }
    }

    /// A bad input: `message` says what is wrong and what to do.
    pub fn input(message: impl Into<String>) -> Self {
        Error { kind: Kind::Input, message: message.into(), source: None }
    }

    /// A failed run.
    pub fn run(message: impl Into<String>) -> Self {
        Error { kind: Kind::Run, message: message.into(), source: None }
    }

    /// The same error caused by `source` (kept whole: its own chain stays reachable).
    pub fn because(mut self, source: impl Into<Source>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The same error as another kind (a run error met while reading an input, …).
    pub fn as_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    /// What failed, without its causes.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl Classify for Error {
    fn kind(&self) -> Kind {
        self.kind
    }
}

/// Attach a kind and a message to the error of a `Result` (`file.read().input_context(|| …)`).
pub trait ResultExt<T> {
    /// A bad input, caused by this error.
    fn input_context(self, message: impl FnOnce() -> String) -> Result<T, Error>;
    /// A failed run, caused by this error.
    fn run_context(self, message: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T, E: Into<Source>> ResultExt<T> for Result<T, E> {
    fn input_context(self, message: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|e| Error::input(message()).because(e))
    }

    fn run_context(self, message: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|e| Error::run(message()).because(e))
    }
}

/// An error and its causes joined by `": "`, leaving out a cause whose text the message
/// already holds (errors often quote their source in their own text). The one chain printer.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !text.is_empty() && !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        next = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{chain, Classify, Error, Kind, ResultExt};

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Quoting {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn the_kind_alone_decides_the_exit_code() {
        assert_eq!(Kind::Input.exit_code(), 2);
        assert_eq!(Kind::Run.exit_code(), 1);
        assert_eq!(Error::input("x").kind().exit_code(), 2);
        assert_eq!(Error::run("x").as_kind(Kind::Input).kind(), Kind::Input);
    }

    #[test]
    fn the_chain_keeps_every_cause_once_in_order() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let quoted = Quoting { path: "run.jsonl".into(), source: io };
        let e = Error::input("cannot read the raw record").because(quoted);
        assert_eq!(chain(&e), "cannot read the raw record: run.jsonl: no such file");
        assert_eq!(e.to_string(), "cannot read the raw record");
        let inner = Error::run("inner");
        let e = Error::run("outer").because(Error::run("middle").because(inner));
        assert_eq!(chain(&e), "outer: middle: inner");
    }

    #[test]
    fn a_result_takes_its_kind_and_keeps_its_cause() {
        let r: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
        let e = r.run_context(|| "cannot write `a.jsonl`".into()).unwrap_err();
        assert_eq!((e.kind(), chain(&e).as_str()), (Kind::Run, "cannot write `a.jsonl`: disk full"));
        let r: Result<u8, String> = Err("line 3: not a number".into());
        let e = r.input_context(|| "`--cycles`".into()).unwrap_err();
        assert_eq!((e.kind(), chain(&e).as_str()), (Kind::Input, "`--cycles`: line 3: not a number"));
    }
}
