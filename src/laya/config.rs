//! Serde mirrors of `encoder/config.json` and `rl_agent_config.json`, resolved and validated.
//!
//! Every key the reference host reads is here with its default (docs/host-path.md §1.2–§1.3).
//! Parsing goes through `serde_json::Value` so each error can name the file and the field.

use serde_json::{Map, Value};

/// The most layers a config may declare (encoder or decision head). Counts are read before any
/// weight, and buffers are sized from them, so an absurd count in a damaged file is refused
/// here rather than allocated.
pub const MAX_LAYERS: usize = 1024;
/// The largest width a config may declare (vocabulary, hidden, heads, MLP).
pub const MAX_SIZE: usize = 1 << 22;
/// The longest row a config may declare (`max_len`, `head_max_len`).
pub const MAX_TOKENS: usize = 1 << 16;

/// A config file that cannot be used, with the file, the field and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not a JSON object.
    #[error("{file}: not a JSON object ({detail})")]
    NotObject { file: String, detail: String },
    /// A required key is missing.
    #[error("{file}: required key `{field}` is missing; {fix}")]
    Missing { file: String, field: String, fix: String },
    /// A key has a value of the wrong type or out of range.
    #[error("{file}: {field} {problem}")]
    Invalid { file: String, field: String, problem: String },
}

/// Attention kind of one encoder layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// Every valid key is visible.
    Full,
    /// Only keys within `local_attention / 2` positions are visible.
    Sliding,
}

/// The resolved ModernBERT encoder configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderConfig {
    /// `V`, vocabulary rows of the token embedding.
    pub vocab_size: usize,
    /// `D`, hidden size.
    pub hidden_size: usize,
    /// `nh`, attention heads.
    pub num_heads: usize,
    /// `N`, encoder layers.
    pub num_layers: usize,
    /// `I`, gated MLP intermediate size.
    pub intermediate_size: usize,
    /// Epsilon of every encoder LayerNorm.
    pub norm_eps: f64,
    /// Encoder LayerNorms carry a bias.
    pub norm_bias: bool,
    /// `Wqkv`/`Wo` carry a bias.
    pub attention_bias: bool,
    /// `Wi`/`Wo` of the MLP carry a bias.
    pub mlp_bias: bool,
    /// Attention kind per layer, length `num_layers`.
    pub layer_kinds: Vec<LayerKind>,
    /// Sliding window width; key visible iff `|q - k| <= local_attention / 2`.
    pub local_attention: usize,
    /// RoPE base of full-attention layers.
    pub rope_theta_full: f64,
    /// RoPE base of sliding-attention layers.
    pub rope_theta_sliding: f64,
}

impl EncoderConfig {
    /// Per-head dimension `D / nh`.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }

    /// Half of the sliding window: the largest visible distance.
    pub fn half_window(&self) -> usize {
        self.local_attention / 2
    }

    /// RoPE base for a layer kind.
    pub fn rope_theta(&self, kind: LayerKind) -> f64 {
        match kind {
            LayerKind::Full => self.rope_theta_full,
            LayerKind::Sliding => self.rope_theta_sliding,
        }
    }

    /// Parse and validate `encoder/config.json` text; `file` names it in errors.
    pub fn from_json(text: &str, file: &str) -> Result<Self, ConfigError> {
        let obj = parse_object(text, file)?;
        let f = Fields { obj: &obj, file };
        let model_type = f.opt_str("model_type")?;
        let act = f.opt_str("hidden_activation")?.unwrap_or_else(|| "gelu".into());
        if model_type.as_deref() != Some("modernbert") || act != "gelu" {
            return Err(f.invalid(
                if model_type.as_deref() != Some("modernbert") { "model_type" } else { "hidden_activation" },
                "must describe a GELU ModernBERT checkpoint (model_type \"modernbert\", hidden_activation \"gelu\"); only GELU ModernBERT checkpoints are supported",
            ));
        }
        let vocab_size = f.req_usize("vocab_size")?;
        let hidden_size = f.req_usize("hidden_size")?;
        let num_heads = f.req_usize("num_attention_heads")?;
        let num_layers = f.req_usize("num_hidden_layers")?;
        let intermediate_size = f.req_usize("intermediate_size")?;
        for (name, v) in [
            ("vocab_size", vocab_size),
            ("hidden_size", hidden_size),
            ("num_attention_heads", num_heads),
            ("num_hidden_layers", num_layers),
            ("intermediate_size", intermediate_size),
        ] {
            if v == 0 {
                return Err(f.invalid(name, "must be at least 1"));
            }
            let most = if name == "num_hidden_layers" { MAX_LAYERS } else { MAX_SIZE };
            if v > most {
                return Err(f.invalid(name, &format!("must be at most {most} (the published checkpoints are far below; is the file damaged?)")));
            }
        }
        if hidden_size % num_heads != 0 || (hidden_size / num_heads) % 2 != 0 {
            return Err(f.invalid(
                "num_attention_heads",
                &format!(
                    "must divide hidden_size {hidden_size} into an even head size (got {num_heads} heads)"
                ),
            ));
        }
        let norm_eps = f.opt_f64("norm_eps")?.unwrap_or(1e-5);
        if !(norm_eps > 0.0 && norm_eps.is_finite()) {
            return Err(f.invalid("norm_eps", "must be a positive finite number"));
        }
        let norm_bias = f.opt_bool("norm_bias")?.unwrap_or(false);
        let attention_bias = f.opt_bool("attention_bias")?.unwrap_or(false);
        let mlp_bias = f.opt_bool("mlp_bias")?.unwrap_or(false);
        let layer_kinds = match obj.get("layer_types") {
            Some(Value::Array(items)) if !items.is_empty() => {
                let mut kinds = Vec::with_capacity(items.len());
                for item in items {
                    kinds.push(match item.as_str() {
                        Some("full_attention") => LayerKind::Full,
                        Some("sliding_attention") => LayerKind::Sliding,
                        _ => {
                            return Err(f.invalid(
                                "layer_types",
                                "must list only \"full_attention\" or \"sliding_attention\" (Invalid layer_types)",
                            ))
                        }
                    });
                }
                if kinds.len() != num_layers {
                    return Err(f.invalid(
                        "layer_types",
                        &format!(
                            "has {} entries but num_hidden_layers is {num_layers} (Invalid layer_types)",
                            kinds.len()
                        ),
                    ));
                }
                kinds
            }
            Some(Value::Array(_)) | Some(Value::Null) | None => {
                let every = f.opt_usize("global_attn_every_n_layers")?.unwrap_or(3);
                if every == 0 {
                    return Err(f.invalid("global_attn_every_n_layers", "must be at least 1"));
                }
                (0..num_layers)
                    .map(|i| if i % every == 0 { LayerKind::Full } else { LayerKind::Sliding })
                    .collect()
            }
            Some(_) => return Err(f.invalid("layer_types", "must be a list (Invalid layer_types)")),
        };
        let local_attention = f.opt_usize("local_attention")?.unwrap_or(128);
        let global = f.opt_f64("global_rope_theta")?.unwrap_or(160_000.0);
        let local = f.opt_f64("local_rope_theta")?.unwrap_or(10_000.0);
        let rope_theta_full = rope_theta(&f, "full_attention", global)?;
        let rope_theta_sliding = rope_theta(&f, "sliding_attention", local)?;
        Ok(Self {
            vocab_size,
            hidden_size,
            num_heads,
            num_layers,
            intermediate_size,
            norm_eps,
            norm_bias,
            attention_bias,
            mlp_bias,
            layer_kinds,
            local_attention,
            rope_theta_full,
            rope_theta_sliding,
        })
    }
}

/// The tokenizer's special token ids, as a Hugging Face ModernBERT config names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialIds {
    /// `[CLS]` (also `bos_token_id`).
    pub cls: u32,
    /// `[SEP]` (also `eos_token_id`).
    pub sep: u32,
    /// `[PAD]`.
    pub pad: u32,
}

impl EncoderConfig {
    /// `encoder/config.json` text that [`EncoderConfig::from_json`] reads back to `self`:
    /// explicit `layer_types`, per-kind RoPE bases, `max_position_embeddings` and the special
    /// token ids (which the host does not read; other runtimes check `max_len` against the
    /// first, and transformers' ModernBERT defaults the ids to ModernBERT's own 50281..50283,
    /// outside a smaller vocabulary, where the config does not give them).
    pub fn to_json(&self, max_position_embeddings: usize, ids: SpecialIds) -> String {
        let kinds: Vec<&str> = self
            .layer_kinds
            .iter()
            .map(|k| match k {
                LayerKind::Full => "full_attention",
                LayerKind::Sliding => "sliding_attention",
            })
            .collect();
        let v = serde_json::json!({
            "model_type": "modernbert",
            "hidden_activation": "gelu",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_heads,
            "num_hidden_layers": self.num_layers,
            "intermediate_size": self.intermediate_size,
            "norm_eps": self.norm_eps,
            "norm_bias": self.norm_bias,
            "attention_bias": self.attention_bias,
            "mlp_bias": self.mlp_bias,
            "layer_types": kinds,
            "local_attention": self.local_attention,
            "global_rope_theta": self.rope_theta_full,
            "local_rope_theta": self.rope_theta_sliding,
            "max_position_embeddings": max_position_embeddings,
            "pad_token_id": ids.pad,
            "bos_token_id": ids.cls,
            "eos_token_id": ids.sep,
            "cls_token_id": ids.cls,
            "sep_token_id": ids.sep,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }
}

impl AgentConfig {
    /// `rl_agent_config.json` text that [`AgentConfig::from_json`] reads back to `self`.
    /// Only the number of `act_costs` entries is part of the config (docs/host-path.md §1.3),
    /// so the export names them `ask`, `action_2`, … with cost 0; `encoder` names where the
    /// weights came from (other runtimes require the key).
    pub fn to_json(&self, encoder: &str) -> String {
        let costs: Map<String, Value> = (1..self.num_actions)
            .map(|i| (if i == 1 { "ask".to_string() } else { format!("action_{i}") }, Value::from(0.0)))
            .collect();
        let by_options: Map<String, Value> = self.temperature_by_options.iter().cloned().collect();
        let v = serde_json::json!({
            "encoder": encoder,
            "head_layers": self.head_layers,
            "act_costs": costs,
            "max_len": self.max_len,
            "head_max_len": self.head_max_len,
            "temperature": self.temperature,
            "temperature_by_options": by_options,
            "option_layout": match self.option_layout {
                OptionLayout::Sequential => "sequential",
                OptionLayout::Parallel => "parallel",
            },
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }
}

/// RoPE base for one layer kind: per-kind `rope_parameters[kind]`, then a flat
/// `rope_parameters.rope_theta`, then the `global_/local_rope_theta` fallback.
fn rope_theta(f: &Fields<'_>, kind: &str, fallback: f64) -> Result<f64, ConfigError> {
    let field = format!("rope_parameters.{kind}");
    let params = match f.obj.get("rope_parameters") {
        None | Some(Value::Null) => return Ok(fallback),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(f.invalid("rope_parameters", "must be an object")),
    };
    let (table, name) = match params.get(kind) {
        Some(Value::Object(per_kind)) => (per_kind, field),
        Some(_) => return Err(f.invalid(&field, "must be an object")),
        None => (params, "rope_parameters".to_string()),
    };
    if let Some(t) = table.get("rope_type") {
        if t.as_str() != Some("default") {
            return Err(f.invalid(
                &format!("{name}.rope_type"),
                "must be \"default\"; only default RoPE is supported",
            ));
        }
    }
    match table.get("rope_theta") {
        None | Some(Value::Null) => Ok(fallback),
        Some(v) => match v.as_f64() {
            Some(x) if x > 0.0 && x.is_finite() => Ok(x),
            _ => Err(f.invalid(&format!("{name}.rope_theta"), "must be a positive number")),
        },
    }
}

/// Sequential or parallel option layout (docs/host-path.md §3.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionLayout {
    /// Options follow each other; positions are token indices.
    Sequential,
    /// Every option restarts at the first marker's position and cannot see the others.
    Parallel,
}

/// A temperature as written in the checkpoint, before the [0.5, 5] clamp.
pub type RawTemperature = Value;

/// The resolved agent/head configuration of `rl_agent_config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// `H`, decision-head layers.
    pub head_layers: usize,
    /// `A = len(act_costs) + 1`.
    pub num_actions: usize,
    /// Total token budget per row (before the graph clamp).
    pub max_len: usize,
    /// Soft budget for question head + options.
    pub head_max_len: usize,
    /// Raw per-qtype temperatures `[choice, score, noul]`.
    pub temperature: [RawTemperature; 3],
    /// Raw bucket temperatures (`"choice:3-5"` -> value), in file order.
    pub temperature_by_options: Vec<(String, RawTemperature)>,
    /// Option layout of the checkpoint.
    pub option_layout: OptionLayout,
}

impl AgentConfig {
    /// Parse and validate `rl_agent_config.json` text; `file` names it in errors.
    pub fn from_json(text: &str, file: &str) -> Result<Self, ConfigError> {
        let obj = parse_object(text, file)?;
        let f = Fields { obj: &obj, file };
        let head_layers = match obj.get("head_layers") {
            None => {
                return Err(ConfigError::Missing {
                    file: file.into(),
                    field: "head_layers".into(),
                    fix: "add the number of decision-head layers the checkpoint was trained with (published checkpoints use 2)".into(),
                })
            }
            Some(_) => f.req_usize("head_layers")?,
        };
        if head_layers > MAX_LAYERS {
            return Err(f.invalid(
                "head_layers",
                &format!("must be at most {MAX_LAYERS} (published checkpoints use 2; is the file damaged?)"),
            ));
        }
        let num_actions = match obj.get("act_costs") {
            None | Some(Value::Null) => 1,
            Some(Value::Object(m)) => m.len() + 1,
            Some(_) => return Err(f.invalid("act_costs", "must be an object of action -> cost")),
        };
        let max_len = f.opt_usize("max_len")?.unwrap_or(512);
        let head_max_len = f.opt_usize("head_max_len")?.unwrap_or(192);
        if max_len == 0 {
            return Err(f.invalid("max_len", "must be at least 1"));
        }
        for (name, v) in [("max_len", max_len), ("head_max_len", head_max_len)] {
            if v > MAX_TOKENS {
                return Err(f.invalid(
                    name,
                    &format!("must be at most {MAX_TOKENS} tokens (published checkpoints use 512 and 192; is the file damaged?)"),
                ));
            }
        }
        let temperature = match obj.get("temperature") {
            None | Some(Value::Null) => [Value::from(1.0), Value::from(1.0), Value::from(1.0)],
            Some(Value::Array(a)) if a.len() == 3 => [a[0].clone(), a[1].clone(), a[2].clone()],
            Some(_) => {
                return Err(f.invalid("temperature", "must be a list of 3 floats [choice, score, noul]"));
            }
        };
        let temperature_by_options = match obj.get("temperature_by_options") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(_) => {
                return Err(f.invalid(
                    "temperature_by_options",
                    "must be an object of bucket (e.g. \"choice:3-5\") -> temperature",
                ))
            }
        };
        let option_layout = match obj.get("option_layout") {
            None | Some(Value::Null) => OptionLayout::Sequential,
            Some(Value::String(s)) if s == "sequential" => OptionLayout::Sequential,
            Some(Value::String(s)) if s == "parallel" => OptionLayout::Parallel,
            Some(other) => {
                return Err(f.invalid(
                    "option_layout",
                    &format!(
                        "is invalid (Unknown option_layout: {}); use \"sequential\" or \"parallel\"",
                        super::pyjson::py_repr(other)
                    ),
                ))
            }
        };
        Ok(Self {
            head_layers,
            num_actions,
            max_len,
            head_max_len,
            temperature,
            temperature_by_options,
            option_layout,
        })
    }
}

/// Heads of the decision head's attention: `max(1, D / 64)`.
pub fn decision_head_heads(hidden_size: usize) -> usize {
    (hidden_size / 64).max(1)
}

fn parse_object(text: &str, file: &str) -> Result<Map<String, Value>, ConfigError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => {
            Err(ConfigError::NotObject { file: file.into(), detail: "top level is not an object".into() })
        }
        Err(e) => Err(ConfigError::NotObject { file: file.into(), detail: e.to_string() }),
    }
}

struct Fields<'a> {
    obj: &'a Map<String, Value>,
    file: &'a str,
}

impl Fields<'_> {
    fn invalid(&self, field: &str, problem: &str) -> ConfigError {
        ConfigError::Invalid { file: self.file.into(), field: field.into(), problem: problem.into() }
    }
    fn req_usize(&self, key: &str) -> Result<usize, ConfigError> {
        self.opt_usize(key)?.ok_or_else(|| ConfigError::Missing {
            file: self.file.into(),
            field: key.into(),
            fix: "add it from the checkpoint's original config".into(),
        })
    }
    fn opt_usize(&self, key: &str) -> Result<Option<usize>, ConfigError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|x| usize::try_from(x).ok())
                .map(Some)
                .ok_or_else(|| self.invalid(key, &format!("must be a non-negative integer, got {v}"))),
        }
    }
    fn opt_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_f64().map(Some).ok_or_else(|| self.invalid(key, &format!("must be a number, got {v}")))
            }
        }
    }
    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.invalid(key, &format!("must be true or false, got {v}"))),
        }
    }
    fn opt_str(&self, key: &str) -> Result<Option<String>, ConfigError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.invalid(key, &format!("must be a string, got {v}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(extra: &str) -> Result<EncoderConfig, ConfigError> {
        let text = format!(
            r#"{{"model_type": "modernbert", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
                "num_hidden_layers": 4, "intermediate_size": 12{extra}}}"#
        );
        EncoderConfig::from_json(&text, "encoder/config.json")
    }

    #[test]
    fn configs_written_by_to_json_read_back_equal() {
        let e = enc(r#", "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"], "norm_bias": true, "local_attention": 16, "local_rope_theta": 7.5"#).unwrap();
        let text = e.to_json(8192, SpecialIds { cls: 1, sep: 2, pad: 3 });
        assert_eq!(EncoderConfig::from_json(&text, "x").unwrap(), e);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["max_position_embeddings"], 8192);
        let ids =
            ["pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id"].map(|k| &v[k]);
        assert_eq!(ids, [3, 1, 2, 1, 2]);
        assert_eq!(v["layer_types"][1], "sliding_attention");
        let a = AgentConfig::from_json(
            r#"{"head_layers": 2, "act_costs": {"ask": 0.1, "call": 0.2}, "max_len": 96, "head_max_len": 40,
                "temperature": [1.3, 1.2, "bad"], "temperature_by_options": {"choice:2": 1.9, "noul:2": 2.0},
                "option_layout": "parallel"}"#,
            "rl",
        )
        .unwrap();
        let text = a.to_json("synthetic:tiny");
        assert_eq!(AgentConfig::from_json(&text, "rl").unwrap(), a);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["encoder"], "synthetic:tiny");
        assert_eq!(v["act_costs"], serde_json::json!({"ask": 0.0, "action_2": 0.0}));
        assert_eq!(v["temperature"][2], "bad", "raw temperatures are kept as written");
    }

    #[test]
    fn encoder_defaults_follow_the_reference() {
        let e = enc("").unwrap();
        assert_eq!(e.layer_kinds, [LayerKind::Full, LayerKind::Sliding, LayerKind::Sliding, LayerKind::Full]);
        assert_eq!((e.local_attention, e.half_window()), (128, 64));
        assert_eq!((e.rope_theta_full, e.rope_theta_sliding), (160_000.0, 10_000.0));
        assert_eq!((e.norm_eps, e.norm_bias, e.attention_bias, e.mlp_bias), (1e-5, false, false, false));
        assert_eq!(e.head_dim(), 4);
    }

    #[test]
    fn rope_theta_prefers_per_kind_then_flat_then_fallback() {
        let e =
            enc(r#", "rope_parameters": {"full_attention": {"rope_theta": 5.0}}, "local_rope_theta": 7.0"#)
                .unwrap();
        assert_eq!((e.rope_theta_full, e.rope_theta_sliding), (5.0, 7.0));
        let e = enc(r#", "rope_parameters": {"rope_theta": 9.0}"#).unwrap();
        assert_eq!((e.rope_theta_full, e.rope_theta_sliding), (9.0, 9.0));
        let err = enc(r#", "rope_parameters": {"sliding_attention": {"rope_type": "yarn"}}"#).unwrap_err();
        assert!(err.to_string().contains("only default RoPE is supported"), "{err}");
    }

    #[test]
    fn rejects_invalid_encoder_configs_naming_the_field() {
        assert!(enc(r#", "layer_types": ["full_attention"]"#)
            .unwrap_err()
            .to_string()
            .contains("layer_types"));
        assert!(enc(r#", "layer_types": ["full_attention", "x", "x", "x"]"#)
            .unwrap_err()
            .to_string()
            .contains("Invalid layer_types"));
        let e = EncoderConfig::from_json(r#"{"model_type": "bert"}"#, "encoder/config.json").unwrap_err();
        assert!(e.to_string().contains("model_type"), "{e}");
        let e =
            EncoderConfig::from_json(r#"{"model_type": "modernbert"}"#, "encoder/config.json").unwrap_err();
        assert!(e.to_string().contains("vocab_size"), "{e}");
        let e = enc(
            r#", "hidden_size": 6, "num_attention_heads": 2"#.replace(", \"hidden_size\": 6", "").as_str(),
        );
        assert!(e.is_ok());
        let text = r#"{"model_type": "modernbert", "vocab_size": 10, "hidden_size": 6, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 4}"#;
        assert!(EncoderConfig::from_json(text, "c").unwrap_err().to_string().contains("even head size"));
        // Counts a damaged file could hold are refused before anything is sized from them
        // (2^64 − 1 layers once panicked on a capacity overflow).
        let huge = r#"{"model_type": "modernbert", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 18446744073709551615, "intermediate_size": 4}"#;
        let e = EncoderConfig::from_json(huge, "c").unwrap_err().to_string();
        assert!(e.contains("num_hidden_layers") && e.contains("must be at most 1024"), "{e}");
        let wide = huge
            .replace("18446744073709551615", "1")
            .replace("\"vocab_size\": 10", "\"vocab_size\": 4194305");
        let e = EncoderConfig::from_json(&wide, "c").unwrap_err().to_string();
        assert!(e.contains("vocab_size") && e.contains("must be at most 4194304"), "{e}");
    }

    #[test]
    fn agent_config_defaults_and_actions() {
        let a =
            AgentConfig::from_json(r#"{"head_layers": 2, "act_costs": {"ask": 1, "wait": 2}}"#, "rl.json")
                .unwrap();
        assert_eq!((a.num_actions, a.max_len, a.head_max_len), (3, 512, 192));
        assert_eq!(a.option_layout, OptionLayout::Sequential);
        assert_eq!(a.temperature, [Value::from(1.0), Value::from(1.0), Value::from(1.0)]);
        let e = AgentConfig::from_json(r#"{"max_len": 96}"#, "rl.json").unwrap_err();
        assert!(e.to_string().contains("head_layers"), "{e}");
        let e = AgentConfig::from_json(r#"{"head_layers": 2, "option_layout": "diagonal"}"#, "rl.json")
            .unwrap_err();
        assert!(e.to_string().contains("Unknown option_layout: 'diagonal'"), "{e}");
        // 2^32 tokens once aborted on a 137 GB allocation of the rotary tables.
        for (field, text) in [
            ("max_len", r#"{"head_layers": 2, "max_len": 4294967296}"#),
            ("head_max_len", r#"{"head_layers": 2, "head_max_len": 65537}"#),
            ("head_layers", r#"{"head_layers": 18446744073709551615}"#),
        ] {
            let e = AgentConfig::from_json(text, "rl.json").unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("must be at most"), "{field}: {e}");
        }
        assert!(AgentConfig::from_json(r#"{"head_layers": 2, "max_len": 65536}"#, "rl.json").is_ok());
        assert_eq!(decision_head_heads(32), 1);
        assert_eq!(decision_head_heads(768), 12);
    }
}
