//! Checkpoint weights, synthetic shape-faithful checkpoints and the host tail.
