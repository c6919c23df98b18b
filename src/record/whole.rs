//! The whole balanced cycles at the start of an incomplete record, read as the record a plan
//! of that many cycles would have written (`summary --whole-cycles`).
//!
//! A balanced plan repeats the same cycle (the arms in order, then reversed), so the first `k`
//! whole cycles of a run stopped early (Ctrl-C, SIGTERM, a crash) are exactly the run that
//! `--cycles k` would have made: the same blocks, in the same order, each between its two idle
//! windows. [`cut`] keeps them, with every reading the sensor gave, and leaves out what came
//! after: the cut cycle's blocks and calls, later idle windows, and the footer. How many there
//! are and whether they may be used is `summary`'s (`crate::summary::whole`).

use super::{RawRun, Record};

/// The record of the first `cycles` whole cycles: the header with `plan.cycles = cycles` and
/// the block order cut to them; the probes, warm-ups, every sample, the sampler's report and
/// the corrections; the blocks (and their calls and errors) of those cycles and the idle
/// windows around them. Left out: later blocks, calls and idle windows, block energies and
/// the footer. Line numbers stay those of the file.
pub fn cut(run: &RawRun, cycles: usize) -> RawRun {
    let mut header = run.header.clone();
    let blocks = cycles * 2 * header.arms.len();
    header.plan.cycles = cycles;
    header.plan.order.truncate(blocks);
    let n = u32::try_from(blocks).unwrap_or(u32::MAX);
    let keep = |r: &Record| match r {
        Record::Block { index, .. } => *index < n,
        Record::Call { block, .. } => *block < n,
        Record::Idle { index, .. } => *index <= n,
        Record::Error { block, .. } => block.is_none_or(|b| b < n),
        Record::BlockEnergy { .. } | Record::Footer { .. } | Record::Header(_) => false,
        Record::Probe(_)
        | Record::Warmup { .. }
        | Record::Sample(_)
        | Record::Sampler(_)
        | Record::Correction { .. } => true,
    };
    let mut records = Vec::new();
    let mut lines = Vec::new();
    for (i, r) in run.records.iter().enumerate() {
        if keep(r) {
            records.push(r.clone());
            if let Some(l) = run.lines.get(i) {
                lines.push(*l);
            }
        }
    }
    RawRun { header, records, lines, complete: false, truncated_tail: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::synthetic::{interrupted, records, RunShape};

    fn run_of(records: Vec<Record>) -> RawRun {
        let Some(Record::Header(h)) = records.first().cloned() else { panic!("no header") };
        let n = records.len();
        RawRun {
            header: *h,
            records: records.into_iter().skip(1).collect(),
            lines: (2..n + 1).collect(),
            complete: false,
            truncated_tail: None,
        }
    }

    /// The published shape (3 arms, 3 cycles, 18 blocks) stopped inside block `stop`.
    fn stopped_in(stop: u32) -> RawRun {
        run_of(interrupted(records(&RunShape::published()), stop))
    }

    #[test]
    fn the_cut_is_the_record_of_a_shorter_plan() {
        let run = stopped_in(13);
        let view = cut(&run, 2);
        assert_eq!(view.header.plan.cycles, 2);
        assert_eq!(view.header.plan.order.len(), 12);
        assert_eq!(view.header.plan.order[..], run.header.plan.order[..12]);
        let blocks: Vec<u32> = view
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Block { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        assert_eq!(blocks, (0..12).collect::<Vec<_>>());
        let idles = view.records.iter().filter(|r| matches!(r, Record::Idle { .. })).count();
        assert_eq!(idles, 13, "the idle window before each block and the one after the last");
        assert!(view.records.iter().all(|r| match r {
            Record::Call { block, .. } => *block < 12,
            Record::Footer { .. } => false,
            _ => true,
        }));
        // Every sample is kept, with its line.
        let samples = |r: &RawRun| r.records.iter().filter(|r| matches!(r, Record::Sample(_))).count();
        assert_eq!(samples(&view), samples(&run));
        assert_eq!(view.lines.len(), view.records.len());
        let first_block = view.records.iter().position(|r| matches!(r, Record::Block { .. })).unwrap();
        let in_run = run.records.iter().position(|r| matches!(r, Record::Block { .. })).unwrap();
        assert_eq!(view.lines[first_block], run.lines[in_run]);
    }
}
