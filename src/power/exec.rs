//! External meter: `exec:CMD` runs `CMD` under `sh -c` and reads one reading per stdout line.
//!
//! Line format (one reading a line, surrounding whitespace ignored):
//! - `WATTS`, e.g. `61.39`
//! - `T_S,WATTS`, e.g. `12.500,61.39`: the meter's own timestamp in seconds (recorded as
//!   `source_t_s` for audit; integration still uses the receive time) and watts.
//! - lines starting with `#` are comments and are skipped.
//!
//! Anything else is a [`SensorError::Malformed`] fault carrying the line: so is a line longer
//! than [`MAX_LINE_BYTES`] (its first bytes kept, the rest discarded unread into memory), and
//! an `INT,DIGITS` line whose time does not increase ([`decimal_comma_suspect`]: `30,5` is
//! 30.5 W in a comma locale). Watts are passed on as read (NaN, negative or huge values are
//! judged by the energy rules, with the line kept).
//!
//! The meter paces itself: a reader thread drains its stdout as fast as it prints, into a
//! bounded queue in which a reading not yet taken is replaced by the next one; the sampler
//! takes at most one line a millisecond and stamps it on arrival. What was received but not
//! taken is counted ([`Sensor::skipped`]), never passed on as a reading.
//!
//! When the meter exits or closes its stdout mid-run, that is a fatal [`SensorError::Stopped`]
//! fault with its exit status and the tail of its stderr; its exit is watched apart from its
//! stdout, so a meter whose background child keeps the pipe open stops too. Its process
//! group is then killed. At the end the meter's whole process group is killed (SIGKILL) and
//! the shell reaped.
//!
//! Example: `exec:nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits -lms 500`
//! (pass `-i` so a multi-GPU host prints one line per interval).

use super::sampler::MIN_STREAM_SPACING;
use super::{
    Pacing, ProgramProvenance, Reading, Sensor, SensorError, SensorInfo, SensorKind, SkippedReadings,
};
use crate::error::{Classify, Error, Kind};
use crate::settings::Settings;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How much of the meter's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2048;
/// How long `--version` may take when recording provenance.
const VERSION_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The unit of a meter's power value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PowerUnit {
    /// Watts.
    #[default]
    W,
    /// Milliwatts.
    MilliW,
    /// Microwatts.
    MicroW,
}

impl PowerUnit {
    /// `value` in this unit as watts (a division, so `61390 mW` is exactly `61.39` W).
    pub fn to_watts(self, value: f64) -> f64 {
        match self {
            PowerUnit::W => value,
            PowerUnit::MilliW => value / 1e3,
            PowerUnit::MicroW => value / 1e6,
        }
    }

    /// The unit's symbol (`W`, `mW`, `uW`).
    pub fn symbol(self) -> &'static str {
        match self {
            PowerUnit::W => "W",
            PowerUnit::MilliW => "mW",
            PowerUnit::MicroW => "uW",
        }
    }

    /// A unit suffix as a meter line may end (`W`, `mW`, `uW`, `µW`), if `text` ends with one;
    /// with the text before it.
    fn strip_suffix(text: &str) -> Option<(&str, PowerUnit)> {
        for (suffix, unit) in [
            ("mW", PowerUnit::MilliW),
            ("uW", PowerUnit::MicroW),
            ("µW", PowerUnit::MicroW),
            ("μW", PowerUnit::MicroW),
            ("W", PowerUnit::W),
        ] {
            if let Some(rest) = text.strip_suffix(suffix) {
                return Some((rest, unit));
            }
        }
        None
    }
}

/// A `--sensor-unit` value that is not a power unit: the text as given (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unit `{0}` is not W, mW or uW")]
pub struct UnknownUnit(pub String);

impl Classify for UnknownUnit {
    /// A bad flag value.
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

impl std::str::FromStr for PowerUnit {
    type Err = UnknownUnit;

    fn from_str(s: &str) -> Result<Self, UnknownUnit> {
        match s.trim() {
            "W" | "w" => Ok(PowerUnit::W),
            "mW" | "mw" => Ok(PowerUnit::MilliW),
            "uW" | "uw" | "µW" | "μW" => Ok(PowerUnit::MicroW),
            other => Err(UnknownUnit(other.to_string())),
        }
    }
}

/// Why a meter line is not a reading: the detail of its [`SensorError::Malformed`] fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// A field is not a number (`field`: `t_s`, or `power` before a unit suffix).
    #[error("{field} {text:?} is not a number")]
    NotANumber {
        /// Which field: `t_s` or `power`.
        field: &'static str,
        /// The field as read, trimmed.
        text: String,
    },
    /// The value is neither a number nor a number with a unit.
    #[error("power {0:?} is not a number (with an optional unit W, mW or uW)")]
    NotAPower(String),
    /// Neither `VALUE` nor `T_S,VALUE` (empty, or more than one comma).
    #[error("expected `VALUE` or `T_S,VALUE` on each line (VALUE in watts, or with a unit: W, mW, uW)")]
    NotALine,
}

impl Classify for LineError {
    /// The meter printed it during the run.
    fn kind(&self) -> Kind {
        Kind::Run
    }
}

/// Parse one meter line: `WATTS` or `T_S,WATTS`. `Ok(None)` for a `#` comment.
pub fn parse_line(line: &str) -> Result<Option<(Option<f64>, f64)>, LineError> {
    parse_line_in(line, PowerUnit::W)
}

/// Parse one meter line, `VALUE` or `T_S,VALUE`, into (t_s, watts): the value may end with a
/// unit (`61.39 W`, `61390 mW`, `61390000 uW`); a bare number is in `unit`. `Ok(None)` for a
/// `#` comment.
pub fn parse_line_in(line: &str, unit: PowerUnit) -> Result<Option<(Option<f64>, f64)>, LineError> {
    let s = line.trim();
    if s.starts_with('#') {
        return Ok(None);
    }
    let num = |f: &str, field: &'static str| -> Result<f64, LineError> {
        let text = f.trim();
        text.parse::<f64>().map_err(|_| LineError::NotANumber { field, text: text.to_string() })
    };
    let power = |f: &str| -> Result<f64, LineError> {
        let f = f.trim();
        if let Ok(v) = f.parse::<f64>() {
            return Ok(unit.to_watts(v));
        }
        match PowerUnit::strip_suffix(f) {
            Some((value, u)) if !value.trim().is_empty() => Ok(u.to_watts(num(value, "power")?)),
            _ => Err(LineError::NotAPower(f.to_string())),
        }
    };
    let fields: Vec<&str> = s.split(',').collect();
    match fields.as_slice() {
        [w] if !w.is_empty() => Ok(Some((None, power(w)?))),
        [t, w] => Ok(Some((Some(num(t, "t_s")?), power(w)?))),
        _ => Err(LineError::NotALine),
    }
}

/// The longest meter line read, in bytes without its `\n`. No reading comes near it (a
/// `T_S,VALUE UNIT` line is a few dozen bytes); a longer line is a fault carrying its first
/// [`OVERLONG_HEAD_BYTES`], and the rest of it is discarded up to its newline without being
/// kept, so a meter that never prints a newline costs no memory.
pub const MAX_LINE_BYTES: usize = 4096;
/// How much of an over-long line its fault keeps.
pub const OVERLONG_HEAD_BYTES: usize = 120;
/// Lines waiting for the sampler, at most; when full, the oldest is dropped (and counted).
const QUEUE_CAPACITY: usize = 64;
/// The stdout reader's read size.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How often a waiting read checks whether the meter process itself has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);
/// How long after the meter process exited its stdout may stay open (the last lines and the
/// end of the pipe on their way) before the meter counts as stopped anyway.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// The text of a meter line exactly as read, without only the `\n` that ends it: a `\r` of a
/// CRLF meter, spaces and every other byte stay (bytes that are not UTF-8 read as U+FFFD).
fn raw_text(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

/// A piece of a meter's stdout: a whole line (without its `\n`), or the start of a line longer
/// than the limit.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A line, without the `\n` that ended it.
    Line(&'a [u8]),
    /// A line longer than the limit: its first bytes (the rest is discarded up to its `\n`).
    Overlong(&'a [u8]),
}

/// Splits a byte stream into lines of at most `max` bytes, holding at most `max` bytes of a
/// line in progress: a longer line is reported once, by its first bytes, when it crosses the
/// limit, and skipped up to its newline.
#[derive(Debug)]
pub struct LineSplitter {
    max: usize,
    partial: Vec<u8>,
    discarding: bool,
}

impl LineSplitter {
    /// A splitter for lines of at most `max` bytes.
    pub fn new(max: usize) -> Self {
        LineSplitter { max, partial: Vec::new(), discarding: false }
    }

    /// Feed the next bytes; every whole line and every over-long start goes to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut impl FnMut(Piece<'_>)) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (segment, rest) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &[][..]),
            };
            bytes = rest;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            if self.partial.len() + segment.len() > self.max {
                let take = OVERLONG_HEAD_BYTES.min(self.max).saturating_sub(self.partial.len());
                self.partial.extend_from_slice(&segment[..take.min(segment.len())]);
                self.partial.truncate(OVERLONG_HEAD_BYTES.min(self.max));
                out(Piece::Overlong(&self.partial));
                self.partial.clear();
                self.discarding = newline.is_none();
                continue;
            }
            match newline {
                Some(_) if self.partial.is_empty() => out(Piece::Line(segment)),
                Some(_) => {
                    self.partial.extend_from_slice(segment);
                    out(Piece::Line(&self.partial));
                    self.partial.clear();
                }
                None => self.partial.extend_from_slice(segment),
            }
        }
    }

    /// The end of the stream: a last line without a newline goes to `out`.
    pub fn finish(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        if !self.discarding && !self.partial.is_empty() {
            out(Piece::Line(&self.partial));
        }
        self.partial.clear();
        self.discarding = false;
    }
}

/// The decimal-comma rule. A line of two bare integers, `INT,DIGITS` (a unit may follow), is
/// read as `T_S,VALUE`, but it is also what `30.5` looks like printed in a locale whose decimal
/// separator is a comma. A meter's own time only moves forward, so such a line whose `T_S`
/// does not increase on the previous line's (`prev_t_s`) is refused: `Some(why)`, naming the
/// line and what to print instead. `None` when the line is not of that form, when there is no
/// previous time, or when its time increases (a meter printing whole seconds).
pub fn decimal_comma_suspect(line: &str, prev_t_s: Option<f64>) -> Option<String> {
    let s = line.trim();
    let (t, value) = s.split_once(',')?;
    let value = value.trim_start();
    let digits = value.trim_end_matches(|c: char| !c.is_ascii_digit());
    let unit = value[digits.len()..].trim();
    let all_digits = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(t)
        || !all_digits(digits)
        || !(unit.is_empty() || PowerUnit::strip_suffix(unit).is_some_and(|(r, _)| r.is_empty()))
    {
        return None;
    }
    let t_s: f64 = t.parse().ok()?;
    let prev = prev_t_s?;
    if t_s > prev {
        return None;
    }
    Some(format!(
        "`{s}` reads as t_s {t} and value {digits}{sep}{unit}, but that t_s does not increase on the previous line's ({prev}): \
         a decimal comma (`{t}.{digits}` in a comma locale)? print a decimal point (run the meter with LC_ALL=C) \
         or a T_S that increases",
        sep = if unit.is_empty() { "" } else { " " },
    ))
}

/// One line the reader passed on.
#[derive(Debug)]
enum Item {
    /// A line that parses as a reading (parsed again, in the sensor's unit, when taken), and
    /// when it arrived.
    Reading(String, Instant),
    /// A line that is not a reading: why, and its text (the first bytes of an over-long one).
    Fault { detail: String, raw: String },
}

/// How the meter's stdout ended.
#[derive(Debug)]
enum End {
    Eof,
    ReadError(String),
}

/// What waits for the sampler, in order: at most [`QUEUE_CAPACITY`] lines (the oldest reading
/// dropped when full, a fault only from a queue of faults), and a reading that arrived [`MIN_STREAM_SPACING`] or more before the newest
/// waiting one is skipped when taken, so what the sampler takes is never more than about a
/// millisecond stale; every skipped line counted.
#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Item>,
    /// When the newest reading in `items` arrived (readings arrive in order, so the last one).
    newest_reading: Option<Instant>,
    skipped: SkippedReadings,
}

impl Queue {
    fn push(&mut self, item: Item) {
        if let Item::Reading(_, at) = &item {
            self.newest_reading = Some(*at);
        }
        if self.items.len() >= QUEUE_CAPACITY {
            // The oldest reading goes first: a fault is dropped only from a queue of nothing
            // but faults (a meter printing garbage as fast as it can, whose run the faults
            // already passed on reject).
            let at = self.items.iter().position(|i| matches!(i, Item::Reading(..))).unwrap_or(0);
            if let Some(old) = self.items.remove(at) {
                self.skip(old);
            }
        }
        self.items.push_back(item);
    }

    /// The next line to take: the oldest, skipping readings superseded by one that arrived at
    /// least [`MIN_STREAM_SPACING`] later.
    fn take(&mut self) -> Option<Item> {
        while let Some(item) = self.items.pop_front() {
            let stale = match (&item, self.newest_reading) {
                (Item::Reading(_, at), Some(newest)) => {
                    newest.saturating_duration_since(*at) >= MIN_STREAM_SPACING
                }
                _ => false,
            };
            if !stale {
                return Some(item);
            }
            self.skip(item);
        }
        None
    }

    fn skip(&mut self, item: Item) {
        match item {
            Item::Reading(..) => self.skipped.readings += 1,
            Item::Fault { raw, .. } => {
                self.skipped.faults += 1;
                self.skipped.first_fault.get_or_insert(raw);
            }
        }
    }

    /// Move `other`'s lines and counts behind this queue's.
    fn absorb(&mut self, other: Queue) {
        self.skipped.readings += other.skipped.readings;
        self.skipped.faults += other.skipped.faults;
        if self.skipped.first_fault.is_none() {
            self.skipped.first_fault = other.skipped.first_fault;
        }
        for item in other.items {
            self.push(item);
        }
    }

    /// Count every waiting line as skipped.
    fn skip_all(&mut self) {
        while let Some(item) = self.items.pop_front() {
            self.skip(item);
        }
    }
}

#[derive(Debug, Default)]
struct Mailbox {
    queue: Queue,
    end: Option<End>,
}

/// The reader thread's mailbox and the bell it rings.
#[derive(Debug, Default)]
struct Shared {
    mailbox: Mutex<Mailbox>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Mailbox> {
        // The reader never panics holding the lock; if it did, the counts are still usable.
        self.mailbox.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Classify one line for the queue (`None` for a `#` comment); `prev_t_s` carries the meter's
/// last `T_S` for the decimal-comma rule.
fn classify(line: &[u8], at: Instant, prev_t_s: &mut Option<f64>) -> Option<Item> {
    let text = raw_text(line);
    // The unit only scales a value, never decides whether a line is one.
    match parse_line_in(&text, PowerUnit::W) {
        Ok(None) => None,
        Ok(Some((t_s, _))) => {
            let prev = std::mem::replace(prev_t_s, t_s);
            match decimal_comma_suspect(&text, prev) {
                Some(detail) => Some(Item::Fault { detail, raw: text }),
                None => Some(Item::Reading(text, at)),
            }
        }
        Err(e) => Some(Item::Fault { detail: e.to_string(), raw: text }),
    }
}

fn overlong(head: &[u8]) -> Item {
    Item::Fault {
        detail: format!(
            "line longer than {MAX_LINE_BYTES} bytes (no reading is that long; its first {} bytes are kept, \
             the rest is discarded up to its newline): print one `VALUE` or `T_S,VALUE` per line",
            head.len()
        ),
        raw: String::from_utf8_lossy(head).into_owned(),
    }
}

/// The stdout reader: reads as fast as the meter prints (so a line's receive time is when it
/// was printed, not when a backlog drained), splits lines at [`MAX_LINE_BYTES`] and hands them
/// to the bounded queue, one lock per read.
fn read_stdout(mut out: impl Read, shared: &Shared) {
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut splitter = LineSplitter::new(MAX_LINE_BYTES);
    let mut prev_t_s = None;
    loop {
        let read = out.read(&mut buf);
        let at = Instant::now();
        let mut local = Queue::default();
        let mut put = |piece: Piece<'_>| match piece {
            Piece::Line(line) => {
                if let Some(item) = classify(line, at, &mut prev_t_s) {
                    local.push(item);
                }
            }
            Piece::Overlong(head) => local.push(overlong(head)),
        };
        let end = match read {
            Ok(0) => {
                splitter.finish(&mut put);
                Some(End::Eof)
            }
            Ok(n) => {
                splitter.feed(&buf[..n], &mut put);
                None
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
            Err(e) => Some(End::ReadError(e.to_string())),
        };
        let done = end.is_some();
        {
            let mut mb = shared.lock();
            mb.queue.absorb(local);
            if end.is_some() {
                mb.end = end;
            }
        }
        shared.ready.notify_all();
        if done {
            return;
        }
    }
}

/// What a wait on the mailbox found.
enum Taken {
    Item(Item),
    End(End),
    Nothing,
}

/// The `exec:CMD` sensor.
pub struct ExecSensor {
    command: String,
    unit: PowerUnit,
    child: Option<Child>,
    shared: Arc<Shared>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stream_timeout: Duration,
    stopped: Option<String>,
    exit_status: Option<ExitStatus>,
    /// When the meter process was first seen to have exited while its stdout stayed open.
    exited_seen: Option<Instant>,
    /// Whether the skipped lines were written into the notes (once, at close).
    skipped_noted: bool,
    info: SensorInfo,
}

fn sensor_name(command: &str) -> String {
    format!("exec:{command}")
}

impl ExecSensor {
    /// Spawn `sh -c command` in its own process group and start reading its stdout.
    /// `stream_timeout` bounds how long [`Sensor::read`] waits for a line; `settings` give the
    /// `HOME` and `PATH` its program is found with ([`provenance`]).
    pub fn spawn(command: &str, stream_timeout: Duration, settings: &Settings) -> Result<Self, SensorError> {
        let name = sensor_name(command);
        if command.trim().is_empty() {
            return Err(SensorError::Unavailable {
                sensor: name,
                reason: "empty command; give the meter command after exec:".into(),
            });
        }
        let program = provenance(command, settings);
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| SensorError::Unavailable {
                sensor: name.clone(),
                reason: format!("cannot start `sh -c`: {e}"),
            })?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let shared = Arc::new(Shared::default());
        match stdout {
            Some(out) => {
                let mine = shared.clone();
                let spawned = std::thread::Builder::new()
                    .name("laya-exec-meter-stdout".into())
                    .spawn(move || read_stdout(out, &mine));
                if let Err(e) = spawned {
                    let _ = kill_group_and_reap(&mut child);
                    return Err(SensorError::Unavailable {
                        sensor: name,
                        reason: format!("cannot start the stdout reader thread: {e}"),
                    });
                }
            }
            None => shared.lock().end = Some(End::ReadError("no stdout pipe".into())),
        }
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(mut err) = stderr {
            let tail = stderr_tail.clone();
            // If this thread cannot start, stderr is simply not captured.
            let _ = std::thread::Builder::new().name("laya-exec-meter-stderr".into()).spawn(move || {
                let mut chunk = [0u8; 512];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        return;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend(&chunk[..n]);
                        let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                        t.drain(..excess);
                    }
                }
            });
        }
        let mut notes = vec![format!(
            "runs under sh -c as process group {}; killed with SIGKILL and reaped at the end",
            child.id()
        )];
        notes.push("receive time = when the line arrived; the meter's own t_s is kept as source_t_s".into());
        Ok(ExecSensor {
            command: command.to_string(),
            unit: PowerUnit::W,
            child: Some(child),
            shared,
            stderr_tail,
            stream_timeout,
            stopped: None,
            exit_status: None,
            exited_seen: None,
            skipped_noted: false,
            info: SensorInfo {
                kind: SensorKind::Exec,
                spec: name,
                source: "measured-external".into(),
                device: format!("stdout of `{command}`"),
                live: true,
                program: Some(program),
                notes,
            },
        })
    }

    /// Read a bare number on a meter line in `unit` (a unit suffix on the line still wins);
    /// recorded in the sensor's notes.
    pub fn with_unit(mut self, unit: PowerUnit) -> Self {
        self.unit = unit;
        if unit != PowerUnit::W {
            self.info.notes.push(format!(
                "bare numbers are read as {} (--sensor-unit) and converted to W; the raw text keeps what the meter printed",
                unit.symbol()
            ));
        }
        self
    }

    /// The meter's exit status, once it has been reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit_status
    }

    /// The meter's process id (also its process-group id), while it has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn stderr_text(&self) -> String {
        let t = match self.stderr_tail.lock() {
            Ok(t) => t.iter().copied().collect::<Vec<u8>>(),
            Err(_) => Vec::new(),
        };
        let s = String::from_utf8_lossy(&t).trim().to_string();
        if s.is_empty() {
            "stderr empty".into()
        } else {
            format!("stderr tail: {s}")
        }
    }

    /// Whether the meter process has exited (not reaped, so its process-group id stays its own
    /// until [`ExecSensor::reap_exited`]).
    fn meter_exited(&self) -> bool {
        self.child.as_ref().is_some_and(|c| has_exited(c.id()).unwrap_or(false))
    }

    /// Kill what is left of the exited meter's process group (a background child holding its
    /// stdout), then reap the meter; its exit status.
    fn reap_exited(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        match kill_group_and_reap(&mut child) {
            Ok(s) => {
                self.exit_status = Some(s);
                Some(s)
            }
            Err(_) => None,
        }
    }

    /// The meter closed its stdout: find out whether it exited and build the stop fault.
    fn on_eof(&mut self, why: &str) -> SensorError {
        let t = Instant::now();
        let mut exited = self.meter_exited();
        while !exited && self.child.is_some() && t.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(5));
            exited = self.meter_exited();
        }
        // Give the stderr thread a moment to collect the last words.
        std::thread::sleep(Duration::from_millis(20));
        let status = if exited { self.reap_exited() } else { None };
        let reason = match status {
            Some(s) => format!("meter {why} and exited ({s}); {}", self.stderr_text()),
            None => format!("meter {why} but is still running; it will be killed; {}", self.stderr_text()),
        };
        self.stopped = Some(reason.clone());
        SensorError::Stopped { sensor: self.info.spec.clone(), reason }
    }

    /// The meter process exited [`EXIT_GRACE`] ago and its stdout is still open: a process it
    /// started holds the pipe. The meter has stopped; its group is killed, lines still queued
    /// are counted as skipped.
    fn check_exit(&mut self) -> Option<SensorError> {
        if self.exited_seen.is_none() && self.meter_exited() {
            self.exited_seen = Some(Instant::now());
        }
        if self.exited_seen.is_none_or(|t| t.elapsed() < EXIT_GRACE) {
            return None;
        }
        self.shared.lock().queue.skip_all();
        let status = self.reap_exited();
        let status = status.map_or_else(|| "exit status unknown".to_string(), |s| s.to_string());
        let reason = format!(
            "meter exited ({status}) but its stdout stayed open (a process it started, e.g. a background \
             child, still held it); the meter's process group was killed; {}",
            self.stderr_text()
        );
        self.stopped = Some(reason.clone());
        Some(SensorError::Stopped { sensor: self.info.spec.clone(), reason })
    }

    /// Wait up to `wait` for a line or the end of stdout.
    fn take(&self, wait: Duration) -> Taken {
        let mut mb = self.shared.lock();
        let until = Instant::now() + wait;
        loop {
            if let Some(item) = mb.queue.take() {
                return Taken::Item(item);
            }
            if let Some(end) = mb.end.take() {
                return Taken::End(end);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Taken::Nothing;
            }
            mb = match self.shared.ready.wait_timeout(mb, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    fn handle(&mut self, item: Item) -> Result<Option<Reading>, SensorError> {
        match item {
            Item::Reading(line, _) => match parse_line_in(&line, self.unit) {
                Ok(None) => Ok(None),
                Ok(Some((t_s, watts))) => {
                    let mut r = Reading::power_w("system", watts);
                    r.source_t_s = t_s;
                    r.raw = Some(line);
                    Ok(Some(r))
                }
                Err(e) => Err(SensorError::Malformed {
                    sensor: self.info.spec.clone(),
                    detail: e.to_string(),
                    raw: line,
                }),
            },
            Item::Fault { detail, raw } => {
                Err(SensorError::Malformed { sensor: self.info.spec.clone(), detail, raw })
            }
        }
    }
}

impl Sensor for ExecSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn pacing(&self) -> Pacing {
        Pacing::Streamed
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        let deadline = Instant::now() + self.stream_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SensorError::Timeout {
                    sensor: self.info.spec.clone(),
                    waited_s: self.stream_timeout.as_secs_f64(),
                });
            }
            if let Some(r) = self.next(left)? {
                return Ok(r);
            }
        }
    }

    fn next(&mut self, timeout: Duration) -> Result<Option<Reading>, SensorError> {
        if let Some(reason) = &self.stopped {
            return Err(SensorError::Stopped { sensor: self.info.spec.clone(), reason: reason.clone() });
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.check_exit() {
                return Err(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.take(left.min(EXIT_POLL)) {
                Taken::Item(item) => return self.handle(item),
                Taken::End(End::Eof) => return Err(self.on_eof("closed its stdout")),
                Taken::End(End::ReadError(e)) => return Err(self.on_eof(&format!("stdout failed ({e})"))),
                Taken::Nothing if Instant::now() >= deadline => return Ok(None),
                Taken::Nothing => {}
            }
        }
    }

    fn begin(&mut self) -> Result<(), SensorError> {
        let (dropped, end) = {
            let mut mb = self.shared.lock();
            mb.queue.skip_all();
            let skipped = std::mem::take(&mut mb.queue.skipped);
            (skipped.readings + skipped.faults, mb.end.take())
        };
        if dropped > 0 {
            self.info.notes.push(format!("{dropped} line(s) printed before sampling began were not used"));
        }
        match end {
            Some(End::Eof) => Err(self.on_eof("closed its stdout before sampling began")),
            Some(End::ReadError(e)) => {
                Err(self.on_eof(&format!("stdout failed before sampling began ({e})")))
            }
            None => Ok(()),
        }
    }

    fn close(&mut self) -> Result<(), SensorError> {
        let result = match self.child.take() {
            Some(mut child) => match kill_group_and_reap(&mut child) {
                Ok(s) => {
                    self.exit_status = Some(s);
                    Ok(())
                }
                Err(e) => Err(SensorError::ReadFailed {
                    sensor: sensor_name(&self.command),
                    detail: format!("could not reap meter process {}: {e}", child.id()),
                }),
            },
            None => Ok(()),
        };
        if !self.skipped_noted {
            self.skipped_noted = true;
            let s = self.skipped();
            if !s.is_empty() {
                let first =
                    s.first_fault.as_deref().map(|f| format!(" (the first: {f:?})")).unwrap_or_default();
                self.info.notes.push(format!(
                    "{} reading line(s) and {} faulty line(s) were received but not sampled{first}: at most one \
                     line a millisecond is taken, the newest waiting one; a meter printing faster sheds the rest \
                     (counted in the sampler record's `skipped`)",
                    s.readings, s.faults
                ));
            }
        }
        result
    }

    fn skipped(&self) -> SkippedReadings {
        self.shared.lock().queue.skipped.clone()
    }
}

impl Drop for ExecSensor {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Whether child `pid` has exited, without reaping it (`waitid` with `WNOWAIT`): a zombie keeps
/// its pid, so the process-group id stays the meter's until it is reaped.
fn has_exited(pid: u32) -> std::io::Result<bool> {
    let id = libc::id_t::try_from(pid).map_err(|_| std::io::Error::other("pid out of range"))?;
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable siginfo_t that outlives the call; the flags make it
    // return at once and leave the child waitable.
    let rc =
        unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (or left it zeroed when nothing had exited); si_pid reads
    // the pid field of that initialised struct.
    Ok(unsafe { info.si_pid() } != 0)
}

/// SIGKILL the child's process group (it leads its own group) and wait for the child.
fn kill_group_and_reap(child: &mut Child) -> std::io::Result<ExitStatus> {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) takes plain integers and has no memory preconditions. The group id
        // is the child's pid (process_group(0)); the child has not been reaped yet, so that
        // id still names this meter's group and cannot have been reused.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    // If the group was already gone the child may have exited; wait reaps it either way.
    child.wait()
}

/// The program a shell command line runs, as `sh` finds its name: the first word after any
/// leading `NAME=value` assignments (and an `exec`), with `'…'`, `"…"` and `\` quoting
/// removed and a leading `~/` expanded (with `home`, the process's `HOME`). Also the value of a
/// leading `PATH=` assignment, which
/// the shell searches instead of this process's PATH. An error (an input error: the command is
/// the user's) says why no name can be known without running the shell (an expansion such as
/// `$X`, a glob, shell syntax, only assignments).
pub fn program_word(command: &str, home: Option<&OsStr>) -> Result<(String, Option<String>), Error> {
    let mut chars = command.chars().peekable();
    let mut path = None;
    let mut assigned = false;
    let mut exec_seen = false;
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let Some(word) = shell_word(&mut chars, home)? else {
            return Err(Error::input(if assigned || exec_seen {
                "the command only sets variables; nothing names a program"
            } else {
                "the command names no program"
            }));
        };
        if let Some((name, value)) = word.assignment {
            assigned = true;
            if name == "PATH" {
                path = Some(value);
            }
            continue;
        }
        if word.text == "exec" && !word.quoted && !exec_seen {
            exec_seen = true;
            continue;
        }
        return Ok((word.text, path));
    }
}

struct ShellWord {
    text: String,
    quoted: bool,
    assignment: Option<(String, String)>,
}

/// One shell word from `chars` (which start at it), or `None` at the end of the first simple
/// command; a leading `~` expands to `home`.
fn shell_word(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    home: Option<&OsStr>,
) -> Result<Option<ShellWord>, Error> {
    let mut text = String::new();
    let mut quoted = false;
    // Where the first unquoted `=` is, and whether everything before it was unquoted.
    let mut equals: Option<usize> = None;
    let mut plain_prefix = true;
    let mut started = false;
    let expansion = |c: char| {
        Error::input(format!(
            "the program's name uses shell expansion (`{c}`), so it is known only when the shell runs"
        ))
    };
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' | '\n' => break,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                if started {
                    break;
                }
                return Err(Error::input(format!(
                    "the command starts with shell syntax `{c}`, not a program"
                )));
            }
            '#' if !started => return Ok(None),
            '\'' => {
                chars.next();
                quoted = true;
                if equals.is_none() {
                    plain_prefix = false;
                }
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => text.push(ch),
                        None => return Err(Error::input("unterminated `'` quote")),
                    }
                }
            }
            '"' => {
                chars.next();
                quoted = true;
                if equals.is_none() {
                    plain_prefix = false;
                }
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('$' | '`' | '"' | '\\')) => text.push(e),
                            Some('\n') => {}
                            Some(other) => {
                                text.push('\\');
                                text.push(other);
                            }
                            None => return Err(Error::input("unterminated `\"` quote")),
                        },
                        Some(e @ ('$' | '`')) => return Err(expansion(e)),
                        Some(ch) => text.push(ch),
                        None => return Err(Error::input("unterminated `\"` quote")),
                    }
                }
            }
            '\\' => {
                chars.next();
                quoted = true;
                if equals.is_none() {
                    plain_prefix = false;
                }
                match chars.next() {
                    Some('\n') | None => {}
                    Some(ch) => text.push(ch),
                }
            }
            '$' | '`' | '*' | '?' | '[' => return Err(expansion(c)),
            '~' if !started => {
                chars.next();
                if chars.peek().is_none_or(|n| *n == '/' || *n == ' ' || *n == '\t') {
                    match home.and_then(|h| h.to_str()) {
                        Some(home) => text.push_str(home),
                        None => {
                            return Err(Error::input(
                                "the program's name starts with `~` and HOME is not set",
                            ))
                        }
                    }
                } else {
                    return Err(expansion('~'));
                }
            }
            '=' if equals.is_none() => {
                chars.next();
                equals = Some(text.len());
                text.push('=');
            }
            _ => {
                chars.next();
                text.push(c);
            }
        }
        started = true;
    }
    if !started {
        return Ok(None);
    }
    let assignment = equals.filter(|_| plain_prefix).and_then(|at| {
        let name = &text[..at];
        let valid = name.chars().next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        valid.then(|| (name.to_string(), text[at + 1..].to_string()))
    });
    Ok(Some(ShellWord { text, quoted, assignment }))
}

/// Resolve the command's program (see [`program_word`]) to an executable, hash it and ask for
/// its version; `settings` give the `HOME` and the `PATH` (unless the command sets its own).
pub fn provenance(command: &str, settings: &Settings) -> ProgramProvenance {
    let mut p = ProgramProvenance {
        command: command.to_string(),
        executable: None,
        sha256: None,
        version: None,
        missing_reasons: Vec::new(),
    };
    let (word, path) = match program_word(command, settings.home.as_deref()) {
        Ok(found) => found,
        Err(why) => {
            p.missing_reasons.push(format!("executable: {why}; so no hash or version"));
            return p;
        }
    };
    let search = path.map(OsString::from).or_else(|| settings.path.clone());
    let Some(exe) = resolve_executable(&word, search.as_deref()) else {
        p.missing_reasons.push(format!(
            "executable: `{word}` is not a file or on PATH (a shell builtin or syntax?), so no hash or version"
        ));
        return p;
    };
    match sha256_file(&exe) {
        Ok(h) => p.sha256 = Some(h),
        Err(e) => p.missing_reasons.push(format!("sha256: cannot read {}: {e}", exe.display())),
    }
    match probe_version(&exe) {
        Ok(v) => p.version = Some(v),
        Err(e) => p.missing_reasons.push(format!("version: {e}")),
    }
    p.executable = Some(exe);
    p
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Find `word` the way `sh` would: a path if it contains `/`, else the first match on `path`
/// (the `PATH` the shell searches: the process's, [`Settings::path`], or a `PATH=` value the
/// command sets); nothing is found on no `path`.
pub fn resolve_executable(word: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if word.contains('/') {
        let p = PathBuf::from(word);
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        return is_executable_file(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|d| d.join(word))
        .find(|p| is_executable_file(p))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
}

/// sha256 (hex) of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// First non-empty line of `exe --version`, killed after a short timeout. An error is a run
/// error (the meter's program would not say its version), with the OS's error as its cause.
fn probe_version(exe: &Path) -> Result<String, Error> {
    let mut child = Command::new(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| Error::run(format!("cannot run `{} --version`: {e}", exe.display())).because(e))?;
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t.elapsed() < VERSION_PROBE_TIMEOUT => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = kill_group_and_reap(&mut child);
                return Err(Error::run(format!(
                    "`{} --version` did not finish within {} s",
                    exe.display(),
                    VERSION_PROBE_TIMEOUT.as_secs()
                )));
            }
            Err(e) => {
                return Err(Error::run(format!("waiting for `{} --version`: {e}", exe.display())).because(e))
            }
        }
    };
    let mut out = String::new();
    if let Some(so) = child.stdout.take() {
        let _ = so.take(64 * 1024).read_to_string(&mut out);
    }
    let line = out.lines().map(str::trim).find(|l| !l.is_empty());
    match (status.success(), line) {
        (true, Some(l)) => Ok(l.to_string()),
        (_, _) => Err(Error::run(format!("`{} --version` gave no version ({status})", exe.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::sampler::{Sample, SampleOutcome, Sampler, SamplerConfig, StopReason};
    use crate::power::FaultKind;
    use std::sync::mpsc;

    /// The settings of the test process's environment.
    fn settings() -> Settings {
        Settings::of_test_process()
    }

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn parses_both_line_forms_and_rejects_garbage() {
        assert_eq!(parse_line("61.39\n"), Ok(Some((None, 61.39))));
        assert_eq!(parse_line("  7 \r\n"), Ok(Some((None, 7.0))));
        assert_eq!(parse_line("12.5,61.39"), Ok(Some((Some(12.5), 61.39))));
        assert_eq!(parse_line("12.5, 61.39"), Ok(Some((Some(12.5), 61.39))));
        assert_eq!(parse_line("# meter v1"), Ok(None));
        // Values are passed on as read; the energy rules judge them.
        assert_eq!(parse_line("-3"), Ok(Some((None, -3.0))));
        assert!(parse_line("NaN").unwrap().unwrap().1.is_nan());
        for bad in ["", "abc", "[N/A]", "1,2,3", "1,", ",1", "61.39 kW", "W", "5 WW"] {
            assert!(parse_line(bad).is_err(), "{bad:?}");
        }
        assert!(parse_line("x,5").unwrap_err().to_string().contains("t_s"));
    }

    #[test]
    fn a_unit_suffix_or_the_default_unit_converts_to_watts() {
        assert_eq!(parse_line("61.39 W"), Ok(Some((None, 61.39))));
        assert_eq!(parse_line("61390 mW"), Ok(Some((None, 61.39))));
        assert_eq!(parse_line("61390mW\r\n"), Ok(Some((None, 61.39))));
        assert_eq!(parse_line("1.5,61390000 uW"), Ok(Some((Some(1.5), 61.39))));
        assert_eq!(parse_line("2000000 µW"), Ok(Some((None, 2.0))));
        // --sensor-unit for bare numbers; a suffix on the line still wins.
        assert_eq!(parse_line_in("61390", PowerUnit::MilliW), Ok(Some((None, 61.39))));
        assert_eq!(parse_line_in("5 W", PowerUnit::MicroW), Ok(Some((None, 5.0))));
        assert_eq!("mW".parse::<PowerUnit>(), Ok(PowerUnit::MilliW));
        assert!("kW".parse::<PowerUnit>().is_err());
        // NaN stays NaN for the rules to judge.
        assert!(parse_line_in("nan", PowerUnit::MilliW).unwrap().unwrap().1.is_nan());
    }

    #[test]
    fn reads_lines_then_reports_exit_as_a_fatal_stop() {
        let mut s = ExecSensor::spawn("printf '10\\n1.5,12.5\\n'", T, &settings()).unwrap();
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(10.0));
        assert_eq!(r.raw.as_deref(), Some("10"));
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(12.5));
        assert_eq!(r.source_t_s, Some(1.5));
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Stopped);
        assert!(e.is_fatal());
        assert!(e.to_string().contains("exited"), "{e}");
        // Every later read repeats the stop; no value is made up.
        assert_eq!(s.read().unwrap_err().kind(), FaultKind::Stopped);
        assert!(s.exit_status().is_some_and(|st| st.success()));
        s.close().unwrap();
    }

    #[test]
    fn the_raw_text_keeps_every_byte_of_the_line_but_its_newline() {
        let mut s = ExecSensor::spawn("printf '42.5\\r\\n 7 \\n9'", T, &settings()).unwrap();
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(42.5));
        assert_eq!(r.raw.as_deref(), Some("42.5\r"));
        assert_eq!(s.read().unwrap().raw.as_deref(), Some(" 7 "));
        assert_eq!(s.read().unwrap().raw.as_deref(), Some("9"));
        let mut s = ExecSensor::spawn("printf 'oops\\r\\n'", T, &settings()).unwrap();
        match s.read().unwrap_err() {
            SensorError::Malformed { raw, .. } => assert_eq!(raw, "oops\r"),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn garbage_line_is_a_fault_carrying_the_line() {
        let mut s = ExecSensor::spawn("printf 'power.draw [W]\\n5\\n'", T, &settings()).unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Malformed);
        assert!(!e.is_fatal());
        assert!(e.to_string().contains("power.draw [W]"), "{e}");
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
    }

    #[test]
    fn death_mid_run_names_status_and_stderr() {
        let mut s =
            ExecSensor::spawn("echo 5; echo 'meter lost USB link' >&2; exit 3", T, &settings()).unwrap();
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
        let e = s.read().unwrap_err();
        let m = e.to_string();
        assert!(m.contains("exit status: 3"), "{m}");
        assert!(m.contains("meter lost USB link"), "{m}");
        assert_eq!(s.exit_status().and_then(|st| st.code()), Some(3));
    }

    #[test]
    fn a_missing_program_stops_with_the_shells_message() {
        let mut s = ExecSensor::spawn("/nonexistent/meter --watts", T, &settings()).unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Stopped);
        assert!(e.to_string().contains("nonexistent"), "{e}");
        let prov = s.info().program.clone().unwrap();
        assert!(prov.executable.is_none());
        assert!(prov.missing_reasons[0].contains("/nonexistent/meter"));
    }

    #[test]
    fn silence_is_a_timeout_not_a_value() {
        let mut s = ExecSensor::spawn("sleep 5", Duration::from_millis(150), &settings()).unwrap();
        let t = Instant::now();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Timeout);
        assert!(t.elapsed() >= Duration::from_millis(140));
        assert_eq!(s.next(Duration::from_millis(10)).unwrap(), None);
    }

    fn is_gone(pid: u32) -> bool {
        // Gone, or a zombie waiting for an init that does not reap.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[test]
    fn close_kills_the_whole_group_and_reaps_the_shell() {
        // The shell forks a background grandchild and prints its pid, then keeps printing.
        let mut s = ExecSensor::spawn(
            "sleep 60 & echo \"# $!\"; while :; do echo 1; sleep 0.05; done",
            T,
            &settings(),
        )
        .unwrap();
        let pid = s.pid().unwrap();
        assert_eq!(s.read().unwrap().total_power_w(), Some(1.0));
        s.close().unwrap();
        assert!(s.pid().is_none());
        let st = s.exit_status().expect("reaped");
        assert!(!st.success(), "killed, not exited: {st}");
        assert!(is_gone(pid));
        // Closing twice is fine.
        s.close().unwrap();
    }

    #[test]
    fn grandchildren_die_with_the_group() {
        let mut s = ExecSensor::spawn("sleep 60 & echo \"$!\"; wait", T, &settings()).unwrap();
        let grandchild = s.read().unwrap().total_power_w().unwrap() as u32;
        drop(s);
        let t = Instant::now();
        while !is_gone(grandchild) && t.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(is_gone(grandchild), "grandchild {grandchild} survived");
    }

    #[test]
    fn begin_drops_lines_printed_before_sampling() {
        let mut s =
            ExecSensor::spawn("printf '1\\n2\\n'; sleep 5", Duration::from_millis(100), &settings()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        s.begin().unwrap();
        assert!(s.info().notes.iter().any(|n| n.contains("2 line(s)")));
        assert_eq!(s.read().unwrap_err().kind(), FaultKind::Timeout);
    }

    #[test]
    fn provenance_hashes_and_versions_the_program() {
        let p = provenance("sleep 1", &settings());
        let exe = p.executable.clone().expect("sleep on PATH");
        assert!(exe.is_absolute());
        let h = p.sha256.clone().unwrap();
        assert_eq!(h.len(), 64);
        assert_eq!(h, sha256_file(&exe).unwrap());
        // coreutils sleep answers --version.
        assert!(p.version.as_deref().is_some_and(|v| !v.is_empty()), "{p:?}");
        let p = provenance("for i in 1; do echo 1; done", &settings());
        assert!(p.executable.is_none() && !p.missing_reasons.is_empty());
    }

    #[test]
    fn sha256_of_a_known_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("x");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            sha256_file(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn runs_under_the_sampler_and_is_reaped_at_stop() {
        let s = ExecSensor::spawn("while :; do echo 42.5; sleep 0.05; done", T, &settings()).unwrap();
        let pid = s.pid().unwrap();
        let (tx, rx) = mpsc::channel::<Sample>();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(50), Instant::now()), tx)
                .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        let report = sampler.stop().unwrap();
        let samples: Vec<Sample> = rx.try_iter().collect();
        assert_eq!(report.stop, StopReason::Requested);
        assert!(report.close_error.is_none(), "{report:?}");
        assert!(samples.len() >= 3, "{} samples", samples.len());
        for s in &samples {
            match &s.outcome {
                SampleOutcome::Reading(r) => assert_eq!(r.total_power_w(), Some(42.5)),
                SampleOutcome::Fault(f) => panic!("unexpected fault {f}"),
            }
        }
        assert!(is_gone(pid));
    }

    #[test]
    fn meter_death_under_the_sampler_ends_sampling() {
        let s = ExecSensor::spawn("echo 1; sleep 0.1; echo 2; exit 9", T, &settings()).unwrap();
        let (tx, rx) = mpsc::channel::<Sample>();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(50), Instant::now()), tx)
                .unwrap();
        let samples: Vec<Sample> = rx.iter().collect(); // ends when the sampler thread ends
        let report = sampler.stop().unwrap();
        assert!(matches!(report.stop, StopReason::SensorStopped { .. }), "{report:?}");
        let last = samples.last().unwrap();
        match &last.outcome {
            SampleOutcome::Fault(f) => {
                assert!(f.fatal);
                assert!(f.message.contains("exit status: 9"), "{}", f.message);
            }
            other => panic!("{other:?}"),
        }
    }

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        let mut put = |p: Piece<'_>| {
            out.push(match p {
                Piece::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
                Piece::Overlong(h) => format!("O:{}", String::from_utf8_lossy(h)),
            })
        };
        for c in chunks {
            s.feed(c, &mut put);
        }
        s.finish(&mut put);
        out
    }

    #[test]
    fn the_splitter_joins_lines_across_reads_and_cuts_over_long_ones() {
        assert_eq!(split(8, &[b"1\n2", b"2\n", b"3"]), ["L:1", "L:22", "L:3"]);
        assert_eq!(split(8, &[b"\n\r\n"]), ["L:", "L:\r"]);
        // Exactly 8 bytes is a line; 9 is over the limit, reported by its first bytes (all 9
        // would be kept up to OVERLONG_HEAD_BYTES, but never more than the limit).
        assert_eq!(split(8, &[b"12345678\n"]), ["L:12345678"]);
        assert_eq!(split(8, &[b"123456789\n5\n"]), ["O:12345678", "L:5"]);
        // Across reads, and without a newline for a long while: reported once, when the limit
        // is crossed, and the rest skipped up to the newline.
        assert_eq!(split(8, &[b"1234", b"5678", b"9abc", b"def\n7\n"]), ["O:12345678", "L:7"]);
        // Never a newline: one fault, nothing at the end.
        assert_eq!(split(8, &[b"xxxxxxxxxx", b"xxxxxxxx"]), ["O:xxxxxxxx"]);
    }

    #[test]
    fn an_over_long_fault_keeps_the_first_120_bytes() {
        let line = vec![b'y'; MAX_LINE_BYTES + 1];
        let got = split(MAX_LINE_BYTES, &[&line, b"\n"]);
        assert_eq!(got, [format!("O:{}", "y".repeat(OVERLONG_HEAD_BYTES))]);
        let ok = vec![b'7'; MAX_LINE_BYTES];
        assert_eq!(split(MAX_LINE_BYTES, &[&ok, b"\n"]).len(), 1);
        assert!(split(MAX_LINE_BYTES, &[&ok, b"\n"])[0].starts_with("L:"));
    }

    #[test]
    fn the_decimal_comma_rule_refuses_an_integer_time_that_does_not_increase() {
        // `30,5` after a line at t_s 30: the time stood still; a comma locale's 30.5 W.
        let m = decimal_comma_suspect("30,5", Some(30.0)).unwrap();
        assert!(m.contains("`30,5`") && m.contains("`30.5`") && m.contains("decimal point"), "{m}");
        assert!(decimal_comma_suspect("29,9", Some(30.0)).is_some());
        assert!(decimal_comma_suspect("30,5 W\r", Some(31.0)).unwrap().contains("value 5 W"));
        // The first line, a time that increases (whole seconds), or a line with a decimal
        // point anywhere is not suspect.
        assert_eq!(decimal_comma_suspect("30,5", None), None);
        assert_eq!(decimal_comma_suspect("31,5", Some(30.0)), None);
        assert_eq!(decimal_comma_suspect("30.0,5", Some(30.0)), None);
        assert_eq!(decimal_comma_suspect("30,5.5", Some(30.0)), None);
        assert_eq!(decimal_comma_suspect("30", Some(30.0)), None);
        assert_eq!(decimal_comma_suspect("30,5 kW", Some(30.0)), None);
        // Through the reader's classification: the second `30,5` is a fault naming the line.
        let mut prev = None;
        let now = Instant::now();
        assert!(matches!(classify(b"30,5", now, &mut prev), Some(Item::Reading(..))));
        assert_eq!(prev, Some(30.0));
        match classify(b"30,5", now, &mut prev) {
            Some(Item::Fault { detail, raw }) => {
                assert_eq!(raw, "30,5");
                assert!(detail.contains("decimal"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(classify(b"# note", now, &mut prev).is_none());
    }

    #[test]
    fn the_queue_skips_stale_readings_and_counts_what_it_dropped() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let r = |s: &str, at: Duration| Item::Reading(s.into(), t0 + at);
        let f = |s: &str| Item::Fault { detail: "bad".into(), raw: s.into() };
        let text = |i: Option<Item>| match i {
            Some(Item::Reading(s, _)) => s,
            Some(Item::Fault { raw, .. }) => format!("!{raw}"),
            None => "-".into(),
        };
        // Lines that arrived together are all taken, in order.
        let mut q = Queue::default();
        q.push(r("1", ms(0)));
        q.push(r("2", ms(0)));
        assert_eq!([text(q.take()), text(q.take()), text(q.take())], ["1", "2", "-"]);
        // Readings 1 ms or more older than the newest waiting one are skipped; faults never.
        let mut q = Queue::default();
        q.push(r("1", ms(0)));
        q.push(f("x"));
        q.push(r("2", ms(1)));
        q.push(r("3", ms(5)));
        q.push(r("4", ms(5)));
        let taken: Vec<String> = std::iter::from_fn(|| q.take().map(|i| text(Some(i)))).collect();
        assert_eq!(taken, ["!x", "3", "4"]);
        assert_eq!(q.skipped, SkippedReadings { readings: 2, faults: 0, first_fault: None });
        // Full: the oldest goes, counted, and the first fault dropped is kept.
        let mut q = Queue::default();
        for i in 0..QUEUE_CAPACITY + 2 {
            q.push(f(&i.to_string()));
        }
        assert_eq!(q.items.len(), QUEUE_CAPACITY);
        assert_eq!(q.skipped.faults, 2);
        assert_eq!(q.skipped.first_fault.as_deref(), Some("0"));
        let mut total = Queue::default();
        total.push(r("a", ms(0)));
        total.absorb(q);
        assert_eq!(total.items.len(), QUEUE_CAPACITY);
        assert_eq!((total.skipped.readings, total.skipped.faults), (1, 2));
        assert_eq!(total.skipped.first_fault.as_deref(), Some("0"));
        total.skip_all();
        assert_eq!((total.skipped.readings, total.skipped.faults), (1, 2 + QUEUE_CAPACITY as u64));
        // Full with readings and a fault: the oldest reading goes, the fault stays.
        let mut q = Queue::default();
        q.push(f("bad"));
        for i in 0..QUEUE_CAPACITY {
            q.push(r(&i.to_string(), ms(0)));
        }
        assert_eq!(q.items.len(), QUEUE_CAPACITY);
        assert_eq!((q.skipped.readings, q.skipped.faults), (1, 0));
        assert_eq!(text(q.take()), "!bad");
        assert_eq!(text(q.take()), "1");
    }

    #[test]
    fn the_program_word_unquotes_and_skips_assignments() {
        let s = settings();
        let w = |c: &str| program_word(c, s.home.as_deref()).map(|(w, _)| w);
        assert_eq!(w("'/dir with space/my meter.sh' 30.5").unwrap(), "/dir with space/my meter.sh");
        assert_eq!(w("\"/dir with space/m\\\"q\" -v").unwrap(), "/dir with space/m\"q");
        assert_eq!(w("/dir\\ with\\ space/m x").unwrap(), "/dir with space/m");
        assert_eq!(w("FOO=1 BAR='a b' meter --x").unwrap(), "meter");
        assert_eq!(w("  FOO=1\tmeter").unwrap(), "meter");
        assert_eq!(w("exec yes 30.5").unwrap(), "yes");
        assert_eq!(w("FOO=1 exec ./m").unwrap(), "./m");
        assert_eq!(
            program_word("PATH=/opt/m/bin meter", None).unwrap(),
            ("meter".to_string(), Some("/opt/m/bin".into()))
        );
        // A quoted `=` is no assignment; an invalid name neither.
        assert_eq!(w("'A=1' x").unwrap(), "A=1");
        assert_eq!(w("1A=1 x").unwrap(), "1A=1");
        assert_eq!(w("nvidia-smi --format=csv").unwrap(), "nvidia-smi");
        // What the shell alone can name.
        assert!(w("$HOME/m").unwrap_err().to_string().contains("expansion"));
        assert!(w("\"$M\" 1").unwrap_err().to_string().contains("expansion"));
        assert!(w("FOO=1").unwrap_err().to_string().contains("only sets variables"));
        assert!(w("").is_err() && w("# c").is_err());
        assert!(w("'open").unwrap_err().to_string().contains("unterminated"));
        assert!(w("(meter)").unwrap_err().to_string().contains("syntax"));
        // A shell keyword comes out as a word that no file on PATH matches.
        assert_eq!(w("for i in 1; do echo 1; done").unwrap(), "for");
        if let Ok(home) = std::env::var("HOME") {
            assert_eq!(w("~/bin/m").unwrap(), format!("{home}/bin/m"));
        }
    }

    #[test]
    fn provenance_finds_a_quoted_path_with_spaces_and_a_command_after_assignments() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let folder = d.path().join("dir with space");
        std::fs::create_dir(&folder).unwrap();
        let exe = folder.join("my meter.sh");
        std::fs::write(&exe, "#!/bin/sh\necho 'meter 2.1'\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = std::fs::canonicalize(&exe).unwrap();
        for cmd in [format!("'{}' 30.5", exe.display()), format!("FOO=1 '{}'", exe.display())] {
            let p = provenance(&cmd, &settings());
            assert_eq!(p.executable.as_deref(), Some(exe.as_path()), "{cmd}: {p:?}");
            assert_eq!(p.sha256, Some(sha256_file(&exe).unwrap()));
            assert_eq!(p.version.as_deref(), Some("meter 2.1"));
        }
        // A PATH the command sets is searched for a bare name.
        let p = provenance(&format!("PATH='{}' 'my meter.sh'", folder.display()), &settings());
        assert_eq!(p.executable.as_deref(), Some(exe.as_path()), "{p:?}");
    }

    #[test]
    fn an_over_long_line_is_a_fault_and_the_stream_goes_on() {
        let cmd = format!("head -c {} /dev/zero | tr '\\0' x; printf '\\n7\\n'; sleep 5", 3 * MAX_LINE_BYTES);
        let mut s = ExecSensor::spawn(&cmd, T, &settings()).unwrap();
        match s.read().unwrap_err() {
            SensorError::Malformed { detail, raw, .. } => {
                assert!(detail.contains("longer than 4096 bytes"), "{detail}");
                assert_eq!(raw, "x".repeat(OVERLONG_HEAD_BYTES));
            }
            e => panic!("{e}"),
        }
        assert_eq!(s.read().unwrap().total_power_w(), Some(7.0));
    }

    #[test]
    fn a_meter_that_exits_while_a_child_holds_its_stdout_has_stopped() {
        // The shell prints, starts a sleeper that inherits the pipe, and exits 4.
        let mut s = ExecSensor::spawn("echo 5; sleep 60 & echo \"# $!\"; exit 4", T, &settings()).unwrap();
        let pid = s.pid().unwrap() as i32;
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
        let t = Instant::now();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Stopped, "{e}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        let m = e.to_string();
        assert!(m.contains("exit status: 4") && m.contains("stdout stayed open"), "{m}");
        assert_eq!(s.exit_status().and_then(|st| st.code()), Some(4));
        // The sleeper went with the group: the group is empty (kill -0 finds no one).
        let deadline = Instant::now() + Duration::from_secs(3);
        // SAFETY: signal 0 only checks whether the group exists.
        while unsafe { libc::kill(-pid, 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        assert_ne!(unsafe { libc::kill(-pid, 0) }, 0, "the meter's group outlived it");
    }

    #[test]
    fn a_meter_printing_as_fast_as_it_can_is_sampled_at_most_once_a_millisecond() {
        let s = ExecSensor::spawn("yes 30.5", T, &settings()).unwrap();
        let (tx, rx) = mpsc::channel::<Sample>();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(50), Instant::now()), tx)
                .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        let report = sampler.stop().unwrap();
        assert!(t.elapsed() < Duration::from_secs(2), "stop took {:?}", t.elapsed());
        let samples: Vec<Sample> = rx.try_iter().collect();
        assert_eq!(report.stop, StopReason::Requested);
        assert!(!samples.is_empty());
        // At most one a millisecond over the sampler's whole life (plus one).
        assert!(
            samples.len() as u64 <= report.wall_ns / 1_000_000 + 1,
            "{} in {} ns",
            samples.len(),
            report.wall_ns
        );
        assert!(samples
            .iter()
            .all(|s| matches!(&s.outcome, SampleOutcome::Reading(r) if r.total_power_w() == Some(30.5))));
        assert!(report.skipped.readings > samples.len() as u64, "{:?}", report.skipped);
        assert_eq!(report.skipped.faults, 0);
        assert!(report.sensor.notes.iter().any(|n| n.contains("not sampled")), "{:?}", report.sensor.notes);
    }
}
