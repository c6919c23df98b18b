//! `laya-bench convert-check` as a user runs it: candidates that decide like the source pass,
//! perturbed ones fail naming the questions, bundles are checked statically on any OS, and bad
//! suites, foreign candidates and tampered bundles exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny");

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench")).args(args).output().expect("run laya-bench")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Run convert-check writing `dir/NAME.json`; return the process output and the report.
fn check(dir: &Path, name: &str, extra: &[&str]) -> (Output, Option<Value>) {
    let out = dir.join(format!("{name}.json"));
    let mut args = vec!["convert-check", "--output", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
    let report = std::fs::read(&out).ok().map(|b| serde_json::from_slice(&b).unwrap());
    (o, report)
}

fn assert_input_error(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert!(text(o).contains(needle), "output lacks {needle:?}:\n{}", text(o));
}

/// A small suite: noul, choice and score questions on short states.
fn small_suite(dir: &Path) -> PathBuf {
    let suite = json!({
        "schema_version": 1, "name": "small",
        "states": {
            "refund": "I was charged twice for order 5521. Please refund the second charge.",
            "late": "Where is my parcel? Tracking has said in transit for nine days.",
            "ru": "Мне дважды списали оплату за подписку. Верните лишний платёж."
        },
        "questions": [
            {"id": "n-refund", "state": "refund", "question": {"type": "noul", "instructions": "Does the customer ask for a refund?"}},
            {"id": "c-topic", "state": "refund", "question": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "shipping", "account", "product"]}},
            {"id": "n-late", "state": "late", "question": {"type": "noul", "instructions": "Is the parcel late?"}},
            {"id": "s-urgency", "state": "late", "question": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "medium", "high"]}},
            {"id": "n-ru", "state": "ru", "question": {"type": "noul", "instructions": "Was the customer charged twice?"}},
            {"id": "c-ru", "state": "ru", "question": {"type": "choice", "instructions": "Topic?", "criteria": ["billing", "delivery"]}}
        ]
    });
    let path = dir.join("small.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

/// convert-check of `candidate` against builtin:tiny on the small suite.
fn check_small(dir: &Path, name: &str, candidate: &str, repeats: &str) -> (Output, Option<Value>) {
    let suite = small_suite(dir);
    let args = [
        "--source",
        "builtin:tiny",
        "--candidate",
        candidate,
        "--suite",
        suite.to_str().unwrap(),
        "--repeats",
        repeats,
    ];
    check(dir, name, &args)
}

/// A copy of the tiny checkpoint folder (every file below it).
fn copy_fixture(dir: &Path) -> PathBuf {
    crate::common::copy_tiny_checkpoint(dir)
}

/// Every tensor of the fixture as (name, shape, f32 values), with `edit` applied.
fn fixture_tensors(edit: impl Fn(&str, &mut [f32])) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(Path::new(FIXTURE).join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Vec<(String, Vec<usize>, Vec<f32>)> = st
        .tensors()
        .into_iter()
        .map(|(name, t)| {
            let mut v: Vec<f32> =
                t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            edit(&name, &mut v);
            (name, t.shape().to_vec(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Serialize tensors as F32 or F16 safetensors.
fn save(path: &Path, tensors: &[(String, Vec<usize>, Vec<f32>)], f16: bool) {
    let encoded: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(n, s, v)| {
            let data = if f16 {
                v.iter().flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes()).collect()
            } else {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            };
            (n.clone(), s.clone(), data)
        })
        .collect();
    let dtype = if f16 { safetensors::Dtype::F16 } else { safetensors::Dtype::F32 };
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = encoded
        .iter()
        .map(|(n, s, d)| (n.clone(), safetensors::tensor::TensorView::new(dtype, s.clone(), d).unwrap()))
        .collect();
    std::fs::write(path, safetensors::serialize(views, None).unwrap()).unwrap();
}

#[test]
fn f16_passes_the_default_suite_with_small_drift_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (o, report) = check(
        dir.path(),
        "f16",
        &["--source", "builtin:tiny", "--candidate", "portable:f16", "--repeats", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["verdict"], "passed");
    let s = &r["summary"];
    let total = s["question_count"].as_u64().unwrap();
    assert!(total >= 60);
    assert_eq!(s["fitting"], format!("{}/{total} fitting", s["fitting_count"]));
    let max = s["max_drift"].as_f64().unwrap();
    assert!(max > 0.0 && max <= 0.02, "{max}");
    let q = s["max_drift_question"].as_str().unwrap();
    let worst = r["questions"].as_array().unwrap().iter().find(|x| x["id"] == q).unwrap();
    assert_eq!(worst["gates"]["drift"].as_f64().unwrap(), max);
    assert!(r["questions"].as_array().unwrap().iter().any(|x| x["state_tokens_dropped"].as_u64() > Some(0)));
    let p = &r["package"];
    assert!(p["candidate"]["weight_payload_mb"].as_f64() < p["source"]["weight_payload_mb"].as_f64());
    assert!(
        r["compute_placement"].is_null()
            && r["compute_placement_note"].as_str().unwrap().contains("not applicable")
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("convert-check: PASSED"), "verdict first:\n{out}");
    assert!(out.contains("worst questions:"));
}

#[test]
fn output_dash_writes_the_report_alone_on_stdout_and_the_verdict_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let suite = small_suite(dir.path());
    let args = ["convert-check", "--output", "-", "--source", "builtin:tiny", "--candidate", "portable:f16"];
    let o = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir.path())
        .args(args)
        .args(["--suite", suite.to_str().unwrap(), "--repeats", "2"])
        .output()
        .expect("run laya-bench");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // standard output is the report, whole and alone
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((r["schema_version"].clone(), r["kind"].clone()), (json!(1), json!("convert-check")));
    assert_eq!(r["verdict"], "passed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("convert-check: PASSED"), "the verdict text goes to stderr:\n{err}");
    assert!(!err.contains("wrote "), "{err}");
    assert!(!dir.path().join("-").exists());
}

#[test]
fn w8_and_w4_on_the_tiny_model_say_that_nothing_was_palettized() {
    let dir = tempfile::tempdir().unwrap();
    for spec in ["portable:w8", "portable:w4"] {
        let (o, report) = check(
            dir.path(),
            &spec[9..],
            &["--source", "builtin:tiny", "--candidate", spec, "--repeats", "2", "--max-len", "96"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let r = report.unwrap();
        assert_eq!(r["summary"]["max_drift"], 0.0);
        let notes = r["candidate"]["notes"].to_string();
        assert!(notes.contains("palettization changed nothing"), "{notes}");
        // --max-len 96 keeps the long-instruction question out, listed.
        assert!(r["summary"]["not_fitting"].as_array().unwrap().iter().any(|id| id == "long-instr"));
        assert_eq!(r["shape"]["max_length_tokens"], 96);
    }
}

#[test]
fn a_4_bit_palette_of_every_matrix_reports_its_drift_honestly() {
    let dir = tempfile::tempdir().unwrap();
    let palette = dir.path().join("p4.safetensors");
    let o =
        run(&["palettize", "--bits", "4", "--above-elements", "0", "--output", palette.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let spec = format!("portable:palette:{}", palette.display());
    let (o, report) = check_small(dir.path(), "p4", &spec, "2");
    let r = report.unwrap();
    let passed = r["passed"].as_bool().unwrap();
    assert_eq!(o.status.code(), Some(if passed { 0 } else { 1 }), "{}", text(&o));
    for q in r["questions"].as_array().unwrap() {
        assert!(q["gates"]["drift"].as_f64().unwrap() > 0.0, "{q}");
    }
    assert!(r["candidate"]["notes"].to_string().contains("4-bit indices"));
    assert_eq!(r["candidate"]["precision"], "w4");
    assert!(
        r["package"]["candidate"]["weight_payload_bytes"].as_u64()
            < r["package"]["source"]["weight_payload_bytes"].as_u64()
    );
}

#[test]
fn a_perturbed_checkpoint_fails_on_the_questions_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = copy_fixture(&dir.path().join("ckpt"));
    // Scale the noul row of the type embedding: only noul rows change.
    let d = 64;
    let tensors = fixture_tensors(|name, v| {
        if name == "type_emb.weight" {
            for x in &mut v[2 * d..3 * d] {
                *x *= 6.0;
            }
        }
    });
    save(&ckpt.join("model.safetensors"), &tensors, false);
    let (o, report) = check_small(dir.path(), "broken", ckpt.to_str().unwrap(), "2");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["verdict"], "failed");
    assert_eq!(r["candidate"]["kind"], "checkpoint");
    let failed: Vec<&str> =
        r["summary"]["failed"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(!failed.is_empty());
    assert!(failed.iter().all(|id| id.starts_with("n-")), "only noul questions change: {failed:?}");
    assert!(r["summary"]["max_drift_question"].as_str().unwrap().starts_with("n-"));
    for q in r["questions"].as_array().unwrap() {
        if !q["id"].as_str().unwrap().starts_with("n-") {
            assert_eq!(q["gates"]["drift"], 0.0, "{q}");
        }
    }
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("convert-check: FAILED"), "{out}");
    assert!(out.contains(failed[0]), "the summary names the failing question:\n{out}");
}

#[test]
fn an_unstable_candidate_fails_the_repeat_gate() {
    let dir = tempfile::tempdir().unwrap();
    let (o, report) = check_small(dir.path(), "mock", "mock:drift-after=1", "3");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["questions"][0]["gates"]["repeats_identical"], false);
    assert!(r["package"]["candidate"]["weight_payload_bytes"].is_null());
    assert!(r["package"]["candidate"]["missing_reason"].is_string());
}

#[test]
fn invalid_suites_and_flags_exit_2_naming_the_item() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, questions: Value| {
        let p = dir.path().join(name);
        let suite = json!({"schema_version": 1, "states": {"s": "hello"}, "questions": questions});
        std::fs::write(&p, suite.to_string()).unwrap();
        p
    };
    let unknown = write(
        "unknown.json",
        json!([{"id": "poll-1", "state": "s", "question": {"type": "poll", "instructions": "x"}}]),
    );
    let empty = write(
        "empty.json",
        json!([{"id": "ok", "state": "s", "question": {"type": "noul", "instructions": "x"}},
               {"id": "no-options", "state": "s", "question": {"type": "choice", "instructions": "x", "criteria": {}}}]),
    );
    let base = ["--source", "builtin:tiny", "--candidate", "portable:f16"];
    for (file, needle) in [
        (&unknown, "questions[0] (id \"poll-1\"): question 'poll-1': unknown type 'poll'"),
        (&empty, "questions[1] (id \"no-options\")"),
    ] {
        let mut args = base.to_vec();
        args.extend(["--suite", file.to_str().unwrap()]);
        let (o, report) = check(dir.path(), "bad", &args);
        assert_input_error(&o, needle);
        assert!(report.is_none(), "no report for bad input");
    }
    let (o, _) = check(dir.path(), "g", &[&base[..], &["--gate", "0"]].concat());
    assert_input_error(&o, "--gate 0");
    let (o, _) = check(dir.path(), "r", &[&base[..], &["--repeats", "1"]].concat());
    assert_input_error(&o, "--repeats 1");
    let (o, _) = check(dir.path(), "m", &["--source", "builtin:tiny", "--candidate", "portable:w3"]);
    assert_input_error(&o, "unknown backend `portable:w3`");
    let (o, _) = check(dir.path(), "l", &[&base[..], &["--max-len", "4096"]].concat());
    assert_input_error(&o, "longer than the model's max_len 512");
    // A length no question fits: the run fails (exit 1) and says what to change.
    let (o, report) = check(dir.path(), "short", &[&base[..], &["--max-len", "5"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("no suite question fits the candidate's shape; the first: question '")
            && text(&o).contains("raise max_len"),
        "{}",
        text(&o)
    );
    assert_eq!(report.unwrap()["summary"]["fitting_count"], 0);
    let (o, _) = check(dir.path(), "c", &["--source", "builtin:tiny", "--candidate", "coreml:nothere"]);
    assert_input_error(
        &o,
        "--backend coreml:nothere: the folder nothere does not exist, so it is not a Core ML bundle",
    );
}

#[test]
fn a_candidate_with_another_tokenizer_or_config_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = copy_fixture(&dir.path().join("cfg"));
    let agent = ckpt.join("rl_agent_config.json");
    let t = std::fs::read_to_string(&agent).unwrap().replace("\"max_len\": 512", "\"max_len\": 256");
    std::fs::write(&agent, t).unwrap();
    let (o, _) =
        check(dir.path(), "cfg", &["--source", "builtin:tiny", "--candidate", ckpt.to_str().unwrap()]);
    assert_input_error(&o, "rl_agent_config.json differs from the source's (keys max_len)");
    let ckpt = copy_fixture(&dir.path().join("tok"));
    let cfg = ckpt.join("tokenizer/tokenizer_config.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
    v["model_max_length"] = json!(77);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let (o, _) =
        check(dir.path(), "tok", &["--source", "builtin:tiny", "--candidate", ckpt.to_str().unwrap()]);
    assert_input_error(&o, "tokenizer/tokenizer_config.json differs");
}

/// An ANE bundle of the tiny model: FP16 host tensors (optionally edited), the committed
/// fixture's package (`fixtures/coreml/ane`) and a manifest listing every file's sha256.
fn fabricate_ane(dir: &Path, edit: impl Fn(&str, &mut [f32])) -> PathBuf {
    let root = copy_fixture(dir);
    std::fs::remove_file(root.join("model.safetensors")).unwrap();
    let host: Vec<_> = fixture_tensors(edit)
        .into_iter()
        .filter(|(n, _, _)| {
            n.starts_with("encoder.embeddings.tok_") || n.starts_with("type_emb") || n.starts_with("act_head")
        })
        .collect();
    save(&root.join("host_weights.safetensors"), &host, true);
    crate::common::copy_tree(
        &crate::common::fixture("fixtures/coreml/ane/model.mlpackage"),
        &root.join("model.mlpackage"),
    );
    let listed = [
        "host_weights.safetensors",
        "model.mlpackage/Manifest.json",
        "model.mlpackage/Data/com.apple.CoreML/model.mlmodel",
        "model.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
    ];
    let files: serde_json::Map<String, Value> = listed
        .iter()
        .map(|rel| {
            let sha = laya_bench::laya::bundle::sha256_hex(&std::fs::read(root.join(rel)).unwrap());
            (rel.to_string(), json!({"sha256": sha}))
        })
        .collect();
    let manifest = json!({"format": "laya-coreml-ane", "format_version": 1, "precision": "float16",
        "shape": {"batch_size": 1, "max_options": 32, "max_length": 96, "flexible": false}, "files": files});
    std::fs::write(root.join("coreml_config.json"), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    root
}

#[test]
fn an_ane_bundle_is_checked_statically_and_its_gates_are_reported_as_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = fabricate_ane(&dir.path().join("ane"), |_, _| {});
    let (o, report) = check_small(dir.path(), "ane", bundle.to_str().unwrap(), "2");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["verdict"], "not_passed");
    assert_eq!(r["candidate"]["kind"], "coreml_bundle");
    let b = &r["bundle_checks"];
    assert_eq!(b["passed"], true);
    assert_eq!(b["fixed_b1_k32"], true);
    assert_eq!(b["verified_files"].as_array().unwrap().len(), 4);
    let declared: Vec<&str> =
        b["declared_inputs"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(declared, ["embeddings", "full_mask", "local_mask", "type_vectors", "marker_map"]);
    assert_eq!(b["declared_outputs"][0]["shape"], json!([1, 1, 1, 32]));
    let hw = b["host_weights"].as_array().unwrap();
    assert_eq!(hw.len(), 6);
    assert!(hw.iter().all(|t| t["matches"] == true && t["comparison"] == "fp16_rounding"), "{hw:?}");
    assert_eq!(r["shape"]["max_length_tokens"], 96);
    assert_eq!(r["summary"]["gates_run"], false);
    assert_eq!(r["summary"]["fitting"], "6/6 fitting");
    assert!(r["summary"]["max_drift"].is_null() && r["summary"]["max_drift_missing_reason"].is_string());
    assert!(r["questions"][0]["gates"].is_null() && r["questions"][0]["source_answer"].is_string());
    assert!(r["compute_placement"].is_null());
    assert!(r["compute_placement_note"].as_str().unwrap().contains("compute plan"));
    let package: u64 =
        ["Manifest.json", "Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin"]
            .iter()
            .map(|rel| std::fs::metadata(bundle.join("model.mlpackage").join(rel)).unwrap().len())
            .sum();
    assert_eq!(r["package"]["candidate"]["weight_payload_bytes"].as_u64(), Some(package));
    assert!(r["package"]["candidate"]["streamed_bytes_per_decision"].as_u64().unwrap() > 0);
}

#[test]
fn an_ane_bundle_from_other_weights_fails_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = fabricate_ane(&dir.path().join("ane"), |name, v| {
        if name == "act_head.2.bias" {
            v[0] += 1.0;
        }
    });
    let (o, report) = check_small(dir.path(), "ane-other", bundle.to_str().unwrap(), "2");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["verdict"], "failed");
    let bad: Vec<&Value> = r["bundle_checks"]["host_weights"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["matches"] == false)
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["name"], "act_head.2.bias");
    assert!(String::from_utf8_lossy(&o.stdout).contains("DIFFER: act_head.2.bias"));
}

#[test]
fn a_bundle_whose_hash_does_not_match_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = fabricate_ane(&dir.path().join("ane"), |_, _| {});
    std::fs::write(bundle.join("model.mlpackage/Data/com.apple.CoreML/weights/weight.bin"), b"tampered")
        .unwrap();
    let (o, report) =
        check(dir.path(), "tampered", &["--source", "builtin:tiny", "--candidate", bundle.to_str().unwrap()]);
    assert_input_error(
        &o,
        "Bundle file does not match its manifest: model.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
    );
    assert!(report.is_none());
    let (o, _) = check(
        dir.path(),
        "len",
        &[
            "--source",
            "builtin:tiny",
            "--candidate",
            &format!("coreml:{}", fabricate_ane(&dir.path().join("b"), |_, _| {}).display()),
            "--max-len",
            "64",
        ],
    );
    assert_input_error(&o, "Requested length does not match the bundle");
}

#[test]
fn an_ordinary_core_ml_export_is_checked_without_host_weights() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = crate::common::fixture("fixtures/coreml/ordinary");
    let (o, report) = check_small(dir.path(), "plain", &format!("coreml:{}", bundle.display()), "2");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = report.unwrap();
    assert_eq!(r["verdict"], "not_passed");
    let b = &r["bundle_checks"];
    assert_eq!((b["format"].as_str(), b["passed"].as_bool()), (Some("laya-coreml"), Some(true)));
    assert!(b["host_weights"].as_array().unwrap().is_empty() && b["host_weights_note"].is_string());
    assert_eq!(r["shape"]["max_length_tokens"], 128);
    assert_eq!(r["shape"]["batch_size"], 1);
    assert_eq!(b["declared_inputs"][0]["name"], "input_ids");
    assert_eq!(b["declared_inputs"][0]["data_type"], "int32");
    assert_eq!(b["declared_inputs"][0]["flexibility"]["enumerated"].as_array().unwrap().len(), 8);
    assert_eq!(b["declared_outputs"][1]["shape"], json!([1, 2]));
    assert_eq!(r["summary"]["fitting"], "6/6 fitting");
}

/// A candidate that runs the source's own weights is IDENTICAL, not PASSED (issue 14, item 10).
#[test]
fn a_candidate_identical_to_its_source_says_identical() {
    let dir = tempfile::tempdir().unwrap();
    for (name, spec) in [("same", "portable:f32"), ("w8", "portable:w8")] {
        let (o, report) =
            check(dir.path(), name, &["--source", "builtin:tiny", "--candidate", spec, "--repeats", "2"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let r = report.unwrap();
        assert_eq!(r["verdict"], "identical", "{spec}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("convert-check: IDENTICAL"), "{out}");
        assert!(r["verdict_reason"].as_str().unwrap().contains("compared with itself"));
    }
    let (_, report) = check(
        dir.path(),
        "f16b",
        &["--source", "builtin:tiny", "--candidate", "portable:f16", "--repeats", "2"],
    );
    assert_eq!(report.unwrap()["verdict"], "passed");
}
