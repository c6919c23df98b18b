//! Percentiles, means and ratios over plain numbers (pure functions), and [`steal`], the
//! hypervisor's steal counter over an interval (re-exported as `report::steal`).

pub mod resamples;
pub mod steal;

/// numpy's default (`linear`) percentile of sorted data; `None` for no data.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    let pos = (sorted.len() - 1) as f64 * q / 100.0;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Arithmetic mean; `None` for no data.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation (n − 1 in the denominator); `None` for fewer than two values.
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Modified z-score above which a value is a statistical outlier (the threshold hyperfine uses).
pub const OUTLIER_Z: f64 = 14.0;

/// Indices of the statistical outliers of `xs`: values whose modified z-score
/// |x − median| / (1.4826 × MAD) exceeds [`OUTLIER_Z`] (MAD: the median absolute deviation,
/// scaled to σ for normal data). When the MAD is 0 (most values equal), a value is an outlier
/// when it is more than twice the median away from it. Nothing is removed; callers report them.
pub fn outliers(xs: &[f64]) -> Vec<usize> {
    let mut sorted: Vec<f64> = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(median) = percentile_sorted(&sorted, 50.0) else {
        return Vec::new();
    };
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = percentile_sorted(&dev, 50.0).unwrap_or(0.0) * 1.4826;
    xs.iter()
        .enumerate()
        .filter(|(_, &x)| {
            let d = (x - median).abs();
            if mad > 0.0 {
                d / mad > OUTLIER_Z
            } else {
                d > 2.0 * median.abs() && d > 0.0
            }
        })
        .map(|(i, _)| i)
        .collect()
}

/// Latency summary of one arm, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Number of calls.
    pub calls: u64,
    /// Mean latency.
    pub mean_s: f64,
    /// Sample standard deviation (n − 1); `None` for a single call (and in reports written
    /// before it was recorded).
    #[serde(default)]
    pub std_s: Option<f64>,
    /// Median.
    pub p50_s: f64,
    /// 90th percentile (`None` in reports written before it was recorded).
    #[serde(default)]
    pub p90_s: Option<f64>,
    /// 95th percentile.
    pub p95_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Fastest call.
    pub min_s: f64,
    /// Slowest call.
    pub max_s: f64,
}

impl LatencySummary {
    /// Summarize latencies in seconds (sorted in place); `None` for no data.
    pub fn from_latencies(latencies: &mut [f64]) -> Option<Self> {
        latencies.sort_by(f64::total_cmp);
        Some(Self {
            calls: latencies.len() as u64,
            mean_s: mean(latencies)?,
            std_s: std_dev(latencies),
            p50_s: percentile_sorted(latencies, 50.0)?,
            p90_s: percentile_sorted(latencies, 90.0),
            p95_s: percentile_sorted(latencies, 95.0)?,
            p99_s: percentile_sorted(latencies, 99.0)?,
            min_s: *latencies.first()?,
            max_s: *latencies.last()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_interpolates_like_numpy_linear() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&xs, 50.0), Some(2.5));
        assert_eq!(percentile_sorted(&xs, 95.0), Some(3.85));
        assert_eq!(percentile_sorted(&xs, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&xs, 100.0), Some(4.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }

    #[test]
    fn standard_deviation_and_outliers_by_hand() {
        // Mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5 over n − 1 = 3.
        let s = std_dev(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((s - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(std_dev(&[1.0]), None);
        // 7.6…8.0 ms and one 321 ms call: median 7.8, MAD 0.1 (× 1.4826), z ≈ 2112.
        let xs = [7.6, 7.7, 7.8, 7.9, 8.0, 321.0, 7.8];
        assert_eq!(outliers(&xs), vec![5]);
        // A wide but regular spread has none.
        assert!(outliers(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).is_empty());
        // All equal but one: MAD 0, the far value is flagged.
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 5.0, 50.0]), vec![4]);
        assert!(outliers(&[]).is_empty());
    }

    #[test]
    fn summary_of_known_latencies() {
        let mut xs = vec![0.004, 0.001, 0.003, 0.002];
        let s = LatencySummary::from_latencies(&mut xs).unwrap();
        assert_eq!(s.calls, 4);
        assert!((s.mean_s - 0.0025).abs() < 1e-15);
        assert!((s.p50_s - 0.0025).abs() < 1e-15);
        assert_eq!(s.min_s, 0.001);
        assert_eq!(s.max_s, 0.004);
        // p90 of [1, 2, 3, 4] ms: position 2.7 → 3.7 ms.
        assert!((s.p90_s.unwrap() - 0.0037).abs() < 1e-15);
        assert!((s.std_s.unwrap() - 0.001 * (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
    }
}
