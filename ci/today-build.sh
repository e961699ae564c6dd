#!/usr/bin/env bash
# Builds, once, gpulint as it was when issue 15 was filed ("today" in its targets), from this
# repository's history, and prints the binary's path. Used by ci/bench-image.sh and
# ci/bench-seek.sh as the in-run baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${GPULINT_BENCH_CACHE:-$HOME/.cache/gpulint-bench}"
TODAY_REV="${TODAY_REV:-120f1f2c65e8a18363ee7530401433b34ce476a2}"
BIN="$CACHE/today-${TODAY_REV:0:12}/target/release/gpulint"
if [ ! -x "$BIN" ]; then
  SRC="$CACHE/today-${TODAY_REV:0:12}/src"
  rm -rf "$SRC" && mkdir -p "$SRC"
  git archive "$TODAY_REV" | tar -x -C "$SRC"
  (cd "$SRC" && CARGO_TARGET_DIR="$CACHE/today-${TODAY_REV:0:12}/target" \
    cargo build --release --quiet --bin gpulint) >&2
fi
echo "$BIN"
