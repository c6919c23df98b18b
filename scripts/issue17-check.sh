#!/usr/bin/env bash
# Issue 17's "done when", in one go on the machine it runs on: the interleaved forward bench of
# every precision arm (with PyTorch FP32 eager beside it when --torch is given), then
# convert-check's gates for f16, bf16 and w8 on `synthetic:multilingual` (--repeats 2) and for
# every arm on `builtin:tiny` (scripts/convert-check-tiny.sh, --repeats 100). Everything goes to
# one folder; the last lines printed are the CPU, the bench's verdicts and the gates' verdicts.
#
#   scripts/issue17-check.sh [--torch PYTHON] [--laya-coreml DIR] [--out DIR] [--iters N]
#
# --torch PYTHON: a Python with torch, numpy, safetensors and tokenizers, and --laya-coreml DIR
# (or LAYA_COREML_DIR) the folder that holds the unpacked laya-coreml 0.5.1 wheel's
# `laya_coreml/` (scripts/laya_ref.py says how to get it); without --torch the PyTorch row and
# its criterion are left out. --out defaults to a new folder under /tmp; --iters to 20 rounds.
# Run it on a quiet machine: it takes about 15 minutes of both CPUs, and the bench's verdicts
# are only as good as the host's steadiness (docs/PERFORMANCE.md). Exit 0 when it ran to the
# end (whatever the verdicts), 1 when a step failed, 2 on bad usage.
set -euo pipefail

torch=""
out=""
iters=20
coreml="${LAYA_COREML_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) shift; torch="${1:?--torch needs a python}" ;;
    --laya-coreml) shift; coreml="${1:?--laya-coreml needs a folder}" ;;
    --out) shift; out="${1:?--out needs a folder}" ;;
    --iters) shift; iters="${1:?--iters needs a number}" ;;
    *) echo "issue17-check: unknown option $1 (use --torch, --laya-coreml, --out, --iters)" >&2; exit 2 ;;
  esac
  shift
done
case "$iters" in '' | *[!0-9]*) echo "issue17-check: --iters takes a whole number, not $iters" >&2; exit 2 ;; esac
if [ -n "$torch" ] && [ ! -d "$coreml/laya_coreml" ]; then
  echo "issue17-check: --torch needs --laya-coreml DIR (or LAYA_COREML_DIR) holding laya_coreml/" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
out="${out:-$(mktemp -d /tmp/issue17-check.XXXXXX)}"
mkdir -p "$out"
say() { echo "issue17-check: $*"; }

say "building (release) ..."
cargo build --release --benches --quiet || { say "the build failed"; exit 1; }
bin=target/release/laya-bench

say "forward bench, $iters interleaved rounds -> $out/bench.log"
bench=(cargo bench --quiet --bench forward -- --precision f32,f16,bf16,w8 --interleave --iters "$iters")
[ -n "$torch" ] && bench+=(--torch "$torch")
LAYA_COREML_DIR="$coreml" "${bench[@]}" >"$out/bench.log" 2>&1 || { say "the bench failed (see $out/bench.log)"; exit 1; }

gates="$out/gates.txt"
: >"$gates"
for p in f16 bf16 w8; do
  say "convert-check synthetic:multilingual portable:$p --repeats 2"
  # exit 1 is a failed gate, which is a verdict to report, not a failed step
  set +e
  "$bin" convert-check --source synthetic:multilingual --candidate "portable:$p" --repeats 2 \
    --output "$out/multilingual-$p.json" >"$out/multilingual-$p.log" 2>&1
  rc=$?
  set -e
  [ "$rc" -le 1 ] || { say "convert-check failed with exit $rc (see $out/multilingual-$p.log)"; exit 1; }
  python3 - "$out/multilingual-$p.json" "$p" >>"$gates" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]
print(f"synthetic:multilingual portable:{sys.argv[2]}: {r['verdict']}, {s['fitting']}, max drift {s['max_drift']:.6f}")
PY
done
say "convert-check builtin:tiny, every arm, --repeats 100"
scripts/convert-check-tiny.sh "$bin" --repeats 100 >"$out/tiny.md" 2>&1 || { say "the tiny gates failed to run (see $out/tiny.md)"; exit 1; }
grep '^| `portable:' "$out/tiny.md" | sed 's/^/builtin:tiny /' >>"$gates"

echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"
sed -n '/^speed targets/,$p' "$out/bench.log"
echo
cat "$gates"
echo
say "everything is in $out"
