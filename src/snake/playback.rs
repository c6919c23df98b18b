//! `snake replay`'s playback: a recording's frames shown on a [`Screen`] on the recorded clock
//! scaled by a speed; SPACE pauses, ↑/↓ double or halve the speed, Q quits.

use std::io;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::snake::recording::{Frame, Recording};
use crate::snake::view::{BoardView, Key, Screen, View, REPLAY_KEYS};

/// Slowest and fastest playback speeds.
const SPEED_RANGE: (f64, f64) = (1.0 / 16.0, 64.0);

/// Show the frames on the recorded clock scaled by `speed` until the last frame (held for a
/// second), a quit key, or `stop`.
pub fn show(
    screen: &mut dyn Screen,
    recording: &Recording,
    speed: f64,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let frames: Vec<&Frame> = recording.frames().collect();
    let Some(first_at) = frames.first().map(|f| f.at) else { return Ok(()) };
    let engine =
        recording.metadata.model.get("engine").and_then(Value::as_str).unwrap_or("recorded").to_string();
    let (mut speed, mut paused) = (speed, false);
    let mut virtual_s = 0.0;
    let mut last = Instant::now();
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
            if stop() {
                return Ok(());
            }
            let wait = if paused { 0.1 } else { ((target - virtual_s) / speed).clamp(0.0, 0.05) };
            for key in screen.keys(Duration::from_secs_f64(wait))? {
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
        screen.draw(&view)?;
        if i + 1 == frames.len() {
            screen.keys(Duration::from_secs(1))?;
        }
    }
    Ok(())
}
