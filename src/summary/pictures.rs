//! The pictures of a summarized run (`summary --plots`), drawn from the raw record and its
//! summary: the power timeline (every sample's watts, counter sensors' implied power), the
//! latency CDF and energy per block. Pure: the SVGs are returned as text; the command names
//! the files and writes them.

use crate::energy::counter_delta_j;
use crate::power::sampler::{Sample, SampleOutcome};
use crate::power::Measurement;
use crate::record::{RawRun, Record};
use crate::report::plots::{
    self, ArmBand, BlockBand, BlockPoint, IdleBand, LatencySeries, PowerTimeline, RejectedPoint,
};
use crate::summary::report::RunSummary;

/// One picture: its kind (the file's stem: `power_timeline`, `latency_cdf`,
/// `energy_per_block`) and its SVG, or why it could not be drawn.
pub type Picture = (&'static str, Result<String, plots::PlotError>);

/// Every sample as (receive time s, watts, seq): the reading's total watts, or for counter
/// sensors the power implied by the counters' change since the previous sample (summed over
/// the channels in the total, wrap-corrected); `None` for a fault or where it cannot be formed.
pub fn sample_watts(run: &RawRun) -> Vec<(f64, Option<f64>, u64)> {
    let samples: Vec<&Sample> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Sample(x) => Some(x.as_ref()),
            _ => None,
        })
        .collect();
    let counters = |s: &Sample| -> Option<Vec<(String, f64, Option<f64>)>> {
        let SampleOutcome::Reading(r) = &s.outcome else { return None };
        r.channels
            .iter()
            .filter(|c| c.in_total)
            .map(|c| match c.measurement {
                Measurement::EnergyCounterJ { joules, wrap_j } => Some((c.channel.clone(), joules, wrap_j)),
                Measurement::PowerW { .. } => None,
            })
            .collect()
    };
    let mut out = Vec::with_capacity(samples.len());
    for (i, s) in samples.iter().enumerate() {
        let watts = match &s.outcome {
            SampleOutcome::Fault(_) => None,
            SampleOutcome::Reading(r) => r.total_power_w().or_else(|| {
                let (prev, cur) = (counters(samples.get(i.checked_sub(1)?)?)?, counters(s)?);
                let dt = s.t_receive_s() - samples[i - 1].t_receive_s();
                let mut joules = 0.0;
                for (name, j, wrap) in &cur {
                    let (_, p, _) = prev.iter().find(|(n, _, _)| n == name)?;
                    joules += counter_delta_j(*p, *j, *wrap).ok()?;
                }
                (dt > 0.0).then(|| joules / dt)
            }),
        };
        out.push((s.t_receive_s(), watts, s.seq));
    }
    out
}

/// Each arm's name in the pictures: its name, and for an arm that is the same model as an
/// earlier one ([`crate::record::ArmInfo::same_model_as`]) the mark
/// `w8 = IDENTICAL to f32 (same model: the run's noise)`.
pub fn arm_labels(arms: &[crate::record::ArmInfo]) -> Vec<String> {
    arms.iter()
        .enumerate()
        .map(|(i, info)| match arms[..i].iter().find(|o| info.same_model_as(o)) {
            Some(same) => format!("{} = IDENTICAL to {} (same model: the run's noise)", info.name, same.name),
            None => info.name.clone(),
        })
        .collect()
}

/// The pictures a run supports: the power timeline (energy records with samples),
/// the latency CDF (any record with calls), energy per block (complete energy runs).
pub fn pictures(s: &RunSummary, run: &RawRun) -> Vec<Picture> {
    let names: Vec<String> = run.header.arms.iter().map(|a| a.name.clone()).collect();
    let arm_index = |name: &str| names.iter().position(|a| a == name).unwrap_or(0);
    // Every picture names an arm by its label: an arm that is the same model as an earlier one
    // carries the mark, so that two curves of one model are not read as two models.
    let arms = arm_labels(&run.header.arms);
    let mut out = Vec::new();
    let samples = sample_watts(run);
    if samples.iter().any(|x| x.1.is_some()) {
        let discard = run.header.energy.as_ref().map(|e| e.idle_discard_s).unwrap_or(0.0);
        let idles = run
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Idle { start_ns, end_ns, .. } => {
                    let (a, b) = (*start_ns as f64 / 1e9, *end_ns as f64 / 1e9);
                    Some(IdleBand { start_s: a, stable_start_s: (a + discard).min(b), end_s: b })
                }
                _ => None,
            })
            .collect();
        let rejected = s
            .rejections
            .iter()
            .flat_map(|r| {
                r.evidence.iter().map(|ev| RejectedPoint {
                    t_s: ev.t_receive_s,
                    watts: samples.iter().find(|x| x.2 == ev.seq).and_then(|x| x.1),
                    rule: r.rejection.rule().into(),
                })
            })
            .collect();
        let timeline = PowerTimeline {
            title: format!("Power over time: {} ({})", s.source, s.status.as_str()),
            arms: arms.clone(),
            samples: samples.iter().map(|x| (x.0, x.1)).collect(),
            blocks: s
                .blocks
                .iter()
                .map(|b| BlockBand { start_s: b.start_s, end_s: b.end_s, arm: arm_index(&b.arm) })
                .collect(),
            idles,
            rejected,
            max_gap_s: run.header.energy.as_ref().map(|e| e.max_gap_s),
            y_label: s.power_boundary.label("power", "W"),
        };
        out.push(("power_timeline", plots::power_timeline(&timeline)));
    }
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    for r in &run.records {
        if let Record::Call { arm, duration_ns, .. } = r {
            latencies[arm_index(arm)].push(*duration_ns as f64 / 1e6);
        }
    }
    if latencies.iter().any(|l| !l.is_empty()) {
        let series: Vec<LatencySeries> = arms
            .iter()
            .zip(latencies)
            .map(|(a, mut l)| {
                l.sort_by(f64::total_cmp);
                LatencySeries { arm: a.clone(), sorted_ms: l }
            })
            .collect();
        out.push((
            "latency_cdf",
            plots::latency_cdf(&format!("Call latency per arm: {}", s.source), &series),
        ));
    }
    let points: Vec<BlockPoint> = s
        .blocks
        .iter()
        .filter_map(|b| {
            b.energy_per_decision_j.map(|j| BlockPoint {
                index: b.index,
                arm: arm_index(&b.arm),
                j_per_decision: j,
            })
        })
        .collect();
    if !points.is_empty() && !s.arms.is_empty() {
        let bands: Vec<ArmBand> = s
            .arms
            .iter()
            .map(|a| ArmBand {
                value: a.totals.energy_per_decision_j.unwrap_or(f64::NAN),
                interval: a.intervals.energy_per_decision_j.map(|i| (i.low, i.high)),
            })
            .collect();
        let title = format!("Energy per decision per block: {}", s.source);
        let y = s.power_boundary.label("energy per decision", "J");
        out.push(("energy_per_block", plots::energy_per_block((&title, &y), &arms, &points, &bands)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::{FaultKind, Reading, SensorFault};

    fn header() -> crate::record::Header {
        crate::record::synthetic::records(&crate::record::synthetic::RunShape::published())
            .into_iter()
            .find_map(|r| match r {
                Record::Header(h) => Some(*h),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn counter_samples_give_the_implied_power_and_faults_none() {
        let header = header();
        let counter = |seq: u64, t_s: f64, j: f64| {
            Record::Sample(Box::new(Sample {
                seq,
                t_request_ns: 0,
                t_receive_ns: (t_s * 1e9) as u64,
                outcome: SampleOutcome::Reading(Reading::energy_counter_j("package-0", j, Some(100.0))),
            }))
        };
        // 10 W for 0.5 s, then a wrap at 100 J: 98 → 3 is 5 J in 0.5 s = 10 W.
        let records = vec![counter(0, 1.0, 93.0), counter(1, 1.5, 98.0), counter(2, 2.0, 3.0)];
        let run = RawRun { header, records, lines: Vec::new(), complete: false, truncated_tail: None };
        let w = sample_watts(&run);
        assert_eq!(w[0].1, None, "the first counter reading implies no power");
        assert!((w[1].1.unwrap() - 10.0).abs() < 1e-9 && (w[2].1.unwrap() - 10.0).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn power_readings_give_their_watts_and_faults_none() {
        let sample = |seq: u64, t_s: f64, outcome: SampleOutcome| {
            Record::Sample(Box::new(Sample {
                seq,
                t_request_ns: 0,
                t_receive_ns: (t_s * 1e9) as u64,
                outcome,
            }))
        };
        let fault = SensorFault { kind: FaultKind::ReadFailed, message: "timeout".into(), fatal: false };
        let records = vec![
            sample(4, 0.5, SampleOutcome::Reading(Reading::power_w("system", 30.0))),
            sample(5, 1.0, SampleOutcome::Fault(fault)),
            sample(6, 1.5, SampleOutcome::Reading(Reading::power_w("system", 12.5))),
        ];
        let run =
            RawRun { header: header(), records, lines: Vec::new(), complete: false, truncated_tail: None };
        assert_eq!(sample_watts(&run), [(0.5, Some(30.0), 4), (1.0, None, 5), (1.5, Some(12.5), 6)]);
    }

    /// Issue 48, item 5: an arm that is the same model as an earlier one (an A/A run, or `w8`
    /// on builtin:tiny) is marked in every picture's legend; another model's arm is not.
    #[test]
    fn an_identical_arm_is_marked_in_the_pictures() {
        let mut h = header();
        // The synthetic record's arms are scripted (never the same model); make them the
        // portable engine's, each its own weights, and add a second run of the first.
        for (i, a) in h.arms.iter_mut().enumerate() {
            a.backend = "portable".into();
            a.fingerprint = format!("weights-{i}");
        }
        let mut again = h.arms[0].clone();
        again.name = "again".into();
        h.arms.push(again);
        let labels = arm_labels(&h.arms);
        let first = &h.arms[0].name;
        assert_eq!(labels[0], *first);
        assert_eq!(
            labels.last().unwrap(),
            &format!("again = IDENTICAL to {first} (same model: the run's noise)")
        );
        assert!(labels[1..labels.len() - 1].iter().all(|l| !l.contains("IDENTICAL")), "{labels:?}");
        // The latency CDF's legend carries the mark.
        let series: Vec<LatencySeries> =
            labels.iter().map(|l| LatencySeries { arm: l.clone(), sorted_ms: vec![1.0, 2.0, 3.0] }).collect();
        let svg = plots::latency_cdf("latency", &series).unwrap();
        let texts = crate::report::plots::tests::well_formed_texts(&svg);
        assert!(texts.iter().any(|t| t.starts_with("again = IDENTICAL to")), "{texts:?}");
    }

    #[test]
    fn a_complete_energy_run_gets_all_three_pictures() {
        // Written and read back by the real writer and reader, so the record holds up as complete.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.raw.jsonl");
        let mut w = crate::record::RawWriter::create(&path).unwrap();
        for r in crate::record::synthetic::records(&crate::record::synthetic::RunShape::published()) {
            w.write(&r).unwrap();
        }
        w.sync().unwrap();
        let run = crate::record::read(&path).unwrap();
        let opts = crate::summary::Options { bootstrap: 0, ..crate::summary::Options::default() };
        let s = crate::summary::summarize(&run, "run.raw.jsonl", &opts).unwrap();
        assert_eq!(s.status, crate::summary::report::SummaryStatus::Complete);
        let kinds: Vec<&str> = pictures(&s, &run).iter().map(|p| p.0).collect();
        assert_eq!(kinds, ["power_timeline", "latency_cdf", "energy_per_block"]);
        assert!(pictures(&s, &run).iter().all(|p| p.1.as_ref().is_ok_and(|svg| svg.contains("<svg"))));
    }
}
