//! `laya-bench snake replay`: verify a recording by re-simulating the game from its executed
//! moves, then show its frames at the recorded pace (or print the verification headless).
//! The playback itself is `crate::snake::playback`.

use std::fs::File;
use std::io::{BufReader, IsTerminal};

use anyhow::{anyhow, Context};
use serde_json::{json, Value};

use super::tui::Tui;
use crate::cli::SnakeReplayArgs;
use crate::commands::{interrupt, Failure, Outcome};
use crate::error::Classify;
use crate::snake::playback::show;
use crate::snake::recording::{read_recording, replay, Frame, Recording, ReplaySummary};

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
    let recording = read_recording(BufReader::new(file)).map_err(|e| Failure {
        kind: e.kind(),
        error: anyhow!("{e}").context(format!("{} is not a valid recording", path.display())),
    })?;
    let verified = replay(&recording)
        .map_err(|e| Failure::run(anyhow!("{e}").context(format!("{} does not replay", path.display()))))?;
    if !args.headless && std::io::stdout().is_terminal() {
        let _ = interrupt::install();
        let mut tui = Tui::enter(true)
            .context("cannot take over the terminal; use --headless")
            .map_err(Failure::run)?;
        let shown = show(&mut tui, &recording, args.speed, &interrupt::raised);
        drop(tui);
        shown.map_err(|e| Failure::run(anyhow!(e).context("terminal view")))?;
    }
    outln!(
        "{}",
        crate::commands::versioned("laya-bench-snake-replay", summary(path, &recording, &verified))?
    )?;
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
        "complete": end.is_some() && recording.cut_line.is_none(),
        "cut_line": recording.cut_line,
        "end_summary": end,
    })
}
