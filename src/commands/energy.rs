//! `laya-bench energy`: the published energy protocol (docs/methodology.md) on any arms with any
//! supported power sensor. The run is [`crate::run::measure_energy`]; this file turns the arguments
//! into its settings, shows progress, prints the report and maps the verdict to an exit code.

use anyhow::anyhow;

use super::common;
use super::progress::Bar;
use super::{interrupt, Failure, Outcome};
use crate::cli::EnergyArgs;
use crate::record::status::RunStatus;
use crate::report::Render;
use crate::run::measure_energy::{self, EnergyFlags};
use crate::run::recorder::RunIo;

pub(crate) fn run(args: &EnergyArgs, cx: &crate::backend::Context, out: super::terminal::Output) -> Outcome {
    // From the start, so a signal while the model loads is not lost (a background run
    // inherits SIGINT ignored) and stops the run before it measures.
    let stop = interrupt::install_or_warn();
    let common = &args.run;
    let arms = common::arms(common)?;
    let settings = measure_energy::settings(&EnergyFlags {
        cycles: args.cycles,
        seconds: args.seconds,
        sample_interval: args.sample_interval,
        idle_seconds: args.idle_seconds,
        idle_discard: args.idle_discard,
        max_watts: args.max_watts,
        rate: args.rate,
        warmup: common.warmup,
        boundary: None,
    })?;
    let sensor = measure_energy::sensor_spec(args.sensor.as_deref(), args.sensor_unit.as_deref())?;
    let settings = measure_energy::Settings {
        boundary: measure_energy::declared_boundary(sensor.as_ref(), args.boundary.as_deref())?,
        ..settings
    };
    // A replayed record is read by the run: no output may replace it, even with --overwrite.
    let replayed: Vec<&std::path::Path> = match &sensor {
        Some(crate::power::SensorSpec::Replay { path }) => vec![path.as_path()],
        _ => Vec::new(),
    };
    let checked = common::check(common, "energy", &replayed)?;
    // The sensor is opened and probed before the model and the arms load: a missing or
    // unusable one is refused (exit 2) at once.
    let probed = measure_energy::open(
        &settings,
        measure_energy::SensorChoice { spec: sensor.as_ref(), process: &cx.settings },
    )?;
    let prepared = checked.load(common, &cx.hub)?;
    let (mut setup, input) = common::set_up("energy", &prepared, &arms, cx, out.quiet)?;
    let (bundle, files) = (&prepared.bundle, &prepared.files);
    let mut bar = Bar::for_run(&setup, &probed.settings().plan, common.no_progress || out.quiet);
    let outcome = measure_energy::run(
        bundle,
        &mut setup,
        &input,
        probed,
        RunIo {
            raw: &files.raw,
            overwrite: prepared.replace_raw(),
            stop,
            hurry: stop.map(|_| crate::commands::interrupt::hurry()),
        },
        &mut bar,
    );
    bar.finish();
    let measure_energy::EnergyOutcome { report, failure_kind } = outcome?;
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.markdown();
    files.write(&json, &markdown, &report.csv().unwrap_or_default())?;
    let printed = common::print_results(files, &markdown, out);
    if !out.quiet {
        common::repeat_on_stderr(report.notes.iter().filter(|n| n.starts_with("WARNING")));
    }
    let verdict = match report.verdict(&files.raw, &files.report) {
        None => Ok(()),
        Some(msg) if report.status == RunStatus::Failed => {
            Err(Failure { kind: failure_kind, error: anyhow!(msg) })
        }
        Some(msg) => Err(Failure::run(anyhow!(msg))),
    };
    super::printed_then(printed, verdict)
}
