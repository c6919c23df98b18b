use std::time::Duration;

use serde_json::json;

use super::*;
use crate::backend::mock::{Script, ScriptedBackend};
use crate::backend::{ShapeCaps, ShapeMode};
use crate::laya::bundle::{Bundle, ModelSpec};
use crate::laya::host::{CallOptions, Host, HostError, StateResult};
use std::sync::atomic::{AtomicBool, Ordering};

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
    fn warmup(&mut self, _: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        self.warmups.push((rec.arm, rec.calls));
        Ok(())
    }
    fn block(
        &mut self,
        _: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        self.blocks.push((rec.clone(), calls.to_vec(), unstable.len()));
        Ok(())
    }
    fn failure(&mut self, _: &[Arm<'_>], _: Option<u32>, _: usize, e: &HostError) -> Result<(), RunError> {
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
            sweep: Default::default(),
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
    let plan = Plan::saturated(2, BlockLimit::Calls(5), 3);
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
    let plan = Plan::saturated(1, BlockLimit::Calls(4), 2);
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
    let plan = Plan::saturated(1, BlockLimit::Calls(4), 2);
    let mut obs = Collect::default();
    let err = run(&mut arms, &workload(), &plan, &Clock::start(), &mut obs).unwrap_err();
    assert!(err.to_string().contains("warm-up"), "{err}");
    assert_eq!(obs.failures.len(), 1);
}

#[test]
fn duration_blocks_are_saturated_until_the_limit() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan::saturated(1, BlockLimit::Duration(Duration::from_millis(30)), 2);
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
    let plan = Plan::saturated(7, BlockLimit::Duration(Duration::from_millis(20)), 3);
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
    let plan = Plan::saturated(1, BlockLimit::Calls(2), 1);
    for order in [&[][..], &[(0, 1)][..]] {
        let mut obs = Collect::default();
        let err = run_order(&mut arms, &workload(), &plan, order, &Clock::start(), &mut obs).unwrap_err();
        assert!(matches!(err, RunError::Plan(_)), "{err}");
        assert!(obs.warmups.is_empty() && obs.blocks.is_empty());
    }
}
/// A polled sensor: `watts` every read; after `stop_after` reads it reports that it stopped.
struct ConstSensor {
    info: crate::power::SensorInfo,
    watts: f64,
    reads: u64,
    stop_after: Option<u64>,
}

impl ConstSensor {
    fn boxed(watts: f64, stop_after: Option<u64>) -> Box<dyn crate::power::Sensor> {
        Box::new(ConstSensor {
            info: crate::power::SensorInfo {
                kind: crate::power::SensorKind::Mock,
                spec: "mock".into(),
                source: "mock".into(),
                device: "scripted".into(),
                live: false,
                program: None,
                notes: vec![],
            },
            watts,
            reads: 0,
            stop_after,
        })
    }
}

impl crate::power::Sensor for ConstSensor {
    fn info(&self) -> &crate::power::SensorInfo {
        &self.info
    }
    fn read(&mut self) -> Result<crate::power::Reading, crate::power::SensorError> {
        self.reads += 1;
        if self.stop_after.is_some_and(|n| self.reads > n) {
            return Err(crate::power::SensorError::Stopped {
                sensor: "mock".into(),
                reason: "scripted stop".into(),
            });
        }
        Ok(crate::power::Reading::power_w("system", self.watts))
    }
}

type Samples = std::sync::Arc<std::sync::Mutex<Vec<crate::power::sampler::Sample>>>;

fn sampling(sensor: Box<dyn crate::power::Sensor>) -> (Sampling, Samples) {
    let samples: Samples = Default::default();
    let sink = samples.clone();
    (
        Sampling {
            sensor,
            interval: Duration::from_millis(5),
            stream_timeout: Duration::from_secs(2),
            sink: Box::new(move |s| sink.lock().unwrap().push(s)),
        },
        samples,
    )
}

#[derive(Default)]
struct Timeline {
    events: Vec<(char, u64, u64)>,
    calls: Vec<CallRecord>,
    blocks: Vec<BlockRecord>,
    raise_after_block: Option<std::sync::Arc<AtomicBool>>,
}

impl Observer for Timeline {
    fn warmup(&mut self, _: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        self.events.push(('w', rec.start_ns, rec.end_ns));
        Ok(())
    }
    fn block(
        &mut self,
        _: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        _: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        self.events.push(('b', rec.start_ns, rec.end_ns));
        self.calls.extend_from_slice(calls);
        self.blocks.push(rec.clone());
        if let Some(flag) = &self.raise_after_block {
            flag.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
    fn failure(&mut self, _: &[Arm<'_>], _: Option<u32>, _: usize, _: &HostError) -> Result<(), RunError> {
        Ok(())
    }
    fn idle(&mut self, _: &[Arm<'_>], rec: &IdleRecord) -> Result<(), RunError> {
        self.events.push(('i', rec.start_ns, rec.end_ns));
        Ok(())
    }
}

#[test]
fn idle_windows_surround_every_block_and_the_samples_cover_the_run() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan {
        idle: Some(Duration::from_millis(30)),
        ..Plan::saturated(1, BlockLimit::Duration(Duration::from_millis(20)), 2)
    };
    let (s, samples) = sampling(ConstSensor::boxed(42.0, None));
    let mut obs = Timeline::default();
    let clock = Clock::start();
    let controls = Controls { stop: None, hurry: None, failed: None, sampling: Some(s), order: None };
    let out = run_with(&mut arms, &workload(), &plan, &clock, &mut obs, controls).unwrap();
    assert!(matches!(out.end, RunEnd::Completed), "{:?}", out.end);
    // warm-up, then idle, block, idle, block, idle; each starting after the previous ended.
    let kinds: String = obs.events.iter().map(|e| e.0).collect();
    assert_eq!(kinds, "wibibi");
    assert!(obs.events.windows(2).all(|w| w[0].2 <= w[1].1), "{:?}", obs.events);
    for &(k, start, end) in &obs.events {
        if k == 'i' {
            assert!(end - start >= 30_000_000, "idle window shorter than planned");
        }
    }
    // No call falls inside an idle window.
    for c in &obs.calls {
        let inside_a_block =
            obs.blocks.iter().any(|b| c.start_ns >= b.start_ns && c.start_ns + c.duration_ns <= b.end_ns);
        assert!(inside_a_block, "{c:?}");
    }
    assert_eq!(out.totals.idles.len(), 3);
    let (span_start, span_end) = out.span_ns.unwrap();
    assert_eq!(span_start, obs.events[1].1);
    assert_eq!(span_end, obs.events[5].2);
    // The sampler ran on the same clock, from before the first idle window to after the last.
    let report = out.sampler.expect("sampler report");
    let samples = samples.lock().unwrap();
    assert_eq!(report.samples_sent as usize, samples.len());
    assert!(samples.first().unwrap().t_receive_ns <= span_start);
    assert!(samples.last().unwrap().t_receive_ns >= span_end);
    assert!(samples.windows(2).all(|w| w[0].seq + 1 == w[1].seq && w[0].t_receive_ns <= w[1].t_receive_ns));
    // Warm-up happened before sampling began.
    assert!(obs.events[0].2 <= samples[0].t_receive_ns);
}

#[test]
fn paced_blocks_make_every_scheduled_call_and_count_missed_deadlines() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms: Vec<Arm<'_>> = [Duration::ZERO, Duration::from_millis(4)]
        .into_iter()
        .enumerate()
        .map(|(i, delay)| Arm {
            name: format!("arm{i}"),
            spec: "mock".into(),
            backend: Box::new(ScriptedBackend::new(shapes(), Script::Synthetic { num_actions: 2 }, delay)),
            host: Host::new(&bundle.tokenizer, &bundle.agent, shapes()),
            sweep: Default::default(),
        })
        .collect();
    // 200 calls/s for 50 ms: 10 calls per block, one due every 5 ms.
    let plan = Plan {
        pace: Some(Pace { rate_hz: 200.0 }),
        ..Plan::saturated(1, BlockLimit::Duration(Duration::from_millis(50)), 2)
    };
    let mut obs = Timeline::default();
    let out =
        run_with(&mut arms, &workload(), &plan, &Clock::start(), &mut obs, Controls::default()).unwrap();
    assert!(matches!(out.end, RunEnd::Completed));
    for b in &obs.blocks {
        assert_eq!(b.calls, 10, "every scheduled call is made, none dropped or skipped");
        assert_eq!(b.scheduled_calls, Some(10));
        assert!(b.end_ns - b.start_ns >= 50_000_000, "a paced block lasts until its schedule ends");
        let calls: Vec<&CallRecord> = obs.calls.iter().filter(|c| c.block == b.index).collect();
        for (k, c) in calls.iter().enumerate() {
            let due = c.scheduled_ns.unwrap();
            assert_eq!(due - b.start_ns, k as u64 * 5_000_000);
            assert!(c.start_ns >= due, "no call starts before it is due");
        }
        assert_eq!(b.missed_deadlines, calls.iter().filter(|c| c.missed_deadline).count() as u64);
    }
    // Whether a 4 ms call meets a 5 ms slot depends on the machine's load, so only check that
    // the per-arm totals equal the per-call flags (the always-late case is the next test).
    let flagged: Vec<u64> = (0..2)
        .map(|a| {
            let idx: Vec<u32> = obs.blocks.iter().filter(|b| b.arm == a).map(|b| b.index).collect();
            obs.calls.iter().filter(|c| idx.contains(&c.block) && c.missed_deadline).count() as u64
        })
        .collect();
    assert_eq!(out.totals.missed_deadlines, flagged);
}

/// Issue 49, item 10: a rate no arm can keep (a million calls per second of 1 ms calls: 50,000
/// scheduled in a 50 ms block) ends the block by time, at twice its length plus 1 s, with the
/// calls made and the calls scheduled both recorded; before, block 0 never ended.
#[test]
fn an_impossible_rate_still_ends_each_block_by_time() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms: Vec<Arm<'_>> = vec![Arm {
        name: "slow".into(),
        spec: "mock".into(),
        backend: Box::new(ScriptedBackend::new(
            shapes(),
            Script::Synthetic { num_actions: 2 },
            Duration::from_millis(1),
        )),
        host: Host::new(&bundle.tokenizer, &bundle.agent, shapes()),
        sweep: Default::default(),
    }];
    let d = Duration::from_millis(50);
    assert_eq!(super::paced_overrun_limit(d), Duration::from_millis(1100));
    let plan = Plan { pace: Some(Pace { rate_hz: 1e6 }), ..Plan::saturated(1, BlockLimit::Duration(d), 1) };
    let mut obs = Timeline::default();
    let started = std::time::Instant::now();
    let out =
        run_with(&mut arms, &workload(), &plan, &Clock::start(), &mut obs, Controls::default()).unwrap();
    assert!(matches!(out.end, RunEnd::Completed));
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert_eq!(obs.blocks.len(), 2);
    for b in &obs.blocks {
        assert_eq!(b.scheduled_calls, Some(50_000));
        assert!(b.calls > 0 && b.calls < 50_000, "{}", b.calls);
        assert!(b.end_ns - b.start_ns >= 1_100_000_000, "{}", b.end_ns - b.start_ns);
        assert_eq!(b.missed_deadlines, b.calls, "every call made was late");
    }
}

#[test]
fn a_call_slower_than_the_pace_misses_every_deadline_and_still_runs() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms: Vec<Arm<'_>> = vec![Arm {
        name: "slow".into(),
        spec: "mock".into(),
        backend: Box::new(ScriptedBackend::new(
            shapes(),
            Script::Synthetic { num_actions: 2 },
            Duration::from_millis(6),
        )),
        host: Host::new(&bundle.tokenizer, &bundle.agent, shapes()),
        sweep: Default::default(),
    }];
    // Due every 2 ms, each call takes ≥ 6 ms: every call ends after the next one was due.
    let plan = Plan { pace: Some(Pace { rate_hz: 500.0 }), ..Plan::saturated(1, BlockLimit::Calls(5), 2) };
    let mut obs = Timeline::default();
    let out =
        run_with(&mut arms, &workload(), &plan, &Clock::start(), &mut obs, Controls::default()).unwrap();
    assert!(matches!(out.end, RunEnd::Completed));
    assert_eq!(out.totals.missed_deadlines, vec![10]);
    assert!(obs.blocks.iter().all(|b| b.calls == 5 && b.missed_deadlines == 5));
    // No slot is skipped to catch up: call k keeps slot k (due every 2 ms), and each late call
    // starts only after the previous one returned.
    for b in &obs.blocks {
        let calls: Vec<&CallRecord> = obs.calls.iter().filter(|c| c.block == b.index).collect();
        for (k, c) in calls.iter().enumerate() {
            assert_eq!(c.scheduled_ns.unwrap() - b.start_ns, k as u64 * 2_000_000);
            assert!(c.start_ns >= c.scheduled_ns.unwrap());
        }
        assert!(calls.windows(2).all(|w| w[0].start_ns + w[0].duration_ns <= w[1].start_ns));
    }
}

#[test]
fn pace_calls_per_block_rounds_and_never_drops_to_zero() {
    let p = Pace { rate_hz: 30.0 };
    assert_eq!(p.calls_per_block(BlockLimit::Duration(Duration::from_secs(20))), 600);
    assert_eq!(p.calls_per_block(BlockLimit::Duration(Duration::from_millis(10))), 1);
    assert_eq!(p.calls_per_block(BlockLimit::Calls(7)), 7);
    assert_eq!(p.offset(3), Duration::from_millis(100));
}

#[test]
fn a_raised_stop_flag_ends_the_run_between_calls() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan {
        idle: Some(Duration::from_millis(10)),
        ..Plan::saturated(3, BlockLimit::Duration(Duration::from_millis(10)), 2)
    };
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let mut obs = Timeline { raise_after_block: Some(flag.clone()), ..Timeline::default() };
    let (s, _samples) = sampling(ConstSensor::boxed(10.0, None));
    let controls = Controls { stop: Some(&flag), hurry: None, failed: None, sampling: Some(s), order: None };
    let out = run_with(&mut arms, &workload(), &plan, &Clock::start(), &mut obs, controls).unwrap();
    match &out.end {
        RunEnd::Interrupted { during } => assert_eq!(during, "idle window 1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(obs.blocks.len(), 1);
    assert_eq!(out.totals.idles.len(), 2);
    assert!(out.totals.idles[1].ended_early);
    assert!(out.sampler.is_some(), "the sampler is stopped and reported even when interrupted");
}

#[test]
fn a_sensor_that_stops_ends_the_run_early() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms = arms(&bundle, vec![Script::Synthetic { num_actions: 2 }]);
    let plan = Plan {
        idle: Some(Duration::from_millis(20)),
        ..Plan::saturated(20, BlockLimit::Duration(Duration::from_millis(20)), 2)
    };
    let (s, samples) = sampling(ConstSensor::boxed(10.0, Some(8)));
    let mut obs = Timeline::default();
    let controls = Controls { stop: None, hurry: None, failed: None, sampling: Some(s), order: None };
    let out = run_with(&mut arms, &workload(), &plan, &Clock::start(), &mut obs, controls).unwrap();
    assert!(matches!(out.end, RunEnd::SensorStopped { .. }), "{:?}", out.end);
    assert!(obs.blocks.len() < 40, "the remaining blocks were not run");
    let samples = samples.lock().unwrap();
    assert_eq!(samples.len(), 9);
    assert!(matches!(&samples[8].outcome, crate::power::sampler::SampleOutcome::Fault(f) if f.fatal));
}

#[test]
fn phases_read_as_the_reports_name_them() {
    assert_eq!(Phase::Warmup.to_string(), "warm-up");
    assert_eq!(Phase::Block { index: 3, cycle: 1 }.to_string(), "block 3 (cycle 1)");
    assert_eq!(Phase::Idle { index: 2 }.to_string(), "idle window 2");
}

fn batched_arm(bundle: &Bundle, script: Script, rows: usize) -> Vec<Arm<'_>> {
    let shapes = ShapeCaps { batch_size: rows, ..shapes() };
    vec![Arm {
        name: "arm0".into(),
        spec: "mock".into(),
        backend: Box::new(ScriptedBackend::new(shapes.clone(), script, Duration::ZERO)),
        host: Host::new(&bundle.tokenizer, &bundle.agent, shapes),
        sweep: Default::default(),
    }]
}

fn three() -> Workload {
    let mut w = workload();
    let q = w.requests[0].1.clone();
    w.requests.push((json!("Cancel my order, it never shipped."), q, CallOptions::default()));
    w
}

#[test]
fn a_batched_call_answers_consecutive_requests_in_one_forward() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    // Forwards 1..7 are scripted alike, from forward 8 on every result drifts.
    let mut arms = batched_arm(&bundle, Script::Drift { num_actions: 2, after: 7 }, 2);
    let plan = Plan { batch: 2, ..Plan::saturated(1, BlockLimit::Calls(4), 1) };
    let mut obs = Collect::default();
    let totals = run(&mut arms, &three(), &plan, &Clock::start(), &mut obs).unwrap();
    // 3 requests in calls of 2: 2 batched warm-up calls cover them all (forwards 1, 2), then
    // each request once alone (forwards 3, 4, 5).
    assert_eq!(obs.warmups, vec![(0, 2)]);
    assert_eq!(totals.unbatched[0].len(), 3);
    assert_eq!(totals.unbatched[0], totals.warmup[0]);
    // Each call starts where the last one ended, cycling through the workload.
    let states: Vec<u32> = obs.blocks.iter().flat_map(|(_, c, _)| c.iter().map(|c| c.state)).collect();
    assert_eq!(states, vec![0, 2, 1, 0, 2, 1, 0, 2]);
    assert!(obs.blocks.iter().flat_map(|(_, c, _)| c).all(|c| c.requests == 2));
    // One forward per call: calls 1 and 2 of block 0 are forwards 6 and 7 (stable), every
    // later call drifted. An unstable call hands over the results of both its requests.
    let (b0, calls0, entries0) = &obs.blocks[0];
    assert_eq!(calls0.iter().map(|c| c.stable).collect::<Vec<_>>(), [true, true, false, false]);
    assert_eq!((b0.unstable_calls, *entries0), (2, 4));
    assert_eq!((obs.blocks[1].0.unstable_calls, obs.blocks[1].2), (4, 8));
    assert_eq!(totals.unstable, vec![6]);
    assert_eq!(totals.durations_ns[0].len(), 8);
}

#[test]
fn a_batch_must_share_its_questions_and_be_at_least_one() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut mixed = three();
    mixed.requests[2].1 = json!({"t": {"type": "noul", "instructions": "Is it about shipping?"}});
    assert_eq!(batch_mismatch(&three()), None);
    assert_eq!(batch_mismatch(&mixed), Some(2));
    let mut options = three();
    options.requests[1].2.max_len = Some(64);
    assert_eq!(batch_mismatch(&options), Some(1));
    let mut arms = batched_arm(&bundle, Script::Synthetic { num_actions: 2 }, 2);
    let plan = Plan { batch: 2, ..Plan::saturated(1, BlockLimit::Calls(2), 1) };
    let e = run(&mut arms, &mixed, &plan, &Clock::start(), &mut Collect::default()).unwrap_err();
    assert!(e.to_string().contains("request 2 of workload `test`"), "{e}");
    let zero = Plan { batch: 0, ..plan };
    let e = run(&mut arms, &three(), &zero, &Clock::start(), &mut Collect::default()).unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
    // At batch 1 a mixed workload runs as it always did, and nothing is answered twice.
    let one = Plan { batch: 1, ..zero };
    let totals = run(&mut arms, &mixed, &one, &Clock::start(), &mut Collect::default()).unwrap();
    assert!(totals.unbatched.iter().all(Vec::is_empty));
    assert_eq!(calls_to_cover(3, 2), 2);
    assert_eq!(calls_to_cover(8, 4), 2);
    assert_eq!(calls_to_cover(8, 3), 3);
}

#[test]
fn the_leading_cycles_keep_their_blocks_calls_and_times() {
    // Two arms, 4 blocks a cycle; stopped in block 5 (cycle 1), after block 4 of arm 0.
    let mut b5 = BlockRecord::whole(5, 1, 1, 1, 900, 950);
    b5.ended_early = true;
    let mut b2 = BlockRecord::whole(2, 0, 1, 2, 300, 500);
    b2.unstable_calls = 1;
    let totals = RunTotals {
        // arm 0: blocks 0, 3, 4 (2 + 3 + 1 calls); arm 1: blocks 1, 2, 5 (2 + 2 + 1)
        durations_ns: vec![vec![10, 11, 20, 21, 22, 30], vec![40, 41, 50, 51, 60]],
        block_ns: vec![0, 0],
        runtime_ns: vec![Vec::new(), vec![4, 4, 5, 5, 6]],
        unstable: vec![0, 1],
        blocks: vec![
            BlockRecord::whole(0, 0, 0, 2, 0, 100),
            BlockRecord::whole(1, 0, 1, 2, 100, 300),
            b2,
            BlockRecord::whole(3, 0, 0, 3, 500, 800),
            BlockRecord::whole(4, 1, 0, 1, 800, 900),
            b5,
        ],
        ..RunTotals::default()
    };
    let one = totals.leading_cycles(2, 1);
    assert_eq!(one.durations_ns, vec![vec![10, 11, 20, 21, 22], vec![40, 41, 50, 51]]);
    assert_eq!(one.runtime_ns, vec![vec![], vec![4, 4, 5, 5]]);
    assert_eq!(one.block_ns, vec![100 + 300, 200 + 200]);
    assert_eq!(one.unstable, vec![0, 1]);
    assert_eq!(one.blocks.iter().map(|b| b.index).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert!(totals.leading_cycles(2, 0).blocks.is_empty());
    // Cycle 0 is the one whole cycle; the unstable call of block 2 is in it, none left out.
    let (k, whole) = totals.whole_cycles(2, 3, false).unwrap();
    assert_eq!((k, whole.blocks.len(), totals.unstable_left_out(&whole)), (1, 4, 0));
    // Without the idle windows an energy run needs, nothing is whole.
    assert!(totals.whole_cycles(2, 3, true).is_none());
    // An unstable call in the cut cycle is left out of the whole cycles' totals.
    let cut_unstable = RunTotals { unstable: vec![1, 2], ..totals.clone() };
    assert_eq!(cut_unstable.unstable_left_out(&whole), 2);
}

#[test]
fn when_warm_fires_once_after_the_last_arms_warmup_and_its_error_stops_the_run() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let mut arms =
        arms(&bundle, vec![Script::Synthetic { num_actions: 2 }, Script::Synthetic { num_actions: 2 }]);
    let plan = Plan::saturated(1, BlockLimit::Calls(2), 2);
    let mut told = Vec::new();
    {
        let mut watch = WhenWarm::new(Some(|started: f64| {
            told.push(started);
            Ok(())
        }));
        watch.started(12.5);
        run(&mut arms, &workload(), &plan, &Clock::start(), &mut watch).unwrap();
    }
    // two arms warm up, but only the second (the last) one tells, with the run's start
    assert_eq!(told, vec![12.5]);
    // no `then`: nothing to do, the run goes on
    let mut none = WhenWarm::<fn(f64) -> Result<(), crate::error::Error>>::new(None);
    run(&mut arms, &workload(), &plan, &Clock::start(), &mut none).unwrap();
    // an error stops the run before any block
    let mut failing =
        WhenWarm::new(Some(|_: f64| Err(crate::error::Error::run("cannot write the ready file r"))));
    match run(&mut arms, &workload(), &plan, &Clock::start(), &mut failing) {
        Err(RunError::Observer(e)) => assert_eq!(e.to_string(), "cannot write the ready file r"),
        other => panic!("expected an observer error, got {:?}", other.map(|t| t.unstable)),
    }
}
