//! A pass-through reader that follows the tar record structure and refuses oversized
//! extension headers (GNU long name `L` / long link `K`, PAX `x` / `g`). The `tar` crate reads
//! those whole into memory, so a layer announcing a multi-GB "file name" would otherwise cost
//! that much memory. Everything else passes through untouched.

use std::io::{self, Read};

/// Largest extension header accepted: far above PATH_MAX-sized names and real PAX records.
pub(crate) const MAX_EXTENSION_HEADER: u64 = 1 << 20;

const BLOCK: u64 = 512;

pub(crate) struct HeaderGuard<R> {
    inner: R,
    /// Bytes passed through so far.
    pos: u64,
    /// Where the next 512-byte header starts.
    next_header: u64,
    header: [u8; 512],
    header_fill: usize,
    /// A PAX `x` record being collected (its data region and the bytes so far).
    pax: Option<(u64, u64, Vec<u8>)>,
    /// `size=` from the last PAX `x` record: the data length of the next real entry.
    pax_size: Option<u64>,
    /// Old GNU sparse entry (`S`) with extension blocks still to come: its data length,
    /// applied after the last extension block.
    sparse_data: Option<u64>,
}

impl<R> HeaderGuard<R> {
    pub(crate) fn new(inner: R) -> Self {
        HeaderGuard {
            inner,
            pos: 0,
            next_header: 0,
            header: [0; 512],
            header_fill: 0,
            pax: None,
            pax_size: None,
            sparse_data: None,
        }
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    fn on_header(&mut self) -> io::Result<()> {
        let h = self.header;
        let start = self.next_header;
        if let Some(data) = self.sparse_data {
            // A GNU sparse extension block: byte 504 says whether another one follows.
            if h[504] != 0 {
                self.next_header = start + BLOCK;
            } else {
                self.sparse_data = None;
                self.next_header = start + BLOCK + data.div_ceil(BLOCK) * BLOCK;
            }
            return Ok(());
        }
        if h.iter().all(|b| *b == 0) {
            self.next_header = start + BLOCK;
            return Ok(());
        }
        let typeflag = h[156];
        let size = parse_size(&h[124..136]);
        let extension = matches!(typeflag, b'L' | b'K' | b'x' | b'g');
        if extension && size > MAX_EXTENSION_HEADER {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "tar extension header of type '{}' at offset {start} announces {size} bytes (more than the {MAX_EXTENSION_HEADER} accepted)",
                    typeflag as char
                ),
            ));
        }
        let data = if extension {
            size
        } else {
            self.pax_size.take().unwrap_or(size)
        };
        if typeflag == b'x' {
            self.pax = Some((start + BLOCK, start + BLOCK + size, Vec::new()));
        }
        if typeflag == b'S' && h[482] != 0 {
            self.sparse_data = Some(data);
            self.next_header = start + BLOCK;
            return Ok(());
        }
        self.next_header = start + BLOCK + data.div_ceil(BLOCK) * BLOCK;
        Ok(())
    }

    /// Follow the structure over `buf`, which holds stream bytes [pos, pos + buf.len()).
    fn track(&mut self, buf: &[u8]) -> io::Result<()> {
        let base = self.pos;
        let end = base + buf.len() as u64;
        let mut at = base;
        while at < end {
            if let Some((from, to, data)) = &mut self.pax {
                if at < *to && end > *from {
                    let s = (*from).max(at);
                    let e = (*to).min(end);
                    data.extend_from_slice(&buf[(s - base) as usize..(e - base) as usize]);
                }
                if end >= *to {
                    let record = std::mem::take(data);
                    self.pax = None;
                    self.pax_size = pax_size(&record);
                }
            }
            if at < self.next_header {
                at = self.next_header.min(end);
                continue;
            }
            // `at` is inside the header that starts at next_header.
            let off = (at - self.next_header) as usize;
            let take = (512 - off).min((end - at) as usize);
            self.header[off..off + take]
                .copy_from_slice(&buf[(at - base) as usize..(at - base) as usize + take]);
            self.header_fill = off + take;
            at += take as u64;
            if self.header_fill == 512 {
                self.header_fill = 0;
                self.on_header()?;
            }
        }
        self.pos = end;
        Ok(())
    }
}

impl<R: Read> Read for HeaderGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.track(&buf[..n])?;
        Ok(n)
    }
}

/// A tar size field: octal text, or base-256 when the high bit of the first byte is set.
fn parse_size(f: &[u8]) -> u64 {
    if f.first().is_some_and(|b| b & 0x80 != 0) {
        let mut v: u64 = 0;
        for b in &f[1..] {
            v = v.saturating_mul(256).saturating_add(u64::from(*b));
        }
        return v;
    }
    let mut v: u64 = 0;
    for b in f {
        match b {
            b'0'..=b'7' => v = v.saturating_mul(8).saturating_add(u64::from(b - b'0')),
            b' ' | 0 if v == 0 => {}
            _ => break,
        }
    }
    v
}

/// The `size` key of PAX extended-header records (`"<len> size=<n>\n"`).
fn pax_size(record: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(record);
    text.lines().find_map(|l| {
        let (_, kv) = l.split_once(' ')?;
        kv.strip_prefix("size=")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all_chunked(data: Vec<u8>, chunk: usize) -> io::Result<Vec<u8>> {
        struct Chunks(io::Cursor<Vec<u8>>, usize);
        impl Read for Chunks {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                let n = b.len().min(self.1);
                self.0.read(&mut b[..n])
            }
        }
        let mut out = Vec::new();
        HeaderGuard::new(Chunks(io::Cursor::new(data), chunk)).read_to_end(&mut out)?;
        Ok(out)
    }

    fn tar_with(long_name: usize, pax_size_override: bool) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        h.set_cksum();
        let name = "d/".repeat(long_name / 2) + "f";
        b.append_data(&mut h, &name, &b"hello"[..]).unwrap();
        if pax_size_override {
            b.append_pax_extensions([("size", b"3".as_slice())])
                .unwrap();
            let mut h = tar::Header::new_ustar();
            h.set_path("g").unwrap();
            h.set_size(3);
            h.set_cksum();
            b.append(&h, &b"abc"[..]).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_cksum();
        b.append_data(&mut h, "last", &b"ok"[..]).unwrap();
        b.into_inner().unwrap()
    }

    #[test]
    fn passes_real_archives_through_unchanged() {
        for (long, pax) in [(10, false), (300, false), (5000, true)] {
            let t = tar_with(long, pax);
            for chunk in [1, 7, 512, 4096] {
                assert_eq!(read_all_chunked(t.clone(), chunk).unwrap(), t);
            }
            // And the tar crate still reads every entry through it.
            let mut a = tar::Archive::new(HeaderGuard::new(io::Cursor::new(t)));
            let names: Vec<String> = a
                .entries()
                .unwrap()
                .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names.last().map(String::as_str), Some("last"));
        }
    }

    #[test]
    fn refuses_an_oversized_long_name() {
        // A GNU long-name header announcing 8 GiB, followed by nothing.
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_path("././@LongLink").unwrap();
        h.set_size(8 << 30);
        h.set_cksum();
        let data = h.as_bytes().to_vec();
        let e = read_all_chunked(data, 100).unwrap_err();
        assert!(e.to_string().contains("extension header"), "{e}");
        // A large but acceptable long name passes.
        assert!(read_all_chunked(tar_with(4000, false), 333).is_ok());
    }

    #[test]
    fn follows_gnu_sparse_extension_blocks() {
        // GNU tar writes old-format sparse entries (`S`) with extension blocks when a file has
        // more than 4 holes; the entry after it must still be found.
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("s")).unwrap();
        use std::io::{Seek, SeekFrom, Write};
        // Data blocks full of octal digits: a tracker that lost step and read one as a header
        // would see a huge size there and leave the archive.
        for i in 0..12u64 {
            f.seek(SeekFrom::Start(i << 20)).unwrap();
            f.write_all(&[b'7'; 4096]).unwrap();
        }
        f.set_len(13 << 20).unwrap();
        std::fs::write(dir.path().join("after"), b"hi\n").unwrap();
        let out = std::process::Command::new("tar")
            .args(["--format=gnu", "-S", "-cf", "t.tar", "s", "after"])
            .current_dir(dir.path())
            .status();
        if !out.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED: no GNU tar");
            return;
        }
        let t = std::fs::read(dir.path().join("t.tar")).unwrap();
        let mut g = HeaderGuard::new(io::Cursor::new(t.clone()));
        let mut sink = Vec::new();
        g.read_to_end(&mut sink).unwrap();
        assert_eq!(sink, t);
        // In step with the archive: every block was accounted for, ending exactly at its end.
        assert_eq!(g.next_header, t.len() as u64);
        assert!(g.sparse_data.is_none());
        // The tracker landed on the real header of `after` (and then the end blocks).
        let mut a = tar::Archive::new(HeaderGuard::new(io::Cursor::new(t)));
        let names: Vec<String> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["s", "after"]);
    }

    #[test]
    fn size_fields() {
        assert_eq!(parse_size(b"00000001000\0"), 512);
        assert_eq!(parse_size(b"     1000 \0\0"), 512);
        let mut b256 = [0u8; 12];
        b256[0] = 0x80;
        b256[11] = 7;
        assert_eq!(parse_size(&b256), 7);
        assert_eq!(pax_size(b"11 size=42\n"), Some(42));
    }
}
