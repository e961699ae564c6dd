#!/usr/bin/env python3
"""Write matrices/compiler_wheels.toml: every wheel on PyPI that carries a CUDA release's own
compiler (nvcc or ptxas, else NVRTC), with its file name and sha256, one [[wheel]] per update
release. A CUDA release listed there can be measured, so its `cuda_arch.toml` and
`ptx_isa.toml` rows must be measured from these wheels (src/matrix/measured_tests.rs refuses a
transcribed one); a release absent from it can only be cited.

    python3 ci/compiler-wheels.py            # rewrite matrices/compiler_wheels.toml
    python3 ci/compiler-wheels.py --check    # exit 1 when PyPI lists a wheel the file lacks

It reads PyPI's JSON Simple API (PEP 691), one request per project:
  * nvidia-cuda-nvcc, -cu12, -cu11: every final release (`X.Y.Z`; placeholders `0.0.x`,
    pre-releases and dev builds skipped) and its x86_64 manylinux wheel. Measured by
    ci/nvcc-arch-lists.py and ci/nvcc-ptx-isa.py.
  * nvidia-cuda-nvrtc, -cu12, -cu11: only for a CUDA minor no nvcc wheel covers. Measured by
    ci/nvrtc-arch-lists.py.
  * THIRD_PARTY_NVRTC below: wheels of other projects that redistribute a release's own
    libnvrtc (11.3, 11.4, 11.6 have no NVIDIA wheel at all). Found by hand; ci/nvrtc-arch-lists.py
    checks nvrtcVersion against the release before it measures anything.
Exit 2 when PyPI cannot be read (fail closed: a partial list would excuse transcribed rows).
"""
import json
import re
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "matrices" / "compiler_wheels.toml"
SIMPLE = "https://pypi.org/simple/{}/"
NVCC = ["nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"]
NVRTC = ["nvidia-cuda-nvrtc-cu11", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc"]
# CUDA minor -> (project, version, wheel file tag): the release's libnvrtc inside another
# project's wheel (auditwheel copies it into <dist>.libs/).
THIRD_PARTY_NVRTC = {
    "11.3": ("cumm-cu113", "0.5.3", "cp311-cp311-manylinux_2_17_x86_64"),
    "11.4": ("cumm-cu114", "0.8.2", "cp311-cp311-manylinux_2_17_x86_64"),
    "11.6": ("cumm-cu116", "0.5.3", "cp311-cp311-manylinux_2_17_x86_64"),
}
FINAL = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def index(project):
    req = urllib.request.Request(SIMPLE.format(project),
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    for attempt in range(3):
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)
        except OSError as e:
            if attempt == 2:
                print(f"compiler-wheels: cannot read PyPI's index of {project}: {e}",
                      file=sys.stderr)
                sys.exit(2)
            time.sleep(2 * (attempt + 1))


def x86_wheel(files, version, tag=None):
    """The x86_64 Linux wheel of `version` (the one the measuring scripts download)."""
    cands = [f for f in files
             if f["filename"].endswith(".whl") and f"-{version}-" in f["filename"]
             and "x86_64" in f["filename"] and "linux" in f["filename"]
             and (tag is None or tag in f["filename"]) and not f.get("yanked")]
    if not cands:
        return None
    # Several x86_64 files of one version differ only in their platform tag (11.8.89 has
    # manylinux1 and manylinux2014): take the manylinux2014 one, which pip installs.
    return min(cands, key=lambda f: ("manylinux2014" not in f["filename"]
                                     and "manylinux_2_17" not in f["filename"],
                                     len(f["filename"]), f["filename"]))


def key(v):
    return tuple(int(x) for x in v.split("."))


def collect():
    rows = []
    for project in NVCC:
        data = index(project)
        for v in data.get("versions", []):
            m = FINAL.fullmatch(v)
            if not m or m.group(1) == "0":
                continue
            f = x86_wheel(data["files"], v)
            if f:
                rows.append((f"{m.group(1)}.{m.group(2)}", v, project, f, "nvcc-arch-lists.py"))
    with_nvcc = {r[0] for r in rows}
    for project in NVRTC:
        data = index(project)
        for v in data.get("versions", []):
            m = FINAL.fullmatch(v)
            if not m or m.group(1) == "0" or f"{m.group(1)}.{m.group(2)}" in with_nvcc:
                continue
            f = x86_wheel(data["files"], v)
            if f:
                rows.append((f"{m.group(1)}.{m.group(2)}", v, project, f, "nvrtc-arch-lists.py"))
    for cuda, (project, v, tag) in THIRD_PARTY_NVRTC.items():
        if cuda in with_nvcc:
            continue
        f = x86_wheel(index(project)["files"], v, tag)
        if f is None:
            print(f"compiler-wheels: {project} {v} ({tag}) is gone from PyPI", file=sys.stderr)
            sys.exit(1)
        rows.append((cuda, v, project, f, "nvrtc-arch-lists.py"))
    rows.sort(key=lambda r: (key(r[0]), r[4], key(r[1])))
    return rows


def render(rows):
    out = [
        "# Every PyPI wheel that carries a CUDA release's own compiler: generated by",
        "# ci/compiler-wheels.py from PyPI's JSON Simple API; do not edit by hand. Not loaded by",
        "# gpulint: src/matrix/measured_tests.rs requires the cuda_arch.toml and ptx_isa.toml rows",
        "# of each `cuda` here to be measured from every wheel listed for it (its sha256 cited).",
        "# `measured_by` names the script that measures the wheel.",
        "",
    ]
    for cuda, v, project, f, script in rows:
        out += [
            "[[wheel]]",
            f'cuda = "{cuda}"',
            f'project = "{project}"',
            f'version = "{v}"',
            f'file = "{f["filename"]}"',
            f'sha256 = "{f["hashes"]["sha256"]}"',
            f'url = "{f["url"]}"',
            f'measured_by = "ci/{script}"',
            "",
        ]
    return "\n".join(out)


def main():
    text = render(collect())
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print("compiler-wheels: PyPI's compiler wheels differ from "
                  "matrices/compiler_wheels.toml (run python3 ci/compiler-wheels.py, then "
                  "measure the new releases)", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
