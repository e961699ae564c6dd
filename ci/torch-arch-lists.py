#!/usr/bin/env python3
"""Print torch.toml [[arch]] rows measured from the torch wheels published on PyPI.

For each torch version given (default: every X.Y.0 release on PyPI from 1.13.0 on, as
`pip index versions torch` lists them), the script downloads the plain PyPI Linux x86_64
wheel (the PyPI default CUDA build; ~0.7-1 GB, no dependencies), and:
  * computes its sha256 and reads torch/version.py (`__version__`, `cuda = '12.8'` -> cu128);
  * extracts only torch/lib/libtorch_cuda*.so and torch/lib/libc10_cuda.so, streamed out of
    the zip one member at a time;
  * runs gpulint's own fatbin reader over them (`gpulint inventory dir:DIR --format json`):
    sass/ptx = union of the targets the CUDA runtime registers (`.nv_fatbin`, what
    `cuobjdump --list-elf/--list-ptx` lists) over those libraries. Fatbins that statically
    linked NVIDIA libraries (cuFFT, ...) keep in `.data`/`.ldata` and load themselves
    (`embedded_sass`/`embedded_ptx`) are not torch's arch list and are only mentioned in the
    note; so are arch-specific SASS (sm_90a, sm_100a: a few kernels built on top of the
    generic list), which torch.toml's generic-only lists cannot hold;
  * deletes the wheel before the next one.
Each row cites the wheel file name and its sha256. Paste the rows into matrices/torch.toml.

    cargo build --release
    python3 ci/torch-arch-lists.py                 # every X.Y.0 from 1.13.0
    python3 ci/torch-arch-lists.py 2.11.0 2.15.0

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
GPULINT = Path(os.environ.get("GPULINT", REPO / "target" / "release" / "gpulint"))
PLATFORMS = ["manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64",
             "manylinux_2_28_x86_64"]
PYTHONS = ["3.10", "3.12", "3.13"]
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
    vs = [v for v in vs if re.fullmatch(r"\d+\.\d+\.0", v) and vkey(v) >= (1, 13, 0)]
    return sorted(vs, key=vkey)


def download(version, d):
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
        inv = json.loads(subprocess.run(
            [str(GPULINT), "inventory", f"dir:{libs}", "--format", "json"],
            capture_output=True, text=True, check=True).stdout)
        per = {}
        for b in inv["binaries"]:
            per[Path(b["path"]).name] = b
        sass, ptx, embedded, specific, isa, per_lib = set(), set(), set(), set(), set(), []
        for n in members:
            name = Path(n).name
            b = per.get(name)
            if b is None:
                per_lib.append(f"{name}: no device code")
                continue
            s = [t for t in b.get("sass", [])]
            p = [t for t in b.get("ptx", [])]
            sass.update(t for t in s if generic(t))
            ptx.update(t for t in p if generic(t))
            specific.update(t for t in s + p if not generic(t))
            embedded.update(b.get("embedded_sass", []) + b.get("embedded_ptx", []))
            isa.update(f"{k} ISA {v}" for k, v in b.get("ptx_isa", {}).items())
            per_lib.append(f"{name}: {' '.join(names(s)) or '-'}"
                           + (f" + PTX {' '.join(names(p))}" if p else ""))
            for w in b.get("warnings", []):
                log(f"torch {version} {name}: warning: {w}")
        if inv.get("partial"):
            log(f"torch {version}: inventory partial: {inv.get('errors')}")
        extra = []
        if specific:
            extra.append(f"arch-specific targets beside the list (not in sass/ptx): "
                         f"{' '.join(names(specific))}")
        if embedded:
            extra.append(f"self-loaded fatbins of statically linked NVIDIA code outside "
                         f".nv_fatbin (not counted): {' '.join(names(embedded))}")
        if isa:
            extra.append("; ".join(sorted(isa)))
        q = lambda v: "[" + ", ".join(f'"{t}"' for t in names(v)) + "]"
        mm = ".".join(version.split(".")[:2])
        note = (f"measured by ci/torch-arch-lists.py: gpulint's fatbin reader (.nv_fatbin, "
                f"what the runtime registers) on torch/lib of {whl.name} "
                f"(sha256 {digest}; __version__ {full.group(1) if full else '?'}); "
                + "; ".join(per_lib) + "".join(f"; {e}" for e in extra))
        return "\n".join([
            "[[arch]]",
            f'torch = "{mm}"',
            f'tag = "{tag}"',
            f"sass = {q(sass)}",
            f"ptx = {q(ptx)}",
            f'source = "https://pypi.org/project/torch/{version}/#files"',
            f'note = "{note}"',
            "",
        ])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    if not GPULINT.exists():
        raise SystemExit(f"{GPULINT} missing: run `cargo build --release` first")
    versions = sys.argv[1:] or default_versions()
    with tempfile.TemporaryDirectory(prefix="torch-arch-", dir="/tmp") as tmp:
        for v in versions:
            log(f"torch {v} ...")
            print(measure(v, tmp), flush=True)


if __name__ == "__main__":
    main()
