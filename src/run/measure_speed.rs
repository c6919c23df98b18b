//! A saturated run (`speed`, and `trace run`, which is the same run with one block): measured
//! and recorded by [`measure`], then turned into the speed report by [`report`] (t per arm,
//! S against the baseline with its bootstrap interval over whole balanced cycles, outliers,
//! identical arms).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{
    answer_label, probabilities, run_with, BlockLimit, BlockRecord, Clock, Controls, Observer, Observers,
    Phase, Plan, RunEnd, RunError, RunTotals,
};
use crate::laya::batch::ShapeCaps;
use crate::laya::bundle::Bundle;
use crate::record::status::RunStatus;
use crate::record::{FileSink, Header, Record};
use crate::report::speed::{
    self as speed_report, direction, ratio_in_words, ArmResult, OutlierCall, SpeedIntervals, SpeedReport,
    SpeedTotals, SpeedVsBaseline,
};
use crate::report::steal::{self, StealTicks};
use crate::stats::LatencySummary;
use crate::summary::bootstrap::{distinct_resamples, interval_name, speed_gain_intervals};
use crate::summary::FEW_CYCLES;

use super::recorder::{self, footer, HeaderInput, Recorder, RunIo, Sink};
use super::setup::Setup;
use crate::error::{chain, Classify, Error, Kind};

/// A saturated run, measured and recorded.
pub struct Measured {
    /// The raw header as written.
    pub header: Header,
    /// What was measured.
    pub totals: RunTotals,
    /// `complete`, or `incomplete` when it was interrupted.
    pub status: RunStatus,
    /// Why it is incomplete.
    pub reason: Option<String>,
}

/// The plan of a `speed` run: `cycles` balanced cycles of blocks of `calls` calls or
/// `seconds` long, after `warmup` warm-up calls per arm (exit 2 on a zero count or duration).
pub fn plan(
    cycles: usize,
    calls: Option<u64>,
    seconds: std::time::Duration,
    warmup: usize,
) -> Result<Plan, Error> {
    check_cycles(cycles)?;
    let block = match calls {
        Some(0) => return Err(Error::input("--calls must be at least 1")),
        Some(k) => BlockLimit::Calls(k),
        None => BlockLimit::Duration(super::duration_flags::positive("--seconds", seconds)?),
    };
    Ok(Plan::saturated(cycles, block, warmup))
}

/// The most balanced cycles a run schedules. The block order is held in memory, and a run of
/// more would outlast any user: 100 000 cycles of two arms are 400 000 blocks (the published
/// study ran 10 cycles).
pub const MAX_CYCLES: usize = 100_000;

/// `--cycles` of `speed` and `energy`: at least 1 and at most [`MAX_CYCLES`] (exit 2).
pub fn check_cycles(cycles: usize) -> Result<(), Error> {
    if cycles == 0 {
        return Err(Error::input("--cycles must be at least 1"));
    }
    if cycles > MAX_CYCLES {
        return Err(Error::input(format!(
            "--cycles {cycles} is more than {MAX_CYCLES}, the most a run schedules; {FEW_CYCLES} or more give a bootstrap interval worth reading, so pass a smaller count"
        )));
    }
    Ok(())
}

/// `plan` with `batch` requests per call (`speed --batch N`; exit 2 naming the flag for 0).
pub fn batched(plan: Plan, batch: usize) -> Result<Plan, Error> {
    if batch == 0 {
        return Err(Error::input(
            "--batch must be at least 1: a call answers 1 or more requests (1, the default, is one request per call)",
        ));
    }
    Ok(Plan { batch, ..plan })
}

/// Why a run stopped by the stop flag is incomplete (`by_signal`: the flag was raised by the
/// Ctrl-C/SIGTERM handler).
pub fn interrupted_reason(during: &str, by_signal: bool) -> String {
    let signal = if by_signal { "a signal (Ctrl-C, SIGTERM or SIGHUP)" } else { "the stop flag" };
    format!("interrupted by {signal} during {during}")
}

/// Whether the stop flag is raised.
pub(crate) fn raised(stop: Option<&AtomicBool>) -> bool {
    stop.is_some_and(|s| s.load(Ordering::SeqCst))
}

/// Run `plan` saturated on the set-up's arms and record it in a new raw file at `raw`: the
/// header, then every warm-up, block and call as the protocol hands them over, then the footer.
/// A run that stops (a call fails, the raw file cannot be written, the watcher refuses) ends
/// with a `failed` footer and an error naming the raw record; a warm-up that fails on the
/// input is a bad input (exit 2).
pub fn measure(
    bundle: &Bundle,
    setup: &mut Setup<'_>,
    input: &HeaderInput<'_>,
    plan: &Plan,
    io: RunIo<'_>,
    watch: &mut dyn Observer,
) -> Result<Measured, Error> {
    let RunIo { raw: raw_path, overwrite, stop, .. } = io;
    let mut header = recorder::header(input, bundle, setup, plan);
    // Held until the footer is written: a second run on this file refuses before measuring.
    let (_lock, writer) = recorder::open_raw(raw_path, overwrite)?;
    let clock = Clock::start();
    header.started_unix_s = crate::time::unix_now();
    watch.started(header.started_unix_s);
    let mut rec = Recorder::new(FileSink::new(writer));
    rec.sink
        .record(Record::Header(Box::new(header.clone())))
        .and_then(|()| Sink::sync(&mut rec.sink))
        .map_err(|e| {
            Error::run(format!("nothing was measured; {}", crate::record::cut_note(raw_path))).because(e)
        })?;
    let controls = Controls { stop, order: input.order, ..Controls::default() };
    let mut observers = Observers::new().with(&mut rec).with(watch);
    let outcome = run_with(&mut setup.arms, &setup.workload, plan, &clock, &mut observers, controls);
    drop(observers);
    let stopped = |rec: &mut Recorder<FileSink>, reason: String, kind: Kind, message: String| {
        // (nothing is written after a failed write: the sink refuses)
        let _ = rec.sink.record(footer(RunStatus::Failed, rec.total_calls, Some(reason), vec![]));
        let _ = Sink::sync(&mut rec.sink);
        let kept = match rec.sink.failed() {
            None => format!("everything measured so far is in {}", raw_path.display()),
            Some(_) => crate::record::cut_note(raw_path),
        };
        Error::new(kind, format!("the run stopped; {kept}: {message}"))
    };
    let outcome = match outcome {
        Ok(o) => o,
        // A watcher's failure (the ready file) is recorded as the raw records of a failed
        // write have always named it.
        Err(RunError::Observer(e)) => {
            let message = chain(&e);
            return Err(stopped(
                &mut rec,
                format!("cannot write the raw record: {message}"),
                Kind::Run,
                message,
            ));
        }
        Err(e) => return Err(stopped(&mut rec, e.to_string(), Kind::Run, chain(&e))),
    };
    let (status, reason) = match outcome.end {
        RunEnd::Completed => (RunStatus::Complete, None),
        RunEnd::Interrupted { during } => {
            (RunStatus::Incomplete, Some(interrupted_reason(&during, raised(stop))))
        }
        RunEnd::CallFailed { arm, phase, error } => {
            let kind = if phase == Phase::Warmup { error.kind() } else { Kind::Run };
            let e = RunError::Call { arm, phase, error };
            return Err(stopped(&mut rec, e.to_string(), kind, chain(&e)));
        }
        RunEnd::SensorStopped { during } => {
            let e = format!("the run stopped during {during}");
            return Err(stopped(&mut rec, e.clone(), Kind::Run, e));
        }
    };
    rec.sink
        .record(footer(status, rec.total_calls, reason.clone(), vec![]))
        .and_then(|_| Sink::sync(&mut rec.sink))
        .map_err(|e| {
            Error::run(format!("cannot finish the raw record; {}", crate::record::cut_note(raw_path)))
                .because(e)
        })?;
    Ok(Measured { header, totals: outcome.totals, status, reason })
}

/// The padded length of every row a backend at `shapes` runs over one period of the protocol's
/// cycle through a workload whose requests have rows of `tokens_per_row` real tokens, `batch`
/// requests per call, and the decisions (requests answered) of that period. A call starts at
/// request `(i × batch) mod n` (as the protocol runs it); its rows are packed `B` =
/// `shapes.batch_size` to a forward at the graph length of the call's longest row
/// ([`crate::laya::host::Host::run_rows`]), and a forward runs all its `B` rows.
pub fn rows_run(tokens_per_row: &[Vec<usize>], shapes: &ShapeCaps, batch: usize) -> (Vec<usize>, u64) {
    let n = tokens_per_row.len();
    let batch = batch.max(1);
    if n == 0 {
        return (Vec::new(), 0);
    }
    // The call starts repeat after n / gcd(n, batch) calls.
    let (mut a, mut b) = (n, batch);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let calls = n / a;
    let rows_per_forward = shapes.batch_size.max(1);
    let mut lengths = Vec::new();
    for i in 0..calls {
        let s = (i * batch) % n;
        let rows: Vec<usize> = (0..batch).flat_map(|j| tokens_per_row[(s + j) % n].iter().copied()).collect();
        if rows.is_empty() {
            continue;
        }
        let longest = rows.iter().copied().max().unwrap_or(0);
        let length = shapes.graph_length(longest).unwrap_or(shapes.max_length);
        let forwards = rows.len().div_ceil(rows_per_forward);
        lengths.extend(std::iter::repeat_n(length, forwards * rows_per_forward));
    }
    (lengths, (calls * batch) as u64)
}

/// FLOP per decision in GFLOP of the rows a backend at `shapes` runs for the workload (see
/// [`rows_run`]): dense MACs × 2 of every row at its padded length, with the scorer over the
/// shapes' `K` marker slots and the action head, over the decisions they answer (see
/// `laya-bench bounds --workload`). `None` for a workload without rows.
pub fn gflop_per_decision(
    bundle: &Bundle,
    tokens_per_row: &[Vec<usize>],
    shapes: &ShapeCaps,
    batch: usize,
) -> Option<f64> {
    let (lengths, decisions) = rows_run(tokens_per_row, shapes, batch);
    crate::bounds::workload_flops(&bundle.encoder, &bundle.agent, &lengths, decisions, shapes.max_options)
        .ok()
        .map(|w| w.with_tail_gflop_per_decision())
}

/// Seconds per decision: `total_s` over the `calls × batch` requests the calls answered (NaN
/// without a call).
pub fn time_per_decision(total_s: f64, calls: u64, batch: usize) -> f64 {
    let decisions = calls * batch.max(1) as u64;
    if decisions == 0 {
        f64::NAN
    } else {
        total_s / decisions as f64
    }
}

/// Resamples of the speed ratio's bootstrap interval.
const RATIO_RESAMPLES: usize = 10_000;

/// The (decisions, seconds) of every arm per balanced cycle that ran whole (both of its blocks
/// on every arm, none cut short): what the ratio's bootstrap resamples. A call of arm `a`
/// answers `batch[a]` requests, so a block's decisions are its calls × that.
fn whole_cycles(totals: &RunTotals, arms: usize, batch: &[usize]) -> Vec<Vec<(f64, f64)>> {
    let runtime = runtime_block_seconds(totals, arms);
    let cycles = totals.blocks.iter().map(|b| b.cycle as usize + 1).max().unwrap_or(0);
    let mut out = Vec::new();
    for c in 0..cycles {
        let blocks: Vec<&BlockRecord> = totals.blocks.iter().filter(|b| b.cycle as usize == c).collect();
        if blocks.len() != 2 * arms || blocks.iter().any(|b| b.ended_early) {
            continue;
        }
        let mut row = vec![(0.0, 0.0); arms];
        for b in blocks {
            row[b.arm].0 += (b.calls * batch[b.arm] as u64) as f64;
            row[b.arm].1 += match runtime.get(&b.index) {
                Some(s) => *s,
                None => (b.end_ns - b.start_ns) as f64 / 1e9,
            };
        }
        out.push(row);
    }
    out
}

/// Whether arm `a` timed itself (a reference arm: every call has the runtime's own duration).
fn timed_by_runtime(totals: &RunTotals, a: usize) -> bool {
    let n = totals.runtime_ns.get(a).map_or(0, Vec::len);
    n > 0 && n == totals.durations_ns[a].len()
}

/// Block index → Σ the runtime's own durations of its calls, s, for the arms that timed
/// themselves: a reference arm's block time is the runtime's, not the round trips'.
fn runtime_block_seconds(totals: &RunTotals, arms: usize) -> std::collections::HashMap<u32, f64> {
    let mut out = std::collections::HashMap::new();
    for a in (0..arms).filter(|&a| timed_by_runtime(totals, a)) {
        let mut first = 0usize;
        for b in totals.blocks.iter().filter(|b| b.arm == a) {
            let end = (first + b.calls as usize).min(totals.runtime_ns[a].len());
            out.insert(b.index, totals.runtime_ns[a][first..end].iter().sum::<u64>() as f64 / 1e9);
            first = end;
        }
    }
    out
}

/// The per-call durations the report reads for arm `a`: the runtime's own for a reference arm,
/// else the calls'.
fn call_durations(totals: &RunTotals, a: usize) -> &[u64] {
    if timed_by_runtime(totals, a) {
        &totals.runtime_ns[a]
    } else {
        &totals.durations_ns[a]
    }
}

/// Arm `a`'s measured seconds: Σ its runtime's own durations for a reference arm, else Σ its
/// block durations.
fn arm_seconds(totals: &RunTotals, a: usize) -> f64 {
    if timed_by_runtime(totals, a) {
        totals.runtime_ns[a].iter().sum::<u64>() as f64 / 1e9
    } else {
        totals.block_ns[a] as f64 / 1e9
    }
}

/// The calls of arm `a` that are statistical outliers, named by block and position.
fn outlier_calls(totals: &RunTotals, a: usize) -> Vec<OutlierCall> {
    let durations = call_durations(totals, a);
    let xs: Vec<f64> = durations.iter().map(|&d| d as f64 / 1e9).collect();
    let mut found = crate::stats::outliers(&xs).into_iter().peekable();
    let mut out = Vec::new();
    let mut first = 0usize;
    for b in totals.blocks.iter().filter(|b| b.arm == a) {
        let end = first + b.calls as usize;
        while let Some(&k) = found.peek().filter(|&&k| k < end) {
            out.push(OutlierCall { block: b.index, call: (k - first) as u64, duration_s: xs[k] });
            found.next();
        }
        first = end;
    }
    out
}

/// The warning of a ratio interval from 2 to [`FEW_CYCLES`] − 1 whole cycles, the rule and
/// the threshold `summary` uses: too few cycles for a claim (fewer than 2 give no interval, and
/// the table says why instead).
fn few_cycles_warning(cycles: usize) -> Option<String> {
    let bracket = if crate::summary::bootstrap::names_a_level_interval(cycles) {
        "each ratio's 95 % interval".to_string()
    } else {
        format!("each ratio's bracket (the {})", interval_name(cycles, 0.95))
    };
    (2..FEW_CYCLES).contains(&cycles).then(|| {
        format!(
            "WARNING: only {cycles} whole balanced cycles: the bootstrap resamples whole cycles, so it has at most {:.0} distinct resamples and {bracket} shows only the variation these {cycles} cycles saw; it cannot capture all background load. Run at least {FEW_CYCLES} cycles (--cycles {FEW_CYCLES}) for a claim.",
            distinct_resamples(cycles),
        )
    })
}

/// The steal over every block of arm `a` (`None` if any block lacks it).
fn arm_steal(totals: &RunTotals, a: usize) -> Option<StealTicks> {
    let mine = totals.blocks.iter().filter(|b| b.arm == a).map(|b| b.steal).collect::<Vec<_>>();
    StealTicks::sum(mine)
}

/// The one warning for the arms with outlier calls: the advice once, then one line per such
/// arm (its count, its worst call against the arm's median and P99); `None` when no arm has any.
fn outlier_warning<'a>(
    arms: impl IntoIterator<Item = (&'a str, &'a LatencySummary, &'a [OutlierCall])>,
) -> Option<String> {
    let lines: Vec<String> = arms
        .into_iter()
        .filter_map(|(name, latency, outliers)| {
            let worst = outliers.iter().max_by(|a, b| a.duration_s.total_cmp(&b.duration_s))?;
            Some(format!(
                "- arm `{name}`: {} of {} calls; worst block {} call {} ({:.3} ms; median {:.3} ms, P99 {:.3} ms)",
                outliers.len(),
                latency.calls,
                worst.block,
                worst.call,
                worst.duration_s * 1e3,
                latency.p50_s * 1e3,
                latency.p99_s * 1e3,
            ))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "WARNING: statistical outlier calls (listed in `outliers` of the JSON report, kept in every figure). Something else probably used the machine (another program, frequency scaling, swapping): close other programs and run again, or run more cycles so one disturbance weighs less.\n{}",
        lines.join("\n")
    ))
}

/// The largest |Δ| between the probabilities of two arms' results for the same requests, in
/// order (0 when there are none).
fn max_probability_diff(
    mine: &[crate::laya::host::StateResult],
    other: &[crate::laya::host::StateResult],
) -> f64 {
    let mut max = 0.0f64;
    for (a, b) in mine.iter().zip(other) {
        for (x, y) in probabilities(a).iter().zip(&probabilities(b)) {
            max = max.max((x - y).abs());
        }
    }
    max
}

/// The report of a measured run with its status. An interrupted run's figures come from its
/// whole cycles once one finished (the cut cycle's blocks ran in an order that favours the arms
/// it reached); its stability is still every call's, the cut cycle's too.
pub fn report_measured(m: &Measured, raw_path: &Path, gflop: &[Option<f64>]) -> SpeedReport {
    let arms = m.header.arms.len();
    let whole = match m.status {
        RunStatus::Complete => None,
        _ => m.totals.whole_cycles(arms, m.header.plan.cycles, false),
    };
    let mut report = report(&m.header, whole.as_ref().map_or(&m.totals, |w| &w.1), raw_path, gflop);
    report.status = m.status;
    report.status_reason = m.reason.clone();
    if let Some((k, used)) = &whole {
        report.whole_cycles = Some(*k);
        let left_out = m.totals.unstable_left_out(used);
        if left_out > 0 {
            report.stable = false;
            report.warnings.push(crate::report::left_out_unstable_warning(left_out));
        }
    }
    report
}

/// The speed report of a measured run (status `complete`; [`report_measured`] sets another).
pub fn report(header: &Header, totals: &RunTotals, raw_path: &Path, gflop: &[Option<f64>]) -> SpeedReport {
    let none: Vec<crate::laya::host::StateResult> = Vec::new();
    let warmup = |i: usize| totals.warmup.get(i).unwrap_or(&none);
    let batches: Vec<usize> = header.arms.iter().map(|a| header.requests_per_call(&a.name)).collect();
    let batch_of = |i: usize| batches.get(i).copied().unwrap_or(1);
    let base_t = time_per_decision(arm_seconds(totals, 0), totals.durations_ns[0].len() as u64, batch_of(0));
    let base_answers: Vec<String> = warmup(0).iter().map(answer_label).collect();
    let mut results = Vec::with_capacity(header.arms.len());
    for (i, info) in header.arms.iter().enumerate() {
        let calls = totals.durations_ns[i].len() as u64;
        let total_s = arm_seconds(totals, i);
        let (batch, gflop) = (batch_of(i), gflop.get(i).copied().flatten());
        let t = time_per_decision(total_s, calls, batch);
        let unbatched = totals.unbatched.get(i).filter(|u| !u.is_empty());
        let unbatched_diff = unbatched.map(|u| max_probability_diff(warmup(i), u));
        let mut lat: Vec<f64> = call_durations(totals, i).iter().map(|&d| d as f64 / 1e9).collect();
        let round_trip_mean_s = timed_by_runtime(totals, i)
            .then(|| totals.durations_ns[i].iter().sum::<u64>() as f64 / 1e9 / calls.max(1) as f64);
        let latency = LatencySummary::from_latencies(&mut lat).unwrap_or(LatencySummary {
            calls: 0,
            mean_s: f64::NAN,
            std_s: None,
            p50_s: f64::NAN,
            p90_s: None,
            p95_s: f64::NAN,
            p99_s: f64::NAN,
            min_s: f64::NAN,
            max_s: f64::NAN,
        });
        let answers: Vec<String> = warmup(i).iter().map(answer_label).collect();
        let max_diff = max_probability_diff(warmup(i), warmup(0));
        let mismatches = answers.iter().zip(&base_answers).filter(|(a, b)| a != b).count();
        results.push(ArmResult {
            arm: info.clone(),
            calls,
            totals: SpeedTotals {
                decisions: calls * batch as u64,
                time_s: total_s,
                time_per_decision_s: t,
                decisions_per_s: 1.0 / t,
            },
            latency,
            vs_baseline: SpeedVsBaseline {
                speed_gain: base_t / t,
                // Set once the interval is known: it decides the direction.
                speed_gain_words: String::new(),
                speed_gain_direction: None,
                max_probability_diff: max_diff,
                answer_mismatches: mismatches,
            },
            intervals: SpeedIntervals::default(),
            unstable_calls: totals.unstable[i],
            gflop_per_decision: gflop,
            // A scripted arm or a factory callable does no known model arithmetic: a FLOP rate
            // of it would be fiction.
            achieved_gflops: gflop.filter(|_| info.runs_the_model()).map(|g| g / t).filter(|r| r.is_finite()),
            answers,
            missing_reason: (calls == 0)
                .then(|| "the arm made no call (the run stopped before its first block)".to_string()),
            outliers: outlier_calls(totals, i),
            identical_to: header.arms[..i].iter().find(|o| info.same_model_as(o)).map(|o| o.name.clone()),
            round_trip_mean_s,
            unbatched_identical: unbatched.map(|u| u.as_slice() == warmup(i).as_slice()),
            max_probability_diff_vs_unbatched: unbatched_diff,
            host_steal: arm_steal(totals, i),
            answers_vs_baseline: crate::report::answers::of_arm(&totals.warmup, i),
        });
    }
    let names: Vec<String> = header.arms.iter().map(|a| a.name.clone()).collect();
    let cycles = whole_cycles(totals, names.len(), &batches);
    if cycles.len() >= 2 {
        let intervals = speed_gain_intervals(&cycles, 0, RATIO_RESAMPLES, 0, 0.95);
        for (r, iv) in results.iter_mut().zip(intervals) {
            r.intervals.speed_gain = iv;
        }
    } else {
        for r in &mut results {
            r.intervals.missing.insert(
                "speed_gain".into(),
                format!(
                "{} whole balanced cycle{}: resampling whole cycles needs at least 2 ({FEW_CYCLES} or more for an interval worth reading); pass --cycles",
                cycles.len(),
                if cycles.len() == 1 { "" } else { "s" }
            ),
            );
        }
    }
    for r in &mut results {
        let (s, iv) = (r.vs_baseline.speed_gain, r.intervals.speed_gain.as_ref());
        r.vs_baseline.speed_gain_words = ratio_in_words(s, iv);
        r.vs_baseline.speed_gain_direction = Some(direction(s, iv));
    }
    let mut warnings = Vec::new();
    if let Some(w) = few_cycles_warning(cycles.len()) {
        warnings.push(w);
    }
    let batch = header.plan.batch.max(1);
    if batch > 1 {
        warnings.push(format!(
            "NOTE: --batch {batch}: every call answers {batch} consecutive requests in one packed forward; decisions = calls × {batch}, and t, decisions/s, the ratio and its interval count decisions. Latency is per batch of {batch} (one call), not per decision."
        ));
    }
    let swept: Vec<String> =
        header.arms.iter().filter_map(|a| a.requests_per_call.map(|n| format!("`{}` {n}", a.name))).collect();
    if !swept.is_empty() {
        warnings.push(format!(
            "NOTE: --batch sweep: requests per call by arm: {}; every call of an arm answers that many consecutive requests in one packed forward, its decisions = calls × its value, and t, decisions/s, the ratio and its interval count decisions. Latency is per call (per batch of the arm's value), not per decision.",
            swept.join(", ")
        ));
    }
    for r in &results {
        match r.unbatched_identical {
            Some(false) => warnings.push(format!(
                "FINDING: arm `{}` ({}): batched results differ from the same requests answered alone (one row per forward), by up to {:.2e} in a probability (unbatched_identical: false in the report); each batched call is still checked against the batched warm-up, like for like",
                r.arm.name,
                r.arm.spec,
                r.max_probability_diff_vs_unbatched.unwrap_or(f64::NAN),
            )),
            Some(true) => warnings.push(format!(
                "NOTE: arm `{}`: every batched result equals the same request answered alone (one row per forward), at the results' 4-decimal rounding",
                r.arm.name
            )),
            None => {}
        }
        if let Some(rt) = r.round_trip_mean_s {
            warnings.push(format!(
                "NOTE: arm `{}` ({}) is a reference runtime in a Python worker: its t, ratio and latency are the runtime's own predict(state, questions) timed in the worker (time.perf_counter_ns); the round trip over the pipes averaged {:.3} ms, {:.3} ms over the runtime's own time (pipes and JSON, outside the runtime's boundary)",
                r.arm.name,
                r.arm.spec,
                rt * 1e3,
                (rt - r.totals.time_per_decision_s) * 1e3
            ));
        }
        if let Some(w) = steal::warning(&format!("arm `{}`'s blocks", r.arm.name), r.host_steal) {
            warnings.push(format!("WARNING: {w}"));
        }
        if let Some(same) = &r.identical_to {
            warnings.push(speed_report::identical_warning(&r.arm, same));
        }
    }
    warnings.extend(outlier_warning(
        results.iter().map(|r| (r.arm.name.as_str(), &r.latency, r.outliers.as_slice())),
    ));
    SpeedReport {
        provenance: header.provenance(speed_report::SCHEMA_VERSION),
        model: header.model.clone(),
        workload: header.workload.clone(),
        plan: header.plan.clone(),
        raw_path: Some(raw_path.display().to_string()),
        stable: totals.unstable.iter().all(|&u| u == 0),
        arms: results,
        status: RunStatus::Complete,
        status_reason: None,
        whole_cycles: None,
        warnings,
        row_context: crate::report::RowContext::of(header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::batch::ShapeMode;

    fn tiny() -> Bundle {
        Bundle::load(&crate::laya::bundle::ModelSpec::Builtin, |_| None).unwrap()
    }

    /// The workload as `speed` builds it for builtin:tiny at `--length 96`.
    fn tiny_workload(bundle: &Bundle, name: &str) -> crate::laya::workload::Built {
        let plan = super::super::workload::WorkloadPlan::checked(name, None, 96).unwrap();
        let host = crate::laya::host::Host::new(&bundle.tokenizer, &bundle.agent, fixed_shapes_96());
        plan.build(&host).unwrap().0
    }

    fn fixed_shapes_96() -> ShapeCaps {
        super::super::arm::fixed_shapes(96)
    }

    /// builtin:tiny (fixtures/tiny: encoder/config.json D = hidden_size 64, N = 4 layers,
    /// I = intermediate_size 96; rl_agent_config.json H = 2 head layers, A = 1 + 1 act_cost = 2
    /// actions), every row padded to L = 96 with K = 32 marker slots (`speed`'s fixed shapes,
    /// one row per forward). Per row, in MACs (FLOP = 2 × MACs; a matmul of an L × d_in input
    /// by d_in × d_out weights is L·d_in·d_out MACs):
    ///   encoder projections N·L·(3D² + D² + 2I·D + I·D) = 4·96·(12288 + 4096 + 12288 + 6144)
    ///                                                    = 4·96·34816        = 13,369,344
    ///   encoder attention   N·2·L²·D  = 4·2·9216·64                           =  4,718,592
    ///   head projections    H·L·12D²  = 2·96·49152                            =  9,437,184
    ///   head attention      H·2·L²·D  = 2·2·9216·64                           =  2,359,296
    ///   published total                                                       = 29,884,416
    ///   scorer              K·(D² + D) = 32·4160                              =    133,120
    ///   action head         256·(D + 4) + 256·A = 256·68 + 256·2              =     17,920
    ///   with scorer and action head                                           = 30,035,456
    /// so 60,070,912 FLOP per row. support.json's two requests run 3 rows (refund, urgency,
    /// topic: 55, 60 and 62 real tokens) and 1 row (topic: 82 tokens), all padded to 96: 4 rows
    /// over 2 decisions, 2 × 60,070,912 = 120,141,824 FLOP = 0.120141824 GFLOP per decision.
    /// The invoice workload asks one question per request: 1 row, 0.060070912 GFLOP, the
    /// figure `speed` reported before it counted rows.
    #[test]
    fn gflop_per_decision_counts_every_row_a_request_runs() {
        let bundle = tiny();
        let shapes = fixed_shapes_96();
        let support =
            tiny_workload(&bundle, concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/requests/support.json"));
        assert_eq!(support.tokens_per_row, vec![vec![55, 60, 62], vec![82]]);
        assert_eq!(rows_run(&support.tokens_per_row, &shapes, 1), (vec![96; 4], 2));
        let g = gflop_per_decision(&bundle, &support.tokens_per_row, &shapes, 1).unwrap();
        assert!((g * 1e9 - 120_141_824.0).abs() < 1e-3, "{g}");
        let invoice = tiny_workload(&bundle, "invoice");
        assert_eq!(rows_run(&invoice.tokens_per_row, &shapes, 1), (vec![96; 8], 8));
        let g = gflop_per_decision(&bundle, &invoice.tokens_per_row, &shapes, 1).unwrap();
        assert!((g * 1e9 - 60_070_912.0).abs() < 1e-3, "{g}");
        // The one-row figure of `bounds` (with scorer and action head) is the invoice's.
        let row = crate::bounds::flops_per_decision(&bundle.encoder, &bundle.agent, 96, 32).unwrap();
        assert_eq!((row.published_flop(), row.with_tail_flop()), (59_768_832, 60_070_912));
        // --batch 2 packs both requests' rows per call: still 2 rows per decision.
        assert_eq!(
            rows_run(&invoice.tokens_per_row, &ShapeCaps { batch_size: 2, ..shapes }, 2),
            (vec![96; 8], 8)
        );
    }

    /// A backend that pads to multiples of 16 runs a call's rows at its longest row's length;
    /// a forward runs all its B rows; batched calls cycle through the requests as the protocol
    /// does (call i starts at request i × batch mod n).
    #[test]
    fn rows_are_counted_as_the_backend_pads_and_packs_them() {
        let tokens = vec![vec![55, 60, 62], vec![82]];
        let range = ShapeCaps {
            batch_size: 1,
            max_length: 512,
            min_length: 16,
            max_options: 32,
            mode: ShapeMode::Range,
        };
        assert_eq!(rows_run(&tokens, &range, 1), (vec![64, 64, 64, 96], 2));
        // 8 rows per forward: the 4 rows of a call of 2 requests fill one forward of 8.
        assert_eq!(rows_run(&tokens, &ShapeCaps { batch_size: 8, ..range.clone() }, 2), (vec![96; 8], 2));
        // 3 requests per call over 2 requests: calls 0,1,0 (7 rows) and 1,0,1 (5 rows).
        assert_eq!(rows_run(&tokens, &ShapeCaps { batch_size: 7, ..range.clone() }, 3), (vec![96; 14], 6));
        let buckets = ShapeCaps { mode: ShapeMode::Enumerated(vec![32, 64, 128]), ..range.clone() };
        assert_eq!(rows_run(&tokens, &buckets, 1).0, vec![64, 64, 64, 128]);
        assert_eq!(rows_run(&[], &range, 1), (vec![], 0));
        assert_eq!(gflop_per_decision(&tiny(), &[], &range, 1), None);
    }

    /// `summary`'s rule and threshold ([`FEW_CYCLES`]): 2 to 9 whole cycles warn, 3 of them
    /// with the 10 multisets of 3 cycles; 1 cycle has no interval (its reason says so), 10 warn
    /// no more.
    #[test]
    fn fewer_cycles_than_summary_asks_for_a_claim_warn() {
        assert_eq!(few_cycles_warning(0), None);
        assert_eq!(few_cycles_warning(1), None);
        assert_eq!(
            few_cycles_warning(3).unwrap(),
            "WARNING: only 3 whole balanced cycles: the bootstrap resamples whole cycles, so it has at most 10 distinct resamples and each ratio's bracket (the range of 10 possible resamples, not a 95 % interval) shows only the variation these 3 cycles saw; it cannot capture all background load. Run at least 10 cycles (--cycles 10) for a claim."
        );
        let w = few_cycles_warning(9).unwrap();
        assert!(w.contains("at most 24310 distinct resamples and each ratio's 95 % interval shows"), "{w}");
        assert_eq!(few_cycles_warning(FEW_CYCLES), None);
    }

    fn block(index: u32, cycle: u32, arm: usize, calls: u64, start_ns: u64, end_ns: u64) -> BlockRecord {
        BlockRecord::whole(index, cycle, arm, calls, start_ns, end_ns)
    }

    #[test]
    fn outlier_calls_are_named_by_block_and_position() {
        // Arm 0: blocks 0 and 3 with 4 calls each; the 7th call (block 3, call 2) took 321 ms.
        let mut d: Vec<u64> = vec![7_800_000; 8];
        d[6] = 321_000_000;
        d[1] = 7_700_000;
        let totals = RunTotals {
            durations_ns: vec![d, vec![5_000_000; 4]],
            blocks: vec![block(0, 0, 0, 4, 0, 40), block(1, 0, 1, 4, 40, 80), block(3, 1, 0, 4, 90, 400)],
            ..RunTotals::default()
        };
        let found = outlier_calls(&totals, 0);
        assert_eq!(found, vec![OutlierCall { block: 3, call: 2, duration_s: 0.321 }]);
        assert!(outlier_calls(&totals, 1).is_empty());
    }

    #[test]
    fn outliers_give_the_advice_once_and_one_line_per_arm() {
        let latency = LatencySummary::from_latencies(&mut [0.0078; 1200]).unwrap();
        let latency = LatencySummary { p99_s: 0.0079, ..latency };
        let call = |block: u32, call: u64, duration_s: f64| OutlierCall { block, call, duration_s };
        assert_eq!(outlier_warning([("a", &latency, &[][..])]), None);
        let (a, c) = ([call(3, 2, 0.321), call(5, 9, 0.4)], [call(1, 0, 0.05)]);
        let w = outlier_warning([("a", &latency, &a[..]), ("b", &latency, &[][..]), ("c", &latency, &c[..])])
            .unwrap();
        let lines: Vec<&str> = w.lines().collect();
        assert_eq!(lines.len(), 3, "{w}");
        assert!(
            lines[0].starts_with("WARNING: statistical outlier calls")
                && lines[0].contains("run more cycles")
        );
        assert_eq!(w.matches("close other programs").count(), 1);
        assert_eq!(
            lines[1],
            "- arm `a`: 2 of 1200 calls; worst block 5 call 9 (400.000 ms; median 7.800 ms, P99 7.900 ms)"
        );
        assert!(lines[2].starts_with("- arm `c`: 1 of 1200 calls; worst block 1 call 0 (50.000 ms"), "{w}");
    }

    #[test]
    fn only_whole_cycles_are_resampled() {
        let mut cut = block(3, 1, 0, 2, 60, 70);
        cut.ended_early = true;
        let totals = RunTotals {
            blocks: vec![
                block(0, 0, 0, 10, 0, 1_000_000_000),
                block(1, 0, 0, 30, 1_000_000_000, 3_000_000_000),
                block(2, 1, 0, 5, 3_000_000_000, 3_500_000_000),
                cut,
            ],
            ..RunTotals::default()
        };
        // One arm: cycle 0 has its two blocks (40 calls in 3 s); cycle 1 was cut short.
        assert_eq!(whole_cycles(&totals, 1, &[1]), vec![vec![(40.0, 3.0)]]);
        // At --batch 4 the same 40 calls answered 160 requests in the same 3 s.
        assert_eq!(whole_cycles(&totals, 1, &[4]), vec![vec![(160.0, 3.0)]]);
    }

    #[test]
    fn the_cycle_count_is_refused_outside_1_to_the_maximum() {
        assert!(check_cycles(1).is_ok() && check_cycles(MAX_CYCLES).is_ok());
        let zero = check_cycles(0).unwrap_err();
        assert!(
            zero.kind() == crate::error::Kind::Input && zero.to_string() == "--cycles must be at least 1"
        );
        // 2^32 + 1 cycles once asked for a 137 GB block order and aborted.
        let huge = check_cycles(4_294_967_297).unwrap_err();
        assert!(huge.kind() == crate::error::Kind::Input, "{huge}");
        assert!(huge.to_string().starts_with("--cycles 4294967297 is more than 100000"), "{huge}");
        assert!(plan(MAX_CYCLES + 1, Some(1), std::time::Duration::from_secs(1), 0).is_err());
    }

    #[test]
    fn a_batched_call_counts_every_request_it_answered() {
        // 50 calls of 4 requests in 2 s: 200 decisions, 10 ms each, 100 decisions/s.
        assert_eq!(time_per_decision(2.0, 50, 4), 0.01);
        assert_eq!(1.0 / time_per_decision(2.0, 50, 4), 100.0);
        // The same calls counted as one request each: 40 ms per decision.
        assert_eq!(time_per_decision(2.0, 50, 1), 0.04);
        assert!(time_per_decision(2.0, 0, 4).is_nan());
    }
}
