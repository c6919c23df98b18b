//! What the running macOS can load and where Core ML says it can run: the package's
//! specification version against the OS version (checked before Core ML compiles anything),
//! the compute units against the OS, and the device text every report prints, decided from the
//! requested compute units and the devices Core ML reports. Pure functions, tested on every OS;
//! the macOS leaf only reads the OS version and the device list.

use std::fmt;

use super::{ComputeUnits, CoreMlError};

/// A macOS version (`15.1`, `26.0.1`), as `kern.osproductversion` or `sw_vers -productVersion`
/// print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacOsVersion {
    /// Major version (10, 11, …, 15, 26).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version (0 when not printed).
    pub patch: u32,
}

impl MacOsVersion {
    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self { major, minor, patch }
    }

    /// Parse `MAJOR[.MINOR[.PATCH]]` (surrounding whitespace and a trailing NUL allowed);
    /// `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_end_matches('\0').trim();
        let mut parts = text.split('.');
        let mut next = |required: bool| -> Option<u32> {
            match parts.next() {
                Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.len() <= 6 => {
                    p.parse().ok()
                }
                Some(_) => None,
                None if required => None,
                None => Some(0),
            }
        };
        let v = Self { major: next(true)?, minor: next(false)?, patch: next(false)? };
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for MacOsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.minor, self.patch) {
            (0, 0) => write!(f, "{}", self.major),
            (m, 0) => write!(f, "{}.{m}", self.major),
            (m, p) => write!(f, "{}.{m}.{p}", self.major),
        }
    }
}

/// The first macOS that reads each Core ML specification version (coremltools'
/// `_SPECIFICATION_VERSION_*` constants and the deployment targets they stand for: version 9
/// is iOS 18 / macOS 15, version 10 is iOS 26 / macOS 26).
pub const SPEC_VERSION_MACOS: [(i64, MacOsVersion); 10] = [
    (1, MacOsVersion::new(10, 13, 0)),
    (2, MacOsVersion::new(10, 13, 2)),
    (3, MacOsVersion::new(10, 14, 0)),
    (4, MacOsVersion::new(10, 15, 0)),
    (5, MacOsVersion::new(11, 0, 0)),
    (6, MacOsVersion::new(12, 0, 0)),
    (7, MacOsVersion::new(13, 0, 0)),
    (8, MacOsVersion::new(14, 0, 0)),
    (9, MacOsVersion::new(15, 0, 0)),
    (10, MacOsVersion::new(26, 0, 0)),
];

/// The first macOS that reads a package of specification version `version`: `None` for a
/// version this table does not know (0 or negative: unset; above the table: newer than this
/// build knows).
pub fn min_macos_for_spec(version: i64) -> Option<MacOsVersion> {
    SPEC_VERSION_MACOS.iter().find(|(v, _)| *v == version).map(|(_, os)| *os)
}

/// Whether this macOS can read a package of `spec_version`, checked before Core ML compiles
/// it: `Ok(None)` when it can, `Ok(Some(note))` when the answer is unknown (a version above
/// the table, or an unreadable OS version: Core ML decides, and the note says so), and
/// [`CoreMlError::NeedsNewerMacOs`] (exit 2) when the OS is older than the package needs.
pub fn check_spec_version(
    package: &str,
    spec_version: i64,
    running: Option<MacOsVersion>,
) -> Result<Option<String>, CoreMlError> {
    let newest = SPEC_VERSION_MACOS[SPEC_VERSION_MACOS.len() - 1];
    let Some(needs) = min_macos_for_spec(spec_version) else {
        return Ok(Some(if spec_version > newest.0 {
            format!(
                "{package}: Core ML specification version {spec_version} is newer than this build knows (up to {} for macOS {}); Core ML decides whether it loads",
                newest.0, newest.1
            )
        } else {
            format!("{package}: declares no Core ML specification version ({spec_version}); Core ML decides whether it loads")
        }));
    };
    let Some(running) = running else {
        return Ok(Some(format!(
            "{package}: the macOS version could not be read, so whether it reads Core ML specification version {spec_version} (macOS {needs} or newer) was not checked"
        )));
    };
    if running < needs {
        return Err(CoreMlError::NeedsNewerMacOs {
            what: format!("{package} (Core ML specification version {spec_version})"),
            needs,
            running,
            advice: "update macOS, or export the bundle for an older target (coremltools' minimum_deployment_target)",
        });
    }
    Ok(None)
}

/// The first macOS that has each compute-unit setting (`MLComputeUnitsCPUAndNeuralEngine`
/// arrived in macOS 13; the others with Core ML itself).
pub fn min_macos_for_units(units: ComputeUnits) -> MacOsVersion {
    match units {
        ComputeUnits::CpuNe => MacOsVersion::new(13, 0, 0),
        ComputeUnits::CpuGpu | ComputeUnits::All | ComputeUnits::Cpu => MacOsVersion::new(10, 13, 0),
    }
}

/// Whether this macOS has the compute units (exit 2 naming the setting when it does not; an
/// unknown OS version passes, and Core ML decides).
pub fn check_units(units: ComputeUnits, running: Option<MacOsVersion>) -> Result<(), CoreMlError> {
    let needs = min_macos_for_units(units);
    match running {
        Some(running) if running < needs => Err(CoreMlError::NeedsNewerMacOs {
            what: format!("compute units `{}`", units.name()),
            needs,
            running,
            advice: "update macOS, or choose other compute units (cpu, cpu_gpu or all)",
        }),
        _ => Ok(()),
    }
}

/// A compute device Core ML reports it can use (`MLModel.availableComputeDevices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// `MLCPUComputeDevice`.
    Cpu,
    /// `MLGPUComputeDevice`.
    Gpu,
    /// `MLNeuralEngineComputeDevice`.
    NeuralEngine,
}

impl Device {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "CPU",
            Device::Gpu => "GPU",
            Device::NeuralEngine => "Neural Engine",
        }
    }
}

/// The devices a compute-unit setting allows, in report order.
pub fn allowed_devices(units: ComputeUnits) -> &'static [Device] {
    match units {
        ComputeUnits::CpuNe => &[Device::Cpu, Device::NeuralEngine],
        ComputeUnits::CpuGpu => &[Device::Cpu, Device::Gpu],
        ComputeUnits::All => &[Device::Cpu, Device::Gpu, Device::NeuralEngine],
        ComputeUnits::Cpu => &[Device::Cpu],
    }
}

/// What the arm says about where it runs: the device text of every report and the notes of
/// the arm (and so of the raw header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `BackendInfo::device`.
    pub device: String,
    /// Notes for the arm: what Core ML reported, and what the requested units cannot reach.
    pub notes: Vec<String>,
}

fn list(devices: &[Device]) -> String {
    let names: Vec<&str> = devices.iter().map(|d| d.name()).collect();
    match names.as_slice() {
        [] => "no device".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The device text and notes of a Core ML arm: the requested units, narrowed to what Core ML
/// reports available (`available`: `None` where this macOS cannot say, before macOS 14). A
/// requested device that is missing (no Neural Engine in a virtual machine) is named in the
/// device text itself, so no report prints "Neural Engine" for a machine without one.
pub fn placement(units: ComputeUnits, available: Option<&[Device]>) -> Placement {
    let allowed = allowed_devices(units);
    let Some(available) = available else {
        return Placement {
            device: format!("Core ML, {} requested ({})", list(allowed), units.name()),
            notes: vec![format!(
                "Core ML on this macOS does not report its compute devices (MLModel.availableComputeDevices needs macOS 14): whether the {} is really used is unknown; `trace` and `convert-check` show the compute plan where it exists",
                list(allowed)
            )],
        };
    };
    let mut reported: Vec<Device> = available.to_vec();
    reported.sort();
    reported.dedup();
    let usable: Vec<Device> = allowed.iter().copied().filter(|d| reported.contains(d)).collect();
    let missing: Vec<Device> = allowed.iter().copied().filter(|d| !reported.contains(d)).collect();
    let mut notes = vec![format!("Core ML reports these compute devices: {}", list(&reported))];
    let device = if missing.is_empty() {
        format!("Core ML, {}", list(allowed))
    } else {
        let note = format!(
            "compute units `{}` ask for the {}, but this machine has no {} that Core ML can use (a virtual machine, or a Mac without it): the arm runs on the {} only",
            units.name(),
            list(allowed),
            list(&missing),
            list(&usable)
        );
        notes.push(note);
        format!("Core ML, {} only (no {} here; {} requested)", list(&usable), list(&missing), units.name())
    };
    Placement { device, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_print_as_macos_writes_them() {
        assert_eq!(MacOsVersion::parse("15.1"), Some(MacOsVersion::new(15, 1, 0)));
        assert_eq!(MacOsVersion::parse(" 14.4.1\n"), Some(MacOsVersion::new(14, 4, 1)));
        assert_eq!(MacOsVersion::parse("26\0"), Some(MacOsVersion::new(26, 0, 0)));
        for bad in ["", "Darwin", "15.", "15.1.2.3", "15.x", "-1", "15 .1"] {
            assert_eq!(MacOsVersion::parse(bad), None, "{bad:?}");
        }
        assert_eq!(MacOsVersion::new(15, 0, 0).to_string(), "15");
        assert_eq!(MacOsVersion::new(10, 13, 2).to_string(), "10.13.2");
        assert_eq!(MacOsVersion::new(14, 4, 0).to_string(), "14.4");
        assert!(MacOsVersion::new(10, 15, 7) < MacOsVersion::new(11, 0, 0));
        assert!(MacOsVersion::new(14, 10, 0) > MacOsVersion::new(14, 4, 1));
    }

    #[test]
    fn the_table_maps_each_specification_version_to_its_first_macos() {
        assert_eq!(min_macos_for_spec(8), Some(MacOsVersion::new(14, 0, 0)));
        assert_eq!(min_macos_for_spec(9), Some(MacOsVersion::new(15, 0, 0)));
        assert_eq!(min_macos_for_spec(10), Some(MacOsVersion::new(26, 0, 0)));
        assert_eq!(min_macos_for_spec(2), Some(MacOsVersion::new(10, 13, 2)));
        assert_eq!(min_macos_for_spec(0), None);
        assert_eq!(min_macos_for_spec(11), None);
        // versions rise with the OS
        for pair in SPEC_VERSION_MACOS.windows(2) {
            assert!(pair[0].0 + 1 == pair[1].0 && pair[0].1 < pair[1].1, "{pair:?}");
        }
    }

    #[test]
    fn a_package_newer_than_the_os_is_refused_naming_the_macos_it_needs() {
        // The committed fixtures are version 9: macOS 14 (the old runner) cannot read them.
        let e =
            check_spec_version("fixtures/coreml/ane/model.mlpackage", 9, Some(MacOsVersion::new(14, 7, 2)))
                .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("needs macOS 15"), "{text}");
        assert!(text.contains("this Mac runs macOS 14.7.2"), "{text}");
        assert!(text.contains("specification version 9"), "{text}");
        assert!(text.contains("fixtures/coreml/ane/model.mlpackage"), "{text}");
        assert!(text.contains("minimum_deployment_target"), "{text}");
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Input);
        // the same package on macOS 15.0 and 26 passes with nothing to say
        assert_eq!(check_spec_version("p", 9, Some(MacOsVersion::new(15, 0, 0))).unwrap(), None);
        assert_eq!(check_spec_version("p", 9, Some(MacOsVersion::new(26, 1, 0))).unwrap(), None);
        // version 8 on macOS 14.0 passes, on 13.6 it does not
        assert!(check_spec_version("p", 8, Some(MacOsVersion::new(14, 0, 0))).is_ok());
        assert!(check_spec_version("p", 8, Some(MacOsVersion::new(13, 6, 0))).is_err());
    }

    #[test]
    fn unknown_versions_are_left_to_core_ml_with_a_note() {
        let note = check_spec_version("p", 11, Some(MacOsVersion::new(26, 0, 0))).unwrap().unwrap();
        assert!(note.contains("newer than this build knows") && note.contains("macOS 26"), "{note}");
        let note = check_spec_version("p", 0, Some(MacOsVersion::new(15, 0, 0))).unwrap().unwrap();
        assert!(note.contains("declares no Core ML specification version"), "{note}");
        let note = check_spec_version("p", 9, None).unwrap().unwrap();
        assert!(note.contains("could not be read") && note.contains("macOS 15"), "{note}");
    }

    #[test]
    fn cpu_and_neural_engine_needs_macos_13() {
        let e = check_units(ComputeUnits::CpuNe, Some(MacOsVersion::new(12, 7, 0))).unwrap_err().to_string();
        assert!(e.contains("compute units `cpu_ne`") && e.contains("needs macOS 13"), "{e}");
        assert!(e.contains("cpu, cpu_gpu or all"), "{e}");
        assert!(check_units(ComputeUnits::CpuNe, Some(MacOsVersion::new(13, 0, 0))).is_ok());
        assert!(check_units(ComputeUnits::All, Some(MacOsVersion::new(12, 0, 0))).is_ok());
        assert!(check_units(ComputeUnits::CpuNe, None).is_ok());
    }

    #[test]
    fn a_machine_with_every_device_prints_the_requested_ones() {
        let all = [Device::NeuralEngine, Device::Cpu, Device::Gpu];
        let p = placement(ComputeUnits::CpuNe, Some(&all));
        assert_eq!(p.device, "Core ML, CPU and Neural Engine");
        assert_eq!(
            p.notes,
            vec!["Core ML reports these compute devices: CPU, GPU and Neural Engine".to_string()]
        );
        assert_eq!(placement(ComputeUnits::All, Some(&all)).device, "Core ML, CPU, GPU and Neural Engine");
        assert_eq!(placement(ComputeUnits::Cpu, Some(&all)).device, "Core ML, CPU");
    }

    #[test]
    fn a_virtual_machine_without_a_neural_engine_never_prints_one() {
        // GitHub's Apple-silicon runners: a CPU and a paravirtual GPU, no Neural Engine.
        let vm = [Device::Cpu, Device::Gpu];
        let p = placement(ComputeUnits::CpuNe, Some(&vm));
        assert_eq!(p.device, "Core ML, CPU only (no Neural Engine here; cpu_ne requested)");
        assert_eq!(p.notes.len(), 2);
        assert!(p.notes[1].contains("no Neural Engine that Core ML can use"), "{:?}", p.notes);
        assert!(p.notes[1].contains("runs on the CPU only"), "{:?}", p.notes);
        let p = placement(ComputeUnits::All, Some(&vm));
        assert_eq!(p.device, "Core ML, CPU and GPU only (no Neural Engine here; all requested)");
        let p = placement(ComputeUnits::CpuGpu, Some(&[Device::Cpu]));
        assert_eq!(p.device, "Core ML, CPU only (no GPU here; cpu_gpu requested)");
        // duplicates and order in Core ML's list do not matter
        let p = placement(ComputeUnits::CpuNe, Some(&[Device::Gpu, Device::Cpu, Device::Cpu]));
        assert_eq!(p.notes[0], "Core ML reports these compute devices: CPU and GPU");
    }

    #[test]
    fn an_os_that_cannot_say_is_reported_as_requested_not_as_used() {
        let p = placement(ComputeUnits::CpuNe, None);
        assert_eq!(p.device, "Core ML, CPU and Neural Engine requested (cpu_ne)");
        assert!(p.notes[0].contains("needs macOS 14"), "{:?}", p.notes);
    }
}
