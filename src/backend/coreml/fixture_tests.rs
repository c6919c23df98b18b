//! The committed Core ML fixtures (`fixtures/coreml/`, made by scripts/make_coreml_fixtures.py):
//! their declared interfaces as coremltools wrote them, the load-time checks over them, and
//! the ANE host tensors against the declared inputs.

use std::path::{Path, PathBuf};

use super::decode::ArrayType;
use super::description::{read_package, DeclaredFeature, Flexibility, ModelDescription};
use super::*;
use crate::backend::ShapeMode;
use crate::laya::bundle::{Bundle, ModelSpec, Weights};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/coreml").join(name)
}

fn description(name: &str) -> ModelDescription {
    read_package(&fixture(name).join("model.mlpackage")).unwrap()
}

fn loaded(name: &str) -> (Bundle, crate::laya::bundle::CoreMlBundle) {
    let bundle = Bundle::load(&ModelSpec::Dir(fixture(name)), |_| None).unwrap();
    let core = match &bundle.weights {
        Weights::CoreMl(c) => c.clone(),
        _ => panic!("{name} is not a Core ML bundle"),
    };
    (bundle, core)
}

fn line(features: &[DeclaredFeature]) -> Vec<String> {
    features.iter().map(DeclaredFeature::summary).collect()
}

/// The interfaces as coremltools 9.0's own protobuf reader prints them (fixtures/coreml/README.md).
#[test]
fn the_fixtures_declare_what_coremltools_wrote() {
    let ane = description("ane");
    assert_eq!(ane.specification_version, 9);
    assert_eq!(
        line(&ane.inputs),
        [
            "embeddings float16 (1, 64, 1, 96)",
            "full_mask float16 (1, 96, 1, 96)",
            "local_mask float16 (1, 96, 1, 96)",
            "type_vectors float16 (1, 64, 1, 1)",
            "marker_map float16 (1, 96, 1, 32)",
        ]
    );
    assert_eq!(line(&ane.outputs), ["logits float16 (1, 1, 1, 32)", "cls float16 (1, 64, 1, 1)"]);
    let w8 = description("ane-w8");
    assert_eq!((w8.inputs.clone(), w8.outputs.clone()), (ane.inputs, ane.outputs));

    let plain = description("ordinary");
    let seq = "(1, 128), enumerated (1, 128) (1, 16) (1, 32) (1, 48) (1, 64) (1, 80) (1, 96) (1, 112)";
    assert_eq!(
        line(&plain.inputs),
        [
            format!("input_ids int32 {seq}"),
            format!("attention_mask int32 {seq}"),
            "marker_pos int32 (1, 32)".into(),
            "marker_mask int32 (1, 32)".into(),
            "qtype int32 (1,)".into(),
        ]
    );
    assert_eq!(line(&plain.outputs), ["logits float32 (1, 32)", "action_logits float32 (1, 2)"]);
    assert!(plain.inputs.iter().chain(&plain.outputs).all(|f| !f.optional && f.kind == "multi_array"));
}

#[test]
fn every_fixture_loads_with_its_description_checked() {
    for name in ["ane", "ane-w8", "ordinary"] {
        let (bundle, core) = loaded(name);
        assert_eq!(bundle.encoder.hidden_size, 64);
        assert_eq!(*core.description, description(name), "{name}");
        let ane = name != "ordinary";
        assert_eq!(core.format, if ane { "laya-coreml-ane" } else { "laya-coreml" });
        assert_eq!(core.max_length, if ane { 96 } else { 128 });
        assert_eq!(core.precision.as_deref(), Some("float16"));
        // every file but the manifest itself is listed and re-hashed
        let listed = if ane { 9 } else { 8 };
        assert_eq!(core.verified_files.len(), listed, "{name}: {:?}", core.verified_files);
    }
}

/// The five tensors the host builds for the fixture's shape are the declared inputs exactly:
/// the same names, FP16, and as many elements as each declared shape holds.
#[test]
fn the_ane_host_tensors_match_the_declared_inputs() {
    let (bundle, core) = loaded("ane");
    let bytes = std::fs::read(core.host_weights.as_ref().unwrap()).unwrap();
    let weights = HostWeights::from_safetensors(&bytes, "host_weights.safetensors").unwrap();
    let mut host = AneHost::new(weights, core.max_length, bundle.encoder.local_attention);
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/goldens/ane.json"))
            .unwrap(),
    )
    .unwrap();
    let b = &golden["cases"][0]["batch"];
    let ints = |k: &str| -> Vec<i32> {
        let v = if b[k].get("data").is_some() { &b[k]["data"] } else { &b[k] };
        fn walk(v: &serde_json::Value, out: &mut Vec<i32>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                x => out.push(x.as_f64().unwrap() as i32),
            }
        }
        let mut out = Vec::new();
        walk(v, &mut out);
        out
    };
    let batch = PreparedBatch {
        batch: 1,
        length: 96,
        max_options: 32,
        input_ids: ints("input_ids"),
        attention_mask: ints("attention_mask"),
        marker_pos: ints("marker_pos"),
        marker_mask: ints("marker_mask"),
        qtype: ints("qtype"),
        position_ids: None,
        option_ids: None,
    };
    let inputs = host.prepare(&batch).unwrap().clone();
    let built: [(&str, &[u16]); 5] = [
        ("embeddings", &inputs.embeddings),
        ("full_mask", &inputs.full_mask),
        ("local_mask", &inputs.local_mask),
        ("type_vectors", &inputs.type_vectors),
        ("marker_map", &inputs.marker_map),
    ];
    let declared = &core.description.inputs;
    assert_eq!(declared.len(), built.len());
    for ((name, data), (shape_name, shape)) in built.iter().zip(host.shape().input_shapes()) {
        assert_eq!(*name, shape_name);
        let d = declared.iter().find(|f| f.name == *name).unwrap_or_else(|| panic!("{name} not declared"));
        assert_eq!(d.shape, shape, "{name}");
        assert_eq!(d.flexibility, Flexibility::Fixed, "{name}");
        assert_eq!(d.array_type(), Some(ArrayType::Float16), "{name}: the host writes FP16 bits");
        assert_eq!(data.len(), d.shape.iter().product::<usize>(), "{name}");
    }
    // and the declared outputs are the two the host tells apart by shape
    let outs = &core.description.outputs;
    assert_eq!(
        decode::identify_ane_outputs(outs.iter().map(|f| (f.name.as_str(), f.shape.as_slice())), 64).unwrap(),
        (0, 1)
    );
}

/// The ordinary export's inputs, as the adapter passes a packed batch, are declared inputs of
/// an accepted shape and type at every manifest length.
#[test]
fn the_ordinary_inputs_match_the_declared_inputs() {
    let (bundle, core) = loaded("ordinary");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("ordinary/coreml_config.json")).unwrap()).unwrap();
    let caps = ordinary_caps(&manifest, "coreml_config.json").unwrap();
    let ShapeMode::Enumerated(lengths) = &caps.mode else { panic!("{:?}", caps.mode) };
    assert_eq!(lengths, &[16, 32, 48, 64, 80, 96, 112, 128]);
    for &l in lengths {
        let mut batch = PreparedBatch::default();
        batch.reset(1, l, 32, bundle.tokenizer.pad.id as i32, false);
        for (name, shape, data) in ordinary_inputs(&batch) {
            let d = core.description.inputs.iter().find(|f| f.name == name).unwrap();
            assert_eq!(d.array_type(), Some(ArrayType::Int32), "{name}");
            assert!(d.shapes().unwrap().contains(&shape), "{name} {shape:?} at L {l}");
            assert_eq!(data.len(), shape.iter().product::<usize>());
        }
    }
}

fn rename(features: &mut [DeclaredFeature], from: &str, to: &str) {
    features.iter_mut().find(|f| f.name == from).unwrap().name = to.into();
}

#[test]
fn a_declared_interface_that_differs_is_refused_naming_the_input() {
    let shape = AneShape { length: 96, width: 64, vocab: 1400, half_window: 8 };
    let ane = description("ane");
    check_declared_ane(&ane, shape).unwrap();
    let err = |d: &ModelDescription, s: AneShape| check_declared_ane(d, s).unwrap_err().to_string();

    let mut d = ane.clone();
    rename(&mut d.inputs, "local_mask", "window_mask");
    let e = err(&d, shape);
    assert!(e.contains("input `local_mask` is missing"), "{e}");
    let e = err(&ane, AneShape { length: 64, ..shape });
    assert!(e.contains("input `embeddings` has shape (1, 64, 1, 96), expected (1, 64, 1, 64)"), "{e}");
    let mut d = ane.clone();
    d.inputs[4].data_type = Some("int32".into());
    assert!(err(&d, shape).contains("input `marker_map` is int32, expected float16"));
    let mut d = ane.clone();
    d.inputs[0].flexibility = Flexibility::Enumerated(vec![vec![1, 64, 1, 96], vec![1, 64, 1, 128]]);
    assert!(err(&d, shape).contains(
        "input `embeddings` declares flexible shapes (enumerated (1, 64, 1, 96), (1, 64, 1, 128))"
    ));
    let mut d = ane.clone();
    d.outputs[1].shape = vec![1, 32, 1, 1];
    assert!(err(&d, shape).contains("pooled CLS (1, 64, 1, 1)"));
    let mut d = ane.clone();
    d.outputs[0].data_type = Some("int32".into());
    assert!(err(&d, shape).contains("output `logits` is int32"));
    let mut d = ane.clone();
    d.inputs[1].kind = "image".into();
    assert!(err(&d, shape).contains("input `full_mask` is declared as image"));

    let plain = description("ordinary");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("ordinary/coreml_config.json")).unwrap()).unwrap();
    let caps = ordinary_caps(&manifest, "coreml_config.json").unwrap();
    check_declared_ordinary(&plain, &caps, false, 2).unwrap();
    let err = |d: &ModelDescription, c: &ShapeCaps, a: usize| {
        check_declared_ordinary(d, c, false, a).unwrap_err().to_string()
    };
    let mut d = plain.clone();
    rename(&mut d.inputs, "qtype", "question_type");
    assert!(err(&d, &caps, 2).contains("input `qtype` is missing"));
    let fewer = ShapeCaps { mode: ShapeMode::Enumerated(vec![16, 32, 64, 128]), ..caps.clone() };
    let e = err(&plain, &fewer, 2);
    assert!(
        e.contains("coreml_config.json shape.lengths [16, 32, 64, 128] disagrees with input `input_ids`"),
        "{e}"
    );
    let range = ShapeCaps { mode: ShapeMode::Range, ..caps.clone() };
    assert!(err(&plain, &range, 2).contains("shape.min_length..max_length 16..128 (mode range) disagrees"));
    let fixed = ShapeCaps { mode: ShapeMode::Fixed, min_length: 128, ..caps.clone() };
    assert!(err(&plain, &fixed, 2).contains("shape.max_length 128 (fixed) disagrees"));
    assert!(err(&plain, &caps, 3).contains("output `action_logits` has shape (1, 2), expected (1, 3)"));
    let mut d = plain.clone();
    d.inputs[0].data_type = Some("float16".into());
    assert!(err(&d, &caps, 2).contains("input `input_ids` is float16, expected int32"));
    let mut d = plain.clone();
    d.inputs[2].shape = vec![1, 16];
    assert!(err(&d, &caps, 2).contains("input `marker_pos` has shape (1, 16), expected (1, 32)"));
    let mut d = plain;
    d.inputs[4].flexibility = Flexibility::Enumerated(vec![vec![1], vec![2]]);
    assert!(err(&d, &caps, 2).contains("input `qtype` declares enumerated (1,), (2,) shapes"));
}

#[test]
fn the_fixtures_need_macos_15_and_are_refused_on_macos_14() {
    use super::availability::MacOsVersion;
    for name in ["ane", "ane-w8", "ordinary"] {
        let package = fixture(name).join("model.mlpackage");
        // macOS 14 (GitHub's macos-14 runner) reads specification version 8 at most
        let e = super::check_package_for_os(&package, Some(MacOsVersion::new(14, 6, 1))).unwrap_err();
        assert_eq!(crate::error::Classify::kind(&e), crate::error::Kind::Input);
        let text = e.to_string();
        assert!(text.contains("needs macOS 15 or newer; this Mac runs macOS 14.6.1"), "{text}");
        assert!(text.contains("model.mlpackage (Core ML specification version 9)"), "{text}");
        assert_eq!(super::check_package_for_os(&package, Some(MacOsVersion::new(15, 0, 0))).unwrap(), None);
    }
    let e = super::check_package_for_os(&fixture("ane"), None).unwrap_err().to_string();
    assert!(e.contains("cannot read its model specification"), "{e}");
}
