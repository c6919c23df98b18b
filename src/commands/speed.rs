//! `laya-bench speed`: balanced, audit-grade latency and throughput of one or more arms. The
//! run itself is [`crate::run::measure_speed`]; this file turns the arguments into its plan, shows
//! progress, prints the table and maps the verdict to an exit code.

use anyhow::anyhow;

use super::common;
use super::progress::Bar;
use super::{interrupt, Failure, Outcome};
use crate::cli::SpeedArgs;
use crate::report::Render;
use crate::run::measure_speed;
use crate::run::recorder::RunIo;

pub(crate) fn run(args: &SpeedArgs, cx: &crate::backend::Context, out: super::terminal::Output) -> Outcome {
    // From the start, so a signal while the model loads is not lost (a background run
    // inherits SIGINT ignored) and stops the run before it measures.
    let stop = interrupt::install_or_warn();
    let common = &args.run;
    let swept = common::swept_arms(common, &args.batch, &args.threads)?;
    let plan = measure_speed::batched(
        measure_speed::plan(args.cycles, args.calls, args.seconds, common.warmup)?,
        swept.batch,
    )?;
    let prepared = common::check(common, "speed", &[])?.load(common, &cx.hub)?;
    let (mut setup, input) =
        common::set_up_batched("speed", &prepared, &swept.arms, plan.batch, cx, out.quiet)?;
    let (bundle, files) = (&prepared.bundle, &prepared.files);
    let mut bar = Bar::for_run(&setup, &plan, common.no_progress || out.quiet);
    let measured = measure_speed::measure(
        bundle,
        &mut setup,
        &input,
        &plan,
        RunIo {
            raw: &files.raw,
            overwrite: prepared.replace_raw(),
            stop,
            hurry: stop.map(|_| crate::commands::interrupt::hurry()),
        },
        &mut bar,
    );
    bar.finish();
    let measured = measured?;
    // Every arm runs the run's length and K slots; the rows of a call are its own (a `--batch`
    // sweep), so each arm's FLOP per decision is of the rows its host packs.
    let gflop: Vec<Option<f64>> = setup
        .arms
        .iter()
        .map(|a| {
            let batch = a.requests_per_call(plan.batch);
            measure_speed::gflop_per_decision(bundle, &setup.built.tokens_per_row, &a.host.shapes, batch)
        })
        .collect();
    let report = measure_speed::report_measured(&measured, &files.raw, &gflop);
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.markdown();
    files.write(&json, &markdown, &report.csv().unwrap_or_default())?;
    let printed = common::print_results(files, &markdown, out);
    if !out.quiet {
        common::repeat_on_stderr(&report.warnings);
    }
    let verdict = if let Some(r) = measured.reason {
        Err(Failure::run(anyhow!(
            "the run is INCOMPLETE ({r}); everything measured so far is in {}",
            files.raw.display()
        )))
    } else if !report.stable {
        Err(Failure::run(anyhow!(
            "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in {})",
            files.report.display()
        )))
    } else {
        Ok(())
    };
    super::printed_then(printed, verdict)
}
