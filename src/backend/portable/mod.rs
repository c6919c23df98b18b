//! The portable CPU backend: the whole decision model (docs/host-path.md §2 steps 1–11) on the
//! `gemm` crate, for any CPU. Activations are FP32; the projection weights may be FP32, FP16,
//! BF16 or palettized ([`crate::model::weights::Matrix`]): FP16 and palettized weights (and BF16
//! where the CPU lacks AVX-512 BF16) are decoded tile by tile into f32 and multiplied in f32;
//! BF16 weights on a CPU with AMX-BF16, or with an AVX-512 BF16 pair-dot at least as fast per
//! FLOP as its FMA ([`probe`]), go through a kernel that also rounds the product's input
//! activations to BF16 (see [`Bf16Kernel`]).
//!
//! The matrix kernels are chosen at run time by CPU features ([`Isa`]; `LAYA_BENCH_ISA` caps
//! them, e.g. `avx2` on an AVX-512 machine): FP32 weights are packed once at construction into
//! 16-row panels read in place by the AVX-512 (8 × 48) or AVX2 (6 × 16) register tile
//! (`f32panel`); without either (aarch64 included) they stay row-major for `gemm`.
//!
//! Construction converts every Linear weight once to the layout its kernel streams fastest
//! (packed panels, or [`WEIGHT_LAYOUT`] for `gemm`), builds the shape-only tables (RoPE cos/sin per layer kind) and a rayon
//! pool of `threads` workers. Each `forward` validates the batch, derives the per-request masks
//! (part of the measured boundary) and reuses scratch buffers, so after the first call at a
//! shape it allocates nothing of its own.

pub(crate) mod amx;
pub(crate) mod attention;
pub(crate) mod bf16dot;
mod f32panel;
pub mod isa;
mod linalg;
pub mod probe;

pub use self::isa::Isa;

use std::collections::HashMap;

use rayon::prelude::*;
use std::sync::Arc;

use crate::settings::Settings;

use self::attention::{attention, window_template, AttnKernel, AttnShape, Masks, Rope, RopeAt};
use self::linalg::{linear, Plan, Split};
use super::{
    Backend, BackendError, BackendInfo, BackendKind, ForwardOutput, HostHints, PreparedBatch, ShapeCaps,
};
use crate::laya::config::{decision_head_heads, AgentConfig, EncoderConfig, LayerKind, OptionLayout};
use crate::model::lowp::{self, HalfOrder, PaletteOrder};
use crate::model::ops;
use crate::model::tail::action_features;
use crate::model::weights::{DecisionWeights, Layout, Linear, Matrix, WeightBytes};

/// Storage order of every Linear weight inside the engine: PyTorch's `[out, in]` row-major.
///
/// Measured with `cargo bench --bench forward -- --compare` (synthetic multilingual, B1 L96,
/// 2 threads, Zen 4): row-major ≈ 155 ms per forward, the transposed `[in, out]` layout (which
/// `gemm` reads without packing) ≈ 188–220 ms; `gemm`'s own rayon split ≈ its per-worker
/// column split ≈ 155 ms, one thread ≈ 285 ms.
pub const WEIGHT_LAYOUT: Layout = Layout::RowMajor;

/// Epsilon of the decision head's and the scorer's LayerNorms (PyTorch default).
const HEAD_EPS: f32 = 1e-5;

/// Masked option slots get this logit (docs/host-path.md §2 step 9).
const MASKED_LOGIT: f32 = -1e4;

/// Switches that deliberately break the model, so tests can show the parity check bites.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ablation {
    /// Skip RoPE on q and k.
    pub no_rope: bool,
    /// Multiply the sliding window (`local_attention`) by this factor (1 = faithful).
    pub window_scale: usize,
    /// Use the tanh GELU approximation in the encoder MLP and the scorer.
    pub tanh_gelu: bool,
}

impl Default for Ablation {
    fn default() -> Self {
        Self { no_rope: false, window_scale: 1, tanh_gelu: false }
    }
}

/// The engine choices [`PortableBackend::new_tuned`] is given (benchmarks only): how many
/// workers it runs and which kernels and layouts it uses.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineKnobs {
    /// Worker threads; 0 means one per available core.
    pub threads: usize,
    /// The kernels and weight layouts.
    pub tuning: Tuning,
}

/// Engine choices that are measured rather than semantic (benchmarks only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Storage order of the FP32 Linear weights.
    pub weight_layout: Layout,
    /// How each Linear product uses the workers.
    pub gemm: GemmThreading,
    /// How BF16 weights are multiplied.
    pub bf16: Bf16Kernel,
    /// How 8-bit palettized weights are multiplied.
    pub palette: PaletteKernel,
    /// Multiply row-major FP32 weights with the panel kernel of the other precisions, decoding
    /// (copying) them into panels every forward, instead of packing them at load.
    pub f32_panel: bool,
    /// Keep FP32 weights in `weight_layout` and multiply them with the `gemm` crate (the engine
    /// before packing at load), to compare kernels.
    pub f32_gemm: bool,
    /// The kernels' instruction set (capped at what the CPU runs).
    pub isa: Isa,
}

/// How the engine multiplies with BF16 weights.
///
/// The default is [`Bf16Kernel::default_for`] the engine's instruction set. Compare them with
/// `cargo bench --bench forward -- --precision bf16 --compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bf16Kernel {
    /// AMX tiles (`tdpbf16ps`) where the CPU has AMX-BF16 and the OS grants the tile state,
    /// for weights whose input count is a multiple of 32: the same arithmetic as
    /// [`Bf16Kernel::Dot`] (BF16 operands, f32 sums) on the tile unit. Elsewhere the same as
    /// [`Bf16Kernel::Dot`].
    Amx,
    /// `vdpbf16ps` (AVX-512 BF16) where the CPU has it: BF16 weights × activations rounded to
    /// BF16, f32 sums. Elsewhere the same as [`Bf16Kernel::Decode`].
    Dot,
    /// Decode the BF16 weights tile by tile to f32 and multiply in f32 (activations stay f32).
    Decode,
}

impl Bf16Kernel {
    /// The engine's default on `isa`: the AMX tiles where they run; else the pair-dot where it
    /// runs and the load-time probe found it at least as fast per FLOP as the FMA
    /// ([`probe::bf16_dot_probe`]: Zen 4, not the Intel Xeon without AMX measured on
    /// 2026-12-05); else decoded to FP32 panels.
    pub fn default_for(isa: Isa) -> Self {
        if isa.has_amx_bf16() {
            Bf16Kernel::Amx
        } else if isa.has_bf16_dot() && probe::bf16_dot_probe().is_some_and(|p| p.dot_pays()) {
            Bf16Kernel::Dot
        } else {
            Bf16Kernel::Decode
        }
    }

    /// Whether this choice rounds the activations to BF16 on `isa` (the AMX and pair-dot
    /// kernels do, where they run; decoding does not).
    pub fn rounds_activations(self, isa: Isa) -> bool {
        self != Bf16Kernel::Decode && isa.has_bf16_dot()
    }

    /// The engine's BF16 product on `isa`: the one `LAYA_BENCH_BF16` names, else
    /// [`Bf16Kernel::default_for`].
    pub fn selected(isa: Isa, settings: &Settings) -> Self {
        bf16_selection(settings.bf16.as_deref()).0.unwrap_or_else(|| Self::default_for(isa))
    }
}

/// The environment variable that picks the engine's BF16 product (and with it the 8-bit
/// palette product) instead of [`Bf16Kernel::default_for`]: `auto` (the default), `amx`,
/// `dot` or `decode`. A kernel the CPU lacks falls back as [`Bf16Kernel`] says.
pub const BF16_ENV: &str = "LAYA_BENCH_BF16";

/// The BF16 product a `LAYA_BENCH_BF16` value names (`None`: the engine picks), and a note for
/// the arm's readers when the value was set.
pub fn bf16_selection(env: Option<&str>) -> (Option<Bf16Kernel>, Option<String>) {
    let Some(v) = env.map(str::trim).filter(|v| !v.is_empty()) else { return (None, None) };
    let (kernel, what) = match v.to_ascii_lowercase().as_str() {
        "auto" => return (None, None),
        "amx" => {
            (Bf16Kernel::Amx, "on AMX tiles where they run, else the AVX-512 BF16 pair-dot, else decoded")
        }
        "dot" | "pair-dot" => {
            (Bf16Kernel::Dot, "on the AVX-512 BF16 pair-dot where it runs (whatever its speed), else decoded")
        }
        "decode" => (Bf16Kernel::Decode, "decoded to FP32 panels (activations stay FP32)"),
        _ => {
            return (
                None,
                Some(format!(
                "{BF16_ENV}={v} is not auto, amx, dot or decode; ignored, the engine picks the BF16 product"
            )),
            )
        }
    };
    (Some(kernel), Some(format!("{BF16_ENV}={v}: BF16 and 8-bit palette products {what}")))
}

/// What a reader of a BF16 or `w8` arm's numbers must know about its product on `isa`: the
/// `LAYA_BENCH_BF16` value that named it (or was ignored), and the load-time probe's rates where
/// the probe decided it (no value named one, and the pair-dot runs). The engine's notes, `doctor`
/// and `bounds --measure` all say this.
pub fn bf16_notes(isa: Isa, settings: &Settings) -> Vec<String> {
    let (forced, note) = bf16_selection(settings.bf16.as_deref());
    let probe = if forced.is_none() && isa.has_bf16_dot() { probe::bf16_dot_probe() } else { None };
    note.into_iter().chain(probe.map(|p| p.describe())).collect()
}

/// How the engine multiplies with 8-bit palettized weights (`w8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteKernel {
    /// Decode the tables rounded to BF16, panels at a time, into the worker's cache and
    /// multiply with activations rounded to BF16, f32 sums (the arithmetic of BF16 weights;
    /// Core ML's W8 decodes its tables to FP16 likewise), for weights whose groups are whole
    /// 16-row panels; the decoder needs AVX-512 VBMI. The product runs on the AMX tiles where
    /// the CPU has AMX-BF16 and the OS grants the tile state (input count a multiple of 32),
    /// else on the AVX-512 BF16 pair-dot kernel (input count a multiple of 4). Elsewhere the
    /// same as [`PaletteKernel::Decode`].
    Bf16,
    /// Decode the tables to f32 tile by tile and multiply in f32 (activations stay f32).
    Decode,
}

impl PaletteKernel {
    /// The engine's default on `isa`: [`PaletteKernel::Bf16`] where its decoder (AVX-512 VBMI)
    /// runs and [`Bf16Kernel::default_for`] takes the AMX tiles or the pair-dot, else
    /// [`PaletteKernel::Decode`].
    pub fn default_for(isa: Isa) -> Self {
        if isa.has_lut8() && Bf16Kernel::default_for(isa) != Bf16Kernel::Decode {
            PaletteKernel::Bf16
        } else {
            PaletteKernel::Decode
        }
    }

    /// Whether this choice rounds the tables and the activations to BF16 on `isa`.
    pub fn rounds_to_bf16(self, isa: Isa) -> bool {
        self == PaletteKernel::Bf16 && isa.has_lut8() && isa.has_bf16_dot()
    }

    /// The engine's palette product on `isa`: decoded to FP32 where `LAYA_BENCH_BF16=decode`,
    /// the BF16 product where it names `amx` or `dot`, else [`PaletteKernel::default_for`].
    pub fn selected(isa: Isa, settings: &Settings) -> Self {
        match bf16_selection(settings.bf16.as_deref()).0 {
            Some(Bf16Kernel::Decode) => PaletteKernel::Decode,
            Some(_) => PaletteKernel::Bf16,
            None => Self::default_for(isa),
        }
    }
}

/// How a Linear product uses the worker threads (benchmarks only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmThreading {
    /// `gemm`'s own rayon parallelism.
    Rayon,
    /// Output columns split into one block per worker, one single-threaded `gemm` each.
    Columns,
    /// One thread per product.
    Single,
}

impl Tuning {
    /// The engine's choices under `settings`: the instruction set [`Isa::selected`], and the
    /// BF16 and palette products picked there ([`Bf16Kernel::selected`],
    /// [`PaletteKernel::selected`]).
    pub fn new(settings: &Settings) -> Self {
        let isa = Isa::selected(settings);
        Self {
            weight_layout: WEIGHT_LAYOUT,
            gemm: GemmThreading::Rayon,
            bf16: Bf16Kernel::selected(isa, settings),
            palette: PaletteKernel::selected(isa, settings),
            f32_panel: false,
            f32_gemm: false,
            isa,
        }
    }
}

/// Stages timed by the opt-in profile (benchmarks only).
const STAGES: [&str; 14] = [
    "embed+masks",
    "norms",
    "enc qkv gemm",
    "enc rope+attention",
    "enc attn-out gemm",
    "enc mlp-in gemm",
    "gelu*gate",
    "enc mlp-out gemm",
    "head qkv gemm",
    "head attention",
    "head out gemm",
    "head ffn1 gemm+relu",
    "head ffn2 gemm",
    "scorer+tail",
];

/// Accumulated seconds per stage; laps are no-ops when disabled.
#[derive(Debug)]
struct Profile {
    enabled: bool,
    seconds: [f64; STAGES.len()],
    last: std::time::Instant,
}

impl Profile {
    fn new() -> Self {
        Self { enabled: false, seconds: [0.0; STAGES.len()], last: std::time::Instant::now() }
    }
    #[inline]
    fn start(&mut self) {
        if self.enabled {
            self.last = std::time::Instant::now();
        }
    }
    #[inline]
    fn lap(&mut self, stage: usize) {
        if self.enabled {
            let now = std::time::Instant::now();
            self.seconds[stage] += (now - self.last).as_secs_f64();
            self.last = now;
        }
    }
}

/// Sizes derived once from the configs.
#[derive(Debug, Clone, Copy)]
struct Dims {
    d: usize,
    heads: usize,
    head_dim: usize,
    inter: usize,
    head_heads: usize,
    head_head_dim: usize,
    vocab: usize,
    actions: usize,
    eps: f32,
}

/// Scratch buffers, grown to the largest shape seen and reused.
#[derive(Debug, Default)]
struct Scratch {
    x: Vec<f32>,
    a: Vec<f32>,
    qkv: Vec<f32>,
    attn: Vec<f32>,
    mlp: Vec<f32>,
    gated: Vec<f32>,
    scores: Vec<f32>,
    masks: Masks,
    markers: Vec<f32>,
    markers_n: Vec<f32>,
    scorer_h: Vec<f32>,
    tail: Vec<f32>,
}

fn size<T: Clone + Default>(v: &mut Vec<T>, n: usize) {
    v.clear();
    v.resize(n, T::default());
}

/// Bytes of the working buffers one forward of `rows` rows of `length` tokens, `options`
/// option slots per row, sizes on `workers` threads: every activation buffer and attention
/// mask `run` sizes (the action head's few values aside) for a model of hidden size `hidden`
/// and MLP width `inter`. `None` when the count overflows. Another backend's activations for
/// the same forward are of the same order; `speed --batch` refuses a batch whose buffers do not
/// fit the memory available before anything is built.
pub fn forward_scratch_bytes(
    hidden: usize,
    inter: usize,
    rows: usize,
    length: usize,
    options: usize,
    workers: usize,
) -> Option<u64> {
    let (d, inter, bn, l, k) = (hidden as u64, inter as u64, rows as u64, length as u64, options as u64);
    let bl = bn.checked_mul(l)?;
    let ll = l.checked_mul(l)?;
    // x, a, attn (d each), qkv (3d), mlp, gated
    let per_token = (6 * d).checked_add((2 * inter).max(4 * d))?.checked_add(inter)?;
    let f32s = bl
        .checked_mul(per_token)?
        .checked_add((workers as u64).checked_mul(ll)?)?
        .checked_add(bn.checked_mul(k)?.checked_mul(3 * d)?)?;
    // three u8 masks of L × L per row (full, sliding window, decision head)
    f32s.checked_mul(4)?.checked_add(bn.checked_mul(ll)?.checked_mul(3)?)
}

/// The FP32 portable engine.
pub struct PortableBackend {
    info: BackendInfo,
    enc: EncoderConfig,
    agent: AgentConfig,
    w: DecisionWeights,
    dims: Dims,
    /// RoPE tables for full and sliding layers, covering `shapes.max_length` positions.
    rope_full: Rope,
    rope_sliding: Rope,
    /// Sliding-window templates keyed by `(length, half window)`.
    bands: HashMap<(usize, usize), Vec<u8>>,
    scratch: Scratch,
    pool: Option<Arc<rayon::ThreadPool>>,
    threads: usize,
    ablation: Ablation,
    tuning: Tuning,
    profile: Profile,
    /// Set when the weights do not fit the configs; every forward reports it.
    broken: Option<String>,
}

impl PortableBackend {
    /// Build the engine; `threads` 0 means all available cores.
    ///
    /// Never fails: weights that do not fit the configs make every `forward` return
    /// [`BackendError::Runtime`] with the reason (use [`Self::try_new`] to get it up front).
    pub fn new(
        weights: DecisionWeights,
        enc: EncoderConfig,
        agent: AgentConfig,
        shapes: ShapeCaps,
        fingerprint: String,
        threads: usize,
        settings: &Settings,
    ) -> Self {
        let knobs = EngineKnobs { threads, tuning: Tuning::new(settings) };
        Self::new_tuned(weights, enc, agent, shapes, fingerprint, knobs, settings)
    }

    /// [`Self::new`] with explicit engine choices (benchmarks only); `settings` still say which
    /// choices were the engine's own, for the notes.
    #[doc(hidden)]
    pub fn new_tuned(
        weights: DecisionWeights,
        enc: EncoderConfig,
        agent: AgentConfig,
        shapes: ShapeCaps,
        fingerprint: String,
        knobs: EngineKnobs,
        settings: &Settings,
    ) -> Self {
        let EngineKnobs { threads, tuning } = knobs;
        let tuning = Tuning { isa: tuning.isa.min(Isa::detected()), ..tuning };
        let isa = tuning.isa;
        let threads =
            if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
        let d = enc.hidden_size;
        let head_heads = decision_head_heads(d);
        let dims = Dims {
            d,
            heads: enc.num_heads,
            head_dim: enc.head_dim(),
            inter: enc.intermediate_size,
            head_heads,
            head_head_dim: d / head_heads,
            vocab: enc.vocab_size,
            actions: agent.num_actions,
            eps: enc.norm_eps as f32,
        };
        let mut broken = weights.check(&enc, &agent).err().map(|e| e.to_string());
        if broken.is_none() && (!d.is_multiple_of(head_heads) || enc.num_heads * enc.head_dim() != d) {
            broken = Some(format!(
                "hidden size {d} does not split into {} encoder heads and {head_heads} decision-head heads",
                enc.num_heads
            ));
        }
        let w = to_engine_layout(weights, tuning);
        let positions = shapes.max_length.max(1);
        let rope_full = Rope::new(enc.rope_theta(LayerKind::Full), dims.head_dim, positions);
        let rope_sliding = Rope::new(enc.rope_theta(LayerKind::Sliding), dims.head_dim, positions);
        let pool = if threads > 1 {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("laya-portable-{i}"))
                .build()
                .ok()
                .map(Arc::new)
        } else {
            None
        };
        let threads = if pool.is_some() { threads } else { 1 };
        let precision = weights_precision(&w);
        // per BF16 matrix: (in pair order, taken by the AMX kernel)
        let bf16_mats: Vec<(bool, bool)> = w
            .projections()
            .iter()
            .filter_map(|(_, l)| match &l.weight {
                Matrix::BF16(h) => Some((h.order() == HalfOrder::Pairs16, amx::takes(h))),
                _ => None,
            })
            .collect();
        let bf16_dot = tuning.bf16 != Bf16Kernel::Decode
            && isa.has_bf16_dot()
            && bf16_mats.iter().any(|&(pairs, _)| pairs);
        let bf16_amx =
            tuning.bf16 == Bf16Kernel::Amx && isa.has_amx_bf16() && bf16_mats.iter().any(|&(_, amx)| amx);
        let bf16_amx_all = bf16_mats.iter().all(|&(_, amx)| amx);
        // per palettized matrix: taken by the AMX kernel, by the pair-dot kernel
        let w8_mats: Vec<(bool, bool)> = w
            .projections()
            .iter()
            .filter_map(|(_, l)| match &l.weight {
                Matrix::Palettized(p) => Some((amx::takes_palette(p), bf16dot::takes_palette(p))),
                _ => None,
            })
            .collect();
        let w8_bf16 = tuning.palette == PaletteKernel::Bf16 && isa.has_lut8();
        let w8_amx = w8_bf16 && isa.has_amx_bf16() && w8_mats.iter().any(|&(amx, _)| amx);
        let w8_amx_all = w8_mats.iter().all(|&(amx, _)| amx);
        let w8_dot = w8_bf16 && !w8_amx && isa.has_bf16_dot() && w8_mats.iter().any(|&(_, dot)| dot);
        let w8_dot_all = w8_mats.iter().all(|&(_, dot)| dot);
        let packed = w
            .projections()
            .iter()
            .any(|(_, l)| matches!(&l.weight, Matrix::F32(d) if d.layout() == Layout::Panels16));
        let tile = isa.tile();
        let kernel = match precision.as_str() {
            "f32" if packed => format!("f32 {}", isa.f32_kernel()),
            "f32" if tuning.f32_panel && isa.has_panels() => {
                format!("f32 row-major weights copied into panels every forward, {tile}")
            }
            "f32" => format!("f32 {}", Isa::Generic.f32_kernel()),
            "bf16" if bf16_amx && bf16_amx_all => {
                "bf16 weights: amx-bf16 tiles (tdpbf16ps, 32 rows x 32 columns), bf16 activations".into()
            }
            "bf16" if bf16_amx => {
                "bf16 weights: amx-bf16 tiles (tdpbf16ps) where the input count is a multiple \
                                   of 32, avx512_bf16 pair-dot 6x64 elsewhere, bf16 activations"
                    .into()
            }
            "bf16" if bf16_dot => "bf16 weights: avx512_bf16 pair-dot 6x64, bf16 activations".into(),
            "w8" if w8_amx && w8_amx_all => "w8 weights: tables rounded to bf16, pairs of panels decoded \
                                              for amx-bf16 tiles (tdpbf16ps, 32 rows x 32 columns), bf16 activations"
                .into(),
            "w8" if w8_amx => format!(
                "w8 weights: tables rounded to bf16, pairs of panels decoded for amx-bf16 tiles \
                 (tdpbf16ps) where the input count is a multiple of 32, blocks of four panels for \
                 the avx512_bf16 pair-dot 6x64 where it is a multiple of 4, bf16 activations{}",
                if w8_dot_all { String::new() } else { format!("; decoded to f32 panels elsewhere, {tile}") }
            ),
            "w8" if w8_dot && w8_dot_all => "w8 weights: tables rounded to bf16, blocks of four panels \
                                              decoded for the avx512_bf16 pair-dot 6x64, bf16 activations"
                .into(),
            "w8" if w8_dot => format!(
                "w8 weights: tables rounded to bf16, blocks of four panels decoded for the \
                 avx512_bf16 pair-dot 6x64 where the input count is a multiple of 4, bf16 \
                 activations; decoded to f32 panels elsewhere, {tile}"
            ),
            p if isa.has_panels() => format!("{p} weights decoded to f32 panels, {tile}"),
            p => format!("{p} weights decoded to f32 tiles, gemm"),
        };
        let (_, isa_note) = isa::selection(settings.isa.as_deref());
        // how its BF16 or palette product was chosen, for an engine with weights on it that runs
        // the products chosen (not a benchmark's variant)
        let concerned = !bf16_mats.is_empty() || w8_mats.iter().any(|&(amx, dot)| amx || dot);
        let chosen = tuning.bf16 == Bf16Kernel::selected(isa, settings)
            && tuning.palette == PaletteKernel::selected(isa, settings);
        let bf16_notes = if concerned && chosen { bf16_notes(isa, settings) } else { Vec::new() };
        let weight_bytes = Some(w.weight_bytes().total as u64);
        let info = BackendInfo {
            kind: BackendKind::Portable,
            name: "portable".into(),
            precision,
            device: format!("cpu ({threads} threads, {} kernels: {kernel})", isa.name()),
            shapes,
            fingerprint,
            notes: isa_note.into_iter().chain(bf16_notes).collect(),
            blas: None,
            host_hints: HostHints::default(),
            weight_bytes,
        };
        Self {
            info,
            enc,
            agent,
            w,
            dims,
            rope_full,
            rope_sliding,
            bands: HashMap::new(),
            scratch: Scratch::default(),
            pool,
            threads,
            ablation: Ablation::default(),
            tuning,
            profile: Profile::new(),
            broken,
        }
    }

    /// [`Self::new`], but weights that do not fit the configs are an error here.
    pub fn try_new(
        weights: DecisionWeights,
        enc: EncoderConfig,
        agent: AgentConfig,
        shapes: ShapeCaps,
        fingerprint: String,
        threads: usize,
        settings: &Settings,
    ) -> Result<Self, BackendError> {
        let b = Self::new(weights, enc, agent, shapes, fingerprint, threads, settings);
        match &b.broken {
            Some(e) => Err(BackendError::Runtime(e.clone())),
            None => Ok(b),
        }
    }

    /// Bytes of weight storage the engine holds (projections, and the whole model).
    pub fn weight_bytes(&self) -> WeightBytes {
        self.w.weight_bytes()
    }

    /// Override the precision name in [`BackendInfo`] (the registry names the arm it built,
    /// e.g. `w8` even when a small model had no matrix above the palettization threshold).
    pub fn set_precision_name(&mut self, name: &str) {
        self.info.precision = name.into();
    }

    /// Add a note a reader of this arm's numbers must see (`BackendInfo::notes`).
    pub fn add_note(&mut self, note: String) {
        self.info.notes.push(note);
    }

    /// Worker threads in use (1 = the calling thread only).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The instruction set the matrix kernels use.
    pub fn isa(&self) -> Isa {
        self.tuning.isa
    }

    /// Break the model on purpose (tests only).
    #[doc(hidden)]
    pub fn set_ablation(&mut self, ablation: Ablation) {
        self.ablation = Ablation { window_scale: ablation.window_scale.max(1), ..ablation };
    }

    /// Turn the per-stage profile on or off and clear it (benchmarks only).
    #[doc(hidden)]
    pub fn set_profiling(&mut self, on: bool) {
        self.profile = Profile::new();
        self.profile.enabled = on;
    }

    /// Seconds spent per stage since profiling was turned on (benchmarks only).
    #[doc(hidden)]
    pub fn profile(&self) -> Vec<(&'static str, f64)> {
        STAGES.iter().copied().zip(self.profile.seconds).collect()
    }

    fn validate(&self, b: &PreparedBatch) -> Result<(), BackendError> {
        let err = |m: String| Err(BackendError::Shape(m));
        let (bn, l, k) = (b.batch, b.length, b.max_options);
        let caps = &self.info.shapes;
        if l == 0 || k == 0 {
            return err(format!("length {l} and max_options {k} must both be at least 1"));
        }
        if l > caps.max_length {
            return err(format!("length {l} exceeds the backend's max_length {}", caps.max_length));
        }
        if bn > caps.batch_size {
            return err(format!("batch of {bn} rows exceeds the backend's batch_size {}", caps.batch_size));
        }
        if k > caps.max_options {
            return err(format!("max_options {k} exceeds the backend's max_options {}", caps.max_options));
        }
        let lens = [
            ("input_ids", b.input_ids.len(), bn * l, "[B, L]"),
            ("attention_mask", b.attention_mask.len(), bn * l, "[B, L]"),
            ("marker_pos", b.marker_pos.len(), bn * k, "[B, K]"),
            ("marker_mask", b.marker_mask.len(), bn * k, "[B, K]"),
            ("qtype", b.qtype.len(), bn, "[B]"),
        ];
        for (name, got, want, shape) in lens {
            if got != want {
                return err(format!(
                    "{name} has {got} values, expected {want} ({shape} with B={bn}, L={l}, K={k})"
                ));
            }
        }
        let parallel = self.agent.option_layout == OptionLayout::Parallel;
        match (&b.position_ids, &b.option_ids, parallel) {
            (Some(p), Some(o), true) => {
                for (name, v) in [("position_ids", p), ("option_ids", o)] {
                    if v.len() != bn * l {
                        return err(format!(
                            "{name} has {} values, expected {} ([B, L] with B={bn}, L={l})",
                            v.len(),
                            bn * l
                        ));
                    }
                }
                if let Some((i, &x)) =
                    p.iter().enumerate().find(|(_, &x)| x < 0 || x as usize >= self.rope_full.positions())
                {
                    return err(format!(
                        "position_ids[{}][{}] = {x} is outside [0, {})",
                        i / l,
                        i % l,
                        self.rope_full.positions()
                    ));
                }
                if let Some((i, &x)) = o.iter().enumerate().find(|(_, &x)| x < 0) {
                    return err(format!("option_ids[{}][{}] = {x} is negative", i / l, i % l));
                }
            }
            (None, None, false) => {}
            (_, _, true) => return err("parallel checkpoints require position_ids and option_ids".into()),
            (_, _, false) => {
                return err(
                    "sequential checkpoints do not accept position_ids/option_ids (parallel layout inputs)"
                        .into(),
                )
            }
        }
        if let Some((i, &x)) =
            b.input_ids.iter().enumerate().find(|(_, &x)| x < 0 || x as usize >= self.dims.vocab)
        {
            return err(format!(
                "input_ids[{}][{}] = {x} is outside the checkpoint vocabulary [0, {})",
                i / l,
                i % l,
                self.dims.vocab
            ));
        }
        for (name, v) in [("attention_mask", &b.attention_mask), ("marker_mask", &b.marker_mask)] {
            if let Some((i, &x)) = v.iter().enumerate().find(|(_, &x)| x != 0 && x != 1) {
                return err(format!("{name} must contain only zero or one (found {x} at {i})"));
            }
        }
        for r in 0..bn {
            if b.attention_mask[r * l..(r + 1) * l].iter().all(|&x| x == 0) {
                return err(format!("row {r} has no valid attention key (attention_mask all zero)"));
            }
        }
        if let Some((i, &x)) = b.marker_pos.iter().enumerate().find(|(_, &x)| x < 0 || x as usize >= l) {
            return err(format!("marker_pos[{}][{}] = {x} is outside the sequence [0, {l})", i / k, i % k));
        }
        if let Some((r, &x)) = b.qtype.iter().enumerate().find(|(_, &x)| !(0..=2).contains(&x)) {
            return err(format!("qtype[{r}] = {x}; question type must be 0, 1 or 2"));
        }
        Ok(())
    }

    fn run(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) {
        let (bn, l, k) = (batch.batch, batch.length, batch.max_options);
        let dm = self.dims;
        let (d, inter) = (dm.d, dm.inter);
        let bl = bn * l;
        let split = match (self.threads, self.tuning.gemm) {
            (1, _) | (_, GemmThreading::Single) => Split::Single,
            (t, GemmThreading::Rayon) => Split::Gemm(t),
            (t, GemmThreading::Columns) => Split::Columns(t),
        };
        let par = Plan {
            split,
            bf16: self.tuning.bf16,
            palette: self.tuning.palette,
            f32_panel: self.tuning.f32_panel,
            isa: self.tuning.isa,
        };
        let workers = self.threads;
        let wide = self.tuning.isa.has_wide_elementwise();
        let attn = AttnKernel::for_isa(self.tuning.isa);
        let half_window = self.enc.local_attention * self.ablation.window_scale / 2;
        let band = self.bands.entry((l, half_window)).or_insert_with(|| window_template(l, half_window));

        let pf = &mut self.profile;
        pf.start();
        let s = &mut self.scratch;
        size(&mut s.x, bl * d);
        size(&mut s.a, bl * d);
        size(&mut s.qkv, bl * 3 * d);
        size(&mut s.attn, bl * d);
        size(&mut s.mlp, bl * (2 * inter).max(4 * d));
        size(&mut s.gated, bl * inter);
        size(&mut s.scores, workers * l * l);
        size(&mut s.markers, bn * k * d);
        size(&mut s.markers_n, bn * k * d);
        size(&mut s.scorer_h, bn * k * d);
        size(&mut s.tail, self.w.act_head.scratch_len());

        // Step 2: masks for this request.
        let parallel = match (&batch.position_ids, &batch.option_ids) {
            (Some(p), Some(o)) => Some((p.as_slice(), o.as_slice())),
            _ => None,
        };
        s.masks.build(bn, l, &batch.attention_mask, band, half_window, parallel);

        // Step 1: embeddings.
        for (r, &id) in batch.input_ids.iter().enumerate() {
            let tmp = &mut s.a[r * d..(r + 1) * d];
            self.w.tok_embeddings.row_into(id as usize, tmp);
            let n = &self.w.emb_norm;
            ops::layer_norm(tmp, &n.weight, n.bias.as_deref(), dm.eps, &mut s.x[r * d..(r + 1) * d]);
        }

        pf.lap(0);

        // Step 3: encoder layers.
        let enc_shape = AttnShape { batch: bn, len: l, heads: dm.heads, head_dim: dm.head_dim };
        for (layer, kind) in self.w.layers.iter().zip(&self.enc.layer_kinds) {
            let input: &[f32] = match &layer.attn_norm {
                None => &s.x,
                Some(n) => {
                    norm_rows(&s.x, &mut s.a, d, &n.weight, n.bias.as_deref(), dm.eps, workers);
                    &s.a
                }
            };
            pf.lap(1);
            linear(input, bl, &layer.wqkv, &mut s.qkv, false, par);
            pf.lap(2);
            let (rope, mask) = match kind {
                LayerKind::Full => (&self.rope_full, &s.masks.full),
                LayerKind::Sliding => (&self.rope_sliding, &s.masks.local),
            };
            let rope =
                (!self.ablation.no_rope).then_some(RopeAt { rope, positions: batch.position_ids.as_deref() });
            run_attention(&self.pool, &s.qkv, enc_shape, mask, rope, &mut s.scores, &mut s.attn, attn);
            pf.lap(3);
            linear(&s.attn, bl, &layer.wo, &mut s.x, true, par);
            pf.lap(4);
            let n = &layer.mlp_norm;
            norm_rows(&s.x, &mut s.a, d, &n.weight, n.bias.as_deref(), dm.eps, workers);
            pf.lap(1);
            linear(&s.a, bl, &layer.wi, &mut s.mlp, false, par);
            pf.lap(5);
            let tanh = self.ablation.tanh_gelu;
            let gate_row = |(m, g): (&[f32], &mut [f32])| {
                let (value, gate) = m.split_at(inter);
                if tanh {
                    for ((o, &v), &gt) in g.iter_mut().zip(value).zip(gate) {
                        *o = ops::gelu_tanh(v) * gt;
                    }
                } else {
                    ops::gelu_mul(value, gate, g, wide);
                }
            };
            zip_rows(&s.mlp[..bl * 2 * inter], 2 * inter, &mut s.gated, inter, workers, gate_row);
            pf.lap(6);
            linear(&s.gated, bl, &layer.mlp_wo, &mut s.x, true, par);
            pf.lap(7);
        }

        // Steps 4–5: final norm, type embedding.
        let n = &self.w.final_norm;
        norm_rows(&s.x, &mut s.a, d, &n.weight, n.bias.as_deref(), dm.eps, workers);
        for (r, row) in s.a.chunks_exact_mut(d).enumerate() {
            let q = batch.qtype[r / l] as usize;
            for (x, &t) in row.iter_mut().zip(&self.w.type_emb[q * d..(q + 1) * d]) {
                *x += t;
            }
        }
        s.x.copy_from_slice(&s.a);
        pf.lap(1);

        // Step 6: decision head.
        let head_shape = AttnShape { batch: bn, len: l, heads: dm.head_heads, head_dim: dm.head_head_dim };
        let head_mask = if parallel.is_some() { &s.masks.head } else { &s.masks.full };
        for hl in &self.w.head {
            norm_rows(&s.x, &mut s.a, d, &hl.norm1.weight, hl.norm1.bias.as_deref(), HEAD_EPS, workers);
            pf.lap(1);
            linear(&s.a, bl, &hl.in_proj, &mut s.qkv, false, par);
            pf.lap(8);
            run_attention(&self.pool, &s.qkv, head_shape, head_mask, None, &mut s.scores, &mut s.attn, attn);
            pf.lap(9);
            linear(&s.attn, bl, &hl.out_proj, &mut s.x, true, par);
            pf.lap(10);
            norm_rows(&s.x, &mut s.a, d, &hl.norm2.weight, hl.norm2.bias.as_deref(), HEAD_EPS, workers);
            pf.lap(1);
            let ff = &mut s.mlp[..bl * 4 * d];
            linear(&s.a, bl, &hl.linear1, ff, false, par);
            for v in ff.iter_mut() {
                *v = v.max(0.0);
            }
            pf.lap(11);
            linear(ff, bl, &hl.linear2, &mut s.x, true, par);
            pf.lap(12);
        }

        // Step 7: marker gather.
        for (j, &p) in batch.marker_pos.iter().enumerate() {
            let src = (j / k) * l + p as usize;
            s.markers[j * d..(j + 1) * d].copy_from_slice(&s.x[src * d..(src + 1) * d]);
        }
        // Step 8: scorer.
        let sc = &self.w.scorer;
        norm_rows(
            &s.markers,
            &mut s.markers_n,
            d,
            &sc.norm.weight,
            sc.norm.bias.as_deref(),
            HEAD_EPS,
            workers,
        );
        linear(&s.markers_n, bn * k, &sc.hidden, &mut s.scorer_h, false, par);
        if self.ablation.tanh_gelu {
            for v in s.scorer_h.iter_mut() {
                *v = ops::gelu_tanh(*v);
            }
        } else {
            ops::gelu_in_place(&mut s.scorer_h);
        }
        out.batch = bn;
        out.max_options = k;
        out.num_actions = dm.actions;
        size(&mut out.logits, bn * k);
        size(&mut out.action_logits, bn * dm.actions);
        scorer_output(&s.scorer_h, &sc.output, d, &mut out.logits);
        // Step 9: option mask.
        for (logit, &m) in out.logits.iter_mut().zip(&batch.marker_mask) {
            if m == 0 {
                *logit = MASKED_LOGIT;
            }
        }
        // Steps 10–11: action features and head.
        for r in 0..bn {
            let row = &out.logits[r * k..(r + 1) * k];
            let count = batch.marker_mask[r * k..(r + 1) * k].iter().filter(|&&m| m != 0).count();
            let feat = action_features(row, count);
            let cls = &s.x[r * l * d..(r * l + 1) * d];
            let dst = &mut out.action_logits[r * dm.actions..(r + 1) * dm.actions];
            // Lengths were checked at construction (`broken`), so this cannot fail here.
            let _ = self.w.act_head.forward(cls, &feat, &mut s.tail, dst);
        }
        pf.lap(13);
    }
}

/// LayerNorm every `d`-wide row of `x` into `out`.
fn norm_rows(x: &[f32], out: &mut [f32], d: usize, w: &[f32], b: Option<&[f32]>, eps: f32, workers: usize) {
    zip_rows(x, d, out, d, workers, |(xr, or)| ops::layer_norm(xr, w, b, eps, or));
}

/// `f` on each pair of an `xw`-wide row of `x` and the `ow`-wide row of `out` beside it,
/// shared out on the current rayon pool (the engine's: see `forward`) when `workers > 1`; each
/// row's arithmetic is the same either way.
fn zip_rows(
    x: &[f32],
    xw: usize,
    out: &mut [f32],
    ow: usize,
    workers: usize,
    f: impl Fn((&[f32], &mut [f32])) + Sync + Send,
) {
    if workers > 1 {
        x.par_chunks_exact(xw).zip(out.par_chunks_exact_mut(ow)).with_min_len(8).for_each(f);
    } else {
        x.chunks_exact(xw).zip(out.chunks_exact_mut(ow)).for_each(f);
    }
}

/// `logit[j] = h[j] · w3 + b3` for the scorer's `[1, D]` output layer.
fn scorer_output(h: &[f32], output: &Linear, d: usize, logits: &mut [f32]) {
    let mut row = [0.0f32; 1];
    for (hr, l) in h.chunks_exact(d).zip(logits.iter_mut()) {
        output.forward_vec(hr, &mut row);
        *l = row[0];
    }
}

/// Attention on the engine's pool, one group of heads per pool thread (the pool has the
/// engine's `threads`, and the scratch holds that many score tiles), or on this thread, with
/// the products of `kernel` ([`AttnKernel::for_isa`]).
#[allow(clippy::too_many_arguments)]
fn run_attention(
    pool: &Option<Arc<rayon::ThreadPool>>,
    qkv: &[f32],
    shape: AttnShape,
    mask: &[u8],
    rope: Option<RopeAt<'_>>,
    scores: &mut [f32],
    out: &mut [f32],
    kernel: AttnKernel,
) {
    match pool {
        Some(p) => {
            p.install(|| attention(qkv, shape, mask, rope, scores, out, p.current_num_threads(), kernel))
        }
        None => attention(qkv, shape, mask, rope, scores, out, 1, kernel),
    }
}

/// Move every projection weight (encoder, head, scorer hidden) to the engine's storage order:
/// FP32 packed into 16-row panels where the ISA has panel kernels (and the rows fill whole
/// panels), else to `tuning.weight_layout` for `gemm`; BF16 and FP16 to pairs of 16-row panels
/// where the pair-dot or panel kernels run, else row-major; 8-bit palettes to panel order where
/// the panel kernels run.
fn to_engine_layout(mut w: DecisionWeights, tuning: Tuning) -> DecisionWeights {
    let dot = tuning.bf16 != Bf16Kernel::Decode && tuning.isa.has_bf16_dot();
    let panel = tuning.isa.has_panels();
    let pack_f32 = panel && !tuning.f32_gemm && !tuning.f32_panel;
    for (_, l) in w.projections_mut() {
        match &mut l.weight {
            // the pair-dot kernel reads Pairs16; so does the FP32 panel kernel's vector decoder
            Matrix::BF16(h) => {
                h.set_order(if dot || panel { HalfOrder::Pairs16 } else { HalfOrder::RowMajor })
            }
            // the FP32 panel kernel decodes Pairs16 FP16 with vector shuffles
            Matrix::F16(h) => h.set_order(if panel { HalfOrder::Pairs16 } else { HalfOrder::RowMajor }),
            // and 8-bit palettes in panel order with byte permutes
            Matrix::Palettized(p) => {
                let lut8 = panel && p.group_size().is_multiple_of(16);
                p.set_order(if lut8 { PaletteOrder::Panels16 } else { PaletteOrder::RowMajor });
            }
            m if pack_f32 && m.rows().is_multiple_of(lowp::PANEL_ROWS) => m.set_layout(Layout::Panels16),
            m => m.set_layout(tuning.weight_layout),
        }
    }
    w
}

/// The precision of the projection weights: `f32` when all are FP32, else the name of the
/// other precision (`f16`, `bf16`, `w8`, …; names joined with `+` if they are mixed).
fn weights_precision(w: &DecisionWeights) -> String {
    let mut names: Vec<&str> =
        w.projections().iter().map(|(_, l)| l.weight.precision()).filter(|p| *p != "f32").collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        "f32".into()
    } else {
        names.join("+")
    }
}

impl Backend for PortableBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError> {
        if let Some(e) = &self.broken {
            return Err(BackendError::Runtime(e.clone()));
        }
        self.validate(batch)?;
        if batch.batch == 0 {
            out.batch = 0;
            out.max_options = batch.max_options;
            out.num_actions = self.dims.actions;
            out.logits.clear();
            out.action_logits.clear();
            return Ok(());
        }
        match self.pool.clone() {
            Some(pool) => pool.install(|| self.run(batch, out)),
            None => self.run(batch, out),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
