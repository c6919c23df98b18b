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
    /// Its point of a `speed` sweep (its own requests per call and threads), if any.
    pub sweep: Sweep,
}

/// An arm's point of a `speed` sweep (`--batch 1,2,4`, `--threads 1,2`): its own requests
/// per call and its engine's worker threads; `None` where the run's own apply (the plan's
/// batch, the engine's default threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Requests per call of this arm (a `--batch` list; a single `--batch N` is the plan's).
    pub requests_per_call: Option<usize>,
    /// Worker threads of this arm's engine (`--threads`).
    pub threads: Option<usize>,
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
    /// Requests this arm answers per call: its sweep's value, else the plan's `batch`.
    pub fn requests_per_call(&self, plan_batch: usize) -> usize {
        self.sweep.requests_per_call.unwrap_or(plan_batch)
    }

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
    /// Its point of a `speed` sweep ([`sweep`]); default outside one.
    pub sweep: Sweep,
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
        Ok(Self { name, spec, parsed, sweep: Sweep::default() })
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
        Ok(Self { name, spec, parsed, sweep: Sweep::default() })
    }
}

/// The most arms a `speed` sweep may make (`--arm` × `--batch` values × `--threads` values):
/// every arm runs in every balanced cycle, so the run's length grows with them.
pub const MAX_SWEEP_ARMS: usize = 32;

/// The most worker threads `--threads` gives an engine.
pub const MAX_THREADS: usize = 1024;

/// The arms of a `speed` run over its `--batch` and `--threads` lists, and the plan's batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Swept {
    /// Every arm × every batch value × every thread count, in that order (arm-major).
    pub arms: Vec<ArmSpec>,
    /// The plan's requests per call: the one `--batch` value, or 1 under a list (each arm then
    /// carries its own, [`Sweep::requests_per_call`]).
    pub batch: usize,
}

/// `arms` over the `--batch` values `batches` and the `--threads` values `threads` (empty: the
/// engine's default). One `--batch` value is the plan's batch and leaves the arms as they are;
/// a list makes every arm one arm per value, named `NAME-bN`. One `--threads` value sets the
/// arms' thread count; a list makes one arm per count, named `NAME-tN` (`NAME-bN-tM` under
/// both). Exit 2 for a value of 0, a value given twice (its arms would share a name), a name
/// given to two arms, `--threads` for an arm whose engine takes no thread count, or more than
/// [`MAX_SWEEP_ARMS`] arms.
pub fn sweep(arms: Vec<ArmSpec>, batches: &[usize], threads: &[usize]) -> Result<Swept, Error> {
    let batches = if batches.is_empty() { &[1][..] } else { batches };
    if batches.contains(&0) {
        return Err(Error::input(
            "--batch must be at least 1: a call answers 1 or more requests (1, the default, is one request per call)",
        ));
    }
    if threads.contains(&0) {
        return Err(Error::input("--threads must be at least 1: an engine runs on 1 or more worker threads"));
    }
    if let Some(n) = threads.iter().find(|&&n| n > MAX_THREADS) {
        return Err(Error::input(format!(
            "--threads {n} is more than {MAX_THREADS} worker threads; give counts up to the host's cores"
        )));
    }
    for (flag, values) in [("--batch", batches), ("--threads", threads)] {
        if let Some((i, v)) = values.iter().enumerate().find(|(i, v)| values[..*i].contains(v)) {
            let list = values.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
            return Err(Error::input(format!(
                "{flag} {list}: the value {v} is given twice (at {} and {}); give each value once",
                values.iter().position(|x| x == v).map_or(0, |p| p + 1),
                i + 1
            )));
        }
    }
    if !threads.is_empty() {
        if let Some(a) = arms.iter().find(|a| !a.parsed.takes_threads()) {
            return Err(Error::input(format!(
                "--threads: arm `{}` ({}) has no thread count to set (only portable arms take one); run it without --threads, or in a run of its own",
                a.name, a.spec
            )));
        }
    }
    // Every arm gets the same suffixes (`-bN`, `-tM`, `-bN-tM`), which read back uniquely
    // from the end of a name: with the arms' names and each list's values unique, so is every
    // name the sweep makes.
    unique_names(arms.iter().map(|a| (a.name.as_str(), a.spec.as_str())))?;
    let (batch_list, thread_list) = (batches.len() > 1, threads.len() > 1);
    let counts: Vec<Option<usize>> =
        if threads.is_empty() { vec![None] } else { threads.iter().copied().map(Some).collect() };
    let total = arms.len().saturating_mul(batches.len()).saturating_mul(counts.len());
    if total > MAX_SWEEP_ARMS {
        return Err(Error::input(format!(
            "--batch/--threads: {} arm(s) × {} batch value(s) × {} thread count(s) make {total} arms, more than the {MAX_SWEEP_ARMS} a run compares; sweep fewer values or arms",
            arms.len(),
            batches.len(),
            counts.len()
        )));
    }
    let mut out = Vec::with_capacity(total);
    for arm in &arms {
        for &b in batches {
            for &t in &counts {
                let mut name = arm.name.clone();
                if batch_list {
                    name.push_str(&format!("-b{b}"));
                }
                if let (true, Some(t)) = (thread_list, t) {
                    name.push_str(&format!("-t{t}"));
                }
                let sweep = Sweep { requests_per_call: batch_list.then_some(b), threads: t };
                out.push(ArmSpec { name, sweep, ..arm.clone() });
            }
        }
    }
    let batch = if batch_list { 1 } else { batches[0] };
    Ok(Swept { arms: out, batch })
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
        Arm { name: name.to_string(), spec: spec.to_string(), backend, host, sweep: Sweep::default() }
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
    /// that takes no shape request keeps its own batch size, which the caller checks. The arm
    /// keeps its spec's [`Sweep`], its engine built with the sweep's threads.
    pub fn build_fixed_rows(
        bundle: &'b Bundle,
        arm: &ArmSpec,
        length: usize,
        rows: usize,
        context: &Context,
    ) -> Result<Self, Error> {
        let shapes = ShapeCaps { batch_size: rows.max(1), ..fixed_shapes(length) };
        let threads = arm.sweep.threads;
        let mut built =
            registry::build_threaded(&arm.parsed, &arm.spec, bundle, Some(shapes), threads, context)
                .map(|backend| {
                    let shapes = backend.info().shapes.clone();
                    Self::around(bundle, &arm.name, &arm.spec, backend, shapes)
                })
                .map_err(|e| build_error(&arm.name, e))?;
        built.sweep = arm.sweep;
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

    fn specs(texts: &[&str]) -> Vec<ArmSpec> {
        texts.iter().map(|t| ArmSpec::parse_named(t).unwrap()).collect()
    }

    fn names(s: &Swept) -> Vec<&str> {
        s.arms.iter().map(|a| a.name.as_str()).collect()
    }

    #[test]
    fn one_batch_value_leaves_the_arms_as_they_are() {
        let arms = specs(&["a=portable:f32", "m=mock:ok"]);
        for batch in [1, 4] {
            let s = sweep(arms.clone(), &[batch], &[]).unwrap();
            assert_eq!((s.arms.as_slice(), s.batch), (arms.as_slice(), batch));
        }
        // No --batch at all is one request per call.
        assert_eq!(sweep(arms.clone(), &[], &[]).unwrap(), Swept { arms, batch: 1 });
    }

    #[test]
    fn a_batch_list_makes_one_arm_per_value_named_after_it() {
        let s = sweep(specs(&["a=portable:f32", "m=mock:ok"]), &[1, 2, 4], &[]).unwrap();
        assert_eq!(names(&s), ["a-b1", "a-b2", "a-b4", "m-b1", "m-b2", "m-b4"]);
        assert_eq!(s.batch, 1, "each arm carries its own value");
        let per: Vec<Option<usize>> = s.arms.iter().map(|a| a.sweep.requests_per_call).collect();
        assert_eq!(per, [Some(1), Some(2), Some(4), Some(1), Some(2), Some(4)]);
        assert!(s.arms.iter().all(|a| a.sweep.threads.is_none()));
        assert_eq!(
            (s.arms[4].spec.as_str(), &s.arms[4].parsed),
            ("mock:ok", &specs(&["m=mock:ok"])[0].parsed)
        );
    }

    #[test]
    fn threads_set_or_sweep_the_portable_engine_and_both_lists_cross() {
        let one = sweep(specs(&["a=portable:f32"]), &[1], &[2]).unwrap();
        assert_eq!(names(&one), ["a"]);
        assert_eq!(one.arms[0].sweep, Sweep { requests_per_call: None, threads: Some(2) });
        let list = sweep(specs(&["a=portable:f32"]), &[1], &[1, 2]).unwrap();
        assert_eq!(names(&list), ["a-t1", "a-t2"]);
        assert_eq!(list.arms[1].sweep.threads, Some(2));
        let both = sweep(specs(&["a=portable:f32", "b=portable:f16"]), &[1, 4], &[1, 2]).unwrap();
        assert_eq!(
            names(&both),
            ["a-b1-t1", "a-b1-t2", "a-b4-t1", "a-b4-t2", "b-b1-t1", "b-b1-t2", "b-b4-t1", "b-b4-t2"]
        );
        assert_eq!(both.arms[6].sweep, Sweep { requests_per_call: Some(4), threads: Some(1) });
        // A batch list with one thread count: named after the batch only.
        let b = sweep(specs(&["a=portable:f32"]), &[1, 2], &[3]).unwrap();
        assert_eq!(names(&b), ["a-b1", "a-b2"]);
        assert!(b.arms.iter().all(|a| a.sweep.threads == Some(3)));
    }

    #[test]
    fn a_sweep_that_cannot_run_is_refused_saying_why() {
        let refused = |arms: &[&str], batch: &[usize], threads: &[usize]| {
            let e = sweep(specs(arms), batch, threads).unwrap_err();
            assert_eq!(e.kind(), crate::error::Kind::Input, "{e}");
            e.to_string()
        };
        let e = refused(&["a=portable:f32", "m=mock:ok"], &[1], &[1, 2]);
        assert!(e.starts_with("--threads: arm `m` (mock:ok) has no thread count"), "{e}");
        let e = refused(&["a=portable:f32"], &[2, 0], &[]);
        assert!(e.starts_with("--batch must be at least 1"), "{e}");
        let e = refused(&["a=portable:f32"], &[1], &[0]);
        assert!(e.starts_with("--threads must be at least 1"), "{e}");
        let e = refused(&["a=portable:f32"], &[1], &[MAX_THREADS + 1]);
        assert!(e.contains("more than 1024 worker threads"), "{e}");
        let e = refused(&["a=portable:f32"], &[1, 2, 1], &[]);
        assert!(e.starts_with("--batch 1,2,1: the value 1 is given twice (at 1 and 3)"), "{e}");
        let e = refused(&["a=portable:f32"], &[1], &[2, 2]);
        assert!(e.starts_with("--threads 2,2: the value 2 is given twice"), "{e}");
        // Two arms of one name would make two arms of every swept name.
        let e = refused(&["a=portable:f32", "a=portable:f16"], &[1, 2], &[]);
        assert!(e.contains("the name `a` is used twice"), "{e}");
        // An arm already named like a swept one is suffixed too: no two names meet.
        let s = sweep(specs(&["a=portable:f32", "a-b2=portable:f16"]), &[1, 2], &[]).unwrap();
        assert_eq!(names(&s), ["a-b1", "a-b2", "a-b2-b1", "a-b2-b2"]);
        // 4 arms × 3 batches × 3 thread counts = 36 > 32; 32 itself runs.
        let four = ["a=portable:f32", "b=portable:f16", "c=portable:bf16", "d=portable:w8"];
        let e = refused(&four, &[1, 2, 4], &[1, 2, 4]);
        assert!(
            e.contains("4 arm(s) × 3 batch value(s) × 3 thread count(s) make 36 arms, more than the 32"),
            "{e}"
        );
        assert_eq!(sweep(specs(&four), &[1, 2, 4, 8], &[1, 2]).unwrap().arms.len(), MAX_SWEEP_ARMS);
    }

    #[test]
    fn a_fixed_arm_runs_exactly_its_length_with_its_host() {
        let bundle = Bundle::load(&crate::laya::bundle::ModelSpec::Builtin, |_| None).unwrap();
        let spec = ArmSpec::new("a".into(), "portable:f32".into()).unwrap();
        let arm = Arm::build_fixed(&bundle, &spec, 64, &Context::of_test_process()).unwrap();
        assert_eq!((arm.name.as_str(), arm.spec.as_str()), ("a", "portable:f32"));
        assert_eq!(arm.backend.info().shapes.max_length, 64);
        assert_eq!(arm.backend.info().shapes, fixed_shapes(64));
        assert_eq!(arm.sweep, Sweep::default());
        // A swept arm keeps its point and its engine runs the sweep's threads.
        let swept = ArmSpec { sweep: Sweep { requests_per_call: Some(2), threads: Some(1) }, ..spec };
        let arm = Arm::build_fixed(&bundle, &swept, 64, &Context::of_test_process()).unwrap();
        assert_eq!(arm.sweep, swept.sweep);
        assert_eq!(arm.requests_per_call(4), 2);
        assert!(arm.backend.info().device.starts_with("cpu (1 threads"), "{}", arm.backend.info().device);
        let mock = ArmSpec {
            sweep: Sweep { requests_per_call: None, threads: Some(2) },
            ..ArmSpec::parse_named("m=mock:ok").unwrap()
        };
        let e = Arm::build_fixed(&bundle, &mock, 64, &Context::of_test_process()).err().unwrap();
        assert!(crate::error::chain(&e).contains("takes no thread count"), "{}", crate::error::chain(&e));
    }
}
