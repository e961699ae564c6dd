#!/usr/bin/env bash
# Issue 31's sweep benchmark: N images that share their base layers, checked by one
# `gpulint image --images-from` run against one process per image. Prints, per way: the time,
# the bytes of files read, the layers walked, taken from the disk cache and shared within the
# run, and the ratio to one run. Not a test (the figures depend on the machine); README quotes
# a run. Usage:
#
#   ci/bench-sweep.sh [N=50]        # JOBS=2 images at a time in the one run
#   GPULINT_BIN=path/to/gpulint ci/bench-sweep.sh   # that binary instead of a release build
#
# The images are docker-archives built once under $GPULINT_BENCH_CACHE/sweep (default
# ~/.cache/gpulint-bench/sweep) from real layers: two real wheels from PyPI
# (nvidia-cuda-runtime-cu12 and nvidia-cuda-nvrtc-cu12 12.4.127, unpacked into a venv's
# site-packages as pip lays them out), the real CUDA binaries of
# ../shared/fixtures/cuda-binaries (built by nvcc 13.0) as a second base layer, and one small
# application layer of each image's own.
#
# Three ways, each from a cold start (no disk cache unless said):
# - per image, no cache: one `gpulint image` process per image, --no-cache (what a loop over
#   the list did before issue 31);
# - per image, disk cache: the same loop over one --cache-dir (layers walked once, each later
#   process loads them from the cache);
# - one run: one process over the whole list, --no-cache: the run's images share layers in
#   memory (each base layer read once).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-50}"
JOBS="${JOBS:-2}"
CACHE="${GPULINT_BENCH_CACHE:-$HOME/.cache/gpulint-bench}/sweep"
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="${GPULINT_BIN:-$TARGET/release/gpulint}"
SHARED="${SHARED_DIR:-../shared}"
for tool in python3 pip; do
  command -v "$tool" >/dev/null || { echo "bench-sweep: needs $tool" >&2; exit 2; }
done
[ -n "${GPULINT_BIN:-}" ] || cargo build --quiet --release --bin gpulint

mkdir -p "$CACHE/wheels" "$CACHE/images"
for w in nvidia_cuda_runtime_cu12-12.4.127 nvidia_cuda_nvrtc_cu12-12.4.127; do
  ls "$CACHE"/wheels/"$w"-*.whl >/dev/null 2>&1 || {
    pkg="${w%-*}"; pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux2014_x86_64 -d "$CACHE/wheels" "${pkg//_/-}==${w##*-}"
  }
done

# ------------------------------------------------------------------ N docker-archives
python3 - "$CACHE" "$N" "$SHARED/fixtures/cuda-binaries" <<'PY'
import hashlib, io, json, os, sys, tarfile, zipfile, glob
cache, n, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = os.path.join(cache, "images")

def layer(files):
    """An uncompressed layer tar of (path, bytes, mode), parents first, fixed mtimes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        dirs = set()
        for path, _, _ in files:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        for d in sorted(dirs):
            ti = tarfile.TarInfo(d + "/"); ti.type = tarfile.DIRTYPE; ti.mode = 0o755; ti.mtime = 1700000000
            t.addfile(ti)
        for path, data, mode in sorted(files):
            ti = tarfile.TarInfo(path); ti.size = len(data); ti.mode = mode; ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()

sp = "opt/venv/lib/python3.11/site-packages/"
wheel_files = []
for whl in sorted(glob.glob(os.path.join(cache, "wheels", "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if not name.endswith("/"):
                wheel_files.append((sp + name, z.read(name), 0o755 if name.endswith(".so") or ".so." in name else 0o644))
bin_files = [("usr/local/lib/kernels/" + os.path.basename(p), open(p, "rb").read(), 0o755)
             for p in sorted(glob.glob(os.path.join(bins, "*", "*.so")))]
if not bin_files:
    sys.exit(f"bench-sweep: no CUDA binaries under {bins}")
base = [layer(wheel_files), layer(bin_files)]
for i in range(n):
    path = os.path.join(out, f"app{i}.tar")
    if os.path.exists(path):
        continue
    own = layer([("opt/app/main.py", f"print('service {i}')\n".encode(), 0o644)])
    layers = base + [own]
    diff_ids = ["sha256:" + hashlib.sha256(l).hexdigest() for l in layers]
    config = json.dumps({"architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/opt/venv/bin:/usr/bin:/bin"], "Cmd": ["python", "/opt/app/main.py"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids}, "history": []}).encode()
    cname = hashlib.sha256(config).hexdigest() + ".json"
    tmp = path + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as t:
        def add(name, data):
            ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = 0o644; ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
        add(cname, config)
        names = []
        for l, d in zip(layers, diff_ids):
            name = d.split(":")[1] + "/layer.tar"
            add(name, l); names.append(name)
        add("manifest.json", json.dumps([{"Config": cname, "RepoTags": [f"sweep/app{i}:1"], "Layers": names}]).encode())
    os.rename(tmp, path)
PY
LIST="$CACHE/list-$N.txt"
for i in $(seq 0 $((N - 1))); do echo "$CACHE/images/app$i.tar"; done > "$LIST"

# ------------------------------------------------------------------ the three ways
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
export GPULINT_CACHE_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
COMMON=(--no-local-host --gpu H100 --driver 550.54.15 --format json --fail-on none --stats)
now() { python3 -c 'import time; print(time.monotonic())'; }
# Sums the --stats lines on stderr: walked, cache, shared, MB read.
sum_stats() {
  python3 - "$1" <<'PY'
import re, sys
w = c = s = 0; mb = 0.0
for line in open(sys.argv[1]):
    m = re.search(r"walked (\d+), from the cache (\d+), shared in the run (\d+)  read ([\d.]+) MB", line)
    if m:
        w += int(m[1]); c += int(m[2]); s += int(m[3]); mb += float(m[4])
print(w, c, s, f"{mb:.1f}")
PY
}
run_way() { # name, then the command per image or once
  local name="$1"; shift
  local t0 t1; t0="$(now)"
  "$@" 2> "$WORK/$name.err" > /dev/null
  t1="$(now)"
  echo "$name $(python3 -c "print(f'{$t1 - $t0:.2f}')") $(sum_stats "$WORK/$name.err")" >> "$WORK/rows"
}
per_image_no_cache() {
  while read -r img; do "$BIN" image --shard 0/1 "$img" --no-cache "${COMMON[@]}"; done < "$LIST"
}
per_image_disk_cache() {
  while read -r img; do "$BIN" image --shard 0/1 "$img" --cache-dir "$WORK/cache" "${COMMON[@]}"; done < "$LIST"
}
one_run() {
  "$BIN" image --images-from "$LIST" --jobs "$JOBS" --no-cache "${COMMON[@]}"
}
run_way per-image-no-cache per_image_no_cache
run_way per-image-disk-cache per_image_disk_cache
run_way one-run one_run

python3 - "$WORK/rows" "$N" "$JOBS" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
n, jobs = sys.argv[2], sys.argv[3]
one = {r[0]: r for r in rows}["one-run"]
print(f"sweep benchmark: {n} images sharing 2 base layers, one run with --jobs {jobs}")
print(f"{'way':<22} {'time s':>8} {'MB read':>9} {'walked':>7} {'cache':>6} {'shared':>7} {'time ratio':>11} {'read ratio':>11}")
for name, t, w, c, s, mb in rows:
    tr = float(t) / float(one[1]); rr = float(mb) / max(float(one[5]), 1e-9)
    print(f"{name:<22} {t:>8} {mb:>9} {w:>7} {c:>6} {s:>7} {tr:>10.1f}x {rr:>10.1f}x")
PY
