//! The records of runs on real hardware (`docs/runs/`) stay re-derivable: `summary` on each raw
//! record gives the verdict and the figures its committed summary holds. These are the only
//! records in the project read from a real power sensor, so a change that alters how a record
//! is audited or integrated shows here against real samples, not only against scripted ones.

use serde_json::Value;

use crate::common::{fixture, laya_bench, stderr, stdout};

fn summarize(raw: &str) -> (Option<i32>, Value) {
    summarize_with(raw, &[])
}

fn summarize_with(raw: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let raw = fixture(raw);
    let mut args = vec!["summary", raw.to_str().unwrap(), "--output", "s.json"];
    args.extend(extra);
    let o = laya_bench(dir.path(), &args);
    let s: Value = serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap_or_else(|e| {
        panic!("summary wrote no report ({e}): {}", stderr(&o));
    }))
    .unwrap();
    (o.status.code(), s)
}

/// `summary` of `raw` (with `extra` arguments) is COMPLETE with every audit check passing, and
/// everything but the record's path equals `committed`, a summary written from the same record
/// (by the GPU machine, with the binary that measured, or here for `--target`).
fn complete_and_equal_to(raw: &str, extra: &[&str], committed: &str) -> Value {
    let (code, s) = summarize_with(raw, extra);
    assert_eq!(code, Some(0));
    let run = s["runs"][0].clone();
    assert_eq!(run["status"], "complete", "{}", run["status_reasons"]);
    for check in run["audit"].as_array().unwrap() {
        assert_eq!(check["outcome"], "pass", "{check}");
    }
    let mut committed_json: Value =
        serde_json::from_slice(&std::fs::read(fixture(committed)).unwrap()).unwrap();
    // Every committed record's sensor is NVML: the summary names its boundary, the GPU board.
    assert_eq!(run["power_boundary"], "gpu-board");
    relabel_claim(&mut committed_json["runs"][0]["claim"]);
    let theirs = &committed_json["runs"][0];
    for key in ["arms", "blocks", "cross_check", "samples", "bootstrap", "claim"] {
        assert_eq!(run[key], theirs[key], "`{key}` differs from {committed}");
    }
    // A metadata correction appended since adds one record: only the record count in
    // `record_integrity`'s detail may differ then.
    let corrected = run["metadata_corrections"].as_array().is_some_and(|c| !c.is_empty());
    let (ours, them) = (run["audit"].as_array().unwrap(), theirs["audit"].as_array().unwrap());
    assert_eq!(ours.len(), them.len());
    for (a, b) in ours.iter().zip(them) {
        assert_eq!((&a["name"], &a["outcome"]), (&b["name"], &b["outcome"]), "{committed}");
        if !(corrected && a["name"] == "record_integrity") {
            assert_eq!(a, b, "an audit check differs from {committed}");
        }
    }
    run
}

/// The committed claim statements were written before each sensor declared its boundary: the
/// same verdicts and figures, worded without it. This is the wording the claim has now, for an
/// NVML record: the gain is named on the GPU board, and the idle-subtracted gain is a different
/// boundary from GPU board energy (never "not a whole-system claim").
fn relabel_claim(claim: &mut Value) {
    let Some(arms) = claim.get_mut("arms").and_then(Value::as_array_mut) else { return };
    for a in arms {
        let old = a["statement"].as_str().unwrap().to_string();
        let at = old.find("measured energy gain ").expect(&old);
        let x = at + old[at..].find("× (").expect(&old) + "×".len();
        let new = format!("{} on the GPU board{}", &old[..x], &old[x..]).replace(
            "is a different boundary (energy above idle) and is not a whole-system claim.",
            "is a different boundary from GPU board energy (energy above idle) and decides no claim.",
        );
        a["statement"] = Value::String(new);
    }
}

/// Each committed H200 record was measured with NVML: GPU board power only. Every output of
/// `summary` (terminal, Markdown, CSV, pictures) labels power and energy by that boundary and
/// never calls it system power.
#[test]
fn the_h200_records_label_gpu_board_power_and_never_system_power() {
    for raw in [
        "docs/runs/2026-12-04-h200/h200.raw.jsonl",
        "docs/runs/2026-12-04-h200/first-try-rejected/h200-first-try.raw.jsonl",
        "docs/runs/2026-12-04-h200-claim/h200.raw.jsonl",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = fixture(raw);
        let args = [
            path.to_str().unwrap(),
            "--target",
            "1",
            "--markdown",
            "s.md",
            "--csv",
            "s.csv",
            "--plots",
            "plots",
        ];
        let o = laya_bench(dir.path(), &[&["summary"][..], &args[..]].concat());
        let terminal = stdout(&o);
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        let mut texts =
            vec![("terminal", terminal.clone()), ("markdown", read("s.md")), ("csv", read("s.csv"))];
        for e in std::fs::read_dir(dir.path().join("plots")).unwrap() {
            let e = e.unwrap().path();
            texts.push(("picture", std::fs::read_to_string(&e).unwrap()));
        }
        for (what, text) in &texts {
            let lower = text.to_lowercase();
            assert!(!lower.contains("system power"), "{raw}: {what} says system power:\n{text}");
            assert!(!lower.contains("whole-system"), "{raw}: {what} says whole-system:\n{text}");
        }
        assert!(terminal.contains("GPU board power [W]"), "{raw}:\n{terminal}");
        let csv = read("s.csv");
        let heads: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let at = heads.iter().position(|h| *h == "power_boundary").unwrap();
        assert!(
            csv.lines().skip(1).all(|l| l.rsplit(',').nth(heads.len() - 1 - at) == Some("gpu-board")),
            "{raw}"
        );
        // The committed re-renderings say what `summary` says now (docs/runs/README.md).
        if !raw.contains("first-try") {
            let committed =
                std::fs::read_to_string(fixture(&raw.replace("h200.raw.jsonl", "summary.md"))).unwrap();
            assert!(committed.contains("| mean GPU board power [W] | "), "{raw}");
            assert!(!committed.to_lowercase().contains("system power"), "{raw}");
        }
        if !raw.contains("first-try") {
            assert!(terminal.contains("| mean GPU board power [W] | "), "{raw}:\n{terminal}");
            assert!(terminal.contains("a different boundary from GPU board energy"), "{raw}:\n{terminal}");
            assert!(terminal.contains(" on the GPU board ("), "{raw}:\n{terminal}");
            assert!(texts.iter().any(|(w, t)| *w == "picture" && t.contains("GPU board power [W]")), "{raw}");
        }
    }
}

#[test]
fn the_h200_run_is_complete_and_its_figures_are_re_derived() {
    let run = complete_and_equal_to(
        "docs/runs/2026-12-04-h200/h200.raw.jsonl",
        &[],
        "docs/runs/2026-12-04-h200/summary.json",
    );
    // The torch arm's precision, recorded as `runtime default`, is corrected by an appended
    // record (laya autocasts to FP16 on CUDA); the header itself is unchanged.
    let corrections = run["metadata_corrections"].as_array().unwrap();
    assert_eq!(corrections.len(), 1, "{corrections:?}");
    assert_eq!(corrections[0]["field"], "arms.2.precision");
    assert!(corrections[0]["note"].as_str().unwrap().contains("FP16 autocast"), "{corrections:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(fixture("docs/runs/2026-12-04-h200/h200.raw.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["arms"][2]["precision"], "runtime default");
    // Hand-read from the record: block 0 (p32) took 1004.243 J on the counter, 1004.837 J by
    // integrated board power.
    let b0 = &run["cross_check"]["blocks"][0];
    assert!((b0["total_j"].as_f64().unwrap() - 1004.243).abs() < 1e-3, "{b0}");
    assert!((b0["other_j"].as_f64().unwrap() - 1004.837).abs() < 1e-3, "{b0}");
}

#[test]
fn the_h200_first_try_stays_rejected_for_a_counter_read_faster_than_it_refreshed() {
    let (code, s) = summarize("docs/runs/2026-12-04-h200/first-try-rejected/h200-first-try.raw.jsonl");
    assert_eq!(code, Some(1));
    let run = &s["runs"][0];
    assert_eq!(run["status"], "rejected");
    let reasons = run["status_reasons"].to_string();
    assert!(reasons.contains("counter_not_advancing"), "{reasons}");
}

/// The ten-cycle run on the H200: laya 0.4.15 at FP32 (the baseline), FP16 and BF16 autocast, all
/// on the GPU. Whole-board energy per decision says autocast costs more (both intervals of
/// S × R lie below 1), while energy above idle says it saves almost 3×: the boundary decides.
#[test]
fn the_h200_claim_run_is_complete_and_its_claim_at_1x_is_re_derived() {
    let raw = "docs/runs/2026-12-04-h200-claim/h200.raw.jsonl";
    complete_and_equal_to(raw, &[], "docs/runs/2026-12-04-h200-claim/summary.json");
    let run =
        complete_and_equal_to(raw, &["--target", "1"], "docs/runs/2026-12-04-h200-claim/claim-target-1.json");
    assert_eq!(run["bootstrap"]["cycles"], 10);
    let arms = run["claim"]["arms"].as_array().unwrap();
    let names: Vec<&str> = arms.iter().map(|a| a["arm"].as_str().unwrap()).collect();
    assert_eq!(names, ["t16", "tbf16"]);
    for a in arms {
        assert_eq!(a["reached"], false, "{a}");
        let (gain, high) =
            (a["energy_gain"].as_f64().unwrap(), a["energy_gain_interval"]["high"].as_f64().unwrap());
        assert!(gain < high && high < 1.0, "{a}");
        assert!(a["idle_subtracted_energy_gain_interval"]["low"].as_f64().unwrap() > 2.7, "{a}");
    }
    // The arms' precisions are laya's own report, not the spec's words.
    let header: Value =
        serde_json::from_str(std::fs::read_to_string(fixture(raw)).unwrap().lines().next().unwrap()).unwrap();
    let precisions: Vec<&str> =
        header["arms"].as_array().unwrap().iter().map(|a| a["precision"].as_str().unwrap()).collect();
    assert_eq!(precisions, ["fp32", "fp16 autocast", "bf16 autocast"]);
}
