//! Linux powercap RAPL energy counters (docs/formats.md §2).
//!
//! Reads `<root>/intel-rapl:N` (package-N, or psys) and `<root>/intel-rapl:N:M` (sub-zones
//! such as dram) where `<root>` is `/sys/class/powercap` unless injected. Each zone gives
//! `name`, `energy_uj` (µJ, wraps) and `max_energy_range_uj` (the wrap modulus, read, never
//! assumed). The sensor's total is the sum of the package zones (psys if there is no package);
//! psys and dram are recorded as extra channels outside the total because they overlap the
//! packages. `core`/`uncore` sub-zones lie inside their package and are skipped, as are the
//! duplicate `intel-rapl-mmio:*` zones.

use super::{ChannelReading, Measurement, Reading, Sensor, SensorError, SensorInfo, SensorKind};
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where the kernel lists powercap zones.
pub const DEFAULT_POWERCAP_ROOT: &str = "/sys/class/powercap";

/// What a RAPL zone measures, from its `name` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaplDomain {
    /// `package-N`: cores, uncore, LLC (and the iGPU on client parts).
    Package,
    /// `psys`: platform / SoC-wide (Skylake+ client).
    Psys,
    /// `dram`: memory.
    Dram,
    /// `core` (PP0): inside its package.
    Core,
    /// `uncore` (PP1): inside its package.
    Uncore,
    /// Any other name.
    Other,
}

impl RaplDomain {
    /// Classify a zone `name`.
    pub fn from_name(name: &str) -> Self {
        match name {
            n if n.starts_with("package") => RaplDomain::Package,
            "psys" => RaplDomain::Psys,
            "dram" => RaplDomain::Dram,
            "core" => RaplDomain::Core,
            "uncore" => RaplDomain::Uncore,
            _ => RaplDomain::Other,
        }
    }
}

/// One powercap zone found under the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaplZone {
    /// Directory name, e.g. `intel-rapl:0` or `intel-rapl:0:0`.
    pub id: String,
    /// Channel name: the zone's `name` (`package-0`, `psys`), or `parent/name` for a sub-zone
    /// (`package-0/dram`).
    pub channel: String,
    /// What it measures.
    pub domain: RaplDomain,
    /// The zone directory.
    pub dir: PathBuf,
    /// Wrap modulus, µJ.
    pub max_energy_range_uj: u64,
}

const SENSOR: &str = "rapl";

fn permission_hint(path: &Path) -> String {
    format!(
        "energy_uj is readable by root only since Linux 5.10 (the PLATYPUS fix); run as root, or `sudo chmod a+r {}` (a udev rule makes it last), or use exec:CMD with an external meter",
        path.display()
    )
}

/// Turn an I/O error on `path` into a sensor error that says what to do.
pub fn io_error(path: &Path, e: &std::io::Error) -> SensorError {
    match e.kind() {
        ErrorKind::PermissionDenied => SensorError::PermissionDenied {
            sensor: SENSOR.into(),
            path: path.to_path_buf(),
            hint: permission_hint(path),
        },
        ErrorKind::NotFound => SensorError::Unavailable {
            sensor: SENSOR.into(),
            reason: format!("{} does not exist: {e}", path.display()),
        },
        _ => SensorError::ReadFailed {
            sensor: SENSOR.into(),
            detail: format!("reading {}: {e}", path.display()),
        },
    }
}

fn read_text(path: &Path) -> Result<String, SensorError> {
    std::fs::read_to_string(path).map_err(|e| io_error(path, &e))
}

fn parse_u64(path: &Path, text: &str) -> Result<u64, SensorError> {
    text.trim().parse::<u64>().map_err(|_| SensorError::Malformed {
        sensor: SENSOR.into(),
        detail: format!("{} is not an unsigned integer", path.display()),
        raw: text.to_string(),
    })
}

/// Whether a directory name is a RAPL zone (`intel-rapl:N` or `intel-rapl:N:M`), and its
/// parent's id for a sub-zone.
fn zone_parts(name: &str) -> Option<(bool, Option<String>)> {
    let rest = name.strip_prefix("intel-rapl:")?;
    let parts: Vec<&str> = rest.split(':').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [a] if numeric(a) => Some((true, None)),
        [a, b] if numeric(a) && numeric(b) => Some((false, Some(format!("intel-rapl:{a}")))),
        _ => None,
    }
}

/// Why a powercap folder that does not exist gives no sensor: the kernel's own folder means
/// no RAPL here; any other was a path the user gave (`rapl:PATH`).
fn absent(root: &Path) -> String {
    if root == Path::new(DEFAULT_POWERCAP_ROOT) {
        format!(
            "{} does not exist: this kernel exposes no powercap/RAPL (usual in a VM; containers mask /sys/devices/virtual/powercap). On bare metal load intel_rapl_common; in a container bind-mount powercap and pass rapl:PATH; otherwise use exec:CMD with an external meter",
            root.display()
        )
    } else {
        format!(
            "{} (the powercap folder given as rapl:PATH) does not exist; check the path, pass `rapl` alone for {DEFAULT_POWERCAP_ROOT}, or use exec:CMD with an external meter",
            root.display()
        )
    }
}

/// List the RAPL zones under `root`, sorted by id. Skipped zones are explained in the second
/// result (for the sensor's notes).
pub fn discover(root: &Path) -> Result<(Vec<RaplZone>, Vec<String>), SensorError> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(SensorError::Unavailable { sensor: SENSOR.into(), reason: absent(root) });
        }
        Err(e) => return Err(io_error(root, &e)),
    };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect();
    names.sort();

    let mut notes = Vec::new();
    let mut top: Vec<(String, String)> = Vec::new(); // (id, name)
    let mut zones = Vec::new();
    for id in &names {
        if id.starts_with("intel-rapl-mmio:") {
            notes.push(format!("skipped {id}: MMIO duplicate of a package zone"));
            continue;
        }
        let Some((is_top, parent)) = zone_parts(id) else {
            continue;
        };
        let dir = root.join(id);
        let name = read_text(&dir.join("name"))?.trim().to_string();
        let domain = RaplDomain::from_name(&name);
        if is_top {
            top.push((id.clone(), name.clone()));
        }
        let channel = match &parent {
            None => name.clone(),
            Some(p) => {
                let parent_name =
                    top.iter().find(|(tid, _)| tid == p).map(|(_, n)| n.clone()).unwrap_or_else(|| p.clone());
                format!("{parent_name}/{name}")
            }
        };
        if matches!(domain, RaplDomain::Core | RaplDomain::Uncore) {
            notes.push(format!("skipped {id} ({channel}): lies inside its package"));
            continue;
        }
        let max_path = dir.join("max_energy_range_uj");
        let max_energy_range_uj = parse_u64(&max_path, &read_text(&max_path)?)?;
        if max_energy_range_uj == 0 {
            return Err(SensorError::Malformed {
                sensor: SENSOR.into(),
                detail: format!("{} is 0; a counter cannot wrap at 0", max_path.display()),
                raw: "0".into(),
            });
        }
        zones.push(RaplZone { id: id.clone(), channel, domain, dir, max_energy_range_uj });
    }
    if zones.is_empty() {
        return Err(SensorError::Unavailable {
            sensor: SENSOR.into(),
            reason: format!(
                "no intel-rapl zones under {}: this CPU or kernel offers no RAPL powercap (usual in a VM); use exec:CMD with an external meter",
                root.display()
            ),
        });
    }
    Ok((zones, notes))
}

struct OpenZone {
    zone: RaplZone,
    file: File,
    path: PathBuf,
    in_total: bool,
}

/// The `rapl` sensor: one energy counter per zone, read from held-open `energy_uj` files.
pub struct RaplSensor {
    zones: Vec<OpenZone>,
    info: SensorInfo,
}

impl RaplSensor {
    /// Discover the zones under `root`, open every `energy_uj` and read each once, so a
    /// missing or root-only counter fails here rather than mid-run.
    pub fn open(root: &Path) -> Result<Self, SensorError> {
        let (zones, mut notes) = discover(root)?;
        let has_package = zones.iter().any(|z| z.domain == RaplDomain::Package);
        let total_domain = if has_package { RaplDomain::Package } else { RaplDomain::Psys };
        let mut open = Vec::new();
        for zone in zones {
            let path = zone.dir.join("energy_uj");
            let file = File::open(&path).map_err(|e| io_error(&path, &e))?;
            let mut z = OpenZone {
                in_total: zone.domain == total_domain && zone.id.matches(':').count() == 1,
                zone,
                file,
                path,
            };
            read_uj(&mut z)?;
            open.push(z);
        }
        if !open.iter().any(|z| z.in_total) {
            return Err(SensorError::Unavailable {
                sensor: SENSOR.into(),
                reason: format!(
                    "no package or psys zone under {}; found only {}; use exec:CMD with an external meter",
                    root.display(),
                    open.iter().map(|z| z.zone.channel.as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
        }
        notes.push(
            "RAPL counters update about every 1 ms and measure the whole socket, not this process".into(),
        );
        let total: Vec<&str> = open.iter().filter(|z| z.in_total).map(|z| z.zone.channel.as_str()).collect();
        let extra: Vec<&str> = open.iter().filter(|z| !z.in_total).map(|z| z.zone.channel.as_str()).collect();
        let spec = if root == Path::new(DEFAULT_POWERCAP_ROOT) {
            "rapl".to_string()
        } else {
            format!("rapl:{}", root.display())
        };
        let device = if extra.is_empty() {
            format!("{} (total: {})", root.display(), total.join(" + "))
        } else {
            format!("{} (total: {}; also recorded: {})", root.display(), total.join(" + "), extra.join(", "))
        };
        Ok(RaplSensor {
            info: SensorInfo {
                kind: SensorKind::Rapl,
                spec,
                source: if total_domain == RaplDomain::Package {
                    "rapl-pkg".into()
                } else {
                    "rapl-psys".into()
                },
                device,
                live: true,
                program: None,
                notes,
            },
            zones: open,
        })
    }

    /// The zones read, in channel order.
    pub fn zones(&self) -> impl Iterator<Item = &RaplZone> {
        self.zones.iter().map(|z| &z.zone)
    }
}

fn read_uj(z: &mut OpenZone) -> Result<(u64, String), SensorError> {
    let mut buf = [0u8; 64];
    // sysfs regenerates an attribute on every read at offset 0.
    let n = z.file.read_at(&mut buf, 0).map_err(|e| io_error(&z.path, &e))?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let uj = parse_u64(&z.path, &text)?;
    Ok((uj, text.trim().to_string()))
}

impl Sensor for RaplSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        let mut channels = Vec::with_capacity(self.zones.len());
        let mut raw = Vec::with_capacity(self.zones.len());
        for z in &mut self.zones {
            let (uj, text) = read_uj(z)?;
            raw.push(format!("{}={}", z.zone.channel, text));
            channels.push(ChannelReading {
                channel: z.zone.channel.clone(),
                measurement: Measurement::EnergyCounterJ {
                    joules: uj as f64 / 1e6,
                    wrap_j: Some(z.zone.max_energy_range_uj as f64 / 1e6),
                },
                in_total: z.in_total,
            });
        }
        Ok(Reading { channels, source_t_s: None, raw: Some(raw.join(";")) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::FaultKind;
    use std::fs;

    fn zone(root: &Path, id: &str, name: &str, energy: &str, max: &str) {
        let d = root.join(id);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("name"), format!("{name}\n")).unwrap();
        fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
        fs::write(d.join("enabled"), "1\n").unwrap();
    }

    /// A client-style tree: package with core, uncore and dram sub-zones, plus psys and the
    /// control-type directory and an MMIO duplicate.
    fn client_tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("intel-rapl")).unwrap();
        zone(r, "intel-rapl:0", "package-0", "1000000", "262143328850");
        zone(r, "intel-rapl:0:0", "core", "500000", "262143328850");
        zone(r, "intel-rapl:0:1", "uncore", "100", "262143328850");
        zone(r, "intel-rapl:0:2", "dram", "250000", "65712999613");
        zone(r, "intel-rapl:1", "psys", "3000000", "262143328850");
        zone(r, "intel-rapl-mmio:0", "package-0", "1", "262143328850");
        t
    }

    fn counter(r: &Reading, ch: &str) -> (f64, Option<f64>, bool) {
        let c = r.channel(ch).unwrap_or_else(|| panic!("no {ch} in {r:?}"));
        match c.measurement {
            Measurement::EnergyCounterJ { joules, wrap_j } => (joules, wrap_j, c.in_total),
            _ => panic!("not a counter"),
        }
    }

    #[test]
    fn discovers_package_psys_and_dram_and_skips_the_rest() {
        let t = client_tree();
        let (zones, notes) = discover(t.path()).unwrap();
        let ch: Vec<&str> = zones.iter().map(|z| z.channel.as_str()).collect();
        assert_eq!(ch, ["package-0", "package-0/dram", "psys"]);
        assert_eq!(zones[1].domain, RaplDomain::Dram);
        assert_eq!(zones[1].max_energy_range_uj, 65_712_999_613);
        assert!(notes.iter().any(|n| n.contains("intel-rapl-mmio:0")));
        assert!(notes.iter().any(|n| n.contains("package-0/core")));
        assert!(notes.iter().any(|n| n.contains("package-0/uncore")));
    }

    #[test]
    fn reads_counters_in_joules_with_their_wrap_range() {
        let t = client_tree();
        let mut s = RaplSensor::open(t.path()).unwrap();
        let r = s.read().unwrap();
        assert_eq!(counter(&r, "package-0"), (1.0, Some(262_143.328_85), true));
        assert_eq!(counter(&r, "package-0/dram"), (0.25, Some(65_712.999_613), false));
        assert_eq!(counter(&r, "psys"), (3.0, Some(262_143.328_85), false));
        assert_eq!(r.raw.as_deref(), Some("package-0=1000000;package-0/dram=250000;psys=3000000"));
        assert_eq!(s.info().source, "rapl-pkg");
        assert!(s.info().device.contains("total: package-0"));
        // The held-open file sees new values.
        fs::write(t.path().join("intel-rapl:0/energy_uj"), "2500000\n").unwrap();
        let r = s.read().unwrap();
        assert_eq!(counter(&r, "package-0").0, 2.5);
    }

    #[test]
    fn two_sockets_both_count_in_the_total() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "package-0", "1", "100");
        zone(t.path(), "intel-rapl:1", "package-1", "2", "100");
        let mut s = RaplSensor::open(t.path()).unwrap();
        let r = s.read().unwrap();
        assert!(counter(&r, "package-0").2);
        assert!(counter(&r, "package-1").2);
        assert!(s.info().device.contains("package-0 + package-1"));
    }

    #[test]
    fn psys_alone_is_the_total() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "psys", "7", "100");
        let mut s = RaplSensor::open(t.path()).unwrap();
        assert!(counter(&s.read().unwrap(), "psys").2);
        assert_eq!(s.info().source, "rapl-psys");
        assert_eq!(s.info().spec, format!("rapl:{}", t.path().display()));
    }

    #[test]
    fn absent_powercap_says_vm_and_what_to_do() {
        let t = tempfile::tempdir().unwrap();
        let e = RaplSensor::open(&t.path().join("powercap")).err().unwrap();
        assert_eq!(e.kind(), FaultKind::Unavailable);
        let m = e.to_string();
        assert!(m.contains("(the powercap folder given as rapl:PATH) does not exist"), "{m}");
        assert!(m.contains("check the path") && m.contains("exec:CMD"), "{m}");
        // The kernel's own folder missing: no RAPL on this machine.
        let m = absent(Path::new(DEFAULT_POWERCAP_ROOT));
        assert!(m.starts_with("/sys/class/powercap does not exist: this kernel exposes no powercap"), "{m}");
        assert!(m.contains("VM") && m.contains("exec:CMD"), "{m}");
    }

    #[test]
    fn empty_powercap_is_unavailable() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("intel-rapl")).unwrap();
        let e = RaplSensor::open(t.path()).err().unwrap();
        assert!(e.to_string().contains("no intel-rapl zones"), "{e}");
    }

    #[test]
    fn only_dram_is_unavailable() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "dram", "7", "100");
        let e = RaplSensor::open(t.path()).err().unwrap();
        assert!(e.to_string().contains("no package or psys zone"), "{e}");
    }

    #[test]
    fn garbage_counter_text_is_malformed_with_file_and_text() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "package-0", "12x", "100");
        let e = RaplSensor::open(t.path()).err().unwrap();
        assert_eq!(e.kind(), FaultKind::Malformed);
        let m = e.to_string();
        assert!(m.contains("intel-rapl:0/energy_uj") && m.contains("12x"), "{m}");
    }

    #[test]
    fn zero_wrap_range_is_malformed() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "package-0", "1", "0");
        let e = RaplSensor::open(t.path()).err().unwrap();
        assert!(e.to_string().contains("cannot wrap at 0"), "{e}");
    }

    #[test]
    fn a_counter_that_vanishes_mid_run_is_a_read_fault() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "package-0", "1", "100");
        let mut s = RaplSensor::open(t.path()).unwrap();
        fs::write(t.path().join("intel-rapl:0/energy_uj"), "").unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Malformed);
    }

    #[test]
    fn permission_denied_says_root_chmod_or_exec() {
        let p = Path::new("/sys/class/powercap/intel-rapl:0/energy_uj");
        let e = io_error(p, &std::io::Error::from(ErrorKind::PermissionDenied));
        assert_eq!(e.kind(), FaultKind::PermissionDenied);
        assert!(e.is_fatal());
        let m = e.to_string();
        assert!(
            m.starts_with("permission denied: rapl: cannot read /sys/class/powercap/intel-rapl:0/energy_uj"),
            "{m}"
        );
        assert!(m.contains("run as root") && m.contains("chmod a+r") && m.contains("exec:CMD"), "{m}");
    }

    #[test]
    fn unreadable_energy_file_fails_at_open_when_not_root() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // root reads 0400 files anyway; the mapping is pinned by the test above.
            return;
        }
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), "intel-rapl:0", "package-0", "1", "100");
        let f = t.path().join("intel-rapl:0/energy_uj");
        fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
        let e = RaplSensor::open(t.path()).err().unwrap();
        assert_eq!(e.kind(), FaultKind::PermissionDenied);
    }

    #[test]
    fn the_checked_in_fixture_tree_opens() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures_power/rapl-server");
        let mut s = RaplSensor::open(&root).unwrap();
        let r = s.read().unwrap();
        let ch: Vec<&str> = r.channels.iter().map(|c| c.channel.as_str()).collect();
        assert_eq!(ch, ["package-0", "package-0/dram", "package-1", "package-1/dram"]);
        assert_eq!(counter(&r, "package-1"), (65_000.5, Some(65_532.610_987), true));
    }
}
