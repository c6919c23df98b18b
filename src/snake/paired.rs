//! The paired two-arm check on live states (docs/snake.md §5.1): both arms decide on the same
//! unmodified game, the order alternates every tick, arm A's executed move advances the game.
//!
//! Each arm's latency is its own `decide` call (features, the one predict call carrying all
//! three questions, decoding and the shield), so it excludes the other arm, the game step and
//! any rendering. Per-tick numbers go into preallocated vectors; nothing is serialized while
//! the arms run.

use serde::{Deserialize, Serialize};

use super::game::{DeathReason, Direction, Game, GameError};
use super::policy::{decide, Decision, PolicyConfig, PolicyError, Predictor};
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::record::ArmInfo;
use crate::stats::LatencySummary;

/// Current schema version of the paired report.
pub const SCHEMA_VERSION: u32 = 1;
/// `kind` of the paired report.
pub const REPORT_KIND: &str = "snake-compare";

/// Which arm goes first on each tick, as recorded in reports.
pub const ORDER: &str = "A then B on even ticks (tick 0 first), B then A on odd ticks";

/// Latency of a series of decisions in milliseconds (numpy-linear percentiles, §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    /// Number of timed calls.
    pub calls: u64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest call.
    pub max_ms: f64,
}

impl LatencyMs {
    /// Summarize milliseconds (sorted in place); `None` for no data.
    /// (The statistics are [`LatencySummary`]'s; only the unit in the field names differs.)
    pub fn from_ms(values: &mut [f64]) -> Option<Self> {
        let s = LatencySummary::from_latencies(values)?;
        Some(Self {
            calls: s.calls,
            mean_ms: s.mean_s,
            p50_ms: s.p50_s,
            p95_ms: s.p95_s,
            p99_ms: s.p99_s,
            max_ms: s.max_s,
        })
    }
}

/// The game and policy every seed of a paired run uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedSettings {
    /// Board columns.
    pub width: usize,
    /// Board rows.
    pub height: usize,
    /// Initial snake length.
    pub initial_length: usize,
    /// Live steps per seed (stops earlier on death or win).
    pub steps: u64,
    /// Policy of both arms (the shield is on in the published protocol).
    pub policy: PolicyConfig,
}

/// One arm's numbers for one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSeedResult {
    /// Decisions where the shield replaced this arm's proposal.
    pub interventions: u64,
    /// The whole decision (features + all three questions + decoding + shield).
    pub decision_latency: Option<LatencyMs>,
    /// The predict call alone (one call carrying the three questions).
    pub inference_latency: Option<LatencyMs>,
}

/// A tick where the arms proposed or executed different moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disagreement {
    /// Game tick (0-based) of the decision.
    pub tick: u64,
    /// Arm A's proposal.
    pub a_proposed: Direction,
    /// Arm A's executed move (the one the game took).
    pub a_executed: Direction,
    /// Arm B's proposal.
    pub b_proposed: Direction,
    /// Arm B's executed move.
    pub b_executed: Direction,
}

/// The result of one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedRun {
    /// Game seed.
    pub seed: i64,
    /// Steps asked for.
    pub requested_steps: u64,
    /// Steps played (each is one decision per arm and one game step).
    pub steps: u64,
    /// Final score.
    pub score: usize,
    /// Final length.
    pub length: usize,
    /// The snake is alive at the end.
    pub alive: bool,
    /// The board was cleared.
    pub won: bool,
    /// Why the snake died, if it did.
    pub death_reason: Option<DeathReason>,
    /// Ticks where B's executed move equals A's.
    pub executed_agreement: u64,
    /// Ticks where B's proposal equals A's.
    pub proposed_agreement: u64,
    /// Largest |P_A − P_B| of any of the four rounded move probabilities over all ticks.
    pub max_move_probability_difference: Option<f64>,
    /// Arm A.
    pub a: ArmSeedResult,
    /// Arm B.
    pub b: ArmSeedResult,
    /// Every tick where the arms' proposals or executed moves differ.
    pub disagreements: Vec<Disagreement>,
}

/// A paired run that could not continue.
#[derive(Debug, thiserror::Error)]
pub enum PairedError {
    /// The board settings are invalid.
    #[error("seed {seed}: {source}")]
    Game {
        /// Game seed.
        seed: i64,
        /// The rules error.
        #[source]
        source: GameError,
    },
    /// An arm failed to decide; no move was executed.
    #[error("seed {seed}, tick {tick}, arm {arm}: {source}")]
    Decision {
        /// Game seed.
        seed: i64,
        /// Tick of the failed decision.
        tick: u64,
        /// `A` or `B`.
        arm: &'static str,
        /// Why.
        #[source]
        source: PolicyError,
    },
}

/// Per-arm timings of one seed, preallocated for the requested steps.
struct ArmSeries {
    decision_ms: Vec<f64>,
    inference_ms: Vec<f64>,
    interventions: u64,
}

impl ArmSeries {
    fn with_capacity(steps: usize) -> Self {
        Self {
            decision_ms: Vec::with_capacity(steps),
            inference_ms: Vec::with_capacity(steps),
            interventions: 0,
        }
    }

    fn push(&mut self, d: &Decision) {
        self.decision_ms.push(d.decision_ms);
        self.inference_ms.push(d.inference_ms);
        self.interventions += u64::from(d.intervened);
    }

    fn finish(mut self) -> ArmSeedResult {
        ArmSeedResult {
            interventions: self.interventions,
            decision_latency: LatencyMs::from_ms(&mut self.decision_ms),
            inference_latency: LatencyMs::from_ms(&mut self.inference_ms),
        }
    }
}

/// Largest absolute difference between two decisions' move probabilities.
pub fn probability_difference(a: &Decision, b: &Decision) -> f64 {
    Direction::ALL
        .iter()
        .map(|&d| (a.probabilities.get(d) - b.probabilities.get(d)).abs())
        .fold(0.0, f64::max)
}

/// Play one seed with both arms deciding on every live state; A's executed move advances the game.
/// `stop` is asked before every step: when it answers true the seed ends there, with the steps
/// played so far (the caller says that it was stopped).
pub fn run_seed(
    seed: i64,
    settings: &PairedSettings,
    a: &mut dyn Predictor,
    b: &mut dyn Predictor,
    stop: &dyn Fn() -> bool,
) -> Result<SeedRun, PairedError> {
    let mut game = Game::new(settings.width, settings.height, seed, settings.initial_length)
        .map_err(|source| PairedError::Game { seed, source })?;
    let capacity = usize::try_from(settings.steps).unwrap_or(usize::MAX).min(1 << 20);
    let (mut series_a, mut series_b) =
        (ArmSeries::with_capacity(capacity), ArmSeries::with_capacity(capacity));
    let (mut executed_agreement, mut proposed_agreement) = (0u64, 0u64);
    let mut max_difference: Option<f64> = None;
    let mut disagreements = Vec::new();
    let mut steps = 0u64;
    while steps < settings.steps && !game.finished() && !stop() {
        let tick = game.ticks();
        let arm_error = |arm: &'static str| move |source| PairedError::Decision { seed, tick, arm, source };
        let (da, db) = if steps.is_multiple_of(2) {
            let da = decide(&game, a, settings.policy).map_err(arm_error("A"))?;
            let db = decide(&game, b, settings.policy).map_err(arm_error("B"))?;
            (da, db)
        } else {
            let db = decide(&game, b, settings.policy).map_err(arm_error("B"))?;
            let da = decide(&game, a, settings.policy).map_err(arm_error("A"))?;
            (da, db)
        };
        series_a.push(&da);
        series_b.push(&db);
        executed_agreement += u64::from(da.executed == db.executed);
        proposed_agreement += u64::from(da.proposed == db.proposed);
        let difference = probability_difference(&da, &db);
        max_difference = Some(max_difference.map_or(difference, |m: f64| m.max(difference)));
        if da.executed != db.executed || da.proposed != db.proposed {
            disagreements.push(Disagreement {
                tick,
                a_proposed: da.proposed,
                a_executed: da.executed,
                b_proposed: db.proposed,
                b_executed: db.executed,
            });
        }
        game.step(da.executed).map_err(|source| PairedError::Game { seed, source })?;
        steps += 1;
    }
    Ok(SeedRun {
        seed,
        requested_steps: settings.steps,
        steps,
        score: game.score(),
        length: game.body().len(),
        alive: game.alive(),
        won: game.won(),
        death_reason: game.death_reason(),
        executed_agreement,
        proposed_agreement,
        max_move_probability_difference: max_difference,
        a: series_a.finish(),
        b: series_b.finish(),
        disagreements,
    })
}

/// What the paired run played.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedReportSettings {
    /// Game seeds, one game each.
    pub seeds: Vec<i64>,
    /// Live steps asked for per seed.
    pub steps: u64,
    /// Board columns.
    pub width: usize,
    /// Board rows.
    pub height: usize,
    /// Initial snake length.
    pub initial_length: usize,
    /// Tokens per question row (the fixed B3 × L × K4 forward of every decision).
    pub row_length_tokens: u64,
    /// `compact` or `detailed`.
    pub prompt: String,
    /// Shield on in both arms.
    pub guarded: bool,
    /// Which arm decides first on which tick ([`ORDER`]).
    pub order: String,
    /// Untimed warm-up decisions per arm before the first seed.
    pub warmup_decisions: u64,
}

/// An arm of the paired report: its role and identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedArm {
    /// `A` (drives the game) or `B`.
    pub role: String,
    /// Name, spec, backend, precision, device, weight fingerprint, shapes.
    #[serde(flatten)]
    pub identity: ArmInfo,
    /// Measured decisions (warm-up excluded).
    pub decisions: u64,
    /// Decisions whose state was cut to fit the row length.
    pub state_truncated_decisions: u64,
}

/// Sums over every seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedTotals {
    /// Steps over all seeds.
    pub steps: u64,
    /// Ticks where the executed moves agree.
    pub executed_agreement: u64,
    /// Ticks where the proposals agree.
    pub proposed_agreement: u64,
    /// Seeds whose snake died.
    pub deaths: u64,
    /// Shield interventions of arm A.
    pub interventions_a: u64,
    /// Shield interventions of arm B.
    pub interventions_b: u64,
    /// Largest move-probability difference over all seeds.
    pub max_move_probability_difference: Option<f64>,
}

impl PairedTotals {
    /// Add up the seeds.
    pub fn of(runs: &[SeedRun]) -> Self {
        Self {
            steps: runs.iter().map(|r| r.steps).sum(),
            executed_agreement: runs.iter().map(|r| r.executed_agreement).sum(),
            proposed_agreement: runs.iter().map(|r| r.proposed_agreement).sum(),
            deaths: runs.iter().filter(|r| !r.alive).count() as u64,
            interventions_a: runs.iter().map(|r| r.a.interventions).sum(),
            interventions_b: runs.iter().map(|r| r.b.interventions).sum(),
            max_move_probability_difference: runs
                .iter()
                .filter_map(|r| r.max_move_probability_difference)
                .reduce(f64::max),
        }
    }
}

/// Why a paired run fails: executed moves that differ, or a dead snake (empty = passed).
pub fn failures(runs: &[SeedRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        if r.executed_agreement < r.steps {
            let first = r.disagreements.iter().find(|d| d.a_executed != d.b_executed).map(|d| d.tick);
            out.push(format!(
                "seed {}: the arms executed different moves on {} of {} ticks (first at tick {})",
                r.seed,
                r.steps - r.executed_agreement,
                r.steps,
                first.map_or("?".to_string(), |t| t.to_string())
            ));
        }
        if !r.alive {
            let reason = r.death_reason.map_or("unknown", DeathReason::as_str);
            out.push(format!("seed {}: the snake died ({reason}) after {} steps", r.seed, r.steps));
        }
    }
    out
}

/// The `snake compare` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedReport {
    /// [`SCHEMA_VERSION`], [`REPORT_KIND`], start time, tool, host, command line.
    #[serde(flatten)]
    pub head: ReportHead,
    /// Model description.
    pub model: ModelInfo,
    /// Food RNG identity.
    pub rng: String,
    /// What was played.
    pub settings: PairedReportSettings,
    /// Arm A, then arm B.
    pub arms: Vec<PairedArm>,
    /// One entry per seed.
    pub runs: Vec<SeedRun>,
    /// Sums over the seeds.
    pub totals: PairedTotals,
    /// No executed move differed and no snake died.
    pub passed: bool,
    /// Why it did not pass.
    pub failures: Vec<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::snake::policy::ModelError;

    /// A stub arm that always gives `probs` and counts its calls.
    fn fixed(
        probs: [f64; 4],
        calls: std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
        name: &'static str,
    ) -> impl FnMut(&Value, &Value) -> Result<Value, ModelError> {
        move |_: &Value, _: &Value| {
            calls.borrow_mut().push(name);
            Ok(json!({
                "answers": {
                    "move": {"probabilities": {"UP": probs[0], "DOWN": probs[1], "LEFT": probs[2], "RIGHT": probs[3]}},
                    "risk": {"noul": 0.9},
                    "food": {"noul": 0.8},
                },
                "usage": {"input_tokens": 30, "output_tokens": 0},
            }))
        }
    }

    fn settings(steps: u64) -> PairedSettings {
        PairedSettings { width: 24, height: 16, initial_length: 6, steps, policy: PolicyConfig::default() }
    }

    #[test]
    fn latency_summary_uses_numpy_linear_percentiles() {
        let mut ms = vec![4.0, 1.0, 3.0, 2.0];
        let s = LatencyMs::from_ms(&mut ms).unwrap();
        assert_eq!(s.calls, 4);
        assert_eq!(s.mean_ms, 2.5);
        assert_eq!(s.p50_ms, 2.5);
        assert!((s.p95_ms - 3.85).abs() < 1e-12);
        assert!((s.p99_ms - 3.97).abs() < 1e-12);
        assert_eq!(s.max_ms, 4.0);
        assert_eq!(LatencyMs::from_ms(&mut []), None);
    }

    #[test]
    fn order_alternates_and_a_drives_the_game() {
        let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        // A prefers DOWN, B prefers RIGHT: on the seed-101 board both are safe at tick 0.
        let mut a = fixed([0.1, 0.5, 0.1, 0.3], calls.clone(), "A");
        let mut b = fixed([0.1, 0.3, 0.1, 0.5], calls.clone(), "B");
        let run = run_seed(101, &settings(4), &mut a, &mut b, &|| false).unwrap();
        assert_eq!(*calls.borrow(), ["A", "B", "B", "A", "A", "B", "B", "A"]);
        assert_eq!(run.steps, 4);
        assert!(run.alive);
        // Probabilities differ by 0.2 on DOWN and RIGHT.
        assert!((run.max_move_probability_difference.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(run.proposed_agreement, 0);
        assert_eq!(run.disagreements.first().map(|d| (d.tick, d.a_executed)), Some((0, Direction::Down)));
        // The game followed A: seed 101's snake moved DOWN from (12,8) at tick 0.
        let mut expected = Game::with_seed(101);
        for d in &run.disagreements {
            expected.step(d.a_executed).unwrap();
        }
        assert_eq!(run.score, expected.score());
        assert_eq!(run.a.decision_latency.unwrap().calls, 4);
        assert_eq!(run.b.decision_latency.unwrap().calls, 4);
    }

    #[test]
    fn identical_arms_agree_everywhere() {
        let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut a = fixed([0.25, 0.25, 0.25, 0.25], calls.clone(), "A");
        let mut b = fixed([0.25, 0.25, 0.25, 0.25], calls, "B");
        let run = run_seed(7, &settings(30), &mut a, &mut b, &|| false).unwrap();
        assert_eq!((run.steps, run.executed_agreement, run.proposed_agreement), (30, 30, 30));
        assert_eq!(run.max_move_probability_difference, Some(0.0));
        assert!(run.disagreements.is_empty());
        // UP is proposed (ties to the first) and is unsafe on this board at least once.
        assert_eq!(run.a.interventions, run.b.interventions);
        assert!(run.a.interventions > 0);
    }

    #[test]
    fn a_failing_arm_names_itself_and_the_tick() {
        let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut a = fixed([0.25, 0.25, 0.25, 0.25], calls, "A");
        let mut b = |_: &Value, _: &Value| -> Result<Value, ModelError> { Err("backend down".into()) };
        let err = run_seed(7, &settings(3), &mut a, &mut b, &|| false).unwrap_err();
        assert!(err.to_string().starts_with("seed 7, tick 0, arm B: Model call failed"), "{err}");
    }
}
