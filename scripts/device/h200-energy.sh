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
#   H200_QUICK=1     a short rehearsal (builtin:tiny exported, 1 cycle, 1 s blocks) for trying the script
#                    on a CPU machine with the stand-in NVML (LAYA_BENCH_NVML_LIB)
#   H200_PYTHON      an interpreter for `ref:` arms, when this binary has them (default python3)
#   H200_REF_DEVICE  the device laya's `ref:` arms run on (default cuda; `cpu` rehearses them
#                    on a machine without a GPU)
#   H200_PLAN        `first` (default): the first run's arms, the portable engine at FP32 and
#                    BF16 on the CPU and laya at its default precision on the GPU, 2 cycles;
#                    `claim`: GPU arms only, laya at FP32 (the baseline), FP16 and BF16
#                    autocast, 10 balanced cycles of 2 s blocks: enough cycles for intervals
#                    worth a claim, on a boundary (the GPU board) that holds every arm's work;
#                    `runtimes`: the claim's arms and laya-cuda (`cuda`, its FP16 CUDA engine)
#                    beside them, 10 balanced cycles of 2 s blocks; laya-cuda is first tried on
#                    one request and left out, with the reason logged, if it fails there
#   H200_STAND_INS=1 rehearse on a machine without CUDA or PyTorch: the stand-ins for laya
#                    0.4.15 and laya-cuda 0.1.1.post1 in fixtures/reference/ answer instead of
#                    the runtimes (fixed answers, never a measurement of a model)
#
# The device tool brings back at most 8 files from $OUT: when OUT is set, everything is written
# to a folder beside it and packed into $OUT/h200-run.tar.gz at the end (also on failure), with
# run.log and the two Markdown reports copied beside the archive for a first look.
#
# The whole script stays well under 8 minutes on the GPU machine: the first plan's energy run is
# 2 balanced cycles of the arms with 8 s blocks and 4 s idle windows (about 3 minutes with the
# loads), the claim plan's 60 blocks of 2 s between 2 s idle windows (about 5 minutes). NVML
# measures GPU board power only: the CPU arms' own energy is not in these figures (the GPU
# idles while they run); they show the board's idle power and the sensor's behaviour, the GPU
# arms its load.
set -uo pipefail

bin="${LAYA_BENCH_BIN:-dist/laya-bench}"
sensor="${H200_SENSOR:-nvml-energy:0}"
python="${H200_PYTHON:-python3}"
ref_device="${H200_REF_DEVICE:-cuda}"
plan="${H200_PLAN:-first}"
case "$plan" in first|claim|runtimes) ;; *) echo "H200_PLAN=$plan: use first, claim or runtimes" >&2; exit 2 ;; esac
stand_ins="${H200_STAND_INS:-0}"
work="$(mktemp -d)"
if [ -n "${OUT:-}" ]; then out="$work/h200-run"; else out="$PWD/h200-out"; fi
mkdir -p "$out"
log="$out/run.log"
finish() {
  if [ -n "${OUT:-}" ]; then
    tar -czf "$OUT/h200-run.tar.gz" -C "$work" h200-run
    for f in run.log energy.md summary.md; do [ -f "$out/$f" ] && cp "$out/$f" "$OUT/"; done
  fi
  rm -rf "$work"
}
trap finish EXIT

say() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$log"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

[ -x "$bin" ] || { say "no laya-bench binary at $bin (set LAYA_BENCH_BIN)"; exit 2; }
say "laya-bench: $("$bin" --version 2>&1)"
say "host: $(uname -a)"
command -v lscpu >/dev/null && lscpu >"$out/lscpu.txt" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
# NVML is loaded as libnvidia-ml.so.1 through the loader's path; where the driver's folder is
# not on it, name the file (doctor then says which one it opened).
if [ -z "${LAYA_BENCH_NVML_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [ -e "$d/libnvidia-ml.so.1" ]; then export LAYA_BENCH_NVML_LIB="$d/libnvidia-ml.so.1"; break; fi
  done
  say "libnvidia-ml.so.1 not in the loader's cache; LAYA_BENCH_NVML_LIB=${LAYA_BENCH_NVML_LIB:-unset}"
fi
command -v nvidia-smi >/dev/null && run nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit,temperature.gpu --format=csv

# 0. The sensor on its own, idle, polled every millisecond by nvidia-ml-py (where installed).
if "$python" -c 'import pynvml' 2>/dev/null; then
  say "\$ $python scripts/device/nvml_probe.py 4 > nvml-probe.json"
  "$python" scripts/device/nvml_probe.py 4 >"$out/nvml-probe.json" 2>>"$log"
fi

# 1. What this machine offers.
"$bin" doctor --json >"$out/doctor.json" 2>>"$log"
run "$bin" doctor

# 2. The model: synthetic:multilingual's shape, written as a checkpoint folder here (not
#    carried), so every arm, native or Python, loads the same weights.
if [ "${H200_QUICK:-0}" = 1 ]; then
  source_model=builtin:tiny
  timing=(--cycles 1 --seconds 1s --idle-seconds 1s --idle-discard 200ms --warmup 3)
else
  source_model=synthetic:multilingual
  timing=(--cycles 2 --seconds 8s --idle-seconds 4s --idle-discard 1s --warmup 5)
fi
if [ "$plan" != first ] && [ "${H200_QUICK:-0}" != 1 ]; then
  # 60 blocks: 2 s of calls (about 70 at laya's 28 ms on the H200), each between idle windows
  # of 2 s whose first second (board power's trailing average) is discarded.
  # The runtimes plan has 4 arms: 80 blocks, about 6 minutes with the loads.
  timing=(--cycles 10 --seconds 2s --idle-seconds 2s --idle-discard 1s --warmup 5)
fi
model="$work/ckpt"
run "$bin" export --model "$source_model" --output "$model" || exit 1

# Python runtimes carried as wheels (`prepare.sh` puts laya's there): installed without their
# dependencies (PyTorch, transformers and tokenizers are on the GPU machine) into a folder.
if [ "$stand_ins" = 1 ]; then
  say "STAND-INS: fixtures/reference/fake_laya and fake_laya_cuda answer for laya and laya-cuda (fixed answers; a rehearsal, not a measurement of a model)"
  export PYTHONPATH="$PWD/fixtures/reference/fake_laya:$PWD/fixtures/reference/fake_laya_cuda${PYTHONPATH:+:$PYTHONPATH}"
elif ls dist/wheels/*.whl >/dev/null 2>&1; then
  run "$python" -m pip install --quiet --no-deps --no-index --target "$work/py" dist/wheels/*.whl &&
    export PYTHONPATH="$work/py${PYTHONPATH:+:$PYTHONPATH}"
fi
laya_ok() {
  [ "$stand_ins" = 1 ] && return 0
  "$python" -c 'import torch, laya, sys; sys.exit(0 if sys.argv[1] == "cpu" or torch.cuda.is_available() else 1)' "$ref_device" 2>>"$log"
}

# What else could run Laya here: every published runtime and the engines under them, as this
# interpreter finds them (nothing is installed for this but the wheels carried in dist/).
if [ "$plan" = runtimes ]; then
  say "\$ $python scripts/device/runtime_survey.py > runtimes.json"
  "$python" scripts/device/runtime_survey.py >"$out/runtimes.json" 2>>"$log"
  cat "$out/runtimes.json" >>"$log"
fi

# 3. The arms: the portable engine on the machine's cores at FP32 and BF16; and, where this
#    binary has `ref:` arms and the interpreter has PyTorch with CUDA and laya, laya on the GPU.
#    The claim plan: laya alone, at three precisions, on the GPU (on a CPU rehearsal, FP32 and
#    BF16, the two laya offers there).
if [ "$plan" = first ]; then arms=(--arm p32=portable:f32 --arm pbf16=portable:bf16); else arms=(); fi
if grep -q '"spec": *"ref:' "$out/doctor.json" && laya_ok; then
  if [ "$plan" != first ]; then
    arms+=(--arm t32=ref:laya:"$model":"$ref_device":fp32)
    [ "$ref_device" = cpu ] || arms+=(--arm t16=ref:laya:"$model":"$ref_device":fp16)
    arms+=(--arm tbf16=ref:laya:"$model":"$ref_device":bf16)
  else
    arms+=(--arm torch=ref:laya:"$model":"$ref_device")
  fi
  export LAYA_BENCH_PYTHON="$python"
  say "ref:laya on $ref_device: included (torch $("$python" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA")' 2>/dev/null || echo 'stand-in'))"
else
  say "ref:laya on $ref_device: not included (this binary has no ref: arms, or $python lacks torch with CUDA or laya)"
  [ "$plan" != first ] && { say "the $plan plan has no arm without it"; exit 1; }
fi
# laya-cuda: its wheel pins cupy-cuda12x and CUDA 12's runtime wheels; the machine has CUDA 13's.
# Installed without its dependencies beside what the machine has; the versions it then runs on
# are logged here and recorded in its arm (cupy's CUDA runtime and driver). Tried on one request
# first, so a failure leaves it out of the energy run instead of spoiling it.
if [ "$plan" = runtimes ]; then
  if [ "$stand_ins" != 1 ] && ls dist/wheels-cuda/*.whl >/dev/null 2>&1; then
    run "$python" -m pip install --quiet --no-deps --no-index --target "$work/pycuda" dist/wheels-cuda/*.whl &&
      export PYTHONPATH="$work/pycuda${PYTHONPATH:+:$PYTHONPATH}"
  fi
  say "packages laya-cuda runs on here:"
  "$python" -m pip list 2>/dev/null | grep -iE '^(cupy|nvidia-cuda-runtime|nvidia-cuda-nvrtc|nvidia-cublas|numpy|tokenizers|safetensors|torch|transformers) ' | tee -a "$log"
  cuda_arm="ref:laya-cuda:$model:cuda:0"
  if run timeout 150 "$bin" predict --model "$model" --backend "$cuda_arm" --json \
      --state 'The customer wants a refund.' \
      --questions '{"refund": {"type": "noul", "instructions": "Refund asked for?"}}'; then
    arms+=(--arm cuda="$cuda_arm")
    say "laya-cuda: included"
  else
    say "laya-cuda: not included (its one-request try above failed)"
  fi
fi

# 4. The energy run. Board power of an H200 reaches 700 W: the cap is loose on purpose.
raw="$out/h200.raw.jsonl"
run "$bin" energy --no-progress --model "$model" "${arms[@]}" --sensor "$sensor" \
  --max-watts 1200 "${timing[@]}" --raw "$raw" --output "$out/energy.json" \
  --export-markdown "$out/energy.md" --export-csv "$out/energy.csv"
energy_rc=$?
say "energy exit $energy_rc"
command -v nvidia-smi >/dev/null && run nvidia-smi --query-gpu=power.draw,temperature.gpu,clocks.sm --format=csv

# 5. The audit: every figure re-derived from the raw record alone.
if [ -f "$raw" ]; then
  run "$bin" summary "$raw" --output "$out/summary.json" --markdown "$out/summary.md" \
    --csv "$out/summary.csv" --plots "$out/plots"
  say "summary exit $?"
fi
# 6. laya-cuda, probed apart from the energy run so a failure cannot spoil it: its wheel pins
#    cupy-cuda12x and the CUDA 12 runtime, the machine has cupy-cuda13x and CUDA 13; installed
#    without its dependencies, does its engine load and answer one request on this GPU?
if [ "$plan" = first ] && [ "$ref_device" = cuda ] && ls dist/wheels-cuda/*.whl >/dev/null 2>&1; then
  run "$python" -m pip install --quiet --no-deps --no-index --target "$work/pycuda" dist/wheels-cuda/*.whl
  say "installed beside it:"
  "$python" -m pip list 2>/dev/null | grep -iE '^(cupy|nvidia-cuda-runtime|nvidia-cublas|torch|transformers|tokenizers) ' | tee -a "$log"
  PYTHONPATH="$work/pycuda:${PYTHONPATH:-}" run timeout 150 "$bin" predict --model "$model" \
    --backend ref:laya-cuda:"$model":cuda:0 --state 'The customer wants a refund.' \
    --questions '{"refund": {"type": "noul", "instructions": "Refund asked for?"}}'
  say "laya-cuda probe exit $?"
fi
say "done; files in $out${OUT:+ (packed into $OUT/h200-run.tar.gz)}"
exit "$energy_rc"
