#!/usr/bin/env bash
# Prove gpulint's verdicts on a real GPU (run on the H200 device machine, ~3 minutes):
#  1. the host profile and checks, live;
#  2. the real PyTorch venv there, judged against the local host;
#  3. one tiny kernel (testdata/device/k.cu) built by that machine's nvcc for many -gencode
#     targets, each RUN on the GPU, and gpulint's prediction for each compared with what
#     happened. The binaries (built with -cudart shared: a few KB each) and outcomes come
#     back as fixtures for tests/integration/device.rs.
#
#   GPULINT=path/to/gpulint ci/device-verdicts.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-${OUT:-./device-out}}
BIN=${GPULINT:-target/release/gpulint}
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/transcript.txt"; : > "$LOG"
log() { printf '\n$ %s\n' "$*" >> "$LOG"; "$@" >> "$LOG" 2>&1; echo "[exit $?]" >> "$LOG"; }

log nvidia-smi -L
log nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
log nvcc --version
"$BIN" host --format json > "$OUT_DIR/host.json" 2>> "$LOG"; echo "host json exit $?" >> "$LOG"
log "$BIN" host
log "$BIN" host --check --python /opt/torch/.venv/bin/python3

# 2. The real torch venv (local host is the default target).
VENV=/opt/torch/.venv
if [ -d "$VENV" ]; then
  ( time timeout 240 "$BIN" image "dir:$VENV" --format json > "$OUT_DIR/venv-image.json" 2> "$OUT_DIR/venv-image.stderr" ) 2>> "$LOG"
  echo "venv image exit $?" >> "$LOG"
  timeout 120 "$BIN" image "dir:$VENV" --gpu V100 --driver 580.159.04 --format text > "$OUT_DIR/venv-v100.txt" 2>&1; echo "venv v100 exit $?" >> "$LOG"
fi

# 3. Kernels built for many targets, run for real.
B="$OUT_DIR/kernels"; mkdir -p "$B"
cat > "$B/variants.txt" <<'V'
sm75|-gencode arch=compute_75,code=sm_75
sm80|-gencode arch=compute_80,code=sm_80
sm86|-gencode arch=compute_86,code=sm_86
sm89|-gencode arch=compute_89,code=sm_89
sm90|-gencode arch=compute_90,code=sm_90
sm90a|-gencode arch=compute_90a,code=sm_90a
sm100|-gencode arch=compute_100,code=sm_100
sm120|-gencode arch=compute_120,code=sm_120
ptx75|-gencode arch=compute_75,code=compute_75
ptx80|-gencode arch=compute_80,code=compute_80
ptx90|-gencode arch=compute_90,code=compute_90
ptx90a|-gencode arch=compute_90a,code=compute_90a
ptx100|-gencode arch=compute_100,code=compute_100
sm80_ptx80|-gencode arch=compute_80,code=[sm_80,compute_80]
sm100f|-gencode arch=compute_100f,code=sm_100f
default|
V
build() { n=${1%%|*}; g=${1#*|}; nvcc -O2 -DWITH_MAIN -cudart shared $g -o "$B/k_$n" testdata/device/k.cu > "$B/k_$n.build.txt" 2>&1 || echo "build failed" >> "$B/k_$n.build.txt"; }
export -f build; export B
cut -d'#' -f1 "$B/variants.txt" | grep . | xargs -P 16 -I{} bash -c 'build "$@"' _ {}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for f in "$B"/k_*; do
  case "$f" in *.txt) continue;; esac
  timeout 30 "$f" > "$f.run.txt" 2>&1; echo "rc=$?" >> "$f.run.txt"
done
"$BIN" image "dir:$B" --format json > "$OUT_DIR/kernels-image.json" 2> "$OUT_DIR/kernels-image.stderr"; echo "kernels image exit $?" >> "$LOG"
tar -C "$OUT_DIR" -czf "$OUT_DIR/kernels.tgz" kernels && rm -rf "$B"
python3 - "$OUT_DIR" >> "$LOG" 2>&1 <<'PY'
import json, sys, tarfile, io
out = sys.argv[1]
rep = json.load(open(f"{out}/kernels-image.json"))
bad = {}
for f in rep["findings"]:
    if f["severity"] == "error" and f["rule"] in ("GL001", "GL003"):
        p = (f.get("location") or {}).get("path", "")
        bad.setdefault(p.rsplit("/", 1)[-1], []).append(f["rule"])
t = tarfile.open(f"{out}/kernels.tgz")
rows, mism = [], 0
for m in t.getmembers():
    if m.name.endswith(".run.txt"):
        name = m.name.rsplit("/", 1)[-1][:-len(".run.txt")]
        txt = t.extractfile(m).read().decode()
        ran = "ok 1" in txt
        pred_ok = name not in bad
        mism += ran != pred_ok
        rows.append(f"{name:16} ran={'ok' if ran else 'FAIL'} gpulint={'ok' if pred_ok else ','.join(bad[name])} {'MATCH' if ran == pred_ok else 'MISMATCH'} | {txt.strip().splitlines()[0] if txt.strip() else ''}")
print("\n".join(sorted(rows)))
print(f"mismatches: {mism}")
PY
tail -25 "$LOG"
