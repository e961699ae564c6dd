#!/usr/bin/env python3
"""List what NVIDIA and PyTorch have published on PyPI beyond our matrices/ rows.

Run before a gpulint release (needs PyPI; stdlib only, Python >= 3.11):

    python3 ci/freshness.py          # prints what is missing; exit 1 when anything is

It asks `pip index versions` for
  * torch                                   -> release lines missing from torch.toml, and
                                               lines without a measured [[arch]] row for
                                               their PyPI default build (a row whose note
                                               says ci/torch-arch-lists.py measured it);
  * cuda-toolkit (NVIDIA's metapackage)     -> toolkit releases missing from
                                               cuda_components.toml (ci/cuda-components.py),
                                               and CUDA minors missing from cuda_driver.toml
                                               (from the release notes' driver table);
  * nvidia-cuda-nvcc(-cu12/-cu11)           -> CUDA minors missing from cuda_arch.toml
                                               (ci/nvcc-arch-lists.py).
Each missing fact names the script (or document) that produces its row.
"""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

M = Path(__file__).resolve().parent.parent / "matrices"


def pypi_versions(dist):
    r = subprocess.run([sys.executable, "-m", "pip", "index", "versions", dist],
                       capture_output=True, text=True)
    line = next((l for l in r.stdout.splitlines() if l.startswith("Available versions:")), "")
    return [v.strip() for v in line.split(":", 1)[-1].split(",") if v.strip()]


def mm(v):
    p = v.split(".")
    return f"{p[0]}.{p[1]}"


def key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def load(name):
    return tomllib.loads((M / name).read_text())


def main():
    missing = []
    torch = load("torch.toml")
    lines = {r["torch"] for r in torch.get("release", [])}
    # Only rows measured from the wheel count (transcribed ones say what a build script or
    # RELEASE.md promised, which the shipped 2.12/2.13 wheels did not keep).
    arch = {(r["torch"], r["tag"]) for r in torch.get("arch", [])
            if r.get("note", "").startswith("measured by ci/torch-arch-lists.py")}
    defaults = {r["torch"]: r.get("pypi_default") for r in torch.get("release", [])}
    for v in sorted({mm(v) for v in pypi_versions("torch") if re.fullmatch(r"\d+\.\d+\.\d+", v)},
                    key=key):
        if key(v) < (1, 13):
            continue
        if v not in lines:
            missing.append(f"torch.toml: release {v} (PyPI default build, Python wheels)")
        elif defaults.get(v) and (v, defaults[v]) not in arch:
            missing.append(f"torch.toml: measured arch row for {v} {defaults[v]} "
                           f"(python3 ci/torch-arch-lists.py {v}.0)")

    comps = {r["toolkit"] for r in load("cuda_components.toml").get("release", [])}
    toolkits = [v for v in pypi_versions("cuda-toolkit") if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    for v in sorted(set(toolkits) - comps, key=key):
        missing.append(f"cuda_components.toml: {v} (python3 ci/cuda-components.py {v})")
    drivers = {mm(r["version"]) for r in load("cuda_driver.toml").get("release", [])}
    for v in sorted({mm(v) for v in toolkits} - drivers, key=key):
        missing.append(f"cuda_driver.toml: CUDA {v} (the release notes' driver table)")

    archs = {r["cuda"] for r in load("cuda_arch.toml").get("release", [])}
    nvcc = set()
    for dist in ("nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc-cu11"):
        for v in pypi_versions(dist):
            if re.fullmatch(r"\d+\.\d+\.\d+", v):
                nvcc.add((mm(v), v))
    for m in sorted({m for m, _ in nvcc} - archs, key=key):
        v = max((v for x, v in nvcc if x == m), key=key)
        missing.append(f"cuda_arch.toml: CUDA {m} (python3 ci/nvcc-arch-lists.py {v})")

    for line in missing:
        print(line)
    print(f"{len(missing)} facts published beyond our rows", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
