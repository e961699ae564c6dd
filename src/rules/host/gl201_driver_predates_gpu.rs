//! GL201's cause from the tables, for when the kernel log says nothing (rotated, or not
//! captured): a GPU on the bus that the installed driver is older than. The GPU is named by
//! its PCI device ID (NVIDIA's open-gpu-kernel-modules table, `gpu_pci.toml`); its floor is
//! the model's first listing in that table (Blackwell and later) or, coarser, the minimum
//! driver of the first CUDA release that targets its architecture (`cuda_arch.toml`,
//! `cuda_driver.toml`), the same floors GL011 uses for a target.

use super::gl201_gpu_not_visible::Cause;
use crate::host::evidence::Evidence;
use crate::host::pci::PciGpuDevice;
use crate::matrix::{Basis, Facts};
use crate::version::DriverVersion;

/// Why the driver cannot drive `dev`, when the tables say it is older than the GPU; `None`
/// when the GPU can't be named or placed, or the driver is at or above its floor.
pub(crate) fn cause(facts: &Facts, driver: &DriverVersion, dev: &PciGpuDevice) -> Option<Cause> {
    let gpu = facts.gpu_by_pci(dev.device, dev.subsystem)?;
    let model = gpu.value.model?;
    // A verdict rests only on rows a document states or an artifact shows, and on the arch
    // floor only below the driver that surely lacks the architecture (CUDA releases without an
    // arch row leave the drivers between unknown).
    let stated = |b: Basis| b != Basis::Inferred;
    let arch = facts
        .gpu_driver_floor(model.cc.sm())
        .filter(|a| stated(a.basis))
        .and_then(|a| {
            let below = a.value.surely_unsupported_below.clone()?;
            Some((below, a))
        });
    let listed = facts.gpu_first_listed(model).filter(|l| stated(l.basis));
    // The higher floor decides: a driver below either does not know the GPU.
    let (floor, why, source) = match (&arch, &listed) {
        (Some((_, a)), Some(l)) if l.value > a.value.driver => (
            l.value.clone(),
            format!(
                "NVIDIA's PCI device-ID table first lists it in {} (compute capability {} needs {} from CUDA {})",
                l.value, model.cc, a.value.driver, a.value.first_release
            ),
            l.source.clone(),
        ),
        (Some((below, a)), _) => (
            below.clone(),
            format!(
                "compute capability {} is first targeted by CUDA {}, whose minimum Linux driver is {}",
                model.cc, a.value.first_release, a.value.driver
            ),
            a.source.clone(),
        ),
        (None, Some(l)) => (
            l.value.clone(),
            format!("NVIDIA's PCI device-ID table first lists it in {}", l.value),
            l.source.clone(),
        ),
        (None, None) => return None,
    };
    if *driver >= floor {
        return None;
    }
    let pci_id = format!("10de:{:04x}", dev.device);
    Some(Cause {
        what: format!(
            "driver {driver} is older than GPU {} ({}, PCI ID {pci_id}): {why}",
            dev.bus, gpu.value.name
        ),
        fix: format!(
            "Install driver {floor} or newer (a production branch at or above it) for {}; the kernel log, when captured, says `NVRM: ... is not supported by the NVIDIA {driver} driver release`.",
            gpu.value.name
        ),
        evidence: vec![Evidence::note(format!("floor {floor}: {source}"))],
        deliberate: false,
    })
}
