//! NVIDIA GPUs on the PCI bus (`/sys/bus/pci/devices/*`, vendor 0x10de, display class), with
//! their device and subsystem IDs: what names a GPU when neither nvidia-smi nor the driver
//! can.

use super::reader::HostReader;

/// One NVIDIA display-class PCI function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciGpuDevice {
    /// The bus address directory name ("0000:01:00.0").
    pub bus: String,
    pub device: u16,
    /// Subsystem vendor and device, when sysfs has them.
    pub subsystem: Option<(u16, u16)>,
}

/// "0x20f5\n" → 0x20f5.
fn hex_u16(s: &str) -> Option<u16> {
    let t = s.trim();
    u16::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

/// Every NVIDIA display-class (0x03xxxx) device under `/sys/bus/pci/devices`, in directory
/// order; empty when the directory is not readable.
pub fn nvidia_pci_gpus(r: &dyn HostReader) -> Vec<PciGpuDevice> {
    let Some(devs) = r.list_dir("/sys/bus/pci/devices") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (bus, _) in devs {
        let base = format!("/sys/bus/pci/devices/{bus}");
        let attr = |name: &str| r.read_string(&format!("{base}/{name}"));
        if attr("vendor").and_then(|v| hex_u16(&v)) != Some(0x10de) {
            continue;
        }
        if !attr("class").is_some_and(|c| c.trim().starts_with("0x03")) {
            continue;
        }
        let Some(device) = attr("device").and_then(|d| hex_u16(&d)) else {
            continue;
        };
        let subsystem = attr("subsystem_vendor")
            .and_then(|v| hex_u16(&v))
            .zip(attr("subsystem_device").and_then(|d| hex_u16(&d)));
        out.push(PciGpuDevice {
            bus,
            device,
            subsystem,
        });
    }
    out
}
