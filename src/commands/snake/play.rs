//! `laya-bench snake play`: the model plays in the terminal view (or headless), round after
//! round, optionally writing a `laya-coreml-snake-v1` recording flushed after every frame.
//!
//! The session (rounds, pacing, keys, counters, recording) is `crate::snake::session`; this
//! file checks the flags, builds the arm and the recording, takes over the terminal and prints.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, IsTerminal};
use std::path::Path;

use anyhow::{anyhow, Context};
use serde_json::{json, Map, Value};

use super::tui::Tui;
use super::{
    build_arm, hardware, iso_utc_now, load_single, model_metadata, new_game, policy, row_length,
    truncation_warning, warm_up_arm,
};
use crate::cli::SnakePlayArgs;
use crate::commands::{interrupt, Failure, Outcome};
use crate::run::duration_flags::positive_duration;
use crate::snake::host_predictor::HostPredictor;
use crate::snake::recording::{Metadata, Record, RecordingWriter, RECORDING_FORMAT};
use crate::snake::session::{PlayPlan, Session};
use crate::snake::view::Screen;
use crate::snake::PolicyConfig;

/// Warm-up decisions before the clock starts, on seed `seed + 10000`.
const WARMUP_DECISIONS: u64 = 6;

type Recorder = RecordingWriter<BufWriter<File>>;

/// Run `snake play`.
pub(crate) fn run(args: &SnakePlayArgs, cx: &crate::backend::Context) -> Outcome {
    let policy = policy(&args.game, !args.unassisted)?;
    if crate::time::period_of(args.fps).is_none() {
        return Err(Failure::input(anyhow!(
            "--rate {:?} must be a positive number of decisions per second, at least one per 7 days",
            args.fps
        )));
    }
    let limit = args.duration.as_deref().map(|d| positive_duration("--seconds", d)).transpose()?;
    if let Some(path) = &args.record {
        // before the model loads and warms up: its folder must exist and take files
        crate::run::outputs::check_folder("--record", path)?;
        if path.exists() {
            return Err(Failure::input(anyhow!(
                "--record {}: the file exists; recordings are never overwritten, choose a new path",
                path.display()
            )));
        }
    }
    let headless = args.headless || !std::io::stdout().is_terminal();
    let (bundle, name, spec) = load_single(&args.model.model, &args.arm, &cx.hub)?;
    let length = row_length(&bundle, &args.game, policy)?;
    let mut arm = build_arm(&bundle, &name, &spec, length, cx)?;
    warm_up_arm(&mut arm, &args.game, args.seed.wrapping_add(10_000), policy, WARMUP_DECISIONS, "warm-up")?;
    let game = new_game(&args.game, args.seed)?;
    let recorder = match &args.record {
        Some(path) => Some(open_recording(path, args, &bundle, &arm, policy)?),
        None => None,
    };
    let _ = interrupt::install();
    let plan = PlayPlan {
        width: args.game.width,
        height: args.game.height,
        initial_length: args.game.initial_length,
        seed: args.seed,
        steps: args.steps,
        duration: limit,
        fps: args.fps,
        max_speed: args.max_speed,
        policy,
        engine: arm.engine(),
        hardware: hardware(),
    };
    let mut session = Session::new(plan, &mut arm, game, recorder);
    let played = if headless {
        session.play(None, &interrupt::raised)
    } else {
        let mut tui = Tui::enter(!args.no_alt_screen)
            .context("cannot take over the terminal; use --headless")
            .map_err(Failure::run)?;
        let result = session.play(Some(&mut tui as &mut dyn Screen), &interrupt::raised);
        drop(tui);
        result
    };
    let summary = session.finish()?;
    drop(session);
    outln!("{}", crate::commands::versioned("laya-bench-snake-play", &summary)?)?;
    if let Some(w) = truncation_warning(&arm) {
        eprintln!("{w}");
    }
    played.map_err(Failure::of)
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
            format!(
                "--record {}: cannot create the recording (a new file; recordings are never overwritten)",
                path.display()
            )
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
