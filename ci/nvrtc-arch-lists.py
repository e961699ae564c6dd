#!/usr/bin/env python3
"""Print cuda_arch.toml rows measured from NVIDIA's NVRTC, for CUDA releases with no nvcc wheel.

CUDA 11.2-11.6 have no nvcc or ptxas on PyPI (ci/nvcc-arch-lists.py cannot measure them), but
some PyPI wheels redistribute that release's `libnvrtc.so` (auditwheel copies it into
`<dist>.libs/`). NVRTC is the same compiler: the script loads the library and asks it
  * `nvrtcVersion`                       -> which CUDA release it is (checked against the spec);
  * `nvrtcGetSupportedArchs` (CUDA 11.2+) -> the architectures it compiles for;
  * `nvrtcCompileProgram -arch=sm_XY` + `nvrtcGetCUBINSize` for every sm_XY from 30 to 130
                                          -> the SASS targets it really builds.
A row is printed only when both answers agree. Each row cites the wheel and its sha256.
It also prints the release's ptx_isa.toml `[[release]]` row: the `.version` of the PTX that
NVRTC writes for compute_75 (`nvrtcGetPTX`), which is the newest ISA that release knows.

    python3 ci/nvrtc-arch-lists.py 11.3=cumm-cu113==0.5.3 11.4=cumm-cu114==0.8.2 \\
        11.6=cumm-cu116==0.5.3

Check the method on releases whose rows came from nvcc (the answers must equal those rows):

    python3 ci/nvrtc-arch-lists.py 11.7=nvidia-cuda-nvrtc-cu11==11.7.99 \\
        11.8=nvidia-cuda-nvrtc-cu11==11.8.89
"""
import ctypes
import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux1_x86_64"]
KERNEL = b'extern "C" __global__ void k(int *p) { *p = 1; }'


def download(spec, d):
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.11", *plats,
                    "-d", str(d), spec], check=True)
    return next(d.glob("*.whl"))


def load_nvrtc(root):
    libs = [p for p in root.rglob("libnvrtc*.so*") if "builtins" not in p.name]
    if len(libs) != 1:
        return None, None
    # The builtins library first, so the (possibly renamed) DT_NEEDED entry resolves.
    for b in libs[0].parent.glob("libnvrtc-builtins*.so*"):
        ctypes.CDLL(str(b), mode=ctypes.RTLD_GLOBAL)
    return libs[0], ctypes.CDLL(str(libs[0]))


def builds_cubin(nvrtc, sm):
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), KERNEL, b"k.cu", 0, None, None) != 0:
        return False
    opt = (ctypes.c_char_p * 1)(f"--gpu-architecture=sm_{sm}".encode())
    ok = nvrtc.nvrtcCompileProgram(prog, 1, opt) == 0
    size = ctypes.c_size_t(0)
    ok = ok and nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size)) == 0 and size.value > 0
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return ok


def ptx_version(nvrtc):
    """The `.version` NVRTC writes into the PTX of a trivial kernel, or None."""
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), KERNEL, b"k.cu", 0, None, None) != 0:
        return None
    opt = (ctypes.c_char_p * 1)(b"--gpu-architecture=compute_75")
    text = None
    if nvrtc.nvrtcCompileProgram(prog, 1, opt) == 0:
        size = ctypes.c_size_t(0)
        if nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size)) == 0 and size.value > 0:
            buf = ctypes.create_string_buffer(size.value)
            if nvrtc.nvrtcGetPTX(prog, buf) == 0:
                text = buf.value.decode("ascii", "replace")
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    m = re.search(r"^\.version\s+(\d+\.\d+)", text or "", re.M)
    return m.group(1) if m else None


def measure(cuda, spec, tmp):
    d = Path(tmp) / spec.replace("=", "_")
    d.mkdir()
    whl = download(spec, d)
    sha = hashlib.sha256(whl.read_bytes()).hexdigest()
    root = d / "x"
    with zipfile.ZipFile(whl) as z:
        z.extractall(root)
    lib, nvrtc = load_nvrtc(root)
    if nvrtc is None:
        return f"# {whl.name}: not exactly one libnvrtc in the wheel, not measured\n"
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    if f"{major.value}.{minor.value}" != cuda:
        return f"# {whl.name}: NVRTC {major.value}.{minor.value}, not CUDA {cuda}\n"
    n = ctypes.c_int()
    nvrtc.nvrtcGetNumSupportedArchs(ctypes.byref(n))
    listed = (ctypes.c_int * n.value)()
    nvrtc.nvrtcGetSupportedArchs(listed)
    listed = sorted(listed)
    built = [sm for sm in range(30, 131) if builds_cubin(nvrtc, sm)]
    if built != listed:
        return f"# {whl.name}: supported archs {listed} but cubins for {built}, not measured\n"
    dist, version = spec.split("==")
    isa = ptx_version(nvrtc)
    if isa is None:
        return f"# {whl.name}: NVRTC wrote no PTX .version, not measured\n"
    return "\n".join([
        "[[release]]",
        f'cuda = "{cuda}"',
        'basis = "measured"',
        f"sm = {built}",
        "arch_specific = []",
        "family_specific = []",
        f'note = "measured by ci/nvrtc-arch-lists.py: the sm_XY targets NVRTC {cuda} '
        f'({lib.name} inside {whl.name}, sha256 {sha}) lists and builds a cubin for"',
        f'source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
        "# ptx_isa.toml:",
        "# [[release]]",
        f'# cuda = "{cuda}"',
        f'# newest_isa = "{isa}"',
        '# basis = "measured"',
        f'# note = "measured by ci/nvrtc-arch-lists.py: the .version NVRTC {cuda} '
        f'({lib.name} inside {whl.name}, sha256 {sha}) writes"',
        f'# source = "https://pypi.org/project/{dist}/{version}/#files"',
        "",
    ])


def main():
    if len(sys.argv) > 2:
        # One process per release: two NVRTC versions in one process could bind each
        # other's builtins symbols.
        for arg in sys.argv[1:]:
            subprocess.run([sys.executable, __file__, arg], check=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cuda, spec = sys.argv[1].split("=", 1)
        print(measure(cuda, spec, tmp), flush=True)


if __name__ == "__main__":
    main()
