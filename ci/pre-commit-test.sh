#!/usr/bin/env bash
# .pre-commit-hooks.yaml exercised by the real pre-commit (PyPI) on a sample git repository:
# the `gpulint-system` and `gpulint-dockerfile-system` hooks with the locally built binary on
# PATH. A Dockerfile with an unquoted `pip install x>=1` (GL108) fails the hook; quoted, it
# passes. The `language: rust` hooks run the same entry after a `cargo install` of this
# repository, which needs no test of its own beyond the build.
#
#   ci/pre-commit-test.sh [GPULINT_BINARY]   (default: target/debug/gpulint, built if missing)
# Exit 0 = as expected, 1 = a hook did not behave, 3 = pre-commit or git is not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/target/debug/gpulint}
command -v pre-commit >/dev/null || { echo "pre-commit-test: pre-commit not installed (pip install pre-commit)" >&2; exit 3; }
command -v git >/dev/null || { echo "pre-commit-test: git not installed" >&2; exit 3; }
if [[ ! -x $bin ]]; then
  (cd "$root" && cargo build --quiet --bin gpulint)
fi
bindir=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$bindir" "$work"' EXIT
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$bindir/gpulint"
export PATH="$bindir:$PATH" PRE_COMMIT_HOME="$work/cache" CI=true
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com

sample=$work/sample
mkdir -p "$sample"
cd "$sample"
git init -q .
printf 'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n' >Dockerfile
git add Dockerfile

fail=0
for hook in gpulint-system gpulint-dockerfile-system; do
  # try-repo: the hooks file of this working tree (uncommitted changes included), as a user's
  # .pre-commit-config.yaml pointing at this repository would use it.
  if out=$(pre-commit try-repo "$root" "$hook" --all-files 2>&1); then
    echo "pre-commit-test: FAIL: $hook passed on a Dockerfile with GL108" >&2; echo "$out" >&2; fail=1
  elif ! grep -q 'GL108' <<<"$out"; then
    echo "pre-commit-test: FAIL: $hook failed without reporting GL108" >&2; echo "$out" >&2; fail=1
  else
    echo "pre-commit-test: ok: $hook fails on the unquoted specifier"
  fi
done

printf "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install 'numba>=0.57.1'\n" >Dockerfile
git add Dockerfile
for hook in gpulint-system gpulint-dockerfile-system; do
  if out=$(pre-commit try-repo "$root" "$hook" --all-files 2>&1); then
    echo "pre-commit-test: ok: $hook passes once it is quoted"
  else
    echo "pre-commit-test: FAIL: $hook failed on a clean Dockerfile" >&2; echo "$out" >&2; fail=1
  fi
done
exit $fail
