//! The record types, writer and reader together: what a run writes reads back unchanged.

use std::path::Path;

use super::read::{read_limited, read_line, LineEnd};
use super::*;
use crate::energy::run::RejectionDetail;
use crate::host::{HostInfo, MeasuringThread};
use crate::power::sampler::Sample;
use crate::power::{PowerBoundary, SensorInfo};
use crate::record::model::ModelInfo;
use crate::record::provenance::ToolInfo;
use crate::record::status::RunStatus;

fn header() -> Header {
    Header {
        schema_version: SCHEMA_VERSION,
        kind: "speed".into(),
        tool: ToolInfo::current(),
        command_line: vec!["laya-bench".into(), "speed".into()],
        started_unix_s: 1.5,
        clock: "monotonic ns since started_unix_s".into(),
        host: HostInfo::detect(),
        model: ModelInfo::spec_only("builtin:tiny"),
        arms: vec![],
        workload: WorkloadInfo {
            name: "w".into(),
            requests: 1,
            tokens_per_row: vec![vec![91]],
            target_tokens: Some(91),
            length: 96,
        },
        plan: PlanInfo {
            cycles: 1,
            block_seconds: None,
            block_calls: Some(2),
            warmup_calls: 1,
            order: vec!["a".into(), "a".into()],
            batch: 1,
        },
        sensor: None,
        energy: None,
        power_boundary: None,
        measuring_thread: MeasuringThread::default(),
    }
}

fn arm(spec: &str, backend: &str, precision: &str, fingerprint: &str) -> ArmInfo {
    ArmInfo {
        name: spec.into(),
        spec: spec.into(),
        backend: backend.into(),
        precision: precision.into(),
        device: "d".into(),
        fingerprint: fingerprint.into(),
        batch: 1,
        length: 96,
        max_options: 32,
        notes: vec![],
        blas: None,
        requests_per_call: None,
        threads: None,
    }
}

#[test]
fn the_power_boundary_is_recorded_or_derived_from_the_sensor_kind() {
    use crate::power::SensorKind;
    let sensor = |kind, source: &str| SensorInfo {
        kind,
        spec: "s".into(),
        source: source.into(),
        device: "d".into(),
        live: true,
        program: None,
        notes: vec![],
    };
    let read_back =
        |h: &Header| -> Header { serde_json::from_str(&serde_json::to_string(h).unwrap()).unwrap() };
    let mut h = header();
    assert_eq!(h.power_boundary(), PowerBoundary::Unknown, "a speed record has no sensor");
    // A record older than the field: derived where the sensor kind is unambiguous.
    for (kind, source, want) in [
        (SensorKind::Nvml, "nvml-energy", PowerBoundary::GpuBoard),
        (SensorKind::Pstr, "smc-pstr", PowerBoundary::WholeSystem),
        (SensorKind::Rapl, "rapl-pkg", PowerBoundary::CpuPackage),
        (SensorKind::Exec, "measured-external", PowerBoundary::Unknown),
        (SensorKind::Replay, "replay", PowerBoundary::Unknown),
    ] {
        h.sensor = Some(sensor(kind, source));
        assert!(!serde_json::to_string(&h).unwrap().contains("power_boundary"));
        assert_eq!(read_back(&h).power_boundary(), want, "{kind:?}");
    }
    // Recorded: additive, and it wins over the kind.
    h.power_boundary = Some(PowerBoundary::Wall);
    assert!(serde_json::to_string(&h).unwrap().contains(r#""power_boundary":"wall""#));
    assert_eq!(read_back(&h).power_boundary(), PowerBoundary::Wall);
}

#[test]
fn same_model_means_same_weights_engine_and_for_a_runtime_its_precision() {
    // Our engines fingerprint the weights they compute with: w8 with nothing palettized is f32.
    let f32 = arm("portable:f32", "portable", "f32", "aa");
    assert!(arm("portable:w8", "portable", "w8", "aa").same_model_as(&f32));
    assert!(!arm("portable:bf16", "portable", "bf16", "bb").same_model_as(&f32));
    assert!(!arm("mlx:fp32", "mlx", "fp32", "aa").same_model_as(&f32));
    // A `--batch 1,4` or `--threads 1,2` sweep: one model, configurations that differ.
    let sweep = |batch, threads| ArmInfo { requests_per_call: batch, threads, ..f32.clone() };
    assert!(sweep(Some(1), None).same_model_as(&sweep(Some(1), None)));
    assert!(!sweep(Some(4), None).same_model_as(&sweep(Some(1), None)));
    assert!(!sweep(None, Some(2)).same_model_as(&sweep(None, Some(1))));
    assert!(!sweep(Some(1), Some(2)).same_model_as(&f32));
    // A runtime's is its checkpoint's: laya at FP16 autocast and at FP32 read one file.
    let fp32 = arm("ref:laya:c:cuda:fp32", "laya 0.4.15", "fp32", "cc");
    assert!(!arm("ref:laya:c:cuda", "laya 0.4.15", "fp16 autocast", "cc").same_model_as(&fp32));
    assert!(arm("ref:laya:c:cuda", "laya 0.4.15", "fp32", "cc").same_model_as(&fp32));
    assert!(!arm("mock:ok", crate::backend::mock::NAME, "f32", "m").same_model_as(&arm(
        "mock:ok",
        crate::backend::mock::NAME,
        "f32",
        "m"
    )));
}

fn call(i: u64) -> Record {
    Record::Call {
        block: 0,
        arm: "a".into(),
        state: 0,
        requests: None,
        start_ns: i * 10,
        duration_ns: 5,
        runtime_ns: None,
        answer: "q=x".into(),
        stable: true,
        scheduled_ns: None,
        missed_deadline: false,
    }
}

#[test]
fn round_trips_into_mirror_types() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    w.write(&Record::Header(Box::new(header()))).unwrap();
    w.write(&call(1)).unwrap();
    w.write(&Record::Footer {
        status: RunStatus::Complete,
        ended_unix_s: 2.0,
        total_calls: 1,
        reason: None,
        rejections: vec![],
    })
    .unwrap();
    w.sync().unwrap();
    let run = read(&path).unwrap();
    assert_eq!(run.header, header());
    assert_eq!(run.records[0], call(1));
    assert!(run.complete);
    assert!(run.truncated_tail.is_none());
}

#[test]
fn speed_lines_carry_no_energy_fields() {
    let line = serde_json::to_string(&call(1)).unwrap();
    assert_eq!(
        line,
        r#"{"record":"call","block":0,"arm":"a","state":0,"start_ns":10,"duration_ns":5,"answer":"q=x","stable":true}"#
    );
    let h = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
    assert!(!h.contains("\"sensor\"") && !h.contains("\"energy\""), "{h}");
}

#[test]
fn the_measuring_thread_qos_is_a_header_field_only_where_set() {
    let plain = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
    assert!(!plain.contains("measuring_thread"), "{plain}");
    let mut h = header();
    h.measuring_thread = MeasuringThread::from_qos_return(0);
    let line = serde_json::to_string(&Record::Header(Box::new(h.clone()))).unwrap();
    assert!(line.ends_with(r#""measuring_thread_qos":"user-interactive"}"#), "{line}");
    let Record::Header(back) = serde_json::from_str::<Record>(&line).unwrap() else { panic!("not a header") };
    assert_eq!(*back, h);
    h.measuring_thread = MeasuringThread::from_qos_return(1);
    let line = serde_json::to_string(&Record::Header(Box::new(h.clone()))).unwrap();
    assert!(line.contains(r#""measuring_thread_qos_error":"pthread_set_qos_class_self_np"#), "{line}");
    assert!(!line.contains(r#""measuring_thread_qos":"#), "{line}");
    let Record::Header(back) = serde_json::from_str::<Record>(&line).unwrap() else { panic!("not a header") };
    assert_eq!(*back, h);
}

#[test]
fn a_scripted_arm_is_known_by_its_recorded_backend_name() {
    use crate::backend::mock::{Script, ScriptedBackend};
    use crate::backend::{Backend, ShapeCaps, ShapeMode};
    let shapes =
        ShapeCaps { batch_size: 1, max_length: 32, min_length: 16, max_options: 4, mode: ShapeMode::Range };
    let mock = ScriptedBackend::new(shapes, Script::Synthetic { num_actions: 2 }, std::time::Duration::ZERO);
    let arm = ArmInfo::describe("m", "mock:ok", mock.info());
    assert!(arm.is_scripted());
    // Only the serialized fields: the kind, host hints and weight bytes stay in memory.
    let json = serde_json::to_string(&arm).unwrap();
    assert!(
        json.contains("\"backend\":\"mock\"") && !json.contains("kind") && !json.contains("hint"),
        "{json}"
    );
    assert!(!ArmInfo { backend: "portable".into(), ..arm }.is_scripted());
}

#[test]
fn energy_records_round_trip() {
    use crate::energy::reject::{Rejection, SampleRef};
    use crate::power::sampler::SampleOutcome;
    use crate::power::Reading;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    w.write(&Record::Header(Box::new(header()))).unwrap();
    let mut reading = Reading::power_w("system", 40089.0);
    reading.raw = Some("40089".into());
    let sample =
        Sample { seq: 0, t_request_ns: 5, t_receive_ns: 9, outcome: SampleOutcome::Reading(reading) };
    w.write(&Record::Sample(Box::new(sample.clone()))).unwrap();
    w.write(&Record::Idle { index: 0, start_ns: 1, end_ns: 2, ended_early: false }).unwrap();
    w.flush().unwrap();
    let rejection =
        Rejection::AboveCap { sample: SampleRef { seq: 0, t_s: 9e-9 }, watts: 40089.0, max_watts: 500.0 };
    let footer = Record::Footer {
        status: RunStatus::Rejected,
        ended_unix_s: 3.0,
        total_calls: 0,
        reason: None,
        rejections: vec![RejectionDetail {
            message: rejection.to_string(),
            rejection,
            channel: None,
            evidence: vec![],
        }],
    };
    w.write(&footer).unwrap();
    w.sync().unwrap();
    let run = read(&path).unwrap();
    assert_eq!(samples(&run), vec![sample]);
    assert_eq!(run.records.last(), Some(&footer));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""rule":"above_cap""#), "{text}");
}

#[test]
fn a_file_without_footer_is_incomplete_and_a_cut_line_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    w.write(&Record::Header(Box::new(header()))).unwrap();
    w.write(&call(1)).unwrap();
    w.sync().unwrap();
    drop(w);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"record\":\"call\",\"block\":0,\"ar");
    std::fs::write(&path, text).unwrap();
    let run = read(&path).unwrap();
    assert!(!run.complete);
    assert_eq!(run.records.len(), 1);
    assert!(run.truncated_tail.unwrap().starts_with("{\"record\":\"call\""));
}

#[test]
fn lines_written_before_the_typed_model_and_status_read_and_write_back_unchanged() {
    // A header and footer exactly as the previous version wrote them (model as a JSON
    // object, footer status as a string).
    let header = r#"{"record":"header","schema_version":2,"kind":"speed","tool":{"name":"laya-bench","version":"0.1.0","git_revision":"821a2234ba89"},"command_line":["laya-bench","speed","--calls","20"],"started_unix_s":1796181992.0455773,"clock":"monotonic ns since started_unix_s","host":{"hostname":"vm","os":"linux","arch":"x86_64","cpu_model":"AMD EPYC","logical_cpus":2,"memory_bytes":25275973632},"model":{"spec":"builtin:tiny","hidden_size":64,"layers":4,"heads":4,"intermediate_size":96,"vocab_size":1400,"head_layers":2,"max_len":512},"arms":[{"name":"a","spec":"mock:ok","backend":"mock","precision":"scripted","device":"none (scripted outputs, not a measurement)","fingerprint":"mock","batch":1,"length":96,"max_options":32}],"workload":{"name":"invoice","requests":1,"tokens_per_row":[[91]],"target_tokens":91,"length":96},"plan":{"cycles":1,"block_seconds":null,"block_calls":20,"warmup_calls":2,"order":["a","a"]}}"#;
    let footers = [
        r#"{"record":"footer","status":"complete","ended_unix_s":1796181992.243547,"total_calls":40}"#,
        r#"{"record":"footer","status":"incomplete","ended_unix_s":2.5,"total_calls":3,"reason":"interrupted"}"#,
        r#"{"record":"footer","status":"failed","ended_unix_s":2.5,"total_calls":0,"reason":"x"}"#,
        r#"{"record":"footer","status":"rejected","ended_unix_s":2.5,"total_calls":0}"#,
    ];
    let Record::Header(h) = serde_json::from_str::<Record>(header).unwrap() else { panic!("not a header") };
    assert_eq!(h.model.spec, "builtin:tiny");
    assert_eq!((h.model.hidden_size, h.model.max_len), (Some(64), Some(512)));
    assert_eq!(serde_json::to_string(&Record::Header(h)).unwrap(), header);
    let words = ["complete", "incomplete", "failed", "rejected"];
    for (line, word) in footers.iter().zip(words) {
        let r: Record = serde_json::from_str(line).unwrap();
        assert!(matches!(&r, Record::Footer { status, .. } if status.as_str() == word), "{r:?}");
        assert_eq!(serde_json::to_string(&r).unwrap(), *line);
    }
    // A footer status this version does not know is not a footer.
    assert!(serde_json::from_str::<Record>(
        r#"{"record":"footer","status":"done","ended_unix_s":1,"total_calls":0}"#
    )
    .is_err());
}

/// A short record written by the real writer: header, one call, a complete footer.
fn short_record(path: &Path) -> String {
    let mut w = RawWriter::create(path).unwrap();
    w.write(&Record::Header(Box::new(header()))).unwrap();
    w.write(&call(1)).unwrap();
    w.write(&Record::Footer {
        status: RunStatus::Complete,
        ended_unix_s: 2.0,
        total_calls: 1,
        reason: None,
        rejections: vec![],
    })
    .unwrap();
    w.sync().unwrap();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_line_is_read_up_to_its_limit_and_no_further() {
    let mut buf = Vec::new();
    let mut r = std::io::Cursor::new(b"abc\nabcd\nab".to_vec());
    assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Newline);
    assert_eq!(buf, b"abc");
    // Four bytes without a newline: refused having read limit + 1 bytes, not the rest.
    assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::TooLong);
    assert_eq!((buf.as_slice(), r.position()), (&b"abcd"[..], 8));
    assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Newline);
    assert!(buf.is_empty());
    assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Cut);
    assert_eq!(buf, b"ab");
    assert_eq!(read_line(&mut r, &mut buf, 3).unwrap(), LineEnd::Eof);
}

#[test]
fn a_line_longer_than_the_limit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let text = short_record(&path);
    let longest = text.lines().map(str::len).max().unwrap();
    assert!(read_limited(&path, longest).is_ok());
    let n = text.lines().position(|l| l.len() == longest).unwrap() + 1;
    let e = read_limited(&path, longest - 1).unwrap_err();
    assert!(matches!(e, RawError::LineTooLong { line, .. } if line == n), "{e}");
    assert!(e.to_string().starts_with(&format!("{}: line {n} runs past 32 MiB", path.display())), "{e}");
    // A file of zeros without a newline: line 1.
    std::fs::write(&path, vec![0u8; 100]).unwrap();
    assert!(matches!(read_limited(&path, 64), Err(RawError::LineTooLong { line: 1, .. })));
}

#[test]
fn only_a_last_line_without_its_newline_is_a_cut_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let text = short_record(&path);
    let n = text.lines().count();
    // Garbage after the footer, ended by a newline: bad input naming its line.
    std::fs::write(&path, format!("{text}garbage\n")).unwrap();
    let e = read(&path).unwrap_err();
    assert!(matches!(e, RawError::BadLine { line, .. } if line == n + 1), "{e}");
    // The same without the newline: a cut write.
    std::fs::write(&path, format!("{text}garbage")).unwrap();
    assert_eq!(read(&path).unwrap().truncated_tail.as_deref(), Some("garbage"));
    // A write cut inside a UTF-8 character is a cut write too; a complete line that is
    // not UTF-8 is bad input.
    let mut bytes = text.clone().into_bytes();
    bytes.extend_from_slice(&"{\"record\":\"é".as_bytes()[..12]);
    std::fs::write(&path, &bytes).unwrap();
    assert!(read(&path).unwrap().truncated_tail.is_some());
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let e = read(&path).unwrap_err().to_string();
    assert!(e.contains(&format!("line {} is not a valid record (not UTF-8 text", n + 1)), "{e}");
    // Blank lines are skipped, and a valid last line without its newline is read.
    std::fs::write(&path, format!("\n{}", text.trim_end())).unwrap();
    let run = read(&path).unwrap();
    assert!(run.complete && run.truncated_tail.is_none());
    assert_eq!(run.lines, [3, 4]);
}

#[test]
fn only_the_schema_versions_this_build_reads_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.jsonl");
    let text = short_record(&path);
    let at = format!("\"schema_version\":{SCHEMA_VERSION}");
    assert!(text.contains(&at));
    for v in [0, SCHEMA_VERSION + 1] {
        std::fs::write(&path, text.replacen(&at, &format!("\"schema_version\":{v}"), 1)).unwrap();
        let e = read(&path).unwrap_err();
        assert!(matches!(e, RawError::Version { found, .. } if found == v), "{e}");
        assert!(e.to_string().contains(&format!("reads ({MIN_SCHEMA_VERSION} to {SCHEMA_VERSION})")), "{e}");
    }
    std::fs::write(&path, text.replacen(&at, "\"schema_version\":1", 1)).unwrap();
    assert!(read(&path).is_ok());
}

#[test]
fn a_regular_files_digest_is_its_sha256_and_a_device_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x");
    std::fs::write(&path, b"abc").unwrap();
    assert_eq!(
        file_digest(&path).unwrap().as_deref(),
        Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
    #[cfg(unix)]
    assert_eq!(file_digest(Path::new("/dev/zero")).unwrap(), None);
}

#[test]
fn rejects_files_that_are_not_raw_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    std::fs::write(&path, "{\"hello\": 1}\n").unwrap();
    assert!(matches!(read(&path), Err(RawError::NoHeader { .. })));
}
