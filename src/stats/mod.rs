//! Percentiles, means and ratios over plain numbers (pure functions).

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

/// Latency summary of one arm, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Number of calls.
    pub calls: u64,
    /// Mean latency.
    pub mean_s: f64,
    /// Median.
    pub p50_s: f64,
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
            p50_s: percentile_sorted(latencies, 50.0)?,
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
    fn summary_of_known_latencies() {
        let mut xs = vec![0.004, 0.001, 0.003, 0.002];
        let s = LatencySummary::from_latencies(&mut xs).unwrap();
        assert_eq!(s.calls, 4);
        assert!((s.mean_s - 0.0025).abs() < 1e-15);
        assert!((s.p50_s - 0.0025).abs() < 1e-15);
        assert_eq!(s.min_s, 0.001);
        assert_eq!(s.max_s, 0.004);
    }
}
