//! Serde types with `schema_version`, atomic final files and exporters (the `speed`,
//! `energy` and `doctor` reports; the summary report is `crate::summary::report`), the one
//! rendering trait every printed report implements ([`Render`]), and the vocabulary they share:
//! the bootstrap [`Interval`] and an arm's [`ArmIntervals`], and the number and table formatting
//! (`format`); the provenance ([`crate::record::provenance`], [`crate::host`]), model and status
//! every document carries are [`crate::record`]'s.
//! Maps data to bytes and back; never measures.

pub mod answers;
pub mod context;
pub mod doctor;
pub mod energy;
pub mod format;
pub mod plots;
pub mod render;
pub mod speed;

pub use crate::stats::steal;

pub use context::RowContext;
pub use format::{count, display_width, first_cycles, left_out_unstable_warning, pad, Style};
pub use render::Render;

use std::io::Write;
use std::path::Path;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether an output path is `-`: standard output, not a file (every report and export flag
/// takes it; `crate::run::outputs::write_output` writes there).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// A bootstrap percentile interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower percentile bound.
    pub low: f64,
    /// Upper percentile bound.
    pub high: f64,
    /// Resamples in which the quantity could be formed (the others are left out and counted).
    pub valid_resamples: usize,
}

impl Interval {
    /// Whether two intervals share a point.
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.low <= other.high && other.low <= self.high
    }
}

/// Bootstrap intervals of one arm (a field is `None` with a reason in `missing`): what
/// `summary` gives every arm, and `energy` its arms (the same seeded bootstrap over whole cycles).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmIntervals {
    /// t, s.
    pub time_per_decision_s: Option<Interval>,
    /// P, W.
    pub mean_power_w: Option<Interval>,
    /// E = P × t, J.
    pub energy_per_decision_j: Option<Interval>,
    /// S.
    pub speed_gain: Option<Interval>,
    /// R.
    pub power_ratio: Option<Interval>,
    /// S × R.
    pub energy_gain: Option<Interval>,
    /// Idle-subtracted energy gain (a different boundary).
    pub idle_subtracted_energy_gain: Option<Interval>,
    /// Why a field is `None`: field name → reason.
    pub missing: BTreeMap<String, String>,
}

impl ArmIntervals {
    /// The field names of the seven quantities, in field order (the names `missing` uses).
    pub const QUANTITIES: [&'static str; 7] = [
        "time_per_decision_s",
        "mean_power_w",
        "energy_per_decision_j",
        "speed_gain",
        "power_ratio",
        "energy_gain",
        "idle_subtracted_energy_gain",
    ];
}

/// Whether a new file can be written in `folder` now: a probe file is created there
/// (`create_new`, so nothing is replaced) and removed. Permission bits alone do not answer
/// this (root ignores them; a read-only mount or a pseudo file system refuses anyway), so the
/// folder is asked the way the final write will ask it.
pub fn check_writable(folder: &Path) -> std::io::Result<()> {
    let mut n = 0u32;
    loop {
        let probe = folder.join(format!(".laya-bench-write-probe-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(f) => {
                drop(f);
                return std::fs::remove_file(&probe);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 16 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Write `bytes` to `path` atomically: a new temporary file in the same folder, written and
/// synced, then renamed over `path`. A symbolic link is written through (its target is
/// replaced; the link stays); a path that is (or links to) a FIFO, a device or a socket is
/// refused, never replaced by a regular file. On any failure the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => path.canonicalize()?,
        _ => path.to_path_buf(),
    };
    if let Ok(m) = std::fs::metadata(&target) {
        // (a folder is left to the rename, which refuses it)
        if !m.is_file() && !m.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file; laya-bench writes only regular files",
            ));
        }
    }
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let mut n = 0u32;
    let (tmp, mut f) = loop {
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 64 => n += 1,
            Err(e) => return Err(e),
        }
    };
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    let result = written.and_then(|()| std::fs::rename(&tmp, &target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(all(test, unix))]
mod tests {
    use super::write_atomic;

    #[test]
    fn an_atomic_write_replaces_a_link_s_target_and_keeps_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("l.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // a folder where the file should be: the rename fails after the temporary was written
        let path = dir.path().join("out.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("x"), "keep").unwrap();
        assert!(write_atomic(&path, b"data").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")], "{names:?}");
        // a device is never replaced
        assert!(write_atomic(std::path::Path::new("/dev/null"), b"x").is_err());
        assert!(!std::fs::metadata("/dev/null").unwrap().file_type().is_file());
    }
}
