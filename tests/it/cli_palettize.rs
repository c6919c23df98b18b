//! `laya-bench palettize` writes a palette file that `portable:wN:FILE` loads, for the same
//! checkpoint only.

use crate::common::laya_bench;

const Q: &str = r#"{"r": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}"#;

#[test]
fn palette_files_round_trip_and_belong_to_their_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(d, &["palettize", "--bits", "8", "--output", "w8.safetensors", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["config"]["bits"], 8);
    assert_eq!(
        (report["schema_version"].clone(), report["kind"].clone()),
        (1.into(), "laya-bench-palettize".into())
    );
    // The tiny model's matrices are all below the default threshold: nothing is palettized,
    // and the command says so.
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: nothing palettized"));
    let a = laya_bench(
        d,
        &["predict", "--backend", "portable:w8:w8.safetensors", "--state", "refund me", "--questions", Q],
    );
    let b = laya_bench(d, &["predict", "--backend", "portable:w8", "--state", "refund me", "--questions", Q]);
    assert_eq!(a.status.code(), Some(0), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "the palette file and on-the-fly conversion decide alike");
    let again = laya_bench(d, &["palettize", "--output", "w8.safetensors"]);
    assert_eq!(again.status.code(), Some(2));
    // A folder that does not exist is refused before palettizing (minutes on a large model).
    let o = laya_bench(
        d,
        &["palettize", "--model", "synthetic:multilingual", "--output", "nodir/w8.safetensors"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--output nodir/w8.safetensors: the folder nodir does not exist"), "{err}");
    // A palette made from builtin:tiny does not load for another checkpoint.
    let ck = crate::common::copy_tiny_checkpoint(&d.join("ckpt"));
    let mut bytes = std::fs::read(ck.join("model.safetensors")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(ck.join("model.safetensors"), bytes).unwrap();
    let o = laya_bench(
        d,
        &[
            "predict",
            "--model",
            "ckpt",
            "--backend",
            "portable:w8:w8.safetensors",
            "--state",
            "x",
            "--questions",
            Q,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("14769a0da4ed602f"), "names the palette's source hash: {err}");
}
