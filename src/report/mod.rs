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

/// Terminal columns `text` takes: a wide character (今, 日) takes two, a combining mark none.
/// Measured by ratatui's text width (unicode-width), already a dependency for the Snake view.
pub fn display_width(text: &str) -> usize {
    ratatui::text::Line::raw(text).width()
}

/// `text` padded with spaces to `width` terminal columns (left-aligned; longer text is kept).
pub fn pad(text: &str, width: usize) -> String {
    let w = display_width(text);
    format!("{text}{}", " ".repeat(width.saturating_sub(w)))
}

/// `n` and the noun, singular for one: `1 balanced cycle`, `3 balanced cycles`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
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

#[cfg(test)]
mod count_tests {
    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(super::display_width("今日"), 4);
        assert_eq!(super::display_width("abc"), 3);
        assert_eq!(super::pad("今日", 6), "今日  ");
        assert_eq!(super::pad("ab", 4), "ab  ");
        assert_eq!(super::pad("abcdef", 4), "abcdef");
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1, "balanced cycle", "balanced cycles"), "1 balanced cycle");
        assert_eq!(super::count(0, "block", "blocks"), "0 blocks");
        assert_eq!(super::count(3, "balanced cycle", "balanced cycles"), "3 balanced cycles");
    }
}
