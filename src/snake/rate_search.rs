//! The rate/stability benchmark (docs/snake.md §5.2): top-1 episodes without the shield, an
//! uncapped episode, a paced sweep over target rates, uncapped soaks, and soak attempts from
//! the fastest passing rate down until every seed passes: the fastest tested stable rate.
//!
//! One tick = decide + render one full frame (discarded) + step; that is the *active tick*.
//! Per-tick numbers go into the episode's preallocated trace; nothing is serialized inside a
//! tick. The caller gets each finished episode (to save the report and print a line) and can
//! stop the run between ticks.
//!
//! A new report, one read back to resume and checked against its model and arm, the line
//! printed per episode and the verdict's text are in the `report` submodule.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::game::{Cell, DeathReason, Direction, Game, GameError};
use super::paired::LatencyMs;
use super::policy::{decide, Decision, ModelError, MoveProbabilities, PolicyConfig, PolicyError, Predictor};
use super::view::OffscreenCanvas;
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::record::ArmInfo;

/// Current schema version of the rate report.
pub const SCHEMA_VERSION: u32 = 1;
/// `kind` of the rate report.
pub const REPORT_KIND: &str = "snake-bench";
/// A paced episode passes when the snake is alive and at most this fraction of ticks missed.
pub const MAX_MISS_FRACTION: f64 = 0.01;
/// Seed of the uncapped episode and the sweep.
pub const SWEEP_SEED: i64 = 7;
/// Seed of the warm-up game.
pub const WARMUP_SEED: i64 = 9001;
/// Guarded warm-up steps before anything is measured.
pub const WARMUP_STEPS: u64 = 20;
/// How many of the seeds the unshielded top-1 phase uses.
pub const RAW_TOP1_SEEDS: usize = 3;

/// What the benchmark runs; stored in the report and reloaded by `--resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSettings {
    /// Board columns.
    pub width: usize,
    /// Board rows.
    pub height: usize,
    /// Initial snake length.
    pub initial_length: usize,
    /// `compact` or `detailed`.
    pub prompt: String,
    /// Tokens per question row (the fixed B3 × L × K4 forward of every decision).
    pub row_length_tokens: u64,
    /// Target rates of the sweep, ascending, decisions per second.
    pub rates_fps: Vec<f64>,
    /// Steps of the uncapped and sweep episodes.
    pub sweep_steps: u64,
    /// Steps of each soak episode.
    pub soak_steps: u64,
    /// Steps of each unshielded top-1 episode.
    pub raw_steps: u64,
    /// Soak seeds (the first three also run top-1).
    pub seeds: Vec<i64>,
}

/// One tick of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceTick {
    /// Game tick before the step (0-based).
    pub tick: u64,
    /// Head after the step.
    pub head_after: Cell,
    /// Food after the step.
    pub food_after: Option<Cell>,
    /// Score after the step.
    pub score: usize,
    /// Length after the step.
    pub length: usize,
    /// The model's argmax.
    pub proposed: Direction,
    /// The executed move.
    pub executed: Direction,
    /// The shield replaced the proposal.
    pub intervened: bool,
    /// The rounded move probabilities.
    pub probabilities: MoveProbabilities,
    /// `1 - risk.noul`.
    pub dead_end_risk: f64,
    /// `food.noul`.
    pub food_reachable: f64,
    /// The predict call (one call carrying all three questions).
    pub inference_ms: f64,
    /// The whole decision (features, questions, decoding, shield).
    pub decision_ms: f64,
    /// Decision + rendering + game step.
    pub active_tick_ms: f64,
    /// Paced and the active tick took longer than the tick period.
    pub deadline_miss: bool,
    /// Real input tokens of the three rows.
    pub input_tokens: u64,
}

/// One episode: a game played for up to `requested_steps` ticks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Game seed.
    pub seed: i64,
    /// Paced rate, or `null` when uncapped.
    pub target_fps: Option<f64>,
    /// Shield on.
    pub guarded: bool,
    /// Steps asked for.
    pub requested_steps: u64,
    /// Steps played.
    pub steps: u64,
    /// Wall time of the episode, sleeps included.
    pub seconds: f64,
    /// `steps / seconds`.
    pub achieved_steps_per_second: Option<f64>,
    /// Final score.
    pub score: usize,
    /// Final length.
    pub length: usize,
    /// Alive at the end.
    pub alive: bool,
    /// Board cleared.
    pub won: bool,
    /// Why the snake died, if it did.
    pub death_reason: Option<DeathReason>,
    /// Shield interventions.
    pub interventions: u64,
    /// Largest tick gap between consecutive eats, counted from tick 0; `null` without an eat.
    pub max_completed_food_gap: Option<u64>,
    /// Predict-call latency (one call = the three questions of one decision).
    pub inference: Option<LatencyMs>,
    /// Whole-decision latency.
    pub decision: Option<LatencyMs>,
    /// Active tick (decision + render + step) latency: the Snake frame time.
    pub active_tick: Option<LatencyMs>,
    /// Paced ticks whose active part overran the period.
    pub deadline_misses: u64,
    /// `deadline_misses / steps`.
    pub miss_fraction: Option<f64>,
    /// Alive and `miss_fraction <= 0.01`.
    pub passes: bool,
    /// Every tick.
    pub trace: Vec<TraceTick>,
}

/// The soak runs at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakAttempt {
    /// Target rate.
    pub fps: f64,
    /// Episodes run at this rate, in seed order (stops at the first failure).
    pub episodes: Vec<Episode>,
    /// Every seed passed; `null` while the attempt is unfinished.
    pub passes: Option<bool>,
}

/// The rate report, saved after every episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateReport {
    /// [`SCHEMA_VERSION`], [`REPORT_KIND`], start time, tool, host, command line.
    #[serde(flatten)]
    pub head: ReportHead,
    /// Model description.
    pub model: ModelInfo,
    /// The arm that played.
    pub arm: ArmInfo,
    /// Food RNG identity.
    pub rng: String,
    /// What runs.
    pub settings: RateSettings,
    /// How it is measured, in words.
    pub method: Map<String, Value>,
    /// Unshielded top-1 episodes.
    pub raw_top1: Vec<Episode>,
    /// Shielded, unpaced, seed 7.
    pub uncapped: Option<Episode>,
    /// Seed 7, one episode per target rate.
    pub sweep: Vec<Episode>,
    /// Every seed, unpaced, soak steps.
    pub uncapped_soak: Vec<Episode>,
    /// Rates tried from fastest passing sweep rate down.
    pub soak_attempts: Vec<SoakAttempt>,
    /// The first (fastest) rate where every seed's soak passed.
    pub fastest_tested_stable_fps: Option<f64>,
    /// Every phase ran.
    pub complete: bool,
    /// Sessions that continued this report with `--resume`.
    pub resumed_sessions: u64,
}

/// A benchmark that could not continue.
#[derive(Debug, thiserror::Error)]
pub enum RateError {
    /// The board settings are invalid.
    #[error("seed {seed}: {source}")]
    Game {
        /// Game seed.
        seed: i64,
        /// Rules error.
        #[source]
        source: GameError,
    },
    /// A decision failed; no move was executed.
    #[error("seed {seed}, tick {tick}: {source}")]
    Decision {
        /// Game seed.
        seed: i64,
        /// Tick.
        tick: u64,
        /// Why.
        #[source]
        source: PolicyError,
    },
    /// A shielded game broke the cycle-order or food-progress invariant.
    #[error("seed {seed}, tick {tick}: shielded game broke an invariant: {what}")]
    Invariant {
        /// Game seed.
        seed: i64,
        /// Tick.
        tick: u64,
        /// Which invariant.
        what: &'static str,
    },
    /// The caller asked to stop (Ctrl-C); the report holds every finished episode.
    #[error("stopped before the benchmark finished")]
    Stopped,
    /// Rendering or saving the report failed.
    #[error("{0}")]
    Caller(#[source] ModelError),
}

/// One episode's plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpisodePlan {
    /// Game seed.
    pub seed: i64,
    /// Paced rate, or `None` for no pacing.
    pub target_fps: Option<f64>,
    /// Steps to play at most.
    pub steps: u64,
    /// Shield on.
    pub guarded: bool,
}

/// What the renderer is told about the frame it draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameInfo {
    /// Shield on.
    pub guarded: bool,
    /// Interventions so far in the episode, this decision included.
    pub interventions: u64,
    /// Paced rate, if any.
    pub target_fps: Option<f64>,
    /// Seconds since the episode began.
    pub elapsed_s: f64,
}

/// Draws one frame of `game` (before the step) with `decision`; errors abort the run.
pub type Renderer<'r> = dyn FnMut(&Game, &Decision, &FrameInfo) -> Result<(), ModelError> + 'r;

/// The tick budget of a rate, or `None` uncapped.
fn period(target_fps: Option<f64>) -> Option<Duration> {
    target_fps.filter(|f| f.is_finite() && *f > 0.0).map(|f| Duration::from_secs_f64(1.0 / f))
}

/// Play one episode: per tick decide, render, step, check invariants (shielded), pace.
pub fn run_episode(
    settings: &RateSettings,
    policy: PolicyConfig,
    plan: EpisodePlan,
    predictor: &mut dyn Predictor,
    render: &mut Renderer<'_>,
    stop: &dyn Fn() -> bool,
) -> Result<Episode, RateError> {
    let seed = plan.seed;
    let mut game = Game::new(settings.width, settings.height, seed, settings.initial_length)
        .map_err(|source| RateError::Game { seed, source })?;
    let policy = PolicyConfig { guarded: plan.guarded, ..policy };
    let period = period(plan.target_fps);
    let capacity = game.capacity() as u64;
    let mut trace = Vec::with_capacity(usize::try_from(plan.steps).unwrap_or(0).min(1 << 20));
    let (mut interventions, mut misses) = (0u64, 0u64);
    let (mut last_eat, mut max_gap): (u64, Option<u64>) = (0, None);
    let started = Instant::now();
    while (trace.len() as u64) < plan.steps && !game.finished() {
        if stop() {
            return Err(RateError::Stopped);
        }
        let tick_start = Instant::now();
        let tick = game.ticks();
        let decision =
            decide(&game, predictor, policy).map_err(|source| RateError::Decision { seed, tick, source })?;
        interventions += u64::from(decision.intervened);
        let info = FrameInfo {
            guarded: plan.guarded,
            interventions,
            target_fps: plan.target_fps,
            elapsed_s: started.elapsed().as_secs_f64(),
        };
        render(&game, &decision, &info).map_err(RateError::Caller)?;
        let ate = game.step(decision.executed).map_err(|source| RateError::Game { seed, source })?;
        let active = tick_start.elapsed();
        let active_tick_ms = active.as_secs_f64() * 1000.0;
        let deadline_miss = period.is_some_and(|p| active > p);
        misses += u64::from(deadline_miss);
        if ate {
            max_gap = Some(max_gap.unwrap_or(0).max(game.ticks() - last_eat));
            last_eat = game.ticks();
        }
        if plan.guarded && game.alive() {
            if !game.cycle_order_valid() {
                return Err(RateError::Invariant { seed, tick, what: "the body left its cycle arc" });
            }
            if game.ticks() - last_eat > capacity {
                return Err(RateError::Invariant {
                    seed,
                    tick,
                    what: "no food for more than a board's cells",
                });
            }
        }
        trace.push(TraceTick {
            tick,
            head_after: game.head(),
            food_after: game.food(),
            score: game.score(),
            length: game.body().len(),
            proposed: decision.proposed,
            executed: decision.executed,
            intervened: decision.intervened,
            probabilities: decision.probabilities,
            dead_end_risk: decision.dead_end_risk,
            food_reachable: decision.food_reachable,
            inference_ms: decision.inference_ms,
            decision_ms: decision.decision_ms,
            active_tick_ms,
            deadline_miss,
            input_tokens: decision.input_tokens,
        });
        if let Some(p) = period {
            if let Some(rest) = p.checked_sub(tick_start.elapsed()) {
                std::thread::sleep(rest);
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let steps = trace.len() as u64;
    let series = |f: fn(&TraceTick) -> f64| {
        let mut v: Vec<f64> = trace.iter().map(f).collect();
        LatencyMs::from_ms(&mut v)
    };
    let miss_fraction = (steps > 0).then(|| misses as f64 / steps as f64);
    Ok(Episode {
        seed,
        target_fps: plan.target_fps,
        guarded: plan.guarded,
        requested_steps: plan.steps,
        steps,
        seconds,
        achieved_steps_per_second: (seconds > 0.0).then(|| steps as f64 / seconds),
        score: game.score(),
        length: game.body().len(),
        alive: game.alive(),
        won: game.won(),
        death_reason: game.death_reason(),
        interventions,
        max_completed_food_gap: max_gap,
        inference: series(|t| t.inference_ms),
        decision: series(|t| t.decision_ms),
        active_tick: series(|t| t.active_tick_ms),
        deadline_misses: misses,
        miss_fraction,
        passes: game.alive() && miss_fraction.is_some_and(|m| m <= MAX_MISS_FRACTION),
        trace,
    })
}

/// Guarded warm-up decisions on `game`, outside every measurement; returns how many ran.
pub fn warm_up(
    mut game: Game,
    policy: PolicyConfig,
    predictor: &mut dyn Predictor,
    steps: u64,
) -> Result<u64, RateError> {
    let seed = game.seed();
    let policy = PolicyConfig { guarded: true, ..policy };
    let mut done = 0;
    while done < steps && !game.finished() {
        let tick = game.ticks();
        let d =
            decide(&game, predictor, policy).map_err(|source| RateError::Decision { seed, tick, source })?;
        game.step(d.executed).map_err(|source| RateError::Game { seed, source })?;
        done += 1;
    }
    Ok(done)
}

/// Which phase an episode belongs to (for the caller's progress line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Unshielded top-1.
    RawTop1,
    /// Shielded, unpaced, seed 7.
    Uncapped,
    /// Paced sweep on seed 7.
    Sweep,
    /// Unpaced soak per seed.
    UncappedSoak,
    /// Paced soak attempt.
    Soak,
}

impl Phase {
    /// Report key of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::RawTop1 => "raw_top1",
            Phase::Uncapped => "uncapped",
            Phase::Sweep => "sweep",
            Phase::UncappedSoak => "uncapped_soak",
            Phase::Soak => "soak_attempts",
        }
    }
}

/// Called after every finished episode with the updated report (save it, print a line).
pub type EpisodeSink<'s> = dyn FnMut(&RateReport, Phase, &Episode) -> Result<(), ModelError> + 's;

/// The engine that runs the remaining episodes of a report.
pub struct RateRun<'a, 'r> {
    /// Policy of the shielded phases (the top-1 phase turns the shield off).
    pub policy: PolicyConfig,
    /// The model.
    pub predictor: &'a mut dyn Predictor,
    /// Draws each frame.
    pub render: &'a mut Renderer<'r>,
    /// Gets each finished episode.
    pub sink: &'a mut EpisodeSink<'r>,
    /// Asked before every tick; `true` stops the run.
    pub stop: &'a dyn Fn() -> bool,
}

impl RateRun<'_, '_> {
    fn episode(&mut self, report: &RateReport, plan: EpisodePlan) -> Result<Episode, RateError> {
        run_episode(&report.settings, self.policy, plan, self.predictor, self.render, self.stop)
    }

    fn finished(&mut self, report: &RateReport, phase: Phase) -> Result<(), RateError> {
        let episode = match phase {
            Phase::RawTop1 => report.raw_top1.last(),
            Phase::Uncapped => report.uncapped.as_ref(),
            Phase::Sweep => report.sweep.last(),
            Phase::UncappedSoak => report.uncapped_soak.last(),
            Phase::Soak => report.soak_attempts.last().and_then(|a| a.episodes.last()),
        };
        match episode {
            Some(e) => (self.sink)(report, phase, e).map_err(RateError::Caller),
            None => Ok(()),
        }
    }

    /// Run every episode `report` does not hold yet, in phase order, then mark it complete.
    pub fn run(&mut self, report: &mut RateReport) -> Result<(), RateError> {
        let s = report.settings.clone();
        let plan = |seed, target_fps, steps, guarded| EpisodePlan { seed, target_fps, steps, guarded };
        for &seed in s.seeds.iter().take(RAW_TOP1_SEEDS).skip(report.raw_top1.len()) {
            let e = self.episode(report, plan(seed, None, s.raw_steps, false))?;
            report.raw_top1.push(e);
            self.finished(report, Phase::RawTop1)?;
        }
        if report.uncapped.is_none() {
            report.uncapped = Some(self.episode(report, plan(SWEEP_SEED, None, s.sweep_steps, true))?);
            self.finished(report, Phase::Uncapped)?;
        }
        for &fps in s.rates_fps.iter().skip(report.sweep.len()) {
            let e = self.episode(report, plan(SWEEP_SEED, Some(fps), s.sweep_steps, true))?;
            report.sweep.push(e);
            self.finished(report, Phase::Sweep)?;
        }
        for &seed in s.seeds.iter().skip(report.uncapped_soak.len()) {
            let e = self.episode(report, plan(seed, None, s.soak_steps, true))?;
            report.uncapped_soak.push(e);
            self.finished(report, Phase::UncappedSoak)?;
        }
        let candidates = passing_rates_descending(&report.sweep);
        report.fastest_tested_stable_fps = None;
        for (i, &fps) in candidates.iter().enumerate() {
            if report.soak_attempts.len() <= i {
                report.soak_attempts.push(SoakAttempt { fps, episodes: Vec::new(), passes: None });
            }
            while report.soak_attempts[i].passes.is_none() {
                let done = report.soak_attempts[i].episodes.len();
                let Some(&seed) = s.seeds.get(done) else {
                    report.soak_attempts[i].passes = Some(true);
                    break;
                };
                let e = self.episode(report, plan(seed, Some(fps), s.soak_steps, true))?;
                let failed = !e.passes;
                report.soak_attempts[i].episodes.push(e);
                if failed {
                    report.soak_attempts[i].passes = Some(false);
                } else if report.soak_attempts[i].episodes.len() == s.seeds.len() {
                    report.soak_attempts[i].passes = Some(true);
                }
                if report.soak_attempts[i].passes == Some(true) {
                    report.fastest_tested_stable_fps = Some(fps);
                }
                self.finished(report, Phase::Soak)?;
            }
            if report.soak_attempts[i].passes == Some(true) {
                report.fastest_tested_stable_fps = Some(fps);
                break;
            }
        }
        report.complete = true;
        Ok(())
    }
}

/// Run every episode `report` does not hold yet ([`RateRun::run`]) with `predictor`, each
/// tick drawing a full frame of the board into an in-memory terminal (the active tick
/// includes it) labelled with `engine`; `sink` gets every finished episode and `stop` is asked
/// before every tick.
pub fn run_drawn(
    report: &mut RateReport,
    policy: PolicyConfig,
    predictor: &mut dyn Predictor,
    engine: &str,
    sink: &mut EpisodeSink<'_>,
    stop: &dyn Fn() -> bool,
) -> Result<(), RateError> {
    let mut canvas = OffscreenCanvas::new(report.settings.width, report.settings.height);
    let mut render = |game: &Game, decision: &Decision, info: &FrameInfo| -> Result<(), ModelError> {
        canvas.draw_tick(game, decision, info, engine);
        Ok(())
    };
    let mut sink = |report: &RateReport, phase: Phase, episode: &Episode| sink(report, phase, episode);
    RateRun { policy, predictor, render: &mut render, sink: &mut sink, stop }.run(report)
}

/// The sweep rates whose episode passed, fastest first.
pub fn passing_rates_descending(sweep: &[Episode]) -> Vec<f64> {
    let mut rates: Vec<f64> = sweep.iter().filter(|e| e.passes).filter_map(|e| e.target_fps).collect();
    rates.sort_by(|a, b| b.total_cmp(a));
    rates
}

/// Parse `--rate` (a list): positive finite numbers, returned as a sorted set.
pub fn parse_rates(values: &[f64]) -> Result<Vec<f64>, crate::error::Error> {
    let mut out: Vec<f64> = Vec::with_capacity(values.len());
    for &v in values {
        if crate::time::period_of(v).is_none() {
            return Err(crate::error::Error::input(format!(
                "--rate: {v:?} is not a positive finite rate of at least one per 7 days; give e.g. --rate 10,20,30"
            )));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(crate::error::Error::input("--rate needs at least one rate, e.g. --rate 10,20,30"));
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

mod report;

pub use report::ended_early;

#[cfg(test)]
mod tests;
