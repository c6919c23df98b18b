//! Writing a raw record: the buffered, synced writer every run appends with, the raw file as a
//! sink that writes nothing after its first error, what a record whose writing failed holds,
//! and the one appender of metadata corrections.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{RawError, Record};

/// Appends records to a raw file.
pub struct RawWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl RawWriter {
    /// Create (truncate) the raw file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Self::open(path, true)
    }

    /// Create the raw file; unless `replace`, fail if it exists (so two runs that picked the
    /// same name cannot write into one file).
    pub fn open(path: &Path, replace: bool) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        if replace {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let file = options.open(path)?;
        Ok(Self { out: BufWriter::with_capacity(1 << 20, file), path: path.to_path_buf() })
    }

    /// Where it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record (buffered until the next `sync`).
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")
    }

    /// Flush buffered records to the OS (they survive a kill of this process, not a power cut).
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Flush and fsync everything written so far.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// Append a metadata correction to a raw file (its existing bytes are never rewritten) and
/// sync it. The file must end with a complete line.
pub fn append_correction(
    path: &Path,
    field: &str,
    note: &str,
    timestamp_unix_s: f64,
) -> Result<Record, RawError> {
    let p = path.display().to_string();
    let io = |source| RawError::Io { path: p.clone(), source };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other(
            "is not a regular file; a correction is appended to a raw record on disk",
        )));
    }
    let mut file = File::open(path).map_err(io)?;
    let mut last = [0u8; 1];
    if meta.len() > 0 {
        file.seek(SeekFrom::End(-1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
    }
    if meta.len() > 0 && last[0] != b'\n' {
        // Count the lines in bounded pieces to name the cut one.
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut newlines = 0usize;
        let mut reader = BufReader::new(file);
        loop {
            let chunk = reader.fill_buf().map_err(io)?;
            if chunk.is_empty() {
                break;
            }
            newlines += chunk.iter().filter(|&&b| b == b'\n').count();
            let n = chunk.len();
            reader.consume(n);
        }
        return Err(RawError::BadLine {
            path: p.clone(),
            line: newlines + 1,
            detail: "the last line is cut (no newline at its end); a correction cannot be appended after it"
                .into(),
        });
    }
    let record = Record::Correction { timestamp_unix_s, field: field.into(), note: note.into() };
    let mut line = serde_json::to_vec(&record).map_err(|e| io(e.into()))?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new().append(true).open(path).map_err(io)?;
    file.write_all(&line).map_err(io)?;
    file.sync_data().map_err(io)?;
    Ok(record)
}

/// A raw write error that names the file.
pub fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// What a raw record whose writing failed holds, in words, for the error that ends the run:
/// a record cut mid-line (a full disk) is read by `summary` up to its last whole record; one
/// that ends on a whole line lacks only what was not written.
pub fn cut_note(path: &Path) -> String {
    let last_byte = || -> std::io::Result<Option<u8>> {
        let mut f = File::open(path)?;
        if f.metadata()?.len() == 0 {
            return Ok(None);
        }
        f.seek(SeekFrom::End(-1))?;
        let mut b = [0u8];
        f.read_exact(&mut b)?;
        Ok(Some(b[0]))
    };
    let ends_whole = matches!(last_byte(), Ok(None | Some(b'\n')));
    if ends_whole {
        format!(
            "{} has no footer: it holds the records written before the failure, which `laya-bench summary {}` reads as an incomplete run",
            path.display(),
            path.display()
        )
    } else {
        format!(
            "{} ends with a cut line: `laya-bench summary {}` reads it up to its last whole record",
            path.display(),
            path.display()
        )
    }
}

/// The raw file as a run writes it: every error names the file, and after the first one
/// nothing more is written (a record after a cut line would hide the cut in the middle of the
/// file), so the record stays readable up to its last whole line.
pub struct FileSink {
    raw: RawWriter,
    failed: Option<String>,
}

impl FileSink {
    /// A sink writing to `raw`.
    pub fn new(raw: RawWriter) -> Self {
        Self { raw, failed: None }
    }

    /// The first write error, if a write failed.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Append one record (buffered), unless an earlier write failed.
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        self.guard(|raw| raw.write(record))
    }

    /// Flush and fsync everything written so far, unless an earlier write failed.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.guard(RawWriter::sync)
    }

    fn guard(&mut self, write: impl FnOnce(&mut RawWriter) -> std::io::Result<()>) -> std::io::Result<()> {
        if let Some(first) = &self.failed {
            return Err(std::io::Error::other(format!(
                "the raw record {} could not be written earlier ({first})",
                self.raw.path().display()
            )));
        }
        write(&mut self.raw).map_err(|e| {
            let e = named(self.raw.path(), e);
            self.failed = Some(e.to_string());
            e
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_record_is_told_from_one_that_ends_on_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.raw.jsonl");
        std::fs::write(&p, "{\"record\":\"header\"}\n{\"rec").unwrap();
        let note = cut_note(&p);
        assert!(
            note.contains("r.raw.jsonl ends with a cut line") && note.contains("last whole record"),
            "{note}"
        );
        std::fs::write(&p, "{\"record\":\"header\"}\n").unwrap();
        assert!(cut_note(&p).contains("has no footer"), "{}", cut_note(&p));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_sink_writes_nothing_after_its_first_failure() {
        use crate::record::status::RunStatus;
        let raw = RawWriter::open(Path::new("/dev/full"), true).unwrap();
        let mut sink = FileSink::new(raw);
        let record = Record::Footer {
            status: RunStatus::Failed,
            ended_unix_s: 0.0,
            total_calls: 0,
            reason: None,
            rejections: vec![],
        };
        // buffered, then the flush fails: the error names the file
        let first = sink.write(&record).and_then(|()| sink.sync()).unwrap_err().to_string();
        assert!(first.starts_with("/dev/full: "), "{first}");
        assert!(sink.failed().is_some());
        let next = sink.write(&record).unwrap_err().to_string();
        assert!(next.contains("could not be written earlier"), "{next}");
    }
}
