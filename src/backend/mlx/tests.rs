use super::*;
use crate::backend::{BackendInfo, BackendKind};
use crate::laya::bundle::{Bundle, ModelSpec};
use crate::model::weights::tensor_specs;

fn tiny() -> Bundle {
    Bundle::load(&ModelSpec::Builtin, |_| None).unwrap()
}

#[test]
fn buckets_are_multiples_of_32_that_hold_the_row() {
    for (len, want) in [(0, 32), (1, 32), (31, 32), (32, 32), (33, 64), (96, 96), (97, 128), (512, 512)] {
        assert_eq!(bucket_length(len), want, "len {len}");
    }
    assert_eq!(bucket_lengths(96), [32, 64, 96]);
    assert_eq!(bucket_lengths(100), [32, 64, 96, 128]);
    assert_eq!(bucket_lengths(1), [32]);
}

#[test]
fn default_shapes_enumerate_the_buckets_up_to_max_len() {
    let b = tiny();
    let s = default_shapes(&b.agent);
    assert_eq!(s.max_length, 512);
    assert_eq!(s.batch_size, DEFAULT_BATCH);
    match &s.mode {
        ShapeMode::Enumerated(l) => {
            assert_eq!(l.len(), 16);
            assert_eq!((l[0], l[1], l[15]), (32, 64, 512));
        }
        other => panic!("expected enumerated buckets, got {other:?}"),
    }
}

#[test]
fn specs_parse_and_bad_ones_say_how_to_write_them() {
    assert_eq!(
        MlxSpec::parse("fp16:builtin:tiny").unwrap(),
        MlxSpec { dtype: MlxDtype::F16, source: "builtin:tiny".into() }
    );
    assert_eq!(
        MlxSpec::parse("fp32:/ckpt/a:b").unwrap(),
        MlxSpec { dtype: MlxDtype::F32, source: "/ckpt/a:b".into() }
    );
    for bad in ["bf16:builtin:tiny", "fp16", "fp16:", "fp16:  ", "", "builtin:tiny"] {
        let e = MlxSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains("mlx:fp16:SRC"), "{bad}: {e}");
    }
    assert_eq!((MlxDtype::F16.name(), MlxDtype::F16.mlx_name()), ("fp16", "float16"));
    assert_eq!((MlxDtype::F32.name(), MlxDtype::F32.mlx_name()), ("fp32", "float32"));
}

#[test]
fn checkpoint_names_map_to_the_mlx_module_names() {
    for (ckpt, mlx) in [
        ("head.layers.1.self_attn.in_proj_weight", "head.layers.1.self_attn.in_proj.weight"),
        ("head.layers.0.self_attn.in_proj_bias", "head.layers.0.self_attn.in_proj.bias"),
        ("head.layers.0.self_attn.out_proj.weight", "head.layers.0.self_attn.out_proj.weight"),
        ("scorer.0.weight", "scorer.layers.0.weight"),
        ("scorer.3.bias", "scorer.layers.3.bias"),
        ("act_head.2.weight", "act_head.layers.2.weight"),
        ("encoder.layers.3.attn.Wqkv.weight", "encoder.layers.3.attn.Wqkv.weight"),
        ("type_emb.weight", "type_emb.weight"),
        ("scorer_extra.weight", "scorer_extra.weight"),
        ("scorer.layers.0.weight", "scorer.layers.0.weight"),
    ] {
        assert_eq!(mlx_parameter_name(ckpt), mlx, "{ckpt}");
    }
    let e = parameter_names(["scorer.0.weight", "scorer.layers.0.weight"]).unwrap_err().to_string();
    assert!(e.contains("scorer.0.weight") && e.contains("scorer.layers.0.weight"), "{e}");
}

#[test]
fn every_tensor_of_the_tiny_checkpoint_has_its_own_mlx_name() {
    let b = tiny();
    let specs = tensor_specs(&b.encoder, &b.agent);
    let names = parameter_names(specs.iter().map(|s| s.name.as_str())).unwrap();
    assert_eq!(names.len(), specs.len());
    let renamed = names.iter().filter(|(c, m)| c != m).count();
    // 2 head layers × in_proj weight and bias, scorer 0/1/3 weight and bias, act_head 0/2.
    assert_eq!(renamed, 2 * 2 + 6 + 4);
}

#[test]
fn fp16_weights_get_their_own_fingerprint() {
    let src = "ab".repeat(32);
    assert_eq!(fingerprint(&src, MlxDtype::F32), src);
    // sha256 of "laya-bench-mlx/1\nsource=<src>\ndtype=float16\ncast=all-parameters\n" (Python hashlib).
    assert_eq!(
        fingerprint(&src, MlxDtype::F16),
        "524a4efce4ac99444ce9879990adb89cc5b35bd1c0bc635491cb1ee5585620a7"
    );
}

fn batch() -> PreparedBatch {
    // Two rows of 3 tokens, the second with one pad; one marker slot each.
    PreparedBatch {
        batch: 2,
        length: 3,
        max_options: 1,
        input_ids: vec![5, 6, 7, 8, 9, 0],
        attention_mask: vec![1, 1, 1, 1, 1, 0],
        marker_pos: vec![1, -3],
        marker_mask: vec![1, 1],
        qtype: vec![0, 2],
        position_ids: None,
        option_ids: None,
    }
}

#[test]
fn inputs_are_padded_to_the_bucket_with_two_marker_slots() {
    let b = tiny();
    let mut x = MlxInputs::default();
    x.fill(&batch(), &b.encoder, 3).unwrap();
    assert_eq!((x.batch, x.length, x.slots), (2, 32, 2));
    assert_eq!(x.input_ids.len(), 64);
    assert_eq!(&x.input_ids[..4], &[5, 6, 7, 3]);
    assert_eq!(&x.input_ids[32..36], &[8, 9, 0, 3], "the packed pad stays, the bucket pad is the pad id");
    assert!(x.input_ids[36..].iter().all(|&t| t == 3));
    assert_eq!(x.marker_pos, [1, 0, 0, 0], "negative positions clamp to 0, extra slot is 0");
    assert_eq!(x.marker_mask, [true, false, true, false]);
    assert_eq!(x.qtype, [0, 2]);
    assert!(x.rope.is_none());
    let (l, ll) = (32, 32 * 32);
    let at = |m: &[bool], b: usize, q: usize, k: usize| m[b * ll + q * l + k];
    // Full: every valid key, nothing else.
    assert!(at(&x.full_mask, 0, 0, 2) && !at(&x.full_mask, 0, 0, 3));
    assert!(at(&x.full_mask, 1, 0, 1) && !at(&x.full_mask, 1, 0, 2));
    // A padded query still sees the valid keys (no empty softmax row).
    assert!(at(&x.full_mask, 1, 20, 0));
    assert_eq!(x.head_mask, x.full_mask);
    assert_eq!(x.full_mask.len(), 2 * ll);
}

#[test]
fn the_local_mask_keeps_half_the_window_each_side() {
    let b = tiny();
    assert_eq!(b.encoder.half_window(), 8);
    let mut p = PreparedBatch::default();
    p.reset(1, 40, 2, 0, false);
    p.attention_mask.iter_mut().for_each(|v| *v = 1);
    let mut x = MlxInputs::default();
    x.fill(&p, &b.encoder, 0).unwrap();
    assert_eq!(x.length, 64);
    let at = |q: usize, k: usize| x.local_mask[q * 64 + k];
    assert!(at(20, 12) && at(20, 28) && !at(20, 11) && !at(20, 29));
    assert!(!at(20, 45), "bucket padding is never a key");
    assert!(at(50, 39) && at(50, 0) && !at(50, 45), "a padded query sees every valid key, only those");
}

#[test]
fn parallel_batches_get_rope_tables_and_a_head_mask() {
    let b = tiny();
    let mut p = batch();
    p.position_ids = Some(vec![0, 1, 1, 0, 1, 0]);
    p.option_ids = Some(vec![0, 1, 2, 0, 1, 0]);
    let mut x = MlxInputs::default();
    x.fill(&p, &b.encoder, 3).unwrap();
    let (full, local) = x.rope.as_ref().expect("parallel layout has tables");
    let half = b.encoder.head_dim() / 2;
    assert_eq!(full.cos.len(), 2 * 32 * half);
    assert_eq!(local.sin.len(), 2 * 32 * half);
    // Options 1 and 2 of row 0 do not see each other; the head mask ignores options.
    assert!(!x.full_mask[32 + 2] && x.head_mask[32 + 2]);
}

#[test]
fn rope_tables_match_hand_computed_angles() {
    // head_dim 4 → half 2, inv = [1, 1/100] for base 10000.
    let t = RopeTables::new(&[0, 1, 3], 4, 10_000.0);
    assert_eq!(t.cos.len(), 6);
    assert_eq!((t.cos[0], t.sin[0], t.cos[1], t.sin[1]), (1.0, 0.0, 1.0, 0.0));
    assert!((t.cos[2] - 1f32.cos()).abs() < 1e-7 && (t.sin[2] - 1f32.sin()).abs() < 1e-7);
    assert!((t.cos[3] - 0.01f32.cos()).abs() < 1e-7 && (t.sin[3] - 0.01f32.sin()).abs() < 1e-7);
    assert!((t.sin[4] - 3f32.sin()).abs() < 1e-7 && (t.sin[5] - 0.03f32.sin()).abs() < 1e-6);
}

#[test]
fn bad_batches_are_shape_errors_naming_the_problem() {
    let b = tiny();
    let mut x = MlxInputs::default();
    let mut p = batch();
    p.input_ids[0] = 1400;
    assert!(x.fill(&p, &b.encoder, 0).unwrap_err().to_string().contains("token id 1400"));
    let mut p = batch();
    p.qtype[1] = 3;
    assert!(x.fill(&p, &b.encoder, 0).unwrap_err().to_string().contains("qtype 3"));
    let mut p = batch();
    p.input_ids.pop();
    assert!(x.fill(&p, &b.encoder, 0).unwrap_err().to_string().contains("B·L = 6"));
    let mut p = batch();
    p.marker_pos.pop();
    assert!(x.fill(&p, &b.encoder, 0).is_err());
}

#[test]
fn outputs_keep_the_batch_slots_and_all_actions() {
    let b = tiny();
    let mut x = MlxInputs::default();
    let p = batch();
    x.fill(&p, &b.encoder, 0).unwrap();
    let mut out = ForwardOutput::default();
    copy_outputs(&[1.0, -1e4, 2.0, -1e4], &[0.5, 0.25, 4.0, 8.0], &x, &p, 2, &mut out).unwrap();
    assert_eq!((out.batch, out.max_options, out.num_actions), (2, 1, 2));
    assert_eq!(out.logits, [1.0, 2.0]);
    assert_eq!(out.action_logits, [0.5, 0.25, 4.0, 8.0]);
    let e = copy_outputs(&[1.0], &[0.5], &x, &p, 2, &mut out).unwrap_err();
    assert!(e.to_string().contains("expected 4 and 4"), "{e}");
}

#[test]
fn only_an_mlx_backend_turns_on_the_prefix_cache() {
    let b = tiny();
    let info = |kind: BackendKind, name: &str, host_hints: HostHints| BackendInfo {
        kind,
        name: name.into(),
        precision: "f16".into(),
        device: "gpu".into(),
        shapes: default_shapes(&b.agent),
        fingerprint: String::new(),
        notes: Vec::new(),
        blas: None,
        host_hints,
        weight_bytes: None,
    };
    let host = |i: BackendInfo| crate::backend::registry::host_for(&b, default_shapes(&b.agent), &i);
    assert_eq!(host_hints().prefix_cache, Some(DEFAULT_CAPACITY));
    assert!(host(info(BackendKind::Mlx, NAME, host_hints())).prefix_cache.is_some());
    assert!(host(info(BackendKind::Portable, "portable", HostHints::default())).prefix_cache.is_none());
}

#[test]
fn only_the_kernel_library_race_is_retried() {
    // the message of the CI failure this retry is for (a library another process was writing)
    let seen = "Could not load C++ shared library /tmp/mlx/0.32.2/cpu/libCf2IBroadcast_contiguous.so: \
                file too short at mlx/c/transforms.cpp:73";
    assert!(is_jit_race(seen));
    assert!(is_jit_race("[Compile::eval_cpu] Failed to compile function Cf2I: exit 1"));
    assert!(is_jit_race("[Compile::eval_cpu] Failed to load compiled function Cf2I"));
    assert!(!is_jit_race("[matmul] Last dimension of first input with shape (1,96,768) must match"));
    assert!(!is_jit_race("missing MLX parameter `head.w`"));
}
