//! Serde types with `schema_version`, the raw JSONL stream, atomic final files and exporters
//! (`speed`, `energy`, `summary`, `doctor`), and the vocabulary they share: the provenance
//! every document opens with ([`provenance`], [`host`]), the model ([`model`]), how a run
//! ended ([`status`]) and the number and table formatting ([`format`]).
//! Maps data to bytes and back; never measures.

pub mod doctor;
pub mod energy;
pub mod format;
pub mod host;
#[cfg(target_os = "macos")]
pub mod host_macos;
pub mod model;
pub mod plots;
pub mod provenance;
pub mod raw;
pub mod speed;
pub mod status;
pub mod steal;
pub mod summary;

pub use format::{count, display_width, first_cycles, left_out_unstable_warning, pad};

use std::io::Write;
use std::path::Path;

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

/// Write `bytes` to `path` atomically (a temporary file in the same folder, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}
