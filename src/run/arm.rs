//! The arms of a run: [`Arm`], one arm under test, and [`Arm::answer`], the one request-level
//! seam; `NAME=SPEC` parsed once for every command, and [`Arm::build`], the one
//! place an arm is made: the backend from its spec, and the shared host path it runs behind,
//! with the backend's host hints (the MLX prompt-prefix cache) applied by
//! [`registry::host_for`] ([`Arm::around`] when the backend was built elsewhere).

use serde_json::Value;

use crate::backend::registry::{self, portable_precisions, BackendSpec, RegistryError};
use crate::backend::{Backend, Context, ShapeCaps, ShapeMode};
use crate::laya::bundle::Bundle;
use crate::laya::host::{CallOptions, Host, HostError, StateResult};

use crate::error::{Classify, Error};

/// One arm under test: a name, its backend, and the host packed for that backend's shapes.
pub struct Arm<'t> {
    /// User-given name (`A`, `ane`, `f32`).
    pub name: String,
    /// The spec it was built from.
    pub spec: String,
    /// The engine.
    pub backend: Box<dyn Backend>,
    /// The shared host path for this backend's shapes.
    pub host: Host<'t>,
}

/// What one request returned: the result and, for an arm that answers whole requests in a
/// worker (a reference runtime), the runtime's own duration in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    /// The result.
    pub result: StateResult,
    /// The runtime's own time, ns (`None` for our arms: the call is the boundary).
    pub runtime_ns: Option<u64>,
}

impl Arm<'_> {
    /// Answer one request: our host path around the backend, or the reference runtime's worker
    /// when the backend answers whole requests. Every command answers a request through here.
    #[inline]
    pub fn answer(
        &mut self,
        state: &Value,
        questions: &Value,
        options: &CallOptions,
    ) -> Result<Answered, HostError> {
        if let Some(worker) = self.backend.answers_requests() {
            let (result, runtime_ns) = worker.answer(state, questions, options)?;
            return Ok(Answered { result, runtime_ns });
        }
        let result = self.host.predict(self.backend.as_mut(), state, questions, options, None)?;
        Ok(Answered { result, runtime_ns: None })
    }
}

/// An arm as the user named it: `NAME=SPEC`, the spec parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSpec {
    /// The arm's name (`f32`, `ane`, `ours`).
    pub name: String,
    /// The spec text as given (`portable:f32`, `mlx:fp16:builtin:tiny`).
    pub spec: String,
    /// The parsed spec.
    pub parsed: BackendSpec,
}

/// `NAME=SPEC` as (name, spec); exit 2 naming the flag when either side is empty or there is
/// no `=`.
pub fn split_named(text: &str) -> Result<(String, String), Error> {
    let (name, spec) =
        text.split_once('=').filter(|(n, s)| !n.is_empty() && !s.is_empty()).ok_or_else(|| {
            Error::input(format!("--arm `{text}`: write it as NAME=SPEC, e.g. --arm f32=portable:f32"))
        })?;
    Ok((name.to_string(), spec.to_string()))
}

/// `SPEC` or `NAME=SPEC` as (name, spec); an unnamed arm is named after its spec. A name has
/// no `:`, so `mock:fail-after=3` is a spec, not a name.
pub fn split_single(text: &str) -> Result<(String, String), Error> {
    split_flagged("--arm", text)
}

/// [`split_single`] for the flag `flag` (`--arm`, `--backend`), which its message names.
fn split_flagged(flag: &str, text: &str) -> Result<(String, String), Error> {
    let (name, spec) = match text.split_once('=') {
        Some((n, s)) if !n.contains(':') => (n, s),
        _ => (text, text),
    };
    if name.is_empty() || spec.is_empty() {
        return Err(Error::input(format!(
            "{flag} `{text}`: give a backend spec, e.g. {flag} portable:f32 (or NAME=SPEC)"
        )));
    }
    Ok((name.to_string(), spec.to_string()))
}

/// Exit 2 when a name is given to two arms (two arms without a name and of the same spec
/// share the spec as their name, and are told apart by naming them).
fn unique_names<'a>(arms: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), Error> {
    let mut seen: Vec<&str> = Vec::new();
    for (name, spec) in arms {
        if seen.contains(&name) {
            return Err(Error::input(if name == spec {
                format!(
                    "--arm: two arms without a name run `{spec}` (an unnamed arm is named after its \
                     spec); name them, e.g. --arm a={spec} --arm b={spec}"
                )
            } else {
                format!("--arm: the name `{name}` is used twice; give every arm its own name")
            }));
        }
        seen.push(name);
    }
    Ok(())
}

/// Several `NAME=SPEC` texts as (name, spec) pairs; exit 2 on a malformed or repeated name.
pub fn split_all(texts: &[String]) -> Result<Vec<(String, String)>, Error> {
    let out = texts.iter().map(|t| split_named(t)).collect::<Result<Vec<_>, _>>()?;
    unique_names(out.iter().map(|(n, s)| (n.as_str(), s.as_str())))?;
    Ok(out)
}

impl ArmSpec {
    /// A named arm from its spec text (exit 2 when the spec is not one this build knows).
    pub fn new(name: String, spec: String) -> Result<Self, Error> {
        let parsed = BackendSpec::parse(&spec).map_err(|e| Error::input(e.to_string()))?;
        Ok(Self { name, spec, parsed })
    }

    /// The arms given (each name once, exit 2 otherwise), or every default portable precision
    /// when none is given.
    pub fn defaults_or(given: &[ArmSpec]) -> Result<Vec<Self>, Error> {
        if given.is_empty() {
            return portable_precisions()
                .iter()
                .map(|p| Self::new(p.name().to_string(), format!("portable:{}", p.name())))
                .collect();
        }
        unique_names(given.iter().map(|a| (a.name.as_str(), a.spec.as_str())))?;
        Ok(given.to_vec())
    }

    /// `NAME=SPEC` as the user would type it again (an unnamed arm's name is its spec).
    pub fn text(&self) -> String {
        format!("{}={}", self.name, self.spec)
    }

    /// One `--arm [NAME=]SPEC` ([`split_single`]: an arm without a name is named after its
    /// spec), the spec error naming the flag (and the `NAME=SPEC` form when no name was given,
    /// in case the text was meant as one).
    pub fn parse_named(text: &str) -> Result<Self, Error> {
        Self::parse_flag("--arm", text)
    }

    /// [`ArmSpec::parse_named`] for the flag `flag` (`--arm`, or `--backend` of a command that
    /// runs one), which its messages name.
    pub fn parse_flag(flag: &str, text: &str) -> Result<Self, Error> {
        let (name, spec) = split_flagged(flag, text)?;
        let parsed = BackendSpec::parse(&spec).map_err(|e| {
            let form = if name == spec { " (SPEC or NAME=SPEC)" } else { "" };
            Error::input(format!("{flag} `{text}`{form}")).because(e)
        })?;
        Ok(Self { name, spec, parsed })
    }
}

/// One question row of `length` tokens at a time: the shape every `speed`, `energy` and
/// `trace run` arm runs.
pub fn fixed_shapes(length: usize) -> ShapeCaps {
    ShapeCaps {
        batch_size: 1,
        max_length: length,
        min_length: length,
        max_options: 32,
        mode: ShapeMode::Fixed,
    }
}

/// An arm that cannot be built, of its error's kind (a reference runtime that died, hung or
/// wrote garbage while it loaded failed the run; anything else is a bad input).
pub fn build_error(name: &str, e: RegistryError) -> Error {
    Error::new(e.kind(), format!("arm `{name}`")).because(e)
}

impl<'b> Arm<'b> {
    /// Build an arm: the backend for `bundle` (at `shapes` where the backend takes a shape
    /// request, else its own), and the host path at the backend's shapes with its host hints.
    pub fn build(
        bundle: &'b Bundle,
        name: &str,
        spec: &str,
        parsed: &BackendSpec,
        shapes: Option<ShapeCaps>,
        context: &Context,
    ) -> Result<Self, RegistryError> {
        let backend = registry::build(parsed, spec, bundle, shapes, context)?;
        let shapes = backend.info().shapes.clone();
        Ok(Self::around(bundle, name, spec, backend, shapes))
    }

    /// An arm around a backend already built, its host path at `host_shapes` with the
    /// backend's host hints. [`Arm::build`] hosts at the backend's own shapes; `convert-check`
    /// builds the portable engine itself (to keep its weight sizes and palettization report)
    /// and builds rows at the check's shape.
    pub fn around(
        bundle: &'b Bundle,
        name: &str,
        spec: &str,
        backend: Box<dyn Backend>,
        host_shapes: ShapeCaps,
    ) -> Self {
        let host = registry::host_for(bundle, host_shapes, backend.info());
        Arm { name: name.to_string(), spec: spec.to_string(), backend, host }
    }

    /// Build an arm that runs exactly `length` tokens per row (exit 2 when it cannot).
    pub fn build_fixed(
        bundle: &'b Bundle,
        arm: &ArmSpec,
        length: usize,
        context: &Context,
    ) -> Result<Self, Error> {
        Self::build_fixed_rows(bundle, arm, length, 1, context)
    }

    /// [`Self::build_fixed`] asking for `rows` rows per forward (`speed --batch N`); a backend
    /// that takes no shape request keeps its own batch size, which the caller checks.
    pub fn build_fixed_rows(
        bundle: &'b Bundle,
        arm: &ArmSpec,
        length: usize,
        rows: usize,
        context: &Context,
    ) -> Result<Self, Error> {
        let shapes = ShapeCaps { batch_size: rows.max(1), ..fixed_shapes(length) };
        let built = Self::build(bundle, &arm.name, &arm.spec, &arm.parsed, Some(shapes), context)
            .map_err(|e| build_error(&arm.name, e))?;
        let caps = &built.backend.info().shapes;
        if caps.max_length != length
            || caps.mode != ShapeMode::Fixed && !matches!(caps.mode, ShapeMode::Range)
        {
            return Err(Error::input(format!(
                "arm `{}` cannot run length {length} (it runs {})",
                arm.name, caps.max_length
            )));
        }
        Ok(built)
    }

    /// What a reader of this arm's results must know (nothing was palettized, ...).
    pub fn notes(&self) -> &[String] {
        &self.backend.info().notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_specs_are_split_once_for_every_command() {
        assert_eq!(split_named("a=portable:f32").unwrap(), ("a".into(), "portable:f32".into()));
        // The spec may itself hold `=`.
        assert_eq!(split_named("m=mock:fail-after=3").unwrap(), ("m".into(), "mock:fail-after=3".into()));
        for bad in ["portable:f32", "=portable:f32", "a="] {
            let e = split_named(bad).unwrap_err().to_string();
            assert!(e.contains("NAME=SPEC") && e.contains(bad), "{e}");
        }
        assert_eq!(split_single("portable:f16").unwrap(), ("portable:f16".into(), "portable:f16".into()));
        assert_eq!(split_single("mock:fail-after=3").unwrap().0, "mock:fail-after=3");
        assert_eq!(split_single("x=portable:f16").unwrap(), ("x".into(), "portable:f16".into()));
        assert!(split_single("x=").is_err());
        let twice = split_all(&["a=portable:f32".into(), "a=portable:f16".into()]).unwrap_err();
        assert!(twice.to_string().contains("used twice"), "{twice}");
    }

    #[test]
    fn the_default_arms_are_the_portable_precisions() {
        let arms = ArmSpec::defaults_or(&[]).unwrap();
        let names: Vec<&str> = arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["f32", "f16", "bf16", "w8"]);
        assert_eq!(arms[3].spec, "portable:w8");
        let a = ArmSpec::parse_named("a=portable:f32").unwrap();
        assert_eq!(a.text(), "a=portable:f32");
        let twice = ArmSpec::defaults_or(&[a.clone(), a]).unwrap_err();
        assert!(twice.to_string().contains("`a` is used twice"), "{twice}");
        // Without a name an arm is named after its spec; two such arms of one spec are refused
        // with the way out.
        let unnamed = ArmSpec::parse_named("portable:f16").unwrap();
        assert_eq!((unnamed.name.as_str(), unnamed.spec.as_str()), ("portable:f16", "portable:f16"));
        let named = ArmSpec::parse_named("b=portable:f16").unwrap();
        assert_eq!(ArmSpec::defaults_or(&[unnamed.clone(), named]).unwrap().len(), 2);
        let same = ArmSpec::defaults_or(&[unnamed.clone(), unnamed]).unwrap_err();
        assert!(
            same.kind() == crate::error::Kind::Input
                && same.to_string().contains("two arms without a name run `portable:f16`")
                && same.to_string().contains("--arm a=portable:f16 --arm b=portable:f16"),
            "{same}"
        );
        let e = ArmSpec::parse_flag("--backend", "nospec").unwrap_err();
        assert!(crate::error::chain(&e).starts_with("--backend `nospec` (SPEC or NAME=SPEC): "), "{e}");
        let e = ArmSpec::parse_flag("--backend", "=portable:f32").unwrap_err();
        assert!(e.to_string().contains("e.g. --backend portable:f32 (or NAME=SPEC)"), "{e}");
        for bad in ["=portable:f32", "x=", "x=nope:1"] {
            assert_eq!(ArmSpec::parse_named(bad).unwrap_err().kind(), crate::error::Kind::Input, "{bad}");
        }
        let e = ArmSpec::parse_named("a=nope:x").unwrap_err();
        assert!(
            e.kind() == crate::error::Kind::Input
                && crate::error::chain(&e).starts_with("--arm `a=nope:x`: "),
            "{e}"
        );
    }

    #[test]
    fn a_fixed_arm_runs_exactly_its_length_with_its_host() {
        let bundle = Bundle::load(&crate::laya::bundle::ModelSpec::Builtin, |_| None).unwrap();
        let spec = ArmSpec::new("a".into(), "portable:f32".into()).unwrap();
        let arm = Arm::build_fixed(&bundle, &spec, 64, &Context::of_test_process()).unwrap();
        assert_eq!((arm.name.as_str(), arm.spec.as_str()), ("a", "portable:f32"));
        assert_eq!(arm.backend.info().shapes.max_length, 64);
        assert_eq!(arm.backend.info().shapes, fixed_shapes(64));
    }
}
