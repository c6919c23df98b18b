//! A run as a library concept: the arms of a run and the one place an arm is built
//! ([`arm`]), the workload and fixed-length set-up ([`setup`]), the files a run writes and the
//! checks made before anything is measured ([`outputs`]), the raw record's header, footer and
//! per-block records and the one recorder every run writes through ([`recorder`]), the two
//! measured runs with their verdicts and reports ([`speed`], [`energy`]), and the survey of
//! what this machine can run that `doctor` reports ([`doctor`]).
//!
//! Commands (`src/commands/`) turn command-line arguments into the plain plans these modules
//! take, print, and map a [`BenchError`] to an exit code. Nothing here prints, exits, or reads
//! command-line types or the environment.

pub mod arm;
pub mod doctor;
pub mod energy;
pub mod outputs;
pub mod recorder;
pub mod setup;
pub mod speed;
pub mod time;

/// Why a run could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad invocation or input, found before anything was measured (exit 2).
    #[error("{0}")]
    Input(String),
    /// The run failed after it started (exit 1); what was measured is in the raw record.
    #[error("{0}")]
    Run(String),
}

impl BenchError {
    /// A bad input, its message being `error` with its causes (joined by `: `).
    pub fn input(error: impl std::fmt::Display) -> Self {
        BenchError::Input(error.to_string())
    }

    /// A failed run.
    pub fn run(error: impl std::fmt::Display) -> Self {
        BenchError::Run(error.to_string())
    }

    /// A bad input from an error and its source chain, each cause once (`outer: inner`).
    pub fn input_chain(context: &str, error: &(dyn std::error::Error + 'static)) -> Self {
        BenchError::Input(chain(context, error))
    }

    /// A failed run from an error and its source chain.
    pub fn run_chain(context: &str, error: &(dyn std::error::Error + 'static)) -> Self {
        BenchError::Run(chain(context, error))
    }
}

/// `context: error: cause…`, leaving out a cause whose text is already there (errors often
/// quote their source in their own text).
pub fn chain(context: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = context.to_string();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !out.contains(&text) {
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
    use super::chain;

    #[derive(Debug, thiserror::Error)]
    #[error("outer ({0})")]
    struct Quoting(#[source] std::io::Error);

    #[test]
    fn a_chain_names_every_cause_once() {
        let io = std::io::Error::other("disk full");
        assert_eq!(chain("arm `a`", &io), "arm `a`: disk full");
        assert_eq!(chain("", &io), "disk full");
        // The source's text is already in the outer message: it is not repeated.
        let q = Quoting(std::io::Error::other("disk full"));
        assert_eq!(chain("raw", &q), "raw: outer (disk full)");
    }
}
