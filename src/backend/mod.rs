//! The Backend trait: one synchronous forward over a packed batch, shared by every engine.
//!
//! The host path (prompt, tokens, packing, decoding) lives in `laya/` and is the same code for
//! every backend, so each backend is timed over the same boundary. The batch types live in
//! [`crate::laya::batch`] (the host packs and reads them) and are re-exported here.

pub mod coreml;
pub mod mlx;
pub mod mock;
pub mod portable;
pub mod reference;
pub mod registry;

pub use crate::laya::batch::{BackendError, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};

use crate::hub::Hub;
use crate::settings::Settings;

/// What building an arm takes from the process besides its spec and model: the settings and
/// the hub access, read once at the command edge. `commands::dispatch` builds one and passes it
/// to every command, which passes it (or the one field needed) down to what builds backends
/// ([`registry::build`]), opens sensors or tunes the portable engine.
pub struct Context {
    /// The process's settings.
    pub settings: Settings,
    /// Where `hub:` specs resolve (`mlx:…:hub:NAME`, the commands' `--model hub:…`).
    pub hub: Hub,
}

impl Context {
    /// No environment: every setting unset ([`Settings::UNSET`]) and a hub with no settings, so
    /// that a `hub:` spec fails saying so (a library user or a test that sets nothing).
    pub fn unset() -> Self {
        let no_hub = crate::hub::HubError::Config(
            "none given: this context was built without the environment (backend::Context::unset)".into(),
        );
        Context {
            settings: Settings::UNSET,
            hub: Hub::new(Err(no_hub), std::sync::Arc::new(crate::hub::Silent)),
        }
    }

    /// The unit tests' context: the test process's environment
    /// ([`Settings::of_test_process`]) and no hub ([`Context::unset`]).
    #[cfg(test)]
    pub(crate) fn of_test_process() -> Self {
        Context { settings: Settings::of_test_process(), ..Context::unset() }
    }
}

/// What a backend is, for reports and raw headers.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInfo {
    /// Which engine this is; behaviour that depends on the engine reads this, never `name`.
    pub kind: BackendKind,
    /// Short name, e.g. `portable` (serialized as the raw header's and reports' `backend`).
    pub name: String,
    /// Weight precision, e.g. `f32`, `f16`, `w8`.
    pub precision: String,
    /// Where it computes, e.g. `cpu (2 threads, avx2)`.
    pub device: String,
    /// Shapes it accepts.
    pub shapes: ShapeCaps,
    /// sha256 (hex) of the weight bytes it loaded.
    pub fingerprint: String,
    /// What a user must know about this arm to read its numbers (e.g. a conversion that
    /// changed nothing); printed when the arm is built and kept in the raw header.
    pub notes: Vec<String>,
    /// The BLAS library that answers the backend's matrix products, where a shared library
    /// does (MLX's CPU build: e.g. `OpenBLAS 0.3.21 … (/usr/lib/…/libopenblas.so.0)`); `None`
    /// for engines with their own kernels.
    pub blas: Option<String>,
    /// What the host an arm runs behind should do for this engine ([`registry::host_for`]).
    pub host_hints: HostHints,
    /// Resident bytes of the model's weights as this engine holds them, where the engine
    /// knows (the portable engine); `None` otherwise. Not part of the raw header.
    pub weight_bytes: Option<u64>,
}

/// The engines that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The portable CPU engine (`portable:…`).
    Portable,
    /// Scripted outputs (`mock:…`), never a measurement of a model.
    Mock,
    /// A Core ML bundle (`coreml:…`).
    CoreMl,
    /// The compiled MLX graph (`mlx:…`).
    Mlx,
    /// A published Python runtime in a worker process (`ref:…`): it answers whole requests.
    Reference,
}

/// How the host path in front of an engine is set up; the same for every command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostHints {
    /// Capacity of the host's question-prefix cache ([`crate::laya::prefix`]), when the arm
    /// runs with one (the published MLX baseline did); `None` builds every head on every call.
    pub prefix_cache: Option<usize>,
}

/// One model engine. Object-safe; `forward` takes `&mut self` so scratch buffers are reused.
pub trait Backend: Send {
    /// Identity, precision, device, shapes and weight fingerprint.
    fn info(&self) -> &BackendInfo;
    /// Run the model on a packed batch, writing logits and action logits into `out`.
    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError>;
    /// A backend that answers whole requests itself (a reference runtime in its worker), with
    /// no host path of ours in front; `None` (every engine of ours): the host calls `forward`.
    fn answers_requests(&mut self) -> Option<&mut dyn RequestAnswerer> {
        None
    }
}

/// What answers a whole request instead of the host path: a reference runtime's worker.
pub trait RequestAnswerer {
    /// The result of one (state, questions) request with its per-call options, and the
    /// runtime's own duration in ns where it timed itself.
    fn answer(
        &mut self,
        state: &serde_json::Value,
        questions: &serde_json::Value,
        options: &crate::laya::host::CallOptions,
    ) -> Result<(crate::laya::host::StateResult, Option<u64>), crate::laya::host::HostError>;

    /// The process that runs the model, when it is not this one (a profiler attaches there).
    fn process_id(&self) -> Option<u32> {
        None
    }

    /// Why a request with these per-call options cannot go to this runtime (its predict does
    /// not take one of them), checked before anything is measured; `None`: it can.
    fn refusal(&self, _options: &crate::laya::host::CallOptions) -> Option<String> {
        None
    }
}

/// The first of `options` (one per request, in order) that `backend` cannot take, with its
/// index and why ([`RequestAnswerer::refusal`]); `None` for our engines, which take them all.
/// Asked before anything is measured, never per call.
pub fn first_refusal<'o>(
    backend: &mut dyn Backend,
    options: impl IntoIterator<Item = &'o crate::laya::host::CallOptions>,
) -> Option<(usize, String)> {
    let worker = backend.answers_requests()?;
    options.into_iter().enumerate().find_map(|(i, o)| worker.refusal(o).map(|why| (i, why)))
}

/// Every backend is what the host calls: its forward, named by its [`BackendInfo::name`].
impl<T: Backend + ?Sized> crate::laya::batch::Forward for T {
    fn name(&self) -> &str {
        &self.info().name
    }

    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError> {
        Backend::forward(self, batch, out)
    }
}
