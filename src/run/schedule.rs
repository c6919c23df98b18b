//! A run's schedule: when a block ends ([`BlockLimit`]), equal-load pacing ([`Pace`]), the
//! [`Plan`] (cycles, warm-up, idle windows, batch), the balanced block order and how many whole
//! cycles a cut run holds, and the run's monotonic [`Clock`].

use std::time::{Duration, Instant};

/// When a block ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BlockLimit {
    /// Saturated for this long (the call that crosses the limit completes and counts).
    Duration(Duration),
    /// Exactly this many calls.
    Calls(u64),
}

/// Equal-load pacing: every arm runs the same calls on the same absolute schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Requests per second; call `k` of a block is due to start at `block start + k / rate`
    /// and to finish before the next one is due.
    pub rate_hz: f64,
}

impl Pace {
    /// Calls in one paced block: `round(duration × rate)` (at least 1) for a time limit, `k`
    /// for a call limit. Every arm gets the same number, so they do equal work.
    pub fn calls_per_block(&self, block: BlockLimit) -> u64 {
        match block {
            BlockLimit::Calls(k) => k,
            BlockLimit::Duration(d) => ((d.as_secs_f64() * self.rate_hz).round() as u64).max(1),
        }
    }

    /// When call `k` is due, after the block start.
    pub fn offset(&self, k: u64) -> Duration {
        Duration::from_secs_f64(k as f64 / self.rate_hz)
    }
}

/// When a paced block with time limit `d` ends even if calls of its schedule are still unmade
/// (an arm that cannot keep the rate): twice its length plus one second.
pub fn paced_overrun_limit(d: Duration) -> Duration {
    d.saturating_mul(2).saturating_add(Duration::from_secs(1))
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
    /// Idle window before the first block, between blocks and after the last (the benchmark
    /// thread sleeps; no calls); `None`: blocks follow each other directly.
    pub idle: Option<Duration>,
    /// Equal-load pacing; `None`: saturated serial blocks (the next call starts when the
    /// previous returns).
    pub pace: Option<Pace>,
    /// Requests per call (`speed --batch N`, at least 1): a call answers this many
    /// consecutive requests (cycling through the workload) in one `Host::predict_batch`, so
    /// their rows share one packed forward. Above 1, every request must ask the same questions
    /// with the same options ([`batch_mismatch`](super::batch_mismatch)) and no arm may answer whole requests in a
    /// worker (a reference runtime answers one request per call). An arm of a `--batch 1,2,4`
    /// sweep answers its own count instead ([`Arm::requests_per_call`](super::Arm::requests_per_call)).
    pub batch: usize,
}

impl Plan {
    /// Saturated blocks without idle windows (the `speed` schedule).
    pub fn saturated(cycles: usize, block: BlockLimit, warmup_calls: usize) -> Self {
        Plan { cycles, block, warmup_calls, idle: None, pace: None, batch: 1 }
    }
}

/// Block order: per cycle the arms in order, then reversed (A B C C B A); the raw record's
/// header records it, so the format owns it.
pub use crate::record::balanced_order;

/// How many whole balanced cycles a run holds from its start; the raw record's cut
/// ([`crate::record::whole::cut`]) keeps them, so the format owns it.
pub use crate::record::whole::whole_cycles;

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
