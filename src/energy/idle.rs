//! Idle windows, per-block idle power and idle-subtracted (incremental) energy.
//!
//! Protocol: idle windows sit between blocks; the first `discard_s` seconds of each are
//! dropped (settling), the rest is the stable idle window; a block's idle power is the mean of
//! the stable idle power just before and just after it. Incremental energy =
//! block energy − idle power × block duration, kept with its sign: a block that drew less than
//! idle gets negative incremental energy, never a clamp to zero.

use super::integrate::Series;
use super::{EnergyError, Window};
use serde::{Deserialize, Serialize};

/// Mean power over the stable part of one idle window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IdlePower {
    /// The idle window as scheduled.
    pub window: Window,
    /// Its stable part (after the discard), over which power was averaged.
    pub stable: Window,
    /// Energy over the stable part, J.
    pub energy_j: f64,
    /// Mean power over the stable part, W.
    pub power_w: f64,
}

/// The stable part of an idle window: `[start + discard_s, end]`. The discard must be finite,
/// non-negative and shorter than the window.
pub fn stable_idle_window(idle: Window, discard_s: f64) -> Result<Window, EnergyError> {
    let window_s = idle.duration_s();
    if !discard_s.is_finite() || discard_s < 0.0 || discard_s >= window_s {
        return Err(EnergyError::DiscardTooLong { discard_s, window_s });
    }
    Window::new(idle.start_s + discard_s, idle.end_s)
}

/// Mean power over the stable part of `idle`.
pub fn idle_power(series: &Series<'_>, idle: Window, discard_s: f64) -> Result<IdlePower, EnergyError> {
    let stable = stable_idle_window(idle, discard_s)?;
    let energy_j = series.energy_j(stable)?;
    Ok(IdlePower { window: idle, stable, energy_j, power_w: energy_j / stable.duration_s() })
}

/// A block's idle power: the mean of the two adjacent stable idle windows' powers.
pub fn block_idle_power_w(before_w: f64, after_w: f64) -> f64 {
    (before_w + after_w) / 2.0
}

/// Energy above idle: `active_energy_j − idle_power_w × duration_s`, sign kept.
pub fn idle_subtracted_energy_j(active_energy_j: f64, idle_power_w: f64, duration_s: f64) -> f64 {
    active_energy_j - idle_power_w * duration_s
}

/// Energy figures of one timed block.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlockEnergy {
    /// The block's window.
    pub window: Window,
    /// Its length, s.
    pub duration_s: f64,
    /// Energy over the block, J.
    pub energy_j: f64,
    /// Mean power over the block, W.
    pub mean_power_w: f64,
    /// The stable idle window before the block.
    pub idle_before: IdlePower,
    /// The stable idle window after the block.
    pub idle_after: IdlePower,
    /// Mean of the two idle powers, W.
    pub idle_power_w: f64,
    /// Idle power × block duration, J.
    pub idle_energy_j: f64,
    /// Energy above idle, J (may be negative).
    pub incremental_energy_j: f64,
    /// Mean power above idle, W (may be negative).
    pub incremental_power_w: f64,
}

/// Energy of `block`, with idle power from the idle windows right before and after it.
pub fn block_energy(
    series: &Series<'_>,
    block: Window,
    idle_before: Window,
    idle_after: Window,
    discard_s: f64,
) -> Result<BlockEnergy, EnergyError> {
    let not_adjacent = |which, idle: Window| EnergyError::IdleNotAdjacent {
        which,
        idle_start_s: idle.start_s,
        idle_end_s: idle.end_s,
        block_start_s: block.start_s,
        block_end_s: block.end_s,
    };
    if idle_before.end_s > block.start_s {
        return Err(not_adjacent("before", idle_before));
    }
    if idle_after.start_s < block.end_s {
        return Err(not_adjacent("after", idle_after));
    }
    let duration_s = block.duration_s();
    if duration_s <= 0.0 {
        return Err(EnergyError::ZeroDuration { t_s: block.start_s });
    }
    let energy_j = series.energy_j(block)?;
    let before = idle_power(series, idle_before, discard_s)?;
    let after = idle_power(series, idle_after, discard_s)?;
    let idle_power_w = block_idle_power_w(before.power_w, after.power_w);
    let idle_energy_j = idle_power_w * duration_s;
    let incremental_energy_j = idle_subtracted_energy_j(energy_j, idle_power_w, duration_s);
    Ok(BlockEnergy {
        window: block,
        duration_s,
        energy_j,
        mean_power_w: energy_j / duration_s,
        idle_before: before,
        idle_after: after,
        idle_power_w,
        idle_energy_j,
        incremental_energy_j,
        incremental_power_w: incremental_energy_j / duration_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::{CounterPoint, WattPoint};

    fn win(a: f64, b: f64) -> Window {
        Window::new(a, b).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// Every 0.5 s from 0 to 41 s: `idle1` W up to 9.5 s, `block` W from 10 to 30 s, `idle2`
    /// W from 30.5 s on. Windows: idle [0, 9], block [10, 30], idle [31, 41]; the ramps
    /// between them fall outside every window.
    fn schedule(idle1: f64, block: f64, idle2: f64) -> Vec<WattPoint> {
        (0..=82)
            .map(|i| {
                let t_s = f64::from(i) * 0.5;
                let watts = if t_s <= 9.5 {
                    idle1
                } else if t_s <= 30.0 {
                    block
                } else {
                    idle2
                };
                WattPoint { t_s, watts }
            })
            .collect()
    }

    #[test]
    fn discard_trims_the_start_of_an_idle_window() {
        assert_eq!(stable_idle_window(win(30.0, 40.0), 3.0), Ok(win(33.0, 40.0)));
        assert_eq!(stable_idle_window(win(30.0, 40.0), 0.0), Ok(win(30.0, 40.0)));
        for bad in [10.0, 11.0, -1.0, f64::NAN] {
            assert!(
                matches!(stable_idle_window(win(30.0, 40.0), bad), Err(EnergyError::DiscardTooLong { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn discarded_seconds_do_not_count() {
        // 50 W settling for the first 3 s of the idle window, then 10 W.
        let p: Vec<WattPoint> = (0..=20)
            .map(|i| {
                let t_s = f64::from(i) * 0.5;
                WattPoint { t_s, watts: if t_s < 3.0 { 50.0 } else { 10.0 } }
            })
            .collect();
        let ip = idle_power(&Series::Power(&p), win(0.0, 10.0), 3.0).unwrap();
        assert_eq!(ip.stable, win(3.0, 10.0));
        assert!(close(ip.energy_j, 70.0));
        assert!(close(ip.power_w, 10.0));
    }

    #[test]
    fn block_idle_is_the_mean_of_both_neighbours_and_subtraction_is_hand_checked() {
        let p = schedule(10.0, 30.0, 14.0);
        let b =
            block_energy(&Series::Power(&p), win(10.0, 30.0), win(0.0, 9.0), win(31.0, 41.0), 3.0).unwrap();
        assert_eq!(b.duration_s, 20.0);
        assert!(close(b.energy_j, 600.0));
        assert!(close(b.mean_power_w, 30.0));
        assert!(close(b.idle_before.power_w, 10.0));
        assert_eq!(b.idle_before.stable, win(3.0, 9.0));
        assert!(close(b.idle_after.power_w, 14.0));
        assert_eq!(b.idle_after.stable, win(34.0, 41.0));
        assert!(close(b.idle_power_w, 12.0));
        assert!(close(b.idle_energy_j, 240.0));
        assert!(close(b.incremental_energy_j, 360.0));
        assert!(close(b.incremental_power_w, 18.0));
    }

    #[test]
    fn incremental_energy_keeps_a_negative_sign() {
        // Block at 11 W between idles of 10 and 14 W: idle 12 W → −1 W × 20 s = −20 J.
        let p = schedule(10.0, 11.0, 14.0);
        let b =
            block_energy(&Series::Power(&p), win(10.0, 30.0), win(0.0, 9.0), win(31.0, 41.0), 3.0).unwrap();
        assert!(close(b.incremental_energy_j, -20.0), "{b:?}");
        assert!(b.incremental_power_w < 0.0);
        assert_eq!(idle_subtracted_energy_j(50.0, 30.0, 2.0), -10.0);
        assert_eq!(block_idle_power_w(10.0, 14.0), 12.0);
    }

    #[test]
    fn counter_series_give_the_same_block_figures() {
        // The same schedule as a counter: integrate the power samples exactly.
        let p = schedule(10.0, 30.0, 14.0);
        let mut joules = 0.0;
        let mut c = vec![CounterPoint { t_s: 0.0, joules: 0.0 }];
        for w in p.windows(2) {
            joules += (w[1].t_s - w[0].t_s) * (w[0].watts + w[1].watts) / 2.0;
            c.push(CounterPoint { t_s: w[1].t_s, joules });
        }
        let s = Series::Counter { points: &c, wrap_j: None };
        let b = block_energy(&s, win(10.0, 30.0), win(0.0, 9.0), win(31.0, 41.0), 3.0).unwrap();
        assert!(close(b.energy_j, 600.0));
        assert!(close(b.idle_power_w, 12.0));
        assert!(close(b.incremental_energy_j, 360.0));
    }

    #[test]
    fn idle_windows_must_flank_the_block() {
        let p = schedule(10.0, 30.0, 14.0);
        let s = Series::Power(&p);
        let e = block_energy(&s, win(10.0, 30.0), win(0.0, 11.0), win(31.0, 41.0), 3.0).unwrap_err();
        assert!(matches!(e, EnergyError::IdleNotAdjacent { which: "before", .. }));
        let e = block_energy(&s, win(10.0, 30.0), win(0.0, 9.0), win(29.0, 41.0), 3.0).unwrap_err();
        assert!(matches!(e, EnergyError::IdleNotAdjacent { which: "after", .. }));
        // An idle window past the samples is not extrapolated.
        let e = block_energy(&s, win(10.0, 30.0), win(0.0, 9.0), win(31.0, 45.0), 3.0).unwrap_err();
        assert!(matches!(e, EnergyError::NotCovered { .. }));
    }
}
