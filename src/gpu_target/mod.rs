//! What we check against: a GPU host (driver + GPUs), given on the command line, read from a
//! host profile (`gpulint host --format json`), detected locally, or a fleet of node pools.

pub mod cli;
pub mod nodes;
pub mod schedule;

use crate::arch::ComputeCapability;
use crate::source::Platform;
use crate::version::{CudaVersion, DriverVersion};
use serde::{Deserialize, Serialize};

/// One GPU of a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetGpu {
    /// As the user or nvidia-smi named it ("NVIDIA H200", "T4", "sm_90").
    pub name: String,
    /// None when the name is not in the GPU matrix and no capability was given: "unknown".
    pub cc: Option<ComputeCapability>,
    /// Datacenter part (forward compatibility works only there); None = unknown.
    pub datacenter: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// A host or node pool to judge an image against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// Display name: "host", a fleet pool name, or built from the flags ("H100 / 535.104.05").
    pub name: String,
    /// None = unknown driver: driver rules report requirements instead of verdicts.
    pub driver: Option<DriverVersion>,
    /// The CUDA version the driver supports, when reported (nvidia-smi "CUDA Version").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_cuda: Option<CudaVersion>,
    pub gpus: Vec<TargetGpu>,
    /// os/arch of the nodes; None = unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

impl Target {
    /// Distinct compute capabilities of the target's GPUs, sorted.
    pub fn capabilities(&self) -> Vec<ComputeCapability> {
        let mut v: Vec<_> = self.gpus.iter().filter_map(|g| g.cc).collect();
        v.sort();
        v.dedup();
        v
    }
}
