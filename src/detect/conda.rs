//! Conda packages: `<prefix>/conda-meta/<name>-<version>-<build>.json`. Every package is kept
//! (they are small); of the `files` list only shared objects are kept, so library files can
//! be mapped to the package that installed them.

use super::{python_dist::is_shared_object, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CondaMeta {
    pub name: String,
    pub version: String,
    pub build: Option<String>,
    /// `channel` (a URL or a name), else `schannel`.
    pub channel: Option<String>,
    /// Shared objects from `files`, relative to the environment prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub so_files: Vec<String>,
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub fn parse_conda_meta(data: &[u8]) -> Result<CondaMeta, String> {
    let v: Value =
        serde_json::from_slice(data).map_err(|e| format!("invalid conda-meta JSON: {e}"))?;
    let name = str_field(&v, "name").ok_or("conda-meta JSON has no name")?;
    let version = str_field(&v, "version").ok_or("conda-meta JSON has no version")?;
    let build = str_field(&v, "build").or_else(|| str_field(&v, "build_string"));
    let channel = str_field(&v, "channel").or_else(|| str_field(&v, "schannel"));
    let mut so_files: Vec<String> = v
        .get("files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|f| is_shared_object(f.rsplit('/').next().unwrap_or("")))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    so_files.sort();
    so_files.dedup();
    Ok(CondaMeta {
        name,
        version,
        build,
        channel,
        so_files,
    })
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "conda-meta",
    version: 1,
    globs: &["**/conda-meta/*.json"],
    // `paths_data` of big packages (pytorch, cuda-toolkit) runs to several MB; a truncated
    // JSON would not parse.
    max_bytes: 64 << 20,
    head_only: false,
    accept: None,
    parse: |_, data| Ok(vec![Fact::CondaMeta(parse_conda_meta(data)?)]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    #[test]
    fn parses_conda_meta() {
        let j = br#"{
          "build": "py3.11_cuda12.1_cudnn8.9.2_0",
          "build_number": 0,
          "channel": "https://conda.anaconda.org/pytorch/linux-64",
          "depends": ["pytorch-cuda >=12.1,<12.2"],
          "files": ["lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
                    "lib/python3.11/site-packages/torch/__init__.py"],
          "name": "pytorch",
          "version": "2.1.0"
        }"#;
        let m = parse_conda_meta(j).unwrap();
        assert_eq!(m.name, "pytorch");
        assert_eq!(m.version, "2.1.0");
        assert_eq!(m.build.as_deref(), Some("py3.11_cuda12.1_cudnn8.9.2_0"));
        assert_eq!(
            m.channel.as_deref(),
            Some("https://conda.anaconda.org/pytorch/linux-64")
        );
        assert_eq!(
            m.so_files,
            vec!["lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"]
        );
    }

    #[test]
    fn schannel_fallback_and_errors() {
        let m = parse_conda_meta(
            br#"{"name":"cudatoolkit","version":"11.8.0","build":"h6a678d5_0","schannel":"defaults"}"#,
        )
        .unwrap();
        assert_eq!(m.channel.as_deref(), Some("defaults"));
        assert!(parse_conda_meta(br#"{"name":"x"}"#).is_err());
        assert!(parse_conda_meta(b"{truncated").is_err());
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "opt/conda/conda-meta/pytorch-2.1.0-py3.11_cuda12.1_cudnn8.9.2_0.json",
                "opt/conda/envs/x/conda-meta/cuda-version-12.1-h1d6eff3_3.json",
            ],
            &[
                "opt/conda/conda-meta/history",
                "opt/conda/pkgs/x/info/index.json",
            ],
        );
    }
}
