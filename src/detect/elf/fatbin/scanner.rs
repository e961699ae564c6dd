//! The scan over a whole file: [`FatbinScanner`] runs a [`Candidate`] at every container
//! magic, watches the padding after each container, collects loose cubin headers and PTX
//! text, and [`resolve_section`] decides afterwards which candidates a section holds.

use super::*;
use crate::detect::elf::kernels::StreamProbe;
use crate::detect::elf::ptx_text::PtxFinder;

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
