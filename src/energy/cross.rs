//! The cross-check of a sensor's total against the same quantity read another way.
//!
//! A sensor may record, outside its total, a channel named `<total channel>-power` or
//! `<total channel>-energy` that measures the same thing by the other method (NVML: the
//! board's energy counter and its power reading). For every block whose energy the total
//! gave, the other channel's energy over the same window is computed (power: trapezoid;
//! counter: interpolated delta) and the two are reported side by side with their difference.
//! The verdict never depends on it: it is evidence about the sensor (update rate, averaging,
//! quantisation), and a block the other channel cannot cover says why.

use serde::{Deserialize, Serialize};

use super::integrate::Series;
use super::run::{BlockResult, BlockSpan};
use super::{CounterPoint, WattPoint};
use crate::power::sampler::{Sample, SampleOutcome};
use crate::power::Measurement;

/// The other channel's energy next to the total's, per block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossCheck {
    /// The channel of the total (`gpu0`).
    pub total_channel: String,
    /// The other channel (`gpu0-power`).
    pub channel: String,
    /// What the other channel reads: `power` or `energy_counter`.
    pub quantity: String,
    /// Samples without a value on the other channel (faults included), kept in the record.
    pub samples_without_value: usize,
    /// Per block, in the order of the run.
    pub blocks: Vec<CrossBlock>,
    /// Largest |difference| over the blocks that have both, % of the total's energy.
    pub max_abs_difference_pct: Option<f64>,
}

/// One block's two energies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossBlock {
    /// Block index.
    pub index: u32,
    /// The total's energy over the block, J.
    pub total_j: Option<f64>,
    /// The other channel's energy over the same window, J.
    pub other_j: Option<f64>,
    /// `other_j - total_j`, J.
    pub difference_j: Option<f64>,
    /// The difference as % of `total_j`.
    pub difference_pct: Option<f64>,
    /// Why a figure is missing.
    pub missing_reason: Option<String>,
}

/// The cross-check of a run, when its first reading has exactly one total channel and a
/// channel named after it with `-power` or `-energy` outside the total; `None` otherwise.
pub fn check(samples: &[Sample], blocks: &[BlockSpan], totals: &[BlockResult]) -> Option<CrossCheck> {
    let first = samples.iter().find_map(|s| match &s.outcome {
        SampleOutcome::Reading(r) => Some(r),
        SampleOutcome::Fault(_) => None,
    })?;
    let mut in_total = first.channels.iter().filter(|c| c.in_total);
    let (total, None) = (in_total.next()?, in_total.next()) else {
        return None;
    };
    let other = first.channels.iter().find(|c| {
        !c.in_total
            && (c.channel == format!("{}-power", total.channel)
                || c.channel == format!("{}-energy", total.channel))
    })?;
    let name = other.channel.clone();
    let mut watts = Vec::new();
    let mut counter = Vec::new();
    let mut wrap_j = None;
    let mut without = 0;
    for s in samples {
        match s.measurement(&name) {
            Ok(Measurement::PowerW { watts: w }) if w.is_finite() => {
                watts.push(WattPoint { t_s: s.t_receive_s(), watts: w })
            }
            Ok(Measurement::EnergyCounterJ { joules, wrap_j: w }) if joules.is_finite() => {
                wrap_j = w;
                counter.push(CounterPoint { t_s: s.t_receive_s(), joules });
            }
            _ => without += 1,
        }
    }
    let quantity = match other.measurement {
        Measurement::PowerW { .. } => "power",
        Measurement::EnergyCounterJ { .. } => "energy_counter",
    };
    let series = match other.measurement {
        Measurement::PowerW { .. } => Series::Power(&watts),
        Measurement::EnergyCounterJ { .. } => Series::Counter { points: &counter, wrap_j },
    };
    let rows: Vec<CrossBlock> = blocks
        .iter()
        .map(|b| {
            let total_j =
                totals.iter().find(|t| t.index == b.index).and_then(|t| t.energy.map(|e| e.energy_j));
            let other = series.energy_j(b.window);
            let other_j = other.as_ref().ok().copied();
            let difference_j = total_j.zip(other_j).map(|(t, o)| o - t);
            let difference_pct =
                total_j.zip(difference_j).filter(|(t, _)| *t != 0.0).map(|(t, d)| d / t * 100.0);
            let missing_reason = match (&other, total_j) {
                (Err(e), _) => Some(format!("{name}: {e}")),
                (Ok(_), None) => Some("the total has no energy for this block".to_string()),
                _ => None,
            };
            CrossBlock { index: b.index, total_j, other_j, difference_j, difference_pct, missing_reason }
        })
        .collect();
    let max_abs_difference_pct = rows.iter().filter_map(|r| r.difference_pct).map(f64::abs).reduce(f64::max);
    Some(CrossCheck {
        total_channel: total.channel.clone(),
        channel: name,
        quantity: quantity.into(),
        samples_without_value: without,
        blocks: rows,
        max_abs_difference_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::idle::{BlockEnergy, IdlePower};
    use crate::energy::Window;
    use crate::power::{ChannelReading, Reading};

    fn sample(seq: u64, t_s: f64, total_j: f64, watts: f64) -> Sample {
        let r = Reading {
            channels: vec![
                ChannelReading {
                    channel: "gpu0".into(),
                    measurement: Measurement::EnergyCounterJ { joules: total_j, wrap_j: None },
                    in_total: true,
                },
                ChannelReading {
                    channel: "gpu0-power".into(),
                    measurement: Measurement::PowerW { watts },
                    in_total: false,
                },
            ],
            source_t_s: None,
            raw: None,
        };
        let t_ns = (t_s * 1e9) as u64;
        Sample { seq, t_request_ns: t_ns, t_receive_ns: t_ns, outcome: SampleOutcome::Reading(r) }
    }

    fn block(index: u32, window: Window, energy_j: f64) -> BlockResult {
        let idle = IdlePower { window, stable: window, energy_j: 0.0, power_w: 0.0 };
        BlockResult {
            index,
            energy: Some(BlockEnergy {
                window,
                duration_s: window.duration_s(),
                energy_j,
                mean_power_w: energy_j / window.duration_s(),
                idle_before: idle,
                idle_after: idle,
                idle_power_w: 0.0,
                idle_energy_j: 0.0,
                incremental_energy_j: energy_j,
                incremental_power_w: energy_j / window.duration_s(),
            }),
            missing_reason: None,
        }
    }

    #[test]
    fn power_beside_a_counter_is_integrated_over_each_block_and_compared() {
        // Power 100 W for t < 2 s and 200 W after; the counter read 0, 100, 200, 400, 600 J.
        let samples: Vec<Sample> = [
            (0.0, 0.0, 100.0),
            (1.0, 100.0, 100.0),
            (2.0, 200.0, 200.0),
            (3.0, 400.0, 200.0),
            (4.0, 600.0, 200.0),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(t, j, w))| sample(i as u64, t, j, w))
        .collect();
        let w0 = Window { start_s: 0.0, end_s: 2.0 };
        let w1 = Window { start_s: 2.0, end_s: 4.0 };
        let blocks = [
            BlockSpan { index: 0, window: w0, ended_early: false },
            BlockSpan { index: 1, window: w1, ended_early: false },
        ];
        // The totals as the counter gives them: 200 J and 400 J; one block is said to be 210 J
        // to see the sign and the percentage.
        let totals = [block(0, w0, 210.0), block(1, w1, 400.0)];
        let c = check(&samples, &blocks, &totals).unwrap();
        assert_eq!(
            (c.total_channel.as_str(), c.channel.as_str(), c.quantity.as_str()),
            ("gpu0", "gpu0-power", "power")
        );
        assert_eq!(c.samples_without_value, 0);
        // Trapezoid over 0-2 s: (100+100)/2 + (100+200)/2 = 250 J.
        assert_eq!(c.blocks[0].other_j, Some(250.0));
        assert_eq!(c.blocks[0].difference_j, Some(40.0));
        assert!((c.blocks[0].difference_pct.unwrap() - 40.0 / 210.0 * 100.0).abs() < 1e-12);
        // 2-4 s at 200 W: 400 J, no difference.
        assert_eq!(c.blocks[1].other_j, Some(400.0));
        assert_eq!(c.blocks[1].difference_pct, Some(0.0));
        assert!((c.max_abs_difference_pct.unwrap() - 19.047_619).abs() < 1e-5);
    }

    #[test]
    fn no_other_channel_no_cross_check_and_gaps_are_said() {
        let mut lone = sample(0, 0.0, 0.0, 1.0);
        if let SampleOutcome::Reading(r) = &mut lone.outcome {
            r.channels.truncate(1);
        }
        assert!(check(&[lone], &[], &[]).is_none());
        // The block runs past the last sample: the other channel cannot cover it.
        let samples = [sample(0, 0.0, 0.0, 50.0), sample(1, 1.0, 50.0, 50.0)];
        let w = Window { start_s: 0.5, end_s: 3.0 };
        let c =
            check(&samples, &[BlockSpan { index: 0, window: w, ended_early: false }], &[block(0, w, 125.0)])
                .unwrap();
        assert_eq!(c.blocks[0].other_j, None);
        assert!(c.blocks[0].missing_reason.as_deref().unwrap().starts_with("gpu0-power: "));
        assert_eq!(c.max_abs_difference_pct, None);
    }
}
