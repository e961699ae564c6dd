//! CUDA fatbin containers and entries (see `shared/notes/fatbin-format.md`).
//!
//! The parser is a forward-only state machine: [`FatbinScanner`] is fed the bytes of a
//! file in order, starts a [`Candidate`] parser at every 8-aligned occurrence of the
//! container magic, lets each candidate collect only the container/entry *headers* it
//! needs and skips payloads without buffering them. Which candidates are real containers
//! is decided afterwards ([`resolve_section`]), once the section boundaries are known.

use super::kernels::StreamProbe;
use super::ptx_text::PtxFinder;
use crate::arch::{ArchTarget, ArchVariant, CodeKind};
use serde::{Deserialize, Serialize};

/// Container magic (`50 ED 55 BA` on disk).
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// Size of a container header as produced by every toolchain seen.
const CONTAINER_HEADER: u64 = 16;
/// Fixed part of an entry header.
const ENTRY_FIXED: usize = 64;
/// Largest entry header we are willing to buffer (concat tables included).
const MAX_ENTRY_HEADER: u64 = 64 * 1024;
/// Most concurrently open candidate parsers.
const MAX_ACTIVE: usize = 64;
/// Most candidates (valid or not) remembered per file.
const MAX_CANDIDATES: usize = 200_000;
/// Most entries remembered per file.
const MAX_ENTRIES: usize = 500_000;
/// How far past a container's end we look for non-zero padding.
const GAP_WATCH: u64 = 64 * 1024;

pub const FLAG_64BIT: u64 = 0x1;
pub const FLAG_COMPRESS_OLD: u64 = 0x1000;
pub const FLAG_LZ4: u64 = 0x2000;
pub const FLAG_ZSTD: u64 = 0x8000;
pub const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
pub const FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;

pub const KIND_PTX: u16 = 1;
pub const KIND_ELF: u16 = 2;
pub const KIND_LTO: u16 = 8;
pub const KIND_CONCAT: u16 = 0x100;

/// The fatbin-bearing sections of one host file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FatbinSummary {
    /// `.nv_fatbin`, `__nv_relfatbin` and other sections holding strictly-validated containers,
    /// in file order.
    pub sections: Vec<FatbinSection>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FatbinSection {
    pub name: String,
    /// File offset of the section.
    pub offset: u64,
    pub size: u64,
    pub containers: Vec<FatbinContainer>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FatbinContainer {
    /// File offset of the container header.
    pub offset: u64,
    /// Header + entries, as the header claims.
    pub size: u64,
    pub entries: Vec<FatbinEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FatbinEntry {
    /// kind Sass/Ptx/Lto, sm number, a/f variant from the header flags.
    pub target: ArchTarget,
    /// Header major.minor: PTX ISA version for PTX, (1, EI_ABIVERSION) for cubins.
    pub code_version: (u16, u16),
    /// "lz4" | "zstd" | "unknown"; for group members, the group's codec.
    pub compression: Option<String>,
    /// Member of a kind-0x100 concatenated group.
    pub in_group: bool,
    /// File offset of the entry header (for group members: of the group's header).
    pub offset: u64,
    /// Entry header length (for group members: the derived member header length).
    pub header_size: u64,
    /// Payload region size (for group members: the member's length in the decompressed blob).
    pub payload_size: u64,
    /// Exact compressed length (0 = not compressed; group members: the group's).
    pub compressed_size: u64,
    /// Exact uncompressed length (0 = not compressed; group members: the group's).
    pub uncompressed_size: u64,
    /// Raw header flags.
    pub flags: u64,
    /// For group members: offset of the member inside the decompressed group blob.
    pub member_offset: Option<u64>,
    /// File offset of the stored (possibly compressed) payload; for group members, of the
    /// group's payload.
    pub payload_offset: u64,
}

impl FatbinEntry {
    pub fn is_compressed(&self) -> bool {
        self.compression.is_some()
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    match b.get(o..o + 2) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    match b.get(o..o + 4) {
        Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    match b.get(o..o + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        }
        None => 0,
    }
}
fn align8(x: u64) -> u64 {
    x.saturating_add(7) & !7
}

fn codec(flags: u64, compressed_size: u64) -> Option<String> {
    if flags & FLAG_ZSTD != 0 {
        Some("zstd".into())
    } else if flags & FLAG_LZ4 != 0 {
        Some("lz4".into())
    } else if flags & FLAG_COMPRESS_OLD != 0 || compressed_size != 0 {
        Some("unknown".into())
    } else {
        None
    }
}

fn variant(flags: u64) -> ArchVariant {
    if flags & FLAG_ARCH_SPECIFIC != 0 {
        ArchVariant::ArchSpecific
    } else if flags & FLAG_FAMILY_SPECIFIC != 0 {
        ArchVariant::FamilySpecific
    } else {
        ArchVariant::Generic
    }
}

fn code_kind(kind: u16) -> Option<CodeKind> {
    match kind {
        KIND_PTX => Some(CodeKind::Ptx),
        KIND_ELF => Some(CodeKind::Sass),
        KIND_LTO => Some(CodeKind::Lto),
        _ => None,
    }
}

fn plausible_arch(arch: u32) -> bool {
    (10..=999).contains(&arch)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    ContainerHeader,
    EntryFixed,
    EntryExt,
    Done,
}

/// One possible container, parsed as the stream passes over it.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub start: u64,
    /// start + header + fat size (valid once the header is read).
    pub end: u64,
    /// Set when the 16-byte header is not a container we understand.
    pub header_error: Option<String>,
    /// Deviations from the format; disqualify the candidate outside fatbin sections.
    pub issues: Vec<String>,
    /// Parsing stopped before the container end.
    pub dead: bool,
    pub entries: Vec<FatbinEntry>,
    state: State,
    want_at: u64,
    want_len: usize,
    buf: Vec<u8>,
    /// Entry fixed header while its extension is collected.
    entry_start: u64,
    entry_hsize: u64,
    entry_end: u64,
    /// Already reported by the scanner's `opened` list.
    opened_noted: bool,
    /// Entries already handed to the stream's kernel probe.
    probed: usize,
}

impl Candidate {
    fn new(start: u64) -> Self {
        Candidate {
            start,
            end: start,
            header_error: None,
            issues: Vec::new(),
            dead: false,
            entries: Vec::new(),
            state: State::ContainerHeader,
            want_at: start,
            want_len: CONTAINER_HEADER as usize,
            buf: Vec::with_capacity(CONTAINER_HEADER as usize),
            entry_start: 0,
            entry_hsize: 0,
            entry_end: 0,
            opened_noted: false,
            probed: 0,
        }
    }

    pub(crate) fn finished(&self) -> bool {
        self.state == State::Done
    }

    /// Complete, well-formed container with no deviation at all (notes §2.1, strict mode).
    pub(crate) fn strictly_valid(&self) -> bool {
        self.header_error.is_none()
            && !self.dead
            && self.issues.is_empty()
            && self.state == State::Done
            && !self.entries.is_empty()
    }

    fn kill(&mut self, why: String) {
        self.issues.push(why);
        self.dead = true;
        self.state = State::Done;
        self.buf = Vec::new();
    }

    fn want(&mut self, at: u64, len: usize, state: State) {
        self.want_at = at;
        self.want_len = len;
        self.buf.clear();
        self.state = state;
    }

    /// Feed the chunk of the file that starts at `base`. `entry_budget` is decremented for
    /// each entry stored.
    fn feed(&mut self, base: u64, chunk: &[u8], entry_budget: &mut usize) {
        let chunk_end = base + chunk.len() as u64;
        while self.state != State::Done {
            let next = self.want_at + self.buf.len() as u64;
            if next >= chunk_end {
                return;
            }
            if next < base {
                // Registered too late to see these bytes; cannot happen with the scanner's
                // ordering, but never index out of range.
                self.kill(format!("internal: missed bytes at 0x{next:x}"));
                return;
            }
            let from = (next - base) as usize;
            let need = self.want_len - self.buf.len();
            let take = need.min(chunk.len() - from);
            self.buf.extend_from_slice(&chunk[from..from + take]);
            if self.buf.len() == self.want_len {
                self.step(entry_budget);
            }
        }
    }

    fn step(&mut self, entry_budget: &mut usize) {
        match self.state {
            State::ContainerHeader => self.on_container_header(),
            State::EntryFixed => self.on_entry_fixed(entry_budget),
            State::EntryExt => {
                let buf = std::mem::take(&mut self.buf);
                self.finish_entry(&buf, entry_budget);
            }
            State::Done => {}
        }
    }

    fn on_container_header(&mut self) {
        let b = &self.buf;
        let version = u16_at(b, 4);
        let hsize = u64::from(u16_at(b, 6));
        let fat = u64_at(b, 8);
        if version != 1 {
            self.header_error = Some(format!("unsupported container version {version}"));
            self.kill("bad header".into());
            return;
        }
        if !(CONTAINER_HEADER..=4096).contains(&hsize) {
            self.header_error = Some(format!("container header size {hsize}"));
            self.kill("bad header".into());
            return;
        }
        let end = self
            .start
            .checked_add(hsize)
            .and_then(|x| x.checked_add(fat));
        let Some(end) = end else {
            self.header_error = Some(format!("container size 0x{fat:x} overflows"));
            self.kill("bad header".into());
            return;
        };
        if hsize != CONTAINER_HEADER {
            self.issues
                .push(format!("container header size {hsize} (expected 16)"));
        }
        if !fat.is_multiple_of(8) {
            self.issues
                .push(format!("container size 0x{fat:x} not a multiple of 8"));
        }
        self.end = end;
        self.next_entry(self.start + hsize);
    }

    fn next_entry(&mut self, at: u64) {
        if at == self.end {
            self.state = State::Done;
            self.buf = Vec::new();
            return;
        }
        if at.saturating_add(ENTRY_FIXED as u64) > self.end {
            self.issues.push(format!(
                "{} trailing bytes after the last entry",
                self.end.saturating_sub(at)
            ));
            self.state = State::Done;
            self.buf = Vec::new();
            return;
        }
        self.entry_start = at;
        self.want(at, ENTRY_FIXED, State::EntryFixed);
    }

    fn on_entry_fixed(&mut self, entry_budget: &mut usize) {
        let b = &self.buf;
        let at = self.entry_start;
        let hver = u16_at(b, 2);
        let hsize = u64::from(u32_at(b, 4));
        let psize = u64_at(b, 8);
        let csize = u64::from(u32_at(b, 0x10));
        if hver != 0x0101 {
            self.issues.push(format!(
                "entry at 0x{at:x}: header version 0x{hver:04x} (expected 0x0101)"
            ));
        }
        if hsize < ENTRY_FIXED as u64 {
            self.kill(format!("entry at 0x{at:x}: header size {hsize} < 64"));
            return;
        }
        if hsize > MAX_ENTRY_HEADER {
            self.kill(format!("entry at 0x{at:x}: header size {hsize} too large"));
            return;
        }
        if !hsize.is_multiple_of(8) {
            self.issues.push(format!(
                "entry at 0x{at:x}: header size {hsize} not a multiple of 8"
            ));
        }
        let end = at.checked_add(hsize).and_then(|x| x.checked_add(psize));
        match end {
            Some(e) if e <= self.end => self.entry_end = e,
            _ => {
                self.kill(format!("entry at 0x{at:x}: entry size exceeds container"));
                return;
            }
        }
        if !psize.is_multiple_of(8) {
            self.issues.push(format!(
                "entry at 0x{at:x}: payload size 0x{psize:x} not a multiple of 8"
            ));
        }
        if csize > psize {
            self.issues.push(format!(
                "entry at 0x{at:x}: compressed size {csize} exceeds payload region {psize}"
            ));
        }
        self.entry_hsize = hsize;
        if hsize > ENTRY_FIXED as u64 {
            // Keep the fixed part; collect the extension right behind it.
            let fixed = std::mem::take(&mut self.buf);
            self.want_at = at;
            self.want_len = hsize as usize;
            self.buf = fixed;
            self.buf.reserve(hsize as usize - ENTRY_FIXED);
            self.state = State::EntryExt;
        } else {
            let buf = std::mem::take(&mut self.buf);
            self.finish_entry(&buf, entry_budget);
        }
    }

    fn push_entry(&mut self, e: FatbinEntry, entry_budget: &mut usize) {
        if *entry_budget == 0 {
            if !self.dead {
                self.kill("too many fatbin entries in this file; rest not recorded".into());
            }
            return;
        }
        *entry_budget -= 1;
        self.entries.push(e);
    }

    /// `h` holds the whole entry header (`entry_hsize` bytes).
    fn finish_entry(&mut self, h: &[u8], entry_budget: &mut usize) {
        let at = self.entry_start;
        let kind = u16_at(h, 0);
        let psize = u64_at(h, 8);
        let csize = u64::from(u32_at(h, 0x10));
        let minor = u16_at(h, 0x18);
        let major = u16_at(h, 0x1A);
        let arch = u32_at(h, 0x1C);
        let flags = u64_at(h, 0x28);
        let usize_ = u64_at(h, 0x38);
        let compression = codec(flags, csize);
        if let Some(ck) = code_kind(kind) {
            if !plausible_arch(arch) {
                self.issues
                    .push(format!("entry at 0x{at:x}: implausible arch {arch}"));
            }
            let e = FatbinEntry {
                target: ArchTarget::new(ck, arch, variant(flags)),
                code_version: (major, minor),
                compression,
                in_group: false,
                offset: at,
                header_size: self.entry_hsize,
                payload_size: psize,
                compressed_size: csize,
                uncompressed_size: usize_,
                flags,
                member_offset: None,
                payload_offset: at + self.entry_hsize,
            };
            self.push_entry(e, entry_budget);
        } else if kind == KIND_CONCAT {
            self.parse_group(h, compression, entry_budget);
        } else {
            self.issues.push(format!(
                "entry at 0x{at:x}: unknown entry kind 0x{kind:x} (arch {arch}) skipped"
            ));
        }
        let next = self.entry_end;
        if self.state != State::Done {
            self.next_entry(next);
        }
    }

    /// Kind 0x100 (notes §3.4): member table at the option-block offset.
    fn parse_group(&mut self, h: &[u8], compression: Option<String>, entry_budget: &mut usize) {
        let at = self.entry_start;
        let psize = u64_at(h, 8);
        let csize = u64::from(u32_at(h, 0x10));
        let usize_ = u64_at(h, 0x38);
        let flags = u64_at(h, 0x28);
        let opt = u32_at(h, 0x14) as usize;
        if opt < ENTRY_FIXED || opt.saturating_add(8) > h.len() {
            self.issues.push(format!(
                "concatenated group at 0x{at:x}: no member table (option offset 0x{opt:x})"
            ));
            return;
        }
        let count = u32_at(h, opt) as usize;
        let table = u32_at(h, opt + 4) as usize;
        let table_end = opt.saturating_add(table);
        if table < 8 || table_end > h.len() {
            self.issues.push(format!(
                "concatenated group at 0x{at:x}: member table size {table} exceeds header"
            ));
            return;
        }
        let mut p = opt + 8;
        let mut members = Vec::new();
        for i in 0..count {
            if p.saturating_add(ENTRY_FIXED) > table_end {
                self.issues.push(format!(
                    "concatenated group at 0x{at:x}: member {i} of {count} outside the member table"
                ));
                break;
            }
            let m = &h[p..table_end];
            let mkind = u16_at(m, 0);
            let mhver = u16_at(m, 2);
            let moff = u64::from(u32_at(m, 4));
            let mlen = u64_at(m, 8);
            let mminor = u16_at(m, 0x18);
            let mmajor = u16_at(m, 0x1A);
            let march = u32_at(m, 0x1C);
            let mopt = u64::from(u32_at(m, 0x14));
            let mident = u64::from(u32_at(m, 0x20));
            let midlen = u64::from(u32_at(m, 0x24));
            let mflags = u64_at(m, 0x28);
            // Derived member header length (notes §3.2/§3.4).
            let mut hl: u64 = ENTRY_FIXED as u64;
            if mopt != 0 {
                hl = hl.max(mopt + 8);
                if let Ok(o) = usize::try_from(mopt) {
                    if o.saturating_add(8) <= m.len() {
                        let doff = u64::from(u32_at(m, o));
                        let dsz = u64::from(u32_at(m, o + 4));
                        hl = hl.max(doff + dsz + 1);
                    }
                }
            }
            if mident != 0 {
                hl = hl.max(mident + midlen + 1);
            }
            let hl = align8(hl);
            if mhver != 0x0101 {
                self.issues.push(format!(
                    "concatenated group at 0x{at:x}: member {i} header version 0x{mhver:04x}"
                ));
            }
            if usize_ != 0 && moff.saturating_add(mlen) > usize_ {
                self.issues.push(format!(
                    "concatenated group at 0x{at:x}: member {i} extends past the group's data"
                ));
            }
            match code_kind(mkind) {
                Some(ck) => {
                    if !plausible_arch(march) {
                        self.issues.push(format!(
                            "concatenated group at 0x{at:x}: member {i} implausible arch {march}"
                        ));
                    }
                    members.push(FatbinEntry {
                        target: ArchTarget::new(ck, march, variant(mflags)),
                        code_version: (mmajor, mminor),
                        compression: compression.clone(),
                        in_group: true,
                        offset: at,
                        header_size: hl,
                        payload_size: mlen,
                        compressed_size: csize,
                        uncompressed_size: usize_,
                        flags: mflags,
                        member_offset: Some(moff),
                        payload_offset: at + self.entry_hsize,
                    })
                }
                None => self.issues.push(format!(
                    "concatenated group at 0x{at:x}: member {i} has unknown kind 0x{mkind:x} (arch {march}) skipped"
                )),
            }
            p = p.saturating_add(hl as usize);
        }
        if p != table_end {
            self.issues.push(format!(
                "concatenated group at 0x{at:x}: member headers ({} bytes) do not fill the member table ({table} bytes)",
                p.saturating_sub(opt)
            ));
        }
        if members.is_empty() {
            self.issues
                .push(format!("concatenated group at 0x{at:x}: no members"));
        }
        let _ = (psize, flags);
        for m in members {
            self.push_entry(m, entry_budget);
        }
    }

    /// The stream ended at `eof`.
    fn finish(&mut self, eof: u64) {
        if self.state != State::Done {
            let end = if self.end > self.start {
                self.end
            } else {
                self.start + CONTAINER_HEADER
            };
            if self.state == State::ContainerHeader {
                self.header_error = Some("truncated container header".into());
            }
            self.kill(format!(
                "truncated: container ends at 0x{end:x}, data ends at 0x{eof:x}"
            ));
        }
    }
}

/// Parses the container at `start` on its own, reading each header piece it asks for with
/// `read(offset, len)`: its end when it is strictly valid (what a data section's container
/// must be), else None.
pub(crate) fn probe_container(
    start: u64,
    mut read: impl FnMut(u64, usize) -> Option<Vec<u8>>,
) -> Option<u64> {
    let mut c = Candidate::new(start);
    let mut budget = MAX_ENTRIES;
    while !c.finished() {
        let at = c.want_at + c.buf.len() as u64;
        let piece = read(at, c.want_len - c.buf.len())?;
        if piece.is_empty() {
            return None;
        }
        c.feed(at, &piece, &mut budget);
    }
    c.strictly_valid().then_some(c.end)
}

/// Looks for non-zero bytes after a container's end.
#[derive(Debug, Clone)]
pub(crate) struct GapWatch {
    pub from: u64,
    pub upto: u64,
    pub first_nonzero: Option<u64>,
}

impl GapWatch {
    fn look(&mut self, base: u64, chunk: &[u8]) {
        if self.first_nonzero.is_some() {
            return;
        }
        let chunk_end = base + chunk.len() as u64;
        let lo = self.from.max(base);
        let hi = self.upto.min(chunk_end);
        if lo < hi {
            let s = &chunk[(lo - base) as usize..(hi - base) as usize];
            if let Some(i) = s.iter().position(|&b| b != 0) {
                self.first_nonzero = Some(lo + i as u64);
            }
        }
    }
}

/// Streaming detector for fatbin containers anywhere in a file.
#[derive(Debug, Default)]
pub(crate) struct FatbinScanner {
    active: Vec<Candidate>,
    pub done: Vec<Candidate>,
    watches: Vec<GapWatch>,
    pub gaps: Vec<GapWatch>,
    pub warnings: Vec<String>,
    entry_budget: usize,
    dropped: u64,
    /// Containers whose header was understood, not yet taken by [`Self::take_opened`].
    opened: Vec<(u64, u64)>,
    /// Set for a forward-only stream: payloads are captured for kernel counting as they
    /// pass (a seekable scan reads them afterwards instead).
    pub(crate) stream_probe: Option<StreamProbe>,
    /// ELF headers found where containers are searched for, still collecting their bytes.
    cubin_active: Vec<(u64, Vec<u8>)>,
    /// Cubins (EM_CUDA ELF images) outside any fatbin container, as (offset, target): CUPTI
    /// and nvperf keep them as plain byte arrays in `.rodata`. Sorted once finished.
    pub(crate) loose_cubins: Vec<(u64, ArchTarget)>,
    /// PTX module headers found where containers are searched for (unaligned, unlike
    /// containers and cubins: PTX is text).
    pub(crate) ptx: PtxFinder,
}

/// Length of an ELF64 header, all a loose cubin's target needs.
pub(crate) const CUBIN_HEADER: usize = 64;
/// Most loose cubins remembered per file.
const MAX_LOOSE_CUBINS: usize = 100_000;

/// The SASS target of a cubin header (notes §5.1): EM_CUDA, ELF64 little-endian; the SM
/// number from e_flags by EI_ABIVERSION (7: low byte, 8: bits 8-15), `a` from 0x800 / 0x08.
pub(crate) fn cubin_target(h: &[u8]) -> Option<ArchTarget> {
    if h.len() < CUBIN_HEADER || &h[0..4] != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    // EM_CUDA and a 64-byte ELF64 header (e_version holds the CUDA version, 118 = 11.8).
    if u16_at(h, 18) != 190 || u16_at(h, 52) != 64 {
        return None;
    }
    let flags = u32_at(h, 48);
    let (sm, a) = match h[8] {
        7 => (flags & 0xFF, flags & 0x800 != 0),
        8 => ((flags >> 8) & 0xFF, flags & 0x08 != 0),
        _ => return None,
    };
    // Arch-specific targets begin with sm_90a; older v1 cubins (CUPTI's sm_60) set 0x800
    // for something else.
    let a = a && sm >= 90;
    plausible_arch(sm).then(|| {
        let v = if a {
            ArchVariant::ArchSpecific
        } else {
            ArchVariant::Generic
        };
        ArchTarget::new(CodeKind::Sass, sm, v)
    })
}

/// Hands the entries `c` completed since the last call to the stream's kernel probe, one
/// stored payload at a time (a group's members together).
fn probe_new_entries(c: &mut Candidate, probe: &mut Option<StreamProbe>, base: u64, chunk: &[u8]) {
    let Some(p) = probe else {
        c.probed = c.entries.len();
        return;
    };
    let mut i = c.probed;
    while i < c.entries.len() {
        let at = c.entries[i].payload_offset;
        let mut j = i + 1;
        while j < c.entries.len() && c.entries[j].in_group && c.entries[j].payload_offset == at {
            j += 1;
        }
        let group: Vec<FatbinEntry> = c.entries[i..j]
            .iter()
            .filter(|e| p.probe.wants(e))
            .cloned()
            .collect();
        if !group.is_empty() {
            p.start(group, base, chunk);
        }
        i = j;
    }
    c.probed = c.entries.len();
}

/// Records `c` in `opened` the first time its header is known to be a container's.
fn note_opened(c: &mut Candidate, opened: &mut Vec<(u64, u64)>) {
    if !c.opened_noted && c.state != State::ContainerHeader && c.header_error.is_none() {
        c.opened_noted = true;
        opened.push((c.start, c.end));
    }
}

impl FatbinScanner {
    pub(crate) fn new() -> Self {
        FatbinScanner {
            entry_budget: MAX_ENTRIES,
            ..Default::default()
        }
    }

    /// Feed the bytes at file offset `base`. Chunks must be contiguous and in order.
    /// Magic words are found at 8-aligned offsets; a word straddling two chunks is missed, so
    /// callers must use chunk boundaries that are multiples of 8 (the last chunk excepted).
    pub(crate) fn feed(&mut self, base: u64, chunk: &[u8]) {
        self.feed_part(base, chunk, true);
    }

    /// [`feed`](Self::feed) for a reader that skips what nobody needs: chunks are in order
    /// but may leave gaps (never inside a range [`next_wanted`](Self::next_wanted) names),
    /// and containers are looked for only where `search` is set.
    pub(crate) fn feed_part(&mut self, base: u64, chunk: &[u8], search: bool) {
        // Gap watchers started by earlier chunks.
        for w in &mut self.watches {
            w.look(base, chunk);
        }
        self.settle_watches(base + chunk.len() as u64);

        // New candidates at 8-aligned magic words; each is fed from its own start, in order.
        let first = ((base + 7) & !7) - base;
        let mut off = first as usize;
        let mut new_at: Vec<usize> = Vec::new();
        let mut cubins_at: Vec<usize> = Vec::new();
        while search && off + 4 <= chunk.len() {
            if chunk[off..off + 4] == FATBIN_MAGIC.to_le_bytes() {
                new_at.push(off);
            } else if chunk[off..off + 4] == *b"\x7fELF" {
                cubins_at.push(off);
            }
            off += 8;
        }
        self.feed_cubins(base, chunk, &cubins_at);
        self.ptx.feed(base, chunk, search);
        if let Some(p) = &mut self.stream_probe {
            p.feed(base, chunk);
        }
        // Existing candidates see the whole chunk; those it completes make room.
        for c in &mut self.active {
            c.feed(base, chunk, &mut self.entry_budget);
            note_opened(c, &mut self.opened);
            probe_new_entries(c, &mut self.stream_probe, base, chunk);
        }
        self.retire(base, chunk);
        for o in new_at {
            if self.active.len() >= MAX_ACTIVE || self.done.len() >= MAX_CANDIDATES {
                self.dropped += 1;
                continue;
            }
            let mut c = Candidate::new(base + o as u64);
            c.feed(base, chunk, &mut self.entry_budget);
            note_opened(&mut c, &mut self.opened);
            probe_new_entries(&mut c, &mut self.stream_probe, base, chunk);
            if c.finished() {
                self.retire_one(c, base, chunk);
            } else {
                self.active.push(c);
            }
        }
        self.settle_watches(base + chunk.len() as u64);
    }

    /// The first byte at or after `from` that a container being parsed still needs, and how
    /// many bytes it needs from there (its next header piece; payloads are never needed).
    pub(crate) fn next_wanted(&self, from: u64) -> Option<(u64, u64)> {
        let cubins = self.cubin_active.iter().map(|(at, buf)| {
            let next = at + buf.len() as u64;
            (next.max(from), at + CUBIN_HEADER as u64)
        });
        let ptx = self.ptx.wanted().map(|(next, end)| (next.max(from), end));
        self.active
            .iter()
            .filter(|c| c.state != State::Done)
            .map(|c| {
                let next = c.want_at + c.buf.len() as u64;
                let end = c.want_at + c.want_len as u64;
                (next.max(from), end)
            })
            .chain(cubins)
            .chain(ptx)
            .filter(|&(at, end)| at < end)
            .min()
            .map(|(at, end)| (at, end - at))
    }

    /// Completes the ELF headers being collected with `chunk` (at `base`) and starts those at
    /// `new` (offsets into `chunk`); a complete one that is a cubin's is recorded.
    fn feed_cubins(&mut self, base: u64, chunk: &[u8], new: &[usize]) {
        for &o in new {
            if self.cubin_active.len() < MAX_ACTIVE && self.loose_cubins.len() < MAX_LOOSE_CUBINS {
                self.cubin_active
                    .push((base + o as u64, Vec::with_capacity(CUBIN_HEADER)));
            }
        }
        let end = base + chunk.len() as u64;
        let mut i = 0;
        while i < self.cubin_active.len() {
            let (at, buf) = &mut self.cubin_active[i];
            let next = *at + buf.len() as u64;
            if next >= base && next < end {
                let take = (CUBIN_HEADER - buf.len()).min((end - next) as usize);
                let lo = (next - base) as usize;
                buf.extend_from_slice(&chunk[lo..lo + take]);
            }
            if buf.len() == CUBIN_HEADER || next < base {
                let (at, buf) = self.cubin_active.swap_remove(i);
                if let Some(t) = cubin_target(&buf) {
                    self.loose_cubins.push((at, t));
                }
            } else {
                i += 1;
            }
        }
    }

    /// Containers whose header was read and understood since the last call, as (start, end).
    pub(crate) fn take_opened(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.opened)
    }

    fn settle_watches(&mut self, chunk_end: u64) {
        let mut i = 0;
        while i < self.watches.len() {
            let w = &self.watches[i];
            if w.first_nonzero.is_some() || w.upto <= chunk_end {
                let w = self.watches.swap_remove(i);
                self.gaps.push(w);
            } else {
                i += 1;
            }
        }
    }

    /// Moves finished candidates out; `chunk` (at `base`) is the data just fed, which
    /// new gap watchers inspect right away.
    fn retire(&mut self, base: u64, chunk: &[u8]) {
        let mut i = 0;
        while i < self.active.len() {
            if self.active[i].finished() {
                let c = self.active.swap_remove(i);
                self.retire_one(c, base, chunk);
            } else {
                i += 1;
            }
        }
        self.settle_watches(base + chunk.len() as u64);
    }

    /// Retires one finished candidate right away, freeing its slot: a chunk may hold far
    /// more small containers than [`MAX_ACTIVE`] (libcublasLt 12.8 has over a hundred in
    /// 64 KiB), which must not crowd each other out.
    fn retire_one(&mut self, c: Candidate, base: u64, chunk: &[u8]) {
        if c.header_error.is_none() && !c.dead && self.watches.len() < MAX_ACTIVE {
            let mut w = GapWatch {
                from: c.end,
                upto: c.end.saturating_add(GAP_WATCH),
                first_nonzero: None,
            };
            w.look(base, chunk);
            self.watches.push(w);
        }
        if self.done.len() < MAX_CANDIDATES {
            self.done.push(c);
        } else {
            self.dropped += 1;
        }
        self.settle_watches(base + chunk.len() as u64);
    }

    /// End of data at `eof`.
    pub(crate) fn finish(&mut self, eof: u64) {
        for c in &mut self.active {
            c.finish(eof);
        }
        if let Some(p) = &mut self.stream_probe {
            p.finish();
        }
        self.cubin_active.clear();
        self.loose_cubins.sort_by_key(|c| c.0);
        self.ptx.finish();
        self.retire(eof, &[]);
        // Remaining watchers: the file ended (reached eof without non-zero bytes).
        for mut w in std::mem::take(&mut self.watches) {
            w.upto = w.upto.min(eof);
            self.gaps.push(w);
        }
        if self.dropped > 0 {
            self.warnings.push(format!(
                "{} possible fatbin containers not examined (too many candidates)",
                self.dropped
            ));
        }
        self.done.sort_by_key(|c| c.start);
        self.gaps.sort_by_key(|g| g.from);
    }
}

/// Whether a section name is one the CUDA runtime / cuobjdump reads fatbins from.
pub fn is_fatbin_section_name(name: &str) -> bool {
    name == ".nv_fatbin" || name == "__nv_relfatbin"
}

/// Picks the containers that belong to the section `[off, off+size)`. `lenient` sections
/// (the fatbin sections) report problems as warnings; other sections only accept strictly
/// valid containers. Candidates nested inside an accepted container are ignored.
pub(crate) fn resolve_section(
    scanner: &FatbinScanner,
    name: &str,
    off: u64,
    size: u64,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Vec<FatbinContainer> {
    let end = off.saturating_add(size);
    let mut out = Vec::new();
    let mut covered_to = off; // end of the last accepted container
    let lo = scanner.done.partition_point(|c| c.start < off);
    for c in scanner.done[lo..].iter().take_while(|c| c.start < end) {
        if c.start < covered_to {
            continue; // inside an accepted container's payload
        }
        let w = |msg: &str| format!("fatbin container at 0x{:x} in {name}: {msg}", c.start);
        if lenient {
            if let Some(e) = &c.header_error {
                warnings.push(w(e));
                continue;
            }
            if c.start > covered_to {
                note_gap(scanner, name, covered_to, c.start, out.is_empty(), warnings);
            }
            for i in &c.issues {
                warnings.push(w(i));
            }
            if c.end > end {
                warnings.push(w(&format!(
                    "container ends at 0x{:x}, past the section end 0x{end:x}",
                    c.end
                )));
            }
        } else if !c.strictly_valid() || c.end > end {
            continue;
        }
        covered_to = c.end.max(c.start + CONTAINER_HEADER);
        out.push(FatbinContainer {
            offset: c.start,
            size: c.end.saturating_sub(c.start),
            entries: c.entries.clone(),
        });
    }
    if lenient {
        if out.is_empty() && size > 0 {
            warnings.push(format!(
                "{name} at 0x{off:x}: no fatbin container found in {size} bytes"
            ));
        } else if covered_to < end {
            note_gap(scanner, name, covered_to, end, false, warnings);
        }
    }
    out
}

/// Reports bytes of a fatbin section not covered by a container, unless they are zero
/// padding (known from the gap watcher started at the preceding container's end).
fn note_gap(
    scanner: &FatbinScanner,
    name: &str,
    from: u64,
    to: u64,
    leading: bool,
    warnings: &mut Vec<String>,
) {
    if leading {
        warnings.push(format!(
            "{name}: {} bytes at 0x{from:x} before the first container",
            to - from
        ));
        return;
    }
    let i = scanner.gaps.partition_point(|g| g.from < from);
    let watch = scanner.gaps.get(i).filter(|g| g.from == from);
    match watch {
        Some(g) => match g.first_nonzero {
            Some(nz) if nz < to => warnings.push(format!(
                "{name}: non-zero bytes at 0x{nz:x} between containers (gap 0x{from:x}..0x{to:x})"
            )),
            _ if g.upto < to => warnings.push(format!(
                "{name}: {} bytes at 0x{from:x} not covered by any container",
                to - from
            )),
            _ => {}
        },
        None => warnings.push(format!(
            "{name}: {} bytes at 0x{from:x} not covered by any container",
            to - from
        )),
    }
}

/// Errors of [`scan_fatbin_bytes`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FatbinError {
    #[error("not a fatbin: no container magic at offset 0")]
    NotFatbin,
}

/// A bare fatbin file (`nvcc -fatbin` output): containers from offset 0, plus warnings.
pub fn scan_fatbin_bytes_detailed(
    data: &[u8],
) -> Result<(Vec<FatbinContainer>, Vec<String>), FatbinError> {
    if data.len() < 4 || data[0..4] != FATBIN_MAGIC.to_le_bytes() {
        return Err(FatbinError::NotFatbin);
    }
    let mut sc = FatbinScanner::new();
    for (i, chunk) in data.chunks(64 * 1024).enumerate() {
        sc.feed((i * 64 * 1024) as u64, chunk);
    }
    sc.finish(data.len() as u64);
    let mut warnings = std::mem::take(&mut sc.warnings);
    let cs = resolve_section(&sc, "<fatbin>", 0, data.len() as u64, true, &mut warnings);
    Ok((cs, warnings))
}

/// A bare fatbin file (`nvcc -fatbin` output): its containers.
pub fn scan_fatbin_bytes(data: &[u8]) -> Result<Vec<FatbinContainer>, FatbinError> {
    scan_fatbin_bytes_detailed(data).map(|(c, _)| c)
}
