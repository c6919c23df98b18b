//! `laya-bench snake play`: the model plays in the terminal view (or headless), round after
//! round, optionally writing a `laya-coreml-snake-v1` recording flushed after every frame.
//!
//! The session (rounds, pacing, keys, counters, recording) is `crate::snake::session`, the
//! recording file `crate::snake::recording`; this file checks the flags, builds the arm, takes
//! over the terminal and prints.

use std::io::IsTerminal;

use anyhow::{anyhow, Context};
use serde_json::{json, Map, Value};

use super::tui::Tui;
use super::{build_arm, hardware, iso_utc_now, load_single, new_game, policy, row_length, warm_up_arm};
use crate::cli::SnakePlayArgs;
use crate::commands::{interrupt, Failure, Outcome};
use crate::run::duration_flags::positive_duration;
use crate::snake::recording::{self, Metadata, RECORDING_FORMAT};
use crate::snake::session::{PlayPlan, Session};
use crate::snake::view::Screen;

/// Warm-up decisions before the clock starts, on seed `seed + 10000`.
const WARMUP_DECISIONS: u64 = 6;

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
        recording::check_new_path(path)?;
    }
    let headless = args.headless || !std::io::stdout().is_terminal();
    let (bundle, name, spec) = load_single(&args.model.model, &args.arm, &cx.hub)?;
    let length = row_length(&bundle, &args.game, policy)?;
    let mut arm = build_arm(&bundle, &name, &spec, length, cx)?;
    warm_up_arm(&mut arm, &args.game, args.seed.wrapping_add(10_000), policy, WARMUP_DECISIONS, "warm-up")?;
    let game = new_game(&args.game, args.seed)?;
    let g = &args.game;
    let recorder = match &args.record {
        Some(path) => {
            // Every flag as given, the row length as built.
            let settings = json!({
                "model": args.model.model, "arm": args.arm, "width": g.width, "height": g.height,
                "initial_length": g.initial_length, "prompt": g.prompt, "row_length": arm.identity().length,
                "seed": args.seed, "steps": args.steps, "duration": args.duration, "fps": args.fps,
                "max_speed": args.max_speed, "unassisted": args.unassisted, "headless": args.headless,
            });
            let metadata = Metadata {
                format: RECORDING_FORMAT.into(),
                created_utc: iso_utc_now(),
                model: arm.model_metadata(&bundle, policy.prompt, &hardware()),
                settings: if let Value::Object(m) = settings { m } else { Map::new() },
                note: "laya-bench snake play; frames hold the board before each executed move".into(),
            };
            Some(recording::create(path, metadata)?)
        }
        None => None,
    };
    let _ = interrupt::install();
    let plan = PlayPlan {
        width: g.width,
        height: g.height,
        initial_length: g.initial_length,
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
    if let Some(w) = arm.truncation_warning() {
        eprintln!("{w}");
    }
    played.map_err(Failure::of)
}
