//! Self-describing exports (issue 51, item 2): every CSV row of `speed` and `summary` names
//! its model, engine, machine, tool and date, so the CSVs of runs on different models
//! concatenate into one table whose rows stay told apart; `-` writes an export to standard
//! output and nothing else goes there.

use std::path::Path;

use crate::common::{laya_bench, stderr, stdout};

/// The cells of one CSV line (fields quoted with `"` where they hold a comma).
fn cells(line: &str) -> Vec<String> {
    let (mut out, mut cell, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cell)),
            c => cell.push(c),
        }
    }
    out.push(cell);
    out
}

/// A short speed run of `model` with `arm` (`--calls 5 --cycles 1 --warmup 1`), its CSV at
/// `csv` (`-`: standard output); returns the run's standard output.
fn speed(dir: &Path, name: &str, model: &str, arm: &str, csv: &str) -> String {
    let raw = format!("{name}.raw.jsonl");
    let o = laya_bench(
        dir,
        &[
            "speed",
            "--model",
            model,
            "--arm",
            arm,
            "--calls",
            "5",
            "--cycles",
            "1",
            "--warmup",
            "1",
            "--raw",
            &raw,
            "--export-csv",
            csv,
            "--no-progress",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn speed_csvs_of_two_models_concatenate_with_every_row_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    speed(dir.path(), "tiny", "builtin:tiny", "f32=portable:f32", "tiny.csv");
    speed(dir.path(), "english", "synthetic:english", "m=mock:ok", "english.csv");
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let (a, b) = (read("tiny.csv"), read("english.csv"));
    let (head_a, head_b) = (a.lines().next().unwrap(), b.lines().next().unwrap());
    assert_eq!(head_a, head_b, "one header for both runs");
    // the header once, then every row of both
    let joined: Vec<&str> = a.lines().chain(b.lines().skip(1)).collect();
    let header = cells(joined[0]);
    assert_eq!(
        &header[..15],
        [
            "arm",
            "model_spec",
            "weights_sha256_12",
            "backend_spec",
            "precision",
            "threads",
            "requests_per_call",
            "cpu_model",
            "gpu",
            "os",
            "arch",
            "tool_version",
            "git_commit",
            "started_utc",
            "boundary"
        ]
    );
    // the columns readers of old CSVs know are all still there
    for old in ["spec", "calls", "mean_s", "p50_s", "speed_ratio_vs_baseline", "speed_ratio_direction"] {
        assert!(header.iter().any(|h| h == old), "{old} missing from {header:?}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<Vec<String>> = joined[1..].iter().map(|l| cells(l)).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert_eq!(r[col("os")], std::env::consts::OS);
        assert_eq!(r[col("tool_version")], env!("CARGO_PKG_VERSION"));
        assert!(r[col("started_utc")].ends_with('Z') && r[col("started_utc")].len() == 20, "{r:?}");
        assert_eq!(r[col("boundary")], "host path: request → result");
        assert_eq!(r[col("requests_per_call")], "1");
    }
    let told: Vec<(&str, &str)> =
        rows.iter().map(|r| (r[col("model_spec")].as_str(), r[col("backend_spec")].as_str())).collect();
    assert_eq!(told, [("builtin:tiny", "portable:f32"), ("synthetic:english", "mock:ok")]);
    assert_eq!(rows[0][col("weights_sha256_12")].len(), 12);
    assert!(rows[0][col("threads")].parse::<usize>().unwrap() >= 1, "{:?}", rows[0]);
}

#[test]
fn a_dash_writes_the_csv_to_standard_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = speed(dir.path(), "r", "builtin:tiny", "f32=portable:f32", "-");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "the CSV and nothing else:\n{out}");
    assert!(lines[0].starts_with("arm,model_spec,"), "{out}");
    assert!(lines[1].starts_with("f32,builtin:tiny,"), "{out}");
    assert!(!dir.path().join("-").exists(), "no file named -");
    // the report and the raw record are still written
    assert!(dir.path().join("r.json").is_file() && dir.path().join("r.raw.jsonl").is_file());
}

#[test]
fn two_exports_to_standard_output_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &["speed", "--arm", "mock:ok", "--calls", "5", "--export-csv", "-", "--export-markdown", "-"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--export-markdown - and --export-csv - both write to standard output"), "{err}");
    let o = laya_bench(dir.path(), &["speed", "--arm", "mock:ok", "--calls", "5", "--raw", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--raw -: the raw record is a file"), "{}", stderr(&o));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing written");
}

#[test]
fn summary_csv_rows_carry_the_context_and_go_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    speed(dir.path(), "tiny", "builtin:tiny", "f32=portable:f32", "tiny.csv");
    speed(dir.path(), "english", "synthetic:english", "m=mock:ok", "english.csv");
    // each record's summary CSV on standard output alone; concatenated, header once
    let summary = |raw: &str, flag: &str| {
        let o = laya_bench(dir.path(), &["summary", raw, flag, "-"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let (a, b) = (summary("tiny.raw.jsonl", "--export-csv"), summary("english.raw.jsonl", "--export-csv"));
    assert_eq!(a.lines().next(), b.lines().next(), "one header for both");
    let lines: Vec<&str> = a.lines().chain(b.lines().skip(1)).collect();
    let header = cells(lines[0]);
    assert_eq!(&header[..7], ["run", "source", "status", "block", "cycle", "arm", "model_spec"], "{a}");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<Vec<String>> = lines[1..].iter().map(|l| cells(l)).collect();
    assert_eq!(rows.len(), 4, "two blocks per run, and nothing else on standard output:\n{a}{b}");
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
    }
    let told: Vec<(&str, &str)> =
        rows.iter().map(|r| (r[col("model_spec")].as_str(), r[col("backend_spec")].as_str())).collect();
    assert_eq!(told[0], ("builtin:tiny", "portable:f32"));
    assert_eq!(told[1], told[0]);
    assert_eq!(told[2], ("synthetic:english", "mock:ok"));
    assert_eq!(told[3], told[2]);
    // the Markdown of the two runs tells their columns apart by the model
    let md =
        summary("tiny.raw.jsonl", "--export-markdown") + &summary("english.raw.jsonl", "--export-markdown");
    assert!(md.contains("| model | `builtin:tiny` "), "{md}");
    assert!(md.contains("| model | `synthetic:english` "), "{md}");
    assert!(md.contains("Context: "), "{md}");
    assert!(!md.contains("summary JSON was not written"), "{md}");
}
