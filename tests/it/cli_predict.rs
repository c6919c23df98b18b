//! `laya-bench predict` as a user runs it: good requests print the reference's JSON; every kind
//! of bad input exits 2 with one message that names the file, field or question.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny");

fn laya_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench")).args(args).output().expect("run laya-bench")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
    assert!(!err.contains("panicked"), "panic: {err}");
}

/// A copy of the tiny checkpoint to break.
fn copy_fixture(dir: &Path) -> PathBuf {
    crate::common::copy_tiny_checkpoint(&dir.join("ckpt"))
}

const NOUL: &str = r#"{"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}"#;

fn predict_dir(dir: &Path) -> Output {
    laya_bench(&[
        "predict",
        "--model",
        dir.to_str().unwrap(),
        "--state",
        "I want my money back.",
        "--questions",
        NOUL,
    ])
}

/// Rewrite the checkpoint's safetensors through `edit` (name, shape, f32 data).
fn rewrite_weights(root: &Path, edit: impl Fn(&mut Vec<(String, Vec<usize>, Vec<u8>)>)) {
    let path = root.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> =
        st.tensors().into_iter().map(|(n, t)| (n, t.shape().to_vec(), t.data().to_vec())).collect();
    edit(&mut tensors);
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, s, d)| {
            (n.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), d).unwrap())
        })
        .collect();
    let out = safetensors::serialize(views, None).unwrap();
    std::fs::write(path, out).unwrap();
}

#[test]
fn predicts_with_the_builtin_model_in_the_reference_format() {
    let o =
        laya_bench(&["predict", "--state", "I was charged twice, please refund one.", "--questions", NOUL]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("{\n  \"model\": \"laya-rl-agent\",\n  \"answers\": {\n"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let noul = v["answers"]["refund"]["noul"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&noul));
    assert_eq!(v["usage"]["output_tokens"], 0);
}

#[test]
fn request_files_and_explain_show_rows_and_shapes() {
    let req = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/requests/support.json");
    let o = laya_bench(&["predict", "--request", req, "--json", "--explain"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<Value> =
        String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    let rows = lines[0]["explain"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["tokens"][0], "[CLS]");
    assert_eq!(rows[0]["qtype"], "noul");
    assert!(rows[0]["shape"]["length"].as_u64().unwrap().is_multiple_of(16));
    assert_eq!(lines[1]["result"]["answers"]["topic"]["abstention_threshold"], 0.6);
}

#[test]
fn checkpoint_folder_gives_the_same_answer_as_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixture(dir.path());
    let a = predict_dir(&root);
    let b = laya_bench(&["predict", "--state", "I want my money back.", "--questions", NOUL]);
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn unknown_model_and_backend_specs_exit_2() {
    assert_exit(
        &laya_bench(&["predict", "--model", "builtin:huge", "--state", "x", "--questions", NOUL]),
        2,
        "builtin:huge",
    );
    assert_exit(
        &laya_bench(&["predict", "--model", "/no/such/dir", "--state", "x", "--questions", NOUL]),
        2,
        "/no/such/dir",
    );
    assert_exit(
        &laya_bench(&["predict", "--backend", "gpu:fast", "--state", "x", "--questions", NOUL]),
        2,
        "unknown backend `gpu:fast`",
    );
    assert_exit(
        &laya_bench(&["predict", "--backend", "coreml:x", "--state", "x", "--questions", NOUL]),
        2,
        "coreml:x: the folder x does not exist, so it is not a Core ML bundle",
    );
}

#[test]
fn truncated_safetensors_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixture(dir.path());
    let path = root.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_exit(&predict_dir(&root), 2, "model.safetensors");
    std::fs::write(&path, b"not a safetensors file at all").unwrap();
    assert_exit(&predict_dir(&root), 2, "model.safetensors");
}

#[test]
fn missing_or_misshaped_tensor_exits_2_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixture(dir.path());
    rewrite_weights(&root, |t| t.retain(|(n, _, _)| n != "scorer.1.weight"));
    assert_exit(&predict_dir(&root), 2, "scorer.1.weight");
    let root2 = copy_fixture(&dir.path().join("b"));
    rewrite_weights(&root2, |t| {
        for (n, shape, data) in t.iter_mut() {
            if n == "type_emb.weight" {
                shape[0] = 4;
                data.extend(std::iter::repeat_n(0u8, shape[1] * 4));
            }
        }
    });
    assert_exit(&predict_dir(&root2), 2, "type_emb.weight");
    let root3 = copy_fixture(&dir.path().join("c"));
    rewrite_weights(&root3, |t| t.push(("extra.weight".into(), vec![2], vec![0; 8])));
    assert_exit(&predict_dir(&root3), 2, "extra.weight");
}

#[test]
fn invalid_configs_exit_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixture(dir.path());
    let enc = root.join("encoder/config.json");
    let text = std::fs::read_to_string(&enc).unwrap().replace("\"gelu\"", "\"relu\"");
    std::fs::write(&enc, text).unwrap();
    assert_exit(&predict_dir(&root), 2, "hidden_activation");
    let root = copy_fixture(&dir.path().join("b"));
    let agent = root.join("rl_agent_config.json");
    let text = std::fs::read_to_string(&agent).unwrap().replace("\"head_layers\": 2,", "");
    std::fs::write(&agent, text).unwrap();
    assert_exit(&predict_dir(&root), 2, "head_layers");
    let root = copy_fixture(&dir.path().join("c"));
    std::fs::write(root.join("tokenizer/tokenizer_config.json"), r#"{"cls_token": "[CLS]"}"#).unwrap();
    assert_exit(&predict_dir(&root), 2, "Tokenizer is missing a valid sep_token");
}

#[test]
fn requests_that_do_not_fit_or_are_invalid_exit_2() {
    let many: Vec<String> = (0..12).map(|i| format!("option number {i} with a long description")).collect();
    let q = serde_json::json!({"pick": {"type": "choice", "instructions": "Pick one", "criteria": many}})
        .to_string();
    assert_exit(
        &laya_bench(&["predict", "--state", "x", "--questions", &q, "--max-len", "40"]),
        2,
        "question 'pick': only",
    );
    assert_exit(
        &laya_bench(&[
            "predict",
            "--state",
            "x",
            "--questions",
            r#"{"q": {"type": "poll", "instructions": "x"}}"#,
        ]),
        2,
        "question 'q': unknown type 'poll'",
    );
    assert_exit(&laya_bench(&["predict", "--state", "x", "--questions", "{not json"]), 2, "--questions");
    assert_exit(
        &laya_bench(&["predict", "--state", "x", "--questions", NOUL, "--min-confidence", "2"]),
        2,
        "min_confidence must be a float in [0.0, 1.0], got 2",
    );
    assert_exit(&laya_bench(&["predict", "--bogus"]), 2, "--bogus");
    // A budget above the model's max_len is the reference's to allow; when the row is that long,
    // the failure says where the budget came from.
    let long = "refund ".repeat(700);
    assert_exit(
        &laya_bench(&["predict", "--state", &long, "--questions", NOUL, "--max-len", "2000"]),
        2,
        "(--max-len 2000 is above the model's max_len 512; pass at most 512)",
    );
    // A request file's error names the file and, in a list, the request.
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.json");
    let good = serde_json::json!({"state": "x", "questions": serde_json::from_str::<Value>(NOUL).unwrap()});
    let bad = serde_json::json!({"state": "x", "questions": {"q": {"type": "poll", "instructions": "x"}}});
    std::fs::write(&list, serde_json::to_string(&serde_json::json!([good, bad])).unwrap()).unwrap();
    assert_exit(
        &laya_bench(&["predict", "--request", list.to_str().unwrap()]),
        2,
        &format!("--request {}: request 1 failed: question 'q': unknown type 'poll'", list.display()),
    );
    let one = dir.path().join("one.json");
    std::fs::write(&one, serde_json::to_string(&bad).unwrap()).unwrap();
    assert_exit(
        &laya_bench(&["predict", "--request", one.to_str().unwrap()]),
        2,
        &format!("--request {}: the request failed: question 'q'", one.display()),
    );
}

/// A fabricated ANE bundle: manifest, the committed fixture's package, host weights from the
/// tiny checkpoint.
fn ane_bundle(dir: &Path, edit: impl Fn(&mut Value)) -> PathBuf {
    let root = copy_fixture(dir);
    std::fs::remove_file(root.join("model.safetensors")).unwrap();
    crate::common::copy_tree(
        &crate::common::fixture("fixtures/coreml/ane/model.mlpackage"),
        &root.join("model.mlpackage"),
    );
    let bytes = std::fs::read(Path::new(FIXTURE).join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let keep = laya_bench::laya::bundle::ANE_HOST_TENSORS;
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> =
        keep.iter().map(|n| (n.to_string(), st.tensor(n).unwrap())).collect();
    std::fs::write(root.join("host_weights.safetensors"), safetensors::serialize(views, None).unwrap())
        .unwrap();
    let mut files = serde_json::Map::new();
    for rel in [
        "host_weights.safetensors",
        "model.mlpackage/Manifest.json",
        "model.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
        "rl_agent_config.json",
    ] {
        let sha = laya_bench::laya::bundle::sha256_hex(&std::fs::read(root.join(rel)).unwrap());
        files.insert(rel.into(), serde_json::json!({"sha256": sha}));
    }
    let mut manifest = serde_json::json!({
        "format": "laya-coreml-ane", "format_version": 1, "precision": "float16",
        "shape": {"batch_size": 1, "max_length": 96, "max_options": 32, "flexible": false},
        "files": files,
    });
    edit(&mut manifest);
    std::fs::write(root.join("coreml_config.json"), manifest.to_string()).unwrap();
    root
}

#[test]
fn ane_bundles_are_verified_and_explain_where_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let good = ane_bundle(&dir.path().join("good"), |_| {});
    assert_exit(&predict_dir(&good), 2, "runs only through Core ML on macOS");
    let tampered = ane_bundle(&dir.path().join("tampered"), |_| {});
    std::fs::write(tampered.join("model.mlpackage/Data/com.apple.CoreML/weights/weight.bin"), b"\x00\x02")
        .unwrap();
    assert_exit(
        &predict_dir(&tampered),
        2,
        "Bundle file does not match its manifest: model.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
    );
    let escaping = ane_bundle(&dir.path().join("escaping"), |m| {
        m["files"]["../outside"] = serde_json::json!({"sha256": "00"});
    });
    assert_exit(
        &predict_dir(&escaping),
        2,
        "Bundle file names must be relative paths inside the model directory",
    );
    let batched = ane_bundle(&dir.path().join("batched"), |m| m["shape"]["batch_size"] = 2.into());
    assert_exit(&predict_dir(&batched), 2, "ANE runtime requires a fixed B1/K32 bundle");
    let version = ane_bundle(&dir.path().join("version"), |m| m["format_version"] = 2.into());
    assert_exit(&predict_dir(&version), 2, "Unsupported ANE bundle format");
}

#[test]
fn coreml_specs_verify_the_bundle_before_saying_they_need_macos() {
    let dir = tempfile::tempdir().unwrap();
    let good = ane_bundle(&dir.path().join("good"), |_| {});
    let run = |spec: String, model: &Path| {
        laya_bench(&[
            "predict",
            "--model",
            model.to_str().unwrap(),
            "--backend",
            &spec,
            "--state",
            "x",
            "--questions",
            NOUL,
        ])
    };
    let g = good.display();
    #[cfg(not(target_os = "macos"))]
    for spec in [format!("coreml:{g}"), format!("coreml:{g}:cpu_ne"), format!("coreml:{g}:cpu")] {
        assert_exit(&run(spec, &good), 2, "needs macOS with Core ML");
    }
    assert_exit(&run(format!("coreml:{g}:gpu"), &good), 2, "use one of cpu_ne, cpu_gpu, all, cpu");
    let tampered = ane_bundle(&dir.path().join("tampered"), |_| {});
    std::fs::write(tampered.join("host_weights.safetensors"), b"\x00").unwrap();
    assert_exit(
        &run(format!("coreml:{}", tampered.display()), Path::new(FIXTURE)),
        2,
        "Bundle file does not match its manifest: host_weights.safetensors",
    );
    assert_exit(&run(format!("coreml:{FIXTURE}"), Path::new(FIXTURE)), 2, "not a Core ML bundle");
    #[cfg(not(target_os = "macos"))]
    {
        let ordinary = crate::common::fixture("fixtures/coreml/ordinary");
        assert_exit(
            &run(format!("coreml:{}:all", ordinary.display()), &ordinary),
            2,
            "needs macOS with Core ML",
        );
    }
    let version = ane_bundle(&dir.path().join("version"), |m| m["format_version"] = 7.into());
    assert_exit(&run(format!("coreml:{}", version.display()), &good), 2, "Unsupported ANE bundle format");
}
