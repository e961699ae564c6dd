//! Compatibility facts the spec rules need, behind one trait ([`Facts`]) so that rule code
//! never holds a version table. [`SpecFacts`] answers every question — driver, minor-version,
//! NGC and torch, and the facts only these rules use (EOL image series and OSes, device nodes,
//! named arch lists, repos without `latest`, from `matrices/cuda-images.toml`) — from the one
//! [`Matrix`], so `--matrices DIR` overrides and the matrix tests cover all of them.

use crate::arch::ComputeCapability;
use crate::matrix::Matrix;
use crate::version::{CudaVersion, DriverVersion};

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
    /// The CUDA of a published image whose tag does not spell it (`image_cuda` rows).
    fn image_cuda(&self, full_repo: &str, tag: &str) -> Option<Sourced<CudaVersion>> {
        let _ = (full_repo, tag);
        None
    }
    /// The CUDA that TensorFlow `major.minor` GPU builds use (`tensorflow_cuda` rows).
    fn tensorflow_cuda(&self, major: u32, minor: u32) -> Option<Sourced<CudaVersion>> {
        let _ = (major, minor);
        None
    }
    /// Whether nvcc of this CUDA release can compile for `target` (`cuda_arch.toml`); None
    /// when the release has no row.
    fn nvcc_supports(
        &self,
        cuda: &CudaVersion,
        target: &crate::arch::ArchTarget,
    ) -> Option<Sourced<bool>>;
    /// The torch release `package==version` pins in its metadata (`torch_dependents.toml`).
    fn torch_pinned_by(&self, package: &str, version: &str) -> Option<Sourced<String>>;
    /// PyTorch's release lines, their CUDA builds and the GPU code each build ships.
    fn torch(&self) -> &crate::matrix::torch::TorchMatrix;
}

/// The spec rules' view of the one [`Matrix`] (the host checks' view is
/// `crate::host::Knowledge`, implemented by the same type).
pub struct SpecFacts {
    matrix: Matrix,
}

impl SpecFacts {
    /// Facts over `matrix` (the one the command loaded, with its overrides).
    pub fn new(matrix: Matrix) -> anyhow::Result<SpecFacts> {
        Ok(SpecFacts { matrix })
    }

    /// Facts over the built-in matrices.
    pub fn load() -> anyhow::Result<SpecFacts> {
        Self::new(Matrix::embedded()?)
    }

    pub fn matrix(&self) -> &Matrix {
        &self.matrix
    }
}

impl Facts for SpecFacts {
    fn torch_pinned_by(&self, package: &str, version: &str) -> Option<Sourced<String>> {
        self.matrix
            .torch_pinned_by(package, version)
            .map(|(t, src)| Sourced {
                value: t.to_string(),
                source: src.to_string(),
            })
    }
    fn nvcc_supports(
        &self,
        cuda: &CudaVersion,
        target: &crate::arch::ArchTarget,
    ) -> Option<Sourced<bool>> {
        self.matrix
            .nvcc_supports_sourced(cuda, target)
            .map(|(value, source)| Sourced {
                value,
                source: source.to_string(),
            })
    }
    fn torch(&self) -> &crate::matrix::torch::TorchMatrix {
        self.matrix.torch()
    }
    fn cuda_min_driver(&self, cuda: CudaVersion) -> Option<Sourced<DriverVersion>> {
        // The driver a CUDA release needs is its GA row's: patch versions found in tags
        // and images are component versions, not update numbers.
        let req = self
            .matrix
            .cuda_min_driver(&CudaVersion::new(cuda.major, cuda.minor))?;
        Some(Sourced {
            value: req.linux?,
            source: req.source,
        })
    }
    fn minor_compat_floor(&self, major: u32) -> Option<Sourced<DriverVersion>> {
        self.matrix
            .minor_compat_floor(major)
            .map(|(value, source)| Sourced { value, source })
    }
    fn torch_pypi_default(&self, torch_version: &str) -> Option<Sourced<CudaVersion>> {
        let rel = self.matrix.torch().release(torch_version)?;
        let value = match rel.pypi_default_variant() {
            Some(v) => v.cuda,
            None => CudaVersion::from_cu_tag(rel.pypi_default.as_deref()?)?,
        };
        Some(Sourced {
            value,
            source: rel.source.clone(),
        })
    }
    fn ngc_pytorch_cuda(&self, tag: &str) -> Option<Sourced<CudaVersion>> {
        let yymm = tag.split('-').next()?;
        self.matrix.ngc_pytorch(yymm).map(|c| Sourced {
            value: c.cuda,
            source: c.source.clone(),
        })
    }
    fn cuda_eol(&self, cuda: CudaVersion) -> Option<Sourced<String>> {
        self.matrix.images().cuda_eol.iter().find_map(|r| {
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
        self.matrix.images().os_eol.iter().find_map(|r| {
            (r.os == os).then(|| Sourced {
                value: r.eol.clone(),
                source: r.source.clone(),
            })
        })
    }
    fn required_devices(&self) -> Vec<String> {
        self.matrix
            .images()
            .required_device
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }
    fn arch_name(&self, name: &str) -> Option<String> {
        let n = name.to_ascii_lowercase();
        self.matrix
            .images()
            .arch_name
            .iter()
            .find(|r| r.name == n)
            .map(|r| r.archs.clone())
    }
    fn image_cuda(&self, full_repo: &str, tag: &str) -> Option<Sourced<CudaVersion>> {
        self.matrix.images().image_cuda.iter().find_map(|r| {
            (r.repo == full_repo && r.tag == tag)
                .then(|| {
                    r.cuda.parse().ok().map(|value| Sourced {
                        value,
                        source: r.source.clone(),
                    })
                })
                .flatten()
        })
    }
    fn tensorflow_cuda(&self, major: u32, minor: u32) -> Option<Sourced<CudaVersion>> {
        let mm = |v: &str| -> Option<(u32, u32)> {
            let (a, b) = v.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        self.matrix.images().tensorflow_cuda.iter().find_map(|r| {
            let (fa, fb) = mm(&r.from)?;
            let (ta, tb) = mm(&r.to)?;
            let covers = fa == major && ta == major && (fb..=tb).contains(&minor);
            if !covers {
                return None;
            }
            Some(Sourced {
                value: r.cuda.parse().ok()?,
                source: r.source.clone(),
            })
        })
    }
    fn has_no_latest_tag(&self, repo: &str) -> Option<Sourced<()>> {
        self.matrix.images().no_latest_tag.iter().find_map(|r| {
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
            f.torch_pypi_default("2.8.0").unwrap().value,
            CudaVersion::new(12, 8)
        );
        // The GA row answers, whatever the patch.
        assert_eq!(
            f.cuda_min_driver("12.1.1".parse().unwrap())
                .unwrap()
                .value
                .to_string(),
            "530.30.02"
        );
        assert_eq!(
            f.minor_compat_floor(12).unwrap().value.to_string(),
            "525.60.13"
        );
        assert!(f.cuda_eol("10.1".parse().unwrap()).is_some());
        assert!(f.cuda_eol("11.8".parse().unwrap()).is_none());
        assert!(f.os_eol("Ubuntu18.04").is_some());
        assert_eq!(f.arch_name("Ampere").as_deref(), Some("8.0;8.6+PTX"));
        assert_eq!(
            f.ngc_pytorch_cuda("24.05-py3").unwrap().value,
            "12.4.1".parse::<CudaVersion>().unwrap()
        );
    }

    #[test]
    fn every_row_has_a_source() {
        let f = SpecFacts::load().unwrap();
        for r in &f.matrix().images().os_eol {
            assert!(r.source.starts_with("https://"));
        }
        for r in &f.matrix().images().cuda_eol {
            assert!(r.source.starts_with("https://"));
        }
    }
}
