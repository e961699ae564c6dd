#!/usr/bin/env python3
"""Hold README.md's rule table against the rules the binary has (`gpulint rules --format json`).

README's "## Rules" table names each image rule (`| GL001 | no-kernel-image | … |`) and the
config and host rules as code ranges (`GL100–GL119, GL198, GL199`). Every code the binary
has must be covered by exactly the table (GL000, the unreadable-input finding, is described
above the table), every named row must carry the binary's name for the code, and a range may
not claim a code the binary lacks. Exit 1 on any difference.

usage: readme-figures.py path/to/gpulint
"""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def table_codes(readme):
    # The rule table only: the subsections below it (### …) have tables of their own.
    section = readme.split("\n## Rules\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    named, ranged = {}, set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("GL"):
            continue
        if re.fullmatch(r"GL\d{3}", cells[0]):
            named[cells[0]] = cells[1]
            continue
        for part in cells[0].split(","):
            m = re.fullmatch(r"GL(\d{3})(?:[–-]GL(\d{3}))?", part.strip())
            if not m:
                raise SystemExit(f"readme-figures: cannot read rule cell {cells[0]!r}")
            lo = int(m.group(1))
            hi = int(m.group(2) or lo)
            ranged.update(f"GL{n:03d}" for n in range(lo, hi + 1))
    return named, ranged


def main():
    rules = json.loads(subprocess.run([sys.argv[1], "rules", "--format", "json"],
                                      capture_output=True, text=True, check=True).stdout)
    have = {r["code"]: r["name"] for r in rules}
    named, ranged = table_codes((ROOT / "README.md").read_text())
    documented = set(named) | ranged
    problems = []
    for code in sorted(set(have) - documented - {"GL000"}):
        problems.append(f"{code} ({have[code]}) is missing from README's rule table")
    for code in sorted(documented - set(have)):
        problems.append(f"README's rule table names {code}, which gpulint does not have")
    for code, name in sorted(named.items()):
        if code in have and have[code] != name:
            problems.append(f"README names {code} {name!r}, gpulint {have[code]!r}")
    for p in problems:
        print(f"readme-figures: FAIL {p}")
    print(f"readme-figures: {len(have)} rules in the binary, {len(named)} named and "
          f"{len(ranged)} in ranges in README's table"
          + ("" if problems else "; they agree"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
