#!/usr/bin/env python3
"""The module graph of src/: which top-level modules (or deeper, with a depth argument) refer to
which through `crate::` paths (test modules left out), and its cycles. Exit 1 when a cycle
exists, so `ci/modgraph.py` is a check as well as a picture.

    python3 ci/modgraph.py [DEPTH] [--edges]
"""
import re,os,sys,collections
root='src'
edges=collections.defaultdict(set)
def modname(path):
    p=path[len(root)+1:-3]
    parts=p.split('/')
    if parts[-1] in('mod','lib','main'): parts=parts[:-1]
    return parts
args=[a for a in sys.argv[1:] if not a.startswith('--')]
depth=int(args[0]) if args else 1
show_edges='--edges' in sys.argv
for d,_,fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        path=os.path.join(d,f); m=modname(path)
        if not m: continue
        src=open(path).read()
        # drop test modules roughly
        src=re.split(r'#\[cfg\(test\)\]',src)[0]
        # comments name modules without depending on them
        src=re.sub(r'//[^\n]*','',src)
        if 'tests' in m[-1] or m[-1].startswith('test'): continue
        me='::'.join(m[:depth])
        for r in re.findall(r'crate::((?:\w+::)*\w+)',src):
            parts=r.split('::')
            tgt='::'.join(parts[:depth])
            if parts[0]==m[0] and depth==1: continue
            if tgt!=me and not tgt.startswith(me+'::') and not me.startswith(tgt+'::'):
                edges[me].add(tgt)
        for r in re.findall(r'super::(\w+)',src):
            pass
# find SCCs
idx={};low={};st=[];on=set();sccs=[];c=[0]
nodes=set(edges)|{t for v in edges.values() for t in v}
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: sccs.append(comp)
for v in sorted(nodes):
    if v not in idx: sc(v)
if show_edges:
    for a in sorted(edges):
        print(a, '->', ' '.join(sorted(edges[a])))
for s in sccs: print('cycle:', sorted(s))
for s in sccs:
    for a in s:
        for b in sorted(edges[a]&set(s)): print(f"  {a} -> {b}")

sys.exit(1 if sccs else 0)
