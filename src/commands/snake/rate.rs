//! `laya-bench snake bench`: the rate/stability benchmark of docs/snake.md §5.2, with the report
//! rewritten atomically after every episode and `--resume` to continue it.
//!
//! Wording rule: the Snake frame time is the *active tick* (a whole decision carrying all three
//! questions, plus rendering and the game step). A single question's latency is never shown
//! as a frame time.

use std::path::Path;

use anyhow::{anyhow, Context};
use serde_json::{json, Map, Value};

use super::{
    build_arm, iso_utc_now, load_single, output_path, policy, row_length, truncation_warning, warm_up_arm,
    write_report,
};
use crate::cli::{SnakeBenchArgs, SnakeGameArgs};
use crate::commands::{interrupt, Failure, Outcome};
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::snake::game::{Game, RNG_IDENTITY};
use crate::snake::policy::ModelError;
use crate::snake::rate_search::{
    parse_rates, Episode, FrameInfo, Phase, RateError, RateReport, RateRun, RateSettings, REPORT_KIND,
    SCHEMA_VERSION, WARMUP_SEED, WARMUP_STEPS,
};
use crate::snake::view::{BoardView, OffscreenCanvas, View, PLAY_KEYS};
use crate::snake::Decision;

/// Run `snake bench`.
pub(crate) fn run(args: &SnakeBenchArgs, cx: &crate::backend::Context) -> Outcome {
    let output = output_path(args.output.as_deref(), "snake-bench");
    let resumed = if args.resume { Some(read_report(&output)?) } else { None };
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
            check_identity(&r, &model, arm.identity())?;
            r.resumed_sessions += 1;
            eprintln!(
                "resuming {}: the report's settings are used, finished episodes are kept",
                output.display()
            );
            r
        }
        None => RateReport {
            head: ReportHead::current(SCHEMA_VERSION, REPORT_KIND, iso_utc_now()),
            model,
            arm: arm.identity().clone(),
            rng: RNG_IDENTITY.into(),
            method: method(),
            settings: settings.clone(),
            raw_top1: Vec::new(),
            uncapped: None,
            sweep: Vec::new(),
            uncapped_soak: Vec::new(),
            soak_attempts: Vec::new(),
            fastest_tested_stable_fps: None,
            complete: false,
            resumed_sessions: 0,
        },
    };
    write_report(&output, &report).map_err(Failure::run)?;
    if !report.complete {
        // Before the warm-up, so a signal at any point after the first save stops cleanly.
        let _ = interrupt::install_or_warn();
        warm_up_arm(&mut arm, &game_args, WARMUP_SEED, policy, WARMUP_STEPS, "warm-up")?;
        let engine = arm.engine();
        let mut canvas = OffscreenCanvas::new(settings.width, settings.height);
        let mut render = |game: &Game, decision: &Decision, info: &FrameInfo| -> Result<(), ModelError> {
            let board = BoardView::from_game(game);
            canvas.draw(&View {
                board,
                decision: Some(decision),
                state: "LIVE",
                round: 1,
                best: game.score(),
                interventions: info.interventions,
                guarded: info.guarded,
                engine: &engine,
                decisions_per_second: None,
                target_fps: info.target_fps,
                elapsed_s: info.elapsed_s,
                keys: PLAY_KEYS,
            });
            Ok(())
        };
        let mut sink = |report: &RateReport, phase: Phase, episode: &Episode| -> Result<(), ModelError> {
            write_report(&output, report).map_err(ModelError::from)?;
            outln!("{}", episode_line(phase, episode)).map_err(|f| ModelError::from(f.error))?;
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
        Some(fps) => {
            outln!("fastest tested stable rate: {fps} decisions/s (every soak seed alive, ≤1% deadline misses)")?;
            Ok(())
        }
        None => Err(Failure::run(anyhow!(
            "no tested rate was stable (alive with at most 1% missed deadlines on every soak seed); try lower --rates"
        ))),
    }
}

/// Settings of a new run with rows of `row_length_tokens` (exit 2 for a bad rate list or no
/// seeds).
fn settings_from_args(args: &SnakeBenchArgs, row_length_tokens: u64) -> Result<RateSettings, Failure> {
    let rates_fps = parse_rates(&args.rates)?;
    if args.seeds.is_empty() {
        return Err(Failure::input(anyhow!("--seeds needs at least one seed, e.g. --seeds 101,102")));
    }
    Ok(RateSettings {
        width: args.game.width,
        height: args.game.height,
        initial_length: args.game.initial_length,
        prompt: args.game.prompt.clone(),
        row_length_tokens,
        rates_fps,
        sweep_steps: args.sweep_steps,
        soak_steps: args.soak_steps,
        raw_steps: args.raw_steps,
        seeds: args.seeds.clone(),
    })
}

/// Read a report to resume (exit 2 when it is missing, unreadable or another kind).
fn read_report(path: &Path) -> Result<RateReport, Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| {
            format!("--resume: cannot read {}; give the --output of an earlier snake bench", path.display())
        })
        .map_err(Failure::input)?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("--resume: {} is not JSON", path.display()))
        .map_err(Failure::input)?;
    let kind = value.get("kind").and_then(Value::as_str);
    let version = value.get("schema_version").and_then(Value::as_u64);
    if kind != Some(REPORT_KIND) || version != Some(u64::from(SCHEMA_VERSION)) {
        return Err(Failure::input(anyhow!(
            "--resume: {} is not a snake bench report of schema_version {SCHEMA_VERSION} (kind {}, schema_version {})",
            path.display(),
            kind.map_or_else(|| "missing".to_string(), |k| format!("`{k}`")),
            version.map_or_else(|| "missing".to_string(), |v| v.to_string())
        )));
    }
    serde_json::from_value(value)
        .with_context(|| format!("--resume: {} does not hold a complete snake bench report", path.display()))
        .map_err(Failure::input)
}

/// A resumed report must continue with the same model and arm (exit 2 otherwise).
fn check_identity(
    report: &RateReport,
    model: &ModelInfo,
    arm: &crate::record::ArmInfo,
) -> Result<(), Failure> {
    let old = &report.arm;
    let mut changed = Vec::new();
    if report.model != *model {
        changed.push(format!("model {:?} → {:?}", report.model.spec, model.spec));
    }
    for (field, a, b) in [
        ("arm spec", &old.spec, &arm.spec),
        ("backend", &old.backend, &arm.backend),
        ("precision", &old.precision, &arm.precision),
        ("weight fingerprint", &old.fingerprint, &arm.fingerprint),
    ] {
        if a != b {
            changed.push(format!("{field} {a} → {b}"));
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    Err(Failure::input(anyhow!(
        "--resume: the report was measured with a different model or arm ({}); resume with the same --model and --arm, or start a new --output",
        changed.join(", ")
    )))
}

/// The method prose stored in every report.
fn method() -> Map<String, Value> {
    let value = json!({
        "stable": "A rate is stable when every soak seed stays alive with at most 1% of its ticks over the tick period; fastest_tested_stable_fps is the fastest rate whose soak passed, tried from the fastest passing sweep rate down.",
        "timing": "active_tick = one whole decision (planner features, one predict call carrying the move, risk and food questions, decoding, shield) + drawing a full frame into an in-memory terminal + the game step. decision = the whole decision; inference = its predict call. The Snake frame time is the active tick, never the latency of a single question.",
        "color_system": "truecolor",
        "excluded": "model loading, the untimed warm-up (20 shielded steps on seed 9001), pacing sleeps (counted only in seconds and achieved_steps_per_second), report writing between episodes",
        "safety": "the cycle-safety shield is on in every phase except raw_top1; shielded episodes check the cycle-order and food-progress invariants on every tick",
        "limitation": "one arm on this host's backend; paced rates use a sleep after each tick, so a rate the machine cannot sustain fails by missed deadlines, not by skipped ticks",
        "uncapped_stability": "uncapped and uncapped_soak run without pacing: they show survival and the unpaced decision rate, not a stable rate",
    });
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// One printed line per episode.
fn episode_line(phase: Phase, e: &Episode) -> String {
    let mode = if e.guarded { "shield" } else { "top-1" };
    let target = e.target_fps.map_or("uncapped".to_string(), |f| format!("{f}/s"));
    let actual = e.achieved_steps_per_second.map_or("n/a".into(), |r| format!("{r:.1}/s"));
    let p99 = e.active_tick.map_or("n/a".into(), |l| format!("{:.2}ms", l.p99_ms));
    let miss = e.miss_fraction.map_or("n/a".into(), |m| format!("{:.1}%", m * 100.0));
    format!(
        "{:<13} {mode} seed={} target={target} steps={} score={} alive={} actual={actual} active-tick-p99={p99} miss={miss}",
        phase.as_str(),
        e.seed,
        e.steps,
        e.score,
        e.alive
    )
}
