#!/usr/bin/env python3
"""Print torch.toml [[arch]] rows measured from the torch wheels published on PyPI.

For each torch version given (default: every X.Y.0 release on PyPI from 1.10.0 on, as
`pip index versions torch` lists them), the script downloads the plain PyPI Linux x86_64
wheel (the PyPI default CUDA build; ~0.7-1 GB, no dependencies), and:
  * computes its sha256 and reads torch/version.py (`__version__`, `cuda = '12.8'` -> cu128);
  * extracts only torch/lib/libtorch_cuda*.so and torch/lib/libc10_cuda.so, streamed out of
    the zip one member at a time;
  * runs gpulint's own fatbin reader over them (`examples/fatbin_list --json`) and reads the
    fatbins the CUDA runtime registers (`.nv_fatbin`, what `cuobjdump --list-elf/--list-ptx`
    lists). sass/ptx = the generic targets carried by at least half of those fatbins (one
    per translation unit) pooled over the libraries: the build's TORCH_CUDA_ARCH_LIST.
    Targets that only a few kernels add (sm_89 FP8 kernels, arch-specific sm_90a/sm_100a
    CUTLASS kernels; torch.toml's lists are generic-only) go to the note with their counts,
    as does the per-library census. Fatbins that statically linked NVIDIA libraries (cuFFT,
    ...) keep in `.data`/`.ldata` and load themselves are not torch's arch list: noted only;
  * deletes the wheel before the next one.
Each row cites the wheel file name and its sha256. Paste the rows into matrices/torch.toml.

    cargo build --release --example fatbin_list
    python3 ci/torch-arch-lists.py                 # every X.Y.0 from 1.10.0
    python3 ci/torch-arch-lists.py 2.11.0 2.15.0
    TORCH_WHEELS=/tmp/wheels python3 ci/torch-arch-lists.py 2.11.0   # /tmp/wheels/2.11.0/*.whl

Only PyPI is read: the other +cuNNN builds live on download.pytorch.org.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LISTER = Path(os.environ.get("FATBIN_LIST",
                             REPO / "target" / "release" / "examples" / "fatbin_list"))
PLATFORMS = ["manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64",
             "manylinux_2_28_x86_64"]
# 3.9: torch 1.10 and 1.11 have no cp310 wheel on PyPI.
PYTHONS = ["3.10", "3.12", "3.13", "3.9"]
MEMBER = re.compile(r"^torch/lib/(libtorch_cuda[^/]*\.so|libc10_cuda\.so)$")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def default_versions():
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "torch"],
                         capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("Available versions:"))
    vs = [v.strip() for v in line.split(":", 1)[1].split(",")]
    vs = [v for v in vs if re.fullmatch(r"\d+\.\d+\.0", v) and vkey(v) >= (1, 10, 0)]
    return sorted(vs, key=vkey)


def download(version, d):
    # TORCH_WHEELS=DIR: a wheel fetched before (DIR/<version>/torch-*.whl) is used instead.
    pre = os.environ.get("TORCH_WHEELS")
    if pre:
        whl = next((Path(pre) / version).glob("torch-*.whl"), None)
        if whl is not None:
            return whl
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    for py in PYTHONS:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--python-version", py, *plats,
                            "-d", str(d), f"torch=={version}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        whl = next(d.glob("torch-*.whl"), None)
        if r.returncode == 0 and whl is not None:
            return whl
        log(f"torch {version}: no wheel for Python {py}: {r.stderr.strip()[-300:]}")
    raise SystemExit(f"torch {version}: no Linux x86_64 wheel for Python {PYTHONS}")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cu_tag(cuda):
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


def names(targets):
    """Sort sm_/compute_ names by number (sm_90 < sm_100)."""
    def key(t):
        m = re.match(r"^(?:sm|compute)_(\d+)([a-z]?)$", t)
        return (int(m.group(1)), m.group(2)) if m else (1 << 30, t)
    return sorted(set(targets), key=key)


def generic(t):
    return re.fullmatch(r"(?:sm|compute)_\d+", t) is not None


def fatbin_facts(path):
    """ElfFacts of one library, from `fatbin_list --json` (the JSON after the `file:` line)."""
    out = subprocess.run([str(LISTER), "--json", str(path)], capture_output=True, text=True,
                         check=True).stdout
    facts, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])
    return facts, facts.get("warnings", [])


def measure(version, tmp):
    d = Path(tmp) / version
    d.mkdir()
    try:
        whl = download(version, d)
        digest = sha256(whl)
        libs = d / "lib"
        libs.mkdir()
        with zipfile.ZipFile(whl) as z:
            vpy = z.read("torch/version.py").decode()
            members = sorted(n for n in z.namelist() if MEMBER.match(n))
            for n in members:
                with z.open(n) as src, open(libs / Path(n).name, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        whl.unlink()  # disk is limited: the wheel goes before the fatbins are read
        cuda = re.search(r"^cuda\s*(?::\s*\S+\s*)?=\s*'([^']+)'", vpy, re.M)
        full = re.search(r"^__version__\s*(?::\s*\S+\s*)?=\s*'([^']+)'", vpy, re.M)
        if not cuda:
            return f"# {whl.name}: torch/version.py names no CUDA (a CPU build), not measured\n"
        tag = cu_tag(cuda.group(1))
        containers, per_lib, embedded, problems = [], [], set(), []
        for n in members:
            name = Path(n).name
            facts, warnings = fatbin_facts(libs / name)
            problems += [f"{name}: {w}" for w in warnings]
            sections = (facts.get("fatbin") or {}).get("sections", [])
            load = [s for s in sections if s["name"] == ".nv_fatbin"] or \
                [s for s in sections if s["name"] == "__nv_relfatbin"]
            for s in sections:
                if not any(s is l for l in load):
                    embedded.update(e["target"] for c in s["containers"]
                                    for e in c["entries"] if not e["target"].startswith("lto_"))
            cs = [c for s in load for c in s["containers"]]
            if not cs:
                per_lib.append(f"{name}: no registered device code")
                continue
            containers += cs
            counts = {}
            for c in cs:
                for t in {e["target"] for e in c["entries"]}:
                    counts[t] = counts.get(t, 0) + 1
            per_lib.append(f"{name}: {len(cs)} fatbins, " + " ".join(
                t if counts[t] == len(cs) else f"{t} ({counts[t]})"
                for t in names(counts) if not t.startswith("lto_")))
        for p in problems:
            log(f"torch {version} {p}")
        # The build's TORCH_CUDA_ARCH_LIST is the generic target set torch's own kernel
        # fatbins (one per translation unit) carry. Two estimates of it must agree: the
        # targets at least half the fatbins carry, and the most common exact set. A few
        # kernels add targets of their own (sm_89 FP8, sm_90a/sm_100a CUTLASS), which are no
        # arch list a GPU could rely on: they go to the note. In the CUDA 10.2 wheels
        # (1.10-1.12) the statically linked cuBLAS/cuSPARSE/... register about as many
        # fatbins as torch, with sm_35 ... sm_75 lists: the estimates disagree (1.10: sm_37 is
        # in the most common set but under half; 1.11: an NVIDIA set is the most common), so
        # no row is made: the census cannot tell torch's kernels from NVIDIA's.
        counts, isa = {}, {}
        for c in containers:
            for e in c["entries"]:
                if e["target"].startswith("compute_"):
                    v = ".".join(map(str, e["code_version"]))
                    isa[e["target"]] = min(isa.get(e["target"], v), v)
            for t in {e["target"] for e in c["entries"]}:
                counts[t] = counts.get(t, 0) + 1
        sets = {}
        for c in containers:
            key = frozenset(t for t in {e["target"] for e in c["entries"]} if generic(t))
            sets[key] = sets.get(key, 0) + 1
        ranked = sorted(sets.items(), key=lambda kv: -kv[1])
        tie = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        listed = set(ranked[0][0])
        majority = {t for t, k in counts.items() if 2 * k >= len(containers) and generic(t)}
        if tie or majority != listed:
            return (f"# {whl.name} (sha256 {digest}): not measured: the targets at least half "
                    f"of {len(containers)} fatbins carry ({' '.join(names(majority))}) are not "
                    f"the most common set ({' '.join(names(listed))}, {ranked[0][1]} fatbins): "
                    f"statically linked NVIDIA libraries' fatbins are mixed with torch's\n")
        sass = {t for t in listed if t.startswith("sm_")}
        ptx = {t for t in listed if t.startswith("compute_")}
        extra = []
        rest = [t for t in names(counts) if t not in listed and not t.startswith("lto_")]
        if rest:
            extra.append("targets of only some kernels, not in sass/ptx: " + " ".join(
                f"{t} ({counts[t]}/{len(containers)})" for t in rest))
        if embedded:
            extra.append(f"self-loaded fatbins outside .nv_fatbin (statically linked NVIDIA "
                         f"code, not counted): {' '.join(names(embedded))}")
        if isa:
            extra.append("PTX ISA " + ", ".join(f"{t} {v}" for t, v in isa.items()))
        q = lambda v: "[" + ", ".join(f'"{t}"' for t in names(v)) + "]"
        mm = ".".join(version.split(".")[:2])
        note = (f"measured by ci/torch-arch-lists.py: gpulint's fatbin reader (examples/"
                f"fatbin_list, the registered .nv_fatbin) on torch/lib of {whl.name} "
                f"(sha256 {digest}; __version__ {full.group(1) if full else '?'}); "
                + "; ".join(per_lib) + "".join(f"; {e}" for e in extra))
        return "\n".join([
            "[[arch]]",
            f'torch = "{mm}"',
            f'tag = "{tag}"',
            f"sass = {q(sass)}",
            f"ptx = {q(ptx)}",
            'basis = "measured"',
            f'source = "https://pypi.org/project/torch/{version}/#files"',
            f'note = "{note}"',
            "",
        ])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    if not LISTER.exists():
        raise SystemExit(f"{LISTER} missing: run "
                         "`cargo build --release --example fatbin_list` first")
    versions = sys.argv[1:] or default_versions()
    with tempfile.TemporaryDirectory(prefix="torch-arch-", dir="/tmp") as tmp:
        for v in versions:
            log(f"torch {v} ...")
            print(measure(v, tmp), flush=True)


if __name__ == "__main__":
    main()
