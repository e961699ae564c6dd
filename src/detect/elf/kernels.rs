//! Whether a binary's device code has any kernel at all. A fatbin whose cubins define no
//! kernel (libnppc, libcufftw, `__nvcc_device_query`: only `__device__`/`__constant__`
//! objects) is never launched, so it cannot fail with "no kernel image". Counting needs the
//! payload: decompressed (notes §4), a cubin's kernels are the functions in its symbol table
//! (§5), a PTX text's the `.entry` directives (§6).
//!
//! Cost is bounded: payloads are decoded in file order only until one kernel is found
//! (one is enough to judge the binary), each within [`MAX_STORED`]/[`MAX_IMAGE`], and the
//! file within [`MAX_DECODED_PER_FILE`]. A payload not decoded leaves the answer unknown,
//! and unknown is judged like code with kernels.

use super::deep::decode_payload;
use super::fatbin::FatbinEntry;
use crate::arch::CodeKind;
use std::collections::BTreeMap;

/// Largest stored (possibly compressed) payload captured or read for counting.
pub(crate) const MAX_STORED: u64 = 64 << 20;
/// Largest decompressed payload examined.
pub(crate) const MAX_IMAGE: u64 = 256 << 20;
/// Decompressed bytes examined per file before giving up (answer unknown).
const MAX_DECODED_PER_FILE: u64 = 512 << 20;
/// Bytes held at once by a stream's captures.
const MAX_CAPTURED: u64 = 128 << 20;

const SHT_SYMTAB: u32 = 2;
const STT_FUNC: u8 = 2;

/// One entry as the key of its result: its header offset and, for a concatenated-group
/// member, its offset inside the group's blob.
pub(crate) type EntryKey = (u64, Option<u64>);

pub(crate) fn key(e: &FatbinEntry) -> EntryKey {
    (e.offset, e.member_offset)
}

/// Bytes of the stored payload of `e` (compressed length when compressed).
pub(crate) fn stored_len(e: &FatbinEntry) -> u64 {
    if e.compression.is_some() {
        e.compressed_size
    } else {
        e.payload_size
    }
}

/// Kernel count of a cubin: defined `STT_FUNC` symbols in `.text.*` sections (ptxas gives
/// each kernel one, flagged `STO_CUDA_ENTRY`; an `-rdc` cubin's non-inlined `__device__`
/// functions are counted too, which only keeps such a binary judged). Err when the image is
/// not a readable 64-bit little-endian ELF.
pub fn count_cubin_kernels(img: &[u8]) -> Result<u32, String> {
    let rd = |o: usize, n: usize| -> Option<u64> {
        let s = img.get(o..o.checked_add(n)?)?;
        Some(
            s.iter()
                .enumerate()
                .fold(0u64, |v, (i, &b)| v | u64::from(b) << (8 * i)),
        )
    };
    if img.len() < 64 || &img[0..4] != b"\x7fELF" || img[4] != 2 || img[5] != 1 {
        return Err("payload is not a 64-bit little-endian ELF".into());
    }
    let bad = || "cubin section headers unreadable".to_string();
    let shoff = rd(40, 8).ok_or_else(bad)? as usize;
    let shentsize = rd(58, 2).ok_or_else(bad)? as usize;
    let shnum = rd(60, 2).ok_or_else(bad)? as usize;
    let shstrndx = rd(62, 2).ok_or_else(bad)? as usize;
    if shentsize < 64 || shnum == 0 {
        return Err(bad());
    }
    let sh = |i: usize| -> Option<(u32, u32, u64, u64, u32)> {
        let b = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            rd(b, 4)? as u32,      // sh_name
            rd(b + 4, 4)? as u32,  // sh_type
            rd(b + 24, 8)?,        // sh_offset
            rd(b + 32, 8)?,        // sh_size
            rd(b + 40, 4)? as u32, // sh_link
        ))
    };
    let slice = |off: u64, len: u64| -> Option<&[u8]> {
        let lo = usize::try_from(off).ok()?;
        img.get(lo..lo.checked_add(usize::try_from(len).ok()?)?)
    };
    let (_, _, str_off, str_len, _) = sh(shstrndx).ok_or_else(bad)?;
    let names = slice(str_off, str_len).ok_or_else(bad)?;
    let name_of = |o: u32| -> &[u8] {
        let s = names.get(o as usize..).unwrap_or(&[]);
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    };
    let mut is_text = Vec::with_capacity(shnum);
    let mut symtab = None;
    for i in 0..shnum {
        let (name, ty, off, len, link) = sh(i).ok_or_else(bad)?;
        is_text.push(name_of(name).starts_with(b".text."));
        if ty == SHT_SYMTAB && symtab.is_none() {
            symtab = Some((off, len, link));
        }
    }
    let Some((off, len, _)) = symtab else {
        // No symbol table to read functions from: any code section counts as a kernel.
        return Ok(is_text.iter().filter(|&&t| t).count() as u32);
    };
    let syms = slice(off, len).ok_or_else(|| "cubin symbol table unreadable".to_string())?;
    let mut n = 0u32;
    for s in syms.chunks_exact(24) {
        let info = s[4];
        let shndx = u16::from_le_bytes([s[6], s[7]]) as usize;
        if info & 0xf == STT_FUNC && is_text.get(shndx).copied().unwrap_or(false) {
            n += 1;
        }
    }
    Ok(n)
}

/// Whether PTX text declares an entry function (`.entry NAME`, a kernel).
pub fn ptx_has_entry(img: &[u8]) -> bool {
    let end = img.iter().position(|&b| b == 0).unwrap_or(img.len());
    img[..end]
        .windows(7)
        .any(|w| w.starts_with(b".entry") && w[6].is_ascii_whitespace())
}

fn image_has_kernel(kind: CodeKind, img: &[u8]) -> Option<bool> {
    match kind {
        CodeKind::Sass => count_cubin_kernels(img).ok().map(|n| n > 0),
        CodeKind::Ptx => Some(ptx_has_entry(img)),
        CodeKind::Lto => None,
    }
}

/// Per-entry answers: Some(has a kernel), None when the payload could not be decoded.
#[derive(Debug, Default, Clone)]
pub(crate) struct KernelProbe {
    pub(crate) results: BTreeMap<EntryKey, Option<bool>>,
    /// A kernel was found: nothing more is decoded.
    pub(crate) found: bool,
    decoded: u64,
}

impl KernelProbe {
    /// Whether the payload of `e` is still worth decoding.
    pub(crate) fn wants(&self, e: &FatbinEntry) -> bool {
        !self.found
            && matches!(e.target.kind, CodeKind::Sass | CodeKind::Ptx)
            && !self.results.contains_key(&key(e))
            && self.decoded < MAX_DECODED_PER_FILE
    }

    /// Records the answers for `entries` (one stored payload: a plain entry, or every member
    /// of one concatenated group) from the payload's stored bytes (None: not available).
    pub(crate) fn decode(&mut self, entries: &[&FatbinEntry], stored: Option<&[u8]>) {
        let Some(first) = entries.first() else { return };
        let image = stored.and_then(|raw| {
            let size = if first.compression.is_some() {
                first.uncompressed_size
            } else {
                raw.len() as u64
            };
            if size > MAX_IMAGE {
                return None;
            }
            // Charged before decoding: a lying size costs the budget, not unbounded work.
            self.decoded = self.decoded.saturating_add(size);
            decode_payload(raw, first).ok()
        });
        for e in entries {
            let answer = image.as_deref().and_then(|img| {
                let img = match e.member_offset {
                    Some(lo) => {
                        let hi = lo.checked_add(e.payload_size)?;
                        img.get(usize::try_from(lo).ok()?..usize::try_from(hi).ok()?)?
                    }
                    None => img,
                };
                image_has_kernel(e.target.kind, img)
            });
            self.found |= answer == Some(true);
            self.results.insert(key(e), answer);
        }
    }

    /// Decodes, in file order, the payloads of `entries` (grouped by stored payload), read
    /// with `read(offset, len)`, until a kernel is found.
    pub(crate) fn probe_all<'e>(
        &mut self,
        entries: impl IntoIterator<Item = &'e FatbinEntry>,
        mut read: impl FnMut(u64, u64) -> Option<Vec<u8>>,
    ) {
        let mut groups: Vec<Vec<&FatbinEntry>> = Vec::new();
        for e in entries {
            match groups.last_mut() {
                Some(g) if g[0].payload_offset == e.payload_offset && e.in_group => g.push(e),
                _ => groups.push(vec![e]),
            }
        }
        for g in groups {
            let g: Vec<&FatbinEntry> = g.into_iter().filter(|e| self.wants(e)).collect();
            let Some(first) = g.first() else { continue };
            let len = stored_len(first);
            let raw = (len <= MAX_STORED)
                .then(|| read(first.payload_offset, len))
                .flatten();
            self.decode(&g, raw.as_deref());
        }
    }

    /// The verdict over the entries a binary's judgement rests on: Some(true) when a kernel
    /// was found (in any payload decoded: a kernel anywhere only keeps the binary judged),
    /// Some(false) when every SASS/PTX payload among `entries` was read and none has one,
    /// else None.
    pub(crate) fn verdict<'e>(
        &self,
        entries: impl IntoIterator<Item = &'e FatbinEntry>,
    ) -> Option<bool> {
        if self.found {
            return Some(true);
        }
        let mut any = false;
        for e in entries {
            if !matches!(e.target.kind, CodeKind::Sass | CodeKind::Ptx) {
                continue;
            }
            any = true;
            if self.results.get(&key(e)) != Some(&Some(false)) {
                return None;
            }
        }
        any.then_some(false)
    }
}

/// A stored payload the stream is collecting for [`KernelProbe`].
#[derive(Debug)]
pub(crate) struct Capture {
    pub(crate) entries: Vec<FatbinEntry>,
    pub(crate) at: u64,
    pub(crate) len: u64,
    pub(crate) data: Vec<u8>,
}

/// The stream side: payloads captured as the bytes pass, decoded once complete.
#[derive(Debug, Default)]
pub(crate) struct StreamProbe {
    pub(crate) probe: KernelProbe,
    captures: Vec<Capture>,
    held: u64,
}

impl StreamProbe {
    /// Starts collecting the payload of `entries` (a plain entry, or the members of one
    /// concatenated group, which share one stored payload), whose first bytes may already be
    /// in `chunk` at `base`.
    pub(crate) fn start(&mut self, entries: Vec<FatbinEntry>, base: u64, chunk: &[u8]) {
        let Some(first) = entries.first() else { return };
        let (at, len) = (first.payload_offset, stored_len(first));
        if self.captures.iter().any(|c| c.at == at) {
            return;
        }
        if len > MAX_STORED || self.held.saturating_add(len) > MAX_CAPTURED {
            let refs: Vec<&FatbinEntry> = entries.iter().collect();
            self.probe.decode(&refs, None);
            return;
        }
        self.held += len;
        self.captures.push(Capture {
            entries,
            at,
            len,
            // Grown as the bytes arrive: the length is the header's word, not yet the file's.
            data: Vec::with_capacity(len.min(1 << 20) as usize),
        });
        self.feed(base, chunk);
    }

    /// The bytes at `base`; completes and decodes captures.
    pub(crate) fn feed(&mut self, base: u64, chunk: &[u8]) {
        if self.captures.is_empty() {
            return;
        }
        let end = base + chunk.len() as u64;
        let mut i = 0;
        while i < self.captures.len() {
            let c = &mut self.captures[i];
            let next = c.at + c.data.len() as u64;
            let cend = c.at + c.len;
            if next >= base && next < end && next < cend {
                let lo = (next - base) as usize;
                let hi = (cend.min(end) - base) as usize;
                c.data.extend_from_slice(&chunk[lo..hi]);
            }
            let complete = c.data.len() as u64 == c.len;
            if complete || next < base || self.probe.found {
                let c = self.captures.swap_remove(i);
                self.held -= c.len;
                if !self.probe.found {
                    let refs: Vec<&FatbinEntry> = c.entries.iter().collect();
                    self.probe
                        .decode(&refs, complete.then_some(c.data.as_slice()));
                }
            } else {
                i += 1;
            }
        }
    }

    /// End of data: what is still incomplete stays unknown.
    pub(crate) fn finish(&mut self) {
        for c in std::mem::take(&mut self.captures) {
            let refs: Vec<&FatbinEntry> = c.entries.iter().collect();
            if !self.probe.found {
                self.probe.decode(&refs, None);
            }
        }
        self.held = 0;
    }
}
