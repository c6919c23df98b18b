//! `hub:NAME[@REVISION]`: a checkpoint on the Hugging Face hub, fetched once into the hub cache
//! through `hf-hub`'s blocking client, pinned and verified.
//!
//! - `NAME` is `laya`, `laya-multilingual`, `laya-typed-decisions` (pinned, see [`pins`]) or any
//!   `owner/repo`. `REVISION` is a branch, tag or commit; the default is the pin's revision (or
//!   `main` for an unpinned repository).
//! - Fetched: `model.safetensors`, `rl_agent_config.json`, `encoder/config.json`, `tokenizer/*`
//!   (the allow-list the other Laya runtimes use), into the standard cache layout
//!   (`<cache>/models--OWNER--REPO/{blobs,snapshots/COMMIT,refs}`), so a checkpoint fetched by
//!   `huggingface_hub` is found too and the other way round.
//! - A pinned revision's `model.safetensors` must hash to the published sha256, else the copy
//!   is removed and the resolution fails naming the file. A commit already in the cache is used
//!   with no network at all; offline (`HF_HUB_OFFLINE`) an absent one fails saying how to fetch it.
//! - Transfers that make no progress for [`HubConfig::stall_timeout`] fail; a cut-off transfer
//!   leaves its `.part` file, and the next run resumes it (hf-hub's range requests).
//!
//! The command edge builds the [`HubConfig`] from the environment ([`HubConfig::from_env`]) and,
//! with a [`Progress`] (the progress bar), one [`Hub`] that it passes down;
//! [`Hub::resolve_spec`] then serves every `hub:` spec of the process, each at most once.
//! Nothing here prints.

pub mod pins;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use hf_hub::api::sync::{ApiBuilder, ApiError};
use hf_hub::{Cache, Repo, RepoType};
use sha2::{Digest, Sha256};

pub use pins::{Pin, PinnedRevision, PINS};

/// The default hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// Seconds a transfer may go without receiving a byte (`LAYA_BENCH_HUB_STALL_S`).
pub const DEFAULT_STALL_S: u64 = 60;

/// Why a `hub:` spec could not be resolved. Every variant names the repository or file and says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The spec text is not `hub:NAME[@REVISION]`.
    #[error("model `hub:{spec}`: {detail}")]
    BadSpec {
        /// The text after `hub:`.
        spec: String,
        /// What is wrong.
        detail: String,
    },
    /// The environment does not give a usable cache folder or endpoint.
    #[error("hub settings: {0}")]
    Config(String),
    /// Offline, and the checkpoint is not in the cache.
    #[error("{repo}@{revision} is {whereabouts} and downloads are off ({why}); run once with network access (unset HF_HUB_OFFLINE), e.g. `laya-bench predict --model hub:{spec} --state hi --questions '{{}}'`, or copy the cache from a machine that has it")]
    Offline {
        /// `owner/repo`.
        repo: String,
        /// Revision asked for.
        revision: String,
        /// "not in the Hugging Face cache C", or "only partly in …" naming what the cached
        /// snapshot lacks.
        whereabouts: String,
        /// The text after `hub:`.
        spec: String,
        /// Which setting turned downloads off.
        why: String,
    },
    /// The hub answered 404.
    #[error("{what}: not found on {endpoint} (HTTP 404); check the repository name and revision")]
    NotFound {
        /// What was asked for.
        what: String,
        /// The endpoint asked.
        endpoint: String,
    },
    /// The hub refused access.
    #[error("{what}: access refused by {endpoint} (HTTP {status}); a private or gated repository needs a token in HF_TOKEN (or `hf auth login`)")]
    Unauthorized {
        /// What was asked for.
        what: String,
        /// The endpoint asked.
        endpoint: String,
        /// 401 or 403.
        status: u16,
    },
    /// Any other transfer failure.
    #[error("{what}: download from {endpoint} failed ({detail}); check the network or HF_ENDPOINT and run again (a partial file is resumed)")]
    Transfer {
        /// What was asked for.
        what: String,
        /// The endpoint asked.
        endpoint: String,
        /// What happened.
        detail: String,
    },
    /// No byte arrived for the stall timeout.
    #[error("{what}: no data from {endpoint} for {seconds} s; the transfer was abandoned (raise LAYA_BENCH_HUB_STALL_S on a slow link; a partial file is resumed)")]
    Stalled {
        /// What was asked for.
        what: String,
        /// The endpoint asked.
        endpoint: String,
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// The hub served another commit than the one pinned or asked for.
    #[error("{repo}: asked for commit {asked}, the hub served {got}; the revision is pinned, so nothing else is used")]
    RevisionMismatch {
        /// `owner/repo`.
        repo: String,
        /// The commit asked for.
        asked: String,
        /// The commit served.
        got: String,
    },
    /// The repository lacks a file every Laya checkpoint has.
    #[error("{repo}@{revision} has no `{file}`; it is not a Laya checkpoint in the original layout (model.safetensors, rl_agent_config.json, encoder/config.json, tokenizer/)")]
    MissingFile {
        /// `owner/repo`.
        repo: String,
        /// The revision.
        revision: String,
        /// The missing file.
        file: String,
    },
    /// A pinned file does not hash to its published sha256.
    #[error("{file}: sha256 {got} does not match the pinned {want} ({source_name}); {action}")]
    Sha256Mismatch {
        /// The file (cache path).
        file: String,
        /// Its sha256.
        got: String,
        /// The pinned sha256.
        want: String,
        /// Where the pin comes from.
        source_name: String,
        /// What was done and what to do.
        action: String,
    },
    /// A cache file could not be read or written.
    #[error("{path}: {detail}")]
    Io {
        /// The path.
        path: String,
        /// What failed.
        detail: String,
    },
}

/// A parsed `hub:NAME[@REVISION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubRef {
    /// The text after `hub:`.
    pub spec: String,
    /// `owner/repo`.
    pub repo: String,
    /// The revision the spec names, if any.
    pub revision: Option<String>,
    /// The pin of this repository, if it is a published Laya checkpoint.
    pub pin: Option<&'static Pin>,
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 96
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !s.starts_with('.')
        && !s.contains("..")
}

/// A full commit id (40 lowercase hex digits).
pub fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl HubRef {
    /// Parse the text after `hub:`.
    pub fn parse(spec: &str) -> Result<Self, HubError> {
        let bad = |detail: String| HubError::BadSpec { spec: spec.to_string(), detail };
        let (name, revision) = match spec.split_once('@') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        if let Some(r) = revision {
            let ok = !r.is_empty()
                && r.len() <= 200
                && r.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
                && !r.contains("..");
            if !ok {
                return Err(bad(format!(
                    "revision `{r}` is not a branch, tag or commit id (letters, digits, . _ - / only)"
                )));
            }
        }
        let known = || PINS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
        let (repo, pin) = match name.split_once('/') {
            Some((owner, repo)) => {
                if !valid_segment(owner) || !valid_segment(repo) {
                    return Err(bad(format!("`{name}` is not a repository id `owner/repo`")));
                }
                (name.to_string(), pins::find(name))
            }
            None => match pins::find(name) {
                Some(p) => (p.repo.to_string(), Some(p)),
                None => {
                    return Err(bad(format!(
                        "unknown checkpoint name `{name}`: use one of {} or a repository id owner/repo",
                        known()
                    )))
                }
            },
        };
        Ok(Self { spec: spec.to_string(), repo, revision: revision.map(str::to_string), pin })
    }

    /// The revision to fetch: the spec's, else the pin's default, else `main`.
    pub fn effective_revision(&self) -> String {
        match (&self.revision, self.pin) {
            (Some(r), _) => r.clone(),
            (None, Some(p)) => p.revisions[0].commit.to_string(),
            (None, None) => "main".to_string(),
        }
    }
}

/// Where and how to reach the hub.
#[derive(Debug, Clone, PartialEq)]
pub struct HubConfig {
    /// `HF_ENDPOINT` (default `https://huggingface.co`), without a trailing `/`.
    pub endpoint: String,
    /// The hub cache (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
    /// `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`); absolute.
    pub cache_dir: PathBuf,
    /// Downloads off (`HF_HUB_OFFLINE`): why, or `None` when they are on.
    pub offline: Option<String>,
    /// `HF_TOKEN`, if set (else hf-hub reads the token file beside the cache).
    pub token: Option<String>,
    /// A transfer with no byte for this long is abandoned (`LAYA_BENCH_HUB_STALL_S`).
    pub stall_timeout: Duration,
}

fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

impl HubConfig {
    /// The settings the Hugging Face tools read, from `get` (the environment at the command edge).
    /// A relative cache folder is taken relative to `cwd`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>, cwd: &Path) -> Result<Self, HubError> {
        let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let endpoint = nonempty("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let endpoint = endpoint.trim().trim_end_matches('/').to_string();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(HubError::Config(format!(
                "HF_ENDPOINT `{endpoint}` is not an http:// or https:// address"
            )));
        }
        let cache = if let Some(c) = nonempty("HF_HUB_CACHE") {
            PathBuf::from(c)
        } else if let Some(h) = nonempty("HF_HOME") {
            PathBuf::from(h).join("hub")
        } else if let Some(x) = nonempty("XDG_CACHE_HOME") {
            PathBuf::from(x).join("huggingface").join("hub")
        } else if let Some(home) = nonempty("HOME").or_else(|| nonempty("USERPROFILE")) {
            PathBuf::from(home).join(".cache").join("huggingface").join("hub")
        } else {
            return Err(HubError::Config(
                "no cache folder: set HF_HOME (or HF_HUB_CACHE) to where checkpoints may be stored".into(),
            ));
        };
        let cache_dir = if cache.is_absolute() { cache } else { cwd.join(cache) };
        let offline =
            get("HF_HUB_OFFLINE").filter(|v| truthy(v)).map(|_| "HF_HUB_OFFLINE is set".to_string());
        let stall = match nonempty("LAYA_BENCH_HUB_STALL_S") {
            None => DEFAULT_STALL_S as f64,
            Some(v) => match v.trim().parse::<f64>() {
                // at most 7 days, like every duration the tool takes (2^64 s would not fit)
                Ok(s) if s.is_finite() && s > 0.0 && s <= crate::time::MAX_DURATION.as_secs_f64() => s,
                _ => {
                    return Err(HubError::Config(format!(
                        "LAYA_BENCH_HUB_STALL_S `{v}` must be a positive number of seconds, at most 604800 (7 days)"
                    )))
                }
            },
        };
        Ok(Self {
            endpoint,
            cache_dir,
            offline,
            token: nonempty("HF_TOKEN"),
            stall_timeout: Duration::from_secs_f64(stall),
        })
    }

    fn repo_dir(&self, repo: &str) -> PathBuf {
        self.cache_dir.join(Repo::new(repo.to_string(), RepoType::Model).folder_name())
    }
}

/// What the resolver reports while it works (the command edge draws it).
pub trait Progress: Send + Sync {
    /// A file transfer starts: `bytes` is its full size.
    fn file_started(&self, file: &str, bytes: u64) -> Box<dyn FileProgress>;
    /// Something the user must read (an unpinned checkpoint, a fetched revision).
    fn notice(&self, text: &str);
}

/// Progress of one transfer.
pub trait FileProgress: Send {
    /// `bytes` more arrived.
    fn advance(&mut self, bytes: u64);
    /// The transfer ended.
    fn finish(&mut self);
}

/// Progress that shows nothing.
pub struct Silent;

struct NoProgress;
impl FileProgress for NoProgress {
    fn advance(&mut self, _bytes: u64) {}
    fn finish(&mut self) {}
}

impl Progress for Silent {
    fn file_started(&self, _file: &str, _bytes: u64) -> Box<dyn FileProgress> {
        Box::new(NoProgress)
    }
    fn notice(&self, _text: &str) {}
}

/// One checkpoint file in the cache and its sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCheck {
    /// Path inside the checkpoint.
    pub file: String,
    /// Its sha256 (lowercase hex).
    pub sha256: String,
    /// The published sha256 it was checked against, if pinned.
    pub pinned: Option<&'static str>,
}

/// A resolved checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The snapshot folder (an original-layout checkpoint).
    pub dir: PathBuf,
    /// `owner/repo`.
    pub repo: String,
    /// The commit.
    pub commit: String,
    /// The pinned revision it matched, if any.
    pub pinned: Option<PinnedRevision>,
    /// Every file with its sha256.
    pub files: Vec<FileCheck>,
    /// Files fetched by this call (empty when all came from the cache).
    pub downloaded: Vec<String>,
}

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String, HubError> {
    let io = |e: std::io::Error| HubError::Io { path: path.display().to_string(), detail: e.to_string() };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn wanted(file: &str) -> bool {
    pins::CHECKPOINT_FILES.contains(&file) || (file.starts_with(pins::TOKENIZER_DIR) && !file.ends_with('/'))
}

fn required() -> impl Iterator<Item = &'static str> {
    pins::CHECKPOINT_FILES.into_iter().chain(pins::TOKENIZER_FILES)
}

fn list_snapshot(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> =
        pins::CHECKPOINT_FILES.iter().filter(|f| dir.join(f).is_file()).map(|f| f.to_string()).collect();
    if let Ok(entries) = std::fs::read_dir(dir.join("tokenizer")) {
        let mut tok: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| format!("{}{}", pins::TOKENIZER_DIR, e.file_name().to_string_lossy()))
            .collect();
        tok.sort();
        out.extend(tok);
    }
    out
}

fn complete(dir: &Path) -> bool {
    required().all(|f| dir.join(f).is_file())
}

/// Resolve a `hub:` reference into a verified snapshot folder, downloading what is missing.
pub fn resolve(cfg: &HubConfig, observer: Arc<dyn Progress>, href: &HubRef) -> Result<Resolved, HubError> {
    let revision = href.effective_revision();
    let pinned = href.pin.and_then(|p| p.pinned(&revision)).copied();
    match (href.pin, pinned) {
        (Some(p), None) => observer.notice(&format!(
            "hub:{}: revision {revision} is not a pinned revision of {} (pinned: {}); its weights are not checked against a published sha256",
            href.spec,
            p.name,
            p.revisions.iter().map(|r| r.commit).collect::<Vec<_>>().join(", ")
        )),
        (None, _) => observer.notice(&format!(
            "hub:{}: {} is not a pinned Laya checkpoint; its files are not checked against a published sha256",
            href.spec, href.repo
        )),
        _ => {}
    }
    let repo_dir = cfg.repo_dir(&href.repo);
    let local_commit = if is_commit(&revision) {
        Some(revision.clone())
    } else {
        std::fs::read_to_string(repo_dir.join("refs").join(&revision)).ok().map(|s| s.trim().to_string())
    };
    let (mut presence, mut missing) = ("not in", String::new());
    if let Some(commit) = local_commit.filter(|c| is_commit(c)) {
        let dir = repo_dir.join("snapshots").join(&commit);
        if complete(&dir) {
            return finish(href, &commit, dir, pinned, Vec::new(), cfg.offline.as_deref());
        }
        if dir.is_dir() {
            let lacks: Vec<&str> = required().filter(|f| !dir.join(f).is_file()).collect();
            presence = "only partly in";
            missing = format!(" (snapshot {commit} lacks {})", lacks.join(", "));
        }
    }
    if let Some(why) = &cfg.offline {
        return Err(HubError::Offline {
            repo: href.repo.clone(),
            revision,
            whereabouts: format!("{presence} the Hugging Face cache {}{missing}", cfg.cache_dir.display()),
            spec: href.spec.clone(),
            why: why.clone(),
        });
    }
    let (commit, files) = remote_listing(cfg, href, &revision)?;
    if is_commit(&revision) && commit != revision {
        return Err(HubError::RevisionMismatch { repo: href.repo.clone(), asked: revision, got: commit });
    }
    for f in required() {
        if !files.iter().any(|s| s == f) {
            return Err(HubError::MissingFile { repo: href.repo.clone(), revision, file: f.to_string() });
        }
    }
    let dir = repo_dir.join("snapshots").join(&commit);
    let mut downloaded = Vec::new();
    for f in &files {
        if dir.join(f).is_file() {
            continue;
        }
        let got = download(cfg, observer.clone(), href, &commit, f)?;
        if got != dir.join(f) {
            // hf-hub files a download under the commit the server names (`x-repo-commit`).
            return Err(HubError::RevisionMismatch {
                repo: href.repo.clone(),
                asked: commit,
                got: format!("another commit (the file landed at {})", got.display()),
            });
        }
        downloaded.push(f.clone());
    }
    if !is_commit(&revision) {
        let cache = Cache::new(cfg.cache_dir.clone());
        cache
            .repo(Repo::with_revision(href.repo.clone(), RepoType::Model, revision.clone()))
            .create_ref(&commit)
            .map_err(|e| HubError::Io {
                path: repo_dir.join("refs").join(&revision).display().to_string(),
                detail: e.to_string(),
            })?;
    }
    if !downloaded.is_empty() {
        observer.notice(&format!(
            "hub:{}: {} at commit {commit} is in {}",
            href.spec,
            href.repo,
            dir.display()
        ));
    }
    finish(href, &commit, dir, pinned, downloaded, None)
}

/// Hash every file, check the pinned ones, and describe the snapshot.
fn finish(
    href: &HubRef,
    commit: &str,
    dir: PathBuf,
    pinned: Option<PinnedRevision>,
    downloaded: Vec<String>,
    offline: Option<&str>,
) -> Result<Resolved, HubError> {
    let mut files = Vec::new();
    for file in list_snapshot(&dir) {
        let path = dir.join(&file);
        let sha256 = sha256_file(&path)?;
        let want = match (pinned, href.pin) {
            (Some(_), Some(p)) if file == "model.safetensors" => Some(p.weights_sha256),
            _ => None,
        };
        if let (Some(want), Some(p)) = (want, href.pin) {
            if sha256 != want {
                let action = remove_cached(&path, offline);
                return Err(HubError::Sha256Mismatch {
                    file: path.display().to_string(),
                    got: sha256,
                    want: want.to_string(),
                    source_name: p.weights_source.to_string(),
                    action,
                });
            }
        }
        files.push(FileCheck { file, sha256, pinned: want });
    }
    Ok(Resolved { dir, repo: href.repo.clone(), commit: commit.to_string(), pinned, files, downloaded })
}

/// Remove a corrupt cached file (its snapshot link and the blob it points to).
fn remove_cached(path: &Path, offline: Option<&str>) -> String {
    let target = std::fs::canonicalize(path).ok();
    let mut removed = std::fs::remove_file(path).is_ok();
    if let Some(t) = target.filter(|t| t != path) {
        removed &= std::fs::remove_file(&t).is_ok();
    }
    // offline, a second run cannot download anything: say what turns downloads back on
    let again = match offline {
        Some(why) => format!("run again with network access (downloads are off: {why}; unset HF_HUB_OFFLINE) to download it anew"),
        None => "run again to download it anew".to_string(),
    };
    if removed {
        format!("the copy was removed from the cache; {again} (if it fails again, the hub or a proxy serves other bytes than the published checkpoint)")
    } else {
        format!("delete {} and {again}", path.display())
    }
}

fn build_api(cfg: &HubConfig) -> Result<hf_hub::api::sync::Api, HubError> {
    let mut b = ApiBuilder::from_cache(Cache::new(cfg.cache_dir.clone()))
        .with_endpoint(cfg.endpoint.clone())
        .with_progress(false)
        .with_user_agent("laya-bench", env!("CARGO_PKG_VERSION"));
    if let Some(t) = &cfg.token {
        b = b.with_token(Some(t.clone()));
    }
    b.build().map_err(|e| HubError::Transfer {
        what: "the hub client".into(),
        endpoint: cfg.endpoint.clone(),
        detail: e.to_string(),
    })
}

fn api_error(cfg: &HubConfig, what: &str, e: ApiError) -> HubError {
    let endpoint = cfg.endpoint.clone();
    let what = what.to_string();
    match e {
        ApiError::RequestError(boxed) => match *boxed {
            ureq::Error::Status(404, _) => HubError::NotFound { what, endpoint },
            ureq::Error::Status(status @ (401 | 403), _) => HubError::Unauthorized { what, endpoint, status },
            ureq::Error::Status(status, _) => {
                HubError::Transfer { what, endpoint, detail: format!("HTTP {status}") }
            }
            ureq::Error::Transport(t) => HubError::Transfer { what, endpoint, detail: t.to_string() },
        },
        ApiError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => HubError::Transfer {
            what,
            endpoint,
            detail: "the connection closed before the whole file arrived".into(),
        },
        other => HubError::Transfer { what, endpoint, detail: other.to_string() },
    }
}

/// Run `job` on its own thread; fail if `activity` (milliseconds since `start`) stops moving
/// for the stall timeout. An abandoned job's thread ends with its connection or the process.
fn watched<T: Send + 'static>(
    cfg: &HubConfig,
    what: &str,
    job: impl FnOnce(Activity) -> T + Send + 'static,
) -> Result<T, HubError> {
    let activity = Activity::new();
    let (tx, rx) = mpsc::channel();
    let a = activity.clone();
    std::thread::Builder::new()
        .name("hub-transfer".into())
        .spawn(move || {
            let _ = tx.send(job(a));
        })
        .map_err(|e| HubError::Transfer {
            what: what.into(),
            endpoint: cfg.endpoint.clone(),
            detail: e.to_string(),
        })?;
    let tick = cfg.stall_timeout.min(Duration::from_millis(100));
    loop {
        match rx.recv_timeout(tick) {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(HubError::Transfer {
                    what: what.into(),
                    endpoint: cfg.endpoint.clone(),
                    detail: "the transfer thread ended without an answer".into(),
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if activity.idle() >= cfg.stall_timeout {
                    return Err(HubError::Stalled {
                        what: what.into(),
                        endpoint: cfg.endpoint.clone(),
                        seconds: cfg.stall_timeout.as_secs_f64(),
                    });
                }
            }
        }
    }
}

/// The time of the last byte, shared with the transfer thread.
#[derive(Clone)]
struct Activity {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn new() -> Self {
        Self { start: Instant::now(), last_ms: Arc::new(AtomicU64::new(0)) }
    }
    fn touch(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn idle(&self) -> Duration {
        self.start.elapsed().saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// The commit a revision points at and the checkpoint files it holds (`/api/models/.../revision/...`).
fn remote_listing(cfg: &HubConfig, href: &HubRef, revision: &str) -> Result<(String, Vec<String>), HubError> {
    let api = build_api(cfg)?;
    let repo = Repo::with_revision(href.repo.clone(), RepoType::Model, revision.to_string());
    let what = format!("{}@{revision}", href.repo);
    let info = watched(cfg, &what, move |_| api.repo(repo).info())?.map_err(|e| api_error(cfg, &what, e))?;
    if !is_commit(&info.sha) {
        return Err(HubError::Transfer {
            what,
            endpoint: cfg.endpoint.clone(),
            detail: format!("the hub named commit `{}`, not a 40-digit commit id", info.sha),
        });
    }
    let mut files: Vec<String> =
        info.siblings.into_iter().map(|s| s.rfilename).filter(|f| wanted(f)).collect();
    files.sort();
    files.dedup();
    Ok((info.sha, files))
}

struct Adapter {
    observer: Arc<dyn Progress>,
    bar: Option<Box<dyn FileProgress>>,
    activity: Activity,
}

impl hf_hub::api::Progress for Adapter {
    fn init(&mut self, size: usize, filename: &str) {
        self.activity.touch();
        if self.bar.is_none() {
            self.bar = Some(self.observer.file_started(filename, size as u64));
        }
    }
    fn update(&mut self, size: usize) {
        self.activity.touch();
        if let Some(b) = self.bar.as_mut() {
            b.advance(size as u64);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.bar.as_mut() {
            b.finish();
        }
    }
}

/// Download one file of `commit` into the cache; returns its snapshot path.
fn download(
    cfg: &HubConfig,
    observer: Arc<dyn Progress>,
    href: &HubRef,
    commit: &str,
    file: &str,
) -> Result<PathBuf, HubError> {
    let api = build_api(cfg)?;
    let repo = Repo::with_revision(href.repo.clone(), RepoType::Model, commit.to_string());
    let what = format!("{}@{commit}/{file}", href.repo);
    let name = file.to_string();
    let result = watched(cfg, &what, move |activity| {
        let progress = Adapter { observer, bar: None, activity };
        api.repo(repo).download_with_progress(&name, progress)
    })?;
    result.map_err(|e| api_error(cfg, &what, e))
}

/// The process's access to the hub: its settings (or why they are unusable), the progress
/// that shows transfers, and the snapshot folder of every `hub:` spec resolved so far. The
/// command edge builds one ([`Hub::new`]) and passes it down to what resolves `hub:` specs.
pub struct Hub {
    config: Result<HubConfig, HubError>,
    observer: Arc<dyn Progress>,
    memo: Mutex<HashMap<String, PathBuf>>,
}

impl Hub {
    /// The hub as `config` reaches it, reporting to `observer`. A settings error is kept and
    /// reported when a `hub:` spec is used.
    pub fn new(config: Result<HubConfig, HubError>, observer: Arc<dyn Progress>) -> Self {
        Self { config, observer, memo: Mutex::new(HashMap::new()) }
    }

    /// Resolve `hub:SPEC` (`spec` is the text after `hub:`) to its verified snapshot folder,
    /// at most once per spec for this value.
    pub fn resolve_spec(&self, spec: &str) -> Result<PathBuf, HubError> {
        let href = HubRef::parse(spec)?;
        let cfg = self.config.as_ref().map_err(|e| HubError::Config(e.to_string()))?;
        if let Some(dir) = self.memo.lock().ok().and_then(|m| m.get(spec).cloned()) {
            return Ok(dir);
        }
        let resolved = resolve(cfg, self.observer.clone(), &href)?;
        if let Ok(mut m) = self.memo.lock() {
            m.insert(spec.to_string(), resolved.dir.clone());
        }
        Ok(resolved.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn names_revisions_and_repository_ids_parse() {
        let r = HubRef::parse("laya-multilingual").unwrap();
        assert_eq!(r.repo, "convaiinnovations/laya-multilingual");
        assert_eq!(r.effective_revision(), "052592a15d198d9ad47da779604259b10b47b7aa");
        let r = HubRef::parse("laya@1c5edc17a7acd8701df6fc341c0d179f1c62c982").unwrap();
        assert!(r.pin.and_then(|p| p.pinned(&r.effective_revision())).is_some());
        let r = HubRef::parse("me/my-model@v1.2").unwrap();
        assert_eq!((r.repo.as_str(), r.effective_revision().as_str(), r.pin), ("me/my-model", "v1.2", None));
        assert_eq!(HubRef::parse("me/m").unwrap().effective_revision(), "main");
        // The Laya repository id is pinned like its short name.
        assert!(HubRef::parse("convaiinnovations/laya-typed-decisions").unwrap().pin.is_some());
        for bad in ["", "laya-english", "a/b/c", "../x", "me/..", "laya@", "laya@a b", "x/y@../z"] {
            let e = HubRef::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("model `hub:{bad}`")), "{bad}: {e}");
        }
        assert!(HubRef::parse("laya-english")
            .unwrap_err()
            .to_string()
            .contains("laya, laya-multilingual, laya-typed-decisions"));
    }

    #[test]
    fn settings_follow_the_hugging_face_variables() {
        let cwd = Path::new("/work/run");
        let c = HubConfig::from_env(env(&[("HOME", "/home/u")]), cwd).unwrap();
        assert_eq!(c.endpoint, "https://huggingface.co");
        assert_eq!(c.cache_dir, PathBuf::from("/home/u/.cache/huggingface/hub"));
        assert_eq!(
            (c.offline.clone(), c.token.clone(), c.stall_timeout),
            (None, None, Duration::from_secs(60))
        );
        let c = HubConfig::from_env(env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]), cwd).unwrap();
        assert_eq!(c.cache_dir, PathBuf::from("/x/huggingface/hub"));
        let c = HubConfig::from_env(
            env(&[
                ("HOME", "/h"),
                ("HF_HOME", "rel"),
                ("HF_ENDPOINT", "http://127.0.0.1:9/"),
                ("HF_HUB_OFFLINE", "1"),
                ("LAYA_BENCH_HUB_STALL_S", "0.5"),
                ("HF_TOKEN", "t"),
            ]),
            cwd,
        )
        .unwrap();
        assert_eq!(c.cache_dir, PathBuf::from("/work/run/rel/hub"));
        assert_eq!(c.endpoint, "http://127.0.0.1:9");
        assert!(c.offline.is_some());
        assert_eq!((c.token.as_deref(), c.stall_timeout), (Some("t"), Duration::from_millis(500)));
        let c = HubConfig::from_env(
            env(&[("HF_HUB_CACHE", "/c"), ("HF_HOME", "/h"), ("HF_HUB_OFFLINE", "0")]),
            cwd,
        )
        .unwrap();
        assert_eq!((c.cache_dir, c.offline), (PathBuf::from("/c"), None));
        assert!(HubConfig::from_env(env(&[]), cwd).is_err());
        assert!(HubConfig::from_env(env(&[("HOME", "/h"), ("HF_ENDPOINT", "ftp://x")]), cwd).is_err());
        assert!(HubConfig::from_env(env(&[("HOME", "/h"), ("LAYA_BENCH_HUB_STALL_S", "-1")]), cwd).is_err());
    }

    #[test]
    fn commits_are_forty_lowercase_hex_digits() {
        assert!(is_commit("052592a15d198d9ad47da779604259b10b47b7aa"));
        assert!(!is_commit("052592a1"));
        assert!(!is_commit("052592A15D198D9AD47DA779604259B10B47B7AA"));
        assert!(!is_commit("main"));
    }

    #[test]
    fn the_allow_list_is_the_checkpoint_and_its_tokenizer_folder() {
        for f in [
            "model.safetensors",
            "encoder/config.json",
            "rl_agent_config.json",
            "tokenizer/tokenizer.json",
            "tokenizer/special_tokens_map.json",
        ] {
            assert!(wanted(f), "{f}");
        }
        for f in
            ["README.md", "encoder/model.safetensors", "pytorch_model.bin", ".gitattributes", "tokenizer/"]
        {
            assert!(!wanted(f), "{f}");
        }
    }

    #[test]
    fn a_removed_corrupt_copy_says_how_to_fetch_it_again_online_and_offline() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("model.safetensors");
        std::fs::write(&f, b"x").unwrap();
        let online = remove_cached(&f, None);
        assert!(!f.exists());
        assert!(
            online.starts_with("the copy was removed from the cache; run again to download it anew"),
            "{online}"
        );
        std::fs::write(&f, b"x").unwrap();
        let offline = remove_cached(&f, Some("HF_HUB_OFFLINE is set"));
        assert!(
            offline.contains("run again with network access (downloads are off: HF_HUB_OFFLINE is set; unset HF_HUB_OFFLINE)"),
            "{offline}"
        );
        // a copy that cannot be removed (here: already gone) is left to the user
        let gone = remove_cached(&f, None);
        assert!(gone.starts_with(&format!("delete {} and run again", f.display())), "{gone}");
    }

    #[test]
    fn offline_without_a_cached_copy_says_how_to_fetch_it() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = HubConfig {
            endpoint: "http://127.0.0.1:9".into(),
            cache_dir: dir.path().to_path_buf(),
            offline: Some("HF_HUB_OFFLINE is set".into()),
            token: None,
            stall_timeout: Duration::from_secs(1),
        };
        let e = resolve(&cfg, Arc::new(Silent), &HubRef::parse("laya-multilingual").unwrap()).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, HubError::Offline { .. }), "{text}");
        assert!(
            text.contains("convaiinnovations/laya-multilingual@052592a15d198d9ad47da779604259b10b47b7aa"),
            "{text}"
        );
        assert!(text.contains("unset HF_HUB_OFFLINE"), "{text}");
    }
}
