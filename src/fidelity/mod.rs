//! Fidelity: may a converted or compressed model stand in for its source checkpoint?
//!
//! - [`suite`]: the documented JSON suite of states and questions, validated with the host's
//!   own question validator; the default suite is embedded.
//! - [`gates`]: per question, the selected answer (a flip allowed only below a 2 × gate
//!   source margin), the max |Δ| of every calibrated probability and the action probability,
//!   finiteness and bit-identical repeats. Pure.
//! - [`check`]: runs a suite through the source (FP32, portable) and the candidate over the
//!   shared host path, with the same rows for both; questions whose row does not fit the
//!   candidate's shape are listed and excluded.
//! - [`setup`]: the check's shape and its two sides, each an arm with its host (the candidate
//!   classified by the registry), with what the report says about each side.
//! - [`bundle_checks`]: tokenizer/config equality, ANE host weights against the source.
//! - [`package`]: weight payload and bytes per decision, sizes only.
//! - [`report`]: the `convert-check` report, schema_version 1, its verdict (with the
//!   candidate-is-the-source and stopped-early cases) and the expected compute placement.
//!
//! Nothing here prints or reads the command line; `commands::convert_check` does.

pub mod bundle_checks;
pub mod check;
pub mod gates;
pub mod package;
pub mod report;
pub mod setup;
pub mod suite;

pub use check::{run_suite, Engines, Plan, QuestionResult, SuiteSummary};
pub use gates::{judge, Decision, Judgement, DEFAULT_GATE};
pub use report::{ConvertCheckReport, REPORT_SCHEMA_VERSION};
pub use suite::{Suite, SuiteError};
