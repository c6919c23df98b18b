//! The math bounds of one decision (docs/methodology.md, "Math bounds"): FLOP per decision,
//! weight bytes streamed, compute and bandwidth floors, the latency a target speed-up needs and
//! the throughput it implies, and Amdahl's law.
//!
//! Pure functions over configs and numbers; nothing here reads files, the clock or the
//! environment. The conventions are the published ones, so the article's figures come out
//! exactly (24.57 GFLOP at L96 for the multilingual shape; 248.9 MB / 736.6 MB of FP16 body
//! weights; 0.622 ms / 1.842 ms at 400 GB/s):
//!
//! - One decision is one question row at batch 1 and length `L` (a request with Q questions
//!   runs Q rows). FLOP = dense multiply-accumulates × 2.
//! - Counted: every encoder and decision-head projection at every position, and attention
//!   `QKᵀ` + `AV` = `2·L²·D` MACs per layer, full `L×L` in sliding-window layers too. The
//!   window-aware count is reported next to it, labelled. The scorer over K marker slots and the
//!   action head are reported separately and are not in the headline figure. The embedding
//!   gather, norms, activations, softmax and residual adds are 0 FLOP.
//! - Bytes streamed: the body's weight matrices (encoder `Wqkv`, `Wo`, `Wi`, `Wo`; head
//!   `in_proj`, `out_proj`, `linear1`, `linear2`), each read once per decision. The embedding
//!   table (only L rows are gathered), biases, norms, type embedding, scorer and action head are
//!   excluded and reported as such. MB = 10⁶ bytes, GB/s = 10⁹ bytes per second.
//!
//! The code is split by part: `flops.rs` (FLOP per decision by part, body weight bytes per
//! precision), `hardware.rs` (hardware profiles with their sources), `amdahl.rs` (floors,
//! target checks, Amdahl's law), `report.rs` (the `bounds --json` document) and `targets.rs` (the
//! portable engine's speed targets, judged on a `benches/forward.rs` run). Every item is
//! re-exported here, so `crate::bounds::X` is the one path. The precision type is
//! [`crate::model::Precision`]; its `bounds --precision` parse (`FromStr`) lives here, beside
//! its error kind.

use std::str::FromStr;

mod amdahl;
mod flops;
mod hardware;
pub mod measure;
mod report;
pub mod targets;

pub use amdahl::{
    achieved_tflops, amdahl_speedup, amdahl_table, bandwidth_floor_ms, compute_floor_ms, floors,
    required_fraction, required_part_speedup, target_check, AmdahlRow, AmdahlTable, BoundBy, Floors,
    TargetCheck, AMDAHL_FRACTIONS, AMDAHL_PART_SPEEDUPS,
};
pub use flops::{
    body_weight_bytes, flops_per_decision, workload_flops, BodyWeights, FlopBreakdown, WorkloadFlop,
    DEFAULT_MARKER_SLOTS, LUT_ENTRY_BYTES,
};
pub use hardware::{
    profile, resolve_hardware, Figure, Hardware, Profile, CUSTOM, H200, M3_MAX, M3_MAX_GPU, M4_MAX, PROFILES,
    ZEN4_2CORE,
};
pub use report::{
    evaluate, BoundsInput, BoundsReport, FlopReport, ModelShape, WorkloadFlopReport, SCHEMA_VERSION,
};

pub use crate::model::precision::{ComputeType, Precision};

/// An input the bounds cannot be computed for, with what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundsError {
    /// The sequence length is 0.
    #[error("invalid length 0: the sequence length must be at least 1 token (e.g. --length 96)")]
    ZeroLength,
    /// The scorer has no marker slots.
    #[error("invalid marker slots 0: the scorer needs at least 1 slot (the ANE bundles use 32)")]
    ZeroMarkerSlots,
    /// A target speed-up that is not a factor above 1.
    #[error("invalid target {0}: a target speed-up is a factor above 1, e.g. --target-speedup 10")]
    Target(f64),
    /// A quantity that must be positive is not.
    #[error("invalid {what} {value}: must be a finite number greater than 0 ({fix})")]
    NotPositive {
        /// Which quantity.
        what: &'static str,
        /// The value given.
        value: f64,
        /// An example of a good value.
        fix: &'static str,
    },
    /// A measured fraction outside [0, 1].
    #[error(
        "invalid fraction {0}: the measured fraction f of the latency must lie in [0, 1] \
         (e.g. --fraction 0.9 when the accelerated part is 90 % of the original latency)"
    )]
    Fraction(f64),
    /// A hardware profile name we do not know.
    #[error("unknown profile `{name}`: use one of {known}, or give --peak-tflops and --bandwidth-gbs")]
    UnknownProfile {
        /// The name given.
        name: String,
        /// The names we know, comma-separated.
        known: String,
    },
    /// A precision name we do not know.
    #[error("unknown precision `{0}`: use f32, f16, bf16, w8, w6 or w4")]
    UnknownPrecision(String),
    /// The profile has no bandwidth figure and none was given.
    #[error("profile `{profile}` has no known memory bandwidth ({reason}); pass --bandwidth-gbs")]
    MissingBandwidth {
        /// The profile.
        profile: String,
        /// Why the figure is unknown.
        reason: String,
    },
    /// A workload that runs no row.
    #[error("the workload runs no question row, so it has no FLOP per decision")]
    EmptyWorkload,
    /// A count does not fit 64 bits.
    #[error("the {0} of this shape overflows a 64-bit count; use a smaller length or model")]
    Overflow(&'static str),
}

impl FromStr for Precision {
    type Err = BoundsError;

    /// Case-insensitive, with the aliases `fp32`, `fp16`, `int8` and `w8a16`
    /// ([`Precision::from_name_or_alias`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Precision::from_name_or_alias(s).ok_or_else(|| BoundsError::UnknownPrecision(s.to_string()))
    }
}

/// A target speed-up: a factor above 1 (at or below 1 every configuration already meets it).
fn speedup_target(value: f64) -> Result<f64, BoundsError> {
    if value.is_finite() && value > 1.0 {
        Ok(value)
    } else {
        Err(BoundsError::Target(value))
    }
}

fn positive(value: f64, what: &'static str, fix: &'static str) -> Result<f64, BoundsError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(BoundsError::NotPositive { what, value, fix })
    }
}

#[cfg(test)]
mod test_support {
    use crate::laya::config::{AgentConfig, EncoderConfig};
    use crate::model::synthetic::published_shape;

    pub(super) fn shape(name: &str) -> (EncoderConfig, AgentConfig) {
        published_shape(name).unwrap()
    }

    pub(super) fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_parse_and_map_to_their_arithmetic() {
        assert_eq!("F16".parse::<Precision>().unwrap(), Precision::F16);
        assert_eq!("fp32".parse::<Precision>().unwrap(), Precision::F32);
        assert_eq!("w8".parse::<Precision>().unwrap().compute(), ComputeType::F16);
        assert_eq!(Precision::Bf16.compute(), ComputeType::Bf16);
        assert_eq!(Precision::W6.lut_entries(), Some(64));
        assert_eq!(Precision::F16.lut_entries(), None);
        assert!(matches!("q3".parse::<Precision>(), Err(BoundsError::UnknownPrecision(_))));
    }
}
