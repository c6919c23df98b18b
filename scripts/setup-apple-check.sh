#!/usr/bin/env bash
# Prepares a Linux machine to type-check and lint the macOS code against the real crates
# (objc2, objc2-core-ml, objc2-io-kit, block2) for aarch64-apple-darwin, without an Apple SDK:
#   - the Rust standard library for aarch64-apple-darwin (`rustup target add`);
#   - Zig from PyPI (`ziglang`), used as the C compiler and archiver for that target, because
#     `ring` (the hub client's TLS) compiles C in its build script;
#   - two small wrappers in ${LAYA_BENCH_APPLE_TOOLS:-target/apple-check-tools}: zig rejects the
#     `--target=arm64-apple-macosx`, `-arch arm64` and `-mmacosx-version-min=` flags that cc-rs
#     passes, so the wrapper drops them and passes `-target aarch64-macos` instead.
# It prints the environment to export (eval "$(scripts/setup-apple-check.sh --env)") or, with
# `--run`, runs the clippy it prepares for (the command .ci/run uses). Nothing here links or
# runs macOS code: only GitHub's macOS workflow does that (README, "Apple hardware").
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

ZIG_VERSION=0.14.1
TARGET=aarch64-apple-darwin

say() { printf 'setup-apple-check: %s\n' "$*" >&2; }
die() { printf 'setup-apple-check: error: %s\n' "$*" >&2; exit 2; }

mode=${1:-}
case "$mode" in
  ""|--env|--run) ;;
  *) die "usage: $0 [--env|--run]";;
esac

if [ "$(uname -s)" = Darwin ]; then
  die "on macOS run \`cargo clippy --all-targets -- -D warnings\` directly: this script is for Linux"
fi

command -v rustup >/dev/null 2>&1 || die "rustup not found: the target's standard library is installed with \`rustup target add $TARGET\`"
if ! rustup target list --installed | grep -qx "$TARGET"; then
  say "adding the $TARGET standard library (rustup)"
  rustup target add "$TARGET" >&2
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "python3 not found (set PYTHON=/path/to/python): pip installs Zig"
tools="${LAYA_BENCH_APPLE_TOOLS:-$PWD/target/apple-check-tools}"
zig="$tools/zig-$ZIG_VERSION/ziglang/zig"
if [ ! -x "$zig" ]; then
  say "installing ziglang==$ZIG_VERSION into $tools (pip)"
  rm -rf "$tools/zig-$ZIG_VERSION"
  mkdir -p "$tools"
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$tools/zig-$ZIG_VERSION" "ziglang==$ZIG_VERSION" >&2
  [ -x "$zig" ] || die "pip finished but $zig is missing"
fi

# The compiler wrapper: cc-rs passes Apple-clang flags zig does not take.
cat >"$tools/cc-$TARGET" <<EOF
#!/usr/bin/env bash
args=()
skip=0
for a in "\$@"; do
  if [ \$skip -eq 1 ]; then skip=0; continue; fi
  case "\$a" in
    --target=*|-mmacosx-version-min=*) ;;
    -arch|--target|-target) skip=1 ;;
    *) args+=("\$a") ;;
  esac
done
exec "$zig" cc -target aarch64-macos "\${args[@]}"
EOF
cat >"$tools/ar-$TARGET" <<EOF
#!/usr/bin/env bash
exec "$zig" ar "\$@"
EOF
chmod +x "$tools/cc-$TARGET" "$tools/ar-$TARGET"

env_lines="export CC_aarch64_apple_darwin='$tools/cc-$TARGET'
export AR_aarch64_apple_darwin='$tools/ar-$TARGET'"
case "$mode" in
  --env) printf '%s\n' "$env_lines" ;;
  --run)
    eval "$env_lines"
    say "cargo clippy --locked --target $TARGET --all-targets -- -D warnings"
    exec cargo clippy --locked --target "$TARGET" --all-targets -- -D warnings ;;
  "") say "ready: eval \"\$($0 --env)\" then cargo clippy --target $TARGET ..., or $0 --run" ;;
esac
