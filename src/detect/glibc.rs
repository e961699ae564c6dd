//! The glibc release of an image, read from `libc.so.6` ("GNU C Library (Ubuntu GLIBC
//! 2.35-0ubuntu3.1) stable release version 2.35."), else the highest `GLIBC_2.N` symbol
//! version it defines. Old images whose `libc.so.6` is a link to `libc-2.31.so` need no
//! content: the inventory reads the version from that file name.

use super::{DetectorSpec, Fact};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlibcInfo {
    /// "2.35"
    pub version: String,
    /// The banner text when present ("GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.1) …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banner: Option<String>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Digits and dots at the start of `s` ("2.35." → "2.35").
fn version_prefix(s: &[u8]) -> Option<String> {
    let n = s
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .count();
    let v = std::str::from_utf8(s.get(..n)?).ok()?.trim_end_matches('.');
    (v.contains('.') && !v.starts_with('.')).then(|| v.to_string())
}

/// Parse (the first bytes of) a `libc.so.6`.
pub fn parse_libc(data: &[u8]) -> Option<GlibcInfo> {
    const RELEASE: &[u8] = b"release version ";
    if let Some(i) = find(data, RELEASE) {
        if let Some(version) = data.get(i + RELEASE.len()..).and_then(version_prefix) {
            // The banner is the NUL-free text line the marker sits in.
            let start = data[..i]
                .iter()
                .rposition(|b| *b == 0 || *b == b'\n')
                .map_or(0, |p| p + 1);
            let end = data[i..]
                .iter()
                .position(|b| *b == 0 || *b == b'\n')
                .map_or(data.len(), |p| i + p);
            let banner = std::str::from_utf8(&data[start..end])
                .ok()
                .map(|s| s.trim().to_string());
            return Some(GlibcInfo { version, banner });
        }
    }
    // Fallback: the highest `GLIBC_X.Y[.Z]` version definition (NUL-terminated strings).
    let mut best: Option<(Vec<u32>, String)> = None;
    let mut from = 0;
    while let Some(i) = data.get(from..).and_then(|d| find(d, b"\0GLIBC_")) {
        let at = from + i + 7;
        if let Some(v) = data.get(at..).and_then(version_prefix) {
            let end = at + v.len();
            if data.get(end) == Some(&0) {
                let parts: Vec<u32> = v.split('.').filter_map(|p| p.parse().ok()).collect();
                if best.as_ref().is_none_or(|(b, _)| parts > *b) {
                    best = Some((parts, v));
                }
            }
        }
        from = at;
    }
    best.map(|(_, version)| GlibcInfo {
        version,
        banner: None,
    })
}

/// A glibc version from an old-style file name: `libc-2.31.so` → "2.31".
pub fn version_from_file_name(name: &str) -> Option<String> {
    let v = name.strip_prefix("libc-")?.strip_suffix(".so")?;
    version_prefix(v.as_bytes()).filter(|p| p.len() == v.len())
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "glibc",
    version: 1,
    globs: &[
        "lib/libc.so.6",
        "lib64/libc.so.6",
        "lib/*/libc.so.6",
        "usr/lib/libc.so.6",
        "usr/lib64/libc.so.6",
        "usr/lib/*/libc.so.6",
    ],
    // libc.so.6 is ~2 MB; the banner sits in .rodata.
    max_bytes: 4 << 20,
    head_only: false,
    accept: None,
    parse: |_, data| Ok(parse_libc(data).map(Fact::Glibc).into_iter().collect()),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    #[test]
    fn banner() {
        // The string as it appears in Debian 12's libc.so.6, between other .rodata strings.
        let data = b"\x7fELF junk\0GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.\nCopyright (C) 2022\0more";
        let g = parse_libc(data).unwrap();
        assert_eq!(g.version, "2.36");
        assert_eq!(
            g.banner.as_deref(),
            Some("GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.")
        );
    }

    #[test]
    fn symbol_versions_fallback() {
        let data = b"\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.4\0GLIBC_PRIVATE\0GLIBC_2.35\0GLIBC_2.9x\0";
        assert_eq!(parse_libc(data).unwrap().version, "2.35");
        assert!(parse_libc(b"nothing here").is_none());
    }

    #[test]
    fn host_libc_matches_getconf() {
        // Not a fixture: the test machine's own glibc against glibc's own answer
        // (`getconf GNU_LIBC_VERSION`, libc-bin). CI runs on a glibc distribution, so a
        // missing libc or getconf is a failure, not a pass.
        let paths = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/aarch64-linux-gnu/libc.so.6",
            "/lib64/libc.so.6",
            "/usr/lib64/libc.so.6",
        ];
        let (path, data) = paths
            .iter()
            .find_map(|p| std::fs::read(p).ok().map(|d| (*p, d)))
            .unwrap_or_else(|| panic!("no host glibc at any of {paths:?}"));
        let out = std::process::Command::new("getconf")
            .arg("GNU_LIBC_VERSION")
            .output()
            .expect("getconf (libc-bin) is part of every glibc system");
        let want = String::from_utf8_lossy(&out.stdout);
        let want = want.trim().strip_prefix("glibc ").unwrap_or_else(|| {
            panic!("getconf GNU_LIBC_VERSION: {want:?}");
        });
        let g = parse_libc(&data).unwrap();
        assert_eq!(g.version, want, "{path}: {g:?}");
    }

    #[test]
    fn old_file_names() {
        assert_eq!(
            version_from_file_name("libc-2.31.so").as_deref(),
            Some("2.31")
        );
        assert_eq!(
            version_from_file_name("libc-2.17.so").as_deref(),
            Some("2.17")
        );
        assert_eq!(version_from_file_name("libc-x.so"), None);
        assert_eq!(version_from_file_name("libc.so.6"), None);
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "usr/lib/x86_64-linux-gnu/libc.so.6",
                "lib/x86_64-linux-gnu/libc.so.6",
                "usr/lib64/libc.so.6",
            ],
            &[
                "opt/conda/lib/libc.so.6x",
                "usr/lib/x86_64-linux-gnu/libc.so",
                "x/site-packages/libc.so.6",
            ],
        );
    }
}
