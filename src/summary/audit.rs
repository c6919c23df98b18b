//! The audit: every published number is re-derived from the raw record alone and compared with
//! what the record says. Energies are recomputed from the raw samples by the same pure functions
//! the `energy` command used ([`crate::energy::run::analyze`]), never by a second
//! implementation, and compared with the recorded `block_energy` aggregates to 1e-9 relative.

use std::collections::BTreeMap;

use crate::energy::run::{analyze, BlockSpan, IdleSpan, RejectionDetail, RunEnergy, RunInput};
use crate::energy::{stable_idle_window, BlockEnergy, Rules, Window};
use crate::power::sampler::Sample;
use crate::protocol::balanced_order;
use crate::report::raw::{Header, RawRun, Record};
use crate::report::status::RunStatus;
use crate::report::summary::{AuditCheck, CheckOutcome, Correction};

/// Relative tolerance between a recomputed and a recorded energy figure.
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// A block as the record holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRec {
    /// Block index.
    pub index: u32,
    /// Balanced cycle.
    pub cycle: u32,
    /// Arm name.
    pub arm: String,
    /// Start, ns since the origin.
    pub start_ns: u64,
    /// End, ns since the origin.
    pub end_ns: u64,
    /// Calls the block record claims.
    pub calls: u64,
    /// Unstable calls the block record claims.
    pub unstable_calls: u64,
    /// Cut short.
    pub ended_early: bool,
    /// CPU time stolen by the hypervisor during the block (absent in older records and where
    /// the OS keeps no counter).
    pub steal: Option<crate::report::steal::StealTicks>,
}

impl BlockCalls {
    /// Σ the runtime's own durations, s, when every call of the block carries one.
    pub fn runtime_s(&self) -> Option<f64> {
        (!self.runtime_ns.is_empty() && self.runtime_ns.len() == self.durations_ns.len())
            .then(|| self.runtime_ns.iter().sum::<u64>() as f64 / 1e9)
    }

    /// The per-call durations a speed record's latency reads: the runtime's own where every
    /// call carries one, else the calls'.
    pub fn latencies_ns(&self) -> &[u64] {
        if self.runtime_s().is_some() {
            &self.runtime_ns
        } else {
            &self.durations_ns
        }
    }
}

impl BlockRec {
    /// Wall time, s.
    pub fn duration_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}

/// The calls recorded for one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockCalls {
    /// Call durations, ns, in file order.
    pub durations_ns: Vec<u64>,
    /// The runtime's own durations of the calls that carry one (`ref:` arms), ns, in file order.
    pub runtime_ns: Vec<u64>,
    /// Calls whose result differed from warm-up.
    pub unstable: u64,
    /// Calls whose arm differs from the block's.
    pub wrong_arm: u64,
}

/// The footer as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct FooterRec {
    /// How the run ended, as the footer says.
    pub status: RunStatus,
    /// Calls it claims.
    pub total_calls: u64,
    /// Why not complete.
    pub reason: Option<String>,
    /// Rejections it recorded.
    pub rejections: Vec<RejectionDetail>,
}

/// A recorded `block_energy` line.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEnergy {
    /// Arm name.
    pub arm: String,
    /// The figures.
    pub energy: Option<BlockEnergy>,
    /// Why `None`.
    pub missing_reason: Option<String>,
}

/// A raw record sorted into what the audit and the statistics need.
#[derive(Debug, Clone)]
pub struct RunData<'r> {
    /// The header.
    pub header: &'r Header,
    /// Blocks in file order.
    pub blocks: Vec<BlockRec>,
    /// Calls per block index.
    pub calls: BTreeMap<u32, BlockCalls>,
    /// Calls that name a block the record does not have.
    pub orphan_calls: u64,
    /// Idle windows.
    pub idles: Vec<IdleSpan>,
    /// Idle windows cut short.
    pub idles_ended_early: Vec<u32>,
    /// Readings taken before measuring (`probe` records), in file order.
    pub probes: Vec<Sample>,
    /// Power samples in file order.
    pub samples: Vec<Sample>,
    /// Recorded block energies by block index (a repeated index is kept as a list).
    pub block_energy: BTreeMap<u32, Vec<RecordedEnergy>>,
    /// The footer, when present.
    pub footer: Option<FooterRec>,
    /// Error records.
    pub errors: Vec<String>,
    /// Appended corrections.
    pub corrections: Vec<Correction>,
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn window(start_ns: u64, end_ns: u64) -> Window {
    Window { start_s: seconds(start_ns), end_s: seconds(end_ns) }
}

impl<'r> RunData<'r> {
    /// Sort the records of a raw file.
    pub fn new(run: &'r RawRun) -> Self {
        let mut d = RunData {
            header: &run.header,
            blocks: Vec::new(),
            calls: BTreeMap::new(),
            orphan_calls: 0,
            idles: Vec::new(),
            idles_ended_early: Vec::new(),
            probes: Vec::new(),
            samples: Vec::new(),
            block_energy: BTreeMap::new(),
            footer: None,
            errors: Vec::new(),
            corrections: Vec::new(),
        };
        let mut block_arms: BTreeMap<u32, &str> = BTreeMap::new();
        for r in &run.records {
            match r {
                Record::Block {
                    index,
                    cycle,
                    arm,
                    start_ns,
                    end_ns,
                    calls,
                    unstable_calls,
                    ended_early,
                    host_steal,
                    ..
                } => {
                    block_arms.insert(*index, arm);
                    d.calls.entry(*index).or_default();
                    d.blocks.push(BlockRec {
                        index: *index,
                        cycle: *cycle,
                        arm: arm.clone(),
                        start_ns: *start_ns,
                        end_ns: *end_ns,
                        calls: *calls,
                        unstable_calls: *unstable_calls,
                        ended_early: *ended_early,
                        steal: *host_steal,
                    });
                }
                Record::Call { block, arm, duration_ns, runtime_ns, stable, .. } => {
                    match block_arms.get(block) {
                        Some(block_arm) => {
                            let c = d.calls.entry(*block).or_default();
                            c.durations_ns.push(*duration_ns);
                            c.runtime_ns.extend(*runtime_ns);
                            c.unstable += u64::from(!stable);
                            c.wrong_arm += u64::from(arm != block_arm);
                        }
                        None => d.orphan_calls += 1,
                    }
                }
                Record::Idle { index, start_ns, end_ns, ended_early } => {
                    d.idles.push(IdleSpan { index: *index, window: window(*start_ns, *end_ns) });
                    if *ended_early {
                        d.idles_ended_early.push(*index);
                    }
                }
                Record::Sample(s) => d.samples.push((**s).clone()),
                Record::Probe(s) => d.probes.push((**s).clone()),
                Record::BlockEnergy { index, arm, energy, missing_reason } => {
                    d.block_energy.entry(*index).or_default().push(RecordedEnergy {
                        arm: arm.clone(),
                        energy: *energy,
                        missing_reason: missing_reason.clone(),
                    })
                }
                Record::Footer { status, total_calls, reason, rejections, .. } => {
                    d.footer = Some(FooterRec {
                        status: *status,
                        total_calls: *total_calls,
                        reason: reason.clone(),
                        rejections: rejections.clone(),
                    })
                }
                Record::Error { arm, block, message } => d.errors.push(match block {
                    Some(b) => format!("arm `{arm}`, block {b}: {message}"),
                    None => format!("arm `{arm}`: {message}"),
                }),
                Record::Correction { timestamp_unix_s, field, note } => d.corrections.push(Correction {
                    timestamp_unix_s: *timestamp_unix_s,
                    field: field.clone(),
                    note: note.clone(),
                }),
                Record::Header(_) | Record::Warmup { .. } | Record::Sampler(_) => {}
            }
        }
        d
    }

    /// Whether the header says this is an energy run.
    pub fn is_energy(&self) -> bool {
        self.header.kind == "energy"
    }

    /// Calls recorded in total.
    pub fn call_records(&self) -> u64 {
        self.calls.values().map(|c| c.durations_ns.len() as u64).sum::<u64>() + self.orphan_calls
    }
}

/// The audit's verdict.
#[derive(Debug, Clone)]
pub struct Audit {
    /// Every check, in a fixed order.
    pub checks: Vec<AuditCheck>,
    /// The samples re-judged and the block energies recomputed (energy runs with settings).
    pub recomputed: Option<RunEnergy>,
}

impl Audit {
    /// Checks that failed.
    pub fn failed(&self) -> Vec<&AuditCheck> {
        self.checks.iter().filter(|c| c.outcome == CheckOutcome::Fail).collect()
    }

    /// The named check.
    pub fn check(&self, name: &str) -> Option<&AuditCheck> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// Relative difference `|a − b| / max(|a|, |b|)` (0 when both are 0).
pub fn relative_difference(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

struct CheckBuilder {
    name: &'static str,
    problems: Vec<String>,
    numbers: BTreeMap<String, f64>,
}

impl CheckBuilder {
    fn new(name: &'static str) -> Self {
        CheckBuilder { name, problems: Vec::new(), numbers: BTreeMap::new() }
    }

    fn num(&mut self, key: &str, v: f64) {
        self.numbers.insert(key.into(), v);
    }

    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }

    fn finish(self, pass_detail: String) -> AuditCheck {
        let (outcome, detail) = if self.problems.is_empty() {
            (CheckOutcome::Pass, pass_detail)
        } else {
            let n = self.problems.len();
            let mut shown: Vec<String> = self.problems.into_iter().take(5).collect();
            if n > 5 {
                shown.push(format!("... and {} more", n - 5));
            }
            (CheckOutcome::Fail, shown.join("; "))
        };
        AuditCheck { name: self.name.into(), outcome, detail, numbers: self.numbers }
    }
}

fn not_applicable(name: &str, why: &str) -> AuditCheck {
    AuditCheck {
        name: name.into(),
        outcome: CheckOutcome::NotApplicable,
        detail: why.into(),
        numbers: BTreeMap::new(),
    }
}

fn header_and_footer(d: &RunData<'_>, truncated_tail: bool) -> AuditCheck {
    let mut c = CheckBuilder::new("header_and_footer");
    c.num("footer_present", f64::from(u8::from(d.footer.is_some())));
    match &d.footer {
        None => c.problem(
            "no footer: the run did not finish (it crashed, was killed, or is still running)".into(),
        ),
        Some(f) if f.status == RunStatus::Incomplete => c.problem(format!(
            "the footer says incomplete ({})",
            f.reason.as_deref().unwrap_or("no reason recorded")
        )),
        Some(f) if f.status == RunStatus::Failed => c.problem(format!(
            "the footer says failed ({})",
            f.reason.as_deref().unwrap_or("no reason recorded")
        )),
        Some(_) => {}
    }
    if truncated_tail {
        c.problem("the last line is cut mid-write".into());
    }
    let status = d.footer.as_ref().map(|f| f.status.as_str()).unwrap_or("none");
    c.finish(format!("header (schema {}) and footer (status `{status}`) present", d.header.schema_version))
}

/// Where a record sits in the writer's order: probes and warm-ups, then the measured part
/// (idle windows, blocks and their calls, samples), then the tail (the sampler's report, block
/// energies), then the footer, after which only corrections are appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Start,
    Measuring,
    Tail,
    Ended,
}

/// The block whose call records may follow now.
struct OpenBlock {
    index: u32,
    start_ns: u64,
    end_ns: u64,
    /// End of the last call seen, ns.
    last_end_ns: Option<u64>,
}

fn kind_of(r: &Record) -> &'static str {
    match r {
        Record::Header(_) => "header",
        Record::Warmup { .. } => "warmup",
        Record::Block { .. } => "block",
        Record::Call { .. } => "call",
        Record::Idle { .. } => "idle",
        Record::Sample(_) => "sample",
        Record::Probe(_) => "probe",
        Record::Sampler(_) => "sampler",
        Record::BlockEnergy { .. } => "block_energy",
        Record::Error { .. } => "error",
        Record::Correction { .. } => "metadata_correction",
        Record::Footer { .. } => "footer",
    }
}

/// "an" before a record kind that starts with a vowel, else "a".
fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

type Problems = Vec<(usize, String)>;

/// A timed span (warm-up, idle window, block) at line `n`: it must not end before it starts,
/// nor start before the previous span ended.
fn span(
    previous: &mut Option<(u64, usize, &'static str)>,
    kind: &'static str,
    n: usize,
    (start, end): (u64, u64),
    problems: &mut Problems,
) {
    if end < start {
        problems.push((n, format!("line {n}: the {kind} ends ({end} ns) before it starts ({start} ns)")));
    }
    if let Some((prev_end, prev_line, prev_kind)) = *previous {
        if start < prev_end {
            problems.push((
                n,
                format!(
                    "line {n}: the {kind} starts at {start} ns, before the {prev_kind} of line {prev_line} ended ({prev_end} ns)"
                ),
            ));
        }
    }
    *previous = Some((end.max(start), n, kind));
}

/// Whether a record of this kind may appear in a record of the header's `kind`. Every kind of
/// [`Record`] is listed: a `speed` run writes the header, warm-ups, blocks, calls, errors, its
/// footer and appended corrections; an `energy` run writes those and, only it, `probe`,
/// `sample`, `idle`, `sampler` and `block_energy` records. A record of another kind (`summary`
/// refuses it before the audit) has no rule here.
pub fn kind_allows(header_kind: &str, r: &Record) -> bool {
    match r {
        Record::Header(_)
        | Record::Warmup { .. }
        | Record::Block { .. }
        | Record::Call { .. }
        | Record::Error { .. }
        | Record::Correction { .. }
        | Record::Footer { .. } => true,
        Record::Probe(_)
        | Record::Sample(_)
        | Record::Idle { .. }
        | Record::Sampler(_)
        | Record::BlockEnergy { .. } => header_kind != "speed",
    }
}

/// Slack between the wall clock and the run's monotonic clock: the footer's `ended_unix_s`
/// minus the header's `started_unix_s` may fall short of the last stamp on the run's clock by
/// at most 2 s + 0.1 % (the wall clock slewed by NTP), and a `complete` footer, written right
/// after the last record (10 ms in the committed H200 runs), may exceed it by at most
/// 120 s + 5 %. Beyond either, the header or the footer is another run's.
pub const WALL_CLOCK_SLACK: (f64, f64, f64, f64) = (2.0, 0.001, 120.0, 0.05);

/// The problem, if any, with a footer that says the run ended `wall_s` after the header's start
/// while its records run to `mono_s` on the run's clock (`complete`: the footer says so, and is
/// written right after the last record).
pub fn wall_clock_problem(wall_s: f64, mono_s: f64, complete: bool) -> Option<String> {
    let (short_abs, short_rel, long_abs, long_rel) = WALL_CLOCK_SLACK;
    if !wall_s.is_finite() {
        return Some(format!("the run's wall-clock span {wall_s} s is not a number of seconds"));
    }
    if wall_s < mono_s - (short_abs + short_rel * mono_s) {
        return Some(format!(
            "the footer's ended_unix_s is {wall_s:.3} s after the header's started_unix_s, but the records run to {mono_s:.3} s on the run's clock: the header (or the footer) is not this run's, or the system clock was set back during the run"
        ));
    }
    if complete && wall_s > mono_s + long_abs + long_rel * mono_s {
        return Some(format!(
            "the footer's ended_unix_s is {wall_s:.3} s after the header's started_unix_s, but the last record ends at {mono_s:.3} s on the run's clock and a complete run's footer is written right after it: the header (or the footer) is another run's, or the system clock was set forward during the run"
        ));
    }
    None
}

/// The latest stamp a record holds on the run's clock, ns.
fn latest_ns(r: &Record) -> Option<u64> {
    match r {
        Record::Warmup { end_ns, .. } | Record::Block { end_ns, .. } | Record::Idle { end_ns, .. } => {
            Some(*end_ns)
        }
        Record::Call { start_ns, duration_ns, .. } => Some(start_ns.saturating_add(*duration_ns)),
        Record::Sample(s) | Record::Probe(s) => Some(s.t_receive_ns.max(s.t_request_ns)),
        _ => None,
    }
}

/// Whether the header's own fields fit its kind: an energy run records its sensor and energy
/// settings, a speed run neither.
fn header_fields_problem(h: &Header) -> Option<String> {
    let energy_fields: Vec<&str> = [
        ("sensor", h.sensor.is_some()),
        ("energy", h.energy.is_some()),
        ("power_boundary", h.power_boundary.is_some()),
    ]
    .into_iter()
    .filter_map(|(f, present)| present.then_some(f))
    .collect();
    match h.kind.as_str() {
        "speed" if !energy_fields.is_empty() => Some(format!(
            "line 1: the header says `speed` but carries an energy run's {}: the header's kind does not match the run",
            energy_fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        )),
        "energy" if h.sensor.is_none() || h.energy.is_none() => Some(
            "line 1: the header says `energy` but lacks the `sensor` or `energy` settings every energy run records"
                .into(),
        ),
        _ => None,
    }
}

/// Every invariant the raw writer guarantees, checked line by line, each problem naming its
/// line (the first line that breaks one comes first): record order (probes and warm-ups before
/// anything measured; each call among its own block's lines; the sampler's report and block
/// energies after every block; the footer last, then only corrections), each call inside its
/// block (start at or after the block's start, start + duration at or before its end, no
/// overflow), calls in time order, and warm-ups, idle windows and blocks ordered and monotonic
/// on the run's clock (end not before start, each starting at or after the previous one ended);
/// a sample received no earlier than requested.
pub fn record_integrity(run: &RawRun) -> AuditCheck {
    let mut c = CheckBuilder::new("record_integrity");
    let line = |i: usize| run.lines.get(i).copied().unwrap_or(i + 2);
    let mut phase = Phase::Start;
    let mut open: Option<OpenBlock> = None;
    // End of the previous warm-up, idle window or block, and its line.
    let mut previous: Option<(u64, usize, &'static str)> = None;
    let mut problems: Problems = Vec::new();
    let h = &run.header;
    problems.extend(header_fields_problem(h).map(|p| (1, p)));
    let arms: Vec<&str> = h.arms.iter().map(|a| a.name.as_str()).collect();
    let arm_list = arms.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
    // The arm of each block seen so far, and the latest stamp on the run's clock.
    let mut block_arm: BTreeMap<u32, &str> = BTreeMap::new();
    let mut latest: u64 = 0;
    for (i, r) in run.records.iter().enumerate() {
        let n = line(i);
        let kind = kind_of(r);
        if phase == Phase::Ended && !matches!(r, Record::Correction { .. }) {
            problems.push((n, format!("line {n}: a {kind} record after the footer")));
            continue;
        }
        if !kind_allows(&h.kind, r) {
            problems.push((
                n,
                format!(
                    "line {n}: {} {kind} record in a `{}` record: only energy runs write {kind} records (the header's kind does not match its records)",
                    article(kind),
                    h.kind
                ),
            ));
        }
        let named_arm = match r {
            Record::Warmup { arm, .. }
            | Record::Block { arm, .. }
            | Record::Call { arm, .. }
            | Record::Error { arm, .. }
            | Record::BlockEnergy { arm, .. } => Some(arm.as_str()),
            _ => None,
        };
        if let Some(arm) = named_arm.filter(|a| !arms.contains(a)) {
            problems.push((
                n,
                format!(
                    "line {n}: {} {kind} record of arm `{arm}`, which the header does not list (its arms: {arm_list})",
                    article(kind)
                ),
            ));
        }
        if phase != Phase::Ended {
            if let Some(t) = latest_ns(r) {
                latest = latest.max(t);
            }
        }
        let out_of_order = |allowed: bool, where_: &str, problems: &mut Problems| {
            if !allowed {
                problems.push((n, format!("line {n}: a {kind} record {where_}")));
            }
        };
        match r {
            Record::Header(_) => out_of_order(false, "after the first line (a second header)", &mut problems),
            Record::Probe(s) => {
                out_of_order(
                    phase == Phase::Start && previous.is_none(),
                    "after measuring began (probes come right after the header)",
                    &mut problems,
                );
                if s.t_receive_ns < s.t_request_ns {
                    problems
                        .push((n, format!("line {n}: probe {} is received before it was requested", s.seq)));
                }
            }
            Record::Warmup { start_ns, end_ns, .. } => {
                out_of_order(phase == Phase::Start, "after measuring began", &mut problems);
                span(&mut previous, "warm-up", n, (*start_ns, *end_ns), &mut problems);
            }
            Record::Sample(s) => {
                out_of_order(
                    phase <= Phase::Measuring,
                    "after the sampler's report or block energies",
                    &mut problems,
                );
                if s.t_receive_ns < s.t_request_ns {
                    problems.push((
                        n,
                        format!(
                            "line {n}: sample {} is received ({} ns) before it was requested ({} ns)",
                            s.seq, s.t_receive_ns, s.t_request_ns
                        ),
                    ));
                }
            }
            Record::Idle { start_ns, end_ns, .. } => {
                out_of_order(
                    phase <= Phase::Measuring,
                    "after the sampler's report or block energies",
                    &mut problems,
                );
                phase = phase.max(Phase::Measuring);
                open = None;
                span(&mut previous, "idle window", n, (*start_ns, *end_ns), &mut problems);
            }
            Record::Block { index, start_ns, end_ns, host_steal, arm, .. } => {
                out_of_order(
                    phase <= Phase::Measuring,
                    "after the sampler's report or block energies",
                    &mut problems,
                );
                phase = phase.max(Phase::Measuring);
                span(&mut previous, "block", n, (*start_ns, *end_ns), &mut problems);
                if let Some(s) = host_steal.filter(|s| s.steal_ticks > s.cpu_ticks) {
                    problems.push((
                        n,
                        format!(
                            "line {n}: block {index}'s host_steal has {} stolen ticks of {} CPU ticks in all: steal is part of the CPU time, so it cannot exceed it",
                            s.steal_ticks, s.cpu_ticks
                        ),
                    ));
                }
                block_arm.insert(*index, arm.as_str());
                open = Some(OpenBlock {
                    index: *index,
                    start_ns: *start_ns,
                    end_ns: *end_ns,
                    last_end_ns: None,
                });
            }
            Record::Call { block, start_ns, duration_ns, state, .. } => {
                if *state as usize >= h.workload.requests {
                    problems.push((
                        n,
                        format!(
                            "line {n}: a call of request {state}, but the header's workload has {} requests (numbered from 0)",
                            h.workload.requests
                        ),
                    ));
                }
                let Some(b) = open.as_mut().filter(|b| b.index == *block && phase == Phase::Measuring) else {
                    problems.push((
                        n,
                        format!(
                            "line {n}: a call of block {block} outside its block's lines (calls follow their block record, before the next block, idle window or tail record)"
                        ),
                    ));
                    continue;
                };
                let end = start_ns.checked_add(*duration_ns);
                match end {
                    None => problems.push((
                        n,
                        format!("line {n}: a call's start {start_ns} ns + duration {duration_ns} ns overflows the clock"),
                    )),
                    Some(end) => {
                        if *start_ns < b.start_ns || end > b.end_ns {
                            problems.push((
                                n,
                                format!(
                                    "line {n}: a call of block {block} spans [{start_ns}, {end}] ns ({:.6} s), outside its block [{}, {}] ns ({:.6} s)",
                                    *duration_ns as f64 / 1e9,
                                    b.start_ns,
                                    b.end_ns,
                                    b.end_ns.saturating_sub(b.start_ns) as f64 / 1e9
                                ),
                            ));
                        }
                        if let Some(prev) = b.last_end_ns.filter(|&p| *start_ns < p) {
                            problems.push((
                                n,
                                format!(
                                    "line {n}: a call of block {block} starts at {start_ns} ns, before the previous call ended ({prev} ns)"
                                ),
                            ));
                        }
                        b.last_end_ns = Some(end);
                    }
                }
            }
            Record::Error { .. } => out_of_order(
                phase <= Phase::Measuring,
                "after the sampler's report or block energies",
                &mut problems,
            ),
            Record::Sampler(_) => {
                out_of_order(phase <= Phase::Measuring, "after block energies", &mut problems);
                phase = Phase::Tail;
                open = None;
            }
            Record::BlockEnergy { index, arm, .. } => {
                if let Some(ran) = block_arm.get(index).filter(|ran| **ran != arm.as_str()) {
                    problems.push((
                        n,
                        format!("line {n}: the block_energy of block {index} names arm `{arm}`, but block {index} ran `{ran}`"),
                    ));
                }
                phase = Phase::Tail;
                open = None;
            }
            Record::Footer { status, ended_unix_s, rejections, .. } => {
                if h.kind == "speed" && (*status == RunStatus::Rejected || !rejections.is_empty()) {
                    problems.push((
                        n,
                        format!(
                            "line {n}: a footer with status `{status}` and {} rejections in a `speed` record: only energy runs are rejected (the header's kind does not match its records)",
                            rejections.len()
                        ),
                    ));
                }
                let wall_s = ended_unix_s - h.started_unix_s;
                if let Some(p) = wall_clock_problem(wall_s, seconds(latest), *status == RunStatus::Complete) {
                    problems.push((n, format!("line {n}: {p}")));
                }
                phase = Phase::Ended;
                open = None;
            }
            Record::Correction { .. } => out_of_order(
                phase == Phase::Ended,
                "before the footer (corrections are appended after it)",
                &mut problems,
            ),
        }
    }
    problems.sort_by_key(|(n, _)| *n);
    c.num("records", run.records.len() as f64);
    c.num("problems", problems.len() as f64);
    if let Some((first, _)) = problems.first() {
        c.num("first_bad_line", *first as f64);
    }
    for (_, p) in problems {
        c.problem(p);
    }
    c.finish(format!(
        "{} records in the writer's order; every call inside its block, every span ordered on the run's clock",
        run.records.len()
    ))
}

fn balanced_cycles(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("balanced_cycles");
    let h = d.header;
    let names: Vec<&str> = h.arms.iter().map(|a| a.name.as_str()).collect();
    // A header cannot claim far more blocks than the file holds (a garbled count is not
    // expanded into a huge expected order).
    let claimed = h.plan.cycles.checked_mul(2 * names.len());
    if claimed.is_none_or(|n| n > 2 * d.blocks.len() + 64) {
        c.num("cycles", h.plan.cycles as f64);
        c.num("blocks_recorded", d.blocks.len() as f64);
        c.problem(format!(
            "the header claims {} cycles of {} arms, far more than the {} blocks recorded",
            h.plan.cycles,
            names.len(),
            d.blocks.len()
        ));
        return c.finish(String::new());
    }
    let expected: Vec<(usize, &str)> =
        balanced_order(names.len(), h.plan.cycles).into_iter().map(|(cy, a)| (cy, names[a])).collect();
    c.num("cycles", h.plan.cycles as f64);
    c.num("arms", names.len() as f64);
    c.num("blocks_expected", expected.len() as f64);
    c.num("blocks_recorded", d.blocks.len() as f64);
    if h.plan.order.iter().map(String::as_str).ne(expected.iter().map(|e| e.1)) {
        c.problem(format!(
            "the header's block order {:?} is not {} balanced cycles of {:?} (each cycle the arms in order, then reversed)",
            h.plan.order, h.plan.cycles, names
        ));
    }
    if d.blocks.len() != expected.len() {
        c.problem(format!(
            "{} blocks recorded, {} expected ({} cycles × 2 × {} arms): the last cycle is not whole",
            d.blocks.len(),
            expected.len(),
            h.plan.cycles,
            names.len()
        ));
    }
    for (i, (b, (cycle, arm))) in d.blocks.iter().zip(&expected).enumerate() {
        if b.index as usize != i || b.cycle as usize != *cycle || b.arm != *arm {
            c.problem(format!(
                "block record {i} is block {} of cycle {} on `{}`, expected block {i} of cycle {cycle} on `{arm}`",
                b.index, b.cycle, b.arm
            ));
        }
        if b.ended_early {
            c.problem(format!("block {} was cut short", b.index));
        }
    }
    c.finish(format!(
        "{} ({}), {}",
        crate::report::count(h.plan.cycles, "whole balanced cycle", "whole balanced cycles"),
        names.iter().chain(names.iter().rev()).copied().collect::<Vec<_>>().join(" "),
        crate::report::count(d.blocks.len(), "block", "blocks")
    ))
}

fn call_counts(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("call_counts");
    let records = d.call_records();
    c.num("call_records", records as f64);
    c.num("calls_claimed_by_blocks", d.blocks.iter().map(|b| b.calls).sum::<u64>() as f64);
    for b in &d.blocks {
        let got = d.calls.get(&b.index).map(|c| c.durations_ns.len() as u64).unwrap_or(0);
        if got != b.calls {
            c.problem(format!("block {} claims {} calls but {got} call records follow it", b.index, b.calls));
        }
        if let Some(wrong) = d.calls.get(&b.index).map(|c| c.wrong_arm).filter(|&w| w > 0) {
            c.problem(format!(
                "block {} holds {wrong} call records of another arm than `{}`",
                b.index, b.arm
            ));
        }
    }
    if d.orphan_calls > 0 {
        c.problem(format!("{} call records name no recorded block", d.orphan_calls));
    }
    if let Some(f) = &d.footer {
        if f.total_calls != records {
            c.problem(format!("the footer claims {} calls, the record holds {records}", f.total_calls));
        }
    }
    let claim = if d.footer.is_some() {
        "as every block and the footer claim"
    } else {
        "as every block claims (no footer)"
    };
    c.finish(format!("{records} call records, {claim}"))
}

fn stable_calls(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("stable_calls");
    let unstable: u64 = d.calls.values().map(|c| c.unstable).sum();
    c.num("unstable_calls", unstable as f64);
    for b in &d.blocks {
        let got = d.calls.get(&b.index).map(|c| c.unstable).unwrap_or(0);
        if got != b.unstable_calls {
            c.problem(format!(
                "block {} claims {} unstable calls, its call records hold {got}",
                b.index, b.unstable_calls
            ));
        }
        if got > 0 {
            c.problem(format!(
                "block {} (`{}`): {got} calls differ from the arm's warm-up result",
                b.index, b.arm
            ));
        }
    }
    c.finish(format!("every one of {} calls matched its arm's warm-up result", d.call_records()))
}

/// The settings the energy checks need, or why they are not there.
fn energy_settings(d: &RunData<'_>) -> Result<(Rules, f64), String> {
    let e = d.header.energy.as_ref().ok_or("the header of this energy record has no `energy` settings")?;
    Ok((Rules::new(e.max_watts, e.sample_interval_s), e.idle_discard_s))
}

/// Re-judge the samples and recompute every block's energy with `energy::run::analyze`.
pub fn recompute(d: &RunData<'_>) -> Result<RunEnergy, String> {
    let (rules, idle_discard_s) = energy_settings(d)?;
    let blocks: Vec<BlockSpan> = d
        .blocks
        .iter()
        .map(|b| BlockSpan {
            index: b.index,
            window: window(b.start_ns, b.end_ns),
            ended_early: b.ended_early,
        })
        .collect();
    let span = crate::energy::run::span_of(&blocks, &d.idles);
    Ok(analyze(&RunInput {
        probes: &d.probes,
        samples: &d.samples,
        blocks: &blocks,
        idles: &d.idles,
        span,
        rules,
        idle_discard_s,
    }))
}

fn idle_windows(d: &RunData<'_>, discard_s: f64) -> AuditCheck {
    let mut c = CheckBuilder::new("idle_windows");
    c.num("idle_windows", d.idles.len() as f64);
    c.num("idle_discard_s", discard_s);
    let mut min_stable = f64::INFINITY;
    for b in &d.blocks {
        let w = window(b.start_ns, b.end_ns);
        let before: Vec<&IdleSpan> = d.idles.iter().filter(|i| i.index == b.index).collect();
        let after: Vec<&IdleSpan> = d.idles.iter().filter(|i| i.index == b.index + 1).collect();
        for (which, found, adjacent) in [
            ("before", &before, before.first().is_some_and(|i| i.window.end_s <= w.start_s)),
            ("after", &after, after.first().is_some_and(|i| i.window.start_s >= w.end_s)),
        ] {
            match found.len() {
                0 => c.problem(format!("block {} has no idle window {which} it", b.index)),
                1 if !adjacent => c.problem(format!("the idle window {which} block {} overlaps it", b.index)),
                1 => {}
                n => c.problem(format!("block {} has {n} idle windows recorded {which} it", b.index)),
            }
        }
    }
    for i in &d.idles {
        match stable_idle_window(i.window, discard_s) {
            Ok(s) => min_stable = min_stable.min(s.duration_s()),
            Err(e) => c.problem(format!("idle window {}: {e}", i.index)),
        }
    }
    for i in &d.idles_ended_early {
        c.problem(format!("idle window {i} was cut short"));
    }
    // The recorded stable windows must be the idle windows with the discard applied.
    for (index, recs) in &d.block_energy {
        for e in recs.iter().filter_map(|r| r.energy.as_ref()) {
            for (which, idle) in [("before", &e.idle_before), ("after", &e.idle_after)] {
                let expect = stable_idle_window(idle.window, discard_s).ok();
                if expect != Some(idle.stable) {
                    c.problem(format!(
                        "block {index}: the recorded stable idle window {which} it [{}, {}] s is not its idle window with the first {discard_s} s discarded",
                        idle.stable.start_s, idle.stable.end_s
                    ));
                }
            }
        }
    }
    if min_stable.is_finite() {
        c.num("shortest_stable_idle_s", min_stable);
    }
    c.finish(format!(
        "every block sits between two adjacent idle windows; the first {discard_s} s of each are discarded"
    ))
}

/// Rejection rules added after raw schema 2 was published (issue 48): a record whose footer
/// says `complete` and whose samples violate only these was written before they existed, and
/// is rejected rather than failing its audit.
pub const RULES_ADDED_SINCE_SCHEMA_2: [&str; 1] = ["too_few_samples_in_block"];

fn rejection_rules(d: &RunData<'_>, recomputed: &RunEnergy) -> AuditCheck {
    let mut c = CheckBuilder::new("rejection_rules");
    let found: Vec<&str> = recomputed.rejections.iter().map(|r| r.rejection.rule()).collect();
    let recorded: Vec<&str> = d
        .footer
        .as_ref()
        .map(|f| f.rejections.iter().map(|r| r.rejection.rule()).collect())
        .unwrap_or_default();
    c.num("samples", d.samples.len() as f64);
    c.num("rejections_recomputed", found.len() as f64);
    c.num("rejections_recorded", recorded.len() as f64);
    // Each rule once, in order of first violation (a rule can be violated many times).
    let list = |rules: &[&str]| {
        let mut once: Vec<&str> = Vec::new();
        for r in rules {
            if !once.contains(r) {
                once.push(r);
            }
        }
        if once.is_empty() {
            "none".to_string()
        } else {
            once.join(", ")
        }
    };
    // A record written complete before a rule existed, whose samples violate only rules added
    // since: the footer hides nothing, the writer did not know them; the run is rejected.
    let predates = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Complete)
        && recorded.is_empty()
        && !found.is_empty()
        && found.iter().all(|r| RULES_ADDED_SINCE_SCHEMA_2.contains(r));
    if let Some(f) = d.footer.as_ref().filter(|_| !predates) {
        let says_rejected = f.status == RunStatus::Rejected;
        if found != recorded {
            c.problem(format!(
                "re-checking the samples finds rules violated: {}; the footer recorded: {} (status `{}`)",
                list(&found),
                list(&recorded),
                f.status
            ));
        } else if !found.is_empty()
            && !says_rejected
            && f.status != RunStatus::Incomplete
            && f.status != RunStatus::Failed
        {
            c.problem(format!("the samples violate {} but the footer says `{}`", list(&found), f.status));
        }
    }
    let verdict = match &d.footer {
        _ if found.is_empty() => "no rule is violated".to_string(),
        _ if predates => format!(
            "the samples violate {}, a rule added after this record's footer was written `complete`: the run is rejected",
            list(&found)
        ),
        Some(f) if f.status == RunStatus::Rejected && found == recorded => {
            format!("the run is rejected by {} (as recorded)", list(&found))
        }
        _ => format!("the samples violate {}", list(&found)),
    };
    c.finish(format!("every rejection rule re-checked on {} samples: {verdict}", d.samples.len()))
}

type Field = (&'static str, fn(&BlockEnergy) -> f64);

/// Compare recomputed with recorded block energies on `fields`.
fn compare_energy(
    name: &'static str,
    d: &RunData<'_>,
    recomputed: &RunEnergy,
    fields: &[Field],
    sign: bool,
) -> AuditCheck {
    let mut c = CheckBuilder::new(name);
    let mut max_rel: f64 = 0.0;
    let mut compared = 0usize;
    for b in &recomputed.blocks {
        let recs = d.block_energy.get(&b.index).map(Vec::as_slice).unwrap_or(&[]);
        let rec = match recs {
            [] => {
                c.problem(format!("block {} has no recorded block_energy", b.index));
                continue;
            }
            [one] => one,
            many => {
                c.problem(format!("block {} has {} block_energy records", b.index, many.len()));
                continue;
            }
        };
        match (&b.energy, &rec.energy) {
            (Some(new), Some(old)) => {
                for (field, get) in fields {
                    let (x, y) = (get(new), get(old));
                    let rel = relative_difference(x, y);
                    max_rel = max_rel.max(rel);
                    compared += 1;
                    if rel.is_nan() || rel > RELATIVE_TOLERANCE {
                        c.problem(format!(
                            "block {} {field}: recomputed {x} vs recorded {y} (relative difference {rel:.3e} > {RELATIVE_TOLERANCE:e})",
                            b.index
                        ));
                    }
                    if sign && x.signum() != y.signum() && x != 0.0 && y != 0.0 {
                        c.problem(format!(
                            "block {} {field}: the recorded sign differs from the recomputed {x}",
                            b.index
                        ));
                    }
                }
            }
            (None, None) => {}
            (Some(_), None) => c.problem(format!(
                "block {}: recorded without energy ({}), but it can be computed",
                b.index,
                rec.missing_reason.as_deref().unwrap_or("no reason")
            )),
            (None, Some(_)) => c.problem(format!(
                "block {}: recorded with energy, but recomputing gives none ({})",
                b.index,
                b.missing_reason.as_deref().unwrap_or("no reason")
            )),
        }
    }
    c.num("values_compared", compared as f64);
    c.num("max_relative_difference", max_rel);
    c.finish(format!(
        "{compared} values recomputed from the raw samples match the record (largest relative difference {max_rel:.1e} ≤ {RELATIVE_TOLERANCE:e})"
    ))
}

/// Run every check on a raw record.
pub fn audit(run: &RawRun, d: &RunData<'_>) -> Audit {
    audit_with(run, d, header_and_footer(d, run.truncated_tail.is_some()), None)
}

/// Why the energy comparisons do not apply to the whole cycles of an incomplete record.
pub const NOT_RECORDED: &str = "an incomplete run records no block energy: each block's energy is computed here from the raw samples, by the functions `energy` uses";

/// Every check on the whole cycles of an incomplete record ([`super::whole::cut`]), read as
/// the record of a plan of that many cycles: `first` (the `whole_cycles` check, saying which
/// cycles are used) in place of `header_and_footer`; the energy comparisons do not apply
/// ([`NOT_RECORDED`]).
pub fn audit_whole_cycles(view: &RawRun, d: &RunData<'_>, first: AuditCheck) -> Audit {
    audit_with(view, d, first, Some(NOT_RECORDED))
}

/// The whole-cycles check: which cycles of how many are used, and why the rest is not.
pub fn whole_cycles_check(full: &RunData<'_>, cycles: usize, blocks_used: usize) -> AuditCheck {
    let mut c = CheckBuilder::new("whole_cycles");
    let planned = full.header.plan.cycles;
    c.num("cycles_used", cycles as f64);
    c.num("cycles_planned", planned as f64);
    c.num("blocks_used", blocks_used as f64);
    c.num("blocks_recorded", full.blocks.len() as f64);
    let end = match &full.footer {
        None => "the record has no footer (the run crashed or was killed)".to_string(),
        Some(f) => format!(
            "the footer says {} ({})",
            f.status.as_str(),
            f.reason.as_deref().unwrap_or("no reason recorded")
        ),
    };
    c.finish(format!(
        "the {} of the {planned} planned, read as a run of {cycles} ({} of the {} recorded; the rest is left out); {end}",
        crate::report::first_cycles(cycles),
        crate::report::count(blocks_used, "block", "blocks"),
        full.blocks.len()
    ))
}

fn audit_with(run: &RawRun, d: &RunData<'_>, first: AuditCheck, not_compared: Option<&str>) -> Audit {
    let mut checks = vec![first, record_integrity(run), balanced_cycles(d), call_counts(d), stable_calls(d)];
    let names = ["idle_windows", "rejection_rules", "active_energy", "idle_power", "idle_subtracted_energy"];
    if !d.is_energy() {
        for n in names {
            checks.push(not_applicable(n, "a speed record has no power samples"));
        }
        return Audit { checks, recomputed: None };
    }
    let (recomputed, discard_s) = match recompute(d).and_then(|r| energy_settings(d).map(|(_, s)| (r, s))) {
        Ok(x) => x,
        Err(why) => {
            for n in names {
                checks.push(AuditCheck {
                    name: n.into(),
                    outcome: CheckOutcome::Fail,
                    detail: why.clone(),
                    numbers: BTreeMap::new(),
                });
            }
            return Audit { checks, recomputed: None };
        }
    };
    checks.push(idle_windows(d, discard_s));
    checks.push(rejection_rules(d, &recomputed));
    let footer_complete = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Complete);
    if let Some(why) = not_compared {
        for n in &names[2..] {
            checks.push(not_applicable(n, why));
        }
    } else if recomputed.rejected() || !footer_complete {
        let footer_rejected = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Rejected);
        let why = if d.footer.is_none() {
            "the record has no footer (the run did not finish): no figure is derived from it, so nothing is compared"
        } else if recomputed.rejected() || footer_rejected {
            "the run is rejected: its energy aggregates are never used, so they are not compared"
        } else {
            "the run did not complete: its energy aggregates are not used, so they are not compared"
        };
        let extra = if d.block_energy.is_empty() {
            String::new()
        } else {
            format!(" ({} block_energy lines present, not compared)", d.block_energy.len())
        };
        for n in &names[2..] {
            checks.push(not_applicable(n, &format!("{why}{extra}")));
        }
    } else {
        checks.push(compare_energy(
            "active_energy",
            d,
            &recomputed,
            &[("energy_j", |e| e.energy_j), ("mean_power_w", |e| e.mean_power_w)],
            false,
        ));
        checks.push(compare_energy(
            "idle_power",
            d,
            &recomputed,
            &[
                ("idle_before.power_w", |e| e.idle_before.power_w),
                ("idle_after.power_w", |e| e.idle_after.power_w),
                ("idle_power_w", |e| e.idle_power_w),
            ],
            false,
        ));
        checks.push(compare_energy(
            "idle_subtracted_energy",
            d,
            &recomputed,
            &[("incremental_energy_j", |e| e.incremental_energy_j)],
            true,
        ));
        let extra: Vec<u32> =
            d.block_energy.keys().copied().filter(|i| !d.blocks.iter().any(|b| b.index == *i)).collect();
        if !extra.is_empty() {
            if let Some(c) = checks.iter_mut().find(|c| c.name == "active_energy") {
                c.outcome = CheckOutcome::Fail;
                c.detail = format!("block_energy records for blocks that do not exist: {extra:?}");
            }
        }
    }
    Audit { checks, recomputed: Some(recomputed) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_clock_span_must_fit_the_runs_own_clock() {
        // The committed H200 run: 152.150 s on the wall clock, its last stamp at 152.143 s.
        assert_eq!(wall_clock_problem(152.150, 152.143, true), None);
        // Short of the records by the slack (2 s + 0.1 % of 1000 s = 3 s) and no more.
        assert_eq!(wall_clock_problem(997.0, 1000.0, true), None);
        let short = wall_clock_problem(996.9, 1000.0, false).unwrap();
        assert!(short.starts_with("the footer's ended_unix_s is 996.900 s after"), "{short}");
        assert!(short.contains("records run to 1000.000 s") && short.contains("not this run's"), "{short}");
        // Beyond 120 s + 5 % (of 1000 s: 170 s) after the last record, for a complete footer
        // only: an interrupted or failed run's footer may follow a long unfinished call.
        assert_eq!(wall_clock_problem(1170.0, 1000.0, true), None);
        let long = wall_clock_problem(1170.1, 1000.0, true).unwrap();
        assert!(long.contains("another run's"), "{long}");
        assert_eq!(wall_clock_problem(4600.0, 1000.0, false), None);
        assert!(wall_clock_problem(f64::NAN, 1.0, false).is_some());
    }

    #[test]
    fn energy_only_records_are_illegal_in_a_speed_record() {
        use crate::power::sampler::{Sample, SampleOutcome};
        use crate::power::Reading;
        let sample = || {
            Box::new(Sample {
                seq: 0,
                t_request_ns: 1,
                t_receive_ns: 2,
                outcome: SampleOutcome::Reading(Reading::power_w("system", 1.0)),
            })
        };
        let idle = Record::Idle { index: 0, start_ns: 0, end_ns: 1, ended_early: false };
        let energy_only = [
            Record::Sample(sample()),
            Record::Probe(sample()),
            idle,
            Record::BlockEnergy { index: 0, arm: "a".into(), energy: None, missing_reason: None },
        ];
        for r in &energy_only {
            assert!(!kind_allows("speed", r), "{}", kind_of(r));
            assert!(kind_allows("energy", r), "{}", kind_of(r));
        }
        let error = Record::Error { arm: "a".into(), block: None, message: "m".into() };
        assert!(kind_allows("speed", &error) && kind_allows("energy", &error));
    }
}
