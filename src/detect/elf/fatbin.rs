//! CUDA fatbin containers and entries (see `shared/notes/fatbin-format.md`).
//!
//! The parser is a forward-only state machine: [`FatbinScanner`] is fed the bytes of a
//! file in order, starts a [`Candidate`] parser at every 8-aligned occurrence of the
//! container magic, lets each candidate collect only the container/entry *headers* it
//! needs and skips payloads without buffering them. Which candidates are real containers
//! is decided afterwards ([`resolve_section`]), once the section boundaries are known.

mod scanner;

use crate::arch::{ArchTarget, ArchVariant, CodeKind};
pub use scanner::is_fatbin_section_name;
pub(crate) use scanner::{cubin_target, resolve_section, FatbinScanner, CUBIN_HEADER};
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
