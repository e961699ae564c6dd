#!/usr/bin/env python3
"""Writes rpmdb.sqlite: the schema rpm 4.16+ creates (table Packages, hnum + header blob),
with rpm headers for NVIDIA's toolkit packages and filler packages. Small pages (1024 bytes)
and a large tag in every header make the table b-tree interior pages and overflow chains that
a real database has. Run from this directory; the output is committed."""
import os, sqlite3, struct

def header(name, version, release, arch="x86_64", epoch=None, filler=3000):
    tags = [(1000, 6, name.encode() + b"\0"), (1001, 6, version.encode() + b"\0"),
            (1002, 6, release.encode() + b"\0"), (1022, 6, arch.encode() + b"\0")]
    if epoch is not None:
        tags.append((1003, 4, struct.pack(">I", epoch)))
    # A file list stands in for what makes real headers large (type STRING_ARRAY).
    tags.append((1117, 8, (b"usr/share/doc/" + name.encode() + b"\0") * (filler // 40)))
    index, store = b"", b""
    for tag, ty, data in tags:
        if ty == 4:
            store += b"\0" * (-len(store) % 4)
        index += struct.pack(">IIII", tag, ty, len(store), 1)
        store += data
    return struct.pack(">II", len(tags), len(store)) + index + store

pkgs = [("bash", "5.1.8", "9.el9", None), ("cuda-toolkit-12-4", "12.4.1", "1", None),
        ("cuda-nvcc-12-4", "12.4.131", "1", None), ("cuda-nvcc-12-6", "12.6.85", "1", None),
        ("nvidia-driver-cuda-libs", "550.54.15", "1.el9", 3)]
pkgs += [(f"filler-{i:03}", "1.0", "1.el9", None) for i in range(80)]
if os.path.exists("rpmdb.sqlite"):
    os.remove("rpmdb.sqlite")
db = sqlite3.connect("rpmdb.sqlite")
db.execute("PRAGMA page_size = 1024")
db.execute("CREATE TABLE 'Packages' (hnum INTEGER PRIMARY KEY AUTOINCREMENT,blob BLOB NOT NULL)")
db.execute("CREATE TABLE 'Name' (key 'TEXT' NOT NULL, hnum INTEGER NOT NULL, idx INTEGER NOT NULL, FOREIGN KEY (hnum) REFERENCES 'Packages'(hnum))")
db.execute("CREATE INDEX 'Name_key_idx' ON 'Name'(key)")
for i, (n, v, r, e) in enumerate(pkgs):
    db.execute("INSERT INTO Packages (blob) VALUES (?)", (header(n, v, r, epoch=e),))
    db.execute("INSERT INTO Name VALUES (?, ?, 0)", (n, i + 1))
db.commit()
db.close()
