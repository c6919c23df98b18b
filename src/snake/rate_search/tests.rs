use std::cell::Cell as StdCell;

use serde_json::{json, Value};

use super::*;
use crate::error::{Classify, Kind};
use crate::report::Render;

/// A model that always answers uniform move probabilities (so UP is proposed).
fn uniform(_: &Value, _: &Value) -> Result<Value, ModelError> {
    Ok(json!({
        "answers": {
            "move": {"probabilities": {"UP": 0.25, "DOWN": 0.25, "LEFT": 0.25, "RIGHT": 0.25}},
            "risk": {"noul": 0.97},
            "food": {"noul": 0.5},
        },
        "usage": {"input_tokens": 40, "output_tokens": 0},
    }))
}

fn settings() -> RateSettings {
    RateSettings {
        width: 24,
        height: 16,
        initial_length: 6,
        prompt: "compact".into(),
        row_length_tokens: 64,
        rates_fps: vec![1.0e6, 2.0e6],
        sweep_steps: 5,
        soak_steps: 4,
        raw_steps: 50,
        seeds: vec![101, 102],
    }
}

fn report(settings: RateSettings) -> RateReport {
    RateReport {
        head: ReportHead {
            command_line: vec![],
            ..ReportHead::current(SCHEMA_VERSION, REPORT_KIND, "2026-11-29T17:00:00Z".into())
        },
        model: ModelInfo::spec_only("stub"),
        arm: ArmInfo {
            name: "stub".into(),
            spec: "stub".into(),
            backend: "stub".into(),
            precision: "none".into(),
            device: "none".into(),
            fingerprint: "0".into(),
            batch: 3,
            length: 64,
            max_options: 4,
            notes: Vec::new(),
            blas: None,
            requests_per_call: None,
            threads: None,
        },
        rng: "test".into(),
        settings,
        method: Map::new(),
        raw_top1: vec![],
        uncapped: None,
        sweep: vec![],
        uncapped_soak: vec![],
        soak_attempts: vec![],
        fastest_tested_stable_fps: None,
        complete: false,
        resumed_sessions: 0,
    }
}

fn no_render(_: &Game, _: &Decision, _: &FrameInfo) -> Result<(), ModelError> {
    Ok(())
}

#[test]
fn unshielded_uniform_model_walks_up_into_the_wall() {
    let mut model = uniform;
    let plan = EpisodePlan { seed: 7, target_fps: None, steps: 50, guarded: false };
    let e = run_episode(&settings(), PolicyConfig::default(), plan, &mut model, &mut no_render, &|| false)
        .unwrap();
    // The head starts at (12,8); UP eight times is still on the board, the ninth hits the wall.
    assert_eq!(e.steps, 9);
    assert!(!e.alive);
    let line = e.line(Phase::RawTop1);
    assert!(
        line.starts_with("raw_top1      top-1 seed=7 target=uncapped steps=9 score=0 alive=false actual="),
        "{line}"
    );
    assert_eq!(e.death_reason, Some(DeathReason::Wall));
    assert!(!e.passes);
    assert_eq!(e.interventions, 0);
    assert_eq!(e.trace.len(), 9);
    assert_eq!(e.deadline_misses, 0);
    assert_eq!(e.miss_fraction, Some(0.0));
}

#[test]
fn shielded_episode_survives_and_times_every_tick() {
    let mut model = uniform;
    let mut frames = 0u64;
    let mut render = |_: &Game, _: &Decision, info: &FrameInfo| -> Result<(), ModelError> {
        frames += 1;
        assert!(info.guarded);
        Ok(())
    };
    let plan = EpisodePlan { seed: 101, target_fps: None, steps: 120, guarded: true };
    let e =
        run_episode(&settings(), PolicyConfig::default(), plan, &mut model, &mut render, &|| false).unwrap();
    assert_eq!((e.steps, frames), (120, 120));
    assert!(e.alive && e.passes);
    assert!(e.interventions > 0, "UP is unsafe at tick 0 of seed 101");
    let active = e.active_tick.unwrap();
    let decision = e.decision.unwrap();
    assert_eq!(active.calls, 120);
    assert!(active.mean_ms >= decision.mean_ms, "the active tick contains the decision");
    // Food gaps are measured from tick 0 between consecutive eats.
    let mut last = 0;
    let mut gap: Option<u64> = None;
    let mut previous_score = 0;
    for t in &e.trace {
        if t.score > previous_score {
            gap = Some(gap.unwrap_or(0).max(t.tick + 1 - last));
            last = t.tick + 1;
        }
        previous_score = t.score;
    }
    assert_eq!(e.max_completed_food_gap, gap);
    assert!(e.score > 0, "120 shielded steps eat at least once on seed 101");
}

#[test]
fn a_slow_render_misses_every_paced_deadline() {
    let mut model = uniform;
    let mut render = |_: &Game, _: &Decision, _: &FrameInfo| -> Result<(), ModelError> {
        std::thread::sleep(Duration::from_millis(12));
        Ok(())
    };
    let plan = EpisodePlan { seed: 7, target_fps: Some(100.0), steps: 3, guarded: true };
    let e =
        run_episode(&settings(), PolicyConfig::default(), plan, &mut model, &mut render, &|| false).unwrap();
    assert_eq!((e.steps, e.deadline_misses), (3, 3));
    assert_eq!(e.miss_fraction, Some(1.0));
    assert!(e.alive && !e.passes);
    assert!(e.trace.iter().all(|t| t.deadline_miss && t.active_tick_ms > 10.0));
}

fn run_all(report: &mut RateReport, stop_after: Option<u64>) -> (Result<(), RateError>, Vec<Phase>) {
    let mut model = uniform;
    let mut render = no_render;
    let mut phases = Vec::new();
    let seen = StdCell::new(0u64);
    let mut sink = |_: &RateReport, phase: Phase, _: &Episode| -> Result<(), ModelError> {
        phases.push(phase);
        seen.set(seen.get() + 1);
        Ok(())
    };
    let stop = || stop_after.is_some_and(|n| seen.get() >= n);
    let result = RateRun {
        policy: PolicyConfig::default(),
        predictor: &mut model,
        render: &mut render,
        sink: &mut sink,
        stop: &stop,
    }
    .run(report);
    (result, phases)
}

#[test]
fn full_run_visits_every_phase_and_finds_a_stable_rate() {
    let mut r = report(settings());
    let (result, phases) = run_all(&mut r, None);
    result.unwrap();
    use Phase::*;
    // Two seeds of top-1, the uncapped episode, two sweep rates, two soaks; then soak attempts.
    assert_eq!(&phases[..7], &[RawTop1, RawTop1, Uncapped, Sweep, Sweep, UncappedSoak, UncappedSoak]);
    assert!(r.complete);
    assert_eq!(r.raw_top1.len(), 2);
    assert!(r.raw_top1.iter().all(|e| !e.guarded && !e.alive));
    // At a million decisions per second every tick misses, so nothing is stable.
    assert!(r.sweep.iter().all(|e| !e.passes));
    assert!(r.soak_attempts.is_empty());
    assert_eq!(r.fastest_tested_stable_fps, None);
}

#[test]
fn soak_attempts_walk_passing_rates_down_until_all_seeds_pass() {
    let mut s = settings();
    // 5/s passes easily (a 200 ms period); a million per second never does.
    s.rates_fps = vec![5.0, 1.0e6];
    s.sweep_steps = 1;
    s.soak_steps = 1;
    let mut r = report(s);
    let (result, _) = run_all(&mut r, None);
    result.unwrap();
    assert_eq!(passing_rates_descending(&r.sweep), vec![5.0]);
    assert_eq!(r.soak_attempts.len(), 1);
    assert_eq!(r.soak_attempts[0].episodes.len(), 2);
    assert_eq!(r.soak_attempts[0].passes, Some(true));
    assert_eq!(r.fastest_tested_stable_fps, Some(5.0));
}

#[test]
fn a_stopped_run_resumes_without_repeating_episodes() {
    let mut full = report(settings());
    run_all(&mut full, None).0.unwrap();
    let mut partial = report(settings());
    let (result, phases) = run_all(&mut partial, Some(3));
    assert!(matches!(result, Err(RateError::Stopped)));
    assert_eq!(phases.len(), 3);
    assert!(!partial.complete);
    let (result, phases) = run_all(&mut partial, None);
    result.unwrap();
    assert_eq!(phases.len(), 4, "only the four missing episodes run");
    assert!(partial.complete);
    assert_eq!(partial.sweep.len(), full.sweep.len());
    assert_eq!(partial.uncapped_soak.len(), full.uncapped_soak.len());
    let outcome = |r: &RateReport| -> Vec<(i64, u64, usize, bool)> {
        let all = r.raw_top1.iter().chain(&r.uncapped).chain(&r.sweep).chain(&r.uncapped_soak);
        all.map(|e| (e.seed, e.steps, e.score, e.alive)).collect()
    };
    assert_eq!(outcome(&partial), outcome(&full));
}

#[test]
fn rates_parse_as_a_sorted_set_of_positive_numbers() {
    assert_eq!(parse_rates(&[30.0, 10.0, 30.0]).unwrap(), vec![10.0, 30.0]);
    assert!(parse_rates(&[0.0]).unwrap_err().to_string().contains("positive"));
    assert!(parse_rates(&[f64::NAN]).is_err());
    // 1e-320 once panicked converting its period to a Duration.
    assert!(parse_rates(&[10.0, 1e-320]).unwrap_err().to_string().contains("at least one per 7 days"));
    assert!(parse_rates(&[]).is_err());
}

#[test]
fn the_report_opens_with_its_head_keys_in_order_and_reads_back() {
    let r = report(settings());
    let json = serde_json::to_string(&r).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).take(8).collect();
    assert_eq!(
        keys,
        ["schema_version", "kind", "created_utc", "tool", "host", "command_line", "model", "arm"]
    );
    assert_eq!(v["created_utc"], "2026-11-29T17:00:00Z");
    let back: RateReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
}

#[test]
fn settings_of_a_new_run_need_good_rates_and_a_seed() {
    let s = RateSettings { rates_fps: vec![2.0e6, 1.0e6], ..settings() }.checked().unwrap();
    assert_eq!(s.rates_fps, [1.0e6, 2.0e6]);
    let e = RateSettings { seeds: vec![], ..settings() }.checked().unwrap_err();
    assert_eq!(
        (e.kind(), e.to_string().as_str()),
        (Kind::Input, "--seed needs at least one seed, e.g. --seed 101,102")
    );
    assert_eq!(
        RateSettings { rates_fps: vec![-1.0], ..settings() }.checked().unwrap_err().kind(),
        Kind::Input
    );
}

#[test]
fn a_report_resumes_only_from_its_own_kind_and_arm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let e = RateReport::read_to_resume(&path).unwrap_err();
    assert!(e.kind() == Kind::Input && e.to_string().contains("cannot read"), "{e}");
    let e = RateReport::read_to_resume(std::path::Path::new("-")).unwrap_err();
    assert!(e.kind() == Kind::Input && e.to_string().starts_with("--resume --output -: "), "{e}");
    std::fs::write(&path, serde_json::to_vec(&report(settings())).unwrap()).unwrap();
    let back = RateReport::read_to_resume(&path).unwrap();
    assert_eq!(back.settings, settings());
    back.check_resumable(&back.model, &back.arm).unwrap();
    let arm = ArmInfo { precision: "f16".into(), ..back.arm.clone() };
    let e = back.check_resumable(&back.model, &arm).unwrap_err();
    assert!(e.kind() == Kind::Input && e.to_string().contains("(precision none → f16)"), "{e}");
    std::fs::write(&path, r#"{"kind": "snake-compare", "schema_version": 1}"#).unwrap();
    let e = RateReport::read_to_resume(&path).unwrap_err();
    assert!(e.to_string().contains("(kind `snake-compare`, schema_version 1)"), "{e}");
}

#[test]
fn a_new_report_holds_the_method_and_prints_its_fastest_stable_rate() {
    let mut r = RateReport::new(ModelInfo::spec_only("m"), report(settings()).arm, settings());
    assert!(r.method.contains_key("stable") && r.raw_top1.is_empty() && !r.complete);
    assert_eq!(r.terminal(), "");
    r.fastest_tested_stable_fps = Some(30.0);
    assert_eq!(
        r.terminal(),
        "fastest tested stable rate: 30 decisions/s (every soak seed alive, ≤1% deadline misses)\n"
    );
}

#[test]
fn a_drawn_run_plays_every_missing_episode() {
    let mut s = settings();
    (s.rates_fps, s.sweep_steps, s.soak_steps, s.raw_steps) = (vec![1.0e6], 2, 2, 2);
    let mut r = report(s);
    let mut model = uniform;
    let mut phases = Vec::new();
    let mut sink = |_: &RateReport, phase: Phase, _: &Episode| -> Result<(), ModelError> {
        phases.push(phase);
        Ok(())
    };
    run_drawn(&mut r, PolicyConfig::default(), &mut model, "stub · none", &mut sink, &|| false).unwrap();
    use Phase::*;
    assert_eq!(phases, [RawTop1, RawTop1, Uncapped, Sweep, UncappedSoak, UncappedSoak]);
    assert!(r.complete && r.uncapped_soak.iter().all(|e| e.steps == 2));
    let mut quiet = |_: &RateReport, _: Phase, _: &Episode| -> Result<(), ModelError> { Ok(()) };
    let stopped =
        run_drawn(&mut report(settings()), PolicyConfig::default(), &mut model, "", &mut quiet, &|| true);
    assert!(matches!(stopped, Err(RateError::Stopped)));
}

#[test]
fn a_resumed_report_counts_its_session_and_keeps_its_settings() {
    let old = report(settings());
    let other = RateSettings { seeds: vec![9], ..settings() };
    let again =
        RateReport::resume_or_new(Some(old.clone()), old.model.clone(), &old.arm, other.clone()).unwrap();
    assert_eq!((again.resumed_sessions, &again.settings), (1, &settings()));
    let f16 = ArmInfo { precision: "f16".into(), ..old.arm.clone() };
    let e = RateReport::resume_or_new(Some(old.clone()), old.model.clone(), &f16, other.clone()).unwrap_err();
    assert_eq!(e.kind(), Kind::Input);
    let new = RateReport::resume_or_new(None, old.model.clone(), &f16, other.clone()).unwrap();
    assert_eq!((new.resumed_sessions, &new.settings, new.arm.precision.as_str()), (0, &other, "f16"));
}

#[test]
fn an_early_end_says_how_to_continue_or_where_the_episodes_are() {
    let file = std::path::Path::new("b.json");
    assert_eq!(
        ended_early(&RateError::Stopped, Some(file)),
        "stopped; b.json keeps every finished episode: continue with --resume --output b.json"
    );
    assert_eq!(
        ended_early(&RateError::Stopped, None),
        "stopped; the report on standard output keeps every finished episode"
    );
    let broke = RateError::Invariant { seed: 7, tick: 3, what: "cycle order" };
    assert_eq!(
        ended_early(&broke, Some(file)),
        "the benchmark stopped; finished episodes are in b.json: seed 7, tick 3: shielded game broke an invariant: cycle order"
    );
    assert!(ended_early(&broke, None)
        .starts_with("the benchmark stopped; finished episodes are in standard output: "));
}
