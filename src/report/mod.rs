//! Serde types with `schema_version`, the raw JSONL stream, atomic final files and exporters
//! (`speed`, `energy`).
//! Maps data to bytes and back; never measures.

pub mod energy;
pub mod plots;
pub mod raw;
pub mod speed;
pub mod summary;

use std::io::Write;
use std::path::Path;

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
