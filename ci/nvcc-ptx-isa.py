#!/usr/bin/env python3
"""Print ptx_isa.toml rows measured from NVIDIA's own ptxas on PyPI: the newest PTX ISA
(`.version X.Y`) each CUDA release's ptxas accepts. That is the ISA the release's nvcc writes
and the newest one it introduced (a driver of that release is the oldest that can JIT it).

For each nvcc wheel (`nvidia-cuda-nvcc`, `-cu12`, `-cu11`; 11.7's carries only ptxas), the
script takes ptxas out of the wheel and assembles an empty kernel as `.version X.Y` for every
X.Y from 6.0 to 9.9; the newest it accepts is the release's ISA. ptxas's own refusal ("current
version is 'X.Y'") must name the same version, else the wheel is reported and not measured.

    python3 ci/nvcc-ptx-isa.py --from matrices/compiler_wheels.toml [--cache DIR]
    python3 ci/nvcc-ptx-isa.py 13.5.37                 # one [[release]] row for one wheel

With --from, every nvcc wheel of the list is measured (its sha256 checked against the list),
the update releases of one CUDA minor must agree, and it prints one `[[release]]` row per minor
citing every wheel (newest first), then an `[[isa]]` row for each ISA whose oldest measured
release is listed. (NVRTC-only releases: ci/nvrtc-arch-lists.py prints their row.)
"""
import hashlib
import importlib.util
import json
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

CANDIDATES = [(a, b) for a in range(6, 10) for b in range(10)]


def _arch_script():
    spec = importlib.util.spec_from_file_location(
        "nvcc_arch_lists", Path(__file__).resolve().parent / "nvcc-arch-lists.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The same wheels as the arch rows, found and downloaded the same way.
_ARCH = _arch_script()
dist_for, download, fetch, key = _ARCH.dist_for, _ARCH.download, _ARCH.fetch, _ARCH.key


def accepts(ptxas, d, isa):
    ptx = d / "k.ptx"
    ptx.write_text(f".version {isa[0]}.{isa[1]}\n.target sm_75\n.address_size 64\n"
                   ".visible .entry k() { ret; }\n")
    r = subprocess.run([str(ptxas), "-arch=sm_75", str(ptx), "-o", str(d / "k.cubin")],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def measure(version, tmp, cache=None, wheel=None):
    """(row dict, wheel file, sha256) for one nvcc wheel (`wheel`, a path, when given, else
    pip's pick of the version); row None when not measured."""
    dist = dist_for(version)
    d = Path(tmp) / f"ptx-{version}"
    d.mkdir()
    try:
        whl = wheel or download(dist, version, cache or d)
        sha = hashlib.sha256(whl.read_bytes()).hexdigest()
        with zipfile.ZipFile(whl) as z:
            member = next((n for n in z.namelist() if n.endswith("/bin/ptxas")), None)
            if member is None:
                print(f"# {whl.name}: no ptxas in the wheel", file=sys.stderr)
                return None, whl.name, sha
            ptxas = d / "ptxas"
            with z.open(member) as src, open(ptxas, "wb") as dst:
                shutil.copyfileobj(src, dst)
        ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR)
        accepted = [isa for isa in CANDIDATES if accepts(ptxas, d, isa)[0]]
        if not accepted:
            print(f"# {whl.name}: ptxas accepts no .version", file=sys.stderr)
            return None, whl.name, sha
        newest = max(accepted)
        above = [isa for isa in CANDIDATES if isa > newest]
        # ptxas names its own version when it refuses a newer one: both readings must agree.
        said = re.search(r"current version is '(\d+)\.(\d+)'", accepts(ptxas, d, above[0])[1])
        if said and (int(said.group(1)), int(said.group(2))) != newest:
            print(f"# {whl.name}: accepts up to {newest}, but says {said.group(0)}",
                  file=sys.stderr)
            return None, whl.name, sha
        major, minor = version.split(".")[:2]
        row = {
            "cuda": f"{major}.{minor}",
            "newest_isa": f"{newest[0]}.{newest[1]}",
            "note": f"measured by ci/nvcc-ptx-isa.py: the newest .version ptxas of {whl.name} "
                    f"(sha256 {sha}) accepts",
            "source": f"https://pypi.org/project/{dist}/{version}/#files",
        }
        return row, whl.name, sha
    finally:
        shutil.rmtree(d, ignore_errors=True)


def render(table, row):
    return "\n".join([f"[[{table}]]"] + [
        f'{k} = {json.dumps(v)}' for k, v in row.items()] + [""])


def measure_list(path, tmp, cache):
    wheels = [w for w in tomllib.loads(Path(path).read_text())["wheel"]
              if w["measured_by"] == "ci/nvcc-arch-lists.py"]
    releases = {}
    for w in wheels:
        releases.setdefault(w["cuda"], []).append(w)
    out, isa_rows, ok, seen = [], [], True, set()
    for cuda in sorted(releases, key=key):
        ws = sorted(releases[cuda], key=lambda w: key(w["version"]), reverse=True)
        rows = []
        for w in ws:
            row, name, sha = measure(w["version"], tmp, cache, fetch(w, cache or tmp))
            if row is None or sha != w["sha256"] or name != w["file"]:
                print(f"# {w['file']}: not measured, or {name} sha256 {sha} is not the "
                      f"list's", file=sys.stderr)
                ok = False
                break
            rows.append(row)
        else:
            if len({r["newest_isa"] for r in rows}) != 1:
                print(f"# CUDA {cuda}: update releases disagree: "
                      + ", ".join(f"{w['version']}: {r['newest_isa']}" for w, r in zip(ws, rows)),
                      file=sys.stderr)
                ok = False
                continue
            head = dict(rows[0])
            if len(ws) > 1:
                head["note"] += "; the same from " + ", ".join(
                    f"{w['file']} (sha256 {w['sha256']})" for w in ws[1:])
            row = {"cuda": cuda, "newest_isa": head["newest_isa"], "basis": "measured",
                   "note": head["note"], "source": head["source"]}
            out.append(render("release", row))
            if head["newest_isa"] not in seen:
                seen.add(head["newest_isa"])
                isa_rows.append(render("isa", {"ptx": head["newest_isa"], "cuda": cuda,
                                               "basis": "measured", "note": head["note"],
                                               "source": head["source"]}))
    return out, isa_rows, ok


def main():
    a = _ARCH.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for v in a.versions:
            row, name, _ = measure(v, tmp, a.cache)
            if row is None:
                ok = False
                continue
            row = {"cuda": row["cuda"], "newest_isa": row["newest_isa"], "basis": "measured",
                   "note": row["note"], "source": row["source"]}
            print(render("release", row), flush=True)
        if a.wheel_list:
            rows, isa_rows, ok = measure_list(a.wheel_list, tmp, a.cache)
            print("\n".join(rows + isa_rows), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
