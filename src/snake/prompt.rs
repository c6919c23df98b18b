//! The state text and the three questions (move, risk, food) sent to the model (docs/snake.md §3.1–3.2),
//! built as JSON values byte-identical to the reference's (`serde_json` keeps key order).

use std::fmt;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use super::features::Features;

/// Which prompt wording to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PromptStyle {
    /// Short state and labels (the default; every published result uses it).
    #[default]
    Compact,
    /// Longer state with counts and longer labels.
    Detailed,
}

impl PromptStyle {
    /// `"compact"` or `"detailed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptStyle::Compact => "compact",
            PromptStyle::Detailed => "detailed",
        }
    }
}

impl fmt::Display for PromptStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A prompt style name other than `compact` or `detailed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt must be compact or detailed (got {0:?})")]
pub struct UnknownPromptStyle(pub String);

impl FromStr for PromptStyle {
    type Err = UnknownPromptStyle;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "compact" => Ok(PromptStyle::Compact),
            "detailed" => Ok(PromptStyle::Detailed),
            other => Err(UnknownPromptStyle(other.to_string())),
        }
    }
}

/// The model request of one decision: `predict(state, questions)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The state, a JSON string.
    pub state: Value,
    /// `{"move": …, "risk": …, "food": …}` in that order (the batch row order).
    pub questions: Value,
}

/// Question id of the move choice.
pub const MOVE_QUESTION: &str = "move";
/// Question id of the "safe route available" noul.
pub const RISK_QUESTION: &str = "risk";
/// Question id of the "food reachable" noul.
pub const FOOD_QUESTION: &str = "food";

fn yes_no(value: bool) -> &'static str {
    if value {
        "yes"
    } else {
        "no"
    }
}

/// Build the state and questions for `features` in the given style.
pub fn build_prompt(features: &Features, style: PromptStyle) -> Prompt {
    let has_safe = !features.safe.is_empty();
    let reachable = yes_no(features.food_reachable);
    let mut criteria = Map::new();
    for m in &features.moves {
        let best = features.planner_best == Some(m.direction);
        let label = match style {
            PromptStyle::Compact => {
                if !m.legal {
                    "Blocked. Collision.".to_string()
                } else if !m.safe {
                    "Unsafe. Traps the snake.".to_string()
                } else if m.eats {
                    "Safe. Eat food now. Best.".to_string()
                } else if best {
                    "Safe. Best route to food.".to_string()
                } else {
                    "Safe. Slower route.".to_string()
                }
            }
            PromptStyle::Detailed => {
                if !m.legal {
                    format!("Collision: {}. Unsafe.", m.reason.as_str())
                } else if !m.safe {
                    "Unsafe route. Risk of trapping the snake.".to_string()
                } else if m.eats {
                    "Safe. Eat the food immediately. Best move.".to_string()
                } else if best {
                    "Safe. Best progress toward food.".to_string()
                } else {
                    "Safe but less progress toward food.".to_string()
                }
            }
        };
        criteria.insert(m.direction.as_str().to_string(), Value::String(label));
    }
    let (state, move_text, risk_text, food_text) = match style {
        PromptStyle::Compact => (
            format!("Safe route: {}. Food reachable through empty cells: {reachable}.", yes_no(has_safe)),
            "Choose the best safe move toward food.",
            "Is a safe route available?",
            "Is food reachable through empty cells?",
        ),
        PromptStyle::Detailed => (
            format!(
                "Snake game. {} safe directions available. Food reachable through empty cells: \
                 {reachable}. Open cells: {}. Snake length: {}. {}",
                features.safe_count(),
                features.open_cells,
                features.length,
                if has_safe { "There is a safe route forward." } else { "The snake is trapped." }
            ),
            "Select the safest move with best progress toward food. Avoid collisions.",
            "Is there a safe route forward for the snake?",
            "Is food reachable through the currently empty cells?",
        ),
    };
    let questions = json!({
        MOVE_QUESTION: {"type": "choice", "instructions": move_text, "criteria": criteria},
        RISK_QUESTION: {"type": "noul", "instructions": risk_text},
        FOOD_QUESTION: {"type": "noul", "instructions": food_text},
    });
    Prompt { state: Value::String(state), questions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snake::game::Game;

    #[test]
    fn compact_prompt_for_seed_101_tick_0_matches_spec_example() {
        let prompt = build_prompt(&Features::compute(&Game::with_seed(101)), PromptStyle::Compact);
        assert_eq!(prompt.state, "Safe route: yes. Food reachable through empty cells: yes.");
        let criteria = &prompt.questions["move"]["criteria"];
        assert_eq!(criteria["UP"], "Unsafe. Traps the snake.");
        assert_eq!(criteria["DOWN"], "Safe. Best route to food.");
        assert_eq!(criteria["LEFT"], "Blocked. Collision.");
        assert_eq!(criteria["RIGHT"], "Safe. Slower route.");
        let keys: Vec<&String> = prompt.questions.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["move", "risk", "food"]);
    }

    #[test]
    fn prompt_style_parses_its_two_names_only() {
        assert_eq!("compact".parse(), Ok(PromptStyle::Compact));
        assert_eq!("detailed".parse(), Ok(PromptStyle::Detailed));
        assert!("Compact".parse::<PromptStyle>().is_err());
    }
}
