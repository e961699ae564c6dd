#!/usr/bin/env python3
"""Print torch.toml [[build_script]] rows: the TORCH_CUDA_ARCH_LIST each official torch CUDA
wheel was built with, read from the release's own build script.

The download.pytorch.org wheels (+cu102 ... +cu130) cannot be fetched where the rows are made,
so ci/torch-arch-lists.py can only measure the PyPI default build of each release. For the
other variants the build script is the source:
  * torch 1.10-2.5: pytorch/builder's release/X.Y branch, `manywheel/build_cuda.sh` (1.10:
    `manywheel/build.sh`), read with `git show` from a clone of pytorch/builder
    (`git clone https://github.com/pytorch/builder`, or gpulint's `fetch github:pytorch/builder`).
    Cited at the branch head's commit: basis "cited".
  * torch 2.6-2.9: the script moved into pytorch/pytorch (`.ci/manywheel/build_cuda.sh`), whose
    history is too large to fetch here. Stored main-branch snapshots near each release, kept
    verbatim in ci/torch-build-snapshots.txt, are cited at their commit; attributing a snapshot
    to a release is an inference, so those rows say basis "inferred" and why (SNAPSHOTS).

The script's `case ${CUDA_VERSION} in` block is evaluated for a Linux x86_64 wheel build:
aarch64 and libtorch branches are not taken, `${TORCH_CUDA_ARCH_LIST}` expands to the value so
far, and anything else the evaluator does not understand stops the script (never a guess).
Rows for a PyPI default build that ci/torch-arch-lists.py measured are printed too: gpulint's
tests compare each with the measured row (src/matrix/torch.rs), so a script reading that
disagrees with a shipped wheel fails the build.

    python3 ci/torch-build-arch-lists.py --builder-git /work/.mirror/pytorch+builder/repo
    just torch-build-arch /path/to/pytorch-builder-clone
"""
import argparse
import fnmatch
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAPSHOT_FILE = REPO / "ci" / "torch-build-snapshots.txt"

# torch line -> (builder branch, script path, variants), from RELEASE.md / the release's
# download index (the variants torch.toml lists).
BUILDER = [
    ("1.10", "release/1.10", "manywheel/build.sh", ["cu102", "cu111", "cu113"]),
    ("1.11", "release/1.11", "manywheel/build_cuda.sh", ["cu102", "cu113", "cu115"]),
    ("1.12", "release/1.12", "manywheel/build_cuda.sh", ["cu102", "cu113", "cu116"]),
    ("1.13", "release/1.13", "manywheel/build_cuda.sh", ["cu116", "cu117"]),
    ("2.0", "release/2.0", "manywheel/build_cuda.sh", ["cu117", "cu118"]),
    ("2.1", "release/2.1", "manywheel/build_cuda.sh", ["cu118", "cu121"]),
    ("2.2", "release/2.2", "manywheel/build_cuda.sh", ["cu118", "cu121"]),
    ("2.3", "release/2.3", "manywheel/build_cuda.sh", ["cu118", "cu121"]),
    ("2.4", "release/2.4", "manywheel/build_cuda.sh", ["cu118", "cu121", "cu124"]),
    ("2.5", "release/2.5", "manywheel/build_cuda.sh", ["cu118", "cu121", "cu124"]),
]

# torch line -> (snapshot repo, commit, variants, why this snapshot stands for the release).
SNAPSHOTS = [
    ("2.6", "poolsideai/pytorch", "36d984f97f129b2e69e360bbab04d7f8dac8a40a",
     ["cu118", "cu124", "cu126"],
     "a main-branch snapshot from the 2.6 branch cut (CUDA 12.6 added, 12.8 not yet): the "
     "release tag v2.6.0 is not readable here; the KDr2 snapshot after the cut has the same "
     "11.8, 12.4 and 12.6 cases"),
    ("2.7", "KDr2/pytorch", "993cb2cbe0b10c313762850cf33e2edb683e987b", ["cu118"],
     "a main-branch snapshot between the 2.6 and 2.7 branch cuts (12.8 added); only its 11.8 "
     "case is used: that case reads the same from release/2.1 to this snapshot and 2.8 dropped "
     "11.8. Its 12.6 case (9.0+PTX) is not the 2.7 release's: the measured 2.7.0 cu126 wheel "
     "ships no PTX"),
    ("2.8", "pytorch/pytorch", "00c7a380b8369d08e02dd400aa76dc6c0738b589",
     ["cu126", "cu128", "cu129"],
     "a main-branch snapshot of the 2.8 series (cases 12.6, 12.8, 12.9; 13.0 not yet added, "
     "which 2.9 ships)"),
    ("2.9", "pytorch/pytorch", "799d09f215740cc4fb78e0bd278dce469e33ddcb",
     ["cu126", "cu128", "cu130"],
     "a main-branch snapshot of the 2.9 series (13.0 added, 12.6/12.8/12.9 still built, as "
     "2.9's download index lists cu126, cu128 and cu130)"),
]


class Unreadable(Exception):
    pass


def strip_comment(line):
    """The line without a trailing shell comment (a # outside quotes, after a blank)."""
    quoted = False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


ARCH_TERNARY = re.compile(
    r'\$\(\[\[ "\$ARCH" == "aarch64" \]\] && echo "([^"]*)" \|\| echo "([^"]*)"\)')
ASSIGN = re.compile(r'^\s*(?:export\s+)?TORCH_CUDA_ARCH_LIST="([^"]*)"\s*$')
CASE = re.compile(r"^\s*case \$\{CUDA_VERSION\} in\s*$")
ARM = re.compile(r"^\s*([^\s()#][^)]*)\)\s*(.*)$")


def expand(value, current):
    value = ARCH_TERNARY.sub(lambda m: m.group(2), value)  # x86_64: the "else" word
    value = value.replace("${TORCH_CUDA_ARCH_LIST}", current)
    if "$" in value:
        raise Unreadable(f"cannot expand {value!r}")
    return value


def run_statements(lines, current):
    """Apply an arm's statements for an x86_64 wheel build; returns the list after them."""
    stack = []  # per open `if`: is its current branch taken
    for raw in lines:
        line = strip_comment(raw).strip()
        if not line:
            continue
        if line.startswith("if "):
            cond = line
            if "aarch64" in cond or '"libtorch"' in cond:
                stack.append(False)  # an aarch64 or libtorch-only branch: not ours
            else:
                raise Unreadable(f"unknown condition {cond!r}")
            continue
        if line == "else":
            if not stack:
                raise Unreadable("else without if")
            stack[-1] = not stack[-1]
            continue
        if line == "fi":
            if not stack:
                raise Unreadable("fi without if")
            stack.pop()
            continue
        if not all(stack):
            continue
        line = ARCH_TERNARY.sub(lambda m: m.group(2), line)
        m = ASSIGN.match(line)
        if m:
            current = expand(m.group(1), current)
        elif "TORCH_CUDA_ARCH_LIST" in line:
            raise Unreadable(f"unknown statement {line!r}")
    if stack:
        raise Unreadable("if without fi")
    return current


def evaluate(text, cuda):
    """TORCH_CUDA_ARCH_LIST for CUDA `cuda` ("11.3"), and the case arm that set it."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if CASE.match(l)), None)
    if start is None:
        raise Unreadable("no `case ${CUDA_VERSION} in`")
    base = ""
    for l in lines[:start]:
        m = ASSIGN.match(strip_comment(l))
        if m:
            base = expand(m.group(1), base)
    arms, arm, i = [], None, start + 1
    while i < len(lines):
        line = strip_comment(lines[i])
        i += 1
        if arm is None:
            if not line.strip():
                continue
            if line.strip() == "esac":
                break
            m = ARM.match(line)
            if not m:
                raise Unreadable(f"expected a case arm: {line!r}")
            arm = (m.group(1).strip(), [])
            line = m.group(2)
        if ";;" in line:
            arm[1].append(line.split(";;")[0])
            arms.append(arm)
            arm = None
        else:
            arm[1].append(line)
    else:
        raise Unreadable("no esac")
    for pattern, body in arms:
        if any(fnmatch.fnmatchcase(cuda, p.strip()) for p in pattern.split("|")):
            if pattern == "*":
                raise Unreadable(f"CUDA {cuda} falls through to the error arm")
            return run_statements(body, base), pattern
    raise Unreadable(f"no arm for CUDA {cuda}")


def cuda_of(tag):
    n = tag[2:]
    return f"{n[:-1]}.{n[-1]}"


def case_lines(text):
    """1-based first and last line of the arch section (the base assignment .. esac)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if CASE.match(l))
    first = start
    for j in range(start - 1, max(start - 4, -1), -1):
        if ASSIGN.match(strip_comment(lines[j])):
            first = j
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "esac")
    return first + 1, end + 1


def row(torch, tag, value, basis, source, note):
    q = lambda s: s.replace("\\", "\\\\").replace('"', '\\"')
    return "\n".join([
        "[[build_script]]",
        f'torch = "{torch}"',
        f'tag = "{tag}"',
        f'arch_list = "{value}"',
        f'basis = "{basis}"',
        f'source = "{source}"',
        f'note = "{q(note)}"',
        "",
    ])


def builder_rows(gitdir):
    git = lambda *a: subprocess.run(["git", "-C", gitdir, *a], capture_output=True,
                                    text=True, check=True).stdout
    for torch, branch, path, tags in BUILDER:
        commit = git("rev-parse", branch).strip()
        date = git("log", "-1", "--format=%cs", commit).strip()
        text = git("show", f"{commit}:{path}")
        a, b = case_lines(text)
        url = f"https://github.com/pytorch/builder/blob/{commit}/{path}#L{a}-L{b}"
        for tag in tags:
            value, arm = evaluate(text, cuda_of(tag))
            note = (f"pytorch/builder {branch} head ({date}), {path}: CUDA {cuda_of(tag)} "
                    f"takes case `{arm})`, Linux x86_64 wheel; read by ci/torch-build-arch-lists.py")
            yield torch, tag, row(torch, tag, value, "cited", url, note)


def snapshots(path):
    out, key, buf = {}, None, []
    for line in path.read_text().splitlines():
        if line.startswith("--- "):
            if key:
                out[key] = "\n".join(buf) + "\n"
            repo, commit = line[4:].split()
            key, buf = (repo, commit), []
        elif key:
            buf.append(line)
    if key:
        out[key] = "\n".join(buf) + "\n"
    return out


def snapshot_rows(path):
    texts = snapshots(path)
    for torch, repo, commit, tags, why in SNAPSHOTS:
        text = texts[(repo, commit)]
        url = f"https://github.com/{repo}/blob/{commit}/.ci/manywheel/build_cuda.sh"
        for tag in tags:
            value, arm = evaluate(text, cuda_of(tag))
            note = (f"{why}. CUDA {cuda_of(tag)} takes case `{arm})`, Linux x86_64 wheel; text "
                    f"kept in ci/torch-build-snapshots.txt, read by ci/torch-build-arch-lists.py")
            yield torch, tag, row(torch, tag, value, "inferred", url, note)


def self_test():
    # The shapes the real scripts use: appends, glob arms, aarch64/libtorch branches.
    text = "\n".join([
        'TORCH_CUDA_ARCH_LIST="5.0;6.0"',
        "case ${CUDA_VERSION} in",
        "    12.6) TORCH_CUDA_ARCH_LIST=\"4.0;${TORCH_CUDA_ARCH_LIST}\" ;;  # one line",
        "    12.4)",
        '        if [[ "$GPU_ARCH_TYPE" = "cuda-aarch64" ]]; then',
        '            TORCH_CUDA_ARCH_LIST="9.0"',
        "        else",
        '            TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST};9.0+PTX"',
        "        fi",
        "        ;;",
        "    11.[67]|11.8)",
        '        TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST};3.7" # comment',
        "        ;;",
        '    *) echo "unknown"; exit 1 ;;',
        "esac",
    ])
    assert evaluate(text, "12.6") == ("4.0;5.0;6.0", "12.6"), evaluate(text, "12.6")
    assert evaluate(text, "12.4")[0] == "5.0;6.0;9.0+PTX"
    assert evaluate(text, "11.7")[0] == "5.0;6.0;3.7"
    assert evaluate(text, "11.8")[0] == "5.0;6.0;3.7"
    for bad in ["10.2"]:
        try:
            evaluate(text, bad)
            raise AssertionError(f"{bad} should fall through")
        except Unreadable:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builder-git", required=True,
                    help="a clone (or bare mirror) of pytorch/builder with its release branches")
    ap.add_argument("--snapshots", type=Path, default=SNAPSHOT_FILE,
                    help="the verbatim snapshot excerpts (default: %(default)s)")
    args = ap.parse_args()
    self_test()
    rows = list(builder_rows(args.builder_git)) + list(snapshot_rows(args.snapshots))
    key = lambda r: (tuple(int(x) for x in r[0].split(".")), int(r[1][2:]))
    for _, _, text in sorted(rows, key=key):
        print(text)


if __name__ == "__main__":
    try:
        main()
    except Unreadable as e:
        sys.exit(f"build script not understood: {e}")
