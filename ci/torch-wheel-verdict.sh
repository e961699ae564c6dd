#!/usr/bin/env bash
# Issue 3 acceptance on a real PyTorch install: torch 2.11.0 (PyPI default build, CUDA 13.0)
# plus its CUDA runtime wheel, unpacked as a real site-packages (no GPU needed), then judged:
#   requirements          → driver >= 580.x and the exact SASS list of libtorch_cuda.so
#   --gpu V100            → GL001 (no sm_70 code)
#   --driver 570.133.20   → GL002 (CUDA 13 needs a 580 driver)
#   --gpu H100 --driver 580.65.06 → clean
# Downloads torch and every wheel it requires (~3.5 GB) once, cached in $WHEELS
# (default target/wheels), exactly what `pip install torch==2.11.0` installs. With --record it also
# writes the inventory to testdata/torch-2.11.0-cu130/inventory.json, which
# tests/verdicts.rs replays.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-target/wheels/torch-2.11.0}
mkdir -p "$WHEELS"
# pip matches manylinux_2_N tags exactly, so name every level these wheels use.
PLATS=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux2010_x86_64)
for n in $(seq 5 40); do PLATS+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --only-binary=:all: --python-version 3.12 "${PLATS[@]}" \
  -d "$WHEELS" torch==2.11.0
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
SP="$T/venv/lib/python3.12/site-packages"; mkdir -p "$SP" "$T/venv/bin"
# Install the resolved set ($WHEELS holds only it): a wheel is a zip laid out as
# site-packages.
for w in "$WHEELS"/*.whl; do
  python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$w" "$SP"
done
printf 'home = /usr/bin\nversion = 3.12.3\n' > "$T/venv/pyvenv.cfg"
cargo build --release -q
G=target/release/gpulint
fail=0
check() { # name, expected exit, expected rule (or -), args...
  local name=$1 want_rc=$2 want_rule=$3; shift 3
  set +e; out=$("$G" image "dir:$T/venv" --no-local-host --format json "$@"); rc=$?; set -e
  rules=$(printf '%s' "$out" | python3 -c "import json,sys; print(' '.join(sorted({f['rule'] for f in json.load(sys.stdin)['findings'] if f['severity']=='error'})))")
  if [ "$rc" = "$want_rc" ] && { [ "$want_rule" = - ] && [ -z "$rules" ] || [[ " $rules " == *" $want_rule "* ]]; }; then
    echo "PASS $name (exit $rc, errors: ${rules:-none})"
  else
    echo "FAIL $name (exit $rc, errors: ${rules:-none}; wanted exit $want_rc, $want_rule)"; fail=1
  fi
}
"$G" image "dir:$T/venv" --no-local-host | sed -n '1,12p' || true
check "V100 gets GL001" 1 GL001 --gpu V100 --driver 580.65.06
check "driver 570.133.20 gets GL002" 1 GL002 --gpu H100 --driver 570.133.20
check "H100 + 580.65.06 is clean" 0 - --gpu H100 --driver 580.65.06
# The inventory against independent facts: wheel file names (versions) and cuobjdump's arch
# census of the same torch build on the H200 host (../shared/fixtures).
"$G" inventory "dir:$T/venv" --format json > "$T/inv.json"
python3 - "$T/inv.json" "$WHEELS" ../shared/fixtures/h200-host/python-env/arch_elf_libtorch_cuda.so.txt <<'PY' || fail=1
import json, os, re, sys
inv = json.load(open(sys.argv[1])); wheels = os.listdir(sys.argv[2]); census = sys.argv[3]
def wheel_version(prefix):
    for w in wheels:
        m = re.match(re.escape(prefix) + r"-([^-]+)-", w)
        if m: return m.group(1)
bad = 0
def expect(what, got, want):
    global bad
    ok = got == want
    bad += not ok
    print(("PASS" if ok else "FAIL"), what, "got", got, "want", want)
torch = [p for p in inv["python_packages"] if p["name"] == "torch"][0]
expect("torch version", torch["version"], "2.11.0")
expect("torch CUDA variant", torch["cuda"], "13.0")
libs = {l["name"]: l for l in inv["cuda_libraries"]}
expect("cuDNN version", libs["cudnn"]["version"], wheel_version("nvidia_cudnn_cu13"))
expect("NCCL version", libs["nccl"]["version"], wheel_version("nvidia_nccl_cu13"))
expect("cuBLAS version", libs["cublas"]["version"], wheel_version("nvidia_cublas"))
expect("cudart version", libs["cudart"]["version"], wheel_version("nvidia_cuda_runtime"))
if os.path.exists(census):
    want = sorted(l.split()[1] for l in open(census) if l.strip())
    b = [b for b in inv["binaries"] if b["path"].endswith("torch/lib/libtorch_cuda.so")][0]
    expect("libtorch_cuda.so SASS (cuobjdump census)", sorted(b["sass"]), want)
    expect("libtorch_cuda.so PTX", b["ptx"], [])
sys.exit(1 if bad else 0)
PY
if [ "${1:-}" = --record ]; then
  mkdir -p testdata/torch-2.11.0-cu130
  "$G" inventory "dir:$T/venv" --format json \
    | python3 -c "import json,sys; d=json.load(sys.stdin); d['image']['reference']='dir:venv'; json.dump(d,sys.stdout,indent=1,sort_keys=True)" \
    > testdata/torch-2.11.0-cu130/inventory.json
  echo "recorded testdata/torch-2.11.0-cu130/inventory.json"
  # The oracle tests/integration/verdicts.rs compares that inventory with (cuobjdump's census).
  mkdir -p testdata/torch-2.11.0-cu130/cuobjdump
  cp ../shared/fixtures/h200-host/python-env/arch_{elf,ptx}_libtorch_cuda.so.txt \
    testdata/torch-2.11.0-cu130/cuobjdump/
fi
exit $fail
