//! The Core ML framework calls (macOS leaf), through objc2-core-ml 0.3: compile a package once
//! into the cache, load it with compute units, read its model description, run one prediction
//! on multi-arrays backed by our buffers, and read a compute plan. Every tensor layout, check
//! and decoding step is portable code in the parent module.
//!
//! Compiled on macOS only; `.ci/run` type-checks and lints it for aarch64-apple-darwin against
//! the real crates (scripts/setup-apple-check.sh).

use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::mpsc;
use std::time::Duration;

use objc2_core_ml as ml;
use objc2_foundation as ns;

use block2::{RcBlock, StackBlock};
use ml::{
    MLCPUComputeDevice, MLComputeDeviceProtocol, MLComputePlan, MLComputeUnits, MLDictionaryFeatureProvider,
    MLFeatureDescription, MLFeatureProvider, MLFeatureValue, MLGPUComputeDevice, MLModel,
    MLModelConfiguration, MLModelStructureProgramBlock, MLMultiArray, MLMultiArrayDataType,
    MLNeuralEngineComputeDevice,
};
use ns::{NSArray, NSDictionary, NSError, NSInteger, NSNumber, NSString, NSURL};
use objc2::exception;
use objc2::rc::{autoreleasepool, Retained};
use objc2::runtime::{AnyClass, AnyObject, ProtocolObject};
use objc2::{sel, AllocAnyThread, ClassType};

use super::availability::{self, Device, MacOsVersion};
use super::decode::{finish_ordinary, ArrayType, RawArray};
use super::{
    cache_key, cache_root, check_ane_signature, check_ordinary_signature, check_package_for_os,
    compiled_path, contiguous_strides, exception_error, install_compiled, ordinary_caps, ordinary_inputs,
    ordinary_run_caps, package_sha256, AneHost, BundleFormat, CoreMlError, CoreMlSpec, FeatureSig,
    HostWeights, ModelSource,
};
use crate::backend::{
    Backend, BackendError, BackendInfo, BackendKind, ForwardOutput, HostHints, PreparedBatch, ShapeCaps,
    ShapeMode,
};
use crate::laya::bundle::CoreMlBundle;
use crate::laya::config::EncoderConfig;
use crate::laya::coreml_format::compute_plan::{build_compute_plan_report, PlannedOp, PreferredDevice};

use super::ComputeUnits;
use crate::settings::Settings;

/// How long a completion handler (compile, compute plan) may take before we give up.
const HANDLER_TIMEOUT: Duration = Duration::from_secs(900);

fn framework(step: &str, detail: String) -> CoreMlError {
    CoreMlError::Framework { step: step.to_string(), detail }
}

fn describe(err: Option<&NSError>) -> String {
    err.map_or_else(|| "no error description".to_string(), |e| e.localizedDescription().to_string())
}

/// Run framework calls inside an autorelease pool of their own, with any Objective-C exception
/// they raise caught and returned as [`CoreMlError::Framework`] for `step` (objc2's
/// `exception` feature). Without the pool, the objects Core ML autoreleases would pile up over
/// a run's calls (a command-line thread has no pool of its own); without the catch, an
/// exception (a shape Core ML rejects, a selector an older macOS lacks) would abort the
/// process with no error and no footer.
fn guarded<R>(step: &str, f: impl FnOnce() -> Result<R, CoreMlError>) -> Result<R, CoreMlError> {
    autoreleasepool(|_| match exception::catch(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(e) => Err(exception_error(step, e.as_deref().map(|e| e.to_string()).as_deref())),
    })
}

/// The running macOS: its version (`kern.osproductversion`) and build (`kern.osversion`).
struct OsInfo {
    version: Option<MacOsVersion>,
    build: Option<String>,
}

impl OsInfo {
    fn read() -> Self {
        let text = |name: &str| {
            crate::host::macos::sysctl(name)
                .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\0').trim().to_string())
                .filter(|s| !s.is_empty())
        };
        OsInfo {
            version: text("kern.osproductversion").and_then(|v| MacOsVersion::parse(&v)),
            build: text("kern.osversion"),
        }
    }
}

fn url_for(path: &Path) -> Result<Retained<NSURL>, CoreMlError> {
    NSURL::from_directory_path(path).ok_or_else(|| CoreMlError::Bundle {
        path: path.display().to_string(),
        detail: "cannot be expressed as a file URL".into(),
    })
}

/// The result a completion handler sent (its own [`CoreMlError`], built on its thread), or a
/// [`CoreMlError::Framework`] for `step` when none came in time.
fn wait<T>(rx: &mpsc::Receiver<Result<T, CoreMlError>>, step: &str) -> Result<T, CoreMlError> {
    match rx.recv_timeout(HANDLER_TIMEOUT) {
        Ok(result) => result,
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

/// The `.mlmodelc` to load: as given, or the package compiled once into the cache (after
/// checking that this macOS reads its specification version), the cache under `settings`' `HOME`.
pub(super) fn compiled_model(source: &ModelSource, settings: &Settings) -> Result<PathBuf, CoreMlError> {
    match source {
        ModelSource::Compiled(path) => Ok(path.clone()),
        ModelSource::Package(package) => {
            let os = OsInfo::read();
            check_package_for_os(package, os.version)?;
            compile_cached(package, &package_sha256(package)?, &os, settings)
        }
    }
}

fn compile_cached(
    package: &Path,
    sha256: &str,
    os: &OsInfo,
    settings: &Settings,
) -> Result<PathBuf, CoreMlError> {
    let home = settings.home.clone().map(PathBuf::from);
    let root = cache_root(home.as_deref(), &std::env::temp_dir());
    let dest = compiled_path(&root, &cache_key(sha256, os.build.as_deref()));
    if dest.is_dir() {
        return Ok(dest);
    }
    let step = format!("compile {}", package.display());
    let url = url_for(package)?;
    let (tx, rx) = mpsc::channel();
    let handler_step = step.clone();
    let handler = RcBlock::new(move |compiled: *mut NSURL, error: *mut NSError| {
        // SAFETY: Core ML passes either a valid compiled-model URL or a valid error (or null).
        let result = autoreleasepool(|_| match unsafe { compiled.as_ref() } {
            Some(url) => url
                .to_file_path()
                .ok_or_else(|| framework(&handler_step, "the compiled model has no file path".into())),
            None => Err(framework(&handler_step, describe(unsafe { error.as_ref() }))),
        });
        // The receiver may have timed out and gone; nothing is left to tell.
        let _ = tx.send(result);
    });
    guarded(&step, || {
        // SAFETY: valid URL and block; the block only sends plain Rust data.
        unsafe { MLModel::compileModelAtURL_completionHandler(&url, &handler) };
        Ok(())
    })?;
    let tmp = wait(&rx, &step)?;
    install_compiled(&tmp, &dest)?;
    Ok(dest)
}

fn load_model(compiled: &Path, units: ComputeUnits) -> Result<Retained<MLModel>, CoreMlError> {
    let step = format!("load {}", compiled.display());
    let url = url_for(compiled)?;
    guarded(&step, || {
        let config = configuration(units);
        // SAFETY: valid URL and configuration.
        unsafe { MLModel::modelWithContentsOfURL_configuration_error(&url, &config) }
            .map_err(|e| framework(&step, describe(Some(&e))))
    })
}

/// The compute devices Core ML says a model can use (`MLModel.availableComputeDevices`,
/// macOS 14): `None` where this macOS does not have the call. Asked through the runtime, so the
/// binary still starts on older macOS.
fn available_devices() -> Result<Option<Vec<Device>>, CoreMlError> {
    guarded("list the compute devices", || {
        if !MLModel::class().metaclass().responds_to(sel!(availableComputeDevices)) {
            return Ok(None);
        }
        // SAFETY: the class answers the selector (checked above); a read-only class getter.
        let devices = unsafe { MLModel::availableComputeDevices() };
        Ok(Some(devices.to_vec().iter().filter_map(|d| device_of(d)).collect()))
    })
}

fn device_of(device: &ProtocolObject<dyn MLComputeDeviceProtocol>) -> Option<Device> {
    let any: &AnyObject = device.as_ref();
    if any.downcast_ref::<MLNeuralEngineComputeDevice>().is_some() {
        Some(Device::NeuralEngine)
    } else if any.downcast_ref::<MLGPUComputeDevice>().is_some() {
        Some(Device::Gpu)
    } else if any.downcast_ref::<MLCPUComputeDevice>().is_some() {
        Some(Device::Cpu)
    } else {
        None
    }
}

fn fill_usizes(numbers: &NSArray<NSNumber>, out: &mut Vec<usize>) {
    out.clear();
    for i in 0..numbers.count() {
        out.push(numbers.objectAtIndex(i).as_isize().max(0) as usize);
    }
}

fn usizes(numbers: &NSArray<NSNumber>) -> Vec<usize> {
    let mut out = Vec::with_capacity(numbers.count());
    fill_usizes(numbers, &mut out);
    out
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

/// One input multi-array: a view of a buffer that outlives the feature provider built over it.
struct Input<'a> {
    name: &'a str,
    shape: &'a [usize],
    data: NonNull<c_void>,
    dtype: ArrayType,
}

/// One output as copied out of Core ML, reused across calls; its key is made once.
struct Output {
    name: String,
    key: Retained<NSString>,
    shape: Vec<usize>,
    strides: Vec<usize>,
    dtype: Option<ArrayType>,
    bytes: Vec<u8>,
}

impl Output {
    fn new(name: String) -> Self {
        let key = NSString::from_str(&name);
        Output { name, key, shape: Vec::new(), strides: Vec::new(), dtype: None, bytes: Vec::new() }
    }

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

/// The feature provider of one call's inputs, built once over buffers that stay in place: the
/// multi-arrays wrap the buffers (no copy, no deallocator), so a call only rewrites the
/// buffers and runs the prediction.
///
/// SAFETY (callers): every `data` must point to a live, contiguous buffer of `shape` elements
/// of `dtype` that stays allocated, at the same address and length, for as long as the
/// returned provider lives; the buffers are written only between predictions.
unsafe fn provider_over(inputs: &[Input<'_>]) -> Result<Retained<MLDictionaryFeatureProvider>, CoreMlError> {
    guarded("prepare the inputs", || {
        let mut keys: Vec<Retained<NSString>> = Vec::with_capacity(inputs.len());
        let mut values: Vec<Retained<AnyObject>> = Vec::with_capacity(inputs.len());
        for input in inputs {
            let strides = contiguous_strides(input.shape);
            // SAFETY: as the function's contract says; Core ML only reads the buffer, and with
            // no deallocator it never frees it.
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
        unsafe {
            MLDictionaryFeatureProvider::initWithDictionary_error(
                MLDictionaryFeatureProvider::alloc(),
                &dictionary,
            )
        }
        .map_err(|e| framework("collect the inputs", describe(Some(&e))))
    })
}

/// One synchronous prediction on the prepared inputs, every output's bytes copied into its
/// reused buffer. The only Objective-C objects made per call are Core ML's own (the result,
/// its feature values), released when the call's pool drains.
fn predict(
    model: &MLModel,
    provider: &MLDictionaryFeatureProvider,
    outputs: &mut [Output],
) -> Result<(), CoreMlError> {
    guarded("run the prediction", || {
        // SAFETY: a valid model and feature provider; the call is synchronous.
        let result = unsafe { model.predictionFromFeatures_error(ProtocolObject::from_ref(provider)) }
            .map_err(|e| framework("run the prediction", describe(Some(&e))))?;
        for out in outputs.iter_mut() {
            // SAFETY: read-only getters on the prediction result.
            let array = unsafe { result.featureValueForName(&out.key) }
                .and_then(|v| unsafe { v.multiArrayValue() })
                .ok_or_else(|| CoreMlError::Output {
                    name: out.name.clone(),
                    detail: "is missing from the prediction or is not a multi-array".to_string(),
                })?;
            fill_usizes(&*unsafe { array.shape() }, &mut out.shape);
            fill_usizes(&*unsafe { array.strides() }, &mut out.strides);
            out.dtype = Some(ArrayType::from_code(unsafe { array.dataType() }.0));
            out.bytes.clear();
            let sink = RefCell::new(&mut out.bytes);
            let reader = StackBlock::new(|bytes: NonNull<c_void>, len: NSInteger| {
                // SAFETY: Core ML hands a readable buffer of `len` bytes for the duration of the call.
                let src =
                    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), len.max(0) as usize) };
                sink.borrow_mut().extend_from_slice(src);
            });
            // SAFETY: the handler runs synchronously, before `getBytesWithHandler` returns.
            unsafe { array.getBytesWithHandler(&reader) };
        }
        Ok(())
    })
}

/// The ordinary export's inputs for one shape: int32 buffers owned here and the feature
/// provider over them (declared first, so it is released before the buffers it points into).
struct OrdinaryInputs {
    provider: Retained<MLDictionaryFeatureProvider>,
    shapes: Vec<Vec<usize>>,
    buffers: Vec<Vec<i32>>,
}

impl OrdinaryInputs {
    /// Whether these buffers have the shapes of `arrays` (name order is fixed).
    fn fits(&self, arrays: &[(&'static str, Vec<usize>, &[i32])]) -> bool {
        self.shapes.len() == arrays.len()
            && self.shapes.iter().zip(arrays).all(|(s, (_, shape, _))| s == shape)
    }

    /// Buffers holding a copy of `arrays`, and the provider over them.
    fn build(arrays: &[(&'static str, Vec<usize>, &[i32])]) -> Result<Self, CoreMlError> {
        let mut buffers: Vec<Vec<i32>> = arrays.iter().map(|(_, _, data)| data.to_vec()).collect();
        let shapes: Vec<Vec<usize>> = arrays.iter().map(|(_, shape, _)| shape.clone()).collect();
        let views: Vec<Input<'_>> = arrays
            .iter()
            .zip(buffers.iter_mut())
            .map(|((name, shape, _), buffer)| Input {
                name,
                shape,
                data: NonNull::from(buffer.as_mut_slice()).cast(),
                dtype: ArrayType::Int32,
            })
            .collect();
        // SAFETY: the buffers move into the returned value beside the provider (a Vec's heap
        // data does not move with it), are only rewritten in place with `copy_from_slice` for
        // the same shapes, and are dropped after the provider.
        let provider = unsafe { provider_over(&views)? };
        drop(views);
        Ok(OrdinaryInputs { provider, shapes, buffers })
    }
}

/// What the loaded package is and the host state it needs.
enum Kind {
    /// ANE bundle: the feature provider over the host's fixed input tensors (declared first,
    /// so it is released before the buffers it points into), the host tensors, and per input
    /// (in `AneInputs::tensors` order) whether the package declares it FP32, with its FP32
    /// staging buffer (sized at load, never reallocated).
    Ane {
        provider: Retained<MLDictionaryFeatureProvider>,
        host: Box<AneHost>,
        fp32_inputs: Vec<bool>,
        staging: Vec<Vec<f32>>,
    },
    /// Ordinary export: int32 inputs copied from the batch into buffers kept per shape.
    Ordinary { inputs: Option<OrdinaryInputs>, scratch: Vec<f32> },
}

/// A loaded Core ML package behind the [`Backend`] trait.
pub(super) struct CoreMlBackend {
    kind: Kind,
    model: Retained<MLModel>,
    outputs: Vec<Output>,
    info: BackendInfo,
}

// SAFETY: Core ML model objects are not bound to a thread (no main-thread requirement); the
// backend owns them exclusively and `forward` takes `&mut self`, so they are used by one thread
// at a time and never shared. The input buffers the providers point into are owned here too.
unsafe impl Send for CoreMlBackend {}

/// Widen FP16 bits into an FP32 buffer of the same length, in place (no reallocation: the
/// buffer's address is what a prepared multi-array points to).
fn widen_into(src: &[u16], dst: &mut [f32]) {
    for (d, &b) in dst.iter_mut().zip(src) {
        *d = half::f16::from_bits(b).to_f32();
    }
}

/// The compute plan's one-line summary for the arm's notes (and so the raw header), or why
/// there is none (macOS before 14.4, a model that is not an ML program).
fn plan_note(units: ComputeUnits, compiled: &Path) -> String {
    let report = compute_plan(compiled, units).and_then(|ops| {
        build_compute_plan_report(&ops).map_err(|e| framework("summarize the compute plan", e.to_string()))
    });
    match report {
        Ok(report) => format!("Core ML compute plan for `{}`: {}", units.name(), report.summary_line()),
        Err(e) => format!("no Core ML compute plan for `{}`: {e}", units.name()),
    }
}

impl CoreMlBackend {
    /// Check the package against this macOS, compile (cached), load with the spec's compute
    /// units, check the signature, record where Core ML can run it, and build the inputs that
    /// never change.
    pub(super) fn load(
        spec: &CoreMlSpec,
        bundle: &CoreMlBundle,
        encoder: &EncoderConfig,
        parallel: bool,
        requested: Option<&ShapeCaps>,
        settings: &Settings,
    ) -> Result<Self, CoreMlError> {
        let format = BundleFormat::from_manifest(&bundle.format).ok_or_else(|| CoreMlError::Bundle {
            path: bundle.package.display().to_string(),
            detail: format!("format `{}` is not a Core ML bundle format", bundle.format),
        })?;
        let units = spec.units.unwrap_or(format.default_units());
        let os = OsInfo::read();
        availability::check_units(units, os.version)?;
        let mut notes = Vec::new();
        notes.extend(availability::check_spec_version(
            &bundle.package.display().to_string(),
            bundle.description.specification_version,
            os.version,
        )?);
        let sha256 = package_sha256(&bundle.package)?;
        let compiled = compile_cached(&bundle.package, &sha256, &os, settings)?;
        let model = load_model(&compiled, units)?;
        let placement = availability::placement(units, available_devices()?.as_deref());
        notes.extend(placement.notes);
        notes.push(plan_note(units, &compiled));
        let (inputs, outputs) = guarded("read the model description", || {
            // SAFETY: read-only getters of a loaded model.
            let description = unsafe { model.modelDescription() };
            let inputs = features(&*unsafe { description.inputDescriptionsByName() });
            let outputs = features(&*unsafe { description.outputDescriptionsByName() });
            Ok((inputs, outputs))
        })?;
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
                let host = Box::new(AneHost::new(
                    HostWeights::from_safetensors(&bytes, &file)?,
                    bundle.max_length,
                    encoder.local_attention,
                ));
                check_ane_signature(host.shape(), &inputs)?;
                super::decode::identify_ane_outputs(
                    outputs.iter().map(|f| (f.name.as_str(), f.shape.as_slice())),
                    host.shape().width,
                )?;
                let shapes = host.shape().input_shapes();
                let fp32_inputs: Vec<bool> = shapes
                    .iter()
                    .map(|(name, _)| inputs.iter().any(|f| f.name == *name && f.dtype == ArrayType::Float32))
                    .collect();
                let tensors = host.inputs().tensors();
                let mut staging: Vec<Vec<f32>> = tensors
                    .iter()
                    .zip(&fp32_inputs)
                    .map(|((_, _, data), fp32)| if *fp32 { vec![0.0; data.len()] } else { Vec::new() })
                    .collect();
                let arrays: Vec<Input<'_>> = tensors
                    .iter()
                    .zip(staging.iter_mut())
                    .zip(&fp32_inputs)
                    .map(|(((name, shape, data), wide), fp32)| {
                        if *fp32 {
                            Input {
                                name,
                                shape,
                                data: NonNull::from(wide.as_mut_slice()).cast(),
                                dtype: ArrayType::Float32,
                            }
                        } else {
                            Input {
                                name,
                                shape,
                                data: NonNull::from(*data).cast(),
                                dtype: ArrayType::Float16,
                            }
                        }
                    })
                    .collect();
                // SAFETY: the buffers are the host's input tensors (allocated once in
                // `AneInputs::new`, rewritten in place by `AneHost::prepare`) and the staging
                // buffers (sized here, rewritten in place by `widen_into`); both live in this
                // backend beside the provider, which is released first.
                let provider = unsafe { provider_over(&arrays)? };
                drop(arrays);
                let l = bundle.max_length;
                let caps = ShapeCaps {
                    batch_size: 1,
                    max_length: l,
                    min_length: l,
                    max_options: super::ANE_SLOTS,
                    mode: ShapeMode::Fixed,
                };
                (Kind::Ane { provider, host, fp32_inputs, staging }, caps)
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
                (Kind::Ordinary { inputs: None, scratch: Vec::new() }, ordinary_run_caps(&caps, requested))
            }
        };
        let output_names = match format {
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
            device: placement.device,
            shapes,
            fingerprint: sha256,
            notes,
            blas: None,
            host_hints: HostHints::default(),
            weight_bytes: None,
        };
        let outputs = output_names.into_iter().map(Output::new).collect();
        Ok(Self { kind, model, outputs, info })
    }

    fn run(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), CoreMlError> {
        match &mut self.kind {
            Kind::Ane { provider, host, fp32_inputs, staging } => {
                let tensors = host.prepare(batch)?.tensors();
                for (((_, _, data), wide), fp32) in
                    tensors.iter().zip(staging.iter_mut()).zip(fp32_inputs.iter())
                {
                    if *fp32 {
                        widen_into(data, wide);
                    }
                }
                predict(&self.model, provider, &mut self.outputs)?;
                let raws: Vec<RawArray<'_>> = self.outputs.iter().map(Output::raw).collect();
                host.finish(batch, &raws, out)
            }
            Kind::Ordinary { inputs, scratch } => {
                let arrays = ordinary_inputs(batch);
                let current = match inputs.take() {
                    Some(mut prepared) if prepared.fits(&arrays) => {
                        for (buffer, (_, _, data)) in prepared.buffers.iter_mut().zip(&arrays) {
                            buffer.copy_from_slice(data);
                        }
                        prepared
                    }
                    // A new shape (the first call, or another length of a flexible export):
                    // buffers and provider for it, replacing the last ones.
                    _ => OrdinaryInputs::build(&arrays)?,
                };
                let prepared = inputs.insert(current);
                predict(&self.model, &prepared.provider, &mut self.outputs)?;
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
    let (tx, rx) = mpsc::channel();
    let handler = RcBlock::new(move |plan: *mut MLComputePlan, error: *mut NSError| {
        // SAFETY: Core ML passes either a valid plan or a valid error (or null). The plan is
        // walked here, on the handler's thread, in a pool of its own and with exceptions
        // caught, and only plain Rust data leaves.
        let result = guarded(step, || match unsafe { plan.as_ref() } {
            Some(plan) => walk_plan(plan, step),
            None => Err(framework(step, describe(unsafe { error.as_ref() }))),
        });
        // The receiver may have timed out and gone; nothing is left to tell.
        let _ = tx.send(result);
    });
    guarded(step, || {
        let config = configuration(units);
        // SAFETY: valid URL, configuration and block.
        unsafe { MLComputePlan::loadContentsOfURL_configuration_completionHandler(&url, &config, &handler) };
        Ok(())
    })?;
    wait(&rx, step)
}

/// The plan's operations, in program order; an error is a [`CoreMlError::Framework`] for `step`.
fn walk_plan(plan: &MLComputePlan, step: &str) -> Result<Vec<PlannedOp>, CoreMlError> {
    // SAFETY: read-only getters of a loaded plan.
    let structure = unsafe { plan.modelStructure() };
    let program = unsafe { structure.program() }.ok_or_else(|| {
        framework(
            step,
            "the model is not an ML program; only ML programs have a per-operation plan here".into(),
        )
    })?;
    let main = unsafe { program.functions() }
        .objectForKey(&NSString::from_str("main"))
        .ok_or_else(|| framework(step, "the ML program has no `main` function".into()))?;
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
    match device_of(device) {
        Some(Device::NeuralEngine) => PreferredDevice::NeuralEngine,
        Some(Device::Gpu) => PreferredDevice::Gpu,
        Some(Device::Cpu) => PreferredDevice::Cpu,
        None => PreferredDevice::UnknownOrConstant,
    }
}
