//! Energy math: pure functions over plain data (docs/methodology.md).
//!
//! - [`reject`]: the run-rejection rules. The whole run is rejected on any missing,
//!   non-positive, non-finite or above-cap reading, any gap longer than
//!   max(2 s, 3 × interval), non-monotonic timestamps, or a sensor that stops. Each rule is a
//!   named [`Rejection`] variant carrying the offending samples and their raw values; nothing
//!   is deleted or clipped.
//! - [`integrate`]: trapezoidal integration of watts over receive timestamps with linear
//!   interpolation at window boundaries; counter deltas with wrap correction; mean power.
//! - [`idle`]: idle windows with their first seconds discarded, a block's idle power as the
//!   mean of its two adjacent stable idle windows, and idle-subtracted energy with its sign
//!   kept (never clamped).
//! - [`run`]: a whole run: its samples judged by every rule (any violation rejects the run
//!   and no energy is computed), then per-block energies, per-arm aggregates (t, P, E = P × t,
//!   idle-subtracted energy) and the ratios S, R and S × R against the baseline.
//!
//! - [`sampling`]: the sampling a run got: samples strictly inside each block and idle
//!   window, the largest gap covering each, the realized interval (median, max) beside the
//!   requested one, and the rejection of a block with too few samples inside it.
//!
//! Times are seconds on the run's monotonic clock (the sampler's receive times); nothing here
//! reads a clock, a file or a sensor. [`run`] takes the sampler's plain `Sample` records as
//! input data (the only use of `power` here).
#![warn(missing_docs)]

pub mod cross;
pub mod idle;
pub mod integrate;
pub mod reject;
pub mod run;
#[cfg(test)]
mod sampled_tests;
pub mod sampling;

pub use idle::{
    block_energy, block_idle_power_w, idle_power, idle_subtracted_energy_j, stable_idle_window, BlockEnergy,
    IdlePower,
};
pub use integrate::{
    counter_delta_j, counter_energy_j, interpolate_w, mean_power_w, trapezoid_j, unwrap_counter, Series,
};
pub use reject::{
    check_counter, check_power, summarize, validate_counter, validate_power, Observed, RawPoint, Rejection,
    Rules, SampleRef, SeriesSummary,
};

use serde::{Deserialize, Serialize};

/// A closed interval `[start_s, end_s]` on the run's clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds (≥ start).
    pub end_s: f64,
}

impl Window {
    /// A window; both ends finite and `start_s ≤ end_s`.
    pub fn new(start_s: f64, end_s: f64) -> Result<Self, EnergyError> {
        if !start_s.is_finite() || !end_s.is_finite() || start_s > end_s {
            return Err(EnergyError::InvalidWindow { start_s, end_s });
        }
        Ok(Window { start_s, end_s })
    }

    /// Length in seconds.
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }
}

/// Power in watts received at `t_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WattPoint {
    /// Receive time, seconds.
    pub t_s: f64,
    /// Watts.
    pub watts: f64,
}

/// A cumulative energy counter in joules received at `t_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterPoint {
    /// Receive time, seconds.
    pub t_s: f64,
    /// Counter value, joules.
    pub joules: f64,
}

/// Why a computation over a series could not be done. (Rule violations in the data are
/// [`Rejection`]s; these are errors in what was asked.)
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnergyError {
    /// No samples.
    #[error("empty series: no samples to integrate")]
    Empty,
    /// A window with non-finite ends or end before start.
    #[error("invalid window: [{start_s}, {end_s}] s must have finite ends and start ≤ end")]
    InvalidWindow {
        /// Start.
        start_s: f64,
        /// End.
        end_s: f64,
    },
    /// The samples do not bracket the window, so its ends cannot be interpolated.
    #[error("window not covered: samples span [{first_s}, {last_s}] s but the window is [{start_s}, {end_s}] s; values outside the samples are never extrapolated")]
    NotCovered {
        /// First sample time.
        first_s: f64,
        /// Last sample time.
        last_s: f64,
        /// Window start.
        start_s: f64,
        /// Window end.
        end_s: f64,
    },
    /// Sample times are not strictly increasing (or not finite).
    #[error("non-monotonic time: sample {index} at {t_s} s does not come after {prev_t_s} s")]
    NonMonotonic {
        /// Index of the offending sample.
        index: usize,
        /// Previous sample time.
        prev_t_s: f64,
        /// This sample time.
        t_s: f64,
    },
    /// A value is NaN or infinite.
    #[error("non-finite {field} at sample {index}: {raw}")]
    NonFinite {
        /// Index of the offending sample.
        index: usize,
        /// Which value.
        field: &'static str,
        /// Its text.
        raw: String,
    },
    /// A counter without wrap went down.
    #[error("counter decreased from {prev_j} J to {cur_j} J and has no wrap range")]
    CounterDecreased {
        /// Earlier value.
        prev_j: f64,
        /// Later value.
        cur_j: f64,
    },
    /// A counter value outside `[0, wrap_j]`.
    #[error("counter value {joules} J outside its range [0, {wrap_j}] J")]
    CounterOutOfRange {
        /// Value.
        joules: f64,
        /// Wrap range.
        wrap_j: f64,
    },
    /// A wrap range that is not a positive finite number.
    #[error("invalid counter wrap range {wrap_j} J: must be positive and finite")]
    BadWrap {
        /// The range.
        wrap_j: f64,
    },
    /// Mean power over a zero-length window.
    #[error("zero-length window at {t_s} s: mean power needs a positive duration")]
    ZeroDuration {
        /// Where.
        t_s: f64,
    },
    /// The discard covers the whole idle window (or is negative).
    #[error("idle discard of {discard_s} s leaves nothing of a {window_s} s idle window; lengthen the idle window or shorten --idle-discard")]
    DiscardTooLong {
        /// Discard, seconds.
        discard_s: f64,
        /// Idle window length, seconds.
        window_s: f64,
    },
    /// An idle window does not sit on the named side of its block.
    #[error("idle window {which} the block is not adjacent: idle [{idle_start_s}, {idle_end_s}] s, block [{block_start_s}, {block_end_s}] s")]
    IdleNotAdjacent {
        /// `before` or `after`.
        which: &'static str,
        /// Idle start.
        idle_start_s: f64,
        /// Idle end.
        idle_end_s: f64,
        /// Block start.
        block_start_s: f64,
        /// Block end.
        block_end_s: f64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_must_be_finite_and_ordered() {
        assert_eq!(Window::new(1.0, 3.5).unwrap().duration_s(), 2.5);
        assert!(Window::new(2.0, 2.0).is_ok());
        assert!(matches!(Window::new(3.0, 2.0), Err(EnergyError::InvalidWindow { .. })));
        assert!(Window::new(f64::NAN, 2.0).is_err());
        assert!(Window::new(0.0, f64::INFINITY).is_err());
    }
}
