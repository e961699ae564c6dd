#!/usr/bin/env python3
"""Compare gpulint's Dockerfile parse with BuildKit's (PyPI `dockerfile`, which wraps
BuildKit's Go parser): instruction names, start and end lines, JSON form, flags.

usage: buildkit_conformance.py SPEC_DUMP_BIN FILE...
"""
import json
import subprocess
import sys

import dockerfile  # BuildKit's parser


def ours(bin_, path):
    out = subprocess.run([bin_, "parse", path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    bin_, files = sys.argv[1], sys.argv[2:]
    agree = disagree = rejected_both = rejected_bk = rejected_us = 0
    for f in files:
        try:
            bk = dockerfile.parse_file(f)
            bk_err = None
        except Exception as e:  # BuildKit rejects the file
            bk, bk_err = None, str(e)
        us = ours(bin_, f)
        if bk_err is not None:
            if us["errors"]:
                rejected_both += 1
            else:
                rejected_bk += 1
                print(f"DIFF {f}: BuildKit rejects ({bk_err.strip()[:120]}), we accept")
            continue
        if us["errors"]:
            rejected_us += 1
            print(f"DIFF {f}: we report {us['errors'][0]}, BuildKit accepts")
        a = [(c.cmd.upper(), c.start_line, c.end_line, c.json) for c in bk]
        b = [(i["cmd"], i["start_line"], i["end_line"], i["json"]) for i in us["instructions"]]
        if a == b:
            agree += 1
        else:
            disagree += 1
            for x, y in zip(a, b):
                if x != y:
                    print(f"DIFF {f}: BuildKit {x} vs ours {y}")
                    break
            else:
                print(f"DIFF {f}: {len(a)} instructions (BuildKit) vs {len(b)} (ours)")
    n = len(files)
    print(f"files={n} same_instructions_and_lines={agree} differ={disagree} "
          f"rejected_by_both={rejected_both} rejected_only_by_buildkit={rejected_bk} "
          f"rejected_only_by_us={rejected_us}")
    return 1 if disagree or rejected_bk or rejected_us else 0


if __name__ == "__main__":
    sys.exit(main())
