//! macOS leaf of `laya-bench doctor`: the probes that only exist on a Mac. Thin: each asks
//! the system one question; the report types and their formatting are portable
//! (`report/doctor.rs`), and the chip is the host probe's (`report/host.rs`, `sysctlbyname`).

use std::path::Path;
use std::process::Command;

use crate::host::HostInfo;
use crate::power::{self, SensorSpec};
use crate::report::doctor::{compute_plan_supported, AppleReport, Probe};
use crate::settings::Settings;

/// Core ML's framework bundle on every macOS that has Core ML.
const CORE_ML_FRAMEWORK: &str = "/System/Library/Frameworks/CoreML.framework";

fn command_line(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program).args(args).output().map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{program} {} failed ({})", args.join(" "), out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() {
        return Err(format!("{program} {} printed nothing", args.join(" ")));
    }
    Ok(text)
}

/// MLX: whether the `mlx:` arms run on the Metal GPU (a product checked against the CPU), or
/// fall back to MLX's CPU device (or are refused) and why: `backend::mlx::device`.
fn mlx_probe(settings: &Settings) -> Probe {
    #[cfg(feature = "mlx")]
    {
        let (available, detail) = crate::backend::mlx::graph::metal_status(settings);
        Probe { available, detail: format!("built with --features mlx; {detail}") }
    }
    #[cfg(not(feature = "mlx"))]
    {
        let _ = settings;
        Probe {
            available: false,
            detail: "not built in: rebuild with `cargo build --release --features mlx`".into(),
        }
    }
}

/// Chip, OS version, Core ML, MLX and one real PSTR read, under the process's `settings`.
pub fn probe(settings: &Settings) -> AppleReport {
    let chip = HostInfo::detect()
        .cpu_model
        .ok_or_else(|| "sysctlbyname(machdep.cpu.brand_string) gave nothing".to_string());
    let version = command_line("sw_vers", &["-productVersion"]);
    let build = command_line("sw_vers", &["-buildVersion"]).ok();
    let core_ml = if Path::new(CORE_ML_FRAMEWORK).is_dir() {
        let plan = match &version {
            Ok(v) if compute_plan_supported(v) => "MLComputePlan available (macOS 14.4 or newer)",
            Ok(_) => "MLComputePlan needs macOS 14.4 or newer: compute-plan evidence is unavailable",
            Err(_) => "OS version unknown, so MLComputePlan availability is unknown",
        };
        Probe { available: true, detail: format!("{CORE_ML_FRAMEWORK} present; {plan}") }
    } else {
        Probe { available: false, detail: format!("{CORE_ML_FRAMEWORK} is missing") }
    };
    let pstr = power::open(&SensorSpec::Pstr, std::time::Duration::from_secs(2), settings)
        .and_then(|mut s| {
            let r = s.read();
            let _ = s.close();
            r
        })
        .map_err(|e| e.to_string())
        .and_then(|r| r.total_power_w().ok_or_else(|| "PSTR read gave no total power".to_string()));
    AppleReport::new(
        chip,
        version.map(|v| format_version(&v, build.as_deref())),
        core_ml,
        mlx_probe(settings),
        pstr,
    )
}

fn format_version(version: &str, build: Option<&str>) -> String {
    match build {
        Some(b) => format!("macOS {version} ({b})"),
        None => format!("macOS {version}"),
    }
}
