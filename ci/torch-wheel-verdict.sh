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
WHEELS=${WHEELS:-target/wheels}
mkdir -p "$WHEELS"
# pip matches manylinux_2_N tags exactly, so name every level these wheels use.
PLATS=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux2010_x86_64)
for n in 5 12 17 18 24 26 27 28 31 34 35; do PLATS+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --only-binary=:all: --python-version 3.12 "${PLATS[@]}" \
  -d "$WHEELS" torch==2.11.0 --report "$WHEELS/report.json"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
SP="$T/venv/lib/python3.12/site-packages"; mkdir -p "$SP" "$T/venv/bin"
# Install exactly the resolved set (a wheel is a zip laid out as site-packages).
python3 - "$WHEELS" "$SP" <<'PY'
import json, os, sys, zipfile, urllib.parse
wheels, sp = sys.argv[1], sys.argv[2]
report = json.load(open(os.path.join(wheels, "report.json")))
for item in report["install"]:
    name = urllib.parse.unquote(item["download_info"]["url"].rsplit("/", 1)[-1])
    zipfile.ZipFile(os.path.join(wheels, name)).extractall(sp)
PY
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
if [ "${1:-}" = --record ]; then
  mkdir -p testdata/torch-2.11.0-cu130
  "$G" inventory "dir:$T/venv" --format json \
    | python3 -c "import json,sys; d=json.load(sys.stdin); d['image']['reference']='dir:venv'; json.dump(d,sys.stdout,indent=1,sort_keys=True)" \
    > testdata/torch-2.11.0-cu130/inventory.json
  echo "recorded testdata/torch-2.11.0-cu130/inventory.json"
fi
exit $fail
