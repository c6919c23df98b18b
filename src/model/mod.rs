//! Checkpoint weights, synthetic shape-faithful checkpoints and the host tail.

pub mod ops;
pub mod synthetic;
pub mod tail;
pub mod weights;
