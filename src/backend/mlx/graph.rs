//! MLX leaf (feature `mlx`): the DecisionModel forward (docs/host-path.md §2) as `mlx-rs` ops
//! on the original checkpoint's weights, compiled with `mlx_rs::transforms::compile`.
//!
//! Thin: the inputs of a call (bucket padding, masks, slots, RoPE tables) come from the
//! portable [`super::MlxInputs`]; this file turns them into arrays, runs the compiled graph,
//! evaluates its lazy outputs inside the call and copies them out. Written against mlx-rs
//! 0.33.0. On Linux it runs on MLX 0.32.2's CPU build (the PyPI wheels, `scripts/setup-mlx.sh`)
//! and is tested against the portable engine in CI; on macOS (Metal) it has not run yet (see
//! README, "Apple hardware").
//!
//! Before any other MLX call the process decides, once, where MLX runs ([`device_choice`]):
//! MLX's Metal build makes the GPU its default device even where no Metal device works, and
//! fails only at the first GPU stream or kernel, so a small product is checked on the GPU
//! against the CPU and, if it errors or disagrees, MLX's default device becomes the CPU
//! (`super::device`).

use std::collections::HashMap;
use std::sync::OnceLock;

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{take_along_axis, take_axis};
use mlx_rs::ops::{
    add, broadcast_to, concatenate, divide, erf, expand_dims, log, matmul, maximum, multiply, negative,
    select, softmax_axis, sort_axis, split_equal, squeeze_axes, subtract, sum_axis,
};
use mlx_rs::{fast, transforms, with_stream, Array, Device, DeviceType, Dtype, Stream};

#[cfg(target_os = "linux")]
use super::blas::{BlasKind, BlasProvider};
use super::device::{
    choose_device, compare_products, doctor_line, probe_operands, require_gpu, CheckError, DeviceChoice,
    DeviceError, MlxDevice, PROBE_SHAPE,
};
use super::{
    copy_outputs, default_shapes, fingerprint, host_hints, is_jit_race, parameter_names, MlxDtype, MlxInputs,
    MlxSpec, JIT_RACE_WAIT_MS, NAME,
};
use crate::backend::registry::RegistryError;
use crate::backend::{
    Backend, BackendError, BackendInfo, BackendKind, Context, ForwardOutput, PreparedBatch, ShapeCaps,
};
use crate::error::{Classify, Kind};
use crate::laya::bundle::{Bundle, ModelSpec};
use crate::laya::config::{EncoderConfig, LayerKind, OptionLayout};
use crate::model::loader::load_source;
use crate::model::synthetic::published_shape;
use crate::settings::Settings;

/// Epsilon of the decision head's and the scorer's LayerNorms (PyTorch default).
const HEAD_EPS: f32 = 1e-5;

/// The graph's parameters by MLX name, in the graph dtype.
struct Params(HashMap<String, Array>);

impl Params {
    fn get(&self, name: &str) -> Result<&Array, Exception> {
        self.0.get(name).ok_or_else(|| Exception::custom(format!("missing MLX parameter `{name}`")))
    }
}

/// Static facts of the graph.
struct Cfg {
    heads: i32,
    head_dim: i32,
    layers: Vec<(LayerKind, f32)>,
    head_layers: usize,
    head_heads: i32,
    norm_eps: f32,
    dtype: Dtype,
    parallel: bool,
}

fn scalar(v: f32, dtype: Dtype) -> Result<Array, Exception> {
    Array::from_f32(v).as_dtype(dtype)
}

fn linear(p: &Params, x: &Array, prefix: &str) -> Result<Array, Exception> {
    let y = matmul(x, p.get(&format!("{prefix}.weight"))?.t())?;
    match p.0.get(&format!("{prefix}.bias")) {
        Some(b) => add(&y, b),
        None => Ok(y),
    }
}

fn layer_norm(p: &Params, x: &Array, prefix: &str, eps: f32) -> Result<Array, Exception> {
    let w = p.get(&format!("{prefix}.weight"))?;
    fast::layer_norm(x, w, p.0.get(&format!("{prefix}.bias")), eps)
}

/// Exact GELU `x·(1 + erf(x/√2))/2` with constants in the input's dtype (as Python's weak
/// scalars keep an FP16 graph in FP16).
fn gelu(x: &Array) -> Result<Array, Exception> {
    let dt = x.dtype();
    let inner = erf(multiply(x, scalar(std::f32::consts::FRAC_1_SQRT_2, dt)?)?)?;
    multiply(multiply(x, add(scalar(1.0, dt)?, inner)?)?, scalar(0.5, dt)?)
}

fn relu(x: &Array) -> Result<Array, Exception> {
    maximum(x, scalar(0.0, x.dtype())?)
}

/// `[B, L, heads·dh]` → `[B, heads, L, dh]`.
fn split_heads(t: &Array, b: i32, l: i32, heads: i32, dh: i32) -> Result<Array, Exception> {
    t.reshape(&[b, l, heads, dh])?.transpose_axes(&[0, 2, 1, 3])
}

/// `[B, heads, L, dh]` → `[B, L, heads·dh]`.
fn merge_heads(t: &Array, b: i32, l: i32) -> Result<Array, Exception> {
    t.transpose_axes(&[0, 2, 1, 3])?.reshape(&[b, l, -1])
}

/// Rotate-half RoPE with explicit `[B, 1, L, dh/2]` tables (parallel layout).
fn rope_tables(x: &Array, cos: &Array, sin: &Array) -> Result<Array, Exception> {
    let halves = split_equal(x, 2, -1)?;
    let (u, w) = (&halves[0], &halves[1]);
    let (cos, sin) = (cos.as_dtype(x.dtype())?, sin.as_dtype(x.dtype())?);
    concatenate(
        &[subtract(multiply(u, &cos)?, multiply(w, &sin)?)?, add(multiply(w, &cos)?, multiply(u, &sin)?)?],
        -1,
    )
}

fn attention(q: &Array, k: &Array, v: &Array, head_dim: i32, mask: &Array) -> Result<Array, Exception> {
    let scale = (head_dim as f32).powf(-0.5);
    fast::scaled_dot_product_attention(q, k, v, scale, mask, None::<&Array>)
}

/// Inputs (see `MlxBackend::forward`): ids, full, local and head masks, marker positions and
/// mask, qtype, then for the parallel layout cos/sin of full and of sliding layers.
fn forward(p: &Params, c: &Cfg, inputs: &[Array]) -> Result<Vec<Array>, Exception> {
    let need = if c.parallel { 11 } else { 7 };
    if inputs.len() != need {
        return Err(Exception::custom(format!("the MLX graph takes {need} inputs, got {}", inputs.len())));
    }
    let (ids, full, local, head_mask) = (&inputs[0], &inputs[1], &inputs[2], &inputs[3]);
    let (marker_pos, marker_mask, qtype) = (&inputs[4], &inputs[5], &inputs[6]);
    let (b, l) = (ids.shape()[0], ids.shape()[1]);
    let k = marker_pos.shape()[1];

    // Steps 1–4: embeddings, encoder layers, final norm.
    let emb = take_axis(p.get("encoder.embeddings.tok_embeddings.weight")?, ids, 0)?;
    let mut x = layer_norm(p, &emb, "encoder.embeddings.norm", c.norm_eps)?;
    for (i, &(kind, base)) in c.layers.iter().enumerate() {
        let pre = format!("encoder.layers.{i}");
        let a = if i == 0 { x.clone() } else { layer_norm(p, &x, &format!("{pre}.attn_norm"), c.norm_eps)? };
        let qkv = split_equal(linear(p, &a, &format!("{pre}.attn.Wqkv"))?, 3, -1)?;
        let mut q = split_heads(&qkv[0], b, l, c.heads, c.head_dim)?;
        let mut kk = split_heads(&qkv[1], b, l, c.heads, c.head_dim)?;
        let v = split_heads(&qkv[2], b, l, c.heads, c.head_dim)?;
        if c.parallel {
            let (cos, sin) = match kind {
                LayerKind::Full => (&inputs[7], &inputs[8]),
                LayerKind::Sliding => (&inputs[9], &inputs[10]),
            };
            q = rope_tables(&q, cos, sin)?;
            kk = rope_tables(&kk, cos, sin)?;
        } else {
            q = fast::rope(&q, c.head_dim, false, base, 1.0, 0, None::<&Array>)?;
            kk = fast::rope(&kk, c.head_dim, false, base, 1.0, 0, None::<&Array>)?;
        }
        let mask = match kind {
            LayerKind::Full => full,
            LayerKind::Sliding => local,
        };
        let o = merge_heads(&attention(&q, &kk, &v, c.head_dim, mask)?, b, l)?;
        x = add(&x, linear(p, &o, &format!("{pre}.attn.Wo"))?)?;
        let m =
            linear(p, &layer_norm(p, &x, &format!("{pre}.mlp_norm"), c.norm_eps)?, &format!("{pre}.mlp.Wi"))?;
        let vg = split_equal(&m, 2, -1)?;
        x = add(&x, linear(p, &multiply(gelu(&vg[0])?, &vg[1])?, &format!("{pre}.mlp.Wo"))?)?;
    }
    let mut h = layer_norm(p, &x, "encoder.final_norm", c.norm_eps)?;

    // Step 5: type embedding; step 6: the decision head (ReLU, key-padding mask, no RoPE).
    h = add(&h, expand_dims(take_axis(p.get("type_emb.weight")?, qtype, 0)?, 1)?)?;
    let hdh = h.shape()[2] / c.head_heads;
    for j in 0..c.head_layers {
        let pre = format!("head.layers.{j}");
        let hn = layer_norm(p, &h, &format!("{pre}.norm1"), HEAD_EPS)?;
        let qkv = split_equal(linear(p, &hn, &format!("{pre}.self_attn.in_proj"))?, 3, -1)?;
        let q = split_heads(&qkv[0], b, l, c.head_heads, hdh)?;
        let kk = split_heads(&qkv[1], b, l, c.head_heads, hdh)?;
        let v = split_heads(&qkv[2], b, l, c.head_heads, hdh)?;
        let o = merge_heads(&attention(&q, &kk, &v, hdh, head_mask)?, b, l)?;
        h = add(&h, linear(p, &o, &format!("{pre}.self_attn.out_proj"))?)?;
        let f = layer_norm(p, &h, &format!("{pre}.norm2"), HEAD_EPS)?;
        let f = relu(&linear(p, &f, &format!("{pre}.linear1"))?)?;
        h = add(&h, linear(p, &f, &format!("{pre}.linear2"))?)?;
    }

    // Steps 7–9: marker gather, scorer, option mask (f32).
    let d = h.shape()[2];
    let idx = broadcast_to(expand_dims(marker_pos, -1)?, &[b, k, d])?;
    let markers = take_along_axis(&h, &idx, 1)?;
    let s = layer_norm(p, &markers, "scorer.layers.0", HEAD_EPS)?;
    let s = gelu(&linear(p, &s, "scorer.layers.1")?)?;
    let s = squeeze_axes(&linear(p, &s, "scorer.layers.3")?, &[-1])?.as_dtype(Dtype::Float32)?;
    let logits = select(marker_mask, &s, Array::from_f32(-1e4))?;

    // Step 10: action features over all K slots (K ≥ 2 by construction).
    let probs = softmax_axis(&logits, -1, None)?;
    let kf = maximum(sum_axis(marker_mask.as_dtype(Dtype::Float32)?, -1, true)?, Array::from_f32(2.0))?;
    let plogp = multiply(&probs, log(maximum(&probs, Array::from_f32(1e-9))?)?)?;
    let entropy = divide(negative(sum_axis(&plogp, -1, true)?)?, log(&kf)?)?;
    let last_two = Array::from_slice(&[k - 2, k - 1], &[2]);
    let top = split_equal(take_axis(sort_axis(&probs, -1)?, &last_two, -1)?, 2, -1)?;
    let (top2, top1) = (&top[0], &top[1]);
    let features = concatenate(
        &[top1.clone(), subtract(top1, top2)?, entropy, divide(&kf, Array::from_f32(255.0))?],
        -1,
    )?;

    // Step 11: action head on [h[:, 0] (f32), features], in the graph dtype like the baseline.
    let cls = take_axis(&h, Array::from_int(0), 1)?.as_dtype(Dtype::Float32)?;
    let pooled = concatenate(&[cls, features], -1)?.as_dtype(c.dtype)?;
    let a = gelu(&linear(p, &pooled, "act_head.layers.0")?)?;
    let action = linear(p, &a, "act_head.layers.2")?.as_dtype(Dtype::Float32)?;
    Ok(vec![logits, action])
}

/// The compiled forward's callable: inputs in, outputs (lazy) out.
type ForwardFn = dyn for<'a> FnMut(&'a [Array]) -> Result<Vec<Array>, Exception>;

/// The compiled forward, owned by one backend.
struct CompiledForward(Box<ForwardFn>);

// SAFETY: mlx-rs marks its compiled closure !Send only through a `PhantomData<Rc<()>>`
// marker; the closure here owns its state (the parameters and a compile id) outright and is
// never shared: the backend that owns it is moved to the thread that runs it, and MLX arrays
// are themselves `Send` (mlx-rs `array/mod.rs`).
unsafe impl Send for CompiledForward {}

/// Whether the forward is compiled with `mlx_rs::transforms::compile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compile {
    /// Compiled once per input shape (the published baseline's `mx.compile`).
    Yes,
    /// Evaluated op by op.
    No,
}

/// Why MLX cannot compute here ([`probe`], [`blas_provider`]).
#[derive(Debug, thiserror::Error)]
pub enum MlxError {
    /// Where MLX runs could not be decided, or the arms are refused there.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// An MLX operation failed.
    #[error(transparent)]
    Mlx(#[from] Exception),
    /// An MLX result could not be read.
    #[error(transparent)]
    Read(#[from] mlx_rs::error::AsSliceError),
    /// MLX evaluated the probe's product to the wrong values.
    #[error("MLX returned {0:?} for [[1,2],[3,4]]·[[5,6],[7,8]]")]
    WrongProduct(Vec<f32>),
    /// The BLAS behind MLX's CPU products is not the one this build chose (`super::blas::refusal`).
    #[error("{0}")]
    Blas(String),
}

impl Classify for MlxError {
    /// A refused device or BLAS is found before anything is measured; MLX failing to compute
    /// is a failed run.
    fn kind(&self) -> Kind {
        match self {
            MlxError::Device(e) => e.kind(),
            MlxError::Blas(_) => Kind::Input,
            MlxError::Mlx(_) | MlxError::Read(_) | MlxError::WrongProduct(_) => Kind::Run,
        }
    }
}

/// The MLX backend.
pub struct MlxBackend {
    info: BackendInfo,
    compiled: CompiledForward,
    inputs: MlxInputs,
    encoder: EncoderConfig,
    pad_id: i32,
    num_actions: usize,
    parallel: bool,
}

fn runtime(e: Exception) -> BackendError {
    BackendError::Runtime(format!("MLX: {e}"))
}

fn weights_err(spec_text: &str, e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Weights(format!("{spec_text}: {e}"))
}

/// MLX's version string (`mlx_version()` of the linked library).
pub fn mlx_version() -> String {
    // SAFETY: mlx_string_new/mlx_version/mlx_string_data/mlx_string_free are used as mlx-c
    // documents: the string is created, filled, read while alive, then freed.
    unsafe {
        let mut s = mlx_sys::mlx_string_new();
        let rc = mlx_sys::mlx_version(&mut s);
        let data = mlx_sys::mlx_string_data(s);
        let v = if rc == 0 && !data.is_null() {
            std::ffi::CStr::from_ptr(data).to_string_lossy().into_owned()
        } else {
            "unknown".to_string()
        };
        mlx_sys::mlx_string_free(s);
        v
    }
}

/// The check's product `a·b` in `dtype` on `stream`, as float32 values.
fn product_on(stream: &Stream, a: &[f32], b: &[f32], dtype: Dtype) -> Result<Vec<f32>, CheckError> {
    let (m, k, n) = PROBE_SHAPE;
    let (m, k, n) = (m as i32, k as i32, n as i32);
    let mlx = |e: &dyn std::error::Error| CheckError::Mlx(e.to_string());
    with_stream(stream, || -> Result<Vec<f32>, CheckError> {
        let a = Array::from_slice(a, &[m, k]).as_dtype(dtype).map_err(|e| mlx(&e))?;
        let b = Array::from_slice(b, &[k, n]).as_dtype(dtype).map_err(|e| mlx(&e))?;
        let c = matmul(&a, &b).and_then(|c| c.as_dtype(Dtype::Float32)).map_err(|e| mlx(&e))?;
        c.eval().map_err(|e| mlx(&e))?;
        c.try_as_slice::<f32>().map(<[f32]>::to_vec).map_err(|e| mlx(&e))
    })
}

/// The device check ([`choose_device`]'s GPU check, with `MlxDevice::Gpu`): a stream on the
/// device (where a missing Metal device shows: "No Metal device available"), then the check's
/// product in float32 and float16 on it and on the CPU, compared with the exact one
/// ([`compare_products`]; its messages call the checked device "the GPU"). With
/// `MlxDevice::Cpu` it checks the CPU against itself (the tests' use on Linux).
pub fn product_check(device: MlxDevice) -> Result<(), CheckError> {
    let checked = match device {
        MlxDevice::Gpu => Device::gpu(),
        MlxDevice::Cpu => Device::cpu(),
    };
    let on = Stream::try_default_on_device(&checked).map_err(|e| CheckError::Mlx(e.to_string()))?;
    let cpu = Stream::try_default_on_device(&Device::cpu()).map_err(|e| CheckError::Mlx(e.to_string()))?;
    let (a, b, exact) = probe_operands();
    for (dtype, name) in [(Dtype::Float32, "float32"), (Dtype::Float16, "float16")] {
        let on_device = product_on(&on, &a, &b, dtype)?;
        let on_cpu = product_on(&cpu, &a, &b, dtype)?;
        compare_products(name, &on_device, &on_cpu, &exact)?;
    }
    Ok(())
}

/// Where MLX runs in this process, decided on the first call and applied to MLX's default
/// device before any other MLX operation (every arm and `doctor` call this first): where the
/// default is the GPU (MLX's Metal build) the GPU is checked ([`product_check`]), and a GPU that
/// errors or disagrees is replaced by MLX's CPU device, or the arm refused under
/// `LAYA_BENCH_REQUIRE_MLX_GPU=1` ([`choose_device`], as `settings` hold it). The same answer
/// for every later call (the process has one default device and one [`Settings`]).
pub fn device_choice(settings: &Settings) -> Result<&'static DeviceChoice, DeviceError> {
    static CHOICE: OnceLock<Result<DeviceChoice, DeviceError>> = OnceLock::new();
    CHOICE
        .get_or_init(|| {
            // `try_default` is a checked call: it also installs mlx-rs's error handler, without
            // which an MLX error in an unchecked call (a stream on a GPU that is not there)
            // ends the process.
            let default_is_gpu = match Device::try_default().and_then(|d| d.get_type()) {
                Ok(DeviceType::Gpu) => true,
                Ok(DeviceType::Cpu) => false,
                Err(e) => return Err(DeviceError::UnknownDefault(e.to_string())),
            };
            let require = require_gpu(settings.require_mlx_gpu.as_deref());
            let choice = choose_device(default_is_gpu, require, || product_check(MlxDevice::Gpu))?;
            if default_is_gpu && choice.device == MlxDevice::Cpu {
                Device::set_default(&Device::cpu());
            }
            Ok(choice)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Where the graph runs, as the raw header and `doctor` record it (after [`device_choice`]).
pub fn device_name(settings: &Settings) -> String {
    match device_choice(settings) {
        Ok(choice) => choice.device_text(&mlx_version(), cfg!(target_os = "macos")),
        Err(e) => format!("none (MLX refused: {e})"),
    }
}

/// The BLAS behind MLX's CPU matrix products, checked against the build's choice: `Ok(None)`
/// where MLX uses Apple's Accelerate (macOS), `Err` ([`MlxError::Blas`]) where the arm must
/// not run (see [`super::blas::refusal`]).
pub fn blas_provider() -> Result<Option<String>, MlxError> {
    #[cfg(target_os = "linux")]
    {
        let chosen_reference = option_env!("LAYA_BENCH_MLX_BLAS_CHOICE") == Some("reference");
        let p = blas_library();
        match super::blas::refusal(p.as_ref(), chosen_reference) {
            Some(why) => Err(MlxError::Blas(why)),
            None => Ok(p.map(|p| p.describe())),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(None)
    }
}

/// The library that defines `cblas_sgemm` for this process's global lookup scope (the
/// binding `libmlx.so`'s undefined `cblas_sgemm` gets), with OpenBLAS's self-description.
#[cfg(target_os = "linux")]
fn blas_library() -> Option<BlasProvider> {
    use std::ffi::{c_char, c_int, CStr};

    // SAFETY: dlsym/dladdr with a NUL-terminated name and a zeroed Dl_info; the returned
    // strings belong to the loaded library, which stays loaded (it is linked in).
    unsafe {
        let sym = libc::dlsym(libc::RTLD_DEFAULT, c"cblas_sgemm".as_ptr());
        if sym.is_null() {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(sym, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let path = CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
        let kind = super::blas::classify(&path);
        let config = {
            let f = libc::dlsym(libc::RTLD_DEFAULT, c"openblas_get_config".as_ptr());
            (!f.is_null() && kind == BlasKind::OpenBlas).then(|| {
                let f: extern "C" fn() -> *const c_char = std::mem::transmute(f);
                let s = f();
                (!s.is_null()).then(|| CStr::from_ptr(s).to_string_lossy().trim().to_string())
            })
        }
        .flatten();
        let threads = {
            let f = libc::dlsym(libc::RTLD_DEFAULT, c"openblas_get_num_threads".as_ptr());
            (!f.is_null() && kind == BlasKind::OpenBlas).then(|| {
                let f: extern "C" fn() -> c_int = std::mem::transmute(f);
                f()
            })
        };
        Some(BlasProvider { kind, path, config, threads })
    }
}

/// One small product on MLX's default device (after [`device_choice`]), checked: the device,
/// MLX version and BLAS, or why MLX cannot compute here (`doctor`).
pub fn probe(settings: &Settings) -> Result<String, MlxError> {
    device_choice(settings)?;
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    let b = Array::from_slice(&[5.0f32, 6.0, 7.0, 8.0], &[2, 2]);
    let c = matmul(&a, &b)?;
    c.eval()?;
    match c.try_as_slice::<f32>()? {
        [19.0, 22.0, 43.0, 50.0] => {}
        other => return Err(MlxError::WrongProduct(other.to_vec())),
    }
    let blas = match blas_provider()? {
        Some(b) => format!("; BLAS {b}"),
        None => String::new(),
    };
    Ok(format!("{} evaluated a 2×2 product{blas}", device_name(settings)))
}

/// `doctor`'s Apple MLX line ([`device_choice`], worded by [`doctor_line`]): whether the
/// `mlx:` arms run on the Metal GPU, else whether they fall back to the CPU or are refused.
pub fn metal_status(settings: &Settings) -> (bool, String) {
    doctor_line(&device_choice(settings).cloned())
}

impl MlxBackend {
    /// Load `spec.source`, cast its weights to the graph dtype and compile the forward. The
    /// source must have the same configs as the `--model` bundle the host runs; a `hub:` source
    /// resolves through `context`'s hub.
    pub fn build(
        spec: &MlxSpec,
        spec_text: &str,
        bundle: &Bundle,
        shapes: Option<ShapeCaps>,
        context: &Context,
    ) -> Result<Self, RegistryError> {
        Self::build_with(spec, spec_text, bundle, shapes, Compile::Yes, context)
    }

    /// [`MlxBackend::build`], with the forward compiled (`mx.compile`, as the baseline ran
    /// it) or run op by op (`Compile::No`: the same graph, traced anew on every call; the
    /// tests check that both agree).
    pub fn build_with(
        spec: &MlxSpec,
        spec_text: &str,
        bundle: &Bundle,
        shapes: Option<ShapeCaps>,
        compile: Compile,
        context: &Context,
    ) -> Result<Self, RegistryError> {
        // a `hub:` source resolves to its snapshot folder ([`crate::hub::Hub::resolve_spec`])
        let model = match spec.source.strip_prefix("hub:") {
            Some(rest) => {
                ModelSpec::Dir(context.hub.resolve_spec(rest).map_err(|e| weights_err(spec_text, e))?)
            }
            None => ModelSpec::parse(&spec.source).map_err(|e| weights_err(spec_text, e))?,
        };
        let src = Bundle::load(&model, published_shape).map_err(|e| weights_err(spec_text, e))?;
        // what differs, by name (the model is --model)
        let mut differs = Vec::new();
        if src.encoder != bundle.encoder {
            differs.push("the encoder config (encoder/config.json)".to_string());
        }
        if src.agent.num_actions != bundle.agent.num_actions {
            differs.push(format!("num_actions {} vs {}", src.agent.num_actions, bundle.agent.num_actions));
        }
        if src.agent.head_layers != bundle.agent.head_layers {
            differs.push(format!("head_layers {} vs {}", src.agent.head_layers, bundle.agent.head_layers));
        }
        if src.agent.option_layout != bundle.agent.option_layout {
            differs.push(format!(
                "option_layout {:?} vs {:?}",
                src.agent.option_layout, bundle.agent.option_layout
            ));
        }
        if !differs.is_empty() {
            return Err(RegistryError::Incompatible {
                spec: spec_text.into(),
                model: bundle.source.clone(),
                reason: format!(
                    "its checkpoint {} differs from the model the command runs: {}; point SRC at that model's checkpoint",
                    spec.source,
                    differs.join(", ")
                ),
            });
        }
        // Before any other MLX operation: where MLX runs (the GPU checked, or the CPU with why).
        let choice = device_choice(&context.settings)
            .map_err(|e| RegistryError::BadSpec { spec: spec_text.into(), reason: e.to_string() })?;
        let blas = blas_provider()
            .map_err(|e| RegistryError::BadSpec { spec: spec_text.into(), reason: e.to_string() })?;
        let (weights, source_fp) = load_source(spec_text, &src)?;
        let dtype = match spec.dtype {
            MlxDtype::F16 => Dtype::Float16,
            MlxDtype::F32 => Dtype::Float32,
        };
        let tensors = weights.named_tensors();
        let names = parameter_names(tensors.iter().map(|(n, _, _)| n.as_str()))
            .map_err(|e| weights_err(spec_text, e))?;
        let mut params = HashMap::with_capacity(tensors.len());
        for ((_, shape, values), (_, mlx_name)) in tensors.iter().zip(names) {
            let shape: Vec<i32> = shape.iter().map(|&s| s as i32).collect();
            let a =
                Array::from_slice(values, &shape).as_dtype(dtype).map_err(|e| weights_err(spec_text, e))?;
            params.insert(mlx_name, a);
        }
        transforms::eval(params.values()).map_err(|e| weights_err(spec_text, e))?;
        let enc = &bundle.encoder;
        let cfg = Cfg {
            heads: enc.num_heads as i32,
            head_dim: enc.head_dim() as i32,
            layers: enc.layer_kinds.iter().map(|&k| (k, enc.rope_theta(k) as f32)).collect(),
            head_layers: bundle.agent.head_layers,
            head_heads: (enc.hidden_size / 64).max(1) as i32,
            norm_eps: enc.norm_eps as f32,
            dtype,
            parallel: bundle.agent.option_layout == OptionLayout::Parallel,
        };
        let parallel = cfg.parallel;
        let params = Params(params);
        let f = move |inputs: &[Array]| -> Result<Vec<Array>, Exception> { forward(&params, &cfg, inputs) };
        let compiled = match compile {
            Compile::Yes => CompiledForward(Box::new(transforms::compile::compile(f, false))),
            Compile::No => CompiledForward(Box::new(f)),
        };
        let info = BackendInfo {
            kind: BackendKind::Mlx,
            name: NAME.into(),
            precision: spec.dtype.name().into(),
            device: choice.device_text(&mlx_version(), cfg!(target_os = "macos")),
            shapes: shapes.unwrap_or_else(|| default_shapes(&bundle.agent)),
            fingerprint: fingerprint(&source_fp, spec.dtype),
            notes: choice
                .note()
                .into_iter()
                .chain(
                    (compile == Compile::No)
                        .then(|| "the forward is not compiled: MLX evaluates it op by op".to_string()),
                )
                .collect(),
            blas,
            host_hints: host_hints(),
            weight_bytes: None,
        };
        Ok(MlxBackend {
            info,
            compiled,
            inputs: MlxInputs::default(),
            encoder: enc.clone(),
            pad_id: bundle.tokenizer.pad.id as i32,
            num_actions: bundle.agent.num_actions,
            parallel,
        })
    }
}

impl Backend for MlxBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError> {
        if batch.position_ids.is_some() != self.parallel {
            return Err(BackendError::Shape(
                "the batch's option layout (position_ids/option_ids) does not match the checkpoint's option_layout"
                    .into(),
            ));
        }
        self.inputs.fill(batch, &self.encoder, self.pad_id)?;
        let x = &self.inputs;
        let (b, l, k) = (x.batch as i32, x.length as i32, x.slots as i32);
        let mut args = vec![
            Array::from_slice(&x.input_ids, &[b, l]),
            Array::from_slice(&x.full_mask, &[b, 1, l, l]),
            Array::from_slice(&x.local_mask, &[b, 1, l, l]),
            Array::from_slice(&x.head_mask, &[b, 1, l, l]),
            Array::from_slice(&x.marker_pos, &[b, k]),
            Array::from_slice(&x.marker_mask, &[b, k]),
            Array::from_slice(&x.qtype, &[b]),
        ];
        if let Some((full, sliding)) = &x.rope {
            let half = self.encoder.head_dim() as i32 / 2;
            for t in [full, sliding] {
                args.push(Array::from_slice(&t.cos, &[b, 1, l, half]));
                args.push(Array::from_slice(&t.sin, &[b, 1, l, half]));
            }
        }
        // The outputs are lazy: evaluate them here, inside the timed call. A new shape compiles
        // new kernels; where another process is compiling the same one, retry (`is_jit_race`).
        let started = std::time::Instant::now();
        let outs = loop {
            let run = (self.compiled.0)(&args).and_then(|outs| transforms::eval(outs.iter()).map(|()| outs));
            match run {
                Err(e)
                    if is_jit_race(&e.to_string())
                        && started.elapsed() < std::time::Duration::from_millis(JIT_RACE_WAIT_MS) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                run => break run.map_err(runtime)?,
            }
        };
        let [logits, actions] = outs.as_slice() else {
            return Err(BackendError::Runtime(format!(
                "MLX graph returned {} outputs, expected 2",
                outs.len()
            )));
        };
        let logits = logits.try_as_slice::<f32>().map_err(|e| BackendError::Runtime(e.to_string()))?;
        let actions = actions.try_as_slice::<f32>().map_err(|e| BackendError::Runtime(e.to_string()))?;
        copy_outputs(logits, actions, &self.inputs, batch, self.num_actions, out)
    }
}
