//! The model as raw headers and reports describe it ([`ModelInfo`]).

use serde::{Deserialize, Serialize};

use crate::laya::bundle::Bundle;

/// The model a run measured: its spec and shape. Every field this build writes is present;
/// a record that lacks a shape field (written by hand or by another tool) reads with it
/// `None`, and writes it back absent, never as 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model spec as given (`builtin:tiny`, a folder, `hub:NAME`, `synthetic:NAME`).
    pub spec: String,
    /// Encoder hidden size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_size: Option<usize>,
    /// Encoder layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<usize>,
    /// Attention heads per layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<usize>,
    /// Feed-forward width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intermediate_size: Option<usize>,
    /// Tokenizer vocabulary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab_size: Option<usize>,
    /// Layers of the decision heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_layers: Option<usize>,
    /// Longest row the checkpoint was trained for, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_len: Option<usize>,
}

impl ModelInfo {
    /// A loaded model's spec and shape.
    pub fn describe(bundle: &Bundle) -> Self {
        let e = &bundle.encoder;
        Self {
            spec: bundle.source.clone(),
            hidden_size: Some(e.hidden_size),
            layers: Some(e.num_layers),
            heads: Some(e.num_heads),
            intermediate_size: Some(e.intermediate_size),
            vocab_size: Some(e.vocab_size),
            head_layers: Some(bundle.agent.head_layers),
            max_len: Some(bundle.agent.max_len),
        }
    }

    /// Only the spec (a record that says nothing else about the model).
    pub fn spec_only(spec: &str) -> Self {
        Self {
            spec: spec.to_string(),
            hidden_size: None,
            layers: None,
            heads: None,
            intermediate_size: None,
            vocab_size: None,
            head_layers: None,
            max_len: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ModelInfo;
    use crate::laya::bundle::{Bundle, ModelSpec};

    #[test]
    fn it_writes_what_the_untyped_header_wrote() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let e = &bundle.encoder;
        // The JSON the raw header and the reports carried before the type existed.
        let before = serde_json::json!({
            "spec": bundle.source,
            "hidden_size": e.hidden_size,
            "layers": e.num_layers,
            "heads": e.num_heads,
            "intermediate_size": e.intermediate_size,
            "vocab_size": e.vocab_size,
            "head_layers": bundle.agent.head_layers,
            "max_len": bundle.agent.max_len,
        });
        let info = ModelInfo::describe(&bundle);
        assert_eq!(serde_json::to_string(&info).unwrap(), serde_json::to_string(&before).unwrap());
        assert_eq!(serde_json::from_value::<ModelInfo>(before).unwrap(), info);
    }

    #[test]
    fn a_record_with_only_the_spec_reads_and_writes_back_unchanged() {
        let text = r#"{"spec":"synthetic:multilingual"}"#;
        let info: ModelInfo = serde_json::from_str(text).unwrap();
        assert_eq!(info, ModelInfo::spec_only("synthetic:multilingual"));
        assert_eq!(serde_json::to_string(&info).unwrap(), text);
        assert!(serde_json::from_str::<ModelInfo>(r#"{"layers":2}"#).is_err());
    }
}
