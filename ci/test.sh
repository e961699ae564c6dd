#!/usr/bin/env bash
# The project's test command (README.md): installs the real tools the tests use, then runs
# lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# A CI run once died of a full disk while linking: say how much room there is up front, and
# keep the build small (no incremental caches; Cargo.toml trims debug info for test builds).
df -h . /tmp 2>/dev/null | sed 's/^/test.sh: disk: /' || true
export CARGO_INCREMENTAL=0
# The corpus tests read ../shared/realworld in place (tests/integration/spec_realworld.rs,
# ci/corpus.sh): CI provides ../shared; without it the run fails here, not later.
if [ ! -f ../shared/realworld/labels.tsv ]; then
  echo "test.sh: ../shared/realworld missing (see ../shared/README.md)" >&2
  exit 2
fi
if [ -x ci/install-tools.sh ] || [ -f ci/install-tools.sh ]; then
  bash ci/install-tools.sh
fi
cargo fmt --check
# The module graph at depth two (counting super:: paths) has no cycle, and no src file holds
# more than 700 lines of non-test code.
python3 ci/modgraph.py 2
python3 ci/file-sizes.py
cargo clippy --all-targets --quiet -- -D warnings
# The GitHub workflows (with shellcheck on their run: scripts where it is installed);
# action.yml is not a workflow: tests/integration/packaging.rs checks its structure.
bash ci/actionlint.sh .github/workflows/*.yml
cargo test --all-targets 2>&1
# Tests that need real services (dockerd, registries, podman) are #[ignore]d in a plain
# `cargo test`; they are selected here, where the services are installed and started (by the
# tests themselves, through ci/services.sh), so they can never be skipped silently.
cargo test --test integration -- --ignored 2>&1
# Issue 32: what README and matrices/ claim outside the tests, re-derived each run, each
# step bounded (README, "Re-checked by CI"): cited artifacts' sha256 against PyPI and a
# rotating sample of measured rows re-derived (the whole set: .github/workflows/recheck.yml);
# the fatbin reader against cuobjdump on every fixture binary; the corpus figures of the five
# corpora and README's rule table.
python3 ci/verify-citations.py
ORACLE_WORK=target/ci-tools/fatbin-oracle bash ci/fatbin-oracle.sh --fixtures
export CORPUS_VENV=target/ci-tools/corpus-venv
bash ci/corpus.sh
CORPUS=testdata/spec/corpus2 bash ci/corpus.sh
CORPUS=testdata/spec/corpus3 bash ci/corpus.sh
CORPUS=testdata/spec/corpus4 bash ci/corpus.sh
CORPUS=testdata/spec/corpus5 bash ci/corpus.sh
python3 ci/readme-figures.py target/debug/gpulint
# Issue 27: README's measured/cited/inferred/unknown counts match matrices/, and no release
# newer than our rows exists on PyPI. Without PyPI, freshness checks nothing and says so here
# (exit 3): a skip is reported, never silent.
python3 ci/knowledge-counts.py --check
freshness=0
python3 ci/freshness.py --variants-advisory || freshness=$?
case $freshness in
  0) ;;
  3) echo "test.sh: NOTICE: ci/freshness.py SKIPPED: PyPI not reachable from this runner" >&2 ;;
  *) exit "$freshness" ;;
esac
# .pre-commit-hooks.yaml under the real pre-commit (ci/install-tools.sh installs it), with the
# binary the tests just built.
bash ci/pre-commit-test.sh target/debug/gpulint
