#!/usr/bin/env bash
# Oracle test for the fatbin reader (src/detect/elf): compares, per shared library of a few
# real CUDA wheels from PyPI, the SASS/PTX target sets printed by our `fatbin_list` example
# with those of NVIDIA's `cuobjdump --list-elf/--list-ptx` (PyPI nvidia-cuda-cuobjdump; it runs
# without a GPU). Also runs our deep check (decompress every loadable SASS/PTX payload and
# compare cubin e_flags / PTX .target/.version with the entry header); a mismatch is a FAIL.
# Prints PASS/FAIL/SKIP per file; exits non-zero on any FAIL.
#
# Usage: ci/fatbin-oracle.sh [PACKAGE...]
#        ci/fatbin-oracle.sh --fixtures    (CI, every run: no wheels; every fixture binary)
#   Its output of the last recorded run is kept in testdata/fatbin/fatbin-oracle-results.txt.
#   --fixtures compares every ELF, cubin and bare fatbin under testdata/ and ../shared/fixtures/
#   instead; there a cuobjdump failure is a FAIL too (our own fixtures are all current builds),
#   and finding no fixture at all is an error.
#   env ORACLE_WORK=DIR    keep downloads/unpacked files in DIR (default: a temp dir, removed)
#   env CARGO_TARGET_DIR   as usual
# cuobjdump failures (e.g. 13.x refusing sm_35, "Invalid ELF") are SKIPs, not FAILs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXTURES=0
if [ "${1:-}" = --fixtures ]; then
  FIXTURES=1
  PACKAGES=()
elif [ $# -gt 0 ]; then
  PACKAGES=("$@")
else
  # Small-ish CUDA wheels: CUDA 12.8/12.9/13 builds, a/f targets, curand 13's fatbins in .data,
  # bitsandbytes 0.42 (CUDA 11.0-12.3 libraries, some of which cuobjdump 13 refuses: SKIP).
  PACKAGES=(torchvision torchaudio torchao cupy-cuda12x nvidia-curand-cu12 "nvidia-curand>=10.4"
    "bitsandbytes==0.42.0")
fi
if [ -n "${ORACLE_WORK:-}" ]; then
  WORK=$ORACLE_WORK
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
PY=${PYTHON:-python3}

echo "== work dir: $WORK"

# 1. cuobjdump from PyPI.
if [ ! -d "$WORK/tools" ]; then
  "$PY" -m pip install --quiet --target "$WORK/tools" nvidia-cuda-cuobjdump
fi
CUOBJDUMP=$(find "$WORK/tools" -type f -name cuobjdump | head -n1)
if [ -z "$CUOBJDUMP" ]; then
  echo "cuobjdump not found in nvidia-cuda-cuobjdump" >&2
  exit 2
fi
chmod +x "$CUOBJDUMP"
"$CUOBJDUMP" --version | tail -n1

# 2. Our lister.
(cd "$ROOT" && cargo build --quiet --example fatbin_list)
LISTER="${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/fatbin_list"

# 3. Wheels.
mkdir -p "$WORK/wheels" "$WORK/unpacked"
for p in ${PACKAGES[@]+"${PACKAGES[@]}"}; do
  stem=$(echo "$p" | sed 's/[<>=!~].*//' | tr - _)
  if ! ls "$WORK/wheels" | grep -qi "^${stem}-[0-9]"; then
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux2014_x86_64 \
      --python-version 3.12 -d "$WORK/wheels" "$p" ||
      echo "SKIP package $p: pip download failed"
  fi
done
for w in "$WORK"/wheels/*.whl; do
  [ -f "$w" ] || continue
  d="$WORK/unpacked/$(basename "$w" .whl)"
  [ -d "$d" ] && continue
  mkdir -p "$d"
  "$PY" - "$w" "$d" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in z.namelist():
        base = n.rsplit("/", 1)[-1]
        if ".so" in base or base.endswith(".o") or base.endswith(".a"):
            z.extract(n, sys.argv[2])
EOF
done

# 4. Compare.
ROOTS=("$WORK/unpacked")
if [ "$FIXTURES" = 1 ]; then
  ROOTS=("$ROOT/testdata" "$ROOT/../shared/fixtures")
fi
FIXTURES=$FIXTURES "$PY" - "$CUOBJDUMP" "$LISTER" "${ROOTS[@]}" <<'EOF'
import os, re, subprocess, sys
cuobjdump, lister, roots = sys.argv[1], sys.argv[2], sys.argv[3:]
fixtures = os.environ.get("FIXTURES") == "1"
# ELF (shared objects, objects, cubins) and bare fatbins (magic 0xBA55ED50, little-endian).
MAGICS = (b"\x7fELF", b"\x50\xed\x55\xba")
files = []
for root in roots:
    if fixtures and not os.path.isdir(root):
        print(f"FAIL fixture directory {root} missing")
        sys.exit(1)
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            if fixtures or re.search(r"\.so(\.|$)", f) or f.endswith(".o"):
                files.append(p)
files.sort()
root = os.path.commonpath(roots) if fixtures else roots[0]
counts = {"PASS": 0, "FAIL": 0, "SKIP": 0, "MALFORMED": 0, "BARE-CUBIN": 0}

def is_device_elf(path):
    # EM_CUDA (190): a bare cubin, which cuobjdump lists as itself; the fatbin reader lists
    # device code inside host binaries (loose cubins are issue 34's, src/detect/elf).
    with open(path, "rb") as fh:
        h = fh.read(20)
    return len(h) == 20 and h[:4] == b"\x7fELF" and int.from_bytes(h[18:20], "little") == 190

def cuobj(flag, path):
    r = subprocess.run([cuobjdump, flag, path], capture_output=True, text=True)
    out = r.stdout + r.stderr
    names = re.findall(r"^(?:ELF|PTX) file\s+\d+:\s*(\S+)$", out, re.M)
    benign = ("No ELF file found" in out or "No PTX file found" in out
              or "does not contain device code" in out)
    if r.returncode != 0 and not benign and not names:
        raise RuntimeError(" ".join(out.strip().splitlines()[-2:]) or f"rc={r.returncode}")
    bad = [l for l in out.splitlines() if re.match(r"cuobjdump (fatal|error)", l)]
    if bad:
        raise RuntimeError(" ".join(bad)[:200])
    arches = set()
    for n in names:
        m = re.search(r"\.(sm_\d+[a-z]?)\.(cubin|ptx)$", n)
        if not m:
            raise RuntimeError(f"unparsed cuobjdump name {n}")
        arches.add(m.group(1))
    return arches

deep = []  # payload/header mismatches found by `fatbin_list --deep` for the last file

def ours(path):
    r = subprocess.run([lister, "--deep", path], capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, r.stderr.strip()
    sass = ptx = set()
    warns = []
    deep.clear()
    for line in r.stdout.splitlines():
        if line.startswith("sass:"):
            sass = set(line[5:].split())
        elif line.startswith("ptx:"):
            ptx = set(line[4:].split())
        elif line.startswith("warning:"):
            warns.append(line[8:].strip())
        elif line.startswith("deep-problem:"):
            deep.append(line[13:].strip())
    return sass, ptx, warns

for path in files:
    rel = os.path.relpath(path, root)
    with open(path, "rb") as fh:
        if fh.read(4) not in MAGICS:
            continue
    try:
        c_sass = cuobj("--list-elf", path)
        c_ptx = cuobj("--list-ptx", path)
    except RuntimeError as e:
        o_sass, o_ptx, _ = ours(path)
        tag = "FAIL" if fixtures else "SKIP"
        print(f"{tag} {rel}: cuobjdump failed: {e}; ours: sass={sorted(o_sass or [])} ptx={sorted(o_ptx or [])}")
        counts[tag] += 1
        continue
    o_sass, o_ptx, warns = ours(path)
    if o_sass is None:
        # A deliberately malformed fixture (GL000 cases, stubs): we refuse it, and cuobjdump
        # finds no device code in it either. Device code we cannot read is a FAIL.
        tag = "MALFORMED" if fixtures and not c_sass and not c_ptx else "FAIL"
        print(f"{tag} {rel}: our lister refuses it: {warns}; cuobjdump: no device code")
        counts[tag] += 1
        continue
    if fixtures and is_device_elf(path) and not o_sass and not o_ptx and not deep:
        print(f"BARE-CUBIN {rel}: cuobjdump lists the cubin itself: sass={sorted(c_sass)}; "
              f"the fatbin reader lists none (not compared)")
        counts["BARE-CUBIN"] += 1
        continue
    # cuobjdump drops the 'f' suffix in --list-elf names; we keep it (ArchTarget sm_100f).
    o_sass_cmp = {re.sub(r"f$", "", t) for t in o_sass}
    # cuobjdump names PTX files sm_NN; ours are compute_NN.
    o_ptx_cmp = {t.replace("compute_", "sm_", 1) for t in o_ptx}
    ok = o_sass_cmp == c_sass and o_ptx_cmp == c_ptx and not deep
    tag = "PASS" if ok else "FAIL"
    counts[tag] += 1
    desc = f"sass={sorted(o_sass)} ptx={sorted(o_ptx)}" if (o_sass or o_ptx) else "no device code"
    print(f"{tag} {rel}: {desc}")
    if not ok:
        print(f"     cuobjdump: sass={sorted(c_sass)} ptx={sorted(c_ptx)}")
    for w in warns[:5]:
        print(f"     warning: {w}")
    for p in deep[:5]:
        print(f"     deep check (payload vs header): {p}")
print(f"== {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['SKIP']} SKIP"
      + (f", {counts['MALFORMED']} MALFORMED (refused by us, no device code for cuobjdump), "
         f"{counts['BARE-CUBIN']} BARE-CUBIN (not compared)" if fixtures else ""))
if fixtures and not counts["PASS"]:
    print("== no fixture binary compared")
    sys.exit(1)
sys.exit(1 if counts["FAIL"] else 0)
EOF
