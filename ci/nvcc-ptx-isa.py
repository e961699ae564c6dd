#!/usr/bin/env python3
"""Print ptx_isa.toml rows measured from NVIDIA's own nvcc on PyPI: the PTX ISA version
(`.version X.Y`) that nvcc of each CUDA release writes, which is the newest ISA that release
introduced (a driver of that release is the oldest that can JIT it).

For each version given (13.5.37), downloads nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt and
nvidia-cuda-runtime at that version (~130 MB, CUDA 13+ layout), runs `nvcc -ptx` on an empty
kernel and reads the `.version` line. Each row cites the nvcc wheel and its sha256.

    python3 ci/nvcc-ptx-isa.py 13.3.33 13.4.59 13.5.37
"""
import hashlib
import re
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PLATS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
         "manylinux2010_x86_64", "manylinux_2_12_x86_64"]


def measure(version, tmp):
    d = Path(tmp) / version
    d.mkdir()
    plats = [a for p in PLATS for a in ("--platform", p)]
    # Companion wheels are numbered independently; take each one's newest of this minor.
    mm = ".".join(version.split(".")[:2])
    pkgs = [f"nvidia-cuda-nvcc=={version}"] + [f"{p}=={mm}.*" for p in
            ("nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime")]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", *plats, "-d", str(d),
                    *pkgs], check=True)
    sp = d / "sp"
    nvcc_whl = None
    for w in d.glob("*.whl"):
        if w.name.startswith("nvidia_cuda_nvcc-"):
            nvcc_whl = w
        with zipfile.ZipFile(w) as z:
            z.extractall(sp)
    sha = hashlib.sha256(nvcc_whl.read_bytes()).hexdigest()
    for p in sp.rglob("*"):
        if p.is_file() and ("bin" in p.parts):
            p.chmod(p.stat().st_mode | stat.S_IXUSR)
    nvcc = next(p for p in sp.rglob("nvcc") if p.parent.name == "bin")
    src = d / "k.cu"
    src.write_text("__global__ void k(int *o) { o[threadIdx.x] = 1; }\n")
    out = d / "k.ptx"
    subprocess.run([str(nvcc), "-ptx", "-o", str(out), str(src)], check=True, cwd=d)
    isa = re.search(r"^\.version\s+(\d+\.\d+)", out.read_text(), re.M).group(1)
    major, minor = version.split(".")[:2]
    return "\n".join([
        "[[isa]]",
        f'ptx = "{isa}"',
        f'cuda = "{major}.{minor}"',
        f'source = "https://pypi.org/project/nvidia-cuda-nvcc/{version}/#files"',
        f"# measured by ci/nvcc-ptx-isa.py: nvcc -ptx of {nvcc_whl.name} (sha256 {sha})",
        "",
    ])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for v in sys.argv[1:]:
            print(measure(v, tmp), flush=True)


if __name__ == "__main__":
    main()
