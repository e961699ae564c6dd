//! Python distributions: `*.dist-info/METADATA` (and `*.egg-info/PKG-INFO`), `WHEEL` tags and
//! `RECORD`'s shared-object entries (so a library file can be mapped to the wheel that
//! installed it, e.g. `nvidia/cu13/lib/libcudart.so.13` → `nvidia-cuda-runtime 13.0.96`, and
//! any package's binaries give evidence of the CUDA it needs: `spconv`, `ctranslate2`,
//! `faiss` carry no GPU word a name list could know).

use super::{text, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};

/// The core metadata of one installed distribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistMetadata {
    /// `Name:` as written (normalize with [`normalize_name`] before comparing).
    pub name: String,
    /// `Version:` as written (PEP 440 text, e.g. `2.11.0`, `2.5.1+cu121`).
    pub version: String,
    /// `Requires-Dist:` lines, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<String>,
}

/// A `WHEEL` file: the wheel tags the dist was built for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelInfo {
    pub tags: Vec<String>,
}

/// The shared objects listed in a `RECORD` (paths relative to site-packages).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistRecord {
    pub files: Vec<String>,
}

/// Whether a PEP 440 `version` meets the specifiers `spec` (`<10.0,>=9.8`); `None` when
/// either does not parse (unknown: no verdict rests on it).
pub fn version_satisfies(version: &str, spec: &str) -> Option<bool> {
    use std::str::FromStr;
    let v = pep440_rs::Version::from_str(version).ok()?;
    let s = pep440_rs::VersionSpecifiers::from_str(spec).ok()?;
    Some(s.contains(&v))
}

/// PEP 503 normalization: lowercase, runs of `-`, `_`, `.` become one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.trim().chars() {
        if c == '-' || c == '_' || c == '.' {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Iterate the header fields of an RFC 822-style metadata file (stops at the first blank
/// line; continuation lines are joined with `\n`).
fn header_fields(s: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in s.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push('\n');
                last.1.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

/// Parse `METADATA` / `PKG-INFO`.
pub fn parse_metadata(data: &[u8]) -> Result<DistMetadata, String> {
    let s = text(data);
    let mut name = None;
    let mut version = None;
    let mut requires = Vec::new();
    let mut requires_python = None;
    for (k, v) in header_fields(&s) {
        match k.to_ascii_lowercase().as_str() {
            "name" if name.is_none() => name = Some(v),
            "version" if version.is_none() => version = Some(v),
            "requires-dist" => requires.push(v),
            "requires-python" => requires_python = Some(v),
            _ => {}
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or("metadata has no Name field")?;
    let version = version
        .filter(|n| !n.is_empty())
        .ok_or("metadata has no Version field")?;
    Ok(DistMetadata {
        name,
        version,
        requires,
        requires_python,
    })
}

/// Parse a `WHEEL` file: every `Tag:` line, in order.
pub fn parse_wheel(data: &[u8]) -> WheelInfo {
    let s = text(data);
    let tags = header_fields(&s)
        .into_iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("tag"))
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
        .collect();
    WheelInfo { tags }
}

/// The first CSV field of a RECORD line (handles `"quoted, paths"` with `""` escapes).
fn record_path(line: &str) -> Option<String> {
    let line = line.trim_end_matches('\r');
    if let Some(rest) = line.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    out.push('"');
                } else {
                    return Some(out);
                }
            } else {
                out.push(c);
            }
        }
        None
    } else {
        let p = line.split(',').next().unwrap_or("");
        (!p.is_empty()).then(|| p.to_string())
    }
}

/// Whether a file name is a shared object (`x.so`, `x.so.12`, `x.so.12.1.105`).
pub fn is_shared_object(file_name: &str) -> bool {
    file_name.ends_with(".so") || file_name.contains(".so.")
}

/// Parse a `RECORD`, keeping only shared objects (a torch RECORD lists ~15k files, almost all
/// Python sources and headers).
pub fn parse_record(data: &[u8]) -> DistRecord {
    let s = text(data);
    let mut files: Vec<String> = s
        .lines()
        .filter_map(record_path)
        .filter(|p| is_shared_object(p.rsplit('/').next().unwrap_or("")))
        .collect();
    files.sort();
    files.dedup();
    DistRecord { files }
}

/// The normalized dist name from a `<name>-<version>.dist-info` directory name.
pub fn dist_dir_name(dir: &str) -> Option<String> {
    let stem = dir
        .strip_suffix(".dist-info")
        .or_else(|| dir.strip_suffix(".egg-info"))?;
    let name = stem.split('-').next()?;
    (!name.is_empty()).then(|| normalize_name(name))
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "python-dist",
    version: 2,
    globs: &[
        "**/site-packages/*.dist-info/METADATA",
        "**/dist-packages/*.dist-info/METADATA",
        "**/site-packages/*.dist-info/WHEEL",
        "**/dist-packages/*.dist-info/WHEEL",
        "**/site-packages/*.egg-info/PKG-INFO",
        "**/dist-packages/*.egg-info/PKG-INFO",
        "**/site-packages/*.egg-info",
        "**/dist-packages/*.egg-info",
        "**/site-packages/*.dist-info/RECORD",
        "**/dist-packages/*.dist-info/RECORD",
    ],
    // RECORD of torch is ~2 MB; METADATA with a long description a few hundred KB.
    max_bytes: 16 << 20,
    head_only: false,
    // Every RECORD: the shared objects it lists are few next to its Python files, and any
    // package's binaries may NEED CUDA (the inventory's `cuda_need`).
    accept: None,
    parse: |path, data| {
        let fact = match path.file_name() {
            "WHEEL" => Fact::WheelTags(parse_wheel(data)),
            "RECORD" => Fact::DistRecord(parse_record(data)),
            _ => Fact::PythonDist(parse_metadata(data)?),
        };
        Ok(vec![fact])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::{assert_wants, p};

    const TORCH_METADATA: &str = include_str!("../../testdata/python/torch-2.11.0.METADATA");
    const TORCH_WHEEL: &str = include_str!("../../testdata/python/torch-2.11.0.WHEEL");
    const RUNTIME_WHEEL: &str =
        include_str!("../../testdata/python/nvidia_cuda_runtime-13.0.96.WHEEL");
    const CUDNN_METADATA: &str =
        include_str!("../../testdata/python/nvidia_cudnn_cu13-9.19.0.56.METADATA");

    #[test]
    fn parses_real_torch_metadata() {
        let m = parse_metadata(TORCH_METADATA.as_bytes()).unwrap();
        assert_eq!(m.name, "torch");
        assert_eq!(m.version, "2.11.0");
        assert_eq!(m.requires_python.as_deref(), Some(">=3.10"));
        let want: Vec<&str> = TORCH_METADATA
            .lines()
            .filter_map(|l| l.strip_prefix("Requires-Dist: "))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(m.requires, want);
    }

    #[test]
    fn parses_real_cudnn_metadata() {
        let m = parse_metadata(CUDNN_METADATA.as_bytes()).unwrap();
        assert_eq!(normalize_name(&m.name), "nvidia-cudnn-cu13");
        assert_eq!(m.version, "9.19.0.56");
        assert_eq!(m.requires, vec!["nvidia-cublas".to_string()]);
    }

    #[test]
    fn metadata_body_and_continuations_do_not_leak() {
        let m = parse_metadata(
            b"Name: x\nVersion: 1.0\nLicense: line one\n    line two\n\nVersion: 9\nRequires-Dist: y\n",
        )
        .unwrap();
        assert_eq!(m.version, "1.0");
        assert!(m.requires.is_empty());
        assert!(parse_metadata(b"Name: x\n").is_err());
        assert!(parse_metadata(b"\x00\xff garbage").is_err());
    }

    #[test]
    fn wheel_tags_every_tag_line() {
        assert_eq!(
            parse_wheel(TORCH_WHEEL.as_bytes()).tags,
            vec!["cp312-cp312-manylinux_2_28_x86_64"]
        );
        assert_eq!(
            parse_wheel(RUNTIME_WHEEL.as_bytes()).tags,
            vec![
                "py3-none-manylinux2014_x86_64",
                "py3-none-manylinux_2_17_x86_64"
            ]
        );
    }

    #[test]
    fn record_keeps_shared_objects_only() {
        let r = parse_record(
            b"nvidia/cu13/lib/libcudart.so.13,sha256=abc,123\n\
              nvidia/cu13/include/cuda.h,sha256=def,9\n\
              \"odd, name/libx.so\",sha256=1,2\n\
              ../../bin/tool,,\n\
              nvidia_cuda_runtime-13.0.96.dist-info/RECORD,,\n",
        );
        assert_eq!(
            r.files,
            vec!["nvidia/cu13/lib/libcudart.so.13", "odd, name/libx.so"]
        );
    }

    #[test]
    fn names_normalize_per_pep503() {
        assert_eq!(normalize_name("Nvidia_CUDNN.cu13"), "nvidia-cudnn-cu13");
        assert_eq!(normalize_name("flash__attn"), "flash-attn");
        assert_eq!(
            dist_dir_name("nvidia_nccl_cu13-2.28.9.dist-info").as_deref(),
            Some("nvidia-nccl-cu13")
        );
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "opt/torch/.venv/lib/python3.12/site-packages/torch-2.11.0.dist-info/METADATA",
                "usr/lib/python3/dist-packages/numpy-1.26.4.dist-info/WHEEL",
                "usr/local/lib/python3.10/dist-packages/apex-0.1.egg-info/PKG-INFO",
                "usr/lib/python3/dist-packages/six-1.16.0.egg-info",
                "site-packages/torch-2.11.0.dist-info/RECORD",
                "x/site-packages/nvidia_cudnn_cu13-9.19.0.56.dist-info/RECORD",
                // Not a GPU name, but its binaries NEED CUDA.
                "x/site-packages/spconv_cu126-2.3.8.dist-info/RECORD",
                "x/site-packages/ctranslate2-4.8.5.dist-info/RECORD",
            ],
            &[
                "x/site-packages/torch-2.11.0.dist-info/LICENSE",
                "x/site-packages/torch/METADATA",
                "x/site-packages/a/b-1.dist-info/METADATA",
            ],
        );
        let _ = p("x");
    }
}
