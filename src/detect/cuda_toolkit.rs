//! CUDA toolkit installs: `usr/local/cuda-X.Y/version.json` (CUDA ≥ 11.1: `cuda.version`,
//! `cuda_cudart.version`, one entry per component) and the older `version.txt`
//! (`CUDA Version 10.2.89`). Toolkit directories without either are found by the inventory
//! from the tree itself.

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
    /// "version.json" or "version.txt".
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

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "cuda-toolkit",
    version: 1,
    globs: &[
        "usr/local/cuda*/version.json",
        "usr/local/cuda*/version.txt",
        "usr/lib/cuda/version.json",
        "usr/lib/cuda/version.txt",
    ],
    max_bytes: 1 << 20,
    accept: None,
    parse: |path, data| {
        let v = if path.file_name() == "version.json" {
            parse_version_json(data)?
        } else {
            parse_version_txt(data)?
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
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "usr/local/cuda-12.1/version.json",
                "usr/local/cuda/version.txt",
                "usr/lib/cuda/version.txt",
            ],
            &[
                "usr/local/cuda-12.1/lib64/version.json",
                "opt/x/usr/local/cuda-12.1/version.json",
            ],
        );
    }
}
