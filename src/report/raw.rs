//! The raw record: one JSON object per line, written as the run goes (header, warm-ups, each
//! block followed by its calls, errors, footer). Flushed and synced after every block, so a
//! crash or Ctrl-C keeps everything up to the last block; a file without a footer is an
//! incomplete run.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Current raw schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The tool that wrote a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `laya-bench`.
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Git revision at build time, or `unknown`.
    pub git_revision: String,
}

impl ToolInfo {
    /// This build.
    pub fn current() -> Self {
        Self {
            name: "laya-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: option_env!("LAYA_BENCH_GIT_REVISION").unwrap_or("unknown").into(),
        }
    }
}

/// The machine a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name, if readable.
    pub hostname: Option<String>,
    /// `linux`, `macos`, ...
    pub os: String,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    /// CPU model string, if readable.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to the process.
    pub logical_cpus: usize,
    /// Physical memory, if readable.
    pub memory_bytes: Option<u64>,
}

impl HostInfo {
    /// Read what this OS exposes; missing facts are `None`, never guessed.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
        let cpu_model = cpuinfo.as_deref().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        let memory_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        });
        let hostname =
            std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string());
        Self {
            hostname,
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cpu_model,
            logical_cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory_bytes,
        }
    }
}

/// One arm as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    /// User-given name.
    pub name: String,
    /// Backend spec.
    pub spec: String,
    /// Backend name.
    pub backend: String,
    /// Weight precision.
    pub precision: String,
    /// Device description.
    pub device: String,
    /// sha256 of the weights it loaded.
    pub fingerprint: String,
    /// Rows per call.
    pub batch: usize,
    /// Padded length.
    pub length: usize,
    /// Option slots.
    pub max_options: usize,
}

/// The workload as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// `invoice` or a file path.
    pub name: String,
    /// Requests cycled.
    pub requests: usize,
    /// Real tokens of each request's rows.
    pub tokens_per_row: Vec<Vec<usize>>,
    /// Requested exact row length (invoice workload).
    pub target_tokens: Option<usize>,
    /// Padded graph length.
    pub length: usize,
}

/// The schedule as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInfo {
    /// Balanced cycles.
    pub cycles: usize,
    /// Block length in seconds (saturated mode).
    pub block_seconds: Option<f64>,
    /// Block length in calls.
    pub block_calls: Option<u64>,
    /// Warm-up calls per arm.
    pub warmup_calls: usize,
    /// Arm name of every block, in order.
    pub order: Vec<String>,
}

/// First line of a raw file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Schema version of this file.
    pub schema_version: u32,
    /// `speed` or `energy`.
    pub kind: String,
    /// Writer.
    pub tool: ToolInfo,
    /// argv.
    pub command_line: Vec<String>,
    /// Wall-clock time of the clock origin, Unix seconds.
    pub started_unix_s: f64,
    /// What `*_ns` fields count.
    pub clock: String,
    /// Machine.
    pub host: HostInfo,
    /// Model spec and its shape.
    pub model: serde_json::Value,
    /// Arms.
    pub arms: Vec<ArmInfo>,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
}

/// One line of a raw file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// See [`Header`].
    Header(Box<Header>),
    /// An arm's warm-up (outside every measured interval).
    Warmup {
        /// Arm name.
        arm: String,
        /// Calls made.
        calls: u64,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End.
        end_ns: u64,
        /// Reference answer per request.
        answers: Vec<String>,
    },
    /// A finished block; its calls follow.
    Block {
        /// Block index.
        index: u32,
        /// Balanced cycle.
        cycle: u32,
        /// Arm name.
        arm: String,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End.
        end_ns: u64,
        /// Calls completed.
        calls: u64,
        /// Calls whose result differed from warm-up.
        unstable_calls: u64,
        /// Resident memory of the process after the block (shared by every arm: all models are
        /// resident), `null` where the OS does not say.
        rss_bytes: Option<u64>,
    },
    /// One timed call.
    Call {
        /// Block index.
        block: u32,
        /// Arm name.
        arm: String,
        /// Request index.
        state: u32,
        /// Start, ns since the origin.
        start_ns: u64,
        /// Duration over the full boundary, ns.
        duration_ns: u64,
        /// Selected answers, `qid=label;...`.
        answer: String,
        /// Equal to the arm's warm-up result.
        stable: bool,
    },
    /// A failure that ended the run.
    Error {
        /// Arm name.
        arm: String,
        /// Block, if inside one.
        block: Option<u32>,
        /// What failed.
        message: String,
    },
    /// Last line of a finished run.
    Footer {
        /// `complete` or `failed`.
        status: String,
        /// Wall-clock end, Unix seconds.
        ended_unix_s: f64,
        /// Timed calls recorded.
        total_calls: u64,
    },
}

/// Appends records to a raw file.
pub struct RawWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl RawWriter {
    /// Create (truncate) the raw file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = File::create(path)?;
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

    /// Flush and fsync everything written so far.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// A raw file read back.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRun {
    /// Its header.
    pub header: Header,
    /// Every record after the header, in order (footer included when present).
    pub records: Vec<Record>,
    /// Whether the file ends with a footer.
    pub complete: bool,
    /// A trailing line that did not parse (a write cut by a crash), if any.
    pub truncated_tail: Option<String>,
}

/// A raw file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    /// I/O.
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The first line is not a header.
    #[error("{path}: line 1 is not a laya-bench header record; is this a raw file?")]
    NoHeader { path: String },
    /// A line in the middle does not parse.
    #[error("{path}: line {line} is not a valid record ({detail})")]
    BadLine { path: String, line: usize, detail: String },
    /// A newer schema.
    #[error("{path}: schema_version {found} is newer than this laya-bench reads ({SCHEMA_VERSION}); upgrade laya-bench")]
    Version { path: String, found: u32 },
}

/// Read a raw file. A last line cut mid-write is reported, not fatal; a file without footer is
/// `complete: false`.
pub fn read(path: &Path) -> Result<RawRun, RawError> {
    let p = path.display().to_string();
    let file = File::open(path).map_err(|source| RawError::Io { path: p.clone(), source })?;
    let mut lines: Vec<String> = Vec::new();
    for line in BufReader::new(file).lines() {
        lines.push(line.map_err(|source| RawError::Io { path: p.clone(), source })?);
    }
    let mut iter = lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()).peekable();
    let header = match iter.next().map(|(_, l)| serde_json::from_str::<Record>(l)) {
        Some(Ok(Record::Header(h))) => *h,
        _ => return Err(RawError::NoHeader { path: p }),
    };
    if header.schema_version > SCHEMA_VERSION {
        return Err(RawError::Version { path: p, found: header.schema_version });
    }
    let mut records = Vec::new();
    let mut truncated_tail = None;
    while let Some((i, line)) = iter.next() {
        match serde_json::from_str::<Record>(line) {
            Ok(r) => records.push(r),
            Err(e) if iter.peek().is_none() => {
                let _ = e;
                truncated_tail = Some(line.clone());
            }
            Err(e) => return Err(RawError::BadLine { path: p, line: i + 1, detail: e.to_string() }),
        }
    }
    let complete = matches!(records.last(), Some(Record::Footer { .. }));
    Ok(RawRun { header, records, complete, truncated_tail })
}

/// Resident memory of this process now, where the OS says (Linux `/proc/self/statm`).
pub fn current_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            schema_version: SCHEMA_VERSION,
            kind: "speed".into(),
            tool: ToolInfo::current(),
            command_line: vec!["laya-bench".into(), "speed".into()],
            started_unix_s: 1.5,
            clock: "monotonic ns since started_unix_s".into(),
            host: HostInfo::detect(),
            model: serde_json::json!({"spec": "builtin:tiny"}),
            arms: vec![],
            workload: WorkloadInfo {
                name: "w".into(),
                requests: 1,
                tokens_per_row: vec![vec![91]],
                target_tokens: Some(91),
                length: 96,
            },
            plan: PlanInfo {
                cycles: 1,
                block_seconds: None,
                block_calls: Some(2),
                warmup_calls: 1,
                order: vec!["a".into(), "a".into()],
            },
        }
    }

    fn call(i: u64) -> Record {
        Record::Call {
            block: 0,
            arm: "a".into(),
            state: 0,
            start_ns: i * 10,
            duration_ns: 5,
            answer: "q=x".into(),
            stable: true,
        }
    }

    #[test]
    fn round_trips_into_mirror_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let mut w = RawWriter::create(&path).unwrap();
        w.write(&Record::Header(Box::new(header()))).unwrap();
        w.write(&call(1)).unwrap();
        w.write(&Record::Footer { status: "complete".into(), ended_unix_s: 2.0, total_calls: 1 }).unwrap();
        w.sync().unwrap();
        let run = read(&path).unwrap();
        assert_eq!(run.header, header());
        assert_eq!(run.records[0], call(1));
        assert!(run.complete);
        assert!(run.truncated_tail.is_none());
    }

    #[test]
    fn a_file_without_footer_is_incomplete_and_a_cut_line_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let mut w = RawWriter::create(&path).unwrap();
        w.write(&Record::Header(Box::new(header()))).unwrap();
        w.write(&call(1)).unwrap();
        w.sync().unwrap();
        drop(w);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"record\":\"call\",\"block\":0,\"ar");
        std::fs::write(&path, text).unwrap();
        let run = read(&path).unwrap();
        assert!(!run.complete);
        assert_eq!(run.records.len(), 1);
        assert!(run.truncated_tail.unwrap().starts_with("{\"record\":\"call\""));
    }

    #[test]
    fn rejects_files_that_are_not_raw_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"hello\": 1}\n").unwrap();
        assert!(matches!(read(&path), Err(RawError::NoHeader { .. })));
    }
}
