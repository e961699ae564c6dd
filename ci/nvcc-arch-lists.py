#!/usr/bin/env python3
"""Print cuda_arch.toml rows measured from NVIDIA's own nvcc, as published on PyPI.

For each nvcc wheel, the script downloads `nvidia-cuda-nvcc` (`-cu11`/`-cu12` before CUDA 13;
~40-100 MB, no dependencies), unpacks nvcc and asks it:
  * `nvcc --list-gpu-code`                  -> the real sm_XY targets it accepts;
  * `nvcc --dryrun -gencode arch=compute_XYa,code=sm_XYa` (and `f`) per target
                                             -> which have arch-/family-specific variants.
Where the wheel carries only ptxas (11.7), it assembles a trivial kernel for every sm_XY
instead: the SASS targets of a release are the ones its assembler accepts.

    python3 ci/nvcc-arch-lists.py --from matrices/compiler_wheels.toml [--cache DIR]
    python3 ci/nvcc-arch-lists.py 13.0.88 13.1.115            # one row per wheel

With --from, every wheel the list names for this script is measured (its sha256 checked
against the list), the update releases of one CUDA minor must all give the same answer, and
one row per minor is printed citing every wheel (the newest first; its PyPI page is the
source). Updates that disagree are reported and the script exits 1: such a minor needs rows
per update, which cuda_arch.toml does not have. Paste the rows into matrices/cuda_arch.toml.
--cache keeps the downloaded wheels (outside the repository) for the next run.
"""
import argparse
import hashlib
import json
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
import zipfile
from pathlib import Path

PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
             "manylinux1_x86_64", "manylinux2010_x86_64", "manylinux_2_12_x86_64"]


def dist_for(version):
    major = int(version.split(".")[0])
    return "nvidia-cuda-nvcc" if major >= 13 else f"nvidia-cuda-nvcc-cu{major}"


def download(dist, version, into):
    """The wheel of dist==version in `into` (pip skips a file already there)."""
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", *plats,
                    "-d", str(into), f"{dist}=={version}"], check=True)
    stem = f"{dist.replace('-', '_')}-{version}-"
    return next(w for w in sorted(Path(into).glob("*.whl")) if w.name.startswith(stem))


def fetch(w, into):
    """The listed wheel `w` (file, url, sha256) in `into`: downloaded unless already there,
    and refused unless its sha256 is the list's."""
    path = Path(into) / w["file"]
    if not path.is_file():
        if not w["url"].startswith("https://files.pythonhosted.org/"):
            raise SystemExit(f"{w['file']}: not a PyPI file URL: {w['url']}")
        tmp = path.with_suffix(".part")
        with urllib.request.urlopen(w["url"], timeout=300) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f)
        tmp.rename(path)
    if hashlib.sha256(path.read_bytes()).hexdigest() != w["sha256"]:
        raise SystemExit(f"{w['file']}: sha256 differs from the list's")
    return path


def measure(version, tmp, cache=None, wheel=None):
    """The row of one nvcc wheel: `wheel` (a path) when given, else pip's pick of the version."""
    dist = dist_for(version)
    d = Path(tmp) / version
    d.mkdir()
    whl = wheel or download(dist, version, cache or d)
    sha = hashlib.sha256(whl.read_bytes()).hexdigest()
    root = d / "x"
    with zipfile.ZipFile(whl) as z:
        z.extractall(root)
    nvcc = next((p for p in root.rglob("nvcc") if p.parent.name == "bin"), None)
    if nvcc is None:
        # nvidia-cuda-nvcc-cu11 11.7.99 ships only ptxas, the release's SASS assembler:
        # the targets it assembles are the targets that release can build SASS for.
        ptxas = next((p for p in root.rglob("ptxas") if p.parent.name == "bin"), None)
        if ptxas is None:
            return f"# {whl.name}: neither nvcc nor ptxas in the wheel, release not measured\n"
        return measure_ptxas(version, ptxas, whl, sha, dist, d)
    for p in nvcc.parent.rglob("*"):
        if p.is_file():
            p.chmod(p.stat().st_mode | stat.S_IXUSR)
    codes = subprocess.run([str(nvcc), "--list-gpu-code"], capture_output=True, text=True,
                           check=True).stdout.split()
    sm = sorted({int(c[3:]) for c in codes if c.startswith("sm_") and c[3:].isdigit()})
    src = d / "k.cu"
    src.write_text("__global__ void k() {}\n")

    def accepts(target):
        r = subprocess.run([str(nvcc), "--dryrun", "-c", "-gencode",
                            f"arch=compute_{target},code=sm_{target}", str(src)],
                           capture_output=True, cwd=d)
        return r.returncode == 0

    arch_specific = [s for s in sm if accepts(f"{s}a")]
    family_specific = [s for s in sm if accepts(f"{s}f")]
    major, minor = version.split(".")[:2]
    return "\n".join([
        "[[release]]",
        f'cuda = "{major}.{minor}"',
        'basis = "measured"',
        f"sm = {sm}",
        f"arch_specific = {arch_specific}",
        f"family_specific = {family_specific}",
        f'note = "measured by ci/nvcc-arch-lists.py: nvcc --list-gpu-code of {whl.name} '
        f'(sha256 {sha})"',
        f'source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
    ])


def measure_ptxas(version, ptxas, whl, sha, dist, d):
    """Assemble a trivial kernel for every sm_XY from 30 to 130 (and its `a`/`f` variants)
    with the release's ptxas, at the newest PTX ISA that ptxas accepts."""
    ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR)
    major, minor = (int(x) for x in version.split(".")[:2])
    ptx = d / "k.ptx"

    def assembles(isa, target):
        ptx.write_text(f".version {isa}\n.target sm_{target}\n.address_size 64\n"
                       ".visible .entry k() { ret; }\n")
        r = subprocess.run([str(ptxas), f"-arch=sm_{target}", str(ptx), "-o",
                            str(d / "k.cubin")], capture_output=True)
        return r.returncode == 0

    # The release's own ISA, not a formula: 12.6 kept 8.5, 12.8 wrote 8.7 (8.6 was "12.7").
    isas = [f"{a}.{b}" for a in range(6, 10) for b in range(10) if assembles(f"{a}.{b}", 75)]
    if not isas:
        return f"# {whl.name}: ptxas assembles no .version for sm_75, release not measured\n"
    isa = isas[-1]
    sm = [t for t in range(30, 131) if assembles(isa, t)]
    arch_specific = [t for t in sm if assembles(isa, f"{t}a")]
    family_specific = [t for t in sm if assembles(isa, f"{t}f")]
    return "\n".join([
        "[[release]]",
        f'cuda = "{major}.{minor}"',
        'basis = "measured"',
        f"sm = {sm}",
        f"arch_specific = {arch_specific}",
        f"family_specific = {family_specific}",
        f'note = "measured by ci/nvcc-arch-lists.py: the sm_XY targets ptxas of {whl.name} '
        f'(sha256 {sha}) assembles a kernel for (PTX ISA {isa}); the wheel has no nvcc"',
        f'source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
    ])


def key(v):
    return tuple(int(x) for x in v.split("."))


def measure_list(path, tmp, cache):
    """One row per CUDA minor of the wheel list, citing every update's wheel; None and a
    message on stderr when a wheel's digest or the updates' answers disagree."""
    wheels = [w for w in tomllib.loads(Path(path).read_text())["wheel"]
              if w["measured_by"] == "ci/nvcc-arch-lists.py"]
    releases = {}
    for w in wheels:
        releases.setdefault(w["cuda"], []).append(w)
    out, ok = [], True
    for cuda in sorted(releases, key=key):
        ws = sorted(releases[cuda], key=lambda w: key(w["version"]), reverse=True)
        rows = []
        for w in ws:
            path = fetch(w, cache or tmp)
            row = tomllib.loads(measure(w["version"], tmp, cache, path))["release"][0]
            cited = row["note"].split(" (sha256 ", 1)[1][:64]
            if cited != w["sha256"] or w["file"] not in row["note"]:
                print(f"# {w['file']}: downloaded sha256 {cited}, the list says {w['sha256']}",
                      file=sys.stderr)
                ok = False
            rows.append(row)
            shutil.rmtree(Path(tmp) / w["version"], ignore_errors=True)
        fields = ("sm", "arch_specific", "family_specific")
        differ = [r for r in rows[1:] if any(r[f] != rows[0][f] for f in fields)]
        if differ:
            print(f"# CUDA {cuda}: update releases disagree: "
                  + "; ".join(f"{w['version']}: {r['sm']} {r['arch_specific']} "
                              f"{r['family_specific']}" for w, r in zip(ws, rows)),
                  file=sys.stderr)
            ok = False
            continue
        head = rows[0]
        note = head["note"]
        if len(ws) > 1:
            note += "; the same from " + ", ".join(
                f"{w['file']} (sha256 {w['sha256']})" for w in ws[1:])
        out.append("\n".join([
            "[[release]]",
            f'cuda = "{cuda}"',
            'basis = "measured"',
            f"sm = {head['sm']}",
            f"arch_specific = {head['arch_specific']}",
            f"family_specific = {head['family_specific']}",
            f"note = {json.dumps(note)}",
            f'source = "{head["source"]}"',
            "",
        ]))
    return out, ok


def parse_args():
    """The measuring scripts' command line: versions, `--from` a wheel list, `--cache` DIR
    (created)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("versions", nargs="*")
    ap.add_argument("--from", dest="wheel_list")
    ap.add_argument("--cache", help="keep downloaded wheels here (not in the repository)")
    a = ap.parse_args()
    if a.cache:
        Path(a.cache).mkdir(parents=True, exist_ok=True)
    return a


def main():
    a = parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for v in a.versions:
            print(measure(v, tmp, a.cache), flush=True)
        if a.wheel_list:
            rows, ok = measure_list(a.wheel_list, tmp, a.cache)
            print("\n".join(rows), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
