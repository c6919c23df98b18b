#!/usr/bin/env bash
# Measure `laya-bench convert-check` on builtin:tiny for every portable precision and for
# palette files that palettize every projection matrix (the tiny model's matrices are all below
# the default 65,536-element threshold). Prints the Markdown table of docs/convert-check.md.
# Usage: scripts/convert-check-tiny.sh [path/to/laya-bench] [extra convert-check flags...]
set -euo pipefail
bin=${1:-target/release/laya-bench}
shift || true
out=$(mktemp -d)
for bits in 8 6 4; do
  "$bin" palettize --model builtin:tiny --bits "$bits" --above-elements 0 --output "$out/p$bits.safetensors" >/dev/null
done
echo "| candidate | fitting | max drift | set by | failed | allowed flips | verdict | payload MB (source → candidate) |"
echo "|---|---|---:|---|---:|---:|---|---|"
for cand in portable:f16 portable:bf16 portable:w8 portable:w6 portable:w4 \
            "portable:palette:$out/p8.safetensors" "portable:palette:$out/p6.safetensors" "portable:palette:$out/p4.safetensors"; do
  name=${cand//\//_}
  "$bin" convert-check --source builtin:tiny --candidate "$cand" --output "$out/$name.json" "$@" >/dev/null 2>&1 || true
  python3 - "$out/$name.json" "$cand" "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]; p = r["package"]
cand = sys.argv[2].replace(sys.argv[3] + "/", "")
d = s["max_drift"]
print(f"| `{cand}` | {s['fitting']} | {d:.6f} | `{s['max_drift_question']}` | {len(s['failed'])} | {len(s['allowed_flips'])} | {r['verdict']} | "
      f"{p['source']['weight_payload_mb']:.3f} → {p['candidate']['weight_payload_mb']:.3f} |")
PY
done
rm -rf "$out"
