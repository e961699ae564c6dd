#!/usr/bin/env python3
"""List what NVIDIA and PyTorch have published beyond our matrices/ rows.

Run in CI (ci/test.sh) and before a release (stdlib only, Python >= 3.11):

    python3 ci/freshness.py     # prints what is missing; exit 1 when anything is

It reads PyPI's JSON Simple API (PEP 691) for
  * torch                                   -> release lines missing from torch.toml, and
                                               lines without a measured [[arch]] row for
                                               their PyPI default build (a row whose note
                                               says ci/torch-arch-lists.py measured it);
  * cuda-toolkit (NVIDIA's metapackage)     -> toolkit releases missing from
                                               cuda_components.toml (ci/cuda-components.py);
  * cuda-toolkit, nvidia-cuda-runtime(-cu12/-cu11), nvidia-cuda-nvcc(-cu12/-cu11)
                                            -> CUDA minors missing from cuda_driver.toml
                                               (the release notes' driver table);
  * every compiler wheel (ci/compiler-wheels.py) -> wheels missing from
                                               compiler_wheels.toml, and CUDA minors whose
                                               cuda_arch.toml / ptx_isa.toml row is not
                                               measured (ci/nvcc-arch-lists.py,
                                               ci/nvcc-ptx-isa.py, ci/nvrtc-arch-lists.py);
and download.pytorch.org's torch index for the +cuNNN variants of each torch line missing
from torch.toml's [[variant]] rows. Each missing fact names the script (or document) that
produces its row. KNOWN_GAPS lists facts another change supplies, with the reason: they are
printed, not failed, and a listed gap that is no longer missing fails (shrink the list).

Exit 0: nothing missing; 1: something is; 3: PyPI cannot be read, nothing was checked (the
notice says so; ci/test.sh reports it as skipped). An unreachable download.pytorch.org skips
only the variant check, with a notice.
With --variants-advisory (per-push CI) the variant findings are printed but do not fail.
"""
import importlib.util
import json
import re
import sys
import tomllib
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
M = ROOT / "matrices"
SIMPLE = "https://pypi.org/simple/{}/"
TORCH_INDEX = "https://download.pytorch.org/whl/torch/"

# (file, fact) -> why it is still missing. Counted in the output; fails once filled.
KNOWN_GAPS: dict = {}


class Unreachable(Exception):
    pass


def fetch(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read()
    except OSError as e:
        raise Unreachable(f"{url}: {e}") from e


def pypi_versions(dist):
    data = json.loads(fetch(SIMPLE.format(dist), "application/vnd.pypi.simple.v1+json"))
    return [v for v in data.get("versions", []) if re.fullmatch(r"[1-9]\d*\.\d+\.\d+", v)]


def mm(v):
    p = v.split(".")
    return f"{p[0]}.{p[1]}"


def norm(v):
    """12.8.2.0 -> 12.8.2: PyPI's JSON lists versions normalized, the wheels keep the 4th part."""
    p = v.split(".")
    while len(p) > 3 and p[-1] == "0":
        p.pop()
    return ".".join(p)


def key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def load(name):
    return tomllib.loads((M / name).read_text())


def load_script(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), ROOT / "ci" / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def torch_missing():
    out = []
    torch = load("torch.toml")
    lines = {r["torch"] for r in torch.get("release", [])}
    # Only rows measured from the wheel count (transcribed ones say what a build script or
    # RELEASE.md promised, which the shipped 2.12/2.13 wheels did not keep).
    arch = {(r["torch"], r["tag"]) for r in torch.get("arch", [])
            if r.get("note", "").startswith("measured by ci/torch-arch-lists.py")}
    defaults = {r["torch"]: r.get("pypi_default") for r in torch.get("release", [])}
    for v in sorted({mm(v) for v in pypi_versions("torch")}, key=key):
        if key(v) < (1, 13):
            continue
        if v not in lines:
            out.append(("torch.toml", f"release {v}", "PyPI default build, Python wheels"))
        elif defaults.get(v) and (v, defaults[v]) not in arch:
            out.append(("torch.toml", f"measured arch row for {v} {defaults[v]}",
                        f"python3 ci/torch-arch-lists.py {v}.0"))
    return out


def torch_variants_missing():
    """+cuNNN builds of known torch lines on download.pytorch.org without a [[variant]] row;
    None when the index cannot be read."""
    try:
        page = fetch(TORCH_INDEX).decode("utf-8", "replace")
    except Unreachable as e:
        print(f"freshness: NOTICE: torch variants not checked: {e}", file=sys.stderr)
        return None
    torch = load("torch.toml")
    lines = {r["torch"] for r in torch.get("release", [])}
    have = {(r["torch"], r["tag"]) for r in torch.get("variant", [])}
    seen = set()
    # File names as the PEP 503 page links them: torch-2.9.0%2Bcu126-cp312-….whl.
    for v, tag in re.findall(r"torch-(\d+\.\d+)\.\d+(?:%2B|\+)(cu\d+)-", page):
        if v in lines:
            seen.add((v, tag))
    return [("torch.toml", f"variant {v} {tag}", "the release branch's build_cuda.sh")
            for v, tag in sorted(seen - have, key=lambda x: (key(x[0]), x[1]))]


def cuda_missing():
    out = []
    comps = {norm(r["toolkit"]) for r in load("cuda_components.toml").get("release", [])}
    toolkits = {norm(v) for v in pypi_versions("cuda-toolkit")}
    for v in sorted(set(toolkits) - comps, key=key):
        out.append(("cuda_components.toml", v, f"python3 ci/cuda-components.py {v}"))
    published = {mm(v) for v in toolkits}
    for dist in ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11",
                 "nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc-cu11"):
        published |= {mm(v) for v in pypi_versions(dist)}
    drivers = {mm(r["version"]) for r in load("cuda_driver.toml").get("release", [])}
    for v in sorted(published - drivers, key=key):
        out.append(("cuda_driver.toml", f"CUDA {v}", "the release notes' driver table"))

    cw = load_script("compiler-wheels.py")
    listed = {w["file"] for w in load("compiler_wheels.toml").get("wheel", [])}
    wheels = cw.collect()
    for cuda, version, project, f, script in wheels:
        if f["filename"] not in listed:
            out.append(("compiler_wheels.toml", f"{project} {version}",
                        "python3 ci/compiler-wheels.py, then measure it"))
    arch = {r["cuda"]: r for r in load("cuda_arch.toml").get("release", [])}
    ptx = {r["cuda"]: r for r in load("ptx_isa.toml").get("release", [])}
    for cuda in sorted({w[0] for w in wheels}, key=key):
        script = next(w[4] for w in wheels if w[0] == cuda)
        if arch.get(cuda, {}).get("basis") != "measured":
            out.append(("cuda_arch.toml", f"CUDA {cuda} measured",
                        f"python3 ci/{script} --from matrices/compiler_wheels.toml"))
        if ptx.get(cuda, {}).get("basis") != "measured":
            ptx_script = "nvcc-ptx-isa.py" if script == "nvcc-arch-lists.py" else script
            out.append(("ptx_isa.toml", f"CUDA {cuda} measured",
                        f"python3 ci/{ptx_script} --from matrices/compiler_wheels.toml"))
    return out


def main():
    try:
        missing = torch_missing() + cuda_missing()
    except Unreachable as e:
        print(f"freshness: NOTICE: PyPI not reachable, nothing checked: {e}", file=sys.stderr)
        return 3
    variants = torch_variants_missing()
    if variants is not None and "--variants-advisory" in sys.argv[1:]:
        # Per-push CI: download.pytorch.org was never readable where the variant rows were
        # made, so its findings are printed but do not fail the push; the weekly re-check
        # (.github/workflows/recheck.yml) runs without this flag and fails on them.
        for f, fact, how in variants:
            print(f"freshness: ADVISORY {f}: {fact} ({how})")
    elif variants is not None:
        missing += variants
    found = {(f, fact) for f, fact, _ in missing}
    failed = 0
    for f, fact, how in missing:
        if (f, fact) in KNOWN_GAPS:
            print(f"freshness: known gap: {f}: {fact} ({KNOWN_GAPS[(f, fact)]})")
        else:
            print(f"freshness: MISSING {f}: {fact} ({how})")
            failed += 1
    for (f, fact), why in sorted(KNOWN_GAPS.items()):
        if (f, fact) not in found:
            print(f"freshness: FILLED {f}: {fact} is no longer missing: remove it from "
                  f"KNOWN_GAPS in ci/freshness.py")
            failed += 1
    print(f"freshness: {failed} facts published beyond our rows, "
          f"{len(found & set(KNOWN_GAPS))} known gaps", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
