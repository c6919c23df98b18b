//! `laya-bench verify` as a user runs it, on goldens in laya-apple 1.7.0's parity format made
//! here from `builtin:tiny` and from a checkpoint made in the test (the portable FP32 engine
//! plays the reference): the same weights pass every case; a perturbed weight fails exactly the
//! cases it touches; every kind of bad input exits 2 naming the case and field.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use laya_bench::commands::common::{build_backend, load_bundle};
use laya_bench::laya::bundle::sha256_hex;
use laya_bench::laya::host::Host;
use laya_bench::verify::goldens::{generate, CaseRequest};

use crate::common::{laya_bench, stderr, stdout};

fn requests() -> Vec<CaseRequest> {
    let noul = json!({"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}});
    let choice = json!({"team": {"type": "choice", "instructions": "Which team should own this ticket?",
        "criteria": {"billing": "charges, invoices, refunds", "technical": "errors, outages", "other": "anything else"}}});
    let score = json!({"urgency": {"type": "score", "instructions": "How urgent is this ticket?",
        "criteria": ["can wait", "should be handled today", "blocking, handle now"]}});
    let mut mixed = noul.as_object().unwrap().clone();
    mixed.extend(choice.as_object().unwrap().clone());
    mixed.extend(score.as_object().unwrap().clone());
    let case = |name: &str, state: Value, questions: &Value| CaseRequest {
        name: name.into(),
        state,
        questions: questions.clone(),
    };
    vec![
        case("noul-text", json!("I was charged twice, please refund one."), &noul),
        case("choice-dict", json!({"message": "The app crashes on login since the update."}), &choice),
        case("score-only", json!("Nothing works and my shop is closed."), &score),
        case("mixed", json!("Refund the duplicate invoice 5521, it is urgent."), &Value::Object(mixed)),
        case(
            "conversation",
            json!([{"role": "user", "content": "Hi"}, {"role": "agent", "content": "Hello, how can I help?"}]),
            &noul,
        ),
        case("empty-state", json!(""), &choice),
    ]
}

/// Goldens in the parity format from a model spec through the portable FP32 engine.
fn make_goldens(model: &str, path: &Path) -> Value {
    let cx = laya_bench::backend::Context::unset();
    let bundle = load_bundle(model, &cx.hub).map_err(|f| f.error).unwrap();
    let mut backend = build_backend("portable:f32", &bundle, &cx).map_err(|f| f.error).unwrap();
    let host = Host::new(&bundle.tokenizer, &bundle.agent, backend.info().shapes.clone());
    let sha = match &bundle.weights {
        laya_bench::laya::bundle::Weights::Static(b) => sha256_hex(b),
        laya_bench::laya::bundle::Weights::Safetensors(b) => sha256_hex(b),
        _ => unreachable!("a checkpoint with weights"),
    };
    let g = generate(
        &host,
        backend.as_mut(),
        "tiny",
        "laya-bench portable:f32 (test oracle)",
        Some(&sha),
        &requests(),
    )
    .unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(&g).unwrap()).unwrap();
    // To look at or reuse what the tests generate: LAYA_BENCH_KEEP_GOLDENS=DIR keeps a copy.
    if let Some(keep) = std::env::var_os("LAYA_BENCH_KEEP_GOLDENS") {
        let name = format!("{}.json", model.replace(['/', ':'], "_"));
        std::fs::write(Path::new(&keep).join(name), serde_json::to_vec_pretty(&g).unwrap()).unwrap();
    }
    g
}

fn verify(dir: &Path, model: &str, goldens: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["verify", "--model", model, "--goldens", goldens.to_str().unwrap()];
    args.extend_from_slice(extra);
    laya_bench(dir, &args)
}

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn assert_exit(o: &std::process::Output, code: i32, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stdout: {}\nstderr: {e}", stdout(o));
    assert!(e.contains(needle), "stderr lacks {needle:?}:\n{e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn goldens_of_the_builtin_model_pass_on_every_backend_asked() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("tiny.json");
    make_goldens("builtin:tiny", &g);
    let o = verify(
        dir.path(),
        "builtin:tiny",
        &g,
        &["--backend", "portable:f32", "--backend", "portable:f16", "--output", "r.json"],
    );
    assert_exit(&o, 0, "");
    let out = stdout(&o);
    assert!(
        out.contains("backend portable:f32 (f32): logits |Δ| ≤ 1e-3 + 1e-4·|ref|, answers |Δ| ≤ 1e-4"),
        "{out}"
    );
    assert!(out.contains("6/6 cases passed"), "{out}");
    let r = report(&dir.path().join("r.json"));
    assert_eq!((r["schema_version"].clone(), r["passed"].clone()), (json!(1), json!(true)));
    assert_eq!((r["complete"].clone(), r["incomplete_reason"].clone()), (json!(true), Value::Null));
    assert_eq!(r["model"]["weights_match_goldens"], json!(true));
    assert_eq!(r["goldens"]["rows"], json!(8));
    let f32 = &r["backends"][0];
    assert_eq!((f32["cases_passed"].clone(), f32["cases_failed"].clone()), (json!(6), json!(0)));
    for c in f32["cases"].as_array().unwrap() {
        // The same engine on the same rows: equal to the bit.
        assert_eq!(c["logit_max_abs"], json!(0.0), "{c}");
        assert_eq!(c["action_logit_max_abs"], json!(0.0), "{c}");
        assert_eq!(c["tokens_equal"], json!(true));
    }
    assert_eq!(r["backends"][1]["tolerance"]["answer_tol"], json!(0.02));
    // The report refuses to replace itself.
    let o = verify(dir.path(), "builtin:tiny", &g, &["--output", "r.json"]);
    assert_exit(&o, 2, "exists");
}

#[test]
fn output_dash_writes_the_report_alone_on_stdout_and_the_table_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("tiny.json");
    make_goldens("builtin:tiny", &g);
    let o = verify(dir.path(), "builtin:tiny", &g, &["--output", "-"]);
    assert_exit(&o, 0, "6/6 cases passed");
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((r["kind"].clone(), r["passed"].clone()), (json!("laya-bench-verify"), json!(true)));
    assert_eq!(r["backends"][0]["cases_passed"], json!(6));
    assert!(!stderr(&o).contains("report: "), "{}", stderr(&o));
    assert!(!dir.path().join("-").exists());
}

/// Add `delta × (k mod 7 − 3)` to element k of row `row` of `type_emb.weight` (F32 [3, D]) of a
/// checkpoint folder, in place (not a constant shift, which the head's LayerNorms would cancel).
fn perturb_type_embedding(ckpt: &Path, row: usize, delta: f32) {
    let path = ckpt.join("model.safetensors");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let t = &header["type_emb.weight"];
    assert_eq!(t["dtype"], json!("F32"));
    let d = t["shape"][1].as_u64().unwrap() as usize;
    let start = 8 + n + t["data_offsets"][0].as_u64().unwrap() as usize + row * d * 4;
    for k in 0..d {
        let at = start + 4 * k;
        let v = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) + delta * ((k % 7) as f32 - 3.0);
        bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_perturbed_weight_fails_exactly_the_cases_it_touches() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt: PathBuf = crate::common::copy_tiny_checkpoint(&dir.path().join("ckpt"));
    let g = dir.path().join("ckpt.json");
    make_goldens(ckpt.to_str().unwrap(), &g);
    let o = verify(dir.path(), ckpt.to_str().unwrap(), &g, &[]);
    assert_exit(&o, 0, "");
    // Row 1 of the type embedding is added to every token of score rows only.
    perturb_type_embedding(&ckpt, 1, 0.5);
    let o = verify(dir.path(), ckpt.to_str().unwrap(), &g, &[]);
    assert_exit(&o, 2, "the goldens were made from weights with sha256");
    assert!(stderr(&o).contains("--any-weights"), "{}", stderr(&o));
    let o = verify(dir.path(), ckpt.to_str().unwrap(), &g, &["--any-weights", "--output", "r.json"]);
    assert_exit(&o, 1, "2 case(s) failed");
    let r = report(&dir.path().join("r.json"));
    assert_eq!(r["model"]["weights_match_goldens"], json!(false));
    let cases = r["backends"][0]["cases"].as_array().unwrap();
    let failed: Vec<&str> =
        cases.iter().filter(|c| c["passed"] == json!(false)).map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(failed, ["score-only", "mixed"]);
    for c in cases {
        let touched = failed.contains(&c["case"].as_str().unwrap());
        assert_eq!(c["logit_max_abs"].as_f64().unwrap() > 1e-3, touched, "{c}");
        // The prompt and the decoder do not depend on weights.
        assert_eq!((c["tokens_equal"].clone(), c["decode_equal"].clone()), (json!(true), json!(true)), "{c}");
    }
    assert!(stdout(&o).contains("FAIL"), "{}", stdout(&o));
}

fn edited(g: &Value, edit: impl Fn(&mut Value)) -> Value {
    let mut g = g.clone();
    edit(&mut g);
    g
}

#[test]
fn bad_goldens_exit_2_naming_the_case_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.json");
    let g = make_goldens("builtin:tiny", &path);
    let vocab = 1400u64;
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|g| g["cases"][0]["questions"]["refund"]["type"] = json!("bogus")), "case `noul-text`: questions: the host contract rejects it: question 'refund': unknown type 'bogus'"),
        (Box::new(move |g| g["cases"][2]["items"][0]["ids"][3] = json!(vocab + 5)), "case `score-only`: items[0].ids[3]: token id 1405 is outside the checkpoint's vocabulary"),
        (Box::new(|g| g["cases"][1]["action_logits"][0] = json!([0.1, 0.2, 0.3])), "case `choice-dict`: action_logits[0]: 3 actions, the checkpoint has 2"),
        (Box::new(|g| g["cases"][3]["items"][1]["qtype"] = json!(2)), "case `mixed`: items[1].qtype: 2 but question `team` is"),
        (Box::new(|g| g["cases"][4]["logits"] = json!([])), "case `conversation`: logits: 0 rows for 1 items"),
    ];
    for (i, (edit, needle)) in cases.into_iter().enumerate() {
        let p = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&p, serde_json::to_vec(&edited(&g, edit)).unwrap()).unwrap();
        let o = verify(dir.path(), "builtin:tiny", &p, &[]);
        assert_exit(&o, 2, needle);
    }
    // Goldens that name a published checkpoint and carry no weight hash are checked against
    // the pinned one: builtin:tiny is another model.
    let other = edited(&g, |g| {
        g["model"] = json!("laya-multilingual");
        g.as_object_mut().unwrap().remove("source_weights_sha256");
    });
    let p = dir.path().join("other-model.json");
    std::fs::write(&p, serde_json::to_vec(&other).unwrap()).unwrap();
    let o = verify(dir.path(), "builtin:tiny", &p, &[]);
    assert_exit(
        &o,
        2,
        "their `model` is `laya-multilingual`, whose published model.safetensors this tool pins",
    );
    assert!(stderr(&o).contains("--model hub:laya-multilingual pins it"), "{}", stderr(&o));
    let o = verify(dir.path(), "builtin:tiny", &p, &["--any-weights", "--output", "any.json"]);
    assert_exit(&o, 0, "");
    assert_eq!(report(&dir.path().join("any.json"))["model"]["weights_match_goldens"], json!(false));
    // Every backend is read before any case runs: an unknown one after a good one.
    let o = verify(dir.path(), "builtin:tiny", &path, &["--backend", "portable:f16", "--backend", "foo"]);
    assert_exit(&o, 2, "unknown backend `foo`");
    assert!(!stdout(&o).contains("backend portable:f16"), "{}", stdout(&o));
    // Another format altogether: the forward goldens of this repository.
    let o = verify(dir.path(), "builtin:tiny", &crate::common::fixture("fixtures/goldens/forward.json"), &[]);
    assert_exit(&o, 2, "not a parity goldens file: no `model`");
    let o = verify(dir.path(), "builtin:tiny", &dir.path().join("absent.json"), &[]);
    assert_exit(&o, 2, "--goldens: cannot read");
    let o = verify(dir.path(), "builtin:tiny", &path, &["--logit-atol", "-1"]);
    assert_exit(&o, 2, "--logit-atol -1 must be a finite number");
    // A report that could not be saved is refused before any case runs, not after.
    // Action logits whose references are all zero: no relative difference (not 1e308).
    let zeros = edited(&g, |g| {
        for c in g["cases"].as_array_mut().unwrap() {
            for row in c["action_logits"].as_array_mut().unwrap() {
                *row = json!(vec![0.0; row.as_array().unwrap().len()]);
            }
        }
    });
    let p = dir.path().join("zeros.json");
    std::fs::write(&p, serde_json::to_vec(&zeros).unwrap()).unwrap();
    let o = verify(dir.path(), "builtin:tiny", &p, &["--output", "zeros-report.json"]);
    assert_exit(&o, 1, "case(s) failed");
    for c in report(&dir.path().join("zeros-report.json"))["backends"][0]["cases"].as_array().unwrap() {
        assert_eq!(c["action_logit_max_rel"], Value::Null, "{c}");
        assert!(c["action_logit_max_abs"].as_f64().unwrap() > 0.0, "{c}");
    }
    let o = verify(dir.path(), "builtin:tiny", &path, &["--output", "absent/v.json"]);
    assert_exit(&o, 2, "the folder absent does not exist; create it or choose another path");
    assert!(!stdout(&o).contains("backend portable:f32"), "{}", stdout(&o));
}

/// SIGINT between cases: exit 1, the report keeps the cases that ran and gives no verdict.
#[test]
fn an_interrupted_verify_reports_the_cases_that_ran_and_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("tiny.json");
    make_goldens("builtin:tiny", &g);
    // A scripted backend at 300 ms a call: about 0.6 s a case, 3.6 s for the 6.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir.path())
        .args(["verify", "--goldens", g.to_str().unwrap(), "--backend", "mock:ok:delay-us=300000"])
        .args(["--backend", "portable:f32", "--output", "r.json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let sent = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    assert_exit(
        &o,
        1,
        "verify INCOMPLETE: interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP) during backend mock:ok",
    );
    let r = report(&dir.path().join("r.json"));
    assert_eq!((r["complete"].clone(), r["passed"].clone()), (json!(false), json!(false)));
    let ran = r["backends"][0]["cases"].as_array().unwrap().len();
    assert!(ran < 6, "{r}");
    assert!(r["incomplete_reason"].as_str().unwrap().ends_with(&format!("after {ran} of 6 cases")), "{r}");
    assert_eq!(r["backends"].as_array().unwrap().len(), 1, "the second backend never ran");
}

#[test]
fn a_prompt_that_differs_fails_its_case_and_the_forward_still_runs_the_goldens_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.json");
    let g = make_goldens("builtin:tiny", &path);
    // Replace one state token of the first case's row with another id, as a prompt drift would.
    let g = edited(&g, |g| {
        let ids = g["cases"][0]["items"][0]["ids"].as_array_mut().unwrap();
        let at = ids.len() - 2;
        ids[at] = json!(if ids[at] == json!(100) { 101 } else { 100 });
    });
    std::fs::write(&path, serde_json::to_vec(&g).unwrap()).unwrap();
    let o = verify(dir.path(), "builtin:tiny", &path, &["--output", "r.json"]);
    assert_exit(&o, 1, "1 case(s) failed");
    assert!(stdout(&o).contains("DIFFER"), "{}", stdout(&o));
    let r = report(&dir.path().join("r.json"));
    let p = &r["prompt"][0];
    assert_eq!((p["rows_equal"].clone(), p["differences"].as_array().unwrap().len()), (json!(0), 1));
    assert!(p["differences"][0].as_str().unwrap().starts_with("refund: ids differ from token"), "{p}");
    let c = &r["backends"][0]["cases"][0];
    assert_eq!((c["tokens_equal"].clone(), c["passed"].clone()), (json!(false), json!(false)));
    // The goldens' own (edited) ids went through the model: their logits moved.
    assert!(c["logit_max_abs"].as_f64().unwrap() > 0.0, "{c}");
    // Our own rows still give the goldens' answers.
    assert_eq!(c["answers"]["differences"], json!([]));
}
