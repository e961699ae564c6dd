//! The host profile: what `gpulint host --format json` prints and `gpulint image --host`
//! reads. Detection prefers `nvidia-smi --query-gpu` CSV (the only source of `compute_cap`),
//! fills in from `nvidia-smi -q -x` (then `-q` text, then `-L`), and falls back to
//! `/proc/driver/nvidia/` when nvidia-smi is missing or fails.

use super::parse::{self, smi};
use super::reader::{HostCommand, HostReader};
use crate::arch::ComputeCapability;
use crate::gpu_target::{Target, TargetGpu};
use crate::matrix::Facts;
use crate::source::Platform;
use crate::version::{CudaVersion, DriverVersion};
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning; readers accept older versions.
pub const PROFILE_SCHEMA: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostProfile {
    /// Always `"gpulint-host-profile"`: tells a profile from a bare target.
    pub kind: String,
    pub schema: u32,
    /// Display name of the target built from this profile.
    pub name: String,
    pub driver: Option<DriverVersion>,
    /// The CUDA version the driver supports (nvidia-smi "CUDA Version").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_cuda: Option<CudaVersion>,
    /// The loaded kernel module, from `/proc/driver/nvidia/version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_module: Option<KernelModule>,
    pub gpus: Vec<HostGpu>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// `uname -r`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Where the facts came from ("nvidia-smi --query-gpu", "/proc/driver/nvidia", …).
    #[serde(default)]
    pub sources: Vec<String>,
    /// What could not be read and what was used instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelModule {
    pub version: Option<String>,
    /// "open" or "proprietary".
    pub flavor: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostGpu {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// From nvidia-smi's `compute_cap`, else the GPU matrix; None = unknown.
    pub cc: Option<ComputeCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datacenter: Option<bool>,
    /// "Enabled" / "Disabled" as nvidia-smi says; None when not supported or unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_pending: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig_devices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_mode: Option<String>,
    /// `/dev/nvidiaN` minor number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor: Option<u32>,
}

impl HostProfile {
    pub const KIND: &'static str = "gpulint-host-profile";

    /// The target `gpulint image --host` checks against.
    pub fn into_target(&self) -> Target {
        Target {
            name: self.name.clone(),
            driver: self.driver.clone(),
            driver_cuda: self.driver_cuda,
            gpus: self
                .gpus
                .iter()
                .map(|g| TargetGpu {
                    name: g.name.clone(),
                    cc: g.cc,
                    datacenter: g.datacenter,
                    uuid: g.uuid.clone(),
                    mig_mode: g.mig_mode.clone(),
                    count: None,
                })
                .collect(),
            platform: self.platform.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Read a `--host` file: a host profile, or a bare [`Target`] in JSON.
pub fn load_target_json(text: &str) -> anyhow::Result<Target> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    if v.get("kind").and_then(|k| k.as_str()) == Some(HostProfile::KIND) {
        let p: HostProfile = serde_json::from_value(v)?;
        return Ok(p.into_target());
    }
    Ok(serde_json::from_value(v)?)
}

fn add_source(p: &mut HostProfile, s: impl Into<String>) {
    let s = s.into();
    if !p.sources.contains(&s) {
        p.sources.push(s);
    }
}

/// Match a GPU of a later source to one already found: by UUID, then PCI bus id, then index.
fn find_gpu<'a>(
    gpus: &'a mut [HostGpu],
    uuid: Option<&str>,
    bus: Option<&str>,
    index: Option<u32>,
) -> Option<&'a mut HostGpu> {
    let norm_bus = |b: &str| {
        let b = b.to_ascii_lowercase();
        // 00000000:00:06.0 vs 0000:00:06.0: compare bus:dev.fn, the last 7 chars.
        let n = b.len();
        b[n.saturating_sub(7)..].to_string()
    };
    let pos = gpus
        .iter()
        .position(|g| uuid.is_some() && g.uuid.as_deref() == uuid)
        .or_else(|| {
            let b = bus.map(norm_bus)?;
            gpus.iter()
                .position(|g| g.pci_bus_id.as_deref().map(norm_bus) == Some(b.clone()))
        })
        .or_else(|| {
            if uuid.is_some() || bus.is_some() {
                return None;
            }
            gpus.iter()
                .position(|g| g.index.is_some() && g.index == index)
        })?;
    gpus.get_mut(pos)
}

fn merge_smi(p: &mut HostProfile, gpus: &[smi::SmiGpu]) {
    for s in gpus {
        let cc = s.compute_cap.as_deref().and_then(|c| c.parse().ok());
        match find_gpu(
            &mut p.gpus,
            s.uuid.as_deref(),
            s.pci_bus_id.as_deref(),
            s.index,
        ) {
            Some(g) => {
                g.index = g.index.or(s.index);
                g.uuid = g.uuid.clone().or(s.uuid.clone());
                g.pci_bus_id = g.pci_bus_id.clone().or(s.pci_bus_id.clone());
                g.cc = g.cc.or(cc);
                g.mig_mode = g.mig_mode.clone().or(s.mig_current.clone());
                g.mig_pending = g.mig_pending.clone().or(s.mig_pending.clone());
                if g.mig_devices.is_empty() {
                    g.mig_devices = s.mig_devices.clone();
                }
                g.memory_mib = g.memory_mib.or(s.memory_total_mib);
                g.persistence_mode = g.persistence_mode.clone().or(s.persistence_mode.clone());
                g.ecc_mode = g.ecc_mode.clone().or(s.ecc_current.clone());
                g.minor = g.minor.or(s.minor_number);
            }
            None => p.gpus.push(HostGpu {
                index: s.index,
                name: s
                    .name
                    .clone()
                    .unwrap_or_else(|| "unknown NVIDIA GPU".into()),
                uuid: s.uuid.clone(),
                pci_bus_id: s.pci_bus_id.clone(),
                cc,
                datacenter: None,
                mig_mode: s.mig_current.clone(),
                mig_pending: s.mig_pending.clone(),
                mig_devices: s.mig_devices.clone(),
                memory_mib: s.memory_total_mib,
                persistence_mode: s.persistence_mode.clone(),
                ecc_mode: s.ecc_current.clone(),
                minor: s.minor_number,
            }),
        }
    }
}

fn set_driver(p: &mut HostProfile, v: Option<&str>, cuda: Option<&str>) {
    if p.driver.is_none() {
        p.driver = v.and_then(|x| x.parse().ok());
    }
    if p.driver_cuda.is_none() {
        p.driver_cuda = cuda.and_then(|x| x.parse().ok());
    }
}

/// The `/proc/driver/nvidia/gpus/*/information` files, in bus order.
pub fn proc_gpus(reader: &dyn HostReader) -> Vec<(String, parse::ProcGpuInfo)> {
    let mut out = Vec::new();
    for (bus, _) in reader
        .list_dir("/proc/driver/nvidia/gpus")
        .unwrap_or_default()
    {
        let path = format!("/proc/driver/nvidia/gpus/{bus}/information");
        if let Some(t) = reader.read_string(&path) {
            out.push((path, parse::parse_proc_gpu_information(&t)));
        }
    }
    out
}

/// Detect the host profile, using `facts` for what the host does not say itself
/// (compute capability when only XML / -L / /proc is available, datacenter flag, the CUDA
/// version a driver supports when nvidia-smi is missing).
pub fn detect_host_with(reader: &dyn HostReader, facts: &Facts) -> anyhow::Result<HostProfile> {
    let mut p = HostProfile {
        kind: HostProfile::KIND.into(),
        schema: PROFILE_SCHEMA,
        name: "host".into(),
        driver: None,
        driver_cuda: None,
        kernel_module: None,
        gpus: Vec::new(),
        platform: None,
        kernel: None,
        sources: Vec::new(),
        notes: Vec::new(),
    };

    let csv = reader.run(HostCommand::NvidiaSmiQueryGpu);
    if let Some(out) = csv.ok_stdout() {
        let gpus = smi::parse_query_csv(out);
        if !gpus.is_empty() {
            add_source(&mut p, "nvidia-smi --query-gpu");
            set_driver(&mut p, gpus[0].driver_version.as_deref(), None);
            merge_smi(&mut p, &gpus);
        }
    } else if let Some(o) = csv.any_output() {
        p.notes.push(format!(
            "nvidia-smi --query-gpu failed: {}",
            o.lines().next().unwrap_or_default().trim()
        ));
    }

    let xml = reader.run(HostCommand::NvidiaSmiQx);
    let mut have_detail = false;
    if let Some(out) = xml.ok_stdout() {
        let r = smi::parse_xml(out);
        if r.driver_version.is_some() || !r.gpus.is_empty() {
            add_source(&mut p, "nvidia-smi -q -x");
            set_driver(
                &mut p,
                r.driver_version.as_deref(),
                r.cuda_version.as_deref(),
            );
            merge_smi(&mut p, &r.gpus);
            have_detail = true;
        }
    }
    if !have_detail {
        if let Some(out) = reader.run(HostCommand::NvidiaSmiQ).ok_stdout() {
            let r = smi::parse_q_text(out);
            if r.driver_version.is_some() || !r.gpus.is_empty() {
                add_source(&mut p, "nvidia-smi -q");
                set_driver(
                    &mut p,
                    r.driver_version.as_deref(),
                    r.cuda_version.as_deref(),
                );
                merge_smi(&mut p, &r.gpus);
            }
        }
    }
    if let Some(out) = reader.run(HostCommand::NvidiaSmiL).ok_stdout() {
        let listed = smi::parse_list(out);
        if !listed.is_empty() {
            add_source(&mut p, "nvidia-smi -L");
        }
        for l in listed {
            let s = smi::SmiGpu {
                index: Some(l.index),
                name: Some(l.name.clone()),
                uuid: l.uuid.clone(),
                mig_devices: l.mig.clone(),
                ..Default::default()
            };
            merge_smi(&mut p, std::slice::from_ref(&s));
        }
    }
    if p.sources.is_empty() {
        let why = match reader.run(HostCommand::NvidiaSmiQx) {
            super::reader::CommandOutput::NotFound => "nvidia-smi not found".to_string(),
            o => format!(
                "nvidia-smi failed: {}",
                o.any_output()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim()
            ),
        };
        p.notes
            .push(format!("{why}; read /proc/driver/nvidia instead"));
    }

    // The kernel side: always read, and the only source when nvidia-smi is unusable.
    if let Some(v) = reader
        .read_string("/proc/driver/nvidia/version")
        .as_deref()
        .and_then(parse::parse_proc_version)
    {
        add_source(&mut p, "/proc/driver/nvidia/version");
        p.kernel_module = Some(KernelModule {
            version: v.version.clone(),
            flavor: if v.open { "open" } else { "proprietary" }.into(),
        });
        set_driver(&mut p, v.version.as_deref(), None);
    }
    let procs = proc_gpus(reader);
    if !procs.is_empty() {
        add_source(&mut p, "/proc/driver/nvidia/gpus");
    }
    for (_, info) in procs {
        if info.excluded == Some(true) {
            // Listed by the driver but excluded from use (NVreg_ExcludedGpus): not a GPU of
            // this host's target.
            p.notes.push(format!(
                "GPU {} is excluded by the driver (GPU Excluded: Yes)",
                info.bus_location.as_deref().unwrap_or("?")
            ));
            continue;
        }
        let idx = info.device_minor;
        if let Some(g) = find_gpu(
            &mut p.gpus,
            info.uuid.as_deref(),
            info.bus_location.as_deref(),
            None,
        ) {
            g.minor = g.minor.or(info.device_minor);
            g.pci_bus_id = g.pci_bus_id.clone().or(info.bus_location.clone());
            continue;
        }
        p.gpus.push(HostGpu {
            index: idx,
            name: info.model.unwrap_or_else(|| "unknown NVIDIA GPU".into()),
            uuid: info.uuid,
            pci_bus_id: info.bus_location,
            cc: None,
            datacenter: None,
            mig_mode: None,
            mig_pending: None,
            mig_devices: Vec::new(),
            memory_mib: None,
            persistence_mode: None,
            ecc_mode: None,
            minor: info.device_minor,
        });
    }
    if p.gpus.is_empty() {
        // Neither nvidia-smi nor the driver lists a GPU: name those on the PCI bus from
        // NVIDIA's device-ID table, as notes (the driver does not see them).
        for d in super::pci::nvidia_pci_gpus(reader) {
            let named = facts.gpu_by_pci(d.device, d.subsystem).map(|g| {
                let cc = g
                    .value
                    .model
                    .map(|m| format!(", compute capability {}", m.cc));
                format!("{}{}", g.value.name, cc.unwrap_or_default())
            });
            p.notes.push(format!(
                "PCI {} (device 0x{:04x}): {}, not listed by the driver",
                d.bus,
                d.device,
                named.unwrap_or_else(|| "an NVIDIA GPU gpulint cannot name".into())
            ));
        }
    }
    if p.driver_cuda.is_none() {
        if let Some(d) = &p.driver {
            p.driver_cuda = facts.max_cuda_for_driver(d).map(|c| c.value);
            if p.driver_cuda.is_some() {
                add_source(&mut p, "GPU matrix (CUDA version of the driver)");
            }
        }
    }
    for g in &mut p.gpus {
        if g.cc.is_none() {
            g.cc = facts.gpu(&g.name).map(|m| m.value.cc);
        }
        if g.datacenter.is_none() {
            g.datacenter = facts.gpu(&g.name).map(|m| m.value.datacenter);
        }
    }
    p.gpus
        .sort_by_key(|g| (g.index.unwrap_or(u32::MAX), g.pci_bus_id.clone()));

    p.kernel = reader
        .run(HostCommand::UnameR)
        .ok_stdout()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| {
            reader
                .read_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
        });
    p.platform = reader
        .run(HostCommand::UnameM)
        .ok_stdout()
        .map(|m| {
            let architecture = match m.trim() {
                "x86_64" => "amd64",
                "aarch64" => "arm64",
                "ppc64le" => "ppc64le",
                other => other,
            };
            Platform {
                os: "linux".into(),
                architecture: architecture.into(),
                variant: None,
            }
        })
        .filter(|p| !p.architecture.is_empty());
    if p.driver.is_none() && p.gpus.is_empty() {
        p.notes.push(format!(
            "no NVIDIA driver found on the {} (no nvidia-smi output, no /proc/driver/nvidia)",
            reader.describe()
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::reader::CapturedReader;
    use crate::rules::host::testutil::tree;

    /// The matrices gpulint ships: they know the H200 (9.0, datacenter) and driver 580 (13.0).
    fn h200() -> Facts {
        Facts::embedded().unwrap()
    }

    const UUID: &str = "GPU-1e22f56e-bc1a-5762-a390-38b2e823715b";

    fn detect(layers: &[&str], k: &Facts) -> HostProfile {
        let dir = tree(layers);
        detect_host_with(&CapturedReader::new(dir.path()).unwrap(), k).unwrap()
    }

    fn assert_h200(p: &HostProfile) {
        assert_eq!(p.driver.as_ref().map(|d| d.as_str()), Some("580.159.04"));
        assert_eq!(p.gpus.len(), 1, "{p:#?}");
        let g = &p.gpus[0];
        assert_eq!(g.name, "NVIDIA H200");
        assert_eq!(g.uuid.as_deref(), Some(UUID));
        assert_eq!(
            p.kernel_module,
            Some(KernelModule {
                version: Some("580.159.04".into()),
                flavor: "open".into()
            })
        );
    }

    #[test]
    fn from_all_real_captures_csv_first() {
        let p = detect(&["h200"], Facts::unknown());
        assert_h200(&p);
        assert_eq!(p.driver_cuda, Some(CudaVersion::new(13, 0)));
        let g = &p.gpus[0];
        // compute_cap from nvidia-smi's CSV, no matrix needed.
        assert_eq!(g.cc, Some(ComputeCapability::new(9, 0)));
        assert_eq!(g.mig_mode.as_deref(), Some("Disabled"));
        assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:00:06.0"));
        assert_eq!(g.memory_mib, Some(143771));
        assert_eq!(g.persistence_mode.as_deref(), Some("Enabled"));
        assert_eq!(g.minor, Some(0));
        assert_eq!(p.sources[0], "nvidia-smi --query-gpu");
        assert!(p.notes.is_empty(), "{:?}", p.notes);
    }

    #[test]
    fn from_xml_only() {
        let p = detect(&["h200", "variants/xml-only"], Facts::unknown());
        assert_h200(&p);
        assert_eq!(p.driver_cuda, Some(CudaVersion::new(13, 0)));
        assert_eq!(p.gpus[0].mig_mode.as_deref(), Some("Disabled"));
        // The XML has no compute capability: unknown without the matrix…
        assert_eq!(p.gpus[0].cc, None);
        // …and known with it.
        let p = detect(&["h200", "variants/xml-only"], &h200());
        assert_eq!(p.gpus[0].cc, Some(ComputeCapability::new(9, 0)));
        assert_eq!(p.gpus[0].datacenter, Some(true));
    }

    #[test]
    fn from_q_text_only() {
        let p = detect(&["h200", "variants/text-only"], Facts::unknown());
        assert_h200(&p);
        assert_eq!(p.driver_cuda, Some(CudaVersion::new(13, 0)));
        assert_eq!(p.gpus[0].mig_mode.as_deref(), Some("Disabled"));
        assert_eq!(p.gpus[0].pci_bus_id.as_deref(), Some("00000000:00:06.0"));
    }

    #[test]
    fn from_proc_only_when_nvidia_smi_is_missing() {
        let p = detect(&["h200", "variants/proc-only"], Facts::unknown());
        assert_h200(&p);
        assert_eq!(p.gpus[0].pci_bus_id.as_deref(), Some("0000:00:06.0"));
        assert_eq!(p.gpus[0].minor, Some(0));
        assert_eq!(p.gpus[0].mig_mode, None);
        assert_eq!(p.driver_cuda, None);
        assert!(
            p.notes.iter().any(|n| n.contains("nvidia-smi not found")),
            "{:?}",
            p.notes
        );
        let p = detect(&["h200", "variants/proc-only"], &h200());
        assert_eq!(p.driver_cuda, Some(CudaVersion::new(13, 0)));
        assert_eq!(p.gpus[0].cc, Some(ComputeCapability::new(9, 0)));
    }

    #[test]
    fn a_gpu_only_on_the_pci_bus_is_named_from_its_device_id() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("sys/bus/pci/devices/0000:01:00.0");
        std::fs::create_dir_all(&dev).unwrap();
        for (f, v) in [
            ("vendor", "0x10de\n"),
            ("class", "0x030200\n"),
            ("device", "0x20f5\n"),
            ("subsystem_vendor", "0x10de\n"),
            ("subsystem_device", "0x179a\n"),
        ] {
            std::fs::write(dev.join(f), v).unwrap();
        }
        let reader = CapturedReader::new(dir.path()).unwrap();
        let p = detect_host_with(&reader, &h200()).unwrap();
        assert!(p.gpus.is_empty(), "the driver lists none: {:?}", p.gpus);
        assert!(
            p.notes.iter().any(|n| n
                == "PCI 0000:01:00.0 (device 0x20f5): NVIDIA A800 80GB PCIe LC, compute capability 8.0, not listed by the driver"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn nvidia_smi_failing_falls_back_with_a_note() {
        let p = detect(
            &["h200", "variants/complete", "variants/api-mismatch"],
            Facts::unknown(),
        );
        assert_h200(&p);
        assert!(
            p.notes.iter().any(|n| n.contains("version mismatch")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn mig_and_kernel_and_platform() {
        let p = detect(
            &[
                "h200",
                "variants/complete",
                "variants/mig-on",
                "variants/mig-instances",
            ],
            Facts::unknown(),
        );
        assert_eq!(p.gpus[0].mig_mode.as_deref(), Some("Enabled"));
        assert_eq!(p.gpus[0].mig_devices.len(), 2);
        assert_eq!(p.kernel.as_deref(), Some("6.8.0-85-generic"));
        assert_eq!(
            p.platform.as_ref().map(|x| x.to_string()).as_deref(),
            Some("linux/amd64")
        );
    }

    #[test]
    fn json_round_trips_and_converts_to_a_target() {
        let p = detect(&["h200", "variants/complete"], &h200());
        let json = p.to_json();
        let back: HostProfile = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        let t = load_target_json(&json).unwrap();
        assert_eq!(t, p.into_target());
        assert_eq!(t.driver.as_ref().map(|d| d.as_str()), Some("580.159.04"));
        assert_eq!(t.driver_cuda, Some(CudaVersion::new(13, 0)));
        assert_eq!(t.capabilities(), vec![ComputeCapability::new(9, 0)]);
        assert_eq!(t.gpus[0].uuid.as_deref(), Some(UUID));
        assert_eq!(t.gpus[0].mig_mode.as_deref(), Some("Disabled"));
        // A bare target is accepted too.
        let tj = serde_json::to_string(&t).unwrap();
        assert_eq!(load_target_json(&tj).unwrap(), t);
    }

    #[test]
    fn empty_tree_is_no_driver() {
        let dir = tempfile::tempdir().unwrap();
        let p =
            detect_host_with(&CapturedReader::new(dir.path()).unwrap(), Facts::unknown()).unwrap();
        assert!(p.driver.is_none() && p.gpus.is_empty());
        assert!(p.notes.iter().any(|n| n.contains("no NVIDIA driver")));
    }
}
