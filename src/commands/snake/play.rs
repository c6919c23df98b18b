//! `laya-bench snake play`: the model plays in the terminal view (or headless), round after
//! round, optionally writing a `laya-coreml-snake-v1` recording flushed after every frame.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, IsTerminal};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use serde_json::{json, Map, Value};

use super::tui::{adjust_fps, state_label, BoardView, Key, Tui, View, PLAY_KEYS};
use super::{
    build_arm, hardware, iso_utc_now, load_single, model_metadata, policy, row_length, truncation_warning,
};
use crate::bench::time::positive_duration;
use crate::cli::SnakePlayArgs;
use crate::commands::{interrupt, Failure, Outcome};
use crate::snake::game::Game;
use crate::snake::host_predictor::HostPredictor;
use crate::snake::rate::warm_up;
use crate::snake::recording::{
    End, Frame, FrameStats, Metadata, Record, RecordingWriter, RoundEnd, Summary, RECORDING_FORMAT,
};
use crate::snake::{decide, Decision, PolicyConfig};

/// Warm-up decisions before the clock starts, on seed `seed + 10000`.
const WARMUP_DECISIONS: u64 = 6;
/// Frames the decisions-per-second figure is measured over.
const RATE_WINDOW: usize = 60;
/// How long the final board of a round stays on screen.
const ROUND_END_PAUSE: Duration = Duration::from_secs(1);

type Recorder = RecordingWriter<BufWriter<File>>;

/// What happens after the keys of one poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// One play session: the current round, the counters and the recording.
struct Session<'a, 'b> {
    args: &'a SnakePlayArgs,
    arm: HostPredictor<'b>,
    policy: PolicyConfig,
    engine: String,
    hardware: String,
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
    limit: Option<Duration>,
    last_decision: Option<Decision>,
    recorder: Option<Recorder>,
}

/// Run `snake play`.
pub(crate) fn run(args: &SnakePlayArgs) -> Outcome {
    let policy = policy(&args.game, !args.unassisted)?;
    if !(args.fps.is_finite() && args.fps > 0.0) {
        return Err(Failure::input(anyhow!(
            "--fps {} must be a positive number of decisions per second",
            args.fps
        )));
    }
    let limit = args.duration.as_deref().map(|d| positive_duration("--duration", d)).transpose()?;
    if let Some(path) = &args.record {
        if path.exists() {
            return Err(Failure::input(anyhow!(
                "--record {}: the file exists; recordings are never overwritten, choose a new path",
                path.display()
            )));
        }
    }
    let headless = args.headless || !std::io::stdout().is_terminal();
    let (bundle, name, spec) = load_single(&args.model.model, &args.arm)?;
    let length = row_length(&bundle, &args.game, policy)?;
    let mut arm = build_arm(&bundle, &name, &spec, length)?;
    let warm = Game::new(
        args.game.width,
        args.game.height,
        args.seed.wrapping_add(10_000),
        args.game.initial_length,
    )
    .map_err(Failure::input)?;
    warm_up(warm, policy, &mut arm, WARMUP_DECISIONS)
        .map_err(|e| Failure::run(anyhow!("{e}").context("warm-up")))?;
    arm.reset_counts();
    let game = Game::new(args.game.width, args.game.height, args.seed, args.game.initial_length)
        .map_err(Failure::input)?;
    let recorder = match &args.record {
        Some(path) => Some(open_recording(path, args, &bundle, &arm, policy)?),
        None => None,
    };
    let _ = interrupt::install();
    let mut session = Session {
        args,
        engine: arm.engine(),
        hardware: hardware(),
        arm,
        policy,
        game,
        round: 1,
        fps: args.fps,
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
        limit,
        last_decision: None,
        recorder,
    };
    let played = if headless {
        session.play(None)
    } else {
        let mut tui = Tui::enter(!args.no_alt_screen)
            .context("cannot take over the terminal; use --headless")
            .map_err(Failure::run)?;
        let result = session.play(Some(&mut tui));
        drop(tui);
        result
    };
    let summary = session.finish()?;
    println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    if let Some(w) = truncation_warning(&session.arm) {
        eprintln!("{w}");
    }
    played
}

fn open_recording(
    path: &Path,
    args: &SnakePlayArgs,
    bundle: &crate::laya::bundle::Bundle,
    arm: &HostPredictor<'_>,
    policy: PolicyConfig,
) -> Result<Recorder, Failure> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| {
            format!("--record {}: cannot create the recording (it must not exist)", path.display())
        })
        .map_err(Failure::input)?;
    let mut writer = RecordingWriter::new(BufWriter::new(file));
    let settings = json!({
        "model": args.model.model,
        "arm": args.arm,
        "width": args.game.width,
        "height": args.game.height,
        "initial_length": args.game.initial_length,
        "prompt": args.game.prompt,
        "row_length": arm.identity().length,
        "seed": args.seed,
        "steps": args.steps,
        "duration": args.duration,
        "fps": args.fps,
        "max_speed": args.max_speed,
        "unassisted": args.unassisted,
        "headless": args.headless,
    });
    let metadata = Metadata {
        format: RECORDING_FORMAT.into(),
        created_utc: iso_utc_now(),
        model: model_metadata(bundle, arm, policy.prompt),
        settings: match settings {
            Value::Object(m) => m,
            _ => Map::new(),
        },
        note: "laya-bench snake play; frames hold the board before each executed move".into(),
    };
    writer
        .write(&Record::Metadata(metadata))
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::run)?;
    Ok(writer)
}

impl Session<'_, '_> {
    fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn limit_reached(&self) -> bool {
        self.args.steps.is_some_and(|n| self.steps >= n)
            || self.limit.is_some_and(|d| self.started.elapsed() >= d)
    }

    fn decisions_per_second(&self) -> Option<f64> {
        let (first, last) = (self.frame_times.front()?, self.frame_times.back()?);
        (self.frame_times.len() >= 2 && last > first)
            .then(|| (self.frame_times.len() - 1) as f64 / (last - first))
    }

    fn record(&mut self, record: &Record) -> Result<(), Failure> {
        let Some(writer) = self.recorder.as_mut() else { return Ok(()) };
        writer.write(record).context("cannot append to the recording").map_err(Failure::run)
    }

    fn start_round(&mut self) -> Result<(), Failure> {
        self.round += 1;
        self.reset_requested = false;
        let seed = self.args.seed.wrapping_add(i64::try_from(self.round - 1).unwrap_or(i64::MAX));
        let g = &self.args.game;
        self.game = Game::new(g.width, g.height, seed, g.initial_length).map_err(Failure::input)?;
        self.last_decision = None;
        Ok(())
    }

    fn draw(&self, tui: &mut Tui, decision: Option<&Decision>, label: Option<&str>) -> Result<bool, Failure> {
        let board = BoardView::from_game(&self.game);
        let view = View {
            board,
            decision,
            state: label.unwrap_or_else(|| state_label(&board, self.paused)),
            round: self.round,
            best: self.best,
            interventions: self.interventions,
            guarded: self.policy.guarded,
            engine: &self.engine,
            decisions_per_second: self.decisions_per_second(),
            target_fps: (!self.args.max_speed).then_some(self.fps),
            elapsed_s: self.elapsed_s(),
            keys: PLAY_KEYS,
        };
        tui.draw(&view).context("cannot draw the terminal view").map_err(Failure::run)
    }

    /// Read keys for up to `wait` and apply them.
    fn keys(&mut self, tui: &mut Tui, wait: Duration) -> Result<Flow, Failure> {
        let keys = tui.keys(wait).context("cannot read the keyboard").map_err(Failure::run)?;
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

    /// Sleep (reading keys in the view) until `period` has passed since `since`.
    fn pace(&mut self, tui: &mut Option<&mut Tui>, since: Instant) -> Result<Flow, Failure> {
        if self.args.max_speed {
            return match tui.as_deref_mut() {
                Some(t) => self.keys(t, Duration::ZERO),
                None => Ok(Flow::Continue),
            };
        }
        let period = Duration::from_secs_f64(1.0 / self.fps);
        loop {
            let Some(rest) = period.checked_sub(since.elapsed()).filter(|r| !r.is_zero()) else {
                return Ok(Flow::Continue);
            };
            match tui.as_deref_mut() {
                Some(t) => {
                    if self.keys(t, rest)? == Flow::Quit {
                        return Ok(Flow::Quit);
                    }
                }
                None => std::thread::sleep(rest),
            }
        }
    }

    /// The main loop; returns when a limit is reached, the user quits, or an unassisted round ends.
    fn play(&mut self, mut tui: Option<&mut Tui>) -> Outcome {
        while !self.limit_reached() && !interrupt::raised() {
            let iteration = Instant::now();
            if let Some(t) = tui.as_deref_mut() {
                if self.keys(t, Duration::ZERO)? == Flow::Quit {
                    break;
                }
                if self.paused || !t.fits(self.game.width(), self.game.height()) {
                    let shown = self.last_decision.clone();
                    self.draw(t, shown.as_ref(), None)?;
                    if self.keys(t, Duration::from_millis(100))? == Flow::Quit {
                        break;
                    }
                    continue;
                }
            }
            if self.reset_requested {
                self.start_round()?;
            }
            let decision = decide(&self.game, &mut self.arm, self.policy).map_err(|e| {
                Failure::run(anyhow!("{e}").context(format!(
                    "round {}, tick {}",
                    self.round,
                    self.game.ticks()
                )))
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
            if let Some(t) = tui.as_deref_mut() {
                self.draw(t, Some(&decision), None)?;
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
            let flow = self.pace(&mut tui, iteration)?;
            self.game.step(executed).map_err(|e| Failure::run(anyhow!(e)))?;
            self.steps += 1;
            self.best = self.best.max(self.game.score());
            if self.game.finished() && self.end_round(&mut tui)? == Flow::Quit {
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
            hardware: self.hardware.clone(),
            engine: self.engine.clone(),
            guarded: self.policy.guarded,
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
    fn end_round(&mut self, tui: &mut Option<&mut Tui>) -> Result<Flow, Failure> {
        if !self.game.alive() {
            self.deaths += 1;
        }
        let end = RoundEnd { at: self.elapsed_s(), game: self.game.snapshot() };
        self.record(&Record::RoundEnd(end))?;
        if let Some(t) = tui.as_deref_mut() {
            let shown = self.last_decision.clone();
            self.draw(t, shown.as_ref(), None)?;
            let until = Instant::now() + ROUND_END_PAUSE;
            while let Some(rest) = until.checked_duration_since(Instant::now()).filter(|r| !r.is_zero()) {
                if self.keys(t, rest)? == Flow::Quit {
                    return Ok(Flow::Quit);
                }
            }
        }
        if !self.policy.guarded {
            return Ok(Flow::Quit);
        }
        self.start_round()?;
        Ok(Flow::Continue)
    }

    /// The summary; also written as the recording's end record.
    fn finish(&mut self) -> Result<Summary, Failure> {
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
            guarded: self.policy.guarded,
            network: "offline".into(),
            engine: self.engine.clone(),
            mean_inference_ms: (self.inference_calls > 0)
                .then(|| self.inference_ms_total / self.inference_calls as f64),
        };
        let end = End { summary: summary.clone(), game: self.game.snapshot() };
        self.record(&Record::End(end))?;
        Ok(summary)
    }
}
