//! `snake compare` around the paired check ([`super::paired`]): the seeds played in order until
//! an arm fails or a stop is asked, the report of what ran, and its lines of text.

use super::game::RNG_IDENTITY;
use super::host_predictor::HostPredictor;
use super::paired::{
    failures, run_seed, ArmSeedResult, PairedArm, PairedError, PairedReport, PairedReportSettings,
    PairedSettings, PairedTotals, SeedRun, ORDER, REPORT_KIND, SCHEMA_VERSION,
};
use super::policy::Predictor;
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::report::Render;

/// Untimed guarded decisions per arm before the first seed.
pub const WARMUP_DECISIONS: u64 = 6;

/// Why the seeds stopped before the last one was played.
#[derive(Debug)]
pub enum Stopped {
    /// The stop flag was raised during what the text says (`the run, before seed 8`, `seed 8,
    /// after 3 of its steps`); the stopped seed keeps the steps it played.
    Interrupted(String),
    /// An arm or the board failed; that seed is left out.
    Failed(PairedError),
}

/// The seeds played, and why they stopped early if they did.
#[derive(Debug)]
pub struct Played {
    /// One entry per finished (or interrupted) seed, in order.
    pub runs: Vec<SeedRun>,
    /// `None` when every seed was played.
    pub stopped: Option<Stopped>,
}

/// Play `seeds` in order with both arms ([`run_seed`]), handing each finished seed to
/// `on_seed`; `stop` is asked before every seed and step: a raised flag ends the run there,
/// keeping the interrupted seed's steps; a failed seed ends it without that seed.
pub fn play_seeds(
    seeds: &[i64],
    settings: &PairedSettings,
    a: &mut dyn Predictor,
    b: &mut dyn Predictor,
    stop: &dyn Fn() -> bool,
    on_seed: &mut dyn FnMut(&SeedRun),
) -> Played {
    let mut runs = Vec::with_capacity(seeds.len());
    for &seed in seeds {
        if stop() {
            return Played {
                runs,
                stopped: Some(Stopped::Interrupted(format!("the run, before seed {seed}"))),
            };
        }
        match run_seed(seed, settings, a, b, stop) {
            Ok(run) => {
                on_seed(&run);
                let steps = run.steps;
                runs.push(run);
                if stop() {
                    let during = format!("seed {seed}, after {steps} of its steps");
                    return Played { runs, stopped: Some(Stopped::Interrupted(during)) };
                }
            }
            Err(e) => return Played { runs, stopped: Some(Stopped::Failed(e)) },
        }
    }
    Played { runs, stopped: None }
}

impl PairedArm {
    /// Arm `role` (`A` or `B`) as the report lists it, with its decisions since the warm-up.
    pub fn of(role: &str, arm: &HostPredictor<'_>) -> Self {
        let (decisions, state_truncated_decisions) = arm.truncations();
        PairedArm {
            role: role.into(),
            identity: arm.identity().clone(),
            decisions,
            state_truncated_decisions,
        }
    }
}

impl PairedReportSettings {
    /// What a run of `seeds` with `settings` and rows of `row_length` tokens plays (the
    /// shield on, [`ORDER`], [`WARMUP_DECISIONS`]).
    pub fn new(seeds: &[i64], settings: &PairedSettings, row_length: usize) -> Self {
        PairedReportSettings {
            seeds: seeds.to_vec(),
            steps: settings.steps,
            width: settings.width,
            height: settings.height,
            initial_length: settings.initial_length,
            row_length_tokens: row_length as u64,
            prompt: settings.policy.prompt.as_str().into(),
            guarded: true,
            order: ORDER.into(),
            warmup_decisions: WARMUP_DECISIONS,
        }
    }
}

impl PairedReport {
    /// The report of `runs`, started at `created_utc`: passed when no executed move differed,
    /// no snake died and nothing `stopped` the run (its reason is the last failure).
    pub fn new(
        created_utc: String,
        model: ModelInfo,
        settings: PairedReportSettings,
        arms: [PairedArm; 2],
        runs: Vec<SeedRun>,
        stopped: Option<&str>,
    ) -> Self {
        let mut failures = failures(&runs);
        failures.extend(stopped.iter().map(|e| format!("stopped: {e}")));
        PairedReport {
            head: ReportHead::current(SCHEMA_VERSION, REPORT_KIND, created_utc),
            model,
            rng: RNG_IDENTITY.into(),
            settings,
            arms: arms.into(),
            totals: PairedTotals::of(&runs),
            runs,
            passed: failures.is_empty(),
            failures,
        }
    }
}

/// The totals line printed after the seeds' lines ([`SeedRun::line`]).
impl Render for PairedReport {
    fn terminal(&self) -> String {
        let t = &self.totals;
        format!(
            "total: executed agreement {}/{}, proposed agreement {}/{}, deaths {}, interventions A {} B {}, max move-probability difference {}",
            t.executed_agreement,
            t.steps,
            t.proposed_agreement,
            t.steps,
            t.deaths,
            t.interventions_a,
            t.interventions_b,
            difference_text(t.max_move_probability_difference),
        )
    }
}

impl SeedRun {
    /// The lines printed when the seed finishes: outcome, agreement, shield, probability gap
    /// and per-arm decision latency.
    pub fn line(&self) -> String {
        let state = if self.won {
            "won"
        } else if self.alive {
            "alive"
        } else {
            "DEAD"
        };
        format!(
            "seed {}: {} steps, score {} length {} {state}; executed {}/{} proposed {}/{}; interventions A {} B {}; max Δp {}\n  decision A: {}\n  decision B: {}",
            self.seed,
            self.steps,
            self.score,
            self.length,
            self.executed_agreement,
            self.steps,
            self.proposed_agreement,
            self.steps,
            self.a.interventions,
            self.b.interventions,
            difference_text(self.max_move_probability_difference),
            latency_text(&self.a),
            latency_text(&self.b),
        )
    }
}

fn difference_text(d: Option<f64>) -> String {
    d.map_or("n/a".into(), |d| format!("{d:.4}"))
}

fn latency_text(arm: &ArmSeedResult) -> String {
    match arm.decision_latency {
        Some(l) => format!(
            "mean {:.2} p50 {:.2} p95 {:.2} p99 {:.2} max {:.2} ms",
            l.mean_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
        ),
        None => "no decisions".into(),
    }
}

#[cfg(test)]
mod tests;
