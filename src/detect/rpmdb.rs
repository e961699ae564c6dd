//! rpm's package database as modern rpm keeps it (RHEL 9, Fedora ≥ 33, UBI): the SQLite file
//! `rpmdb.sqlite`, table `Packages (hnum INTEGER PRIMARY KEY, blob BLOB)`, each blob an rpm
//! header. Read from memory with a minimal read-only walker of that one table's b-tree (no
//! SQL engine, nothing written anywhere); older Berkeley DB `Packages` files are not read.
//! A write-ahead log beside the file (`rpmdb.sqlite-wal`) is not applied: rpm checkpoints it
//! when a transaction ends, so an image's database is whole in the main file.

use super::{DetectorSpec, Fact};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpmPackage {
    pub name: String,
    /// `[epoch:]version-release`, as `rpm -q` prints it.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpmDb {
    pub packages: Vec<RpmPackage>,
}

/// Most packages kept (a full RHEL install has a few thousand).
const MAX_PACKAGES: usize = 100_000;
/// Deepest b-tree walked (SQLite's own are a handful of levels deep).
const MAX_DEPTH: usize = 32;
/// Largest header index and data store taken from one blob.
const MAX_INDEX: usize = 1 << 16;
const MAX_STORE: usize = 256 << 20;

const TAG_NAME: u32 = 1000;
const TAG_VERSION: u32 = 1001;
const TAG_RELEASE: u32 = 1002;
const TAG_EPOCH: u32 = 1003;
const TAG_ARCH: u32 = 1022;
const TYPE_INT32: u32 = 4;
const TYPE_STRING: u32 = 6;

fn be16(b: &[u8], o: usize) -> Option<usize> {
    b.get(o..o + 2)
        .map(|s| usize::from(u16::from_be_bytes([s[0], s[1]])))
}
fn be32(b: &[u8], o: usize) -> Option<u32> {
    b.get(o..o + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// A SQLite varint at `o`: (value, length).
fn varint(b: &[u8], o: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..9 {
        let c = *b.get(o + i)?;
        if i == 8 {
            return Some(((v << 8) | u64::from(c), 9));
        }
        v = (v << 7) | u64::from(c & 0x7F);
        if c & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The database file in memory.
struct Db<'a> {
    data: &'a [u8],
    page_size: usize,
    /// Page size less the reserved bytes at the end of each page.
    usable: usize,
}

impl<'a> Db<'a> {
    fn open(data: &'a [u8]) -> Result<Self, String> {
        if !data.starts_with(b"SQLite format 3\0") || data.len() < 100 {
            return Err("not a SQLite 3 database".into());
        }
        let page_size = match be16(data, 16).unwrap_or(0) {
            1 => 65536,
            n if n >= 512 && n.is_power_of_two() => n,
            n => return Err(format!("invalid page size {n}")),
        };
        let usable = page_size - usize::from(data[20]);
        if usable < 480 {
            return Err(format!("usable page size {usable} too small"));
        }
        Ok(Db {
            data,
            page_size,
            usable,
        })
    }

    fn page(&self, n: u32) -> Result<&'a [u8], String> {
        let at = (n as usize)
            .checked_sub(1)
            .and_then(|i| i.checked_mul(self.page_size))
            .ok_or(format!("invalid page number {n}"))?;
        self.data
            .get(at..at + self.page_size)
            .ok_or(format!("page {n} beyond the end of the file (truncated?)"))
    }

    /// Every record payload of the table b-tree rooted at `root`, in rowid order.
    fn table(&self, root: u32, out: &mut Vec<(u64, Vec<u8>)>, limit: usize) -> Result<(), String> {
        let mut seen = HashSet::new();
        self.walk(root, 0, &mut seen, out, limit)
    }

    fn walk(
        &self,
        n: u32,
        depth: usize,
        seen: &mut HashSet<u32>,
        out: &mut Vec<(u64, Vec<u8>)>,
        limit: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH || !seen.insert(n) {
            return Err(format!("b-tree page {n} loops or nests too deep"));
        }
        let page = self.page(n)?;
        let hdr = if n == 1 { 100 } else { 0 };
        let kind = *page.get(hdr).ok_or("empty page")?;
        let cells = be16(page, hdr + 3).ok_or("short page header")?;
        let ptrs = hdr + if kind == 0x05 { 12 } else { 8 };
        for i in 0..cells {
            if out.len() >= limit {
                return Ok(());
            }
            let at = be16(page, ptrs + 2 * i).ok_or("cell pointer outside the page")?;
            match kind {
                0x05 => {
                    let child = be32(page, at).ok_or("cell outside the page")?;
                    self.walk(child, depth + 1, seen, out, limit)?;
                }
                0x0D => out.push(self.leaf_cell(page, at)?),
                k => return Err(format!("page {n}: type 0x{k:02x} is no table b-tree page")),
            }
        }
        if kind == 0x05 {
            let right = be32(page, hdr + 8).ok_or("short page header")?;
            self.walk(right, depth + 1, seen, out, limit)?;
        }
        Ok(())
    }

    /// A table leaf cell at `at`: (rowid, payload), its overflow chain followed.
    fn leaf_cell(&self, page: &[u8], at: usize) -> Result<(u64, Vec<u8>), String> {
        let (size, a) = varint(page, at).ok_or("cell outside the page")?;
        let (rowid, b) = varint(page, at + a).ok_or("cell outside the page")?;
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= self.data.len())
            .ok_or("payload larger than the file")?;
        let u = self.usable;
        let x = u - 35;
        let local = if size <= x {
            size
        } else {
            let m = ((u - 12) * 32 / 255) - 23;
            let k = m + ((size - m) % (u - 4));
            if k <= x {
                k
            } else {
                m
            }
        };
        let start = at + a + b;
        let mut payload = page
            .get(start..start + local)
            .ok_or("payload outside the page")?
            .to_vec();
        let mut next = if local < size {
            be32(page, start + local).ok_or("overflow pointer outside the page")?
        } else {
            0
        };
        let mut seen = HashSet::new();
        while payload.len() < size {
            if next == 0 || !seen.insert(next) {
                return Err("overflow chain ends early or loops".into());
            }
            let p = self.page(next)?;
            let take = (size - payload.len()).min(u - 4);
            payload.extend_from_slice(&p[4..4 + take]);
            next = be32(p, 0).unwrap_or(0);
        }
        Ok((rowid, payload))
    }
}

/// A record's column values: integers, and text/blob byte ranges (NULL and floats as None).
#[derive(Debug, PartialEq)]
enum Value<'a> {
    Int(i64),
    Bytes(&'a [u8]),
    Other,
}

fn record(p: &[u8]) -> Result<Vec<Value<'_>>, String> {
    let (hlen, mut o) = varint(p, 0).ok_or("record header")?;
    let hlen = usize::try_from(hlen)
        .ok()
        .filter(|&h| h <= p.len())
        .ok_or("record header longer than the record")?;
    let mut body = hlen;
    let mut out = Vec::new();
    while o < hlen {
        let (t, n) = varint(p, o).ok_or("record header")?;
        o += n;
        let int = |len: usize, body: usize| -> Result<i64, String> {
            let s = p.get(body..body + len).ok_or("record value")?;
            let v = s.iter().fold(0i64, |v, &c| (v << 8) | i64::from(c));
            // Sign-extend from `len` bytes.
            let shift = 64 - 8 * len as u32;
            Ok((v << shift) >> shift)
        };
        let (v, len) = match t {
            0 => (Value::Other, 0),
            1..=4 => (Value::Int(int(t as usize, body)?), t as usize),
            5 => (Value::Int(int(6, body)?), 6),
            6 => (Value::Int(int(8, body)?), 8),
            7 => (Value::Other, 8),
            8 => (Value::Int(0), 0),
            9 => (Value::Int(1), 0),
            t if t >= 12 => {
                let len = usize::try_from((t - 12) / 2).map_err(|_| "record value")?;
                let s = p
                    .get(body..body.saturating_add(len))
                    .ok_or("record value")?;
                (Value::Bytes(s), len)
            }
            t => return Err(format!("reserved serial type {t}")),
        };
        out.push(v);
        body += len;
    }
    Ok(out)
}

/// NAME, [EPOCH:]VERSION-RELEASE and ARCH of an rpm header blob (as rpmdb stores it: index
/// count, data length, index entries, data store; big-endian).
pub fn parse_header(blob: &[u8]) -> Option<RpmPackage> {
    let il = be32(blob, 0)? as usize;
    let dl = be32(blob, 4)? as usize;
    if il > MAX_INDEX || dl > MAX_STORE {
        return None;
    }
    let store_at = 8 + il * 16;
    let store = blob.get(store_at..store_at.checked_add(dl)?)?;
    let mut strings: [Option<String>; 4] = [None, None, None, None];
    let mut epoch = None;
    for i in 0..il {
        let e = 8 + i * 16;
        let (tag, ty, off) = (
            be32(blob, e)?,
            be32(blob, e + 4)?,
            be32(blob, e + 8)? as usize,
        );
        let slot = match tag {
            TAG_NAME => 0,
            TAG_VERSION => 1,
            TAG_RELEASE => 2,
            TAG_ARCH => 3,
            TAG_EPOCH if ty == TYPE_INT32 => {
                epoch = be32(store, off);
                continue;
            }
            _ => continue,
        };
        if ty != TYPE_STRING {
            continue;
        }
        let s = store.get(off..)?;
        let end = s.iter().position(|&c| c == 0)?;
        strings[slot] = Some(String::from_utf8_lossy(&s[..end]).into_owned());
    }
    let [name, version, release, arch] = strings;
    let (name, version, release) = (name?, version?, release?);
    let version = match epoch {
        Some(e) if e != 0 => format!("{e}:{version}-{release}"),
        _ => format!("{version}-{release}"),
    };
    Some(RpmPackage {
        name,
        version,
        arch,
    })
}

/// The installed packages of an `rpmdb.sqlite` held in memory.
pub fn parse_rpmdb(data: &[u8]) -> Result<RpmDb, String> {
    let db = Db::open(data)?;
    let mut schema = Vec::new();
    db.table(1, &mut schema, 10_000)?;
    let root = schema
        .iter()
        .find_map(|(_, p)| {
            let cols = record(p).ok()?;
            let is = |i: usize, s: &[u8]| matches!(cols.get(i), Some(Value::Bytes(b)) if *b == s);
            match cols.get(3) {
                Some(Value::Int(r)) if is(0, b"table") && is(1, b"Packages") => {
                    u32::try_from(*r).ok()
                }
                _ => None,
            }
        })
        .ok_or("no Packages table")?;
    let mut rows = Vec::new();
    db.table(root, &mut rows, MAX_PACKAGES)?;
    let mut packages = Vec::new();
    for (rowid, p) in &rows {
        let cols = record(p)?;
        let Some(Value::Bytes(blob)) = cols.get(1) else {
            return Err(format!("package {rowid}: no header blob"));
        };
        // A header that does not parse is a package we cannot name: skip it, keep the rest.
        packages.extend(parse_header(blob));
    }
    Ok(RpmDb { packages })
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "rpmdb",
    version: 1,
    // /var/lib/rpm (RHEL 9, UBI); Fedora ≥ 36 and openSUSE moved it to /usr/lib/sysimage/rpm.
    globs: &[
        "var/lib/rpm/rpmdb.sqlite",
        "usr/lib/sysimage/rpm/rpmdb.sqlite",
    ],
    // Headers carry file lists: a full install with the CUDA toolkit runs to tens of MB.
    max_bytes: 256 << 20,
    head_only: false,
    accept: None,
    parse: |_, data| Ok(vec![Fact::RpmDb(parse_rpmdb(data)?)]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    fn fixture() -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rpm/rpmdb.sqlite"),
        )
        .unwrap()
    }

    /// The database `testdata/rpm/make-rpmdb.py` writes with SQLite itself: 1 KiB pages, so
    /// the Packages table has interior pages and every header an overflow chain.
    #[test]
    fn packages_of_a_real_sqlite_file() {
        let db = parse_rpmdb(&fixture()).unwrap();
        assert_eq!(db.packages.len(), 85);
        let get = |n: &str| db.packages.iter().find(|p| p.name == n).unwrap();
        assert_eq!(get("cuda-toolkit-12-4").version, "12.4.1-1");
        assert_eq!(get("cuda-nvcc-12-6").version, "12.6.85-1");
        assert_eq!(get("nvidia-driver-cuda-libs").version, "3:550.54.15-1.el9");
        assert_eq!(get("bash").arch.as_deref(), Some("x86_64"));
        // In rowid (install) order.
        assert_eq!(db.packages[0].name, "bash");
        assert_eq!(db.packages[84].name, "filler-079");
        let toolkits = crate::detect::cuda_toolkit::rpm_packaged_toolkits(&db);
        let got: Vec<(&str, &str, &str)> = toolkits
            .iter()
            .map(|t| (t.dir.as_str(), t.version.as_str(), t.from.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "usr/local/cuda-12.4",
                    "12.4.1",
                    "rpm cuda-toolkit-12-4 12.4.1-1"
                ),
                (
                    "usr/local/cuda-12.4",
                    "12.4.131",
                    "rpm cuda-nvcc-12-4 12.4.131-1"
                ),
                (
                    "usr/local/cuda-12.6",
                    "12.6.85",
                    "rpm cuda-nvcc-12-6 12.6.85-1"
                ),
            ]
        );
    }

    /// Untrusted bytes: a cut, flipped or foreign file is an error or a result, never a panic
    /// or a loop; a cut one is an error (its pages are missing), never a silent short list.
    #[test]
    fn hostile_databases() {
        let data = fixture();
        for cut in [0, 15, 99, 100, 1024, 5000, 50_000, data.len() - 1] {
            assert!(parse_rpmdb(&data[..cut]).is_err(), "cut at {cut}");
        }
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..300 {
            let mut d = data.clone();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % d.len();
                d[i] = (x >> 32) as u8;
            }
            let _ = parse_rpmdb(&d);
        }
        assert!(parse_rpmdb(b"not sqlite").is_err());
        assert_eq!(parse_header(&[0xff; 64]), None);
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "var/lib/rpm/rpmdb.sqlite",
                "usr/lib/sysimage/rpm/rpmdb.sqlite",
            ],
            &["var/lib/rpm/Packages", "var/lib/rpm/rpmdb.sqlite-wal"],
        );
    }
}
