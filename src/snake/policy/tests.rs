//! Policy and shield tests (docs/snake.md §4, §7 test 7).
use super::*;
use crate::snake::pyrandom::PyRandom;
use serde_json::json;

/// A host result with the given move probabilities and noul values.
fn result(probs: [f64; 4], risk: f64, food: f64) -> Value {
    json!({
        "model": "laya-rl-agent",
        "answers": {
            "move": {"type": "choice", "choice": "UP", "probabilities": {
                "UP": probs[0], "DOWN": probs[1], "LEFT": probs[2], "RIGHT": probs[3]}},
            "risk": {"type": "noul", "noul": risk},
            "food": {"type": "noul", "noul": food},
        },
        "usage": {"input_tokens": 150, "output_tokens": 0},
    })
}

/// Python `round(x, 4)` (exact binary value, ties to even) via correctly rounded formatting.
fn round4(x: f64) -> f64 {
    format!("{x:.4}").parse().unwrap()
}

/// A stub model drawing random probabilities from a seeded CPython generator.
fn random_model(seed: i128) -> impl FnMut(&Value, &Value) -> Result<Value, ModelError> {
    let mut rng = PyRandom::new(seed);
    move |_state: &Value, _questions: &Value| {
        let raw: Vec<f64> = (0..4).map(|_| rng.random()).collect();
        let total: f64 = raw.iter().sum();
        let probs = [0, 1, 2, 3].map(|i| round4(raw[i] / total));
        Ok(result(probs, round4(rng.random()), round4(rng.random())))
    }
}

#[test]
fn shield_replaces_an_unsafe_proposal_with_the_first_most_probable_safe_move() {
    // Seed-7 board: UP is unsafe, LEFT is the reverse; DOWN and RIGHT are safe and tie.
    let game = Game::with_seed(7);
    let third = 0.1 / 3.0;
    let mut model = |_: &Value, _: &Value| -> Result<Value, ModelError> {
        Ok(result([0.9, third, third, third], 0.97, 0.9))
    };
    let decision = decide(&game, &mut model, PolicyConfig::default()).unwrap();
    assert_eq!(decision.proposed, Direction::Up);
    assert_eq!(decision.executed, Direction::Down);
    assert!(decision.intervened);
    assert_eq!(decision.safe_directions, [Direction::Down, Direction::Right]);
    assert!((decision.dead_end_risk - 0.03).abs() < 1e-12);
    assert_eq!(decision.food_reachable, 0.9);
    assert_eq!(decision.input_tokens, 150);
    assert_eq!(decision.planner_best, Some(Direction::Down));
    assert!(decision.decision_ms >= decision.inference_ms);
}

#[test]
fn unassisted_policy_executes_the_unsafe_proposal() {
    let mut game = Game::with_seed(7);
    let mut model =
        |_: &Value, _: &Value| -> Result<Value, ModelError> { Ok(result([0.0, 0.0, 1.0, 0.0], 0.5, 0.5)) };
    let config = PolicyConfig { guarded: false, ..PolicyConfig::default() };
    let decision = decide(&game, &mut model, config).unwrap();
    assert_eq!(decision.executed, Direction::Left);
    assert!(!decision.intervened);
    game.step(decision.executed).unwrap();
    assert_eq!(game.death_reason(), Some(crate::snake::DeathReason::Reverse));
}

#[test]
fn proposal_ties_go_to_the_earlier_direction() {
    let p = MoveProbabilities::from_array([0.25, 0.25, 0.25, 0.25]);
    assert_eq!(p.argmax(&Direction::ALL), Some(Direction::Up));
    let p = MoveProbabilities::from_array([0.1, 0.4, 0.1, 0.4]);
    assert_eq!(p.argmax(&Direction::ALL), Some(Direction::Down));
    let choice = choose(&p, &[Direction::Left, Direction::Right], true).unwrap();
    assert_eq!(choice.proposed, Direction::Down);
    assert_eq!(choice.executed, Direction::Right);
    assert!(choice.intervened);
    assert_eq!(choose(&p, &[], true), None);
    assert_eq!(choose(&p, &[], false).unwrap().executed, Direction::Down);
}

#[test]
fn invalid_probability_is_an_error_and_no_move() {
    for (probs, risk, food) in [
        ([1.5, 0.0, 0.0, 0.0], 0.5, 0.5),
        ([-0.1, 0.5, 0.3, 0.3], 0.5, 0.5),
        ([0.25; 4], 1.2, 0.5),
        ([0.25; 4], 0.5, -0.5),
    ] {
        let error = ModelAnswers::from_result(&result(probs, risk, food)).unwrap_err();
        assert!(matches!(error, PolicyError::InvalidProbability { .. }));
        assert!(error.to_string().starts_with("Model returned an invalid probability; no move executed"));
    }
}

#[test]
fn non_finite_probability_arriving_as_null_is_invalid() {
    // serde_json stores a NaN or infinite f64 as null.
    let mut value = result([0.25; 4], 0.5, 0.5);
    value["answers"]["move"]["probabilities"]["LEFT"] = json!(f64::NAN);
    assert!(value["answers"]["move"]["probabilities"]["LEFT"].is_null());
    assert!(matches!(ModelAnswers::from_result(&value), Err(PolicyError::InvalidProbability { .. })));
    let mut value = result([0.25; 4], 0.5, 0.5);
    value["answers"]["food"]["noul"] = json!(f64::INFINITY);
    assert!(matches!(ModelAnswers::from_result(&value), Err(PolicyError::InvalidProbability { .. })));
}

#[test]
fn malformed_result_names_the_missing_field() {
    let mut missing_right = result([0.25; 4], 0.5, 0.5);
    missing_right["answers"]["move"]["probabilities"].as_object_mut().unwrap().shift_remove("RIGHT");
    let mut text_value = result([0.25; 4], 0.5, 0.5);
    text_value["answers"]["risk"]["noul"] = json!("high");
    let mut extra_key = result([0.25; 4], 0.5, 0.5);
    extra_key["answers"]["move"]["probabilities"]["NORTH"] = json!(0.0);
    let mut no_usage = result([0.25; 4], 0.5, 0.5);
    no_usage.as_object_mut().unwrap().shift_remove("usage");
    let cases = [
        (missing_right, "answers.move.probabilities.RIGHT"),
        (text_value, "answers.risk.noul"),
        (extra_key, "answers.move.probabilities"),
        (no_usage, "usage.input_tokens"),
        (json!({}), "answers"),
    ];
    for (value, field) in cases {
        match ModelAnswers::from_result(&value) {
            Err(PolicyError::MalformedResult { field: got, .. }) => assert_eq!(got, field),
            other => panic!("expected a malformed-result error at {field}, got {other:?}"),
        }
    }
}

#[test]
fn output_tokens_default_to_zero() {
    let mut value = result([0.25; 4], 0.5, 0.5);
    value["usage"].as_object_mut().unwrap().shift_remove("output_tokens");
    assert_eq!(ModelAnswers::from_result(&value).unwrap().output_tokens, 0);
}

#[test]
fn model_failure_is_reported_and_no_move_made() {
    let game = Game::with_seed(7);
    let mut model = |_: &Value, _: &Value| -> Result<Value, ModelError> { Err("device lost".into()) };
    let error = decide(&game, &mut model, PolicyConfig::default()).unwrap_err();
    assert!(matches!(error, PolicyError::Model(_)));
    assert_eq!(error.to_string(), "Model call failed: device lost");
}

#[test]
fn finished_game_cannot_be_decided() {
    let mut game = Game::new(4, 4, 7, 2).unwrap();
    while !game.finished() {
        game.step(Direction::Up).unwrap();
    }
    let mut model = random_model(1);
    assert!(matches!(decide(&game, &mut model, PolicyConfig::default()), Err(PolicyError::NoSafeAction)));
    let unguarded = PolicyConfig { guarded: false, ..PolicyConfig::default() };
    assert!(matches!(decide(&game, &mut model, unguarded), Err(PolicyError::GameFinished)));
}

#[test]
fn predictor_receives_the_prompt_of_the_configured_style() {
    let game = Game::with_seed(101);
    let mut seen = Vec::new();
    let mut model = |state: &Value, questions: &Value| -> Result<Value, ModelError> {
        seen.push((state.clone(), questions.clone()));
        Ok(result([0.1, 0.6, 0.1, 0.2], 0.9, 0.9))
    };
    let config = PolicyConfig { guarded: true, prompt: PromptStyle::Detailed };
    let decision = decide(&game, &mut model, config).unwrap();
    assert_eq!(decision.executed, Direction::Down);
    assert!(seen[0].0.as_str().unwrap().starts_with("Snake game. 2 safe directions"));
    assert_eq!(seen[0].1["move"]["criteria"]["LEFT"], "Collision: reverse. Unsafe.");
}

#[test]
fn decision_record_serializes_fields_in_reference_order() {
    let features = Features::compute(&Game::with_seed(7));
    let answers = ModelAnswers::from_result(&result([0.1, 0.2, 0.3, 0.4], 0.75, 0.5)).unwrap();
    let decision = decision_from_answers(&features, &answers, true, 1.5, 2.5).unwrap();
    let json = serde_json::to_string(&decision).unwrap();
    assert_eq!(
        json,
        "{\"probabilities\":{\"UP\":0.1,\"DOWN\":0.2,\"LEFT\":0.3,\"RIGHT\":0.4},\
         \"proposed\":\"RIGHT\",\"executed\":\"RIGHT\",\"safe_directions\":[\"DOWN\",\"RIGHT\"],\
         \"intervened\":false,\"dead_end_risk\":0.25,\"food_reachable\":0.5,\
         \"inference_ms\":1.5,\"decision_ms\":2.5,\"input_tokens\":150,\"output_tokens\":0,\
         \"safe_count\":2,\"planner_best\":\"DOWN\"}"
    );
    let back: Decision = serde_json::from_str(&json).unwrap();
    assert_eq!(back, decision);
    let mut none = decision.clone();
    none.planner_best = None;
    let text = serde_json::to_string(&none).unwrap();
    assert!(text.ends_with("\"planner_best\":\"NONE\"}"));
    assert_eq!(serde_json::from_str::<Decision>(&text).unwrap(), none);
}

/// Play one guarded game with a random-probability model; returns (ticks, interventions, won).
fn play_guarded(width: usize, height: usize, seed: i64, max_steps: u64) -> (u64, u64, bool) {
    let mut game = Game::new(width, height, seed, 3).unwrap();
    let mut model = random_model(i128::from(seed) + 77);
    let cap = game.capacity() as u64;
    let mut last_eat = 0u64;
    let mut interventions = 0u64;
    while !game.finished() && game.ticks() < max_steps {
        let decision = decide(&game, &mut model, PolicyConfig::default()).unwrap();
        assert!(decision.safe_directions.contains(&decision.executed));
        interventions += u64::from(decision.intervened);
        if game.step(decision.executed).unwrap() {
            last_eat = game.ticks();
        }
        assert!(game.alive(), "{width}x{height} seed {seed} died at tick {}", game.ticks());
        if !game.won() {
            assert!(game.cycle_order_valid());
        }
        assert!(game.ticks() - last_eat <= cap, "food gap exceeded the board size");
    }
    (game.ticks(), interventions, game.won())
}

#[test]
fn shield_never_lets_the_snake_die_with_random_probabilities() {
    let mut total_interventions = 0;
    for seed in 0..24 {
        let (_, interventions, won) = play_guarded(6, 6, seed, 100_000);
        assert!(won, "6x6 seed {seed} should clear the board");
        total_interventions += interventions;
    }
    for seed in 0..4 {
        let (ticks, interventions, _) = play_guarded(8, 7, seed, 100_000);
        assert!(ticks > 0);
        total_interventions += interventions;
    }
    for seed in [101, 102] {
        let (ticks, interventions, _) = play_guarded(24, 16, seed, 1500);
        assert_eq!(ticks, 1500);
        total_interventions += interventions;
    }
    assert!(total_interventions > 0, "random probabilities must trigger the shield");
}

#[test]
fn guarded_games_are_deterministic_per_seed() {
    let run = |seed: i64| {
        let mut game = Game::with_seed(seed);
        let mut model = random_model(5);
        let mut executed = String::new();
        for _ in 0..200 {
            let d = decide(&game, &mut model, PolicyConfig::default()).unwrap();
            executed.push_str(d.executed.as_str());
            game.step(d.executed).unwrap();
        }
        (executed, game.snapshot())
    };
    assert_eq!(run(101), run(101));
    assert_ne!(run(101).1, run(102).1);
}
