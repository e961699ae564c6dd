//! GL243: a GPU whose BAR1 (the window the CPU and PCIe peers map its memory through) was
//! assigned, but smaller than its memory: the firmware placed it below 4 GB.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::xid::pci_address;
use crate::host::query::smi_report;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL243"),
    name: "gpu-bar1-small",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "A GPU's BAR1 is assigned but smaller than its memory (Above 4G decoding / Resizable BAR off)",
    doc: RuleDoc {
        what: "For each GPU the driver lists: its BAR1 size from nvidia-smi -q \"BAR1 Memory \
            Usage\" Total, else from line 2 of /sys/bus/pci/devices/<bus>/resource (end - start \
            + 1), against its memory (\"FB Memory Usage\" Total). A BAR1 of 0 is GL220's. A \
            warning on data-center GPUs (gpus.toml segment), whose BAR1 normally covers all of \
            their memory and whose GPUDirect RDMA / peer-to-peer use depends on it; info on \
            other GPUs, where a 256 MiB BAR1 is the usual setting without Resizable BAR.",
        why: "BAR1 is the PCI window through which the CPU and third-party devices (NICs for \
            GPUDirect RDMA, other GPUs) address GPU memory; what does not fit in it is reached \
            only through remapping. Firmware that must place 64-bit BARs below 4 GB gives a \
            resizable BAR its smallest size (typically 256 MiB): the cause is a missing \
            setting, not a too-large BAR.",
        example: "An H200 with 143771 MiB of memory and `BAR1 Memory Usage Total : 256 MiB`: \
            `BAR1 of GPU 0 is 256 MiB, smaller than its 143771 MiB of memory`.",
        fix: "Enable \"Above 4G Decoding\" and \"Resizable BAR\" (Re-Size BAR support) in the \
            system firmware; for a VM, give it a 64-bit MMIO window larger than the GPUs' \
            BARs.",
        sources: &[
            "https://docs.nvidia.com/cuda/gpudirect-rdma/index.html",
            "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
            "https://www.kernel.org/doc/html/latest/PCI/sysfs-pci.html",
        ],
    },
};

/// Size in MiB of BAR 1 from a sysfs `resource` file (`start end flags` per line, line 2 is
/// BAR 1); 0 when unassigned (all zeros), None when not two numbers.
pub(crate) fn resource_bar1_mib(text: &str) -> Option<u64> {
    let line = text.lines().nth(1)?;
    let nums: Vec<u64> = line
        .split_whitespace()
        .take(2)
        .filter_map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok())
        .collect();
    match nums[..] {
        [0, 0] => Some(0),
        [start, end] if start != 0 && end > start => Some((end - start + 1) >> 20),
        _ => None,
    }
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let report = smi_report(r);
    let mut small = Vec::new();
    let mut evidence = Vec::new();
    let mut worst = Severity::Info;
    let mut judged = 0;
    let mut unassigned = 0;
    for g in &cx.profile.gpus {
        let Some(bus) = g.pci_bus_id.as_deref() else {
            continue;
        };
        let Some((d, b, dev)) = pci_address(bus) else {
            continue;
        };
        let smi = report.as_ref().and_then(|(rep, cmd)| {
            rep.gpus
                .iter()
                .find(|s| s.pci_bus_id.as_deref().and_then(pci_address) == Some((d, b, dev)))
                .map(|s| (s, cmd))
        });
        let memory = g.memory_mib.or(smi.and_then(|(s, _)| s.memory_total_mib));
        let resource = format!("/sys/bus/pci/devices/{d:04x}:{b:02x}:{dev:02x}.0/resource");
        let said = match smi.and_then(|(s, cmd)| Some((s.bar1_total_mib?, cmd))) {
            Some((mib, cmd)) => Some((
                mib,
                Evidence::command(
                    cmd.clone(),
                    format!("GPU {bus}: BAR1 Memory Usage Total: {mib} MiB"),
                ),
            )),
            None => r
                .read_string(&resource)
                .as_deref()
                .and_then(resource_bar1_mib)
                .map(|mib| {
                    (
                        mib,
                        Evidence::file(&resource, format!("BAR 1 spans {mib} MiB")),
                    )
                }),
        };
        // 0 MiB (unassigned) is GL220's.
        if said.as_ref().is_some_and(|(m, _)| *m == 0) {
            unassigned += 1;
            continue;
        }
        let (Some((bar1, said)), Some(memory)) = (said, memory) else {
            continue;
        };
        judged += 1;
        if bar1 >= memory {
            continue;
        }
        let name = g
            .index
            .map(|i| format!("GPU {i}"))
            .unwrap_or_else(|| bus.to_string());
        let datacenter = g.datacenter == Some(true);
        let consequence = if datacenter {
            worst = Severity::Warning;
            format!(
                "a data-center {} maps all of its memory through BAR1 when the firmware places it above 4 GB; GPUDirect RDMA and peer-to-peer transfers see only this window",
                g.name
            )
        } else {
            "CUDA works; the CPU and peers see only this window of its memory (Resizable BAR off)"
                .to_string()
        };
        small.push(format!(
            "BAR1 of {name} ({bus}) is {bar1} MiB, smaller than its {memory} MiB of memory: {consequence}"
        ));
        evidence.push(said);
    }
    if !small.is_empty() {
        out.push(
            CheckResult::problem(&META, small.join("; "))
                .severity(worst)
                .evidence(evidence)
                .fix("Enable \"Above 4G Decoding\" and \"Resizable BAR\" in the system firmware (both are needed: without the first the firmware cannot place a large BAR1); for a VM, give it a 64-bit MMIO window larger than the GPUs' BARs (e.g. QEMU `-global q35-pcihost.pci-hole64-size=2048G`)."),
        );
        return;
    }
    if judged == 0 && unassigned > 0 {
        out.push(CheckResult::ok(
            &META,
            "no small BAR1: an unassigned BAR1 (0 MiB) is GL220's",
        ));
        return;
    }
    if judged == 0 {
        if cx.profile.gpus.iter().any(|g| g.pci_bus_id.is_some()) {
            out.push(CheckResult::could_not(
                &META,
                "no BAR1 size (nvidia-smi -q, PCI resource file) or no memory size for the listed GPUs",
            ));
        } else {
            out.push(CheckResult::ok(
                &META,
                "the driver lists no GPU with a PCI address",
            ));
        }
        return;
    }
    out.push(CheckResult::ok(
        &META,
        format!(
            "every GPU's BAR1 covers its memory ({})",
            crate::vocab::count(judged, "GPU", "GPUs")
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::resource_bar1_mib;

    #[test]
    fn bar1_size_from_sysfs_resource() {
        let t = "0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n0x0000380000000000 0x000038000fffffff 0x000000000014220c\n";
        assert_eq!(resource_bar1_mib(t), Some(256));
        let unassigned = "0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
        assert_eq!(resource_bar1_mib(unassigned), Some(0));
        assert_eq!(resource_bar1_mib("0x1 0x2 0x0\n"), None);
    }
}
