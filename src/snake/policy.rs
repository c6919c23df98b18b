//! The policy: model probabilities → proposed move → (optional) cycle-safety shield → executed
//! move, and the decision record (docs/snake.md §4).
//!
//! The model sits behind [`Predictor`]: it receives the state and questions of
//! [`build_prompt`] and returns the host's result JSON (docs/host-path.md §4.2). The probabilities
//! in that result are already rounded to 4 decimals by the host; everything here sees those
//! rounded values.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::features::Features;
use super::game::{Direction, Game};
use super::prompt::{build_prompt, Prompt, PromptStyle, FOOD_QUESTION, MOVE_QUESTION, RISK_QUESTION};

/// The error a model call may return.
pub type ModelError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The model boundary: one `predict(state, questions)` call per decision.
pub trait Predictor {
    /// Answer the three questions about `state`, returning the host's result JSON
    /// (`{"answers": {qid: …}, "usage": {"input_tokens": …, …}}`).
    fn predict(&mut self, state: &Value, questions: &Value) -> Result<Value, ModelError>;
}

impl<F> Predictor for F
where
    F: FnMut(&Value, &Value) -> Result<Value, ModelError>,
{
    fn predict(&mut self, state: &Value, questions: &Value) -> Result<Value, ModelError> {
        self(state, questions)
    }
}

/// A decision that could not be made; no move is executed.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The shield is on and no move is safe (unreachable while the shield holds).
    #[error("Cycle safety invariant violated: no safe action")]
    NoSafeAction,
    /// The game is dead or won; there is nothing to decide.
    #[error("Cannot decide on a finished game")]
    GameFinished,
    /// A move probability or noul value is not a finite number in [0, 1].
    #[error("Model returned an invalid probability; no move executed ({field} = {value})")]
    InvalidProbability {
        /// Where in the result, e.g. `answers.move.probabilities.UP`.
        field: String,
        /// The offending value as JSON text.
        value: String,
    },
    /// The result JSON lacks a field the policy needs or has the wrong type there.
    #[error("Model result is malformed at `{field}`: {problem}")]
    MalformedResult {
        /// Where in the result.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The model call itself failed.
    #[error("Model call failed: {0}")]
    Model(#[source] ModelError),
}

/// Shield and prompt settings of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Shield on ("guarded", the default) or off (`--unassisted`, "top-1").
    pub guarded: bool,
    /// Prompt wording.
    pub prompt: PromptStyle,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self { guarded: true, prompt: PromptStyle::Compact }
    }
}

/// Move probabilities, one per direction; serialized as `{"UP": p, "DOWN": p, "LEFT": p, "RIGHT": p}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoveProbabilities {
    /// P(UP).
    #[serde(rename = "UP")]
    pub up: f64,
    /// P(DOWN).
    #[serde(rename = "DOWN")]
    pub down: f64,
    /// P(LEFT).
    #[serde(rename = "LEFT")]
    pub left: f64,
    /// P(RIGHT).
    #[serde(rename = "RIGHT")]
    pub right: f64,
}

impl MoveProbabilities {
    /// From values in canonical order (UP, DOWN, LEFT, RIGHT).
    pub fn from_array(values: [f64; 4]) -> Self {
        let [up, down, left, right] = values;
        Self { up, down, left, right }
    }

    /// The probability of `direction`.
    pub fn get(&self, direction: Direction) -> f64 {
        match direction {
            Direction::Up => self.up,
            Direction::Down => self.down,
            Direction::Left => self.left,
            Direction::Right => self.right,
        }
    }

    /// The most probable of `candidates`; ties go to the earliest candidate (Python's `max`).
    pub fn argmax(&self, candidates: &[Direction]) -> Option<Direction> {
        let mut best: Option<Direction> = None;
        for &d in candidates {
            match best {
                Some(b) if self.get(d) <= self.get(b) => {}
                _ => best = Some(d),
            }
        }
        best
    }
}

/// The answers the policy reads from one model result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelAnswers {
    /// `answers.move.probabilities`.
    pub probabilities: MoveProbabilities,
    /// `answers.risk.noul` = P(a safe route is available).
    pub risk_noul: f64,
    /// `answers.food.noul` = P(food reachable).
    pub food_noul: f64,
    /// `usage.input_tokens`.
    pub input_tokens: u64,
    /// `usage.output_tokens` (0 if absent).
    pub output_tokens: u64,
}

fn malformed(field: &str, problem: &str) -> PolicyError {
    PolicyError::MalformedResult { field: field.to_string(), problem: problem.to_string() }
}

fn probability(value: &Value, field: &str) -> Result<f64, PolicyError> {
    let invalid = || PolicyError::InvalidProbability { field: field.to_string(), value: value.to_string() };
    // JSON has no NaN or infinity; `serde_json` turns a non-finite f64 into `null`, so a null
    // probability is how a NaN from the host arrives here.
    if value.is_null() {
        return Err(invalid());
    }
    let number =
        value.as_f64().ok_or_else(|| malformed(field, &format!("expected a number, got {value}")))?;
    if !number.is_finite() || !(0.0..=1.0).contains(&number) {
        return Err(invalid());
    }
    Ok(number)
}

fn count(value: Option<&Value>, field: &str, default: Option<u64>) -> Result<u64, PolicyError> {
    match (value, default) {
        (None, Some(default)) => Ok(default),
        (None, None) => Err(malformed(field, "missing")),
        (Some(v), _) => {
            v.as_u64().ok_or_else(|| malformed(field, &format!("expected a non-negative integer, got {v}")))
        }
    }
}

impl ModelAnswers {
    /// Read and validate a host result (docs/host-path.md §4.2). All four move probabilities and
    /// both noul values must be finite numbers in `[0, 1]`; otherwise no move is made.
    pub fn from_result(result: &Value) -> Result<Self, PolicyError> {
        let answers = result.get("answers").ok_or_else(|| malformed("answers", "missing"))?;
        let probabilities = answers
            .get(MOVE_QUESTION)
            .and_then(|m| m.get("probabilities"))
            .and_then(Value::as_object)
            .ok_or_else(|| malformed("answers.move.probabilities", "missing or not an object"))?;
        let mut values = [0.0; 4];
        for (key, value) in probabilities {
            let direction: Direction = key
                .parse()
                .map_err(|_| malformed("answers.move.probabilities", &format!("unexpected key {key:?}")))?;
            values[direction.index()] = probability(value, &format!("answers.move.probabilities.{key}"))?;
        }
        for direction in Direction::ALL {
            if !probabilities.contains_key(direction.as_str()) {
                return Err(malformed(&format!("answers.move.probabilities.{direction}"), "missing"));
            }
        }
        let noul = |qid: &str| -> Result<f64, PolicyError> {
            let field = format!("answers.{qid}.noul");
            let value =
                answers.get(qid).and_then(|a| a.get("noul")).ok_or_else(|| malformed(&field, "missing"))?;
            probability(value, &field)
        };
        let risk_noul = noul(RISK_QUESTION)?;
        let food_noul = noul(FOOD_QUESTION)?;
        let usage = result.get("usage");
        let input_tokens = count(usage.and_then(|u| u.get("input_tokens")), "usage.input_tokens", None)?;
        let output_tokens =
            count(usage.and_then(|u| u.get("output_tokens")), "usage.output_tokens", Some(0))?;
        Ok(Self {
            probabilities: MoveProbabilities::from_array(values),
            risk_noul,
            food_noul,
            input_tokens,
            output_tokens,
        })
    }
}

/// The proposed and executed moves of one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// Argmax of the move probabilities (ties to the earlier direction).
    pub proposed: Direction,
    /// What the game will execute.
    pub executed: Direction,
    /// `proposed != executed` (only the shield can cause it).
    pub intervened: bool,
}

/// Apply the policy: propose the argmax; with the shield on, replace an unsafe proposal by the
/// most probable safe move (ties to the earlier direction). `None` only if the shield is on and
/// `safe` is empty.
pub fn choose(probabilities: &MoveProbabilities, safe: &[Direction], guarded: bool) -> Option<Choice> {
    let proposed = probabilities.argmax(&Direction::ALL)?;
    let executed = if guarded && !safe.contains(&proposed) { probabilities.argmax(safe)? } else { proposed };
    Some(Choice { proposed, executed, intervened: proposed != executed })
}

mod planner_best_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::snake::game::Direction;

    pub fn serialize<S: Serializer>(value: &Option<Direction>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(value.map_or("NONE", Direction::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Direction>, D::Error> {
        let name = String::deserialize(d)?;
        if name == "NONE" {
            return Ok(None);
        }
        name.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

/// One decision, field for field and in the order of the reference's record (§4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The rounded move probabilities the model returned.
    pub probabilities: MoveProbabilities,
    /// The model's argmax.
    pub proposed: Direction,
    /// The move the game executes.
    pub executed: Direction,
    /// Safe moves in canonical order.
    pub safe_directions: Vec<Direction>,
    /// The shield replaced the proposal.
    pub intervened: bool,
    /// `1 - risk.noul` (not re-rounded); display only.
    pub dead_end_risk: f64,
    /// `food.noul`; display only.
    pub food_reachable: f64,
    /// Time of the `predict` call.
    pub inference_ms: f64,
    /// Time of the whole decision: features, prompt, predict, post-processing.
    pub decision_ms: f64,
    /// `usage.input_tokens` of the result.
    pub input_tokens: u64,
    /// `usage.output_tokens` of the result.
    pub output_tokens: u64,
    /// Number of safe moves.
    pub safe_count: usize,
    /// The planner's preferred move (`"NONE"` when no move is safe).
    #[serde(with = "planner_best_serde")]
    pub planner_best: Option<Direction>,
}

/// Turn validated answers into a decision record (timings supplied by the caller).
pub fn decision_from_answers(
    features: &Features,
    answers: &ModelAnswers,
    guarded: bool,
    inference_ms: f64,
    decision_ms: f64,
) -> Result<Decision, PolicyError> {
    let choice = choose(&answers.probabilities, &features.safe, guarded).ok_or(PolicyError::NoSafeAction)?;
    Ok(Decision {
        probabilities: answers.probabilities,
        proposed: choice.proposed,
        executed: choice.executed,
        safe_directions: features.safe.clone(),
        intervened: choice.intervened,
        dead_end_risk: 1.0 - answers.risk_noul,
        food_reachable: answers.food_noul,
        inference_ms,
        decision_ms,
        input_tokens: answers.input_tokens,
        output_tokens: answers.output_tokens,
        safe_count: features.safe_count(),
        planner_best: features.planner_best,
    })
}

/// The features and prompt of a decision, before the model is called. Fails when the shield is
/// on and nothing is safe, or when the game is finished.
pub fn prepare(game: &Game, config: PolicyConfig) -> Result<(Features, Prompt), PolicyError> {
    let features = Features::compute(game);
    if features.safe.is_empty() && config.guarded {
        return Err(PolicyError::NoSafeAction);
    }
    if game.finished() {
        return Err(PolicyError::GameFinished);
    }
    let prompt = build_prompt(&features, config.prompt);
    Ok((features, prompt))
}

/// One full decision on `game` (which is not modified): features, prompt, one `predict` call,
/// validation, shield. `inference_ms` times only the predict call; `decision_ms` the whole call.
pub fn decide<P: Predictor + ?Sized>(
    game: &Game,
    predictor: &mut P,
    config: PolicyConfig,
) -> Result<Decision, PolicyError> {
    let started = Instant::now();
    let (features, prompt) = prepare(game, config)?;
    let inference_start = Instant::now();
    let result = predictor.predict(&prompt.state, &prompt.questions).map_err(PolicyError::Model)?;
    let inference_ms = inference_start.elapsed().as_secs_f64() * 1000.0;
    let answers = ModelAnswers::from_result(&result)?;
    let mut decision = decision_from_answers(&features, &answers, config.guarded, inference_ms, 0.0)?;
    decision.decision_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(decision)
}

#[cfg(test)]
mod tests;

/// A stub model for tests: even move probabilities (so UP is proposed), risk 0.9, food 0.8,
/// whatever the state.
#[cfg(test)]
pub(crate) fn even_moves(_: &Value, _: &Value) -> Result<Value, ModelError> {
    Ok(serde_json::json!({
        "answers": {
            "move": {"probabilities": {"UP": 0.25, "DOWN": 0.25, "LEFT": 0.25, "RIGHT": 0.25}},
            "risk": {"noul": 0.9},
            "food": {"noul": 0.8},
        },
        "usage": {"input_tokens": 30, "output_tokens": 0},
    }))
}
