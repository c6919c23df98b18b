//! A loopback HTTP server (127.0.0.1 only, bounded) that plays the Hugging Face hub for the
//! real client code: the revision API (`/api/models/OWNER/REPO/revision/REV`) and file
//! resolution (`/OWNER/REPO/resolve/REV/FILE`, with hf-hub's `Range: bytes=0-0` metadata
//! request and resumable `Range: bytes=N-` downloads), plus faults: a cut-off transfer, a slow
//! server and a stalled one.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How the server sends one file's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// All of it at once.
    None,
    /// Promise the whole length, send this many bytes, close.
    CutOff(usize),
    /// Chunks of this many bytes with this pause between them.
    Slow(usize, u64),
    /// One chunk, then nothing until the connection is dropped (at most 20 s).
    Stall,
}

/// A repository the server knows.
#[derive(Debug, Clone)]
pub struct FakeRepo {
    /// `owner/repo`.
    pub id: String,
    /// The commit every revision name resolves to.
    pub commit: String,
    /// Names (besides the commit) that resolve: `main`, tags.
    pub names: Vec<String>,
    /// Files and bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

#[derive(Default)]
struct State {
    repos: Vec<FakeRepo>,
    fault: Option<(String, Fault)>,
    log: Vec<String>,
}

/// The running server; stops when dropped.
pub struct FakeHub {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

const MAX_CONNECTIONS: usize = 128;

impl FakeHub {
    /// Start on an ephemeral loopback port.
    pub fn start(repos: Vec<FakeRepo>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State { repos, ..State::default() }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (state.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            let served = AtomicUsize::new(0);
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) || served.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (s, st) = (s.clone(), st.clone());
                std::thread::spawn(move || {
                    let _ = handle(conn, &s, &st);
                });
            }
        });
        Self { addr, state, stop, accept: Some(accept) }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Apply a fault to one file's downloads (its metadata request is always answered).
    pub fn set_fault(&self, file: &str, fault: Fault) {
        self.state.lock().unwrap().fault = Some((file.to_string(), fault));
    }

    /// Every request line with its Range header, in order.
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Lowercase hex sha256.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The tiny fixture checkpoint as hub files.
pub fn tiny_files() -> Vec<(String, Vec<u8>)> {
    let root = crate::common::fixture("fixtures/tiny");
    [
        "model.safetensors",
        "rl_agent_config.json",
        "encoder/config.json",
        "tokenizer/tokenizer.json",
        "tokenizer/tokenizer_config.json",
        "tokenizer/special_tokens_map.json",
        "README.md",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(root.join(f)).unwrap()))
    .collect()
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

fn handle(mut conn: TcpStream, state: &Mutex<State>, stop: &AtomicBool) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.by_ref().take(8192).read_line(&mut line)?;
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.by_ref().take(8192).read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (repos, fault) = {
        let mut s = state.lock().unwrap();
        s.log.push(format!("{path} {}", range.clone().unwrap_or_default()));
        (s.repos.clone(), s.fault.clone())
    };
    let not_found =
        |conn: &mut TcpStream| respond(conn, "404 Not Found", &[], b"{\"error\":\"Entry not found\"}");
    let find = |id: &str, rev: &str| {
        repos.iter().find(|r| r.id == id && (r.commit == rev || r.names.iter().any(|n| n == rev))).cloned()
    };
    if let Some(rest) = path.strip_prefix("/api/models/") {
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        if let [owner, name, "revision", rev] = parts[..] {
            if let Some(r) = find(&format!("{owner}/{name}"), &rev.replace("%2F", "/")) {
                let siblings: Vec<serde_json::Value> =
                    r.files.iter().map(|(f, _)| serde_json::json!({"rfilename": f})).collect();
                let body = serde_json::to_vec(
                    &serde_json::json!({"id": r.id, "sha": r.commit, "siblings": siblings}),
                )
                .unwrap();
                return respond(&mut conn, "200 OK", &[("Content-Type", "application/json".into())], &body);
            }
        }
        return not_found(&mut conn);
    }
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [owner, name, "resolve", rev, file] = parts[..] else { return not_found(&mut conn) };
    let Some(repo) = find(&format!("{owner}/{name}"), rev) else { return not_found(&mut conn) };
    let Some((_, bytes)) = repo.files.iter().find(|(f, _)| f == file) else { return not_found(&mut conn) };
    let size = bytes.len();
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0)
        .min(size);
    let metadata = range.as_deref() == Some("bytes=0-0");
    let end = if metadata { 1.min(size) } else { size };
    let body = &bytes[start..end];
    let headers = vec![
        ("ETag", format!("\"{}\"", sha256(bytes))),
        ("X-Repo-Commit", repo.commit.clone()),
        ("Content-Range", format!("bytes {start}-{}/{size}", end.saturating_sub(1))),
    ];
    let fault = match fault {
        Some((f, fault)) if f == file && !metadata => fault,
        _ => Fault::None,
    };
    if fault == Fault::None {
        return respond(&mut conn, "206 Partial Content", &headers, body);
    }
    let mut head =
        format!("HTTP/1.1 206 Partial Content\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in &headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    match fault {
        Fault::CutOff(n) => conn.write_all(&body[..n.min(body.len())])?,
        Fault::Slow(chunk, pause) => {
            for c in body.chunks(chunk.max(1)) {
                conn.write_all(c)?;
                conn.flush()?;
                std::thread::sleep(Duration::from_millis(pause));
            }
        }
        Fault::Stall => {
            conn.write_all(&body[..body.len().min(1024)])?;
            conn.flush()?;
            let t = Instant::now();
            while !stop.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Fault::None => {}
    }
    conn.flush()
}
