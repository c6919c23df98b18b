use std::time::Duration;

use serde_json::json;

use super::*;
use crate::backend::mock::{Script, ScriptedBackend};
use crate::backend::{ShapeCaps, ShapeMode};
use crate::laya::bundle::{Bundle, ModelSpec};

fn shapes() -> ShapeCaps {
    ShapeCaps { batch_size: 1, max_length: 96, min_length: 96, max_options: 32, mode: ShapeMode::Fixed }
}

fn workload() -> Workload {
    let q = json!({"r": {"type": "noul", "instructions": "Does the customer ask for a refund?"}});
    Workload {
        name: "test".into(),
        requests: vec![
            (json!("Refund me please."), q.clone(), CallOptions::default()),
            (json!("Where is my parcel?"), q, CallOptions::default()),
        ],
    }
}

#[derive(Default)]
struct Collect {
    warmups: Vec<(usize, u64)>,
    blocks: Vec<(BlockRecord, Vec<CallRecord>, usize)>,
    failures: Vec<String>,
}

impl Observer for Collect {
    fn warmup(&mut self, _: &[Arm<'_>], rec: &WarmupRecord) -> std::io::Result<()> {
        self.warmups.push((rec.arm, rec.calls));
        Ok(())
    }
    fn block(
        &mut self,
        _: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> std::io::Result<()> {
        self.blocks.push((rec.clone(), calls.to_vec(), unstable.len()));
        Ok(())
    }
    fn failure(&mut self, _: &[Arm<'_>], _: Option<u32>, _: usize, e: &HostError) -> std::io::Result<()> {
        self.failures.push(e.to_string());
        Ok(())
    }
}

fn arms<'t>(bundle: &'t Bundle, scripts: Vec<Script>) -> Vec<Arm<'t>> {
    scripts
        .into_iter()
        .enumerate()
        .map(|(i, s)| Arm {
            name: format!("arm{i}"),
            spec: "mock".into(),
            backend: Box::new(ScriptedBackend::new(shapes(), s, Duration::ZERO)),
            host: Host::new(&bundle.tokenizer, &bundle.agent, shapes()),
        })
        .collect()
}

#[test]
fn balanced_order_mirrors_each_cycle() {
    assert_eq!(balanced_order(1, 2), vec![(0, 0), (0, 0), (1, 0), (1, 0)]);
    assert_eq!(balanced_order(2, 1), vec![(0, 0), (0, 1), (0, 1), (0, 0)]);
    let three: Vec<usize> = balanced_order(3, 2).into_iter().map(|(_, a)| a).collect();
    assert_eq!(three, vec![0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
}

#[test]
fn runs_blocks_in_balanced_order_with_warmup_outside() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms =
        arms(&bundle, vec![Script::Synthetic { num_actions: 2 }, Script::Synthetic { num_actions: 2 }]);
    let plan = Plan { cycles: 2, block: BlockLimit::Calls(5), warmup_calls: 3 };
    let mut obs = Collect::default();
    let totals = run(&mut arms, &workload(), &plan, &Clock::start(), &mut obs).unwrap();
    // Warm-up covers every request at least once and is not in any block.
    assert_eq!(obs.warmups, vec![(0, 3), (1, 3)]);
    let order: Vec<usize> = obs.blocks.iter().map(|(b, _, _)| b.arm).collect();
    assert_eq!(order, vec![0, 1, 1, 0, 0, 1, 1, 0]);
    assert!(obs.blocks.iter().all(|(b, calls, _)| b.calls == 5 && calls.len() == 5));
    assert_eq!(totals.durations_ns[0].len(), 20);
    assert_eq!(totals.unstable, vec![0, 0]);
    // Calls are timed inside their block and in order.
    for (b, calls, _) in &obs.blocks {
        for c in calls {
            assert!(c.start_ns >= b.start_ns && c.start_ns + c.duration_ns <= b.end_ns);
        }
        assert!(calls.windows(2).all(|w| w[0].start_ns + w[0].duration_ns <= w[1].start_ns));
    }
    // States cycle in a fixed order per arm, continuing across blocks.
    let states: Vec<u32> = obs.blocks[0].1.iter().map(|c| c.state).collect();
    assert_eq!(states, vec![0, 1, 0, 1, 0]);
    assert_eq!(obs.blocks[3].1[0].state, 1);
}

#[test]
fn detects_results_that_drift_from_warmup() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Drift { num_actions: 2, after: 6 }]);
    let plan = Plan { cycles: 1, block: BlockLimit::Calls(4), warmup_calls: 2 };
    let mut obs = Collect::default();
    let totals = run(&mut arms, &workload(), &plan, &Clock::start(), &mut obs).unwrap();
    // 2 warm-up calls, then block 0 calls 3..6 are stable, block 1 calls 7..10 drift.
    assert_eq!(obs.blocks[0].2, 0);
    assert_eq!(obs.blocks[1].2, 4);
    assert_eq!(totals.unstable, vec![4]);
    assert!(obs.blocks[1].1.iter().all(|c| !c.stable));
}

#[test]
fn a_failing_call_ends_the_run_and_keeps_the_block_so_far() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let outputs = std::collections::VecDeque::new();
    let mut arms = arms(&bundle, vec![Script::Replay(outputs)]);
    let plan = Plan { cycles: 1, block: BlockLimit::Calls(4), warmup_calls: 2 };
    let mut obs = Collect::default();
    let err = run(&mut arms, &workload(), &plan, &Clock::start(), &mut obs).unwrap_err();
    assert!(err.to_string().contains("warm-up"), "{err}");
    assert_eq!(obs.failures.len(), 1);
}

#[test]
fn duration_blocks_are_saturated_until_the_limit() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan { cycles: 1, block: BlockLimit::Duration(Duration::from_millis(30)), warmup_calls: 2 };
    let mut obs = Collect::default();
    run(&mut arms, &workload(), &plan, &Clock::start(), &mut obs).unwrap();
    for (b, calls, _) in &obs.blocks {
        assert!(b.end_ns - b.start_ns >= 30_000_000);
        assert!(calls.len() > 10);
    }
}

#[test]
fn an_explicit_order_of_one_block_runs_one_block_after_warmup() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    // `cycles` is not read by `run_order`; the order decides the blocks.
    let plan = Plan { cycles: 7, block: BlockLimit::Duration(Duration::from_millis(20)), warmup_calls: 3 };
    let mut obs = Collect::default();
    let totals = run_order(&mut arms, &workload(), &plan, &[(0, 0)], &Clock::start(), &mut obs).unwrap();
    assert_eq!(obs.warmups, vec![(0, 3)]);
    assert_eq!(obs.blocks.len(), 1);
    let (block, calls, unstable) = &obs.blocks[0];
    assert_eq!((block.index, block.cycle, block.arm, *unstable), (0, 0, 0, 0));
    assert!(block.end_ns - block.start_ns >= 20_000_000);
    assert_eq!(block.calls as usize, calls.len());
    assert_eq!(totals.durations_ns[0].len(), calls.len());
    assert_eq!(totals.blocks.len(), 1);
}

#[test]
fn an_empty_order_or_an_unknown_arm_is_refused_before_any_call() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan { cycles: 1, block: BlockLimit::Calls(2), warmup_calls: 1 };
    for order in [&[][..], &[(0, 1)][..]] {
        let mut obs = Collect::default();
        let err = run_order(&mut arms, &workload(), &plan, order, &Clock::start(), &mut obs).unwrap_err();
        assert!(matches!(err, RunError::Plan(_)), "{err}");
        assert!(obs.warmups.is_empty() && obs.blocks.is_empty());
    }
}
