//! NVIDIA compiler tools shipped inside Python packages: triton's bundled `ptxas` (and
//! `ptxas-blackwell`), which triton runs at kernel-compile time. Their CUDA release is the
//! banner `Cuda compilation tools, release 12.4, V12.4.131` that `ptxas --version` prints,
//! kept as a string in the executable's `.rodata` (about 22 MB into the 30 MB ptxas of
//! `nvidia-cuda-nvcc-cu12` 12.4.131). The file is read as a stream in chunks, the banner
//! searched across chunk boundaries, so memory stays bounded whatever the file's size.

use serde::{Deserialize, Serialize};
use std::io::Read;

/// The banner's fixed start; `release X.Y, VX.Y.Z` follows.
const BANNER: &[u8] = b"Cuda compilation tools, release ";
/// Bytes after [`BANNER`] a banner's tail can use (`12.4, V12.4.131`).
const TAIL: usize = 32;
/// Most bytes read of one tool file: the ptxas of CUDA 12.x/13.x are 30-60 MB.
pub const MAX_TOOL_BYTES: u64 = 512 << 20;
const CHUNK: usize = 1 << 16;

/// What the banner of a tool file says; both `None` when no banner was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolVersion {
    /// "ptxas" or "ptxas-blackwell": the file name.
    pub tool: String,
    /// The CUDA release, "12.4".
    pub release: Option<String>,
    /// The full version, "12.4.131".
    pub version: Option<String>,
    /// Why no banner is known (none found, the file was longer than [`MAX_TOOL_BYTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// triton's bundled assemblers: `triton/backends/nvidia/bin/ptxas` and `ptxas-blackwell`
/// (triton 3.x; `knobs.py` `env_nvidia_tool` looks for them there).
pub fn is_triton_ptxas(path: &str) -> bool {
    let path = format!("/{}", path.trim_start_matches('/'));
    [
        "/triton/backends/nvidia/bin/ptxas",
        "/triton/backends/nvidia/bin/ptxas-blackwell",
    ]
    .iter()
    .any(|s| path.ends_with(s))
}

/// Streaming search for the banner: feed the file's bytes in order, then [`Self::finish`].
#[derive(Default)]
pub struct BannerScan {
    /// The last bytes of the previous chunk, so a banner split between chunks is found.
    carry: Vec<u8>,
    found: Option<(String, String)>,
}

impl BannerScan {
    pub fn done(&self) -> bool {
        self.found.is_some()
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if self.found.is_some() || chunk.is_empty() {
            return;
        }
        let mut window = std::mem::take(&mut self.carry);
        window.extend_from_slice(chunk);
        for at in memchr::memmem::find_iter(&window, BANNER) {
            let rest = &window[at + BANNER.len()..];
            if rest.len() < TAIL {
                // Its tail is in the next chunk: the carry keeps the banner for then.
                break;
            }
            if let Some(v) = parse_tail(&rest[..rest.len().min(TAIL)]) {
                self.found = Some(v);
                return;
            }
        }
        let keep = BANNER.len() + TAIL;
        self.carry = window[window.len().saturating_sub(keep)..].to_vec();
    }

    /// The banner's (release, version), once found.
    pub fn finish(mut self) -> Option<(String, String)> {
        if self.found.is_none() {
            // A banner at the very end of the file: its tail may be shorter than TAIL.
            let w = std::mem::take(&mut self.carry);
            if let Some(at) = memchr::memmem::rfind(&w, BANNER) {
                self.found = parse_tail(&w[at + BANNER.len()..]);
            }
        }
        self.found
    }
}

/// `12.4, V12.4.131` → ("12.4", "12.4.131"); the format string `%d.%d, …` and anything
/// else that is not two numbers then a `, V` version of the same release is not a banner.
fn parse_tail(t: &[u8]) -> Option<(String, String)> {
    let text: String = t
        .iter()
        .take_while(|b| b.is_ascii_graphic() || **b == b' ')
        .map(|b| *b as char)
        .collect();
    let (release, rest) = text.split_once(", V")?;
    let (major, minor) = release.split_once('.')?;
    let numeric = |s: &str| !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
    if !numeric(major) || !numeric(minor) {
        return None;
    }
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let version = version.trim_end_matches('.').to_string();
    if !version.starts_with(&format!("{release}.")) && version != release {
        return None;
    }
    Some((release.to_string(), version))
}

/// Reads a tool file from `reader` (the bytes already read, `head`, first) until its banner
/// is found, at most [`MAX_TOOL_BYTES`] in all.
pub fn read_tool(tool: &str, head: &[u8], reader: &mut dyn Read) -> std::io::Result<ToolVersion> {
    let mut scan = BannerScan::default();
    scan.feed(head);
    let mut total = head.len() as u64;
    let mut buf = vec![0u8; CHUNK];
    let mut cut = false;
    while !scan.done() {
        if total >= MAX_TOOL_BYTES {
            cut = true;
            break;
        }
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        scan.feed(&buf[..n]);
    }
    let found = scan.finish();
    let unread = match (&found, cut) {
        (Some(_), _) => None,
        (None, true) => Some(format!(
            "no version banner in the first {} MiB",
            MAX_TOOL_BYTES >> 20
        )),
        (None, false) => Some("no `Cuda compilation tools, release` banner in the file".into()),
    };
    let (release, version) = found.map_or((None, None), |(r, v)| (Some(r), Some(v)));
    Ok(ToolVersion {
        tool: tool.to_string(),
        release,
        version,
        unread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic ptxas: filler, the `%d.%d` format string real ptxas also carries, then the
    /// banner as the real 12.4.131 ptxas holds it (NUL-terminated in `.rodata`).
    fn synthetic(len: usize, banner_at: usize) -> Vec<u8> {
        let mut v = vec![0x90u8; len];
        let fmt = b"Cuda compilation tools, release %d.%d, add referenced %s\0";
        v[100..100 + fmt.len()].copy_from_slice(fmt);
        let b = b"Cuda compilation tools, release 12.4, V12.4.131\0";
        v[banner_at..banner_at + b.len()].copy_from_slice(b);
        v
    }

    fn read_in(data: &[u8], chunk: usize) -> Option<(String, String)> {
        let mut s = BannerScan::default();
        for c in data.chunks(chunk) {
            s.feed(c);
        }
        s.finish()
    }

    #[test]
    fn banner_found_across_every_chunk_split() {
        let data = synthetic(4096, 1000);
        let want = Some(("12.4".to_string(), "12.4.131".to_string()));
        for chunk in 1..=90 {
            assert_eq!(read_in(&data, chunk), want, "chunk {chunk}");
        }
        assert_eq!(read_in(&data, 1 << 20), want);
        // At the very end of the file, with nothing after it.
        let mut end = vec![0u8; 200];
        end.extend_from_slice(b"Cuda compilation tools, release 13.0, V13.0.88");
        assert_eq!(
            read_in(&end, 7),
            Some(("13.0".to_string(), "13.0.88".to_string()))
        );
    }

    #[test]
    fn no_banner_is_unknown_not_a_guess() {
        // Only the format string, a release without its `, V` version, a version of another
        // release: none is a banner.
        let mut data = synthetic(4096, 1000);
        data[1000..1050].fill(0);
        assert_eq!(read_in(&data, 64), None);
        assert_eq!(read_in(b"Cuda compilation tools, release 12.4\0", 5), None);
        assert_eq!(
            read_in(b"Cuda compilation tools, release 12.4, V11.8.89\0", 5),
            None
        );
        let t = read_tool("ptxas", b"", &mut &b"\x7fELF garbage"[..]).unwrap();
        assert_eq!((t.release, t.version), (None, None));
        assert!(t.unread.unwrap().contains("no `Cuda compilation tools"));
    }

    #[test]
    fn read_tool_stops_at_the_banner() {
        let data = synthetic(300_000, 200_000);
        let mut r = &data[10..];
        let t = read_tool("ptxas-blackwell", &data[..10], &mut r).unwrap();
        assert_eq!(t.release.as_deref(), Some("12.4"));
        assert_eq!(t.version.as_deref(), Some("12.4.131"));
        assert_eq!(t.tool, "ptxas-blackwell");
        // It read up to the chunk holding the banner, not the rest.
        assert!(r.len() > 30_000, "{}", r.len());
    }

    #[test]
    fn triton_paths() {
        for yes in [
            "usr/lib/python3/dist-packages/triton/backends/nvidia/bin/ptxas",
            "opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/bin/ptxas-blackwell",
        ] {
            assert!(is_triton_ptxas(yes), "{yes}");
        }
        for no in [
            "usr/local/cuda/bin/ptxas",
            "x/triton/backends/nvidia/bin/ptxas.bak",
            "x/nottriton/backends/nvidia/bin/ptxas",
            "x/triton/backends/nvidia/bin/cuobjdump",
        ] {
            assert!(!is_triton_ptxas(no), "{no}");
        }
    }
}
