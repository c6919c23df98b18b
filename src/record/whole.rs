//! The whole balanced cycles at the start of an incomplete record, read as the record a plan
//! of that many cycles would have written (`summary --whole-cycles`).
//!
//! A balanced plan repeats the same cycle (the arms in order, then reversed), so the first `k`
//! whole cycles of a run stopped early (Ctrl-C, SIGTERM, a crash) are exactly the run that
//! `--cycles k` would have made: the same blocks, in the same order, each between its two idle
//! windows. [`cut`] keeps them, with every reading the sensor gave, and leaves out what came
//! after: the cut cycle's blocks and calls, later idle windows, and the footer. How many there
//! are is [`whole_cycles`] (the timed loop counts them too, to name them when stopped); whether
//! they may be used is `summary`'s (`crate::summary::whole`).

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

/// How many whole balanced cycles a run holds from its start: the longest run of leading
/// blocks that are there in order (the block at position `i` has index `i`) and were not cut
/// short, and, where the run has idle windows (`idles` is `Some`), whose idle windows before
/// and after are there and were not cut short; in whole cycles of `2 × arms` blocks, at most
/// `planned`. `blocks` are `(index, ended_early)` in file order; `idles` are `(index,
/// ended_early)`, index `i` before block `i` and `i + 1` after it. An interrupted run's first
/// `n` whole cycles are the run a plan of `n` cycles would have made (the order of each cycle
/// does not depend on how many follow).
pub fn whole_cycles(
    arms: usize,
    planned: usize,
    blocks: &[(u32, bool)],
    idles: Option<&[(u32, bool)]>,
) -> usize {
    if arms == 0 {
        return 0;
    }
    let idle_ok = |i: u32| match idles {
        None => true,
        Some(list) => {
            let mut found = list.iter().filter(|(index, _)| *index == i);
            matches!((found.next(), found.next()), (Some((_, false)), None))
        }
    };
    let whole_blocks = blocks
        .iter()
        .enumerate()
        .take_while(|(pos, (index, ended_early))| {
            *index as usize == *pos && !ended_early && idle_ok(*index) && idle_ok(*index + 1)
        })
        .count();
    (whole_blocks / (2 * arms)).min(planned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::synthetic::published_stopped_in as stopped_in;

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

    #[test]
    fn whole_cycles_counts_leading_blocks_whole_with_their_idle_windows() {
        let whole = |n: u32| -> Vec<(u32, bool)> { (0..n).map(|i| (i, false)).collect() };
        // Two arms: 4 blocks a cycle. 9 whole blocks: 2 cycles.
        assert_eq!(whole_cycles(2, 3, &whole(9), None), 2);
        assert_eq!(whole_cycles(2, 3, &whole(7), None), 1);
        assert_eq!(whole_cycles(2, 3, &whole(3), None), 0);
        // Never more than planned (a complete run).
        assert_eq!(whole_cycles(2, 3, &whole(12), None), 3);
        assert_eq!(whole_cycles(2, 2, &whole(12), None), 2);
        // Block 5 cut short: only cycle 0 is whole, though blocks 6 and 7 ran.
        let mut cut = whole(8);
        cut[5].1 = true;
        assert_eq!(whole_cycles(2, 2, &cut, None), 1);
        // The last block of cycle 0 cut short: none.
        let mut cut = whole(8);
        cut[3].1 = true;
        assert_eq!(whole_cycles(2, 2, &cut, None), 0);
        // A block out of place (index 2 missing) ends the count there.
        let gap = vec![(0, false), (1, false), (3, false), (4, false)];
        assert_eq!(whole_cycles(1, 4, &gap, None), 1);
        // With idle windows: the one after block 3 (index 4) must be there and whole.
        let idles: Vec<(u32, bool)> = (0..=4).map(|i| (i, false)).collect();
        assert_eq!(whole_cycles(2, 2, &whole(5), Some(&idles)), 1);
        let mut short = idles.clone();
        short[4].1 = true;
        assert_eq!(whole_cycles(2, 2, &whole(5), Some(&short)), 0);
        assert_eq!(whole_cycles(2, 2, &whole(5), Some(&idles[..4])), 0);
        // An idle window recorded twice is not whole.
        let mut twice = idles.clone();
        twice.push((2, false));
        assert_eq!(whole_cycles(2, 2, &whole(5), Some(&twice)), 0);
        assert_eq!(whole_cycles(0, 2, &whole(5), None), 0);
    }
}
