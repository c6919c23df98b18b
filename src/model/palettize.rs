//! Weight-only grouped k-means palettization (the W8 candidate of docs/methodology.md, NOT
//! W8A8): every projection matrix above [`DEFAULT_ABOVE_ELEMENTS`] elements gets, per group of
//! output channels, a table of `2^bits` f32 centroids and a `bits`-wide index per weight;
//! activations stay f32 (the portable engine's AMX product rounds 8-bit tables and activations
//! to BF16 where it runs: docs/PRECISION.md). Token and type embeddings, norms, biases, the scorer output and the
//! action head are untouched.
//!
//! # Method
//! * Groups: [`DEFAULT_GROUP_SIZE`] = 32 consecutive output rows share a table (the last group
//!   of a matrix may be shorter). Table overhead with f32 entries is `2^bits · 4 / (32 · cols ·
//!   bits / 8)` of the index payload: at 8 bits and `cols` = 768 (mmBERT-base `Wqkv`, `Wi`),
//!   1 KiB per 24 KiB of indices = 4.2 %; at 4 bits 0.5 %. Smaller groups fit better and cost
//!   more table; 32 is also coremltools' default `group_size` for per-grouped-channel
//!   palettization.
//! * Fit: exact one-dimensional Lloyd iterations on the sorted group values. Sorting makes
//!   every assignment step a set of binary searches for the midpoints between neighbouring
//!   centroids, and prefix sums give every cluster mean in O(1), so an iteration costs
//!   O(2^bits · log n) rather than O(n · 2^bits): every weight is used, no sampling.
//! * Init (seeded): stratified quantiles of the cube root of the value density (a 1024-bin
//!   histogram of the group) — the centroid density that minimises squared error for many
//!   centroids; equal-count (plain quantile) starts leave Lloyd stuck with coarse tails.
//!   Centroid `j` starts at quantile `(j + u_j) / 2^bits` with `u_j ∈ [0, 1)` drawn from
//!   splitmix64 seeded by (seed, tensor ordinal, group). Same seed → same bytes, on any thread
//!   count.
//! * Stop: at [`DEFAULT_MAX_ITERS`] iterations or when no centroid moves more than
//!   [`DEFAULT_TOLERANCE`] × the group's value range.
//! * Assign: every weight to its nearest f32 centroid (ties to the lower one).
//!
//! # Palette file
//! A `.safetensors` file ([`write_palette`], [`read_palette`]): for every palettized matrix
//! `NAME`, `NAME.indices` (U8, `[rows, row_bytes]`, packed as in [`Palettized`]) and `NAME.lut`
//! (F32, `[groups, 2^bits]`); every other tensor as F32 under its checkpoint name. The
//! `__metadata__` carries `format` = [`PALETTE_FORMAT`], `format_version`, `bits`,
//! `group_size`, `seed`, `above_elements`, `max_iters`, `method`, `lut_dtype` and
//! `source_sha256` — the fingerprint of the checkpoint it was made from (the sha256 of its
//! `model.safetensors`, or `synthetic:NAME:seed=S` for a synthetic model).

use std::collections::HashMap;
use std::time::Instant;

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde::{Deserialize, Serialize};

use super::lowp::{pack_row, PaletteOrder, PaletteShapeError, Palettized};
use super::synthetic::SplitMix64;
use super::weights::{DecisionWeights, Matrix, TensorRef, WeightsError};
use crate::laya::config::{AgentConfig, EncoderConfig};

/// Output rows per table.
pub const DEFAULT_GROUP_SIZE: usize = 32;
/// Matrices with more elements than this are palettized (docs/host-path.md §1.7: 65,536).
pub const DEFAULT_ABOVE_ELEMENTS: usize = 65_536;
/// Seed of the stratified-quantile initialisation.
pub const DEFAULT_SEED: u64 = 0x1A7A_BE7C_4000_0008;
/// Lloyd iteration cap.
pub const DEFAULT_MAX_ITERS: usize = 100;
/// Convergence: largest centroid move, relative to the group's value range.
pub const DEFAULT_TOLERANCE: f64 = 1e-6;
/// `format` of a palette file's `__metadata__`.
pub const PALETTE_FORMAT: &str = "laya-bench-palette";
/// `format_version` this build writes and reads.
pub const PALETTE_VERSION: u32 = 1;
/// `method` of this palettizer (recorded in the file).
pub const METHOD: &str = "grouped-kmeans-1d-lloyd/cbrt-density-init";

/// The `portable:wN:PATH` spelling of a palette width, where that width has one.
fn width_spec(bits: &u8) -> String {
    match bits {
        4 | 6 | 8 => format!(" or portable:w{bits}:PATH"),
        _ => String::new(),
    }
}

/// Palettization that cannot be done, or a palette file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PaletteError {
    /// Invalid parameters.
    #[error("palettization settings: {0}")]
    Config(String),
    /// A weight to palettize is NaN or infinite.
    #[error(
        "tensor `{tensor}` has a non-finite weight at ({row}, {col}); palettization needs finite weights"
    )]
    NonFinite {
        /// Tensor name.
        tensor: String,
        /// Row.
        row: usize,
        /// Column.
        col: usize,
    },
    /// Not a readable safetensors file.
    #[error("{file}: not a readable safetensors file ({detail}); the file is truncated or corrupt, write it again")]
    Corrupt {
        /// File name.
        file: String,
        /// Parser message.
        detail: String,
    },
    /// A safetensors file without the palette metadata.
    #[error("{file}: not a {PALETTE_FORMAT} file (metadata format is {found}); write one with the palettizer or load it as a checkpoint")]
    NotPalette {
        /// File name.
        file: String,
        /// What the metadata said.
        found: String,
    },
    /// A palette format version this build does not read.
    #[error("{file}: palette format_version {found}, this build reads {PALETTE_VERSION}")]
    Version {
        /// File name.
        file: String,
        /// Version in the file.
        found: String,
    },
    /// A metadata entry is missing or malformed.
    #[error("{file}: palette metadata `{key}` {detail}")]
    Metadata {
        /// File name.
        file: String,
        /// Key.
        key: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A palette tensor is missing, misshapen or of the wrong dtype.
    #[error("{file}: tensor `{tensor}`: {detail}")]
    Tensor {
        /// File name.
        file: String,
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        detail: String,
    },
    /// The palette was made from another checkpoint.
    #[error("{file}: palette was made from the checkpoint with fingerprint {palette}, but the model loaded has fingerprint {checkpoint} (a fingerprint is the sha256 of model.safetensors, or synthetic:NAME:seed=S); palettize this checkpoint again or point --model at the one the palette came from")]
    SourceMismatch {
        /// File name.
        file: String,
        /// `source_sha256` recorded in the palette.
        palette: String,
        /// Fingerprint of the checkpoint loaded.
        checkpoint: String,
    },
    /// The palette has another index width than requested.
    #[error("{file}: palette has {found}-bit indices, but {expected}-bit was requested; use portable:palette:PATH (any width){}", width_spec(.found))]
    Bits {
        /// File name.
        file: String,
        /// Requested bits.
        expected: u8,
        /// Bits in the file.
        found: u8,
    },
    /// The weights do not fit the configs.
    #[error(transparent)]
    Weights(#[from] WeightsError),
}

/// Palettization parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaletteConfig {
    /// Index width, 1..=8 (the study: 8; candidates 6 and 4).
    pub bits: u8,
    /// Output rows per table.
    pub group_size: usize,
    /// Seed of the initialisation.
    pub seed: u64,
    /// Only matrices with more elements than this are palettized.
    pub above_elements: usize,
    /// Lloyd iteration cap.
    pub max_iters: usize,
    /// Convergence tolerance relative to the group's value range.
    pub tolerance: f64,
}

impl PaletteConfig {
    /// The defaults at `bits` bits.
    pub fn new(bits: u8) -> Self {
        Self {
            bits,
            group_size: DEFAULT_GROUP_SIZE,
            seed: DEFAULT_SEED,
            above_elements: DEFAULT_ABOVE_ELEMENTS,
            max_iters: DEFAULT_MAX_ITERS,
            tolerance: DEFAULT_TOLERANCE,
        }
    }
    fn validate(&self) -> Result<(), PaletteError> {
        if !(1..=8).contains(&self.bits) {
            return Err(PaletteError::Config(format!("bits {} is outside 1..=8", self.bits)));
        }
        if self.group_size == 0 {
            return Err(PaletteError::Config("group_size must be at least 1".into()));
        }
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            return Err(PaletteError::Config(format!("tolerance {} must be finite and ≥ 0", self.tolerance)));
        }
        Ok(())
    }
}

/// Quantization error of one palettized tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorReport {
    /// Checkpoint tensor name.
    pub name: String,
    /// Rows (output features).
    pub rows: usize,
    /// Columns (input features).
    pub cols: usize,
    /// `rows × cols`.
    pub elements: usize,
    /// Index width.
    pub bits: u8,
    /// Rows per table.
    pub group_size: usize,
    /// Tables.
    pub groups: usize,
    /// Largest `|ŵ − w|`.
    pub max_abs_error: f64,
    /// Mean `|ŵ − w|`.
    pub mean_abs_error: f64,
    /// `‖ŵ − w‖₂ / ‖w‖₂` (0 for an all-zero tensor).
    pub rel_rms_error: f64,
    /// Lloyd iterations, the most any group of this tensor needed.
    pub max_iterations: usize,
    /// Payload bytes after palettization (packed indices and f32 tables).
    pub bytes: usize,
}

/// What [`palettize`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaletteReport {
    /// Parameters used.
    pub config: PaletteConfig,
    /// Method identifier ([`METHOD`]).
    pub method: String,
    /// One entry per palettized tensor, in checkpoint order.
    pub tensors: Vec<TensorReport>,
    /// Projection matrices left in their precision (not above `above_elements`).
    pub skipped: Vec<String>,
    /// Elements palettized.
    pub elements: usize,
    /// Bytes of the palettized matrices before (as stored) and after.
    pub bytes_before: usize,
    /// Bytes after (packed indices and f32 tables).
    pub bytes_after: usize,
    /// Largest per-tensor relative RMS error.
    pub max_rel_rms_error: f64,
    /// Wall seconds.
    pub seconds: f64,
}

/// Per-group result: table, packed rows, error sums.
struct GroupFit {
    lut: Vec<f32>,
    packed: Vec<u8>,
    abs_sum: f64,
    sq_err: f64,
    sq_w: f64,
    max_abs: f64,
    iterations: usize,
}

/// Order-preserving u32 key of a finite f32 (negative values flipped).
fn ordered(v: f32) -> u32 {
    let b = v.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

fn from_ordered(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 { k & 0x7FFF_FFFF } else { !k })
}

/// Histogram bins of the initialisation.
const INIT_BINS: usize = 1024;

/// Seeded initial centroids (sorted) for sorted finite `sorted` (non-empty): stratified
/// quantiles of the cube root of the value density — the asymptotically optimal centroid
/// density for squared error — estimated from a [`INIT_BINS`]-bin histogram; centroid `j` sits
/// at quantile `(j + u_j) / k`, `u_j ∈ [0, 1)` from splitmix64(seed).
fn init_centroids(sorted: &[f32], k: usize, seed: u64) -> Vec<f64> {
    let n = sorted.len();
    let (lo, hi) = (sorted[0] as f64, sorted[n - 1] as f64);
    let mut rng = SplitMix64(seed);
    if hi <= lo {
        return vec![lo; k];
    }
    let width = (hi - lo) / INIT_BINS as f64;
    let mut counts = [0u32; INIT_BINS];
    for &v in sorted {
        let b = (((v as f64 - lo) / width) as usize).min(INIT_BINS - 1);
        counts[b] += 1;
    }
    let mass: Vec<f64> = counts.iter().map(|&c| (c as f64).cbrt()).collect();
    let total: f64 = mass.iter().sum();
    let mut out = Vec::with_capacity(k);
    let (mut b, mut below) = (0usize, 0.0f64);
    for j in 0..k {
        // the ends at the extreme values, the rest jittered around evenly spaced quantiles
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let q = if j == 0 || j + 1 == k { j as f64 } else { j as f64 + u - 0.5 };
        let target = q / (k - 1).max(1) as f64 * total;
        while b + 1 < INIT_BINS && below + mass[b] < target {
            below += mass[b];
            b += 1;
        }
        let frac = if mass[b] > 0.0 { ((target - below) / mass[b]).clamp(0.0, 1.0) } else { 0.5 };
        out.push((lo + (b as f64 + frac) * width).clamp(lo, hi));
    }
    out
}

/// Fit one group (`values` row-major, `cols` wide) and pack its indices.
fn fit_group(values: &[f32], cols: usize, bits: u8, seed: u64, cfg: &PaletteConfig) -> GroupFit {
    let k = 1usize << bits;
    let n = values.len();
    let rb = Palettized::row_bytes_for(cols, bits);
    let rows = n.checked_div(cols).unwrap_or(0);
    if n == 0 {
        return GroupFit {
            lut: vec![0.0; k],
            packed: vec![0; rows * rb],
            abs_sum: 0.0,
            sq_err: 0.0,
            sq_w: 0.0,
            max_abs: 0.0,
            iterations: 0,
        };
    }
    // (value key, position), sorted: values ascending with their positions.
    let mut keyed: Vec<u64> =
        values.iter().enumerate().map(|(i, &v)| (ordered(v) as u64) << 32 | i as u64).collect();
    keyed.sort_unstable();
    let sorted: Vec<f32> = keyed.iter().map(|&x| from_ordered((x >> 32) as u32)).collect();
    let mut prefix = Vec::with_capacity(n + 1);
    let mut acc = 0.0f64;
    prefix.push(0.0);
    for &v in &sorted {
        acc += v as f64;
        prefix.push(acc);
    }
    let c = init_centroids(&sorted, k, seed);
    let mut c = c;
    let range = (sorted[n - 1] - sorted[0]) as f64;
    // Cluster j holds the sorted values v with m_{j−1} < v ≤ m_j, m_j the midpoint of c_j, c_{j+1}.
    let upper = |lo: usize, m: f64, sorted: &[f32]| lo + sorted[lo..].partition_point(|&v| (v as f64) <= m);
    let mut iterations = 0;
    for _ in 0..cfg.max_iters {
        iterations += 1;
        let mut lo = 0;
        let mut moved = 0.0f64;
        for j in 0..k {
            let hi = if j + 1 < k { upper(lo, 0.5 * (c[j] + c[j + 1]), &sorted) } else { n };
            if hi > lo {
                let mean = (prefix[hi] - prefix[lo]) / (hi - lo) as f64;
                moved = moved.max((mean - c[j]).abs());
                c[j] = mean;
            }
            lo = hi;
        }
        if moved <= cfg.tolerance * range {
            break;
        }
    }
    // Final f32 table; ranges recomputed from it so each weight gets its nearest f32 centroid.
    let lut: Vec<f32> = c.iter().map(|&x| x as f32).collect();
    let mut idx = vec![0u8; n];
    let mut lo = 0;
    let (mut abs_sum, mut sq_err, mut sq_w, mut max_abs) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for j in 0..k {
        let hi = if j + 1 < k { upper(lo, 0.5 * (lut[j] as f64 + lut[j + 1] as f64), &sorted) } else { n };
        for (&key, &v) in keyed[lo..hi].iter().zip(&sorted[lo..hi]) {
            idx[(key & 0xFFFF_FFFF) as usize] = j as u8;
            let e = (lut[j] - v).abs() as f64;
            abs_sum += e;
            sq_err += e * e;
            sq_w += (v as f64) * (v as f64);
            max_abs = max_abs.max(e);
        }
        lo = hi;
    }
    let mut packed = vec![0u8; rows * rb];
    if rb > 0 {
        for (src, dst) in idx.chunks_exact(cols).zip(packed.chunks_exact_mut(rb)) {
            pack_row(src, bits, dst);
        }
    }
    GroupFit { lut, packed, abs_sum, sq_err, sq_w, max_abs, iterations }
}

/// Palettize one matrix. `ordinal` (the tensor's position among the projections) seeds its
/// groups, so each tensor's result depends only on (config, ordinal, values).
pub fn palettize_matrix(
    m: &Matrix,
    name: &str,
    ordinal: u64,
    cfg: &PaletteConfig,
) -> Result<(Palettized, TensorReport), PaletteError> {
    cfg.validate()?;
    let (rows, cols) = (m.rows(), m.cols());
    let decoded;
    let values: &[f32] = match m {
        Matrix::F32(d) if d.layout() == super::weights::Layout::RowMajor => d.data(),
        _ => {
            decoded = m.to_row_major_f32().unwrap_or_default();
            &decoded
        }
    };
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(PaletteError::NonFinite {
            tensor: name.into(),
            row: i / cols.max(1),
            col: i % cols.max(1),
        });
    }
    let g = cfg.group_size;
    let groups = Palettized::groups_for(rows, g);
    let base = SplitMix64(cfg.seed ^ ordinal.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next();
    let fits: Vec<GroupFit> = (0..groups)
        .into_par_iter()
        .map(|gi| {
            let r0 = gi * g;
            let r1 = (r0 + g).min(rows);
            let seed = SplitMix64(base ^ gi as u64).next();
            fit_group(&values[r0 * cols..r1 * cols], cols, cfg.bits, seed, cfg)
        })
        .collect();
    let mut lut = Vec::with_capacity(groups << cfg.bits);
    let mut indices = Vec::with_capacity(rows * Palettized::row_bytes_for(cols, cfg.bits));
    let (mut abs_sum, mut sq_err, mut sq_w, mut max_abs, mut iters) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0);
    for f in fits {
        lut.extend_from_slice(&f.lut);
        indices.extend_from_slice(&f.packed);
        abs_sum += f.abs_sum;
        sq_err += f.sq_err;
        sq_w += f.sq_w;
        max_abs = max_abs.max(f.max_abs);
        iters = iters.max(f.iterations);
    }
    let p = Palettized::from_parts(rows, cols, cfg.bits, g, lut, indices)
        .map_err(|e| PaletteError::Config(format!("{name}: {e}")))?;
    let elements = rows * cols;
    let report = TensorReport {
        name: name.into(),
        rows,
        cols,
        elements,
        bits: cfg.bits,
        group_size: g,
        groups,
        max_abs_error: max_abs,
        mean_abs_error: if elements == 0 { 0.0 } else { abs_sum / elements as f64 },
        rel_rms_error: if sq_w > 0.0 { (sq_err / sq_w).sqrt() } else { 0.0 },
        max_iterations: iters,
        bytes: p.storage_bytes(),
    };
    Ok((p, report))
}

/// Palettize every projection matrix of `w` with more than `cfg.above_elements` elements.
pub fn palettize(
    mut w: DecisionWeights,
    cfg: &PaletteConfig,
) -> Result<(DecisionWeights, PaletteReport), PaletteError> {
    cfg.validate()?;
    let t0 = Instant::now();
    let mut tensors = Vec::new();
    let mut skipped = Vec::new();
    let (mut bytes_before, mut bytes_after) = (0, 0);
    for (ordinal, (name, lin)) in w.projections_mut().into_iter().enumerate() {
        let n = lin.weight.rows() * lin.weight.cols();
        if n <= cfg.above_elements {
            skipped.push(name);
            continue;
        }
        let (p, report) = palettize_matrix(&lin.weight, &name, ordinal as u64, cfg)?;
        bytes_before += lin.weight.storage_bytes();
        bytes_after += p.storage_bytes();
        lin.weight = Matrix::Palettized(p);
        tensors.push(report);
    }
    let report = PaletteReport {
        config: *cfg,
        method: METHOD.into(),
        elements: tensors.iter().map(|t| t.elements).sum(),
        max_rel_rms_error: tensors.iter().map(|t| t.rel_rms_error).fold(0.0, f64::max),
        tensors,
        skipped,
        bytes_before,
        bytes_after,
        seconds: t0.elapsed().as_secs_f64(),
    };
    Ok((w, report))
}

/// The `__metadata__` of a palette file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaletteMeta {
    /// Index width.
    pub bits: u8,
    /// Rows per table.
    pub group_size: usize,
    /// Initialisation seed.
    pub seed: u64,
    /// Palettization threshold used.
    pub above_elements: usize,
    /// Lloyd iteration cap used.
    pub max_iters: usize,
    /// Palettizer method ([`METHOD`]).
    pub method: String,
    /// Fingerprint of the source checkpoint (sha256 of its `model.safetensors`).
    pub source_sha256: String,
}

impl PaletteMeta {
    /// Metadata for weights palettized with `cfg` from the checkpoint `source_sha256`.
    pub fn new(cfg: &PaletteConfig, source_sha256: &str) -> Self {
        Self {
            bits: cfg.bits,
            group_size: cfg.group_size,
            seed: cfg.seed,
            above_elements: cfg.above_elements,
            max_iters: cfg.max_iters,
            method: METHOD.into(),
            source_sha256: source_sha256.into(),
        }
    }
    /// Fail unless this palette was made from the checkpoint `checkpoint_sha256`.
    pub fn check_source(&self, file: &str, checkpoint_sha256: &str) -> Result<(), PaletteError> {
        if self.source_sha256 == checkpoint_sha256 {
            Ok(())
        } else {
            Err(PaletteError::SourceMismatch {
                file: file.into(),
                palette: self.source_sha256.clone(),
                checkpoint: checkpoint_sha256.into(),
            })
        }
    }
}

/// Serialize palettized weights as a palette file (see the module docs). Every palettized
/// matrix must have `meta.bits` bits and `meta.group_size` rows per table.
pub fn write_palette(w: &DecisionWeights, meta: &PaletteMeta) -> Result<Vec<u8>, PaletteError> {
    let mut owned: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    let mut bad = None;
    w.visit_tensors(&mut |name, t| match t {
        TensorRef::Matrix(Matrix::Palettized(p)) => {
            let row_major;
            let p = if p.order() == PaletteOrder::RowMajor {
                p
            } else {
                row_major = p.clone().into_order(PaletteOrder::RowMajor);
                &row_major
            };
            if p.bits() != meta.bits || p.group_size() != meta.group_size {
                bad.get_or_insert(format!(
                    "matrix `{name}` has {} bits and group size {}, the metadata says {} and {}",
                    p.bits(),
                    p.group_size(),
                    meta.bits,
                    meta.group_size
                ));
            }
            owned.push((
                format!("{name}.indices"),
                Dtype::U8,
                vec![p.rows(), p.row_bytes()],
                p.indices().to_vec(),
            ));
            let lut = p.lut().iter().flat_map(|x| x.to_le_bytes()).collect();
            owned.push((format!("{name}.lut"), Dtype::F32, vec![p.groups(), 1 << p.bits()], lut));
        }
        other => {
            let (shape, v) = other.to_f32();
            owned.push((
                name.to_string(),
                Dtype::F32,
                shape,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ));
        }
    });
    if let Some(b) = bad {
        return Err(PaletteError::Config(b));
    }
    let views = owned
        .iter()
        .map(|(n, d, s, b)| safetensors::tensor::TensorView::new(*d, s.clone(), b).map(|v| (n.clone(), v)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PaletteError::Config(e.to_string()))?;
    let metadata: Vec<(&str, String)> = vec![
        ("format", PALETTE_FORMAT.to_string()),
        ("format_version", PALETTE_VERSION.to_string()),
        ("bits", meta.bits.to_string()),
        ("group_size", meta.group_size.to_string()),
        ("seed", meta.seed.to_string()),
        ("above_elements", meta.above_elements.to_string()),
        ("max_iters", meta.max_iters.to_string()),
        ("method", meta.method.clone()),
        ("lut_dtype", "F32".to_string()),
        ("source_sha256", meta.source_sha256.clone()),
    ];
    let bytes = safetensors::serialize(views, None).map_err(|e| PaletteError::Config(e.to_string()))?;
    with_metadata(bytes, &metadata)
}

/// Put `__metadata__` (in the given key order) at the front of a serialized safetensors
/// header. `safetensors::serialize` takes the metadata as a `HashMap`, whose random iteration
/// order would make the bytes differ from run to run; this keeps the file deterministic.
fn with_metadata(bytes: Vec<u8>, metadata: &[(&str, String)]) -> Result<Vec<u8>, PaletteError> {
    let bad = |what: &str| PaletteError::Config(format!("serialized safetensors header: {what}"));
    let n = bytes.get(..8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    let n = n
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| 8 + n <= bytes.len())
        .ok_or_else(|| bad("length"))?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).map_err(|e| bad(&e.to_string()))?;
    let md: serde_json::Map<String, serde_json::Value> =
        metadata.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect();
    let mut out_header = serde_json::Map::new();
    out_header.insert("__metadata__".into(), serde_json::Value::Object(md));
    out_header.extend(header.into_iter().filter(|(k, _)| k != "__metadata__"));
    let mut text =
        serde_json::to_vec(&serde_json::Value::Object(out_header)).map_err(|e| bad(&e.to_string()))?;
    // keep the data 8-byte aligned, as safetensors does, by padding the header with spaces
    text.resize(text.len().next_multiple_of(8), b' ');
    let mut out = Vec::with_capacity(8 + text.len() + bytes.len() - 8 - n);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + n..]);
    Ok(out)
}

/// Parse a palette file's metadata only (cheap: reads the header).
pub fn read_palette_meta(bytes: &[u8], file: &str) -> Result<PaletteMeta, PaletteError> {
    let (_, md) = SafeTensors::read_metadata(bytes)
        .map_err(|e| PaletteError::Corrupt { file: file.into(), detail: e.to_string() })?;
    let empty = HashMap::new();
    let m = md.metadata().as_ref().unwrap_or(&empty);
    let format = m.get("format").map_or("absent".to_string(), |f| format!("`{f}`"));
    if m.get("format").map(String::as_str) != Some(PALETTE_FORMAT) {
        return Err(PaletteError::NotPalette { file: file.into(), found: format });
    }
    let version = m.get("format_version").cloned().unwrap_or_else(|| "absent".into());
    if version != PALETTE_VERSION.to_string() {
        return Err(PaletteError::Version { file: file.into(), found: version });
    }
    fn num<T: std::str::FromStr>(
        m: &HashMap<String, String>,
        file: &str,
        key: &'static str,
    ) -> Result<T, PaletteError> {
        let v = m.get(key).ok_or_else(|| PaletteError::Metadata {
            file: file.into(),
            key,
            detail: "is missing".into(),
        })?;
        v.parse().map_err(|_| PaletteError::Metadata {
            file: file.into(),
            key,
            detail: format!("`{v}` is not a number"),
        })
    }
    let text = |key: &'static str| {
        m.get(key).cloned().ok_or_else(|| PaletteError::Metadata {
            file: file.into(),
            key,
            detail: "is missing".into(),
        })
    };
    let meta = PaletteMeta {
        bits: num(m, file, "bits")?,
        group_size: num(m, file, "group_size")?,
        seed: num(m, file, "seed")?,
        above_elements: num(m, file, "above_elements")?,
        max_iters: num(m, file, "max_iters")?,
        method: text("method")?,
        source_sha256: text("source_sha256")?,
    };
    if !(1..=8).contains(&meta.bits) {
        return Err(PaletteError::Metadata {
            file: file.into(),
            key: "bits",
            detail: format!("{} is outside 1..=8", meta.bits),
        });
    }
    if meta.group_size == 0 {
        return Err(PaletteError::Metadata { file: file.into(), key: "group_size", detail: "is 0".into() });
    }
    match m.get("lut_dtype").map(String::as_str) {
        Some("F32") | Some("F16") => {}
        other => {
            return Err(PaletteError::Metadata {
                file: file.into(),
                key: "lut_dtype",
                detail: format!("{other:?} is not F32 or F16"),
            })
        }
    }
    Ok(meta)
}

/// Load a palette file for the configs: the palettized matrices as [`Matrix::Palettized`],
/// every other tensor as f32 (F32, F16 or BF16 in the file). The key set must be exactly the
/// checkpoint's, with `NAME.indices` + `NAME.lut` in place of a palettized matrix `NAME`.
pub fn read_palette(
    bytes: &[u8],
    enc: &EncoderConfig,
    agent: &AgentConfig,
    file: &str,
) -> Result<(DecisionWeights, PaletteMeta), PaletteError> {
    let meta = read_palette_meta(bytes, file)?;
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| PaletteError::Corrupt { file: file.into(), detail: e.to_string() })?;
    let terr = |tensor: &str, detail: String| PaletteError::Tensor {
        file: file.into(),
        tensor: tensor.into(),
        detail,
    };
    let present: HashMap<&str, safetensors::tensor::TensorView<'_>> = st.iter().collect();
    let mut used = std::collections::HashSet::new();
    let mut named = HashMap::new();
    let mut matrices = HashMap::new();
    for spec in super::weights::tensor_specs(enc, agent) {
        let (iname, lname) = (format!("{}.indices", spec.name), format!("{}.lut", spec.name));
        if let (Some(iv), [rows, cols]) = (present.get(iname.as_str()), spec.shape.as_slice()) {
            let lv = present
                .get(lname.as_str())
                .ok_or_else(|| terr(&lname, "is missing (indices without a table)".into()))?;
            let rb = Palettized::row_bytes_for(*cols, meta.bits);
            if iv.dtype() != Dtype::U8 || iv.shape() != [*rows, rb] {
                return Err(terr(
                    &iname,
                    format!("is {:?} {:?}, expected U8 [{rows}, {rb}]", iv.dtype(), iv.shape()),
                ));
            }
            let groups = Palettized::groups_for(*rows, meta.group_size);
            let k = 1usize << meta.bits;
            if lv.shape() != [groups, k] {
                return Err(terr(&lname, format!("has shape {:?}, expected [{groups}, {k}]", lv.shape())));
            }
            let lut: Vec<f32> = match lv.dtype() {
                Dtype::F32 => {
                    lv.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
                }
                Dtype::F16 => lv
                    .data()
                    .chunks_exact(2)
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
                d => return Err(terr(&lname, format!("has dtype {d:?}, expected F32 or F16"))),
            };
            let p = Palettized::from_parts(*rows, *cols, meta.bits, meta.group_size, lut, iv.data().to_vec())
                .map_err(|e: PaletteShapeError| terr(&spec.name, e.to_string()))?;
            matrices.insert(spec.name.clone(), Matrix::Palettized(p));
            used.insert(iname);
            used.insert(lname);
            continue;
        }
        let v = present
            .get(spec.name.as_str())
            .ok_or_else(|| terr(&spec.name, format!("is missing (shape {:?})", spec.shape)))?;
        if v.shape() != spec.shape.as_slice() {
            return Err(terr(&spec.name, format!("has shape {:?}, expected {:?}", v.shape(), spec.shape)));
        }
        let data: Vec<f32> = match v.dtype() {
            Dtype::F32 => {
                v.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            Dtype::F16 => {
                v.data().chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
            }
            Dtype::BF16 => {
                v.data().chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
            }
            d => return Err(terr(&spec.name, format!("has dtype {d:?}, expected F32, F16 or BF16"))),
        };
        named.insert(spec.name.clone(), data);
        used.insert(spec.name.clone());
    }
    if let Some(extra) = present.keys().filter(|k| !used.contains(**k)).min() {
        return Err(terr(extra, "is not part of this model's palette (configs differ?)".into()));
    }
    let w = DecisionWeights::from_named_with_matrices(named, matrices, enc, agent)?;
    Ok((w, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_mismatch_calls_the_fingerprints_fingerprints() {
        let meta = PaletteMeta::new(&PaletteConfig::new(8), "synthetic:multilingual:seed=0");
        let e = meta.check_source("p.palette", "synthetic:multilingual:seed=1").unwrap_err().to_string();
        assert!(e.contains("with fingerprint synthetic:multilingual:seed=0"), "{e}");
        assert!(!e.contains("sha256 synthetic"), "{e}");
    }

    #[test]
    fn a_width_mismatch_offers_only_specs_that_exist() {
        let e = |found| PaletteError::Bits { file: "p.safetensors".into(), expected: 8, found }.to_string();
        assert_eq!(
            e(3),
            "p.safetensors: palette has 3-bit indices, but 8-bit was requested; use portable:palette:PATH (any width)"
        );
        assert!(e(6).ends_with("use portable:palette:PATH (any width) or portable:w6:PATH"), "{}", e(6));
    }

    fn matrix(rows: usize, cols: usize, seed: u32) -> Matrix {
        let v: Vec<f32> = (0..rows * cols)
            .map(|i| ((i as f32 * 0.618 + seed as f32).sin() * 1.7 + (i as f32 * 0.01).cos() * 0.2) * 0.05)
            .collect();
        Matrix::f32_row_major(rows, cols, v).unwrap()
    }

    #[test]
    fn ordered_keys_sort_like_floats() {
        let mut v = [3.5f32, -0.0, 0.0, -2.0, 1e-30, -1e30, 7.0];
        let mut k: Vec<u32> = v.iter().map(|&x| ordered(x)).collect();
        k.sort_unstable();
        v.sort_by(f32::total_cmp);
        assert_eq!(k.iter().map(|&x| from_ordered(x)).collect::<Vec<_>>(), v);
    }

    #[test]
    fn few_distinct_values_are_exact() {
        let v: Vec<f32> = (0..200).map(|i| [0.5f32, -1.0, 2.0][i % 3]).collect();
        let m = Matrix::f32_row_major(10, 20, v.clone()).unwrap();
        let (p, r) = palettize_matrix(&m, "t", 0, &PaletteConfig::new(4)).unwrap();
        assert_eq!(Matrix::Palettized(p).to_row_major_f32().unwrap(), v);
        assert_eq!(r.max_abs_error, 0.0);
    }

    #[test]
    fn error_shrinks_with_bits_and_is_reported_consistently() {
        let m = matrix(70, 48, 1);
        let w = m.to_row_major_f32().unwrap();
        let mut last = f64::INFINITY;
        for bits in [2u8, 4, 6, 8] {
            let cfg = PaletteConfig { group_size: 16, ..PaletteConfig::new(bits) };
            let (p, r) = palettize_matrix(&m, "t", 3, &cfg).unwrap();
            assert_eq!((r.groups, r.rows, r.cols, r.elements), (5, 70, 48, 70 * 48));
            let d = Matrix::Palettized(p).to_row_major_f32().unwrap();
            let max = d.iter().zip(&w).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
            assert!((max - r.max_abs_error).abs() < 1e-9, "{max} vs {}", r.max_abs_error);
            assert!(r.rel_rms_error < last, "bits {bits}: {} !< {last}", r.rel_rms_error);
            last = r.rel_rms_error;
        }
        assert!(last < 5e-3, "8-bit relative RMS error {last}");
    }

    #[test]
    fn same_seed_same_bytes_other_seed_may_differ() {
        let m = matrix(64, 40, 2);
        let cfg = PaletteConfig { group_size: 16, max_iters: 3, ..PaletteConfig::new(6) };
        let a = palettize_matrix(&m, "t", 0, &cfg).unwrap();
        let b = palettize_matrix(&m, "t", 0, &cfg).unwrap();
        assert_eq!(a, b);
        let c = palettize_matrix(&m, "t", 0, &PaletteConfig { seed: 99, ..cfg }).unwrap();
        assert_ne!(a.0, c.0, "with 3 iterations the seeded init shows");
    }

    #[test]
    fn rejects_bad_settings_and_non_finite_weights() {
        let m = matrix(4, 4, 0);
        assert!(matches!(palettize_matrix(&m, "t", 0, &PaletteConfig::new(9)), Err(PaletteError::Config(_))));
        let cfg = PaletteConfig { group_size: 0, ..PaletteConfig::new(8) };
        assert!(matches!(palettize_matrix(&m, "t", 0, &cfg), Err(PaletteError::Config(_))));
        let mut v = m.to_row_major_f32().unwrap();
        v[6] = f32::NAN;
        let bad = Matrix::f32_row_major(4, 4, v).unwrap();
        let e = palettize_matrix(&bad, "x.weight", 0, &PaletteConfig::new(8)).unwrap_err();
        assert!(matches!(e, PaletteError::NonFinite { row: 1, col: 2, .. }), "{e}");
    }
}
