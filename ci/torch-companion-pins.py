#!/usr/bin/env python3
"""Print torch_companions.toml [[pin]] rows for torchvision / torchaudio releases, read from the
`Requires-Dist: torch…` of each release's own Linux x86_64 wheel on PyPI (cp310, else the
newest CPython that release has a wheel for, else a py3 wheel). Only the wheel's METADATA is
read; the wheel is deleted afterwards.

    python3 ci/torch-companion-pins.py torchvision==0.11.0 torchaudio==0.10.0 ...
"""
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PLATFORMS = ["manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64",
             "manylinux_2_28_x86_64"]
PYTHONS = ["3.10", "3.9", "3.8"]


def download(spec, d):
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    for py in PYTHONS:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--python-version", py, *plats, "-d", str(d),
                            spec], capture_output=True, text=True)
        whl = next(Path(d).glob("*.whl"), None)
        if r.returncode == 0 and whl is not None:
            return whl
    raise SystemExit(f"{spec}: no Linux x86_64 wheel for Python {PYTHONS}")


def torch_requirement(whl):
    with zipfile.ZipFile(whl) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    reqs = [l.split(":", 1)[1].strip() for l in text.splitlines()
            if l.startswith("Requires-Dist:")]
    torch = [r for r in reqs if re.match(r"torch\b", r) and not r.startswith("torch-")]
    if len(torch) != 1:
        raise SystemExit(f"{whl.name}: {len(torch)} torch requirements: {torch}")
    return torch[0].split(";")[0].strip()


def main():
    for spec in sys.argv[1:]:
        package, version = spec.split("==")
        with tempfile.TemporaryDirectory(prefix="companion-", dir="/tmp") as d:
            whl = download(spec, d)
            req = torch_requirement(whl)
        # Older metadata writes `torch (==1.10.0)`, or with the local build (`==1.10.0+cu102`);
        # kept as written in `requires`.
        m = re.fullmatch(r"torch\s*\(?==\s*(\d+\.\d+\.\d+)(?:\+\w+)?\)?", req)
        if not m:
            raise SystemExit(f"{spec}: requirement {req!r} pins no exact torch")
        print("\n".join([
            "[[pin]]",
            f'torch = "{m.group(1)}"',
            f'package = "{package}"',
            f'version = "{version}"',
            f'requires = "{req}"',
            f'source = "https://pypi.org/project/{package}/{version}/"',
            "",
        ]), flush=True)


if __name__ == "__main__":
    main()
