//! The Core ML backend (`coreml:BUNDLE[:cpu_ne|cpu_gpu|all|cpu]`): everything that is not a
//! framework call, portable and tested on every OS.
//!
//! - [`layout`]: the ANE bundle's FP16 BC1L input tensors from a [`PreparedBatch`];
//! - [`decode`]: outputs by shape (ANE) or name (ordinary export), strided reads, the FP32 host
//!   action tail;
//! - [`description`], the multi-array types, the ANE shapes and the load-time signature checks
//!   (of the declared interface on every OS, of the loaded model on macOS): the bundle format's
//!   package interface, in [`crate::laya::coreml_format`] (bundles check it when they load),
//!   re-exported here;
//! - [`availability`]: the package's specification version and the compute units against the
//!   running macOS, and the device text from what Core ML reports it can use;
//! - this file: the spec, compute units, the host weights, the ordinary export's run shapes
//!   and inputs, the compiled-model cache (keyed by package and OS build, installed without
//!   races) and the compute-plan entry.
//!
//! The framework calls live in `macos.rs`, compiled on macOS only (type-checked and linted for
//! aarch64-apple-darwin against the real crates by `.ci/run`). See docs/coreml.md.

pub mod availability;
pub mod decode;
pub mod layout;
#[cfg(target_os = "macos")]
mod macos;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::laya::coreml_format::{
    check_ane_signature, check_declared_ane, check_declared_ordinary, check_ordinary_signature, description,
    ordinary_caps, ordinary_input_names, FeatureSig, FormatError, ANE_SLOTS,
};

use self::decode::RawArray;
use self::layout::{AneInputs, AneShape};
use super::{ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use crate::laya::bundle::tree_sha256;
use crate::laya::coreml_format::compute_plan::ComputePlanReport;
use crate::model::tail::ActionHead;
use crate::model::weights::{Linear, Matrix};

/// Why the Core ML adapter cannot load or run, naming the input, file or step.
#[derive(Debug, thiserror::Error)]
pub enum CoreMlError {
    /// A compute-unit name that Core ML does not have.
    #[error("unknown Core ML compute units `{0}`; use one of cpu_ne, cpu_gpu, all, cpu (e.g. coreml:BUNDLE:cpu_ne)")]
    Units(String),
    /// The spec names no bundle.
    #[error("{0}")]
    Spec(String),
    /// A bundle or package file is missing or unusable.
    #[error("{path}: {detail}")]
    Bundle {
        /// The file or folder.
        path: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// A prepared batch that the fixed ANE signature rejects (the reference's messages).
    #[error("{0}")]
    Batch(String),
    /// The package's inputs or outputs are not the ones the bundle format promises.
    #[error("{0}")]
    Signature(String),
    /// A prediction output that cannot be decoded.
    #[error("Core ML output `{name}` {detail}")]
    Output {
        /// The output.
        name: String,
        /// What is wrong with it.
        detail: String,
    },
    /// This OS has no Core ML (or no compute plan).
    #[error("{0}; this build runs on {os}", os = std::env::consts::OS)]
    NeedsMacOs(&'static str),
    /// The running macOS is older than the package or setting needs.
    #[error("{what} needs macOS {needs} or newer; this Mac runs macOS {running}: {advice}")]
    NeedsNewerMacOs {
        /// The package (with its specification version) or the setting.
        what: String,
        /// The first macOS that has it.
        needs: availability::MacOsVersion,
        /// The running macOS.
        running: availability::MacOsVersion,
        /// What to do.
        advice: &'static str,
    },
    /// A Core ML call failed.
    #[error("Core ML could not {step}: {detail}")]
    Framework {
        /// What was attempted, e.g. `compile model.mlpackage`.
        step: String,
        /// The framework's own description.
        detail: String,
    },
}

impl crate::error::Classify for CoreMlError {
    /// The input (spec, bundle, package, or a package this macOS cannot read) is at fault,
    /// rather than a Core ML call that failed while running.
    fn kind(&self) -> crate::error::Kind {
        match self {
            CoreMlError::Units(_)
            | CoreMlError::Spec(_)
            | CoreMlError::Bundle { .. }
            | CoreMlError::Signature(_)
            | CoreMlError::NeedsMacOs(_)
            | CoreMlError::NeedsNewerMacOs { .. } => crate::error::Kind::Input,
            CoreMlError::Batch(_) | CoreMlError::Output { .. } | CoreMlError::Framework { .. } => {
                crate::error::Kind::Run
            }
        }
    }
}

/// The error of a framework call that raised an Objective-C exception (`description`: the
/// exception's name and reason, `None` for a nil exception), with what to check: the call is
/// refused by Core ML rather than failing inside it, so the package or the OS is the suspect.
pub fn exception_error(step: &str, description: Option<&str>) -> CoreMlError {
    let what = match description {
        Some(d) if !d.trim().is_empty() => format!("it raised an Objective-C exception ({})", d.trim()),
        _ => "it raised an Objective-C exception with no description".to_string(),
    };
    CoreMlError::Framework {
        step: step.to_string(),
        detail: format!(
            "{what}; check the bundle against its checkpoint with `laya-bench convert-check` (inputs Core ML rejects) and that macOS is up to date (a call this macOS lacks)"
        ),
    }
}

impl From<FormatError> for CoreMlError {
    fn from(e: FormatError) -> Self {
        match e {
            FormatError::Bundle { path, detail } => CoreMlError::Bundle { path, detail },
            FormatError::Signature(m) => CoreMlError::Signature(m),
        }
    }
}

/// Where Core ML may run the model (`MLComputeUnits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ComputeUnits {
    /// CPU and Neural Engine (`CPUAndNeuralEngine`); the ANE bundle's default.
    CpuNe,
    /// CPU and GPU (`CPUAndGPU`).
    CpuGpu,
    /// Everything (`All`); the ordinary export's default.
    All,
    /// CPU only (`CPUOnly`).
    Cpu,
}

impl ComputeUnits {
    /// Every value, in spec order.
    pub const ALL: [ComputeUnits; 4] =
        [ComputeUnits::CpuNe, ComputeUnits::CpuGpu, ComputeUnits::All, ComputeUnits::Cpu];

    /// Spec name (`cpu_ne`, `cpu_gpu`, `all`, `cpu`), as laya-coreml spells them.
    pub fn name(self) -> &'static str {
        match self {
            ComputeUnits::CpuNe => "cpu_ne",
            ComputeUnits::CpuGpu => "cpu_gpu",
            ComputeUnits::All => "all",
            ComputeUnits::Cpu => "cpu",
        }
    }

    /// The value with spec name `name`.
    pub fn parse(name: &str) -> Result<Self, CoreMlError> {
        Self::ALL.into_iter().find(|u| u.name() == name).ok_or_else(|| CoreMlError::Units(name.into()))
    }

    /// `MLComputeUnits` raw value (CPUOnly 0, CPUAndGPU 1, All 2, CPUAndNeuralEngine 3).
    pub fn code(self) -> isize {
        match self {
            ComputeUnits::Cpu => 0,
            ComputeUnits::CpuGpu => 1,
            ComputeUnits::All => 2,
            ComputeUnits::CpuNe => 3,
        }
    }
}

/// The two Core ML bundle formats of docs/host-path.md §1.6/§1.7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleFormat {
    /// `laya-coreml-ane`: fixed B1/K32/L, FP16 BC1L inputs, host gather and action tail.
    Ane,
    /// `laya-coreml`: int32 inputs, flexible lengths, logits and action logits in-graph.
    Ordinary,
}

impl BundleFormat {
    /// From the manifest's `format`.
    pub fn from_manifest(format: &str) -> Option<Self> {
        match format {
            "laya-coreml-ane" => Some(BundleFormat::Ane),
            "laya-coreml" => Some(BundleFormat::Ordinary),
            _ => None,
        }
    }
    /// Compute units when the spec names none: `cpu_ne` for ANE bundles, `all` otherwise.
    pub fn default_units(self) -> ComputeUnits {
        match self {
            BundleFormat::Ane => ComputeUnits::CpuNe,
            BundleFormat::Ordinary => ComputeUnits::All,
        }
    }
}

/// A parsed `coreml:BUNDLE[:UNITS]` spec (the part after `coreml:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreMlSpec {
    /// The bundle folder.
    pub bundle: PathBuf,
    /// Compute units, when given.
    pub units: Option<ComputeUnits>,
}

impl CoreMlSpec {
    /// Parse `BUNDLE[:UNITS]`. The text after the last `:` is the units when it is a bare word
    /// (letters, digits, `_`); an unknown word is an error listing the allowed ones. A bundle
    /// path that itself ends in `:word` takes an explicit units suffix (`a:b:cpu_ne`).
    pub fn parse(rest: &str) -> Result<Self, CoreMlError> {
        let (path, units) = match rest.rsplit_once(':') {
            Some((path, word))
                if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                (path, Some(ComputeUnits::parse(word)?))
            }
            _ => (rest, None),
        };
        if path.is_empty() {
            return Err(CoreMlError::Spec(
                "coreml: needs a bundle folder: coreml:BUNDLE[:cpu_ne|cpu_gpu|all|cpu]".into(),
            ));
        }
        Ok(Self { bundle: PathBuf::from(path), units })
    }
}

/// The ANE host tensors of `host_weights.safetensors` (docs/host-path.md §1.7), ready to copy:
/// the embedding and type tables as FP16 bits (numpy's `astype(float16)`, round to nearest
/// even), the action head as FP32.
#[derive(Debug, Clone, PartialEq)]
pub struct HostWeights {
    width: usize,
    vocab: usize,
    embedding: Vec<u16>,
    type_embedding: Vec<u16>,
    head: ActionHead,
}

impl HostWeights {
    /// Read the six tensors (F16 or F32) from safetensors bytes; `file` names the file in errors.
    pub fn from_safetensors(bytes: &[u8], file: &str) -> Result<Self, CoreMlError> {
        let bad = |detail: String| CoreMlError::Bundle { path: file.to_string(), detail };
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("not a valid safetensors file ({e}); fetch the bundle again")))?;
        let get = |name: &str, rank: usize| -> Result<(Vec<usize>, Vec<f32>), CoreMlError> {
            let t = st
                .tensor(name)
                .map_err(|_| bad(format!("tensor `{name}` is missing; the ANE host needs it")))?;
            let values = match t.dtype() {
                safetensors::Dtype::F16 | safetensors::Dtype::F32 => {
                    crate::model::weights::to_f32(t.dtype(), t.data())
                }
                _ => None,
            }
            .ok_or_else(|| {
                bad(format!("tensor `{name}` is {:?}; the ANE host reads F16 or F32 only", t.dtype()))
            })?;
            if t.shape().len() != rank {
                return Err(bad(format!("tensor `{name}` has shape {:?}, expected rank {rank}", t.shape())));
            }
            Ok((t.shape().to_vec(), values))
        };
        let (eshape, emb) = get("encoder.embeddings.tok_embeddings.weight", 2)?;
        let (tshape, types) = get("type_emb.weight", 2)?;
        let (w0shape, w0) = get("act_head.0.weight", 2)?;
        let (_, b0) = get("act_head.0.bias", 1)?;
        let (w2shape, w2) = get("act_head.2.weight", 2)?;
        let (_, b2) = get("act_head.2.bias", 1)?;
        let (vocab, width) = (eshape[0], eshape[1]);
        if tshape != [3, width] || w0shape[1] != width + 4 {
            return Err(bad(format!(
                "type_emb.weight {tshape:?} and act_head.0.weight {w0shape:?} do not fit the embedding width {width} (expected [3, {width}] and [H, {}])",
                width + 4
            )));
        }
        let linear = |rows: usize, cols: usize, w: Vec<f32>, b: Vec<f32>, name: &str| {
            Matrix::f32_row_major(rows, cols, w)
                .map(|weight| Linear { weight, bias: Some(b) })
                .ok_or_else(|| bad(format!("tensor `{name}` has the wrong number of values")))
        };
        let head = ActionHead::new(
            linear(w0shape[0], w0shape[1], w0, b0, "act_head.0.weight")?,
            linear(w2shape[0], w2shape[1], w2, b2, "act_head.2.weight")?,
        )
        .map_err(|e| bad(e.to_string()))?;
        let to_bits = |v: Vec<f32>| v.into_iter().map(|x| half::f16::from_f32(x).to_bits()).collect();
        Ok(Self { width, vocab, embedding: to_bits(emb), type_embedding: to_bits(types), head })
    }

    /// `D`.
    pub fn width(&self) -> usize {
        self.width
    }
    /// `V`.
    pub fn vocab(&self) -> usize {
        self.vocab
    }
    /// Row `id` of the embedding table as FP16 bits (`id < V`, checked by the caller).
    pub fn embedding_row(&self, id: usize) -> &[u16] {
        &self.embedding[id * self.width..(id + 1) * self.width]
    }
    /// Row `qtype` of the type table as FP16 bits (`qtype <= 2`, checked by the caller).
    pub fn type_row(&self, qtype: usize) -> &[u16] {
        &self.type_embedding[qtype * self.width..(qtype + 1) * self.width]
    }
    /// The FP32 action head.
    pub fn action_head(&self) -> &ActionHead {
        &self.head
    }
}

/// Everything an ANE call does on the host: tensors in, decoding out, with reused buffers.
#[derive(Debug, Clone)]
pub struct AneHost {
    inputs: AneInputs,
    weights: HostWeights,
    raw_logits: Vec<f32>,
    cls: Vec<f32>,
    scratch: Vec<f32>,
}

impl AneHost {
    /// Buffers for a bundle of fixed length `length` and window `local_attention`.
    pub fn new(weights: HostWeights, length: usize, local_attention: usize) -> Self {
        let shape = AneShape {
            length,
            width: weights.width(),
            vocab: weights.vocab(),
            half_window: local_attention / 2,
        };
        Self {
            inputs: AneInputs::new(shape),
            weights,
            raw_logits: Vec::new(),
            cls: Vec::new(),
            scratch: Vec::new(),
        }
    }
    /// The fixed signature.
    pub fn shape(&self) -> AneShape {
        self.inputs.shape()
    }
    /// Validate `batch` and write the five input tensors.
    pub fn prepare(&mut self, batch: &PreparedBatch) -> Result<&AneInputs, CoreMlError> {
        self.inputs.build(batch, &self.weights)?;
        Ok(&self.inputs)
    }
    /// The tensors last written by [`Self::prepare`].
    pub fn inputs(&self) -> &AneInputs {
        &self.inputs
    }
    /// Decode the package's outputs (logits and pooled CLS, told apart by shape) into `out`.
    pub fn finish(
        &mut self,
        batch: &PreparedBatch,
        outputs: &[RawArray<'_>],
        out: &mut ForwardOutput,
    ) -> Result<(), CoreMlError> {
        let (li, ci) =
            decode::identify_ane_outputs(outputs.iter().map(|o| (o.name, o.shape)), self.weights.width())?;
        outputs[li].read_f32(&mut self.raw_logits)?;
        outputs[ci].read_f32(&mut self.cls)?;
        decode::finish_ane_row(
            &self.raw_logits,
            &self.cls,
            &batch.marker_mask,
            &self.weights,
            &mut self.scratch,
            out,
        )
    }
}

/// The shapes an ordinary export runs with: when the command asks for one fixed length that the
/// graph accepts (an enumerated length, a multiple of 16 inside a range, or the fixed length),
/// that length, fixed; otherwise the graph's own shapes. Batch size and marker slots are always
/// the graph's.
pub fn ordinary_run_caps(graph: &ShapeCaps, requested: Option<&ShapeCaps>) -> ShapeCaps {
    let fixed_at =
        |l: usize| ShapeCaps { min_length: l, max_length: l, mode: ShapeMode::Fixed, ..graph.clone() };
    match requested {
        Some(r) if r.mode == ShapeMode::Fixed => {
            let l = r.max_length;
            let accepted = match &graph.mode {
                ShapeMode::Enumerated(lengths) => lengths.contains(&l),
                ShapeMode::Range => l % 16 == 0 && (graph.min_length..=graph.max_length).contains(&l),
                ShapeMode::Fixed => l == graph.max_length,
            };
            if accepted {
                fixed_at(l)
            } else {
                graph.clone()
            }
        }
        _ => graph.clone(),
    }
}

/// The ordinary export's int32 inputs taken straight from the packed batch: name, shape, data.
pub fn ordinary_inputs(batch: &PreparedBatch) -> Vec<(&'static str, Vec<usize>, &[i32])> {
    let (b, l, k) = (batch.batch, batch.length, batch.max_options);
    let mut v: Vec<(&'static str, Vec<usize>, &[i32])> = vec![
        ("input_ids", vec![b, l], &batch.input_ids),
        ("attention_mask", vec![b, l], &batch.attention_mask),
        ("marker_pos", vec![b, k], &batch.marker_pos),
        ("marker_mask", vec![b, k], &batch.marker_mask),
        ("qtype", vec![b], &batch.qtype),
    ];
    if let (Some(p), Some(o)) = (&batch.position_ids, &batch.option_ids) {
        v.push(("position_ids", vec![b, l], p));
        v.push(("option_ids", vec![b, l], o));
    }
    v
}

/// Row-major strides (in elements) of a contiguous array of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Where compiled models are cached: `$HOME/Library/Caches/laya-bench/coreml`, or
/// `TEMP/laya-bench-coreml` without a home folder.
pub fn cache_root(home: Option<&Path>, temp: &Path) -> PathBuf {
    match home {
        Some(h) if !h.as_os_str().is_empty() => h.join("Library/Caches/laya-bench/coreml"),
        _ => temp.join("laya-bench-coreml"),
    }
}

/// The cache key of a package compiled on one OS build: its content hash and the OS build
/// (`24B83`; letters and digits kept), so that a macOS update, which can change Core ML's
/// compiler, compiles again. `unknown-os` where the build could not be read.
pub fn cache_key(package_sha256: &str, os_build: Option<&str>) -> String {
    let build: String = os_build.unwrap_or("").chars().filter(char::is_ascii_alphanumeric).take(32).collect();
    if build.is_empty() {
        format!("{package_sha256}-unknown-os")
    } else {
        format!("{package_sha256}-{build}")
    }
}

/// The cached compiled model under a [`cache_key`]: `ROOT/<key>/model.mlmodelc`.
pub fn compiled_path(root: &Path, key: &str) -> PathBuf {
    root.join(key).join("model.mlmodelc")
}

/// Whether the running macOS reads `package`, from its declared specification version (read
/// from the package) and [`availability::check_spec_version`]: checked before Core ML compiles
/// it, so a package newer than the OS is refused (exit 2) naming the macOS it needs.
pub fn check_package_for_os(
    package: &Path,
    running: Option<availability::MacOsVersion>,
) -> Result<Option<String>, CoreMlError> {
    let spec = description::read_package(package).map_err(|e| CoreMlError::Bundle {
        path: package.display().to_string(),
        detail: format!("cannot read its model specification: {e}"),
    })?;
    availability::check_spec_version(&package.display().to_string(), spec.specification_version, running)
}

/// The content hash that keys the cache: [`tree_sha256`] over the `.mlpackage` folder.
pub fn package_sha256(package: &Path) -> Result<String, CoreMlError> {
    if !package.is_dir() {
        return Err(CoreMlError::Bundle {
            path: package.display().to_string(),
            detail: "is not a folder; a Core ML bundle holds its model in model.mlpackage/".into(),
        });
    }
    tree_sha256(package)
        .map_err(|e| CoreMlError::Bundle { path: package.display().to_string(), detail: e.to_string() })
}

/// A staging name no other thread or process uses: pid, a per-process counter and the clock.
fn staging_name() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!(".model.mlmodelc.{}.{n}.{nanos}", std::process::id())
}

/// Move a freshly compiled `.mlmodelc` (Core ML's temporary folder) to `dest`, atomically: it
/// lands beside `dest` under a name of its own (`staging_name`) and is renamed into place.
/// Several processes or threads may compile the same package at once (parallel tests on a
/// fresh machine): whichever rename lands first wins, and the others find `dest` installed,
/// drop their copy and succeed. Falls back to a recursive copy across file systems.
pub fn install_compiled(tmp: &Path, dest: &Path) -> Result<(), CoreMlError> {
    let fail = |what: &str, e: std::io::Error| CoreMlError::Bundle {
        path: dest.display().to_string(),
        detail: format!("cannot {what} the compiled model ({e}); check that the cache folder is writable"),
    };
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| fail("create the folder of", e))?;
    let staging = parent.join(staging_name());
    if std::fs::rename(tmp, &staging).is_err() {
        if let Err(e) = copy_tree(tmp, &staging) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(fail("copy", e));
        }
        // Core ML's temporary folder is its own to clean; a failure here loses nothing.
        let _ = std::fs::remove_dir_all(tmp);
    }
    match std::fs::rename(&staging, dest) {
        Ok(()) => Ok(()),
        // Renaming a folder onto a non-empty one fails (ENOTEMPTY or EEXIST): another
        // process or thread installed the same key first, and its copy is as good as ours.
        Err(_) if dir_has_entries(dest) => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(fail("move into place", e))
        }
    }
}

fn dir_has_entries(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_some())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The compute units a bundle runs with when the spec names none: by its manifest's `format`
/// ([`BundleFormat::default_units`]); `cpu_ne` when the manifest cannot be read.
pub fn default_units_for(bundle: &Path) -> ComputeUnits {
    std::fs::read_to_string(bundle.join("coreml_config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|m| m.get("format").and_then(Value::as_str).and_then(BundleFormat::from_manifest))
        .map_or(ComputeUnits::CpuNe, BundleFormat::default_units)
}

/// A model that Core ML can load: a compiled `.mlmodelc`, or a package to compile first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A compiled `.mlmodelc` folder, used as is.
    Compiled(PathBuf),
    /// An `.mlpackage` folder, compiled once and cached.
    Package(PathBuf),
}

/// Resolve a path given to `trace`/`convert-check`: a `.mlmodelc`, a `.mlpackage`, or a bundle
/// folder holding `model.mlpackage`.
pub fn resolve_model(path: &Path) -> Result<ModelSource, CoreMlError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let bad = |detail: &str| CoreMlError::Bundle { path: path.display().to_string(), detail: detail.into() };
    if !path.is_dir() {
        return Err(bad(
            "is not a folder; pass a Core ML bundle folder, a .mlpackage or a compiled .mlmodelc",
        ));
    }
    match ext {
        "mlmodelc" => Ok(ModelSource::Compiled(path.to_path_buf())),
        "mlpackage" => Ok(ModelSource::Package(path.to_path_buf())),
        _ if path.join("model.mlpackage").is_dir() => Ok(ModelSource::Package(path.join("model.mlpackage"))),
        _ => Err(bad(
            "holds no model.mlpackage; pass a Core ML bundle folder, a .mlpackage or a compiled .mlmodelc",
        )),
    }
}

/// The `MLComputePlan` placement report of a Core ML model (bundle folder, `.mlpackage` or
/// `.mlmodelc`) for `units`: per-operation preferred device and estimated cost, aggregated by
/// [`crate::laya::coreml_format::compute_plan::build_compute_plan_report`]. Needs macOS 14.4+.
/// A package is compiled into the cache under `settings`' `HOME`.
pub fn compute_plan_for(
    bundle: &Path,
    units: ComputeUnits,
    settings: &crate::settings::Settings,
) -> Result<ComputePlanReport, CoreMlError> {
    let source = resolve_model(bundle)?;
    #[cfg(target_os = "macos")]
    {
        let compiled = macos::compiled_model(&source, settings)?;
        let ops = macos::compute_plan(&compiled, units)?;
        crate::laya::coreml_format::compute_plan::build_compute_plan_report(&ops).map_err(|e| {
            CoreMlError::Framework { step: "summarize the compute plan".into(), detail: e.to_string() }
        })
    }
    #[cfg(not(target_os = "macos"))]
    {
        let _ = (source, units, settings);
        Err(CoreMlError::NeedsMacOs("a Core ML compute plan (MLComputePlan) needs macOS 14.4+ with Core ML"))
    }
}

/// Open a Core ML backend for a validated bundle (macOS only): compile once (cached), load
/// with the compute units, check the signature and warm nothing (warm-up is the protocol's).
/// `requested` shapes only matter for the ordinary export ([`ordinary_run_caps`]).
#[cfg(target_os = "macos")]
pub fn open(
    spec: &CoreMlSpec,
    bundle: &crate::laya::bundle::CoreMlBundle,
    encoder: &crate::laya::config::EncoderConfig,
    parallel: bool,
    requested: Option<&ShapeCaps>,
    settings: &crate::settings::Settings,
) -> Result<Box<dyn super::Backend>, CoreMlError> {
    Ok(Box::new(macos::CoreMlBackend::load(spec, bundle, encoder, parallel, requested, settings)?))
}

#[cfg(test)]
mod emulation_tests;
#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;
