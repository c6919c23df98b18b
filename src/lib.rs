//! laya-bench: measure how fast and how energy-efficiently a Laya typed-decision model runs.
//!
//! Layers (see docs/ARCHITECTURE.md): `laya` is the host contract (request → tensors →
//! result), `model` holds checkpoint weights, `backend` the engines behind one trait.
//! `bounds` is the FLOP / bandwidth / Amdahl contract. Nothing below `commands` prints or exits.
#![deny(unsafe_op_in_unsafe_fn)]
// No unwrap or expect outside tests: user input and sensor faults come back as errors, never
// as panics (an invariant that cannot fail uses `unreachable!` with its reason).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

#[cfg(test)]
mod architecture;
pub mod backend;
pub mod bounds;
pub mod cli;
pub mod commands;
pub mod energy;
pub mod error;
pub mod fidelity;
pub mod host;
pub mod hub;
pub mod laya;
pub mod model;
pub mod power;
pub mod record;
pub mod report;
pub mod run;
pub mod settings;
pub mod snake;
pub mod stats;
pub mod summary;
pub mod time;
pub mod trace;
pub mod verify;
