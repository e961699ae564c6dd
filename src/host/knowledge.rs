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
}

/// Knows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoKnowledge;

impl Knowledge for NoKnowledge {}
