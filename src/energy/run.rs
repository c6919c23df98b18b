//! A whole run: from its samples, blocks and idle windows to either every rejection or the
//! energy of every block, and from block figures to per-arm aggregates and ratios.
//!
//! The samples are the sampler's plain records ([`Sample`]): this is the one place `energy`
//! reads `power` types, and only as data. Power sensors give one series (the sum of the
//! channels in the sensor's total); counter sensors give one series per channel in the total,
//! each checked and integrated on its own and then summed.
//!
//! A run is judged as a whole: any rejection rejects it, and then no energy is computed at all
//! (a rejected run's energy aggregate must never be used). Nothing is dropped, clipped or
//! clamped; a missing figure is `None` with a reason.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::idle::{block_energy, BlockEnergy, IdlePower};
use super::integrate::{counter_delta_j, Series};
use super::reject::{
    check_counter, check_counter_readings, check_power, check_power_readings, summarize, Observed, RawPoint,
    Rejection, Rules, SampleRef, SeriesSummary,
};
use super::sampling::{self, CheckedBlock, SamplingAudit};
use super::{CounterPoint, WattPoint, Window};
use crate::power::sampler::{Sample, SampleOutcome};
use crate::power::Measurement;

/// One timed block, on the run's clock in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockSpan {
    /// Block index in the run (its idle windows are `index` before and `index + 1` after).
    pub index: u32,
    /// The block's window.
    pub window: Window,
    /// Cut short (an interrupt, a sensor that stopped, a failed call): exempt from
    /// `too_few_samples_in_block`, since it did not run the length the interval was checked
    /// against.
    pub ended_early: bool,
}

/// One idle window, on the run's clock in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleSpan {
    /// 0 before the first block, `i + 1` after block `i`.
    pub index: u32,
    /// The window as it ran (before the discard).
    pub window: Window,
}

/// The span the samples of these windows must cover: from the earliest start to the latest
/// end of the idle windows and blocks; `None` when there are none.
pub fn span_of(blocks: &[BlockSpan], idles: &[IdleSpan]) -> Option<Window> {
    let windows = || idles.iter().map(|i| i.window).chain(blocks.iter().map(|b| b.window));
    let start = windows().map(|w| w.start_s).reduce(f64::min)?;
    let end = windows().map(|w| w.end_s).reduce(f64::max)?;
    Some(Window { start_s: start, end_s: end })
}

/// What a run's energy is computed from.
#[derive(Debug, Clone, Copy)]
pub struct RunInput<'a> {
    /// The readings taken before measuring (the probe that proves the sensor works), judged
    /// by the rules every single reading must pass; empty when none were taken.
    pub probes: &'a [Sample],
    /// Every sample, in the order the sampler sent them.
    pub samples: &'a [Sample],
    /// The blocks that ran.
    pub blocks: &'a [BlockSpan],
    /// The idle windows that ran.
    pub idles: &'a [IdleSpan],
    /// The span the samples must cover (first idle start to last idle end); `None` skips the
    /// coverage rules (nothing ran).
    pub span: Option<Window>,
    /// Cap and interval.
    pub rules: Rules,
    /// Seconds discarded at the start of each idle window.
    pub idle_discard_s: f64,
}

/// Which kind of series the sensor gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeriesKind {
    /// Watts (the sum of the channels in the sensor's total).
    Power {
        /// Channels summed.
        channels: Vec<String>,
    },
    /// Cumulative energy counters, one series per channel.
    Counter {
        /// Channels, each integrated on its own and summed.
        channels: Vec<String>,
    },
}

/// One sample named by a rejection, with what it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleEvidence {
    /// Sequence number.
    pub seq: u64,
    /// Receive time, seconds since the run's origin.
    pub t_receive_s: f64,
    /// The raw text behind the reading (a meter line, counter strings), if the sensor gave one.
    pub raw: Option<String>,
    /// The fault message, when the sample is a fault.
    pub fault: Option<String>,
}

/// A rejection with its message, the channel it concerns and the samples' raw values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectionDetail {
    /// The rule and its numbers (`rule` tag, samples, values).
    #[serde(flatten)]
    pub rejection: Rejection,
    /// One-line reading of it.
    pub message: String,
    /// The counter channel, for counter sensors.
    pub channel: Option<String>,
    /// The samples it names, as recorded.
    pub evidence: Vec<SampleEvidence>,
}

/// Energy of one block, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockResult {
    /// Block index.
    pub index: u32,
    /// The figures, when they could be computed.
    pub energy: Option<BlockEnergy>,
    /// Why `energy` is `None`.
    pub missing_reason: Option<String>,
}

/// The verdict on a run's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnergy {
    /// The series the sensor gave.
    pub series: SeriesKind,
    /// Every rule violation; non-empty means the run is rejected.
    pub rejections: Vec<RejectionDetail>,
    /// Count, longest gap and power range of the samples (counters: the total power implied
    /// by consecutive readings); `None` when rejected.
    pub summary: Option<SeriesSummary>,
    /// Per block, in input order; empty when rejected.
    pub blocks: Vec<BlockResult>,
    /// The total against the same quantity read another way, where the sensor records one
    /// beside its total ([`super::cross`]); absent otherwise and when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_check: Option<super::cross::CrossCheck>,
    /// The sampling the run got: samples inside each block and idle window, the realized
    /// interval beside the requested one ([`super::sampling`]); also when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingAudit>,
}

impl RunEnergy {
    /// A run the rules rejected: no summary, no blocks, no cross-check.
    fn refused(series: SeriesKind, rejections: Vec<RejectionDetail>) -> Self {
        RunEnergy { series, rejections, summary: None, blocks: vec![], cross_check: None, sampling: None }
    }

    /// Whether any rule rejected the run.
    pub fn rejected(&self) -> bool {
        !self.rejections.is_empty()
    }
}

fn evidence(samples: &[Sample], seq: u64) -> Option<SampleEvidence> {
    // Sequence numbers are dense and ordered unless samples were lost; look up directly first.
    let s = samples
        .get(seq as usize)
        .filter(|s| s.seq == seq)
        .or_else(|| samples.iter().find(|s| s.seq == seq))?;
    let (raw, fault) = match &s.outcome {
        SampleOutcome::Reading(r) => (r.raw.clone(), None),
        SampleOutcome::Fault(f) => (None, Some(f.message.clone())),
    };
    Some(SampleEvidence { seq, t_receive_s: s.t_receive_s(), raw, fault })
}

fn missing(s: &Sample, reason: String) -> RawPoint {
    RawPoint::missing(s.seq, s.t_receive_s(), &reason, false)
}

/// Decide the series kind from the first reading: power when its total is in watts, counters
/// when every channel in its total is a counter.
fn series_kind(samples: &[Sample]) -> SeriesKind {
    let first = samples.iter().find_map(|s| match &s.outcome {
        SampleOutcome::Reading(r) => Some(r),
        SampleOutcome::Fault(_) => None,
    });
    let Some(r) = first else {
        return SeriesKind::Power { channels: vec![] };
    };
    let total: Vec<_> = r.channels.iter().filter(|c| c.in_total).collect();
    let names = total.iter().map(|c| c.channel.clone()).collect();
    if !total.is_empty() && total.iter().all(|c| matches!(c.measurement, Measurement::EnergyCounterJ { .. }))
    {
        SeriesKind::Counter { channels: names }
    } else {
        SeriesKind::Power { channels: names }
    }
}

/// The power series: one point per sample, `Missing` for a fault or a reading without watts.
fn power_points(samples: &[Sample]) -> Vec<RawPoint> {
    samples
        .iter()
        .map(|s| match &s.outcome {
            SampleOutcome::Fault(f) => RawPoint::missing(s.seq, s.t_receive_s(), &f.message, f.fatal),
            SampleOutcome::Reading(r) => match r.total_power_w() {
                Some(w) => RawPoint::value(s.seq, s.t_receive_s(), w),
                None => missing(s, "reading has no power value in its total (a counter channel?)".into()),
            },
        })
        .collect()
}

/// One counter channel's series and its wrap range (from its first reading).
fn counter_points(samples: &[Sample], channel: &str) -> (Vec<RawPoint>, Option<f64>) {
    let mut wrap = None;
    let mut seen_wrap = false;
    let points = samples
        .iter()
        .map(|s| match s.measurement(channel) {
            Ok(Measurement::EnergyCounterJ { joules, wrap_j }) => {
                if !seen_wrap {
                    wrap = wrap_j;
                    seen_wrap = true;
                }
                if wrap_j != wrap {
                    return missing(s, format!("channel {channel:?} changed its wrap range to {wrap_j:?} J"));
                }
                RawPoint::value(s.seq, s.t_receive_s(), joules)
            }
            Ok(Measurement::PowerW { .. }) => {
                missing(s, format!("channel {channel:?} gave watts, not a counter"))
            }
            Err(m) => RawPoint::missing(s.seq, s.t_receive_s(), &m.reason, m.fatal),
        })
        .collect();
    (points, wrap)
}

fn details(
    samples: &[Sample],
    rejections: Vec<Rejection>,
    channel: Option<&str>,
    out: &mut Vec<RejectionDetail>,
) {
    for rejection in rejections {
        // Counter channels share the common rules (gaps, faults): report those once.
        if out.iter().any(|d| d.rejection == rejection) {
            continue;
        }
        let evidence = rejection.samples().iter().filter_map(|r| evidence(samples, r.seq)).collect();
        out.push(RejectionDetail {
            message: rejection.to_string(),
            channel: channel.map(str::to_string),
            rejection,
            evidence,
        });
    }
}

fn values<T>(points: &[RawPoint], f: impl Fn(f64, f64) -> T) -> Vec<T> {
    points
        .iter()
        .filter_map(|p| match p.value {
            Observed::Value { value } => Some(f(p.t_s, value)),
            Observed::Missing { .. } => None,
        })
        .collect()
}

/// Sum per-channel block figures into one (every field is linear in the channels).
fn sum_blocks(parts: &[BlockEnergy]) -> Option<BlockEnergy> {
    let first = *parts.first()?;
    let idle = |sel: fn(&BlockEnergy) -> IdlePower| IdlePower {
        window: sel(&first).window,
        stable: sel(&first).stable,
        energy_j: parts.iter().map(|p| sel(p).energy_j).sum(),
        power_w: parts.iter().map(|p| sel(p).power_w).sum(),
    };
    let sum = |sel: fn(&BlockEnergy) -> f64| parts.iter().map(sel).sum::<f64>();
    Some(BlockEnergy {
        window: first.window,
        duration_s: first.duration_s,
        energy_j: sum(|p| p.energy_j),
        mean_power_w: sum(|p| p.mean_power_w),
        idle_before: idle(|p| p.idle_before),
        idle_after: idle(|p| p.idle_after),
        idle_power_w: sum(|p| p.idle_power_w),
        idle_energy_j: sum(|p| p.idle_energy_j),
        incremental_energy_j: sum(|p| p.incremental_energy_j),
        incremental_power_w: sum(|p| p.incremental_power_w),
    })
}

fn block_results(input: &RunInput<'_>, series: &[Series<'_>]) -> Vec<BlockResult> {
    input
        .blocks
        .iter()
        .map(|b| {
            let before = input.idles.iter().find(|i| i.index == b.index);
            let after = input.idles.iter().find(|i| i.index == b.index + 1);
            let (Some(before), Some(after)) = (before, after) else {
                return BlockResult {
                    index: b.index,
                    energy: None,
                    missing_reason: Some(format!(
                        "block {} lacks an adjacent idle window (idle windows {} and {} are needed)",
                        b.index,
                        b.index,
                        b.index + 1
                    )),
                };
            };
            let parts: Result<Vec<BlockEnergy>, _> = series
                .iter()
                .map(|s| block_energy(s, b.window, before.window, after.window, input.idle_discard_s))
                .collect();
            match parts.map(|p| sum_blocks(&p)) {
                Ok(Some(e)) => BlockResult { index: b.index, energy: Some(e), missing_reason: None },
                Ok(None) => BlockResult {
                    index: b.index,
                    energy: None,
                    missing_reason: Some("the sensor has no channel in its total".into()),
                },
                Err(e) => BlockResult { index: b.index, energy: None, missing_reason: Some(e.to_string()) },
            }
        })
        .collect()
}

/// Count, longest gap and range of the total power implied by consecutive counter readings.
fn counter_summary(channels: &[(Vec<CounterPoint>, Option<f64>)]) -> Option<SeriesSummary> {
    let (first, _) = channels.first()?;
    let mut watts = Vec::new();
    for i in 1..first.len() {
        let dt = first[i].t_s - first[i - 1].t_s;
        let mut sum = 0.0;
        for (points, wrap) in channels {
            sum += counter_delta_j(points[i - 1].joules, points[i].joules, *wrap).ok()?;
        }
        watts.push(WattPoint { t_s: first[i].t_s, watts: sum / dt });
    }
    let implied = summarize(&watts);
    Some(SeriesSummary {
        count: first.len(),
        max_gap_s: first.windows(2).map(|w| w[1].t_s - w[0].t_s).reduce(f64::max),
        min_watts: implied.min_watts,
        max_watts: implied.max_watts,
    })
}

/// What a rejection of a reading taken before measuring says first.
pub const PROBE_PREFIX: &str = "before measuring, probe reading";

/// Judge the readings taken before measuring by the rules every single reading must pass (a
/// fault in its place; non-finite, non-positive or above-cap watts; a counter value outside its
/// range). The series rules (gaps, order, coverage) do not apply: the probe is two reads in a
/// row, before warm-up. Each rejection's message starts with [`PROBE_PREFIX`] and its evidence
/// holds the probe reading's raw text.
pub fn check_probes(probes: &[Sample], rules: &Rules) -> Vec<RejectionDetail> {
    let mut out = Vec::new();
    match series_kind(probes) {
        SeriesKind::Power { .. } => {
            let found = check_power_readings(&power_points(probes), rules);
            details(probes, found, None, &mut out);
        }
        SeriesKind::Counter { channels } => {
            for ch in &channels {
                let (points, wrap) = counter_points(probes, ch);
                details(probes, check_counter_readings(&points, wrap), Some(ch), &mut out);
            }
        }
    }
    for d in &mut out {
        let rule = d.rejection.rule();
        let rest = d.message.strip_prefix(&format!("{rule}: ")).unwrap_or(&d.message);
        d.message = format!("{rule}: {PROBE_PREFIX} {}", rest.replacen("sample ", "", 1));
    }
    out
}

/// Judge a run's probe readings and samples and, when no rule is violated, compute every
/// block's energy and the cross-check of its total.
pub fn analyze(input: &RunInput<'_>) -> RunEnergy {
    let mut verdict = judge(input);
    verdict.sampling = Some(sampling_audit(input));
    if !verdict.rejected() {
        verdict.cross_check = super::cross::check(input.samples, input.blocks, &verdict.blocks);
    }
    verdict
}

/// The readings (faults left out) by sequence number and receive time, in the order received.
fn reading_refs(samples: &[Sample]) -> Vec<SampleRef> {
    samples
        .iter()
        .filter(|s| matches!(s.outcome, SampleOutcome::Reading(_)))
        .map(|s| SampleRef { seq: s.seq, t_s: s.t_receive_s() })
        .collect()
}

/// The sampling the run's readings give its blocks and idle windows.
fn sampling_audit(input: &RunInput<'_>) -> SamplingAudit {
    let times: Vec<f64> = reading_refs(input.samples).iter().map(|r| r.t_s).collect();
    let blocks: Vec<(u32, Window)> = input.blocks.iter().map(|b| (b.index, b.window)).collect();
    let idles: Vec<(u32, Window)> = input.idles.iter().map(|i| (i.index, i.window)).collect();
    sampling::audit(&times, input.rules.sample_interval_s, &blocks, &idles, input.idle_discard_s)
}

/// `too_few_samples_in_block` on every block that ran to its end.
fn check_block_sampling(input: &RunInput<'_>) -> Vec<Rejection> {
    let blocks: Vec<CheckedBlock> = input
        .blocks
        .iter()
        .map(|b| CheckedBlock { index: b.index, window: b.window, ended_early: b.ended_early })
        .collect();
    sampling::check_blocks(&reading_refs(input.samples), &blocks)
}

fn judge(input: &RunInput<'_>) -> RunEnergy {
    let kind = series_kind(input.samples);
    let mut rejections = check_probes(input.probes, &input.rules);
    match &kind {
        SeriesKind::Power { .. } => {
            let points = power_points(input.samples);
            details(input.samples, check_power(&points, input.span, &input.rules), None, &mut rejections);
            details(input.samples, check_block_sampling(input), None, &mut rejections);
            if !rejections.is_empty() {
                return RunEnergy::refused(kind, rejections);
            }
            let watts = values(&points, |t_s, watts| WattPoint { t_s, watts });
            let blocks = block_results(input, &[Series::Power(&watts)]);
            RunEnergy {
                series: kind,
                rejections,
                summary: Some(summarize(&watts)),
                blocks,
                cross_check: None,
                sampling: None,
            }
        }
        SeriesKind::Counter { channels } => {
            let mut validated = Vec::with_capacity(channels.len());
            for ch in channels {
                let (points, wrap) = counter_points(input.samples, ch);
                let found = check_counter(&points, wrap, input.span, &input.rules);
                details(input.samples, found, Some(ch), &mut rejections);
                validated.push((values(&points, |t_s, joules| CounterPoint { t_s, joules }), wrap));
            }
            details(input.samples, check_block_sampling(input), None, &mut rejections);
            if !rejections.is_empty() {
                return RunEnergy::refused(kind, rejections);
            }
            let series: Vec<Series<'_>> = validated
                .iter()
                .map(|(points, wrap_j)| Series::Counter { points, wrap_j: *wrap_j })
                .collect();
            let blocks = block_results(input, &series);
            RunEnergy {
                series: kind.clone(),
                rejections,
                summary: counter_summary(&validated),
                blocks,
                cross_check: None,
                sampling: None,
            }
        }
    }
}

/// The figures of one block that aggregates need.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockFigures {
    /// Decisions (calls) completed.
    pub decisions: u64,
    /// Block wall time, seconds.
    pub duration_s: f64,
    /// Energy figures, when computed.
    pub energy: Option<BlockEnergy>,
}

/// Per-arm totals over its blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Blocks.
    pub blocks: usize,
    /// Decisions completed.
    pub decisions: u64,
    /// Σ block wall time, s.
    pub time_s: f64,
    /// t = Σ block time / decisions, s.
    pub time_per_decision_s: Option<f64>,
    /// Σ block energy, J.
    pub active_energy_j: Option<f64>,
    /// P = Σ block energy / Σ block time, W.
    pub mean_power_w: Option<f64>,
    /// E = P × t (= Σ block energy / decisions), J.
    pub energy_per_decision_j: Option<f64>,
    /// Σ (block idle power × block time) / Σ block time, W.
    pub idle_power_w: Option<f64>,
    /// Σ idle-subtracted block energy, J (sign kept).
    pub idle_subtracted_energy_j: Option<f64>,
    /// Σ idle-subtracted energy / Σ block time, W (sign kept).
    pub idle_subtracted_power_w: Option<f64>,
    /// Σ idle-subtracted energy / decisions, J (sign kept).
    pub idle_subtracted_energy_per_decision_j: Option<f64>,
    /// Lowest block mean power, W.
    pub block_power_min_w: Option<f64>,
    /// Highest block mean power, W.
    pub block_power_max_w: Option<f64>,
    /// Why a field is `None`: field name → reason.
    pub missing: BTreeMap<String, String>,
}

/// Sum an arm's blocks. `no_energy_reason` explains missing energy when a block has none
/// (e.g. "the run was rejected").
pub fn aggregate(blocks: &[BlockFigures], no_energy_reason: &str) -> Aggregate {
    let mut missing = BTreeMap::new();
    let decisions: u64 = blocks.iter().map(|b| b.decisions).sum();
    // folded from +0: `Sum` of no f64 is −0, which an arm without blocks would print
    let time_s: f64 = blocks.iter().map(|b| b.duration_s).fold(0.0, |a, b| a + b);
    let t = (decisions > 0).then(|| time_s / decisions as f64);
    if t.is_none() {
        missing.insert("time_per_decision_s".into(), "no decision completed".into());
    }
    let energies: Option<Vec<BlockEnergy>> =
        if blocks.is_empty() { None } else { blocks.iter().map(|b| b.energy).collect() };
    let mut agg = Aggregate {
        blocks: blocks.len(),
        decisions,
        time_s,
        time_per_decision_s: t,
        active_energy_j: None,
        mean_power_w: None,
        energy_per_decision_j: None,
        idle_power_w: None,
        idle_subtracted_energy_j: None,
        idle_subtracted_power_w: None,
        idle_subtracted_energy_per_decision_j: None,
        block_power_min_w: None,
        block_power_max_w: None,
        missing,
    };
    let energy_fields = [
        "active_energy_j",
        "mean_power_w",
        "energy_per_decision_j",
        "idle_power_w",
        "idle_subtracted_energy_j",
        "idle_subtracted_power_w",
        "idle_subtracted_energy_per_decision_j",
        "block_power_min_w",
        "block_power_max_w",
    ];
    let Some(e) = energies else {
        let reason = if blocks.is_empty() { "the arm ran no block" } else { no_energy_reason };
        for f in energy_fields {
            agg.missing.insert(f.into(), reason.into());
        }
        return agg;
    };
    let active: f64 = e.iter().map(|b| b.energy_j).sum();
    let idle: f64 = e.iter().map(|b| b.idle_energy_j).sum();
    let incremental: f64 = e.iter().map(|b| b.incremental_energy_j).sum();
    agg.active_energy_j = Some(active);
    agg.idle_subtracted_energy_j = Some(incremental);
    agg.block_power_min_w = e.iter().map(|b| b.mean_power_w).reduce(f64::min);
    agg.block_power_max_w = e.iter().map(|b| b.mean_power_w).reduce(f64::max);
    if time_s > 0.0 {
        agg.mean_power_w = Some(active / time_s);
        agg.idle_power_w = Some(idle / time_s);
        agg.idle_subtracted_power_w = Some(incremental / time_s);
    } else {
        for f in ["mean_power_w", "idle_power_w", "idle_subtracted_power_w"] {
            agg.missing.insert(f.into(), "the blocks lasted no time".into());
        }
    }
    match (agg.mean_power_w, t) {
        (Some(p), Some(t)) => {
            agg.energy_per_decision_j = Some(p * t);
            agg.idle_subtracted_energy_per_decision_j = Some(incremental / decisions as f64);
        }
        _ => {
            for f in ["energy_per_decision_j", "idle_subtracted_energy_per_decision_j"] {
                agg.missing.insert(f.into(), "no decision completed or no block time".into());
            }
        }
    }
    agg
}

/// An arm against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    /// S = t_base / t_arm (speed gain).
    pub speed_gain: Option<f64>,
    /// R = P_base / P_arm (power ratio).
    pub power_ratio: Option<f64>,
    /// S × R = E_base / E_arm (energy gain). Multiplying by S again would double-count time.
    pub energy_gain: Option<f64>,
    /// Idle-subtracted energy per decision, base / arm (only when both are positive).
    pub idle_subtracted_energy_gain: Option<f64>,
    /// Why a field is `None`: field name → reason.
    pub missing: BTreeMap<String, String>,
}

/// Why a ratio is missing when one of its inputs is (the input's own reason is listed too).
pub const INPUT_MISSING: &str = "a figure it needs is missing";
/// Why S × R is missing when both S and R are.
pub const S_OR_R_MISSING: &str = "S and R are missing";
/// Why S × R is missing when the speed gain S is.
pub const S_MISSING: &str = "the speed gain S is missing";
/// Why S × R is missing when the power ratio R is.
pub const R_MISSING: &str = "the power ratio R is missing";

fn ratio(num: Option<f64>, den: Option<f64>) -> Result<f64, &'static str> {
    match (num, den) {
        (Some(n), Some(d)) if d != 0.0 && n.is_finite() && d.is_finite() => Ok(n / d),
        (Some(_), Some(_)) => Err("the denominator is zero or a figure is not finite"),
        _ => Err(INPUT_MISSING),
    }
}

/// S, R and S × R of `arm` against `base`.
pub fn ratios(base: &Aggregate, arm: &Aggregate) -> Ratios {
    let mut missing = BTreeMap::new();
    let mut keep = |name: &str, r: Result<f64, &str>| match r {
        Ok(v) => Some(v),
        Err(why) => {
            missing.insert(name.to_string(), why.to_string());
            None
        }
    };
    let speed_gain = keep("speed_gain", ratio(base.time_per_decision_s, arm.time_per_decision_s));
    let power_ratio = keep("power_ratio", ratio(base.mean_power_w, arm.mean_power_w));
    let energy_gain = match (speed_gain, power_ratio) {
        (Some(s), Some(r)) => Some(s * r),
        (None, Some(_)) => keep("energy_gain", Err(S_MISSING)),
        (Some(_), None) => keep("energy_gain", Err(R_MISSING)),
        (None, None) => keep("energy_gain", Err(S_OR_R_MISSING)),
    };
    let (bi, ai) = (base.idle_subtracted_energy_per_decision_j, arm.idle_subtracted_energy_per_decision_j);
    let idle_subtracted_energy_gain = match (bi, ai) {
        (Some(b), Some(a)) if b > 0.0 && a > 0.0 => Some(b / a),
        (Some(_), Some(_)) => keep(
            "idle_subtracted_energy_gain",
            Err("an idle-subtracted energy is zero or negative (kept with its sign); a ratio of it would mislead"),
        ),
        _ => keep("idle_subtracted_energy_gain", Err(INPUT_MISSING)),
    };
    Ratios { speed_gain, power_ratio, energy_gain, idle_subtracted_energy_gain, missing }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::sampler::Sample;
    use crate::power::{ChannelReading, Reading, SensorFault};

    /// Receive times are ns since an origin, so the schedule's t = 0 sits 10 s after it.
    const ORIGIN_S: f64 = 10.0;

    fn ns(t_s: f64) -> u64 {
        ((t_s + ORIGIN_S) * 1e9).round() as u64
    }

    fn power(seq: u64, t_s: f64, watts: f64) -> Sample {
        let mut r = Reading::power_w("system", watts);
        r.raw = Some(format!("{watts}"));
        Sample { seq, t_request_ns: ns(t_s), t_receive_ns: ns(t_s), outcome: SampleOutcome::Reading(r) }
    }

    fn win(a: f64, b: f64) -> Window {
        Window::new(a + ORIGIN_S, b + ORIGIN_S).unwrap()
    }

    /// Idle [0, 2] at 10 W, block [2, 4] at 30 W, idle [4, 6] at 14 W, block [6, 8] at 20 W,
    /// idle [8, 10] at 10 W; samples every 0.5 s from -0.5 to 10.5 s, with instant steps
    /// placed on the sample grid.
    fn schedule() -> (Vec<Sample>, Vec<BlockSpan>, Vec<IdleSpan>) {
        let level = |t: f64| match t {
            t if t < 2.0 => 10.0,
            t if t <= 4.0 => 30.0,
            t if t < 6.0 => 14.0,
            t if t <= 8.0 => 20.0,
            _ => 10.0,
        };
        // Step edges are vertical: duplicate the edge time would be non-monotonic, so the
        // samples sit at 0.25 s offsets and the levels change between them.
        let samples =
            (0..23).map(|i| power(i, -0.25 + 0.5 * i as f64, level(-0.25 + 0.5 * i as f64))).collect();
        let blocks = vec![
            BlockSpan { index: 0, window: win(2.0, 4.0), ended_early: false },
            BlockSpan { index: 1, window: win(6.0, 8.0), ended_early: false },
        ];
        let idles = vec![
            IdleSpan { index: 0, window: win(0.0, 2.0) },
            IdleSpan { index: 1, window: win(4.0, 6.0) },
            IdleSpan { index: 2, window: win(8.0, 10.0) },
        ];
        (samples, blocks, idles)
    }

    fn input<'a>(samples: &'a [Sample], blocks: &'a [BlockSpan], idles: &'a [IdleSpan]) -> RunInput<'a> {
        RunInput {
            probes: &[],
            samples,
            blocks,
            idles,
            span: Some(win(0.0, 10.0)),
            rules: Rules::new(500.0, 0.5),
            idle_discard_s: 0.5,
        }
    }

    #[test]
    fn the_span_runs_from_the_first_window_to_the_last() {
        let blocks = [BlockSpan { index: 0, window: win(10.0, 30.0), ended_early: false }];
        let idles =
            [IdleSpan { index: 0, window: win(0.0, 10.0) }, IdleSpan { index: 1, window: win(30.0, 40.0) }];
        assert_eq!(span_of(&blocks, &idles), Some(win(0.0, 40.0)));
        assert_eq!(span_of(&blocks, &[]), Some(win(10.0, 30.0)));
        assert_eq!(span_of(&[], &[]), None);
    }

    #[test]
    fn a_clean_run_gets_hand_checked_block_energies() {
        let (samples, blocks, idles) = schedule();
        let e = analyze(&input(&samples, &blocks, &idles));
        assert!(!e.rejected(), "{:?}", e.rejections);
        assert_eq!(e.series, SeriesKind::Power { channels: vec!["system".into()] });
        let b0 = e.blocks[0].energy.unwrap();
        // Block [2, 4]: samples at 1.75 (10 W) and 2.25 (30 W) bracket 2.0 → 20 W at the
        // start; 3.75 (30) and 4.25 (14) bracket 4.0 → 22 W at the end.
        // Energy = (2.25−2)·(20+30)/2 + 1.5·30 + (4−3.75)·(30+22)/2 = 6.25 + 45 + 6.5 = 57.75 J.
        assert!((b0.energy_j - 57.75).abs() < 1e-9, "{}", b0.energy_j);
        assert!((b0.mean_power_w - 57.75 / 2.0).abs() < 1e-9);
        // Idle before: stable [0.5, 2.0]; 10 W until 1.75, then the ramp to 20 W at 2.0:
        // 1.25·10 + 0.25·(10+20)/2 = 16.25 J over 1.5 s.
        assert!((b0.idle_before.power_w - 16.25 / 1.5).abs() < 1e-9);
        assert_eq!(e.summary.unwrap().count, 23);
        assert_eq!(e.summary.unwrap().max_watts, Some(30.0));
    }

    #[test]
    fn a_rejected_run_names_every_rule_with_raw_values_and_computes_no_energy() {
        let (mut samples, blocks, idles) = schedule();
        samples[5] = power(5, 2.25, 40089.0);
        samples[9] = power(9, 4.25, -1.0);
        samples[12] = Sample {
            outcome: SampleOutcome::Fault(SensorFault {
                kind: crate::power::FaultKind::Malformed,
                message: "malformed reading: exec:x: watts \"garbage\" is not a number: \"garbage\"".into(),
                fatal: false,
            }),
            ..samples[12].clone()
        };
        let e = analyze(&input(&samples, &blocks, &idles));
        let rules: Vec<&str> = e.rejections.iter().map(|r| r.rejection.rule()).collect();
        assert_eq!(rules, vec!["missing_reading", "above_cap", "non_positive"]);
        assert!(e.blocks.is_empty() && e.summary.is_none());
        let cap = &e.rejections[1];
        assert_eq!(cap.evidence[0].raw.as_deref(), Some("40089"));
        assert!(cap.message.contains("40089 W, above the 500 W cap"), "{}", cap.message);
        assert!(e.rejections[0].evidence[0].fault.as_deref().unwrap().contains("garbage"));
        let json = serde_json::to_value(cap).unwrap();
        assert_eq!(json["rule"], "above_cap");
        assert_eq!(json["watts"], 40089.0);
    }

    #[test]
    fn a_bad_reading_before_measuring_rejects_a_run_whose_samples_are_clean() {
        let (samples, blocks, idles) = schedule();
        // The probe: 40089 W, then NaN; both before the first idle window.
        let probes = vec![power(0, -2.0, 40089.0), power(1, -1.9, f64::NAN)];
        let clean = analyze(&input(&samples, &blocks, &idles));
        assert!(!clean.rejected());
        let e = analyze(&RunInput { probes: &probes, ..input(&samples, &blocks, &idles) });
        let rules: Vec<&str> = e.rejections.iter().map(|r| r.rejection.rule()).collect();
        assert_eq!(rules, vec!["above_cap", "non_finite"]);
        assert!(e.blocks.is_empty() && e.summary.is_none());
        assert_eq!(e.rejections[0].evidence[0].raw.as_deref(), Some("40089"));
        assert_eq!(e.rejections[1].evidence[0].raw.as_deref(), Some("NaN"));
        assert_eq!(
            e.rejections[0].message,
            "above_cap: before measuring, probe reading 0 at 8.000 s reads 40089 W, above the 500 W cap"
        );
        // The same rules on their own, and a good probe passes; series rules (gaps, coverage)
        // do not apply to two reads in a row.
        assert_eq!(check_probes(&probes, &Rules::new(500.0, 0.5)).len(), 2);
        let good = vec![power(0, -2.0, 31.0), power(1, -1.9, 32.0)];
        assert!(check_probes(&good, &Rules::new(500.0, 0.5)).is_empty());
        let negative = vec![power(0, -2.0, -3.0)];
        assert_eq!(check_probes(&negative, &Rules::new(500.0, 0.5))[0].rejection.rule(), "non_positive");
    }

    #[test]
    fn counter_channels_are_integrated_one_by_one_and_summed() {
        // Two counters: 10 W and 5 W constant, the second wrapping at 12 J.
        let samples: Vec<Sample> = (0..23)
            .map(|i| {
                let t = -0.25 + 0.5 * i as f64;
                let a = 100.0 + 10.0 * (t + 0.25);
                let b = (5.0 * (t + 0.25)) % 12.0;
                let reading = Reading {
                    channels: vec![
                        ChannelReading {
                            channel: "package-0".into(),
                            measurement: Measurement::EnergyCounterJ { joules: a, wrap_j: Some(1e6) },
                            in_total: true,
                        },
                        ChannelReading {
                            channel: "dram".into(),
                            measurement: Measurement::EnergyCounterJ { joules: b, wrap_j: Some(12.0) },
                            in_total: true,
                        },
                    ],
                    source_t_s: None,
                    raw: None,
                };
                Sample {
                    seq: i,
                    t_request_ns: ns(t),
                    t_receive_ns: ns(t),
                    outcome: SampleOutcome::Reading(reading),
                }
            })
            .collect();
        let (_, blocks, idles) = schedule();
        let e = analyze(&input(&samples, &blocks, &idles));
        assert!(!e.rejected(), "{:?}", e.rejections);
        let b = e.blocks[1].energy.unwrap();
        assert!((b.energy_j - 30.0).abs() < 1e-6, "{}", b.energy_j);
        assert!((b.idle_power_w - 15.0).abs() < 1e-6);
        assert!(b.incremental_energy_j.abs() < 1e-6);
        let s = e.summary.unwrap();
        assert!((s.max_watts.unwrap() - 15.0).abs() < 1e-6);
    }

    #[test]
    fn aggregates_and_ratios_follow_the_published_definitions() {
        let block = |decisions, duration_s, energy_j, idle_power_w: f64| {
            let w = win(0.0, duration_s);
            let idle = IdlePower { window: w, stable: w, energy_j: 0.0, power_w: idle_power_w };
            BlockFigures {
                decisions,
                duration_s,
                energy: Some(BlockEnergy {
                    window: w,
                    duration_s,
                    energy_j,
                    mean_power_w: energy_j / duration_s,
                    idle_before: idle,
                    idle_after: idle,
                    idle_power_w,
                    idle_energy_j: idle_power_w * duration_s,
                    incremental_energy_j: energy_j - idle_power_w * duration_s,
                    incremental_power_w: (energy_j - idle_power_w * duration_s) / duration_s,
                }),
            }
        };
        // Baseline: 2 blocks × 20 s, 1000 decisions each, 60 W → t 20 ms, E 1.2 J.
        let base = aggregate(&[block(1000, 20.0, 1200.0, 10.0), block(1000, 20.0, 1200.0, 10.0)], "");
        // Candidate: twice as fast at a fifth of the power → 10× energy (the article's example).
        let cand = aggregate(&[block(2000, 20.0, 240.0, 10.0), block(2000, 20.0, 240.0, 10.0)], "");
        assert_eq!(base.time_per_decision_s, Some(0.02));
        assert_eq!(base.mean_power_w, Some(60.0));
        assert!((base.energy_per_decision_j.unwrap() - 1.2).abs() < 1e-12);
        let r = ratios(&base, &cand);
        assert!((r.speed_gain.unwrap() - 2.0).abs() < 1e-12);
        assert!((r.power_ratio.unwrap() - 5.0).abs() < 1e-12);
        assert!((r.energy_gain.unwrap() - 10.0).abs() < 1e-12);
        // Idle-subtracted: base (1200−200)/1000 = 1.0 J, cand (240−200)/2000 = 0.02 J.
        assert!((r.idle_subtracted_energy_gain.unwrap() - 50.0).abs() < 1e-9);
        // Below idle: the sign is kept and no ratio is formed from it.
        let under = aggregate(&[block(10, 1.0, 5.0, 10.0)], "");
        assert_eq!(under.idle_subtracted_energy_j, Some(-5.0));
        let r = ratios(&base, &under);
        assert_eq!(r.idle_subtracted_energy_gain, None);
        assert!(r.missing["idle_subtracted_energy_gain"].contains("negative"));
    }

    #[test]
    fn missing_energy_is_none_with_a_reason_never_zero() {
        let a = aggregate(
            &[BlockFigures { decisions: 5, duration_s: 1.0, energy: None }],
            "the run was rejected",
        );
        assert_eq!(a.time_per_decision_s, Some(0.2));
        assert_eq!(a.mean_power_w, None);
        assert_eq!(a.energy_per_decision_j, None);
        assert_eq!(a.missing["mean_power_w"], "the run was rejected");
        let r = ratios(&a, &a);
        assert_eq!(r.speed_gain, Some(1.0));
        assert_eq!(r.power_ratio, None);
        assert_eq!(r.energy_gain, None);
        assert!(r.missing.contains_key("energy_gain"));
    }
}
