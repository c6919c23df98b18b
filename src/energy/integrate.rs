//! Integration of watts over receive timestamps, and energy-counter deltas.
//!
//! Power between two samples is taken as the straight line between them (so integration is
//! the trapezoid rule), and a window's ends are linearly interpolated inside the interval that
//! holds them. A counter is unwrapped into a cumulative series and interpolated the same way.
//! Nothing is extrapolated: a window the samples do not bracket is an error.

use super::{CounterPoint, EnergyError, WattPoint, Window};

fn check_times<T>(points: &[T], t: impl Fn(&T) -> f64) -> Result<(), EnergyError> {
    let mut prev = f64::NEG_INFINITY;
    for (index, p) in points.iter().enumerate() {
        let t_s = t(p);
        if !t_s.is_finite() || t_s <= prev {
            return Err(EnergyError::NonMonotonic { index, prev_t_s: prev, t_s });
        }
        prev = t_s;
    }
    Ok(())
}

fn check_covered(first_s: f64, last_s: f64, w: Window) -> Result<(), EnergyError> {
    if first_s > w.start_s || last_s < w.end_s {
        return Err(EnergyError::NotCovered { first_s, last_s, start_s: w.start_s, end_s: w.end_s });
    }
    Ok(())
}

/// Linear interpolation of `(t, v)` points at `t_s`; points must be time-ordered and
/// bracket `t_s`.
fn interpolate<T>(
    points: &[T],
    t_s: f64,
    t: impl Fn(&T) -> f64,
    v: impl Fn(&T) -> f64,
) -> Result<f64, EnergyError> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err(EnergyError::Empty);
    };
    let w = Window { start_s: t_s, end_s: t_s };
    check_covered(t(first), t(last), w)?;
    // Number of points at or before t_s (≥ 1 because first ≤ t_s).
    let k = points.partition_point(|p| t(p) <= t_s);
    if k == points.len() {
        // t_s equals the last time.
        return Ok(v(last));
    }
    let (a, b) = (&points[k - 1], &points[k]);
    let (ta, tb) = (t(a), t(b));
    if t_s == ta {
        return Ok(v(a));
    }
    let f = (t_s - ta) / (tb - ta);
    Ok(v(a) + (v(b) - v(a)) * f)
}

/// Power at `t_s`, linearly interpolated between the samples around it.
pub fn interpolate_w(points: &[WattPoint], t_s: f64) -> Result<f64, EnergyError> {
    check_times(points, |p| p.t_s)?;
    interpolate(points, t_s, |p| p.t_s, |p| p.watts)
}

/// Energy in joules over `window`: the trapezoid rule on the samples, with the power at the
/// window's ends interpolated linearly inside the first and last intervals.
pub fn trapezoid_j(points: &[WattPoint], window: Window) -> Result<f64, EnergyError> {
    check_times(points, |p| p.t_s)?;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err(EnergyError::Empty);
    };
    check_covered(first.t_s, last.t_s, window)?;
    if let Some((index, p)) = points.iter().enumerate().find(|(_, p)| !p.watts.is_finite()) {
        return Err(EnergyError::NonFinite { index, field: "watts", raw: p.watts.to_string() });
    }
    if window.start_s == window.end_s {
        return Ok(0.0);
    }
    let p_start = interpolate(points, window.start_s, |p| p.t_s, |p| p.watts)?;
    let p_end = interpolate(points, window.end_s, |p| p.t_s, |p| p.watts)?;
    let mut energy = 0.0;
    let (mut t0, mut w0) = (window.start_s, p_start);
    for p in points.iter().filter(|p| p.t_s > window.start_s && p.t_s < window.end_s) {
        energy += (p.t_s - t0) * (w0 + p.watts) / 2.0;
        (t0, w0) = (p.t_s, p.watts);
    }
    energy += (window.end_s - t0) * (w0 + p_end) / 2.0;
    Ok(energy)
}

/// Mean power over `window` = energy / duration; the window must have positive length.
pub fn mean_power_w(points: &[WattPoint], window: Window) -> Result<f64, EnergyError> {
    if window.duration_s() <= 0.0 {
        return Err(EnergyError::ZeroDuration { t_s: window.start_s });
    }
    Ok(trapezoid_j(points, window)? / window.duration_s())
}

fn check_wrap(wrap_j: Option<f64>) -> Result<(), EnergyError> {
    match wrap_j {
        Some(w) if !(w.is_finite() && w > 0.0) => Err(EnergyError::BadWrap { wrap_j: w }),
        _ => Ok(()),
    }
}

/// Energy between two counter readings, correcting one wrap:
/// `cur ≥ prev ? cur − prev : cur + (wrap − prev)` (docs/formats.md §2.1). Without a wrap
/// range a decrease is an error, never a negative or zero energy.
pub fn counter_delta_j(prev_j: f64, cur_j: f64, wrap_j: Option<f64>) -> Result<f64, EnergyError> {
    check_wrap(wrap_j)?;
    for (index, j) in [prev_j, cur_j].into_iter().enumerate() {
        if !j.is_finite() {
            return Err(EnergyError::NonFinite { index, field: "joules", raw: j.to_string() });
        }
        if let Some(w) = wrap_j {
            if !(0.0..=w).contains(&j) {
                return Err(EnergyError::CounterOutOfRange { joules: j, wrap_j: w });
            }
        }
    }
    if cur_j >= prev_j {
        return Ok(cur_j - prev_j);
    }
    match wrap_j {
        Some(w) => Ok(cur_j + (w - prev_j)),
        None => Err(EnergyError::CounterDecreased { prev_j, cur_j }),
    }
}

/// Turn counter readings into a cumulative, wrap-free series starting at the first reading's
/// value (each step is [`counter_delta_j`]).
pub fn unwrap_counter(
    points: &[CounterPoint],
    wrap_j: Option<f64>,
) -> Result<Vec<CounterPoint>, EnergyError> {
    check_times(points, |p| p.t_s)?;
    let mut out = Vec::with_capacity(points.len());
    let Some(first) = points.first() else {
        return Ok(out);
    };
    if !first.joules.is_finite() {
        return Err(EnergyError::NonFinite { index: 0, field: "joules", raw: first.joules.to_string() });
    }
    let mut total = first.joules;
    out.push(*first);
    for pair in points.windows(2) {
        total += counter_delta_j(pair[0].joules, pair[1].joules, wrap_j)?;
        out.push(CounterPoint { t_s: pair[1].t_s, joules: total });
    }
    Ok(out)
}

/// Energy in joules over `window` from counter readings: the unwrapped counter, linearly
/// interpolated at both ends, end minus start.
pub fn counter_energy_j(
    points: &[CounterPoint],
    wrap_j: Option<f64>,
    window: Window,
) -> Result<f64, EnergyError> {
    let cum = unwrap_counter(points, wrap_j)?;
    let (Some(first), Some(last)) = (cum.first(), cum.last()) else {
        return Err(EnergyError::Empty);
    };
    check_covered(first.t_s, last.t_s, window)?;
    let e0 = interpolate(&cum, window.start_s, |p| p.t_s, |p| p.joules)?;
    let e1 = interpolate(&cum, window.end_s, |p| p.t_s, |p| p.joules)?;
    Ok(e1 - e0)
}

/// A validated series of either kind, so block and idle math need not care which.
#[derive(Debug, Clone, Copy)]
pub enum Series<'a> {
    /// Power samples.
    Power(&'a [WattPoint]),
    /// Energy-counter samples with their wrap range.
    Counter {
        /// The readings.
        points: &'a [CounterPoint],
        /// Wrap range, if the counter wraps.
        wrap_j: Option<f64>,
    },
}

impl Series<'_> {
    /// Energy in joules over `window`.
    pub fn energy_j(&self, window: Window) -> Result<f64, EnergyError> {
        match self {
            Series::Power(p) => trapezoid_j(p, window),
            Series::Counter { points, wrap_j } => counter_energy_j(points, *wrap_j, window),
        }
    }

    /// Mean power in watts over `window` (positive length).
    pub fn mean_power_w(&self, window: Window) -> Result<f64, EnergyError> {
        if window.duration_s() <= 0.0 {
            return Err(EnergyError::ZeroDuration { t_s: window.start_s });
        }
        Ok(self.energy_j(window)? / window.duration_s())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(points: &[(f64, f64)]) -> Vec<WattPoint> {
        points.iter().map(|&(t_s, watts)| WattPoint { t_s, watts }).collect()
    }

    fn win(a: f64, b: f64) -> Window {
        Window::new(a, b).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn constant_10_w_over_2_s_is_20_j() {
        let p = w(&[(0.0, 10.0), (0.5, 10.0), (1.0, 10.0), (1.5, 10.0), (2.0, 10.0)]);
        assert_eq!(trapezoid_j(&p, win(0.0, 2.0)), Ok(20.0));
        assert_eq!(mean_power_w(&p, win(0.0, 2.0)), Ok(10.0));
    }

    #[test]
    fn a_ramp_is_integrated_exactly() {
        // P = 10 t: ∫0..2 = 20 J; ∫0.5..1.5 = 5 (1.5² − 0.5²) = 10 J.
        let p = w(&[(0.0, 0.0), (1.0, 10.0), (2.0, 20.0)]);
        assert!(close(trapezoid_j(&p, win(0.0, 2.0)).unwrap(), 20.0));
        // Hand check: P(0.5) = 5, P(1) = 10, P(1.5) = 15 → (5+10)/2·0.5 + (10+15)/2·0.5.
        assert!(close(trapezoid_j(&p, win(0.5, 1.5)).unwrap(), 3.75 + 6.25));
    }

    #[test]
    fn interpolates_inside_the_first_and_last_intervals() {
        // Triangle 0 → 10 → 0 W over 0..2 s, window [0.5, 1.75]:
        // P(0.5) = 5, P(1.75) = 2.5 → (5+10)/2·0.5 + (10+2.5)/2·0.75 = 3.75 + 4.6875.
        let p = w(&[(0.0, 0.0), (1.0, 10.0), (2.0, 0.0)]);
        assert!(close(trapezoid_j(&p, win(0.5, 1.75)).unwrap(), 8.4375));
        assert_eq!(interpolate_w(&p, 1.75), Ok(2.5));
    }

    #[test]
    fn a_window_inside_one_interval() {
        // (0 s, 10 W) → (1 s, 20 W); window [0.2, 0.6]: P = 12 and 16, mean 14 W × 0.4 s.
        let p = w(&[(0.0, 10.0), (1.0, 20.0)]);
        assert!(close(trapezoid_j(&p, win(0.2, 0.6)).unwrap(), 5.6));
        assert!(close(mean_power_w(&p, win(0.2, 0.6)).unwrap(), 14.0));
    }

    #[test]
    fn uneven_spacing_uses_the_actual_receive_times() {
        // Intervals of 0.49 s and 0.51 s: (10+20)/2·0.49 + (20+30)/2·0.51 = 7.35 + 12.75.
        let p = w(&[(0.0, 10.0), (0.49, 20.0), (1.0, 30.0)]);
        assert!(close(trapezoid_j(&p, win(0.0, 1.0)).unwrap(), 20.1));
    }

    #[test]
    fn window_ends_on_sample_times() {
        let p = w(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]);
        // [1, 2]: (3+5)/2 = 4 J; zero-length window: 0 J.
        assert_eq!(trapezoid_j(&p, win(1.0, 2.0)), Ok(4.0));
        assert_eq!(trapezoid_j(&p, win(2.0, 2.0)), Ok(0.0));
        assert_eq!(interpolate_w(&p, 3.0), Ok(7.0));
        assert_eq!(interpolate_w(&p, 0.0), Ok(1.0));
        assert!(matches!(mean_power_w(&p, win(2.0, 2.0)), Err(EnergyError::ZeroDuration { .. })));
    }

    #[test]
    fn never_extrapolates() {
        let p = w(&[(1.0, 10.0), (2.0, 10.0)]);
        assert!(matches!(trapezoid_j(&p, win(0.9, 2.0)), Err(EnergyError::NotCovered { .. })));
        assert!(matches!(trapezoid_j(&p, win(1.0, 2.1)), Err(EnergyError::NotCovered { .. })));
        assert!(interpolate_w(&p, 0.5).is_err());
        assert_eq!(trapezoid_j(&[], win(0.0, 1.0)), Err(EnergyError::Empty));
    }

    #[test]
    fn unordered_or_nan_input_is_an_error() {
        let p = w(&[(0.0, 1.0), (1.0, 1.0), (1.0, 1.0)]);
        assert!(matches!(trapezoid_j(&p, win(0.0, 1.0)), Err(EnergyError::NonMonotonic { index: 2, .. })));
        let p = w(&[(0.0, 1.0), (1.0, f64::NAN), (2.0, 1.0)]);
        assert!(matches!(trapezoid_j(&p, win(0.0, 2.0)), Err(EnergyError::NonFinite { index: 1, .. })));
    }

    #[test]
    fn counter_delta_corrects_a_wrap_at_max_range() {
        // RAPL-style range 262,143.328850 J: from 262,143.0 J to 1.5 J is
        // 1.5 + (262,143.32885 − 262,143.0) = 1.82885 J.
        let d = counter_delta_j(262_143.0, 1.5, Some(262_143.328_85)).unwrap();
        assert!(close(d, 1.828_85), "{d}");
        assert_eq!(counter_delta_j(10.0, 12.5, Some(100.0)), Ok(2.5));
        assert_eq!(counter_delta_j(10.0, 12.5, None), Ok(2.5));
        // Exactly at the range and back to 0.
        assert_eq!(counter_delta_j(100.0, 0.0, Some(100.0)), Ok(0.0));
        assert_eq!(counter_delta_j(99.0, 3.0, Some(100.0)), Ok(4.0));
    }

    #[test]
    fn counter_errors_are_never_energy() {
        assert_eq!(
            counter_delta_j(12.0, 10.0, None),
            Err(EnergyError::CounterDecreased { prev_j: 12.0, cur_j: 10.0 })
        );
        assert!(matches!(
            counter_delta_j(101.0, 3.0, Some(100.0)),
            Err(EnergyError::CounterOutOfRange { .. })
        ));
        assert!(matches!(
            counter_delta_j(-1.0, 3.0, Some(100.0)),
            Err(EnergyError::CounterOutOfRange { .. })
        ));
        assert!(matches!(counter_delta_j(1.0, 3.0, Some(0.0)), Err(EnergyError::BadWrap { .. })));
        assert!(matches!(counter_delta_j(1.0, f64::NAN, None), Err(EnergyError::NonFinite { .. })));
    }

    fn c(points: &[(f64, f64)]) -> Vec<CounterPoint> {
        points.iter().map(|&(t_s, joules)| CounterPoint { t_s, joules }).collect()
    }

    #[test]
    fn counter_energy_interpolates_the_unwrapped_counter() {
        // 20 W as a counter: 100, 110, 120 J at 0, 0.5, 1.0 s; [0.25, 0.75] → 10 J.
        let p = c(&[(0.0, 100.0), (0.5, 110.0), (1.0, 120.0)]);
        assert!(close(counter_energy_j(&p, None, win(0.25, 0.75)).unwrap(), 10.0));
        // The same through a wrap at 115 J: 100, 110, 5 (= 120 − 115).
        let p = c(&[(0.0, 100.0), (0.5, 110.0), (1.0, 5.0)]);
        let cum = unwrap_counter(&p, Some(115.0)).unwrap();
        assert_eq!(cum[2].joules, 120.0);
        assert!(close(counter_energy_j(&p, Some(115.0), win(0.25, 0.75)).unwrap(), 10.0));
        assert!(close(counter_energy_j(&p, Some(115.0), win(0.0, 1.0)).unwrap(), 20.0));
        // Without a wrap range the decrease is an error.
        assert!(matches!(
            counter_energy_j(&p, None, win(0.0, 1.0)),
            Err(EnergyError::CounterDecreased { .. })
        ));
        assert!(matches!(
            counter_energy_j(&p, Some(115.0), win(0.0, 1.5)),
            Err(EnergyError::NotCovered { .. })
        ));
    }

    #[test]
    fn series_gives_the_same_answer_for_power_and_counter_forms() {
        // 10 W constant, sampled both ways.
        let pw = w(&[(0.0, 10.0), (1.0, 10.0), (2.0, 10.0)]);
        let pc = c(&[(0.0, 0.0), (1.0, 10.0), (2.0, 20.0)]);
        let a = Series::Power(&pw);
        let b = Series::Counter { points: &pc, wrap_j: None };
        for s in [a, b] {
            assert!(close(s.energy_j(win(0.3, 1.7)).unwrap(), 14.0));
            assert!(close(s.mean_power_w(win(0.3, 1.7)).unwrap(), 10.0));
        }
    }
}
