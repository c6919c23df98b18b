//! Goldens from laya-coreml 0.5.1's own ANE host code (`scripts/make_ane_goldens.py`,
//! `scripts/make_host_goldens.py`) and hand-checked cases for the portable Core ML parts.

use serde_json::Value;

use super::decode::{ArrayType, RawArray};
use super::layout::{AneShape, MASK_HIDDEN, MASK_OPEN, ONE};
use super::*;
use crate::backend::{ForwardOutput, PreparedBatch};
use crate::laya::bundle::{builtin, sha256_hex};
use crate::settings::Settings;

fn golden(name: &str) -> Value {
    let path = format!("{}/fixtures/goldens/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn fixture_weights() -> HostWeights {
    HostWeights::from_safetensors(builtin::MODEL, "fixtures/tiny/model.safetensors").unwrap()
}

fn ints(v: &Value) -> Vec<i32> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<i32>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            x => out.push(x.as_f64().unwrap() as i32),
        }
    }
    walk(v, &mut out);
    out
}

fn batch_from(b: &Value) -> PreparedBatch {
    let field = |k: &str| ints(&b[k]["data"]).into_iter().collect::<Vec<_>>();
    let plain = |k: &str| if b[k].get("data").is_some() { field(k) } else { ints(&b[k]) };
    let input_ids = plain("input_ids");
    let marker_pos = plain("marker_pos");
    PreparedBatch {
        batch: 1,
        length: 96,
        max_options: 32,
        attention_mask: plain("attention_mask"),
        marker_mask: plain("marker_mask"),
        qtype: plain("qtype"),
        position_ids: b.get("position_ids").map(|_| plain("position_ids")),
        option_ids: None,
        input_ids,
        marker_pos,
    }
}

fn bits_sha(v: &[u16]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    sha256_hex(&bytes)
}

fn host() -> AneHost {
    AneHost::new(fixture_weights(), 96, 16)
}

#[test]
fn ane_inputs_are_bit_exact_with_the_reference() {
    let doc = golden("ane.json");
    assert_eq!(doc["schema"], "laya-bench-ane-goldens/1");
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    let mut host = host();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let batch = batch_from(&case["batch"]);
        let inputs = host.prepare(&batch).unwrap().clone();
        for (input, shape, data) in inputs.tensors() {
            let want = &case["inputs"][input];
            let want_shape: Vec<usize> =
                want["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
            assert_eq!(want_shape, shape, "{name} {input}");
            assert_eq!(bits_sha(data), want["sha256"].as_str().unwrap(), "{name} {input} FP16 bytes differ");
        }
        let bits: Vec<u16> = case["inputs"]["type_vectors"]["bits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u16)
            .collect();
        assert_eq!(inputs.type_vectors, bits, "{name}");
        let ones: Vec<(usize, usize)> =
            (0..96 * 32).filter(|&i| inputs.marker_map[i] == ONE).map(|i| (i / 32, i % 32)).collect();
        let want_ones: Vec<(usize, usize)> = case["inputs"]["marker_map"]["ones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize))
            .collect();
        assert_eq!(ones, want_ones, "{name}");
        for m in ["full_mask", "local_mask"] {
            let buf = if m == "full_mask" { &inputs.full_mask } else { &inputs.local_mask };
            let open = buf.iter().filter(|&&x| x == MASK_OPEN).count() as u64;
            assert_eq!(open, case["inputs"][m]["open"].as_u64().unwrap(), "{name} {m}");
            assert!(buf.iter().all(|&x| x == MASK_OPEN || x == MASK_HIDDEN));
        }
    }
}

fn raw_bytes(values: &[f32], dtype: &str) -> Vec<u8> {
    match dtype {
        "float16" => values.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
        _ => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

#[test]
fn ane_forward_decoding_matches_the_reference() {
    let doc = golden("ane.json");
    let mut host = host();
    let mut out = ForwardOutput::default();
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let batch = batch_from(&case["batch"]);
        host.prepare(&batch).unwrap();
        let fakes = case["fake_outputs"].as_array().unwrap();
        let owned: Vec<(String, ArrayType, Vec<usize>, Vec<u8>)> = fakes
            .iter()
            .map(|f| {
                let dtype = f["dtype"].as_str().unwrap();
                let values: Vec<f32> =
                    f["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
                let shape: Vec<usize> =
                    f["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
                let t = if dtype == "float16" { ArrayType::Float16 } else { ArrayType::Float32 };
                (f["name"].as_str().unwrap().to_string(), t, shape, raw_bytes(&values, dtype))
            })
            .collect();
        let strides: Vec<Vec<usize>> = owned.iter().map(|o| contiguous_strides(&o.2)).collect();
        let raws: Vec<RawArray<'_>> = owned
            .iter()
            .zip(&strides)
            .map(|(o, s)| RawArray { name: &o.0, dtype: o.1, shape: &o.2, strides: s, bytes: &o.3 })
            .collect();
        host.finish(&batch, &raws, &mut out).unwrap();
        let want_logits: Vec<f32> = case["forward"]["logits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(out.logits, want_logits, "{name}: masked logits are exact");
        assert_eq!((out.batch, out.max_options, out.num_actions), (1, 32, 2));
        for (i, w) in case["forward"]["action_logits"].as_array().unwrap().iter().enumerate() {
            let w = w.as_f64().unwrap();
            let got = out.action_logits[i] as f64;
            assert!((got - w).abs() <= 1e-5 * w.abs().max(1.0), "{name} action {i}: {got} vs {w}");
        }
    }
}

#[test]
fn ane_input_checks_use_the_reference_messages() {
    let doc = golden("host.json");
    let mut host = AneHost::new(fixture_weights(), 96, 16);
    let mut checked = 0;
    for case in doc["ane_inputs"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        // PreparedBatch is int32 by construction: a float qtype cannot be expressed.
        if name == "ane-float-dtype" {
            continue;
        }
        let batch = batch_from(&case["batch"]);
        match (host.prepare(&batch), case.get("error")) {
            (Ok(inputs), None) => {
                let ones: Vec<Value> = (0..96 * 32)
                    .filter(|&i| inputs.marker_map[i] == ONE)
                    .map(|i| serde_json::json!([i / 32, i % 32]))
                    .collect();
                assert_eq!(Value::Array(ones), case["ok"]["marker_map_ones"], "{name}");
            }
            (Err(e), Some(want)) => assert_eq!(e.to_string(), want["message"].as_str().unwrap(), "{name}"),
            (got, want) => panic!("{name}: got {:?}, golden {want:?}", got.map(|_| ())),
        }
        checked += 1;
    }
    assert_eq!(checked, 9);
}

#[test]
fn masks_follow_the_key_query_indexing_by_hand() {
    // L = 6, window half 1, valid = [1, 1, 1, 1, 0, 0]
    let weights = fixture_weights();
    let shape = AneShape { length: 6, width: weights.width(), vocab: weights.vocab(), half_window: 1 };
    let mut inputs = layout::AneInputs::new(shape);
    let mut batch = PreparedBatch::default();
    batch.reset(1, 6, 32, 3, false);
    batch.attention_mask = vec![1, 1, 1, 1, 0, 0];
    batch.input_ids = vec![1, 10, 2, 4, 3, 3];
    batch.marker_pos[0] = 2;
    batch.marker_mask[0] = 1;
    batch.qtype[0] = 2;
    inputs.build(&batch, &weights).unwrap();
    let at = |m: &[u16], key: usize, query: usize| m[key * 6 + query] == MASK_OPEN;
    for q in 0..6 {
        for k in 0..6 {
            let valid_k = k < 4;
            assert_eq!(at(&inputs.full_mask, k, q), valid_k, "full k{k} q{q}");
            let local = valid_k && (q.abs_diff(k) <= 1 || q >= 4);
            assert_eq!(at(&inputs.local_mask, k, q), local, "local k{k} q{q}");
        }
    }
    // key 0 / query 2 is outside the window; key 0 / query 4 (padded query) sees every valid key
    assert!(!at(&inputs.local_mask, 0, 2) && at(&inputs.local_mask, 0, 4));
    // embeddings[0, c, 0, t] = E[ids[t], c]
    let d = weights.width();
    for (t, &id) in batch.input_ids.iter().enumerate() {
        for c in [0, d / 2, d - 1] {
            assert_eq!(inputs.embeddings[c * 6 + t], weights.embedding_row(id as usize)[c]);
        }
    }
    // padded slots select position 0; slot 0 selects position 2
    assert_eq!(inputs.marker_map[2 * 32], ONE);
    assert!((1..32).all(|j| inputs.marker_map[j] == ONE));
    assert_eq!(inputs.marker_map.iter().filter(|&&x| x == ONE).count(), 32);
    assert_eq!(inputs.type_vectors, weights.type_row(2));
}

#[test]
fn ane_tail_masks_slots_and_runs_the_action_head() {
    let weights = fixture_weights();
    let mut raw = [0.5f32; 32];
    raw[1] = 1.5;
    let mut mask = [0i32; 32];
    mask[0] = 1;
    mask[1] = 1;
    let cls = vec![0.25f32; weights.width()];
    let (mut scratch, mut out) = (Vec::new(), ForwardOutput::default());
    decode::finish_ane_row(&raw, &cls, &mask, &weights, &mut scratch, &mut out).unwrap();
    assert_eq!(&out.logits[..3], &[0.5, 1.5, -1e4]);
    assert!(out.logits[2..].iter().all(|&x| x == -1e4));
    let features = crate::model::tail::action_features(&out.logits, 2);
    let want = weights.action_head().logits(&cls, &features).unwrap();
    assert_eq!(out.action_logits, want);
    assert!(decode::finish_ane_row(&raw[..31], &cls, &mask, &weights, &mut scratch, &mut out).is_err());
}

#[test]
fn compute_units_and_specs_parse() {
    for (name, code) in [("cpu_ne", 3), ("cpu_gpu", 1), ("all", 2), ("cpu", 0)] {
        assert_eq!(ComputeUnits::parse(name).unwrap().code(), code);
    }
    let e = ComputeUnits::parse("gpu").unwrap_err().to_string();
    assert!(e.contains("`gpu`") && e.contains("cpu_ne, cpu_gpu, all, cpu"), "{e}");
    assert_eq!(CoreMlSpec::parse("/b/ane").unwrap(), CoreMlSpec { bundle: "/b/ane".into(), units: None });
    assert_eq!(
        CoreMlSpec::parse("/b/ane:cpu").unwrap(),
        CoreMlSpec { bundle: "/b/ane".into(), units: Some(ComputeUnits::Cpu) }
    );
    assert_eq!(
        CoreMlSpec::parse("dir:x:all").unwrap(),
        CoreMlSpec { bundle: "dir:x".into(), units: Some(ComputeUnits::All) }
    );
    assert_eq!(CoreMlSpec::parse("a:b/c").unwrap().bundle, PathBuf::from("a:b/c"));
    assert!(CoreMlSpec::parse("bundle:neural").unwrap_err().to_string().contains("cpu_ne, cpu_gpu"));
    assert!(CoreMlSpec::parse("").is_err());
    assert!(CoreMlSpec::parse(":cpu").is_err());
    assert_eq!(BundleFormat::Ane.default_units(), ComputeUnits::CpuNe);
    assert_eq!(BundleFormat::Ordinary.default_units(), ComputeUnits::All);
    assert_eq!(BundleFormat::from_manifest("laya-coreml-ane"), Some(BundleFormat::Ane));
    assert_eq!(BundleFormat::from_manifest("laya-apple-artifact"), None);
}

fn sig(name: &str, shape: &[usize], dtype: ArrayType) -> FeatureSig {
    FeatureSig { name: name.into(), shape: shape.to_vec(), dtype }
}

#[test]
fn ane_signature_mismatches_name_the_input_and_shape() {
    let shape = AneShape { length: 96, width: 64, vocab: 1400, half_window: 8 };
    let good: Vec<FeatureSig> =
        shape.input_shapes().iter().map(|(n, s)| sig(n, s, ArrayType::Float16)).collect();
    check_ane_signature(shape, &good).unwrap();
    let mut wrong = good.clone();
    wrong[0].shape = vec![1, 32, 1, 96];
    let e = check_ane_signature(shape, &wrong).unwrap_err().to_string();
    assert!(e.starts_with("Package signature mismatch: expected {'embeddings': (1, 64, 1, 96), 'full_mask': (1, 96, 1, 96), 'local_mask': (1, 96, 1, 96), 'type_vectors': (1, 64, 1, 1), 'marker_map': (1, 96, 1, 32)}, got {'embeddings': (1, 32, 1, 96),"), "{e}");
    assert!(e.contains("input `embeddings` has shape (1, 32, 1, 96), expected (1, 64, 1, 96)"), "{e}");
    let missing: Vec<FeatureSig> = good[1..].to_vec();
    assert!(check_ane_signature(shape, &missing)
        .unwrap_err()
        .to_string()
        .contains("input `embeddings` is missing"));
    let mut extra = good.clone();
    extra.push(sig("position_ids", &[1, 96], ArrayType::Int32));
    assert!(check_ane_signature(shape, &extra)
        .unwrap_err()
        .to_string()
        .contains("`position_ids` is not part"));
    let mut ints = good;
    ints[4].dtype = ArrayType::Int32;
    assert!(check_ane_signature(shape, &ints).unwrap_err().to_string().contains("`marker_map` is int32"));
}

#[test]
fn ordinary_signature_and_shapes() {
    let manifest = serde_json::json!({"shape": {"batch_size": 1, "max_length": 512, "min_length": 16,
        "max_options": 32, "flexible": true, "mode": "enumerated", "lengths": [16, 32, 48, 64, 1024]}});
    let caps = ordinary_caps(&manifest, "coreml_config.json").unwrap();
    assert_eq!(caps.mode, ShapeMode::Enumerated(vec![16, 32, 48, 64]));
    assert_eq!((caps.batch_size, caps.max_length, caps.min_length, caps.max_options), (1, 512, 16, 32));
    let range =
        serde_json::json!({"shape": {"batch_size": 4, "max_length": 256, "flexible": true, "mode": "range"}});
    assert_eq!(ordinary_caps(&range, "m").unwrap().mode, ShapeMode::Range);
    let fixed = serde_json::json!({"shape": {"batch_size": 1, "max_length": 128, "flexible": false}});
    assert_eq!(ordinary_caps(&fixed, "m").unwrap().mode, ShapeMode::Fixed);
    let e =
        ordinary_caps(&serde_json::json!({"shape": {"max_length": 8}}), "m.json").unwrap_err().to_string();
    assert!(e.starts_with("m.json: shape.batch_size"), "{e}");

    let i32s = ArrayType::Int32;
    let inputs = vec![
        sig("input_ids", &[1, 16], i32s),
        sig("attention_mask", &[1, 16], i32s),
        sig("marker_pos", &[1, 32], i32s),
        sig("marker_mask", &[1, 32], i32s),
        sig("qtype", &[1], i32s),
    ];
    let outputs =
        vec![sig("logits", &[1, 32], ArrayType::Float32), sig("action_logits", &[1, 2], ArrayType::Float32)];
    check_ordinary_signature(&caps, false, &inputs, &outputs).unwrap();
    let e = check_ordinary_signature(&caps, true, &inputs, &outputs).unwrap_err().to_string();
    assert!(e.contains("input `position_ids` is missing"), "{e}");
    let mut bad = inputs.clone();
    bad[2].shape = vec![1, 16];
    let e = check_ordinary_signature(&caps, false, &bad, &outputs).unwrap_err().to_string();
    assert!(e.contains("input `marker_pos` has shape (1, 16), expected (1, 32)"), "{e}");
    let mut float = inputs.clone();
    float[4].dtype = ArrayType::Float32;
    assert!(check_ordinary_signature(&caps, false, &float, &outputs)
        .unwrap_err()
        .to_string()
        .contains("`qtype` is float32"));
    let e = check_ordinary_signature(&caps, false, &inputs, &outputs[..1]).unwrap_err().to_string();
    assert!(e.contains("output `action_logits` is missing"), "{e}");

    let fixed = |l: usize| ShapeCaps {
        batch_size: 1,
        max_length: l,
        min_length: l,
        max_options: 32,
        mode: ShapeMode::Fixed,
    };
    let run = ordinary_run_caps(&caps, Some(&fixed(48)));
    assert_eq!(
        (run.mode.clone(), run.max_length, run.min_length, run.batch_size),
        (ShapeMode::Fixed, 48, 48, 1)
    );
    assert_eq!(ordinary_run_caps(&caps, Some(&fixed(96))), caps, "96 is not an enumerated length");
    assert_eq!(ordinary_run_caps(&caps, None), caps);
    let range_caps = ordinary_caps(&range, "m").unwrap();
    assert_eq!(ordinary_run_caps(&range_caps, Some(&fixed(96))).max_length, 96);
    assert_eq!(ordinary_run_caps(&range_caps, Some(&fixed(100))), range_caps, "not a multiple of 16");
    assert_eq!(ordinary_run_caps(&range_caps, Some(&fixed(96))).batch_size, 4, "the graph's batch size");

    let mut batch = PreparedBatch::default();
    batch.reset(1, 16, 32, 0, true);
    let names: Vec<&str> = ordinary_inputs(&batch).iter().map(|(n, _, _)| *n).collect();
    assert_eq!(names, ordinary_input_names(true));
    assert_eq!(ordinary_inputs(&batch)[4].1, vec![1]);
}

#[test]
fn ordinary_outputs_decode_into_the_forward_output() {
    let logits: Vec<u8> = [1.0f32, -1e4, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let actions: Vec<u8> = [0.5f32, -0.5, 4.0, 5.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let l = RawArray {
        name: "logits",
        dtype: ArrayType::Float32,
        shape: &[2, 2],
        strides: &[2, 1],
        bytes: &logits,
    };
    let a = RawArray { name: "action_logits", shape: &[2, 2], bytes: &actions, ..l };
    let (mut scratch, mut out) = (Vec::new(), ForwardOutput::default());
    decode::finish_ordinary(&l, &a, 2, 2, &mut scratch, &mut out).unwrap();
    assert_eq!(out.logits, [1.0, -1e4, 2.0, 3.0]);
    assert_eq!(out.action_logits, [0.5, -0.5, 4.0, 5.0]);
    assert_eq!((out.batch, out.max_options, out.num_actions), (2, 2, 2));
    let e = decode::finish_ordinary(&l, &a, 2, 3, &mut scratch, &mut out).unwrap_err().to_string();
    assert_eq!(e, "Core ML output `logits` has shape [2, 2], expected [2, 3]");
}

#[test]
fn strides_cache_paths_and_model_sources() {
    assert_eq!(contiguous_strides(&[1, 64, 1, 96]), vec![6144, 96, 96, 1]);
    assert_eq!(contiguous_strides(&[3]), vec![1]);
    assert!(contiguous_strides(&[]).is_empty());
    assert_eq!(
        cache_root(Some(Path::new("/Users/a")), Path::new("/tmp")),
        PathBuf::from("/Users/a/Library/Caches/laya-bench/coreml")
    );
    assert_eq!(cache_root(None, Path::new("/tmp")), PathBuf::from("/tmp/laya-bench-coreml"));
    assert_eq!(compiled_path(Path::new("/c"), "ab12"), PathBuf::from("/c/ab12/model.mlmodelc"));
    // the OS build is part of the key: a macOS update compiles again
    assert_eq!(cache_key("ab12", Some("24B83")), "ab12-24B83");
    assert_eq!(cache_key("ab12", Some("25A5316i\n")), "ab12-25A5316i");
    assert_eq!(cache_key("ab12", Some("../x")), "ab12-x");
    assert_eq!(cache_key("ab12", None), "ab12-unknown-os");
    assert_eq!(cache_key("ab12", Some("")), "ab12-unknown-os");
    assert_ne!(cache_key("ab12", Some("24B83")), cache_key("ab12", Some("24C101")));

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("b");
    std::fs::create_dir_all(bundle.join("model.mlpackage/Data")).unwrap();
    std::fs::write(bundle.join("model.mlpackage/Manifest.json"), b"{}").unwrap();
    assert_eq!(resolve_model(&bundle).unwrap(), ModelSource::Package(bundle.join("model.mlpackage")));
    let compiled = dir.path().join("m.mlmodelc");
    std::fs::create_dir_all(&compiled).unwrap();
    assert_eq!(resolve_model(&compiled).unwrap(), ModelSource::Compiled(compiled.clone()));
    assert!(resolve_model(dir.path()).unwrap_err().to_string().contains("holds no model.mlpackage"));
    assert!(resolve_model(&dir.path().join("nope")).unwrap_err().to_string().contains("is not a folder"));
    let sha = package_sha256(&bundle.join("model.mlpackage")).unwrap();
    assert_eq!(sha.len(), 64);
    assert!(package_sha256(&bundle.join("absent.mlpackage")).is_err());
    std::fs::write(bundle.join("coreml_config.json"), r#"{"format": "laya-coreml"}"#).unwrap();
    assert_eq!(default_units_for(&bundle), ComputeUnits::All);
    std::fs::write(bundle.join("coreml_config.json"), r#"{"format": "laya-coreml-ane"}"#).unwrap();
    assert_eq!(default_units_for(&bundle), ComputeUnits::CpuNe);
    assert_eq!(default_units_for(dir.path()), ComputeUnits::CpuNe);
}

#[test]
fn an_objective_c_exception_names_the_step_the_exception_and_what_to_check() {
    let e = exception_error(
        "run the prediction",
        Some("NSInvalidArgumentException: MultiArray shape (1 x 64 x 1 x 96) does not match the shape (1 x 64 x 1 x 128)"),
    );
    assert!(
        crate::error::Classify::kind(&e) == crate::error::Kind::Run,
        "a call that raised during a run fails the run (exit 1)"
    );
    let text = e.to_string();
    assert_eq!(
        text,
        "Core ML could not run the prediction: it raised an Objective-C exception (NSInvalidArgumentException: MultiArray shape (1 x 64 x 1 x 96) does not match the shape (1 x 64 x 1 x 128)); check the bundle against its checkpoint with `laya-bench convert-check` (inputs Core ML rejects) and that macOS is up to date (a call this macOS lacks)"
    );
    for nil in [None, Some("  ")] {
        let text = exception_error("load m.mlmodelc", nil).to_string();
        assert!(
            text.starts_with(
                "Core ML could not load m.mlmodelc: it raised an Objective-C exception with no description;"
            ),
            "{text}"
        );
    }
}

#[test]
fn compiled_models_are_installed_once_and_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let make = |name: &str, content: &[u8]| {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.join("weights")).unwrap();
        std::fs::write(p.join("weights/weight.bin"), content).unwrap();
        std::fs::write(p.join("model.mil"), b"program").unwrap();
        p
    };
    let dest = compiled_path(&dir.path().join("cache"), "abc");
    install_compiled(&make("tmp1.mlmodelc", b"first"), &dest).unwrap();
    assert_eq!(std::fs::read(dest.join("weights/weight.bin")).unwrap(), b"first");
    // a second compile of the same package keeps the first copy and cleans up its own
    let second = make("tmp2.mlmodelc", b"second");
    install_compiled(&second, &dest).unwrap();
    assert_eq!(std::fs::read(dest.join("weights/weight.bin")).unwrap(), b"first");
    assert!(!second.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dest.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no staging folder left behind");
}

/// A compiled-model folder as Core ML leaves it, with `content` as its weights.
fn fake_compiled(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.join("weights")).unwrap();
    std::fs::write(path.join("weights/weight.bin"), content).unwrap();
    std::fs::write(path.join("model.mil"), b"program").unwrap();
}

fn assert_installed_once(dest: &Path, contents: &[Vec<u8>]) {
    let got = std::fs::read(dest.join("weights/weight.bin")).unwrap();
    assert!(contents.contains(&got), "the installed copy is one of the compiled ones");
    assert_eq!(std::fs::read(dest.join("model.mil")).unwrap(), b"program");
    let names: Vec<String> = std::fs::read_dir(dest.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["model.mlmodelc".to_string()], "no staging folder left behind");
}

#[test]
fn threads_installing_the_same_key_at_once_all_succeed() {
    // Eight compiles of one package finishing together (parallel tests on a fresh runner):
    // one rename wins, every other install finds the key installed and succeeds.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let dest = compiled_path(&dir.path().join("cache"), &format!("key{round}"));
        let contents: Vec<Vec<u8>> = (0..8).map(|i| format!("copy {i}").into_bytes()).collect();
        let tmps: Vec<PathBuf> = (0..8).map(|i| dir.path().join(format!("tmp{i}.mlmodelc"))).collect();
        for (tmp, content) in tmps.iter().zip(&contents) {
            fake_compiled(tmp, content);
        }
        let barrier = std::sync::Barrier::new(tmps.len());
        std::thread::scope(|s| {
            let handles: Vec<_> = tmps
                .iter()
                .map(|tmp| {
                    let (barrier, dest) = (&barrier, &dest);
                    s.spawn(move || {
                        barrier.wait();
                        install_compiled(tmp, dest)
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        });
        assert_installed_once(&dest, &contents);
        assert!(tmps.iter().all(|t| !t.exists()), "every temporary folder was moved or cleaned");
    }
}

/// The child half of [`processes_installing_the_same_key_at_once_all_succeed`]: installs one
/// copy when the parent set the variables, and does nothing in an ordinary test run.
#[test]
fn install_child_process() {
    let (Some(tmp), Some(dest)) =
        (std::env::var_os("LAYA_BENCH_TEST_INSTALL_TMP"), std::env::var_os("LAYA_BENCH_TEST_INSTALL_DEST"))
    else {
        return;
    };
    install_compiled(Path::new(&tmp), Path::new(&dest)).unwrap();
}

#[test]
fn processes_installing_the_same_key_at_once_all_succeed() {
    let exe = std::env::current_exe().unwrap();
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let dest = compiled_path(&dir.path().join("cache"), &format!("key{round}"));
        let contents: Vec<Vec<u8>> = (0..4).map(|i| format!("process {i}").into_bytes()).collect();
        let children: Vec<_> = contents
            .iter()
            .enumerate()
            .map(|(i, content)| {
                let tmp = dir.path().join(format!("tmp{i}.mlmodelc"));
                fake_compiled(&tmp, content);
                std::process::Command::new(&exe)
                    .args(["--exact", "backend::coreml::tests::install_child_process", "--test-threads=1"])
                    .env("LAYA_BENCH_TEST_INSTALL_TMP", &tmp)
                    .env("LAYA_BENCH_TEST_INSTALL_DEST", &dest)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
            assert!(text.contains("1 passed"), "the child ran the install: {text}");
        }
        assert_installed_once(&dest, &contents);
    }
}

#[test]
fn host_weights_are_checked_and_rounded_like_numpy() {
    let w = fixture_weights();
    assert_eq!((w.vocab(), w.width(), w.action_head().num_actions()), (1400, 64, 2));
    let st = safetensors::SafeTensors::deserialize(builtin::MODEL).unwrap();
    let t = st.tensor("encoder.embeddings.tok_embeddings.weight").unwrap();
    let e = crate::model::weights::to_f32(t.dtype(), t.data()).unwrap();
    let row7: Vec<u16> = e[7 * 64..8 * 64].iter().map(|&x| half::f16::from_f32(x).to_bits()).collect();
    assert_eq!(w.embedding_row(7), row7.as_slice());
    let e = HostWeights::from_safetensors(b"garbage", "hw.safetensors").unwrap_err().to_string();
    assert!(e.starts_with("hw.safetensors: not a valid safetensors file"), "{e}");
    let only_types = safetensors::serialize(
        vec![("type_emb.weight".to_string(), st.tensor("type_emb.weight").unwrap())],
        None,
    )
    .unwrap();
    let e = HostWeights::from_safetensors(&only_types, "hw").unwrap_err().to_string();
    assert!(e.contains("encoder.embeddings.tok_embeddings.weight` is missing"), "{e}");
}

#[test]
fn compute_plan_needs_a_model_folder_everywhere() {
    let e = compute_plan_for(Path::new("/no/such/bundle"), ComputeUnits::CpuNe, &Settings::UNSET)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a folder"), "{e}");
    #[cfg(not(target_os = "macos"))]
    {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("model.mlpackage")).unwrap();
        let e = compute_plan_for(dir.path(), ComputeUnits::CpuNe, &Settings::UNSET).unwrap_err().to_string();
        assert!(e.contains("needs macOS 14.4+") && e.contains("this build runs on"), "{e}");
    }
}
