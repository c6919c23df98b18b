//! The seeded bootstrap over whole balanced cycles.
//!
//! A resample draws as many cycles as the run had, with replacement, and recomputes every
//! figure from the drawn cycles' sums, exactly as the point estimate is formed from all of them:
//! t = Σ time / Σ decisions, P = Σ energy / Σ time, E = Σ energy / Σ decisions,
//! S = t_base / t_arm, R = P_base / P_arm, S × R, and the idle-subtracted gain (only when both
//! idle-subtracted energies are positive). Per-cycle sums are computed once, so a resample costs
//! O(cycles × arms), not O(calls). Intervals are percentiles of the resampled figures.

use crate::stats::percentile_sorted;
pub use crate::stats::resamples::{
    distinct_resamples, interval_name, names_a_level_interval, MIN_DISTINCT_RESAMPLES,
};
use crate::summary::report::{ArmIntervals, Interval};

use super::rng::Rng;

/// One arm's sums over the blocks of one cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CycleSums {
    /// Decisions.
    pub decisions: f64,
    /// Block wall time, s.
    pub time_s: f64,
    /// Active energy, J (`None` without energy).
    pub energy_j: Option<f64>,
    /// Idle-subtracted energy, J.
    pub incremental_j: Option<f64>,
}

impl CycleSums {
    fn add(&mut self, o: &CycleSums) {
        self.decisions += o.decisions;
        self.time_s += o.time_s;
        self.energy_j = self.energy_j.zip(o.energy_j).map(|(a, b)| a + b);
        self.incremental_j = self.incremental_j.zip(o.incremental_j).map(|(a, b)| a + b);
    }

    fn zero(with_energy: bool) -> Self {
        let e = with_energy.then_some(0.0);
        CycleSums { decisions: 0.0, time_s: 0.0, energy_j: e, incremental_j: e }
    }
}

/// Figures of one arm formed from sums (a field is `None` where it cannot be formed).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// t, s.
    pub t: Option<f64>,
    /// P, W.
    pub p: Option<f64>,
    /// E, J.
    pub e: Option<f64>,
    /// Idle-subtracted energy per decision, J.
    pub inc: Option<f64>,
}

fn div(a: f64, b: f64) -> Option<f64> {
    let q = a / b;
    (b != 0.0 && q.is_finite()).then_some(q)
}

/// Form t, P, E and idle-subtracted E per decision from sums.
pub fn figures(s: &CycleSums) -> Figures {
    Figures {
        t: div(s.time_s, s.decisions),
        p: s.energy_j.and_then(|e| div(e, s.time_s)),
        e: s.energy_j.and_then(|e| div(e, s.decisions)),
        inc: s.incremental_j.and_then(|e| div(e, s.decisions)),
    }
}

/// S, R, S × R and the idle-subtracted gain of `arm` against `base`.
pub fn gains(base: &Figures, arm: &Figures) -> [Option<f64>; 4] {
    let opt_div = |a: Option<f64>, b: Option<f64>| a.zip(b).and_then(|(a, b)| div(a, b));
    let s = opt_div(base.t, arm.t);
    let r = opt_div(base.p, arm.p);
    let inc = match (base.inc, arm.inc) {
        (Some(b), Some(a)) if b > 0.0 && a > 0.0 => div(b, a),
        _ => None,
    };
    [s, r, s.zip(r).map(|(s, r)| s * r), inc]
}

/// The sums per cycle (rows) and arm (columns).
#[derive(Debug, Clone, PartialEq)]
pub struct CycleTable {
    /// `cycles[c][a]`.
    pub cycles: Vec<Vec<CycleSums>>,
    /// Index of the baseline arm.
    pub baseline: usize,
    /// Whether energy figures exist.
    pub with_energy: bool,
}

/// The seven quantities of an arm, in [`ArmIntervals`] order.
const QUANTITIES: [&str; 7] = ArmIntervals::QUANTITIES;

/// Every resample's figures: `out[arm][quantity]` holds one value per valid resample.
pub fn resample(table: &CycleTable, resamples: usize, seed: u64) -> Vec<[Vec<f64>; 7]> {
    let n = table.cycles.len();
    let arms = table.cycles.first().map(Vec::len).unwrap_or(0);
    let mut out: Vec<[Vec<f64>; 7]> =
        (0..arms).map(|_| std::array::from_fn(|_| Vec::with_capacity(resamples))).collect();
    if n == 0 || arms == 0 {
        return out;
    }
    let mut rng = Rng::seeded(seed);
    let mut sums = vec![CycleSums::zero(table.with_energy); arms];
    let mut figs = vec![Figures::default(); arms];
    for _ in 0..resamples {
        sums.iter_mut().for_each(|s| *s = CycleSums::zero(table.with_energy));
        for _ in 0..n {
            let c = &table.cycles[rng.below(n as u64) as usize];
            for (s, x) in sums.iter_mut().zip(c) {
                s.add(x);
            }
        }
        for (f, s) in figs.iter_mut().zip(&sums) {
            *f = figures(s);
        }
        let base = figs[table.baseline];
        for (a, f) in figs.iter().enumerate() {
            let [s, r, sr, inc] = gains(&base, f);
            for (q, v) in [f.t, f.p, f.e, s, r, sr, inc].into_iter().enumerate() {
                if let Some(v) = v {
                    out[a][q].push(v);
                }
            }
        }
    }
    out
}

/// The central `level` percentile interval of `values` (sorted in place); `None` when empty.
pub fn percentile_interval(values: &mut [f64], level: f64) -> Option<Interval> {
    values.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0 * 100.0;
    Some(Interval {
        low: percentile_sorted(values, tail)?,
        high: percentile_sorted(values, 100.0 - tail)?,
        valid_resamples: values.len(),
    })
}

/// Intervals of every arm from its resampled figures; a quantity no resample could form is
/// `None` with `missing_reason`.
pub fn intervals(
    mut resampled: Vec<[Vec<f64>; 7]>,
    level: f64,
    missing_reason: impl Fn(&str) -> String,
) -> Vec<ArmIntervals> {
    resampled
        .iter_mut()
        .map(|qs| {
            let mut iv = ArmIntervals::default();
            let mut slots: [Option<Interval>; 7] = Default::default();
            for (q, values) in qs.iter_mut().enumerate() {
                slots[q] = percentile_interval(values, level);
                if slots[q].is_none() {
                    iv.missing.insert(QUANTITIES[q].into(), missing_reason(QUANTITIES[q]));
                }
            }
            let [t, p, e, s, r, sr, inc] = slots;
            iv.time_per_decision_s = t;
            iv.mean_power_w = p;
            iv.energy_per_decision_j = e;
            iv.speed_gain = s;
            iv.power_ratio = r;
            iv.energy_gain = sr;
            iv.idle_subtracted_energy_gain = inc;
            iv
        })
        .collect()
}

/// Why an arm's interval of quantity `q` (an [`ArmIntervals`] field name) is missing: without
/// energy figures (`energy_ok` false) every quantity but t and S has `no_energy`'s reason.
/// What `summary` and `energy` both say.
pub fn missing_reason(q: &str, energy_ok: bool, no_energy: &str) -> String {
    if !energy_ok && !matches!(q, "time_per_decision_s" | "speed_gain") {
        no_energy.to_string()
    } else if q == "idle_subtracted_energy_gain" {
        "an idle-subtracted energy was zero or negative in every resample (kept with its sign; no ratio is formed)".into()
    } else {
        "no resample could form it (a figure it needs is missing)".into()
    }
}

/// The speed ratio S = t(baseline) / t(arm) of every arm with its central `level` interval,
/// from `resamples` seeded resamples of whole balanced cycles; `cycles[c][a]` holds arm `a`'s
/// (decisions, seconds) summed over cycle `c`. What `speed` prints beside each ratio: the
/// same resampling `summary` uses, on time only.
pub fn speed_gain_intervals(
    cycles: &[Vec<(f64, f64)>],
    baseline: usize,
    resamples: usize,
    seed: u64,
    level: f64,
) -> Vec<Option<Interval>> {
    let table = CycleTable {
        cycles: cycles
            .iter()
            .map(|row| {
                row.iter()
                    .map(|&(decisions, time_s)| CycleSums {
                        decisions,
                        time_s,
                        energy_j: None,
                        incremental_j: None,
                    })
                    .collect()
            })
            .collect(),
        baseline,
        with_energy: false,
    };
    resample(&table, resamples, seed)
        .into_iter()
        .map(|mut qs| percentile_interval(&mut qs[3], level))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_gain_intervals_span_the_cycles_ratios() {
        // Cycle 0: the arm is 2× faster; cycle 1: 4× faster. A resample of two cycles gives
        // S = 2 (cycle 0 twice), 4 (cycle 1 twice) or 3 (one of each: the baseline's
        // 20 s / 200 decisions ÷ the arm's 20 s / 600 decisions).
        let cycles = vec![vec![(100.0, 10.0), (200.0, 10.0)], vec![(100.0, 10.0), (400.0, 10.0)]];
        let iv = speed_gain_intervals(&cycles, 0, 2000, 7, 0.95);
        let base = iv[0].unwrap();
        assert!((base.low - 1.0).abs() < 1e-12 && (base.high - 1.0).abs() < 1e-12);
        let arm = iv[1].unwrap();
        assert!((arm.low - 2.0).abs() < 1e-12 && (arm.high - 4.0).abs() < 1e-12, "{arm:?}");
        assert_eq!(arm.valid_resamples, 2000);
    }

    fn sums(decisions: f64, time_s: f64, energy_j: f64, incremental_j: f64) -> CycleSums {
        CycleSums { decisions, time_s, energy_j: Some(energy_j), incremental_j: Some(incremental_j) }
    }

    /// Two cycles: in cycle 0 the candidate is 2× faster at half the power (energy gain 4);
    /// in cycle 1 it is 4× faster at half the power (energy gain 8).
    fn table() -> CycleTable {
        CycleTable {
            cycles: vec![
                vec![sums(100.0, 10.0, 600.0, 100.0), sums(200.0, 10.0, 300.0, 50.0)],
                vec![sums(100.0, 10.0, 600.0, 100.0), sums(400.0, 10.0, 300.0, 50.0)],
            ],
            baseline: 0,
            with_energy: true,
        }
    }

    #[test]
    fn figures_and_gains_follow_the_definitions() {
        let f = figures(&sums(100.0, 10.0, 600.0, 100.0));
        assert_eq!((f.t, f.p, f.e, f.inc), (Some(0.1), Some(60.0), Some(6.0), Some(1.0)));
        let g = figures(&sums(200.0, 10.0, 300.0, 50.0));
        assert_eq!(gains(&f, &g), [Some(2.0), Some(2.0), Some(4.0), Some(4.0)]);
        // A non-positive idle-subtracted energy forms no ratio.
        let under = figures(&sums(200.0, 10.0, 300.0, -5.0));
        assert_eq!(gains(&f, &under)[3], None);
    }

    #[test]
    fn a_hand_checked_two_cycle_bootstrap() {
        // Resamples are {0,0} (gain 4), {0,1}/{1,0} and {1,1} (gain 8). Drawing both cycles once:
        // baseline t = 20/200, candidate t = 20/600 → S = 3; R = 2 → S × R = 6.
        // The three outcomes have probabilities 1/4, 1/2, 1/4, so with many resamples the 2.5th
        // percentile is 4 and the 97.5th is 8, and about half the resamples give exactly 6.
        let out = resample(&table(), 4000, 11);
        let sr = &out[1][5];
        assert_eq!(sr.len(), 4000);
        let count = |v: f64| sr.iter().filter(|&&x| (x - v).abs() < 1e-12).count();
        let (four, six, eight) = (count(4.0), count(6.0), count(8.0));
        assert_eq!(four + six + eight, 4000);
        assert!((1800..2200).contains(&six), "{four} {six} {eight}");
        assert!((850..1150).contains(&four) && (850..1150).contains(&eight));
        let iv = intervals(out, 0.95, |q| q.to_string());
        let e = iv[1].energy_gain.unwrap();
        assert_eq!((e.low, e.high), (4.0, 8.0));
        // The baseline against itself is exactly 1 in every resample.
        let b = iv[0].speed_gain.unwrap();
        assert_eq!((b.low, b.high, b.valid_resamples), (1.0, 1.0, 4000));
        // Power is 30 W for the candidate in every cycle.
        assert_eq!(iv[1].mean_power_w.map(|i| (i.low, i.high)), Some((30.0, 30.0)));
    }

    #[test]
    fn the_same_seed_gives_the_same_intervals() {
        let a = intervals(resample(&table(), 500, 3), 0.95, |q| q.to_string());
        let b = intervals(resample(&table(), 500, 3), 0.95, |q| q.to_string());
        assert_eq!(a, b);
        let raw_a = resample(&table(), 500, 3);
        let raw_c = resample(&table(), 500, 4);
        assert_ne!(raw_a[1][5], raw_c[1][5]);
    }

    #[test]
    fn quantities_without_energy_are_missing_with_the_reason() {
        let mut t = table();
        t.with_energy = false;
        for row in &mut t.cycles {
            for s in row {
                s.energy_j = None;
                s.incremental_j = None;
            }
        }
        let iv = intervals(resample(&t, 100, 1), 0.95, |q| format!("no energy for {q}"));
        assert!(iv[1].speed_gain.is_some());
        assert!(iv[1].energy_gain.is_none());
        assert_eq!(iv[1].missing["power_ratio"], "no energy for power_ratio");
    }

    #[test]
    fn distinct_resample_counts() {
        assert_eq!(distinct_resamples(1), 1.0);
        assert_eq!(distinct_resamples(2), 3.0);
        assert_eq!(distinct_resamples(3), 10.0);
        // C(7, 4) = 7·6·5 / 3! = 35; C(9, 5) = 126; C(19, 10) = 92,378.
        assert_eq!(distinct_resamples(4), 35.0);
        assert_eq!(distinct_resamples(5), 126.0);
        assert_eq!(distinct_resamples(10), 92_378.0);
    }

    /// The multisets of 2 cycles {a, b} drawn 2 at a time are aa, ab, bb: 3; of 3 cycles, 3 of a
    /// kind (3) + a pair and one other (3 × 2 = 6) + one of each (1) = 10. Both are below 20;
    /// 4 cycles (35) are not.
    #[test]
    fn an_interval_from_fewer_than_20_distinct_resamples_is_not_called_95_percent() {
        assert!(!names_a_level_interval(1));
        assert!(!names_a_level_interval(2));
        assert!(!names_a_level_interval(3));
        assert!(names_a_level_interval(4));
        assert!(names_a_level_interval(10));
        assert_eq!(interval_name(2, 0.95), "range of 3 possible resamples, not a 95 % interval");
        assert_eq!(interval_name(3, 0.95), "range of 10 possible resamples, not a 95 % interval");
        assert_eq!(interval_name(4, 0.95), "95 % interval");
        assert_eq!(interval_name(10, 0.9), "90 % interval");
    }
}
