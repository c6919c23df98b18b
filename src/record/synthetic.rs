//! A synthetic raw record shaped like the published run (three arms, three balanced cycles of
//! ~20 s blocks between 10 s idle windows, a sample every ~0.5 s: 65,598 calls, 1,101 samples,
//! 18 blocks), for tests and benches. Its calls and samples give the published per-arm means;
//! it is built with the real record types, and its energy lines come from the real
//! [`crate::energy::run::analyze`], exactly as `energy` writes them. NOT A MEASUREMENT.

use crate::energy::run::{analyze, BlockSpan, IdleSpan, RunInput};
use crate::energy::{Rules, Window};
use crate::host::HostInfo;
use crate::power::sampler::{Sample, SampleOutcome};
use crate::power::{PowerBoundary, Reading, SensorInfo, SensorKind};
use crate::record::model::ModelInfo;
use crate::record::provenance::ToolInfo;
use crate::record::status::RunStatus;

use super::{
    balanced_order, ArmInfo, EnergyPlanInfo, Header, PlanInfo, Record, WorkloadInfo, SCHEMA_VERSION,
};

/// One arm of the synthetic run.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmShape {
    /// Arm name.
    pub name: String,
    /// Mean time per decision, ns (block time = calls × this).
    pub t_ns: u64,
    /// Calls in every block.
    pub calls_per_block: u64,
    /// Power during its blocks, W.
    pub watts: f64,
    /// Call-latency quantile function as (quantile, ms) knots, linear in between.
    pub latency_ms: Vec<(f64, f64)>,
}

/// The whole synthetic run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunShape {
    /// Arms, baseline first.
    pub arms: Vec<ArmShape>,
    /// Balanced cycles.
    pub cycles: usize,
    /// Idle window length, ns.
    pub idle_ns: u64,
    /// Power in idle windows, W.
    pub idle_watts: f64,
    /// Intervals per idle window (samples are evenly spaced inside each window and block).
    pub idle_intervals: u64,
    /// Intervals per block.
    pub block_intervals: u64,
    /// Replace sample `index`'s reading with this many watts (the 40,089 W case).
    pub spike: Option<(usize, f64)>,
    /// `energy` (with samples and idle windows) or `speed` (neither).
    pub energy: bool,
}

impl RunShape {
    /// The published comparison: MLX FP16 compiled, ANE FP16, ANE W8 (docs/methodology.md).
    /// t = 6.9841 / 5.0086 / 4.9084 ms, P = 61.3905 / 30.7475 / 27.3915 W, P50 / P95 =
    /// 6.94 / 7.39, 4.98 / 5.31, 4.88 / 5.23 ms; 2,864 + 3,993 + 4,076 calls per cycle and arm
    /// pair, 6 blocks each: 65,598 calls.
    pub fn published() -> Self {
        let arm = |name: &str, t_ns, calls_per_block, watts, knots: [f64; 4]| ArmShape {
            name: name.into(),
            t_ns,
            calls_per_block,
            watts,
            latency_ms: vec![(0.0, knots[0]), (0.5, knots[1]), (0.95, knots[2]), (1.0, knots[3])],
        };
        RunShape {
            arms: vec![
                arm("mlx-fp16", 6_984_100, 2864, 61.3905, [6.50, 6.94, 7.39, 7.60]),
                arm("ane-fp16", 5_008_600, 3993, 30.7475, [4.70, 4.98, 5.31, 5.45]),
                arm("ane-w8", 4_908_400, 4076, 27.3915, [4.55, 4.88, 5.23, 5.35]),
            ],
            cycles: 3,
            idle_ns: 10_000_000_000,
            idle_watts: 12.5,
            idle_intervals: 20,
            block_intervals: 40,
            spike: None,
            energy: true,
        }
    }
}

/// The clock origin sits 1 s before the first idle window.
const ORIGIN_NS: u64 = 1_000_000_000;

/// Linear interpolation of the quantile function at `u`.
fn quantile(knots: &[(f64, f64)], u: f64) -> f64 {
    for w in knots.windows(2) {
        let ((u0, v0), (u1, v1)) = (w[0], w[1]);
        if u <= u1 {
            return v0 + (v1 - v0) * (u - u0) / (u1 - u0);
        }
    }
    knots.last().map(|k| k.1).unwrap_or(0.0)
}

fn header(shape: &RunShape) -> Header {
    let names: Vec<String> = shape.arms.iter().map(|a| a.name.clone()).collect();
    let order =
        balanced_order(names.len(), shape.cycles).into_iter().map(|(_, a)| names[a].clone()).collect();
    Header {
        schema_version: SCHEMA_VERSION,
        kind: if shape.energy { "energy" } else { "speed" }.into(),
        tool: ToolInfo::current(),
        command_line: vec!["synthetic".into(), "NOT A MEASUREMENT".into()],
        started_unix_s: 1.8e9,
        clock: "monotonic ns since started_unix_s".into(),
        host: HostInfo {
            hostname: Some("synthetic".into()),
            os: "macos".into(),
            arch: "aarch64".into(),
            cpu_model: Some("synthetic shape of the published M3 Max run".into()),
            logical_cpus: 16,
            memory_bytes: None,
            cpu_levels: Default::default(),
        },
        model: ModelInfo::spec_only("synthetic:multilingual"),
        arms: shape
            .arms
            .iter()
            .map(|a| ArmInfo {
                name: a.name.clone(),
                spec: format!("mock:ok:{}", a.name),
                backend: "mock".into(),
                precision: "fp16".into(),
                device: "synthetic".into(),
                fingerprint: "0".repeat(64),
                batch: 1,
                length: 96,
                max_options: 4,
                notes: Vec::new(),
                blas: None,
                requests_per_call: None,
                threads: None,
            })
            .collect(),
        workload: WorkloadInfo {
            name: "invoice".into(),
            requests: 8,
            tokens_per_row: vec![vec![91]; 8],
            target_tokens: Some(91),
            length: 96,
        },
        plan: PlanInfo {
            cycles: shape.cycles,
            block_seconds: Some(20.0),
            block_calls: None,
            warmup_calls: 20,
            order,
            batch: 1,
        },
        sensor: shape.energy.then(|| SensorInfo {
            kind: SensorKind::Mock,
            spec: "synthetic".into(),
            source: "mock".into(),
            device: "synthetic samples shaped like the published run".into(),
            live: false,
            program: None,
            notes: vec!["NOT A MEASUREMENT".into()],
        }),
        energy: shape.energy.then_some(EnergyPlanInfo {
            sample_interval_reason: None,
            sample_interval_s: 0.5,
            idle_seconds: shape.idle_ns as f64 / 1e9,
            idle_discard_s: 3.0,
            max_watts: 500.0,
            max_gap_s: 2.0,
            rate_hz: None,
            calls_per_block: None,
        }),
        // The shape is the published run's, which PSTR measured: the whole system.
        power_boundary: shape.energy.then_some(PowerBoundary::WholeSystem),
        measuring_thread: Default::default(),
    }
}

fn sample(seq: u64, t_ns: u64, watts: f64) -> Sample {
    let mut r = Reading::power_w("system", watts);
    r.raw = Some(format!("{watts}"));
    Sample { seq, t_request_ns: t_ns - 1_000_000, t_receive_ns: t_ns, outcome: SampleOutcome::Reading(r) }
}

/// Every record of the synthetic run, header to footer, in file order.
pub fn records(shape: &RunShape) -> Vec<Record> {
    let h = header(shape);
    let order = balanced_order(shape.arms.len(), shape.cycles);
    let mut out = vec![Record::Header(Box::new(h))];
    for (k, a) in shape.arms.iter().enumerate() {
        out.push(Record::Warmup {
            arm: a.name.clone(),
            calls: 20,
            start_ns: 2 * k as u64,
            end_ns: 2 * k as u64 + 1,
            answers: vec!["q=A".into(); 8],
            results: Vec::new(),
            unbatched_identical: None,
        });
    }
    let mut t = ORIGIN_NS;
    let mut samples: Vec<Sample> = Vec::new();
    let (mut blocks, mut idles) = (Vec::new(), Vec::new());
    let idle = |i: u32, t: u64| Record::Idle {
        index: i,
        start_ns: t,
        end_ns: t + shape.idle_ns,
        ended_early: false,
    };
    if shape.energy {
        out.push(idle(0, t));
        fill(&mut samples, t, t + shape.idle_ns, shape.idle_intervals, shape.idle_watts, shape.idle_watts);
        idles.push(IdleSpan { index: 0, window: win(t, t + shape.idle_ns) });
        t += shape.idle_ns;
    }
    for (i, &(cycle, a)) in order.iter().enumerate() {
        let arm = &shape.arms[a];
        let c = arm.calls_per_block;
        let d = c * arm.t_ns;
        let durations: Vec<u64> = (0..c)
            .map(|k| {
                let u = (((k * 7919) % c) as f64 + 0.5) / c as f64;
                (quantile(&arm.latency_ms, u) * 1e6).round() as u64
            })
            .collect();
        let gap = d.saturating_sub(durations.iter().sum::<u64>()) / c;
        out.push(Record::Block {
            index: i as u32,
            cycle: cycle as u32,
            arm: arm.name.clone(),
            start_ns: t,
            end_ns: t + d,
            calls: c,
            unstable_calls: 0,
            rss_bytes: Some(1 << 30),
            scheduled_calls: None,
            missed_deadlines: None,
            ended_early: false,
            host_steal: None,
        });
        let mut start = t;
        for (k, dur) in durations.iter().enumerate() {
            out.push(Record::Call {
                block: i as u32,
                arm: arm.name.clone(),
                state: (k % 8) as u32,
                requests: None,
                start_ns: start,
                duration_ns: *dur,
                runtime_ns: None,
                answer: "q=A".into(),
                stable: true,
                scheduled_ns: None,
                missed_deadline: false,
            });
            start += dur + gap;
        }
        blocks.push(BlockSpan { index: i as u32, window: win(t, t + d), ended_early: false });
        if shape.energy {
            fill(&mut samples, t, t + d, shape.block_intervals, arm.watts, arm.watts);
            t += d;
            out.push(idle(i as u32 + 1, t));
            // The idle window's first sample is the block's end: the block's power.
            fill(&mut samples, t, t + shape.idle_ns, shape.idle_intervals, arm.watts, shape.idle_watts);
            idles.push(IdleSpan { index: i as u32 + 1, window: win(t, t + shape.idle_ns) });
            t += shape.idle_ns;
        } else {
            t += d;
        }
    }
    let total_calls: u64 = order.iter().map(|&(_, a)| shape.arms[a].calls_per_block).sum();
    if !shape.energy {
        out.push(Record::Footer {
            status: RunStatus::Complete,
            ended_unix_s: 1.8e9 + t as f64 / 1e9 + 0.01,
            total_calls,
            reason: None,
            rejections: vec![],
        });
        return out;
    }
    samples.push(sample(samples.len() as u64, t, shape.idle_watts));
    if let Some((index, watts)) = shape.spike {
        if let Some(s) = samples.get_mut(index) {
            *s = sample(s.seq, s.t_receive_ns, watts);
        }
    }
    let verdict = analyze(&RunInput {
        probes: &[],
        samples: &samples,
        blocks: &blocks,
        idles: &idles,
        span: Some(win(ORIGIN_NS, t)),
        rules: Rules::new(500.0, 0.5),
        idle_discard_s: 3.0,
    });
    // Samples arrive interleaved with blocks in a real file; their order among other records
    // does not matter to the reader, only their own order.
    out.extend(samples.into_iter().map(|s| Record::Sample(Box::new(s))));
    let status = if verdict.rejected() { RunStatus::Rejected } else { RunStatus::Complete };
    if !verdict.rejected() {
        for (b, &(_, a)) in verdict.blocks.iter().zip(&order) {
            out.push(Record::BlockEnergy {
                index: b.index,
                arm: shape.arms[a].name.clone(),
                energy: b.energy,
                missing_reason: b.missing_reason.clone(),
            });
        }
    }
    out.push(Record::Footer {
        status,
        ended_unix_s: 1.8e9 + t as f64 / 1e9 + 0.01,
        total_calls,
        reason: None,
        rejections: verdict.rejections,
    });
    out
}

/// `records` of a run stopped (Ctrl-C) inside block `stop`: that block cut short
/// (`ended_early`), the idle windows up to the one before it, no later block, call, idle
/// window or block energy, and the footer `incomplete` with the calls that remain. Every
/// sample and the sampler's report are kept.
pub fn interrupted(records: Vec<Record>, stop: u32) -> Vec<Record> {
    let mut out: Vec<Record> = records
        .into_iter()
        .filter(|r| match r {
            Record::Block { index, .. } | Record::Call { block: index, .. } | Record::Idle { index, .. } => {
                *index <= stop
            }
            Record::BlockEnergy { .. } => false,
            _ => true,
        })
        .collect();
    let calls = out.iter().filter(|r| matches!(r, Record::Call { .. })).count() as u64;
    for r in &mut out {
        match r {
            Record::Block { index, ended_early, .. } => *ended_early = *index == stop,
            Record::Footer { status, total_calls, reason, .. } => {
                *status = RunStatus::Incomplete;
                *total_calls = calls;
                *reason = Some(format!("interrupted by SIGINT (Ctrl-C) during block {stop}"));
            }
            _ => {}
        }
    }
    out
}

/// Samples evenly inside `[start, end)`: the first at `start` with `first_w`, the rest `w`.
fn fill(samples: &mut Vec<Sample>, start: u64, end: u64, n: u64, first_w: f64, w: f64) {
    for k in 0..n {
        let at = start + (end - start) * k / n;
        samples.push(sample(samples.len() as u64, at, if k == 0 { first_w } else { w }));
    }
}

fn win(start_ns: u64, end_ns: u64) -> Window {
    Window { start_s: start_ns as f64 / 1e9, end_s: end_ns as f64 / 1e9 }
}

/// `records` as [`crate::record::read()`] gives them back: the header apart, each later record
/// with its line number, marked incomplete (no reader check is run).
pub fn as_read(records: Vec<Record>) -> crate::record::RawRun {
    let n = records.len();
    let mut records = records.into_iter();
    let header = match records.next() {
        Some(Record::Header(h)) => *h,
        _ => unreachable!("synthetic records open with their header"),
    };
    crate::record::RawRun {
        header,
        records: records.collect(),
        lines: (2..n + 1).collect(),
        complete: false,
        truncated_tail: None,
    }
}

/// The published shape (3 arms, 3 cycles, 18 blocks) stopped inside block `stop`, as read.
pub fn published_stopped_in(stop: u32) -> crate::record::RawRun {
    as_read(interrupted(records(&RunShape::published()), stop))
}
