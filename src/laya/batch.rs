//! The packed batch the host hands an engine and what the engine hands back, the shapes an
//! engine accepts, and [`Forward`]: the one call the host makes. `backend/` implements
//! [`Forward`] for every `Backend` and re-exports these types; `laya/` names no backend.

/// Fixed graph shapes a backend can run (docs/host-path.md §3.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeMode {
    /// One fixed length (the ANE bundle: B1/K32/L).
    Fixed,
    /// A list of allowed lengths; a batch uses the first that holds it.
    Enumerated(Vec<usize>),
    /// Any multiple of 16 in `[min_length, max_length]`.
    Range,
}

/// The shapes a backend accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeCaps {
    /// Rows per forward call.
    pub batch_size: usize,
    /// Longest padded row.
    pub max_length: usize,
    /// Shortest padded row (range mode).
    pub min_length: usize,
    /// Marker slots `K` per row.
    pub max_options: usize,
    /// How a row length becomes a graph length.
    pub mode: ShapeMode,
}

impl ShapeCaps {
    /// The graph length a forward whose longest row has `length` tokens runs at (what
    /// [`super::host::Host::pack`] pads to): the fixed length, the first enumerated length that
    /// holds it, or the next multiple of 16 from `min_length`; `None` when none holds it.
    pub fn graph_length(&self, length: usize) -> Option<usize> {
        if length > self.max_length {
            return None;
        }
        match &self.mode {
            ShapeMode::Enumerated(lengths) => lengths.iter().copied().find(|&n| n >= length),
            ShapeMode::Range => Some(self.max_length.min(self.min_length.max(length.div_ceil(16) * 16))),
            ShapeMode::Fixed => Some(self.max_length),
        }
    }
}

/// One packed batch in graph shape: `B` rows of length `L` with `K` marker slots.
///
/// Row-major flat arrays, exactly the int32 arrays of the reference's `collate_items`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreparedBatch {
    /// `B`.
    pub batch: usize,
    /// `L`.
    pub length: usize,
    /// `K`.
    pub max_options: usize,
    /// `[B, L]` token ids, padded with the pad id.
    pub input_ids: Vec<i32>,
    /// `[B, L]` 1 on real tokens (column 0 is 1 in every row, dummy rows included).
    pub attention_mask: Vec<i32>,
    /// `[B, K]` marker positions (0 in unused slots).
    pub marker_pos: Vec<i32>,
    /// `[B, K]` 1 on used marker slots.
    pub marker_mask: Vec<i32>,
    /// `[B]` question type: 0 choice, 1 score, 2 noul.
    pub qtype: Vec<i32>,
    /// `[B, L]` RoPE positions, parallel layout only.
    pub position_ids: Option<Vec<i32>>,
    /// `[B, L]` option slot of each token (0 shared), parallel layout only.
    pub option_ids: Option<Vec<i32>>,
}

impl PreparedBatch {
    /// Reset to an empty batch of the given shape, reusing the allocations.
    pub fn reset(&mut self, batch: usize, length: usize, max_options: usize, pad_id: i32, parallel: bool) {
        self.batch = batch;
        self.length = length;
        self.max_options = max_options;
        fill(&mut self.input_ids, batch * length, pad_id);
        fill(&mut self.attention_mask, batch * length, 0);
        for row in 0..batch {
            self.attention_mask[row * length] = 1;
        }
        fill(&mut self.marker_pos, batch * max_options, 0);
        fill(&mut self.marker_mask, batch * max_options, 0);
        fill(&mut self.qtype, batch, 0);
        if parallel {
            fill(self.position_ids.get_or_insert_with(Vec::new), batch * length, 0);
            fill(self.option_ids.get_or_insert_with(Vec::new), batch * length, 0);
        } else {
            self.position_ids = None;
            self.option_ids = None;
        }
    }
}

fn fill(v: &mut Vec<i32>, n: usize, value: i32) {
    v.clear();
    v.resize(n, value);
}

/// What a forward returns: `[B, K]` masked logits and `[B, A]` action logits, f32.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForwardOutput {
    /// `B`.
    pub batch: usize,
    /// `K`.
    pub max_options: usize,
    /// `A`.
    pub num_actions: usize,
    /// `[B, K]`, masked slots are `-1e4`.
    pub logits: Vec<f32>,
    /// `[B, A]`.
    pub action_logits: Vec<f32>,
}

/// A forward pass that failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The batch does not fit this backend's shapes or vocabulary.
    #[error("batch does not fit the backend: {0}")]
    Shape(String),
    /// The engine or framework failed at run time.
    #[error("forward failed: {0}")]
    Runtime(String),
}

/// What the host needs of an engine: one forward over a packed batch, and a name for its
/// messages. Every `Backend` of `backend/` is one (a blanket impl in `backend/mod.rs`).
pub trait Forward {
    /// The engine's short name (`BackendInfo::name`), e.g. for a non-finite-output error.
    fn name(&self) -> &str;
    /// Run the model on a packed batch, writing logits and action logits into `out`.
    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError>;
}
