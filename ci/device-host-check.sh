#!/usr/bin/env bash
# Run on a real GPU host (e.g. an H200): build gpulint, run the host detection and checks,
# and keep transcripts plus a captured tree (testdata/host layout) for fixtures.
#
#   ci/device-host-check.sh [OUT_DIR]        (default: $OUT or ./device-host-out)
#
# Read-only on the host: it runs the same read-only commands gpulint runs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-./device-host-out}}"
mkdir -p "$OUT_DIR"
T="$OUT_DIR/transcript.txt"
: > "$T"
log() { printf '\n$ %s\n' "$*" | tee -a "$T"; "$@" 2>&1 | tee -a "$T"; echo "[exit ${PIPESTATUS[0]}]" | tee -a "$T"; }

log uname -a
log cargo --version
cargo build --release 2>&1 | tail -5 | tee -a "$T"
BIN=${GPULINT:-target/release/gpulint}
[ -x "$BIN" ] || BIN=${CARGO_TARGET_DIR:-target}/release/gpulint

# 1. The host profile and the checks, live.
"$BIN" host --format json > "$OUT_DIR/host.json" 2> "$OUT_DIR/host.json.stderr"; echo "host --format json: exit $?" | tee -a "$T"
log "$BIN" host --check
"$BIN" host --check --format json > "$OUT_DIR/host-check.json" 2>&1; echo "host --check --format json: exit $?" | tee -a "$T"
# torch in the environments on PATH (or GPULINT_PYTHON=/path/to/python)
if [ -n "${GPULINT_PYTHON:-}" ]; then log "$BIN" host --check --python "$GPULINT_PYTHON"; fi
# The profile must be accepted back as a target (any image will do; GPULINT_IMAGE=<ref>).
if [ -n "${GPULINT_IMAGE:-}" ]; then log "$BIN" image "$GPULINT_IMAGE" --host "$OUT_DIR/host.json"; fi

# 2. A captured tree of this host, so the same checks can be replayed offline.
C="$OUT_DIR/capture"; K="$C/.gpulint-host/commands"; mkdir -p "$K"
cap() { local name=$1; shift; "$@" > "$K/$name" 2> "$K/$name.stderr"; echo $? > "$K/$name.rc"; [ -s "$K/$name.stderr" ] || rm -f "$K/$name.stderr"; }
if command -v nvidia-smi >/dev/null; then
  cap nvidia-smi--query-gpu.csv nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,persistence_mode,mig.mode.current,ecc.mode.current --format=csv
  cap nvidia-smi-q.xml nvidia-smi -q -x
  cap nvidia-smi-q.txt nvidia-smi -q
  cap nvidia-smi-L.txt nvidia-smi -L
  cap nvidia-smi.txt nvidia-smi
  cap nvidia-smi-topo-m.txt nvidia-smi topo -m
fi
cap uname-r.txt uname -r
cap uname-m.txt uname -m
cap id.txt id
cap ps-comm.txt ps -e -o comm=
cap dmesg.txt dmesg
command -v nvcc >/dev/null && cap nvcc-version.txt nvcc --version
command -v nvidia-ctk >/dev/null && cap nvidia-ctk-version.txt nvidia-ctk --version
command -v nvidia-container-cli >/dev/null && cap nvidia-container-cli-version.txt nvidia-container-cli --version
env | grep -E '^(PATH|LD_LIBRARY_PATH|CUDA_[A-Z_]*|NVIDIA_[A-Z_]*)=' > "$C/.gpulint-host/env.txt"
ls -l /dev/nvidia* /dev/nvidia-caps > "$C/.gpulint-host/dev-nvidia.txt" 2>/dev/null
# Ages git cannot keep: a nouveau blacklist newer than the running kernel's initramfs (GL202).
stat -c '%Y %n' /etc/modprobe.d/* /usr/lib/modprobe.d/* /lib/modprobe.d/* /boot/initrd.img-* /boot/initramfs-*.img /boot/initrd-* > "$C/.gpulint-host/mtimes.txt" 2>/dev/null || true
for f in /boot/initrd.img-* /boot/initramfs-*.img /boot/initrd-* /boot/vmlinuz-*; do [ -e "$f" ] && mkdir -p "$C/boot" && : > "$C$f"; done
# Which kernels have headers (GL206 predicts a DKMS failure without them): the build link and
# an empty stand-in of its target; DKMS's build logs.
for b in /lib/modules/*/build; do
  [ -d "$b" ] || continue; t=$(readlink -f "$b"); mkdir -p "$C$t" "$C$(dirname "$b")"; : > "$C$t/Makefile"; ln -sfn "$t" "$C$b"
done
for f in /var/lib/dkms/nvidia/*/build/make.log; do [ -r "$f" ] && mkdir -p "$C$(dirname "$f")" && cp "$f" "$C$f"; done
# A .run install next to packages (GL230): its traces, dpkg's status, every nvidia.ko (empty stand-ins).
for f in /var/log/nvidia-installer.log /usr/bin/nvidia-uninstall /lib/modules/*/kernel/drivers/video/nvidia.ko* /lib/modules/*/updates/dkms/nvidia.ko*; do
  [ -e "$f" ] && mkdir -p "$C$(dirname "$f")" && : > "$C$f"
done
[ -r /var/lib/dpkg/status ] && mkdir -p "$C/var/lib/dpkg" && cp /var/lib/dpkg/status "$C/var/lib/dpkg/status"
for f in /proc/driver/nvidia/version /proc/driver/nvidia/gpus/*/information /proc/modules /proc/cmdline /proc/stat \
         /etc/modprobe.d/*.conf /etc/docker/daemon.json /etc/containerd/config.toml \
         /etc/nvidia-container-runtime/config.toml /etc/ld.so.conf /etc/ld.so.conf.d/*.conf \
         /usr/local/cuda*/version.json /lib/modules/*/modules.dep \
         /etc/environment /etc/profile /etc/profile.d/*.sh /etc/bash.bashrc; do
  [ -r "$f" ] && mkdir -p "$C$(dirname "$f")" && cp "$f" "$C$f"
done
for d in /sys/bus/pci/devices/*; do
  [ "$(cat "$d/vendor" 2>/dev/null)" = "0x10de" ] || continue
  mkdir -p "$C$d"; for x in vendor class device; do cat "$d/$x" > "$C$d/$x"; done
  for x in resource numa_node; do [ -r "$d/$x" ] && cat "$d/$x" > "$C$d/$x"; done
done
[ -L /usr/local/cuda ] && mkdir -p "$C/usr/local" && ln -sfn "$(readlink -f /usr/local/cuda)" "$C/usr/local/cuda"
for d in /usr/local/cuda-*; do [ -d "$d" ] && [ ! -L "$d" ] && mkdir -p "$C$d"; done
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64; do
  for f in "$d"/libnvidia-ml.so.* "$d"/libcuda.so.*; do [ -e "$f" ] && mkdir -p "$C$d" && : > "$C$f"; done
done
# 3. Replay the capture offline: must agree with the live run.
log "$BIN" host --root "$C" --format json
log "$BIN" host --root "$C" --check
echo "outputs in $OUT_DIR" | tee -a "$T"
