#!/usr/bin/env python3
"""No source file in src/ over 700 lines of non-test code: a file that size holds more than
one thing to name. Test modules (`#[cfg(test)] mod …`, inline or declared) and files named
tests*.rs do not count. Prints each file over the limit; exit 1 when there is one.

    python3 ci/file-sizes.py [LIMIT]
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in ci/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from modgraph import ROOT, non_test_source  # noqa: E402

LIMIT = 700


def non_test_lines(src):
    return len(non_test_source(src).rstrip().splitlines())


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else LIMIT
    over = []
    for d, _, fs in os.walk(ROOT):
        for f in fs:
            if not f.endswith('.rs') or f.startswith('tests'):
                continue
            path = os.path.join(d, f)
            n = non_test_lines(open(path, encoding='utf-8').read())
            if n > limit:
                over.append((n, path))
    for n, path in sorted(over, reverse=True):
        print(f"{path}: {n} non-test lines (limit {limit})")
    sys.exit(1 if over else 0)


if __name__ == '__main__':
    main()
