//! The sampling a run actually got (issue 48): how many samples fell strictly inside each
//! block and idle window, the largest gap between consecutive samples covering each, and the
//! realized interval over the run (median and largest gap), beside the requested one.
//!
//! The requested `--sample-interval` is checked before the run (`run::measure_energy`): it must leave
//! at least [`MIN_SAMPLES_IN_WINDOW`] samples in a block and in an idle window after its
//! discard. A meter paces itself, so what it delivered is checked again afterwards on the
//! samples' **receive** timestamps (the times integration uses): a block that ran to its end
//! with fewer than [`MIN_SAMPLES_IN_WINDOW`] samples strictly inside it rejects the run
//! ([`check_blocks`], rule `too_few_samples_in_block`). Pure functions over plain data.

use serde::{Deserialize, Serialize};

use super::reject::{Rejection, SampleRef};
use super::Window;

/// The fewest samples a block (and an idle window after its discard) must hold strictly
/// inside it: the requested interval is refused before the run when it would leave fewer, and
/// a block that ran to its end with fewer rejects the run.
pub const MIN_SAMPLES_IN_WINDOW: usize = 2;

/// How one block or idle window was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowSampling {
    /// Block index, or idle window index (0 before the first block, `i + 1` after block `i`).
    pub index: u32,
    /// The window checked, seconds on the run's clock (an idle window: its stable part, after
    /// the discard).
    pub start_s: f64,
    /// End of the window, seconds.
    pub end_s: f64,
    /// Samples received strictly inside the window (start < t < end).
    pub samples_inside: usize,
    /// The largest gap between two consecutive samples whose span overlaps the window (the
    /// pairs bracketing its ends included), seconds; `None` when no pair overlaps it.
    pub max_gap_s: Option<f64>,
}

/// The sampling a run got, against the interval it asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingAudit {
    /// `--sample-interval` (or the interval chosen for the sensor), seconds.
    pub requested_sample_interval_s: f64,
    /// Median gap between consecutive samples over the run, seconds (`None` with fewer than 2).
    pub realized_sample_interval_median_s: Option<f64>,
    /// Largest gap between consecutive samples over the run, seconds (`None` with fewer than 2).
    pub realized_sample_interval_max_s: Option<f64>,
    /// The fewest samples a block must hold strictly inside it ([`MIN_SAMPLES_IN_WINDOW`]).
    pub min_samples_per_block: usize,
    /// Per block, in input order.
    pub blocks: Vec<WindowSampling>,
    /// Per idle window (its stable part, after the discard), in input order.
    pub idle_windows: Vec<WindowSampling>,
}

impl SamplingAudit {
    /// The block with the fewest samples inside it (the first such), if any block ran.
    pub fn sparsest_block(&self) -> Option<&WindowSampling> {
        self.blocks.iter().min_by_key(|b| b.samples_inside)
    }

    /// One line for the reports: requested against realized interval, and the fewest samples
    /// in a block.
    pub fn sentence(&self) -> String {
        let s = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"));
        let mut out = format!(
            "Sample interval requested {} s, realized median {} s, max {} s",
            fmt_s(self.requested_sample_interval_s),
            s(self.realized_sample_interval_median_s),
            s(self.realized_sample_interval_max_s),
        );
        if let Some(b) = self.sparsest_block() {
            out.push_str(&format!(
                "; fewest samples inside a block: {} (block {}; at least {} required)",
                b.samples_inside, b.index, self.min_samples_per_block
            ));
        }
        out.push('.');
        out
    }
}

fn fmt_s(x: f64) -> String {
    let t = format!("{x:.6}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

/// Samples received strictly inside `w` (start < t < end).
pub fn samples_inside(times: &[f64], w: Window) -> usize {
    times.iter().filter(|&&t| t > w.start_s && t < w.end_s).count()
}

/// The consecutive pair with the largest gap among those whose span overlaps `w`
/// (`a < end` and `b > start`), as indices into `times`; `None` when no pair overlaps it.
fn largest_covering_pair(times: &[f64], w: Window) -> Option<(usize, usize)> {
    (1..times.len())
        .filter(|&i| times[i - 1] < w.end_s && times[i] > w.start_s)
        .max_by(|&i, &j| (times[i] - times[i - 1]).total_cmp(&(times[j] - times[j - 1])))
        .map(|i| (i - 1, i))
}

/// The largest gap between consecutive samples whose span overlaps `w`, seconds.
pub fn max_gap_covering(times: &[f64], w: Window) -> Option<f64> {
    largest_covering_pair(times, w).map(|(a, b)| times[b] - times[a])
}

/// How `w` was sampled.
pub fn window_sampling(times: &[f64], index: u32, w: Window) -> WindowSampling {
    WindowSampling {
        index,
        start_s: w.start_s,
        end_s: w.end_s,
        samples_inside: samples_inside(times, w),
        max_gap_s: max_gap_covering(times, w),
    }
}

/// The median and the largest gap between consecutive samples, seconds (`None` with fewer
/// than 2 samples). The median of an even count is the mean of the middle two.
pub fn realized_interval(times: &[f64]) -> (Option<f64>, Option<f64>) {
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.is_empty() {
        return (None, None);
    }
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len();
    let median = if n % 2 == 1 { gaps[n / 2] } else { (gaps[n / 2 - 1] + gaps[n / 2]) / 2.0 };
    (Some(median), gaps.last().copied())
}

/// A block to check: its index, window, and whether it was cut short (an interrupt, a sensor
/// that stopped, a failed call), which exempts it: it did not run the length the interval was
/// checked against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckedBlock {
    /// Block index.
    pub index: u32,
    /// The block's window.
    pub window: Window,
    /// Cut short.
    pub ended_early: bool,
}

/// `too_few_samples_in_block` for every block that ran to its end with fewer than
/// [`MIN_SAMPLES_IN_WINDOW`] samples strictly inside it. `samples` are the readings (faults
/// left out), in the order received, by sequence number and receive time.
pub fn check_blocks(samples: &[SampleRef], blocks: &[CheckedBlock]) -> Vec<Rejection> {
    let times: Vec<f64> = samples.iter().map(|s| s.t_s).collect();
    blocks
        .iter()
        .filter(|b| !b.ended_early)
        .filter_map(|b| {
            let inside = samples_inside(&times, b.window);
            if inside >= MIN_SAMPLES_IN_WINDOW {
                return None;
            }
            let pair = largest_covering_pair(&times, b.window);
            Some(Rejection::TooFewSamplesInBlock {
                block: b.index,
                start_s: b.window.start_s,
                end_s: b.window.end_s,
                samples: inside,
                min_samples: MIN_SAMPLES_IN_WINDOW,
                max_gap_s: pair.map(|(a, c)| times[c] - times[a]),
                gap_before: pair.map(|(a, _)| samples[a]),
                gap_after: pair.map(|(_, c)| samples[c]),
            })
        })
        .collect()
}

/// The sampling audit of a run: `samples` are the readings' receive times in the order
/// received; idle windows are checked on their stable part (the first `idle_discard_s`
/// removed; a window the discard leaves nothing of is checked as an empty window at its end).
pub fn audit(
    times: &[f64],
    requested_s: f64,
    blocks: &[(u32, Window)],
    idles: &[(u32, Window)],
    idle_discard_s: f64,
) -> SamplingAudit {
    let (median, max) = realized_interval(times);
    SamplingAudit {
        requested_sample_interval_s: requested_s,
        realized_sample_interval_median_s: median,
        realized_sample_interval_max_s: max,
        min_samples_per_block: MIN_SAMPLES_IN_WINDOW,
        blocks: blocks.iter().map(|&(i, w)| window_sampling(times, i, w)).collect(),
        idle_windows: idles
            .iter()
            .map(|&(i, w)| {
                let start = (w.start_s + idle_discard_s).min(w.end_s);
                window_sampling(times, i, Window { start_s: start, end_s: w.end_s })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(a: f64, b: f64) -> Window {
        Window::new(a, b).unwrap()
    }

    fn refs(times: &[f64]) -> Vec<SampleRef> {
        times.iter().enumerate().map(|(i, &t)| SampleRef { seq: i as u64, t_s: t }).collect()
    }

    #[test]
    fn samples_on_a_window_edge_are_not_inside_it() {
        let t = [0.0, 1.0, 1.5, 2.0, 3.0];
        assert_eq!(samples_inside(&t, w(1.0, 2.0)), 1); // 1.5 only; 1.0 and 2.0 sit on the edges
        assert_eq!(samples_inside(&t, w(0.5, 2.5)), 3);
        assert_eq!(samples_inside(&t, w(3.5, 4.0)), 0);
        assert_eq!(samples_inside(&[], w(0.0, 1.0)), 0);
    }

    #[test]
    fn the_largest_covering_gap_includes_the_pairs_bracketing_the_ends() {
        // Gaps: 0.9, 0.2, 1.4, 0.5. Window [1.0, 2.0]: pairs (0.1, 1.0) end at its start (not
        // overlapping), (1.0, 1.2), (1.2, 2.6) and nothing after 2.6 overlaps. Largest 1.4.
        let t = [0.1, 1.0, 1.2, 2.6, 3.1];
        assert!((max_gap_covering(&t, w(1.0, 2.0)).unwrap() - 1.4).abs() < 1e-12);
        // Window [0.2, 0.8], inside the first gap: that gap covers it, with no sample inside.
        assert!((max_gap_covering(&t, w(0.2, 0.8)).unwrap() - 0.9).abs() < 1e-12);
        // Outside every sample: no pair overlaps it.
        assert_eq!(max_gap_covering(&t, w(4.0, 5.0)), None);
        assert_eq!(max_gap_covering(&[1.0], w(0.0, 2.0)), None);
    }

    #[test]
    fn the_realized_interval_is_the_median_and_the_largest_gap() {
        // The meter: every ~0.33 s with one 1.243 s gap. Gaps 0.33, 0.33, 1.243, 0.34:
        // sorted 0.33, 0.33, 0.34, 1.243 → median (0.33 + 0.34) / 2 = 0.335, max 1.243.
        let t = [0.0, 0.33, 0.66, 1.903, 2.243];
        let (median, max) = realized_interval(&t);
        assert!((median.unwrap() - 0.335).abs() < 1e-12, "{median:?}");
        assert!((max.unwrap() - 1.243).abs() < 1e-12, "{max:?}");
        // Odd count of gaps: the middle one. Gaps 0.1, 0.5, 0.2 → median 0.2.
        let (median, max) = realized_interval(&[0.0, 0.1, 0.6, 0.8]);
        assert!((median.unwrap() - 0.2).abs() < 1e-12);
        assert!((max.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(realized_interval(&[1.0]), (None, None));
        assert_eq!(realized_interval(&[]), (None, None));
    }

    #[test]
    fn a_block_with_one_sample_inside_is_rejected_naming_block_count_and_gap() {
        // The issue: --sample-interval 100ms, a meter delivering every ~0.33 s with a 1.243 s
        // gap, and a 1 s block [1.0, 2.0] holding one sample (1.5).
        let t = [0.0, 0.3, 1.5, 2.743, 3.0];
        let s = refs(&t);
        let blocks = [
            CheckedBlock { index: 0, window: w(0.1, 0.9), ended_early: false }, // 0.3: one
            CheckedBlock { index: 1, window: w(1.0, 2.0), ended_early: false }, // 1.5: one
            CheckedBlock { index: 2, window: w(1.4, 2.8), ended_early: true },  // cut short: exempt
        ];
        let r = check_blocks(&s, &blocks);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[1].rule(), "too_few_samples_in_block");
        match &r[1] {
            Rejection::TooFewSamplesInBlock {
                block,
                samples,
                min_samples,
                max_gap_s,
                gap_before,
                gap_after,
                ..
            } => {
                assert_eq!((*block, *samples, *min_samples), (1, 1, 2));
                // Pairs overlapping [1, 2]: (0.3, 1.5) = 1.2 s and (1.5, 2.743) = 1.243 s.
                assert!((max_gap_s.unwrap() - 1.243).abs() < 1e-12);
                assert_eq!((gap_before.unwrap().seq, gap_after.unwrap().seq), (2, 3));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            r[1].to_string(),
            "too_few_samples_in_block: block 1 [1.000, 2.000] s holds 1 sample strictly inside it, fewer than the 2 required; the largest gap covering it is 1.243 s, between sample 2 at 1.500 s and sample 3 at 2.743 s"
        );
        assert_eq!(r[1].samples().len(), 2);
        // Two samples inside pass; samples on the edges do not count.
        let t = [1.0, 1.3, 1.6, 2.0];
        let one = [CheckedBlock { index: 0, window: w(1.0, 2.0), ended_early: false }];
        assert!(check_blocks(&refs(&t), &one).is_empty());
        let t = [1.0, 1.5, 2.0];
        let r = check_blocks(&refs(&t), &one);
        assert_eq!(r.len(), 1);
        // No sample at all: count 0, no gap.
        let r = check_blocks(&[], &one);
        assert!(r[0].to_string().contains("holds 0 samples strictly inside it"), "{}", r[0]);
        assert!(r[0].samples().is_empty());
    }

    #[test]
    fn the_audit_counts_blocks_and_stable_idle_windows() {
        // Samples every 0.25 s from 0 to 4 s; idle [0, 1], block [1, 3], idle [3, 4], discard 0.5.
        let t: Vec<f64> = (0..=16).map(|i| i as f64 * 0.25).collect();
        let a = audit(&t, 0.1, &[(0, w(1.0, 3.0))], &[(0, w(0.0, 1.0)), (1, w(3.0, 4.0))], 0.5);
        assert_eq!(a.requested_sample_interval_s, 0.1);
        assert_eq!(a.realized_sample_interval_median_s, Some(0.25));
        assert_eq!(a.realized_sample_interval_max_s, Some(0.25));
        // Block (1, 3): 1.25 … 2.75, seven samples.
        assert_eq!(a.blocks[0].samples_inside, 7);
        assert_eq!(a.blocks[0].max_gap_s, Some(0.25));
        // Stable idle (0.5, 1): 0.75 only; (3.5, 4): 3.75 only.
        assert_eq!((a.idle_windows[0].start_s, a.idle_windows[0].samples_inside), (0.5, 1));
        assert_eq!(a.idle_windows[1].samples_inside, 1);
        assert_eq!(a.sparsest_block().unwrap().index, 0);
        assert_eq!(
            a.sentence(),
            "Sample interval requested 0.1 s, realized median 0.250 s, max 0.250 s; fewest samples inside a block: 7 (block 0; at least 2 required)."
        );
    }
}
