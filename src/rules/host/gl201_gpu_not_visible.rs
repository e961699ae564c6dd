//! GL201: NVIDIA GPUs on the PCI bus that the driver does not see.

use super::{CheckResult, Ctx};
use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL201"),
    name: "gpu-not-visible-to-driver",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "An NVIDIA GPU is on the PCI bus but the driver does not see it",
    doc: RuleDoc {
        what: "Compares the NVIDIA display-class devices on the PCI bus \
            (/sys/bus/pci/devices/*/vendor = 0x10de, class 0x03xxxx) with the GPUs the driver \
            reports (nvidia-smi, /proc/driver/nvidia/gpus).",
        why:
            "A GPU the driver does not bind is invisible to CUDA: jobs see fewer devices, or none \
            (\"no CUDA-capable device is detected\"). Causes: the nvidia module is not loaded, \
            nouveau or vfio-pci holds the device, the GPU is excluded (NVreg_ExcludedGpus), the \
            kernel module flavour does not support the GPU (open modules need Turing or newer; \
            Blackwell needs the open modules), or the GPU fell off the bus (Xid 79).",
        example: "Lspci lists 8 GPUs, nvidia-smi lists 7.",
        fix: "Check `dmesg | grep -i nvrm` for the missing bus id; load the right module flavour; \
            reseat or reset the GPU if it fell off the bus.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://docs.nvidia.com/deploy/xid-errors/index.html",
        ],
    },
};

pub(crate) fn check(cx: &Ctx) -> Vec<CheckResult> {
    let r = cx.reader;
    let seen = cx.profile.gpus.len();
    let Some(devs) = r.list_dir("/sys/bus/pci/devices") else {
        return vec![CheckResult::could_not(
            &META,
            format!(
                "/sys/bus/pci/devices is not readable on the {}; the driver sees {seen} GPU(s)",
                r.describe()
            ),
        )];
    };
    let mut pci = Vec::new();
    let mut evidence = Vec::new();
    for (bus, _) in devs {
        let base = format!("/sys/bus/pci/devices/{bus}");
        let vendor = r.read_string(&format!("{base}/vendor")).unwrap_or_default();
        if vendor.trim() != "0x10de" {
            continue;
        }
        let class = r.read_string(&format!("{base}/class")).unwrap_or_default();
        let class = class.trim();
        let device = r.read_string(&format!("{base}/device")).unwrap_or_default();
        if !class.starts_with("0x03") {
            continue;
        }
        evidence.push(format!(
            "{base}: vendor 0x10de class {class} device {}",
            device.trim()
        ));
        pci.push(bus);
    }
    let norm = |b: &str| {
        let b = b.to_ascii_lowercase();
        b[b.len().saturating_sub(7)..].to_string()
    };
    let driver_buses: Vec<String> = cx
        .profile
        .gpus
        .iter()
        .filter_map(|g| g.pci_bus_id.as_deref().map(norm))
        .collect();
    evidence.push(format!(
        "driver sees {seen} GPU(s) ({})",
        cx.profile.sources.join(", ")
    ));
    if pci.is_empty() {
        if seen == 0 {
            return vec![CheckResult::problem(&META, "no NVIDIA GPU on the PCI bus")
                .severity(Severity::Warning)
                .evidence(evidence)
                .fix("Run on a machine (or VM with passthrough) that has an NVIDIA GPU.")];
        }
        return vec![CheckResult::ok(
            &META,
            format!("the driver sees {seen} GPU(s); no NVIDIA display device in this sysfs view (container or VM)"),
        )
        .evidence(evidence)];
    }
    let missing: Vec<&String> = pci
        .iter()
        .filter(|b| !driver_buses.is_empty() && !driver_buses.contains(&norm(b)))
        .collect();
    if seen < pci.len() || !missing.is_empty() {
        let which = if missing.is_empty() {
            String::new()
        } else {
            format!(
                " (not seen: {})",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return vec![CheckResult::problem(
            &META,
            format!(
                "{} NVIDIA GPU(s) on the PCI bus, the driver sees {seen}{which}",
                pci.len()
            ),
        )
        .evidence(evidence)
        .fix("Look for the missing bus id in `dmesg | grep -i nvrm`; make sure the nvidia module is loaded and nouveau/vfio-pci do not hold the device.")];
    }
    vec![CheckResult::ok(
        &META,
        format!(
            "{} NVIDIA GPU(s) on the PCI bus, all seen by the driver",
            pci.len()
        ),
    )
    .evidence(evidence)]
}
