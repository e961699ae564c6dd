//! CUDA toolkit installs: `usr/local/cuda-X.Y/version.json` (CUDA ≥ 11.1: `cuda.version`,
//! `cuda_cudart.version`, one entry per component) and the older `version.txt`
//! (`CUDA Version 10.2.89`), and nvcc's own binary (`Cuda compilation tools, release 11.8,
//! V11.8.89`): distributions ship the toolkit without a version file (Debian/Ubuntu's
//! `nvidia-cuda-toolkit` in `/usr/lib/nvidia-cuda-toolkit`, conda's `cuda-nvcc`). Toolkit
//! directories without any of these are found by the inventory from the tree itself and from
//! the package database.

use super::{text, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolkitVersion {
    /// The toolkit version: `cuda.version` ("12.1.1"), else `cuda_cudart.version`, else the
    /// version.txt number.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudart: Option<String>,
    /// "version.json", "version.txt" or "nvcc" (the version nvcc's binary prints).
    pub source: String,
    /// Every component's version from version.json (`libcublas` → "12.1.3.1", …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
}

pub fn parse_version_json(data: &[u8]) -> Result<ToolkitVersion, String> {
    let v: Value =
        serde_json::from_slice(data).map_err(|e| format!("invalid CUDA version.json: {e}"))?;
    let obj = v.as_object().ok_or("CUDA version.json is not an object")?;
    let components: BTreeMap<String, String> = obj
        .iter()
        .filter_map(|(k, c)| Some((k.clone(), c.get("version")?.as_str()?.trim().to_string())))
        .filter(|(_, ver)| !ver.is_empty())
        .collect();
    let cudart = components.get("cuda_cudart").cloned();
    let version = components
        .get("cuda")
        .cloned()
        .or_else(|| cudart.clone())
        .ok_or("CUDA version.json has neither cuda.version nor cuda_cudart.version")?;
    Ok(ToolkitVersion {
        version,
        cudart,
        source: "version.json".into(),
        components,
    })
}

pub fn parse_version_txt(data: &[u8]) -> Result<ToolkitVersion, String> {
    let s = text(data);
    let version = s
        .lines()
        .find_map(|l| l.trim().strip_prefix("CUDA Version"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .ok_or("CUDA version.txt has no `CUDA Version X.Y.Z` line")?;
    Ok(ToolkitVersion {
        version,
        cudart: None,
        source: "version.txt".into(),
        components: BTreeMap::new(),
    })
}

/// The line nvcc prints for `--version`, stored as one string in its binary.
const NVCC_BANNER: &[u8] = b"Cuda compilation tools, release ";

/// The toolkit version compiled into an nvcc binary: `V11.8.89` of `Cuda compilation tools,
/// release 11.8, V11.8.89`. None for a file without that line (Debian's `/usr/bin/nvcc` is a
/// shell wrapper that runs the real one).
pub fn parse_nvcc_binary(data: &[u8]) -> Option<ToolkitVersion> {
    let at = data
        .windows(NVCC_BANNER.len())
        .position(|w| w == NVCC_BANNER)?;
    let rest = &data[at + NVCC_BANNER.len()..];
    let line = &rest[..rest.iter().take(64).position(|&b| b == 0 || b == b'\n')?];
    let line = std::str::from_utf8(line).ok()?;
    // "11.8, V11.8.89": the full version after ", V"; the release alone when that is missing.
    let (release, full) = match line.split_once(", V") {
        Some((r, f)) => (r, Some(f)),
        None => (line, None),
    };
    let version = full
        .map(str::trim)
        .filter(|v| v.split('.').count() >= 2)
        .unwrap_or(release.trim());
    let ok = |v: &str| {
        !v.is_empty()
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    ok(version).then(|| ToolkitVersion {
        version: version.to_string(),
        cudart: None,
        source: "nvcc".into(),
        components: BTreeMap::new(),
    })
}

/// Reads at most `max_bytes` of `r` (an nvcc binary) in chunks and returns the version of
/// its banner: the host reads nvcc from disk (35 MB for 13.5, past what a host file read
/// holds in memory), the image walker hands the whole file to [`parse_nvcc_binary`].
pub fn scan_nvcc_banner(mut r: impl std::io::Read, max_bytes: u64) -> Option<ToolkitVersion> {
    const CHUNK: usize = 1 << 20;
    // A banner line cut by a chunk boundary is found in the next window: keep this many
    // bytes of the previous one (the prefix plus the 64-byte line parse_nvcc_binary reads).
    const KEEP: usize = NVCC_BANNER.len() + 64;
    let mut window: Vec<u8> = Vec::with_capacity(CHUNK + KEEP);
    let mut chunk = vec![0u8; CHUNK];
    let mut read_total = 0u64;
    while read_total < max_bytes {
        let want = CHUNK.min((max_bytes - read_total) as usize);
        let n = match r.read(&mut chunk[..want]) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        read_total += n as u64;
        window.extend_from_slice(&chunk[..n]);
        if let Some(v) = parse_nvcc_binary(&window) {
            return Some(v);
        }
        let drop = window.len().saturating_sub(KEEP);
        window.drain(..drop);
    }
    None
}

/// A toolkit directory an installed package names, with the CUDA version the package's
/// version gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagedToolkit {
    /// Relative to the root (`usr/lib/nvidia-cuda-toolkit`, `usr/local/cuda-12.1`).
    pub dir: String,
    pub version: String,
    /// `dpkg nvidia-cuda-toolkit 11.8.89~11.8.0-5~deb12u1`.
    pub from: String,
}

/// Toolkit directories named by installed dpkg packages: Debian/Ubuntu's
/// `nvidia-cuda-toolkit` (`11.8.89~11.8.0-5~deb12u1`, `11.5.1-1ubuntu1`) in
/// `/usr/lib/nvidia-cuda-toolkit`, NVIDIA's `cuda-toolkit-X-Y` and `cuda-nvcc-X-Y`
/// (`12.1.105-1`) in `/usr/local/cuda-X.Y`. Used for images and hosts alike.
pub fn packaged_toolkits(status: &super::dpkg::DpkgStatus) -> Vec<PackagedToolkit> {
    toolkits_of_packages(
        "dpkg",
        status
            .packages
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str())),
    )
}

/// [`packaged_toolkits`] for an rpm database (RHEL, Fedora: NVIDIA's `cuda-toolkit-X-Y` and
/// `cuda-nvcc-X-Y`, versions `12.4.1-1`).
pub fn rpm_packaged_toolkits(db: &super::rpmdb::RpmDb) -> Vec<PackagedToolkit> {
    toolkits_of_packages(
        "rpm",
        db.packages
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str())),
    )
}

/// Whether a [`PackagedToolkit::from`] names `cuda-toolkit-X-Y`, the whole release (preferred
/// over `cuda-nvcc-X-Y`'s compiler version).
pub fn names_whole_release(from: &str) -> bool {
    from.split(' ')
        .nth(1)
        .is_some_and(|n| n.starts_with("cuda-toolkit-"))
}

fn toolkits_of_packages<'a>(
    manager: &str,
    packages: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<PackagedToolkit> {
    let mut out = Vec::new();
    for (name, pkg_version) in packages {
        let Some(version) = cuda_version_of_deb(pkg_version) else {
            continue;
        };
        let dir = if name == "nvidia-cuda-toolkit" {
            "usr/lib/nvidia-cuda-toolkit".to_string()
        } else if let Some(xy) = name
            .strip_prefix("cuda-toolkit-")
            .or_else(|| name.strip_prefix("cuda-nvcc-"))
        {
            let Some((x, y)) = xy.split_once('-') else {
                continue;
            };
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !(digits(x) && digits(y)) {
                continue;
            }
            format!("usr/local/cuda-{x}.{y}")
        } else {
            continue;
        };
        out.push(PackagedToolkit {
            dir,
            version,
            from: format!("{manager} {name} {pkg_version}"),
        });
    }
    out.sort_by_key(|t| (t.dir.clone(), !names_whole_release(&t.from)));
    out
}

/// The CUDA version in a Debian package version: the upstream part without epoch, revision
/// and `~` suffix (`1:11.8.89~11.8.0-5~deb12u1` → `11.8.89`). None unless it is all digits
/// and dots.
pub fn cuda_version_of_deb(v: &str) -> Option<String> {
    let v = v.split_once(':').map_or(v, |(_, r)| r);
    let upstream = v.rsplit_once('-').map_or(v, |(u, _)| u);
    let upstream = upstream.split('~').next().unwrap_or("");
    let ok = upstream.contains('.')
        && upstream
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| upstream.to_string())
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "cuda-toolkit",
    version: 2,
    globs: &[
        "usr/local/cuda*/version.json",
        "usr/local/cuda*/version.txt",
        "usr/lib/cuda/version.json",
        "usr/lib/cuda/version.txt",
        // nvcc wherever a toolkit keeps it: /usr/local/cuda-X.Y/bin (NVIDIA's packages, RHEL),
        // /usr/lib/nvidia-cuda-toolkit/bin (Debian, Ubuntu), <conda prefix>/bin (cuda-nvcc).
        "**/bin/nvcc",
    ],
    // nvcc 13.5 is 35 MB with its banner near 30 MB.
    max_bytes: 64 << 20,
    head_only: false,
    accept: None,
    parse: |path, data| {
        let v = match path.file_name() {
            "version.json" => parse_version_json(data)?,
            "nvcc" => match parse_nvcc_binary(data) {
                Some(v) => v,
                None => return Ok(vec![]),
            },
            _ => parse_version_txt(data)?,
        };
        Ok(vec![Fact::CudaToolkitVersion(v)])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    // Shape of the file NVIDIA's installers write (abridged, CUDA 12.1 Update 1).
    const JSON: &str = r#"{
   "cuda" : { "name" : "CUDA SDK", "version" : "12.1.1" },
   "cuda_cccl" : { "name" : "CUDA C++ Core Compute Libraries", "version" : "12.1.109" },
   "cuda_cudart" : { "name" : "CUDA Runtime (cudart)", "version" : "12.1.105" },
   "libcublas" : { "name" : "CUDA cuBLAS", "version" : "12.1.3.1" }
}"#;

    #[test]
    fn version_json() {
        let v = parse_version_json(JSON.as_bytes()).unwrap();
        assert_eq!(v.version, "12.1.1");
        assert_eq!(v.cudart.as_deref(), Some("12.1.105"));
        assert_eq!(
            v.components.get("libcublas").map(String::as_str),
            Some("12.1.3.1")
        );
        let only_rt = parse_version_json(br#"{"cuda_cudart":{"version":"11.8.89"}}"#).unwrap();
        assert_eq!(only_rt.version, "11.8.89");
        assert!(parse_version_json(b"[]").is_err());
        assert!(parse_version_json(b"{}").is_err());
    }

    #[test]
    fn version_txt() {
        assert_eq!(
            parse_version_txt(b"CUDA Version 11.0.207\n")
                .unwrap()
                .version,
            "11.0.207"
        );
        assert!(parse_version_txt(b"hello").is_err());
    }

    #[test]
    fn nvcc_binary_banner() {
        // As stored in nvcc 11.8 (Debian's /usr/lib/nvidia-cuda-toolkit/bin/nvcc) and 13.5.
        let bin = b"\x7fELF\0junk\0Cuda compilation tools, release 11.8, V11.8.89\0more";
        let v = parse_nvcc_binary(bin).unwrap();
        assert_eq!((v.version.as_str(), v.source.as_str()), ("11.8.89", "nvcc"));
        let v = parse_nvcc_binary(b"Cuda compilation tools, release 13.5, V13.5.37\n").unwrap();
        assert_eq!(v.version, "13.5.37");
        // Debian's /usr/bin/nvcc wrapper script: no banner, no fact, no error.
        let wrapper = b"#!/bin/sh\nexec /usr/lib/nvidia-cuda-toolkit/bin/nvcc \"$@\"\n";
        assert!(parse_nvcc_binary(wrapper).is_none());
        let path = crate::detect::testutil::p("usr/bin/nvcc");
        assert!(matches!((DETECTOR.parse)(&path, wrapper), Ok(v) if v.is_empty()));
        assert!(parse_nvcc_binary(b"Cuda compilation tools, release x, Vy\0").is_none());
    }

    #[test]
    fn nvcc_banner_across_a_chunk_boundary_and_past_the_bound() {
        let banner = b"Cuda compilation tools, release 12.0, V12.0.140\0";
        // The banner straddles the 1 MiB chunk boundary.
        let mut bin = vec![0u8; (1 << 20) - 10];
        bin.extend_from_slice(banner);
        let v = scan_nvcc_banner(&bin[..], 64 << 20).unwrap();
        assert_eq!(v.version, "12.0.140");
        // Beyond the bound: not read, not found.
        assert!(scan_nvcc_banner(&bin[..], 1 << 20).is_none());
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "usr/local/cuda-12.1/version.json",
                "usr/local/cuda/version.txt",
                "usr/lib/cuda/version.txt",
                "usr/lib/nvidia-cuda-toolkit/bin/nvcc",
                "usr/local/cuda-11.8/bin/nvcc",
                "opt/conda/bin/nvcc",
                "usr/bin/nvcc",
            ],
            &[
                "usr/local/cuda-12.1/lib64/version.json",
                "opt/x/usr/local/cuda-12.1/version.json",
            ],
        );
    }
}
