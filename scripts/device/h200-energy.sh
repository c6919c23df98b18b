#!/usr/bin/env bash
# The first energy run on a real power sensor: an NVIDIA GPU read through NVML (issue: NVML on
# the GPU machine). Runs on the lent GPU machine from the repository root, with a laya-bench
# release binary built elsewhere and carried with the working tree; writes everything under
# $OUT (or ./h200-out): doctor's survey, the raw record, the energy report, the summary (JSON,
# Markdown, CSV) and its SVG plots, and a log of every command.
#
#   LAYA_BENCH_BIN   the binary (default dist/laya-bench; `scripts/device/prepare.sh` builds it)
#   H200_SENSOR      the sensor (default nvml-energy:0: the counter is the total, board power
#                    is recorded beside it and cross-checked per block)
#   H200_QUICK=1     a short rehearsal (builtin:tiny, 1 cycle, 1 s blocks) for trying the script
#                    on a CPU machine with the stand-in NVML (LAYA_BENCH_NVML_LIB)
#   H200_PYTHON      an interpreter for `ref:` arms, when this binary has them (default python3)
#
# The whole script stays well under 8 minutes on the GPU machine: the energy run is 2 balanced
# cycles of the arms with 12 s blocks and 6 s idle windows. NVML measures GPU board power only:
# the CPU arms' own energy is not in these figures (the GPU idles while they run); they show
# the board's idle power and the sensor's behaviour, the GPU arms its load.
set -uo pipefail

out="${OUT:-$PWD/h200-out}"
mkdir -p "$out"
log="$out/run.log"
bin="${LAYA_BENCH_BIN:-dist/laya-bench}"
sensor="${H200_SENSOR:-nvml-energy:0}"
python="${H200_PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$log"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

[ -x "$bin" ] || { say "no laya-bench binary at $bin (set LAYA_BENCH_BIN)"; exit 2; }
say "laya-bench: $("$bin" --version 2>&1)"
say "host: $(uname -a)"
command -v nvidia-smi >/dev/null && nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
command -v nvidia-smi >/dev/null && run nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit,temperature.gpu --format=csv

# 1. What this machine offers.
"$bin" doctor --json >"$out/doctor.json" 2>>"$log"
run "$bin" doctor

# 2. The model: synthetic:multilingual's shape, written as a checkpoint folder here (not
#    carried), so every arm, native or Python, loads the same weights.
if [ "${H200_QUICK:-0}" = 1 ]; then
  model=builtin:tiny
  timing=(--cycles 1 --seconds 1s --idle-seconds 1s --idle-discard 200ms --warmup 3)
else
  model="$work/ckpt-multilingual"
  run "$bin" export --model synthetic:multilingual --output "$model" || exit 1
  timing=(--cycles 2 --seconds 12s --idle-seconds 6s --idle-discard 1s --warmup 5)
fi

# Python runtimes carried as wheels (`prepare.sh` puts laya's there): installed without their
# dependencies (PyTorch, transformers and tokenizers are on the GPU machine) into a folder.
if ls dist/wheels/*.whl >/dev/null 2>&1; then
  run "$python" -m pip install --quiet --no-deps --no-index --target "$work/py" dist/wheels/*.whl &&
    export PYTHONPATH="$work/py${PYTHONPATH:+:$PYTHONPATH}"
fi

# 3. The arms: the portable engine on the machine's cores at FP32 and BF16; and, where this
#    binary has `ref:` arms and the interpreter has PyTorch with CUDA and laya, laya on the GPU.
arms=(--arm p32=portable:f32 --arm pbf16=portable:bf16)
if grep -q '"spec": *"ref:' "$out/doctor.json" &&
   "$python" -c 'import torch, laya, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>>"$log"; then
  arms+=(--arm torch=ref:laya:"$model":cuda)
  say "ref:laya on cuda: included (torch $("$python" -c 'import torch; print(torch.__version__)'))"
else
  say "ref:laya on cuda: not included (this binary has no ref: arms, or $python lacks torch with CUDA or laya)"
fi

# 4. The energy run. Board power of an H200 reaches 700 W: the cap is loose on purpose.
raw="$out/h200.raw.jsonl"
run "$bin" energy --no-progress --model "$model" "${arms[@]}" --sensor "$sensor" \
  --max-watts 1200 "${timing[@]}" --raw "$raw" --output "$out/energy.json" \
  --export-markdown "$out/energy.md" --export-csv "$out/energy.csv"
energy_rc=$?
say "energy exit $energy_rc"

# 5. The audit: every figure re-derived from the raw record alone.
if [ -f "$raw" ]; then
  run "$bin" summary "$raw" --output "$out/summary.json" --markdown "$out/summary.md" \
    --csv "$out/summary.csv" --plots "$out/plots"
  say "summary exit $?"
fi
say "done; files in $out"
exit "$energy_rc"
