//! Who listens to a run: the [`Observer`] hooks the timed loop calls between calls and blocks,
//! never inside a timed interval, and [`Observers`], several of them told in order (the
//! recorder and the watchers of one run).

use crate::laya::host::{HostError, StateResult};

use super::arm::Arm;
use super::timed::{BlockRecord, CallRecord, IdleRecord, RunError, WarmupRecord};

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

/// Listens to a run: the recorder that writes it and the watchers that show it (a progress
/// bar, a ready file). The timed loop calls each hook between calls and blocks, never inside a
/// timed interval; every hook does nothing unless implemented. An error from a hook stops the
/// run between calls with that error. Samples are not a hook: they arrive on the sampler's tap
/// thread ([`super::Sampling::sink`]), never on the benchmark thread the observers run on.
pub trait Observer {
    /// The run's clock started at `started_unix_s` (the raw header's start), before warm-up;
    /// told by whoever starts the clock.
    fn started(&mut self, _started_unix_s: f64) {}
    /// Warm-up of arm `rec.arm` finished (every arm's when it is the last of `arms`).
    fn warmup(&mut self, _arms: &[Arm<'_>], _rec: &WarmupRecord) -> Result<(), RunError> {
        Ok(())
    }
    /// A block finished; `unstable` holds (call index in `calls`, its result) for unstable calls
    /// (a batched call that is unstable has one entry per request it answered, in order).
    fn block(
        &mut self,
        _arms: &[Arm<'_>],
        _rec: &BlockRecord,
        _calls: &[CallRecord],
        _unstable: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        Ok(())
    }
    /// A call failed; the run stops after this.
    fn failure(
        &mut self,
        _arms: &[Arm<'_>],
        _block: Option<u32>,
        _arm: usize,
        _error: &HostError,
    ) -> Result<(), RunError> {
        Ok(())
    }
    /// Live progress (cheap; called from the run loop between calls at most every 200 ms).
    fn progress(&mut self, _arms: &[Arm<'_>], _p: &Progress) {}
    /// An idle window finished.
    fn idle(&mut self, _arms: &[Arm<'_>], _rec: &IdleRecord) -> Result<(), RunError> {
        Ok(())
    }
}

/// Several observers of one run, told in order; the first error stops the fan-out (and the
/// run) there.
#[derive(Default)]
pub struct Observers<'o> {
    list: Vec<&'o mut dyn Observer>,
}

impl<'o> Observers<'o> {
    /// No observers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `observer` told after those already here.
    pub fn with(mut self, observer: &'o mut dyn Observer) -> Self {
        self.list.push(observer);
        self
    }
}

impl Observer for Observers<'_> {
    fn started(&mut self, started_unix_s: f64) {
        for o in &mut self.list {
            o.started(started_unix_s);
        }
    }

    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        self.list.iter_mut().try_for_each(|o| o.warmup(arms, rec))
    }

    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        self.list.iter_mut().try_for_each(|o| o.block(arms, rec, calls, unstable))
    }

    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> Result<(), RunError> {
        self.list.iter_mut().try_for_each(|o| o.failure(arms, block, arm, error))
    }

    fn progress(&mut self, arms: &[Arm<'_>], p: &Progress) {
        for o in &mut self.list {
            o.progress(arms, p);
        }
    }

    fn idle(&mut self, arms: &[Arm<'_>], rec: &IdleRecord) -> Result<(), RunError> {
        self.list.iter_mut().try_for_each(|o| o.idle(arms, rec))
    }
}

/// Tells `then` once every arm is warm (when the last arm's warm-up ends, before the first
/// measured block), with the run's start (`started_unix_s`, the raw header's): `trace run
/// --ready` writes its ready file there, so a profiler attaches to the measured block only. An
/// error from `then` stops the run ([`RunError::Observer`]). With no `then` it does nothing.
pub struct WhenWarm<F> {
    started_unix_s: f64,
    then: Option<F>,
}

impl<F: FnMut(f64) -> Result<(), crate::error::Error>> WhenWarm<F> {
    /// Calls `then` (if any) once every arm is warm.
    pub fn new(then: Option<F>) -> Self {
        Self { started_unix_s: 0.0, then }
    }
}

impl<F: FnMut(f64) -> Result<(), crate::error::Error>> Observer for WhenWarm<F> {
    fn started(&mut self, started_unix_s: f64) {
        self.started_unix_s = started_unix_s;
    }

    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        if rec.arm + 1 < arms.len() {
            return Ok(());
        }
        match &mut self.then {
            Some(then) => then(self.started_unix_s).map_err(RunError::Observer),
            None => Ok(()),
        }
    }
}
