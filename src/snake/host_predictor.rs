//! The model behind the policy: the shared host path with one backend (snake.md §3.3–§3.4).
//!
//! One decision is one `predict(state, questions)` call whose three questions become three
//! batch rows. Rows are built by the shared host code (option cap of 48 tokens, head budget,
//! state truncation) and packed into the Snake GPU bundle's budget: B=3 rows, L=64 tokens,
//! K=4 option slots, so one decision is one forward pass.

use serde_json::Value;

use super::policy::{ModelError, Predictor};
use crate::backend::registry::{self, BackendSpec, RegistryError};
use crate::backend::{Backend, ShapeCaps, ShapeMode};
use crate::laya::bundle::Bundle;
use crate::laya::host::{CallOptions, Host};
use crate::report::raw::ArmInfo;

/// Rows per decision: move, risk, food.
pub const SNAKE_BATCH: usize = 3;
/// Tokens per row of the Snake bundle (every compact row is designed to fit).
pub const SNAKE_LENGTH: usize = 64;
/// Option slots per row: four moves, or the two noul options.
pub const SNAKE_OPTIONS: usize = 4;

/// The Snake budget as graph shapes: one fixed B3/L64/K4 forward per decision.
pub fn snake_shapes() -> ShapeCaps {
    ShapeCaps {
        batch_size: SNAKE_BATCH,
        max_length: SNAKE_LENGTH,
        min_length: SNAKE_LENGTH,
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
}

impl<'b> HostPredictor<'b> {
    /// Build the backend `spec` for `bundle` at the Snake budget and wrap it in a host.
    pub fn build(name: &str, spec: &str, bundle: &'b Bundle) -> Result<Self, RegistryError> {
        let parsed = BackendSpec::parse(spec)?;
        let backend = registry::build(&parsed, spec, bundle, Some(snake_shapes()))?;
        Ok(Self::from_backend(name, spec, bundle, backend))
    }

    /// Wrap an already built backend.
    pub fn from_backend(name: &str, spec: &str, bundle: &'b Bundle, backend: Box<dyn Backend>) -> Self {
        let info = backend.info();
        let identity = ArmInfo {
            name: name.to_string(),
            spec: spec.to_string(),
            backend: info.name.clone(),
            precision: info.precision.clone(),
            device: info.device.clone(),
            fingerprint: info.fingerprint.clone(),
            batch: info.shapes.batch_size,
            length: info.shapes.max_length,
            max_options: info.shapes.max_options,
        };
        let host = Host::new(&bundle.tokenizer, &bundle.agent, info.shapes.clone());
        Self { host, backend, options: CallOptions::default(), identity }
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
}

impl Predictor for HostPredictor<'_> {
    fn predict(&mut self, state: &Value, questions: &Value) -> Result<Value, ModelError> {
        let result = self.host.predict(self.backend.as_mut(), state, questions, &self.options, None)?;
        Ok(result.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::ModelSpec;
    use crate::model::synthetic::published_shape;
    use crate::snake::game::Game;
    use crate::snake::policy::{decide, PolicyConfig};

    fn tiny() -> Bundle {
        Bundle::load(&ModelSpec::Builtin, published_shape).unwrap()
    }

    #[test]
    fn builds_at_the_snake_budget_and_decides_in_three_rows() {
        let bundle = tiny();
        let mut arm = HostPredictor::build("a", "portable:f32", &bundle).unwrap();
        let id = arm.identity().clone();
        assert_eq!((id.batch, id.length, id.max_options), (3, 64, 4));
        assert_eq!(id.precision, "f32");
        let game = Game::with_seed(101);
        let decision = decide(&game, &mut arm, PolicyConfig::default()).unwrap();
        let sum: f64 = crate::snake::game::Direction::ALL.iter().map(|&d| decision.probabilities.get(d)).sum();
        assert!((sum - 1.0).abs() < 1e-3, "rounded probabilities sum to {sum}");
        // Three rows of real tokens, each within the 64-token row budget.
        assert!(decision.input_tokens > 3 && decision.input_tokens <= 3 * 64, "{}", decision.input_tokens);
        assert!(decision.safe_directions.contains(&decision.executed));
        assert!(decision.decision_ms >= decision.inference_ms);
    }

    #[test]
    fn unknown_spec_is_a_registry_error() {
        let bundle = tiny();
        assert!(HostPredictor::build("a", "nope:x", &bundle).is_err());
    }
}
