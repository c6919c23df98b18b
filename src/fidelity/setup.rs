//! The two sides of a check, built once: the shape rows are built and packed for, the FP32
//! source on the portable engine and the candidate (a backend spec run on the source model, a
//! checkpoint on portable:f32, or a Core ML bundle), each an [`Arm`] with its host; and what
//! the report says about each side: its [`SideInfo`], its package sizes and the static checks
//! of a Core ML bundle.
//!
//! Which kind of candidate a spec text names is the registry's answer
//! ([`registry::classify`]); how an arm is made is [`Arm::around`]'s.

use super::bundle_checks::{bundle_checks, BundleChecks};
use super::check::{Engines, QuestionResult, SuiteSummary};
use super::package::PackageAccounting;
use super::package::{coreml_side, manifest_quantization, missing_side, portable_side, PackageSide};
use super::report::{GateInfo, Gathered, ShapeInfo, SideInfo, SuiteInfo};
use super::suite::Suite;
use crate::backend::registry::{self, build_portable, default_threads, BackendSpec, Precision, SpecKind};
use crate::backend::{Backend, BackendInfo, BackendKind, Context, ShapeCaps, ShapeMode};
use crate::error::{Classify, Error};
use crate::laya::bundle::{sha256_hex, Bundle, CoreMlBundle, Weights};
use crate::laya::host::Host;
use crate::model::palettize::{read_palette_meta, PaletteReport};
use crate::model::weights::WeightBytes;
use crate::run::Arm;
use crate::settings::Settings;

/// What a `ref:` candidate's judgement rests on (the report's candidate notes).
pub const REFERENCE_NOTE: &str = "a reference runtime is judged on the result dict it returns: it builds its own rows (its tokenizer, padding and max_len) and rounds every probability to 4 decimals, which adds at most 5e-5 to each drift; its repeats are compared as whole result dicts";

/// The FP32 source on the portable engine: its arm and weight storage by part.
pub struct Source<'b> {
    /// The backend and the plain host that decodes its outputs.
    pub arm: Arm<'b>,
    /// Weight storage by part.
    pub weight_bytes: WeightBytes,
}

/// A candidate that runs here: its arm, and for the portable engine its weight sizes by part
/// and the palettizer's report.
pub struct Side<'b> {
    /// The backend and the host it runs behind.
    pub arm: Arm<'b>,
    /// Weight storage by part (`None` unless the portable engine).
    pub weight_bytes: Option<WeightBytes>,
    /// What an on-the-fly palettization did (`portable:w8|w6|w4`).
    pub palette: Option<PaletteReport>,
}

/// The candidate's engine, or why it cannot run here.
pub enum Engine<'b> {
    /// It runs here.
    Runs(Box<Side<'b>>),
    /// It cannot run here: why, and a plain host on its model that still builds the rows.
    Unavailable {
        /// Why (the registry's refusal; its text is the report's reason).
        reason: registry::RegistryError,
        /// The candidate model's host at the check's shape.
        host: Box<Host<'b>>,
    },
}

/// The candidate as the check runs it.
pub struct Candidate<'b> {
    /// The spec as the user wrote it.
    pub spec: String,
    /// What it names ([`registry::classify`]).
    pub kind: SpecKind,
    /// The model it runs: its own, or the source's for a backend spec.
    pub bundle: &'b Bundle,
    /// The Core ML bundle it is, when it is one.
    pub coreml: Option<CoreMlBundle>,
    /// Its engine.
    pub engine: Engine<'b>,
}

/// The model a candidate names, when it names one (`None`: a backend spec on the source model).
pub fn candidate_model(spec: &str, kind: &SpecKind) -> Option<String> {
    match kind {
        SpecKind::Engine(_) => None,
        SpecKind::CoreMl(path) => Some(path.clone()),
        SpecKind::Model => Some(spec.to_string()),
    }
}

/// Refuse a source that is a Core ML bundle (bad input, exit 2): the source must be the FP32
/// checkpoint the candidate was converted from.
pub fn check_source(spec: &str, source: &Bundle) -> Result<(), Error> {
    match source.weights {
        Weights::CoreMl(_) => Err(Error::input(format!(
            "--model {spec} is a Core ML bundle; the source must be the FP32 checkpoint it was converted from"
        ))),
        _ => Ok(()),
    }
}

/// The Core ML package of a candidate model that is one.
pub fn coreml_of(candidate: &Bundle) -> Option<&CoreMlBundle> {
    match &candidate.weights {
        Weights::CoreMl(c) => Some(c),
        _ => None,
    }
}

/// The folder a `coreml:` candidate names must be a Core ML bundle (exit 2 before anything
/// loads).
pub fn check_coreml_folder(spec: &str, kind: &SpecKind) -> Result<(), Error> {
    let SpecKind::CoreMl(path) = kind else { return Ok(()) };
    if path.is_empty() {
        return Err(Error::input(format!(
            "--backend {spec}: name the Core ML bundle folder, e.g. --backend coreml:bundles/laya-ane"
        )));
    }
    let dir = std::path::Path::new(path);
    if dir.join("coreml_config.json").is_file() {
        return Ok(());
    }
    let what = if dir.is_dir() {
        "has no coreml_config.json"
    } else if dir.exists() {
        "is a file, not a folder (give the bundle's folder)"
    } else {
        "does not exist"
    };
    Err(Error::input(format!(
        "--backend {spec}: the folder {} {what}, so it is not a Core ML bundle (a folder with coreml_config.json)",
        dir.display()
    )))
}

/// The shape rows are built and packed for: the Core ML bundle's, or the portable engine's
/// with one row per call and `max_len` (`--max-len`) as the longest row.
pub fn check_shapes(
    max_len: Option<usize>,
    cand: &Bundle,
    coreml: Option<&CoreMlBundle>,
) -> Result<ShapeCaps, Error> {
    if max_len == Some(0) {
        return Err(Error::input("--max-len must be at least 1"));
    }
    if let Some(c) = coreml {
        let ane = c.format == "laya-coreml-ane";
        if let Some(n) = max_len.filter(|&n| n > c.max_length || (ane && n != c.max_length)) {
            return Err(Error::input(format!(
                "--max-len {n}: Requested length does not match the bundle ({} tokens{}); omit --max-len or pass {}",
                c.max_length,
                if ane { ", fixed" } else { " at most" },
                c.max_length
            )));
        }
        return Ok(ShapeCaps {
            batch_size: c.batch_size.max(1),
            max_length: c.max_length,
            min_length: if ane { c.max_length } else { 16.min(c.max_length) },
            max_options: c.max_options,
            mode: if ane { ShapeMode::Fixed } else { ShapeMode::Range },
        });
    }
    let model_max = cand.agent.max_len;
    if let Some(n) = max_len.filter(|&n| n > model_max) {
        return Err(Error::input(format!(
            "--max-len {n} is longer than the model's max_len {model_max}; pass at most {model_max}"
        )));
    }
    let mut caps = registry::portable_shapes(cand);
    caps.batch_size = 1;
    caps.max_length = max_len.unwrap_or(model_max);
    caps.min_length = caps.min_length.min(caps.max_length);
    Ok(caps)
}

/// The portable engine for `spec` as a side, its host at the check's `shapes`. The one place
/// convert-check holds a concrete [`crate::backend::portable::PortableBackend`]: long enough
/// to read its weight storage by part (package accounting leaves out the host embedding
/// tables, which `BackendInfo::weight_bytes` does not separate); then it is an arm like any
/// other.
fn portable<'b>(
    bundle: &'b Bundle,
    spec: &BackendSpec,
    text: &str,
    shapes: &ShapeCaps,
    settings: &Settings,
) -> Result<(Arm<'b>, WeightBytes, Option<PaletteReport>), registry::RegistryError> {
    let (backend, palette) =
        build_portable(spec, text, bundle, Some(shapes.clone()), default_threads(), settings)?;
    let weight_bytes = backend.weight_bytes();
    Ok((Arm::around(bundle, text, text, Box::new(backend), shapes.clone()), weight_bytes, palette))
}

/// The FP32 source on the portable engine (its host has no hints: rows are decoded plainly),
/// tuned as the engine is under `settings`.
pub fn build_source<'b>(
    bundle: &'b Bundle,
    spec: &str,
    shapes: &ShapeCaps,
    settings: &Settings,
) -> Result<Source<'b>, Error> {
    let (arm, weight_bytes, _) =
        portable(bundle, &BackendSpec::Portable(Precision::F32), "portable:f32", shapes, settings)
            .map_err(|e| Error::input(format!("--model {spec}")).because(e))?;
    Ok(Source { arm, weight_bytes })
}

/// Both sides of a check, built at its shape, with what the report says about them (taken
/// before the suite runs).
pub struct Sides<'b> {
    /// The FP32 source.
    pub source: Source<'b>,
    /// The candidate.
    pub candidate: Candidate<'b>,
    source_info: SideInfo,
    candidate_info: SideInfo,
    bundle_checks: Option<BundleChecks>,
    package: PackageAccounting,
}

impl<'b> Sides<'b> {
    /// The source `(spec, bundle)` on the portable engine ([`build_source`]) and the candidate
    /// `(spec, kind, model)` ([`Candidate::build`]) at `shapes`, the candidate's static checks
    /// against the source and both sides' package sizes.
    pub fn build(
        (source_spec, source_bundle): (&str, &'b Bundle),
        (spec, kind, model): (&str, SpecKind, &'b Bundle),
        shapes: &ShapeCaps,
        ctx: &Context,
    ) -> Result<Self, Error> {
        let source = build_source(source_bundle, source_spec, shapes, &ctx.settings)?;
        let candidate = Candidate::build(spec, kind, model, shapes, ctx)?;
        let bundle_checks = candidate.static_checks(source_bundle)?;
        let source_info = source_info(source_spec, source_bundle, &source);
        let package = PackageAccounting::new(source_package(source_spec, &source), candidate.package());
        let candidate_info = candidate.side_info();
        Ok(Self { source, candidate, source_info, candidate_info, bundle_checks, package })
    }

    /// What the check gathered, once its `suite` ran: the sides' parts with the shape, the
    /// gate, the suite and its `(questions, summary)`.
    pub fn gathered(
        self,
        shape: ShapeInfo,
        gate: GateInfo,
        suite: &Suite,
        (questions, summary): (Vec<QuestionResult>, SuiteSummary),
    ) -> Gathered {
        Gathered {
            asked: suite.items.len(),
            suite: SuiteInfo::of(suite),
            source: self.source_info,
            candidate: self.candidate_info,
            shape,
            gate,
            summary,
            questions,
            bundle_checks: self.bundle_checks,
            package: self.package,
        }
    }
}

/// What the report says about the source.
pub fn source_info(spec: &str, bundle: &Bundle, source: &Source<'_>) -> SideInfo {
    let info = source.arm.backend.info();
    SideInfo {
        spec: spec.to_string(),
        kind: "checkpoint".into(),
        model: bundle.source.clone(),
        backend: Some("portable:f32".into()),
        precision: Some(info.precision.clone()),
        device: Some(info.device.clone()),
        fingerprint: Some(info.fingerprint.clone()),
        notes: Vec::new(),
    }
}

/// The source's package sizes.
pub fn source_package(spec: &str, source: &Source<'_>) -> PackageSide {
    portable_side(&format!("{spec} on portable:f32"), source.weight_bytes)
}

impl<'b> Candidate<'b> {
    /// Build the candidate on its model `bundle` (the source's for a backend spec) at the
    /// check's `shapes`. A Core ML bundle or an `mlx:` spec this build or machine cannot run
    /// is [`Engine::Unavailable`] (static checks still run); any other bad spec is exit 2.
    /// Backends are built with the process's settings and hub (`ctx`).
    pub fn build(
        spec: &str,
        kind: SpecKind,
        bundle: &'b Bundle,
        shapes: &ShapeCaps,
        ctx: &Context,
    ) -> Result<Self, Error> {
        let coreml = match &bundle.weights {
            Weights::CoreMl(c) => Some(c.clone()),
            _ => None,
        };
        let engine = Self::engine(spec, &kind, bundle, coreml.is_some(), shapes, ctx)?;
        Ok(Self { spec: spec.to_string(), kind, bundle, coreml, engine })
    }

    fn engine(
        text: &str,
        kind: &SpecKind,
        cand: &'b Bundle,
        is_coreml: bool,
        shapes: &ShapeCaps,
        ctx: &Context,
    ) -> Result<Engine<'b>, Error> {
        let context =
            |e: registry::RegistryError| Error::new(e.kind(), format!("--backend {text}")).because(e);
        let unavailable = |reason: registry::RegistryError| Engine::Unavailable {
            reason,
            host: Box::new(Host::new(&cand.tokenizer, &cand.agent, shapes.clone())),
        };
        let arm = |backend: Box<dyn Backend>, spec: &str| {
            Engine::Runs(Box::new(Side {
                arm: Arm::around(cand, spec, spec, backend, shapes.clone()),
                weight_bytes: None,
                palette: None,
            }))
        };
        if is_coreml {
            let spec = format!("coreml:{}", candidate_model(text, kind).unwrap_or_else(|| text.to_string()));
            return Ok(
                match BackendSpec::parse(&spec)
                    .and_then(|s| registry::build(&s, &spec, cand, Some(shapes.clone()), ctx))
                {
                    Ok(b) => arm(b, &spec),
                    Err(e) => unavailable(e),
                },
            );
        }
        let spec_text = match kind {
            SpecKind::Engine(_) => text,
            SpecKind::CoreMl(_) | SpecKind::Model => "portable:f32",
        };
        let parsed = match BackendSpec::parse(spec_text) {
            Ok(p) => p,
            Err(e @ registry::RegistryError::Unavailable { .. }) => return Ok(unavailable(e)),
            Err(e) if *kind == SpecKind::Engine(BackendKind::Mlx) => return Ok(unavailable(e)),
            Err(e) => return Err(context(e)),
        };
        if matches!(parsed, BackendSpec::Mock { .. } | BackendSpec::Mlx(_) | BackendSpec::Reference(_)) {
            let backend =
                registry::build(&parsed, spec_text, cand, Some(shapes.clone()), ctx).map_err(context)?;
            return Ok(arm(backend, spec_text));
        }
        let (arm, weight_bytes, palette) =
            portable(cand, &parsed, spec_text, shapes, &ctx.settings).map_err(context)?;
        Ok(Engine::Runs(Box::new(Side { arm, weight_bytes: Some(weight_bytes), palette })))
    }

    /// The host that builds and packs the rows: the candidate arm's (MLX: with the prefix
    /// cache, which changes no row), or a plain one when it cannot run.
    pub fn rows_host(&self) -> &Host<'b> {
        match &self.engine {
            Engine::Runs(side) => &side.arm.host,
            Engine::Unavailable { host, .. } => host,
        }
    }

    /// What its backend is, when it runs here.
    pub fn info(&self) -> Option<&BackendInfo> {
        match &self.engine {
            Engine::Runs(side) => Some(side.arm.backend.info()),
            Engine::Unavailable { .. } => None,
        }
    }

    /// The engines of the check: the candidate's rows host and backend next to the source's.
    pub fn engines<'s>(&'s mut self, source: &'s mut Source<'_>) -> Engines<'s, 's> {
        let (rows_host, candidate): (&Host<'_>, Result<&mut dyn Backend, &registry::RegistryError>) =
            match &mut self.engine {
                Engine::Runs(side) => {
                    let Side { arm, .. } = &mut **side;
                    (&arm.host, Ok(arm.backend.as_mut()))
                }
                Engine::Unavailable { reason, host } => (host, Err(reason)),
            };
        Engines { rows_host, source_host: &source.arm.host, source: source.arm.backend.as_mut(), candidate }
    }

    /// The static checks of a Core ML candidate against the source (`None` for other
    /// candidates; exit 2 when they cannot be made).
    pub fn static_checks(&self, source: &Bundle) -> Result<Option<BundleChecks>, Error> {
        let Some(c) = &self.coreml else { return Ok(None) };
        let weights = match c.host_weights {
            Some(_) => Some(
                crate::model::loader::load_source("portable:f32", source)
                    .map_err(|e| Error::input("--model").because(e))?
                    .0,
            ),
            None => None,
        };
        bundle_checks(c, weights.as_ref()).map(Some).map_err(|e| Error::input("--backend").because(e))
    }

    /// What the report says about the candidate, with the notes a reader must see.
    pub fn side_info(&self) -> SideInfo {
        let (cand, coreml) = (self.bundle, self.coreml.as_ref());
        let mut notes = Vec::new();
        let palette = match &self.engine {
            Engine::Runs(side) => side.palette.as_ref(),
            Engine::Unavailable { .. } => None,
        };
        if let Some(p) = palette {
            if p.tensors.is_empty() {
                notes.push(format!(
                    "{}-bit palettization changed nothing: no projection matrix of this model has more than {} elements, so the candidate's weights equal the source's and this run says nothing about {}-bit palettization of a real checkpoint",
                    p.config.bits, p.config.above_elements, p.config.bits
                ));
            } else {
                notes.push(format!(
                    "{} of {} projection matrices palettized at {} bits (largest relative RMS error {:.5})",
                    p.tensors.len(),
                    p.tensors.len() + p.skipped.len(),
                    p.config.bits,
                    p.max_rel_rms_error
                ));
            }
        }
        if let Ok(BackendSpec::PortablePalette { path, .. }) = BackendSpec::parse(&self.spec) {
            let meta = std::fs::read(&path)
                .ok()
                .and_then(|b| read_palette_meta(&b, &path.display().to_string()).ok());
            if let Some(m) = meta {
                notes.push(format!(
                    "palette file {}: {}-bit indices, groups of {} rows, every projection matrix above {} elements palettized ({})",
                    path.display(),
                    m.bits,
                    m.group_size,
                    m.above_elements,
                    m.method
                ));
            }
        }
        let info = self.info().cloned();
        if let Engine::Unavailable { reason, .. } = &self.engine {
            notes.push(format!("the candidate cannot run here: {reason}"));
        }
        let reference = self.kind == SpecKind::Engine(BackendKind::Reference);
        if reference {
            notes.push(REFERENCE_NOTE.into());
        }
        let (kind_name, backend) = match (&self.kind, coreml) {
            (_, Some(_)) => ("coreml_bundle", info.as_ref().map(|_| format!("coreml:{}", cand.source))),
            (SpecKind::Engine(BackendKind::Reference), None) => {
                ("reference_runtime", Some(self.spec.clone()))
            }
            (SpecKind::Engine(_), None) => ("backend", Some(self.spec.clone())),
            (SpecKind::CoreMl(_) | SpecKind::Model, None) => ("checkpoint", Some("portable:f32".to_string())),
        };
        let fingerprint = match (coreml, &info) {
            (Some(c), _) => c
                .package
                .parent()
                .and_then(|d| std::fs::read(d.join("coreml_config.json")).ok())
                .map(|b| sha256_hex(&b)),
            (None, Some(i)) => Some(i.fingerprint.clone()),
            (None, None) => None,
        };
        if coreml.is_some() {
            notes.push("fingerprint: sha256 of coreml_config.json (which lists every file's sha256)".into());
        }
        SideInfo {
            spec: self.spec.clone(),
            kind: kind_name.into(),
            model: match BackendSpec::parse(&self.spec) {
                Ok(BackendSpec::Reference(r)) if reference => {
                    r.checkpoint().map_or_else(|| format!("the runtime's own ({})", r.kind), str::to_string)
                }
                _ => cand.source.clone(),
            },
            backend,
            precision: info
                .as_ref()
                .map(|i| i.precision.clone())
                .or_else(|| coreml.and_then(|c| c.precision.clone())),
            device: info.as_ref().map(|i| i.device.clone()),
            fingerprint,
            notes,
        }
    }

    /// The candidate's package sizes.
    pub fn package(&self) -> PackageSide {
        let spec = self.spec.as_str();
        if let Some(c) = &self.coreml {
            let quantization = manifest_quantization(c);
            return coreml_side(spec, c, quantization.as_deref(), &self.bundle.encoder, &self.bundle.agent);
        }
        match &self.engine {
            Engine::Runs(side) => match (side.weight_bytes, side.arm.backend.info().kind) {
                (Some(bytes), _) => portable_side(spec, bytes),
                (None, BackendKind::Mlx) => missing_side(
                    spec,
                    "not counted for MLX arms: MLX holds every tensor of the source checkpoint as one array in the graph dtype",
                ),
                (None, BackendKind::Reference) => missing_side(
                    spec,
                    "not counted for reference runtimes: the runtime loads its own checkpoint in its worker process",
                ),
                (None, _) => missing_side(spec, "a scripted backend has no weights"),
            },
            Engine::Unavailable { reason, .. } => missing_side(spec, &reason.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::ModelSpec;

    fn tiny() -> Bundle {
        Bundle::load(&ModelSpec::Builtin, |_| None).unwrap()
    }

    #[test]
    fn the_check_shape_is_one_row_of_max_len_tokens() {
        let b = tiny();
        let caps = check_shapes(Some(64), &b, None).unwrap();
        assert_eq!((caps.batch_size, caps.max_length, caps.min_length), (1, 64, 16));
        assert_eq!(caps.max_options, 255);
        let e = check_shapes(Some(b.agent.max_len + 1), &b, None).unwrap_err();
        assert!(
            e.kind() == crate::error::Kind::Input
                && crate::error::chain(&e).contains("longer than the model's max_len")
        );
        assert_eq!(check_shapes(Some(0), &b, None).unwrap_err().to_string(), "--max-len must be at least 1");
    }

    #[test]
    fn a_checkpoint_is_a_source_and_has_no_core_ml_package() {
        let b = tiny();
        check_source("builtin:tiny", &b).unwrap();
        assert!(coreml_of(&b).is_none());
    }

    #[test]
    fn a_backend_candidate_runs_on_the_source_model_with_its_sizes() {
        let ctx = Context::of_test_process();
        let b = tiny();
        let caps = check_shapes(None, &b, None).unwrap();
        let mut source = build_source(&b, "builtin:tiny", &caps, &ctx.settings).unwrap();
        assert_eq!(source.arm.host.shapes, caps);
        let kind = registry::classify("portable:w8");
        assert_eq!(candidate_model("portable:w8", &kind), None);
        let mut cand = Candidate::build("portable:w8", kind, &b, &caps, &ctx).unwrap();
        let info = cand.side_info();
        assert_eq!((info.kind.as_str(), info.backend.as_deref()), ("backend", Some("portable:w8")));
        // builtin:tiny has no matrix above the palettization threshold: the note says so.
        assert!(info.notes[0].contains("changed nothing"), "{:?}", info.notes);
        assert!(cand.package().weight_payload_bytes.is_some());
        assert!(source_package("builtin:tiny", &source).spec.ends_with("on portable:f32"));
        let engines = cand.engines(&mut source);
        assert!(engines.candidate.is_ok());
        let mock = Candidate::build("mock:ok", registry::classify("mock:ok"), &b, &caps, &ctx).unwrap();
        assert_eq!(mock.package().missing_reason.as_deref(), Some("a scripted backend has no weights"));
        let bad = Candidate::build("portable:w3", registry::classify("portable:w3"), &b, &caps, &ctx);
        assert!(
            crate::error::chain(&bad.err().unwrap()).starts_with("--backend portable:w3: unknown backend")
        );
    }

    #[test]
    fn a_coreml_candidate_must_name_a_bundle_folder() {
        let e = check_coreml_folder("coreml:/nowhere", &SpecKind::CoreMl("/nowhere".into())).unwrap_err();
        let empty = check_coreml_folder("coreml", &SpecKind::CoreMl(String::new())).unwrap_err();
        assert!(empty.to_string().contains("name the Core ML bundle folder"), "{empty}");
        assert!(e.to_string().ends_with("the folder /nowhere does not exist, so it is not a Core ML bundle (a folder with coreml_config.json)"), "{e}");
        assert!(check_coreml_folder("builtin:tiny", &SpecKind::Model).is_ok());
        assert_eq!(
            candidate_model("coreml:/b:cpu", &registry::classify("coreml:/b:cpu")).as_deref(),
            Some("/b:cpu")
        );
    }
}
