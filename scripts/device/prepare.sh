#!/usr/bin/env bash
# Prepares what scripts/device/h200-energy.sh needs on the GPU machine, which has no network:
# a stripped release binary at dist/laya-bench, the laya wheel in dist/wheels/ and laya-cuda's
# in dist/wheels-cuda/ (an arm of H200_PLAN=runtimes; the first plan probes it apart from the
# energy run) (dist/ is ignored by git; the device tool carries it: `carry: ["dist"]`, well
# under 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked
mkdir -p dist/wheels
cp target/release/laya-bench dist/laya-bench
strip dist/laya-bench
python3 -m pip download --quiet --no-deps --dest dist/wheels laya==0.4.15
mkdir -p dist/wheels-cuda
python3 -m pip download --quiet --no-deps --python-version 3.12 --only-binary=:all: \
  --dest dist/wheels-cuda laya-cuda==0.1.1.post1
du -sh dist
