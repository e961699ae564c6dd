//! The ELF scan of a file that can be read at any offset (`dir:` layers, host virtualenvs):
//! the streaming [`Scan`] without the stream. It reads the ELF header, the program and
//! section header tables, the dynamic section and its strings, the fatbin container and
//! entry headers (payloads are skipped), and searches for containers only where they can be
//! loaded from: the fatbin sections and the allocated, non-executable data sections
//! (`.data`, `.rodata`: the fatbins a library hands to `cuModuleLoadData` itself).
//!
//! The facts are the streaming scan's (both report containers only in the sections
//! `may_hold_containers` allows), with one exception by design: the section name table is
//! read where it lies, so a library whose names sit far before its section headers
//! (libtriton: symbol tables in between) gets its sections named and only its data sections
//! searched, where the stream, which cannot keep that much, warns and searches the whole
//! file. Everything else (which ranges the stream would still have when the dynamic section
//! names them, the warnings) follows from running the same [`Scan`] with its stream position
//! moved to where the stream would learn something.

use super::fatbin::{is_fatbin_section_name, probe_container};
use super::kernels::KernelProbe;
use super::stream::{cstr, may_hold_containers, Scan, CHUNK};
use super::{ElfError, ElfFacts, ScanOptions};
use std::cell::{Cell, RefCell};
use std::io;
#[cfg(test)]
use std::io::{Read, Seek, SeekFrom};

const SHT_NOBITS: u32 = 8;
/// The container header, always inside the search that found its magic.
const CONTAINER_HEADER: u64 = 16;
/// The first read of a search (bytes; doubled up to a chunk while nothing is found).
const MIN_SEARCH: u64 = 512;

/// Random access to a file's bytes (`pread`).
pub(crate) trait ReadAt {
    /// Reads into `buf` from `offset`; short only at the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The file's length now.
    fn len(&self) -> io::Result<u64>;
}

#[cfg(unix)]
impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// [`ReadAt`] over any seekable reader.
#[cfg(test)]
pub(crate) struct SeekReader<R>(RefCell<R>);

#[cfg(test)]
impl<R: Read + Seek> SeekReader<R> {
    pub(crate) fn new(r: R) -> Self {
        SeekReader(RefCell::new(r))
    }
}

#[cfg(test)]
impl<R: Read + Seek> ReadAt for SeekReader<R> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut r = self.0.borrow_mut();
        r.seek(SeekFrom::Start(offset))?;
        r.read(buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.0.borrow_mut().seek(SeekFrom::End(0))
    }
}

/// The scanned file: counts the bytes read and keeps the first read error (reported as the
/// scan's error, like a failing stream).
pub(crate) struct Source<'a> {
    file: &'a dyn ReadAt,
    bytes_read: Cell<u64>,
    error: RefCell<Option<io::Error>>,
}

impl<'a> Source<'a> {
    fn new(file: &'a dyn ReadAt) -> Self {
        Source {
            file,
            bytes_read: Cell::new(0),
            error: RefCell::new(None),
        }
    }

    /// Fills as much of `buf` as the file has from `off`.
    fn read_into(&self, off: u64, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match self.file.read_at(&mut buf[n..], off + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error.borrow_mut().get_or_insert(e);
                    break;
                }
            }
        }
        self.bytes_read.set(self.bytes_read.get() + n as u64);
        n
    }

    /// Up to `len` bytes at `off` (fewer at the end of the file).
    fn read_some(&self, off: u64, len: usize) -> Option<Vec<u8>> {
        let mut v = vec![0u8; len];
        let n = self.read_into(off, &mut v);
        v.truncate(n);
        Some(v)
    }

    /// Exactly `len` bytes at `off`, or None.
    pub(super) fn read(&self, off: u64, len: u64) -> Option<Vec<u8>> {
        let mut v = vec![0u8; usize::try_from(len).ok()?];
        (self.read_into(off, &mut v) == v.len()).then_some(v)
    }
}

/// What a seekable scan found, and how many bytes of the file it read.
#[derive(Debug)]
pub(crate) struct SeekScan {
    pub(crate) facts: ElfFacts,
    pub(crate) bytes_read: u64,
}

/// Scans the ELF file `file` of `size` bytes (as the directory listing says; a file that
/// turns out shorter is truncated, as with a stream), reading only what the facts need.
pub(crate) fn scan_at(
    file: &dyn ReadAt,
    size: u64,
    opts: &ScanOptions,
) -> Result<SeekScan, ElfError> {
    let src = Source::new(file);
    let end = size.min(file.len()?);
    let mut s = Scan::new(opts, Some(&src), end);

    // The stream's first chunk: the header is parsed once it holds 64 bytes or the data
    // ends; parse_header looks at the first 64 bytes and at whether there are that many.
    let first = (CHUNK as u64).min(size).min(end);
    s.ret.pos = first;
    if first > 0 && (first >= 64 || first < (CHUNK as u64).min(size)) {
        let head = src.read(0, first.min(4096)).unwrap_or_default();
        s.parse_header(&head, size)?;
        s.advance();
    }
    // Each range the scan waits for is complete when the stream reaches its end: go there.
    if s.hdr.is_some() {
        while let Some(e) = s.pending_ends().min().filter(|&e| e <= end) {
            s.ret.pos = s.ret.pos.max(e);
            s.advance();
        }
    }
    s.ret.pos = end;
    if s.hdr.is_none() {
        let head = src.read(0, end.min(4096)).unwrap_or_default();
        s.parse_header(&head, size)?;
    }
    if end < size {
        s.warn(format!("file truncated: {end} of {size} bytes read"));
    }
    s.eof = true;
    s.advance();
    feed_fatbins(&mut s, &src, end);
    s.fat.finish(end);
    let mut facts = s.finish();
    // Kernel counting reads payloads in file order over every reported entry, like the
    // stream's captures (which also see containers in sections never reported: a kernel
    // found only there makes the stream say "has kernels", which keeps the binary judged).
    let mut probe = KernelProbe::default();
    probe.probe_all(facts.all_entries(), |at, len| {
        (at.saturating_add(len) <= end)
            .then(|| src.read(at, len))
            .flatten()
    });
    facts.has_kernels = probe.verdict(facts.judged_entries());
    if let Some(e) = src.error.take() {
        return Err(ElfError::Io(e));
    }
    Ok(SeekScan {
        facts,
        bytes_read: src.bytes_read.get(),
    })
}

/// A file range searched for containers: a fatbin section (`lenient`, whose accepted
/// containers hide what lies inside them) or a data section.
struct Region {
    lo: u64,
    hi: u64,
    lenient: bool,
}

/// Where containers are searched for: every section the streaming scan's result can take
/// them from except code and metadata; the whole file when the sections are not known.
fn regions(s: &Scan<'_>, end: u64) -> Vec<Region> {
    let mut v: Vec<Region> = match (&s.shdrs, s.section_names()) {
        (Some(shdrs), Some(names)) => shdrs
            .iter()
            .filter(|sh| sh.sh_type != SHT_NOBITS && sh.size > 0)
            .filter_map(|sh| {
                let name = cstr(&names, sh.name as usize);
                let lenient = is_fatbin_section_name(&name);
                (lenient || may_hold_containers(sh, &name)).then(|| Region {
                    lo: sh.offset,
                    hi: sh.offset.saturating_add(sh.size).min(end),
                    lenient,
                })
            })
            .filter(|r| r.lo < r.hi)
            .collect(),
        _ => vec![Region {
            lo: 0,
            hi: end,
            lenient: false,
        }],
    };
    v.sort_by_key(|r| r.lo);
    v
}

/// Containers the streaming result accepts, `[start, end)` clipped to their section, sorted:
/// it ignores every candidate that starts inside one, so nothing there is searched (only the
/// container's own entry headers are read). In a fatbin section every container whose header
/// is understood is accepted; in a data section only a strictly valid one ending inside it,
/// which is checked ahead by reading its entry headers (`probe_container`).
#[derive(Default)]
struct Covers(Vec<(u64, u64)>);

impl Covers {
    /// Adds a container whose header was understood, unless it lies inside an accepted one
    /// or the section does not accept it.
    fn accept(&mut self, start: u64, end: u64, regions: &[Region], src: &Source<'_>) -> bool {
        let Some(r) = regions.iter().find(|r| r.lo <= start && start < r.hi) else {
            return false;
        };
        if self.covering(start).is_some() {
            return false;
        }
        if !r.lenient {
            let valid = probe_container(start, |at, len| src.read_some(at, len));
            if valid.is_none_or(|e| e > r.hi) {
                return false;
            }
        }
        let i = self.0.partition_point(|c| c.0 < start);
        let end = end.max(start + CONTAINER_HEADER).min(r.hi);
        self.0.insert(i, (start, end));
        true
    }

    /// The end of the container covering `at`.
    fn covering(&self, at: u64) -> Option<u64> {
        let i = self.0.partition_point(|c| c.0 <= at);
        i.checked_sub(1)
            .map(|i| self.0[i])
            .filter(|c| at < c.1)
            .map(|c| c.1)
    }

    /// The first container starting after `at`.
    fn next_start(&self, at: u64) -> Option<u64> {
        let i = self.0.partition_point(|c| c.0 <= at);
        self.0.get(i).map(|c| c.0)
    }
}

/// The first run at or after `pos` to search for containers, as `[from, to)`.
fn next_search(regions: &[Region], covers: &Covers, pos: u64) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    for r in regions {
        if best.is_some_and(|b| r.lo >= b.0) {
            break; // sorted by start: no earlier run follows
        }
        // Up to the next 8-aligned offset: a magic word straddling the section end starts
        // a container the stream sees as inside it.
        let mut hi = r.hi.saturating_add(7) & !7;
        let mut lo = r.lo.max(pos);
        while let Some(e) = covers.covering(lo) {
            lo = e;
        }
        if let Some(next) = covers.next_start(lo) {
            hi = hi.min(next);
        }
        if lo < hi && best.is_none_or(|b| lo < b.0) {
            best = Some((lo, hi));
        }
    }
    best
}

/// Feeds the fatbin scanner what it needs, in file order: the search runs whole, and
/// elsewhere only the header pieces its containers ask for.
fn feed_fatbins(s: &mut Scan<'_>, src: &Source<'_>, end: u64) {
    let regions = regions(s, end);
    let mut covers = Covers::default();
    let mut buf = vec![0u8; CHUNK];
    let mut pos = 0u64;
    // Search in small reads right after a container (the next one usually starts there, and
    // its header lets the search skip it), growing while nothing is found.
    let mut search_len = MIN_SEARCH;
    loop {
        let search = next_search(&regions, &covers, pos);
        let wanted = s.fat.next_wanted(pos);
        let (at, stop, searching) = match (search, wanted) {
            (None, None) => break,
            (Some((a, e)), w) if w.is_none_or(|w| a <= w.0) => {
                // Ending 8-aligned: a magic word never straddles two reads.
                let stop = e.min((a & !7) + search_len);
                search_len = (search_len * 2).min(CHUNK as u64);
                (a, stop, true)
            }
            (s, w) => {
                let (w, len) = w.unwrap_or_default();
                (w, (w + len).min(s.map_or(u64::MAX, |s| s.0)), false)
            }
        };
        if at >= end {
            break;
        }
        let len = (stop.min(end) - at).min(CHUNK as u64) as usize;
        let n = src.read_into(at, &mut buf[..len]);
        if n == 0 {
            break;
        }
        s.fat.feed_part(at, &buf[..n], searching);
        pos = at + n as u64;
        let mut opened = s.fat.take_opened();
        opened.sort_unstable();
        for (start, end) in opened {
            if covers.accept(start, end, &regions, src) {
                search_len = MIN_SEARCH;
            }
        }
    }
}
