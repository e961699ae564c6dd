//! The one tar parser gpulint trusts: it decides where every header starts, so no second
//! reader can disagree with it about header boundaries (two parsers that disagree let one
//! archive look different to each, and let a crafted size field or PAX record steer one of
//! them into reading gigabytes).
//!
//! Streaming, no seeking required, nothing extracted. Each numeric field is parsed one way
//! (octal text ended by NUL or space, or base-256); a field with anything after its
//! terminator, a header whose checksum does not match, a malformed PAX record set, or an
//! extension header over [`MAX_EXTENSION_HEADER`] is an error, never a guess. PAX `size`,
//! `path` and `linkpath`, GNU long names/links (`L`/`K`), old-style GNU sparse files (`S`)
//! and PAX sparse files (GNU formats 0.0, 0.1 and 1.0, read as Go's archive/tar reads them;
//! holes read as zeros) are honoured.

mod header;
mod pax;

use header::{field_str, header_name, number, padding, trim_nuls};
use pax::{decimal, Pax, PaxSparse};
use std::io::{self, Read};

/// A read refused because it went over one of gpulint's bounds, carried inside an
/// `io::Error` so the walker reports it as too-large, not as corruption.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LimitExceeded(pub String);

/// Largest extension header accepted (a GNU long name/link, one PAX record set): far above
/// PATH_MAX-sized names and real PAX records.
pub(crate) const MAX_EXTENSION_HEADER: u64 = 1 << 20;

/// Most data runs one GNU sparse file may list (each costs 16 bytes of memory).
const MAX_SPARSE_RUNS: usize = 1 << 20;

const BLOCK: u64 = 512;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    Symlink,
    Hardlink,
    /// Devices, FIFOs, volume labels and other types nothing here reads.
    Other(u8),
}

/// One entry's header, with every extension header before it applied.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub path: Vec<u8>,
    pub link: Option<Vec<u8>>,
    pub kind: EntryKind,
    pub mode: u32,
    /// Logical size of the content (for a sparse file: with its holes).
    pub size: u64,
    /// Offset of the entry's first data byte in the stream.
    pub data_offset: u64,
    /// An old-style GNU sparse file: its content is not one run at `data_offset`.
    pub sparse: bool,
}

/// A run of the current entry's content: bytes from the stream, or a hole read as zeros.
#[derive(Debug, Clone, Copy)]
enum Run {
    Data(u64),
    Hole(u64),
}

pub(crate) struct TarReader<R> {
    inner: R,
    /// Stream bytes consumed so far.
    pos: u64,
    /// The current entry's content still to be read, in order.
    runs: std::collections::VecDeque<Run>,
    /// Stream bytes after the current entry's content up to the next header.
    pad: u64,
    /// Skips forward without reading, when the stream can seek.
    seek: Option<fn(&mut R, u64) -> io::Result<()>>,
    done: bool,
}

fn seek_forward<R: io::Seek>(r: &mut R, n: u64) -> io::Result<()> {
    let n = i64::try_from(n).map_err(|_| corrupt("skip beyond the largest offset"))?;
    r.seek(io::SeekFrom::Current(n)).map(|_| ())
}

fn corrupt(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn truncated(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, msg.into())
}

impl<R: Read> TarReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        TarReader {
            inner,
            pos: 0,
            runs: Default::default(),
            pad: 0,
            seek: None,
            done: false,
        }
    }

    /// A reader that seeks past content it is not asked for (a plain tar file on disk).
    /// A seek past the end of a cut-off file succeeds: callers check offsets against the
    /// file's length.
    pub(crate) fn new_seekable(inner: R) -> Self
    where
        R: io::Seek,
    {
        TarReader {
            seek: Some(seek_forward::<R>),
            ..TarReader::new(inner)
        }
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// The next entry, after skipping what is left of the current one. `None` at the end of
    /// the archive (a zero block, or the stream ending exactly where a header would start).
    pub(crate) fn next_entry(&mut self) -> io::Result<Option<Entry>> {
        if self.done {
            return Ok(None);
        }
        self.skip_rest()?;
        let mut long_name: Option<Vec<u8>> = None;
        let mut long_link: Option<Vec<u8>> = None;
        let mut pax: Option<Pax> = None;
        loop {
            let header_offset = self.pos;
            let Some(h) = self.read_header()? else {
                self.done = true;
                if long_name.is_some() || long_link.is_some() || pax.is_some() {
                    return Err(corrupt(format!(
                        "extension headers at the end of the archive (offset {header_offset}) describe no entry"
                    )));
                }
                return Ok(None);
            };
            let typeflag = h[156];
            let stored = number(&h[124..136]).map_err(|e| {
                corrupt(format!("header at offset {header_offset}: size field {e}"))
            })?;
            if matches!(typeflag, b'L' | b'K' | b'x' | b'g') {
                if stored > MAX_EXTENSION_HEADER {
                    return Err(io::Error::other(LimitExceeded(format!(
                        "tar extension header of type '{}' at offset {header_offset} announces {stored} bytes (more than the {MAX_EXTENSION_HEADER} accepted)",
                        typeflag as char
                    ))));
                }
                let data = self.read_exact_vec(stored)?;
                self.skip(padding(stored))?;
                let dup = |what: &str| {
                    corrupt(format!(
                        "two {what} headers for one entry (the second at offset {header_offset})"
                    ))
                };
                match typeflag {
                    b'L' => {
                        if long_name.replace(trim_nuls(data)).is_some() {
                            return Err(dup("GNU long-name"));
                        }
                    }
                    b'K' => {
                        if long_link.replace(trim_nuls(data)).is_some() {
                            return Err(dup("GNU long-link"));
                        }
                    }
                    b'x' => {
                        let p = Pax::parse(&data).map_err(|e| {
                            corrupt(format!("PAX header at offset {header_offset}: {e}"))
                        })?;
                        if pax.replace(p).is_some() {
                            return Err(dup("PAX"));
                        }
                    }
                    _ => {
                        // A global PAX header: checked like a local one, then not used
                        // (nothing here depends on uid/gid/mtime defaults).
                        Pax::parse(&data).map_err(|e| {
                            corrupt(format!("PAX global header at offset {header_offset}: {e}"))
                        })?;
                    }
                }
                continue;
            }
            let pax = pax.unwrap_or_default();
            let pax_sparse = pax
                .sparse_format()
                .map_err(|e| corrupt(format!("PAX header before offset {header_offset}: {e}")))?;
            let path = match (pax_sparse, &pax.sparse_name) {
                // GNU tar names the entry `GNUSparseFile.NNN/…`; the real name is here.
                (Some(_), Some(name)) if !name.is_empty() => name.clone(),
                _ => match pax.path.clone() {
                    Some(p) => p,
                    None => long_name.unwrap_or_else(|| header_name(&h)),
                },
            };
            let link = match typeflag {
                b'1' | b'2' => Some(
                    pax.linkpath
                        .clone()
                        .or(long_link)
                        .unwrap_or_else(|| field_str(&h[157..257]).to_vec()),
                ),
                _ => None,
            };
            let kind = match typeflag {
                b'0' | 0 | b'7' | b'S' => EntryKind::File,
                b'5' => EntryKind::Dir,
                b'2' => EntryKind::Symlink,
                b'1' => EntryKind::Hardlink,
                t => EntryKind::Other(t),
            };
            let mode = number(&h[100..108]).map_or(0o644, |m| (m & 0o7777) as u32);
            let in_archive = pax.size.unwrap_or(stored);
            self.runs.clear();
            let size = if typeflag == b'S' {
                self.sparse_runs(&h, in_archive, header_offset)?
            } else if let Some(format) = pax_sparse {
                if kind != EntryKind::File {
                    return Err(corrupt(format!(
                        "header at offset {header_offset}: GNU sparse records on an entry that is not a regular file"
                    )));
                }
                self.pax_sparse_runs(&pax, format, in_archive, header_offset)?
            } else {
                if in_archive > 0 {
                    self.runs.push_back(Run::Data(in_archive));
                }
                in_archive
            };
            self.pad = padding(in_archive);
            return Ok(Some(Entry {
                path,
                link,
                kind,
                mode,
                size,
                data_offset: self.pos,
                sparse: typeflag == b'S' || pax_sparse.is_some(),
            }));
        }
    }

    /// The current entry's content (stops at its end).
    pub(crate) fn content(&mut self) -> Content<'_, R> {
        Content { tar: self }
    }

    /// Read one 512-byte header block. `None` at the end of the archive.
    fn read_header(&mut self) -> io::Result<Option<[u8; 512]>> {
        let mut h = [0u8; 512];
        let mut got = 0;
        while got < h.len() {
            match self.inner.read(&mut h[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let at = self.pos;
        self.pos += got as u64;
        if got == 0 {
            return Ok(None);
        }
        // Less than one header at the start, without the ustar magic, is no tar at all (a
        // small text file), not a tar cut short.
        if got < h.len() && at == 0 && h.get(257..262) != Some(b"ustar".as_slice()) {
            return Err(corrupt(format!(
                "{got} bytes, shorter than one {}-byte tar header",
                h.len()
            )));
        }
        if got < h.len() {
            return Err(truncated(format!(
                "the archive ends inside the header at offset {at}"
            )));
        }
        if h.iter().all(|b| *b == 0) {
            return Ok(None);
        }
        let stored = number(&h[148..156])
            .map_err(|e| corrupt(format!("header at offset {at}: checksum field {e}")))?;
        let unsigned: u64 = h
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u64::from(*b)
                }
            })
            .sum();
        let signed: i64 = h
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    i64::from(*b as i8)
                }
            })
            .sum();
        if stored != unsigned && i64::try_from(stored).ok() != Some(signed) {
            return Err(corrupt(format!(
                "header at offset {at}: checksum mismatch (not a tar header)"
            )));
        }
        Ok(Some(h))
    }

    /// The data runs of an old-style GNU sparse entry: the map in the header, then in the
    /// extension blocks that follow it. Returns the logical size.
    fn sparse_runs(&mut self, h: &[u8; 512], in_archive: u64, at: u64) -> io::Result<u64> {
        let real = number(&h[483..495])
            .map_err(|e| corrupt(format!("sparse header at offset {at}: real size {e}")))?;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut add = |map: &[u8]| -> io::Result<()> {
            for e in map.chunks_exact(24) {
                if e.iter().all(|b| *b == 0) {
                    continue;
                }
                let off = number(&e[..12]);
                let len = number(&e[12..]);
                let (Ok(off), Ok(len)) = (off, len) else {
                    return Err(corrupt(format!(
                        "sparse header at offset {at}: malformed map entry"
                    )));
                };
                if len > 0 {
                    if runs.len() >= MAX_SPARSE_RUNS {
                        return Err(io::Error::other(LimitExceeded(format!(
                            "sparse file at offset {at} lists more than {MAX_SPARSE_RUNS} data runs"
                        ))));
                    }
                    runs.push((off, len));
                }
            }
            Ok(())
        };
        add(&h[386..482])?;
        let mut extended = h[482] != 0;
        while extended {
            let mut ext = [0u8; 512];
            self.read_exact_into(&mut ext)?;
            add(&ext[..504])?;
            extended = ext[504] != 0;
        }
        self.set_sparse_runs(runs, in_archive, real, at)
    }

    /// The data runs of a PAX sparse entry (Go's archive/tar: 0.0 and 0.1 from the records,
    /// 1.0 from the map lines before the data). Returns the logical size.
    fn pax_sparse_runs(
        &mut self,
        pax: &Pax,
        format: PaxSparse,
        in_archive: u64,
        at: u64,
    ) -> io::Result<u64> {
        let bad = |e: String| corrupt(format!("PAX sparse file at offset {at}: {e}"));
        let size = pax.sparse_size.as_ref().or(pax.sparse_realsize.as_ref());
        let real = match size {
            Some(v) => {
                decimal(v).ok_or_else(|| bad("its real size is not a decimal number".into()))?
            }
            None => in_archive,
        };
        let (runs, stored) = match format {
            PaxSparse::Records => (pax.sparse_records().map_err(bad)?, in_archive),
            PaxSparse::Prelude => {
                let (runs, prelude) = self.sparse_prelude(in_archive, at)?;
                (runs, in_archive - prelude)
            }
        };
        self.set_sparse_runs(runs, stored, real, at)
    }

    /// Format 1.0's map: the number of runs, then an offset and a length per run, each on a
    /// line of its own, in as many 512-byte blocks as they need. Returns the runs and the
    /// bytes of blocks read.
    fn sparse_prelude(&mut self, in_archive: u64, at: u64) -> io::Result<(Vec<(u64, u64)>, u64)> {
        let bad = |e: &str| corrupt(format!("PAX sparse file at offset {at}: {e}"));
        let mut block = [0u8; BLOCK as usize];
        let mut used = block.len();
        let mut read = 0u64;
        let mut next = |tar: &mut Self| -> io::Result<u64> {
            let mut token = Vec::new();
            loop {
                if used == block.len() {
                    if read + BLOCK > in_archive {
                        return Err(bad("its map runs past the entry's data"));
                    }
                    tar.read_exact_into(&mut block)?;
                    read += BLOCK;
                    used = 0;
                }
                let b = block[used];
                used += 1;
                if b == b'\n' {
                    return decimal(&token)
                        .ok_or_else(|| bad("a map line is not a decimal number"));
                }
                // No decimal u64 is longer: a longer line is not a map.
                if token.len() >= 20 {
                    return Err(bad("a map line is not a decimal number"));
                }
                token.push(b);
            }
        };
        let count = next(self)?;
        if count > MAX_SPARSE_RUNS as u64 {
            return Err(io::Error::other(LimitExceeded(format!(
                "sparse file at offset {at} lists more than {MAX_SPARSE_RUNS} data runs"
            ))));
        }
        let mut runs = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let off = next(self)?;
            let len = next(self)?;
            runs.push((off, len));
        }
        Ok((runs, read))
    }

    /// Queue a sparse entry's runs: data runs in order, holes between them and up to `real`.
    /// The runs must not overlap, must end within `real`, and must hold exactly the `stored`
    /// bytes the archive has for the entry.
    fn set_sparse_runs(
        &mut self,
        runs: Vec<(u64, u64)>,
        in_archive: u64,
        real: u64,
        at: u64,
    ) -> io::Result<u64> {
        let mut cur = 0u64;
        let mut stored = 0u64;
        for (off, len) in runs {
            if len == 0 {
                // GNU tar ends a file that ends in a hole with an empty run at its size.
                if off < cur || off > real {
                    return Err(corrupt(format!(
                        "sparse file at offset {at}: data runs overlap or are out of order"
                    )));
                }
                continue;
            }
            if off < cur {
                return Err(corrupt(format!(
                    "sparse file at offset {at}: data runs overlap or are out of order"
                )));
            }
            if off > cur {
                self.runs.push_back(Run::Hole(off - cur));
            }
            self.runs.push_back(Run::Data(len));
            cur = off
                .checked_add(len)
                .ok_or_else(|| corrupt(format!("sparse file at offset {at}: map overflows")))?;
            stored += len;
        }
        if stored != in_archive || cur > real {
            return Err(corrupt(format!(
                "sparse file at offset {at}: its map lists {stored} stored bytes up to offset {cur}, but the header says {in_archive} stored and {real} in all"
            )));
        }
        if real > cur {
            self.runs.push_back(Run::Hole(real - cur));
        }
        Ok(real)
    }

    fn read_exact_into(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let at = self.pos;
        match self.inner.read_exact(buf) {
            Ok(()) => {
                self.pos += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(truncated(format!(
                "the archive ends inside the {} bytes at offset {at}",
                buf.len()
            ))),
            Err(e) => Err(e),
        }
    }

    fn read_exact_vec(&mut self, n: u64) -> io::Result<Vec<u8>> {
        // n <= MAX_EXTENSION_HEADER (checked by the caller).
        let mut v = vec![0u8; n as usize];
        self.read_exact_into(&mut v)?;
        Ok(v)
    }

    /// Skip what is left of the current entry's content and its padding.
    fn skip_rest(&mut self) -> io::Result<()> {
        let stored: u64 = self
            .runs
            .drain(..)
            .map(|r| match r {
                Run::Data(n) => n,
                Run::Hole(_) => 0,
            })
            .sum();
        let n = stored + std::mem::take(&mut self.pad);
        self.skip(n)
    }

    fn skip(&mut self, mut n: u64) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        if let Some(seek) = self.seek {
            seek(&mut self.inner, n)?;
            self.pos += n;
            return Ok(());
        }
        let mut buf = [0u8; 32 << 10];
        while n > 0 {
            let want = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            let got = match self.inner.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(truncated(format!(
                        "the archive ends at offset {} inside an entry's content",
                        self.pos
                    )))
                }
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.pos += got as u64;
            n -= got as u64;
        }
        Ok(())
    }
}

/// Reads the current entry's content; ends where the entry ends.
pub(crate) struct Content<'a, R> {
    tar: &'a mut TarReader<R>,
}

impl<R: Read> Read for Content<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = &mut *self.tar;
        loop {
            let Some(run) = t.runs.front_mut() else {
                return Ok(0);
            };
            if buf.is_empty() {
                return Ok(0);
            }
            match run {
                Run::Hole(0) | Run::Data(0) => {
                    t.runs.pop_front();
                }
                Run::Hole(n) => {
                    let k = buf.len().min(usize::try_from(*n).unwrap_or(usize::MAX));
                    buf[..k].fill(0);
                    *n -= k as u64;
                    return Ok(k);
                }
                Run::Data(n) => {
                    let k = buf.len().min(usize::try_from(*n).unwrap_or(usize::MAX));
                    let got = t.inner.read(&mut buf[..k])?;
                    if got == 0 {
                        return Err(truncated(format!(
                            "the archive ends at offset {} inside an entry's content",
                            t.pos
                        )));
                    }
                    *n -= got as u64;
                    t.pos += got as u64;
                    return Ok(got);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry (path, kind, content) of `data`, read through chunks of `chunk` bytes.
    fn entries(data: &[u8], chunk: usize) -> io::Result<Vec<(String, EntryKind, Vec<u8>)>> {
        struct Chunks<'a>(&'a [u8], usize);
        impl Read for Chunks<'_> {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                let n = b.len().min(self.1).min(self.0.len());
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut t = TarReader::new(Chunks(data, chunk));
        let mut out = Vec::new();
        while let Some(e) = t.next_entry()? {
            let mut content = Vec::new();
            t.content().read_to_end(&mut content)?;
            assert_eq!(content.len() as u64, e.size);
            out.push((
                String::from_utf8_lossy(&e.path).into_owned(),
                e.kind,
                content,
            ));
        }
        Ok(out)
    }

    fn gnu_header(name: &str, size: u64, kind: tar::EntryType) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_path(name).unwrap();
        h.set_size(size);
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_cksum();
        h
    }

    /// A header with checksum recomputed after raw edits of its bytes.
    fn raw_header(mut b: [u8; 512]) -> [u8; 512] {
        b[148..156].fill(b' ');
        let sum: u32 = b.iter().map(|x| u32::from(*x)).sum();
        let text = format!("{sum:06o}\0 ");
        b[148..156].copy_from_slice(text.as_bytes());
        b
    }

    #[test]
    fn reads_what_the_tar_crate_writes() {
        let mut b = tar::Builder::new(Vec::new());
        let long = "d/".repeat(2500) + "f";
        let mut h = gnu_header("x", 5, tar::EntryType::Regular);
        b.append_data(&mut h, &long, &b"hello"[..]).unwrap();
        b.append_pax_extensions([("size", b"3".as_slice())])
            .unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_path("p/with/pax/size").unwrap();
        h.set_size(3);
        h.set_cksum();
        b.append(&h, &b"abc"[..]).unwrap();
        let mut h = gnu_header("l", 0, tar::EntryType::Symlink);
        b.append_link(&mut h, "lnk", "t".repeat(300)).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_path(format!("{}/{}", "p".repeat(120), "n".repeat(90)))
            .unwrap();
        h.set_size(2);
        h.set_cksum();
        b.append(&h, &b"ok"[..]).unwrap();
        let data = b.into_inner().unwrap();
        for chunk in [1, 7, 512, 1 << 16] {
            let got = entries(&data, chunk).unwrap();
            let names: Vec<&str> = got.iter().map(|(n, _, _)| n.as_str()).collect();
            assert_eq!(
                names,
                vec![
                    long.as_str(),
                    "p/with/pax/size",
                    "lnk",
                    &format!("{}/{}", "p".repeat(120), "n".repeat(90))
                ]
            );
            assert_eq!(got[0].2, b"hello");
            assert_eq!(got[1].2, b"abc");
            assert_eq!(got[2].1, EntryKind::Symlink);
            assert_eq!(got[3].2, b"ok");
        }
        let mut t = TarReader::new(io::Cursor::new(&data));
        t.next_entry().unwrap();
        t.next_entry().unwrap();
        let l = t.next_entry().unwrap().unwrap();
        assert_eq!(l.link.unwrap(), "t".repeat(300).as_bytes());
    }

    #[test]
    fn a_size_field_has_one_reading() {
        assert_eq!(number(b"00000001000\0"), Ok(512));
        assert_eq!(number(b"     1000 \0\0"), Ok(512));
        assert_eq!(number(b"\0\0\0\0\0\0\0\0\0\0\0\0"), Ok(0));
        let mut b256 = [0u8; 12];
        b256[0] = 0x80;
        b256[11] = 7;
        assert_eq!(number(&b256), Ok(7));
        b256[0] = 0xff;
        assert!(number(&b256).is_err());
        // Digits after a terminator: one parser read 0, another 0o777…; here it is an error.
        assert!(number(b"0\x00777777777").is_err());
        assert!(number(b"12x45\0\0\0\0\0\0\0").is_err());
        assert!(number(&[0x80, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());

        let mut h = *gnu_header("a", 0, tar::EntryType::Regular).as_bytes();
        h[124..136].copy_from_slice(b"0\x007777777777");
        let mut data = raw_header(h).to_vec();
        data.extend_from_slice(&[0u8; 1024]);
        let e = entries(&data, 512).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("size field"), "{e}");
    }

    #[test]
    fn malformed_pax_records_are_errors() {
        for bad in [
            &b"11 size=42\n5 x\n"[..], // a record shorter than its length field
            b"99 size=1\n",            // a length past the end
            b"10 size=42" // no newline
                .as_slice(),
            b"12 size=4x2\n", // a size that is not a number
            b"x size=1\n",    // no length
        ] {
            let mut data = gnu_header("pax", bad.len() as u64, tar::EntryType::XHeader)
                .as_bytes()
                .to_vec();
            data.extend_from_slice(bad);
            data.resize(data.len().div_ceil(512) * 512, 0);
            data.extend_from_slice(gnu_header("f", 0, tar::EntryType::Regular).as_bytes());
            data.extend_from_slice(&[0u8; 1024]);
            let e = entries(&data, 100).unwrap_err();
            assert!(e.to_string().contains("PAX"), "{e}");
        }
        assert_eq!(Pax::parse(b"11 size=42\n").unwrap().size, Some(42));
    }

    #[test]
    fn checksum_and_truncation() {
        let mut data = gnu_header("f", 3, tar::EntryType::Regular)
            .as_bytes()
            .to_vec();
        data[0] = b'g'; // name changed, checksum not
        data.extend_from_slice(&[b'x'; 512]);
        let e = entries(&data, 512).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");

        let mut data = gnu_header("f", 3000, tar::EntryType::Regular)
            .as_bytes()
            .to_vec();
        data.extend_from_slice(&[b'x'; 100]);
        let e = entries(&data, 512).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        let e = entries(&data[..300], 512).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        // A few bytes of text are not a tar cut short.
        let e = entries(b"hi\n", 512).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert_eq!(
            e.to_string(),
            "3 bytes, shorter than one 512-byte tar header"
        );
        // Extension headers with no entry after them.
        let mut data = gnu_header("././@LongLink", 4, tar::EntryType::GNULongName)
            .as_bytes()
            .to_vec();
        data.extend_from_slice(&[b'n'; 512]);
        data.extend_from_slice(&[0u8; 1024]);
        assert!(entries(&data, 512).is_err());
    }

    #[test]
    fn refuses_an_oversized_extension_header() {
        // A GNU long-name header announcing 8 GiB, then nothing.
        let data = gnu_header("././@LongLink", 8 << 30, tar::EntryType::GNULongName)
            .as_bytes()
            .to_vec();
        let e = entries(&data, 100).unwrap_err();
        assert!(e.get_ref().is_some_and(|i| i.is::<LimitExceeded>()), "{e}");
        assert!(e.to_string().contains("extension header"), "{e}");
    }

    #[test]
    fn reads_gnu_sparse_files_with_their_holes() {
        // GNU tar writes old-format sparse entries (`S`) with extension blocks when a file has
        // more than 4 holes; its content and the entry after it must both come out right.
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("s")).unwrap();
        use std::io::{Seek, SeekFrom, Write};
        let mut want = vec![0u8; 13 << 20];
        for i in 0..12u64 {
            f.seek(SeekFrom::Start(i << 20)).unwrap();
            f.write_all(&[b'7'; 4096]).unwrap();
            want[(i << 20) as usize..(i << 20) as usize + 4096].fill(b'7');
        }
        f.set_len(13 << 20).unwrap();
        std::fs::write(dir.path().join("after"), b"hi\n").unwrap();
        let out = std::process::Command::new("tar")
            .args(["--format=gnu", "-S", "-cf", "t.tar", "s", "after"])
            .current_dir(dir.path())
            .status();
        // GNU tar is installed by ci/install-tools.sh: without it this test fails, not skips.
        assert!(
            out.as_ref().is_ok_and(|s| s.success()),
            "GNU tar --format=gnu -S failed ({out:?}); ci/install-tools.sh installs it"
        );
        let t = std::fs::read(dir.path().join("t.tar")).unwrap();
        assert!(t.len() < 1 << 20, "the archive is sparse");
        let got = entries(&t, 4096).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "s");
        assert!(got[0].2 == want, "sparse content differs");
        assert_eq!(got[1].0, "after");
        assert_eq!(got[1].2, b"hi\n");
    }

    /// GNU tar's PAX sparse formats (`--format=posix --sparse`, versions 0.0, 0.1 and 1.0),
    /// read as Go's archive/tar reads them: the real name (not `GNUSparseFile.NNN/…`), the
    /// content with its holes, and the entry after it.
    #[test]
    fn reads_pax_sparse_files_of_every_gnu_version() {
        use std::io::{Seek, SeekFrom, Write};
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("s")).unwrap();
        let mut want = vec![0u8; 6 << 20];
        for i in 0..5u64 {
            let at = (i << 20) + 100;
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&[b'a' + i as u8; 5000]).unwrap();
            want[at as usize..at as usize + 5000].fill(b'a' + i as u8);
        }
        f.set_len(6 << 20).unwrap();
        drop(f);
        std::fs::write(dir.path().join("after"), b"hi\n").unwrap();
        for version in ["0.0", "0.1", "1.0"] {
            let out = std::process::Command::new("tar")
                .args(["--format=posix", "--sparse", "--sparse-version", version])
                .args(["-cf", "t.tar", "s", "after"])
                .current_dir(dir.path())
                .output()
                .expect("GNU tar (ci/install-tools.sh installs it)");
            assert!(out.status.success(), "{version}: {out:?}");
            let t = std::fs::read(dir.path().join("t.tar")).unwrap();
            assert!(t.len() < 1 << 20, "{version}: the archive is sparse");
            let got = entries(&t, 4096).unwrap_or_else(|e| panic!("{version}: {e}"));
            assert_eq!(got.len(), 2, "{version}");
            assert_eq!(got[0].0, "s", "{version}");
            assert!(got[0].2 == want, "{version}: sparse content differs");
            assert_eq!(got[1].0, "after", "{version}");
            assert_eq!(got[1].2, b"hi\n", "{version}");
        }
    }

    /// PAX sparse records that cannot be read as Go reads them are errors, never a plain file.
    #[test]
    fn malformed_pax_sparse_files_are_errors() {
        // PAX records, the entry's stored data, and what the error says.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [u8], &'a str);
        let cases: &[Case] = &[
            (
                &[("GNU.sparse.major", "2"), ("GNU.sparse.minor", "0")],
                b"",
                "not one this reader knows",
            ),
            (
                &[
                    ("GNU.sparse.major", "0"),
                    ("GNU.sparse.minor", "1"),
                    ("GNU.sparse.numblocks", "2"),
                    ("GNU.sparse.map", "0,3"),
                    ("GNU.sparse.size", "10"),
                ],
                b"abc",
                "2 numbers for 2",
            ),
            (
                &[
                    ("GNU.sparse.map", "4,3"),
                    ("GNU.sparse.numblocks", "1"),
                    ("GNU.sparse.size", "5"),
                ],
                b"abc",
                "and 5 in all",
            ),
            (
                &[
                    ("GNU.sparse.major", "1"),
                    ("GNU.sparse.minor", "0"),
                    ("GNU.sparse.realsize", "10"),
                ],
                b"1\n0\n",
                "runs past",
            ),
        ];
        for (records, data, want) in cases {
            let mut b = tar::Builder::new(Vec::new());
            b.append_pax_extensions(records.iter().map(|(k, v)| (*k, v.as_bytes())))
                .unwrap();
            let mut h = tar::Header::new_ustar();
            h.set_path("GNUSparseFile.0/s").unwrap();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, *data).unwrap();
            let t = b.into_inner().unwrap();
            let e = entries(&t, 512).expect_err(want);
            assert!(e.to_string().contains(want), "{want}: {e}");
        }
    }
}
