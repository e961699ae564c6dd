//! The forward-only ELF scan: keeps the head of the file, captures the ranges it learns
//! about before the stream reaches them, and feeds every byte to the fatbin scanner.
//!
//! The seekable scan ([`super::seek`]) runs the same [`Scan`] over a file it can read at any
//! offset: it keeps nothing, moves the stream position only to where the streaming scan
//! would next learn something, and reads a range when the streaming scan would have it.

use super::cudart;
use super::fatbin::{is_fatbin_section_name, resolve_section, FatbinScanner, CUBIN_HEADER};
use super::kernels::StreamProbe;
use super::seek::Source;
use super::{
    machine_name, type_name, ElfError, ElfFacts, FatbinSection, FatbinSummary, LooseCubin,
    LoosePtx, ScanOptions,
};
use std::borrow::Cow;
use std::io::Read;

mod facts;
mod tables;

pub(super) use facts::{cstr, may_hold_containers};
use tables::{parse_dynamic, parse_phdr, parse_shdr};

pub(super) const CHUNK: usize = 64 * 1024;
const MAX_PHDRS_BYTES: u64 = 1 << 20;
const MAX_SHDRS_BYTES: u64 = 8 << 20;
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
const MAX_SHSTRTAB_BYTES: u64 = 1 << 20;
const MAX_STRING: u64 = 4096;
const MAX_DYN_STRINGS: usize = 1024;
/// A dynamic string table captured whole when the section headers name it before the
/// stream reaches it (cuSPARSELt: section headers, then .dynstr, then .dynamic at the end).
const MAX_DYNSTR_BYTES: u64 = 8 << 20;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_DYNAMIC: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHT_PROGBITS: u32 = 1;
const SHT_DYNSYM: u32 = 11;
const SHF_ALLOC: u64 = 0x2;
const SHF_EXECINSTR: u64 = 0x4;
/// A CUDA runtime's dynamic symbol table is searched for `cudaRuntimeGetVersion` when it is
/// at most this big (cudart 13.0's is 28 KiB).
const MAX_DYNSYM_BYTES: u64 = 4 << 20;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_STRSZ: u64 = 10;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;

fn rd(b: &[u8], o: usize, n: usize) -> u64 {
    let Some(s) = b.get(o..o.saturating_add(n)) else {
        return 0;
    };
    let mut v = 0u64;
    for (i, &x) in s.iter().enumerate() {
        v |= u64::from(x) << (8 * i);
    }
    v
}

struct Capture {
    off: u64,
    len: u64,
    data: Vec<u8>,
}

/// Bytes kept from the stream: the head plus requested ranges. With a `src` (seekable scan)
/// nothing is kept: `get` reads what a streaming scan would have kept, ending at `end`.
pub(super) struct Retained<'a> {
    head: Vec<u8>,
    head_max: u64,
    caps: Vec<Capture>,
    pub(super) pos: u64,
    src: Option<&'a Source<'a>>,
    end: u64,
}

impl Retained<'_> {
    fn feed(&mut self, base: u64, chunk: &[u8]) {
        let end = base + chunk.len() as u64;
        if base < self.head_max {
            let take = (self.head_max.min(end) - base) as usize;
            self.head.extend_from_slice(&chunk[..take]);
        }
        for c in &mut self.caps {
            let next = c.off + c.data.len() as u64;
            let cend = c.off + c.len;
            if next >= cend || next >= end || next < base {
                continue;
            }
            let lo = (next - base) as usize;
            let hi = (cend.min(end) - base) as usize;
            c.data.extend_from_slice(&chunk[lo..hi]);
        }
        self.pos = end;
    }

    /// Asks for `[off, off+len)` to be kept. False when it has already streamed past
    /// outside the head.
    fn request(&mut self, off: u64, len: u64) -> bool {
        let end = off.saturating_add(len);
        if end <= self.head_max {
            return true;
        }
        // Already kept, or inside a range being captured (registered before the stream
        // reached it, so it fills completely).
        if self
            .caps
            .iter()
            .any(|c| c.off <= off && end <= c.off.saturating_add(c.len))
        {
            return true;
        }
        off >= self.pos && self.capture(off, len)
    }

    fn capture(&mut self, off: u64, len: u64) -> bool {
        self.caps.push(Capture {
            off,
            len,
            data: Vec::new(),
        });
        true
    }

    /// [`Self::request`], except that a seekable scan reads the range where it lies even when
    /// a stream would have passed it (the section name table: random access needs no tail
    /// buffer to find it).
    fn request_anywhere(&mut self, off: u64, len: u64) -> bool {
        self.request(off, len) || (self.src.is_some() && self.capture(off, len))
    }

    pub(super) fn get(&self, off: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let end = off.checked_add(len)?;
        let Some(src) = self.src else {
            if end <= self.head.len() as u64 {
                return self.head.get(off as usize..end as usize).map(Cow::Borrowed);
            }
            return self
                .caps
                .iter()
                .find(|c| c.off <= off && end <= c.off + c.data.len() as u64)
                .and_then(|c| c.data.get((off - c.off) as usize..(end - c.off) as usize))
                .map(Cow::Borrowed);
        };
        // What the stream would have kept: the head, and captures filled up to its end.
        let kept = end <= self.head_max.min(self.end)
            || self
                .caps
                .iter()
                .any(|c| c.off <= off && end <= c.off + c.len.min(self.end.saturating_sub(c.off)));
        if !kept {
            return None;
        }
        src.read(off, len).map(Cow::Owned)
    }
}

#[derive(Clone, Copy)]
enum Step {
    Wait,
    Ready,
    Done,
}

pub(super) struct Hdr {
    is64: bool,
    e_type: u16,
    machine: u16,
    /// A cubin file's own SASS target (EM_CUDA header, notes §5.1); None for host ELF.
    cubin: Option<crate::arch::ArchTarget>,
    phoff: u64,
    phentsize: u64,
    phnum: u64,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
    shstrndx: u64,
}

struct Phdr {
    p_type: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

pub(super) struct Shdr {
    pub(super) name: u32,
    pub(super) sh_type: u32,
    pub(super) flags: u64,
    pub(super) offset: u64,
    pub(super) size: u64,
    link: u32,
}

#[derive(Default)]
struct Dynamic {
    needed: Vec<u64>,
    soname: Option<u64>,
    rpath: Vec<u64>,
    runpath: Vec<u64>,
    strtab_off: Option<u64>,
    strsz: u64,
}

pub(super) struct Scan<'a> {
    pub(super) ret: Retained<'a>,
    pub(super) fat: FatbinScanner,
    warnings: Vec<String>,
    pub(super) hdr: Option<Hdr>,
    pub(super) eof: bool,
    phdr_want: Option<(u64, u64)>,
    phdrs: Vec<Phdr>,
    dyn_want: Option<(u64, u64)>,
    dynamic: Option<Dynamic>,
    shdr_want: Option<(u64, u64)>,
    pub(super) shdrs: Option<Vec<Shdr>>,
    shstr_want: Option<(u64, u64)>,
    tail_max: u64,
    strtab_vaddr: Option<u64>,
}

impl<'a> Scan<'a> {
    /// A scan of a stream (`src` None) or of a file read at offsets, whose data ends at `end`.
    pub(super) fn new(opts: &ScanOptions, src: Option<&'a Source<'a>>, end: u64) -> Self {
        Scan {
            ret: Retained {
                head: Vec::new(),
                head_max: opts.head_max.max(4096) as u64,
                caps: Vec::new(),
                pos: 0,
                src,
                end,
            },
            fat: FatbinScanner::new(),
            warnings: Vec::new(),
            hdr: None,
            eof: false,
            phdr_want: None,
            phdrs: Vec::new(),
            dyn_want: None,
            dynamic: None,
            shdr_want: None,
            shdrs: None,
            shstr_want: None,
            tail_max: opts.tail_max as u64,
            strtab_vaddr: None,
        }
    }

    /// End offsets of the ranges still awaited.
    pub(super) fn pending_ends(&self) -> impl Iterator<Item = u64> {
        [self.phdr_want, self.dyn_want, self.shdr_want]
            .into_iter()
            .flatten()
            .map(|(o, l)| o.saturating_add(l))
    }

    fn step_of(&self, want: Option<(u64, u64)>) -> Step {
        match want {
            None => Step::Done,
            Some((o, l)) if self.eof || self.ret.pos >= o.saturating_add(l) => Step::Ready,
            Some(_) => Step::Wait,
        }
    }

    pub(super) fn parse_header(&mut self, b: &[u8], total: u64) -> Result<(), ElfError> {
        if b.len() < 6 {
            let prefix = b.len().min(4);
            return if !b.is_empty() && b"\x7fELF".starts_with(&b[..prefix]) {
                Err(ElfError::Truncated(b.len() as u64))
            } else {
                Err(ElfError::NotElf)
            };
        }
        if !super::is_elf(b) {
            return Err(ElfError::NotElf);
        }
        let is64 = match b[4] {
            1 => false,
            2 => true,
            c => return Err(ElfError::BadClass(c)),
        };
        match b[5] {
            1 => {}
            2 => return Err(ElfError::BigEndian),
            d => return Err(ElfError::BadEncoding(d)),
        }
        let need = if is64 { 64 } else { 52 };
        if b.len() < need {
            return Err(ElfError::Truncated(b.len() as u64));
        }
        let h = if is64 {
            Hdr {
                is64,
                e_type: rd(b, 16, 2) as u16,
                machine: rd(b, 18, 2) as u16,
                cubin: super::fatbin::cubin_target(&b[..64]),
                phoff: rd(b, 32, 8),
                phentsize: rd(b, 54, 2),
                phnum: rd(b, 56, 2),
                shoff: rd(b, 40, 8),
                shentsize: rd(b, 58, 2),
                shnum: rd(b, 60, 2),
                shstrndx: rd(b, 62, 2),
            }
        } else {
            Hdr {
                is64,
                e_type: rd(b, 16, 2) as u16,
                machine: rd(b, 18, 2) as u16,
                cubin: None,
                phoff: rd(b, 28, 4),
                phentsize: rd(b, 42, 2),
                phnum: rd(b, 44, 2),
                shoff: rd(b, 32, 4),
                shentsize: rd(b, 46, 2),
                shnum: rd(b, 48, 2),
                shstrndx: rd(b, 50, 2),
            }
        };
        let min_ph = if is64 { 56 } else { 32 };
        let min_sh = if is64 { 64 } else { 40 };
        if h.phnum > 0 {
            let len = h.phnum.saturating_mul(h.phentsize);
            if h.phentsize < min_ph {
                self.warn(format!(
                    "program header entry size {} too small",
                    h.phentsize
                ));
            } else if len > MAX_PHDRS_BYTES || h.phoff.saturating_add(len) > total {
                self.warn(format!(
                    "program header table at 0x{:x} ({len} bytes) exceeds the file",
                    h.phoff
                ));
            } else if self.ret.request(h.phoff, len) {
                self.phdr_want = Some((h.phoff, len));
            } else {
                self.warn("program headers not retained".into());
            }
        }
        if h.shoff != 0 {
            let len = h.shnum.saturating_mul(h.shentsize);
            if h.shnum == 0 {
                self.warn("extended section numbering (e_shnum = 0) not supported".into());
            } else if h.shentsize < min_sh {
                self.warn(format!(
                    "section header entry size {} too small",
                    h.shentsize
                ));
            } else if h.shoff.saturating_add(len) > total {
                return Err(ElfError::BeyondEnd(format!(
                    "section header table at 0x{:x} ({len} bytes) ends past the end of the \
                     {total}-byte file",
                    h.shoff
                )));
            } else if len > MAX_SHDRS_BYTES {
                self.warn(format!(
                    "section header table at 0x{:x} ({len} bytes) is larger than gpulint reads",
                    h.shoff
                ));
            } else if self.ret.request(h.shoff, len) {
                self.shdr_want = Some((h.shoff, len));
                // .shstrtab normally sits right before the section headers.
                let tail = self.tail_max.min(h.shoff);
                if tail > 0 {
                    self.ret.request(h.shoff - tail, tail);
                }
            }
        }
        self.hdr = Some(h);
        Ok(())
    }

    pub(super) fn warn(&mut self, w: String) {
        if self.warnings.len() < 1000 && !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Parses whatever has become available; registers captures for what is learned.
    pub(super) fn advance(&mut self) {
        let Some(h) = &self.hdr else { return };
        let is64 = h.is64;
        let (phentsize, shentsize, shstrndx) = (h.phentsize, h.shentsize, h.shstrndx);
        loop {
            let mut progress = false;
            if let Step::Ready = self.step_of(self.phdr_want) {
                progress = true;
                let (o, l) = self.phdr_want.take().unwrap_or_default();
                match self.ret.get(o, l) {
                    Some(b) => {
                        let b = b.into_owned();
                        self.phdrs = b
                            .chunks_exact(phentsize as usize)
                            .map(|p| parse_phdr(p, is64))
                            .collect();
                    }
                    None => self.warn(format!("program headers at 0x{o:x} unavailable")),
                }
                let dynamic = self.phdrs.iter().find(|p| p.p_type == PT_DYNAMIC);
                if let Some(d) = dynamic {
                    let (o, l) = (d.offset, d.filesz.min(MAX_DYNAMIC_BYTES));
                    // A relocated .dynstr sits right before .dynamic in the same segment
                    // (patchelf, cuSPARSELt): keep up to `tail_max` bytes in front of it,
                    // never before its segment, so the strings are still there once
                    // .dynamic says where they are.
                    let seg_start = self
                        .phdrs
                        .iter()
                        .filter(|p| p.p_type == PT_LOAD)
                        .find(|p| p.offset <= o && o < p.offset.saturating_add(p.filesz))
                        .map(|p| p.offset);
                    if let Some(seg) = seg_start {
                        let from = seg.max(o.saturating_sub(self.tail_max));
                        if from < o {
                            self.ret.request(from, o - from);
                        }
                    }
                    if self.ret.request(o, l) {
                        self.dyn_want = Some((o, l));
                    } else {
                        self.warn(format!("dynamic section at 0x{o:x} not retained"));
                    }
                }
            }
            if let Step::Ready = self.step_of(self.dyn_want) {
                progress = true;
                let (o, l) = self.dyn_want.take().unwrap_or_default();
                match self.ret.get(o, l) {
                    Some(b) => {
                        let mut d = parse_dynamic(&b, is64);
                        self.strtab_vaddr = d.strtab_off;
                        d.strtab_off = d.strtab_off.and_then(|v| self.strtab_offset(v));
                        self.request_strings(&d);
                        self.dynamic = Some(d);
                    }
                    None => self.warn(format!(
                        "dynamic section at 0x{o:x} unavailable (file truncated?)"
                    )),
                }
            }
            if let Step::Ready = self.step_of(self.shdr_want) {
                progress = true;
                let (o, l) = self.shdr_want.take().unwrap_or_default();
                match self.ret.get(o, l) {
                    Some(b) => {
                        let b = b.into_owned();
                        let v: Vec<Shdr> = b
                            .chunks_exact(shentsize as usize)
                            .map(|s| parse_shdr(s, is64))
                            .collect();
                        match usize::try_from(shstrndx).ok().and_then(|i| v.get(i)) {
                            Some(s) if s.sh_type != SHT_NOBITS => {
                                let l = s.size.min(MAX_SHSTRTAB_BYTES);
                                if self.ret.request_anywhere(s.offset, l) {
                                    self.shstr_want = Some((s.offset, l));
                                } else {
                                    self.warn(format!(
                                        "section name table at 0x{:x} not retained",
                                        s.offset
                                    ));
                                }
                            }
                            _ => self.warn(format!("invalid section name table index {shstrndx}")),
                        }
                        self.request_dynstr_section(&v);
                        self.shdrs = Some(v);
                    }
                    None => self.warn(format!(
                        "section header table at 0x{o:x} unavailable (file truncated?)"
                    )),
                }
            }
            if !progress {
                break;
            }
        }
    }

    /// The string table the SHT_DYNAMIC section links to, captured whole when the stream
    /// has not reached it yet: section headers read before .dynstr and .dynamic (both far
    /// beyond the head) are the only early word on where the strings are.
    fn request_dynstr_section(&mut self, shdrs: &[Shdr]) {
        if self.dynamic.is_some() {
            return;
        }
        let Some(strtab) = shdrs
            .iter()
            .find(|s| s.sh_type == SHT_DYNAMIC)
            .and_then(|d| shdrs.get(d.link as usize))
            .filter(|s| s.sh_type == SHT_STRTAB && s.size > 0)
        else {
            return;
        };
        if strtab.offset >= self.ret.pos {
            self.ret
                .request(strtab.offset, strtab.size.min(MAX_DYNSTR_BYTES));
        }
    }

    fn strtab_offset(&self, vaddr: u64) -> Option<u64> {
        self.phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| p.vaddr <= vaddr && vaddr < p.vaddr.saturating_add(p.filesz))
            .map(|p| p.offset + (vaddr - p.vaddr))
    }

    fn request_strings(&mut self, d: &Dynamic) {
        let Some(base) = d.strtab_off else { return };
        let offs: Vec<u64> = d
            .needed
            .iter()
            .chain(d.soname.iter())
            .chain(d.rpath.iter())
            .chain(d.runpath.iter())
            .copied()
            .take(MAX_DYN_STRINGS)
            .collect();
        for so in offs {
            if so >= d.strsz {
                continue; // reported when read
            }
            let len = (d.strsz - so).min(MAX_STRING);
            if !self.ret.request(base.saturating_add(so), len) {
                self.warn(format!(
                    "dynamic string table at 0x{base:x} was not retained (beyond the head buffer)"
                ));
            }
        }
    }

    fn string(&mut self, d: &Dynamic, so: u64) -> Option<String> {
        let base = d.strtab_off?;
        if so >= d.strsz {
            self.warn(format!(
                "dynamic string offset {so} outside the string table"
            ));
            return None;
        }
        let len = (d.strsz - so).min(MAX_STRING);
        let mut unterminated = false;
        let s = self.ret.get(base.saturating_add(so), len).map(|b| {
            let end = b.iter().position(|&c| c == 0);
            unterminated = end.is_none();
            String::from_utf8_lossy(&b[..end.unwrap_or(b.len())]).into_owned()
        });
        if unterminated {
            self.warn(format!("unterminated dynamic string at offset {so}"));
        }
        if s.is_none() {
            self.warn(format!("dynamic string at offset {so} unavailable"));
        }
        s
    }
}

pub(super) fn scan<R: Read>(
    mut reader: R,
    size: u64,
    opts: &ScanOptions,
) -> Result<ElfFacts, ElfError> {
    let mut s = Scan::new(opts, None, size);
    // Payloads pass only once: capture those kernel counting needs on the way.
    s.fat.stream_probe = Some(StreamProbe::default());
    let mut buf = vec![0u8; CHUNK];
    loop {
        let remaining = size.saturating_sub(s.ret.pos);
        if remaining == 0 {
            break;
        }
        let want = (CHUNK as u64).min(remaining) as usize;
        let mut n = 0;
        while n < want {
            match reader.read(&mut buf[n..want]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ElfError::Io(e)),
            }
        }
        if n == 0 {
            break;
        }
        let base = s.ret.pos;
        s.fat.feed(base, &buf[..n]);
        // Feed the retained-bytes side in pieces that end where a wanted range ends, so
        // what it reveals (dynamic section → string offsets) can still be captured from the
        // rest of this chunk (patchelf puts .dynstr right behind a relocated .dynamic).
        let mut from = 0usize;
        while from < n {
            let at = base + from as u64;
            let cut = s
                .pending_ends()
                .filter(|&e| e > at && e < base + n as u64)
                .min()
                .map_or(n, |e| (e - base) as usize);
            s.ret.feed(at, &buf[from..cut]);
            from = cut;
            if s.hdr.is_none() {
                let head = s.ret.head.clone();
                if head.len() >= 64 || n < want {
                    s.parse_header(&head, size)?;
                }
            }
            s.advance();
        }
        if n < want {
            break;
        }
    }
    let eof = s.ret.pos;
    if s.hdr.is_none() {
        let head = s.ret.head.clone();
        s.parse_header(&head, size)?;
    }
    if eof < size {
        s.warn(format!("file truncated: {eof} of {size} bytes read"));
    }
    s.eof = true;
    s.advance();
    s.fat.finish(eof);
    Ok(s.finish())
}
