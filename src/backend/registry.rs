//! Backend specs (`portable:f32|f16|bf16|w8|w6|w4`, `portable:w8:PATH`,
//! `portable:palette:PATH`; later `coreml:…`, `mlx:…`) and their constructors. The only place
//! besides the leaf files that knows which backends exist on this platform.

use std::path::PathBuf;

use super::coreml::{CoreMlError, CoreMlSpec};
use super::portable::{Bf16Kernel, PaletteKernel, PortableBackend};
use super::{Backend, BackendKind, Context, ShapeCaps, ShapeMode};
use crate::laya::bundle::{sha256_hex, Bundle, ModelSpec, Weights};
use crate::model::loader::{
    convert_weights, converted_fingerprint, load_source, source_fingerprint, LoadError,
};
use crate::model::palettize::{read_palette, read_palette_meta, PaletteError, PaletteReport};
use crate::settings::Settings;

/// The portable spec precisions (`portable:f32|f16|bf16|w8|w6|w4`) are the one precision type.
pub use crate::model::Precision;

/// A backend spec that cannot be built here.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Not a spec we know.
    #[error("unknown backend `{spec}`; available here: {available}")]
    Unknown { spec: String, available: String },
    /// Known, but this platform cannot run it.
    #[error("backend `{spec}` needs {needs}; this build runs on {os}, where the portable engine runs (portable:f32, portable:f16, portable:bf16, portable:w8)")]
    Unavailable { spec: String, needs: &'static str, os: &'static str },
    /// The model cannot run on this backend.
    #[error("backend `{spec}` cannot run model `{model}`: {reason}")]
    Incompatible { spec: String, model: String, reason: String },
    /// The weights failed to load.
    #[error("{0}")]
    Weights(String),
    /// A spec of a known kind with a bad argument (e.g. Core ML compute units).
    #[error("backend `{spec}`: {reason}")]
    BadSpec { spec: String, reason: String },
    /// A Core ML bundle or package that cannot be loaded.
    #[error("backend `{spec}`: {error}")]
    CoreMl { spec: String, error: CoreMlError },
    /// A reference runtime's worker that could not start or load (`ref:…`).
    #[error("backend `{spec}`: {error}")]
    Reference { spec: String, error: super::reference::ReferenceError },
}

impl crate::error::Classify for RegistryError {
    /// A bad invocation, except an arm that failed while its runtime loaded (a worker that
    /// died, hung or wrote garbage while loading): a failed run.
    fn kind(&self) -> crate::error::Kind {
        match self {
            RegistryError::Reference { error: super::reference::ReferenceError::Worker(e), .. } => e.kind(),
            _ => crate::error::Kind::Input,
        }
    }
}

/// The portable arms the `speed` command runs by default: f32, f16, bf16, w8.
pub fn portable_precisions() -> &'static [Precision] {
    &[Precision::F32, Precision::F16, Precision::Bf16, Precision::W8]
}

/// A parsed backend spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// The portable CPU engine; non-FP32 precisions convert the loaded FP32 weights on the fly.
    Portable(Precision),
    /// Scripted outputs for tests and smoke runs, never a measurement of a model:
    /// `mock:ok`, `mock:drift-after=N` (results change after N calls), `mock:fail-after=N`
    /// (calls fail after N), optional `:delay-us=D` per call.
    Mock {
        /// Calls before results drift.
        drift_after: Option<usize>,
        /// Calls before calls fail.
        fail_after: Option<usize>,
        /// Sleep per call.
        delay_us: u64,
    },
    /// The portable CPU engine on palettized weights loaded from a palette file
    /// (`portable:w8:PATH`, `portable:palette:PATH`).
    PortablePalette {
        /// The palette `.safetensors` file.
        path: PathBuf,
        /// Index width the spec asked for (`w8` → 8); `None` (`palette:`) accepts any.
        bits: Option<u8>,
    },
    /// A Core ML bundle (`coreml:BUNDLE[:cpu_ne|cpu_gpu|all|cpu]`); parsed on every OS, built
    /// only on macOS.
    CoreMl(CoreMlSpec),
    /// The compiled MLX graph on Apple silicon (`mlx:fp16|fp32:SRC`, macOS, feature `mlx`).
    Mlx(super::mlx::MlxSpec),
    /// A published Python runtime in a worker process (`ref:KIND:…`, docs/reference-runtimes.md).
    Reference(super::reference::RefSpec),
}

/// The specs this build can run, for messages.
pub const AVAILABLE: &str = "portable:f32, portable:f16, portable:bf16, portable:w8, portable:w6, portable:w4, portable:w8:PATH (or w6/w4), portable:palette:PATH, ref:KIND:... (a published Python runtime)";

/// One backend spec kind: its prefix, the engine it builds and the parser of the text after
/// `prefix:`. [`KINDS`] is the only list of spec kinds: [`BackendSpec::parse`] and
/// [`classify`] read it.
pub struct KindRow {
    /// The text before the first `:` (`portable`, `mlx`).
    pub prefix: &'static str,
    /// The engine.
    pub kind: BackendKind,
    /// Read the rest of the spec (`spec` is the whole text, for messages).
    parse: fn(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError>,
}

/// Every backend spec kind.
pub const KINDS: &[KindRow] = &[
    KindRow { prefix: "portable", kind: BackendKind::Portable, parse: parse_portable },
    KindRow { prefix: "mock", kind: BackendKind::Mock, parse: parse_mock },
    KindRow { prefix: "coreml", kind: BackendKind::CoreMl, parse: parse_coreml },
    KindRow { prefix: "mlx", kind: BackendKind::Mlx, parse: parse_mlx },
    KindRow { prefix: "ref", kind: BackendKind::Reference, parse: parse_ref },
];

fn unknown(spec: &str) -> RegistryError {
    RegistryError::Unknown { spec: spec.into(), available: available_here() }
}

/// [`AVAILABLE`], with the MLX arm where this build has it.
fn available_here() -> String {
    if cfg!(feature = "mlx") {
        format!("{AVAILABLE}, mlx:fp32|fp16:CHECKPOINT (a compiled MLX graph)")
    } else {
        AVAILABLE.to_string()
    }
}

fn parse_portable(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError> {
    let (prec, path) = match rest.split_once(':') {
        Some((p, path)) => (p, Some(path)),
        None => (rest, None),
    };
    match (prec, path) {
        ("", None) => Ok(BackendSpec::Portable(Precision::F32)),
        ("palette", Some(path)) if !path.is_empty() => {
            Ok(BackendSpec::PortablePalette { path: PathBuf::from(path), bits: None })
        }
        (p, None) => Precision::from_name(p).map(BackendSpec::Portable).ok_or_else(|| unknown(spec)),
        (p, Some(path)) if !path.is_empty() => {
            match Precision::from_name(p).and_then(Precision::palette_bits) {
                Some(bits) => {
                    Ok(BackendSpec::PortablePalette { path: PathBuf::from(path), bits: Some(bits) })
                }
                None => Err(unknown(spec)),
            }
        }
        _ => Err(unknown(spec)),
    }
}

const MOCK_FORMS: &str = "mock:ok, mock:drift-after=N, mock:fail-after=N, mock:...:delay-us=D";

fn parse_mock(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError> {
    let bad = || RegistryError::Unknown { spec: spec.into(), available: MOCK_FORMS.into() };
    let (mut drift_after, mut fail_after, mut delay_us) = (None, None, 0);
    for part in rest.split(':').filter(|p| !p.is_empty() && *p != "ok") {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let n: u64 = value.parse().map_err(|_| bad())?;
        match key {
            "drift-after" => drift_after = Some(n as usize),
            "fail-after" => fail_after = Some(n as usize),
            "delay-us" => delay_us = n,
            _ => return Err(bad()),
        }
    }
    Ok(BackendSpec::Mock { drift_after, fail_after, delay_us })
}

fn parse_coreml(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError> {
    CoreMlSpec::parse(rest)
        .map(BackendSpec::CoreMl)
        .map_err(|e| RegistryError::BadSpec { spec: spec.into(), reason: e.to_string() })
}

fn parse_mlx(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError> {
    if !cfg!(feature = "mlx") {
        return Err(RegistryError::Unavailable {
            spec: spec.into(),
            needs: MLX_NEEDS,
            os: std::env::consts::OS,
        });
    }
    super::mlx::MlxSpec::parse(rest)
        .map(BackendSpec::Mlx)
        .map_err(|e| RegistryError::BadSpec { spec: spec.into(), reason: e.to_string() })
}

fn parse_ref(spec: &str, rest: &str) -> Result<BackendSpec, RegistryError> {
    super::reference::RefSpec::parse(rest)
        .map(BackendSpec::Reference)
        .map_err(|e| RegistryError::BadSpec { spec: spec.into(), reason: e.to_string() })
}

/// The row of a spec text's kind prefix, if it names one.
fn row_of(text: &str) -> Option<(&'static KindRow, &str)> {
    let (prefix, rest) = text.split_once(':').unwrap_or((text, ""));
    KINDS.iter().find(|row| row.prefix == prefix).map(|row| (row, rest))
}

impl BackendSpec {
    /// Whether the engine takes a worker thread count (`speed --threads`): the portable engine
    /// does; a mock, Core ML, MLX or reference arm sets its own.
    pub fn takes_threads(&self) -> bool {
        matches!(self, BackendSpec::Portable(_) | BackendSpec::PortablePalette { .. })
    }

    /// Parse a spec string.
    pub fn parse(spec: &str) -> Result<Self, RegistryError> {
        match row_of(spec) {
            Some((row, rest)) => (row.parse)(spec, rest),
            None => Err(unknown(spec)),
        }
    }
}

/// What a spec text names, read from its kind prefix alone (nothing is parsed, loaded or
/// checked): `convert-check` takes a backend spec or a model as its candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecKind {
    /// A backend that runs a model named elsewhere: `portable:…`, `mock:…` or `mlx:…`.
    Engine(BackendKind),
    /// A Core ML bundle, its own model: the folder (and compute units), the text after
    /// `coreml:`.
    CoreMl(String),
    /// Not a backend spec: a model folder or model spec (`builtin:tiny`, `hub:…`, a path).
    Model,
}

/// Classify a spec text by its kind prefix ([`SpecKind`]).
pub fn classify(text: &str) -> SpecKind {
    match row_of(text) {
        Some((row, rest)) if row.kind == BackendKind::CoreMl => SpecKind::CoreMl(rest.to_string()),
        Some((row, _)) => SpecKind::Engine(row.kind),
        None => SpecKind::Model,
    }
}

/// Whether one backend spec kind is usable in this build on this machine (`laya-bench doctor`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendStatus {
    /// The spec (or its pattern) to pass to `--arm NAME=SPEC` / `--backend`.
    pub spec: String,
    /// Whether it can run here.
    pub usable: bool,
    /// What it is, or why it cannot run and what to use instead.
    pub detail: String,
}

/// Every backend spec kind: each portable precision, `coreml:`, `mlx:` and `mock:`.
pub fn survey(settings: &Settings) -> Vec<BackendStatus> {
    let (isa, isa_note) = super::portable::isa::selection(settings.isa.as_deref());
    let (bf16, palette) = (Bf16Kernel::selected(isa, settings), PaletteKernel::selected(isa, settings));
    // how the BF16 and palette products were chosen
    let bf16_notes = super::portable::bf16_notes(isa, settings);
    let mut out: Vec<BackendStatus> = portable_precisions()
        .iter()
        .map(|p| BackendStatus {
            spec: format!("portable:{}", p.name()),
            usable: true,
            detail: format!(
                "portable CPU engine, {} weights, {}, {} thread(s), {} kernels{}",
                p.name().to_uppercase(),
                if p.name() == "bf16" && bf16 == Bf16Kernel::Amx && isa.has_amx_bf16() {
                    "activations rounded to BF16 at each product (AMX-BF16 tiles), FP32 sums".to_string()
                } else if p.name() == "w8" && palette == PaletteKernel::Bf16 && isa.has_amx_bf16() {
                    "tables rounded to BF16 and activations rounded to BF16 at each product \
                     (AMX-BF16 tiles), FP32 sums"
                        .to_string()
                } else if p.name() == "w8" && palette.rounds_to_bf16(isa) {
                    "tables rounded to BF16 and activations rounded to BF16 at each product \
                     (AVX-512 BF16 pair-dot), FP32 sums"
                        .to_string()
                } else if p.name() == "bf16" && bf16.rounds_activations(isa) {
                    "activations rounded to BF16 at each product (AVX-512 BF16 pair-dot), FP32 sums"
                        .to_string()
                } else {
                    format!("FP32 activations and compute ({})", isa.tile())
                },
                default_threads(),
                isa.name(),
                isa_note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
            ) + &if matches!(p.name(), "bf16" | "w8") {
                bf16_notes.iter().map(|n| format!("; {n}")).collect()
            } else {
                String::new()
            },
        })
        .collect();
    for (spec, detail) in [
        ("portable:w6", "portable CPU engine, 6-bit grouped k-means palettized projection weights (a convert-check candidate)"),
        ("portable:w4", "portable CPU engine, 4-bit grouped k-means palettized projection weights (a convert-check candidate)"),
        ("portable:w8:FILE", "portable CPU engine on a palette file written by `laya-bench palettize` (also w6/w4, palette:FILE)"),
    ] {
        out.push(BackendStatus { spec: spec.into(), usable: true, detail: detail.into() });
    }
    out.push(BackendStatus {
        spec: "coreml:BUNDLE".into(),
        usable: cfg!(target_os = "macos"),
        detail: if cfg!(target_os = "macos") {
            "Core ML bundle (laya-coreml-ane or laya-coreml), compute units :cpu_ne|cpu_gpu|all|cpu; runs when the bundle verifies and its package signature matches".into()
        } else {
            format!("Core ML (Neural Engine) bundle: needs {COREML_NEEDS}; this build runs on {}", std::env::consts::OS)
        },
    });
    out.push(mlx_status(settings));
    out.push(reference_status(settings));
    out.push(BackendStatus {
        spec: "mock:ok".into(),
        usable: true,
        detail: "scripted outputs for tests and smoke runs (also mock:drift-after=N, mock:fail-after=N, :delay-us=D); never a measurement of a model".into(),
    });
    out
}

/// `doctor`'s line for `ref:` arms: the interpreter a worker would start with, and whether it
/// is there (each runtime's package is checked when its arm is built, exit 2 naming the pip
/// command).
fn reference_status(settings: &Settings) -> BackendStatus {
    let python = super::reference::python(settings);
    let found = if python.components().count() > 1 {
        python.is_file()
    } else {
        settings
            .path
            .as_ref()
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(&python).is_file()))
    };
    let kinds = "laya-mlx, laya, laya-apple, laya-coreml, laya-coreml-ane, laya-cuda, laya-mnn, factory";
    BackendStatus {
        spec: "ref:KIND:ARGS".into(),
        usable: found,
        detail: if found {
            format!(
                "a published Python runtime in a worker process ({kinds}) on {}; each arm checks its package when built (docs/reference-runtimes.md, scripts/setup-ref.sh)",
                python.display()
            )
        } else {
            format!(
                "a published Python runtime in a worker process ({kinds}): no interpreter {} here; set LAYA_BENCH_PYTHON or run scripts/setup-ref.sh",
                python.display()
            )
        },
    }
}

/// What a Core ML spec needs that other OSes lack.
const COREML_NEEDS: &str = "macOS with Core ML (Apple silicon for the Neural Engine)";

/// Validate a Core ML bundle (manifest, file hashes, host weights) on any OS, then build its
/// backend on macOS; elsewhere answer that it needs macOS. The host path keeps the tokenizer
/// and configs of `--model`, which must describe the same checkpoint.
fn build_coreml(
    cm: &CoreMlSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<&ShapeCaps>,
    settings: &Settings,
) -> Result<Box<dyn Backend>, RegistryError> {
    if !cm.bundle.is_dir() || !cm.bundle.join("coreml_config.json").is_file() {
        let what = if cm.bundle.is_dir() {
            "has no coreml_config.json"
        } else if cm.bundle.exists() {
            "is a file, not a folder (give the bundle's folder)"
        } else {
            "does not exist"
        };
        return Err(RegistryError::Weights(format!(
            "{spec_text}: the folder {} {what}, so it is not a Core ML bundle (a folder with coreml_config.json; an original checkpoint runs with portable:f32)",
            cm.bundle.display()
        )));
    }
    let loaded = Bundle::load(&ModelSpec::Dir(cm.bundle.clone()), |_| None)
        .map_err(|e| RegistryError::Weights(e.to_string()))?;
    let Weights::CoreMl(core) = &loaded.weights else {
        return Err(RegistryError::Incompatible {
            spec: spec_text.into(),
            model: loaded.source.clone(),
            reason: "it has no coreml_config.json, so it is not a Core ML bundle; run an original checkpoint with portable:f32".into(),
        });
    };
    #[cfg(not(target_os = "macos"))]
    {
        let _ = (cm, core, bundle, shapes, settings);
        Err(RegistryError::Unavailable {
            spec: spec_text.into(),
            needs: COREML_NEEDS,
            os: std::env::consts::OS,
        })
    }
    #[cfg(target_os = "macos")]
    {
        let (e, a) = (&loaded.encoder, &loaded.agent);
        if (e.vocab_size, e.hidden_size, a.num_actions, a.option_layout)
            != (
                bundle.encoder.vocab_size,
                bundle.encoder.hidden_size,
                bundle.agent.num_actions,
                bundle.agent.option_layout,
            )
        {
            return Err(RegistryError::Incompatible {
                spec: spec_text.into(),
                model: bundle.source.clone(),
                reason: format!(
                    "the Core ML bundle {} is another checkpoint (vocabulary, width, actions or option layout differ); pass --model {} so prompts use its tokenizer and configs",
                    loaded.source, loaded.source
                ),
            });
        }
        let parallel = a.option_layout == crate::laya::config::OptionLayout::Parallel;
        super::coreml::open(cm, core, e, parallel, shapes, settings)
            .map_err(|error| RegistryError::CoreMl { spec: spec_text.into(), error })
    }
}

/// Threads the portable engine uses: all available cores; on macOS, where the OS names its
/// performance cores (`hw.perflevel0.logicalcpu`), as many as those (at most the available
/// ones), so a product is not split into parts that wait for the slower efficiency cores
/// ([`crate::host::default_worker_threads`]).
pub fn default_threads() -> usize {
    crate::host::default_worker_threads(
        std::thread::available_parallelism().map(|n| n.get()).ok(),
        crate::host::performance_logical_cpus(),
    )
}

/// Default shapes of the portable engine for a model: any multiple of 16 up to the model's
/// `max_len`, up to 8 rows per call and 255 option slots.
pub fn portable_shapes(bundle: &Bundle) -> ShapeCaps {
    ShapeCaps {
        batch_size: 8,
        max_length: bundle.agent.max_len,
        min_length: 16,
        max_options: 255,
        mode: ShapeMode::Range,
    }
}

/// Build a backend for a bundle, with the process's settings and hub (`context`).
pub fn build(
    spec: &BackendSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<ShapeCaps>,
    context: &Context,
) -> Result<Box<dyn Backend>, RegistryError> {
    build_threaded(spec, spec_text, bundle, shapes, None, context)
}

/// [`build`] with `threads` workers for an engine that takes a count
/// ([`BackendSpec::takes_threads`]; `None`: [`default_threads`]); a count for any other
/// engine is refused, naming the spec.
pub fn build_threaded(
    spec: &BackendSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<ShapeCaps>,
    threads: Option<usize>,
    context: &Context,
) -> Result<Box<dyn Backend>, RegistryError> {
    if let (Some(n), false) = (threads, spec.takes_threads()) {
        return Err(RegistryError::BadSpec {
            spec: spec_text.into(),
            reason: format!("takes no thread count ({n} asked); only portable arms do"),
        });
    }
    if let BackendSpec::Mock { drift_after, fail_after, delay_us } = spec {
        use super::mock::{Script, ScriptedBackend};
        let shapes = shapes.unwrap_or_else(|| portable_shapes(bundle));
        let script = match drift_after {
            Some(after) => Script::Drift { num_actions: bundle.agent.num_actions, after: *after },
            None => Script::Synthetic { num_actions: bundle.agent.num_actions },
        };
        let mut b = ScriptedBackend::new(shapes, script, std::time::Duration::from_micros(*delay_us));
        b.record = false;
        b.fail_after = *fail_after;
        return Ok(Box::new(b));
    }
    if let BackendSpec::CoreMl(cm) = spec {
        return build_coreml(cm, spec_text, bundle, shapes.as_ref(), &context.settings);
    }
    if let BackendSpec::Mlx(mlx) = spec {
        return build_mlx(mlx, spec_text, bundle, shapes, context);
    }
    if let BackendSpec::Reference(r) = spec {
        let shapes = shapes.unwrap_or_else(|| portable_shapes(bundle));
        return super::reference::ReferenceBackend::start(r, shapes, &context.settings)
            .map(|b| Box::new(b) as Box<dyn Backend>)
            .map_err(|error| RegistryError::Reference { spec: spec_text.into(), error });
    }
    let threads = threads.unwrap_or_else(default_threads);
    let (backend, _) = build_portable(spec, spec_text, bundle, shapes, threads, &context.settings)?;
    Ok(Box::new(backend))
}

/// The host an arm runs behind: `bundle`'s tokenizer and agent config at `shapes`, with the
/// backend's [`super::HostHints`] applied (MLX arms: the baseline's prompt-prefix cache,
/// [`super::mlx::host_hints`]). Every command that runs a backend builds its host here, so
/// an arm behaves the same in `predict`, `speed`, `energy`, `trace run`, `snake`, `verify` and
/// `convert-check`.
pub fn host_for<'b>(
    bundle: &'b Bundle,
    shapes: ShapeCaps,
    info: &super::BackendInfo,
) -> crate::laya::host::Host<'b> {
    let host = crate::laya::host::Host::new(&bundle.tokenizer, &bundle.agent, shapes);
    match info.host_hints.prefix_cache {
        Some(capacity) => host.with_prefix_cache(capacity),
        None => host,
    }
}

#[cfg(feature = "mlx")]
fn build_mlx(
    spec: &super::mlx::MlxSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<ShapeCaps>,
    context: &Context,
) -> Result<Box<dyn Backend>, RegistryError> {
    Ok(Box::new(super::mlx::graph::MlxBackend::build(spec, spec_text, bundle, shapes, context)?))
}

#[cfg(not(feature = "mlx"))]
fn build_mlx(
    _spec: &super::mlx::MlxSpec,
    spec_text: &str,
    _bundle: &Bundle,
    _shapes: Option<ShapeCaps>,
    _context: &Context,
) -> Result<Box<dyn Backend>, RegistryError> {
    Err(RegistryError::Unavailable { spec: spec_text.into(), needs: MLX_NEEDS, os: std::env::consts::OS })
}

/// `doctor`'s MLX line: with the feature, one product evaluated on MLX's default device and
/// the BLAS it used; without it, how to build it.
fn mlx_status(settings: &Settings) -> BackendStatus {
    #[cfg(feature = "mlx")]
    let (usable, detail) = match super::mlx::graph::probe(settings) {
        Ok(d) => (true, format!("compiled MLX graph (mlx:fp16|fp32:CHECKPOINT): {d}")),
        Err(e) => (
            false,
            format!("compiled MLX graph (mlx:fp16|fp32:CHECKPOINT): built in, but MLX cannot run here: {e}"),
        ),
    };
    #[cfg(not(feature = "mlx"))]
    let (usable, detail) = {
        let _ = settings;
        (false, format!("compiled MLX graph (mlx:fp16|fp32:CHECKPOINT): needs {MLX_NEEDS}"))
    };
    BackendStatus { spec: "mlx:CHECKPOINT".into(), usable, detail }
}

/// What an `mlx:` spec needs in a build without the feature, with the commands that build it.
#[cfg(target_os = "macos")]
const MLX_NEEDS: &str =
    "a build with `--features mlx` (`cargo build --release --features mlx`; needs cmake and Xcode's tools)";
#[cfg(not(target_os = "macos"))]
const MLX_NEEDS: &str =
    "a build with `--features mlx` (run `scripts/setup-mlx.sh`, then `cargo build --release --features mlx`)";

/// Build the portable engine for a bundle with `threads` workers, with the palettizer's report
/// when the spec palettized on the fly.
///
/// `BackendInfo::fingerprint`: for `portable:f32`, the sha256 of `model.safetensors` (or
/// `synthetic:NAME:seed=S`); for an on-the-fly conversion, [`converted_fingerprint`] (the
/// sha256 of the source fingerprint plus the conversion parameters — the conversion is
/// deterministic), except a palettization that changed no matrix, whose weights are the
/// source's and so is its fingerprint; for a palette file, the sha256 of the palette file's
/// bytes.
pub fn build_portable(
    spec: &BackendSpec,
    spec_text: &str,
    bundle: &Bundle,
    shapes: Option<ShapeCaps>,
    threads: usize,
    settings: &Settings,
) -> Result<(PortableBackend, Option<PaletteReport>), RegistryError> {
    let shapes = shapes.unwrap_or_else(|| portable_shapes(bundle));
    let (weights, fingerprint, name, report) = match spec {
        BackendSpec::Mock { .. }
        | BackendSpec::CoreMl(_)
        | BackendSpec::Mlx(_)
        | BackendSpec::Reference(_) => {
            return Err(RegistryError::Incompatible {
                spec: spec_text.into(),
                model: bundle.source.clone(),
                reason: "a mock, Core ML, MLX or reference spec has no portable engine".into(),
            })
        }
        BackendSpec::Portable(precision) => {
            let (weights, source) = load_source(spec_text, bundle)?;
            let (weights, report) = convert_weights(weights, *precision)?;
            // A palettization that changed nothing leaves the f32 weights: the same fingerprint.
            let unchanged = report.as_ref().is_some_and(|r| r.tensors.is_empty());
            let fingerprint = if unchanged { source } else { converted_fingerprint(&source, *precision) };
            (weights, fingerprint, precision.name().to_string(), report)
        }
        BackendSpec::PortablePalette { path, bits } => {
            let file = path.display().to_string();
            let bytes = std::fs::read(path)
                .map_err(|e| RegistryError::Weights(format!("{file}: cannot read the palette file ({e})")))?;
            let meta = read_palette_meta(&bytes, &file).map_err(weights_err)?;
            if let Some(b) = bits {
                if *b != meta.bits {
                    return Err(weights_err(PaletteError::Bits { file, expected: *b, found: meta.bits }));
                }
            }
            let source = source_fingerprint(spec_text, bundle)?;
            meta.check_source(&file, &source).map_err(weights_err)?;
            let (weights, meta) =
                read_palette(&bytes, &bundle.encoder, &bundle.agent, &file).map_err(weights_err)?;
            (weights, sha256_hex(&bytes), format!("w{}", meta.bits), None)
        }
    };
    let mut backend = PortableBackend::new(
        weights,
        bundle.encoder.clone(),
        bundle.agent.clone(),
        shapes,
        fingerprint,
        threads,
        settings,
    );
    backend.set_precision_name(&name);
    if let Some(r) = report.as_ref().filter(|r| r.tensors.is_empty()) {
        backend.add_note(format!(
            "nothing palettized: no projection matrix of this model has more than {} elements, so this arm runs the f32 weights and says nothing about {}-bit palettization",
            r.config.above_elements, r.config.bits
        ));
    }
    Ok((backend, report))
}

fn weights_err(e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Weights(e.to_string())
}

impl From<LoadError> for RegistryError {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::Weights(m) => RegistryError::Weights(m),
            LoadError::Incompatible { spec, model, reason } => {
                RegistryError::Incompatible { spec, model, reason }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_survey_lists_every_spec_kind_with_a_reason() {
        let s = survey(&Settings::of_test_process());
        let specs: Vec<&str> = s.iter().map(|b| b.spec.as_str()).collect();
        assert_eq!(
            specs,
            [
                "portable:f32",
                "portable:f16",
                "portable:bf16",
                "portable:w8",
                "portable:w6",
                "portable:w4",
                "portable:w8:FILE",
                "coreml:BUNDLE",
                "mlx:CHECKPOINT",
                "ref:KIND:ARGS",
                "mock:ok"
            ]
        );
        assert!(s[0].usable && s[10].usable);
        // The ref: line names the interpreter a worker would start with and the set-up script.
        assert!(s[9].detail.contains("scripts/setup-ref.sh"), "{:?}", s[9]);
        #[cfg(not(target_os = "macos"))]
        assert!(!s[7].usable && s[7].detail.contains("macOS"), "{:?}", s[7]);
    }

    #[test]
    fn parses_portable_and_rejects_unknown_specs() {
        assert_eq!(BackendSpec::parse("portable:f32").unwrap(), BackendSpec::Portable(Precision::F32));
        assert_eq!(BackendSpec::parse("portable").unwrap(), BackendSpec::Portable(Precision::F32));
        assert!(matches!(BackendSpec::parse("gpu:fast"), Err(RegistryError::Unknown { .. })));
        assert_eq!(
            BackendSpec::parse("coreml:bundle").unwrap(),
            BackendSpec::CoreMl(CoreMlSpec { bundle: "bundle".into(), units: None })
        );
        assert_eq!(
            BackendSpec::parse("coreml:/b/w8:cpu_gpu").unwrap(),
            BackendSpec::CoreMl(CoreMlSpec {
                bundle: "/b/w8".into(),
                units: Some(crate::backend::coreml::ComputeUnits::CpuGpu)
            })
        );
        let e = BackendSpec::parse("coreml:b:gpu").unwrap_err().to_string();
        assert!(e.contains("backend `coreml:b:gpu`") && e.contains("cpu_ne, cpu_gpu, all, cpu"), "{e}");
        assert!(BackendSpec::parse("coreml:").is_err());
    }

    #[test]
    fn specs_are_classified_by_their_kind_prefix() {
        assert_eq!(classify("portable:w8:p.st"), SpecKind::Engine(BackendKind::Portable));
        assert_eq!(classify("portable"), SpecKind::Engine(BackendKind::Portable));
        assert_eq!(classify("mock:fail-after=3"), SpecKind::Engine(BackendKind::Mock));
        assert_eq!(classify("mlx:fp16:builtin:tiny"), SpecKind::Engine(BackendKind::Mlx));
        assert_eq!(classify("coreml:/b/w8:cpu_gpu"), SpecKind::CoreMl("/b/w8:cpu_gpu".into()));
        assert_eq!(classify("coreml"), SpecKind::CoreMl(String::new()));
        for model in ["builtin:tiny", "hub:laya-tiny", "synthetic:base", "/models/laya", "mlxish"] {
            assert_eq!(classify(model), SpecKind::Model, "{model}");
        }
    }

    #[test]
    #[cfg(not(feature = "mlx"))]
    fn mlx_specs_say_what_they_need_here() {
        let e = BackendSpec::parse("mlx:fp16:builtin:tiny").unwrap_err();
        assert!(matches!(e, RegistryError::Unavailable { .. }), "{e}");
        assert!(e.to_string().contains("cargo build --release --features mlx"), "{e}");
        #[cfg(target_os = "linux")]
        assert!(e.to_string().contains("scripts/setup-mlx.sh"), "{e}");
        let bundle =
            crate::laya::bundle::Bundle::load(&crate::laya::bundle::ModelSpec::Builtin, |_| None).unwrap();
        let spec = BackendSpec::Mlx(crate::backend::mlx::MlxSpec::parse("fp16:builtin:tiny").unwrap());
        let e = build(&spec, "mlx:fp16:builtin:tiny", &bundle, None, &Context::of_test_process())
            .err()
            .expect("no MLX in this build");
        assert!(e.to_string().contains("--features mlx"), "{e}");
        let e =
            build_portable(&spec, "mlx:fp16:builtin:tiny", &bundle, None, 1, &Settings::of_test_process())
                .err()
                .unwrap();
        assert!(e.to_string().contains("no portable engine"), "{e}");
    }

    #[test]
    fn parses_every_precision_and_palette_paths() {
        for p in Precision::ALL {
            assert_eq!(
                BackendSpec::parse(&format!("portable:{}", p.name())).unwrap(),
                BackendSpec::Portable(p)
            );
            assert!(AVAILABLE.contains(&format!("portable:{}", p.name())));
        }
        assert_eq!(
            BackendSpec::parse("portable:w8:/tmp/a:b.safetensors").unwrap(),
            BackendSpec::PortablePalette { path: "/tmp/a:b.safetensors".into(), bits: Some(8) }
        );
        assert_eq!(
            BackendSpec::parse("portable:w4:p.st").unwrap(),
            BackendSpec::PortablePalette { path: "p.st".into(), bits: Some(4) }
        );
        assert_eq!(
            BackendSpec::parse("portable:palette:p.st").unwrap(),
            BackendSpec::PortablePalette { path: "p.st".into(), bits: None }
        );
        for bad in [
            "portable:f16:p.st",
            "portable:palette",
            "portable:palette:",
            "portable:w8:",
            "portable:w3",
            "portable:fp16",
        ] {
            assert!(matches!(BackendSpec::parse(bad), Err(RegistryError::Unknown { .. })), "{bad}");
        }
        let names: Vec<&str> = portable_precisions().iter().map(|p| p.name()).collect();
        assert_eq!(names, ["f32", "f16", "bf16", "w8"]);
        assert_eq!(Precision::W6.palette_bits(), Some(6));
        assert_eq!(Precision::Bf16.palette_bits(), None);
    }
}
