#!/usr/bin/env bash
# The longer run of the squash property test (issue 24): gpulint's squashed tree against
# `umoci unpack --rootless` on CASES random layer sequences (default 10000), from SEED
# (default: a new one, printed so a failure can be replayed). Needs umoci
# (ci/install-tools.sh). The normal `cargo test` runs the same test on a fixed seed.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-10000}"
seed="${2:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}"
echo "squash-fuzz: $cases cases, seed $seed"
GPULINT_SQUASH_CASES="$cases" GPULINT_SQUASH_SEED="$seed" \
  cargo test --release --test integration \
  squash::squashed_tree_matches_umoci_on_random_layer_sequences -- --nocapture
