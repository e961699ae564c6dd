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

fn parse_phdr(p: &[u8], is64: bool) -> Phdr {
    if is64 {
        Phdr {
            p_type: rd(p, 0, 4) as u32,
            offset: rd(p, 8, 8),
            vaddr: rd(p, 16, 8),
            filesz: rd(p, 32, 8),
        }
    } else {
        Phdr {
            p_type: rd(p, 0, 4) as u32,
            offset: rd(p, 4, 4),
            vaddr: rd(p, 8, 4),
            filesz: rd(p, 16, 4),
        }
    }
}

fn parse_shdr(s: &[u8], is64: bool) -> Shdr {
    if is64 {
        Shdr {
            name: rd(s, 0, 4) as u32,
            sh_type: rd(s, 4, 4) as u32,
            flags: rd(s, 8, 8),
            offset: rd(s, 24, 8),
            size: rd(s, 32, 8),
            link: rd(s, 40, 4) as u32,
        }
    } else {
        Shdr {
            name: rd(s, 0, 4) as u32,
            sh_type: rd(s, 4, 4) as u32,
            flags: rd(s, 8, 4),
            offset: rd(s, 16, 4),
            size: rd(s, 20, 4),
            link: rd(s, 24, 4) as u32,
        }
    }
}

fn parse_dynamic(b: &[u8], is64: bool) -> Dynamic {
    let w = if is64 { 8 } else { 4 };
    let mut d = Dynamic::default();
    let mut strtab_vaddr = None;
    for e in b.chunks_exact(2 * w) {
        let tag = rd(e, 0, w);
        let val = rd(e, w, w);
        match tag {
            DT_NULL => break,
            DT_NEEDED => d.needed.push(val),
            DT_SONAME => d.soname = Some(val),
            DT_RPATH => d.rpath.push(val),
            DT_RUNPATH => d.runpath.push(val),
            DT_STRTAB => strtab_vaddr = Some(val),
            DT_STRSZ => d.strsz = val,
            _ => {}
        }
    }
    // A virtual address: mapped to a file offset by the caller (needs the program headers).
    d.strtab_off = strtab_vaddr;
    d
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

impl Scan<'_> {
    /// The section name table, when it was kept.
    pub(super) fn section_names(&self) -> Option<Vec<u8>> {
        self.shstr_want
            .and_then(|(o, l)| self.ret.get(o, l))
            .map(Cow::into_owned)
    }

    pub(super) fn finish(mut self) -> ElfFacts {
        let Some(h) = self.hdr.take() else {
            // parse_header succeeded before finish() is called
            return ElfFacts {
                class: 0,
                machine: String::new(),
                elf_type: String::new(),
                soname: None,
                needed: Vec::new(),
                rpath: Vec::new(),
                runpath: Vec::new(),
                cudart_version: None,
                static_cudart_version: None,
                fatbin: None,
                has_kernels: None,
                loose_cubins: Vec::new(),
                loose_ptx: Vec::new(),
                warnings: self.warnings,
            };
        };
        // Dynamic strings.
        let mut needed = Vec::new();
        let mut soname = None;
        let mut rpath = Vec::new();
        let mut runpath = Vec::new();
        if let Some(d) = self.dynamic.take() {
            if d.strtab_off.is_none() && !(d.needed.is_empty() && d.soname.is_none()) {
                let w = match self.strtab_vaddr {
                    Some(v) => format!("DT_STRTAB 0x{v:x} outside every PT_LOAD segment"),
                    None => "DT_STRTAB missing".into(),
                };
                self.warn(w);
            }
            for &o in &d.needed.clone() {
                if let Some(x) = self.string(&d, o) {
                    needed.push(x);
                }
            }
            if let Some(o) = d.soname {
                soname = self.string(&d, o);
            }
            let split = |v: String| -> Vec<String> {
                v.split(':')
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect()
            };
            for &o in &d.rpath.clone() {
                if let Some(x) = self.string(&d, o) {
                    rpath.extend(split(x));
                }
            }
            for &o in &d.runpath.clone() {
                if let Some(x) = self.string(&d, o) {
                    runpath.extend(split(x));
                }
            }
        }

        // A CUDA runtime's version, from its code (the soname only names the major).
        // A CUDA runtime exports cudaRuntimeGetVersion; a binary built with nvcc's default
        // `-cudart static` carries its own copy, named only in `.symtab` (absent once stripped).
        let (cudart_version, static_cudart_version) = match (&soname, &self.shdrs) {
            (Some(so), Some(shdrs)) if so.starts_with("libcudart") && h.is64 => {
                (self.cudart_version(h.machine, shdrs, SHT_DYNSYM), None)
            }
            (_, Some(shdrs)) if h.is64 => (None, self.cudart_version(h.machine, shdrs, SHT_SYMTAB)),
            _ => (None, None),
        };

        // Sections and fatbins.
        let mut warnings = std::mem::take(&mut self.fat.warnings);
        let mut sections: Vec<FatbinSection> = Vec::new();
        let shdrs = self.shdrs.take();
        let names = self.section_names();
        match (&shdrs, &names) {
            (Some(shdrs), Some(names)) => {
                for sh in shdrs {
                    if sh.sh_type == SHT_NOBITS || sh.size == 0 {
                        continue;
                    }
                    let name = cstr(names, sh.name as usize);
                    let lenient = is_fatbin_section_name(&name);
                    let searched =
                        may_hold_containers(sh, &name) && self.fat_candidate_in(sh.offset, sh.size);
                    if !(lenient || searched) {
                        continue;
                    }
                    let cs = resolve_section(
                        &self.fat,
                        &name,
                        sh.offset,
                        sh.size,
                        lenient,
                        &mut warnings,
                    );
                    if lenient || !cs.is_empty() {
                        sections.push(FatbinSection {
                            name,
                            offset: sh.offset,
                            size: sh.size,
                            containers: cs,
                        });
                    }
                }
            }
            _ => {
                if shdrs.is_some() {
                    warnings.push("section names unavailable".into());
                } else if h.shoff != 0 {
                    warnings.push("section headers unavailable".into());
                }
                // Without sections, report strictly valid containers anywhere.
                let cs = resolve_section(&self.fat, "?", 0, self.ret.pos, false, &mut warnings);
                if !cs.is_empty() {
                    warnings.push(
                        "fatbin containers found outside known sections; not counted as loadable"
                            .into(),
                    );
                    sections.push(FatbinSection {
                        name: "?".into(),
                        offset: 0,
                        size: self.ret.pos,
                        containers: cs,
                    });
                }
            }
        }
        sections.sort_by_key(|s| s.offset);
        let (loose_cubins, loose_ptx) = match (&shdrs, &names) {
            (Some(shdrs), Some(names)) => {
                let cubins = &self.fat.loose_cubins;
                let ptx = &self.fat.ptx.found;
                (
                    Self::outside_containers(shdrs, names, &sections, cubins, CUBIN_HEADER as u64)
                        .into_iter()
                        .map(|(section, offset, target)| LooseCubin {
                            section,
                            offset,
                            target,
                        })
                        .collect(),
                    Self::outside_containers(shdrs, names, &sections, ptx, 1)
                        .into_iter()
                        .map(|(section, offset, header)| LoosePtx {
                            section,
                            offset,
                            header,
                        })
                        .collect(),
                )
            }
            _ => (Vec::new(), Vec::new()),
        };
        for w in warnings {
            self.warn(w);
        }
        let mut facts = ElfFacts {
            class: if h.is64 { 64 } else { 32 },
            machine: machine_name(h.machine),
            elf_type: type_name(h.e_type),
            soname,
            needed,
            rpath,
            runpath,
            cudart_version,
            static_cudart_version,
            fatbin: if sections.is_empty() {
                None
            } else {
                Some(FatbinSummary { sections })
            },
            has_kernels: None,
            loose_cubins,
            loose_ptx,
            warnings: self.warnings,
        };
        if let (Some(p), Some(_)) = (&self.fat.stream_probe, &facts.fatbin) {
            facts.has_kernels = p.probe.verdict(facts.judged_entries());
        }
        facts
    }

    /// What `cudaRuntimeGetVersion` reports (see [`cudart`]), from the dynamic symbol table
    /// and the code it points at, when both were kept (a runtime is far smaller than the head).
    /// What `cudaRuntimeGetVersion`, found in the symbol table of type `table` (SHT_DYNSYM or
    /// SHT_SYMTAB), reports; None when the table, the symbol or its code was not kept.
    fn cudart_version(&self, machine: u16, shdrs: &[Shdr], table: u32) -> Option<u32> {
        let dynsym = shdrs.iter().find(|s| s.sh_type == table)?;
        let strtab = shdrs.get(dynsym.link as usize)?;
        if dynsym.size > MAX_DYNSYM_BYTES || strtab.size > MAX_DYNSTR_BYTES {
            return None;
        }
        let syms = self.ret.get(dynsym.offset, dynsym.size)?;
        let strs = self.ret.get(strtab.offset, strtab.size)?;
        let (syms, strs) = (&syms[..], &strs[..]);
        let (value, size) = syms.chunks_exact(24).find_map(|e| {
            let name = strs.get(rd(e, 0, 4) as usize..)?;
            let shndx = rd(e, 6, 2);
            (name.starts_with(b"cudaRuntimeGetVersion\0") && shndx != 0)
                .then(|| (rd(e, 8, 8), rd(e, 16, 8)))
        })?;
        cudart::runtime_version(machine, value, size, |vaddr, len| {
            let off = self.vaddr_offset(vaddr, len as u64)?;
            self.ret.get(off, len as u64)
        })
    }

    /// The file offset of `[vaddr, vaddr+len)` when one PT_LOAD segment maps all of it.
    fn vaddr_offset(&self, vaddr: u64, len: u64) -> Option<u64> {
        self.phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| {
                let (end, seg_end) = (vaddr.checked_add(len), p.vaddr.checked_add(p.filesz));
                p.vaddr <= vaddr && matches!((end, seg_end), (Some(e), Some(s)) if e <= s)
            })
            .map(|p| p.offset + (vaddr - p.vaddr))
    }

    /// The device code found loose (`found`: offset and what it is, sorted) in data
    /// sections (where containers may be), outside every reported container, as (section,
    /// offset, what); `len` bytes from its offset must lie in the section.
    fn outside_containers<T: Copy>(
        shdrs: &[Shdr],
        names: &[u8],
        sections: &[FatbinSection],
        found: &[(u64, T)],
        len: u64,
    ) -> Vec<(String, u64, T)> {
        let inside_container = |at: u64| {
            sections
                .iter()
                .flat_map(|s| s.containers.iter())
                .any(|c| c.offset <= at && at < c.offset.saturating_add(c.size))
        };
        let mut out = Vec::new();
        for sh in shdrs {
            if sh.sh_type == SHT_NOBITS || sh.size == 0 {
                continue;
            }
            let name = cstr(names, sh.name as usize);
            if !may_hold_containers(sh, &name) {
                continue;
            }
            let end = sh.offset.saturating_add(sh.size);
            let lo = found.partition_point(|c| c.0 < sh.offset);
            for &(at, what) in found[lo..].iter().take_while(|c| c.0 < end) {
                if at.saturating_add(len) <= end && !inside_container(at) {
                    out.push((name.clone(), at, what));
                }
            }
        }
        out.sort_by_key(|c| c.1);
        out
    }

    fn fat_candidate_in(&self, off: u64, size: u64) -> bool {
        let i = self.fat.done.partition_point(|c| c.start < off);
        self.fat
            .done
            .get(i)
            .is_some_and(|c| c.start < off.saturating_add(size))
    }
}

/// Sections whose content the compiler, linker or ABI defines: unwind tables and their
/// index, exception tables, the GOT, relocated read-only objects (a fatbin image holds no
/// pointers, so it never lands there), thread-local templates, and nvcc's own fatbin
/// wrappers and module ids (they point at the fatbins, never hold one).
const DEFINED_LAYOUT: &[&str] = &[
    ".eh_frame",
    ".eh_frame_hdr",
    ".gcc_except_table",
    ".got",
    ".got.plt",
    ".data.rel.ro",
    ".data.rel.ro.local",
    ".tdata",
    ".nvFatBinSegment",
    "__nv_module_id",
];

/// Where a library can keep a fatbin it hands to `cuModuleLoadData` itself: allocated,
/// non-executable data sections (`.data`, `.rodata`, `.ldata`, `.lrodata`, cuBLASLt's
/// `.cask_resource`), not those whose layout is defined by the toolchain. Containers are
/// reported only there and in the fatbin sections, by the streaming and the seekable scan
/// alike (the seekable one searches nothing else).
pub(super) fn may_hold_containers(sh: &Shdr, name: &str) -> bool {
    sh.sh_type == SHT_PROGBITS
        && sh.flags & SHF_ALLOC != 0
        && sh.flags & SHF_EXECINSTR == 0
        && !DEFINED_LAYOUT.contains(&name)
}

pub(super) fn cstr(b: &[u8], o: usize) -> String {
    let Some(s) = b.get(o..) else {
        return String::new();
    };
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}
