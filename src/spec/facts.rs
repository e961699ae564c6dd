//! Compatibility facts the spec rules need, behind one trait ([`Facts`]) so that rule code
//! never holds a version table. [`SpecFacts`] reads the embedded `matrices/cuda-images.toml`
//! (facts only these rules use) and `matrices/spec-interim.toml` (driver / torch / NGC facts
//! that the shared `Matrix` / `TorchMatrix` will provide; rewire [`SpecFacts::load`] to them
//! once they are on main).

use crate::arch::ComputeCapability;
use crate::version::{CudaVersion, DriverVersion};
use serde::Deserialize;

/// A fact with the URL it came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

pub trait Facts: Send + Sync {
    /// Minimum driver for exactly this CUDA release (no minor-version compatibility).
    fn cuda_min_driver(&self, cuda: CudaVersion) -> Option<Sourced<DriverVersion>>;
    /// Oldest driver that runs any release of this CUDA major (minor-version compatibility).
    fn minor_compat_floor(&self, major: u32) -> Option<Sourced<DriverVersion>>;
    /// The CUDA variant PyPI serves for `torch==version` (Linux x86_64).
    fn torch_pypi_default(&self, torch_version: &str) -> Option<Sourced<CudaVersion>>;
    /// CUDA inside `nvcr.io/nvidia/pytorch:<tag>`.
    fn ngc_pytorch_cuda(&self, tag: &str) -> Option<Sourced<CudaVersion>>;
    /// End-of-life CUDA image series containing `cuda`.
    fn cuda_eol(&self, cuda: CudaVersion) -> Option<Sourced<String>>;
    /// End-of-life base OS (`ubuntu18.04`): its EOL date.
    fn os_eol(&self, os: &str) -> Option<Sourced<String>>;
    /// Control device nodes needed next to `/dev/nvidiaN`.
    fn required_devices(&self) -> Vec<String>;
    /// A named TORCH_CUDA_ARCH_LIST entry (`Ampere`) → its list (`8.0;8.6+PTX`).
    fn arch_name(&self, name: &str) -> Option<String>;
    /// Image repositories without a `latest` tag.
    fn has_no_latest_tag(&self, repo: &str) -> Option<Sourced<()>>;
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CudaDriverRow {
    cuda: String,
    min_driver: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MinorCompatRow {
    major: u32,
    min_driver: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TorchRow {
    torch: String,
    cuda: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NgcRow {
    tag: String,
    cuda: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Interim {
    cuda_driver: Vec<CudaDriverRow>,
    minor_compat: Vec<MinorCompatRow>,
    torch_pypi_default: Vec<TorchRow>,
    ngc_pytorch: Vec<NgcRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EolRow {
    series: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OsEolRow {
    os: String,
    eol: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceRow {
    path: String,
    #[allow(dead_code)]
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchNameRow {
    name: String,
    archs: String,
    #[allow(dead_code)]
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoRow {
    repo: String,
    source: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Images {
    cuda_eol: Vec<EolRow>,
    os_eol: Vec<OsEolRow>,
    required_device: Vec<DeviceRow>,
    arch_name: Vec<ArchNameRow>,
    no_latest_tag: Vec<RepoRow>,
}

pub const INTERIM_TOML: &str = include_str!("../../matrices/spec-interim.toml");
pub const IMAGES_TOML: &str = include_str!("../../matrices/cuda-images.toml");

/// The embedded tables.
pub struct SpecFacts {
    interim: Interim,
    images: Images,
}

impl SpecFacts {
    pub fn load() -> anyhow::Result<SpecFacts> {
        Ok(SpecFacts {
            interim: toml::from_str(INTERIM_TOML)
                .map_err(|e| anyhow::anyhow!("matrices/spec-interim.toml: {e}"))?,
            images: toml::from_str(IMAGES_TOML)
                .map_err(|e| anyhow::anyhow!("matrices/cuda-images.toml: {e}"))?,
        })
    }
}

fn torch_minor(v: &str) -> Option<String> {
    let core = v.split('+').next()?;
    let mut it = core.split('.');
    let a = it.next()?;
    let b: String = it
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    if a.is_empty() || b.is_empty() || !a.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(format!("{a}.{b}"))
}

impl Facts for SpecFacts {
    fn cuda_min_driver(&self, cuda: CudaVersion) -> Option<Sourced<DriverVersion>> {
        self.interim.cuda_driver.iter().find_map(|r| {
            let v: CudaVersion = r.cuda.parse().ok()?;
            if v.same_release(&cuda) {
                Some(Sourced {
                    value: r.min_driver.parse().ok()?,
                    source: r.source.clone(),
                })
            } else {
                None
            }
        })
    }
    fn minor_compat_floor(&self, major: u32) -> Option<Sourced<DriverVersion>> {
        self.interim.minor_compat.iter().find_map(|r| {
            (r.major == major).then(|| {
                r.min_driver.parse().ok().map(|value| Sourced {
                    value,
                    source: r.source.clone(),
                })
            })?
        })
    }
    fn torch_pypi_default(&self, torch_version: &str) -> Option<Sourced<CudaVersion>> {
        let mm = torch_minor(torch_version)?;
        self.interim.torch_pypi_default.iter().find_map(|r| {
            (r.torch == mm).then(|| {
                r.cuda.parse().ok().map(|value| Sourced {
                    value,
                    source: r.source.clone(),
                })
            })?
        })
    }
    fn ngc_pytorch_cuda(&self, tag: &str) -> Option<Sourced<CudaVersion>> {
        let yymm = tag.split('-').next()?;
        self.interim.ngc_pytorch.iter().find_map(|r| {
            (r.tag == yymm).then(|| {
                r.cuda.parse().ok().map(|value| Sourced {
                    value,
                    source: r.source.clone(),
                })
            })?
        })
    }
    fn cuda_eol(&self, cuda: CudaVersion) -> Option<Sourced<String>> {
        self.images.cuda_eol.iter().find_map(|r| {
            let hit = match r.series.split_once('.') {
                Some((a, b)) => a.parse() == Ok(cuda.major) && b.parse() == Ok(cuda.minor),
                None => r.series.parse() == Ok(cuda.major),
            };
            hit.then(|| Sourced {
                value: r.series.clone(),
                source: r.source.clone(),
            })
        })
    }
    fn os_eol(&self, os: &str) -> Option<Sourced<String>> {
        let os = os.to_ascii_lowercase();
        self.images.os_eol.iter().find_map(|r| {
            (r.os == os).then(|| Sourced {
                value: r.eol.clone(),
                source: r.source.clone(),
            })
        })
    }
    fn required_devices(&self) -> Vec<String> {
        self.images
            .required_device
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }
    fn arch_name(&self, name: &str) -> Option<String> {
        let n = name.to_ascii_lowercase();
        self.images
            .arch_name
            .iter()
            .find(|r| r.name == n)
            .map(|r| r.archs.clone())
    }
    fn has_no_latest_tag(&self, repo: &str) -> Option<Sourced<()>> {
        self.images.no_latest_tag.iter().find_map(|r| {
            (r.repo == repo).then(|| Sourced {
                value: (),
                source: r.source.clone(),
            })
        })
    }
}

/// Compute capabilities named by a GPU name when a target lacks one: none here; targets carry
/// their capabilities (resolved by the target module against the GPU matrix).
pub fn target_ccs(t: &crate::target::Target) -> Vec<ComputeCapability> {
    t.capabilities()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_load_and_answer() {
        let f = SpecFacts::load().unwrap();
        assert_eq!(
            f.torch_pypi_default("2.3.0").unwrap().value,
            CudaVersion::new(12, 1)
        );
        assert_eq!(
            f.cuda_min_driver("12.1.1".parse().unwrap())
                .unwrap()
                .value
                .to_string(),
            "530.30.02"
        );
        assert!(f.cuda_eol("10.1".parse().unwrap()).is_some());
        assert!(f.cuda_eol("11.8".parse().unwrap()).is_none());
        assert!(f.os_eol("Ubuntu18.04").is_some());
        assert_eq!(f.arch_name("Ampere").as_deref(), Some("8.0;8.6+PTX"));
        assert!(f.ngc_pytorch_cuda("25.06-py3").is_some());
    }

    #[test]
    fn every_row_has_a_source_and_versions_parse() {
        let f = SpecFacts::load().unwrap();
        for r in &f.interim.cuda_driver {
            assert!(r.source.starts_with("https://"));
            r.cuda.parse::<CudaVersion>().unwrap();
            r.min_driver.parse::<DriverVersion>().unwrap();
        }
        let mut prev = CudaVersion::new(0, 0);
        for r in &f.interim.cuda_driver {
            let v: CudaVersion = r.cuda.parse().unwrap();
            assert!(v > prev, "cuda_driver not sorted at {}", r.cuda);
            prev = v;
        }
        for r in &f.images.os_eol {
            assert!(r.source.starts_with("https://"));
        }
    }
}
