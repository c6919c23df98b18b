#!/usr/bin/env bash
# Run a fixed list of deterministic laya-bench commands with the binary $1 and write each
# one's stdout, stderr, exit code and written files under $2. Two binaries (before and after a
# refactor) are compared with `diff -r OUT_A OUT_B`: every output must be byte-identical.
# Commands whose output measures time are left out (they differ run to run); their record
# format is covered by the `summary` runs over committed records below.
set -u
bin=$(realpath "$1"); out=$(realpath -m "$2"); repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"; cd "$repo" || exit 2
n=0
run() { # run NAME ARGS... (in a fresh folder $out/NAME.d, so written files are kept)
  local name=$1; shift; n=$((n + 1))
  local d="$out/$name.d"; mkdir -p "$d"
  (cd "$d" && "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"; echo $? >"$out/$name.rc")
}
normalize() { # what differs between two binaries of the same behaviour: paths, revision, clocks
  find "$out" -type f \( -name '*.out' -o -name '*.err' -o -name '*.json' -o -name '*.md' -o -name '*.csv' -o -name '*.svg' \) \
    -exec sed -i -E "s#$bin#BIN#g; s#$out#OUT#g; s#$repo#REPO#g; \
      s#\"git_revision\": \"[0-9a-f]+(-dirty)?\"#\"git_revision\": \"REV\"#; \
      s#\"seconds\": [0-9.e-]+#\"seconds\": S#" {} +
}
R=$repo
suite=$out/small-suite.json
cat >"$suite" <<'JSON'
{"schema_version": 1, "name": "small", "states": {"refund": "I was charged twice for order 5521. Please refund the second charge.", "late": "Where is my parcel? Tracking has said in transit for nine days."}, "questions": [{"id": "n-refund", "state": "refund", "question": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}, {"id": "c-topic", "state": "refund", "question": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "shipping", "account", "product"]}}, {"id": "s-urgency", "state": "late", "question": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "medium", "high"]}}]}
JSON
run predict-invoice predict --request $R/fixtures/requests/invoice.json --json
run predict-support predict --request $R/fixtures/requests/support.json --json --explain
run predict-text predict --request $R/fixtures/requests/support.json
run bounds bounds --json
run bounds-ml bounds --model synthetic:multilingual --workload invoice --precision w8 --profile m3-max --json
run bounds-text bounds --model synthetic:multilingual --baseline-ms 12 --fraction 0.8
run doctor doctor --json
run doctor-text doctor
run convert-f16 convert-check --source builtin:tiny --candidate portable:f16 --suite $suite --repeats 2 --output r.json
run convert-w8 convert-check --source builtin:tiny --candidate portable:w8 --suite $suite --repeats 1 --output r.json
run verify verify --goldens $R/fixtures/goldens/forward.json --output r.json
run palettize palettize --bits 6 --output p.safetensors --json
run export export --output m
run trace-sum trace summarize --hardware-xml $R/fixtures/trace/synthetic_ane_hw_intervals.xml --toc-xml $R/fixtures/trace/synthetic_toc.xml --signpost-xml $R/fixtures/trace/synthetic_coreml_os_signpost.xml --json
run trace-sum-text trace summarize --hardware-xml $R/fixtures/trace/synthetic_ane_hw_intervals.xml --toc-xml $R/fixtures/trace/synthetic_toc.xml
for run_dir in docs/runs/2026-12-04-h200 docs/runs/2026-12-04-h200-claim; do
  b=$(basename $run_dir)
  run "summary-$b" summary $R/$run_dir/h200.raw.jsonl --output s.json --markdown s.md --csv s.csv --plots p
  run "summary-$b-whole" summary $R/$run_dir/h200.raw.jsonl --whole-cycles --bootstrap 200 --seed 3
done
# failures: message and exit code
run err-no-file summary /nonexistent.raw.jsonl
run err-bad-json summary $R/fixtures/requests/invoice.json
run err-bad-spec speed --arm a=nosuch:x
run err-bad-model predict --model nosuch:x --request $R/fixtures/requests/invoice.json
run err-bad-request predict --request /nonexistent.json
run err-bad-sensor energy --sensor nosuch --arm a=mock:ok
run err-bad-goldens verify --goldens $R/fixtures/requests/invoice.json
run err-bad-suite convert-check --source builtin:tiny --output r.json --candidate portable:f16 --suite $R/fixtures/requests/invoice.json
run err-trace-bad trace summarize --hardware-xml $R/fixtures/trace/malformed_truncated.xml --toc-xml $R/fixtures/trace/synthetic_toc.xml
HF_HUB_OFFLINE=1 HF_HOME=$out/hf run err-hub predict --model hub:laya --request $R/fixtures/requests/invoice.json
run err-backend doctor --backend portable:nosuch
normalize
echo "$n commands, outputs in $out"
