//! Reading a raw record back: line by line, never more than [`MAX_LINE_BYTES`] of a line
//! buffered, a cut last line told from a bad one, the schema versions this build reads.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Classify, Kind};
use crate::power::sampler::Sample;

use super::{Header, Record, SCHEMA_VERSION};

/// A raw file read back.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRun {
    /// Its header.
    pub header: Header,
    /// Every record after the header, in order (footer included when present).
    pub records: Vec<Record>,
    /// The file line (1-based) of each record in `records`; empty for a run built in memory.
    pub lines: Vec<usize>,
    /// Whether the file ends with a footer.
    pub complete: bool,
    /// A trailing line that did not parse (a write cut by a crash), if any.
    pub truncated_tail: Option<String>,
}

/// The longest line the raw reader accepts, in bytes (32 MiB), newline excluded. No line a run
/// writes comes near it: a header is a few kB (4.7 kB in `docs/runs/`), a block or call well
/// under 1 kB; the longest is a rejected energy run's footer, which lists every violation (about
/// 500 bytes each: the committed first try's 2,225 make 1.09 MB), so 32 MiB holds some 65,000.
/// A longer line is refused as soon as this many bytes are read without a newline (a file of
/// zeros, `/dev/zero`), so the reader's memory stays bounded whatever it is given.
pub const MAX_LINE_BYTES: usize = 32 << 20;

/// The oldest raw schema version this build reads (1: the first one written).
pub const MIN_SCHEMA_VERSION: u32 = 1;

/// A raw file that cannot be read. Every variant is a fault of the input (exit 2), never of a
/// run.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    /// I/O.
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The first line is not a header.
    #[error("{path}: line 1 is not a laya-bench header record; is this a raw file?")]
    NoHeader { path: String },
    /// The file holds nothing.
    #[error("{path}: the file is empty; a raw record starts with its header line")]
    Empty { path: String },
    /// A complete line (ended by its newline) does not parse.
    #[error("{path}: line {line} is not a valid record ({detail})")]
    BadLine { path: String, line: usize, detail: String },
    /// A line longer than any record, refused without reading the rest of the file.
    #[error("{path}: line {line} runs past 32 MiB ({limit} bytes) without a newline, longer than any record a run writes (the longest, a rejected run's footer, takes about 500 bytes per rejection); the rest of the file was not read: is this the raw record (`--raw`) of `speed` or `energy`?", limit = MAX_LINE_BYTES)]
    LineTooLong { path: String, line: usize },
    /// A schema version this build does not read.
    #[error("{path}: schema_version {found} is not one this laya-bench reads ({MIN_SCHEMA_VERSION} to {SCHEMA_VERSION}); {}", version_hint(*found))]
    Version { path: String, found: u32 },
}

impl Classify for RawError {
    /// Always the input's: a raw file that cannot be read is bad input (exit 2).
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

fn version_hint(found: u32) -> &'static str {
    if found > SCHEMA_VERSION {
        "it was written by a newer laya-bench: upgrade laya-bench to read it"
    } else {
        "no laya-bench writes that version: the header is damaged or was edited"
    }
}

/// How a line read by [`read_line`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineEnd {
    /// Nothing left.
    Eof,
    /// Ended by its newline.
    Newline,
    /// The file ended without a newline after it (a write cut mid-line, or a hand edit).
    Cut,
    /// More than `limit` bytes without a newline: the rest was not read.
    TooLong,
}

/// Read one line of at most `limit` bytes (newline excluded) into `buf` (cleared first), never
/// buffering more than `limit + 1` bytes whatever the input holds.
pub(super) fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<LineEnd> {
    buf.clear();
    let n = r.by_ref().take(limit as u64 + 1).read_until(b'\n', buf)?;
    Ok(if n == 0 {
        LineEnd::Eof
    } else if buf.last() == Some(&b'\n') {
        buf.pop();
        LineEnd::Newline
    } else if n > limit {
        LineEnd::TooLong
    } else {
        LineEnd::Cut
    })
}

/// Read a raw file, line by line (never more than [`MAX_LINE_BYTES`] of a line buffered). Only
/// a last line without its newline that does not parse is a write cut mid-line: reported in
/// `truncated_tail`, not fatal. Any complete line (ended by its newline) that does not parse is
/// bad input naming its line, wherever it is, the end of the file included. A file without
/// footer is `complete: false`.
pub fn read(path: &Path) -> Result<RawRun, RawError> {
    read_limited(path, MAX_LINE_BYTES)
}

pub(super) fn read_limited(path: &Path, limit: usize) -> Result<RawRun, RawError> {
    let p = path.display().to_string();
    let io = |source| RawError::Io { path: p.clone(), source };
    if std::fs::metadata(path).map_err(io)?.is_dir() {
        return Err(io(std::io::Error::other("is a folder, not a raw record")));
    }
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path).map_err(io)?);
    let mut buf = Vec::new();
    let mut header: Option<Header> = None;
    let mut records = Vec::new();
    let mut record_lines = Vec::new();
    let mut truncated_tail = None;
    let mut line = 0usize;
    loop {
        let end = read_line(&mut reader, &mut buf, limit).map_err(io)?;
        if end == LineEnd::Eof {
            break;
        }
        line += 1;
        if end == LineEnd::TooLong {
            return Err(RawError::LineTooLong { path: p, line });
        }
        // A write cut mid-line may end inside a UTF-8 character: only a complete line must be
        // text.
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t,
            Err(_) if header.is_none() => return Err(RawError::NoHeader { path: p }),
            Err(_) if end == LineEnd::Cut => {
                truncated_tail = Some(String::from_utf8_lossy(&buf).into_owned());
                break;
            }
            Err(e) => {
                return Err(RawError::BadLine { path: p, line, detail: format!("not UTF-8 text: {e}") })
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let Some(_) = &header else {
            match serde_json::from_str::<Record>(text) {
                Ok(Record::Header(h)) => {
                    if !(MIN_SCHEMA_VERSION..=SCHEMA_VERSION).contains(&h.schema_version) {
                        return Err(RawError::Version { path: p, found: h.schema_version });
                    }
                    header = Some(*h);
                }
                _ => return Err(RawError::NoHeader { path: p }),
            }
            continue;
        };
        match serde_json::from_str::<Record>(text) {
            Ok(r) => {
                records.push(r);
                record_lines.push(line);
            }
            Err(_) if end == LineEnd::Cut => truncated_tail = Some(text.to_string()),
            Err(e) => return Err(RawError::BadLine { path: p, line, detail: e.to_string() }),
        }
    }
    let Some(header) = header else { return Err(RawError::Empty { path: p }) };
    // Corrections are appended after the footer; the run is complete when its last record
    // before them is the footer.
    let complete = matches!(
        records.iter().rev().find(|r| !matches!(r, Record::Correction { .. })),
        Some(Record::Footer { .. })
    );
    Ok(RawRun { header, records, lines: record_lines, complete, truncated_tail })
}

/// Whether `path` is a raw record: a regular file whose first line is a laya-bench header (of
/// any schema version). Reads that one line at most, never more than [`MAX_LINE_BYTES`] of it;
/// anything that cannot be read as one (a folder, a device, a missing file) is not one.
pub fn is_raw_record(path: &Path) -> bool {
    let Ok(file) = (match std::fs::metadata(path) {
        Ok(m) if m.is_file() => File::open(path),
        _ => return false,
    }) else {
        return false;
    };
    let mut buf = Vec::new();
    matches!(
        read_line(&mut BufReader::new(file), &mut buf, MAX_LINE_BYTES),
        Ok(LineEnd::Newline | LineEnd::Cut)
    ) && matches!(serde_json::from_slice::<Record>(&buf), Ok(Record::Header(_)))
}

/// The sha256 of a regular file's bytes, read in bounded pieces; `None` for anything else (a
/// device, a pipe), whose bytes cannot be read twice or may never end.
pub fn file_digest(path: &Path) -> Result<Option<String>, RawError> {
    use sha2::{Digest, Sha256};
    let p = path.display().to_string();
    let io = |source| RawError::Io { path: p.clone(), source };
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Ok(None);
    }
    let mut file = File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(io)?;
    Ok(Some(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}

/// Every power sample in a raw file, in file order.
pub fn samples(run: &RawRun) -> Vec<Sample> {
    run.records
        .iter()
        .filter_map(|r| match r {
            Record::Sample(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

/// Every reading taken before measuring (`probe` records), in file order.
pub fn probes(run: &RawRun) -> Vec<Sample> {
    run.records
        .iter()
        .filter_map(|r| match r {
            Record::Probe(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}
