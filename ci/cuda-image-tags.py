#!/usr/bin/env python3
"""Print matrices/cuda-images.toml's [[cuda_image_tag]] rows from NVIDIA's list of supported
nvidia/cuda tags (doc/supported-tags.md of gitlab.com/nvidia/container-images/cuda).

    python3 ci/cuda-image-tags.py supported-tags.md COMMIT            # print the rows
    python3 ci/cuda-image-tags.py supported-tags.md COMMIT --check    # exit 1 when the
                                                                      # matrices' rows differ

One row per CUDA release and OS: `kinds` is what the tag holds between them
(`12.6.3-cudnn-runtime-ubuntu22.04` -> `cudnn-runtime`). COMMIT is the commit of the list
that was read (its source URL names it). A tag the list does not name is not a row: gpulint
suggests only tags NVIDIA lists.
"""
import collections
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"^- \[`(\d+\.\d+(?:\.\d+)?)-(.+)-([a-z]+[0-9.]*)`", re.M)


def rows(text, commit):
    grouped = collections.defaultdict(set)
    for cuda, kind, os in TAG.findall(text):
        grouped[(cuda, os)].add(kind)
    source = ("https://gitlab.com/nvidia/container-images/cuda/-/blob/"
              f"{commit}/doc/supported-tags.md")
    key = lambda k: (tuple(int(p) for p in k[0].split(".")), k[1])
    return [{"cuda": c, "os": o, "kinds": sorted(grouped[(c, o)]), "source": source}
            for c, o in sorted(grouped, key=key, reverse=True)]


def render(rs):
    out = []
    for r in rs:
        kinds = ", ".join(f'"{k}"' for k in r["kinds"])
        out.append(f'[[cuda_image_tag]]\ncuda = "{r["cuda"]}"\nos = "{r["os"]}"\n'
                   f'kinds = [{kinds}]\nsource = "{r["source"]}"')
    return "\n".join(out)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) != 2:
        sys.exit(__doc__)
    want = rows(Path(args[0]).read_text(), args[1])
    if "--check" not in sys.argv:
        print(render(want))
        return
    have = tomllib.loads((ROOT / "matrices/cuda-images.toml").read_text()).get("cuda_image_tag", [])
    if have != want:
        print(f"matrices/cuda-images.toml: {len(have)} cuda_image_tag rows, the list gives "
              f"{len(want)}; regenerate them with this script", file=sys.stderr)
        sys.exit(1)
    print(f"{len(have)} cuda_image_tag rows match the list")


if __name__ == "__main__":
    main()
