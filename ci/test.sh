#!/usr/bin/env bash
# The project's test command (README.md): installs the real tools the tests use, then runs
# lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x ci/install-tools.sh ] || [ -f ci/install-tools.sh ]; then
  bash ci/install-tools.sh
fi
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test --all-targets 2>&1
