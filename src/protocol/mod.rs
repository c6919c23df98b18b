//! Measurement: balanced schedules, warm-up, timed blocks over the full call boundary and
//! per-call stability. Owns every timer; depends on the `Backend` trait, never on a concrete
//! backend. Nothing here prints: observers receive records between blocks.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::Backend;
use crate::laya::decode::AnswerValue;
use crate::laya::host::{CallOptions, Host, HostError, StateResult};

/// One arm under test: a name, its backend, and the host packed for that backend's shapes.
pub struct Arm<'t> {
    /// User-given name (`A`, `ane`, `f32`).
    pub name: String,
    /// The spec it was built from.
    pub spec: String,
    /// The engine.
    pub backend: Box<dyn Backend>,
    /// The shared host path for this backend's shapes.
    pub host: Host<'t>,
}

/// The requests a run cycles through, in a fixed order.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Name for reports (`invoice`, a file path).
    pub name: String,
    /// (state, questions, per-call options) in cycle order.
    pub requests: Vec<(Value, Value, CallOptions)>,
}

/// When a block ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BlockLimit {
    /// Saturated for this long (the call that crosses the limit completes and counts).
    Duration(Duration),
    /// Exactly this many calls.
    Calls(u64),
}

/// The run's schedule parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Balanced cycles (each visits the arms in order, then in reverse).
    pub cycles: usize,
    /// Block length.
    pub block: BlockLimit,
    /// Warm-up calls per arm, outside every measured interval.
    pub warmup_calls: usize,
}

/// Block order: per cycle the arms in order, then reversed (A B C C B A). Returns
/// `(cycle, arm index)` pairs.
pub fn balanced_order(arms: usize, cycles: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(arms * cycles * 2);
    for c in 0..cycles {
        out.extend((0..arms).map(|a| (c, a)));
        out.extend((0..arms).rev().map(|a| (c, a)));
    }
    out
}

/// A monotonic clock with a fixed origin; all raw timestamps are ns since the origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self { origin: Instant::now() }
    }

    /// A clock with a given origin (shared with a sampler thread).
    pub fn with_origin(origin: Instant) -> Self {
        Self { origin }
    }

    /// The origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// ns since the origin of an instant.
    #[inline]
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }
}

/// One timed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRecord {
    /// Index of the block.
    pub block: u32,
    /// Index of the request in the workload.
    pub state: u32,
    /// Start, ns since the clock origin.
    pub start_ns: u64,
    /// Duration over the full boundary, ns.
    pub duration_ns: u64,
    /// Result equal to the arm's warm-up result for this request.
    pub stable: bool,
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
    /// The reference result per request (its last warm-up call).
    pub results: Vec<StateResult>,
}

/// Live progress, delivered at most every 200 ms and at block ends.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Block index.
    pub block: usize,
    /// Total blocks.
    pub blocks: usize,
    /// Cycle.
    pub cycle: usize,
    /// Arm index.
    pub arm: usize,
    /// Calls so far in this block.
    pub calls: u64,
    /// Seconds so far in this block.
    pub elapsed_s: f64,
}

/// Receives everything a run measures, outside the timed intervals.
pub trait Observer {
    /// Warm-up of one arm finished.
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> std::io::Result<()>;
    /// A block finished; `unstable` holds (call index in `calls`, its result) for unstable calls.
    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> std::io::Result<()>;
    /// A call failed; the run stops after this.
    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> std::io::Result<()>;
    /// Live progress (cheap; called from the run loop between calls at most every 200 ms).
    fn progress(&mut self, _arms: &[Arm<'_>], _p: &Progress) {}
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A call failed (during warm-up or a block); what was measured before is kept.
    #[error("arm `{arm}` failed during {phase}: {error}")]
    Call { arm: String, phase: String, error: HostError },
    /// The raw record could not be written.
    #[error("cannot write the raw record: {0}")]
    Io(#[from] std::io::Error),
    /// The plan cannot run.
    #[error("{0}")]
    Plan(String),
}

/// What a completed run measured, per arm.
#[derive(Debug, Clone, Default)]
pub struct RunTotals {
    /// Per arm: every call's duration, ns.
    pub durations_ns: Vec<Vec<u64>>,
    /// Per arm: Σ block durations, ns.
    pub block_ns: Vec<u64>,
    /// Per arm: unstable calls.
    pub unstable: Vec<u64>,
    /// Per arm: warm-up result per request.
    pub warmup: Vec<Vec<StateResult>>,
    /// Block records in order.
    pub blocks: Vec<BlockRecord>,
}

fn call(arm: &mut Arm<'_>, req: &(Value, Value, CallOptions)) -> Result<StateResult, HostError> {
    arm.host.predict(arm.backend.as_mut(), &req.0, &req.1, &req.2, None)
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
    if arms.is_empty() || workload.requests.is_empty() || plan.cycles == 0 {
        return Err(RunError::Plan("a run needs at least one arm, one request and one cycle".into()));
    }
    run_order(arms, workload, plan, &balanced_order(arms.len(), plan.cycles), clock, observer)
}

/// Like [`run`], but with an explicit block order of `(cycle, arm index)` pairs instead of the
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
    if arms.is_empty() || workload.requests.is_empty() || order.is_empty() {
        return Err(RunError::Plan("a run needs at least one arm, one request and one block".into()));
    }
    if let Some(&(_, a)) = order.iter().find(|&&(_, a)| a >= arms.len()) {
        return Err(RunError::Plan(format!(
            "the block order names arm {a}, but the run has {} arms",
            arms.len()
        )));
    }
    let n = workload.requests.len();
    let mut totals = RunTotals {
        durations_ns: vec![Vec::new(); arms.len()],
        block_ns: vec![0; arms.len()],
        unstable: vec![0; arms.len()],
        ..RunTotals::default()
    };
    for a in 0..arms.len() {
        let start = Instant::now();
        let calls = plan.warmup_calls.max(n);
        let mut results: Vec<Option<StateResult>> = vec![None; n];
        for i in 0..calls {
            match call(&mut arms[a], &workload.requests[i % n]) {
                Ok(r) => results[i % n] = Some(r),
                Err(error) => {
                    observer.failure(arms, None, a, &error)?;
                    return Err(RunError::Call { arm: arms[a].name.clone(), phase: "warm-up".into(), error });
                }
            }
        }
        let rec = WarmupRecord {
            arm: a,
            calls: calls as u64,
            start_ns: clock.ns(start),
            end_ns: clock.ns(Instant::now()),
            results: results.into_iter().flatten().collect(),
        };
        observer.warmup(arms, &rec)?;
        totals.warmup.push(rec.results);
    }
    let capacity = match plan.block {
        BlockLimit::Calls(k) => k as usize,
        BlockLimit::Duration(_) => 4096,
    };
    let mut calls: Vec<CallRecord> = Vec::with_capacity(capacity);
    let mut unstable: Vec<(usize, StateResult)> = Vec::new();
    let mut next_state = vec![0usize; arms.len()];
    for (index, &(cycle, a)) in order.iter().enumerate() {
        calls.clear();
        unstable.clear();
        let mut progress_at = Instant::now() + Duration::from_millis(200);
        let block_start = Instant::now();
        let mut now = block_start;
        loop {
            match plan.block {
                BlockLimit::Calls(k) if calls.len() as u64 >= k => break,
                BlockLimit::Duration(d) if now.duration_since(block_start) >= d => break,
                _ => {}
            }
            let s = next_state[a];
            next_state[a] = (s + 1) % n;
            let t0 = Instant::now();
            let out = call(&mut arms[a], &workload.requests[s]);
            let t1 = Instant::now();
            now = t1;
            let result = match out {
                Ok(r) => r,
                Err(error) => {
                    let rec = block_record(index, cycle, a, clock, block_start, now, &calls, &unstable);
                    observer.block(arms, &rec, &calls, &unstable)?;
                    observer.failure(arms, Some(index as u32), a, &error)?;
                    return Err(RunError::Call {
                        arm: arms[a].name.clone(),
                        phase: format!("block {index} (cycle {cycle})"),
                        error,
                    });
                }
            };
            let stable = result == totals.warmup[a][s];
            if !stable {
                unstable.push((calls.len(), result));
            }
            calls.push(CallRecord {
                block: index as u32,
                state: s as u32,
                start_ns: clock.ns(t0),
                duration_ns: t1.duration_since(t0).as_nanos() as u64,
                stable,
            });
            if now >= progress_at {
                progress_at = now + Duration::from_millis(200);
                observer.progress(
                    arms,
                    &Progress {
                        block: index,
                        blocks: order.len(),
                        cycle,
                        arm: a,
                        calls: calls.len() as u64,
                        elapsed_s: now.duration_since(block_start).as_secs_f64(),
                    },
                );
            }
        }
        let rec = block_record(index, cycle, a, clock, block_start, now, &calls, &unstable);
        observer.block(arms, &rec, &calls, &unstable)?;
        totals.block_ns[a] += rec.end_ns - rec.start_ns;
        totals.unstable[a] += rec.unstable_calls;
        totals.durations_ns[a].extend(calls.iter().map(|c| c.duration_ns));
        totals.blocks.push(rec);
    }
    Ok(totals)
}

#[allow(clippy::too_many_arguments)]
fn block_record(
    index: usize,
    cycle: usize,
    arm: usize,
    clock: &Clock,
    start: Instant,
    end: Instant,
    calls: &[CallRecord],
    unstable: &[(usize, StateResult)],
) -> BlockRecord {
    BlockRecord {
        index: index as u32,
        cycle: cycle as u32,
        arm,
        start_ns: clock.ns(start),
        end_ns: clock.ns(end),
        calls: calls.len() as u64,
        unstable_calls: unstable.len() as u64,
    }
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

#[cfg(test)]
mod tests;
