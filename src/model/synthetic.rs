//! Shape-faithful random checkpoints built in memory: the published architectures with
//! deterministic random weights scaled so activations and logits stay O(1), for benchmarks that
//! must not depend on downloading a checkpoint.

use std::collections::HashMap;

use serde_json::Value;

use super::weights::{tensor_specs, DecisionWeights};
use crate::laya::config::{AgentConfig, EncoderConfig, LayerKind, OptionLayout};

/// Names accepted by [`published_shape`].
pub const PUBLISHED_SHAPES: [&str; 2] = ["multilingual", "english"];

/// Configs of a published checkpoint shape: `multilingual` (mmBERT-base body, max_len 1024) or
/// `english` (ModernBERT-large body, max_len 512); `None` for another name.
pub fn published_shape(name: &str) -> Option<(EncoderConfig, AgentConfig)> {
    let (d, n, nh, i_, v, theta_local, max_len, head_max_len) = match name {
        "multilingual" => (768, 22, 12, 1152, 256_000, 160_000.0, 1024, 256),
        "english" => (1024, 28, 16, 2624, 50_368, 10_000.0, 512, 192),
        _ => return None,
    };
    Some((
        encoder_config(d, n, nh, i_, v, 128, 3, 160_000.0, theta_local),
        agent_config(2, 2, max_len, head_max_len),
    ))
}

/// A small shape for tests: D 64, 4 layers (full every 3), 4 heads, I 96, V 512, window 8,
/// RoPE thetas 160000/10000, two head layers (one decision-head head), A 2, max_len 64.
pub fn tiny_shape() -> (EncoderConfig, AgentConfig) {
    (encoder_config(64, 4, 4, 96, 512, 8, 3, 160_000.0, 10_000.0), agent_config(2, 2, 64, 32))
}

#[allow(clippy::too_many_arguments)]
fn encoder_config(
    d: usize,
    n: usize,
    nh: usize,
    i_: usize,
    v: usize,
    window: usize,
    every: usize,
    theta_full: f64,
    theta_local: f64,
) -> EncoderConfig {
    EncoderConfig {
        vocab_size: v,
        hidden_size: d,
        num_heads: nh,
        num_layers: n,
        intermediate_size: i_,
        norm_eps: 1e-5,
        norm_bias: false,
        attention_bias: false,
        mlp_bias: false,
        layer_kinds: (0..n)
            .map(|i| if i % every == 0 { LayerKind::Full } else { LayerKind::Sliding })
            .collect(),
        local_attention: window,
        rope_theta_full: theta_full,
        rope_theta_sliding: theta_local,
    }
}

fn agent_config(head_layers: usize, actions: usize, max_len: usize, head_max_len: usize) -> AgentConfig {
    AgentConfig {
        head_layers,
        num_actions: actions,
        max_len,
        head_max_len,
        temperature: [Value::from(1.0), Value::from(1.0), Value::from(1.0)],
        temperature_by_options: Vec::new(),
        option_layout: OptionLayout::Sequential,
    }
}

/// splitmix64: a tiny, fast, well-mixed PRNG (also used to derive per-tensor seeds).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Fill `out` with `center + U(-half, half)` from `seed` (two 24-bit uniforms per draw).
fn fill_uniform(out: &mut [f32], seed: u64, center: f32, half: f32) {
    let mut rng = SplitMix64(seed);
    const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
    let mut pairs = out.chunks_exact_mut(2);
    for p in &mut pairs {
        let r = rng.next();
        let a = ((r >> 40) as u32) as f32 * SCALE; // [0, 1)
        let b = (((r >> 8) & 0xFF_FFFF) as u32) as f32 * SCALE;
        p[0] = center + half * (2.0 * a - 1.0);
        p[1] = center + half * (2.0 * b - 1.0);
    }
    for x in pairs.into_remainder() {
        let a = ((rng.next() >> 40) as u32) as f32 * SCALE;
        *x = center + half * (2.0 * a - 1.0);
    }
}

fn name_seed(seed: u64, name: &str) -> u64 {
    // FNV-1a of the name, mixed with the seed: each tensor's values depend only on (seed, name).
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    SplitMix64(seed ^ h).next()
}

/// Deterministic random weights for the configs (same seed, same values), scaled like a
/// trained model: Linear weights `U(±√(3/fan_in))` (std 1/√fan_in), LayerNorm weights
/// `1 ± 0.1`, biases `±0.02`, embeddings std 1, type embedding `±0.1`.
pub fn random_weights(enc: &EncoderConfig, agent: &AgentConfig, seed: u64) -> DecisionWeights {
    let specs = tensor_specs(enc, agent);
    let mut named = HashMap::with_capacity(specs.len());
    for spec in &specs {
        let n: usize = spec.shape.iter().product();
        let name = spec.name.as_str();
        let (center, half) = if name == "encoder.embeddings.tok_embeddings.weight" {
            (0.0, 3f32.sqrt())
        } else if name == "type_emb.weight" {
            (0.0, 0.1)
        } else if spec.shape.len() == 2 {
            (0.0, (3.0 / spec.shape[1] as f32).sqrt())
        } else if name.ends_with(".bias") || name.ends_with("_bias") {
            (0.0, 0.02)
        } else {
            (1.0, 0.1) // LayerNorm weights
        };
        let mut v = vec![0.0f32; n];
        fill_uniform(&mut v, name_seed(seed, name), center, half);
        named.insert(spec.name.clone(), v);
    }
    // The specs and the values were built from the same configs, so this cannot fail.
    match DecisionWeights::from_named(named, enc, agent) {
        Ok(w) => w,
        Err(e) => unreachable!("synthetic weights do not match their own specs: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_shapes_have_expected_sizes() {
        let (e, a) = published_shape("multilingual").unwrap();
        assert_eq!((e.hidden_size, e.num_layers, e.num_heads), (768, 22, 12));
        assert_eq!((e.intermediate_size, e.vocab_size), (1152, 256_000));
        assert_eq!((e.rope_theta_full, e.rope_theta_sliding), (160_000.0, 160_000.0));
        assert_eq!(e.layer_kinds.iter().filter(|k| **k == LayerKind::Full).count(), 8);
        assert_eq!((a.head_layers, a.num_actions, a.max_len, a.head_max_len), (2, 2, 1024, 256));
        let (e, a) = published_shape("english").unwrap();
        assert_eq!((e.hidden_size, e.num_layers, e.num_heads), (1024, 28, 16));
        assert_eq!((e.intermediate_size, e.vocab_size), (2624, 50_368));
        assert_eq!((e.rope_theta_full, e.rope_theta_sliding), (160_000.0, 10_000.0));
        assert_eq!((a.max_len, a.head_max_len), (512, 192));
        assert!(published_shape("nope").is_none());
    }

    #[test]
    fn random_weights_are_deterministic_and_seed_dependent() {
        let (e, a) = tiny_shape();
        let w1 = random_weights(&e, &a, 7);
        let w2 = random_weights(&e, &a, 7);
        let w3 = random_weights(&e, &a, 8);
        assert_eq!(w1, w2);
        assert_ne!(w1, w3);
        w1.check(&e, &a).unwrap();
        // Linear weights stay inside ±sqrt(3/fan_in); norm weights near 1.
        let bound = (3.0f32 / 64.0).sqrt();
        let t = w1.named_tensors();
        let (_, _, wqkv) = t.iter().find(|(n, _, _)| n == "encoder.layers.1.attn.Wqkv.weight").unwrap();
        assert!(wqkv.iter().all(|x| x.abs() <= bound));
        let mean = wqkv.iter().map(|x| *x as f64).sum::<f64>() / wqkv.len() as f64;
        assert!(mean.abs() < 0.01);
        assert!(w1.final_norm.weight.iter().all(|x| (0.9..=1.1).contains(x)));
    }
}
