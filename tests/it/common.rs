//! Helpers shared by the integration tests that run the binary.

use std::path::Path;
use std::process::{Command, Output};

/// Run `laya-bench ARGS` in `dir`.
pub fn laya_bench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run laya-bench")
}

/// The run's stdout, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The run's stderr, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A path inside the repository.
pub fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Copy a folder recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().map(Result::unwrap) {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of the tiny checkpoint folder (`fixtures/tiny`) at `to`, to edit or break.
pub fn copy_tiny_checkpoint(to: &Path) -> std::path::PathBuf {
    copy_tree(&fixture("fixtures/tiny"), to);
    to.to_path_buf()
}

/// A copy of a committed Core ML fixture (`fixtures/coreml/NAME`: `ordinary`, `ane`, `ane-w8`)
/// at `to`, to edit or break.
pub fn copy_coreml_fixture(name: &str, to: &Path) -> std::path::PathBuf {
    copy_tree(&fixture(&format!("fixtures/coreml/{name}")), to);
    to.to_path_buf()
}

/// Rewrite the `files` table of `root/coreml_config.json` with every listed file's current
/// sha256 and size, as a converter would for a package it built that way.
pub fn rehash_coreml_manifest(root: &Path) {
    let path = root.join("coreml_config.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let names: Vec<String> = m["files"].as_object().unwrap().keys().cloned().collect();
    for rel in names {
        let bytes = std::fs::read(root.join(&rel)).unwrap();
        m["files"][&rel] =
            serde_json::json!({"bytes": bytes.len(), "sha256": laya_bench::laya::bundle::sha256_hex(&bytes)});
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// Replace the first occurrence of `from` in a file with `to` (same length); panics when absent.
pub fn patch_first(path: &Path, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(from.len()).position(|w| w == from).expect("pattern present");
    bytes[at..at + to.len()].copy_from_slice(to);
    std::fs::write(path, bytes).unwrap();
}

/// A nested JSON array of integers, flattened row-major.
pub fn ints(v: &serde_json::Value) -> Vec<i32> {
    match v {
        serde_json::Value::Array(items) => items.iter().flat_map(ints).collect(),
        x => vec![x.as_i64().expect("integer") as i32],
    }
}

/// The cases of `fixtures/goldens/forward.json` (made by scripts/make_forward_goldens.py).
pub fn forward_golden_cases() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixture("fixtures/goldens/forward.json")).expect("goldens");
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("goldens json");
    match doc["cases"].take() {
        serde_json::Value::Array(cases) => cases,
        _ => panic!("forward.json: `cases` is not an array"),
    }
}

/// A forward golden case's packed input arrays as the engine takes them.
pub fn golden_batch(case: &serde_json::Value) -> laya_bench::backend::PreparedBatch {
    let a = &case["arrays"];
    let ids = &a["input_ids"];
    laya_bench::backend::PreparedBatch {
        batch: ids.as_array().expect("rows").len(),
        length: ids[0].as_array().expect("row").len(),
        max_options: a["marker_pos"][0].as_array().expect("row").len(),
        input_ids: ints(ids),
        attention_mask: ints(&a["attention_mask"]),
        marker_pos: ints(&a["marker_pos"]),
        marker_mask: ints(&a["marker_mask"]),
        qtype: ints(&a["qtype"]),
        position_ids: a.get("position_ids").map(ints),
        option_ids: a.get("option_ids").map(ints),
    }
}

/// The tiny fixture's encoder and agent configs, switched to the parallel layout if asked.
pub fn tiny_configs(
    parallel: bool,
) -> (laya_bench::laya::config::EncoderConfig, laya_bench::laya::config::AgentConfig) {
    use laya_bench::laya::config::{AgentConfig, EncoderConfig, OptionLayout};
    let dir = fixture("fixtures/tiny");
    let enc_text = std::fs::read_to_string(dir.join("encoder/config.json")).expect("config");
    let agent_text = std::fs::read_to_string(dir.join("rl_agent_config.json")).expect("agent config");
    let enc = EncoderConfig::from_json(&enc_text, "encoder/config.json").expect("encoder config");
    let mut agent = AgentConfig::from_json(&agent_text, "rl_agent_config.json").expect("agent config");
    if parallel {
        agent.option_layout = OptionLayout::Parallel;
    }
    (enc, agent)
}

/// Send `signal` (`-INT`, `-TERM`) to process `pid` with the `kill` utility; whether it was
/// delivered.
pub fn send_signal(signal: &str, pid: u32) -> bool {
    Command::new("kill")
        .args([signal, &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Spawn `laya-bench ARGS` in `dir` with stdout and stderr piped; with `ignore_sigint` it is
/// started as a shell's background job is, with SIGINT ignored (`trap '' INT; exec ...`).
pub fn spawn_laya_bench(dir: &Path, args: &[&str], ignore_sigint: bool) -> std::process::Child {
    let bin = env!("CARGO_BIN_EXE_laya-bench");
    let mut c = if ignore_sigint {
        let mut c = Command::new("sh");
        c.args(["-c", "trap '' INT; exec \"$0\" \"$@\"", bin]);
        c
    } else {
        Command::new(bin)
    };
    c.current_dir(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn laya-bench")
}

/// Wait until `file` in `dir` contains `needle` (at most `seconds`); whether it did.
pub fn wait_for_text(dir: &Path, file: &str, needle: &str, seconds: u64) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(seconds) {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        if text.contains(needle) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Wait for a spawned run to end (at most `seconds`, else kill it and fail); its output.
pub fn wait_with_limit(mut child: std::process::Child, seconds: u64) -> Output {
    let t = std::time::Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if t.elapsed() > std::time::Duration::from_secs(seconds) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("laya-bench did not stop within {seconds} s after the signal; stderr: {}", stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The plain progress lines in the stderr of a one-cycle run of arms `a` and `b` in a log:
/// four, in the balanced order (a b b a), each naming its block (from 0, as the raw record),
/// the count done of 4, its arm and cycle 0. The lines, for the caller's own checks.
pub fn one_cycle_progress_lines(err: &str) -> Vec<&str> {
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("block ")).collect();
    assert_eq!(lines.len(), 4, "{err}");
    for (index, (line, arm)) in lines.iter().zip(["a", "b", "b", "a"]).enumerate() {
        let prefix = format!("block {index} ({} of 4) done · arm {arm} · cycle 0 · ", index + 1);
        assert!(line.starts_with(&prefix), "{line}");
    }
    lines
}

/// Short `energy` runs (`cli_summary`, `reliability_inputs`): 300 ms blocks, 200 ms idle
/// windows, a reading every 50 ms.
pub const SHORT_ENERGY: &[&str] = &[
    "energy",
    "--no-progress",
    "--sample-interval",
    "50ms",
    "--seconds",
    "300ms",
    "--idle-seconds",
    "200ms",
    "--idle-discard",
    "50ms",
    "--warmup",
    "3",
];
