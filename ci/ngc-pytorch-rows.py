#!/usr/bin/env python3
"""Print ngc_pytorch.toml [[container]] rows for the NGC PyTorch releases 23.01-25.12 that no
stored NVIDIA PyTorch release-notes page covers.

Two kinds of source:
  * Triton's `docs/introduction/compatibility.md` (triton-inference-server/server, NVIDIA):
    each trtllm-python-py3 row names the torch it ships as `<version>.nvYY.MM`, the build of
    NGC PyTorch YY.MM it reuses. That gives the PyTorch version of those months. (The CUDA
    and driver columns there are Triton's own image, not the PyTorch container's: not used.)
  * ENV dumps of the PyTorch image itself (`CUDA_VERSION`, `CUDA_DRIVER_VERSION`,
    `PYTORCH_BUILD_VERSION`, `CUDNN_VERSION`), quoted in third-party files (ENV_DUMPS below,
    each with the file it was read from and the look-up id that rereads it).
A dump's torch must agree with Triton's for the same month (the dump may shorten the hash).
Months the release notes already give (KEPT) are checked against Triton but not printed.

    python3 ci/ngc-pytorch-rows.py --triton-git /work/.mirror/triton-inference-server+server/repo
"""
import argparse
import re
import subprocess
import sys

COMPAT = "docs/introduction/compatibility.md"

# Months with an NVIDIA release-notes row in ngc_pytorch.toml: checked, not printed.
KEPT = {"24.05": "2.4.0a0+07cecf4", "25.12": "2.10.0a0+b4e4ee81d3"}

# The PyTorch image's own ENV, as quoted by a third party.
ENV_DUMPS = {
    "23.10": {
        "cuda": "12.2.2", "cuda_label": "CUDA_VERSION=12.2.2.009",
        "cuda_driver_version": "535.104.05", "pytorch": "2.1.0a0+32f93b1",
        "cudnn": "8.9.5.29", "basis": "cited",
        "source": "https://github.com/dstackai/benchmarks/blob/6627373196d4128f7e042da16e0efb40e0e27919/nvidia/8xh100/README.md",
        "how": "the environment of a run inside the image (NVIDIA_PYTORCH_VERSION=23.10, "
               "CUDA_VERSION=12.2.2.009, CUDA_DRIVER_VERSION=535.104.05, "
               "PYTORCH_BUILD_VERSION=2.1.0a0+32f93b1, CUDNN_VERSION=8.9.5.29); "
               "find_string(\"NVIDIA_PYTORCH_VERSION=23.10\"), read_file id=17104797160",
    },
    "25.10": {
        "cuda": "13.0.2", "cuda_label": "CUDA_VERSION=13.0.2.006",
        "cuda_driver_version": "580.95.05", "pytorch": "2.9.0a0+145a3a7",
        "cudnn": "9.14.0.64", "basis": "inferred", "source": None,
        "how": "the image's layer history rebuilt as a Dockerfile (arm64; ENV CUDA_VERSION="
               "13.0.2.006 CUDA_DRIVER_VERSION=580.95.05, CUDNN_VERSION=9.14.0.64, "
               "PYTORCH_BUILD_VERSION=2.9.0a0+145a3a7, NVIDIA_PYTORCH_VERSION=25.10) in a file "
               "whose repository the look-up index does not name (read_file id=66000781593), so "
               "the CUDA, driver and cuDNN rest on an unattributed copy: inferred",
    },
    "25.11": {
        "cuda": "13.0.2", "cuda_label": "CUDA_VERSION=13.0.2.006",
        "cuda_driver_version": None, "pytorch": "2.10.0a0+b558c986e8", "cudnn": None,
        "basis": "cited",
        "source": "https://github.com/Parker-Lyu/Learn-TensorRT/blob/af98d328b1bc7795ef263b6d4577fbc962213b76/reports/10a_end_to_end_validation.md",
        "how": "an environment check run inside the image (NVIDIA_PYTORCH_VERSION=25.11, "
               "CUDA_VERSION=13.0.2.006, torch 2.10.0a0+b558c986e8.nv25.11); "
               "find_string(\"NVIDIA_PYTORCH_VERSION=25.\"), read_file id=57527144635",
    },
}

# Months NVIDIA published no PyTorch container for.
NO_RELEASE = {
    "25.07": ("https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/index.html",
              "the release-notes index lists 25.08 then 25.06 (the vLLM and JAX lists skip "
              "25.07 too); read_file id=62164449287"),
}

ROW = re.compile(r"^\|\s*(\d\d\.\d\d)\s*\|\s*nvcr\.io/nvidia/tritonserver:\S+-trtllm-python-py3\s*"
                 r"\|[^|]*\|\s*([^|]+?)\s*\|")
NV = re.compile(r"^(\d+\.\d+\.\d+a0\+[0-9a-f]+)\.nv(\d\d)\.(\d\d?)$")


def triton_torch(text):
    """NGC month -> (torch version, [Triton releases that ship it])."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        triton, torch = m.groups()
        n = NV.match(torch)
        if not n:
            continue  # a torch without the .nvYY.MM suffix names no NGC month
        version, yy, mm = n.groups()
        month = f"{yy}.{int(mm):02d}"
        prev = out.setdefault(month, (version, []))
        if prev[0] != version:
            raise SystemExit(f"NGC {month}: Triton names both {prev[0]} and {version}")
        prev[1].append(triton)
    return out


def q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triton-git", required=True,
                    help="a clone (or bare mirror) of triton-inference-server/server")
    ap.add_argument("--commit", default="HEAD")
    args = ap.parse_args()
    git = lambda *a: subprocess.run(["git", "-C", args.triton_git, *a], capture_output=True,
                                    text=True, check=True).stdout
    commit = git("rev-parse", args.commit).strip()
    url = f"https://github.com/triton-inference-server/server/blob/{commit}/{COMPAT}"
    torch = triton_torch(git("show", f"{commit}:{COMPAT}"))
    for month, want in KEPT.items():
        got = torch.get(month, (None,))[0]
        if got is not None and not got.startswith(want) and not want.startswith(got):
            raise SystemExit(f"NGC {month}: Triton names torch {got}, ngc_pytorch.toml {want}")
    months = sorted(m for m in set(torch) | set(ENV_DUMPS) | set(NO_RELEASE)
                    if "23.01" <= m <= "25.12" and m not in KEPT)
    for month in months:
        lines = ["[[container]]", f"tag = {q(month)}"]
        if month in NO_RELEASE:
            src, why = NO_RELEASE[month]
            lines += ["no_release = true", f"source = {q(src)}", f"note = {q(why)}"]
            print("\n".join(lines) + "\n")
            continue
        dump = ENV_DUMPS.get(month)
        tri = torch.get(month)
        if dump and tri and not tri[0].startswith(dump["pytorch"]):
            raise SystemExit(f"NGC {month}: the ENV dump's torch {dump['pytorch']} is not "
                             f"Triton's {tri[0]}")
        notes = []
        if dump:
            lines += [f"cuda = {q(dump['cuda'])}", f"cuda_label = {q(dump['cuda_label'])}"]
            if dump["cuda_driver_version"]:
                lines.append(f"cuda_driver_version = {q(dump['cuda_driver_version'])}")
        pytorch = tri[0] if tri else dump["pytorch"]
        lines.append(f"pytorch = {q(pytorch)}")
        if dump and dump["cudnn"]:
            lines.append(f"cudnn = {q(dump['cudnn'])}")
        if dump and dump["source"]:
            lines += [f"basis = {q(dump['basis'])}", f"source = {q(dump['source'])}"]
            notes.append(dump["how"])
            if tri:
                notes.append(f"PyTorch {tri[0]} also in Triton's compatibility.md at {commit[:12]} "
                             f"(trtllm rows {', '.join(sorted(tri[1]))}: {tri[0]}.nv{month})")
        else:
            if dump:
                lines.append(f"basis = {q(dump['basis'])}")
            lines.append(f"source = {q(url)}")
            notes.append(f"PyTorch from Triton's trtllm-python-py3 rows {', '.join(sorted(tri[1]))}, "
                         f"which ship torch {tri[0]}.nv{month}; the CUDA and driver columns "
                         f"there are Triton's image, not this one")
            if dump:
                notes.append(dump["how"])
        lines.append(f"note = {q('; '.join(notes))}")
        print("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
