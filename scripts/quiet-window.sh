#!/usr/bin/env bash
# Waits until this machine leaves the portable engine most of its FMA peak, then runs a command.
#
# On a shared VM the same FP32 forward can take 120 ms in one minute and 240 ms the next, with
# no stolen time to show for it (docs/PERFORMANCE.md, "Wider GELU and softmax, and how much of
# the peak this host leaves"), so an A/B timed at a random moment mostly measures the host.
# This script builds the forward bench, then every --every seconds times five f32 forwards of
# synthetic:multilingual at L96 on 2 threads against the peak the bench measures in the same
# run. Once that share reaches --min-percent, it runs the command (for example the bench with
# --interleave, or two programs back to back) and exits with the command's status.
#
#   scripts/quiet-window.sh [--min-percent P] [--every S] [--tries N] -- COMMAND [ARGS...]
#
# Defaults: P 60 (% of the same-run 2-thread FMA peak), S 45, N 60. In the command, $FORWARD_BENCH
# names the bench binary. Exit 1 if no check reached P after N tries; exit 2 on bad usage or a
# failed build. The checks cost about 6 s of both CPUs each, so nothing else should run meanwhile.
set -euo pipefail

min_percent=60
every=45
tries=60

say() { printf 'quiet-window: %s\n' "$*" >&2; }
die() { printf 'quiet-window: error: %s\n' "$*" >&2; exit 2; }
number() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 needs a whole number, got \`$2\`"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --min-percent) [ $# -ge 2 ] || die "--min-percent needs a value"; number "$1" "$2"; min_percent=$2; shift 2;;
    --every) [ $# -ge 2 ] || die "--every needs a value"; number "$1" "$2"; every=$2; shift 2;;
    --tries) [ $# -ge 2 ] || die "--tries needs a value"; number "$1" "$2"; tries=$2; shift 2;;
    --) shift; break;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) die "unknown option \`$1\` (options come before \`--\` and the command)";;
  esac
done
[ $# -gt 0 ] || die "no command given: scripts/quiet-window.sh [options] -- COMMAND [ARGS...]"
[ "$tries" -ge 1 ] || die "--tries must be at least 1"

cd "$(dirname "$0")/.."
build_log=$(cargo bench --bench forward --no-run 2>&1) || { printf '%s\n' "$build_log" >&2; die "the forward bench did not build"; }
bench=$(printf '%s\n' "$build_log" | sed -n 's/^ *Executable benches\/forward\.rs (\(.*\))$/\1/p' | tail -n 1)
[ -n "$bench" ] && [ -x "$bench" ] || die "cannot find the forward bench's executable in cargo's output"
export FORWARD_BENCH="$PWD/$bench"

for i in $(seq 1 "$tries"); do
  # the table row: | f32 | default | median ms | GFLOP/s | NN % | ...
  row=$("$FORWARD_BENCH" --precision f32 --iters 5 2>/dev/null | grep '^| f32 | default |' || true)
  median=$(printf '%s' "$row" | awk -F'|' '{gsub(/ /, "", $4); print $4}')
  percent=$(printf '%s' "$row" | awk -F'|' '{gsub(/[ %]/, "", $6); print $6}')
  if [ -z "$percent" ] || ! [[ "$percent" =~ ^[0-9]+$ ]]; then
    die "the forward bench printed no f32 row to read (run \`$FORWARD_BENCH --precision f32 --iters 5\` to see why)"
  fi
  say "$(date -u +%H:%M:%S) check $i/$tries: f32 median ${median} ms, ${percent} % of the same-run peak (want >= ${min_percent} %)"
  if [ "$percent" -ge "$min_percent" ]; then
    say "quiet enough; running: $*"
    "$@"
    exit $?
  fi
  [ "$i" -lt "$tries" ] && sleep "$every"
done
say "no check reached ${min_percent} % in ${tries} tries; the command was not run"
exit 1
