//! The raw record: one JSON object per line, written as the run goes (header, warm-ups, each
//! block followed by its calls, errors, footer). Flushed and synced after every block, so a
//! crash or Ctrl-C keeps everything up to the last block; a file without a footer is an
//! incomplete run.
//!
//! Energy runs add: the sensor and energy settings in the header, the readings taken before
//! measuring (`probe`, right after the header), every power sample as it
//! arrives (flushed per sample), every idle window, the sampler's report, per-block energy
//! (only for a run that was not rejected) and a footer status `complete`, `rejected` (with
//! every reason) or `incomplete`. Fields that `speed` does not use are left out of its lines,
//! so its records are unchanged.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::ModelInfo;
use super::provenance::Provenance;
pub use super::provenance::ToolInfo;
use super::status::RunStatus;
use crate::energy::idle::BlockEnergy;
use crate::energy::run::RejectionDetail;
pub use crate::host::{current_rss_bytes, HostInfo, MeasuringThread};
use crate::power::sampler::{Sample, SamplerReport};
use crate::power::{PowerBoundary, SensorInfo};

/// Current raw schema version. 2 adds `probe` records (the readings an energy run takes before
/// measuring); every version-1 record reads unchanged.
pub const SCHEMA_VERSION: u32 = 2;

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
    /// What a reader must know to read this arm's numbers (see `BackendInfo::notes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The BLAS library behind the arm's matrix products (see `BackendInfo::blas`); absent
    /// for engines with their own kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blas: Option<String>,
}

impl ArmInfo {
    /// The header entry of an arm named `name`, built from `spec`, whose backend reports `info`.
    pub fn describe(name: &str, spec: &str, info: &crate::backend::BackendInfo) -> Self {
        Self {
            name: name.to_string(),
            spec: spec.to_string(),
            backend: info.name.clone(),
            precision: info.precision.clone(),
            device: info.device.clone(),
            fingerprint: info.fingerprint.clone(),
            batch: info.shapes.batch_size,
            length: info.shapes.max_length,
            max_options: info.shapes.max_options,
            notes: info.notes.clone(),
            blas: info.blas.clone(),
        }
    }

    /// Whether the arm ran the scripted backend (`mock:…`), which does no model arithmetic and
    /// is never a measurement of a model. Read from the recorded `backend` name, so it answers
    /// for arms read back from raw files too.
    pub fn is_scripted(&self) -> bool {
        self.backend == crate::backend::mock::NAME
    }

    /// Whether this arm runs the same model on the same engine as `other`, so that measuring
    /// both measures one thing twice. A reference runtime's fingerprint is its checkpoint's,
    /// not the weights it computes with, so its precision must match too (laya at FP32 and at
    /// FP16 autocast read one checkpoint).
    pub fn same_model_as(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
            && self.backend == other.backend
            && !self.is_scripted()
            && (!self.spec.starts_with("ref:") || self.precision == other.precision)
    }

    /// Whether the arm's arithmetic is the model's, so that a FLOP rate of it means something:
    /// not a scripted arm, and not a `ref:factory:` callable (whatever it computes is its own).
    pub fn runs_the_model(&self) -> bool {
        !self.is_scripted() && !self.spec.starts_with("ref:factory:")
    }
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
    /// Requests per call (`speed --batch N`): each call answers this many consecutive
    /// requests in one packed forward, so a block's decisions are its calls × this. Absent in
    /// records written before the flag and in every run at 1 (additive, no version bump).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch: usize,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

impl PlanInfo {
    /// Requests answered (decisions) by `calls` calls: `calls × batch`.
    pub fn decisions(&self, calls: u64) -> u64 {
        calls * self.batch.max(1) as u64
    }
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
    pub model: ModelInfo,
    /// Arms.
    pub arms: Vec<ArmInfo>,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
    /// Energy runs: the power sensor, as opened (the final notes are in the sampler record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensor: Option<SensorInfo>,
    /// Energy runs: the energy protocol's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyPlanInfo>,
    /// Energy runs: what the sensor's total measures (`gpu-board`, `whole-system`, ...; see
    /// [`PowerBoundary`]). Absent in records older than this field (additive, no version
    /// bump): [`Header::power_boundary`] then derives it from the recorded sensor kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_boundary: Option<PowerBoundary>,
    /// The measuring thread's QoS class on macOS (`measuring_thread_qos: "user-interactive"`)
    /// or why it could not be set (`measuring_thread_qos_error`); both absent elsewhere and in
    /// records older than these fields. Flattened: its fields are the header's own.
    #[serde(flatten)]
    pub measuring_thread: MeasuringThread,
}

impl Header {
    /// The header's writer and machine, for a report of `schema_version` derived from it.
    pub fn provenance(&self, schema_version: u32) -> Provenance {
        Provenance::derived(schema_version, &self.tool, &self.host)
    }

    /// What the run's power and energy figures measure: the recorded `power_boundary`, else
    /// (a record older than the field) the boundary its sensor kind declares where that is
    /// unambiguous (`pstr` the whole system, `nvml…` the GPU board, `rapl` the CPU package),
    /// else unknown. A speed record has no sensor: unknown.
    pub fn power_boundary(&self) -> PowerBoundary {
        match (&self.power_boundary, &self.sensor) {
            (Some(b), _) => b.clone(),
            (None, Some(s)) => PowerBoundary::of_sensor(s),
            (None, None) => PowerBoundary::Unknown,
        }
    }
}

/// The energy protocol's settings as the header records them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyPlanInfo {
    /// Sampler interval, s.
    pub sample_interval_s: f64,
    /// Why the interval is not `--sample-interval` or its default (a sensor's measured update
    /// period); absent otherwise (and in records older than this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval_reason: Option<String>,
    /// Idle window length, s.
    pub idle_seconds: f64,
    /// Discarded start of each idle window, s.
    pub idle_discard_s: f64,
    /// Readings above this are rejected, W.
    pub max_watts: f64,
    /// Longest allowed gap between samples, max(2 s, 3 × interval), s.
    pub max_gap_s: f64,
    /// Equal-load mode: requests per second for every arm; `None`: saturated blocks.
    pub rate_hz: Option<f64>,
    /// Equal-load mode: calls in every block.
    pub calls_per_block: Option<u64>,
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
        /// `--batch N` above 1: whether every request's batched warm-up result equals its
        /// result answered alone (one request per call, as `--batch 1` runs it); absent at 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unbatched_identical: Option<bool>,
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
        /// resident), `null` where the OS does not say; the key is required.
        #[serde(deserialize_with = "Option::deserialize")]
        rss_bytes: Option<u64>,
        /// Equal-load mode: calls the block was scheduled to make.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scheduled_calls: Option<u64>,
        /// Equal-load mode: calls that ended after the next call was due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missed_deadlines: Option<u64>,
        /// The block was cut short (interrupt, sensor stopped, failed call).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended_early: bool,
        /// CPU time the hypervisor gave to other guests while the block ran, and all CPU time
        /// in that interval (every CPU, `USER_HZ` ticks of `/proc/stat`); absent where the OS
        /// keeps no such counter (added in schema 2.x without a version bump: older readers
        /// ignore it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host_steal: Option<crate::report::steal::StealTicks>,
    },
    /// One timed call.
    Call {
        /// Block index.
        block: u32,
        /// Arm name.
        arm: String,
        /// Request index (`--batch N`: the first of the call's requests).
        state: u32,
        /// `--batch N` above 1: requests the call answered in one packed forward, `state`,
        /// `state + 1`, ... (cycling through the workload); absent for one request per call.
        /// Its `answer` is then every request's answers joined by ` | `, in order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requests: Option<u32>,
        /// Start, ns since the origin.
        start_ns: u64,
        /// Duration over the full boundary, ns (a reference arm: the round trip to its worker).
        duration_ns: u64,
        /// A reference arm (`ref:…`): the runtime's own predict, timed in its worker, ns.
        /// Absent for our arms; added in schema 1.x without a version bump (older readers
        /// ignore it; see docs/reference-runtimes.md).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime_ns: Option<u64>,
        /// Selected answers, `qid=label;...`.
        answer: String,
        /// Equal to the arm's warm-up result.
        stable: bool,
        /// Equal-load mode: when the call was due to start, ns since the origin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scheduled_ns: Option<u64>,
        /// Equal-load mode: the call ended after the next call was due (made and counted).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        missed_deadline: bool,
    },
    /// An idle window (energy runs): the benchmark thread slept, no calls were made.
    Idle {
        /// 0 before the first block, `i + 1` after block `i`.
        index: u32,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End, ns since the origin.
        end_ns: u64,
        /// Cut short by an interrupt or a stopped sensor.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended_early: bool,
    },
    /// One power sample exactly as the sampler stamped it (reading or fault).
    Sample(Box<Sample>),
    /// A reading taken before measuring (the probe that proves the sensor works; energy runs,
    /// schema 2), stamped on the run's clock and numbered from 0 on its own; judged by the rules
    /// every single reading must pass.
    Probe(Box<Sample>),
    /// The sampler's own report at the end: counts, its CPU time, why it stopped.
    Sampler(Box<SamplerReport>),
    /// A block's energy, written after the run for a run that was not rejected.
    BlockEnergy {
        /// Block index.
        index: u32,
        /// Arm name.
        arm: String,
        /// The figures (`null` with `missing_reason` when they could not be computed).
        energy: Option<BlockEnergy>,
        /// Why `energy` is `null`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missing_reason: Option<String>,
    },
    /// A failure that ended the run.
    Error {
        /// Arm name.
        arm: String,
        /// Block, if inside one (`null` otherwise; the key is required).
        #[serde(deserialize_with = "Option::deserialize")]
        block: Option<u32>,
        /// What failed.
        message: String,
    },
    /// A correction to the header's metadata, appended later by `summary --correct` (tag
    /// `metadata_correction`); the original field and every measurement stay unchanged.
    #[serde(rename = "metadata_correction")]
    Correction {
        /// When the correction was appended, Unix seconds.
        timestamp_unix_s: f64,
        /// The header field it corrects, as a dotted path (`host.cpu_model`, `arms.1.precision`).
        field: String,
        /// What is wrong and what is right, in words.
        note: String,
    },
    /// Last line of a finished run.
    Footer {
        /// `complete`, `incomplete` or `failed`; energy runs also `rejected`.
        status: RunStatus,
        /// Wall-clock end, Unix seconds.
        ended_unix_s: f64,
        /// Timed calls recorded.
        total_calls: u64,
        /// Why the run is not complete (interrupt, sensor stopped, failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Energy runs: every rule the samples violated (the run is rejected).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rejections: Vec<RejectionDetail>,
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

impl crate::error::Classify for RawError {
    /// Always the input's: a raw file that cannot be read is a bad input.
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::Input
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
enum LineEnd {
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
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<LineEnd> {
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

fn read_limited(path: &Path, limit: usize) -> Result<RawRun, RawError> {
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
            model: ModelInfo::spec_only("builtin:tiny"),
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
                batch: 1,
            },
            sensor: None,
            energy: None,
            power_boundary: None,
            measuring_thread: MeasuringThread::default(),
        }
    }

    fn arm(spec: &str, backend: &str, precision: &str, fingerprint: &str) -> ArmInfo {
        ArmInfo {
            name: spec.into(),
            spec: spec.into(),
            backend: backend.into(),
            precision: precision.into(),
            device: "d".into(),
            fingerprint: fingerprint.into(),
            batch: 1,
            length: 96,
            max_options: 32,
            notes: vec![],
            blas: None,
        }
    }

    #[test]
    fn the_power_boundary_is_recorded_or_derived_from_the_sensor_kind() {
        use crate::power::SensorKind;
        let sensor = |kind, source: &str| SensorInfo {
            kind,
            spec: "s".into(),
            source: source.into(),
            device: "d".into(),
            live: true,
            program: None,
            notes: vec![],
        };
        let read_back =
            |h: &Header| -> Header { serde_json::from_str(&serde_json::to_string(h).unwrap()).unwrap() };
        let mut h = header();
        assert_eq!(h.power_boundary(), PowerBoundary::Unknown, "a speed record has no sensor");
        // A record older than the field: derived where the sensor kind is unambiguous.
        for (kind, source, want) in [
            (SensorKind::Nvml, "nvml-energy", PowerBoundary::GpuBoard),
            (SensorKind::Pstr, "smc-pstr", PowerBoundary::WholeSystem),
            (SensorKind::Rapl, "rapl-pkg", PowerBoundary::CpuPackage),
            (SensorKind::Exec, "measured-external", PowerBoundary::Unknown),
            (SensorKind::Replay, "replay", PowerBoundary::Unknown),
        ] {
            h.sensor = Some(sensor(kind, source));
            assert!(!serde_json::to_string(&h).unwrap().contains("power_boundary"));
            assert_eq!(read_back(&h).power_boundary(), want, "{kind:?}");
        }
        // Recorded: additive, and it wins over the kind.
        h.power_boundary = Some(PowerBoundary::Wall);
        assert!(serde_json::to_string(&h).unwrap().contains(r#""power_boundary":"wall""#));
        assert_eq!(read_back(&h).power_boundary(), PowerBoundary::Wall);
    }

    #[test]
    fn same_model_means_same_weights_engine_and_for_a_runtime_its_precision() {
        // Our engines fingerprint the weights they compute with: w8 with nothing palettized is f32.
        let f32 = arm("portable:f32", "portable", "f32", "aa");
        assert!(arm("portable:w8", "portable", "w8", "aa").same_model_as(&f32));
        assert!(!arm("portable:bf16", "portable", "bf16", "bb").same_model_as(&f32));
        assert!(!arm("mlx:fp32", "mlx", "fp32", "aa").same_model_as(&f32));
        // A runtime's is its checkpoint's: laya at FP16 autocast and at FP32 read one file.
        let fp32 = arm("ref:laya:c:cuda:fp32", "laya 0.4.15", "fp32", "cc");
        assert!(!arm("ref:laya:c:cuda", "laya 0.4.15", "fp16 autocast", "cc").same_model_as(&fp32));
        assert!(arm("ref:laya:c:cuda", "laya 0.4.15", "fp32", "cc").same_model_as(&fp32));
        assert!(!arm("mock:ok", crate::backend::mock::NAME, "f32", "m").same_model_as(&arm(
            "mock:ok",
            crate::backend::mock::NAME,
            "f32",
            "m"
        )));
    }

    fn call(i: u64) -> Record {
        Record::Call {
            block: 0,
            arm: "a".into(),
            state: 0,
            requests: None,
            start_ns: i * 10,
            duration_ns: 5,
            runtime_ns: None,
            answer: "q=x".into(),
            stable: true,
            scheduled_ns: None,
            missed_deadline: false,
        }
    }

    #[test]
    fn round_trips_into_mirror_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let mut w = RawWriter::create(&path).unwrap();
        w.write(&Record::Header(Box::new(header()))).unwrap();
        w.write(&call(1)).unwrap();
        w.write(&Record::Footer {
            status: RunStatus::Complete,
            ended_unix_s: 2.0,
            total_calls: 1,
            reason: None,
            rejections: vec![],
        })
        .unwrap();
        w.sync().unwrap();
        let run = read(&path).unwrap();
        assert_eq!(run.header, header());
        assert_eq!(run.records[0], call(1));
        assert!(run.complete);
        assert!(run.truncated_tail.is_none());
    }

    #[test]
    fn speed_lines_carry_no_energy_fields() {
        let line = serde_json::to_string(&call(1)).unwrap();
        assert_eq!(
            line,
            r#"{"record":"call","block":0,"arm":"a","state":0,"start_ns":10,"duration_ns":5,"answer":"q=x","stable":true}"#
        );
        let h = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
        assert!(!h.contains("\"sensor\"") && !h.contains("\"energy\""), "{h}");
    }

    #[test]
    fn the_measuring_thread_qos_is_a_header_field_only_where_set() {
        let plain = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
        assert!(!plain.contains("measuring_thread"), "{plain}");
        let mut h = header();
        h.measuring_thread = MeasuringThread::from_qos_return(0);
        let line = serde_json::to_string(&Record::Header(Box::new(h.clone()))).unwrap();
        assert!(line.ends_with(r#""measuring_thread_qos":"user-interactive"}"#), "{line}");
        let Record::Header(back) = serde_json::from_str::<Record>(&line).unwrap() else {
            panic!("not a header")
        };
        assert_eq!(*back, h);
        h.measuring_thread = MeasuringThread::from_qos_return(1);
        let line = serde_json::to_string(&Record::Header(Box::new(h.clone()))).unwrap();
        assert!(line.contains(r#""measuring_thread_qos_error":"pthread_set_qos_class_self_np"#), "{line}");
        assert!(!line.contains(r#""measuring_thread_qos":"#), "{line}");
        let Record::Header(back) = serde_json::from_str::<Record>(&line).unwrap() else {
            panic!("not a header")
        };
        assert_eq!(*back, h);
    }

    #[test]
    fn a_scripted_arm_is_known_by_its_recorded_backend_name() {
        use crate::backend::mock::{Script, ScriptedBackend};
        use crate::backend::{Backend, ShapeCaps, ShapeMode};
        let shapes = ShapeCaps {
            batch_size: 1,
            max_length: 32,
            min_length: 16,
            max_options: 4,
            mode: ShapeMode::Range,
        };
        let mock =
            ScriptedBackend::new(shapes, Script::Synthetic { num_actions: 2 }, std::time::Duration::ZERO);
        let arm = ArmInfo::describe("m", "mock:ok", mock.info());
        assert!(arm.is_scripted());
        // Only the serialized fields: the kind, host hints and weight bytes stay in memory.
        let json = serde_json::to_string(&arm).unwrap();
        assert!(
            json.contains("\"backend\":\"mock\"") && !json.contains("kind") && !json.contains("hint"),
            "{json}"
        );
        assert!(!ArmInfo { backend: "portable".into(), ..arm }.is_scripted());
    }

    #[test]
    fn energy_records_round_trip() {
        use crate::energy::reject::{Rejection, SampleRef};
        use crate::power::sampler::SampleOutcome;
        use crate::power::Reading;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let mut w = RawWriter::create(&path).unwrap();
        w.write(&Record::Header(Box::new(header()))).unwrap();
        let mut reading = Reading::power_w("system", 40089.0);
        reading.raw = Some("40089".into());
        let sample =
            Sample { seq: 0, t_request_ns: 5, t_receive_ns: 9, outcome: SampleOutcome::Reading(reading) };
        w.write(&Record::Sample(Box::new(sample.clone()))).unwrap();
        w.write(&Record::Idle { index: 0, start_ns: 1, end_ns: 2, ended_early: false }).unwrap();
        w.flush().unwrap();
        let rejection =
            Rejection::AboveCap { sample: SampleRef { seq: 0, t_s: 9e-9 }, watts: 40089.0, max_watts: 500.0 };
        let footer = Record::Footer {
            status: RunStatus::Rejected,
            ended_unix_s: 3.0,
            total_calls: 0,
            reason: None,
            rejections: vec![RejectionDetail {
                message: rejection.to_string(),
                rejection,
                channel: None,
                evidence: vec![],
            }],
        };
        w.write(&footer).unwrap();
        w.sync().unwrap();
        let run = read(&path).unwrap();
        assert_eq!(samples(&run), vec![sample]);
        assert_eq!(run.records.last(), Some(&footer));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""rule":"above_cap""#), "{text}");
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
    fn lines_written_before_the_typed_model_and_status_read_and_write_back_unchanged() {
        // A header and footer exactly as the previous version wrote them (model as a JSON
        // object, footer status as a string).
        let header = r#"{"record":"header","schema_version":2,"kind":"speed","tool":{"name":"laya-bench","version":"0.1.0","git_revision":"821a2234ba89"},"command_line":["laya-bench","speed","--calls","20"],"started_unix_s":1796181992.0455773,"clock":"monotonic ns since started_unix_s","host":{"hostname":"vm","os":"linux","arch":"x86_64","cpu_model":"AMD EPYC","logical_cpus":2,"memory_bytes":25275973632},"model":{"spec":"builtin:tiny","hidden_size":64,"layers":4,"heads":4,"intermediate_size":96,"vocab_size":1400,"head_layers":2,"max_len":512},"arms":[{"name":"a","spec":"mock:ok","backend":"mock","precision":"scripted","device":"none (scripted outputs, not a measurement)","fingerprint":"mock","batch":1,"length":96,"max_options":32}],"workload":{"name":"invoice","requests":1,"tokens_per_row":[[91]],"target_tokens":91,"length":96},"plan":{"cycles":1,"block_seconds":null,"block_calls":20,"warmup_calls":2,"order":["a","a"]}}"#;
        let footers = [
            r#"{"record":"footer","status":"complete","ended_unix_s":1796181992.243547,"total_calls":40}"#,
            r#"{"record":"footer","status":"incomplete","ended_unix_s":2.5,"total_calls":3,"reason":"interrupted"}"#,
            r#"{"record":"footer","status":"failed","ended_unix_s":2.5,"total_calls":0,"reason":"x"}"#,
            r#"{"record":"footer","status":"rejected","ended_unix_s":2.5,"total_calls":0}"#,
        ];
        let Record::Header(h) = serde_json::from_str::<Record>(header).unwrap() else {
            panic!("not a header")
        };
        assert_eq!(h.model.spec, "builtin:tiny");
        assert_eq!((h.model.hidden_size, h.model.max_len), (Some(64), Some(512)));
        assert_eq!(serde_json::to_string(&Record::Header(h)).unwrap(), header);
        let words = ["complete", "incomplete", "failed", "rejected"];
        for (line, word) in footers.iter().zip(words) {
            let r: Record = serde_json::from_str(line).unwrap();
            assert!(matches!(&r, Record::Footer { status, .. } if status.as_str() == word), "{r:?}");
            assert_eq!(serde_json::to_string(&r).unwrap(), *line);
        }
        // A footer status this version does not know is not a footer.
        assert!(serde_json::from_str::<Record>(
            r#"{"record":"footer","status":"done","ended_unix_s":1,"total_calls":0}"#
        )
        .is_err());
    }

    /// A short record written by the real writer: header, one call, a complete footer.
    fn short_record(path: &Path) -> String {
        let mut w = RawWriter::create(path).unwrap();
        w.write(&Record::Header(Box::new(header()))).unwrap();
        w.write(&call(1)).unwrap();
        w.write(&Record::Footer {
            status: RunStatus::Complete,
            ended_unix_s: 2.0,
            total_calls: 1,
            reason: None,
            rejections: vec![],
        })
        .unwrap();
        w.sync().unwrap();
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_line_is_read_up_to_its_limit_and_no_further() {
        let mut buf = Vec::new();
        let mut r = std::io::Cursor::new(b"abc\nabcd\nab".to_vec());
        assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Newline);
        assert_eq!(buf, b"abc");
        // Four bytes without a newline: refused having read limit + 1 bytes, not the rest.
        assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::TooLong);
        assert_eq!((buf.as_slice(), r.position()), (&b"abcd"[..], 8));
        assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Newline);
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Cut);
        assert_eq!(buf, b"ab");
        assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Eof);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let text = short_record(&path);
        let longest = text.lines().map(str::len).max().unwrap();
        assert!(read_limited(&path, longest).is_ok());
        let n = text.lines().position(|l| l.len() == longest).unwrap() + 1;
        let e = read_limited(&path, longest - 1).unwrap_err();
        assert!(matches!(e, RawError::LineTooLong { line, .. } if line == n), "{e}");
        assert!(e.to_string().starts_with(&format!("{}: line {n} runs past 32 MiB", path.display())), "{e}");
        // A file of zeros without a newline: line 1.
        std::fs::write(&path, vec![0u8; 100]).unwrap();
        assert!(matches!(read_limited(&path, 64), Err(RawError::LineTooLong { line: 1, .. })));
    }

    #[test]
    fn only_a_last_line_without_its_newline_is_a_cut_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let text = short_record(&path);
        let n = text.lines().count();
        // Garbage after the footer, ended by a newline: bad input naming its line.
        std::fs::write(&path, format!("{text}garbage\n")).unwrap();
        let e = read(&path).unwrap_err();
        assert!(matches!(e, RawError::BadLine { line, .. } if line == n + 1), "{e}");
        // The same without the newline: a cut write.
        std::fs::write(&path, format!("{text}garbage")).unwrap();
        assert_eq!(read(&path).unwrap().truncated_tail.as_deref(), Some("garbage"));
        // A write cut inside a UTF-8 character is a cut write too; a complete line that is
        // not UTF-8 is bad input.
        let mut bytes = text.clone().into_bytes();
        bytes.extend_from_slice(&"{\"record\":\"é".as_bytes()[..12]);
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap().truncated_tail.is_some());
        bytes.push(b'\n');
        std::fs::write(&path, &bytes).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains(&format!("line {} is not a valid record (not UTF-8 text", n + 1)), "{e}");
        // Blank lines are skipped, and a valid last line without its newline is read.
        std::fs::write(&path, format!("\n{}", text.trim_end())).unwrap();
        let run = read(&path).unwrap();
        assert!(run.complete && run.truncated_tail.is_none());
        assert_eq!(run.lines, [3, 4]);
    }

    #[test]
    fn only_the_schema_versions_this_build_reads_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.jsonl");
        let text = short_record(&path);
        let at = format!("\"schema_version\":{SCHEMA_VERSION}");
        assert!(text.contains(&at));
        for v in [0, SCHEMA_VERSION + 1] {
            std::fs::write(&path, text.replacen(&at, &format!("\"schema_version\":{v}"), 1)).unwrap();
            let e = read(&path).unwrap_err();
            assert!(matches!(e, RawError::Version { found, .. } if found == v), "{e}");
            assert!(
                e.to_string().contains(&format!("reads ({MIN_SCHEMA_VERSION} to {SCHEMA_VERSION})")),
                "{e}"
            );
        }
        std::fs::write(&path, text.replacen(&at, "\"schema_version\":1", 1)).unwrap();
        assert!(read(&path).is_ok());
    }

    #[test]
    fn a_regular_files_digest_is_its_sha256_and_a_device_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(
            file_digest(&path).unwrap().as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        #[cfg(unix)]
        assert_eq!(file_digest(Path::new("/dev/zero")).unwrap(), None);
    }

    #[test]
    fn rejects_files_that_are_not_raw_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"hello\": 1}\n").unwrap();
        assert!(matches!(read(&path), Err(RawError::NoHeader { .. })));
    }
}
