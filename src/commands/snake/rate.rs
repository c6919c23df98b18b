//! `laya-bench snake bench`: the rate/stability benchmark of docs/snake.md §5.2, with the report
//! rewritten atomically after every episode and `--resume` to continue it (`--output -`: the
//! report printed once on standard output at the end, the lines then on standard error).
//!
//! Wording rule: the Snake frame time is the *active tick* (a whole decision carrying all three
//! questions, plus rendering and the game step). A single question's latency is never shown
//! as a frame time.

use anyhow::anyhow;

use super::write_report;
use super::{build_arm, load_single, policy, row_length, say, warm_up_arm};
use crate::cli::{SnakeBenchArgs, SnakeGameArgs};
use crate::commands::{interrupt, Failure, Outcome};
use crate::record::model::ModelInfo;
use crate::report::Render;
use crate::run::outputs::{check_new_output, given_or_claimed, is_stdout, shown};
use crate::snake::policy::ModelError;
use crate::snake::rate_search::{ended_early, run_drawn, Episode, Phase, RateReport, RateSettings};
use crate::snake::rate_search::{WARMUP_SEED, WARMUP_STEPS};

/// Run `snake bench`.
pub(crate) fn run(args: &SnakeBenchArgs, cx: &crate::backend::Context) -> Outcome {
    let (output, claim) = given_or_claimed(args.output.as_deref(), "snake-bench", ".json", "report")?;
    let to_stdout = is_stdout(&output);
    let resumed = if args.resume { Some(RateReport::read_to_resume(&output)?) } else { None };
    if resumed.is_none() && claim.is_none() {
        check_new_output(&output, args.overwrite)?;
    }
    let (bundle, name, spec) = load_single(&args.model.model, &args.arm, &cx.hub)?;
    let settings = match &resumed {
        Some(r) => r.settings.clone(),
        None => settings_from_args(args, row_length(&bundle, &args.game, policy(&args.game, true)?)? as u64)?,
    };
    let (width, height, initial_length) = (settings.width, settings.height, settings.initial_length);
    let (prompt, row_length) = (settings.prompt.clone(), Some(settings.row_length_tokens));
    let game_args = SnakeGameArgs { width, height, initial_length, prompt, row_length };
    let policy = policy(&game_args, true)?;
    let length = usize::try_from(settings.row_length_tokens).unwrap_or(usize::MAX);
    let mut arm = build_arm(&bundle, &name, &spec, length, cx)?;
    let resuming = resumed.is_some();
    let mut report =
        RateReport::resume_or_new(resumed, ModelInfo::describe(&bundle), arm.identity(), settings)?;
    if resuming {
        eprintln!(
            "resuming {}: the report's settings are used, finished episodes are kept",
            output.display()
        );
    }
    // A file is rewritten after every episode; standard output gets the report once, at the end.
    let save = |report: &RateReport| if to_stdout { Ok(()) } else { write_report(&output, report) };
    save(&report)?;
    if !report.complete {
        // Before the warm-up, so a signal at any point after the first save stops cleanly.
        let _ = interrupt::install_or_warn();
        warm_up_arm(&mut arm, &game_args, WARMUP_SEED, policy, WARMUP_STEPS, "warm-up")?;
        let engine = arm.engine();
        let mut sink = |report: &RateReport, phase: Phase, episode: &Episode| -> Result<(), ModelError> {
            save(report).map_err(|f| ModelError::from(f.error))?;
            say(to_stdout, &episode.line(phase)).map_err(|f| ModelError::from(f.error))
        };
        let result = run_drawn(&mut report, policy, &mut arm, &engine, &mut sink, &interrupt::raised);
        if result.is_ok() || to_stdout {
            write_report(&output, &report)?;
        }
        if let Err(e) = result {
            return Err(Failure::run(anyhow!(ended_early(&e, (!to_stdout).then_some(output.as_path())))));
        }
    }
    say(to_stdout, &format!("report: {}", shown(&output)))?;
    if let Some(w) = arm.truncation_warning() {
        eprintln!("{w}");
    }
    match report.fastest_tested_stable_fps {
        Some(_) => say(to_stdout, report.terminal().trim_end_matches('\n')),
        None => Err(Failure::run(anyhow!(
            "no tested rate was stable (alive with at most 1% missed deadlines on every soak seed); try lower --rate values"
        ))),
    }
}

/// Settings of a new run with rows of `row_length_tokens` (exit 2 for a bad rate list or no
/// seeds).
fn settings_from_args(args: &SnakeBenchArgs, row_length_tokens: u64) -> Result<RateSettings, Failure> {
    let g = &args.game;
    let settings = RateSettings {
        width: g.width,
        height: g.height,
        initial_length: g.initial_length,
        prompt: g.prompt.clone(),
        row_length_tokens,
        rates_fps: args.rates.clone(),
        sweep_steps: args.sweep_steps,
        soak_steps: args.soak_steps,
        raw_steps: args.raw_steps,
        seeds: args.seeds.clone(),
    };
    Ok(settings.checked()?)
}
