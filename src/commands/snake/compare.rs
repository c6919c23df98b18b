//! `laya-bench snake compare`: the paired check of docs/snake.md §5.1 on two arms, written as a
//! JSON report (`--output -`: on standard output, the lines then on standard error); exit 1
//! when the executed moves ever differ or the snake dies. The seeds and the report are
//! `crate::snake::compare`.

use anyhow::anyhow;

use super::{build_arm, policy, row_length, say, warm_up_arm, write_report};
use crate::cli::SnakeCompareArgs;
use crate::commands::common::load_bundle;
use crate::commands::{interrupt, Failure, Outcome};
use crate::record::model::ModelInfo;
use crate::report::Render;
use crate::run::arm::split_all as named_arms;
use crate::run::outputs::{check_new_output, given_or_claimed, is_stdout, shown};
use crate::snake::compare::{play_seeds, Stopped, WARMUP_DECISIONS};
use crate::snake::paired::{PairedArm, PairedReport, PairedReportSettings, PairedSettings, SeedRun};
use crate::snake::rate_search::WARMUP_SEED;
use crate::time::iso_utc_now;

/// Run `snake compare`.
pub(crate) fn run(args: &SnakeCompareArgs, cx: &crate::backend::Context) -> Outcome {
    let policy = policy(&args.game, true)?;
    let arms = named_arms(&args.arms)?;
    let [(name_a, spec_a), (name_b, spec_b)] = arms.as_slice() else {
        return Err(Failure::input(anyhow!(
            "snake compare needs exactly two arms (got {}): --arm A=SPEC --arm B=SPEC, e.g. --arm a=portable:f32 --arm b=portable:f16",
            arms.len()
        )));
    };
    let (output, claim) = given_or_claimed(args.output.as_deref(), "snake-compare", ".json", "report")?;
    if claim.is_none() {
        check_new_output(&output, args.overwrite)?;
    }
    let to_stdout = is_stdout(&output);
    let created_utc = iso_utc_now();
    // Ctrl-C, SIGTERM or SIGHUP stops between steps; the report keeps what ran and fails (exit 1)
    let flag = interrupt::install_or_warn();
    let interrupted = || flag.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    let g = &args.game;
    let length = row_length(&bundle, g, policy)?;
    let mut a = build_arm(&bundle, name_a, spec_a, length, cx)?;
    let mut b = build_arm(&bundle, name_b, spec_b, length, cx)?;
    for arm in [&mut a, &mut b] {
        let what = format!("warm-up of arm `{}`", arm.identity().name);
        warm_up_arm(arm, g, WARMUP_SEED, policy, WARMUP_DECISIONS, &what)?;
    }
    let (width, height, initial_length, steps) = (g.width, g.height, g.initial_length, args.steps);
    let settings = PairedSettings { width, height, initial_length, steps, policy };
    // A seed's line that cannot be printed fails the command after the report is written.
    let mut printed: Result<(), Failure> = Ok(());
    let mut on_seed = |run: &SeedRun| {
        if printed.is_ok() {
            printed = say(to_stdout, &run.line());
        }
    };
    let played = play_seeds(&args.seeds, &settings, &mut a, &mut b, &interrupted, &mut on_seed);
    // An arm that fails stops the check; the seeds finished before it are still reported.
    let stopped = played.stopped.map(|s| match s {
        Stopped::Interrupted(during) => {
            (interrupt::reason(&during), "what ran, the stopped seed's steps included")
        }
        Stopped::Failed(e) => (e.to_string(), "the seeds finished before it"),
    });
    let report = PairedReport::new(
        created_utc,
        ModelInfo::describe(&bundle),
        PairedReportSettings::new(&args.seeds, &settings, length),
        [PairedArm::of("A", &a), PairedArm::of("B", &b)],
        played.runs,
        stopped.as_ref().map(|(e, _)| e.as_str()),
    );
    write_report(&output, &report)?;
    printed?;
    say(to_stdout, &report.terminal())?;
    say(to_stdout, &format!("report: {}", shown(&output)))?;
    for w in [&a, &b].into_iter().filter_map(|arm| arm.truncation_warning()) {
        eprintln!("{w}");
    }
    if let Some((e, kept)) = stopped {
        return Err(Failure::run(anyhow!("{e} (the report keeps {kept})")));
    }
    if report.passed {
        Ok(())
    } else {
        Err(Failure::run(anyhow!(
            "the arms do not drive the game identically: {}",
            report.failures.join("; ")
        )))
    }
}
