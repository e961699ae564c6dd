//! Optional deep check: decompress fatbin payloads and cross-check them against their
//! headers (notes §4–§6): cubin `e_machine`/`e_flags` SM number and `a` bit, PTX `.version`
//! and `.target`. Needs the file's bytes (random access), so it is meant for files already
//! held in memory or re-read from disk, not for the streaming pass.

use super::fatbin::{FatbinContainer, FatbinEntry};
use crate::arch::{ArchVariant, CodeKind};

/// Largest decompressed payload examined.
const MAX_IMAGE: u64 = 512 << 20;

/// Cross-checks every entry of `containers` (offsets are into `data`). Returns one message per
/// disagreement or undecodable payload; empty when everything agrees.
pub fn deep_check(data: &[u8], containers: &[FatbinContainer]) -> Vec<String> {
    let mut out = Vec::new();
    for c in containers {
        // Group members share one decompressed blob: decode each group once.
        let mut blob: Option<(u64, Result<Vec<u8>, String>)> = None;
        for e in &c.entries {
            if e.target.kind == CodeKind::Lto {
                // LTO-IR payloads (flag 0x10000) are not plain zstd/LZ4 streams even when the
                // codec bit is set (fx_lto.o); nothing to cross-check there anyway.
                continue;
            }
            let image: Result<Vec<u8>, String> = if e.in_group {
                if blob.as_ref().map(|b| b.0) != Some(e.offset) {
                    blob = Some((e.offset, payload(data, e)));
                }
                match blob.as_ref().map(|b| &b.1) {
                    Some(Ok(b)) => {
                        let lo = e.member_offset.unwrap_or(0);
                        let hi = lo.saturating_add(e.payload_size);
                        b.get(lo as usize..hi.min(b.len() as u64) as usize)
                            .filter(|_| hi <= b.len() as u64)
                            .map(<[u8]>::to_vec)
                            .ok_or_else(|| "member outside the group data".to_string())
                    }
                    Some(Err(m)) => Err(m.clone()),
                    None => Err("no group data".into()),
                }
            } else {
                payload(data, e)
            };
            let what = format!("{} entry at 0x{:x}", e.target, e.offset);
            match image {
                Err(m) => out.push(format!("{what}: {m}")),
                Ok(img) => {
                    if let Some(m) = check_image(e, &img) {
                        out.push(format!("{what}: {m}"));
                    }
                }
            }
        }
    }
    out
}

/// The entry's (decompressed) payload; for group members, the group's whole blob.
fn payload(data: &[u8], e: &FatbinEntry) -> Result<Vec<u8>, String> {
    let start = e.payload_offset;
    let end = start.saturating_add(super::kernels::stored_len(e));
    let raw = data
        .get(start as usize..end.min(data.len() as u64) as usize)
        .filter(|_| end <= data.len() as u64)
        .ok_or_else(|| "payload outside the file".to_string())?;
    let want = e.uncompressed_size;
    if e.compression.is_some() && want > MAX_IMAGE {
        return Err(format!("uncompressed size {want} too large to check"));
    }
    decode_payload(raw, e)
}

/// The stored payload `raw` of `e` decompressed as its flags say (as is when not compressed);
/// for group members, the group's whole blob. Callers bound `e.uncompressed_size`.
pub(crate) fn decode_payload(raw: &[u8], e: &FatbinEntry) -> Result<Vec<u8>, String> {
    let want = e.uncompressed_size;
    match e.compression.as_deref() {
        None => Ok(raw.to_vec()),
        Some("lz4") => lz4_flex::block::decompress(raw, want as usize)
            .map_err(|x| format!("lz4: {x}"))
            .and_then(|v| sized(v, want)),
        Some("zstd") if !raw.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) => {
            Err("zstd flag but no zstd frame magic".into())
        }
        Some("zstd") => zstd::bulk::decompress(raw, want as usize)
            .map_err(|x| format!("zstd: {x}"))
            .and_then(|v| sized(v, want)),
        Some(c) => Err(format!("unknown compression {c}")),
    }
}

fn sized(v: Vec<u8>, want: u64) -> Result<Vec<u8>, String> {
    if v.len() as u64 == want {
        Ok(v)
    } else {
        Err(format!(
            "decompressed {} bytes, header says {want}",
            v.len()
        ))
    }
}

fn check_image(e: &FatbinEntry, img: &[u8]) -> Option<String> {
    match e.target.kind {
        CodeKind::Sass => check_cubin(e, img),
        CodeKind::Ptx => check_ptx(e, img),
        CodeKind::Lto => None,
    }
}

fn check_cubin(e: &FatbinEntry, img: &[u8]) -> Option<String> {
    if img.len() < 64 || &img[0..4] != b"\x7fELF" || img[4] != 2 || img[5] != 1 {
        return Some("payload is not a 64-bit little-endian ELF".into());
    }
    let machine = u16::from_le_bytes([img[18], img[19]]);
    if machine != 190 {
        return Some(format!("cubin e_machine {machine}, expected 190 (EM_CUDA)"));
    }
    let flags = u32::from_le_bytes([img[48], img[49], img[50], img[51]]);
    let abiv = img[8];
    let (sm, a_bit) = match abiv {
        7 => (flags & 0xFF, flags & 0x800 != 0),
        8 => ((flags >> 8) & 0xFF, flags & 0x08 != 0),
        v => return Some(format!("cubin EI_ABIVERSION {v} not understood")),
    };
    if sm != e.target.sm {
        return Some(format!("cubin e_flags 0x{flags:x} say sm_{sm}"));
    }
    // The cubin's 'a' bit is optional (ptxas 13.x never sets it) but must not contradict.
    if a_bit && e.target.variant != ArchVariant::ArchSpecific {
        return Some(format!(
            "cubin e_flags 0x{flags:x} mark it arch-specific ('a')"
        ));
    }
    None
}

fn check_ptx(e: &FatbinEntry, img: &[u8]) -> Option<String> {
    let end = img.iter().position(|&b| b == 0).unwrap_or(img.len());
    let text = String::from_utf8_lossy(&img[..end.min(1 << 20)]);
    let mut version = None;
    let mut target = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some(v) = l.strip_prefix(".version") {
            version.get_or_insert_with(|| v.trim().to_string());
        } else if let Some(t) = l.strip_prefix(".target") {
            let first = t.split(',').next().unwrap_or("").trim().to_string();
            target.get_or_insert(first);
        }
        if version.is_some() && target.is_some() {
            break;
        }
    }
    let want_v = format!("{}.{}", e.code_version.0, e.code_version.1);
    match version {
        Some(v) if v == want_v => {}
        Some(v) => return Some(format!("PTX .version {v}, header says {want_v}")),
        None => return Some("PTX text without .version".into()),
    }
    let want_t = e.target.to_string().replacen("compute_", "sm_", 1);
    match target {
        Some(t) if t == want_t => None,
        Some(t) => Some(format!(".target {t}, header says {want_t}")),
        None => Some("PTX text without .target".into()),
    }
}
