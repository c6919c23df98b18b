#!/usr/bin/env bash
# Installs what `cargo build --features mlx` needs on Linux, with nothing fetched at build time:
#   - the pinned MLX wheels from PyPI (`mlx` + `mlx-cpu`, the version mlx-sys 0.7.0's mlx-c pins)
#     into a cache folder the build finds by default:
#       ${LAYA_BENCH_MLX_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/laya-bench/mlx-0.32.2}
#   - Debian packages: cmake (builds mlx-c), libclang-dev (bindgen), libopenblas-dev (the BLAS
#     the MLX arm multiplies with; the wheel's own is netlib's reference BLAS).
# Safe to run again: it installs only what is missing. Needs root (or sudo) for apt-get, and
# python3 with pip. See docs/mlx.md.
set -euo pipefail

MLX_VERSION=0.32.2
prefix="${LAYA_BENCH_MLX_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/laya-bench/mlx-$MLX_VERSION}"

say() { printf 'setup-mlx: %s\n' "$*"; }
die() { printf 'setup-mlx: error: %s\n' "$*" >&2; exit 2; }

case "$(uname -s)" in
  Linux) ;;
  Darwin) die "on macOS nothing is needed: \`cargo build --release --features mlx\` builds MLX with Metal (needs cmake and Xcode's command-line tools)";;
  *) die "unsupported system $(uname -s): MLX's CPU wheels exist for Linux only";;
esac

# System packages.
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
# bindgen loads libclang itself (libclang.so / libclang-14.so.*), not libclang-cpp, which some
# other packages bring without it.
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
  /usr/lib/*-linux-gnu/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* >/dev/null 2>&1 || need+=(libclang-dev)
ls /usr/lib/*-linux-gnu/libopenblas.so >/dev/null 2>&1 || need+=(libopenblas-dev)
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "missing ${need[*]} and no apt-get here: install them with your package manager"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "installing ${need[*]} needs root: run this script as root or install sudo"
    sudo=sudo
  fi
  say "installing ${need[*]} (apt-get)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The pinned MLX wheels.
python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "python3 not found (set PYTHON=/path/to/python): pip installs the MLX wheels"
have=""
if [ -f "$prefix/mlx/share/cmake/MLX/MLXConfigVersion.cmake" ]; then
  have=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix/mlx/share/cmake/MLX/MLXConfigVersion.cmake")
fi
if [ "$have" = "$MLX_VERSION" ] && [ -f "$prefix/mlx/lib/libmlx.so" ]; then
  say "MLX $MLX_VERSION already installed in $prefix"
else
  [ -n "$have" ] && say "replacing MLX $have in $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  say "installing mlx==$MLX_VERSION and mlx-cpu==$MLX_VERSION into $prefix (pip)"
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$prefix" \
    "mlx==$MLX_VERSION" "mlx-cpu==$MLX_VERSION"
  [ -f "$prefix/mlx/lib/libmlx.so" ] || die "pip finished but $prefix/mlx/lib/libmlx.so is missing"
fi

say "ready: cargo build --release --features mlx"
if [ -n "${LAYA_BENCH_MLX_PREFIX:-}" ]; then
  say "(keep LAYA_BENCH_MLX_PREFIX=$prefix set for the build)"
fi
