//! External meter: `exec:CMD` runs `CMD` under `sh -c` and reads one reading per stdout line.
//!
//! Line format (one reading a line, surrounding whitespace ignored):
//! - `WATTS`, e.g. `61.39`
//! - `T_S,WATTS`, e.g. `12.500,61.39`: the meter's own timestamp in seconds (recorded as
//!   `source_t_s` for audit; integration still uses the receive time) and watts.
//! - lines starting with `#` are comments and are skipped.
//!
//! Anything else is a [`SensorError::Malformed`] fault carrying the line. Watts are passed on
//! as read (NaN, negative or huge values are judged by the energy rules, with the line kept).
//! The meter paces itself: the sampler waits for each line and stamps it on arrival. When the
//! meter exits or closes its stdout mid-run, that is a fatal [`SensorError::Stopped`] fault
//! with its exit status and the tail of its stderr. At the end the meter's whole process group
//! is killed (SIGKILL) and the shell reaped.
//!
//! Example: `exec:nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits -lms 500`
//! (pass `-i` so a multi-GPU host prints one line per interval).

use super::{Pacing, ProgramProvenance, Reading, Sensor, SensorError, SensorInfo, SensorKind};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
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

impl std::str::FromStr for PowerUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "W" | "w" => Ok(PowerUnit::W),
            "mW" | "mw" => Ok(PowerUnit::MilliW),
            "uW" | "uw" | "µW" | "μW" => Ok(PowerUnit::MicroW),
            other => Err(format!("unit `{other}` is not W, mW or uW")),
        }
    }
}

/// Parse one meter line: `WATTS` or `T_S,WATTS`. `Ok(None)` for a `#` comment.
pub fn parse_line(line: &str) -> Result<Option<(Option<f64>, f64)>, String> {
    parse_line_in(line, PowerUnit::W)
}

/// Parse one meter line, `VALUE` or `T_S,VALUE`, into (t_s, watts): the value may end with a
/// unit (`61.39 W`, `61390 mW`, `61390000 uW`); a bare number is in `unit`. `Ok(None)` for a
/// `#` comment.
pub fn parse_line_in(line: &str, unit: PowerUnit) -> Result<Option<(Option<f64>, f64)>, String> {
    let s = line.trim();
    if s.starts_with('#') {
        return Ok(None);
    }
    let num = |f: &str, what: &str| -> Result<f64, String> {
        f.trim().parse::<f64>().map_err(|_| format!("{what} {:?} is not a number", f.trim()))
    };
    let power = |f: &str| -> Result<f64, String> {
        let f = f.trim();
        if let Ok(v) = f.parse::<f64>() {
            return Ok(unit.to_watts(v));
        }
        match PowerUnit::strip_suffix(f) {
            Some((value, u)) if !value.trim().is_empty() => Ok(u.to_watts(num(value, "power")?)),
            _ => Err(format!("power {f:?} is not a number (with an optional unit W, mW or uW)")),
        }
    };
    let fields: Vec<&str> = s.split(',').collect();
    match fields.as_slice() {
        [w] if !w.is_empty() => Ok(Some((None, power(w)?))),
        [t, w] => Ok(Some((Some(num(t, "t_s")?), power(w)?))),
        _ => Err("expected `VALUE` or `T_S,VALUE` on each line (VALUE in watts, or with a unit: W, mW, uW)"
            .to_string()),
    }
}

/// The text of a meter line exactly as read, without only the `\n` that ends it: a `\r` of a
/// CRLF meter, spaces and every other byte stay (bytes that are not UTF-8 read as U+FFFD).
fn raw_text(line: &str) -> String {
    line.strip_suffix('\n').unwrap_or(line).to_string()
}

enum Event {
    Line(String),
    Eof,
    ReadError(String),
}

/// The `exec:CMD` sensor.
pub struct ExecSensor {
    command: String,
    unit: PowerUnit,
    child: Option<Child>,
    events: Receiver<Event>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stream_timeout: Duration,
    stopped: Option<String>,
    exit_status: Option<ExitStatus>,
    info: SensorInfo,
}

fn sensor_name(command: &str) -> String {
    format!("exec:{command}")
}

impl ExecSensor {
    /// Spawn `sh -c command` in its own process group and start reading its stdout.
    /// `stream_timeout` bounds how long [`Sensor::read`] waits for a line.
    pub fn spawn(command: &str, stream_timeout: Duration) -> Result<Self, SensorError> {
        let name = sensor_name(command);
        if command.trim().is_empty() {
            return Err(SensorError::Unavailable {
                sensor: name,
                reason: "empty command; give the meter command after exec:".into(),
            });
        }
        let program = provenance(command);
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
        let (tx, events) = mpsc::channel();
        if let Some(out) = stdout {
            let spawned =
                std::thread::Builder::new().name("laya-exec-meter-stdout".into()).spawn(move || {
                    let mut r = BufReader::new(out);
                    let mut buf = Vec::new();
                    loop {
                        buf.clear();
                        match r.read_until(b'\n', &mut buf) {
                            Ok(0) => {
                                let _ = tx.send(Event::Eof);
                                return;
                            }
                            Ok(_) => {
                                let line = String::from_utf8_lossy(&buf).into_owned();
                                if tx.send(Event::Line(line)).is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                let _ = tx.send(Event::ReadError(e.to_string()));
                                return;
                            }
                        }
                    }
                });
            if let Err(e) = spawned {
                let _ = kill_group_and_reap(&mut child);
                return Err(SensorError::Unavailable {
                    sensor: name,
                    reason: format!("cannot start the stdout reader thread: {e}"),
                });
            }
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
            events,
            stderr_tail,
            stream_timeout,
            stopped: None,
            exit_status: None,
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

    /// The meter closed its stdout: find out whether it exited and build the stop fault.
    fn on_eof(&mut self, why: &str) -> SensorError {
        let mut status = None;
        if let Some(child) = self.child.as_mut() {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(300) {
                match child.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                    Err(_) => break,
                }
            }
        }
        // Give the stderr thread a moment to collect the last words.
        std::thread::sleep(Duration::from_millis(20));
        let reason = match status {
            Some(s) => {
                self.exit_status = Some(s);
                self.child = None;
                format!("meter {why} and exited ({s}); {}", self.stderr_text())
            }
            None => format!("meter {why} but is still running; it will be killed; {}", self.stderr_text()),
        };
        self.stopped = Some(reason.clone());
        SensorError::Stopped { sensor: self.info.spec.clone(), reason }
    }

    fn handle(&mut self, ev: Event) -> Result<Option<Reading>, SensorError> {
        match ev {
            Event::Line(line) => match parse_line_in(&line, self.unit) {
                Ok(None) => Ok(None),
                Ok(Some((t_s, watts))) => {
                    let mut r = Reading::power_w("system", watts);
                    r.source_t_s = t_s;
                    r.raw = Some(raw_text(&line));
                    Ok(Some(r))
                }
                Err(detail) => Err(SensorError::Malformed {
                    sensor: self.info.spec.clone(),
                    detail,
                    raw: raw_text(&line),
                }),
            },
            Event::Eof => Err(self.on_eof("closed its stdout")),
            Event::ReadError(e) => Err(self.on_eof(&format!("stdout failed ({e})"))),
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
        match self.events.recv_timeout(timeout) {
            Ok(ev) => self.handle(ev),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(self.on_eof("stdout reader ended")),
        }
    }

    fn begin(&mut self) -> Result<(), SensorError> {
        let mut dropped = 0u64;
        loop {
            match self.events.try_recv() {
                Ok(Event::Line(_)) => dropped += 1,
                Ok(Event::Eof) => return Err(self.on_eof("closed its stdout before sampling began")),
                Ok(Event::ReadError(e)) => {
                    return Err(self.on_eof(&format!("stdout failed before sampling began ({e})")))
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        if dropped > 0 {
            self.info.notes.push(format!("{dropped} line(s) printed before sampling began were not used"));
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), SensorError> {
        if let Some(mut child) = self.child.take() {
            let status = kill_group_and_reap(&mut child);
            match status {
                Ok(s) => self.exit_status = Some(s),
                Err(e) => {
                    return Err(SensorError::ReadFailed {
                        sensor: sensor_name(&self.command),
                        detail: format!("could not reap meter process {}: {e}", child.id()),
                    })
                }
            }
        }
        Ok(())
    }
}

impl Drop for ExecSensor {
    fn drop(&mut self) {
        let _ = self.close();
    }
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

/// Resolve the command's first word to an executable, hash it and ask for its version.
pub fn provenance(command: &str) -> ProgramProvenance {
    let mut p = ProgramProvenance {
        command: command.to_string(),
        executable: None,
        sha256: None,
        version: None,
        missing_reasons: Vec::new(),
    };
    let Some(first) = command.split_whitespace().next() else {
        p.missing_reasons.push("empty command".into());
        return p;
    };
    let Some(exe) = resolve_executable(first) else {
        p.missing_reasons.push(format!(
            "executable: `{first}` is not a file or on PATH (a shell builtin or syntax?), so no hash or version"
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

/// Find `word` the way `sh` would: a path if it contains `/`, else the first match on PATH.
pub fn resolve_executable(word: &str) -> Option<PathBuf> {
    if word.contains('/') {
        let p = PathBuf::from(word);
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        return is_executable_file(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
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

/// First non-empty line of `exe --version`, killed after a short timeout.
fn probe_version(exe: &Path) -> Result<String, String> {
    let mut child = Command::new(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{} --version`: {e}", exe.display()))?;
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t.elapsed() < VERSION_PROBE_TIMEOUT => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = kill_group_and_reap(&mut child);
                return Err(format!(
                    "`{} --version` did not finish within {} s",
                    exe.display(),
                    VERSION_PROBE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for `{} --version`: {e}", exe.display())),
        }
    };
    let mut out = String::new();
    if let Some(so) = child.stdout.take() {
        let _ = so.take(64 * 1024).read_to_string(&mut out);
    }
    let line = out.lines().map(str::trim).find(|l| !l.is_empty());
    match (status.success(), line) {
        (true, Some(l)) => Ok(l.to_string()),
        (_, _) => Err(format!("`{} --version` gave no version ({status})", exe.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::sampler::{Sample, SampleOutcome, Sampler, SamplerConfig, StopReason};
    use crate::power::FaultKind;

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
        assert!(parse_line("x,5").unwrap_err().contains("t_s"));
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
        let mut s = ExecSensor::spawn("printf '10\\n1.5,12.5\\n'", T).unwrap();
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
        let mut s = ExecSensor::spawn("printf '42.5\\r\\n 7 \\n9'", T).unwrap();
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(42.5));
        assert_eq!(r.raw.as_deref(), Some("42.5\r"));
        assert_eq!(s.read().unwrap().raw.as_deref(), Some(" 7 "));
        assert_eq!(s.read().unwrap().raw.as_deref(), Some("9"));
        let mut s = ExecSensor::spawn("printf 'oops\\r\\n'", T).unwrap();
        match s.read().unwrap_err() {
            SensorError::Malformed { raw, .. } => assert_eq!(raw, "oops\r"),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn garbage_line_is_a_fault_carrying_the_line() {
        let mut s = ExecSensor::spawn("printf 'power.draw [W]\\n5\\n'", T).unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Malformed);
        assert!(!e.is_fatal());
        assert!(e.to_string().contains("power.draw [W]"), "{e}");
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
    }

    #[test]
    fn death_mid_run_names_status_and_stderr() {
        let mut s = ExecSensor::spawn("echo 5; echo 'meter lost USB link' >&2; exit 3", T).unwrap();
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
        let e = s.read().unwrap_err();
        let m = e.to_string();
        assert!(m.contains("exit status: 3"), "{m}");
        assert!(m.contains("meter lost USB link"), "{m}");
        assert_eq!(s.exit_status().and_then(|st| st.code()), Some(3));
    }

    #[test]
    fn a_missing_program_stops_with_the_shells_message() {
        let mut s = ExecSensor::spawn("/nonexistent/meter --watts", T).unwrap();
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Stopped);
        assert!(e.to_string().contains("nonexistent"), "{e}");
        let prov = s.info().program.clone().unwrap();
        assert!(prov.executable.is_none());
        assert!(prov.missing_reasons[0].contains("/nonexistent/meter"));
    }

    #[test]
    fn silence_is_a_timeout_not_a_value() {
        let mut s = ExecSensor::spawn("sleep 5", Duration::from_millis(150)).unwrap();
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
        let mut s =
            ExecSensor::spawn("sleep 60 & echo \"# $!\"; while :; do echo 1; sleep 0.05; done", T).unwrap();
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
        let mut s = ExecSensor::spawn("sleep 60 & echo \"$!\"; wait", T).unwrap();
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
        let mut s = ExecSensor::spawn("printf '1\\n2\\n'; sleep 5", Duration::from_millis(100)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        s.begin().unwrap();
        assert!(s.info().notes.iter().any(|n| n.contains("2 line(s)")));
        assert_eq!(s.read().unwrap_err().kind(), FaultKind::Timeout);
    }

    #[test]
    fn provenance_hashes_and_versions_the_program() {
        let p = provenance("sleep 1");
        let exe = p.executable.clone().expect("sleep on PATH");
        assert!(exe.is_absolute());
        let h = p.sha256.clone().unwrap();
        assert_eq!(h.len(), 64);
        assert_eq!(h, sha256_file(&exe).unwrap());
        // coreutils sleep answers --version.
        assert!(p.version.as_deref().is_some_and(|v| !v.is_empty()), "{p:?}");
        let p = provenance("for i in 1; do echo 1; done");
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
        let s = ExecSensor::spawn("while :; do echo 42.5; sleep 0.05; done", T).unwrap();
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
        let s = ExecSensor::spawn("echo 1; sleep 0.1; echo 2; exit 9", T).unwrap();
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
}
