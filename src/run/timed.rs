//! The timed loop: warm-up, timed blocks over the full call boundary, per-call stability,
//! idle windows, paced (equal-load) blocks and the sampler thread's lifetime. Owns every timer;
//! depends on the `Backend` and `Sensor` traits, never on a concrete backend or sensor.
//! Nothing here prints: observers receive records between blocks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::laya::decode::AnswerValue;
use crate::laya::host::{CallOptions, HostError, StateResult};
use crate::stats::steal::{StealTicks, StealWatch};

use super::arm::{Answered, Arm};
use super::observe::{Observer, Progress};
use super::sampling::{self, Sampling};
use super::schedule::{balanced_order, paced_overrun_limit, whole_cycles, BlockLimit, Clock, Pace, Plan};
use super::workload::{batch_mismatch, Workload};

/// One timed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRecord {
    /// Index of the block.
    pub block: u32,
    /// Index of the request in the workload (with a batch above 1: the first of the
    /// call's requests, `state`, `state + 1`, ... modulo the workload's length).
    pub state: u32,
    /// Requests the call answered (the arm's [`Arm::requests_per_call`]: [`Plan::batch`], or
    /// its own in a sweep).
    pub requests: u32,
    /// Start, ns since the clock origin.
    pub start_ns: u64,
    /// Duration over the full boundary, ns (for a reference arm: the round trip to its worker).
    pub duration_ns: u64,
    /// A reference arm's runtime's own duration, timed in its worker, ns; `None` for our arms.
    pub runtime_ns: Option<u64>,
    /// Result equal to the arm's warm-up result for this request (for a batched call: every
    /// request's result equal to its own warm-up result).
    pub stable: bool,
    /// Paced mode: when the call was due to start, ns since the origin.
    pub scheduled_ns: Option<u64>,
    /// Paced mode: the call ended after the next call was due (it was still made and counted).
    pub missed_deadline: bool,
}

/// One block of calls on one arm.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRecord {
    /// Index in the run.
    pub index: u32,
    /// Balanced cycle.
    pub cycle: u32,
    /// Arm index.
    pub arm: usize,
    /// Start and end, ns since the origin (the end is read right after the last call).
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Calls completed.
    pub calls: u64,
    /// Calls whose result differed from warm-up.
    pub unstable_calls: u64,
    /// Paced mode: calls that missed their deadline.
    pub missed_deadlines: u64,
    /// Paced mode: calls the block was scheduled to make.
    pub scheduled_calls: Option<u64>,
    /// The block was cut short (interrupt, sensor stopped or a failed call).
    pub ended_early: bool,
    /// CPU time the hypervisor gave to other guests while the block ran, read at its two ends
    /// (outside every call); `None` where the OS keeps no such counter.
    pub steal: Option<StealTicks>,
}

/// One idle window: the benchmark thread slept, no calls were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleRecord {
    /// 0 before the first block, `i + 1` after block `i`.
    pub index: u32,
    /// Start, ns since the origin.
    pub start_ns: u64,
    /// End, ns since the origin.
    pub end_ns: u64,
    /// The window was cut short (interrupt or sensor stopped).
    pub ended_early: bool,
}

/// What warm-up produced for one arm.
#[derive(Debug, Clone)]
pub struct WarmupRecord {
    /// Arm index.
    pub arm: usize,
    /// Calls made.
    pub calls: u64,
    /// Start and end, ns since the origin.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// The reference result per request (its last warm-up call; at a batch above 1,
    /// answered batched, like the blocks' calls).
    pub results: Vec<StateResult>,
    /// At a batch above 1 ([`Arm::requests_per_call`]): every request answered once alone, one request per call
    /// and one row per forward (what a run at batch 1 answers), after the batched warm-up and
    /// outside every measured interval; empty at batch 1.
    pub unbatched: Vec<StateResult>,
}

/// Where in a run a call failed or a run stopped. Its `Display` is the text errors, footers
/// and reports use: `warm-up`, `block N (cycle C)`, `idle window N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The warm-up, outside every measured interval.
    Warmup,
    /// A timed block.
    Block {
        /// Block index in the run's order.
        index: usize,
        /// Its balanced cycle.
        cycle: usize,
    },
    /// An idle window (0 before the first block, `i + 1` after block `i`).
    Idle {
        /// Window index.
        index: usize,
    },
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Phase::Warmup => f.write_str("warm-up"),
            Phase::Block { index, cycle } => write!(f, "block {index} (cycle {cycle})"),
            Phase::Idle { index } => write!(f, "idle window {index}"),
        }
    }
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A call failed (during warm-up or a block); what was measured before is kept.
    #[error("arm `{arm}` failed during {phase}: {error}")]
    Call {
        /// Arm name.
        arm: String,
        /// The warm-up or a block.
        phase: Phase,
        /// The failure.
        error: HostError,
    },
    /// The raw record could not be written.
    #[error("cannot write the raw record: {0}")]
    Io(#[from] std::io::Error),
    /// The plan cannot run.
    #[error("{0}")]
    Plan(String),
    /// The sampler could not start or did not stop cleanly.
    #[error("power sampler: {0}")]
    Sampler(#[from] crate::power::sampler::SamplerError),
    /// A watcher of the run could not do its part (the ready file could not be written).
    #[error(transparent)]
    Observer(crate::error::Error),
}

/// How a run ended.
#[derive(Debug)]
pub enum RunEnd {
    /// Every block (and idle window) ran.
    Completed,
    /// The stop flag was raised (Ctrl-C); the run stopped between calls.
    Interrupted {
        /// Where it stopped (`block 3 (cycle 1)`, `idle window 2`, ...).
        during: String,
    },
    /// The sensor stopped for good (or never produced a reading), so the rest was not run.
    SensorStopped {
        /// Where it stopped.
        during: String,
    },
    /// A call failed.
    CallFailed {
        /// Arm name.
        arm: String,
        /// The warm-up or a block.
        phase: Phase,
        /// The failure.
        error: HostError,
    },
}

/// Everything a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// What was measured.
    pub totals: RunTotals,
    /// How it ended.
    pub end: RunEnd,
    /// The sampler's report (when a sensor was sampled and stopped cleanly).
    pub sampler: Option<crate::power::sampler::SamplerReport>,
    /// Why `sampler` is `None` although a sensor was sampled.
    pub sampler_error: Option<String>,
    /// The span the samples must cover, ns since the origin: from the start of the first idle
    /// window (or block) to the end of the last one that ran; `None` when nothing ran.
    pub span_ns: Option<(u64, u64)>,
}

/// Run-time controls that are not part of the plan.
#[derive(Default)]
pub struct Controls<'c> {
    /// Raised (e.g. by a SIGINT handler) to stop cleanly between calls.
    pub stop: Option<&'c AtomicBool>,
    /// Raised (by a second signal) to skip what takes time once stopping: the wait for the
    /// sensor's reading after the end. The record is still closed.
    pub hurry: Option<&'c AtomicBool>,
    /// Raised when the run cannot go on (the raw writer failed): it stops between calls as on
    /// `stop`, and the caller says why.
    pub failed: Option<&'c AtomicBool>,
    /// A sensor to sample from before the first idle window to after the last.
    pub sampling: Option<Sampling>,
    /// An explicit block order of `(cycle, arm index)` pairs instead of the balanced one
    /// (`plan.cycles` is then not read); `&[(0, 0)]` is one block on the first arm.
    pub order: Option<&'c [(usize, usize)]>,
}

/// What a completed run measured, per arm.
#[derive(Debug, Clone, Default)]
pub struct RunTotals {
    /// Per arm: every call's duration, ns.
    pub durations_ns: Vec<Vec<u64>>,
    /// Per arm: Σ block durations, ns.
    pub block_ns: Vec<u64>,
    /// Per arm: every call's runtime duration, ns (reference arms; empty for ours).
    pub runtime_ns: Vec<Vec<u64>>,
    /// Per arm: unstable calls.
    pub unstable: Vec<u64>,
    /// Per arm: warm-up result per request.
    pub warmup: Vec<Vec<StateResult>>,
    /// Per arm: each request answered alone after a batched warm-up ([`WarmupRecord::unbatched`];
    /// empty at batch 1).
    pub unbatched: Vec<Vec<StateResult>>,
    /// Block records in order.
    pub blocks: Vec<BlockRecord>,
    /// Per arm: paced calls that missed their deadline.
    pub missed_deadlines: Vec<u64>,
    /// Idle windows in order.
    pub idles: Vec<IdleRecord>,
}

#[cfg(test)]
impl BlockRecord {
    /// A block of `calls` stable calls, not cut short, paced or stolen from (tests).
    pub(crate) fn whole(index: u32, cycle: u32, arm: usize, calls: u64, start_ns: u64, end_ns: u64) -> Self {
        BlockRecord {
            index,
            cycle,
            arm,
            start_ns,
            end_ns,
            calls,
            unstable_calls: 0,
            missed_deadlines: 0,
            scheduled_calls: None,
            ended_early: false,
            steal: None,
        }
    }
}

impl RunTotals {
    /// The whole balanced cycles these totals hold from the start ([`whole_cycles`] over their
    /// blocks and, with `idle_windows`, their idle windows), with the totals of just those
    /// cycles ([`Self::leading_cycles`]); `None` when no cycle finished.
    pub fn whole_cycles(
        &self,
        arms: usize,
        planned: usize,
        idle_windows: bool,
    ) -> Option<(usize, RunTotals)> {
        let blocks: Vec<(u32, bool)> = self.blocks.iter().map(|b| (b.index, b.ended_early)).collect();
        let idles: Vec<(u32, bool)> = self.idles.iter().map(|i| (i.index, i.ended_early)).collect();
        let k = whole_cycles(arms, planned, &blocks, idle_windows.then_some(&idles[..]));
        (k > 0).then(|| (k, self.leading_cycles(arms, k)))
    }

    /// The unstable calls these totals hold that `part` (a part of them, such as
    /// [`Self::leading_cycles`]) leaves out.
    pub fn unstable_left_out(&self, part: &RunTotals) -> u64 {
        self.unstable.iter().sum::<u64>().saturating_sub(part.unstable.iter().sum::<u64>())
    }

    /// The totals of a run's first `cycles` whole balanced cycles: its first `cycles × 2 × arms`
    /// blocks, each arm's calls (and runtime durations) in them, and the block time, unstable
    /// calls and missed deadlines they add up to; warm-ups as they were. What an interrupted run's
    /// figures are taken from, so that every arm weighs the same, as in a plan of that many cycles
    /// (the blocks of the cut cycle ran in an order that favours the arms it reached).
    pub fn leading_cycles(&self, arms: usize, cycles: usize) -> RunTotals {
        let n = cycles * 2 * arms;
        let mut out = RunTotals {
            durations_ns: vec![Vec::new(); arms],
            block_ns: vec![0; arms],
            runtime_ns: vec![Vec::new(); arms],
            unstable: vec![0; arms],
            warmup: self.warmup.clone(),
            unbatched: self.unbatched.clone(),
            blocks: Vec::new(),
            missed_deadlines: vec![0; arms],
            idles: self.idles.iter().filter(|i| (i.index as usize) <= n).cloned().collect(),
        };
        // Where each arm's next block starts in its call lists.
        let mut first = vec![0usize; arms];
        for b in &self.blocks {
            let a = b.arm;
            let Some(calls) = self.durations_ns.get(a) else { continue };
            let (start, end) = (first[a], (first[a] + b.calls as usize).min(calls.len()));
            first[a] = end;
            if (b.index as usize) >= n {
                continue;
            }
            out.durations_ns[a].extend_from_slice(&calls[start..end]);
            if let Some(r) = self.runtime_ns.get(a).filter(|r| r.len() == calls.len()) {
                out.runtime_ns[a].extend_from_slice(&r[start..end]);
            }
            out.block_ns[a] += b.end_ns - b.start_ns;
            out.unstable[a] += b.unstable_calls;
            out.missed_deadlines[a] += b.missed_deadlines;
            out.blocks.push(b.clone());
        }
        out
    }
}

fn call(arm: &mut Arm<'_>, req: &(Value, Value, CallOptions)) -> Result<Answered, HostError> {
    arm.answer(&req.0, &req.1, &req.2)
}

/// The requests of one batched call: their states, in order, and the options they share
/// (`states_per_batch` cleared, so every row goes into the one packed forward).
struct Group {
    states: Vec<Value>,
    options: CallOptions,
}

/// What one call returned: one request's answer, or a batched call's results in order.
enum Served {
    One(Answered),
    Many(Vec<StateResult>),
}

/// The batched call that starts at request `s`: its requests' rows in one
/// `Host::predict_batch` (the questions are request `s`'s, shared by all of them).
fn call_group(arm: &mut Arm<'_>, req: &(Value, Value, CallOptions), g: &Group) -> Result<Served, HostError> {
    let results = arm.host.predict_batch(arm.backend.as_mut(), &g.states, &req.1, &g.options, None)?;
    if results.len() != g.states.len() {
        return Err(HostError::Shape(format!(
            "a batched call of {} requests returned {} results",
            g.states.len(),
            results.len()
        )));
    }
    Ok(Served::Many(results))
}

/// Batched calls of `batch` requests from request 0 that answer each of `n` requests at
/// least once: the fewest a warm-up makes.
pub fn calls_to_cover(n: usize, batch: usize) -> usize {
    n.div_ceil(batch.max(1))
}

/// Run the plan: warm-up every arm, then the balanced blocks. Call records are kept in memory
/// during a block and handed to the observer when it ends, so no I/O or serialization happens
/// inside a timed interval.
pub fn run(
    arms: &mut [Arm<'_>],
    workload: &Workload,
    plan: &Plan,
    clock: &Clock,
    observer: &mut dyn Observer,
) -> Result<RunTotals, RunError> {
    run_controlled(arms, workload, plan, clock, observer, Controls::default())
}

/// Like [`run`], with an explicit block order of `(cycle, arm index)` pairs instead of the
/// balanced one; `plan.cycles` is not read. `&[(0, 0)]` is one measured block on the first arm
/// after its warm-up (what `trace run` measures).
pub fn run_order(
    arms: &mut [Arm<'_>],
    workload: &Workload,
    plan: &Plan,
    order: &[(usize, usize)],
    clock: &Clock,
    observer: &mut dyn Observer,
) -> Result<RunTotals, RunError> {
    run_controlled(
        arms,
        workload,
        plan,
        clock,
        observer,
        Controls { order: Some(order), ..Controls::default() },
    )
}

fn run_controlled(
    arms: &mut [Arm<'_>],
    workload: &Workload,
    plan: &Plan,
    clock: &Clock,
    observer: &mut dyn Observer,
    controls: Controls<'_>,
) -> Result<RunTotals, RunError> {
    let out = run_with(arms, workload, plan, clock, observer, controls)?;
    match out.end {
        RunEnd::Completed => Ok(out.totals),
        RunEnd::CallFailed { arm, phase, error } => Err(RunError::Call { arm, phase, error }),
        RunEnd::Interrupted { during } | RunEnd::SensorStopped { during } => {
            Err(RunError::Plan(format!("the run stopped during {during}")))
        }
    }
}

/// Why the benchmark thread stopped before the plan was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halt {
    Interrupt,
    Sensor,
}

impl Halt {
    fn end(self, during: String) -> RunEnd {
        match self {
            Halt::Interrupt => RunEnd::Interrupted { during },
            Halt::Sensor => RunEnd::SensorStopped { during },
        }
    }
}

enum BlockEnd {
    Done,
    Halted(Halt),
    Failed(HostError),
}

struct Runner<'r, 'a, 't> {
    arms: &'r mut [Arm<'t>],
    workload: &'r Workload,
    plan: &'r Plan,
    clock: &'r Clock,
    observer: &'r mut dyn Observer,
    stop: Option<&'r AtomicBool>,
    /// [`Controls::failed`].
    failed: Option<&'r AtomicBool>,
    tap: Option<&'a sampling::Tap>,
    totals: RunTotals,
    calls: Vec<CallRecord>,
    unstable: Vec<(usize, StateResult)>,
    /// Calls of the block in progress whose result differed from warm-up.
    unstable_calls: u64,
    /// The steal counters at the start of the block in progress.
    block_steal: StealWatch,
    next_state: Vec<usize>,
    blocks: usize,
    /// Per arm: its requests per call ([`Arm::requests_per_call`], at least 1).
    batch: Vec<usize>,
    /// Per arm at batch above 1: the batched call starting at request `s`, for every `s`
    /// (built before anything is timed, so no call clones a state); empty at batch 1.
    groups: Vec<Vec<Group>>,
}

impl Runner<'_, '_, '_> {
    /// Whether to stop now: two relaxed atomic loads, cheap enough to run between calls.
    #[inline]
    fn halt(&self) -> Option<Halt> {
        if self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
            || self.failed.is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return Some(Halt::Interrupt);
        }
        if self.tap.is_some_and(|t| t.stopped()) {
            return Some(Halt::Sensor);
        }
        None
    }

    /// Sleep until `deadline`, waking every 20 ms to check whether to stop.
    fn sleep_until(&self, deadline: Instant) -> Option<Halt> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            if let Some(h) = self.halt() {
                return Some(h);
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
        }
    }

    /// Call `s` of arm `a`: request `s` alone, or at batch above 1 the group starting there.
    #[inline]
    fn serve(&mut self, a: usize, s: usize) -> Result<Served, HostError> {
        let workload = self.workload;
        let req = &workload.requests[s];
        if self.batch[a] == 1 {
            call(&mut self.arms[a], req).map(Served::One)
        } else {
            call_group(&mut self.arms[a], req, &self.groups[a][s])
        }
    }

    fn warmup(&mut self) -> Result<Option<RunEnd>, RunError> {
        let n = self.workload.requests.len();
        for a in 0..self.arms.len() {
            let start = Instant::now();
            let calls = self.plan.warmup_calls.max(calls_to_cover(n, self.batch[a]));
            let mut results: Vec<Option<StateResult>> = vec![None; n];
            let mut unbatched = Vec::new();
            let failed = |r: &mut Self, error: HostError| -> Result<Option<RunEnd>, RunError> {
                r.observer.failure(r.arms, None, a, &error)?;
                let arm = r.arms[a].name.clone();
                Ok(Some(RunEnd::CallFailed { arm, phase: Phase::Warmup, error }))
            };
            for i in 0..calls {
                if let Some(h) = self.halt() {
                    return Ok(Some(h.end(format!("warm-up of arm `{}`", self.arms[a].name))));
                }
                let s = (i * self.batch[a]) % n;
                match self.serve(a, s) {
                    Ok(Served::One(r)) => results[s] = Some(r.result),
                    Ok(Served::Many(rs)) => {
                        for (j, r) in rs.into_iter().enumerate() {
                            results[(s + j) % n] = Some(r);
                        }
                    }
                    Err(error) => return failed(self, error),
                }
            }
            if self.batch[a] > 1 {
                // Every request once more, alone and one row per forward (as a run at batch 1
                // answers it): whether batching changed any result is reported, not assumed.
                let arm = &mut self.arms[a];
                let single = arm.host.with_batch_size(1);
                let answered: Result<Vec<StateResult>, HostError> = self
                    .workload
                    .requests
                    .iter()
                    .map(|(state, questions, options)| {
                        single.predict(arm.backend.as_mut(), state, questions, options, None)
                    })
                    .collect();
                match answered {
                    Ok(rs) => unbatched = rs,
                    Err(error) => return failed(self, error),
                }
            }
            let rec = WarmupRecord {
                arm: a,
                calls: calls as u64,
                start_ns: self.clock.ns(start),
                end_ns: self.clock.ns(Instant::now()),
                results: results.into_iter().flatten().collect(),
                unbatched,
            };
            self.observer.warmup(self.arms, &rec)?;
            self.totals.warmup.push(rec.results);
            self.totals.unbatched.push(rec.unbatched);
        }
        Ok(None)
    }

    fn idle(&mut self, index: usize, length: Duration) -> Result<(IdleRecord, Option<Halt>), RunError> {
        let start = Instant::now();
        let halted = self.sleep_until(start + length);
        let rec = IdleRecord {
            index: index as u32,
            start_ns: self.clock.ns(start),
            end_ns: self.clock.ns(Instant::now()),
            ended_early: halted.is_some(),
        };
        self.observer.idle(self.arms, &rec)?;
        self.totals.idles.push(rec);
        Ok((rec, halted))
    }

    fn block(&mut self, index: usize, cycle: usize, a: usize) -> Result<(BlockRecord, BlockEnd), RunError> {
        let n = self.workload.requests.len();
        self.calls.clear();
        self.unstable.clear();
        self.unstable_calls = 0;
        let paced = self.plan.pace.map(|p| (p, p.calls_per_block(self.plan.block)));
        let mut progress_at = Instant::now() + Duration::from_millis(200);
        self.block_steal = StealWatch::start();
        let block_start = Instant::now();
        let mut now = block_start;
        let mut k = 0u64;
        let mut missed = 0u64;
        let mut halted = None;
        loop {
            match (paced, self.plan.block) {
                (Some((_, calls)), _) if k >= calls => break,
                // A schedule the arm cannot keep ends by time all the same: past
                // [`paced_overrun_limit`] the calls not yet made are left unmade (the block
                // record keeps `scheduled_calls` beside the calls made), so an impossible
                // --rate never leaves a block running for ever.
                (Some(_), BlockLimit::Duration(d))
                    if now.duration_since(block_start) >= paced_overrun_limit(d) =>
                {
                    break
                }
                (None, BlockLimit::Calls(limit)) if k >= limit => break,
                (None, BlockLimit::Duration(d)) if now.duration_since(block_start) >= d => break,
                _ => {}
            }
            if let Some(h) = self.halt() {
                halted = Some(h);
                break;
            }
            let due = match paced {
                Some((p, _)) => {
                    let due = block_start + p.offset(k);
                    if let Some(h) = self.sleep_until(due) {
                        halted = Some(h);
                        break;
                    }
                    Some(due)
                }
                None => None,
            };
            let s = self.next_state[a];
            self.next_state[a] = (s + self.batch[a]) % n;
            let t0 = Instant::now();
            let out = self.serve(a, s);
            let t1 = Instant::now();
            now = t1;
            let served = match out {
                Ok(served) => served,
                Err(error) => {
                    let rec = self.block_record(index, cycle, a, block_start, now, missed, paced, true);
                    self.observer.block(self.arms, &rec, &self.calls, &self.unstable)?;
                    self.observer.failure(self.arms, Some(index as u32), a, &error)?;
                    return Ok((rec, BlockEnd::Failed(error)));
                }
            };
            let warm = &self.totals.warmup[a];
            let (stable, runtime_ns) = match served {
                Served::One(r) => {
                    let stable = r.result == warm[s];
                    if !stable {
                        self.unstable.push((self.calls.len(), r.result));
                    }
                    (stable, r.runtime_ns)
                }
                Served::Many(results) => {
                    // Every request against its own warm-up result.
                    let stable = results.iter().enumerate().all(|(j, r)| *r == warm[(s + j) % n]);
                    if !stable {
                        let at = self.calls.len();
                        self.unstable.extend(results.into_iter().map(|r| (at, r)));
                    }
                    (stable, None)
                }
            };
            self.unstable_calls += u64::from(!stable);
            // A paced call misses its deadline when it ends after the next call was due.
            let missed_deadline = match paced {
                Some((p, _)) => t1 > block_start + p.offset(k + 1),
                None => false,
            };
            missed += u64::from(missed_deadline);
            self.calls.push(CallRecord {
                block: index as u32,
                state: s as u32,
                requests: self.batch[a] as u32,
                start_ns: self.clock.ns(t0),
                duration_ns: t1.duration_since(t0).as_nanos() as u64,
                runtime_ns,
                stable,
                scheduled_ns: due.map(|d| self.clock.ns(d)),
                missed_deadline,
            });
            k += 1;
            if now >= progress_at {
                progress_at = now + Duration::from_millis(200);
                self.observer.progress(
                    self.arms,
                    &Progress {
                        block: index,
                        blocks: self.blocks,
                        cycle,
                        arm: a,
                        calls: self.calls.len() as u64,
                        elapsed_s: now.duration_since(block_start).as_secs_f64(),
                    },
                );
            }
        }
        if let (Some((p, calls)), None) = (paced, halted) {
            // A paced block lasts until its schedule ends, so every arm's block spans the same
            // work over (at least) the same time.
            halted = self.sleep_until(block_start + p.offset(calls));
            now = Instant::now();
        }
        let rec = self.block_record(index, cycle, a, block_start, now, missed, paced, halted.is_some());
        self.observer.block(self.arms, &rec, &self.calls, &self.unstable)?;
        self.totals.block_ns[a] += rec.end_ns - rec.start_ns;
        self.totals.unstable[a] += rec.unstable_calls;
        self.totals.missed_deadlines[a] += rec.missed_deadlines;
        self.totals.durations_ns[a].extend(self.calls.iter().map(|c| c.duration_ns));
        self.totals.runtime_ns[a].extend(self.calls.iter().filter_map(|c| c.runtime_ns));
        self.totals.blocks.push(rec.clone());
        Ok((rec, halted.map_or(BlockEnd::Done, BlockEnd::Halted)))
    }

    #[allow(clippy::too_many_arguments)]
    fn block_record(
        &self,
        index: usize,
        cycle: usize,
        arm: usize,
        start: Instant,
        end: Instant,
        missed_deadlines: u64,
        paced: Option<(Pace, u64)>,
        ended_early: bool,
    ) -> BlockRecord {
        BlockRecord {
            index: index as u32,
            cycle: cycle as u32,
            arm,
            start_ns: self.clock.ns(start),
            end_ns: self.clock.ns(end),
            calls: self.calls.len() as u64,
            unstable_calls: self.unstable_calls,
            missed_deadlines,
            scheduled_calls: paced.map(|(_, n)| n),
            ended_early,
            steal: self.block_steal.stop(),
        }
    }
}

fn extend(span: &mut Option<(u64, u64)>, start_ns: u64, end_ns: u64) {
    *span = Some(match *span {
        Some((s, _)) => (s, end_ns),
        None => (start_ns, end_ns),
    });
}

/// Run the plan with run-time controls: warm-up every arm (outside every measured interval);
/// then, with a sensor, start the sampler on the run's clock and wait for its first reading;
/// then an idle window (when the plan has one) before the first block, between blocks and
/// after the last; then wait for a reading after the end and stop the sampler.
///
/// The stop flag and the sensor's state are checked between calls and during idle sleeps; a
/// raised flag or a stopped sensor ends the run early with what was measured so far (the
/// block in progress is recorded as ended early). Call records reach the observer between
/// blocks; samples reach the sampling sink on the tap thread.
pub fn run_with(
    arms: &mut [Arm<'_>],
    workload: &Workload,
    plan: &Plan,
    clock: &Clock,
    observer: &mut dyn Observer,
    controls: Controls<'_>,
) -> Result<RunOutcome, RunError> {
    let order = match controls.order {
        Some(order) => order.to_vec(),
        None => balanced_order(arms.len(), plan.cycles),
    };
    if arms.is_empty() || workload.requests.is_empty() || order.is_empty() {
        return Err(RunError::Plan("a run needs at least one arm, one request and one block".into()));
    }
    if let Some(&(_, a)) = order.iter().find(|&&(_, a)| a >= arms.len()) {
        return Err(RunError::Plan(format!(
            "the block order names arm {a}, but the run has {} arms",
            arms.len()
        )));
    }
    if let Some(p) = plan.pace {
        if !(p.rate_hz.is_finite() && p.rate_hz > 0.0) {
            return Err(RunError::Plan(format!(
                "the pacing rate must be positive and finite, got {}",
                p.rate_hz
            )));
        }
    }
    let batch: Vec<usize> = arms.iter().map(|a| a.requests_per_call(plan.batch)).collect();
    if batch.contains(&0) {
        return Err(RunError::Plan(
            "a call answers at least one request: the batch must be at least 1".into(),
        ));
    }
    if batch.iter().any(|&b| b > 1) {
        if let Some(k) = batch_mismatch(workload) {
            return Err(RunError::Plan(format!(
                "request {k} of workload `{}` asks other questions or options than request 0: one batched call asks one set of questions, so this workload runs at batch 1 only",
                workload.name
            )));
        }
    }
    let n = workload.requests.len();
    let mut groups = Vec::with_capacity(arms.len());
    for (arm, &b) in arms.iter_mut().zip(&batch) {
        if b == 1 {
            groups.push(Vec::new());
            continue;
        }
        if arm.backend.answers_requests().is_some() {
            return Err(RunError::Plan(format!(
                "arm `{}` ({}) answers one request per call in its worker, so it cannot answer a batch of {b}",
                arm.name, arm.spec
            )));
        }
        let group = |s: usize| {
            let mut options = workload.requests[s].2.clone();
            options.states_per_batch = None;
            let states = (0..b).map(|j| workload.requests[(s + j) % n].0.clone()).collect();
            Group { states, options }
        };
        groups.push((0..n).map(group).collect());
    }
    let capacity = match (plan.pace, plan.block) {
        (Some(p), b) => p.calls_per_block(b).min(1 << 20) as usize,
        (None, BlockLimit::Calls(k)) => k.min(1 << 20) as usize,
        (None, BlockLimit::Duration(_)) => 4096,
    };
    let n_arms = arms.len();
    let mut r = Runner {
        arms,
        workload,
        plan,
        clock,
        observer,
        stop: controls.stop,
        failed: controls.failed,
        tap: None,
        totals: RunTotals {
            durations_ns: vec![Vec::new(); n_arms],
            block_ns: vec![0; n_arms],
            runtime_ns: vec![Vec::new(); n_arms],
            unstable: vec![0; n_arms],
            missed_deadlines: vec![0; n_arms],
            ..RunTotals::default()
        },
        calls: Vec::with_capacity(capacity),
        unstable: Vec::new(),
        unstable_calls: 0,
        block_steal: StealWatch::start(),
        next_state: vec![0; n_arms],
        blocks: order.len(),
        batch,
        groups,
    };
    let outcome = |totals, end, sampler: Option<Result<_, crate::power::sampler::SamplerError>>, span_ns| {
        let (sampler, sampler_error) = match sampler {
            Some(Ok(rep)) => (Some(rep), None),
            Some(Err(e)) => (None, Some(format!("{e}"))),
            None => (None, None),
        };
        Ok(RunOutcome { totals, end, sampler, sampler_error, span_ns })
    };
    if let Some(end) = r.warmup()? {
        return outcome(r.totals, end, None, None);
    }
    let controls_hurry = controls.hurry;
    let (tap, lead_timeout) = match controls.sampling {
        Some(s) => {
            let timeout = s.stream_timeout + Duration::from_secs(1);
            (Some(sampling::Tap::start(s, clock.origin())?), timeout)
        }
        None => (None, Duration::ZERO),
    };
    r.tap = tap.as_ref();
    let mut end = RunEnd::Completed;
    let mut span: Option<(u64, u64)> = None;
    if let Some(t) = r.tap {
        if !t.wait_for_reading(None, lead_timeout, r.stop) {
            let during = format!(
                "the wait for the sensor's first reading ({:.1} s at most)",
                lead_timeout.as_secs_f64()
            );
            end = r.halt().unwrap_or(Halt::Sensor).end(during);
        }
    }
    if matches!(end, RunEnd::Completed) {
        for (index, &(cycle, a)) in order.iter().enumerate() {
            if let Some(length) = plan.idle {
                let (rec, halted) = r.idle(index, length)?;
                extend(&mut span, rec.start_ns, rec.end_ns);
                if let Some(h) = halted {
                    end = h.end(Phase::Idle { index }.to_string());
                    break;
                }
            }
            let (rec, block_end) = r.block(index, cycle, a)?;
            extend(&mut span, rec.start_ns, rec.end_ns);
            match block_end {
                BlockEnd::Done => {}
                BlockEnd::Halted(h) => {
                    end = h.end(format!("block {index} (cycle {cycle}, arm `{}`)", r.arms[a].name));
                    break;
                }
                BlockEnd::Failed(error) => {
                    end = RunEnd::CallFailed {
                        arm: r.arms[a].name.clone(),
                        phase: Phase::Block { index, cycle },
                        error,
                    };
                    break;
                }
            }
        }
    }
    if matches!(end, RunEnd::Completed) {
        if let Some(length) = plan.idle {
            let index = order.len();
            let (rec, halted) = r.idle(index, length)?;
            extend(&mut span, rec.start_ns, rec.end_ns);
            if let Some(h) = halted {
                end = h.end(Phase::Idle { index }.to_string());
            }
        }
    }
    // A reading after the end, so the last window's end can be interpolated. If none comes,
    // the coverage rule rejects the run; nothing is made up here. An interrupted run waits too
    // (the stop flag is up, so it is not asked; at most the same timeout), or its own stop
    // would read as a sensor that ended before the last window.
    let wait_stop = match &end {
        RunEnd::Completed => Some(r.stop),
        RunEnd::Interrupted { .. } => Some(controls_hurry),
        RunEnd::SensorStopped { .. } | RunEnd::CallFailed { .. } => None,
    };
    if let (Some(t), Some((_, end_ns)), Some(stop)) = (r.tap, span, wait_stop) {
        t.wait_for_reading(Some(end_ns), lead_timeout, stop);
    }
    let totals = std::mem::take(&mut r.totals);
    drop(r);
    let sampler = tap.map(sampling::Tap::finish);
    outcome(totals, end, sampler, span)
}

/// The selected answer of every question, `qid=label` joined by `;` (for reports).
pub fn answer_label(r: &StateResult) -> String {
    let mut out = String::new();
    for (i, (qid, a)) in r.answers.iter().enumerate() {
        if i > 0 {
            out.push(';');
        }
        out.push_str(qid);
        out.push('=');
        out.push_str(&a.selected_label());
    }
    out
}

/// Every probability of a result in a fixed order (for cross-arm differences).
pub fn probabilities(r: &StateResult) -> Vec<f64> {
    let mut out = Vec::new();
    for (_, a) in &r.answers {
        match &a.value {
            AnswerValue::Choice { probabilities, .. } => out.extend(probabilities.iter().map(|(_, p)| *p)),
            AnswerValue::Score { probabilities, .. } => out.extend(probabilities.iter().copied()),
            AnswerValue::Noul { noul } => out.push(*noul),
        }
        out.push(a.act_probability);
    }
    out
}
