//! A measured run, from the arms to the record: the arms of a run and the one place an arm is
//! built ([`arm`]), the workload at its two stages ([`workload`]) and the fixed-length set-up
//! ([`setup`]), the schedule and the run's clock ([`schedule`]), the timed loop that owns every
//! timer ([`timed`]), who listens to it ([`observe`]) and the sampler's lifetime inside it
//! (`sampling`), the files a run writes and the checks made before anything is measured
//! ([`outputs`]), the raw record's header, footer and per-block records and the one recorder
//! every run writes through ([`recorder`]), the two measured runs with their verdicts and
//! reports ([`measure_speed`], [`measure_energy`]), the survey of what this machine can run
//! that `doctor` reports ([`survey`]), and the duration flags every command parses
//! ([`duration_flags`]).
//!
//! The timed loop depends on the `Backend` and `Sensor` traits, never on a concrete backend or
//! sensor, and does no I/O inside a timed interval: call records stay in memory during a block
//! and reach the observers when it ends. Commands (`src/commands/`) turn command-line
//! arguments into the plain plans these modules take, and print; these modules return
//! [`crate::error::Error`], whose kind the command's failure keeps. Nothing here prints, exits,
//! or reads command-line types or the environment.

pub mod arm;
pub mod duration_flags;
pub mod measure_energy;
pub mod measure_speed;
pub mod observe;
pub mod outputs;
pub mod recorder;
mod sampling;
pub mod schedule;
pub mod setup;
pub mod survey;
pub mod timed;
pub mod workload;

pub use arm::{Answered, Arm};
pub use observe::{Observer, Observers, Progress, WhenWarm};
pub use sampling::{Sampling, SensorGuard};
pub use schedule::{balanced_order, paced_overrun_limit, whole_cycles, BlockLimit, Clock, Pace, Plan};
pub use timed::{
    answer_label, calls_to_cover, probabilities, run, run_order, run_with, BlockRecord, CallRecord, Controls,
    IdleRecord, Phase, RunEnd, RunError, RunOutcome, RunTotals, WarmupRecord,
};
pub use workload::{batch_mismatch, Workload};

#[cfg(test)]
mod tests;
