//! Conformance against fixtures produced by the reference implementation (laya-coreml 0.5.1,
//! CPython 3.11.7). The fixtures under `testdata/` were written by `testdata/generate.py`, which
//! drives the reference `SnakeGame` and `LayaPolicy.decide` with a stub agent; see its header
//! for the exact command. Nothing here runs Python.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::features::Features;
use super::game::{Cell, Direction, Game};
use super::policy::{decision_from_answers, ModelAnswers};
use super::prompt::{build_prompt, PromptStyle};
use super::pyrandom::PyRandom;

const GAMES: &str = include_str!("testdata/games.jsonl");
const PROMPTS: &str = include_str!("testdata/prompts.jsonl");
const DECISIONS: &str = include_str!("testdata/decisions.jsonl");

fn lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines().map(|l| serde_json::from_str(l).unwrap())
}

fn usize_of(v: &Value, key: &str) -> usize {
    v[key].as_u64().unwrap() as usize
}

fn letter(d: char) -> Direction {
    match d {
        'U' => Direction::Up,
        'D' => Direction::Down,
        'L' => Direction::Left,
        'R' => Direction::Right,
        other => panic!("bad action letter {other}"),
    }
}

/// Rebuild the game a fixture line describes: new game, actions, optional hand-set position.
fn setup(case: &Value) -> Game {
    let mut game = Game::new(
        usize_of(case, "width"),
        usize_of(case, "height"),
        case["seed"].as_i64().unwrap(),
        usize_of(case, "initial_length"),
    )
    .unwrap();
    for c in case["actions"].as_str().unwrap().chars() {
        game.step(letter(c)).unwrap();
    }
    if let Some(position) = case.get("position") {
        let body: Vec<Cell> = serde_json::from_value(position["body"].clone()).unwrap();
        let food: Option<Cell> = serde_json::from_value(position["food"].clone()).unwrap();
        game.set_position(body, food).unwrap();
    }
    game
}

fn choose_like_reference(game: &Game, policy: &str, chooser: &mut PyRandom) -> Direction {
    let features = Features::compute(game);
    match policy {
        "planner_best" => features.planner_best.unwrap(),
        "random_safe" => *chooser.choice(&features.safe).unwrap(),
        "random_legal" => {
            let legal: Vec<Direction> =
                features.moves.iter().filter(|m| m.legal).map(|m| m.direction).collect();
            if chooser.random() < 0.02 || legal.is_empty() {
                *chooser.choice(&Direction::ALL).unwrap()
            } else {
                *chooser.choice(&legal).unwrap()
            }
        }
        other => panic!("unknown policy {other}"),
    }
}

#[test]
fn full_games_match_reference_snapshots_tick_by_tick() {
    let mut count = 0;
    for case in lines(GAMES) {
        count += 1;
        let label =
            format!("{}x{} seed {} policy {}", case["width"], case["height"], case["seed"], case["policy"]);
        let mut game = setup(&serde_json::json!({
            "width": case["width"], "height": case["height"], "seed": case["seed"],
            "initial_length": case["initial_length"], "actions": "",
        }));
        let mut chooser = PyRandom::new(i128::from(case["choice_seed"].as_i64().unwrap()));
        let max_steps = case["max_steps"].as_u64().unwrap();
        let mut snaps = vec![serde_json::to_string(&game.snapshot()).unwrap()];
        let mut actions = String::new();
        let mut eats = vec![];
        let mut foods = vec![game.food()];
        while !game.finished() && game.ticks() < max_steps {
            let d = choose_like_reference(&game, case["policy"].as_str().unwrap(), &mut chooser);
            actions.push_str(&d.as_str()[..1]);
            if game.step(d).unwrap() {
                eats.push(game.ticks());
                foods.push(game.food());
            }
            if case["policy"] != "random_legal" {
                assert!(game.cycle_order_valid(), "{label}");
            }
            snaps.push(serde_json::to_string(&game.snapshot()).unwrap());
        }
        assert_eq!(actions, case["actions"].as_str().unwrap(), "{label}");
        assert_eq!(serde_json::to_value(&eats).unwrap(), case["eat_ticks"], "{label}");
        assert_eq!(serde_json::to_value(&foods).unwrap(), case["foods"], "{label}");
        assert_eq!(serde_json::to_value(game.snapshot()).unwrap(), case["final"], "{label}");
        let digest: String =
            Sha256::digest(snaps.join("\n").as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, case["snapshots_sha256"].as_str().unwrap(), "{label}");
    }
    assert_eq!(count, 28);
}

#[test]
fn random_safe_choices_clear_every_6x6_board() {
    for case in lines(GAMES).filter(|c| c["policy"] == "random_safe") {
        assert_eq!(case["final"]["won"], true);
        assert_eq!(case["final"]["length"], 36);
    }
}

#[test]
fn features_and_prompts_are_byte_identical_to_reference() {
    let mut count = 0;
    for case in lines(PROMPTS) {
        count += 1;
        let game = setup(&case);
        let f = Features::compute(&game);
        let expected = &case["features"];
        assert_eq!(f.tail_distance, Some(usize_of(expected, "tail_distance")));
        assert_eq!(f.food_distance, Some(usize_of(expected, "food_distance")));
        assert_eq!(f.food_reachable, expected["food_reachable"].as_bool().unwrap());
        assert_eq!(f.open_cells, usize_of(expected, "open_cells"));
        let moves: Vec<Value> = f
            .moves
            .iter()
            .map(|m| {
                serde_json::json!([
                    m.direction.as_str(),
                    m.legal,
                    m.safe,
                    m.advance,
                    m.reason.as_str(),
                    m.eats
                ])
            })
            .collect();
        assert_eq!(Value::Array(moves), expected["moves"], "{case}");
        let style: PromptStyle = case["style"].as_str().unwrap().parse().unwrap();
        let prompt = build_prompt(&f, style);
        let request = serde_json::json!({"state": prompt.state, "questions": prompt.questions});
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            case["request"].as_str().unwrap(),
            "{}x{} seed {} after {} actions ({style})",
            case["width"],
            case["height"],
            case["seed"],
            case["actions"].as_str().unwrap().len()
        );
    }
    assert_eq!(count, 130);
}

#[test]
fn decisions_match_reference_policy_and_shield() {
    let mut count = 0;
    for case in lines(DECISIONS) {
        count += 1;
        let game = setup(&case);
        let guarded = case["guarded"].as_bool().unwrap();
        let probabilities = &case["probabilities"];
        let result = serde_json::json!({
            "answers": {
                "move": {"type": "choice", "probabilities": {
                    "UP": probabilities[0], "DOWN": probabilities[1],
                    "LEFT": probabilities[2], "RIGHT": probabilities[3],
                }},
                "risk": {"type": "noul", "noul": case["risk"]},
                "food": {"type": "noul", "noul": case["food"]},
            },
            "usage": {"input_tokens": 123},
        });
        let features = Features::compute(&game);
        let outcome = if features.safe.is_empty() && guarded {
            Err("Cycle safety invariant violated: no safe action".to_string())
        } else {
            ModelAnswers::from_result(&result)
                .and_then(|a| decision_from_answers(&features, &a, guarded, 0.0, 0.0))
                .map_err(|e| e.to_string())
        };
        match (outcome, case.get("decision"), case.get("error")) {
            (Ok(decision), Some(expected), None) => {
                let mut got = serde_json::to_value(&decision).unwrap();
                let map = got.as_object_mut().unwrap();
                map.shift_remove("inference_ms");
                map.shift_remove("decision_ms");
                // Compare the serialized text: same keys, same order, same float values.
                assert_eq!(
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(expected).unwrap(),
                    "{case}"
                );
            }
            (Err(message), None, Some(expected)) => {
                assert!(message.starts_with(expected.as_str().unwrap()), "{message} vs {expected}");
            }
            (outcome, _, _) => panic!("outcome {outcome:?} differs from the reference: {case}"),
        }
    }
    assert_eq!(count, 178);
}
