//! PTX text outside any fatbin container: nvperf keeps compute_70 PTX as a plain byte array,
//! jax and TensorFlow ship raw PTX they hand to `cuModuleLoadData` themselves. Found by the
//! module header nvcc writes (`.version X.Y`, then `.target sm_NN` on the next line), at any
//! byte offset, in a stream fed in chunks whose boundaries may cut the header anywhere.

use crate::arch::{ArchTarget, ArchVariant, CodeKind};
use memchr::memmem;
use serde::{Deserialize, Serialize};

/// The directive a PTX module starts with (after comments).
const DIRECTIVE: &[u8] = b".version";
/// Bytes from `.version` that always hold the whole header (`.version 8.8\n.target sm_100a\n`
/// is 30; blank lines and indentation leave room).
pub const PTX_WINDOW: usize = 128;
/// Headers whose bytes are still being collected (a window holds at most a few).
const MAX_COLLECTING: usize = 64;
/// Most headers remembered per file (those inside containers included, filtered later).
const MAX_FOUND: usize = 100_000;

/// What a PTX module's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtxHeader {
    /// `compute_NN` (with `a`/`f` when the `.target` has it).
    pub target: ArchTarget,
    /// The PTX ISA version of `.version`.
    pub isa: (u16, u16),
}

/// Parses the header at the start of `w` (which starts with `.version`); None unless it is
/// exactly a PTX module header: the version line, then, after whitespace, `.target sm_NN`.
pub fn parse_header(w: &[u8]) -> Option<PtxHeader> {
    let mut r = Cursor(w.strip_prefix(DIRECTIVE)?);
    if !r.blanks() {
        return None;
    }
    let major = r.number(2)?;
    r.byte(b'.')?;
    let minor = r.number(2)?;
    r.blanks();
    r.byte(b'\r');
    r.byte(b'\n')?;
    while r.blanks() || r.byte(b'\r').is_some() || r.byte(b'\n').is_some() {}
    r.literal(b".target")?;
    if !r.blanks() {
        return None;
    }
    r.literal(b"sm_")?;
    let sm = r.number(3)?;
    let variant = match r.peek()? {
        b'a' => ArchVariant::ArchSpecific,
        b'f' => ArchVariant::FamilySpecific,
        _ => ArchVariant::Generic,
    };
    if variant != ArchVariant::Generic {
        r.0 = &r.0[1..];
    }
    // The name must end here: `sm_70` followed by a separator, not `sm_70x`.
    if !matches!(r.peek()?, b' ' | b'\t' | b',' | b'\r' | b'\n') {
        return None;
    }
    ((10..=999).contains(&sm) && major > 0).then(|| PtxHeader {
        target: ArchTarget::new(CodeKind::Ptx, u32::from(sm), variant),
        isa: (major, minor),
    })
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }
    fn byte(&mut self, b: u8) -> Option<()> {
        let rest = self.0.strip_prefix(&[b])?;
        self.0 = rest;
        Some(())
    }
    fn literal(&mut self, s: &[u8]) -> Option<()> {
        self.0 = self.0.strip_prefix(s)?;
        Some(())
    }
    /// Skips spaces and tabs; whether there were any.
    fn blanks(&mut self) -> bool {
        let n = self
            .0
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        self.0 = &self.0[n..];
        n > 0
    }
    /// 1 to `digits` decimal digits.
    fn number(&mut self, digits: usize) -> Option<u16> {
        let n = self.0.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > digits {
            return None;
        }
        let v = self.0[..n]
            .iter()
            .fold(0u16, |v, &c| v * 10 + u16::from(c - b'0'));
        self.0 = &self.0[n..];
        Some(v)
    }
}

/// Finds PTX module headers in bytes fed in file order, possibly with gaps between chunks.
/// A header cut by a chunk boundary (even inside `.version`) is collected from the next
/// chunks; [`Self::wanted`] names the bytes it still needs, so a reader that skips what
/// nobody needs (the seekable scan) supplies them like the stream does.
#[derive(Debug, Default)]
pub(crate) struct PtxFinder {
    /// Headers being collected: (offset of `.version` or of its partial prefix, bytes).
    collecting: Vec<(u64, Vec<u8>)>,
    /// (offset of `.version`, header), sorted once finished.
    pub(crate) found: Vec<(u64, PtxHeader)>,
}

impl PtxFinder {
    /// Feeds the chunk at `base`: completes the headers being collected, and where `search`
    /// is set looks for new ones (a `.version` starting in this chunk, whole or cut short by
    /// its end).
    pub(crate) fn feed(&mut self, base: u64, chunk: &[u8], search: bool) {
        self.extend(base, chunk);
        if !search {
            return;
        }
        let mut starts: Vec<usize> = memmem::find_iter(chunk, DIRECTIVE).collect();
        // A `.version` cut by the chunk's end: its prefix ends the chunk.
        let tail = (1..DIRECTIVE.len())
            .rev()
            .find(|&k| chunk.len() >= k && chunk.ends_with(&DIRECTIVE[..k]));
        starts.extend(tail.map(|k| chunk.len() - k));
        for o in starts {
            let end = (o + PTX_WINDOW).min(chunk.len());
            let bytes = chunk[o..end].to_vec();
            if bytes.len() == PTX_WINDOW {
                self.settle(base + o as u64, &bytes);
            } else if self.collecting.len() < MAX_COLLECTING {
                self.collecting.push((base + o as u64, bytes));
            }
        }
    }

    /// Adds what `chunk` holds of the headers being collected; settles those complete, or
    /// whose next byte was skipped.
    fn extend(&mut self, base: u64, chunk: &[u8]) {
        let end = base + chunk.len() as u64;
        let mut i = 0;
        while i < self.collecting.len() {
            let (at, buf) = &mut self.collecting[i];
            let next = *at + buf.len() as u64;
            if next >= base && next < end {
                let lo = (next - base) as usize;
                let take = (PTX_WINDOW - buf.len()).min(chunk.len() - lo);
                buf.extend_from_slice(&chunk[lo..lo + take]);
            }
            if buf.len() == PTX_WINDOW || next < base {
                let (at, buf) = self.collecting.swap_remove(i);
                self.settle(at, &buf);
            } else {
                i += 1;
            }
        }
    }

    fn settle(&mut self, at: u64, bytes: &[u8]) {
        if self.found.len() >= MAX_FOUND {
            return;
        }
        if let Some(h) = parse_header(bytes) {
            self.found.push((at, h));
        }
    }

    /// The byte ranges `[next, end)` the headers being collected still need.
    pub(crate) fn wanted(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.collecting
            .iter()
            .map(|(at, buf)| (at + buf.len() as u64, at + PTX_WINDOW as u64))
    }

    /// End of data: headers cut by it are judged on what they have.
    pub(crate) fn finish(&mut self) {
        for (at, buf) in std::mem::take(&mut self.collecting) {
            self.settle(at, &buf);
        }
        self.found.sort_by_key(|f| f.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> String {
        parse_header(s.as_bytes()).map_or("-".into(), |h| {
            format!("{} {}.{}", h.target, h.isa.0, h.isa.1)
        })
    }

    #[test]
    fn headers_as_nvcc_writes_them() {
        assert_eq!(
            t(".version 7.8\n.target sm_70\n.address_size 64\n"),
            "compute_70 7.8"
        );
        assert_eq!(t(".version 8.8\r\n\n.target sm_100a\n"), "compute_100a 8.8");
        assert_eq!(
            t(".version 9.0\n.target sm_120f, debug\n"),
            "compute_120f 9.0"
        );
        assert_eq!(t(".version 6.4\n\t.target sm_52\n"), "compute_52 6.4");
        // Mentions of the directives that are no module header.
        assert_eq!(t(".version 7.8 is not supported\n.target sm_70\n"), "-");
        assert_eq!(t(".version 7.8\n// .target sm_70\n"), "-");
        assert_eq!(t(".version 7.8\n.target sm_70"), "-"); // cut: name may go on
        assert_eq!(t(".version 7.8\n.target sm_7\n"), "-");
        assert_eq!(t(".version 7.8\n.target sm_70x\n"), "-");
        assert_eq!(t(".versionX 7.8\n.target sm_70\n"), "-");
        assert_eq!(t(".version 0.0\n.target sm_70\n"), "-");
    }

    /// Every way of cutting a header between two chunks, with and without a gap after the
    /// first chunk's searched part, finds it once, at its offset.
    #[test]
    fn headers_cut_by_chunk_boundaries() {
        let mut data = vec![0x11u8; 301];
        data.extend_from_slice(b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 7.8\n.target sm_70\n.address_size 64\n");
        data.resize(data.len() + 50, 0);
        let at = 301
            + data[301..]
                .windows(8)
                .position(|w| w == b".version")
                .unwrap() as u64;
        for cut in 290..400 {
            let mut f = PtxFinder::default();
            f.feed(0, &data[..cut], true);
            f.feed(cut as u64, &data[cut..], true);
            f.finish();
            let got: Vec<(u64, String)> = f
                .found
                .iter()
                .map(|(o, h)| (*o, h.target.to_string()))
                .collect();
            assert_eq!(got, [(at, "compute_70".to_string())], "cut at {cut}");
        }
        // A reader that skips: the second chunk only holds what `wanted` asks for.
        for cut in (at as usize + 1)..(at as usize + 40) {
            let mut f = PtxFinder::default();
            f.feed(0, &data[..cut], true);
            let (next, end) = f.wanted().next().expect("collecting");
            assert_eq!(next, cut as u64);
            f.feed(
                next,
                &data[next as usize..(end as usize).min(data.len())],
                false,
            );
            f.finish();
            assert_eq!(f.found.len(), 1, "cut at {cut}");
        }
    }
}
