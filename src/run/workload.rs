//! The workload of a run, at its two stages: [`WorkloadPlan`], what the command asked (the
//! workload's name, the invoice's tokens per row, the padded length), checked before anything
//! loads, is the builder of [`Workload`], the requests the timed loop cycles through
//! ([`WorkloadPlan::build`], once an arm's host exists).

use serde_json::Value;

use std::path::Path;

use crate::error::Error;
use crate::laya::host::{CallOptions, Host};
use crate::laya::workload::{self, Built};

/// The requests a run cycles through, in a fixed order.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Name for reports (`invoice`, a file path).
    pub name: String,
    /// (state, questions, per-call options) in cycle order.
    pub requests: Vec<(Value, Value, CallOptions)>,
}

/// The first request whose questions or options differ from request 0's: such a workload
/// cannot be batched, since one `predict_batch` asks one set of questions with one set of
/// options.
pub fn batch_mismatch(workload: &Workload) -> Option<usize> {
    let first = workload.requests.first()?;
    workload.requests.iter().position(|r| r.1 != first.1 || r.2 != first.2)
}

/// What a `speed`, `energy` or `trace run` arm is asked: the workload and the padded length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadPlan {
    /// `invoice` or the path of a request file.
    pub name: String,
    /// Real tokens per row of the invoice workload.
    pub tokens: usize,
    /// Padded length every arm runs at.
    pub length: usize,
}

/// Real tokens per row of the invoice workload when `--tokens` is not given.
pub const DEFAULT_TOKENS: usize = 91;

impl WorkloadPlan {
    /// Whether this is the built-in invoice workload (token count exact).
    pub fn is_invoice(&self) -> bool {
        self.name == "invoice"
    }

    /// The plan, checked ([`Self::check`]).
    pub fn checked(name: &str, tokens: Option<usize>, length: usize) -> Result<Self, Error> {
        if name.trim().is_empty() {
            return Err(Error::input("--workload is empty: give `invoice` or a request file"));
        }
        if name != "invoice" {
            if let Some(t) = tokens {
                return Err(Error::input(format!(
                    "--tokens {t} applies to the invoice workload only; the rows of --workload {name} are as long as its requests (drop --tokens)"
                )));
            }
        }
        let plan = Self { name: name.to_string(), tokens: tokens.unwrap_or(DEFAULT_TOKENS), length };
        plan.check()?;
        Ok(plan)
    }

    /// `length` must be positive and, for the invoice workload, hold `tokens` (exit 2).
    pub fn check(&self) -> Result<(), Error> {
        if self.length == 0 {
            return Err(Error::input("--length must be at least 1"));
        }
        if self.is_invoice() && self.tokens > self.length {
            return Err(Error::input(format!(
                "--tokens {} does not fit --length {}: rows are padded up to the length, never cut; raise --length or lower --tokens",
                self.tokens, self.length
            )));
        }
        Ok(())
    }

    /// The invoice workload at exactly `tokens` real tokens per row, or the requests of a file;
    /// refused (exit 2) when a row is longer than the length.
    pub fn build(&self, host: &Host<'_>) -> Result<(Built, Workload), Error> {
        let built = if self.is_invoice() {
            workload::invoice(host, self.tokens).map_err(|e| Error::input("--workload invoice").because(e))?
        } else {
            workload::from_file(Path::new(&self.name), host).map_err(|e| {
                // the host's max_len in its messages is --length here
                Error::input(format!("--workload (rows built with max_len = --length {})", self.length))
                    .because(e)
            })?
        };
        let longest = built.tokens_per_row.iter().flatten().copied().max().unwrap_or(0);
        if longest > self.length {
            return Err(Error::input(format!(
                "the workload has a row of {longest} tokens, longer than --length {}; raise --length",
                self.length
            )));
        }
        let workload = Workload { name: built.name.clone(), requests: built.requests.clone() };
        Ok((built, workload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tokens: usize, length: usize) -> WorkloadPlan {
        WorkloadPlan { name: "invoice".into(), tokens, length }
    }

    #[test]
    fn the_length_must_hold_the_tokens() {
        assert!(plan(91, 96).check().is_ok());
        assert!(plan(96, 96).check().is_ok());
        assert!(plan(97, 96)
            .check()
            .unwrap_err()
            .to_string()
            .contains("--tokens 97 does not fit --length 96"));
        assert!(plan(1, 0).check().unwrap_err().to_string().contains("--length must be at least 1"));
        // A request file's rows are measured when it is read, not here.
        let file = WorkloadPlan { name: "r.jsonl".into(), tokens: 500, length: 96 };
        assert!(file.check().is_ok());
        // --tokens given with a request file is refused; the default applies to invoice only
        let e = WorkloadPlan::checked("r.json", Some(50), 96).unwrap_err().to_string();
        assert!(e.contains("--tokens 50 applies to the invoice workload only"), "{e}");
        assert!(WorkloadPlan::checked("r.json", None, 96).is_ok());
        assert_eq!(WorkloadPlan::checked("invoice", None, 96).unwrap().tokens, DEFAULT_TOKENS);
        assert!(WorkloadPlan::checked(" ", None, 96)
            .unwrap_err()
            .to_string()
            .contains("--workload is empty"));
    }
}
