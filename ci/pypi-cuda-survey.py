#!/usr/bin/env python3
"""Which CUDA does gpulint say real third-party wheels need? (issue 28)

For each package of SURVEY (or the names given), the script picks the Linux x86_64 wheel PyPI
serves (CPython 3.12, else abi3, else py3), downloads it into a cache outside the repository
(PYPI_SURVEY_CACHE, default ~/.cache/gpulint/pypi-survey; checked against PyPI's sha256),
unpacks it into a minimal root (usr/local/lib/python3.12/site-packages/ with the wheel's files
and its dist-info, `*.data/purelib|platlib` moved in as pip does), runs
`gpulint inventory --format json dir:ROOT` and prints, per package, the CUDA and cuDNN major
its `cuda_need` names and the evidence kind that decided each. The root is deleted after each
package; the wheels stay cached. Wheels over --max-mb (default 750 MiB), and any beyond
--max-total-gb in all (default 6 GiB; the list is ~4 GiB), are skipped and listed as such.

    cargo build
    python3 ci/pypi-cuda-survey.py                      # the whole list
    python3 ci/pypi-cuda-survey.py spconv-cu126 onnxruntime-gpu==1.18.1
    python3 ci/pypi-cuda-survey.py --json out.json      # also every cuda_need, as read

Only pypi.org is read. Nothing is committed: the figures go to README by hand, with the date.
"""
import argparse
import collections
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GPULINT = Path(os.environ.get("GPULINT", REPO / "target" / "debug" / "gpulint"))
CACHE = Path(os.environ.get("PYPI_SURVEY_CACHE",
                            Path.home() / ".cache" / "gpulint" / "pypi-survey"))
SITE = "usr/local/lib/python3.12/site-packages"

# The list: third-party packages that carry CUDA code, none tuned on. `name==version`
# pins a release; a bare name is PyPI's current one.
SURVEY = [
    "cupy-cuda11x", "cupy-cuda12x",
    "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt",
    "onnxruntime-gpu==1.18.1", "onnxruntime-gpu",
    "bitsandbytes", "xformers", "triton", "nvidia-dali-cuda120", "vllm", "ctranslate2",
    "faiss-gpu-cu12", "xgboost", "catboost", "warp-lang", "open3d",
    "spconv-cu126", "cumm-cu126", "paddlepaddle-gpu", "tensorflow",
]
# Python tags in order of preference for the one wheel read per package.
PY_TAGS = ["cp312", "abi3", "py3", "py39", "py38", "cp311", "cp310"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def pypi_files(name, version):
    """(version, its files) from PyPI's JSON API; the current release when version is None."""
    url = f"https://pypi.org/pypi/{name}/json"
    with urllib.request.urlopen(url, timeout=60) as r:
        meta = json.load(r)
    version = version or meta["info"]["version"]
    files = meta["releases"].get(version)
    if files is None:
        raise RuntimeError(f"{name} {version} is not on PyPI")
    # A mirror may serve file URLs relative to the JSON's.
    for f in files:
        f["url"] = urllib.parse.urljoin(url, f["url"])
    return version, files


def wheel_tags(filename):
    """(python tags, abi tags, platform tags) of a wheel file name."""
    parts = filename[:-len(".whl")].split("-")
    py, abi, plat = parts[-3:]
    return py.split("."), abi.split("."), plat.split(".")


def pick_wheel(files):
    """The Linux x86_64 wheel to read: by PY_TAGS preference; None when there is none."""
    best = None
    for f in files:
        name = f["filename"]
        if not name.endswith(".whl"):
            continue
        py, abi, plat = wheel_tags(name)
        if not any(p == "any" or ("linux" in p and p.endswith("x86_64")) for p in plat):
            continue
        tags = py + abi
        rank = min((PY_TAGS.index(t) for t in tags if t in PY_TAGS), default=None)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, f)
    return best[1] if best else None


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(f):
    """The wheel file in the cache, downloaded when absent or not matching PyPI's sha256."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f["filename"]
    want = f["digests"]["sha256"]
    if path.is_file() and sha256(path) == want:
        return path
    part = path.with_suffix(".part")
    with urllib.request.urlopen(f["url"], timeout=600) as r, open(part, "wb") as out:
        shutil.copyfileobj(r, out, 1 << 20)
    if sha256(part) != want:
        part.unlink()
        raise RuntimeError(f"{f['filename']}: sha256 differs from PyPI's")
    part.rename(path)
    return path


def unpack(whl, root):
    """The wheel installed into root's site-packages as pip lays it out (no scripts, no
    headers): `X.data/purelib` and `X.data/platlib` become site-packages content."""
    site = root / SITE
    site.mkdir(parents=True)
    with zipfile.ZipFile(whl) as z:
        for m in z.infolist():
            name = m.filename
            parts = name.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                name = "/".join(parts[2:])
            # Member names are the archive's word: nothing outside site-packages.
            if not name or name.endswith("/") or name.startswith("/") or \
                    any(p in ("", ".", "..") for p in name.split("/")):
                continue
            dst = site / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            with z.open(m) as src, open(dst, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)


def inventory(root):
    r = subprocess.run([str(GPULINT), "inventory", "--format", "json", f"dir:{root}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gpulint inventory exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def survey_one(spec, max_mb, budget, tmp):
    name, _, version = spec.partition("==")
    version, files = pypi_files(name, version or None)
    f = pick_wheel(files)
    row = {"package": name, "version": version}
    if f is None:
        return {**row, "skipped": "no Linux x86_64 wheel"}
    row["wheel"] = f["filename"]
    row["mb"] = round(f["size"] / 2**20)
    if f["size"] > max_mb * 2**20:
        return {**row, "skipped": f"wheel of {row['mb']} MB is over --max-mb {max_mb}"}
    if f["size"] > budget["left"]:
        return {**row, "skipped": "over the --max-total-gb budget"}
    budget["left"] -= f["size"]
    whl = fetch(f)
    root = Path(tmp) / name
    try:
        unpack(whl, root)
        inv = inventory(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    norm = name.lower().replace("_", "-").replace(".", "-")
    pkgs = [p for p in inv.get("python_packages", []) if p["name"] == norm]
    need = pkgs[0].get("cuda_need") if pkgs else None
    row["cuda_need"] = need
    return row


def decided(need, field):
    """(value, kind that gave it) of a cuda_need's `cuda` or `cudnn`."""
    if not need or need.get(field) is None:
        return None, None
    return need[field], need.get(f"{field}_from")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", nargs="*", help="name or name==version (default: the list)")
    ap.add_argument("--max-mb", type=int, default=750,
                    help="skip wheels larger than this (MiB; default 750)")
    ap.add_argument("--max-total-gb", type=float, default=6,
                    help="read at most this many GiB of wheels in all (default 6)")
    ap.add_argument("--json", help="write every row, cuda_need included, to this file")
    a = ap.parse_args()
    if not GPULINT.is_file():
        raise SystemExit(f"{GPULINT} not found: run `cargo build` first (or set GPULINT)")
    rows = []
    budget = {"left": int(a.max_total_gb * 2**30)}
    with tempfile.TemporaryDirectory(prefix="pypi-survey-") as tmp:
        for spec in a.packages or SURVEY:
            log(f"{spec} …")
            try:
                rows.append(survey_one(spec, a.max_mb, budget, tmp))
            except Exception as e:  # one broken package must not stop the survey
                rows.append({"package": spec, "error": str(e)})
    version = subprocess.run([str(GPULINT), "--version"], capture_output=True,
                             text=True).stdout.strip()
    print(f"# PyPI CUDA survey, {datetime.date.today().isoformat()}, {version} ({GPULINT})")
    print(f"{'package':<22} {'version':<14} {'MB':>4}  {'CUDA':<8} {'from':<15} "
          f"{'cuDNN':<5} {'from':<15} conflict")
    by_kind = collections.Counter()
    identified = total = with_minor = bounds = cudnn_known = conflicts = 0
    for r in rows:
        if "error" in r or "skipped" in r:
            why = r.get("error") or r["skipped"]
            print(f"{r['package']:<22} {r.get('version', ''):<14} {r.get('mb', ''):>4}  "
                  f"(not surveyed: {why})")
            continue
        total += 1
        need = r["cuda_need"]
        cuda, cuda_from = decided(need, "cuda")
        cudnn, cudnn_from = decided(need, "cudnn")
        if cuda is not None:
            identified += 1
            by_kind[cuda_from] += 1
            with_minor += "." in cuda and not need.get("cuda_lower_bound")
            if need.get("cuda_lower_bound"):
                bounds += 1
                cuda = f">={cuda}"
        cudnn_known += cudnn is not None
        conflicts += bool((need or {}).get("conflict"))
        conflict = (need or {}).get("conflict", "")
        print(f"{r['package']:<22} {r['version']:<14} {r['mb']:>4}  {cuda or '-':<8} "
              f"{cuda_from or '-':<15} {cudnn if cudnn is not None else '-':<5} "
              f"{cudnn_from or '-':<15} {conflict[:200]}")
    print(f"\nCUDA identified: {identified} / {total} surveyed "
          f"({len(rows) - total} not surveyed): {with_minor} with the minor, "
          f"{bounds} only as a lower bound; cuDNN major: {cudnn_known}; "
          f"conflicts noted: {conflicts}")
    for k, n in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  decided by {k}: {n}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
