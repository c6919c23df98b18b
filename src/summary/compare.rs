//! Several runs of the same arms side by side, flagging intervals that do not overlap.

use crate::summary::report::{ArmSummary, ComparedValue, Comparison, ComparisonRow, Interval, RunSummary};

use super::SummaryError;

type Pick = fn(&ArmSummary) -> (Option<f64>, Option<Interval>);

/// The compared quantities, in row order.
const QUANTITIES: [(&str, Pick); 6] = [
    ("time_per_decision_s", |a| (a.totals.time_per_decision_s, a.intervals.time_per_decision_s)),
    ("mean_power_w", |a| (a.totals.mean_power_w, a.intervals.mean_power_w)),
    ("energy_per_decision_j", |a| (a.totals.energy_per_decision_j, a.intervals.energy_per_decision_j)),
    ("speed_gain", |a| (a.vs_baseline.speed_gain, a.intervals.speed_gain)),
    ("power_ratio", |a| (a.vs_baseline.power_ratio, a.intervals.power_ratio)),
    ("energy_gain", |a| (a.vs_baseline.energy_gain, a.intervals.energy_gain)),
];

/// Pairs `(i, j)`, `i < j`, whose intervals are disjoint.
pub fn disjoint_pairs(intervals: &[Interval]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..intervals.len() {
        for j in i + 1..intervals.len() {
            if !intervals[i].overlaps(&intervals[j]) {
                out.push((i, j));
            }
        }
    }
    out
}

/// Compare runs that have the same arms and baseline.
pub fn compare(runs: &[RunSummary]) -> Result<Comparison, SummaryError> {
    let first = runs.first().ok_or(SummaryError::NoRuns)?;
    let names: Vec<String> = first.arms.iter().map(|a| a.name.clone()).collect();
    for r in runs {
        if r.arms.is_empty() {
            return Err(SummaryError::NotComparable {
                file: r.source.clone(),
                reason: format!(
                    "it has no statistics ({})",
                    r.statistics_missing_reason.as_deref().unwrap_or("status not complete")
                ),
            });
        }
        let theirs: Vec<&str> = r.arms.iter().map(|a| a.name.as_str()).collect();
        if theirs != names.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(SummaryError::NotComparable {
                file: r.source.clone(),
                reason: format!(
                    "its arms ({}) differ from those of {} ({})",
                    theirs.join(", "),
                    first.source,
                    names.join(", ")
                ),
            });
        }
        if r.baseline != first.baseline {
            return Err(SummaryError::NotComparable {
                file: r.source.clone(),
                reason: format!(
                    "its baseline `{}` differs from `{}`; pass --baseline",
                    r.baseline, first.baseline
                ),
            });
        }
    }
    let mut rows = Vec::new();
    for (a, name) in names.iter().enumerate() {
        for (quantity, pick) in QUANTITIES {
            let values: Vec<ComparedValue> = runs
                .iter()
                .map(|r| {
                    let (value, interval) = pick(&r.arms[a]);
                    ComparedValue { source: r.source.clone(), value, interval }
                })
                .collect();
            let intervals: Option<Vec<Interval>> = values.iter().map(|v| v.interval).collect();
            let (non_overlapping, overlap_missing_reason) = match intervals {
                Some(iv) => (disjoint_pairs(&iv), None),
                None => (Vec::new(), Some("a run has no interval for it".to_string())),
            };
            rows.push(ComparisonRow {
                arm: name.clone(),
                quantity: quantity.into(),
                runs: values,
                non_overlapping,
                overlap_missing_reason,
            });
        }
    }
    let intervals_disjoint = rows.iter().any(|r| !r.non_overlapping.is_empty());
    Ok(Comparison { arms: names, rows, intervals_disjoint })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(low: f64, high: f64) -> Interval {
        Interval { low, high, valid_resamples: 10 }
    }

    #[test]
    fn disjoint_pairs_are_found_and_touching_intervals_overlap() {
        assert_eq!(disjoint_pairs(&[iv(1.0, 2.0), iv(2.0, 3.0), iv(2.5, 4.0)]), vec![(0, 2)]);
        assert!(disjoint_pairs(&[iv(1.0, 2.0), iv(1.5, 1.6)]).is_empty());
        assert_eq!(disjoint_pairs(&[iv(3.0, 4.0), iv(1.0, 2.0)]), vec![(0, 1)]);
    }
}
