//! `laya-bench snake bench`: the rate/stability benchmark of docs/snake.md §5.2, with the report
//! rewritten atomically after every episode and `--resume` to continue it.
//!
//! Wording rule: the Snake frame time is the *active tick* (a whole decision carrying all three
//! questions, plus rendering and the game step). A single question's latency is never shown
//! as a frame time.

use anyhow::anyhow;

use super::{
    build_arm, load_single, output_path, policy, row_length, truncation_warning, warm_up_arm, write_report,
};
use crate::cli::{SnakeBenchArgs, SnakeGameArgs};
use crate::commands::{interrupt, Failure, Outcome};
use crate::record::model::ModelInfo;
use crate::report::Render;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::snake::game::Game;
use crate::snake::policy::ModelError;
use crate::snake::rate_search::{
    Episode, FrameInfo, Phase, RateError, RateReport, RateRun, RateSettings, WARMUP_SEED, WARMUP_STEPS,
};
use crate::snake::view::OffscreenCanvas;
use crate::snake::Decision;

/// Run `snake bench`.
pub(crate) fn run(args: &SnakeBenchArgs, cx: &crate::backend::Context) -> Outcome {
    let output = output_path(args.output.as_deref(), "snake-bench");
    let resumed = if args.resume { Some(RateReport::read_to_resume(&output)?) } else { None };
    if resumed.is_none() {
        refuse_existing(&output, args.overwrite)?;
        check_folder("--output", &output)?;
    }
    let (bundle, name, spec) = load_single(&args.model.model, &args.arm, &cx.hub)?;
    let settings = match &resumed {
        Some(r) => r.settings.clone(),
        None => {
            let length = row_length(&bundle, &args.game, policy(&args.game, true)?)?;
            settings_from_args(args, length as u64)?
        }
    };
    let game_args = SnakeGameArgs {
        width: settings.width,
        height: settings.height,
        initial_length: settings.initial_length,
        prompt: settings.prompt.clone(),
        row_length: Some(settings.row_length_tokens),
    };
    let policy = policy(&game_args, true)?;
    let length = usize::try_from(settings.row_length_tokens).unwrap_or(usize::MAX);
    let mut arm = build_arm(&bundle, &name, &spec, length, cx)?;
    let model = ModelInfo::describe(&bundle);
    let mut report = match resumed {
        Some(mut r) => {
            r.check_resumable(&model, arm.identity())?;
            r.resumed_sessions += 1;
            eprintln!(
                "resuming {}: the report's settings are used, finished episodes are kept",
                output.display()
            );
            r
        }
        None => RateReport::new(model, arm.identity().clone(), settings.clone()),
    };
    write_report(&output, &report).map_err(Failure::run)?;
    if !report.complete {
        // Before the warm-up, so a signal at any point after the first save stops cleanly.
        let _ = interrupt::install_or_warn();
        warm_up_arm(&mut arm, &game_args, WARMUP_SEED, policy, WARMUP_STEPS, "warm-up")?;
        let engine = arm.engine();
        let mut canvas = OffscreenCanvas::new(settings.width, settings.height);
        let mut render = |game: &Game, decision: &Decision, info: &FrameInfo| -> Result<(), ModelError> {
            canvas.draw_tick(game, decision, info, &engine);
            Ok(())
        };
        let mut sink = |report: &RateReport, phase: Phase, episode: &Episode| -> Result<(), ModelError> {
            write_report(&output, report).map_err(ModelError::from)?;
            outln!("{}", episode.line(phase)).map_err(|f| ModelError::from(f.error))?;
            Ok(())
        };
        let result = RateRun {
            policy,
            predictor: &mut arm,
            render: &mut render,
            sink: &mut sink,
            stop: &interrupt::raised,
        }
        .run(&mut report);
        match result {
            Ok(()) => write_report(&output, &report).map_err(Failure::run)?,
            Err(RateError::Stopped) => {
                return Err(Failure::run(anyhow!(
                    "stopped; {} keeps every finished episode: continue with --resume --output {}",
                    output.display(),
                    output.display()
                )))
            }
            Err(e) => {
                return Err(Failure::run(anyhow!("{e}").context(format!(
                    "the benchmark stopped; finished episodes are in {}",
                    output.display()
                ))))
            }
        }
    }
    outln!("report: {}", output.display())?;
    if let Some(w) = truncation_warning(&arm) {
        eprintln!("{w}");
    }
    match report.fastest_tested_stable_fps {
        Some(_) => crate::commands::write_stdout(&report.terminal()),
        None => Err(Failure::run(anyhow!(
            "no tested rate was stable (alive with at most 1% missed deadlines on every soak seed); try lower --rate values"
        ))),
    }
}

/// Settings of a new run with rows of `row_length_tokens` (exit 2 for a bad rate list or no
/// seeds).
fn settings_from_args(args: &SnakeBenchArgs, row_length_tokens: u64) -> Result<RateSettings, Failure> {
    let settings = RateSettings {
        width: args.game.width,
        height: args.game.height,
        initial_length: args.game.initial_length,
        prompt: args.game.prompt.clone(),
        row_length_tokens,
        rates_fps: args.rates.clone(),
        sweep_steps: args.sweep_steps,
        soak_steps: args.soak_steps,
        raw_steps: args.raw_steps,
        seeds: args.seeds.clone(),
    };
    Ok(settings.checked()?)
}
