//! The Snake workload: rules, planner features, prompts, policy and shield, recordings, the
//! host-path model arm, the paired check and the rate benchmark (docs/snake.md).
//!
//! The game, features, prompts, policy and recordings are deterministic and model-free. The
//! model is reached only through [`policy::Predictor`]: the planner hands it the state and
//! questions as JSON values exactly as the reference builds them, and the policy reads the
//! host's result JSON back; [`host_predictor::HostPredictor`] is that predictor over the shared
//! host path and a backend. [`paired`] and [`rate_search`] run games with predictors and time whole
//! decisions ([`compare`] plays `snake compare`'s seeds and builds its report); [`session`] is
//! `snake play`'s loop and [`playback`] `snake replay`'s, both on a [`view::Screen`] whose frames
//! [`view`] lays out; nothing here prints. Food placement
//! reproduces CPython's `random.Random` ([`pyrandom`]) so seeds give the reference's boards.

pub mod compare;
pub mod features;
pub mod game;
pub mod host_predictor;
pub mod paired;
pub mod playback;
pub mod policy;
pub mod prompt;
pub mod pyrandom;
pub mod rate_search;
pub mod recording;
pub mod session;
pub mod view;

pub use features::{Features, MoveInfo, MoveReason};
pub use game::{Cell, DeathReason, Direction, Game, GameError, Legality, Snapshot};
pub use policy::{decide, Decision, ModelAnswers, PolicyConfig, PolicyError, Predictor};
pub use prompt::{build_prompt, Prompt, PromptStyle};
pub use pyrandom::PyRandom;

#[cfg(test)]
mod conformance;
