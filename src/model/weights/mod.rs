//! Decision-model weights (docs/host-path.md §1.4): every tensor as owned data, organised per
//! layer, and the exact key set the configs imply ([`tensor_specs`]). Reading and writing
//! `model.safetensors` (key checks, dtype conversion, assembly) is in `load.rs`.
//!
//! Matrices are a [`Matrix`] enum: FP32, FP16, BF16 or palettized (grouped LUT, see
//! [`crate::model::palettize`]); engines pick the layout they want once, at construction
//! ([`Matrix::into_layout`], [`DenseHalf::set_order`]).

mod load;

pub use self::load::fingerprint;
pub(crate) use self::load::to_f32;
pub use super::lowp::{DenseHalf, HalfKind, HalfOrder, PaletteOrder, Palettized};
use crate::laya::config::{decision_head_heads, AgentConfig, EncoderConfig};

/// A checkpoint that cannot be used, naming the file, the tensor and what to do.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The bytes are not a readable safetensors file.
    #[error("{file}: not a readable safetensors file ({detail}); the file is truncated or corrupt, download it again and compare its sha256")]
    Corrupt {
        /// File name as given by the caller.
        file: String,
        /// What the parser reported.
        detail: String,
    },
    /// A tensor the configs require is absent.
    #[error("{file}: tensor `{tensor}` (shape {expected:?}) is missing{more}; the weights do not match encoder/config.json and rl_agent_config.json, use the configs shipped with this checkpoint")]
    Missing {
        /// File name.
        file: String,
        /// The first missing tensor.
        tensor: String,
        /// Its expected shape.
        expected: Vec<usize>,
        /// `" (and N more)"` when several are missing.
        more: String,
    },
    /// A tensor the configs do not describe is present.
    #[error("{file}: unexpected tensor `{tensor}` (shape {found:?}){more}; the weights do not match encoder/config.json and rl_agent_config.json (e.g. a bias flag, num_hidden_layers or head_layers differs), use the configs shipped with this checkpoint")]
    Unexpected {
        /// File name.
        file: String,
        /// The first unexpected tensor.
        tensor: String,
        /// Its shape.
        found: Vec<usize>,
        /// `" (and N more)"` when several are unexpected.
        more: String,
    },
    /// A tensor has another shape than the configs imply.
    #[error("{file}: tensor `{tensor}` has shape {found:?}, expected {expected:?}; the weights do not match encoder/config.json and rl_agent_config.json, use the configs shipped with this checkpoint")]
    Shape {
        /// File name.
        file: String,
        /// Tensor name.
        tensor: String,
        /// Shape from the configs.
        expected: Vec<usize>,
        /// Shape in the file.
        found: Vec<usize>,
    },
    /// A tensor is stored in a dtype the loader cannot convert.
    #[error("{file}: tensor `{tensor}` has dtype {found}, expected F32, F16 or BF16; convert the checkpoint to a floating-point safetensors file")]
    Dtype {
        /// File name.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The dtype found.
        found: String,
    },
    /// Weights handed to a constructor do not fit together.
    #[error("inconsistent weights: {0}")]
    Inconsistent(String),
}

/// Storage order of an f32 matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `[rows, cols]` row-major; for a Linear weight this is PyTorch's `[out, in]`.
    RowMajor,
    /// `[rows, cols]` column-major (the transpose is row-major): `data[c * rows + r]`.
    ColMajor,
    /// Rows in panels of 16 (the last one zero-padded), the panels in groups of three (the
    /// last group may have fewer), each group step-major with its panels' 16 values of one
    /// column side by side: group `g` holding `np` panels starts at `g·48·cols`, and `(r, c)`
    /// is at `g·48·cols + c·16·np + (r % 48 / 16)·16 + r % 16`. The operand order of the
    /// portable engine's packed-panel kernels: a 48-column block of the AVX-512 tile, from any
    /// reduction step on, is one contiguous stretch of memory.
    Panels16,
}

/// Rows per panel of [`Layout::Panels16`].
const F32_PANEL: usize = 16;
/// Panels per group of [`Layout::Panels16`].
pub const PANEL_GROUP: usize = 3;

/// Index of `(r, c)` in a [`Layout::Panels16`] array of `rows` rows and `cols` columns.
#[inline]
fn panel_index(r: usize, c: usize, rows: usize, cols: usize) -> usize {
    let group_rows = F32_PANEL * PANEL_GROUP;
    let g = r / group_rows;
    let panels = rows.div_ceil(F32_PANEL);
    let np = PANEL_GROUP.min(panels - g * PANEL_GROUP);
    g * group_rows * cols + c * F32_PANEL * np + (r % group_rows / F32_PANEL) * F32_PANEL + r % F32_PANEL
}

/// A dense f32 matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseF32 {
    rows: usize,
    cols: usize,
    layout: Layout,
    data: Vec<f32>,
}

impl DenseF32 {
    /// Wrap row-major data; `None` if `data.len() != rows * cols`.
    pub fn from_row_major(rows: usize, cols: usize, data: Vec<f32>) -> Option<Self> {
        (data.len() == rows * cols).then_some(Self { rows, cols, layout: Layout::RowMajor, data })
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Storage order of [`Self::data`].
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Raw values in [`Self::layout`] order.
    pub fn data(&self) -> &[f32] {
        &self.data
    }
    /// Element `(r, c)`; `None` outside the matrix.
    pub fn get(&self, r: usize, c: usize) -> Option<f32> {
        if r >= self.rows || c >= self.cols {
            return None;
        }
        Some(match self.layout {
            Layout::RowMajor => self.data[r * self.cols + c],
            Layout::ColMajor => self.data[c * self.rows + r],
            Layout::Panels16 => self.data[panel_index(r, c, self.rows, self.cols)],
        })
    }
    /// Same matrix stored in `layout` (transposes the storage when it differs).
    pub fn into_layout(mut self, layout: Layout) -> Self {
        self.set_layout(layout);
        self
    }
    /// Change the storage order in place (transposes the storage when it differs).
    pub fn set_layout(&mut self, layout: Layout) {
        if layout == self.layout {
            return;
        }
        if self.layout == Layout::Panels16 || layout == Layout::Panels16 {
            // through row-major: panels pad the rows, so this is not a plain transpose
            let (rows, cols) = (self.rows, self.cols);
            let row_major: Vec<f32> = match self.layout {
                Layout::RowMajor => std::mem::take(&mut self.data),
                _ => (0..rows * cols).map(|i| self.get(i / cols, i % cols).unwrap_or(0.0)).collect(),
            };
            self.data = row_major;
            self.layout = Layout::RowMajor;
            if layout == Layout::Panels16 {
                let mut out = vec![0.0f32; rows.next_multiple_of(F32_PANEL) * cols];
                for r in 0..rows {
                    for c in 0..cols {
                        out[panel_index(r, c, rows, cols)] = self.data[r * cols + c];
                    }
                }
                self.data = out;
                self.layout = layout;
            } else {
                self.set_layout(layout);
            }
            return;
        }
        // Storage is an `a × b` row-major array; produce its `b × a` transpose, in tiles.
        let (a, b) = match self.layout {
            Layout::RowMajor => (self.rows, self.cols),
            Layout::ColMajor | Layout::Panels16 => (self.cols, self.rows),
        };
        let mut out = vec![0.0f32; self.data.len()];
        const T: usize = 32;
        for i0 in (0..a).step_by(T) {
            for j0 in (0..b).step_by(T) {
                for i in i0..(i0 + T).min(a) {
                    for j in j0..(j0 + T).min(b) {
                        out[j * a + i] = self.data[i * b + j];
                    }
                }
            }
        }
        self.data = out;
        self.layout = layout;
    }
}

/// A weight matrix in one storage precision.
///
/// Every variant decodes to f32 ([`Matrix::decode_rows`]); products stay f32 unless an engine
/// documents otherwise.
#[derive(Debug, Clone, PartialEq)]
pub enum Matrix {
    /// Dense FP32 values.
    F32(DenseF32),
    /// Dense FP16 values (IEEE binary16 bits).
    F16(DenseHalf),
    /// Dense BF16 values (bfloat16 bits).
    BF16(DenseHalf),
    /// Grouped LUT palettization: per group of output rows a table of `2^bits` f32 centroids,
    /// and a packed `bits`-wide index per element.
    Palettized(Palettized),
}

/// Spec names of the palettized widths, indexed by `bits − 1`.
const PALETTE_NAMES: [&str; 8] = ["w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"];

impl Matrix {
    /// Row-major f32 matrix; `None` if `data.len() != rows * cols`.
    pub fn f32_row_major(rows: usize, cols: usize, data: Vec<f32>) -> Option<Self> {
        DenseF32::from_row_major(rows, cols, data).map(Matrix::F32)
    }
    /// Rows (a Linear's output features).
    pub fn rows(&self) -> usize {
        match self {
            Matrix::F32(m) => m.rows,
            Matrix::F16(m) | Matrix::BF16(m) => m.rows(),
            Matrix::Palettized(m) => m.rows(),
        }
    }
    /// Columns (a Linear's input features).
    pub fn cols(&self) -> usize {
        match self {
            Matrix::F32(m) => m.cols,
            Matrix::F16(m) | Matrix::BF16(m) => m.cols(),
            Matrix::Palettized(m) => m.cols(),
        }
    }
    /// Storage precision name: `f32`, `f16`, `bf16`, or `w<bits>` for a palettized matrix.
    pub fn precision(&self) -> &'static str {
        match self {
            Matrix::F32(_) => "f32",
            Matrix::F16(_) => "f16",
            Matrix::BF16(_) => "bf16",
            Matrix::Palettized(p) => PALETTE_NAMES[(p.bits().clamp(1, 8) - 1) as usize],
        }
    }
    /// Bytes of weight storage actually held: 4 per FP32 value, 2 per FP16/BF16 value
    /// (including any panel padding), packed indices plus f32 tables for a palettized matrix.
    pub fn storage_bytes(&self) -> usize {
        match self {
            Matrix::F32(m) => m.data.len() * 4,
            Matrix::F16(m) | Matrix::BF16(m) => m.data().len() * 2,
            Matrix::Palettized(m) => m.storage_bytes(),
        }
    }
    /// Same matrix in another storage order (a no-op when already there, and for the
    /// 16-bit and palettized variants, which keep their own order).
    pub fn into_layout(mut self, layout: Layout) -> Self {
        self.set_layout(layout);
        self
    }
    /// Change the storage order of an FP32 matrix in place (a no-op when already there, and
    /// for the 16-bit and palettized variants, which keep their own order; see
    /// [`DenseHalf::set_order`]).
    pub fn set_layout(&mut self, layout: Layout) {
        match self {
            Matrix::F32(m) => m.set_layout(layout),
            Matrix::F16(_) | Matrix::BF16(_) | Matrix::Palettized(_) => {}
        }
    }
    /// Round to FP16 or BF16 (a 16-bit or palettized matrix is decoded first).
    pub fn to_half(&self, kind: HalfKind) -> Matrix {
        let h = match self.to_row_major_f32() {
            Some(v) => DenseHalf::from_f32(self.rows(), self.cols(), &v, kind),
            None => None,
        };
        // `to_row_major_f32` returns exactly rows × cols values, so `h` is always `Some`.
        let h = h.unwrap_or_else(|| unreachable!("decoded matrix has rows × cols values"));
        match kind {
            HalfKind::F16 => Matrix::F16(h),
            HalfKind::BF16 => Matrix::BF16(h),
        }
    }
    /// All values as row-major f32 (`rows × cols`); `None` only for an impossible size.
    pub fn to_row_major_f32(&self) -> Option<Vec<f32>> {
        let mut v = vec![0.0f32; self.rows().checked_mul(self.cols())?];
        self.decode_rows(0, self.rows(), &mut v).then_some(v)
    }
    /// The same values as an FP32 matrix (row-major): the dequantized reference.
    pub fn dequantized(&self) -> Matrix {
        match self {
            Matrix::F32(m) => Matrix::F32(m.clone().into_layout(Layout::RowMajor)),
            _ => {
                let v = self.to_row_major_f32().unwrap_or_default();
                DenseF32::from_row_major(self.rows(), self.cols(), v)
                    .map(Matrix::F32)
                    .unwrap_or_else(|| unreachable!("decoded matrix has rows × cols values"))
            }
        }
    }
    /// Decode rows `[r0, r1)` as row-major f32 into `out` (`(r1 − r0)·cols` values); false if
    /// the range or the length does not fit.
    pub fn decode_rows(&self, r0: usize, r1: usize, out: &mut [f32]) -> bool {
        let c = self.cols();
        if r0 > r1 || r1 > self.rows() || out.len() != (r1 - r0) * c {
            return false;
        }
        match self {
            Matrix::F32(m) => match m.layout {
                Layout::RowMajor => out.copy_from_slice(&m.data[r0 * c..r1 * c]),
                Layout::ColMajor => {
                    for (i, row) in out.chunks_exact_mut(c.max(1)).enumerate() {
                        for (j, o) in row.iter_mut().enumerate() {
                            *o = m.data[j * m.rows + r0 + i];
                        }
                    }
                }
                Layout::Panels16 => {
                    for (i, row) in out.chunks_exact_mut(c.max(1)).enumerate() {
                        for (j, o) in row.iter_mut().enumerate() {
                            *o = m.data[panel_index(r0 + i, j, m.rows, c)];
                        }
                    }
                }
            },
            Matrix::F16(m) => return m.decode_rows(HalfKind::F16, r0, r1, out),
            Matrix::BF16(m) => return m.decode_rows(HalfKind::BF16, r0, r1, out),
            Matrix::Palettized(m) => return m.decode_rows(r0, r1, out),
        }
        true
    }
    /// Decode columns `[c0, c1)` of row `r` as f32 into `out` (`c1 − c0` values); false if out
    /// of range.
    pub fn decode_row_segment(&self, r: usize, c0: usize, c1: usize, out: &mut [f32]) -> bool {
        if r >= self.rows() || c0 > c1 || c1 > self.cols() || out.len() != c1 - c0 {
            return false;
        }
        match self {
            Matrix::F32(m) => {
                match m.layout {
                    Layout::RowMajor => out.copy_from_slice(&m.data[r * m.cols + c0..r * m.cols + c1]),
                    Layout::ColMajor => {
                        for (j, o) in out.iter_mut().enumerate() {
                            *o = m.data[(c0 + j) * m.rows + r];
                        }
                    }
                    Layout::Panels16 => {
                        for (j, o) in out.iter_mut().enumerate() {
                            *o = m.data[panel_index(r, c0 + j, m.rows, m.cols)];
                        }
                    }
                }
                true
            }
            Matrix::F16(m) => m.decode_row_segment(HalfKind::F16, r, c0, c1, out),
            Matrix::BF16(m) => m.decode_row_segment(HalfKind::BF16, r, c0, c1, out),
            Matrix::Palettized(m) => m.decode_row_segment(r, c0, c1, out),
        }
    }
    /// Copy row `r` as f32 into `out` (`out.len() == cols`); false if out of range.
    pub fn row_into(&self, r: usize, out: &mut [f32]) -> bool {
        r < self.rows() && self.decode_rows(r, r + 1, out)
    }
    /// `y = W x` in f32 (`x.len() == cols`, `y.len() == rows`); false on a length mismatch.
    pub fn matvec(&self, x: &[f32], y: &mut [f32]) -> bool {
        if x.len() != self.cols() || y.len() != self.rows() {
            return false;
        }
        match self {
            Matrix::F32(m) => match m.layout {
                Layout::RowMajor => {
                    for (r, o) in y.iter_mut().enumerate() {
                        *o = super::ops::dot(&m.data[r * m.cols..(r + 1) * m.cols], x);
                    }
                }
                Layout::ColMajor => {
                    y.fill(0.0);
                    for (c, &xc) in x.iter().enumerate() {
                        let col = &m.data[c * m.rows..(c + 1) * m.rows];
                        for (o, &w) in y.iter_mut().zip(col) {
                            *o += w * xc;
                        }
                    }
                }
                Layout::Panels16 => {
                    let mut row = vec![0.0f32; x.len()];
                    for (r, o) in y.iter_mut().enumerate() {
                        self.row_into(r, &mut row);
                        *o = super::ops::dot(&row, x);
                    }
                }
            },
            _ => {
                let mut row = vec![0.0f32; x.len()];
                for (r, o) in y.iter_mut().enumerate() {
                    self.row_into(r, &mut row);
                    *o = super::ops::dot(&row, x);
                }
            }
        }
        true
    }
}

/// `y = x Wᵀ + b` with `W: [out, in]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    /// `[out, in]`.
    pub weight: Matrix,
    /// `[out]`, when the layer has a bias.
    pub bias: Option<Vec<f32>>,
}

impl Linear {
    /// Output features.
    pub fn out_features(&self) -> usize {
        self.weight.rows()
    }
    /// Input features.
    pub fn in_features(&self) -> usize {
        self.weight.cols()
    }
    /// `y = W x + b` for one vector; false on a length mismatch.
    pub fn forward_vec(&self, x: &[f32], y: &mut [f32]) -> bool {
        if !self.weight.matvec(x, y) {
            return false;
        }
        if let Some(b) = &self.bias {
            for (o, &bb) in y.iter_mut().zip(b) {
                *o += bb;
            }
        }
        true
    }
}

/// LayerNorm parameters (the epsilon comes from the config).
#[derive(Debug, Clone, PartialEq)]
pub struct Norm {
    /// `[D]` scale.
    pub weight: Vec<f32>,
    /// `[D]` shift, when the norm has a bias.
    pub bias: Option<Vec<f32>>,
}

/// One ModernBERT encoder layer.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderLayer {
    /// Pre-attention norm; `None` for layer 0 (identity).
    pub attn_norm: Option<Norm>,
    /// `Wqkv`, `[3D, D]`: rows q, k, v.
    pub wqkv: Linear,
    /// Attention output `Wo`, `[D, D]`.
    pub wo: Linear,
    /// Pre-MLP norm.
    pub mlp_norm: Norm,
    /// `Wi`, `[2I, D]`: first I outputs value, last I gate.
    pub wi: Linear,
    /// MLP output `Wo`, `[D, I]`.
    pub mlp_wo: Linear,
}

/// One decision-head layer (PyTorch `TransformerEncoderLayer`, norm first).
#[derive(Debug, Clone, PartialEq)]
pub struct HeadLayer {
    /// Packed q/k/v projection `[3D, D]` with bias.
    pub in_proj: Linear,
    /// `[D, D]` with bias.
    pub out_proj: Linear,
    /// FFN up `[4D, D]` with bias.
    pub linear1: Linear,
    /// FFN down `[D, 4D]` with bias.
    pub linear2: Linear,
    /// Pre-attention norm (with bias).
    pub norm1: Norm,
    /// Pre-FFN norm (with bias).
    pub norm2: Norm,
}

/// The option scorer: LayerNorm → Linear(D→D) → GELU → Linear(D→1).
#[derive(Debug, Clone, PartialEq)]
pub struct Scorer {
    /// `scorer.0` (with bias).
    pub norm: Norm,
    /// `scorer.1`, `[D, D]`.
    pub hidden: Linear,
    /// `scorer.3`, `[1, D]`.
    pub output: Linear,
}

/// All weights of a decision model, FP32 or another [`Matrix`] precision.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionWeights {
    /// `[V, D]` token embedding.
    pub tok_embeddings: Matrix,
    /// Embedding LayerNorm.
    pub emb_norm: Norm,
    /// `N` encoder layers.
    pub layers: Vec<EncoderLayer>,
    /// Encoder final LayerNorm.
    pub final_norm: Norm,
    /// `H` decision-head layers.
    pub head: Vec<HeadLayer>,
    /// `[3, D]` question-type embedding, row-major.
    pub type_emb: Vec<f32>,
    /// Option scorer.
    pub scorer: Scorer,
    /// Action head (`act_head.0`, `act_head.2`).
    pub act_head: super::tail::ActionHead,
}

/// Weight storage of a model, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WeightBytes {
    /// The projection weights ([`DecisionWeights::projections`], biases excluded).
    pub projections: usize,
    /// Every tensor of the model, token embedding included.
    pub total: usize,
    /// The host embedding tables: token embedding and type embedding.
    pub host_embeddings: usize,
}

/// One tensor of [`DecisionWeights::visit_tensors`], borrowed.
#[derive(Debug, Clone, Copy)]
pub enum TensorRef<'a> {
    /// A matrix in its stored precision.
    Matrix(&'a Matrix),
    /// A 1-D f32 tensor (norm weight, bias).
    Vector(&'a [f32]),
    /// A row-major 2-D f32 tensor that is not a [`Matrix`] (the type embedding).
    Rows {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// `rows × cols` values.
        data: &'a [f32],
    },
}

impl TensorRef<'_> {
    /// Shape and row-major f32 values (a matrix decoded).
    pub fn to_f32(&self) -> (Vec<usize>, Vec<f32>) {
        match *self {
            TensorRef::Matrix(m) => (vec![m.rows(), m.cols()], m.to_row_major_f32().unwrap_or_default()),
            TensorRef::Vector(v) => (vec![v.len()], v.to_vec()),
            TensorRef::Rows { rows, cols, data } => (vec![rows, cols], data.to_vec()),
        }
    }
}

/// Name and shape of one tensor of the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// safetensors key.
    pub name: String,
    /// Expected shape.
    pub shape: Vec<usize>,
}

/// Hidden width of the action head (`act_head.0`).
pub const ACT_HIDDEN: usize = 256;

/// Name of the unused temperature buffer (accepted and ignored).
pub const TEMPERATURE_BUFFER: &str = "temperature";

/// The exact tensor set the configs imply (docs/host-path.md §1.4), without the ignored
/// `temperature` buffer, in a stable order.
pub fn tensor_specs(enc: &EncoderConfig, agent: &AgentConfig) -> Vec<TensorSpec> {
    let d = enc.hidden_size;
    let i_ = enc.intermediate_size;
    let mut s = Vec::new();
    let mut add = |name: String, shape: Vec<usize>| s.push(TensorSpec { name, shape });
    add("encoder.embeddings.tok_embeddings.weight".into(), vec![enc.vocab_size, d]);
    add("encoder.embeddings.norm.weight".into(), vec![d]);
    if enc.norm_bias {
        add("encoder.embeddings.norm.bias".into(), vec![d]);
    }
    for l in 0..enc.num_layers {
        let p = format!("encoder.layers.{l}");
        if l > 0 {
            add(format!("{p}.attn_norm.weight"), vec![d]);
            if enc.norm_bias {
                add(format!("{p}.attn_norm.bias"), vec![d]);
            }
        }
        add(format!("{p}.attn.Wqkv.weight"), vec![3 * d, d]);
        if enc.attention_bias {
            add(format!("{p}.attn.Wqkv.bias"), vec![3 * d]);
        }
        add(format!("{p}.attn.Wo.weight"), vec![d, d]);
        if enc.attention_bias {
            add(format!("{p}.attn.Wo.bias"), vec![d]);
        }
        add(format!("{p}.mlp_norm.weight"), vec![d]);
        if enc.norm_bias {
            add(format!("{p}.mlp_norm.bias"), vec![d]);
        }
        add(format!("{p}.mlp.Wi.weight"), vec![2 * i_, d]);
        if enc.mlp_bias {
            add(format!("{p}.mlp.Wi.bias"), vec![2 * i_]);
        }
        add(format!("{p}.mlp.Wo.weight"), vec![d, i_]);
        if enc.mlp_bias {
            add(format!("{p}.mlp.Wo.bias"), vec![d]);
        }
    }
    add("encoder.final_norm.weight".into(), vec![d]);
    if enc.norm_bias {
        add("encoder.final_norm.bias".into(), vec![d]);
    }
    for j in 0..agent.head_layers {
        let p = format!("head.layers.{j}");
        add(format!("{p}.self_attn.in_proj_weight"), vec![3 * d, d]);
        add(format!("{p}.self_attn.in_proj_bias"), vec![3 * d]);
        add(format!("{p}.self_attn.out_proj.weight"), vec![d, d]);
        add(format!("{p}.self_attn.out_proj.bias"), vec![d]);
        add(format!("{p}.linear1.weight"), vec![4 * d, d]);
        add(format!("{p}.linear1.bias"), vec![4 * d]);
        add(format!("{p}.linear2.weight"), vec![d, 4 * d]);
        add(format!("{p}.linear2.bias"), vec![d]);
        add(format!("{p}.norm1.weight"), vec![d]);
        add(format!("{p}.norm1.bias"), vec![d]);
        add(format!("{p}.norm2.weight"), vec![d]);
        add(format!("{p}.norm2.bias"), vec![d]);
    }
    add("type_emb.weight".into(), vec![3, d]);
    add("scorer.0.weight".into(), vec![d]);
    add("scorer.0.bias".into(), vec![d]);
    add("scorer.1.weight".into(), vec![d, d]);
    add("scorer.1.bias".into(), vec![d]);
    add("scorer.3.weight".into(), vec![1, d]);
    add("scorer.3.bias".into(), vec![1]);
    add("act_head.0.weight".into(), vec![ACT_HIDDEN, d + 4]);
    add("act_head.0.bias".into(), vec![ACT_HIDDEN]);
    add("act_head.2.weight".into(), vec![agent.num_actions, ACT_HIDDEN]);
    add("act_head.2.bias".into(), vec![agent.num_actions]);
    s
}

impl DecisionWeights {
    /// The projection Linears an engine multiplies with — encoder `Wqkv`, `Wo`, `Wi`, `Wo`,
    /// head `in_proj`, `out_proj`, `linear1`, `linear2`, and the scorer's hidden `scorer.1` —
    /// with their weight tensor names, in [`tensor_specs`] order. The token and type
    /// embeddings, norms, the scorer output and the action head are not projections.
    pub fn projections(&self) -> Vec<(String, &Linear)> {
        let mut out = Vec::with_capacity(4 * (self.layers.len() + self.head.len()) + 1);
        for (l, layer) in self.layers.iter().enumerate() {
            let p = format!("encoder.layers.{l}");
            out.push((format!("{p}.attn.Wqkv.weight"), &layer.wqkv));
            out.push((format!("{p}.attn.Wo.weight"), &layer.wo));
            out.push((format!("{p}.mlp.Wi.weight"), &layer.wi));
            out.push((format!("{p}.mlp.Wo.weight"), &layer.mlp_wo));
        }
        for (j, h) in self.head.iter().enumerate() {
            let p = format!("head.layers.{j}");
            out.push((format!("{p}.self_attn.in_proj_weight"), &h.in_proj));
            out.push((format!("{p}.self_attn.out_proj.weight"), &h.out_proj));
            out.push((format!("{p}.linear1.weight"), &h.linear1));
            out.push((format!("{p}.linear2.weight"), &h.linear2));
        }
        out.push(("scorer.1.weight".into(), &self.scorer.hidden));
        out
    }

    /// [`Self::projections`], mutable.
    pub fn projections_mut(&mut self) -> Vec<(String, &mut Linear)> {
        let mut out = Vec::with_capacity(4 * (self.layers.len() + self.head.len()) + 1);
        for (l, layer) in self.layers.iter_mut().enumerate() {
            let p = format!("encoder.layers.{l}");
            out.push((format!("{p}.attn.Wqkv.weight"), &mut layer.wqkv));
            out.push((format!("{p}.attn.Wo.weight"), &mut layer.wo));
            out.push((format!("{p}.mlp.Wi.weight"), &mut layer.wi));
            out.push((format!("{p}.mlp.Wo.weight"), &mut layer.mlp_wo));
        }
        for (j, h) in self.head.iter_mut().enumerate() {
            let p = format!("head.layers.{j}");
            out.push((format!("{p}.self_attn.in_proj_weight"), &mut h.in_proj));
            out.push((format!("{p}.self_attn.out_proj.weight"), &mut h.out_proj));
            out.push((format!("{p}.linear1.weight"), &mut h.linear1));
            out.push((format!("{p}.linear2.weight"), &mut h.linear2));
        }
        out.push(("scorer.1.weight".into(), &mut self.scorer.hidden));
        out
    }

    /// Round every projection weight ([`Self::projections`]) to FP16 or BF16; everything else
    /// (embeddings, norms, biases, scorer output, action head) stays FP32.
    pub fn into_half(mut self, kind: HalfKind) -> Self {
        for (_, lin) in self.projections_mut() {
            lin.weight = lin.weight.to_half(kind);
        }
        self
    }

    /// Bytes of weight storage: the projection weights (what a forward streams through the
    /// matrix products) and the whole model (token embedding included).
    pub fn weight_bytes(&self) -> WeightBytes {
        let projections = self.projections().iter().map(|(_, l)| l.weight.storage_bytes()).sum();
        let vec_bytes = |v: &Option<Vec<f32>>| v.as_ref().map_or(0, |b| b.len() * 4);
        let lin = |l: &Linear| l.weight.storage_bytes() + vec_bytes(&l.bias);
        let norm = |n: &Norm| n.weight.len() * 4 + vec_bytes(&n.bias);
        let mut total = self.tok_embeddings.storage_bytes() + norm(&self.emb_norm) + norm(&self.final_norm);
        for layer in &self.layers {
            total += layer.attn_norm.as_ref().map_or(0, norm)
                + lin(&layer.wqkv)
                + lin(&layer.wo)
                + norm(&layer.mlp_norm)
                + lin(&layer.wi)
                + lin(&layer.mlp_wo);
        }
        for h in &self.head {
            total += lin(&h.in_proj)
                + lin(&h.out_proj)
                + lin(&h.linear1)
                + lin(&h.linear2)
                + norm(&h.norm1)
                + norm(&h.norm2);
        }
        total += self.type_emb.len() * 4
            + norm(&self.scorer.norm)
            + lin(&self.scorer.hidden)
            + lin(&self.scorer.output)
            + lin(self.act_head.hidden())
            + lin(self.act_head.output());
        let host_embeddings = self.tok_embeddings.storage_bytes() + self.type_emb.len() * 4;
        WeightBytes { projections, total, host_embeddings }
    }

    /// Check that every tensor fits the configs (shapes, bias presence); engines call this
    /// before trusting the structure.
    pub fn check(&self, enc: &EncoderConfig, agent: &AgentConfig) -> Result<(), WeightsError> {
        let d = enc.hidden_size;
        let i_ = enc.intermediate_size;
        let bad = |what: String| Err(WeightsError::Inconsistent(what));
        let lin = |name: &str, l: &Linear, out: usize, inp: usize, bias: bool| {
            if l.out_features() != out || l.in_features() != inp {
                return bad(format!(
                    "{name} is [{}, {}], expected [{out}, {inp}]",
                    l.out_features(),
                    l.in_features()
                ));
            }
            match (&l.bias, bias) {
                (Some(b), true) if b.len() == out => Ok(()),
                (None, false) => Ok(()),
                _ => bad(format!("{name} bias does not match the config")),
            }
        };
        let norm = |name: &str, n: &Norm, bias: bool| {
            if n.weight.len() != d {
                return bad(format!("{name} has {} values, expected {d}", n.weight.len()));
            }
            match (&n.bias, bias) {
                (Some(b), true) if b.len() == d => Ok(()),
                (None, false) => Ok(()),
                _ => bad(format!("{name} bias does not match the config")),
            }
        };
        if self.tok_embeddings.rows() != enc.vocab_size || self.tok_embeddings.cols() != d {
            return bad("token embedding shape does not match the config".into());
        }
        norm("embedding norm", &self.emb_norm, enc.norm_bias)?;
        if self.layers.len() != enc.num_layers {
            return bad(format!("{} encoder layers, config says {}", self.layers.len(), enc.num_layers));
        }
        for (l, layer) in self.layers.iter().enumerate() {
            match (&layer.attn_norm, l) {
                (None, 0) => {}
                (Some(n), l) if l > 0 => norm("attn_norm", n, enc.norm_bias)?,
                _ => return bad(format!("layer {l}: attn_norm exists only for layers > 0")),
            }
            lin("Wqkv", &layer.wqkv, 3 * d, d, enc.attention_bias)?;
            lin("attn Wo", &layer.wo, d, d, enc.attention_bias)?;
            norm("mlp_norm", &layer.mlp_norm, enc.norm_bias)?;
            lin("Wi", &layer.wi, 2 * i_, d, enc.mlp_bias)?;
            lin("mlp Wo", &layer.mlp_wo, d, i_, enc.mlp_bias)?;
        }
        norm("final norm", &self.final_norm, enc.norm_bias)?;
        if self.head.len() != agent.head_layers {
            return bad(format!("{} head layers, config says {}", self.head.len(), agent.head_layers));
        }
        if d / decision_head_heads(d) == 0 {
            return bad("hidden size too small for the decision head".into());
        }
        for h in &self.head {
            lin("in_proj", &h.in_proj, 3 * d, d, true)?;
            lin("out_proj", &h.out_proj, d, d, true)?;
            lin("linear1", &h.linear1, 4 * d, d, true)?;
            lin("linear2", &h.linear2, d, 4 * d, true)?;
            norm("norm1", &h.norm1, true)?;
            norm("norm2", &h.norm2, true)?;
        }
        if self.type_emb.len() != 3 * d {
            return bad("type_emb must be [3, D]".into());
        }
        norm("scorer norm", &self.scorer.norm, true)?;
        lin("scorer.1", &self.scorer.hidden, d, d, true)?;
        lin("scorer.3", &self.scorer.output, 1, d, true)?;
        let a = &self.act_head;
        lin("act_head.0", a.hidden(), ACT_HIDDEN, d + 4, true)?;
        lin("act_head.2", a.output(), agent.num_actions, ACT_HIDDEN, true)?;
        Ok(())
    }

    /// Visit every tensor by name, in [`tensor_specs`] order, without copying: matrices as
    /// [`TensorRef::Matrix`] (any precision), everything else as f32 values with its shape.
    pub fn visit_tensors(&self, f: &mut dyn FnMut(&str, TensorRef<'_>)) {
        let norm = |f: &mut dyn FnMut(&str, TensorRef<'_>), p: &str, n: &Norm| {
            f(&format!("{p}.weight"), TensorRef::Vector(&n.weight));
            if let Some(b) = &n.bias {
                f(&format!("{p}.bias"), TensorRef::Vector(b));
            }
        };
        let lin = |f: &mut dyn FnMut(&str, TensorRef<'_>), w: &str, b: &str, l: &Linear| {
            f(w, TensorRef::Matrix(&l.weight));
            if let Some(bias) = &l.bias {
                f(b, TensorRef::Vector(bias));
            }
        };
        f("encoder.embeddings.tok_embeddings.weight", TensorRef::Matrix(&self.tok_embeddings));
        norm(f, "encoder.embeddings.norm", &self.emb_norm);
        for (l, layer) in self.layers.iter().enumerate() {
            let p = format!("encoder.layers.{l}");
            if let Some(n) = &layer.attn_norm {
                norm(f, &format!("{p}.attn_norm"), n);
            }
            lin(f, &format!("{p}.attn.Wqkv.weight"), &format!("{p}.attn.Wqkv.bias"), &layer.wqkv);
            lin(f, &format!("{p}.attn.Wo.weight"), &format!("{p}.attn.Wo.bias"), &layer.wo);
            norm(f, &format!("{p}.mlp_norm"), &layer.mlp_norm);
            lin(f, &format!("{p}.mlp.Wi.weight"), &format!("{p}.mlp.Wi.bias"), &layer.wi);
            lin(f, &format!("{p}.mlp.Wo.weight"), &format!("{p}.mlp.Wo.bias"), &layer.mlp_wo);
        }
        norm(f, "encoder.final_norm", &self.final_norm);
        for (j, h) in self.head.iter().enumerate() {
            let p = format!("head.layers.{j}");
            lin(
                f,
                &format!("{p}.self_attn.in_proj_weight"),
                &format!("{p}.self_attn.in_proj_bias"),
                &h.in_proj,
            );
            lin(
                f,
                &format!("{p}.self_attn.out_proj.weight"),
                &format!("{p}.self_attn.out_proj.bias"),
                &h.out_proj,
            );
            lin(f, &format!("{p}.linear1.weight"), &format!("{p}.linear1.bias"), &h.linear1);
            lin(f, &format!("{p}.linear2.weight"), &format!("{p}.linear2.bias"), &h.linear2);
            norm(f, &format!("{p}.norm1"), &h.norm1);
            norm(f, &format!("{p}.norm2"), &h.norm2);
        }
        let d = self.type_emb.len() / 3;
        f("type_emb.weight", TensorRef::Rows { rows: 3, cols: d, data: &self.type_emb });
        norm(f, "scorer.0", &self.scorer.norm);
        lin(f, "scorer.1.weight", "scorer.1.bias", &self.scorer.hidden);
        lin(f, "scorer.3.weight", "scorer.3.bias", &self.scorer.output);
        lin(f, "act_head.0.weight", "act_head.0.bias", self.act_head.hidden());
        lin(f, "act_head.2.weight", "act_head.2.bias", self.act_head.output());
    }

    /// Every tensor as (name, shape, row-major f32 values), in [`tensor_specs`] order (16-bit and
    /// palettized matrices decoded).
    pub fn named_tensors(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut out = Vec::new();
        self.visit_tensors(&mut |name, t| {
            let (shape, values) = t.to_f32();
            out.push((name.to_string(), shape, values));
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_round_trip_and_matvec_agree() {
        let m = Matrix::f32_row_major(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let t = m.clone().into_layout(Layout::ColMajor);
        let Matrix::F32(d) = &t else { panic!("layout change kept the precision") };
        assert_eq!(d.data(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(d.get(1, 2), Some(6.0));
        assert_eq!(d.get(2, 0), None);
        let (mut y1, mut y2) = ([0.0f32; 2], [0.0f32; 2]);
        assert!(m.matvec(&[1.0, 0.5, -1.0], &mut y1) && t.matvec(&[1.0, 0.5, -1.0], &mut y2));
        assert_eq!(y1, [-1.0, 0.5]);
        assert_eq!(y1, y2);
        let mut row = [0.0f32; 3];
        assert!(t.row_into(1, &mut row));
        assert_eq!(row, [4.0, 5.0, 6.0]);
        assert!(!t.row_into(2, &mut row));
        assert_eq!(t.into_layout(Layout::RowMajor), m);
    }

    #[test]
    fn panel_layout_pads_rows_and_round_trips() {
        let (rows, cols) = (19, 5);
        let v: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let m = Matrix::f32_row_major(rows, cols, v.clone()).unwrap();
        let p = m.clone().into_layout(Layout::Panels16);
        let Matrix::F32(d) = &p else { panic!("layout change kept the precision") };
        assert_eq!(d.data().len(), 32 * cols);
        // one group of two panels: column 2's 32 values start at 2·32; row 3 is the 4th
        assert_eq!(d.data()[32 * 2 + 3], v[3 * cols + 2]);
        // row 17 is panel 1's second row: after panel 0's 16 values of its column
        assert_eq!(d.data()[32 * 4 + 16 + 1], v[17 * cols + 4]);
        assert_eq!(d.get(18, 4), Some(v[18 * cols + 4]));
        assert_eq!(p.to_row_major_f32().unwrap(), v);
        let mut seg = [0.0f32; 2];
        assert!(p.decode_row_segment(17, 2, 4, &mut seg));
        assert_eq!(seg, [v[17 * cols + 2], v[17 * cols + 3]]);
        let x = [1.0, -0.5, 0.25, 2.0, 0.0];
        let (mut y1, mut y2) = ([0.0f32; 19], [0.0f32; 19]);
        assert!(m.matvec(&x, &mut y1) && p.matvec(&x, &mut y2));
        assert_eq!(y1, y2);
        assert_eq!(p.clone().into_layout(Layout::ColMajor).into_layout(Layout::RowMajor), m);
        assert_eq!(p.into_layout(Layout::RowMajor), m);
        // five panels: a group of three (48 rows) then one of two, each step-major
        let (rows, cols) = (70, 3);
        let v: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let m = Matrix::f32_row_major(rows, cols, v.clone()).unwrap();
        let Matrix::F32(d) = m.clone().into_layout(Layout::Panels16) else { panic!("f32") };
        assert_eq!(d.data().len(), 80 * cols);
        // (r 37, c 1): group 0, panel 2, row 5: 1·48 + 2·16 + 5
        assert_eq!(d.data()[48 + 32 + 5], v[37 * cols + 1]);
        // (r 69, c 2): group 1 (two panels) from 48·3, panel 1, row 5: 144 + 2·32 + 16 + 5
        assert_eq!(d.data()[144 + 64 + 16 + 5], v[69 * cols + 2]);
        // padded rows are zeros
        assert_eq!(d.data()[144 + 64 + 16 + 6], 0.0);
        assert_eq!(Matrix::F32(d).to_row_major_f32().unwrap(), v);
    }
}
