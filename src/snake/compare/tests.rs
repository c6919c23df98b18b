//! `snake compare`'s seeds, report and lines.
use std::cell::Cell;

use serde_json::Value;

use super::*;
use crate::backend::Context;
use crate::laya::bundle::{Bundle, ModelSpec};
use crate::model::synthetic::published_shape;
use crate::snake::paired::LatencyMs;
use crate::snake::policy::{ModelError, PolicyConfig};

use crate::snake::policy::even_moves as uniform;

fn settings(steps: u64) -> PairedSettings {
    PairedSettings { width: 24, height: 16, initial_length: 6, steps, policy: PolicyConfig::default() }
}

fn arm(interventions: u64, latency: Option<LatencyMs>) -> ArmSeedResult {
    ArmSeedResult { interventions, decision_latency: latency, inference_latency: None }
}

fn seed_run(seed: i64, alive: bool) -> SeedRun {
    let latency = LatencyMs { calls: 4, mean_ms: 1.5, p50_ms: 1.25, p95_ms: 2.0, p99_ms: 2.126, max_ms: 3.0 };
    SeedRun {
        seed,
        requested_steps: 4,
        steps: 4,
        score: 1,
        length: 7,
        alive,
        won: false,
        death_reason: None,
        executed_agreement: 4,
        proposed_agreement: 3,
        max_move_probability_difference: Some(0.03126),
        a: arm(2, Some(latency)),
        b: arm(0, None),
        disagreements: Vec::new(),
    }
}

#[test]
fn a_seed_line_shows_outcome_agreement_shield_gap_and_latency() {
    assert_eq!(
        seed_run(7, true).line(),
        "seed 7: 4 steps, score 1 length 7 alive; executed 4/4 proposed 3/4; interventions A 2 B 0; max Δp 0.0313\n  decision A: mean 1.50 p50 1.25 p95 2.00 p99 2.13 max 3.00 ms\n  decision B: no decisions"
    );
    let dead = SeedRun { max_move_probability_difference: None, ..seed_run(8, false) };
    assert!(dead.line().starts_with("seed 8: 4 steps, score 1 length 7 DEAD;"), "{}", dead.line());
    assert!(dead.line().contains("max Δp n/a\n"), "{}", dead.line());
}

#[test]
fn the_report_adds_up_the_seeds_and_fails_on_a_death_or_a_stop() {
    let s = PairedReportSettings::new(&[7, 8], &settings(4), 96);
    assert_eq!((s.seeds.as_slice(), s.steps, s.row_length_tokens), (&[7, 8][..], 4, 96));
    assert_eq!((s.prompt.as_str(), s.guarded, s.warmup_decisions), ("compact", true, 6));
    let bundle = Bundle::load(&ModelSpec::Builtin, published_shape).unwrap();
    let built = HostPredictor::build("a", "portable:f32", &bundle, 96, &Context::of_test_process()).unwrap();
    let arms = || [PairedArm::of("A", &built), PairedArm::of("B", &built)];
    assert_eq!((arms()[1].role.as_str(), arms()[1].identity.length, arms()[1].decisions), ("B", 96, 0));
    let model = || ModelInfo::describe(&bundle);
    let runs = vec![seed_run(7, true), seed_run(8, true)];
    let passed =
        PairedReport::new("2026-01-01T00:00:00Z".into(), model(), s.clone(), arms(), runs.clone(), None);
    assert!(passed.passed && passed.failures.is_empty());
    assert_eq!((passed.head.kind.as_str(), passed.rng.as_str()), ("snake-compare", RNG_IDENTITY));
    assert_eq!(
        passed.terminal(),
        "total: executed agreement 8/8, proposed agreement 6/8, deaths 0, interventions A 4 B 0, max move-probability difference 0.0313"
    );
    let stopped = PairedReport::new("t".into(), model(), s.clone(), arms(), runs, Some("seed 9: down"));
    assert_eq!(
        (stopped.passed, stopped.failures.clone()),
        (false, vec!["stopped: seed 9: down".to_string()])
    );
    let died = PairedReport::new("t".into(), model(), s, arms(), vec![seed_run(7, false)], None);
    assert_eq!((died.passed, died.totals.deaths), (false, 1));
    assert!(died.failures[0].starts_with("seed 7: the snake died"), "{:?}", died.failures);
}

#[test]
fn every_seed_is_played_in_order_and_handed_over() {
    let (mut a, mut b) = (uniform, uniform);
    let mut seen = Vec::new();
    let played = play_seeds(&[7, 8, 9], &settings(3), &mut a, &mut b, &|| false, &mut |r| seen.push(r.seed));
    assert!(played.stopped.is_none());
    assert_eq!(seen, [7, 8, 9]);
    assert_eq!(played.runs.iter().map(|r| (r.seed, r.steps)).collect::<Vec<_>>(), [(7, 3), (8, 3), (9, 3)]);
}

#[test]
fn a_stop_keeps_the_interrupted_seed_and_a_failure_drops_its_seed() {
    // Asked before each seed, before each step and after each seed: the flag rises on the
    // 8th question, before seed 8's second step.
    let asked = Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 7
    };
    let (mut a, mut b) = (uniform, uniform);
    let played = play_seeds(&[7, 8, 9], &settings(3), &mut a, &mut b, &stop, &mut |_| {});
    assert_eq!(played.runs.iter().map(|r| (r.seed, r.steps)).collect::<Vec<_>>(), [(7, 3), (8, 1)]);
    assert!(matches!(&played.stopped, Some(Stopped::Interrupted(d)) if d == "seed 8, after 1 of its steps"));
    let before = play_seeds(&[7], &settings(3), &mut a, &mut b, &|| true, &mut |_| {});
    assert!(before.runs.is_empty());
    assert!(matches!(&before.stopped, Some(Stopped::Interrupted(d)) if d == "the run, before seed 7"));
    let mut calls = 0;
    let mut breaks = |s: &Value, q: &Value| {
        calls += 1;
        if calls > 4 {
            Err(ModelError::from("backend down"))
        } else {
            uniform(s, q)
        }
    };
    let failed = play_seeds(&[7, 8], &settings(3), &mut a, &mut breaks, &|| false, &mut |_| {});
    assert_eq!(failed.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), [7]);
    assert!(
        matches!(&failed.stopped, Some(Stopped::Failed(e)) if e.to_string().starts_with("seed 8, tick "))
    );
}
