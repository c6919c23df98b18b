//! Latency floors (`t ≥ max(FLOP / peak, bytes / bandwidth)`), what a target speed-up over a
//! measured baseline requires, and Amdahl's law with its table.

use serde::Serialize;

use super::hardware::Hardware;
use super::{positive, speedup_target, BoundsError};

/// Measured fractions `f` shown in the Amdahl table.
pub const AMDAHL_FRACTIONS: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];

/// Finite speed-ups `s` of the accelerated part shown in the Amdahl table (∞ is its own column).
pub const AMDAHL_PART_SPEEDUPS: [f64; 3] = [2.0, 5.0, 10.0];

/// What limits the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundBy {
    /// FLOP / peak is the larger floor.
    Compute,
    /// Bytes / bandwidth is the larger floor.
    Bandwidth,
}

/// Latency floors: `t ≥ max(FLOP / peak, bytes / bandwidth)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Floors {
    /// FLOP / peak in ms; `null` when the peak is unknown.
    pub compute_ms: Option<f64>,
    /// Why `compute_ms` is null.
    pub compute_missing_reason: Option<String>,
    /// Bytes / bandwidth in ms.
    pub bandwidth_ms: f64,
    /// The larger known floor in ms (a lower bound on latency).
    pub floor_ms: f64,
    /// Which floor `floor_ms` is; bandwidth when the compute floor is unknown.
    pub bound_by: BoundBy,
    /// Whether both floors are known (otherwise `floor_ms` is the bandwidth floor only).
    pub complete: bool,
}

/// Milliseconds to do `flop` at `tflops`.
pub fn compute_floor_ms(flop: u64, tflops: f64) -> f64 {
    flop as f64 / (tflops * 1e12) * 1e3
}

/// Milliseconds to stream `bytes` at `gbs` GB/s.
pub fn bandwidth_floor_ms(bytes: u64, gbs: f64) -> f64 {
    bytes as f64 / (gbs * 1e9) * 1e3
}

/// Achieved TFLOP/s of `flop` done in `latency_ms` (for `speed`'s per-arm column); `None` if the
/// latency is not a positive finite number.
pub fn achieved_tflops(flop: u64, latency_ms: f64) -> Option<f64> {
    (latency_ms.is_finite() && latency_ms > 0.0).then(|| flop as f64 / (latency_ms * 1e-3) / 1e12)
}

/// The floors of `flop` and `bytes` on `hw`.
pub fn floors(flop: u64, bytes: u64, hw: &Hardware) -> Floors {
    let compute_ms = hw.peak_tflops.map(|p| compute_floor_ms(flop, p));
    let bandwidth_ms = bandwidth_floor_ms(bytes, hw.bandwidth_gbs);
    let (floor_ms, bound_by) = match compute_ms {
        Some(c) if c > bandwidth_ms => (c, BoundBy::Compute),
        _ => (bandwidth_ms, BoundBy::Bandwidth),
    };
    Floors {
        compute_ms,
        compute_missing_reason: compute_ms
            .is_none()
            .then(|| format!("no {} peak: {}", hw.compute, hw.peak_source)),
        bandwidth_ms,
        floor_ms,
        bound_by,
        complete: compute_ms.is_some(),
    }
}

/// What a target speed-up over a measured baseline requires.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetCheck {
    /// Measured baseline latency in ms.
    pub baseline_ms: f64,
    /// Target speed-up over the baseline.
    pub target_speedup: f64,
    /// `baseline / target` in ms.
    pub required_ms: f64,
    /// Effective compute the required latency implies: FLOP / required, in TFLOP/s.
    pub required_tflops: f64,
    /// Effective bandwidth it implies: bytes / required, in GB/s.
    pub required_gbs: f64,
    /// Whether the required latency is below the compute floor; `null` when the peak is unknown.
    pub below_compute_floor: Option<bool>,
    /// Whether the required latency is below the bandwidth floor.
    pub below_bandwidth_floor: bool,
    /// Whether the target is impossible on this hardware: `true` if below any known floor,
    /// `null` if it clears the known floor but the compute floor is unknown.
    pub below_floor: Option<bool>,
    /// The largest speed-up the known floor allows: `baseline / floor_ms`.
    pub max_speedup_at_floor: f64,
}

/// Check a target speed-up over `baseline_ms` against the floors of `flop` and `bytes`.
pub fn target_check(
    baseline_ms: f64,
    target_speedup: f64,
    flop: u64,
    bytes: u64,
    floors: &Floors,
) -> Result<TargetCheck, BoundsError> {
    let baseline_ms = positive(baseline_ms, "baseline", "e.g. --baseline-ms 7.87")?;
    let target_speedup = speedup_target(target_speedup)?;
    let required_ms = baseline_ms / target_speedup;
    let below_compute_floor = floors.compute_ms.map(|c| required_ms < c);
    let below_bandwidth_floor = required_ms < floors.bandwidth_ms;
    let below_floor = match below_compute_floor {
        Some(c) => Some(c || below_bandwidth_floor),
        None if below_bandwidth_floor => Some(true),
        None => None,
    };
    Ok(TargetCheck {
        baseline_ms,
        target_speedup,
        required_ms,
        required_tflops: flop as f64 / (required_ms * 1e-3) / 1e12,
        required_gbs: bytes as f64 / (required_ms * 1e-3) / 1e9,
        below_compute_floor,
        below_bandwidth_floor,
        below_floor,
        max_speedup_at_floor: baseline_ms / floors.floor_ms,
    })
}

// ------------------------------------------------------------------------------------------
// Amdahl

/// Overall speed-up `S = 1 / (1 − f + f/s)` when a fraction `f` of the latency runs `s`× faster;
/// `s = None` means infinitely faster. Infinite when `f = 1` and `s = ∞`.
pub fn amdahl_speedup(fraction: f64, part_speedup: Option<f64>) -> f64 {
    let accelerated = part_speedup.map_or(0.0, |s| fraction / s);
    1.0 / (1.0 - fraction + accelerated)
}

/// The fraction `f` a part sped up `s`× must take for an overall `target`:
/// `f = (1 − 1/S) / (1 − 1/s)`, `1 − 1/S` for `s = ∞`; 0 for `S ≤ 1`; `None` if no `f ≤ 1` works.
pub fn required_fraction(target: f64, part_speedup: Option<f64>) -> Option<f64> {
    if target <= 1.0 {
        return Some(0.0);
    }
    let need = 1.0 - 1.0 / target;
    let gain = part_speedup.map_or(1.0, |s| 1.0 - 1.0 / s);
    let f = need / gain;
    (gain > 0.0 && f <= 1.0 + 1e-12).then_some(f.min(1.0))
}

/// The speed-up `s` the part taking fraction `f` needs for an overall `target`:
/// `s = f / (1/S − (1 − f))`; 1 for `S ≤ 1`; `None` if even `s = ∞` falls short or only reaches
/// the target in the limit (`f = 1 − 1/S` exactly, e.g. f 0.9 for 10×).
pub fn required_part_speedup(fraction: f64, target: f64) -> Option<f64> {
    if target <= 1.0 {
        return Some(1.0);
    }
    let room = 1.0 / target - (1.0 - fraction);
    // Rounding (1 − 0.9 ≠ 0.1 in binary) must not turn "only at s = ∞" into a finite s.
    (room > 1e-12 / target).then(|| fraction / room)
}

/// One row of the Amdahl table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmdahlRow {
    /// Fraction `f` of the original latency that is accelerated.
    pub fraction: f64,
    /// Whether this is the measured fraction (`--fraction`).
    pub measured: bool,
    /// `S` for each finite `s` of [`AmdahlTable::part_speedups`], in order.
    pub overall_speedup: Vec<f64>,
    /// `S` for `s = ∞`: `1 / (1 − f)`; `null` only for `f = 1`, where it is unbounded.
    pub limit_speedup: Option<f64>,
}

/// Amdahl's law over a grid of fractions and part speed-ups, and what a target needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmdahlTable {
    /// The law.
    pub formula: &'static str,
    /// Finite part speed-ups `s` (the `∞` column is `limit_speedup`).
    pub part_speedups: Vec<f64>,
    /// One row per fraction (the measured one marked, in order).
    pub rows: Vec<AmdahlRow>,
    /// The overall speed-up wanted.
    pub target_speedup: f64,
    /// `f` needed for the target at each finite `s`; `null` where no `f ≤ 1` reaches it.
    pub required_fraction: Vec<Option<f64>>,
    /// `f` needed for the target at `s = ∞`: `1 − 1/S`.
    pub required_fraction_limit: Option<f64>,
    /// For the measured fraction: the `s` the part needs for the target; `null` if even `s = ∞`
    /// falls short (or no fraction was given).
    pub measured_required_part_speedup: Option<f64>,
    /// For the measured fraction: whether any `s` reaches the target.
    pub measured_reaches_target: Option<bool>,
}

fn amdahl_row(fraction: f64, measured: bool) -> AmdahlRow {
    let limit = amdahl_speedup(fraction, None);
    AmdahlRow {
        fraction,
        measured,
        overall_speedup: AMDAHL_PART_SPEEDUPS.iter().map(|&s| amdahl_speedup(fraction, Some(s))).collect(),
        limit_speedup: limit.is_finite().then_some(limit),
    }
}

/// The Amdahl table for `target`, with a row for the measured `fraction` if given.
pub fn amdahl_table(target: f64, fraction: Option<f64>) -> Result<AmdahlTable, BoundsError> {
    let target = speedup_target(target)?;
    if let Some(f) = fraction {
        if !(0.0..=1.0).contains(&f) {
            return Err(BoundsError::Fraction(f));
        }
    }
    let mut rows: Vec<AmdahlRow> = AMDAHL_FRACTIONS.iter().map(|&f| amdahl_row(f, false)).collect();
    if let Some(f) = fraction {
        match rows.iter_mut().find(|r| r.fraction == f) {
            Some(row) => row.measured = true,
            None => {
                let at = rows.iter().position(|r| r.fraction > f).unwrap_or(rows.len());
                rows.insert(at, amdahl_row(f, true));
            }
        }
    }
    Ok(AmdahlTable {
        formula: "S = 1 / (1 - f + f/s)",
        part_speedups: AMDAHL_PART_SPEEDUPS.to_vec(),
        rows,
        target_speedup: target,
        required_fraction: AMDAHL_PART_SPEEDUPS.iter().map(|&s| required_fraction(target, Some(s))).collect(),
        required_fraction_limit: required_fraction(target, None),
        measured_required_part_speedup: fraction.and_then(|f| required_part_speedup(f, target)),
        measured_reaches_target: fraction.map(|f| required_part_speedup(f, target).is_some()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::test_support::{close, shape};
    use crate::bounds::{body_weight_bytes, flops_per_decision, resolve_hardware, M3_MAX, M4_MAX};
    use crate::model::Precision;

    #[test]
    fn bandwidth_floors_at_400_gbs_are_0_622_and_1_842_ms() {
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, None).unwrap();
        assert_eq!(hw.bandwidth_gbs, 400.0);
        let (e, a) = shape("multilingual");
        let ml = bandwidth_floor_ms(body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes, 400.0);
        assert!(close(ml, 0.622, 0.0005), "{ml}");
        let (e, a) = shape("english");
        let en = bandwidth_floor_ms(body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes, 400.0);
        assert!(close(en, 1.842, 0.0005), "{en}");
    }

    #[test]
    fn multilingual_target_10x_from_7_87_ms_needs_0_787_ms_and_31_tflops() {
        let (e, a) = shape("multilingual");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        let bytes = body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes;
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, None).unwrap();
        let f = floors(flop, bytes, &hw);
        let t = target_check(7.87, 10.0, flop, bytes, &f).unwrap();
        assert!(close(t.required_ms, 0.787, 1e-12));
        assert!(close(t.required_tflops, 31.2, 0.1), "{}", t.required_tflops);
        assert!(!t.below_bandwidth_floor);
        // 24.57 GFLOP at the ANE's 18 TFLOP/s takes 1.365 ms: the target is below that floor.
        assert!(close(f.compute_ms.unwrap(), 1.365, 0.001));
        assert_eq!(f.bound_by, BoundBy::Compute);
        assert_eq!(t.below_compute_floor, Some(true));
        assert_eq!(t.below_floor, Some(true));
    }

    #[test]
    fn english_target_10x_from_13_33_ms_is_below_the_bandwidth_floor() {
        let (e, a) = shape("english");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        let bytes = body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes;
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, Some(400.0)).unwrap();
        let f = floors(flop, bytes, &hw);
        let t = target_check(13.33, 10.0, flop, bytes, &f).unwrap();
        assert!(close(t.required_ms, 1.333, 1e-12));
        assert!(t.below_bandwidth_floor);
        assert!(close(f.bandwidth_ms, 1.842, 0.0005));
        assert_eq!(t.below_floor, Some(true));
    }

    #[test]
    fn unknown_peak_gives_a_null_compute_floor_with_its_reason() {
        let hw = resolve_hardware(&M4_MAX, Precision::F16, None, None).unwrap();
        assert_eq!(hw.peak_tflops, None);
        let f = floors(1_000_000_000, 1_000_000, &hw);
        assert_eq!(f.compute_ms, None);
        assert!(f.compute_missing_reason.as_deref().unwrap().contains("38 TOPS"));
        assert!(!f.complete);
        assert_eq!(f.bound_by, BoundBy::Bandwidth);
        // A target that clears the bandwidth floor cannot be judged without the peak.
        let t = target_check(10.0, 2.0, 1_000_000_000, 1_000_000, &f).unwrap();
        assert_eq!(t.below_compute_floor, None);
        assert_eq!(t.below_floor, None);
        // --peak-tflops fills it in.
        let hw = resolve_hardware(&M4_MAX, Precision::F16, Some(19.0), None).unwrap();
        assert_eq!(hw.peak_tflops, Some(19.0));
        assert_eq!(hw.peak_source, "--peak-tflops");
    }

    #[test]
    fn zen4_fp32_compute_floor_matches_the_performance_anchor() {
        let (e, a) = shape("multilingual");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        // docs/methodology.md, development machines: ≈ 107 ms FP32, ≈ 53 ms BF16.
        assert!(close(compute_floor_ms(flop, 0.2286), 107.5, 0.5));
        assert!(close(compute_floor_ms(flop, 0.4572), 53.7, 0.5));
    }

    #[test]
    fn amdahl_infinite_speedup_of_90_percent_is_10x_and_10x_needs_90_percent() {
        assert!(close(amdahl_speedup(0.9, None), 10.0, 1e-9));
        assert!(close(required_fraction(10.0, None).unwrap(), 0.9, 1e-12));
        assert!(close(amdahl_speedup(0.5, Some(2.0)), 4.0 / 3.0, 1e-12));
        // f = (1 - 1/S) / (1 - 1/s): S 10 needs f = 1 at s 10, and s 5 cannot reach it.
        assert!(close(required_fraction(10.0, Some(10.0)).unwrap(), 1.0, 1e-12));
        assert_eq!(required_fraction(10.0, Some(5.0)), None);
        assert!(close(required_fraction(2.0, Some(4.0)).unwrap(), 2.0 / 3.0, 1e-12));
        assert_eq!(required_fraction(0.5, Some(2.0)), Some(0.0));
        // The measured side: f = 0.95 needs s = 0.95 / (0.1 - 0.05) = 19.
        assert!(close(required_part_speedup(0.95, 10.0).unwrap(), 19.0, 1e-9));
        assert_eq!(required_part_speedup(0.9, 10.0), None);
        assert_eq!(required_part_speedup(0.8, 10.0), None);
        assert!(amdahl_speedup(1.0, None).is_infinite());
    }

    #[test]
    fn amdahl_table_marks_or_inserts_the_measured_fraction() {
        let t = amdahl_table(10.0, Some(0.9)).unwrap();
        assert_eq!(t.rows.len(), AMDAHL_FRACTIONS.len());
        let row = t.rows.iter().find(|r| r.measured).unwrap();
        assert_eq!(row.fraction, 0.9);
        assert!(close(row.limit_speedup.unwrap(), 10.0, 1e-9));
        assert_eq!(t.measured_reaches_target, Some(false));
        assert!(close(t.required_fraction_limit.unwrap(), 0.9, 1e-12));
        let t = amdahl_table(10.0, Some(0.97)).unwrap();
        assert_eq!(t.rows.len(), AMDAHL_FRACTIONS.len() + 1);
        let pos = t.rows.iter().position(|r| r.measured).unwrap();
        assert_eq!((t.rows[pos - 1].fraction, t.rows[pos + 1].fraction), (0.95, 0.99));
        let one = amdahl_table(10.0, Some(1.0)).unwrap();
        assert_eq!(one.rows.last().unwrap().limit_speedup, None);
        assert_eq!(one.measured_required_part_speedup, Some(10.0));
        for bad in [-0.1, 1.1, f64::NAN] {
            assert!(matches!(amdahl_table(10.0, Some(bad)), Err(BoundsError::Fraction(_))));
        }
        // A target speed-up is a factor above 1: at or below 1 it is met by anything.
        for bad in [0.0, -10.0, 0.5, 1.0, f64::NAN] {
            assert!(matches!(amdahl_table(bad, None), Err(BoundsError::Target(_))));
        }
    }
}
