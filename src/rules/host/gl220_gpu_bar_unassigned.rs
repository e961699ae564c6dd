//! GL220: a GPU the driver lists whose BAR1 (its MMIO window) the firmware left unassigned.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::xid::pci_address;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL220"),
    name: "gpu-bar-unassigned",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "A GPU the driver lists has no BAR1 (MMIO window) assigned by the firmware",
    doc: RuleDoc {
        what: "For each GPU the driver lists: the kernel log's PCI core lines for its bus \
            (`BAR 1: failed to assign`, `can't assign`, `can't allocate`, `no compatible bridge \
            window`, `no space for`), BAR1 (line 2) of /sys/bus/pci/devices/<bus>/resource, and \
            nvidia-smi -q \"BAR1 Memory Usage\" Total of 0 MiB. GL201 reports the GPUs the \
            driver does not list.",
        why: "Without BAR1 the driver cannot map GPU memory for the CPU and for peer-to-peer / \
            RDMA: CUDA initialization fails or those transfers do. The usual cause is firmware \
            that places 64-bit BARs below 4 GB, which cannot hold a large BAR1 (the cause is a \
            missing setting, not a too-large BAR).",
        example: "`pci 0000:00:06.0: BAR 1 [mem size 0x4000000000 64bit pref]: can't assign; no \
            space` in the kernel log and `Total : 0 MiB` under BAR1 Memory Usage for GPU 0.",
        fix: "Enable \"Above 4G Decoding\" (and Resizable BAR where offered) in the system \
            firmware; for a VM, give it a 64-bit MMIO window larger than the GPUs' BARs; or boot \
            with `pci=realloc`.",
        sources: &[
            "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
            "https://www.kernel.org/doc/html/latest/PCI/sysfs-pci.html",
            "https://github.com/torvalds/linux/blob/master/drivers/pci/setup-res.c",
        ],
    },
};

/// The PCI core's words for a BAR left without an address (old and new kernels).
const BAR_WORDS: &[&str] = &[
    "failed to assign",
    "can't assign",
    "can't allocate",
    "no compatible bridge window",
    "no space for",
];

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let buses: Vec<(String, (u32, u32, u32))> = cx
        .profile
        .gpus
        .iter()
        .filter_map(|g| {
            let b = g.pci_bus_id.clone()?;
            let a = pci_address(&b)?;
            Some((b, a))
        })
        .collect();
    if buses.is_empty() {
        // GPUs the driver does not list are GL201's.
        out.push(CheckResult::ok(
            &META,
            "the driver lists no GPU with a PCI address",
        ));
        return;
    }
    let mut evidence = Vec::new();
    let mut bad: Vec<String> = Vec::new();
    let mut looked = 0;
    if let Some(log) = r.run(HostCommand::Dmesg).ok_stdout() {
        looked += 1;
        for l in log.lines() {
            let lower = l.to_ascii_lowercase();
            if !lower.contains("bar") || !BAR_WORDS.iter().any(|w| lower.contains(w)) {
                continue;
            }
            for (b, (d, bus, dev)) in &buses {
                let kernel = format!("{d:04x}:{bus:02x}:{dev:02x}.");
                if lower.contains(&kernel) {
                    evidence.push(Evidence::command("dmesg", l.trim()));
                    if !bad.contains(b) {
                        bad.push(b.clone());
                    }
                }
            }
        }
    }
    for (b, (d, bus, dev)) in &buses {
        let path = format!("/sys/bus/pci/devices/{d:04x}:{bus:02x}:{dev:02x}.0/resource");
        let Some(text) = r.read_string(&path) else {
            continue;
        };
        looked += 1;
        // Line 2 is BAR 1: "start end flags"; an unassigned BAR reads all zeros.
        let Some(line) = text.lines().nth(1) else {
            continue;
        };
        let nums: Vec<u64> = line
            .split_whitespace()
            .filter_map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok())
            .collect();
        if nums.len() >= 2 && nums[0] == 0 && nums[1] == 0 {
            evidence.push(Evidence::file(&path, format!("BAR 1: {}", line.trim())));
            if !bad.contains(b) {
                bad.push(b.clone());
            }
        }
    }
    if let Some(q) = r.run(HostCommand::NvidiaSmiQ).ok_stdout() {
        looked += 1;
        let mut gpu: Option<String> = None;
        let mut in_bar1 = false;
        for l in q.lines() {
            let t = l.trim();
            if let Some(g) = t.strip_prefix("GPU ").filter(|g| pci_address(g).is_some()) {
                gpu = Some(g.to_string());
                in_bar1 = false;
            } else if t.starts_with("BAR1 Memory Usage") {
                in_bar1 = true;
            } else if in_bar1 && t.starts_with("Total") {
                in_bar1 = false;
                let mib = t.split(':').nth(1).map(str::trim).unwrap_or_default();
                if mib == "0 MiB" {
                    let g = gpu.clone().unwrap_or_default();
                    evidence.push(Evidence::command(
                        HostCommand::NvidiaSmiQ.display(),
                        format!("GPU {g}: BAR1 Memory Usage Total: {mib}"),
                    ));
                    if let Some((b, _)) = buses
                        .iter()
                        .find(|(_, a)| pci_address(&g).is_some_and(|x| x == *a))
                    {
                        if !bad.contains(b) {
                            bad.push(b.clone());
                        }
                    }
                }
            }
        }
    }
    if !bad.is_empty() {
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "BAR1 (MMIO window) not assigned for {}: the driver lists it, but CUDA cannot map its memory",
                    bad.join(", ")
                ),
            )
            .evidence(evidence)
            .fix("Enable \"Above 4G Decoding\" (and Resizable BAR where offered) in the system firmware; for a VM, give it a 64-bit MMIO window larger than the GPUs' BARs (e.g. QEMU `-global q35-pcihost.pci-hole64-size=2048G`); or boot with `pci=realloc`."),
        );
        return;
    }
    if looked == 0 {
        out.push(CheckResult::could_not(
            &META,
            "no kernel log, PCI resource file or nvidia-smi -q to read BAR1 from",
        ));
        return;
    }
    out.push(CheckResult::ok(
        &META,
        format!(
            "every listed GPU has its BAR1 assigned ({})",
            crate::vocab::count(buses.len(), "GPU", "GPUs")
        ),
    ));
}
