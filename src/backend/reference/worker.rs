//! The worker process: started once per `ref:` arm, one JSON object a line over its pipes, a
//! timeout on every answer, the tail of its stderr kept for messages. The only code of the
//! reference backend that starts or stops a process.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::laya::decode::ResultShape;

/// The worker script, shipped inside the binary.
pub const SCRIPT: &str = include_str!("worker.py");

/// Lines of the worker's stderr kept for messages.
const TAIL_LINES: usize = 20;

/// What `scripts/setup-ref.sh` does for a missing module: laya-mlx and laya-apple (and MLX) by
/// default, laya and PyTorch with `--with-torch`, the others not at all.
fn setup_hint(module: &str) -> String {
    match module {
        "laya_mlx" | "mlx" | "laya_apple" => " (or run scripts/setup-ref.sh)".into(),
        "laya" | "torch" => " (or run scripts/setup-ref.sh --with-torch)".into(),
        "laya_cuda" => {
            "; laya-cuda needs Python >= 3.12 and CUDA 12 (scripts/setup-ref.sh does not install it)".into()
        }
        _ => " (scripts/setup-ref.sh does not install it)".into(),
    }
}

/// Why a worker could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The interpreter could not be started.
    #[error("cannot start the Python interpreter `{python}` ({error}); set LAYA_BENCH_PYTHON to a Python >= 3.11, or run scripts/setup-ref.sh")]
    Spawn {
        /// The interpreter tried.
        python: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The runtime's package (or one it imports) is not installed in that interpreter (the
    /// message adds what `scripts/setup-ref.sh` installs of it, where it does).
    #[error("the Python module `{module}` is missing in {python} ({error}); install it with `{pip}`{}", setup_hint(.module))]
    Missing {
        /// The module.
        module: String,
        /// The interpreter.
        python: String,
        /// The pip command that installs it.
        pip: String,
        /// What Python said.
        error: String,
    },
    /// The runtime raised while loading.
    #[error("the runtime failed to load: {error}{tail}")]
    Load {
        /// What the worker said.
        error: String,
        /// The stderr tail (with its heading), or empty.
        tail: String,
    },
    /// No answer within the timeout.
    #[error("the worker gave no answer within {seconds} s during {during}; it was stopped{tail}")]
    Timeout {
        /// The timeout.
        seconds: f64,
        /// `loading` or `a call`.
        during: &'static str,
        /// The stderr tail.
        tail: String,
    },
    /// The worker ended.
    #[error("the worker exited ({status}) during {during}{tail}")]
    Died {
        /// Its exit status, as text.
        status: String,
        /// `loading` or `a call`.
        during: &'static str,
        /// The stderr tail.
        tail: String,
    },
    /// A line that is not the protocol's.
    #[error("the worker wrote a line that is not the protocol's ({why}): `{line}`{tail}")]
    Garbage {
        /// What is wrong with it.
        why: String,
        /// The line (cut to 200 characters).
        line: String,
        /// The stderr tail.
        tail: String,
    },
    /// The runtime raised on a call, or its result could not be encoded.
    #[error("the runtime failed: {error}{tail}")]
    Call {
        /// What the worker said.
        error: String,
        /// The stderr tail.
        tail: String,
    },
    /// The pipe to the worker broke.
    #[error("cannot write to the worker ({error}){tail}")]
    Pipe {
        /// The OS error.
        error: std::io::Error,
        /// The stderr tail.
        tail: String,
    },
}

impl crate::error::Classify for WorkerError {
    /// A worker that cannot start, is missing or cannot load its model is the set-up's fault
    /// (an input, found before measuring); anything later failed the run.
    fn kind(&self) -> crate::error::Kind {
        match self {
            WorkerError::Spawn { .. } | WorkerError::Missing { .. } | WorkerError::Load { .. } => {
                crate::error::Kind::Input
            }
            _ => crate::error::Kind::Run,
        }
    }
}

/// What the worker said once its runtime had loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    /// `sys.version` (its first word).
    pub python: String,
    /// The runtime's name (`laya-mlx`, or the factory's module).
    pub runtime: String,
    /// The runtime package's version, where it has one.
    pub version: Option<String>,
    /// The versions of the packages it runs on.
    pub packages: Vec<(String, String)>,
    /// The load options the worker passed (laya-mlx: compile, prompt cache, pad_to_multiple).
    pub options: Value,
    /// The precision the runtime says it runs in, where it says (laya: its autocast dtype).
    pub precision: Option<String>,
    /// Load time in the worker, ns.
    pub load_ns: u64,
    /// The shape of the runtime's result dicts (`result_shape`; absent: laya 0.4's).
    pub result_shape: ResultShape,
    /// The per-call options (`max_len`, `head_max_len`, `min_confidence`) its predict takes
    /// (`call_options`; absent: all of them).
    pub call_options: Option<Vec<String>>,
}

/// One running worker.
pub struct Worker {
    python: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
    call_timeout: Duration,
}

fn cut(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

impl Worker {
    /// Start `python` on the worker script, send it `config` (what to load) and wait up to
    /// `load_timeout` for it to say it is ready.
    pub fn start(
        python: &Path,
        config: &Value,
        load_timeout: Duration,
        call_timeout: Duration,
    ) -> Result<(Self, Ready), WorkerError> {
        let python_text = python.display().to_string();
        let mut child = Command::new(python)
            .arg("-u")
            .arg("-c")
            .arg(SCRIPT)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| WorkerError::Spawn { python: python_text.clone(), error })?;
        let (Some(stdout), Some(stderr_pipe)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let error = std::io::Error::other("the worker's stdout or stderr is not a pipe");
            return Err(WorkerError::Spawn { python: python_text, error });
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(Ok(line)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::clone(&stderr);
        let stderr_thread = std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr_pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.by_ref().take(1 << 16).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&buf).trim_end().to_string();
                        let mut tail = sink.lock().unwrap_or_else(|p| p.into_inner());
                        if tail.len() == TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(text);
                    }
                }
            }
        });
        let mut worker = Worker {
            python: python_text,
            child,
            stdin: None,
            lines,
            stderr,
            stderr_thread: Some(stderr_thread),
            call_timeout,
        };
        worker.stdin = worker.child.stdin.take();
        worker.send(config)?;
        let reply = worker.receive(load_timeout, "loading")?;
        let ready = worker.ready(reply)?;
        Ok((worker, ready))
    }

    fn ready(&mut self, reply: Value) -> Result<Ready, WorkerError> {
        let text = |k: &str| reply.get(k).and_then(Value::as_str).map(str::to_string);
        match reply.get("ready").and_then(Value::as_bool) {
            Some(true) => {
                let packages = reply
                    .get("packages")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                let result_shape = match text("result_shape") {
                    None => ResultShape::Current,
                    Some(name) => ResultShape::from_name(&name).ok_or_else(|| WorkerError::Garbage {
                        why: format!("`result_shape` `{name}` is not `current` or `laya-0.3`"),
                        line: cut(&reply.to_string()),
                        tail: self.tail(),
                    })?,
                };
                let call_options = match reply.get("call_options") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(
                        v.as_array()
                            .and_then(|a| a.iter().map(|o| o.as_str().map(str::to_string)).collect())
                            .ok_or_else(|| WorkerError::Garbage {
                                why: "`call_options` is not a list of option names".into(),
                                line: cut(&reply.to_string()),
                                tail: self.tail(),
                            })?,
                    ),
                };
                Ok(Ready {
                    python: text("python").unwrap_or_default(),
                    runtime: text("runtime").unwrap_or_default(),
                    version: text("version"),
                    packages,
                    options: reply.get("options").cloned().unwrap_or(Value::Null),
                    precision: text("precision"),
                    load_ns: reply.get("load_ns").and_then(Value::as_u64).unwrap_or(0),
                    result_shape,
                    call_options,
                })
            }
            Some(false) => match text("missing") {
                Some(module) => Err(WorkerError::Missing {
                    module,
                    python: self.python.clone(),
                    pip: text("pip").unwrap_or_default(),
                    error: text("error").unwrap_or_default(),
                }),
                None => {
                    Err(WorkerError::Load { error: text("error").unwrap_or_default(), tail: self.tail() })
                }
            },
            None => Err(WorkerError::Garbage {
                why: "no `ready` field in the first line".into(),
                line: cut(&reply.to_string()),
                tail: self.tail(),
            }),
        }
    }

    /// The last lines of the worker's stderr, as a message suffix (empty when it wrote none).
    pub fn tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("\nthe worker's stderr (last {} lines):\n{}", lines.len(), lines.join("\n"))
    }

    /// [`Worker::tail`] after a short pause, for an error from a worker that is still running:
    /// what it wrote to stderr just before it answered has time to arrive.
    pub fn error_tail(&self) -> String {
        std::thread::sleep(Duration::from_millis(100));
        self.tail()
    }

    fn send(&mut self, message: &Value) -> Result<(), WorkerError> {
        let mut line = message.to_string();
        line.push('\n');
        let out = match self.stdin.as_mut() {
            Some(s) => s.write_all(line.as_bytes()).and_then(|_| s.flush()),
            None => Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the worker's stdin is closed")),
        };
        out.map_err(|error| {
            self.settle();
            WorkerError::Pipe { error, tail: self.tail() }
        })
    }

    /// Wait briefly for the worker to exit and its stderr to drain (after it died or was killed).
    fn settle(&mut self) -> String {
        let end = Instant::now() + Duration::from_millis(1000);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let _ = self.child.kill();
                    break self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                }
                Err(e) => break e.to_string(),
            }
        };
        if let Some(t) = self.stderr_thread.take() {
            let end = Instant::now() + Duration::from_millis(500);
            while !t.is_finished() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        status
    }

    fn receive(&mut self, timeout: Duration, during: &'static str) -> Result<Value, WorkerError> {
        let line = match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => line,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                self.settle();
                return Err(WorkerError::Timeout {
                    seconds: timeout.as_secs_f64(),
                    during,
                    tail: self.tail(),
                });
            }
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.settle();
                return Err(WorkerError::Died { status, during, tail: self.tail() });
            }
        };
        serde_json::from_str::<Value>(line.trim_end()).ok().filter(Value::is_object).ok_or_else(|| {
            let _ = self.child.kill();
            self.settle();
            WorkerError::Garbage {
                why: "not a JSON object".into(),
                line: cut(line.trim_end()),
                tail: self.tail(),
            }
        })
    }

    /// Send one request and wait (up to the call timeout) for its answer: the runtime's result
    /// and its own duration in ns.
    pub fn call(&mut self, request: &Value) -> Result<(Value, u64), WorkerError> {
        self.send(request)?;
        let mut reply = self.receive(self.call_timeout, "a call")?;
        match reply.get("ok").and_then(Value::as_bool) {
            Some(true) => {
                let ns = reply.get("runtime_ns").and_then(Value::as_u64);
                let result = reply.get_mut("result").map(Value::take);
                match (result, ns) {
                    (Some(result), Some(ns)) => Ok((result, ns)),
                    _ => Err(WorkerError::Garbage {
                        why: "an answer without `result` or `runtime_ns`".into(),
                        line: cut(&reply.to_string()),
                        tail: self.tail(),
                    }),
                }
            }
            Some(false) => Err(WorkerError::Call {
                error: reply.get("error").and_then(Value::as_str).unwrap_or("(no message)").to_string(),
                tail: self.error_tail(),
            }),
            None => Err(WorkerError::Garbage {
                why: "no `ok` field".into(),
                line: cut(&reply.to_string()),
                tail: self.tail(),
            }),
        }
    }

    /// The worker's process id (where the runtime runs).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The interpreter this worker runs in.
    pub fn python(&self) -> &str {
        &self.python
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // End of input ends the worker's loop; a worker that does not exit is killed.
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_millis(500);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The interpreter a worker runs in: the one installed by the command edge (from
/// `$LAYA_BENCH_PYTHON`), else the set-up script's venv when it exists, else `python3`.
pub fn interpreter(installed: Option<&Path>, cache_home: Option<&Path>) -> PathBuf {
    if let Some(p) = installed {
        return p.to_path_buf();
    }
    if let Some(home) = cache_home {
        let venv = home.join("laya-bench").join("ref-venv").join("bin").join("python");
        if venv.is_file() {
            return venv;
        }
    }
    PathBuf::from("python3")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_module_says_whether_the_set_up_script_installs_it() {
        let e = |module: &str, pip: &str| {
            WorkerError::Missing {
                module: module.into(),
                python: "py".into(),
                pip: pip.into(),
                error: "x".into(),
            }
            .to_string()
        };
        assert!(e("laya_mlx", "pip install laya-mlx")
            .ends_with("`pip install laya-mlx` (or run scripts/setup-ref.sh)"));
        assert!(e("laya", "pip install laya==0.4.15 torch")
            .ends_with("(or run scripts/setup-ref.sh --with-torch)"));
        assert!(e("MNN", "pip install MNN").ends_with("(scripts/setup-ref.sh does not install it)"));
        assert!(
            e("laya_cuda", "pip install laya-cuda==0.1.1.post1").contains("needs Python >= 3.12 and CUDA 12")
        );
    }

    #[test]
    fn the_interpreter_is_the_installed_one_then_the_venv_then_python3() {
        assert_eq!(interpreter(Some(Path::new("/x/py")), None), PathBuf::from("/x/py"));
        assert_eq!(interpreter(None, Some(Path::new("/nonexistent"))), PathBuf::from("python3"));
        let dir = std::env::temp_dir().join(format!("laya-ref-venv-{}", std::process::id()));
        let bin = dir.join("laya-bench/ref-venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python"), b"").unwrap();
        assert_eq!(interpreter(None, Some(&dir)), bin.join("python"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_lines_are_cut_for_messages() {
        assert_eq!(cut("abc"), "abc");
        assert_eq!(cut(&"x".repeat(300)).chars().count(), 201);
    }
}
