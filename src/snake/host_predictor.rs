//! The model behind the policy: the shared host path with one backend (docs/snake.md §3.3–§3.4).
//!
//! One decision is one `predict(state, questions)` call whose three questions become three
//! batch rows. Rows are built by the shared host code (option cap of 48 tokens, head budget,
//! state truncation) and packed into the Snake GPU bundle's budget: B=3 rows, L=64 tokens,
//! K=4 option slots, so one decision is one forward pass.

use serde_json::{json, Map, Value};

use super::game::{Game, RNG_IDENTITY};
use super::policy::{prepare, ModelError, PolicyConfig, Predictor};
use super::prompt::PromptStyle;
use crate::backend::registry::{self, BackendSpec, RegistryError};
use crate::backend::{Backend, Context, ShapeCaps, ShapeMode};
use crate::laya::bundle::Bundle;
use crate::laya::host::{CallOptions, Host, HostError};
use crate::laya::question::compile_questions;
use crate::record::model::ModelInfo;
use crate::record::ArmInfo;
use crate::run::Arm;

/// What the policy says it is, in recordings and reports.
pub const POLICY: &str = "Laya probabilities over planner features; optional cycle safety shield";

/// Rows per decision: move, risk, food.
pub const SNAKE_BATCH: usize = 3;
/// Tokens per row of the Snake bundle (every compact row fits with the multilingual
/// tokenizer; smaller tokenizers may need more, see [`HostPredictor::truncations`]).
pub const SNAKE_LENGTH: usize = 64;
/// Option slots per row: four moves, or the two noul options.
pub const SNAKE_OPTIONS: usize = 4;

/// Decisions walked by [`probe_row_tokens`].
pub const PROBE_STEPS: usize = 600;

/// The longest row, in tokens, of the decisions along a probe walk of `game` (the first safe
/// move each tick, up to [`PROBE_STEPS`] ticks or the end of the game) with `bundle`'s tokenizer,
/// nothing cut (up to the model's `max_len`). Tokenization only: no model call.
pub fn probe_row_tokens(bundle: &Bundle, mut game: Game, config: PolicyConfig) -> Result<usize, HostError> {
    let host = Host::new(&bundle.tokenizer, &bundle.agent, snake_shapes(bundle.agent.max_len));
    let options = CallOptions::default();
    let mut longest = 0;
    for _ in 0..PROBE_STEPS {
        let Ok((features, prompt)) = prepare(&game, config) else { break };
        let questions = compile_questions(&prompt.questions)?;
        let rows = host.prepare_rows(std::slice::from_ref(&prompt.state), &questions, &options)?;
        let needed = rows.iter().map(|r| r.ids.len() + r.state.state_tokens_dropped);
        longest = longest.max(needed.max().unwrap_or(0));
        let Some(&next) = features.safe.first() else { break };
        if game.step(next).is_err() || game.finished() {
            break;
        }
    }
    Ok(longest)
}

/// The automatic row length: the smallest multiple of 32 that holds `longest` tokens, at least
/// [`SNAKE_LENGTH`] (the published bundle's 64) and at most the model's `max_len`.
pub fn auto_row_length(longest: usize, max_len: usize) -> usize {
    longest.div_ceil(32).saturating_mul(32).max(SNAKE_LENGTH).min(max_len.max(SNAKE_LENGTH))
}

/// The Snake budget as graph shapes: one fixed B3/L/K4 forward per decision (L = 64 for the
/// published Snake bundle).
pub fn snake_shapes(length: usize) -> ShapeCaps {
    ShapeCaps {
        batch_size: SNAKE_BATCH,
        max_length: length,
        min_length: length,
        max_options: SNAKE_OPTIONS,
        mode: ShapeMode::Fixed,
    }
}

/// One arm: a named backend behind the shared host path, usable as the policy's model.
pub struct HostPredictor<'b> {
    host: Host<'b>,
    backend: Box<dyn Backend>,
    options: CallOptions,
    identity: ArmInfo,
    decisions: u64,
    truncated: u64,
}

impl<'b> HostPredictor<'b> {
    /// Build the backend `spec` for `bundle` at the Snake budget with rows of `length` tokens
    /// and wrap it in a host, with the process's settings and hub (`context`).
    pub fn build(
        name: &str,
        spec: &str,
        bundle: &'b Bundle,
        length: usize,
        context: &Context,
    ) -> Result<Self, RegistryError> {
        let parsed = BackendSpec::parse(spec)?;
        let arm = Arm::build(bundle, name, spec, &parsed, Some(snake_shapes(length)), context)?;
        let identity = ArmInfo::describe(name, spec, arm.backend.info());
        let Arm { host, backend, .. } = arm;
        Ok(Self { host, backend, options: CallOptions::default(), identity, decisions: 0, truncated: 0 })
    }

    /// Wrap an already built backend.
    pub fn from_backend(name: &str, spec: &str, bundle: &'b Bundle, backend: Box<dyn Backend>) -> Self {
        let info = backend.info();
        let identity = ArmInfo::describe(name, spec, info);
        let host = registry::host_for(bundle, info.shapes.clone(), info);
        Self { host, backend, options: CallOptions::default(), identity, decisions: 0, truncated: 0 }
    }

    /// (decisions, decisions whose state was cut to fit a row) since the last reset.
    pub fn truncations(&self) -> (u64, u64) {
        (self.decisions, self.truncated)
    }

    /// Start counting decisions and truncations afresh (e.g. after the warm-up).
    pub fn reset_counts(&mut self) {
        (self.decisions, self.truncated) = (0, 0);
    }

    /// Name, spec, backend, precision, device, weight fingerprint and shapes.
    pub fn identity(&self) -> &ArmInfo {
        &self.identity
    }

    /// The engine label shown in the view and recordings, e.g. `portable · f16`.
    pub fn engine(&self) -> String {
        format!("{} · {}", self.identity.backend, self.identity.precision)
    }

    /// Warnings the checkpoint's configuration raises at load (temperature clamps).
    pub fn load_warnings(&self) -> Vec<String> {
        self.host.load_warnings()
    }

    /// A warning when some decisions' state was cut to fit the row length (the model saw
    /// less); `None` when none was.
    pub fn truncation_warning(&self) -> Option<String> {
        let (decisions, truncated) = self.truncations();
        (truncated > 0).then(|| {
            format!(
                "warning: arm `{}`: the state was cut to fit {} tokens per row in {truncated} of {decisions} decisions; raise --length",
                self.identity.name, self.identity.length
            )
        })
    }

    /// Model metadata for recordings (docs/snake.md §6.1): `bundle`'s model with this arm's
    /// identity and engine, the machine (`hardware`) and the policy's `prompt`.
    pub fn model_metadata(&self, bundle: &Bundle, prompt: PromptStyle, hardware: &str) -> Map<String, Value> {
        let id = self.identity();
        let value = json!({
            "name": bundle.source,
            "model": ModelInfo::describe(bundle),
            "arm": id,
            "engine": self.engine(),
            "weight_fingerprint": id.fingerprint,
            "hardware": hardware,
            "platform": format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
            "versions": {"laya-bench": env!("CARGO_PKG_VERSION")},
            "network": "offline",
            "policy": POLICY,
            "prompt": prompt.as_str(),
            "rng": RNG_IDENTITY,
        });
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

impl Predictor for HostPredictor<'_> {
    fn predict(&mut self, state: &Value, questions: &Value) -> Result<Value, ModelError> {
        // A reference runtime answers the whole request in its worker (its own rows and
        // shapes); every other backend runs behind the shared host path at the Snake budget.
        let result = match self.backend.answers_requests() {
            Some(worker) => worker.answer(state, questions, &self.options)?.0,
            None => self.host.predict(self.backend.as_mut(), state, questions, &self.options, None)?,
        };
        self.decisions += 1;
        self.truncated +=
            u64::from(result.usage.as_ref().is_some_and(|u| u.state_tokens_dropped.is_some_and(|d| d > 0)));
        Ok(result.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::ModelSpec;
    use crate::model::synthetic::published_shape;
    use crate::snake::policy::decide;

    fn tiny() -> Bundle {
        Bundle::load(&ModelSpec::Builtin, published_shape).unwrap()
    }

    #[test]
    fn builds_at_the_snake_budget_and_decides_in_three_rows() {
        let bundle = tiny();
        let mut arm =
            HostPredictor::build("a", "portable:f32", &bundle, SNAKE_LENGTH, &Context::of_test_process())
                .unwrap();
        let id = arm.identity().clone();
        assert_eq!((id.batch, id.length, id.max_options), (3, 64, 4));
        assert_eq!(id.precision, "f32");
        let game = Game::with_seed(101);
        let decision = decide(&game, &mut arm, PolicyConfig::default()).unwrap();
        let sum: f64 =
            crate::snake::game::Direction::ALL.iter().map(|&d| decision.probabilities.get(d)).sum();
        assert!((sum - 1.0).abs() < 1e-3, "rounded probabilities sum to {sum}");
        // Three rows of real tokens, each within the 64-token row budget.
        assert!(decision.input_tokens > 3 && decision.input_tokens <= 3 * 64, "{}", decision.input_tokens);
        assert!(decision.safe_directions.contains(&decision.executed));
        assert!(decision.decision_ms >= decision.inference_ms);
        // builtin:tiny's byte-level tokenizer needs 77 tokens for this compact move row, so L64
        // cuts its state; L80 holds this state's rows.
        assert_eq!(arm.truncations(), (1, 1));
        let mut wide =
            HostPredictor::build("a", "portable:f32", &bundle, 80, &Context::of_test_process()).unwrap();
        decide(&game, &mut wide, PolicyConfig::default()).unwrap();
        assert_eq!(wide.truncations(), (1, 0));
        arm.reset_counts();
        assert_eq!(arm.truncations(), (0, 0));
    }

    #[test]
    fn the_truncation_warning_counts_the_cut_decisions_and_names_the_arm() {
        let bundle = tiny();
        let mut arm =
            HostPredictor::build("a", "portable:f32", &bundle, SNAKE_LENGTH, &Context::of_test_process())
                .unwrap();
        assert_eq!(arm.truncation_warning(), None);
        (arm.decisions, arm.truncated) = (5, 2);
        assert_eq!(
            arm.truncation_warning().unwrap(),
            "warning: arm `a`: the state was cut to fit 64 tokens per row in 2 of 5 decisions; raise --length"
        );
    }

    #[test]
    fn model_metadata_names_the_arm_the_prompt_and_the_machine() {
        let bundle = tiny();
        let arm =
            HostPredictor::build("a", "portable:f16", &bundle, 80, &Context::of_test_process()).unwrap();
        let m = arm.model_metadata(&bundle, PromptStyle::Detailed, "Test CPU");
        assert_eq!(m["engine"], "portable · f16");
        assert_eq!((m["prompt"].as_str(), m["hardware"].as_str()), (Some("detailed"), Some("Test CPU")));
        assert_eq!((m["arm"]["name"].as_str(), m["arm"]["length"].as_u64()), (Some("a"), Some(80)));
        assert_eq!(m["weight_fingerprint"], m["arm"]["fingerprint"]);
        assert_eq!((m["policy"].as_str(), m["rng"].as_str()), (Some(POLICY), Some(RNG_IDENTITY)));
        assert_eq!(m["network"], "offline");
    }

    #[test]
    fn unknown_spec_is_a_registry_error() {
        let bundle = tiny();
        assert!(
            HostPredictor::build("a", "nope:x", &bundle, SNAKE_LENGTH, &Context::of_test_process()).is_err()
        );
    }

    #[test]
    fn the_automatic_row_length_is_the_next_multiple_of_32_from_64_to_max_len() {
        assert_eq!(auto_row_length(0, 512), 64);
        assert_eq!(auto_row_length(40, 512), 64);
        assert_eq!(auto_row_length(64, 512), 64);
        assert_eq!(auto_row_length(65, 512), 96);
        assert_eq!(auto_row_length(81, 512), 96);
        assert_eq!(auto_row_length(141, 512), 160);
        assert_eq!(auto_row_length(600, 512), 512);
        assert_eq!(auto_row_length(100, 48), 64);
    }

    #[test]
    fn the_probe_walk_finds_the_longest_row_of_the_tiny_tokenizer() {
        // Measured on the tiny checkpoint's byte-level tokenizer: the first compact decision
        // needs 77 tokens, the longest along the walk 81 (scores and distances grow); detailed
        // 124 and 141. The published multilingual tokenizer fits the compact rows in 64.
        let bundle = tiny();
        let compact = PolicyConfig { guarded: true, prompt: PromptStyle::Compact };
        let detailed = PolicyConfig { guarded: true, prompt: PromptStyle::Detailed };
        assert_eq!(probe_row_tokens(&bundle, Game::with_seed(101), compact).unwrap(), 81);
        assert_eq!(probe_row_tokens(&bundle, Game::with_seed(101), detailed).unwrap(), 141);
        let length = auto_row_length(81, bundle.agent.max_len);
        assert_eq!(length, 96);
        // At that length a decision is not cut.
        let mut arm =
            HostPredictor::build("a", "portable:f32", &bundle, length, &Context::of_test_process()).unwrap();
        let mut game = Game::with_seed(101);
        for _ in 0..20 {
            let d = decide(&game, &mut arm, compact).unwrap();
            game.step(d.executed).unwrap();
        }
        assert_eq!(arm.truncations(), (20, 0));
    }
}
