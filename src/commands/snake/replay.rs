//! `laya-bench snake replay`: verify a recording by re-simulating the game from its executed
//! moves, then show its frames at the recorded pace (or print the verification headless).

use std::fs::File;
use std::io::{BufReader, IsTerminal};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use serde_json::{json, Value};

use super::tui::{BoardView, Key, Tui, View, REPLAY_KEYS};
use crate::cli::SnakeReplayArgs;
use crate::commands::{interrupt, Failure, Outcome};
use crate::snake::recording::{read_recording, replay, Frame, Recording, RecordingError, ReplaySummary};

/// Slowest and fastest playback speeds.
const SPEED_RANGE: (f64, f64) = (1.0 / 16.0, 64.0);

/// Run `snake replay`.
pub(crate) fn run(args: &SnakeReplayArgs) -> Outcome {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(Failure::input(anyhow!(
            "--speed {} must be a positive number (1 = recorded pace)",
            args.speed
        )));
    }
    let path = &args.file;
    let file = File::open(path)
        .with_context(|| format!("cannot open the recording {}", path.display()))
        .map_err(Failure::input)?;
    let recording = read_recording(BufReader::new(file)).map_err(|e| {
        let code = if matches!(e, RecordingError::Io(_)) { 1 } else { 2 };
        Failure {
            code,
            error: anyhow!("{e}").context(format!("{} is not a valid recording", path.display())),
        }
    })?;
    let verified = replay(&recording)
        .map_err(|e| Failure::run(anyhow!("{e}").context(format!("{} does not replay", path.display()))))?;
    if !args.headless && std::io::stdout().is_terminal() {
        let _ = interrupt::install();
        let mut tui = Tui::enter(true)
            .context("cannot take over the terminal; use --headless")
            .map_err(Failure::run)?;
        let shown = show(&mut tui, &recording, args.speed);
        drop(tui);
        shown?;
    }
    println!("{}", serde_json::to_string_pretty(&summary(path, &recording, &verified)).unwrap_or_default());
    Ok(())
}

/// The verification summary printed at the end.
fn summary(path: &std::path::Path, recording: &Recording, verified: &ReplaySummary) -> Value {
    let frames: Vec<&Frame> = recording.frames().collect();
    let span = match (frames.first(), frames.last()) {
        (Some(a), Some(b)) => Some(b.at - a.at),
        _ => None,
    };
    let end = recording.end().map(|e| &e.summary);
    json!({
        "file": path.display().to_string(),
        "format": recording.metadata.format,
        "model": recording.metadata.model.get("name"),
        "verified": true,
        "frames": verified.frames,
        "rounds": verified.rounds,
        "interventions": verified.interventions,
        "recorded_span_s": span,
        "complete": end.is_some(),
        "end_summary": end,
    })
}

/// Show the frames on the recorded clock scaled by `speed`; SPACE pauses, ↑/↓ double or halve
/// the speed, Q quits.
fn show(tui: &mut Tui, recording: &Recording, speed: f64) -> Result<(), Failure> {
    let frames: Vec<&Frame> = recording.frames().collect();
    let Some(first_at) = frames.first().map(|f| f.at) else { return Ok(()) };
    let engine =
        recording.metadata.model.get("engine").and_then(Value::as_str).unwrap_or("recorded").to_string();
    let (mut speed, mut paused) = (speed, false);
    let mut virtual_s = 0.0;
    let mut last = Instant::now();
    let io = |e: std::io::Error| Failure::run(anyhow!(e).context("terminal view"));
    for (i, frame) in frames.iter().enumerate() {
        let target = frame.at - first_at;
        loop {
            let now = Instant::now();
            if !paused {
                virtual_s += now.duration_since(last).as_secs_f64() * speed;
            }
            last = now;
            if virtual_s >= target && !paused {
                break;
            }
            if interrupt::raised() {
                return Ok(());
            }
            let wait = if paused { 0.1 } else { ((target - virtual_s) / speed).clamp(0.0, 0.05) };
            for key in tui.keys(Duration::from_secs_f64(wait)).map_err(io)? {
                match key {
                    Key::Quit => return Ok(()),
                    Key::Pause => paused = !paused,
                    Key::Faster => speed = (speed * 2.0).min(SPEED_RANGE.1),
                    Key::Slower => speed = (speed / 2.0).max(SPEED_RANGE.0),
                    Key::Reset => {}
                }
            }
        }
        let label = if paused { "PAUSED".to_string() } else { format!("RECORDED RUN · {speed}×") };
        let view = View {
            board: BoardView::from_snapshot(&frame.game),
            decision: Some(&frame.decision),
            state: &label,
            round: frame.stats.round,
            best: frame.stats.best,
            interventions: frame.stats.interventions,
            guarded: frame.stats.guarded,
            engine: &engine,
            decisions_per_second: frame.stats.steps_per_second,
            target_fps: None,
            elapsed_s: frame.stats.elapsed,
            keys: REPLAY_KEYS,
        };
        tui.draw(&view).map_err(io)?;
        if i + 1 == frames.len() {
            tui.keys(Duration::from_secs(1)).map_err(io)?;
        }
    }
    Ok(())
}
