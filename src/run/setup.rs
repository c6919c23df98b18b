//! A fixed-length run's set-up: the workload it cycles through and its arms, every one built
//! for the same padded length, checked before anything is measured.

use crate::backend::Context;
use crate::laya::bundle::Bundle;
use crate::laya::host::Host;
use crate::laya::workload::Built;

use super::arm::{fixed_shapes, Arm, ArmSpec};
use super::workload::{batch_mismatch, Workload, WorkloadPlan};
use crate::error::Error;

/// The arms, built for one fixed length, and the workload they run.
pub struct Setup<'b> {
    /// Arms, baseline first.
    pub arms: Vec<Arm<'b>>,
    /// The workload as built (token counts per row).
    pub built: Built,
    /// The workload the timed loop cycles through.
    pub workload: Workload,
    /// What a reader must see before the run: each arm's notes (`arm `a` (spec): note`).
    pub notes: Vec<String>,
    /// The checkpoint's load warnings.
    pub warnings: Vec<String>,
}

impl<'b> Setup<'b> {
    /// Build every arm at the plan's length and the workload (exit 2 for anything that cannot
    /// run).
    pub fn build(
        bundle: &'b Bundle,
        specs: &[ArmSpec],
        plan: &WorkloadPlan,
        context: &Context,
    ) -> Result<Self, Error> {
        Self::build_batched(bundle, specs, plan, 1, context)
    }

    /// [`Self::build`] for calls of `batch` requests each (`speed --batch N`; an arm of a
    /// `--batch 1,2,4` sweep at its own [`requests per call`](super::arm::Sweep)): the
    /// workload must ask the same questions with the same options in every request, and every
    /// arm is asked for a shape of its requests per call × questions-per-request rows per
    /// forward; an arm that cannot hold them (a fixed shape, a runtime answering one request
    /// per call) is refused (exit 2), never run one request at a time instead. An arm at 1
    /// request per call is built as at batch 1; with every arm at 1 this is [`Self::build`].
    pub fn build_batched(
        bundle: &'b Bundle,
        specs: &[ArmSpec],
        plan: &WorkloadPlan,
        batch: usize,
        context: &Context,
    ) -> Result<Self, Error> {
        let per_arm = |spec: &ArmSpec| spec.sweep.requests_per_call.unwrap_or(batch);
        if batch == 0 || specs.iter().any(|s| per_arm(s) == 0) {
            return Err(Error::input("--batch must be at least 1: a call answers 1 or more requests"));
        }
        if plan.length > bundle.agent.max_len {
            return Err(Error::input(format!(
                "--length {} is longer than the model's max_len {}: the host never builds a row that long; pass --length {} or less",
                plan.length, bundle.agent.max_len, bundle.agent.max_len
            )));
        }
        if specs.iter().any(|s| per_arm(s) > 1) {
            return Self::batched(bundle, specs, plan, batch, context);
        }
        let mut arms: Vec<Arm<'_>> = Vec::with_capacity(specs.len());
        let mut notes = Vec::new();
        for spec in specs {
            let arm = Arm::build_fixed(bundle, spec, plan.length, context)?;
            notes.extend(arm.notes().iter().map(|n| format!("arm `{}` ({}): {n}", spec.name, spec.spec)));
            arms.push(arm);
        }
        let first = arms.first().ok_or_else(|| Error::input("a run needs at least one arm"))?;
        let (built, workload) = plan.build(&first.host)?;
        let warnings = first.host.load_warnings();
        refuse_options(&mut arms, &workload)?;
        Ok(Setup { arms, built, workload, notes, warnings })
    }

    /// The arm of [`Self::build_batched`] where some arm answers more than one request per
    /// call (`batch`, or its own in a sweep), which has checked the length and every value.
    fn batched(
        bundle: &'b Bundle,
        specs: &[ArmSpec],
        plan: &WorkloadPlan,
        batch: usize,
        context: &Context,
    ) -> Result<Self, Error> {
        if specs.is_empty() {
            return Err(Error::input("a run needs at least one arm"));
        }
        let per_arm = |spec: &ArmSpec| spec.sweep.requests_per_call.unwrap_or(batch);
        // Named in messages: the plan's batch, or the sweep's largest value.
        let largest = specs.iter().map(per_arm).max().unwrap_or(batch);
        // The rows per request come from the workload, so it is built first, on a plain host
        // at the run's length (the rows do not depend on the arm).
        let host = Host::new(&bundle.tokenizer, &bundle.agent, fixed_shapes(plan.length));
        let (built, workload) = plan.build(&host)?;
        if let Some(k) = batch_mismatch(&workload) {
            return Err(Error::input(format!(
                "--batch {largest}: request {k} of workload `{}` asks other questions or options than request 0, and one packed forward answers one set of questions; run this workload with --batch 1, or give --batch a workload whose requests share their questions",
                workload.name
            )));
        }
        let per_request = built.tokens_per_row.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let shapes = fixed_shapes(plan.length);
        let (hidden, inter) = (bundle.encoder.hidden_size, bundle.encoder.intermediate_size);
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let bytes = |requests: usize| {
            crate::backend::portable::forward_scratch_bytes(
                hidden,
                inter,
                requests.checked_mul(per_request)?,
                plan.length,
                shapes.max_options,
                workers,
            )
        };
        // Every arm's buffers at the largest value: an upper bound of a sweep's.
        check_memory(largest, specs.len(), bytes, crate::host::available_memory_bytes())?;
        let mut arms: Vec<Arm<'_>> = Vec::with_capacity(specs.len());
        let mut notes = Vec::new();
        for spec in specs {
            let batch = per_arm(spec);
            if batch == 1 {
                // One request per call, one row per forward: as a run at batch 1 builds it.
                let arm = Arm::build_fixed(bundle, spec, plan.length, context)?;
                notes.extend(arm.notes().iter().map(|n| format!("arm `{}` ({}): {n}", spec.name, spec.spec)));
                arms.push(arm);
                continue;
            }
            let rows = batch.checked_mul(per_request).ok_or_else(|| {
                Error::input(format!(
                    "--batch {batch}: {batch} requests of {per_request} question row(s) are more rows than this machine can count; pass a smaller --batch"
                ))
            })?;
            let mut arm = Arm::build_fixed_rows(bundle, spec, plan.length, rows, context)?;
            if arm.backend.answers_requests().is_some() {
                return Err(Error::input(format!(
                    "--batch {batch}: arm `{}` ({}) answers one request per call in its worker, so it cannot answer {batch} requests in one forward; run it with --batch 1",
                    spec.name, spec.spec
                )));
            }
            check_rows(spec, arm.backend.info().shapes.batch_size, batch, per_request)?;
            notes.extend(arm.notes().iter().map(|n| format!("arm `{}` ({}): {n}", spec.name, spec.spec)));
            arms.push(arm);
        }
        refuse_options(&mut arms, &workload)?;
        let warnings = host.load_warnings();
        Ok(Setup { arms, built, workload, notes, warnings })
    }
}

/// Exit 2, before anything is measured, when a runtime arm cannot take a per-call option a
/// request of the workload passes (laya-cuda takes none): naming the arm, the request and the
/// option, instead of failing at its first call.
fn refuse_options(arms: &mut [Arm<'_>], workload: &Workload) -> Result<(), Error> {
    for arm in arms {
        let options = workload.requests.iter().map(|r| &r.2);
        if let Some((i, why)) = crate::backend::first_refusal(arm.backend.as_mut(), options) {
            return Err(Error::input(format!(
                "arm `{}` ({}), request {i} of workload `{}`: {why}",
                arm.name, arm.spec, workload.name
            )));
        }
    }
    Ok(())
}

/// Exit 2 when `arms` arms' working buffers for a forward of `batch` requests (`bytes(n)`: one
/// arm's for `n` requests, `None` past u64) exceed half the memory `available` (unchecked where
/// the OS gives none). Refused before any arm is built, so a batch far beyond the machine is an
/// error naming the batch that fits, not a machine swapping until the kernel kills the run.
pub fn check_memory(
    batch: usize,
    arms: usize,
    bytes: impl Fn(usize) -> Option<u64>,
    available: Option<u64>,
) -> Result<(), Error> {
    let Some(available) = available else { return Ok(()) };
    // half of it: the rest is for the weights, the host path and everything else running
    let budget = available / 2;
    let arms = arms.max(1) as u64;
    let total = |n: usize| bytes(n).and_then(|b| b.checked_mul(arms));
    let fit = |n: usize| total(n).is_some_and(|b| b <= budget);
    if fit(batch) {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let needs =
        total(batch).map_or("more than 2^64 bytes".to_string(), |n| format!("about {:.1} GiB", gib(n)));
    // the largest batch that fits (the buffers grow with the batch): `fits` fits, `batch` not
    let (mut fits, mut over) = (0, batch);
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        if fit(mid) {
            fits = mid;
        } else {
            over = mid;
        }
    }
    let instead =
        advice(fits, "even one request per call does not fit: free memory or run fewer arms", "run");
    Err(Error::input(format!(
        "--batch {batch}: one packed forward needs {needs} of working memory for its activations and attention masks ({arms} arm(s), each holding its own), more than half of the {:.1} GiB available (the rest is for the weights, the host and the system); {instead}",
        gib(available)
    )))
}

/// What to do about a batch too large: `run --batch MOST or less`, or `none` when not even one
/// request fits.
fn advice(most: usize, none: &str, run: &str) -> String {
    if most == 0 {
        none.to_string()
    } else {
        format!("{run} --batch {most} or less")
    }
}

/// Exit 2 when an arm whose forward holds `holds` rows cannot answer `batch` requests of
/// `per_request` question rows in one forward (its shape is the backend's own, not the one
/// asked for); never a silent fall-back to fewer requests per forward.
pub fn check_rows(spec: &ArmSpec, holds: usize, batch: usize, per_request: usize) -> Result<(), Error> {
    let rows = batch.saturating_mul(per_request);
    if holds >= rows {
        return Ok(());
    }
    let most = holds / per_request.max(1);
    let instead = advice(most, "it cannot answer even one request in one forward", "run it with");
    Err(Error::input(format!(
        "--batch {batch}: arm `{}` ({}) holds {holds} row(s) per forward, and {batch} requests of {per_request} question row(s) need {rows}; its shape is fixed by the backend, so {instead}",
        spec.name, spec.spec
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Classify;
    use crate::laya::bundle::ModelSpec;

    fn plan(tokens: usize, length: usize) -> WorkloadPlan {
        WorkloadPlan { name: "invoice".into(), tokens, length }
    }

    #[test]
    fn a_batched_arm_must_hold_every_row_of_the_batch() {
        let spec = ArmSpec::parse_named("ane=portable:f32").unwrap();
        // 4 requests of 3 questions: 12 rows.
        assert!(check_rows(&spec, 12, 4, 3).is_ok());
        assert!(check_rows(&spec, 16, 4, 3).is_ok());
        let e = check_rows(&spec, 8, 4, 3).unwrap_err();
        assert!(e.kind() == crate::error::Kind::Input, "{e}");
        let text = e.to_string();
        assert!(text.contains("--batch 4: arm `ane` (portable:f32) holds 8 row(s)"), "{text}");
        assert!(text.contains("need 12") && text.contains("--batch 2 or less"), "{text}");
        // A fixed B=1 shape cannot hold a request of 3 questions at all.
        let one = check_rows(&spec, 1, 2, 3).unwrap_err().to_string();
        assert!(one.contains("cannot answer even one request"), "{one}");
    }

    #[test]
    fn a_batch_whose_buffers_do_not_fit_the_memory_is_refused_naming_one_that_does() {
        // 1 MiB per request and arm.
        let mib = |n: usize| (n as u64).checked_mul(1 << 20);
        assert!(check_memory(8, 2, mib, Some(32 << 20)).is_ok());
        assert!(check_memory(9, 2, mib, Some(32 << 20)).is_err(), "18 MiB is over half of 32");
        assert!(check_memory(1 << 40, 2, mib, None).is_ok(), "no figure from the OS: not checked");
        let e = check_memory(100, 2, mib, Some(32 << 20)).unwrap_err();
        assert!(e.kind() == crate::error::Kind::Input, "{e}");
        let text = e.to_string();
        // 100 requests × 2 arms = 200 MiB; 8 × 2 MiB = 16 MiB is the most within half of 32.
        assert!(text.starts_with("--batch 100: one packed forward needs about 0.2 GiB"), "{text}");
        assert!(text.contains("2 arm(s)") && text.contains("run --batch 8 or less"), "{text}");
        let one = check_memory(4, 1, mib, Some(1 << 20)).unwrap_err().to_string();
        assert!(one.contains("even one request per call does not fit"), "{one}");
        let past = check_memory(usize::MAX, 1, mib, Some(1 << 30)).unwrap_err().to_string();
        assert!(past.contains("more than 2^64 bytes"), "{past}");
    }

    #[test]
    fn a_batched_setup_asks_every_arm_for_the_batch_rows_and_refuses_mixed_questions() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let ctx = Context::of_test_process();
        let specs =
            [ArmSpec::parse_named("a=portable:f32").unwrap(), ArmSpec::parse_named("m=mock").unwrap()];
        // The invoice workload asks one question per request: 4 requests, 4 rows per forward.
        let setup = Setup::build_batched(&bundle, &specs, &plan(91, 96), 4, &ctx).unwrap();
        for arm in &setup.arms {
            assert_eq!(arm.backend.info().shapes.batch_size, 4, "{}", arm.name);
            assert_eq!(arm.host.shapes.batch_size, 4, "{}", arm.name);
        }
        // At batch 1 the arms keep the one-row shape every run had.
        let one = Setup::build_batched(&bundle, &specs, &plan(91, 96), 1, &ctx).unwrap();
        assert!(one.arms.iter().all(|a| a.backend.info().shapes.batch_size == 1));
        let zero = Setup::build_batched(&bundle, &specs, &plan(91, 96), 0, &ctx).err().unwrap();
        assert!(zero.to_string().starts_with("--batch must be at least 1"), "{zero}");
        let mixed = WorkloadPlan {
            name: concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/requests/support.json").into(),
            tokens: 91,
            length: 256.min(bundle.agent.max_len),
        };
        let e = Setup::build_batched(&bundle, &specs, &mixed, 2, &ctx).err().unwrap();
        assert!(e.kind() == crate::error::Kind::Input, "{e}");
        assert!(
            e.to_string().contains("request 1 of workload") && e.to_string().contains("--batch 1"),
            "{e}"
        );
    }

    #[test]
    fn every_arm_is_built_at_the_plan_length() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let ctx = Context::of_test_process();
        let specs =
            [ArmSpec::parse_named("a=portable:f32").unwrap(), ArmSpec::parse_named("b=portable:w8").unwrap()];
        let setup = Setup::build(&bundle, &specs, &plan(91, 96), &ctx).unwrap();
        assert_eq!(setup.arms.len(), 2);
        assert!(setup.built.tokens_per_row.iter().flatten().all(|&t| t == 91));
        // builtin:tiny has nothing big enough to palettize: the w8 arm says so.
        assert!(setup.notes.iter().any(|n| n.starts_with("arm `b` (portable:w8): ")), "{:?}", setup.notes);
        let long = plan(91, bundle.agent.max_len + 1);
        let e = Setup::build(&bundle, &specs, &long, &ctx).err().unwrap();
        assert!(crate::error::chain(&e).contains("longer than the model's max_len"), "{e}");
    }
}
