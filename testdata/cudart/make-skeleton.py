#!/usr/bin/env python3
"""Write a small test fixture from a real CUDA runtime (libcudart*.so*): the same file with
every byte zeroed except what gpulint reads to learn the runtime's version — the ELF and
program headers, the section headers and their names, .dynamic, .dynsym and the string table
it links to, the body of `cudaRuntimeGetVersion` and the first 64 bytes of every function it
calls directly (x86_64 `call rel32`, aarch64 `bl`). Offsets are unchanged, so the fixture is
read exactly like the original; gzip makes it a few KB.

    python3 testdata/cudart/make-skeleton.py torch/lib/libcudart-e409450e.so.11.0 \
        testdata/cudart/torch-1.13.1-libcudart-e409450e.so.11.0.skel.gz

Needs `readelf` (binutils). The source file's name and sha256 are printed for the README.
"""
import gzip
import hashlib
import re
import struct
import subprocess
import sys


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True,
                          check=True).stdout


def main(src, dst):
    data = open(src, "rb").read()
    keep = []
    machine = struct.unpack_from("<H", data, 18)[0]
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
    keep.append((0, phoff + phentsize * phnum))
    keep.append((shoff, shentsize * shnum))
    loads = []
    for line in readelf("-l", src).splitlines():
        m = re.match(r"\s+LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)",
                     line)
        if m:
            loads.append(tuple(int(x, 16) for x in m.groups()))
    for line in readelf("-S", src).splitlines():
        m = re.match(r"\s+\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)",
                     line)
        if m and (m.group(2) in ("DYNSYM", "DYNAMIC", "STRTAB")):
            keep.append((int(m.group(3), 16), int(m.group(4), 16)))

    def off(vaddr):
        for o, v, n in loads:
            if v <= vaddr < v + n:
                return o + vaddr - v
        raise SystemExit(f"0x{vaddr:x} is in no PT_LOAD segment")

    sym = next(l for l in readelf("--dyn-syms", src).splitlines()
               if re.search(r"\bcudaRuntimeGetVersion@", l))
    vaddr, size = int(sym.split()[1], 16), int(sym.split()[2])
    body = off(vaddr)
    keep.append((body, size))
    code = data[body:body + size]
    if machine == 62:
        calls = [vaddr + i + 5 + struct.unpack_from("<i", code, i + 1)[0]
                 for i in range(len(code) - 4) if code[i] == 0xE8]
    elif machine == 183:
        calls = []
        for i in range(0, len(code) - 3, 4):
            w = struct.unpack_from("<I", code, i)[0]
            if w >> 26 == 0x25:
                imm = w & 0x3FFFFFF
                imm -= (1 << 26) if imm & (1 << 25) else 0
                calls.append(vaddr + i + 4 * imm)
    else:
        raise SystemExit(f"machine {machine}: not x86_64 or aarch64")
    for t in calls:
        try:
            keep.append((off(t), 64))
        except SystemExit:
            pass
    out = bytearray(len(data))
    for o, n in keep:
        out[o:o + n] = data[o:o + n]
    with gzip.GzipFile(dst, "wb", mtime=0) as g:
        g.write(bytes(out))
    print(f"{src}: sha256 {hashlib.sha256(data).hexdigest()}, {len(data)} bytes -> {dst}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
