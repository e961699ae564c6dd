#!/usr/bin/env bash
# Issue 34: Debian's own CUDA as it really ships. Builds a Debian bookworm root with
# debootstrap and Debian's CUDA 11.8 packages (non-free: nvidia-cuda-toolkit, which pulls the
# libraries and the 535 driver's), then prints gpulint's inventory of it (`dir:` scan) and the
# figures README quotes: toolkits found, CUDA libraries, binaries with device code, how many
# have no kernel, and GL001 findings for a few GPUs. Needs root and Debian's mirror; not part of
# the unit tests (minutes, about 3 GB of packages).
#
# Usage: sudo ci/debian-cuda-root.sh [ROOT_DIR]
#   env MIRROR   (default http://deb.debian.org/debian)
#   env GPULINT  gpulint binary (default: cargo build --release, target/release/gpulint)
#   env KEEP=1   keep ROOT_DIR (default: a temp dir, removed)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOTFS=${1:-$(mktemp -d)/bookworm-cuda}
if [ -z "${KEEP:-}" ] && [ $# -eq 0 ]; then
  trap 'rm -rf "$(dirname "$ROOTFS")"' EXIT
fi
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
PKGS=nvidia-cuda-toolkit,libcudart11.0,libcublas11,libcufft10,libnppc11,libnppif11,libnppisu11
echo "== debootstrap bookworm ($MIRROR) + $PKGS into $ROOTFS"
t0=$(date +%s)
debootstrap --variant=minbase --components=main,contrib,non-free,non-free-firmware \
  --include="$PKGS" bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 \
  || { tail -20 "$ROOTFS.log"; exit 1; }
echo "   took $(( $(date +%s) - t0 ))s, $(du -sh "$ROOTFS" | cut -f1)"
if [ -z "${GPULINT:-}" ]; then
  (cd "$REPO" && cargo build --release -q)
  GPULINT=$REPO/target/release/gpulint
fi
INV=$ROOTFS.inventory.json
"$GPULINT" inventory "dir:$ROOTFS" --format json --no-cache >"$INV"
echo "== inventory (text)"
"$GPULINT" inventory "dir:$ROOTFS" --no-cache | sed -n '/CUDA toolkits:/,/CUDA libraries:/p'
python3 - "$INV" <<'PY'
import json, sys
inv = json.load(open(sys.argv[1]))
bins = [b for b in inv.get("binaries", []) if b.get("has_device_code")]
none = [b["path"] for b in bins if b.get("has_kernels") is False]
print("== figures")
print("toolkits:", [(t["path"], t.get("version"), t.get("version_from")) for t in inv.get("cuda_toolkits", [])])
print("CUDA libraries:", len(inv.get("cuda_libraries", [])))
print("binaries with device code:", len(bins))
print("  of which with no kernel (not judged by GL001):", len(none))
for p in sorted(none):
    print("   ", p)
PY
for gpu in V100 A100 H100 "NVIDIA B200" "GeForce RTX 5090"; do
  # Exit status 1 is "findings": the JSON is what counts here.
  "$GPULINT" image "dir:$ROOTFS" --gpu "$gpu" --driver 580.65.06 --format json --no-cache \
    >"$ROOTFS.verdict.json" 2>/dev/null || true
  python3 - "$gpu" "$ROOTFS.verdict.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
hits = sorted(f["location"]["path"] for f in d.get("findings", []) if f.get("rule") == "GL001")
print(f"GL001 on {sys.argv[1]}: {len(hits)}", *hits, sep="\n    " if hits else "")
PY
done
