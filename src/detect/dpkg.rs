//! Debian packages: `var/lib/dpkg/status` and distroless `var/lib/dpkg/status.d/<pkg>`
//! (one stanza per file, often without a `Status:` field). Every installed package is kept;
//! the inventory picks the CUDA/NVIDIA ones. rpm databases are read by [`super::rpmdb`].

use super::{text, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DpkgPackage {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DpkgStatus {
    pub packages: Vec<DpkgPackage>,
}

/// Parse a dpkg status file. Stanzas whose `Status:` says anything but installed
/// (`deinstall ok config-files`, half-installed, …) are dropped; stanzas without `Status:`
/// (distroless) are kept.
pub fn parse_status(data: &[u8]) -> DpkgStatus {
    let s = text(data);
    let mut packages = Vec::new();
    let mut cur: (Option<String>, Option<String>, Option<String>, bool) = (None, None, None, true);
    let mut flush = |cur: &mut (Option<String>, Option<String>, Option<String>, bool)| {
        let (n, v, a, ok) = std::mem::replace(cur, (None, None, None, true));
        if let (Some(name), Some(version), true) = (n, v, ok) {
            packages.push(DpkgPackage {
                name,
                version,
                arch: a,
            });
        }
    };
    for line in s.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            flush(&mut cur);
            continue;
        }
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k {
            "Package" => cur.0 = Some(v),
            "Version" => cur.1 = Some(v),
            "Architecture" => cur.2 = Some(v),
            "Status" => cur.3 = v.split_whitespace().last() == Some("installed"),
            _ => {}
        }
    }
    flush(&mut cur);
    DpkgStatus { packages }
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "dpkg",
    version: 1,
    globs: &["var/lib/dpkg/status", "var/lib/dpkg/status.d/*"],
    max_bytes: 32 << 20,
    head_only: false,
    accept: Some(|path| !path.file_name().ends_with(".md5sums")),
    parse: |_, data| Ok(vec![Fact::DpkgStatus(parse_status(data))]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    const STATUS: &str = "Package: cuda-cudart-12-1\n\
Status: install ok installed\n\
Priority: optional\n\
Architecture: amd64\n\
Version: 12.1.105-1\n\
Description: CUDA Runtime native Libraries\n \
 continuation: not a field\n\
\n\
Package: libcudnn8\n\
Status: deinstall ok config-files\n\
Architecture: amd64\n\
Version: 8.9.0.131-1+cuda12.1\n\
\n\
Package: libnccl2\n\
Status: install ok installed\n\
Architecture: amd64\n\
Version: 2.17.1-1+cuda12.1\n";

    #[test]
    fn installed_packages_only() {
        let s = parse_status(STATUS.as_bytes());
        let names: Vec<(&str, &str)> = s
            .packages
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("cuda-cudart-12-1", "12.1.105-1"),
                ("libnccl2", "2.17.1-1+cuda12.1")
            ]
        );
    }

    #[test]
    fn distroless_stanza_without_status() {
        let s = parse_status(b"Package: libc6\nVersion: 2.36-9+deb12u4\nArchitecture: amd64\n");
        assert_eq!(s.packages.len(), 1);
        assert_eq!(s.packages[0].version, "2.36-9+deb12u4");
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &["var/lib/dpkg/status", "var/lib/dpkg/status.d/libc6"],
            &[
                "var/lib/dpkg/status-old",
                "var/lib/dpkg/status.d/libc6.md5sums",
                "x/var/lib/dpkg/status",
            ],
        );
    }
}
