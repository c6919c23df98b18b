//! The live progress of a `speed` or `energy` run on stderr: what the plan will take, said
//! before it starts, then a block progress bar where stderr is a terminal, or a plain line
//! after each block where it is not (a CI log, `2> file`).

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::ticker::{clock_text, time_left};
use crate::laya::host::StateResult;
use crate::run::setup::Setup;
use crate::run::{Arm, BlockRecord, CallRecord, IdleRecord, Observer, Progress, RunError, WarmupRecord};

/// The progress line: blocks done, elapsed time and the estimated time left (from the blocks
/// done so far), and the live message; for a plan of known length, [`PLANNED_TEMPLATE`].
pub(crate) const PROGRESS_TEMPLATE: &str =
    "{spinner} [{bar:30}] {pos}/{len} blocks · {elapsed_precise} elapsed · ETA {eta} · {msg}";

/// The progress line of a plan whose blocks have a known length (a time, or a paced count):
/// the time left from the plan itself ([`Timetable::left`]), from the first second.
pub(crate) const PLANNED_TEMPLATE: &str =
    "{spinner} [{bar:30}] {pos}/{len} blocks · {elapsed_precise} elapsed · ETA {planned_eta} · {msg}";

/// The planned length of each phase of a run, in order: the warm-up (an estimate), then an
/// idle window where the plan has them, and each block followed by its idle window.
#[derive(Debug, Clone, PartialEq)]
struct Timetable {
    phases: Vec<f64>,
}

impl Timetable {
    /// The phases of `plan` over `arms` arms and `blocks` blocks, or `None` where a block's
    /// length is not known ahead (a count of saturated calls). The warm-up is estimated only
    /// where the plan is paced (its calls at the plan's rate; it runs saturated, so this is an
    /// upper bound); otherwise it counts as nothing until it ends.
    fn of(plan: &crate::run::Plan, arms: usize, blocks: u64) -> Option<Self> {
        let block = block_seconds(plan)?;
        let warmup = plan.pace.map_or(0.0, |p| (plan.warmup_calls * arms) as f64 / p.rate_hz);
        let idle = plan.idle.map(|d| d.as_secs_f64());
        let mut phases = vec![warmup];
        phases.extend(idle);
        for _ in 0..blocks {
            phases.push(block);
            phases.extend(idle);
        }
        Some(Self { phases })
    }

    /// Seconds left when phase `phase` (from 0, the warm-up) began `in_phase` seconds ago: what
    /// is left of it (its planned length less the time spent in it, never below zero) and every
    /// phase after it. From the first second the plan's whole length, then corrected by the time
    /// each phase really took.
    fn left(&self, phase: usize, in_phase: f64) -> f64 {
        let Some(now) = self.phases.get(phase) else { return 0.0 };
        (now - in_phase).max(0.0) + self.phases[phase + 1..].iter().sum::<f64>()
    }
}

/// Where a run is in its [`Timetable`]: the phase and when it began.
struct Position {
    table: Timetable,
    phase: usize,
    since: Instant,
}

impl Position {
    /// The next phase begins now.
    fn advance(&mut self) {
        self.phase += 1;
        self.since = Instant::now();
    }
}

/// The block progress bar (hidden with `--no-progress`); with idle windows it says which one
/// follows a block. Where stderr is not a terminal (a CI log, `2> file`) the bar cannot draw, so
/// a plain line follows each block instead, between blocks and never inside one.
pub(crate) struct Bar {
    bar: ProgressBar,
    idle_windows: bool,
    /// Requests per call of each arm (`speed --batch N`, or its value in a sweep): the live
    /// rate is shown in decisions.
    batch: Vec<usize>,
    /// The plain lines' state, where stderr is not a terminal and progress is not hidden.
    plain: Option<PlainLines>,
    /// Where the run is in its plan, for the bar's time left (a plan of known length).
    position: Option<Arc<Mutex<Position>>>,
}

/// What the plain progress lines need: the arms' names and the run's clock.
struct PlainLines {
    arms: Vec<String>,
    blocks: u64,
    done: u64,
    /// From the end of the warm-up (which is not in the estimate).
    clock: Option<Instant>,
}

impl Bar {
    /// The progress of a run of `plan` over `setup`'s arms (hidden with `--no-progress`): says
    /// what the plan will take ([`plan_line`]) unless hidden, then draws a bar where stderr is
    /// a terminal, or plain lines where it is not. The bar's steady tick (a thread redrawing it
    /// five times a second) runs only where the bar is drawn.
    pub(crate) fn for_run(setup: &Setup<'_>, plan: &crate::run::Plan, hidden: bool) -> Self {
        let blocks = crate::run::balanced_order(setup.arms.len(), plan.cycles).len() as u64;
        let bar = ProgressBar::new(blocks);
        let terminal = std::io::stderr().is_terminal();
        if !hidden {
            eprintln!("{}", plan_line(plan, blocks));
        }
        let position = Timetable::of(plan, setup.arms.len(), blocks)
            .map(|table| Arc::new(Mutex::new(Position { table, phase: 0, since: Instant::now() })));
        if hidden || !terminal {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else {
            let style = match &position {
                Some(p) => {
                    let p = Arc::clone(p);
                    ProgressStyle::with_template(PLANNED_TEMPLATE).map(|s| {
                        s.with_key(
                            "planned_eta",
                            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                if let Ok(p) = p.lock() {
                                    let left = p.table.left(p.phase, p.since.elapsed().as_secs_f64());
                                    let _ = w.write_str(&clock_text(Duration::from_secs_f64(left)));
                                }
                            },
                        )
                    })
                }
                None => ProgressStyle::with_template(PROGRESS_TEMPLATE),
            };
            bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        let plain = (!hidden && !terminal).then(|| PlainLines {
            arms: setup.arms.iter().map(|a| a.name.clone()).collect(),
            blocks,
            done: 0,
            clock: None,
        });
        let batch = setup.arms.iter().map(|a| a.requests_per_call(plan.batch).max(1)).collect();
        Self { bar, idle_windows: plan.idle.is_some(), batch, plain, position }
    }

    /// The next phase of the plan begins (the warm-up, a block or an idle window ended).
    fn advance(&self) {
        if let Some(p) = &self.position {
            if let Ok(mut p) = p.lock() {
                p.advance();
            }
        }
    }

    /// Requests per call of arm `a` (1 for an arm it does not know).
    fn batch_of(&self, a: usize) -> usize {
        self.batch.get(a).copied().unwrap_or(1)
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for Bar {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        let arms = arms.len();
        if rec.arm + 1 == arms {
            self.advance();
        }
        if let Some(p) = &mut self.plain {
            if rec.arm + 1 == arms {
                eprintln!("warm-up done for {arms} arm(s); measuring {} blocks", p.blocks);
                p.clock = Some(Instant::now());
            }
        }
        Ok(())
    }

    fn block(
        &mut self,
        _arms: &[Arm<'_>],
        rec: &BlockRecord,
        _calls: &[CallRecord],
        _unstable: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        self.advance();
        self.bar.inc(1);
        if self.idle_windows {
            self.bar.set_message(format!("idle window {}", rec.index + 1));
        }
        let batch = self.batch_of(rec.arm);
        if let Some(p) = &mut self.plain {
            p.done += 1;
            let elapsed = p.clock.get_or_insert_with(Instant::now).elapsed();
            let name = p.arms.get(rec.arm).map_or("?", String::as_str);
            eprintln!("{}", plain_line(rec, name, p.done, p.blocks, elapsed, batch, self.idle_windows));
        }
        Ok(())
    }

    fn idle(&mut self, _arms: &[Arm<'_>], _rec: &IdleRecord) -> Result<(), RunError> {
        self.advance();
        Ok(())
    }

    fn progress(&mut self, arms: &[Arm<'_>], p: &Progress) {
        let calls_per_s = if p.elapsed_s > 0.0 { p.calls as f64 / p.elapsed_s } else { 0.0 };
        self.bar.set_message(progress_message(&arms[p.arm].name, p.cycle, calls_per_s, self.batch_of(p.arm)));
    }
}

/// One plain progress line: the block, its arm and cycle (from 1), its calls and length, the
/// time since the first block and the estimated time left (from the blocks done so far). The
/// block and cycle are numbered as in the raw record and every other message (from 0: `block
/// 13`, `cycle 1`, `idle window 14`), with the count done beside them (`14 of 24`).
fn plain_line(
    rec: &BlockRecord,
    arm: &str,
    done: u64,
    blocks: u64,
    elapsed: Duration,
    batch: usize,
    idle_windows: bool,
) -> String {
    let seconds = rec.end_ns.saturating_sub(rec.start_ns) as f64 / 1e9;
    let calls =
        if batch > 1 { format!("{} calls of {batch}", rec.calls) } else { format!("{} calls", rec.calls) };
    let left = time_left(done, blocks, elapsed);
    let ended = if rec.ended_early { "ended early" } else { "done" };
    // (an idle window follows every block, the last one too)
    let idle = if idle_windows { format!(" · idle window {} next", rec.index + 1) } else { String::new() };
    format!(
        "block {} ({done} of {blocks}) {ended} · arm {arm} · cycle {} · {calls} in {seconds:.1} s · {} elapsed{left}{idle}",
        rec.index,
        rec.cycle,
        clock_text(elapsed)
    )
}

/// The live message: the arm, the cycle (from 0, as in the raw record) and the rate, in decisions per second (with
/// the calls of a batched run beside it).
fn progress_message(arm: &str, cycle: usize, calls_per_s: f64, batch: usize) -> String {
    if batch > 1 {
        let decisions = calls_per_s * batch as f64;
        format!(
            "arm {arm} · cycle {cycle} · {decisions:.0} decisions/s ({calls_per_s:.0} calls/s of {batch})"
        )
    } else {
        format!("arm {arm} · cycle {cycle} · {calls_per_s:.0} calls/s")
    }
}

/// The planned length of one block, seconds: a time, or a paced count at the plan's rate;
/// `None` for a count of saturated calls, whose length is not known ahead.
fn block_seconds(plan: &crate::run::Plan) -> Option<f64> {
    use crate::run::BlockLimit;
    match (plan.block, plan.pace) {
        (limit, Some(pace)) => Some(pace.calls_per_block(limit) as f64 / pace.rate_hz),
        (BlockLimit::Duration(d), None) => Some(d.as_secs_f64()),
        (BlockLimit::Calls(_), None) => None,
    }
}

/// What the run will take after its warm-up, said before it starts: `blocks` blocks of the
/// plan and its idle windows (one before the first block and one after each), where the block
/// length is a time (or a paced call count); a block of a fixed count of saturated calls has no
/// length known ahead, so only the count is said.
fn plan_line(plan: &crate::run::Plan, blocks: u64) -> String {
    use crate::run::BlockLimit;
    let block_s = block_seconds(plan);
    let what = match plan.block {
        BlockLimit::Calls(k) if plan.pace.is_none() => format!("{blocks} blocks of {k} calls"),
        _ => format!("{blocks} blocks of {:.1} s", block_s.unwrap_or_default()),
    };
    let idle = plan.idle.map(|d| (blocks + 1, d.as_secs_f64()));
    let idle_text = idle.map_or(String::new(), |(n, s)| format!(" and {n} idle windows of {s:.1} s"));
    let total = block_s.map(|b| b * blocks as f64 + idle.map_or(0.0, |(n, s)| n as f64 * s));
    let cycles = plan.cycles;
    match total {
        Some(t) => format!(
            "plan: {what}{idle_text} in {cycles} balanced cycle(s): {} of measuring after the warm-up",
            clock_text(Duration::from_secs_f64(t))
        ),
        None => format!("plan: {what}{idle_text} in {cycles} balanced cycle(s)"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_plain_line_names_the_block_and_estimates_the_rest() {
        let rec = crate::run::BlockRecord {
            index: 2,
            cycle: 1,
            arm: 0,
            start_ns: 1_000_000_000,
            end_ns: 21_500_000_000,
            calls: 27161,
            unstable_calls: 0,
            missed_deadlines: 0,
            scheduled_calls: None,
            ended_early: false,
            steal: None,
        };
        // 3 of 12 blocks in 95 s: 31.67 s a block, 9 left, 285 s = 0:04:45.
        let line = super::plain_line(&rec, "f32", 3, 12, Duration::from_secs(95), 1, true);
        assert_eq!(
            line,
            "block 2 (3 of 12) done · arm f32 · cycle 1 · 27161 calls in 20.5 s · 0:01:35 elapsed · about 0:04:45 left · idle window 3 next"
        );
        let last = crate::run::BlockRecord { ended_early: true, calls: 5, ..rec };
        let line = super::plain_line(&last, "w8", 12, 12, Duration::from_secs(3725), 4, false);
        assert_eq!(
            line,
            "block 2 (12 of 12) ended early · arm w8 · cycle 1 · 5 calls of 4 in 20.5 s · 1:02:05 elapsed"
        );
        // energy: an idle window follows the last block too
        let line = super::plain_line(&last, "w8", 12, 12, Duration::from_secs(60), 1, true);
        assert!(line.ends_with("· 0:01:00 elapsed · idle window 3 next"), "{line}");
    }

    #[test]
    fn the_plan_line_says_how_long_the_measuring_takes() {
        use crate::run::{BlockLimit, Pace, Plan};
        // the energy defaults: 3 cycles of 8 blocks of 20 s, 25 idle windows of 10 s:
        // 480 + 250 = 730 s = 0:12:10
        let mut plan = Plan::saturated(3, BlockLimit::Duration(Duration::from_secs(20)), 20);
        plan.idle = Some(Duration::from_secs(10));
        assert_eq!(
            super::plan_line(&plan, 24),
            "plan: 24 blocks of 20.0 s and 25 idle windows of 10.0 s in 3 balanced cycle(s): 0:12:10 of measuring after the warm-up"
        );
        // paced: 40 calls at 100/s = 0.4 s a block; 4 × 0.4 + 5 × 0.2 = 2.6 s
        plan.block = BlockLimit::Calls(40);
        plan.pace = Some(Pace { rate_hz: 100.0 });
        plan.idle = Some(Duration::from_millis(200));
        plan.cycles = 1;
        assert!(super::plan_line(&plan, 4).starts_with("plan: 4 blocks of 0.4 s and 5 idle windows of 0.2 s"));
        assert!(super::plan_line(&plan, 4).ends_with(": 0:00:02 of measuring after the warm-up"));
        // saturated calls: no length known ahead
        let plan = Plan::saturated(2, BlockLimit::Calls(300), 20);
        assert_eq!(super::plan_line(&plan, 16), "plan: 16 blocks of 300 calls in 2 balanced cycle(s)");
    }

    /// Issue 51, item 5: the time left comes from the plan from the first second, corrected by
    /// the time each phase really took, not from the bar's rate (which says 0 s at first).
    #[test]
    fn the_time_left_comes_from_the_plan() {
        use crate::run::{BlockLimit, Pace, Plan};
        // 2 arms × 1 cycle = 2 blocks of 5 s, 3 idle windows of 2 s, no warm-up estimate
        // (saturated): 0 + 2 + 5 + 2 + 5 + 2 = 16 s.
        let mut plan = Plan::saturated(1, BlockLimit::Duration(Duration::from_secs(5)), 20);
        plan.idle = Some(Duration::from_secs(2));
        let t = super::Timetable::of(&plan, 2, 2).unwrap();
        assert_eq!(t.phases, vec![0.0, 2.0, 5.0, 2.0, 5.0, 2.0]);
        assert_eq!(t.left(0, 0.0), 16.0, "the whole plan at the start");
        assert_eq!(t.left(0, 3.0), 16.0, "a warm-up longer than its estimate adds nothing left");
        assert_eq!(t.left(2, 1.5), 12.5, "1.5 s into the first block: 3.5 + 2 + 5 + 2");
        assert_eq!(t.left(2, 9.0), 9.0, "a block past its length: the phases after it");
        assert_eq!(t.left(5, 2.0), 0.0);
        assert_eq!(t.left(6, 0.0), 0.0, "after the plan");
        // paced at 10/s: blocks of 40 calls (4 s), 5 warm-up calls per arm for 2 arms (1 s),
        // 2 blocks and 3 idle windows of 1 s: 1 + 1 + 4 + 1 + 4 + 1 = 12 s.
        plan.block = BlockLimit::Calls(40);
        plan.pace = Some(Pace { rate_hz: 10.0 });
        plan.idle = Some(Duration::from_secs(1));
        plan.warmup_calls = 5;
        assert_eq!(super::Timetable::of(&plan, 2, 2).unwrap().left(0, 0.0), 12.0);
        // saturated calls: no length known ahead, no planned time left
        assert_eq!(super::Timetable::of(&Plan::saturated(1, BlockLimit::Calls(300), 20), 2, 2), None);
        assert!(indicatif::ProgressStyle::with_template(super::PLANNED_TEMPLATE).is_ok());
    }

    #[test]
    fn the_progress_line_shows_the_time_left() {
        let style = indicatif::ProgressStyle::with_template(super::PROGRESS_TEMPLATE);
        assert!(style.is_ok());
        assert!(super::PROGRESS_TEMPLATE.contains("ETA {eta}"));
    }

    #[test]
    fn the_live_rate_is_in_decisions() {
        assert_eq!(super::progress_message("f32", 0, 7.4, 1), "arm f32 · cycle 0 · 7 calls/s");
        assert_eq!(
            super::progress_message("f32", 2, 2.5, 4),
            "arm f32 · cycle 2 · 10 decisions/s (2 calls/s of 4)"
        );
    }
}
