//! Recording format tests (docs/snake.md §6.2, §7 test 8).
use super::*;
use crate::snake::game::Direction;
use crate::snake::policy::{decide, ModelError, PolicyConfig};
use serde_json::json;

fn stats(interventions: u64, round: u64) -> FrameStats {
    FrameStats {
        hardware: "test-cpu".into(),
        engine: "CPU · FP16".into(),
        guarded: true,
        interventions,
        best: 0,
        round,
        paused: false,
        elapsed: 0.0,
        steps_per_second: None,
    }
}

fn metadata() -> Metadata {
    let model = json!({"name": "stub", "engine": "CPU · FP16", "prompt": "compact"});
    let settings = json!({"width": 6, "height": 6, "seed": 3, "initial_length": 2});
    Metadata {
        format: RECORDING_FORMAT.into(),
        created_utc: "2025-01-01T00:00:00+00:00".into(),
        model: model.as_object().unwrap().clone(),
        settings: settings.as_object().unwrap().clone(),
        note: "test".into(),
    }
}

/// A stub model that prefers UP, so the shield intervenes whenever UP is unsafe.
fn up_model(_: &Value, _: &Value) -> Result<Value, ModelError> {
    Ok(json!({
        "answers": {
            "move": {"type": "choice", "probabilities": {
                "UP": 0.7, "DOWN": 0.1, "LEFT": 0.1, "RIGHT": 0.1}},
            "risk": {"type": "noul", "noul": 0.9},
            "food": {"type": "noul", "noul": 0.8},
        },
        "usage": {"input_tokens": 100, "output_tokens": 0},
    }))
}

/// Record a play run the way the CLI does: rounds restart with seed + round - 1.
fn record_run(seed: i64, steps: usize) -> Vec<Record> {
    let mut records = vec![Record::Metadata(metadata())];
    let mut round = 1u64;
    let mut game = Game::new(6, 6, seed, 2).unwrap();
    let mut interventions = 0u64;
    let mut best = 0usize;
    let mut at = 0.0f64;
    let mut model = up_model;
    for _ in 0..steps {
        let decision = decide(&game, &mut model, PolicyConfig::default()).unwrap();
        interventions += u64::from(decision.intervened);
        best = best.max(game.score());
        at += 0.01;
        let mut s = stats(interventions, round);
        s.best = best;
        s.elapsed = at;
        records.push(Record::Frame(Box::new(Frame {
            at,
            game: game.snapshot(),
            decision: decision.clone(),
            stats: s,
        })));
        game.step(decision.executed).unwrap();
        if game.finished() {
            records.push(Record::RoundEnd(RoundEnd { at: at + 0.001, game: game.snapshot() }));
            round += 1;
            game = Game::new(6, 6, seed + round as i64 - 1, 2).unwrap();
        }
    }
    records.push(Record::End(End {
        summary: Summary {
            steps: steps as u64,
            inference_calls: steps as u64,
            seconds: at,
            steps_per_second: steps as f64 / at,
            score: game.score(),
            length: game.body().len(),
            best_score: best,
            interventions,
            deaths: 0,
            guarded: true,
            network: "offline".into(),
            engine: "CPU · FP16".into(),
            mean_inference_ms: Some(0.01),
        },
        game: game.snapshot(),
    }));
    records
}

fn to_bytes(records: &[Record]) -> Vec<u8> {
    let mut writer = RecordingWriter::new(Vec::new());
    for r in records {
        writer.write(r).unwrap();
    }
    writer.into_inner()
}

#[test]
fn records_round_trip_through_jsonl() {
    let records = record_run(3, 400);
    let bytes = to_bytes(&records);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(text.lines().count(), records.len());
    assert!(text.starts_with("{\"type\":\"metadata\",\"format\":\"laya-coreml-snake-v1\""));
    assert!(text.contains("{\"type\":\"frame\",\"at\":0.01,\"game\":{\"width\":6"));
    let recording = read_recording(bytes.as_slice()).unwrap();
    assert_eq!(recording.records, records);
    assert_eq!(recording.metadata, metadata());
    assert_eq!(recording.frames().count(), 400);
    assert!(recording.end().is_some());
    // Writing the parsed records again gives the same bytes.
    assert_eq!(to_bytes(&recording.records), bytes);
}

#[test]
fn replay_reproduces_every_frame_across_rounds() {
    let records = record_run(3, 400);
    let recording = read_recording(to_bytes(&records).as_slice()).unwrap();
    let summary = replay(&recording).unwrap();
    assert_eq!(summary.frames, 400);
    assert!(summary.rounds >= 2, "400 steps on 6x6 clear the board at least once");
    assert!(summary.interventions > 0);
}

#[test]
fn replay_detects_a_tampered_executed_move() {
    let mut records = record_run(3, 60);
    if let Record::Frame(frame) = &mut records[10] {
        let other = Direction::ALL
            .into_iter()
            .find(|d| *d != frame.decision.executed && frame.decision.safe_directions.contains(d));
        frame.decision.executed = other.unwrap_or(Direction::Up);
    }
    let recording = read_recording(to_bytes(&records).as_slice()).unwrap();
    assert!(matches!(replay(&recording), Err(RecordingError::Diverged { .. } | RecordingError::Game { .. })));
}

#[test]
fn replay_detects_a_wrong_intervention_count() {
    let mut records = record_run(3, 60);
    if let Record::End(end) = records.last_mut().unwrap() {
        end.summary.interventions += 1;
    }
    let recording = read_recording(to_bytes(&records).as_slice()).unwrap();
    match replay(&recording) {
        Err(RecordingError::Diverged { frame, problem }) => {
            assert_eq!(frame, 60);
            assert!(problem.contains("summary.interventions"));
        }
        other => panic!("expected divergence, got {other:?}"),
    }
}

#[test]
fn reader_requires_metadata_and_a_frame() {
    let records = record_run(3, 5);
    let without_metadata = to_bytes(&records[1..]);
    assert!(matches!(read_recording(without_metadata.as_slice()), Err(RecordingError::Incomplete)));
    let metadata_only = to_bytes(&records[..1]);
    let error = read_recording(metadata_only.as_slice()).unwrap_err();
    assert_eq!(error.to_string(), "Recording must contain metadata and real decision frames");
}

#[test]
fn reader_rejects_timestamps_that_do_not_strictly_increase() {
    for bad_at in [0.02, 0.01, -1.0] {
        let mut records = record_run(3, 5);
        // Frames are at 0.01, 0.02, ...; set the third frame's time.
        if let Record::Frame(frame) = &mut records[3] {
            frame.at = bad_at;
        }
        let error = read_recording(to_bytes(&records).as_slice()).unwrap_err();
        assert!(matches!(error, RecordingError::Timestamps { frame: 2, .. }), "{bad_at}: {error}");
        assert!(error.to_string().starts_with("Recording timestamps must strictly increase"));
    }
}

#[test]
fn reader_reports_the_line_of_a_bad_record() {
    let mut bytes = to_bytes(&record_run(3, 3));
    bytes.extend_from_slice(b"{\"type\":\"mystery\"}\n");
    match read_recording(bytes.as_slice()) {
        Err(RecordingError::Json { line, .. }) => assert_eq!(line, 6),
        other => panic!("expected a JSON error, got {other:?}"),
    }
}

#[test]
fn a_last_line_cut_short_is_left_out_and_any_other_bad_line_is_not() {
    let whole = to_bytes(&record_run(3, 3));
    let lines = whole.iter().filter(|&&b| b == b'\n').count();
    let full = read_recording(whole.as_slice()).unwrap();
    assert_eq!(full.cut_line, None);
    // The last record cut 10 bytes in (a killed run): every line before it is read.
    let start = whole[..whole.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let cut = read_recording(&whole[..start + 10]).unwrap();
    assert_eq!(cut.cut_line, Some(lines));
    assert_eq!(cut.records, full.records[..lines - 1]);
    // Without its newline but not cut short (a whole record of an unknown type, or text that
    // is not JSON): an error naming the line, as anywhere else.
    for tail in [&b"{\"type\":\"mystery\"}"[..], b"garbage"] {
        let mut bytes = whole.clone();
        bytes.extend_from_slice(tail);
        match read_recording(bytes.as_slice()) {
            Err(RecordingError::Json { line, .. }) => assert_eq!(line, lines + 1),
            other => panic!("expected a JSON error, got {other:?}"),
        }
    }
}

#[test]
fn reader_accepts_python_style_lines() {
    // The reference writes metadata, round_end and end lines with `json.dumps` defaults
    // (", " and ": " separators) and integer 0 for unset float stats.
    let frame = "{\"type\": \"frame\", \"at\": 0.5, \"game\": {\"width\": 24, \"height\": 16, \
        \"seed\": 7, \"body\": [[12, 8], [11, 8], [10, 8], [9, 8], [8, 8], [7, 8]], \
        \"food\": [20, 7], \"score\": 0, \"length\": 6, \"ticks\": 0, \"alive\": true, \
        \"won\": false, \"death_reason\": null}, \"decision\": {\"probabilities\": {\"UP\": 0.1, \
        \"DOWN\": 0.7, \"LEFT\": 0.0, \"RIGHT\": 0.2}, \"proposed\": \"DOWN\", \"executed\": \
        \"DOWN\", \"safe_directions\": [\"DOWN\", \"RIGHT\"], \"intervened\": false, \
        \"dead_end_risk\": 0.030000000000000027, \"food_reachable\": 0.9, \"inference_ms\": 3.2, \
        \"decision_ms\": 3.9, \"input_tokens\": 141, \"output_tokens\": 0, \"safe_count\": 2, \
        \"planner_best\": \"DOWN\"}, \"stats\": {\"hardware\": \"M4\", \"engine\": \
        \"CPU+ANE · W8/FP16\", \"guarded\": true, \"interventions\": 0, \"best\": 0, \
        \"round\": 1, \"paused\": false, \"elapsed\": 0, \"steps_per_second\": 0}}";
    let meta = "{\"type\": \"metadata\", \"format\": \"laya-coreml-snake-v1\", \
        \"created_utc\": \"2025-01-01T00:00:00.000000+00:00\", \"model\": {}, \
        \"settings\": {\"record\": \"run.jsonl\", \"duration\": null}, \"note\": \"n\"}";
    let text = format!("{meta}\n{frame}\n");
    let recording = read_recording(text.as_bytes()).unwrap();
    let frame = recording.frames().next().unwrap();
    assert_eq!(frame.decision.executed, Direction::Down);
    assert_eq!(frame.stats.elapsed, 0.0);
    assert_eq!(replay(&recording).unwrap().frames, 1);
}

#[test]
fn a_recording_file_is_created_new_with_its_metadata_line_and_never_replaced() {
    use crate::error::Classify;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    check_new_path(&path).unwrap();
    drop(create(&path, metadata()).unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.starts_with("{\"type\":\"metadata\",\"format\":\"laya-coreml-snake-v1\""), "{text}");
    let exists = check_new_path(&path).unwrap_err();
    assert_eq!(exists.kind(), crate::error::Kind::Input);
    assert!(exists
        .to_string()
        .ends_with("the file exists; recordings are never overwritten, choose a new path"));
    let again = create(&path, metadata()).unwrap_err();
    assert_eq!(again.kind(), crate::error::Kind::Input);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "the first recording is kept");
    let no_folder = check_new_path(&dir.path().join("nodir/run.jsonl")).unwrap_err();
    assert_eq!(no_folder.kind(), crate::error::Kind::Input);
}
