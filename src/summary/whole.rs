//! `summary --whole-cycles`: the whole balanced cycles at the start of an incomplete record,
//! read as the record a plan of that many cycles would have written.
//!
//! A balanced plan repeats the same cycle (the arms in order, then reversed), so the first `k`
//! whole cycles of a run stopped early (Ctrl-C, SIGTERM, a crash) are exactly the run that
//! `--cycles k` would have made: the same blocks, in the same order, each between its two idle
//! windows. [`crate::record::whole::cut`] keeps them, with every reading the sensor gave (the
//! rejection rules are re-checked on all of them), and leaves out what came after: the cut
//! cycle's blocks and calls, later idle windows, and the footer. [`eligible`] says whether the
//! record as a whole holds up well enough for its whole cycles to be used at all.

use crate::error::{Classify, Kind};
use crate::record::whole::whole_cycles;
use crate::summary::report::CheckOutcome;

use super::audit::{Audit, RunData};

/// The checks of the whole record that its whole cycles cannot do without: a record that is
/// not the writer's, calls that do not add up, an unstable call or a rejection hidden by the
/// footer anywhere in it, and nothing of it is used. `call_counts` counts only where the run
/// wrote its footer (a clean stop): a crash or SIGKILL can cut the calls of the block whose
/// lines were being written, and that block is never one of the whole cycles, whose own
/// `call_counts` is checked on the cut record.
pub const RECORD_CHECKS: [&str; 4] = ["record_integrity", "call_counts", "stable_calls", "rejection_rules"];

/// Why the whole cycles of an incomplete record are not summarized: the reason the summary
/// gives (`--whole-cycles: …`) for deriving no figure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WholeError {
    /// A check of [`RECORD_CHECKS`] fails on the whole record.
    #[error("the record fails `{check}` ({detail}), so no part of it is summarized")]
    RecordFails {
        /// The check's name.
        check: &'static str,
        /// Its detail.
        detail: String,
    },
    /// Rejection rules hold on the record's samples, re-checked.
    #[error("rule {} holds on the record's samples (re-checked), so none of its figures is used", rules.join(", "))]
    RecordRejected {
        /// Each rule once, in order of first violation.
        rules: Vec<&'static str>,
    },
    /// The run stopped before its first cycle was whole.
    #[error("no balanced cycle was finished (each block whole, between its two whole idle windows) before the run stopped, so there is nothing whole to summarize")]
    NoWholeCycle,
    /// Checks fail on the whole cycles themselves.
    #[error("its whole cycles fail {}", failed.join("; "))]
    CyclesFail {
        /// Each failed check as `` `name` (detail) ``.
        failed: Vec<String>,
    },
    /// A rejection rule holds on the samples of the whole cycles.
    #[error("a rejection rule holds on the samples of its whole cycles (see the rejections)")]
    CyclesRejected,
}

impl Classify for WholeError {
    /// The record's: what it holds cannot be summarized.
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

/// How many whole balanced cycles the record holds from its start (see
/// [`whole_cycles`]): for an energy record, each block's two idle windows
/// must be there and whole too.
pub fn count(d: &RunData<'_>) -> usize {
    let blocks: Vec<(u32, bool)> = d.blocks.iter().map(|b| (b.index, b.ended_early)).collect();
    let idles: Vec<(u32, bool)> =
        d.idles.iter().map(|i| (i.index, d.idles_ended_early.contains(&i.index))).collect();
    whole_cycles(d.header.arms.len(), d.header.plan.cycles, &blocks, d.is_energy().then_some(&idles[..]))
}

/// Whether the whole cycles of an incomplete record may be summarized: there is at least one,
/// every check in [`RECORD_CHECKS`] passes on the whole record, and no rejection rule holds
/// on its samples. The number of whole cycles, or why not.
pub fn eligible(d: &RunData<'_>, audit: &Audit) -> Result<usize, WholeError> {
    for name in RECORD_CHECKS {
        if name == "call_counts" && d.footer.is_none() {
            continue;
        }
        if let Some(c) = audit.check(name).filter(|c| c.outcome == CheckOutcome::Fail) {
            return Err(WholeError::RecordFails { check: name, detail: c.detail.clone() });
        }
    }
    if let Some(r) = audit.recomputed.as_ref().filter(|r| r.rejected()) {
        let mut rules: Vec<&str> = Vec::new();
        for rule in r.rejections.iter().map(|x| x.rejection.rule()) {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        return Err(WholeError::RecordRejected { rules });
    }
    match count(d) {
        0 => Err(WholeError::NoWholeCycle),
        k => Ok(k),
    }
}

/// Whether the audit of the whole cycles ([`super::audit::audit_whole_cycles`]) lets their
/// figures be used: every check passes and no rejection rule holds on their samples; or why
/// not.
pub fn judge(audit: &Audit) -> Result<(), WholeError> {
    let failed = audit.failed();
    if !failed.is_empty() {
        let list: Vec<String> = failed.iter().map(|c| format!("`{}` ({})", c.name, c.detail)).collect();
        return Err(WholeError::CyclesFail { failed: list });
    }
    if audit.recomputed.as_ref().is_some_and(|r| r.rejected()) {
        return Err(WholeError::CyclesRejected);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::synthetic::{as_read as run_of, interrupted, published_stopped_in as stopped_in};
    use crate::record::synthetic::{records, RunShape};
    use crate::record::whole::cut;
    use crate::record::Record;

    #[test]
    fn counts_the_cycles_finished_before_the_stop() {
        // 6 blocks a cycle: stopped in block 13 (cycle 2), 14 and 15 not run.
        let run = stopped_in(13);
        assert_eq!(count(&RunData::new(&run)), 2);
        // Stopped in the first block of cycle 1: one whole cycle.
        assert_eq!(count(&RunData::new(&stopped_in(6))), 1);
        // Stopped in the last block of cycle 0: none.
        assert_eq!(count(&RunData::new(&stopped_in(5))), 0);
    }

    #[test]
    fn a_crash_that_cut_the_last_blocks_calls_leaves_the_whole_cycles_usable() {
        // Killed while block 13's calls were written: no footer, block 13 claims more calls
        // than follow it. Cycles 0 and 1 are still whole.
        let mut recs = interrupted(records(&RunShape::published()), 13);
        recs.pop();
        for _ in 0..5 {
            let last_call = recs.iter().rposition(|r| matches!(r, Record::Call { block: 13, .. })).unwrap();
            recs.remove(last_call);
        }
        let run = run_of(recs);
        let d = RunData::new(&run);
        let audit = crate::summary::audit::audit(&run, &d);
        assert_eq!(audit.check("call_counts").unwrap().outcome, CheckOutcome::Fail);
        assert_eq!(eligible(&d, &audit), Ok(2));
        // With the footer of a clean stop, calls that do not add up refuse the record.
        let mut recs = interrupted(records(&RunShape::published()), 13);
        let call = recs.iter().rposition(|r| matches!(r, Record::Call { block: 13, .. })).unwrap();
        recs.remove(call);
        let run = run_of(recs);
        let d = RunData::new(&run);
        let why = eligible(&d, &crate::summary::audit::audit(&run, &d)).unwrap_err().to_string();
        assert!(why.starts_with("the record fails `call_counts`"), "{why}");
    }

    #[test]
    fn whole_cycles_whose_audit_fails_are_not_used() {
        let run = stopped_in(13);
        let mut view = cut(&run, 2);
        // Drop one call of block 4: its block claims more than its records.
        let call = view.records.iter().position(|r| matches!(r, Record::Call { block: 4, .. })).unwrap();
        view.records.remove(call);
        view.lines.remove(call);
        let d = RunData::new(&view);
        let first = crate::summary::audit::whole_cycles_check(&RunData::new(&run), 2, d.blocks.len());
        let a = crate::summary::audit::audit_whole_cycles(&view, &d, first);
        let why = judge(&a).unwrap_err().to_string();
        assert!(why.starts_with("its whole cycles fail `call_counts` (block 4 claims"), "{why}");
        let d = RunData::new(&run);
        let whole = cut(&run, 2);
        let dw = RunData::new(&whole);
        let first = crate::summary::audit::whole_cycles_check(&d, 2, dw.blocks.len());
        assert_eq!(judge(&crate::summary::audit::audit_whole_cycles(&whole, &dw, first)), Ok(()));
    }
}
