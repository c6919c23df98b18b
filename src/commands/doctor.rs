//! `laya-bench doctor`: every power sensor and every backend spec kind, and why each is or is
//! not usable on this machine. Always exits 0: it reports, it does not judge.

use anyhow::anyhow;
use serde::Serialize;

use super::{Failure, Outcome};
use crate::backend::registry::{self, BackendStatus};
use crate::cli::DoctorArgs;
use crate::power::sampler::max_gap;
use crate::power::{self, SensorStatus};
use crate::report::raw::{HostInfo, ToolInfo};

/// `doctor --json` (schema_version 1).
#[derive(Debug, Serialize)]
struct Doctor {
    schema_version: u32,
    tool: ToolInfo,
    host: HostInfo,
    /// What `energy` uses without `--sensor`, or `null` with the reason.
    default_sensor: Option<String>,
    default_sensor_missing_reason: Option<String>,
    sensors: Vec<SensorStatus>,
    backends: Vec<BackendStatus>,
}

fn mark(usable: bool) -> &'static str {
    if usable {
        "yes"
    } else {
        "no"
    }
}

pub(crate) fn run(args: &DoctorArgs) -> Outcome {
    let timeout = max_gap(std::time::Duration::from_millis(500));
    let sensors = power::survey(timeout);
    let defaults = power::default_specs();
    let default_sensor = defaults
        .iter()
        .find(|d| sensors.iter().any(|s| s.usable && s.spec == d.to_string()))
        .map(|d| d.to_string());
    let default_sensor_missing_reason = default_sensor.is_none().then(|| {
        let names: Vec<String> = defaults.iter().map(|d| d.to_string()).collect();
        format!("none of {} is usable here; pass --sensor exec:CMD with an external meter", names.join(", "))
    });
    let doc = Doctor {
        schema_version: 1,
        tool: ToolInfo::current(),
        host: HostInfo::detect(),
        default_sensor,
        default_sensor_missing_reason,
        sensors,
        backends: registry::survey(),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&doc).map_err(|e| Failure::run(anyhow!(e)))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "laya-bench {} on {} {} ({} logical CPUs)\n",
        doc.tool.version, doc.host.os, doc.host.arch, doc.host.logical_cpus
    );
    println!("Power sensors (--sensor):");
    for s in &doc.sensors {
        println!("  {:<11} usable: {:<3}  {}", s.spec, mark(s.usable), s.detail);
    }
    match (&doc.default_sensor, &doc.default_sensor_missing_reason) {
        (Some(d), _) => println!("  default for `energy`: {d}"),
        (None, Some(why)) => println!("  default for `energy`: none ({why})"),
        (None, None) => {}
    }
    println!("\nBackends (--arm NAME=SPEC, --backend):");
    for b in &doc.backends {
        println!("  {:<15} usable: {:<3}  {}", b.spec, mark(b.usable), b.detail);
    }
    Ok(())
}
