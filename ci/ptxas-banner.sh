#!/usr/bin/env bash
# Oracle check for GL014's reading of a bundled ptxas (src/detect/nvidia_tool.rs): for real
# `nvidia-cuda-nvcc-cu12` wheels from PyPI, puts the wheel's `bin/ptxas` where triton ships
# it (`triton/backends/nvidia/bin/ptxas`) in a `dir:` tree and compares the release/version
# `gpulint inventory` reads with the `release X.Y, VX.Y.Z` line `ptxas --version` prints
# (ptxas runs without a GPU). Prints PASS/FAIL per wheel; exits non-zero on any FAIL.
#
# Usage: ci/ptxas-banner.sh [VERSION...]    (default: 12.4.131 12.8.93)
#   env PTXAS_WORK=DIR    keep downloads in DIR (default: a temp dir, removed)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPULINT=${GPULINT:-$ROOT/target/debug/gpulint}
[ -x "$GPULINT" ] || (cd "$ROOT" && cargo build -q)
WORK=${PTXAS_WORK:-$(mktemp -d)}
[ -n "${PTXAS_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(12.4.131 12.8.93)
fail=0
for v in "${versions[@]}"; do
  d="$WORK/$v"
  mkdir -p "$d"
  pip download -q --no-deps "nvidia-cuda-nvcc-cu12==$v" -d "$d"
  whl=$(ls "$d"/nvidia_cuda_nvcc_cu12-*.whl | head -1)
  (cd "$d" && unzip -o -q "$whl" 'nvidia/cuda_nvcc/bin/ptxas')
  tree="$d/tree"
  bin="$tree/usr/lib/python3/site-packages/triton/backends/nvidia/bin"
  mkdir -p "$bin"
  cp "$d/nvidia/cuda_nvcc/bin/ptxas" "$bin/ptxas"
  chmod +x "$bin/ptxas"
  want=$("$bin/ptxas" --version | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\1 \2/p')
  got=$("$GPULINT" inventory "dir:$tree" --format json | python3 -c '
import json, sys
t = json.load(sys.stdin).get("triton_ptxas", [])
print(" ".join(str(x.get(k)) for x in t for k in ("release", "version")))')
  if [ "$want" = "$got" ] && [ -n "$want" ]; then
    echo "PASS $v: ptxas --version says $want; gpulint read $got"
  else
    echo "FAIL $v: ptxas --version says '$want'; gpulint read '$got'"
    fail=1
  fi
done
exit $fail
