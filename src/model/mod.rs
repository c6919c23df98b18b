//! Checkpoint weights, synthetic shape-faithful checkpoints and the host tail.

pub mod export;
pub mod loader;
pub mod lowp;
pub mod ops;
pub mod palettize;
pub mod precision;
pub mod synthetic;
pub mod tail;
pub mod weights;

pub use precision::{ComputeType, Precision};
