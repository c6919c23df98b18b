//! `laya-bench snake compare`: the paired check of docs/snake.md §5.1 on two arms, written as a
//! JSON report; exit 1 when the executed moves ever differ or the snake dies.

use anyhow::anyhow;

use super::{
    build_arm, iso_utc_now, output_path, policy, row_length, truncation_warning, warm_up_arm, write_report,
};
use crate::cli::SnakeCompareArgs;
use crate::commands::common::load_bundle;
use crate::commands::{Failure, Outcome};
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::run::arm::split_all as named_arms;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::snake::game::RNG_IDENTITY;
use crate::snake::host_predictor::HostPredictor;
use crate::snake::paired::{
    failures, run_seed, ArmSeedResult, PairedArm, PairedReport, PairedReportSettings, PairedSettings,
    PairedTotals, SeedRun, ORDER, REPORT_KIND, SCHEMA_VERSION,
};
use crate::snake::rate_search::WARMUP_SEED;

/// Untimed guarded decisions per arm before the first seed.
const WARMUP_DECISIONS: u64 = 6;

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
    let output = output_path(args.output.as_deref(), "snake-compare");
    refuse_existing(&output, args.overwrite)?;
    check_folder("--output", &output)?;
    let created_utc = iso_utc_now();
    // Ctrl-C, SIGTERM or SIGHUP stops between steps; the report keeps what ran and fails (exit 1)
    let flag = crate::commands::interrupt::install_or_warn();
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
    let settings = PairedSettings {
        width: g.width,
        height: g.height,
        initial_length: g.initial_length,
        steps: args.steps,
        policy,
    };
    let mut runs = Vec::with_capacity(args.seeds.len());
    // An arm that fails stops the check; the seeds finished before it are still reported.
    let mut stopped: Option<String> = None;
    // A seed's line that cannot be printed fails the command after the report is written.
    let mut printed: Result<(), Failure> = Ok(());
    for &seed in &args.seeds {
        if interrupted() {
            stopped = Some(crate::commands::interrupt::reason(&format!("the run, before seed {seed}")));
            break;
        }
        match run_seed(seed, &settings, &mut a, &mut b, &interrupted) {
            Ok(run) => {
                if printed.is_ok() {
                    printed = outln!("{}", seed_line(&run));
                }
                let steps = run.steps;
                runs.push(run);
                if interrupted() {
                    stopped = Some(crate::commands::interrupt::reason(&format!(
                        "seed {seed}, after {steps} of its steps"
                    )));
                    break;
                }
            }
            Err(e) => {
                stopped = Some(e.to_string());
                break;
            }
        }
    }
    let mut failures = failures(&runs);
    failures.extend(stopped.iter().map(|e| format!("stopped: {e}")));
    let report = PairedReport {
        head: ReportHead::current(SCHEMA_VERSION, REPORT_KIND, created_utc),
        model: ModelInfo::describe(&bundle),
        rng: RNG_IDENTITY.into(),
        settings: PairedReportSettings {
            seeds: args.seeds.clone(),
            steps: args.steps,
            width: g.width,
            height: g.height,
            initial_length: g.initial_length,
            row_length_tokens: length as u64,
            prompt: policy.prompt.as_str().into(),
            guarded: true,
            order: ORDER.into(),
            warmup_decisions: WARMUP_DECISIONS,
        },
        arms: vec![paired_arm("A", &a), paired_arm("B", &b)],
        totals: PairedTotals::of(&runs),
        runs,
        passed: failures.is_empty(),
        failures,
    };
    write_report(&output, &report).map_err(Failure::run)?;
    printed?;
    let t = &report.totals;
    outln!(
        "total: executed agreement {}/{}, proposed agreement {}/{}, deaths {}, interventions A {} B {}, max move-probability difference {}",
        t.executed_agreement,
        t.steps,
        t.proposed_agreement,
        t.steps,
        t.deaths,
        t.interventions_a,
        t.interventions_b,
        t.max_move_probability_difference.map_or("n/a".into(), |d| format!("{d:.4}")),
    )?;
    outln!("report: {}", output.display())?;
    for w in [&a, &b].into_iter().filter_map(|arm| truncation_warning(arm)) {
        eprintln!("{w}");
    }
    if let Some(e) = stopped {
        // an interrupted seed keeps the steps it played; a failed one is left out
        let kept = if interrupted() {
            "what ran, the stopped seed's steps included"
        } else {
            "the seeds finished before it"
        };
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

fn paired_arm(role: &str, arm: &HostPredictor<'_>) -> PairedArm {
    let (decisions, state_truncated_decisions) = arm.truncations();
    PairedArm { role: role.into(), identity: arm.identity().clone(), decisions, state_truncated_decisions }
}

fn latency_text(arm: &ArmSeedResult) -> String {
    match arm.decision_latency {
        Some(l) => format!(
            "mean {:.2} p50 {:.2} p95 {:.2} p99 {:.2} max {:.2} ms",
            l.mean_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
        ),
        None => "no decisions".into(),
    }
}

/// One line per seed: outcome, agreement, shield, probability gap and per-arm decision latency.
fn seed_line(r: &SeedRun) -> String {
    let state = if r.won {
        "won"
    } else if r.alive {
        "alive"
    } else {
        "DEAD"
    };
    format!(
        "seed {}: {} steps, score {} length {} {state}; executed {}/{} proposed {}/{}; interventions A {} B {}; max Δp {}\n  decision A: {}\n  decision B: {}",
        r.seed,
        r.steps,
        r.score,
        r.length,
        r.executed_agreement,
        r.steps,
        r.proposed_agreement,
        r.steps,
        r.a.interventions,
        r.b.interventions,
        r.max_move_probability_difference.map_or("n/a".into(), |d| format!("{d:.4}")),
        latency_text(&r.a),
        latency_text(&r.b),
    )
}
