//! `--model hub:NAME[@REVISION]` against a loopback server playing the hub, through the real
//! client code (hf-hub's blocking ureq API): revision resolution, download into the cache,
//! offline reuse, a pinned name served with other bytes, another commit, a 404, a cut-off
//! transfer resumed on the next run, a slow server and a stalled one.

use std::path::Path;
use std::process::{Command, Output};

use crate::hub_server::{sha256, tiny_files, FakeHub, FakeRepo, Fault};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const NOUL: &str = r#"{"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}"#;

/// Run `laya-bench ARGS` with only the hub settings given (no proxy, no token, no offline flag
/// from the caller's environment).
fn run(home: &Path, endpoint: &str, extra: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_laya-bench"));
    cmd.args(args).current_dir(home).env("HF_HOME", home.join("hf")).env("HF_ENDPOINT", endpoint);
    for k in [
        "HF_HUB_OFFLINE",
        "HF_HUB_CACHE",
        "HF_TOKEN",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "LAYA_BENCH_HUB_STALL_S",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("run laya-bench")
}

fn predict(home: &Path, endpoint: &str, extra: &[(&str, &str)], model: &str) -> Output {
    run(
        home,
        endpoint,
        extra,
        &["predict", "--model", model, "--state", "I want my money back.", "--questions", NOUL],
    )
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {e}");
    assert!(e.contains(needle), "stderr lacks {needle:?}:\n{e}");
    assert!(!e.contains("panicked"), "panic: {e}");
}

fn tiny_repo(id: &str, commit: &str) -> FakeRepo {
    FakeRepo {
        id: id.into(),
        commit: commit.into(),
        names: vec!["main".into(), "v1".into()],
        files: tiny_files(),
    }
}

/// What the fixture folder itself answers.
fn expected() -> String {
    let dir = crate::common::fixture("fixtures/tiny");
    let o = predict(Path::new(env!("CARGO_MANIFEST_DIR")), "http://127.0.0.1:9", &[], dir.to_str().unwrap());
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_repository_resolves_downloads_once_and_then_works_offline() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::start(vec![tiny_repo("test/tiny", COMMIT)]);
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:test/tiny");
    assert_exit(&o, 0, "not a pinned Laya checkpoint");
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected());
    // The standard cache layout: the branch's ref, the snapshot, one blob per file.
    let repo = home.path().join("hf/hub/models--test--tiny");
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap(), COMMIT);
    let snap = repo.join("snapshots").join(COMMIT);
    for (f, bytes) in tiny_files() {
        if f == "README.md" {
            assert!(!snap.join(&f).exists(), "only the checkpoint's files are fetched");
        } else {
            assert_eq!(sha256(&std::fs::read(snap.join(&f)).unwrap()), sha256(&bytes), "{f}");
        }
    }
    let first = hub.log();
    assert_eq!(first[0], "/api/models/test/tiny/revision/main ");
    assert!(
        first
            .iter()
            .any(|l| l.starts_with(&format!("/test/tiny/resolve/{COMMIT}/model.safetensors bytes=0-"))),
        "{first:?}"
    );
    // A commit in the cache needs no network; offline, the branch name reads the cached ref.
    let o = predict(home.path(), &hub.endpoint(), &[], &format!("hub:test/tiny@{COMMIT}"));
    assert_exit(&o, 0, "");
    assert_eq!(hub.log().len(), first.len(), "a cached commit asked the hub again");
    drop(hub);
    let o = predict(home.path(), "http://127.0.0.1:9", &[("HF_HUB_OFFLINE", "1")], "hub:test/tiny");
    assert_exit(&o, 0, "");
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected());
    // Offline, a revision never fetched exits 2 saying how to fetch it.
    let o = predict(home.path(), "http://127.0.0.1:9", &[("HF_HUB_OFFLINE", "1")], "hub:test/tiny@v1");
    assert_exit(&o, 2, "test/tiny@v1 is not in the Hugging Face cache");
    assert!(err(&o).contains("unset HF_HUB_OFFLINE"), "{}", err(&o));
    // A snapshot missing a file is said to be partly there, naming the file.
    std::fs::remove_file(snap.join("tokenizer/tokenizer_config.json")).unwrap();
    let o = predict(
        home.path(),
        "http://127.0.0.1:9",
        &[("HF_HUB_OFFLINE", "1")],
        &format!("hub:test/tiny@{COMMIT}"),
    );
    assert_exit(
        &o,
        2,
        &format!("is only partly in the Hugging Face cache {}/hf/hub (snapshot {COMMIT} lacks tokenizer/tokenizer_config.json) and downloads are off", home.path().display()),
    );
}

#[test]
fn every_model_taking_command_accepts_a_hub_checkpoint() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::start(vec![tiny_repo("test/tiny", COMMIT)]);
    let o = run(home.path(), &hub.endpoint(), &[], &["bounds", "--model", "hub:test/tiny@v1", "--json"]);
    assert_exit(&o, 0, "");
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"flop"), "{}", String::from_utf8_lossy(&o.stdout));
    let o = run(
        home.path(),
        &hub.endpoint(),
        &[],
        &[
            "convert-check",
            "--source",
            "hub:test/tiny@v1",
            "--candidate",
            "portable:f16",
            "--repeats",
            "2",
            "--output",
            "c.json",
        ],
    );
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{}", err(&o));
    assert!(home.path().join("c.json").is_file());
}

#[test]
fn a_pinned_name_served_with_other_bytes_exits_2_naming_the_file() {
    let home = tempfile::tempdir().unwrap();
    let pinned = "052592a15d198d9ad47da779604259b10b47b7aa";
    let hub = FakeHub::start(vec![tiny_repo("convaiinnovations/laya-multilingual", pinned)]);
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:laya-multilingual");
    let tiny = sha256(&std::fs::read(crate::common::fixture("fixtures/tiny/model.safetensors")).unwrap());
    assert_exit(
        &o,
        2,
        &format!("model.safetensors: sha256 {tiny} does not match the pinned 9d628fd971b700382ac6f65920a86f149777b2e748e0c955fb3b19695aa8f204"),
    );
    assert!(err(&o).contains("laya-apple 1.7.0"), "the pin names its source: {}", err(&o));
    assert!(err(&o).contains("the copy was removed from the cache"), "{}", err(&o));
    let snap = home.path().join("hf/hub/models--convaiinnovations--laya-multilingual/snapshots").join(pinned);
    assert!(!snap.join("model.safetensors").exists(), "a corrupt copy stayed in the cache");
    assert!(snap.join("rl_agent_config.json").exists());
}

#[test]
fn a_pinned_name_answered_with_another_commit_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let mut repo = tiny_repo("convaiinnovations/laya-typed-decisions", COMMIT);
    repo.names.push("f9ab0b228f0fc0f14d873dbc99038f135c2da1b2".into());
    let hub = FakeHub::start(vec![repo]);
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:laya-typed-decisions");
    assert_exit(
        &o,
        2,
        &format!("asked for commit f9ab0b228f0fc0f14d873dbc99038f135c2da1b2, the hub served {COMMIT}"),
    );
}

#[test]
fn an_unknown_repository_or_revision_exits_2_with_the_404() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::start(vec![tiny_repo("test/tiny", COMMIT)]);
    for spec in ["hub:test/absent", "hub:test/tiny@no-such-branch"] {
        let o = predict(home.path(), &hub.endpoint(), &[], spec);
        assert_exit(&o, 2, &format!("not found on {} (HTTP 404)", hub.endpoint()));
    }
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:laya-english");
    assert_exit(&o, 2, "unknown checkpoint name `laya-english`");
    // A repository without the checkpoint files is refused before any download.
    let mut bare = tiny_repo("test/bare", COMMIT);
    bare.files.retain(|(f, _)| f != "encoder/config.json");
    let hub = FakeHub::start(vec![bare]);
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:test/bare");
    assert_exit(&o, 2, "has no `encoder/config.json`");
}

#[test]
fn a_cut_off_transfer_fails_and_the_next_run_resumes_it() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::start(vec![tiny_repo("test/tiny", COMMIT)]);
    hub.set_fault("model.safetensors", Fault::CutOff(500_000));
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:test/tiny");
    assert_exit(&o, 2, "the connection closed before the whole file arrived");
    hub.set_fault("model.safetensors", Fault::None);
    let o = predict(home.path(), &hub.endpoint(), &[], "hub:test/tiny");
    assert_exit(&o, 0, "");
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected());
    let resumed = hub.log().iter().any(|l| l.ends_with("model.safetensors bytes=500000-"));
    assert!(resumed, "the second run did not resume from byte 500000: {:?}", hub.log());
}

#[test]
fn a_slow_server_completes_and_a_stalled_one_times_out() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::start(vec![tiny_repo("test/tiny", COMMIT)]);
    // 1.4 MB in 64 KiB chunks 30 ms apart: slower than the stall limit as a whole, never idle.
    hub.set_fault("model.safetensors", Fault::Slow(65_536, 30));
    let stall = [("LAYA_BENCH_HUB_STALL_S", "0.4")];
    let o = predict(home.path(), &hub.endpoint(), &stall, "hub:test/tiny");
    assert_exit(&o, 0, "");
    let other = tempfile::tempdir().unwrap();
    hub.set_fault("model.safetensors", Fault::Stall);
    let t = std::time::Instant::now();
    let o = predict(other.path(), &hub.endpoint(), &stall, "hub:test/tiny");
    assert_exit(&o, 2, &format!("no data from {} for 0.4 s", hub.endpoint()));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "the stall was not cut short: {:?}",
        t.elapsed()
    );
}
