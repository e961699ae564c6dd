//! Facts the host cannot tell about itself, asked of the GPU/CUDA matrices. Check and
//! detection code never hard-codes such facts: it asks a [`Knowledge`]. The integrator
//! implements it over `crate::matrix` (`Matrix::gpu(name)`, `max_cuda_for_driver`);
//! [`NoKnowledge`] answers "unknown" to everything, and checks then say "could not check"
//! or rely on what the driver itself reports (nvidia-smi's "CUDA Version").

use crate::arch::ComputeCapability;
use crate::version::{CudaVersion, DriverVersion};

pub trait Knowledge {
    /// Compute capability of a GPU model as nvidia-smi names it ("NVIDIA H200").
    fn gpu_cc(&self, _name: &str) -> Option<ComputeCapability> {
        None
    }
    /// Whether the model is a datacenter part.
    fn gpu_datacenter(&self, _name: &str) -> Option<bool> {
        None
    }
    /// The newest CUDA version a driver supports (what nvidia-smi prints as "CUDA Version").
    fn max_cuda_for_driver(&self, _driver: &DriverVersion) -> Option<CudaVersion> {
        None
    }
    /// The minimum driver a CUDA toolkit release needs (without minor-version compatibility).
    fn min_driver_for_cuda(&self, _cuda: &CudaVersion) -> Option<DriverVersion> {
        None
    }
    /// The CUDA release that introduced a PTX ISA version (what a driver must support to JIT it).
    fn ptx_isa_min_cuda(&self, _isa: (u16, u16)) -> Option<CudaVersion> {
        None
    }
}

/// Knows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoKnowledge;

impl Knowledge for NoKnowledge {}

/// The embedded (or `--matrices`-overridden) matrices answer.
impl Knowledge for crate::matrix::Matrix {
    fn gpu_cc(&self, name: &str) -> Option<ComputeCapability> {
        self.gpu(name).map(|g| g.cc)
    }
    fn gpu_datacenter(&self, name: &str) -> Option<bool> {
        self.gpu(name).map(|g| g.datacenter)
    }
    fn max_cuda_for_driver(&self, driver: &DriverVersion) -> Option<CudaVersion> {
        crate::matrix::Matrix::max_cuda_for_driver(self, driver)
    }
    fn min_driver_for_cuda(&self, cuda: &CudaVersion) -> Option<DriverVersion> {
        self.cuda_min_driver(cuda)?.linux
    }
    fn ptx_isa_min_cuda(&self, isa: (u16, u16)) -> Option<CudaVersion> {
        crate::matrix::Matrix::ptx_isa_min_cuda(self, isa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_answers_for_the_h200_host() {
        let m = crate::matrix::Matrix::embedded().unwrap();
        let k: &dyn Knowledge = &m;
        assert_eq!(k.gpu_cc("NVIDIA H200"), Some(ComputeCapability::new(9, 0)));
        assert_eq!(k.gpu_datacenter("NVIDIA H200"), Some(true));
        let d: DriverVersion = "580.159.04".parse().unwrap();
        assert_eq!(k.max_cuda_for_driver(&d), Some(CudaVersion::new(13, 0)));
        assert!(k.min_driver_for_cuda(&CudaVersion::new(13, 0)).is_some());
    }
}
