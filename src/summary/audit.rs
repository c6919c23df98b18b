//! The audit: every published number is re-derived from the raw record alone and compared with
//! what the record says. Energies are recomputed from the raw samples by the same pure functions
//! the `energy` command used ([`crate::energy::run::analyze`]), never by a second
//! implementation, and compared with the recorded `block_energy` aggregates to 1e-9 relative.

use std::collections::BTreeMap;

use crate::energy::run::{analyze, BlockSpan, IdleSpan, RunEnergy, RunInput};
use crate::energy::{stable_idle_window, BlockEnergy, Rules, Window};
use crate::error::{Classify, Kind};
use crate::power::sampler::Sample;
use crate::record::status::RunStatus;
use crate::record::{balanced_order, FooterRec, Header, RawRun, Record, RecordedEnergy};
use crate::summary::report::{AuditCheck, CheckOutcome, Correction};

/// Relative tolerance between a recomputed and a recorded energy figure.
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// A block as the record holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRec {
    /// Block index.
    pub index: u32,
    /// Balanced cycle.
    pub cycle: u32,
    /// Arm name.
    pub arm: String,
    /// Start, ns since the origin.
    pub start_ns: u64,
    /// End, ns since the origin.
    pub end_ns: u64,
    /// Calls the block record claims.
    pub calls: u64,
    /// Unstable calls the block record claims.
    pub unstable_calls: u64,
    /// Cut short.
    pub ended_early: bool,
    /// CPU time stolen by the hypervisor during the block (absent in older records and where
    /// the OS keeps no counter).
    pub steal: Option<crate::report::steal::StealTicks>,
}

impl BlockCalls {
    /// Σ the runtime's own durations, s, when every call of the block carries one.
    pub fn runtime_s(&self) -> Option<f64> {
        (!self.runtime_ns.is_empty() && self.runtime_ns.len() == self.durations_ns.len())
            .then(|| self.runtime_ns.iter().sum::<u64>() as f64 / 1e9)
    }

    /// The per-call durations a speed record's latency reads: the runtime's own where every
    /// call carries one, else the calls'.
    pub fn latencies_ns(&self) -> &[u64] {
        if self.runtime_s().is_some() {
            &self.runtime_ns
        } else {
            &self.durations_ns
        }
    }
}

impl BlockRec {
    /// Wall time, s.
    pub fn duration_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}

/// The calls recorded for one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockCalls {
    /// Call durations, ns, in file order.
    pub durations_ns: Vec<u64>,
    /// The runtime's own durations of the calls that carry one (`ref:` arms), ns, in file order.
    pub runtime_ns: Vec<u64>,
    /// Calls whose result differed from warm-up.
    pub unstable: u64,
    /// Calls whose arm differs from the block's.
    pub wrong_arm: u64,
}

/// A raw record sorted into what the audit and the statistics need.
#[derive(Debug, Clone)]
pub struct RunData<'r> {
    /// The header.
    pub header: &'r Header,
    /// Blocks in file order.
    pub blocks: Vec<BlockRec>,
    /// Calls per block index.
    pub calls: BTreeMap<u32, BlockCalls>,
    /// Calls that name a block the record does not have.
    pub orphan_calls: u64,
    /// Idle windows.
    pub idles: Vec<IdleSpan>,
    /// Idle windows cut short.
    pub idles_ended_early: Vec<u32>,
    /// Readings taken before measuring (`probe` records), in file order.
    pub probes: Vec<Sample>,
    /// Power samples in file order.
    pub samples: Vec<Sample>,
    /// Recorded block energies by block index (a repeated index is kept as a list).
    pub block_energy: BTreeMap<u32, Vec<RecordedEnergy>>,
    /// The footer, when present.
    pub footer: Option<FooterRec>,
    /// Error records.
    pub errors: Vec<String>,
    /// Appended corrections.
    pub corrections: Vec<Correction>,
    /// Each arm's warm-up results as stated (`warmup` records' `results`; absent in records
    /// written before them).
    pub warmup_results: BTreeMap<String, Vec<serde_json::Value>>,
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn window(start_ns: u64, end_ns: u64) -> Window {
    Window { start_s: seconds(start_ns), end_s: seconds(end_ns) }
}

impl<'r> RunData<'r> {
    /// Sort the records of a raw file.
    pub fn new(run: &'r RawRun) -> Self {
        let mut d = RunData {
            header: &run.header,
            blocks: Vec::new(),
            calls: BTreeMap::new(),
            orphan_calls: 0,
            idles: Vec::new(),
            idles_ended_early: Vec::new(),
            probes: Vec::new(),
            samples: Vec::new(),
            block_energy: BTreeMap::new(),
            footer: None,
            errors: Vec::new(),
            corrections: Vec::new(),
            warmup_results: BTreeMap::new(),
        };
        let mut block_arms: BTreeMap<u32, &str> = BTreeMap::new();
        for r in &run.records {
            match r {
                Record::Block {
                    index,
                    cycle,
                    arm,
                    start_ns,
                    end_ns,
                    calls,
                    unstable_calls,
                    ended_early,
                    host_steal,
                    ..
                } => {
                    block_arms.insert(*index, arm);
                    d.calls.entry(*index).or_default();
                    d.blocks.push(BlockRec {
                        index: *index,
                        cycle: *cycle,
                        arm: arm.clone(),
                        start_ns: *start_ns,
                        end_ns: *end_ns,
                        calls: *calls,
                        unstable_calls: *unstable_calls,
                        ended_early: *ended_early,
                        steal: *host_steal,
                    });
                }
                Record::Call { block, arm, duration_ns, runtime_ns, stable, .. } => {
                    match block_arms.get(block) {
                        Some(block_arm) => {
                            let c = d.calls.entry(*block).or_default();
                            c.durations_ns.push(*duration_ns);
                            c.runtime_ns.extend(*runtime_ns);
                            c.unstable += u64::from(!stable);
                            c.wrong_arm += u64::from(arm != block_arm);
                        }
                        None => d.orphan_calls += 1,
                    }
                }
                Record::Idle { index, start_ns, end_ns, ended_early } => {
                    d.idles.push(IdleSpan { index: *index, window: window(*start_ns, *end_ns) });
                    if *ended_early {
                        d.idles_ended_early.push(*index);
                    }
                }
                Record::Sample(s) => d.samples.push((**s).clone()),
                Record::Probe(s) => d.probes.push((**s).clone()),
                Record::BlockEnergy { .. } => {
                    if let Some((index, e)) = r.block_energy() {
                        d.block_energy.entry(index).or_default().push(e);
                    }
                }
                Record::Footer { .. } => d.footer = r.footer(),
                Record::Error { arm, block, message } => d.errors.push(match block {
                    Some(b) => format!("arm `{arm}`, block {b}: {message}"),
                    None => format!("arm `{arm}`: {message}"),
                }),
                Record::Correction { timestamp_unix_s, field, note } => d.corrections.push(Correction {
                    timestamp_unix_s: *timestamp_unix_s,
                    field: field.clone(),
                    note: note.clone(),
                }),
                Record::Warmup { arm, results, .. } => {
                    if !results.is_empty() {
                        d.warmup_results.insert(arm.clone(), results.clone());
                    }
                }
                Record::Header(_) | Record::Sampler(_) => {}
            }
        }
        d
    }

    /// Whether the header says this is an energy run.
    pub fn is_energy(&self) -> bool {
        self.header.kind == "energy"
    }

    /// Calls recorded in total.
    pub fn call_records(&self) -> u64 {
        self.calls.values().map(|c| c.durations_ns.len() as u64).sum::<u64>() + self.orphan_calls
    }
}

/// The audit's verdict.
#[derive(Debug, Clone)]
pub struct Audit {
    /// Every check, in a fixed order.
    pub checks: Vec<AuditCheck>,
    /// The samples re-judged and the block energies recomputed (energy runs with settings).
    pub recomputed: Option<RunEnergy>,
}

impl Audit {
    /// Checks that failed.
    pub fn failed(&self) -> Vec<&AuditCheck> {
        self.checks.iter().filter(|c| c.outcome == CheckOutcome::Fail).collect()
    }

    /// The named check.
    pub fn check(&self, name: &str) -> Option<&AuditCheck> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// Relative difference `|a − b| / max(|a|, |b|)` (0 when both are 0).
pub fn relative_difference(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

struct CheckBuilder {
    name: &'static str,
    problems: Vec<String>,
    numbers: BTreeMap<String, f64>,
}

impl CheckBuilder {
    fn new(name: &'static str) -> Self {
        CheckBuilder { name, problems: Vec::new(), numbers: BTreeMap::new() }
    }

    fn num(&mut self, key: &str, v: f64) {
        self.numbers.insert(key.into(), v);
    }

    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }

    fn finish(self, pass_detail: String) -> AuditCheck {
        let (outcome, detail) = if self.problems.is_empty() {
            (CheckOutcome::Pass, pass_detail)
        } else {
            let n = self.problems.len();
            let mut shown: Vec<String> = self.problems.into_iter().take(5).collect();
            if n > 5 {
                shown.push(format!("... and {} more", n - 5));
            }
            (CheckOutcome::Fail, shown.join("; "))
        };
        AuditCheck { name: self.name.into(), outcome, detail, numbers: self.numbers }
    }
}

fn not_applicable(name: &str, why: &str) -> AuditCheck {
    AuditCheck {
        name: name.into(),
        outcome: CheckOutcome::NotApplicable,
        detail: why.into(),
        numbers: BTreeMap::new(),
    }
}

fn header_and_footer(d: &RunData<'_>, truncated_tail: bool) -> AuditCheck {
    let mut c = CheckBuilder::new("header_and_footer");
    c.num("footer_present", f64::from(u8::from(d.footer.is_some())));
    match &d.footer {
        None => c.problem(
            "no footer: the run did not finish (it crashed, was killed, or is still running)".into(),
        ),
        Some(f) if f.status == RunStatus::Incomplete => c.problem(format!(
            "the footer says incomplete ({})",
            f.reason.as_deref().unwrap_or("no reason recorded")
        )),
        Some(f) if f.status == RunStatus::Failed => c.problem(format!(
            "the footer says failed ({})",
            f.reason.as_deref().unwrap_or("no reason recorded")
        )),
        Some(_) => {}
    }
    if truncated_tail {
        c.problem("the last line is cut mid-write".into());
    }
    let status = d.footer.as_ref().map(|f| f.status.as_str()).unwrap_or("none");
    c.finish(format!("header (schema {}) and footer (status `{status}`) present", d.header.schema_version))
}

/// Every invariant the raw writer guarantees, checked line by line
/// ([`crate::record::check::integrity`]), each problem naming its line (the first line that
/// breaks one comes first).
pub fn record_integrity(run: &RawRun) -> AuditCheck {
    let mut c = CheckBuilder::new("record_integrity");
    let problems = crate::record::check::integrity(run);
    c.num("records", run.records.len() as f64);
    c.num("problems", problems.len() as f64);
    if let Some((first, _)) = problems.first() {
        c.num("first_bad_line", *first as f64);
    }
    for (_, p) in problems {
        c.problem(p);
    }
    c.finish(format!(
        "{} records in the writer's order; every call inside its block, every span ordered on the run's clock",
        run.records.len()
    ))
}

fn balanced_cycles(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("balanced_cycles");
    let h = d.header;
    let names: Vec<&str> = h.arms.iter().map(|a| a.name.as_str()).collect();
    // A header cannot claim far more blocks than the file holds (a garbled count is not
    // expanded into a huge expected order).
    let claimed = h.plan.cycles.checked_mul(2 * names.len());
    if claimed.is_none_or(|n| n > 2 * d.blocks.len() + 64) {
        c.num("cycles", h.plan.cycles as f64);
        c.num("blocks_recorded", d.blocks.len() as f64);
        c.problem(format!(
            "the header claims {} cycles of {} arms, far more than the {} blocks recorded",
            h.plan.cycles,
            names.len(),
            d.blocks.len()
        ));
        return c.finish(String::new());
    }
    let expected: Vec<(usize, &str)> =
        balanced_order(names.len(), h.plan.cycles).into_iter().map(|(cy, a)| (cy, names[a])).collect();
    c.num("cycles", h.plan.cycles as f64);
    c.num("arms", names.len() as f64);
    c.num("blocks_expected", expected.len() as f64);
    c.num("blocks_recorded", d.blocks.len() as f64);
    if h.plan.order.iter().map(String::as_str).ne(expected.iter().map(|e| e.1)) {
        c.problem(format!(
            "the header's block order {:?} is not {} balanced cycles of {:?} (each cycle the arms in order, then reversed)",
            h.plan.order, h.plan.cycles, names
        ));
    }
    if d.blocks.len() != expected.len() {
        c.problem(format!(
            "{} blocks recorded, {} expected ({} cycles × 2 × {} arms): the last cycle is not whole",
            d.blocks.len(),
            expected.len(),
            h.plan.cycles,
            names.len()
        ));
    }
    for (i, (b, (cycle, arm))) in d.blocks.iter().zip(&expected).enumerate() {
        if b.index as usize != i || b.cycle as usize != *cycle || b.arm != *arm {
            c.problem(format!(
                "block record {i} is block {} of cycle {} on `{}`, expected block {i} of cycle {cycle} on `{arm}`",
                b.index, b.cycle, b.arm
            ));
        }
        if b.ended_early {
            c.problem(format!("block {} was cut short", b.index));
        }
    }
    c.finish(format!(
        "{} ({}), {}",
        crate::report::count(h.plan.cycles, "whole balanced cycle", "whole balanced cycles"),
        names.iter().chain(names.iter().rev()).copied().collect::<Vec<_>>().join(" "),
        crate::report::count(d.blocks.len(), "block", "blocks")
    ))
}

fn call_counts(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("call_counts");
    let records = d.call_records();
    c.num("call_records", records as f64);
    c.num("calls_claimed_by_blocks", d.blocks.iter().map(|b| b.calls).sum::<u64>() as f64);
    for b in &d.blocks {
        let got = d.calls.get(&b.index).map(|c| c.durations_ns.len() as u64).unwrap_or(0);
        if got != b.calls {
            c.problem(format!("block {} claims {} calls but {got} call records follow it", b.index, b.calls));
        }
        if let Some(wrong) = d.calls.get(&b.index).map(|c| c.wrong_arm).filter(|&w| w > 0) {
            c.problem(format!(
                "block {} holds {wrong} call records of another arm than `{}`",
                b.index, b.arm
            ));
        }
    }
    if d.orphan_calls > 0 {
        c.problem(format!("{} call records name no recorded block", d.orphan_calls));
    }
    if let Some(f) = &d.footer {
        if f.total_calls != records {
            c.problem(format!("the footer claims {} calls, the record holds {records}", f.total_calls));
        }
    }
    let claim = if d.footer.is_some() {
        "as every block and the footer claim"
    } else {
        "as every block claims (no footer)"
    };
    c.finish(format!("{records} call records, {claim}"))
}

fn stable_calls(d: &RunData<'_>) -> AuditCheck {
    let mut c = CheckBuilder::new("stable_calls");
    let unstable: u64 = d.calls.values().map(|c| c.unstable).sum();
    c.num("unstable_calls", unstable as f64);
    for b in &d.blocks {
        let got = d.calls.get(&b.index).map(|c| c.unstable).unwrap_or(0);
        if got != b.unstable_calls {
            c.problem(format!(
                "block {} claims {} unstable calls, its call records hold {got}",
                b.index, b.unstable_calls
            ));
        }
        if got > 0 {
            c.problem(format!(
                "block {} (`{}`): {got} calls differ from the arm's warm-up result",
                b.index, b.arm
            ));
        }
    }
    c.finish(format!("every one of {} calls matched its arm's warm-up result", d.call_records()))
}

/// Why an energy record's energies cannot be recomputed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecomputeError {
    /// The header lacks the energy protocol's settings.
    #[error("the header of this energy record has no `energy` settings")]
    NoEnergySettings,
}

impl Classify for RecomputeError {
    /// The record's: its header lacks what every energy run records.
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

/// The settings the energy checks need, or why they are not there.
fn energy_settings(d: &RunData<'_>) -> Result<(Rules, f64), RecomputeError> {
    let e = d.header.energy.as_ref().ok_or(RecomputeError::NoEnergySettings)?;
    Ok((Rules::new(e.max_watts, e.sample_interval_s), e.idle_discard_s))
}

/// Re-judge the samples and recompute every block's energy with `energy::run::analyze`.
pub fn recompute(d: &RunData<'_>) -> Result<RunEnergy, RecomputeError> {
    let (rules, idle_discard_s) = energy_settings(d)?;
    let blocks: Vec<BlockSpan> = d
        .blocks
        .iter()
        .map(|b| BlockSpan {
            index: b.index,
            window: window(b.start_ns, b.end_ns),
            ended_early: b.ended_early,
        })
        .collect();
    let span = crate::energy::run::span_of(&blocks, &d.idles);
    Ok(analyze(&RunInput {
        probes: &d.probes,
        samples: &d.samples,
        blocks: &blocks,
        idles: &d.idles,
        span,
        rules,
        idle_discard_s,
    }))
}

fn idle_windows(d: &RunData<'_>, discard_s: f64) -> AuditCheck {
    let mut c = CheckBuilder::new("idle_windows");
    c.num("idle_windows", d.idles.len() as f64);
    c.num("idle_discard_s", discard_s);
    let mut min_stable = f64::INFINITY;
    for b in &d.blocks {
        let w = window(b.start_ns, b.end_ns);
        let before: Vec<&IdleSpan> = d.idles.iter().filter(|i| i.index == b.index).collect();
        let after: Vec<&IdleSpan> = d.idles.iter().filter(|i| i.index == b.index + 1).collect();
        for (which, found, adjacent) in [
            ("before", &before, before.first().is_some_and(|i| i.window.end_s <= w.start_s)),
            ("after", &after, after.first().is_some_and(|i| i.window.start_s >= w.end_s)),
        ] {
            match found.len() {
                0 => c.problem(format!("block {} has no idle window {which} it", b.index)),
                1 if !adjacent => c.problem(format!("the idle window {which} block {} overlaps it", b.index)),
                1 => {}
                n => c.problem(format!("block {} has {n} idle windows recorded {which} it", b.index)),
            }
        }
    }
    for i in &d.idles {
        match stable_idle_window(i.window, discard_s) {
            Ok(s) => min_stable = min_stable.min(s.duration_s()),
            Err(e) => c.problem(format!("idle window {}: {e}", i.index)),
        }
    }
    for i in &d.idles_ended_early {
        c.problem(format!("idle window {i} was cut short"));
    }
    // The recorded stable windows must be the idle windows with the discard applied.
    for (index, recs) in &d.block_energy {
        for e in recs.iter().filter_map(|r| r.energy.as_ref()) {
            for (which, idle) in [("before", &e.idle_before), ("after", &e.idle_after)] {
                let expect = stable_idle_window(idle.window, discard_s).ok();
                if expect != Some(idle.stable) {
                    c.problem(format!(
                        "block {index}: the recorded stable idle window {which} it [{}, {}] s is not its idle window with the first {discard_s} s discarded",
                        idle.stable.start_s, idle.stable.end_s
                    ));
                }
            }
        }
    }
    if min_stable.is_finite() {
        c.num("shortest_stable_idle_s", min_stable);
    }
    c.finish(format!(
        "every block sits between two adjacent idle windows; the first {discard_s} s of each are discarded"
    ))
}

/// Rejection rules added after raw schema 2 was published (issue 48): a record whose footer
/// says `complete` and whose samples violate only these was written before they existed, and
/// is rejected rather than failing its audit.
pub const RULES_ADDED_SINCE_SCHEMA_2: [&str; 1] = ["too_few_samples_in_block"];

fn rejection_rules(d: &RunData<'_>, recomputed: &RunEnergy) -> AuditCheck {
    let mut c = CheckBuilder::new("rejection_rules");
    let found: Vec<&str> = recomputed.rejections.iter().map(|r| r.rejection.rule()).collect();
    let recorded: Vec<&str> = d
        .footer
        .as_ref()
        .map(|f| f.rejections.iter().map(|r| r.rejection.rule()).collect())
        .unwrap_or_default();
    c.num("samples", d.samples.len() as f64);
    c.num("rejections_recomputed", found.len() as f64);
    c.num("rejections_recorded", recorded.len() as f64);
    // Each rule once, in order of first violation (a rule can be violated many times).
    let list = |rules: &[&str]| {
        let mut once: Vec<&str> = Vec::new();
        for r in rules {
            if !once.contains(r) {
                once.push(r);
            }
        }
        if once.is_empty() {
            "none".to_string()
        } else {
            once.join(", ")
        }
    };
    // A record written complete before a rule existed, whose samples violate only rules added
    // since: the footer hides nothing, the writer did not know them; the run is rejected.
    let predates = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Complete)
        && recorded.is_empty()
        && !found.is_empty()
        && found.iter().all(|r| RULES_ADDED_SINCE_SCHEMA_2.contains(r));
    if let Some(f) = d.footer.as_ref().filter(|_| !predates) {
        let says_rejected = f.status == RunStatus::Rejected;
        if found != recorded {
            c.problem(format!(
                "re-checking the samples finds rules violated: {}; the footer recorded: {} (status `{}`)",
                list(&found),
                list(&recorded),
                f.status
            ));
        } else if !found.is_empty()
            && !says_rejected
            && f.status != RunStatus::Incomplete
            && f.status != RunStatus::Failed
        {
            c.problem(format!("the samples violate {} but the footer says `{}`", list(&found), f.status));
        }
    }
    let verdict = match &d.footer {
        _ if found.is_empty() => "no rule is violated".to_string(),
        _ if predates => format!(
            "the samples violate {}, a rule added after this record's footer was written `complete`: the run is rejected",
            list(&found)
        ),
        Some(f) if f.status == RunStatus::Rejected && found == recorded => {
            format!("the run is rejected by {} (as recorded)", list(&found))
        }
        _ => format!("the samples violate {}", list(&found)),
    };
    c.finish(format!("every rejection rule re-checked on {} samples: {verdict}", d.samples.len()))
}

type Field = (&'static str, fn(&BlockEnergy) -> f64);

/// Compare recomputed with recorded block energies on `fields`.
fn compare_energy(
    name: &'static str,
    d: &RunData<'_>,
    recomputed: &RunEnergy,
    fields: &[Field],
    sign: bool,
) -> AuditCheck {
    let mut c = CheckBuilder::new(name);
    let mut max_rel: f64 = 0.0;
    let mut compared = 0usize;
    for b in &recomputed.blocks {
        let recs = d.block_energy.get(&b.index).map(Vec::as_slice).unwrap_or(&[]);
        let rec = match recs {
            [] => {
                c.problem(format!("block {} has no recorded block_energy", b.index));
                continue;
            }
            [one] => one,
            many => {
                c.problem(format!("block {} has {} block_energy records", b.index, many.len()));
                continue;
            }
        };
        match (&b.energy, &rec.energy) {
            (Some(new), Some(old)) => {
                for (field, get) in fields {
                    let (x, y) = (get(new), get(old));
                    let rel = relative_difference(x, y);
                    max_rel = max_rel.max(rel);
                    compared += 1;
                    if rel.is_nan() || rel > RELATIVE_TOLERANCE {
                        c.problem(format!(
                            "block {} {field}: recomputed {x} vs recorded {y} (relative difference {rel:.3e} > {RELATIVE_TOLERANCE:e})",
                            b.index
                        ));
                    }
                    if sign && x.signum() != y.signum() && x != 0.0 && y != 0.0 {
                        c.problem(format!(
                            "block {} {field}: the recorded sign differs from the recomputed {x}",
                            b.index
                        ));
                    }
                }
            }
            (None, None) => {}
            (Some(_), None) => c.problem(format!(
                "block {}: recorded without energy ({}), but it can be computed",
                b.index,
                rec.missing_reason.as_deref().unwrap_or("no reason")
            )),
            (None, Some(_)) => c.problem(format!(
                "block {}: recorded with energy, but recomputing gives none ({})",
                b.index,
                b.missing_reason.as_deref().unwrap_or("no reason")
            )),
        }
    }
    c.num("values_compared", compared as f64);
    c.num("max_relative_difference", max_rel);
    c.finish(format!(
        "{compared} values recomputed from the raw samples match the record (largest relative difference {max_rel:.1e} ≤ {RELATIVE_TOLERANCE:e})"
    ))
}

/// Run every check on a raw record.
pub fn audit(run: &RawRun, d: &RunData<'_>) -> Audit {
    audit_with(run, d, header_and_footer(d, run.truncated_tail.is_some()), None)
}

/// Why the energy comparisons do not apply to the whole cycles of an incomplete record.
pub const NOT_RECORDED: &str = "an incomplete run records no block energy: each block's energy is computed here from the raw samples, by the functions `energy` uses";

/// Every check on the whole cycles of an incomplete record ([`crate::record::whole::cut`]), read as
/// the record of a plan of that many cycles: `first` (the `whole_cycles` check, saying which
/// cycles are used) in place of `header_and_footer`; the energy comparisons do not apply
/// ([`NOT_RECORDED`]).
pub fn audit_whole_cycles(view: &RawRun, d: &RunData<'_>, first: AuditCheck) -> Audit {
    audit_with(view, d, first, Some(NOT_RECORDED))
}

/// The whole-cycles check: which cycles of how many are used, and why the rest is not.
pub fn whole_cycles_check(full: &RunData<'_>, cycles: usize, blocks_used: usize) -> AuditCheck {
    let mut c = CheckBuilder::new("whole_cycles");
    let planned = full.header.plan.cycles;
    c.num("cycles_used", cycles as f64);
    c.num("cycles_planned", planned as f64);
    c.num("blocks_used", blocks_used as f64);
    c.num("blocks_recorded", full.blocks.len() as f64);
    let end = match &full.footer {
        None => "the record has no footer (the run crashed or was killed)".to_string(),
        Some(f) => format!(
            "the footer says {} ({})",
            f.status.as_str(),
            f.reason.as_deref().unwrap_or("no reason recorded")
        ),
    };
    c.finish(format!(
        "the {} of the {planned} planned, read as a run of {cycles} ({} of the {} recorded; the rest is left out); {end}",
        crate::report::first_cycles(cycles),
        crate::report::count(blocks_used, "block", "blocks"),
        full.blocks.len()
    ))
}

fn audit_with(run: &RawRun, d: &RunData<'_>, first: AuditCheck, not_compared: Option<&str>) -> Audit {
    let mut checks = vec![first, record_integrity(run), balanced_cycles(d), call_counts(d), stable_calls(d)];
    let names = ["idle_windows", "rejection_rules", "active_energy", "idle_power", "idle_subtracted_energy"];
    if !d.is_energy() {
        for n in names {
            checks.push(not_applicable(n, "a speed record has no power samples"));
        }
        return Audit { checks, recomputed: None };
    }
    let (recomputed, discard_s) = match recompute(d).and_then(|r| energy_settings(d).map(|(_, s)| (r, s))) {
        Ok(x) => x,
        Err(why) => {
            for n in names {
                checks.push(AuditCheck {
                    name: n.into(),
                    outcome: CheckOutcome::Fail,
                    detail: why.to_string(),
                    numbers: BTreeMap::new(),
                });
            }
            return Audit { checks, recomputed: None };
        }
    };
    checks.push(idle_windows(d, discard_s));
    checks.push(rejection_rules(d, &recomputed));
    let footer_complete = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Complete);
    if let Some(why) = not_compared {
        for n in &names[2..] {
            checks.push(not_applicable(n, why));
        }
    } else if recomputed.rejected() || !footer_complete {
        let footer_rejected = d.footer.as_ref().is_some_and(|f| f.status == RunStatus::Rejected);
        let why = if d.footer.is_none() {
            "the record has no footer (the run did not finish): no figure is derived from it, so nothing is compared"
        } else if recomputed.rejected() || footer_rejected {
            "the run is rejected: its energy aggregates are never used, so they are not compared"
        } else {
            "the run did not complete: its energy aggregates are not used, so they are not compared"
        };
        let extra = if d.block_energy.is_empty() {
            String::new()
        } else {
            format!(" ({} block_energy lines present, not compared)", d.block_energy.len())
        };
        for n in &names[2..] {
            checks.push(not_applicable(n, &format!("{why}{extra}")));
        }
    } else {
        checks.push(compare_energy(
            "active_energy",
            d,
            &recomputed,
            &[("energy_j", |e| e.energy_j), ("mean_power_w", |e| e.mean_power_w)],
            false,
        ));
        checks.push(compare_energy(
            "idle_power",
            d,
            &recomputed,
            &[
                ("idle_before.power_w", |e| e.idle_before.power_w),
                ("idle_after.power_w", |e| e.idle_after.power_w),
                ("idle_power_w", |e| e.idle_power_w),
            ],
            false,
        ));
        checks.push(compare_energy(
            "idle_subtracted_energy",
            d,
            &recomputed,
            &[("incremental_energy_j", |e| e.incremental_energy_j)],
            true,
        ));
        let extra: Vec<u32> =
            d.block_energy.keys().copied().filter(|i| !d.blocks.iter().any(|b| b.index == *i)).collect();
        if !extra.is_empty() {
            if let Some(c) = checks.iter_mut().find(|c| c.name == "active_energy") {
                c.outcome = CheckOutcome::Fail;
                c.detail = format!("block_energy records for blocks that do not exist: {extra:?}");
            }
        }
    }
    Audit { checks, recomputed: Some(recomputed) }
}
