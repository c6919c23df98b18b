//! The Core ML framework calls (macOS leaf), through objc2-core-ml 0.3: compile a package once
//! into the cache, load it with compute units, read its model description, run one prediction
//! on multi-arrays backed by our buffers, and read a compute plan. Every tensor layout, check
//! and decoding step is portable code in the parent module.
//!
//! On other OSes this file compiles only with `--features apple-shim`, against
//! `crate::apple_shim` (a type-checking mirror of the items used here); nothing then calls it.

use std::cell::RefCell;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::mpsc;
use std::time::Duration;

#[cfg(not(target_os = "macos"))]
use crate::apple_shim::{block2, core_ml as ml, foundation as ns, objc2};
#[cfg(target_os = "macos")]
use objc2_core_ml as ml;
#[cfg(target_os = "macos")]
use objc2_foundation as ns;

use block2::RcBlock;
use ml::{
    MLCPUComputeDevice, MLComputeDeviceProtocol, MLComputePlan, MLComputeUnits, MLDictionaryFeatureProvider,
    MLFeatureDescription, MLFeatureProvider, MLFeatureValue, MLGPUComputeDevice, MLModel,
    MLModelConfiguration, MLModelStructureProgramBlock, MLMultiArray, MLMultiArrayDataType,
    MLNeuralEngineComputeDevice,
};
use ns::{NSArray, NSDictionary, NSError, NSInteger, NSNumber, NSString, NSURL};
use objc2::rc::Retained;
use objc2::runtime::{AnyClass, AnyObject, ProtocolObject};
use objc2::AllocAnyThread;

use super::decode::{finish_ordinary, ArrayType, RawArray};
use super::{
    cache_root, check_ane_signature, check_ordinary_signature, compiled_path, contiguous_strides,
    install_compiled, ordinary_caps, ordinary_inputs, ordinary_run_caps, package_sha256, AneHost,
    BundleFormat, CoreMlError, CoreMlSpec, FeatureSig, HostWeights, ModelSource,
};
use crate::backend::{
    Backend, BackendError, BackendInfo, BackendKind, ForwardOutput, HostHints, PreparedBatch, ShapeCaps,
    ShapeMode,
};
use crate::laya::bundle::CoreMlBundle;
use crate::laya::config::EncoderConfig;
use crate::trace::compute_plan::{PlannedOp, PreferredDevice};

use super::ComputeUnits;

/// How long a completion handler (compile, compute plan) may take before we give up.
const HANDLER_TIMEOUT: Duration = Duration::from_secs(900);

fn framework(step: &str, detail: String) -> CoreMlError {
    CoreMlError::Framework { step: step.to_string(), detail }
}

fn describe(err: Option<&NSError>) -> String {
    err.map_or_else(|| "no error description".to_string(), |e| e.localizedDescription().to_string())
}

fn url_for(path: &Path) -> Result<Retained<NSURL>, CoreMlError> {
    NSURL::from_directory_path(path).ok_or_else(|| CoreMlError::Bundle {
        path: path.display().to_string(),
        detail: "cannot be expressed as a file URL".into(),
    })
}

fn wait<T>(rx: &mpsc::Receiver<Result<T, String>>, step: &str) -> Result<T, CoreMlError> {
    match rx.recv_timeout(HANDLER_TIMEOUT) {
        Ok(result) => result.map_err(|detail| framework(step, detail)),
        Err(_) => Err(framework(
            step,
            format!("no answer within {} s (the completion handler never ran)", HANDLER_TIMEOUT.as_secs()),
        )),
    }
}

fn configuration(units: ComputeUnits) -> Retained<MLModelConfiguration> {
    // SAFETY: plain object creation and a setter taking a valid MLComputeUnits value.
    let config = unsafe { MLModelConfiguration::new() };
    unsafe { config.setComputeUnits(MLComputeUnits(units.code())) };
    config
}

/// The `.mlmodelc` to load: as given, or the package compiled once into the cache.
pub(super) fn compiled_model(source: &ModelSource) -> Result<PathBuf, CoreMlError> {
    match source {
        ModelSource::Compiled(path) => Ok(path.clone()),
        ModelSource::Package(package) => compile_cached(package, &package_sha256(package)?),
    }
}

fn compile_cached(package: &Path, sha256: &str) -> Result<PathBuf, CoreMlError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dest = compiled_path(&cache_root(home.as_deref(), &std::env::temp_dir()), sha256);
    if dest.is_dir() {
        return Ok(dest);
    }
    let step = format!("compile {}", package.display());
    let url = url_for(package)?;
    let (tx, rx) = mpsc::channel();
    let handler = RcBlock::new(move |compiled: *mut NSURL, error: *mut NSError| {
        // SAFETY: Core ML passes either a valid compiled-model URL or a valid error (or null).
        let result = match unsafe { compiled.as_ref() } {
            Some(url) => url.to_file_path().ok_or_else(|| "the compiled model has no file path".to_string()),
            None => Err(describe(unsafe { error.as_ref() })),
        };
        // The receiver may have timed out and gone; nothing is left to tell.
        let _ = tx.send(result);
    });
    // SAFETY: valid URL and block; the block only sends plain Rust data.
    unsafe { MLModel::compileModelAtURL_completionHandler(&url, &handler) };
    let tmp = wait(&rx, &step)?;
    install_compiled(&tmp, &dest)?;
    Ok(dest)
}

fn load_model(compiled: &Path, units: ComputeUnits) -> Result<Retained<MLModel>, CoreMlError> {
    let url = url_for(compiled)?;
    let config = configuration(units);
    // SAFETY: valid URL and configuration.
    unsafe { MLModel::modelWithContentsOfURL_configuration_error(&url, &config) }
        .map_err(|e| framework(&format!("load {}", compiled.display()), describe(Some(&e))))
}

fn usizes(numbers: &NSArray<NSNumber>) -> Vec<usize> {
    numbers.to_vec().iter().map(|n| n.as_isize().max(0) as usize).collect()
}

fn features(descriptions: &NSDictionary<NSString, MLFeatureDescription>) -> Vec<FeatureSig> {
    let (names, descriptions) = descriptions.to_vecs();
    let mut out: Vec<FeatureSig> = names
        .iter()
        .zip(descriptions)
        .map(|(name, d)| {
            // SAFETY: read-only getters of a valid feature description.
            let (shape, dtype) = match unsafe { d.multiArrayConstraint() } {
                Some(c) => (usizes(&*unsafe { c.shape() }), ArrayType::from_code(unsafe { c.dataType() }.0)),
                None => (Vec::new(), ArrayType::Other(-1)),
            };
            FeatureSig { name: name.to_string(), shape, dtype }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One input multi-array: a view of a caller-owned buffer.
struct Input<'a> {
    name: &'a str,
    shape: &'a [usize],
    data: NonNull<c_void>,
    dtype: ArrayType,
}

/// One output as copied out of Core ML, reused across calls.
#[derive(Default)]
struct Output {
    name: String,
    shape: Vec<usize>,
    strides: Vec<usize>,
    dtype: Option<ArrayType>,
    bytes: Vec<u8>,
}

impl Output {
    fn raw(&self) -> RawArray<'_> {
        RawArray {
            name: &self.name,
            dtype: self.dtype.unwrap_or(ArrayType::Other(-1)),
            shape: &self.shape,
            strides: &self.strides,
            bytes: &self.bytes,
        }
    }
}

fn numbers(values: &[usize]) -> Retained<NSArray<NSNumber>> {
    let items: Vec<Retained<NSNumber>> = values.iter().map(|&v| NSNumber::new_isize(v as isize)).collect();
    NSArray::from_retained_slice(&items)
}

/// One synchronous prediction: wrap the inputs (no copy), run, copy every output's bytes.
fn predict(model: &MLModel, inputs: &[Input<'_>], outputs: &mut [Output]) -> Result<(), CoreMlError> {
    let mut keys: Vec<Retained<NSString>> = Vec::with_capacity(inputs.len());
    let mut values: Vec<Retained<AnyObject>> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let strides = contiguous_strides(input.shape);
        // SAFETY: `data` points to a live, contiguous buffer of `shape` elements of `dtype`
        // that the caller keeps unchanged until this function returns; Core ML only reads it,
        // and with no deallocator it never frees it.
        let array = unsafe {
            MLMultiArray::initWithDataPointer_shape_dataType_strides_deallocator_error(
                MLMultiArray::alloc(),
                input.data,
                &numbers(input.shape),
                MLMultiArrayDataType(input.dtype.code()),
                &numbers(&strides),
                None,
            )
        }
        .map_err(|e| framework(&format!("wrap input `{}`", input.name), describe(Some(&e))))?;
        // SAFETY: a valid multi-array.
        let value = unsafe { MLFeatureValue::featureValueWithMultiArray(&array) };
        keys.push(NSString::from_str(input.name));
        values.push(value.into_super().into_super());
    }
    let key_refs: Vec<&NSString> = keys.iter().map(|k| &**k).collect();
    let dictionary = NSDictionary::<NSString, AnyObject>::from_retained_objects(&key_refs, &values);
    // SAFETY: a dictionary of feature values keyed by input name.
    let provider = unsafe {
        MLDictionaryFeatureProvider::initWithDictionary_error(
            MLDictionaryFeatureProvider::alloc(),
            &dictionary,
        )
    }
    .map_err(|e| framework("collect the inputs", describe(Some(&e))))?;
    // SAFETY: a valid model and feature provider; the call is synchronous.
    let result = unsafe { model.predictionFromFeatures_error(ProtocolObject::from_ref(&*provider)) }
        .map_err(|e| framework("run the prediction", describe(Some(&e))))?;
    for out in outputs.iter_mut() {
        let missing = |what: &str| CoreMlError::Output { name: out.name.clone(), detail: what.to_string() };
        // SAFETY: read-only getters on the prediction result.
        let array = unsafe { result.featureValueForName(&NSString::from_str(&out.name)) }
            .and_then(|v| unsafe { v.multiArrayValue() })
            .ok_or_else(|| missing("is missing from the prediction or is not a multi-array"))?;
        out.shape = usizes(&*unsafe { array.shape() });
        out.strides = usizes(&*unsafe { array.strides() });
        out.dtype = Some(ArrayType::from_code(unsafe { array.dataType() }.0));
        out.bytes.clear();
        let sink = RefCell::new(&mut out.bytes);
        let reader = RcBlock::new(|bytes: NonNull<c_void>, len: NSInteger| {
            // SAFETY: Core ML hands a readable buffer of `len` bytes for the duration of the call.
            let src = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), len.max(0) as usize) };
            sink.borrow_mut().extend_from_slice(src);
        });
        // SAFETY: the handler runs synchronously, before `getBytesWithHandler` returns.
        unsafe { array.getBytesWithHandler(&reader) };
    }
    Ok(())
}

/// What the loaded package is and the host state it needs.
enum Kind {
    /// ANE bundle: host tensors; per input (in `AneInputs::tensors` order) whether the package
    /// declares it FP32, and its FP32 staging buffer.
    Ane { host: Box<AneHost>, fp32_inputs: Vec<bool>, staging: Vec<Vec<f32>> },
    /// Ordinary export: int32 inputs straight from the batch.
    Ordinary { scratch: Vec<f32> },
}

/// A loaded Core ML package behind the [`Backend`] trait.
pub(super) struct CoreMlBackend {
    model: Retained<MLModel>,
    outputs: Vec<Output>,
    kind: Kind,
    info: BackendInfo,
}

// SAFETY: Core ML model objects are not bound to a thread (no main-thread requirement); the
// backend owns them exclusively and `forward` takes `&mut self`, so they are used by one thread
// at a time and never shared.
unsafe impl Send for CoreMlBackend {}

impl CoreMlBackend {
    /// Compile (cached), load with the spec's compute units, check the signature.
    pub(super) fn load(
        spec: &CoreMlSpec,
        bundle: &CoreMlBundle,
        encoder: &EncoderConfig,
        parallel: bool,
        requested: Option<&ShapeCaps>,
    ) -> Result<Self, CoreMlError> {
        let format = BundleFormat::from_manifest(&bundle.format).ok_or_else(|| CoreMlError::Bundle {
            path: bundle.package.display().to_string(),
            detail: format!("format `{}` is not a Core ML bundle format", bundle.format),
        })?;
        let units = spec.units.unwrap_or(format.default_units());
        let sha256 = package_sha256(&bundle.package)?;
        let model = load_model(&compile_cached(&bundle.package, &sha256)?, units)?;
        // SAFETY: read-only getters of a loaded model.
        let description = unsafe { model.modelDescription() };
        let inputs = features(&*unsafe { description.inputDescriptionsByName() });
        let outputs = features(&*unsafe { description.outputDescriptionsByName() });
        let (kind, shapes) = match format {
            BundleFormat::Ane => {
                let path = bundle
                    .host_weights
                    .clone()
                    .unwrap_or_else(|| bundle.package.with_file_name("host_weights.safetensors"));
                let file = path.display().to_string();
                let bytes = std::fs::read(&path).map_err(|e| CoreMlError::Bundle {
                    path: file.clone(),
                    detail: format!("cannot read ({e})"),
                })?;
                let host = AneHost::new(
                    HostWeights::from_safetensors(&bytes, &file)?,
                    bundle.max_length,
                    encoder.local_attention,
                );
                check_ane_signature(host.shape(), &inputs)?;
                super::decode::identify_ane_outputs(
                    outputs.iter().map(|f| (f.name.as_str(), f.shape.as_slice())),
                    host.shape().width,
                )?;
                let fp32_inputs: Vec<bool> = host
                    .shape()
                    .input_shapes()
                    .iter()
                    .map(|(name, _)| inputs.iter().any(|f| f.name == *name && f.dtype == ArrayType::Float32))
                    .collect();
                let l = bundle.max_length;
                let caps = ShapeCaps {
                    batch_size: 1,
                    max_length: l,
                    min_length: l,
                    max_options: super::ANE_SLOTS,
                    mode: ShapeMode::Fixed,
                };
                (Kind::Ane { host: Box::new(host), fp32_inputs, staging: vec![Vec::new(); 5] }, caps)
            }
            BundleFormat::Ordinary => {
                let file = bundle.package.with_file_name("coreml_config.json");
                let name = file.display().to_string();
                let text = std::fs::read_to_string(&file).map_err(|e| CoreMlError::Bundle {
                    path: name.clone(),
                    detail: format!("cannot read ({e})"),
                })?;
                let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    CoreMlError::Bundle { path: name.clone(), detail: format!("not valid JSON ({e})") }
                })?;
                let caps = ordinary_caps(&manifest, &name)?;
                check_ordinary_signature(&caps, parallel, &inputs, &outputs)?;
                (Kind::Ordinary { scratch: Vec::new() }, ordinary_run_caps(&caps, requested))
            }
        };
        let outputs = match format {
            BundleFormat::Ane => outputs.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            BundleFormat::Ordinary => vec!["logits".to_string(), "action_logits".to_string()],
        };
        let precision = match bundle.precision.as_deref() {
            Some("float16") | None => "f16".to_string(),
            Some("float32") => "f32".to_string(),
            Some(other) => other.to_string(),
        };
        let info = BackendInfo {
            kind: BackendKind::CoreMl,
            name: format!("coreml:{}", units.name()),
            precision,
            device: units.describe().to_string(),
            shapes,
            fingerprint: sha256,
            notes: Vec::new(),
            blas: None,
            host_hints: HostHints::default(),
            weight_bytes: None,
        };
        let outputs = outputs.into_iter().map(|name| Output { name, ..Output::default() }).collect();
        Ok(Self { model, outputs, kind, info })
    }

    fn run(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), CoreMlError> {
        match &mut self.kind {
            Kind::Ane { host, fp32_inputs, staging } => {
                let tensors = host.prepare(batch)?.tensors();
                let mut inputs = Vec::with_capacity(tensors.len());
                for (((name, shape, data), wide), fp32) in
                    tensors.iter().zip(staging.iter_mut()).zip(fp32_inputs.iter())
                {
                    let (data, dtype) = if *fp32 {
                        super::layout::widen_f16(data, wide);
                        (NonNull::from(wide.as_slice()).cast::<c_void>(), ArrayType::Float32)
                    } else {
                        (NonNull::from(*data).cast::<c_void>(), ArrayType::Float16)
                    };
                    inputs.push(Input { name, shape, data, dtype });
                }
                predict(&self.model, &inputs, &mut self.outputs)?;
                let raws: Vec<RawArray<'_>> = self.outputs.iter().map(Output::raw).collect();
                host.finish(batch, &raws, out)
            }
            Kind::Ordinary { scratch } => {
                let arrays = ordinary_inputs(batch);
                let inputs: Vec<Input<'_>> = arrays
                    .iter()
                    .map(|(name, shape, data)| Input {
                        name,
                        shape,
                        data: NonNull::from(*data).cast::<c_void>(),
                        dtype: ArrayType::Int32,
                    })
                    .collect();
                predict(&self.model, &inputs, &mut self.outputs)?;
                let (logits, actions) = (self.outputs[0].raw(), self.outputs[1].raw());
                finish_ordinary(&logits, &actions, batch.batch, batch.max_options, scratch, out)
            }
        }
    }
}

impl Backend for CoreMlBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError> {
        self.run(batch, out).map_err(|e| match e {
            CoreMlError::Batch(m) => BackendError::Shape(m),
            other => BackendError::Runtime(other.to_string()),
        })
    }
}

/// The per-operation compute plan of a compiled model (macOS 14.4+).
pub(super) fn compute_plan(compiled: &Path, units: ComputeUnits) -> Result<Vec<PlannedOp>, CoreMlError> {
    let step = "build a compute plan";
    if AnyClass::get(c"MLComputePlan").is_none() {
        return Err(framework(
            step,
            "MLComputePlan is missing: it needs macOS 14.4 or later; update macOS".into(),
        ));
    }
    let url = url_for(compiled)?;
    let config = configuration(units);
    let (tx, rx) = mpsc::channel();
    let handler = RcBlock::new(move |plan: *mut MLComputePlan, error: *mut NSError| {
        // SAFETY: Core ML passes either a valid plan or a valid error (or null). The plan is
        // walked here, on the handler's thread, and only plain Rust data leaves.
        let result = match unsafe { plan.as_ref() } {
            Some(plan) => walk_plan(plan),
            None => Err(describe(unsafe { error.as_ref() })),
        };
        // The receiver may have timed out and gone; nothing is left to tell.
        let _ = tx.send(result);
    });
    // SAFETY: valid URL, configuration and block.
    unsafe { MLComputePlan::loadContentsOfURL_configuration_completionHandler(&url, &config, &handler) };
    wait(&rx, step)
}

fn walk_plan(plan: &MLComputePlan) -> Result<Vec<PlannedOp>, String> {
    // SAFETY: read-only getters of a loaded plan.
    let structure = unsafe { plan.modelStructure() };
    let program = unsafe { structure.program() }.ok_or_else(|| {
        "the model is not an ML program; only ML programs have a per-operation plan here".to_string()
    })?;
    let main = unsafe { program.functions() }
        .objectForKey(&NSString::from_str("main"))
        .ok_or_else(|| "the ML program has no `main` function".to_string())?;
    let mut ops = Vec::new();
    walk_block(plan, &*unsafe { main.block() }, &mut ops);
    Ok(ops)
}

fn walk_block(plan: &MLComputePlan, block: &MLModelStructureProgramBlock, ops: &mut Vec<PlannedOp>) {
    // SAFETY: read-only getters of the plan's model structure.
    for op in unsafe { block.operations() }.to_vec() {
        let preferred = unsafe { plan.computeDeviceUsageForMLProgramOperation(&op) }
            .map_or(PreferredDevice::UnknownOrConstant, |usage| {
                classify(&*unsafe { usage.preferredComputeDevice() })
            });
        let cost_weight =
            unsafe { plan.estimatedCostOfMLProgramOperation(&op) }.map(|c| unsafe { c.weight() });
        ops.push(PlannedOp { operator: unsafe { op.operatorName() }.to_string(), preferred, cost_weight });
        for inner in unsafe { op.blocks() }.to_vec() {
            walk_block(plan, &inner, ops);
        }
    }
}

fn classify(device: &ProtocolObject<dyn MLComputeDeviceProtocol>) -> PreferredDevice {
    let any: &AnyObject = device.as_ref();
    if any.downcast_ref::<MLNeuralEngineComputeDevice>().is_some() {
        PreferredDevice::NeuralEngine
    } else if any.downcast_ref::<MLGPUComputeDevice>().is_some() {
        PreferredDevice::Gpu
    } else if any.downcast_ref::<MLCPUComputeDevice>().is_some() {
        PreferredDevice::Cpu
    } else {
        PreferredDevice::UnknownOrConstant
    }
}
