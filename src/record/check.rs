//! Every invariant the raw writer guarantees, checked on the records themselves: the header's
//! fields fit its kind, every record kind is one the header's kind writes, every arm and
//! request named is one the header lists, the writer's order, spans ordered on the run's
//! clock, and the footer's wall clock against the run's own. The reader ([`super::read()`])
//! has already refused a schema version this build does not read. `summary`'s audit reports
//! these problems as its `record_integrity` check.

use std::collections::BTreeMap;

use crate::record::status::RunStatus;

use super::{Header, RawRun, Record};

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
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
pub fn integrity(run: &RawRun) -> Vec<(usize, String)> {
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
        let kind = r.kind();
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
    problems
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
            assert!(!kind_allows("speed", r), "{}", r.kind());
            assert!(kind_allows("energy", r), "{}", r.kind());
        }
        let error = Record::Error { arm: "a".into(), block: None, message: "m".into() };
        assert!(kind_allows("speed", &error) && kind_allows("energy", &error));
    }
}
