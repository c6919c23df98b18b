//! A run as a library concept: the arms of a run and the one place an arm is built
//! ([`arm`]), the workload and fixed-length set-up ([`setup`]), the files a run writes and the
//! checks made before anything is measured ([`outputs`]), the raw record's header, footer and
//! per-block records and the one recorder every run writes through ([`recorder`]), the two
//! measured runs with their verdicts and reports ([`speed`], [`energy`]), and the survey of
//! what this machine can run that `doctor` reports ([`doctor`]).
//!
//! Commands (`src/commands/`) turn command-line arguments into the plain plans these modules
//! take, and print; these modules return
//! [`crate::error::Error`], whose kind the command's failure keeps. Nothing here prints, exits, or reads
//! command-line types or the environment.

pub mod arm;
pub mod doctor;
pub mod energy;
pub mod outputs;
pub mod recorder;
pub mod setup;
pub mod speed;
pub mod time;
