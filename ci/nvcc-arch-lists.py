#!/usr/bin/env python3
"""Print cuda_arch.toml rows measured from NVIDIA's own nvcc, as published on PyPI.

For each nvcc wheel version given (the GA release of a CUDA minor: 13.4.59), the script
downloads `nvidia-cuda-nvcc` (`-cu11`/`-cu12` before CUDA 13; ~50 MB, no dependencies),
unpacks nvcc and asks it:
  * `nvcc --list-gpu-code`                  -> the real sm_XY targets it accepts;
  * `nvcc --dryrun -gencode arch=compute_XYa,code=sm_XYa` (and `f`) per target
                                             -> which have arch-/family-specific variants.
Each row cites the wheel file name and its sha256. Paste the rows into matrices/cuda_arch.toml.

    python3 ci/nvcc-arch-lists.py 11.7.99 13.1.80 13.2.51 13.3.33 13.4.59 13.5.37

CUDA releases without an nvcc wheel (11.0-11.6) cannot be measured this way. Where the wheel
carries only ptxas (11.7), the script assembles a trivial kernel for every sm_XY instead: the
SASS targets of a release are the ones its assembler accepts.
"""
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
             "manylinux1_x86_64", "manylinux2010_x86_64", "manylinux_2_12_x86_64"]


def dist_for(version):
    major = int(version.split(".")[0])
    return "nvidia-cuda-nvcc" if major >= 13 else f"nvidia-cuda-nvcc-cu{major}"


def measure(version, tmp):
    dist = dist_for(version)
    d = Path(tmp) / version
    d.mkdir()
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", *plats,
                    "-d", str(d), f"{dist}=={version}"], check=True)
    whl = next(d.glob("*.whl"))
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
        f"sm = {sm}",
        f"arch_specific = {arch_specific}",
        f"family_specific = {family_specific}",
        f'note = "measured by ci/nvcc-arch-lists.py: nvcc --list-gpu-code of {whl.name} '
        f'(sha256 {sha})"',
        f'source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
    ])


def measure_ptxas(version, ptxas, whl, sha, dist, d):
    """Assemble a trivial kernel for every sm_XY from 30 to 130 with the release's ptxas."""
    ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR)
    major, minor = (int(x) for x in version.split(".")[:2])
    isa = f"{major - 4}.{minor}"  # PTX ISA of CUDA X.Y is .Y for 11.x-13.x
    ptx = d / "k.ptx"
    sm = []
    for t in range(30, 131):
        ptx.write_text(f".version {isa}\n.target sm_{t}\n.address_size 64\n"
                       ".visible .entry k() { ret; }\n")
        r = subprocess.run([str(ptxas), f"-arch=sm_{t}", str(ptx), "-o", str(d / "k.cubin")],
                           capture_output=True)
        if r.returncode == 0:
            sm.append(t)
    return "\n".join([
        "[[release]]",
        f'cuda = "{major}.{minor}"',
        f"sm = {sm}",
        "arch_specific = []",
        "family_specific = []",
        f'note = "measured by ci/nvcc-arch-lists.py: the sm_XY targets ptxas of {whl.name} '
        f'(sha256 {sha}) assembles a kernel for (PTX ISA {isa}); the wheel has no nvcc"',
        f'source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
    ])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for v in sys.argv[1:]:
            print(measure(v, tmp), flush=True)


if __name__ == "__main__":
    main()
