//! A `snake play` session: the model plays round after round, paced or flat out, on a
//! [`Screen`] or headless, writing every frame, round end and the final summary to an optional
//! recording (flushed after every record).
//!
//! [`Session::play`] is the one loop both paths drive: headless it sleeps between decisions,
//! on a screen it reads keys while it waits (pause, speed, reset, quit), waits while the
//! screen is too small, and holds the final board of a round for [`ROUND_END_PAUSE`].

use std::collections::VecDeque;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use crate::snake::game::{Game, GameError};
use crate::snake::policy::{decide, Decision, PolicyConfig, PolicyError, Predictor};
use crate::snake::recording::{
    End, Frame, FrameStats, Record, RecordingError, RecordingWriter, RoundEnd, Summary,
};
use crate::snake::view::{adjust_fps, state_label, BoardView, Key, Screen, View, PLAY_KEYS};

/// Frames the decisions-per-second figure is measured over.
const RATE_WINDOW: usize = 60;
/// How long the final board of a round stays on screen.
pub const ROUND_END_PAUSE: Duration = Duration::from_secs(1);

/// What a session plays: the board, the rounds' seeds, the limits and the pacing.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayPlan {
    /// Board columns.
    pub width: usize,
    /// Board rows.
    pub height: usize,
    /// Initial snake length.
    pub initial_length: usize,
    /// Seed of round 1 (round r uses `seed + r - 1`).
    pub seed: i64,
    /// Stop after this many game steps (over all rounds).
    pub steps: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Decisions per second to pace at (the speed keys change it).
    pub fps: f64,
    /// No pacing.
    pub max_speed: bool,
    /// Shield and prompt; unguarded play stops at the first round end.
    pub policy: PolicyConfig,
    /// Engine label (frames, summary).
    pub engine: String,
    /// Hardware name (frames).
    pub hardware: String,
}

/// Why a session stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The next round's board could not be built (a bad input).
    #[error(transparent)]
    NewRound(GameError),
    /// A decision failed; no move was executed.
    #[error("round {round}, tick {tick}: {error}")]
    Decision {
        /// Round number.
        round: u64,
        /// Game tick.
        tick: u64,
        /// What failed.
        error: PolicyError,
    },
    /// The game refused the executed move.
    #[error(transparent)]
    Step(GameError),
    /// The recording could not be appended to.
    #[error("cannot append to the recording")]
    Record(#[source] RecordingError),
    /// The screen could not be drawn.
    #[error("cannot draw the terminal view")]
    Draw(#[source] io::Error),
    /// The keyboard could not be read.
    #[error("cannot read the keyboard")]
    Keys(#[source] io::Error),
}

impl crate::error::Classify for SessionError {
    /// A bad next board is a bad input; anything else failed the run.
    fn kind(&self) -> crate::error::Kind {
        match self {
            SessionError::NewRound(_) => crate::error::Kind::Input,
            _ => crate::error::Kind::Run,
        }
    }
}

/// What happens after the keys of one poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// One play session: the current round, the counters and the recording.
pub struct Session<'a, W: Write> {
    plan: PlayPlan,
    arm: &'a mut dyn Predictor,
    game: Game,
    round: u64,
    fps: f64,
    paused: bool,
    reset_requested: bool,
    best: usize,
    interventions: u64,
    deaths: u64,
    steps: u64,
    inference_calls: u64,
    inference_ms_total: f64,
    frame_times: VecDeque<f64>,
    started: Instant,
    last_decision: Option<Decision>,
    recorder: Option<RecordingWriter<W>>,
}

impl<'a, W: Write> Session<'a, W> {
    /// A session whose round 1 is `game`; its clock starts now.
    pub fn new(
        plan: PlayPlan,
        arm: &'a mut dyn Predictor,
        game: Game,
        recorder: Option<RecordingWriter<W>>,
    ) -> Self {
        Self {
            fps: plan.fps,
            plan,
            arm,
            game,
            round: 1,
            paused: false,
            reset_requested: false,
            best: 0,
            interventions: 0,
            deaths: 0,
            steps: 0,
            inference_calls: 0,
            inference_ms_total: 0.0,
            frame_times: VecDeque::with_capacity(RATE_WINDOW + 1),
            started: Instant::now(),
            last_decision: None,
            recorder,
        }
    }

    fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn limit_reached(&self) -> bool {
        self.plan.steps.is_some_and(|n| self.steps >= n)
            || self.plan.duration.is_some_and(|d| self.started.elapsed() >= d)
    }

    fn decisions_per_second(&self) -> Option<f64> {
        let (first, last) = (self.frame_times.front()?, self.frame_times.back()?);
        (self.frame_times.len() >= 2 && last > first)
            .then(|| (self.frame_times.len() - 1) as f64 / (last - first))
    }

    fn record(&mut self, record: &Record) -> Result<(), SessionError> {
        let Some(writer) = self.recorder.as_mut() else { return Ok(()) };
        writer.write(record).map_err(SessionError::Record)
    }

    fn start_round(&mut self) -> Result<(), SessionError> {
        self.round += 1;
        self.reset_requested = false;
        let seed = self.plan.seed.wrapping_add(i64::try_from(self.round - 1).unwrap_or(i64::MAX));
        let p = &self.plan;
        self.game = Game::new(p.width, p.height, seed, p.initial_length).map_err(SessionError::NewRound)?;
        self.last_decision = None;
        Ok(())
    }

    fn draw(&self, screen: &mut dyn Screen, decision: Option<&Decision>) -> Result<bool, SessionError> {
        let board = BoardView::from_game(&self.game);
        let view = View {
            board,
            decision,
            state: state_label(&board, self.paused),
            round: self.round,
            best: self.best,
            interventions: self.interventions,
            guarded: self.plan.policy.guarded,
            engine: &self.plan.engine,
            decisions_per_second: self.decisions_per_second(),
            target_fps: (!self.plan.max_speed).then_some(self.fps),
            elapsed_s: self.elapsed_s(),
            keys: PLAY_KEYS,
        };
        screen.draw(&view).map_err(SessionError::Draw)
    }

    /// Read keys for up to `wait` and apply them.
    fn keys(&mut self, screen: &mut dyn Screen, wait: Duration) -> Result<Flow, SessionError> {
        let keys = screen.keys(wait).map_err(SessionError::Keys)?;
        for key in keys {
            match key {
                Key::Quit => return Ok(Flow::Quit),
                Key::Pause => self.paused = !self.paused,
                Key::Faster | Key::Slower => self.fps = adjust_fps(self.fps, key),
                Key::Reset => self.reset_requested = true,
            }
        }
        Ok(Flow::Continue)
    }

    /// Sleep (reading keys on the screen) until `period` has passed since `since`.
    fn pace(&mut self, screen: &mut Option<&mut dyn Screen>, since: Instant) -> Result<Flow, SessionError> {
        if self.plan.max_speed {
            return match screen.as_deref_mut() {
                Some(s) => self.keys(s, Duration::ZERO),
                None => Ok(Flow::Continue),
            };
        }
        let period = Duration::from_secs_f64(1.0 / self.fps);
        loop {
            let Some(rest) = period.checked_sub(since.elapsed()).filter(|r| !r.is_zero()) else {
                return Ok(Flow::Continue);
            };
            match screen.as_deref_mut() {
                Some(s) => {
                    if self.keys(s, rest)? == Flow::Quit {
                        return Ok(Flow::Quit);
                    }
                }
                None => std::thread::sleep(rest),
            }
        }
    }

    /// The main loop, on `screen` or headless; returns when a limit is reached, `stop` says
    /// so, the user quits, or an unassisted round ends.
    pub fn play(
        &mut self,
        mut screen: Option<&mut dyn Screen>,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), SessionError> {
        while !self.limit_reached() && !stop() {
            let iteration = Instant::now();
            if let Some(s) = screen.as_deref_mut() {
                if self.keys(s, Duration::ZERO)? == Flow::Quit {
                    break;
                }
                if self.paused || !s.fits(self.game.width(), self.game.height()) {
                    let shown = self.last_decision.clone();
                    self.draw(s, shown.as_ref())?;
                    if self.keys(s, Duration::from_millis(100))? == Flow::Quit {
                        break;
                    }
                    continue;
                }
            }
            if self.reset_requested {
                self.start_round()?;
            }
            let decision = decide(&self.game, &mut *self.arm, self.plan.policy).map_err(|error| {
                SessionError::Decision { round: self.round, tick: self.game.ticks(), error }
            })?;
            let at = self.elapsed_s();
            self.inference_calls += 1;
            self.inference_ms_total += decision.inference_ms;
            self.interventions += u64::from(decision.intervened);
            self.best = self.best.max(self.game.score());
            self.frame_times.push_back(at);
            if self.frame_times.len() > RATE_WINDOW {
                self.frame_times.pop_front();
            }
            if let Some(s) = screen.as_deref_mut() {
                self.draw(s, Some(&decision))?;
            }
            if self.recorder.is_some() {
                let frame = Frame {
                    at,
                    game: self.game.snapshot(),
                    decision: decision.clone(),
                    stats: self.frame_stats(at),
                };
                self.record(&Record::Frame(Box::new(frame)))?;
            }
            let executed = decision.executed;
            self.last_decision = Some(decision);
            let flow = self.pace(&mut screen, iteration)?;
            self.game.step(executed).map_err(SessionError::Step)?;
            self.steps += 1;
            self.best = self.best.max(self.game.score());
            if self.game.finished() && self.end_round(&mut screen)? == Flow::Quit {
                break;
            }
            if flow == Flow::Quit {
                break;
            }
        }
        Ok(())
    }

    fn frame_stats(&self, at: f64) -> FrameStats {
        FrameStats {
            hardware: self.plan.hardware.clone(),
            engine: self.plan.engine.clone(),
            guarded: self.plan.policy.guarded,
            interventions: self.interventions,
            best: self.best,
            round: self.round,
            paused: self.paused,
            elapsed: at,
            steps_per_second: self.decisions_per_second(),
        }
    }

    /// A round ended: count a death, record it, show the final board, start the next round
    /// (or stop, when unassisted).
    fn end_round(&mut self, screen: &mut Option<&mut dyn Screen>) -> Result<Flow, SessionError> {
        if !self.game.alive() {
            self.deaths += 1;
        }
        let end = RoundEnd { at: self.elapsed_s(), game: self.game.snapshot() };
        self.record(&Record::RoundEnd(end))?;
        if let Some(s) = screen.as_deref_mut() {
            let shown = self.last_decision.clone();
            self.draw(s, shown.as_ref())?;
            let until = Instant::now() + ROUND_END_PAUSE;
            while let Some(rest) = until.checked_duration_since(Instant::now()).filter(|r| !r.is_zero()) {
                if self.keys(s, rest)? == Flow::Quit {
                    return Ok(Flow::Quit);
                }
            }
        }
        if !self.plan.policy.guarded {
            return Ok(Flow::Quit);
        }
        self.start_round()?;
        Ok(Flow::Continue)
    }

    /// The summary; also written as the recording's end record.
    pub fn finish(&mut self) -> Result<Summary, SessionError> {
        let seconds = self.elapsed_s();
        let summary = Summary {
            steps: self.steps,
            inference_calls: self.inference_calls,
            seconds,
            steps_per_second: if seconds > 0.0 { self.steps as f64 / seconds } else { 0.0 },
            score: self.game.score(),
            length: self.game.body().len(),
            best_score: self.best,
            interventions: self.interventions,
            deaths: self.deaths,
            guarded: self.plan.policy.guarded,
            network: "offline".into(),
            engine: self.plan.engine.clone(),
            mean_inference_ms: (self.inference_calls > 0)
                .then(|| self.inference_ms_total / self.inference_calls as f64),
        };
        let end = End { summary: summary.clone(), game: self.game.snapshot() };
        self.record(&Record::End(end))?;
        Ok(summary)
    }

    /// The recording, when there is one.
    #[cfg(test)]
    fn into_recorder(self) -> Option<RecordingWriter<W>> {
        self.recorder
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use serde_json::Map;

    use super::*;
    use crate::snake::recording::{read_recording, replay, Metadata, RECORDING_FORMAT};

    use crate::snake::policy::even_moves as even;

    fn plan(steps: Option<u64>) -> PlayPlan {
        PlayPlan {
            width: 24,
            height: 16,
            initial_length: 6,
            seed: 7,
            steps,
            duration: None,
            fps: 12.0,
            max_speed: true,
            policy: PolicyConfig::default(),
            engine: "stub".into(),
            hardware: "test".into(),
        }
    }

    /// A screen that hands out one batch of keys per poll and counts its frames.
    struct Scripted {
        fits: bool,
        keys: RefCell<Vec<Vec<Key>>>,
        frames: usize,
    }

    impl Screen for Scripted {
        fn fits(&self, _: usize, _: usize) -> bool {
            self.fits
        }

        fn draw(&mut self, _: &View<'_>) -> io::Result<bool> {
            self.frames += 1;
            Ok(self.fits)
        }

        fn keys(&mut self, _: Duration) -> io::Result<Vec<Key>> {
            let mut keys = self.keys.borrow_mut();
            Ok(if keys.is_empty() { Vec::new() } else { keys.remove(0) })
        }
    }

    #[test]
    fn a_headless_session_records_every_frame_and_the_end_and_replays() {
        let mut arm = even;
        let game = Game::new(24, 16, 7, 6).unwrap();
        let mut writer = RecordingWriter::new(Vec::new());
        let metadata = Metadata {
            format: RECORDING_FORMAT.into(),
            created_utc: "2025-01-01T00:00:00Z".into(),
            model: Map::new(),
            settings: Map::new(),
            note: "test".into(),
        };
        writer.write(&Record::Metadata(metadata)).unwrap();
        let mut session = Session::new(plan(Some(5)), &mut arm, game, Some(writer));
        session.play(None, &|| false).unwrap();
        let summary = session.finish().unwrap();
        assert_eq!((summary.steps, summary.inference_calls, summary.engine.as_str()), (5, 5, "stub"));
        assert!(summary.guarded && summary.mean_inference_ms.is_some());
        let bytes = session.into_recorder().unwrap().into_inner();
        let recording = read_recording(bytes.as_slice()).unwrap();
        assert_eq!(recording.frames().count(), 5);
        assert_eq!(recording.end().map(|e| e.summary.steps), Some(5));
        assert_eq!(replay(&recording).unwrap().frames, 5);
        // Played back flat out, every frame is shown; a quit key stops before the first.
        let mut screen = Scripted { fits: true, keys: RefCell::new(Vec::new()), frames: 0 };
        crate::snake::playback::show(&mut screen, &recording, 64.0, &|| false).unwrap();
        assert_eq!(screen.frames, 5);
        let mut screen = Scripted { fits: true, keys: RefCell::new(vec![vec![Key::Quit]; 10]), frames: 0 };
        crate::snake::playback::show(&mut screen, &recording, 1.0 / 16.0, &|| false).unwrap();
        assert_eq!(screen.frames, 1);
    }

    #[test]
    fn quit_stops_at_once_and_pause_holds_the_game() {
        let mut arm = even;
        let game = Game::new(24, 16, 7, 6).unwrap();
        let mut session: Session<'_, Vec<u8>> = Session::new(plan(None), &mut arm, game, None);
        let mut screen = Scripted {
            fits: true,
            keys: RefCell::new(vec![vec![Key::Pause], vec![], vec![Key::Quit]]),
            frames: 0,
        };
        session.play(Some(&mut screen), &|| false).unwrap();
        // Paused at the first poll: one frame drawn, no decision made, then quit.
        assert_eq!(screen.frames, 1);
        assert_eq!(session.finish().unwrap().inference_calls, 0);
    }

    #[test]
    fn a_screen_too_small_waits_until_stopped() {
        let mut arm = even;
        let game = Game::new(24, 16, 7, 6).unwrap();
        let mut session: Session<'_, Vec<u8>> = Session::new(plan(None), &mut arm, game, None);
        let mut screen = Scripted { fits: false, keys: RefCell::new(Vec::new()), frames: 0 };
        let polls = Cell::new(0);
        let stop = || {
            polls.set(polls.get() + 1);
            polls.get() > 3
        };
        session.play(Some(&mut screen), &stop).unwrap();
        assert_eq!(screen.frames, 3);
        assert_eq!(session.finish().unwrap().steps, 0);
    }
}
