#!/usr/bin/env python3
"""Hold a corpus run's figures against the ones README.md and the corpus's CORPUS.md state.

Fails (exit 1) when, measured now, recall is below the stated recall, the share of findings
near no label (the precision figure) is above the stated one (and, where the doc states it, the
share of warnings and errors near no label), BuildKit conformance is below
the stated one, or the label count differs (the docs then describe another corpus). Better
than stated passes, with a note to update the docs.

usage: corpus_figures.py CORPUS_DIR LABELS.json BUILDKIT.txt
  LABELS.json   written by ci/corpus_labels.py; BUILDKIT.txt: ci/buildkit_conformance.py's output
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Which README section and CORPUS.md describe which corpus (by the path README names).
DOCS = {
    "realworld": ("../shared/realworld/", ROOT / "testdata/spec/CORPUS.md"),
    "corpus2": ("testdata/spec/corpus2/", ROOT / "testdata/spec/corpus2/CORPUS.md"),
    "corpus3": ("testdata/spec/corpus3/", ROOT / "testdata/spec/corpus3/CORPUS.md"),
    "corpus4": ("testdata/spec/corpus4/", ROOT / "testdata/spec/corpus4/CORPUS.md"),
    "corpus5": ("testdata/spec/corpus5/", ROOT / "testdata/spec/corpus5/CORPUS.md"),
}


def readme_section(marker):
    """The README paragraph naming the corpus and the bullet list after it."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"`{marker}`")
    end = text.find("\n\n", text.find("\n- ", start))
    return text[start:end if end > 0 else len(text)]


def one(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        raise SystemExit(f"corpus-figures: cannot find {what} ({pattern!r})")
    return m


def stated(kind):
    marker, corpus_md = DOCS[kind]
    r = readme_section(marker)
    c = corpus_md.read_text()
    total_row = one(r"(?m)^\| \*\*total\*\*.*$", c, f"{corpus_md.name} total row").group(0)
    cm = re.findall(r"\*\*(\d+)/(\d+)", total_row)[-1]
    # Precision over warnings and errors only (issue 30's goal): held where the doc states it.
    serious = re.search(r"warnings and errors: (\d+), (\d+) not near any label", r)
    serious_c = re.search(r"Warnings and errors: (\d+), \*\*(\d+) not within", c)
    return {
        "README.md": {
            **({"serious": int(serious.group(1)), "serious_unexplained": int(serious.group(2))}
               if serious else {}),
            "recalled": int(one(r"rules for: (\d+) of \d+", r, "README recall").group(1)),
            "labels": int(one(r"rules for: \d+ of (\d+)", r, "README recall").group(1)),
            "findings": int(one(r"(\d+) findings, \d+ \(", r, "README findings").group(1)),
            "unexplained": int(one(r"\d+ findings, (\d+) \(", r, "README findings").group(1)),
            "buildkit_same": int(one(r"(\d+) of \d+ Dockerfiles", r, "README BuildKit").group(1)),
            "buildkit_files": int(one(r"\d+ of (\d+) Dockerfiles", r, "README BuildKit").group(1)),
        },
        str(corpus_md.relative_to(ROOT)): {
            **({"serious": int(serious_c.group(1)), "serious_unexplained": int(serious_c.group(2))}
               if serious_c else {}),
            "recalled": int(cm[0]),
            "labels": int(cm[1]),
            "findings": int(one(r"Findings: (\d+) ", c, "findings").group(1)),
            "unexplained": int(one(r"\*\*(\d+) not within", c, "unexplained").group(1)),
            "buildkit_same": int(one(r"(?m)^\| (\d+) \| (\d+) \|", c, "BuildKit row").group(2)),
            "buildkit_files": int(one(r"(?m)^\| (\d+) \| (\d+) \|", c, "BuildKit row").group(1)),
        },
    }


def main():
    corpus, labels_json, buildkit_txt = sys.argv[1:4]
    kind = next((k for k in ("corpus2", "corpus3", "corpus4", "corpus5")
                 if Path(corpus).resolve() == (ROOT / "testdata/spec" / k).resolve()), "realworld")
    got = json.loads(Path(labels_json).read_text())
    bk = re.search(r"files=(\d+) same_instructions_and_lines=(\d+)", Path(buildkit_txt).read_text())
    if not bk:
        print("corpus-figures: no BuildKit conformance result")
        return 1
    got["buildkit_files"], got["buildkit_same"] = int(bk.group(1)), int(bk.group(2))
    print(f"corpus-figures: {kind} measured: recall {got['recalled']}/{got['labels']}, "
          f"{got['unexplained']} of {got['findings']} findings near no label "
          f"({got.get('serious_unexplained')} of {got.get('serious')} warnings and errors), "
          f"BuildKit {got['buildkit_same']}/{got['buildkit_files']}")
    bad = 0
    for doc, want in stated(kind).items():
        problems = []
        if got["labels"] != want["labels"]:
            problems.append(f"{got['labels']} labels in scope, the doc counts {want['labels']}")
        if got["recalled"] < want["recalled"]:
            problems.append(f"recall {got['recalled']}/{got['labels']} < stated "
                            f"{want['recalled']}/{want['labels']}")
        # Precision: the share of findings near no label may not grow past the stated share.
        if got["unexplained"] * want["findings"] > want["unexplained"] * got["findings"]:
            problems.append(f"{got['unexplained']}/{got['findings']} findings near no label > "
                            f"stated {want['unexplained']}/{want['findings']}")
        if "serious" in want and got.get("serious_unexplained", 0) * want["serious"] > \
                want["serious_unexplained"] * got.get("serious", 0):
            problems.append(f"{got.get('serious_unexplained')}/{got.get('serious')} warnings and "
                            f"errors near no label > stated "
                            f"{want['serious_unexplained']}/{want['serious']}")
        if got["buildkit_files"] != want["buildkit_files"] or \
                got["buildkit_same"] < want["buildkit_same"]:
            problems.append(f"BuildKit conformance {got['buildkit_same']}/{got['buildkit_files']}"
                            f" < stated {want['buildkit_same']}/{want['buildkit_files']}")
        for p in problems:
            print(f"corpus-figures: FAIL {doc}: {p}")
        bad += bool(problems)
        if not problems:
            better = got["recalled"] > want["recalled"] or \
                got["unexplained"] * want["findings"] < want["unexplained"] * got["findings"]
            print(f"corpus-figures: ok {doc} (recall {want['recalled']}/{want['labels']}, "
                  f"{want['unexplained']}/{want['findings']} near no label, BuildKit "
                  f"{want['buildkit_same']}/{want['buildkit_files']})"
                  + ("; better than stated: update the doc" if better else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
