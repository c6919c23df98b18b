//! How many distinct resamples a bootstrap over whole balanced cycles has, and what its
//! percentile interval may be called (re-exported by `summary::bootstrap`; the reports name
//! their intervals with these).

/// Number of distinct resamples of `n` cycles: multisets of size n from n, C(2n − 1, n).
pub fn distinct_resamples(n: usize) -> f64 {
    (0..n).fold(1.0, |acc, k| acc * (n + k) as f64 / (k + 1) as f64)
}

/// Fewest distinct resamples whose percentile interval is called a 95 % (or `level`) interval.
/// Below it the 2.5th and 97.5th percentiles of 10,000 draws are little more than the extremes of
/// a handful of possible values: 2 whole cycles give 3, 3 give 10, 4 give 35
/// ([`distinct_resamples`]), so from 4 cycles on the name holds.
pub const MIN_DISTINCT_RESAMPLES: f64 = 20.0;

/// Whether the bootstrap of `cycles` whole cycles has enough distinct resamples
/// ([`MIN_DISTINCT_RESAMPLES`]) for its percentile interval to be called a `level` interval.
pub fn names_a_level_interval(cycles: usize) -> bool {
    distinct_resamples(cycles) >= MIN_DISTINCT_RESAMPLES
}

/// What the percentile interval of a bootstrap over `cycles` whole cycles is, in words:
/// `95 % interval`, or, with fewer than [`MIN_DISTINCT_RESAMPLES`] distinct resamples,
/// `range of 10 possible resamples, not a 95 % interval`.
pub fn interval_name(cycles: usize, level: f64) -> String {
    let pct = level * 100.0;
    if names_a_level_interval(cycles) {
        format!("{pct:.0} % interval")
    } else {
        format!("range of {:.0} possible resamples, not a {pct:.0} % interval", distinct_resamples(cycles))
    }
}
