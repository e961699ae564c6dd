#!/usr/bin/env bash
# Corpus checks on ../shared/realworld (read in place):
#  (a) BuildKit conformance of the Dockerfile parser (PyPI `dockerfile` = BuildKit's Go parser),
#  (b) findings vs the expert labels (labels.tsv): per-class recall, unexplained findings.
# The run uses a typical cloud fleet as target (T4 7.5, A100 8.0, L4 8.9, H100 9.0).
# Numbers go into testdata/spec/CORPUS.md; (c) ci/corpus_figures.py then fails the run when
# they fall below what README.md and CORPUS.md state. A missing corpus is a failure (exit 2).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/realworld}
[ -f "$CORPUS/labels.tsv" ] || { echo "corpus: $CORPUS/labels.tsv not found" >&2; exit 2; }
cargo build --quiet --example spec_dump
BIN=${CARGO_TARGET_DIR:-target}/debug/examples/spec_dump
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "== (a) BuildKit conformance"
# CORPUS_VENV keeps the venv with PyPI `dockerfile` between runs (ci/test.sh runs two corpora).
VENV=${CORPUS_VENV:-$TMP/venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import dockerfile' 2>/dev/null; then
  python3 -m venv "$VENV" >/dev/null
  "$VENV/bin/pip" install --quiet dockerfile
fi
mapfile -t DFS < <(find "$CORPUS/dockerfile" -type f ! -name '*.sh' ! -name '*.yml' ! -name '*.yaml' | sort)
# Differences are printed; (c) decides whether they are more than the docs admit.
"$VENV/bin/python" ci/buildkit_conformance.py "$BIN" "${DFS[@]}" | tee "$TMP/buildkit.txt" || true

echo "== (b) findings vs labels"
ARGS=()
while IFS= read -r f; do
  rel=${f#"$CORPUS"/}
  case "$rel" in
    dockerfile/*.sh) ARGS+=("script:$f") ;;
    dockerfile/*.yml|dockerfile/*.yaml) ;;
    dockerfile/*) ARGS+=("dockerfile:$f") ;;
    compose/*.md|k8s/*.md|dockerrun/*.md|dockerrun/*.mdx) ARGS+=("markdown:$f") ;;
    compose/*) ARGS+=("compose:$f") ;;
    k8s/*) ARGS+=("k8s:$f") ;;
    dockerrun/*) ARGS+=("script:$f") ;;
  esac
done < <(find "$CORPUS" -type f ! -name '*.tsv' ! -name '*.sha256' ! -name 'CORPUS.md' | sort)
"$BIN" lint --cc 7.5,8.0,8.9,9.0 "${ARGS[@]}" > "$TMP/findings.jsonl"
python3 ci/corpus_labels.py "$CORPUS" "$TMP/findings.jsonl" "$TMP/labels.json"

echo "== (c) the figures README.md and CORPUS.md state"
python3 ci/corpus_figures.py "$CORPUS" "$TMP/labels.json" "$TMP/buildkit.txt"
