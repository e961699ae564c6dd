//! The CUDA runtime's own version, read from its code: `cudaRuntimeGetVersion` stores a
//! constant (`CUDART_VERSION`, 11070 for CUDA 11.7) through its `int *` argument.
//!
//! A runtime's file name does not say its release: `libcudart.so.11.0` is the soname of every
//! CUDA 11 runtime, and the copy torch bundles (`libcudart-<hash>.so.11.0`) comes without the
//! wheel that would name it. Measured on NVIDIA's runtime wheels (nvidia-cuda-runtime-cu11
//! 11.7.99 and 11.8.89, -cu12 12.1.105 and 12.8.90, nvidia-cuda-runtime 13.0.96) and on the
//! copy in torch 1.13.1's wheel: `cudaRuntimeGetVersion` calls a small helper that stores the
//! constant —
//!   x86_64:  `test %rdi,%rdi; je …; movl $imm32,(%rdi); xor %eax,%eax; ret`
//!   aarch64: `cbz x0, …; mov x1, x0; movz w2, #imm16; mov w0, #0; str w2, [x1]; ret`
//! The helper is found through the direct calls of `cudaRuntimeGetVersion` (and the body itself
//! is searched too, should a build inline it). The value must have the shape of a CUDA version
//! (major × 1000 + minor × 10) and be the only one found; anything else is unknown (None).

use std::borrow::Cow;

const X86_64: u16 = 62;
const AARCH64: u16 = 183;
/// Bytes of the function body searched for calls, and of each callee for the store.
const MAX_BODY: usize = 4096;
const CALLEE_HEAD: usize = 48;

/// Whether `v` is shaped like `CUDART_VERSION` (9.0 = 9000 … 99.9 = 99090).
fn plausible(v: u32) -> bool {
    (9000..100_000).contains(&v) && v.is_multiple_of(10) && (v / 10) % 100 < 10
}

/// "11.7" from 11070.
pub fn format_version(v: u32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn word(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// `movl $imm32, (%rdi)` = c7 07 imm32.
fn x86_stores(code: &[u8]) -> Vec<u32> {
    code.windows(6)
        .filter(|w| w[0] == 0xc7 && w[1] == 0x07)
        .map(|w| u32::from_le_bytes([w[2], w[3], w[4], w[5]]))
        .filter(|&v| plausible(v))
        .collect()
}

/// Targets of `call rel32` (e8) in `code`, which starts at `vaddr`.
fn x86_calls(code: &[u8], vaddr: u64) -> Vec<u64> {
    let mut out = Vec::new();
    for i in 0..code.len().saturating_sub(4) {
        if code[i] != 0xe8 {
            continue;
        }
        let Some(rel) = word(code, i + 1) else { break };
        let next = vaddr.wrapping_add(i as u64 + 5);
        out.push(next.wrapping_add_signed(i64::from(rel as i32)));
    }
    out
}

/// `movz wR, #imm16` followed within three instructions by `str wR, [xN]` (no offset).
fn arm_stores(code: &[u8]) -> Vec<u32> {
    let words: Vec<u32> = (0..code.len() / 4)
        .filter_map(|i| word(code, 4 * i))
        .collect();
    let mut out = Vec::new();
    for (i, &w) in words.iter().enumerate() {
        if w & 0xffe0_0000 != 0x5280_0000 {
            continue;
        }
        let (imm, rd) = ((w >> 5) & 0xffff, w & 0x1f);
        let stored = words
            .iter()
            .skip(i + 1)
            .take(3)
            .any(|&s| s & 0xffff_fc00 == 0xb900_0000 && s & 0x1f == rd);
        if stored && plausible(imm) {
            out.push(imm);
        }
    }
    out
}

/// Targets of `bl imm26` in `code`, which starts at `vaddr`.
fn arm_calls(code: &[u8], vaddr: u64) -> Vec<u64> {
    (0..code.len() / 4)
        .filter_map(|i| Some((i, word(code, 4 * i)?)))
        .filter(|&(_, w)| w >> 26 == 0x25)
        .map(|(i, w)| {
            let imm = ((w & 0x03ff_ffff) << 6) as i32 >> 6; // sign-extend 26 bits
            vaddr
                .wrapping_add(4 * i as u64)
                .wrapping_add_signed(4 * i64::from(imm))
        })
        .collect()
}

/// The version `cudaRuntimeGetVersion` (at `vaddr`, `size` bytes) reports, with `code(vaddr,
/// len)` giving the mapped bytes at a virtual address.
pub(super) fn runtime_version<'a>(
    machine: u16,
    vaddr: u64,
    size: u64,
    code: impl Fn(u64, usize) -> Option<Cow<'a, [u8]>>,
) -> Option<u32> {
    let len = usize::try_from(size).ok()?.clamp(1, MAX_BODY);
    let body = code(vaddr, len)?;
    let body = &body[..];
    type Stores = fn(&[u8]) -> Vec<u32>;
    let (calls, stores): (Vec<u64>, Stores) = match machine {
        X86_64 => (x86_calls(body, vaddr), x86_stores),
        AARCH64 => (arm_calls(body, vaddr), arm_stores),
        _ => return None,
    };
    let mut found = stores(body);
    for t in calls {
        if let Some(c) = code(t, CALLEE_HEAD).or_else(|| code(t, 16)) {
            found.extend(stores(&c));
        }
    }
    found.sort_unstable();
    found.dedup();
    match found[..] {
        [v] => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert!(plausible(11070) && plausible(12080) && plausible(13000) && plausible(9020));
        assert!(!plausible(11075) && !plausible(120) && !plausible(11170) && !plausible(0));
        assert_eq!(format_version(11070), "11.7");
        assert_eq!(format_version(13010), "13.1");
    }

    /// The helper of cudart 11.7.99 (x86_64), called from a body at 0x100.
    #[test]
    fn x86_helper_through_a_call() {
        let mut mem = vec![0x90u8; 0x300];
        // body at 0x100: call 0x200
        mem[0x100] = 0xe8;
        mem[0x101..0x105].copy_from_slice(&(0x200i32 - 0x105).to_le_bytes());
        mem[0x200..0x20e].copy_from_slice(&[
            0x48, 0x85, 0xff, 0x74, 0x0b, 0xc7, 0x07, 0x3e, 0x2b, 0, 0, 0x31, 0xc0, 0xc3,
        ]);
        let code = |a: u64, n: usize| {
            mem.get(a as usize..(a as usize + n).min(mem.len()))
                .map(Cow::Borrowed)
        };
        assert_eq!(runtime_version(X86_64, 0x100, 16, code), Some(11070));
        // Another machine: unknown, never a guess.
        assert_eq!(runtime_version(3, 0x100, 16, code), None);
        // Two different constants: ambiguous, unknown.
        let mut two = mem.clone();
        two[0x108..0x10e].copy_from_slice(&[0xc7, 0x07, 0x30, 0x2f, 0, 0]);
        let code2 = |a: u64, n: usize| {
            two.get(a as usize..(a as usize + n).min(two.len()))
                .map(Cow::Borrowed)
        };
        assert_eq!(runtime_version(X86_64, 0x100, 16, code2), None);
    }

    /// The helper of cudart 12.8.90 (aarch64), words as in the wheel's libcudart.so.12.
    #[test]
    fn arm_helper_through_a_call() {
        let helper: [u32; 6] = [
            0xb400_00c0,
            0xaa00_03e1,
            0x5285_e602,
            0x5280_0000,
            0xb900_0022,
            0xd65f_03c0,
        ];
        let mut mem = vec![0u8; 0x400];
        for (i, w) in helper.iter().enumerate() {
            mem[0x300 + 4 * i..0x304 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        // body at 0x100, bl 0x300 as its third instruction
        let bl: u32 = 0x9400_0000 | ((0x300 - 0x108) / 4);
        mem[0x108..0x10c].copy_from_slice(&bl.to_le_bytes());
        let code = |a: u64, n: usize| {
            mem.get(a as usize..(a as usize + n).min(mem.len()))
                .map(Cow::Borrowed)
        };
        assert_eq!(runtime_version(AARCH64, 0x100, 16, code), Some(12080));
        // A backward call works too.
        let mut back = vec![0u8; 0x400];
        back[..24].copy_from_slice(&mem[0x300..0x318]);
        let bl: u32 = 0x9400_0000 | ((0u32.wrapping_sub(0x108) / 4) & 0x03ff_ffff);
        back[0x108..0x10c].copy_from_slice(&bl.to_le_bytes());
        let code = |a: u64, n: usize| {
            back.get(a as usize..(a as usize + n).min(back.len()))
                .map(Cow::Borrowed)
        };
        assert_eq!(runtime_version(AARCH64, 0x100, 16, code), Some(12080));
    }
}
