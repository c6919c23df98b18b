#!/usr/bin/env bash
# Make the Python environment `ref:` arms run in (docs/reference-runtimes.md): a venv at
#   ${LAYA_BENCH_REF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/laya-bench/ref-venv}
# with the published runtimes that run on Linux: laya-mlx 0.5.0 on MLX's CPU build
# (mlx==0.32.2 + mlx-cpu==0.32.2) and laya-apple 1.7.0 (its MLX path). laya (PyTorch) is big,
# so it is opt-in: --with-torch. laya-bench finds the venv's python by itself (after
# $LAYA_BENCH_PYTHON, before python3).
#
#   scripts/setup-ref.sh [--with-torch] [--wheels DIR]
#
# --wheels DIR installs the laya-* wheels from DIR instead of PyPI (the pinned versions).
# Needs python3 >= 3.11 with venv (PYTHON=/path/to/python to choose one).
set -euo pipefail
python="${PYTHON:-python3}"
venv="${LAYA_BENCH_REF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/laya-bench/ref-venv}"
with_torch=0
wheels=""
while [ $# -gt 0 ]; do
  case "$1" in
    --with-torch) with_torch=1 ;;
    --wheels) shift; wheels="${1:?--wheels needs a folder}" ;;
    *) echo "setup-ref: unknown option $1 (use --with-torch, --wheels DIR)" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "setup-ref: $*"; }
command -v "$python" >/dev/null 2>&1 || { echo "setup-ref: $python not found (set PYTHON=...)" >&2; exit 2; }
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
pkg() { # name==version: from --wheels when given, else PyPI
  local name="${1%%==*}" version="${1##*==}"
  if [ -n "$wheels" ]; then
    local f
    f=$(ls "$wheels"/"${name//-/_}"-"$version"-*.whl 2>/dev/null | head -n1)
    [ -n "$f" ] && { echo "$f"; return; }
  fi
  echo "$1"
}
case "$(uname -s)" in
  Linux) mlx=(mlx==0.32.2 mlx-cpu==0.32.2) ;;
  *) mlx=(mlx==0.32.2) ;;
esac
say "installing ${mlx[*]}, laya-mlx 0.5.0, laya-apple 1.7.0"
"${pip[@]}" "${mlx[@]}" "$(pkg laya-mlx==0.5.0)" "$(pkg laya-apple==1.7.0)"
if [ "$with_torch" = 1 ]; then
  say "installing laya 0.4.15 with PyTorch (CPU wheels on Linux)"
  case "$(uname -s)" in
    # PyTorch's CPU index is far smaller; where it cannot be reached (a machine that sees only
    # the package registries), PyPI's build, which brings its CUDA libraries (some GB) and runs
    # on the CPU as well.
    Linux) "${pip[@]}" --timeout 20 --retries 1 --index-url https://download.pytorch.org/whl/cpu torch \
      || { say "PyTorch's CPU index is unreachable; installing torch from PyPI (with its CUDA libraries)"
           "${pip[@]}" torch; } ;;
  esac
  "${pip[@]}" "$(pkg laya==0.4.15)"
fi
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
for p in ("mlx", "laya-mlx", "laya-apple", "laya"):
    try:
        print(f"setup-ref: {p} {m.version(p)}")
    except m.PackageNotFoundError:
        pass
PY
say "ready: $venv/bin/python (laya-bench finds it; or export LAYA_BENCH_PYTHON=$venv/bin/python)"
