//! The MLX backend (`mlx:fp16|fp32:SRC`): the DecisionModel forward as an `mlx-rs` graph (on
//! Apple silicon's GPU, or MLX's CPU device on Linux), compiled with `compile`, run on 32-token shape buckets, as the published
//! baseline (laya-mlx 0.5.0 with `compile=True`, `pad_to_multiple=32`, `cache_prompts=True`)
//! ran it. See docs/mlx.md.
//!
//! Everything that can be portable is here and tested on Linux: the spec, bucket selection,
//! the input arrays of one call (bucket padding, the attention masks of docs/host-path.md §2
//! step 2 built by the portable engine's mask code, marker slots padded to at least 2, RoPE
//! tables for the parallel layout), the checkpoint → MLX parameter name mapping, the weight
//! fingerprint, the output copy, switching on the host's prompt-prefix cache, and telling
//! BLAS libraries apart (`blas.rs`), and where the arm runs: the Metal GPU when a product
//! checked against the CPU passes, else MLX's CPU device with the reason, or a refusal
//! (`device.rs`). The graph itself (`graph.rs`) is compiled only with the `mlx` feature: on
//! macOS with Metal, on Linux on MLX's CPU build from PyPI (docs/mlx.md).

pub mod blas;
pub mod device;
#[cfg(feature = "mlx")]
pub mod graph;

use std::collections::HashMap;

use super::portable::attention::{window_template, Masks};
use super::{BackendError, ForwardOutput, HostHints, PreparedBatch, ShapeCaps, ShapeMode};
use crate::error::Error;
use crate::laya::bundle::sha256_hex;
use crate::laya::config::{AgentConfig, EncoderConfig, LayerKind};
use crate::laya::prefix::DEFAULT_CAPACITY;

/// `BackendInfo::name` of this backend.
pub const NAME: &str = "mlx";
/// Rows are padded to a multiple of this many tokens (the baseline's `pad_to_multiple=32`).
pub const BUCKET_TOKENS: usize = 32;
/// The baseline pads the marker slots to at least this many (`max(2, kmax)`).
pub const MIN_MARKER_SLOTS: usize = 2;
/// Rows per forward call when the caller does not fix the shapes.
pub const DEFAULT_BATCH: usize = 8;

/// How long a forward retries MLX's kernel-library race ([`is_jit_race`]) before failing.
pub const JIT_RACE_WAIT_MS: u64 = 10_000;

/// Whether an MLX error is the race of its CPU kernel compiler between processes. MLX compiles
/// each fused kernel into a shared library in one folder every process shares
/// (`$TMPDIR/mlx/VERSION/cpu`): a process that finds no library writes the source and runs the
/// compiler there, and a process that looks meanwhile loads a half-written library ("file too
/// short") or compiles a half-written source. The other process finishes the library within a
/// compile's time, so the call is retried ([`JIT_RACE_WAIT_MS`]); two MLX processes at once (two
/// test binaries, or our MLX arm beside laya-mlx) hit it on a fresh machine.
pub fn is_jit_race(message: &str) -> bool {
    ["Could not load C++ shared library", "Failed to compile function", "Failed to load compiled function"]
        .iter()
        .any(|m| message.contains(m))
}

/// Storage and compute precision of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlxDtype {
    /// Every parameter cast to float16 (the published baseline).
    F16,
    /// Every parameter float32.
    F32,
}

impl MlxDtype {
    /// Spec name (`fp16`, `fp32`).
    pub fn name(self) -> &'static str {
        match self {
            MlxDtype::F16 => "fp16",
            MlxDtype::F32 => "fp32",
        }
    }

    /// MLX dtype name (`float16`, `float32`), as laya-mlx's `dtype=` argument spells it.
    pub fn mlx_name(self) -> &'static str {
        match self {
            MlxDtype::F16 => "float16",
            MlxDtype::F32 => "float32",
        }
    }
}

/// A parsed `mlx:DTYPE:SRC` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MlxSpec {
    /// Precision.
    pub dtype: MlxDtype,
    /// The original checkpoint, as a model spec (`builtin:tiny`, a folder, `synthetic:NAME`).
    pub source: String,
}

/// Usage text for spec errors.
pub const USAGE: &str = "mlx:fp16:SRC or mlx:fp32:SRC, SRC being the original checkpoint (a folder, builtin:tiny or synthetic:NAME)";

impl MlxSpec {
    /// Parse what follows `mlx:` (`fp16:builtin:tiny`).
    pub fn parse(rest: &str) -> Result<Self, Error> {
        let (dtype, source) = rest.split_once(':').unwrap_or((rest, ""));
        let dtype = match dtype {
            "fp16" => MlxDtype::F16,
            "fp32" => MlxDtype::F32,
            other => return Err(Error::input(format!("unknown MLX precision `{other}`: write {USAGE}"))),
        };
        if source.trim().is_empty() {
            return Err(Error::input(format!("the MLX spec names no checkpoint: write {USAGE}")));
        }
        Ok(MlxSpec { dtype, source: source.to_string() })
    }
}

/// The padded length of a row of `len` tokens: the next multiple of [`BUCKET_TOKENS`] (never
/// shorter than the row; at least one bucket).
pub fn bucket_length(len: usize) -> usize {
    len.max(1).div_ceil(BUCKET_TOKENS) * BUCKET_TOKENS
}

/// Every bucket up to the one holding `max_len`: 32, 64, ….
pub fn bucket_lengths(max_len: usize) -> Vec<usize> {
    (1..=bucket_length(max_len) / BUCKET_TOKENS).map(|n| n * BUCKET_TOKENS).collect()
}

/// Shapes of the MLX backend when the caller fixes none: the 32-token buckets up to the
/// checkpoint's `max_len`, [`DEFAULT_BATCH`] rows, 255 option slots.
pub fn default_shapes(agent: &AgentConfig) -> ShapeCaps {
    let lengths = bucket_lengths(agent.max_len);
    ShapeCaps {
        batch_size: DEFAULT_BATCH,
        max_length: lengths.last().copied().unwrap_or(BUCKET_TOKENS),
        min_length: BUCKET_TOKENS,
        max_options: 255,
        mode: ShapeMode::Enumerated(lengths),
    }
}

/// The MLX parameter name of a checkpoint tensor, as laya-mlx's loader renames them: packed
/// head attention `in_proj_weight`/`in_proj_bias` become `in_proj.weight`/`in_proj.bias`, and
/// the `scorer`/`act_head` sequential indices move under `.layers.`.
pub fn mlx_parameter_name(checkpoint_name: &str) -> String {
    let mut name = checkpoint_name
        .replace(".in_proj_weight", ".in_proj.weight")
        .replace(".in_proj_bias", ".in_proj.bias");
    for prefix in ["scorer", "act_head"] {
        if let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) {
            if !rest.starts_with("layers.") {
                name = format!("{prefix}.layers.{rest}");
            }
        }
    }
    name
}

/// Map every checkpoint name to its MLX name; two names mapping to one is an error naming both.
pub fn parameter_names<'a>(
    checkpoint_names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<(String, String)>, Error> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for ckpt in checkpoint_names {
        let mlx = mlx_parameter_name(ckpt);
        if let Some(first) = seen.insert(mlx.clone(), ckpt.to_string()) {
            return Err(Error::input(format!(
                "checkpoint tensors `{first}` and `{ckpt}` both map to MLX parameter `{mlx}`; the checkpoint has a duplicate"
            )));
        }
        out.push((ckpt.to_string(), mlx));
    }
    Ok(out)
}

/// Fingerprint of the MLX weights: the checkpoint's own for fp32 (loaded unchanged), else the
/// sha256 of `laya-bench-mlx/1`, the source fingerprint and the dtype, one per line.
pub fn fingerprint(source_fingerprint: &str, dtype: MlxDtype) -> String {
    match dtype {
        MlxDtype::F32 => source_fingerprint.to_string(),
        MlxDtype::F16 => sha256_hex(
            format!(
                "laya-bench-mlx/1\nsource={source_fingerprint}\ndtype={}\ncast=all-parameters\n",
                dtype.mlx_name()
            )
            .as_bytes(),
        ),
    }
}

/// The host hints of an MLX backend: the host's prompt-prefix cache is on (the baseline ran
/// with `cache_prompts=True`), at [`DEFAULT_CAPACITY`] heads.
pub fn host_hints() -> HostHints {
    HostHints { prefix_cache: Some(DEFAULT_CAPACITY) }
}

/// RoPE cos/sin tables for explicit positions (parallel layout), `[B, 1, L, dh/2]` row-major,
/// computed as the baseline does: `inv[m] = 1 / base^(m / half)` and angles in f32.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RopeTables {
    /// `cos(angle)`.
    pub cos: Vec<f32>,
    /// `sin(angle)`.
    pub sin: Vec<f32>,
}

impl RopeTables {
    /// Tables for `positions` (`[B, L]`) with head dimension `head_dim` and base `base`.
    pub fn new(positions: &[i32], head_dim: usize, base: f64) -> Self {
        let half = head_dim / 2;
        let inv: Vec<f32> = (0..half).map(|m| 1.0 / (base as f32).powf(m as f32 / half as f32)).collect();
        let mut t = RopeTables { cos: Vec::with_capacity(positions.len() * half), sin: Vec::new() };
        t.sin.reserve(positions.len() * half);
        for &p in positions {
            for &f in &inv {
                let a = p as f32 * f;
                t.cos.push(a.cos());
                t.sin.push(a.sin());
            }
        }
        t
    }
}

/// The arrays of one MLX call, padded to the bucket: row-major, shapes in the field docs.
#[derive(Debug, Default)]
pub struct MlxInputs {
    /// `B`.
    pub batch: usize,
    /// Bucket length `Lb` (≥ the packed length).
    pub length: usize,
    /// Marker slots `K2 = max(K, 2)`.
    pub slots: usize,
    /// `[B, Lb]` token ids, the pad id past each row.
    pub input_ids: Vec<i32>,
    /// `[B, 1, Lb, Lb]` full-attention mask (true = may attend).
    pub full_mask: Vec<bool>,
    /// `[B, 1, Lb, Lb]` sliding-window mask.
    pub local_mask: Vec<bool>,
    /// `[B, 1, Lb, Lb]` decision-head mask (key padding only).
    pub head_mask: Vec<bool>,
    /// `[B, K2]` marker positions (clamped at 0).
    pub marker_pos: Vec<i32>,
    /// `[B, K2]` used marker slots.
    pub marker_mask: Vec<bool>,
    /// `[B]` question types.
    pub qtype: Vec<i32>,
    /// Parallel layout only: RoPE tables of full and sliding layers.
    pub rope: Option<(RopeTables, RopeTables)>,
    masks: Masks,
    band: (usize, Vec<u8>),
}

fn shape_err(msg: String) -> BackendError {
    BackendError::Shape(msg)
}

impl MlxInputs {
    /// Fill from a packed batch: pad rows to [`bucket_length`], slots to ≥ 2, build the masks.
    pub fn fill(&mut self, b: &PreparedBatch, enc: &EncoderConfig, pad_id: i32) -> Result<(), BackendError> {
        let (n, l, k) = (b.batch, b.length, b.max_options);
        if b.input_ids.len() != n * l || b.attention_mask.len() != n * l {
            return Err(shape_err(format!(
                "input_ids/attention_mask hold {} values, expected B·L = {}",
                b.input_ids.len(),
                n * l
            )));
        }
        if b.marker_pos.len() != n * k || b.marker_mask.len() != n * k || b.qtype.len() != n {
            return Err(shape_err("marker_pos/marker_mask must be [B, K] and qtype [B]".into()));
        }
        if let Some(bad) = b.input_ids.iter().find(|&&id| id < 0 || id as usize >= enc.vocab_size) {
            return Err(shape_err(format!(
                "token id {bad} is outside the vocabulary [0, {})",
                enc.vocab_size
            )));
        }
        if let Some(bad) = b.qtype.iter().find(|&&q| !(0..3).contains(&q)) {
            return Err(shape_err(format!("qtype {bad} is not 0 (choice), 1 (score) or 2 (noul)")));
        }
        let lb = bucket_length(l);
        let k2 = k.max(MIN_MARKER_SLOTS);
        self.batch = n;
        self.length = lb;
        self.slots = k2;
        let pad_rows = |src: &[i32], fill: i32, out: &mut Vec<i32>| {
            out.clear();
            for row in src.chunks_exact(l.max(1)).take(n) {
                out.extend_from_slice(row);
                out.resize(out.len() + lb - l, fill);
            }
        };
        pad_rows(&b.input_ids, pad_id, &mut self.input_ids);
        let mut valid = Vec::with_capacity(n * lb);
        pad_rows(&b.attention_mask, 0, &mut valid);
        let parallel = match (&b.position_ids, &b.option_ids) {
            (Some(p), Some(o)) => {
                let (mut pp, mut oo) = (Vec::new(), Vec::new());
                pad_rows(p, 0, &mut pp);
                pad_rows(o, 0, &mut oo);
                Some((pp, oo))
            }
            _ => None,
        };
        if self.band.0 != lb || self.band.1.is_empty() {
            self.band = (lb, window_template(lb, enc.half_window()));
        }
        let par = parallel.as_ref().map(|(p, o)| (p.as_slice(), o.as_slice()));
        self.masks.build(n, lb, &valid, &self.band.1, enc.half_window(), par);
        let to_bool = |src: &[u8], out: &mut Vec<bool>| {
            out.clear();
            out.extend(src.iter().map(|&m| m != 0));
        };
        to_bool(&self.masks.full, &mut self.full_mask);
        to_bool(&self.masks.local, &mut self.local_mask);
        if par.is_some() {
            to_bool(&self.masks.head, &mut self.head_mask);
        } else {
            self.head_mask.clone_from(&self.full_mask);
        }
        self.marker_pos.clear();
        self.marker_mask.clear();
        for row in 0..n {
            for j in 0..k2 {
                let (pos, used) = if j < k {
                    (b.marker_pos[row * k + j], b.marker_mask[row * k + j] != 0)
                } else {
                    (0, false)
                };
                self.marker_pos.push(pos.max(0));
                self.marker_mask.push(used);
            }
        }
        self.qtype.clone_from(&b.qtype);
        self.rope = parallel.map(|(pos, _)| {
            let dh = enc.head_dim();
            (
                RopeTables::new(&pos, dh, enc.rope_theta(LayerKind::Full)),
                RopeTables::new(&pos, dh, enc.rope_theta(LayerKind::Sliding)),
            )
        });
        Ok(())
    }
}

/// Copy the graph's `[B, K2]` logits and `[B, A]` action logits into `out`, keeping the
/// batch's `K` slots.
pub fn copy_outputs(
    logits: &[f32],
    actions: &[f32],
    inputs: &MlxInputs,
    batch: &PreparedBatch,
    num_actions: usize,
    out: &mut ForwardOutput,
) -> Result<(), BackendError> {
    let (n, k, k2) = (inputs.batch, batch.max_options, inputs.slots);
    if logits.len() != n * k2 || actions.len() != n * num_actions {
        return Err(BackendError::Runtime(format!(
            "MLX returned {} logits and {} action logits, expected {} and {}",
            logits.len(),
            actions.len(),
            n * k2,
            n * num_actions
        )));
    }
    out.batch = n;
    out.max_options = k;
    out.num_actions = num_actions;
    out.logits.clear();
    for row in logits.chunks_exact(k2) {
        out.logits.extend_from_slice(&row[..k]);
    }
    out.action_logits.clear();
    out.action_logits.extend_from_slice(actions);
    Ok(())
}

#[cfg(test)]
mod tests;
