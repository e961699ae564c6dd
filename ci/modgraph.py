#!/usr/bin/env python3
"""The module graph of src/: which top-level modules (or deeper, with a depth argument) refer to
which through `crate::`, `super::` and `self::` paths (`use` trees and inline paths; test
modules left out), and its cycles. Exit 1 when a cycle exists, so `ci/modgraph.py` is a check
as well as a picture. CI runs it at depth 2.

    python3 ci/modgraph.py [DEPTH] [--edges]

A path is resolved to the deepest module of src/ it names (`crate::source::open_image` is the
module `source`, `super::reader::X` from `host/parse.rs` is `host::reader`), then cut to DEPTH
parts. A module's edges to its own ancestors and descendants are not counted.
"""
import collections
import os
import re
import sys

ROOT = 'src'


def module_of(path):
    """`src/a/b.rs` and `src/a/b/mod.rs` -> ['a', 'b']; lib.rs and main.rs -> []."""
    parts = path[len(ROOT) + 1:-3].split('/')
    if parts[-1] in ('mod', 'lib', 'main'):
        parts = parts[:-1]
    return parts


def is_test_file(module):
    return bool(module) and ('tests' in module[-1] or module[-1].startswith('test'))


def blank_literals(src):
    """`src` with comments, string and char literals blanked (newlines kept), so braces and
    paths inside them neither open blocks nor count as references."""
    out = []
    i, n = 0, len(src)
    keep_lines = lambda s: ''.join('\n' if c == '\n' else ' ' for c in s)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif src.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith('/*', j):
                    depth, j = depth + 1, j + 2
                elif src.startswith('*/', j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_lines(src[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', src[i:i + 260])) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == '_')):
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(keep_lines(src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(keep_lines(src[i:j]))
            i = j
        elif c == "'" and (m := re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'", src[i:i + 12])):
            # A char literal; a lifetime ('a) has no closing quote and is left alone.
            out.append(' ' * m.end())
            i += m.end()
        else:
            out.append(c)
            i += 1
    return ''.join(out)


TEST_MOD = re.compile(r'#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*([;{])')


def non_test_source(src):
    """`src` (comments and literals blanked) without its `#[cfg(test)] mod` items, each
    replaced by nothing: what remains is the code the crate is built from."""
    code = blank_literals(src)
    out, pos = [], 0
    for m in TEST_MOD.finditer(code):
        if m.start() < pos:
            continue
        out.append(code[pos:m.start()])
        end = m.end()
        if m.group(1) == '{':
            depth = 1
            while end < len(code) and depth:
                depth += {'{': 1, '}': -1}.get(code[end], 0)
                end += 1
        pos = end
    out.append(code[pos:])
    return ''.join(out)


def use_paths(tree):
    """The full paths of a `use` tree: `a::{b, c::{d as e, self}}` -> a::b, a::c::d, a::c."""
    tree = re.sub(r'\s+', '', re.sub(r'\s+as\s+\w+', '', tree))
    out = []

    def walk(prefix, t):
        t = t.strip(':')
        if not t:
            return
        brace = t.find('{')
        if brace < 0:
            for name in t.split(','):
                name = name.replace('::*', '').rstrip(':')
                if name in ('', '*'):
                    if prefix:
                        out.append(prefix)
                    continue
                parts = [p for p in name.split('::') if p]
                if parts == ['self']:
                    out.append(prefix)
                else:
                    out.append(prefix + parts)
            return
        head = t[:brace].rstrip(':')
        depth, close = 0, brace
        for close in range(brace, len(t)):
            depth += {'{': 1, '}': -1}.get(t[close], 0)
            if depth == 0:
                break
        inner, rest = t[brace + 1:close], t[close + 1:]
        base = prefix + [p for p in head.split('::') if p]
        for item in split_top(inner):
            walk(base, item)
        if rest.lstrip(','):
            for item in split_top(rest.lstrip(',')):
                walk(prefix, item)

    for item in split_top(tree):
        walk([], item)
    return out


def split_top(s):
    """Split at commas outside braces."""
    items, depth, cur = [], 0, ''
    for c in s:
        if c == ',' and depth == 0:
            items.append(cur)
            cur = ''
            continue
        depth += {'{': 1, '}': -1}.get(c, 0)
        cur += c
    if cur:
        items.append(cur)
    return items


def resolve(module, path, modules):
    """The module of src/ an absolute or relative path names (its deepest known module), or
    None for a path outside the crate."""
    first = path[0]
    if first == 'crate':
        base, rest = [], path[1:]
    elif first in ('super', 'self'):
        base, rest = list(module), list(path)
        while rest and rest[0] in ('super', 'self'):
            if rest[0] == 'super':
                if not base:
                    return None
                base.pop()
            rest.pop(0)
    else:
        return None
    full = base + rest
    for k in range(len(full), -1, -1):
        if tuple(full[:k]) in modules:
            return full[:k]
    return None


USE = re.compile(r'\buse\s+([^;]*);')
INLINE = re.compile(r'(?<![\w:])((?:crate|super|self)(?:::\w+)+)')


def references(module, code, modules):
    """Every module of src/ that `code` (of `module`) names."""
    paths = []
    for m in USE.finditer(code):
        paths += use_paths(m.group(1))
    rest = USE.sub(' ', code)
    paths += [p.split('::') for p in INLINE.findall(rest)]
    return [r for p in paths if p and (r := resolve(module, p, modules)) is not None]


def sources():
    """(path, module, text) of every non-test .rs file under src/."""
    for d, _, fs in os.walk(ROOT):
        for f in sorted(fs):
            if f.endswith('.rs'):
                path = os.path.join(d, f)
                yield path, module_of(path), open(path, encoding='utf-8').read()


def graph(depth):
    files = list(sources())
    modules = {tuple(m) for _, m, _ in files}
    edges = collections.defaultdict(set)
    for _, m, src in files:
        if not m or is_test_file(m):
            continue
        me = '::'.join(m[:depth])
        for r in references(m, non_test_source(src), modules):
            if not r:
                continue
            tgt = '::'.join(r[:depth])
            if r[0] == m[0] and depth == 1:
                continue
            if tgt != me and not tgt.startswith(me + '::') and not me.startswith(tgt + '::'):
                edges[me].add(tgt)
    return edges


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    idx, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        idx[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in idx:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if v not in idx:
            visit(v)
    return sccs


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    depth = int(args[0]) if args else 1
    edges = graph(depth)
    if '--edges' in sys.argv:
        for a in sorted(edges):
            print(a, '->', ' '.join(sorted(edges[a])))
    sccs = cycles(edges)
    for s in sccs:
        print('cycle:', s)
    for s in sccs:
        for a in s:
            for b in sorted(edges[a] & set(s)):
                print(f"  {a} -> {b}")
    sys.exit(1 if sccs else 0)


if __name__ == '__main__':
    main()
