//! The committed Core ML fixtures (`fixtures/coreml/`) through the binary, as a user runs it:
//! `convert-check`, `doctor --backend coreml:…` and `predict` on the real packages, and tampered
//! copies (a renamed input, a wrong shape, a manifest that disagrees, a changed weight file, a
//! damaged description) refused with exit 2 naming the input, field or file.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::common::{copy_coreml_fixture, fixture, laya_bench, patch_first, rehash_coreml_manifest};

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn assert_exit_2(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert!(text(o).contains(needle), "output lacks {needle:?}:\n{}", text(o));
}

const SPEC: &str = "model.mlpackage/Data/com.apple.CoreML/model.mlmodel";
const WEIGHTS: &str = "model.mlpackage/Data/com.apple.CoreML/weights/weight.bin";

fn suite(dir: &Path) -> PathBuf {
    let suite = json!({
        "schema_version": 1, "name": "fixtures",
        "states": {"refund": "I was charged twice for order 5521. Please refund the second charge."},
        "questions": [
            {"id": "n", "state": "refund", "question": {"type": "noul", "instructions": "Does the customer ask for a refund?"}},
            {"id": "c", "state": "refund", "question": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "shipping", "account"]}}
        ]
    });
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

fn convert_check(dir: &Path, name: &str, candidate: &Path) -> (Output, Option<Value>) {
    let out = dir.join(format!("{name}.json"));
    let suite = suite(dir);
    let o = laya_bench(
        dir,
        &[
            "convert-check",
            "--source",
            "builtin:tiny",
            "--candidate",
            &format!("coreml:{}", candidate.display()),
            "--suite",
            suite.to_str().unwrap(),
            "--repeats",
            "2",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
    (o, std::fs::read(&out).ok().map(|b| serde_json::from_slice(&b).unwrap()))
}

/// Whether Core ML must really have run (`LAYA_BENCH_REQUIRE_COREML=1`, set by the macOS
/// workflow): then a fixture that did not load or run fails the test instead of passing on the
/// checks every OS makes.
fn require_coreml() -> bool {
    std::env::var_os("LAYA_BENCH_REQUIRE_COREML").is_some_and(|v| v == "1")
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn convert_check_reads_and_checks_each_fixture_on_any_os() {
    let dir = tempfile::tempdir().unwrap();
    for (name, inputs, outputs) in [
        (
            "ane",
            &["embeddings", "full_mask", "local_mask", "type_vectors", "marker_map"][..],
            &["logits", "cls"][..],
        ),
        (
            "ane-w8",
            &["embeddings", "full_mask", "local_mask", "type_vectors", "marker_map"][..],
            &["logits", "cls"][..],
        ),
        (
            "ordinary",
            &["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype"][..],
            &["logits", "action_logits"][..],
        ),
    ] {
        let (o, report) = convert_check(dir.path(), name, &fixture(&format!("fixtures/coreml/{name}")));
        let r = report.unwrap_or_else(|| panic!("{name}: no report\n{}", text(&o)));
        let b = &r["bundle_checks"];
        assert_eq!(b["passed"], true, "{name}: {b}");
        assert_eq!(names(&b["declared_inputs"]), inputs, "{name}");
        assert_eq!(names(&b["declared_outputs"]), outputs, "{name}");
        let ane = name != "ordinary";
        let want = if ane { "float16" } else { "int32" };
        assert!(b["declared_inputs"].as_array().unwrap().iter().all(|f| f["data_type"] == want), "{name}");
        assert!(b["declared_interface_check"].as_str().unwrap().starts_with("matches the adapter"));
        if ane {
            assert_eq!(b["declared_inputs"][0]["shape"], json!([1, 64, 1, 96]));
            assert_eq!(b["declared_inputs"][0]["flexibility"], "fixed");
            assert!(b["host_weights"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["matches"] == true && t["comparison"] == "exact"));
        } else {
            assert_eq!(b["declared_inputs"][0]["flexibility"]["enumerated"][1], json!([1, 16]));
        }
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("declared_inputs:  ") && out.contains("declared_outputs: "), "{out}");
        if !cfg!(target_os = "macos") {
            // the gates need Core ML; the static checks do not
            assert_eq!(o.status.code(), Some(1), "{}", text(&o));
            assert_eq!(r["verdict"], "not_passed", "{name}");
            assert_eq!(r["summary"]["gates_run"], false);
        }
        if require_coreml() {
            assert_eq!(r["summary"]["gates_run"], true, "{name}: Core ML did not run\n{}", text(&o));
            assert!(
                r["compute_placement"].is_object(),
                "{name}: no compute plan: {}",
                r["compute_placement_note"]
            );
        }
    }
}

#[test]
fn doctor_reports_the_declared_interface_of_a_coreml_spec() {
    let dir = tempfile::tempdir().unwrap();
    let ane = fixture("fixtures/coreml/ane");
    let o = laya_bench(
        dir.path(),
        &[
            "doctor",
            "--json",
            "--model",
            ane.to_str().unwrap(),
            "--backend",
            &format!("coreml:{}:cpu_ne", ane.display()),
            "--backend",
            "portable:f32",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let l = &doc["loads"][0];
    assert_eq!(
        names(&l["declared_inputs"]),
        ["embeddings", "full_mask", "local_mask", "type_vectors", "marker_map"]
    );
    assert_eq!(l["declared_outputs"][1]["shape"], json!([1, 64, 1, 1]));
    if !cfg!(target_os = "macos") {
        assert_eq!(l["loaded"], false);
        assert!(l["detail"].as_str().unwrap().contains("needs macOS"), "{l}");
    }
    if require_coreml() {
        assert_eq!(l["loaded"], true, "Core ML did not load the ANE fixture: {l}");
    }
    // not a Core ML spec: no declared interface
    assert!(doc["loads"][1]["declared_inputs"].is_null());
    let o = laya_bench(
        dir.path(),
        &["doctor", "--model", ane.to_str().unwrap(), "--backend", &format!("coreml:{}", ane.display())],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("    declared_inputs:  embeddings float16 (1, 64, 1, 96); full_mask"), "{out}");
    assert!(
        out.contains("    declared_outputs: logits float16 (1, 1, 1, 32); cls float16 (1, 64, 1, 1)"),
        "{out}"
    );
}

/// Every way a copy of the ANE fixture is broken, and the words that must name it.
#[test]
fn tampered_ane_copies_are_refused_naming_the_input_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str, edit: &dyn Fn(&Path), rehash: bool| {
        let root = copy_coreml_fixture("ane", &dir.path().join(name));
        edit(&root);
        if rehash {
            rehash_coreml_manifest(&root);
        }
        root
    };
    let cases: [(&str, PathBuf, &str); 5] = [
        (
            "renamed input",
            copy("renamed", &|r| patch_first(&r.join(SPEC), b"local_mask", b"windowmask"), true),
            "input `local_mask` is missing",
        ),
        (
            "wrong shape",
            // the packed dims of the first declared input: (1, 64, 1, 96) -> (1, 32, 1, 96)
            copy("shape", &|r| patch_first(&r.join(SPEC), &[1, 64, 1, 96], &[1, 32, 1, 96]), true),
            "input `embeddings` has shape (1, 32, 1, 96), expected (1, 64, 1, 96)",
        ),
        (
            "manifest length",
            copy(
                "length",
                &|r| {
                    let p = r.join("coreml_config.json");
                    let mut m: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                    m["shape"]["max_length"] = json!(64);
                    std::fs::write(&p, m.to_string()).unwrap();
                },
                false,
            ),
            "shape.max_length 64",
        ),
        (
            "changed weights",
            copy("weights", &|r| patch_first(&r.join(WEIGHTS), &[0, 0], &[1, 1]), false),
            "Bundle file does not match its manifest: model.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
        ),
        (
            "damaged description",
            copy(
                "damaged",
                &|r| {
                    let p = r.join(SPEC);
                    let bytes = std::fs::read(&p).unwrap();
                    std::fs::write(&p, &bytes[..200]).unwrap();
                },
                true,
            ),
            "cannot read the model description at Model",
        ),
    ];
    for (what, root, needle) in &cases {
        let (o, report) = convert_check(dir.path(), &format!("cc-{}", what.replace(' ', "-")), root);
        assert_exit_2(&o, needle);
        assert!(report.is_none(), "{what}: a refused bundle writes no report");
        let o = laya_bench(
            dir.path(),
            &[
                "predict",
                "--model",
                root.to_str().unwrap(),
                "--backend",
                &format!("coreml:{}", root.display()),
                "--state",
                "x",
                "--questions",
                r#"{"q": {"type": "noul", "instructions": "Is it?"}}"#,
            ],
        );
        assert_exit_2(&o, needle);
    }
    // the renamed input also says which package file and which fields it was checked against
    let (o, _) = convert_check(dir.path(), "again", &cases[0].1);
    let t = text(&o);
    assert!(
        t.contains("model.mlmodel: Package signature mismatch")
            && t.contains("encoder/config.json hidden_size 64"),
        "{t}"
    );
    // doctor reports the refusal (and exits 0: it reports, it does not judge)
    let o = laya_bench(
        dir.path(),
        &["doctor", "--json", "--backend", &format!("coreml:{}", cases[1].1.display())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["loads"][0]["loaded"], false);
    assert!(doc["loads"][0]["detail"].as_str().unwrap().contains(cases[1].2), "{}", doc["loads"][0]);
    assert!(doc["loads"][0]["declared_inputs"].is_null());
}

#[test]
fn an_ordinary_copy_whose_manifest_disagrees_with_its_package_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_coreml_fixture("ordinary", &dir.path().join("lengths"));
    let p = root.join("coreml_config.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    m["shape"]["lengths"] = json!([16, 32, 48, 64, 80, 96, 128]);
    std::fs::write(&p, m.to_string()).unwrap();
    let (o, _) = convert_check(dir.path(), "lengths", &root);
    assert_exit_2(
        &o,
        "coreml_config.json shape.lengths [16, 32, 48, 64, 80, 96, 128] disagrees with input `input_ids`",
    );

    let root = copy_coreml_fixture("ordinary", &dir.path().join("renamed"));
    patch_first(&root.join(SPEC), b"marker_mask", b"marker_musk");
    rehash_coreml_manifest(&root);
    let (o, _) = convert_check(dir.path(), "renamed", &root);
    assert_exit_2(&o, "input `marker_mask` is missing");
}
