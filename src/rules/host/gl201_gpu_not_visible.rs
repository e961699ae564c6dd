//! GL201: NVIDIA GPUs on the PCI bus that the driver does not see.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::modprobe_files;
use crate::host::reader::{HostCommand, HostReader};
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
        fix: "gpulint reads the kernel log and sysfs for the cause and names its fix: a driver \
            release that does not support the GPU (`NVRM: The NVIDIA GPU … is not supported by \
            the NVIDIA X driver release`: install a branch that lists its PCI ID; without that \
            line, the tables: the GPU named by its PCI device ID, and a driver below its model's \
            first listing in NVIDIA's device-ID table (Blackwell and later) or below the first \
            driver of the first CUDA release targeting its architecture, the floors GL011 uses), \
            `RmInitAdapter failed` (cold boot, driver/firmware update, power), a BAR the firmware \
            could not assign (`BAR n: failed to assign`, `can't assign`, `can't allocate`, `no \
            compatible bridge window`, `no space for`: enable Above 4G \
            Decoding, or a larger 64-bit MMIO window for a VM), a GPU excluded by \
            NVreg_ExcludedGpus, a device bound to vfio-pci/nouveau, or a failing PCIe link \
            (`Link Down` / `PCIe Bus Error` in the kernel log, fatal or non-fatal AER counts in \
            sysfs `aer_dev_*`, a link trained below its `max_link_width/speed`: check the slot, \
            riser and power cables), also when no GPU is left on the bus of a host with a driver. Otherwise check `dmesg | \
            grep -i nvrm` for the missing bus id.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://docs.nvidia.com/deploy/xid-errors/index.html",
            "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/src/nvidia/arch/nvalloc/unix/src/osinit.c",
            "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv-pci.c",
            "https://download.nvidia.com/XFree86/Linux-x86_64/580.95.05/README/supportedchips.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let seen = cx.profile.gpus.len();
    let Some(devs) = r.list_dir("/sys/bus/pci/devices") else {
        out.push(CheckResult::could_not(
            &META,
            format!(
                "/sys/bus/pci/devices is not readable on the {}; the driver sees {}",
                r.describe(),
                crate::vocab::count(seen, "GPU", "GPUs")
            ),
        ));
        return;
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
        evidence.push(Evidence::file(
            &base,
            format!("vendor 0x10de class {class} device {}", device.trim()),
        ));
        pci.push(bus);
    }
    let norm = |b: &str| {
        let b = b.to_ascii_lowercase();
        b[b.len().saturating_sub(7)..].to_string()
    };
    // A GPU the driver excluded (NVreg_ExcludedGpus) is listed under /proc/driver/nvidia but
    // not usable: it counts as not seen.
    let excluded: Vec<String> = crate::host::profile::proc_gpus(r)
        .into_iter()
        .filter(|(_, i)| i.excluded == Some(true))
        .filter_map(|(_, i)| i.bus_location.as_deref().map(norm))
        .collect();
    let driver_buses: Vec<String> = cx
        .profile
        .gpus
        .iter()
        .filter_map(|g| g.pci_bus_id.as_deref().map(norm))
        .filter(|b| !excluded.contains(b))
        .collect();
    let seen = cx
        .profile
        .gpus
        .iter()
        .filter(|g| {
            !g.pci_bus_id
                .as_deref()
                .map(norm)
                .is_some_and(|b| excluded.contains(&b))
        })
        .count();
    evidence.push(Evidence::note(format!(
        "driver sees {} ({})",
        crate::vocab::count(seen, "GPU", "GPUs"),
        cx.profile.sources.join(", ")
    )));
    if pci.is_empty() {
        if seen == 0 {
            // A host with a driver had a GPU: the kernel log may say where it went.
            let has_driver = cx.profile.driver.is_some()
                || r.read_string("/proc/driver/nvidia/version").is_some();
            let link = if has_driver {
                r.run(HostCommand::Dmesg)
                    .ok_stdout()
                    .map(|log| dmesg_causes(log, &[]))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|c| c.what.contains("PCIe link") || c.what.contains("BAR"))
                    .collect()
            } else {
                Vec::new()
            };
            if !link.is_empty() {
                for c in &link {
                    evidence.extend(c.evidence.iter().cloned());
                }
                out.push(
                    CheckResult::problem(
                        &META,
                        format!(
                            "no NVIDIA GPU on the PCI bus although an NVIDIA driver is installed: {}",
                            link.iter().map(|c| c.what.clone()).collect::<Vec<_>>().join("; ")
                        ),
                    )
                    .evidence(evidence)
                    .fix(link.iter().map(|c| c.fix.clone()).collect::<Vec<_>>().join(" ")),
                );
                return;
            }
            out.push(
                CheckResult::problem(&META, "no NVIDIA GPU on the PCI bus")
                    .severity(Severity::Warning)
                    .evidence(evidence)
                    .fix("Run on a machine (or VM with passthrough) that has an NVIDIA GPU."),
            );
            return;
        }
        out.push(CheckResult::ok(
            &META,
            format!("the driver sees {seen} GPU(s); no NVIDIA display device in this sysfs view (container or VM)"),
        )
        .evidence(evidence));
        return;
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
        let missing_buses: Vec<String> = if missing.is_empty() {
            pci.clone()
        } else {
            missing.iter().map(|s| s.to_string()).collect()
        };
        let mut causes = causes(r, &missing_buses);
        // Without a kernel-log line naming a bus, the tables can still say that the driver
        // is older than the GPU there.
        if let Some(driver) = &cx.profile.driver {
            for dev in crate::host::pci::nvidia_pci_gpus(r) {
                let named = |c: &Cause| c.what.contains(&dev.bus);
                if missing_buses.iter().any(|b| norm(b) == norm(&dev.bus))
                    && !causes.iter().any(named)
                {
                    causes.extend(super::gl201_driver_predates_gpu::cause(
                        cx.facts, driver, &dev,
                    ));
                }
            }
        }
        let summary = format!(
            "{} NVIDIA GPU(s) on the PCI bus, the driver sees {seen}{which}",
            pci.len()
        );
        if causes.is_empty() {
            out.push(CheckResult::problem(&META, summary)
            .evidence(evidence)
            .fix("Look for the missing bus id in `dmesg | grep -i nvrm`; make sure the nvidia module is loaded and nouveau/vfio-pci do not hold the device."));
            return;
        }
        for c in &causes {
            evidence.extend(c.evidence.iter().cloned());
        }
        // Excluded on request (NVreg_ExcludedGpus) is configuration, not breakage: a warning.
        let deliberate = causes.iter().all(|c| c.deliberate);
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "{summary}: {}",
                    causes
                        .iter()
                        .map(|c| c.what.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )
            .severity(if deliberate {
                Severity::Warning
            } else {
                Severity::Error
            })
            .evidence(evidence)
            .fix(
                causes
                    .iter()
                    .map(|c| c.fix.clone())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        );
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!(
                "{} NVIDIA GPU(s) on the PCI bus, all seen by the driver",
                pci.len()
            ),
        )
        .evidence(evidence),
    );
}

/// Why the driver does not drive a GPU, as the kernel log and sysfs state it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cause {
    pub what: String,
    pub fix: String,
    pub evidence: Vec<Evidence>,
    /// Configuration, not breakage (a GPU excluded on request).
    pub deliberate: bool,
}

/// The causes stated for the `missing` bus ids (`0000:00:07.0`): the kernel log (`NVRM:` and
/// PCI core lines, matched by bus id where they name one), the exclusion list, and the driver a
/// device is bound to.
pub(crate) fn causes(r: &dyn HostReader, missing: &[String]) -> Vec<Cause> {
    let mut out = Vec::new();
    let log = r.run(HostCommand::Dmesg).ok_stdout().map(String::from);
    if let Some(log) = &log {
        out.extend(dmesg_causes(log, missing));
    }
    for bus in missing {
        let base = format!("/sys/bus/pci/devices/{bus}");
        if let Some(t) = r.read_link(&format!("{base}/driver")) {
            let drv = t.rsplit('/').next().unwrap_or_default().to_string();
            if drv != "nvidia" && !drv.is_empty() {
                let fix = if drv.starts_with("vfio") {
                    format!("{bus} is reserved for passthrough: remove its id from the vfio-pci `ids=` option (modprobe.d or the kernel command line) and rebuild the initramfs, or unbind it (`echo {bus} | sudo tee /sys/bus/pci/drivers/{drv}/unbind`) and load nvidia.")
                } else {
                    format!("Unbind {bus} from {drv} and blacklist {drv} (GL202 for nouveau), then load nvidia.")
                };
                out.push(Cause {
                    what: format!("{bus} is bound to the {drv} driver, not nvidia"),
                    fix,
                    evidence: vec![Evidence::file(format!("{base}/driver"), format!("-> {t}"))],
                    deliberate: false,
                });
            }
        }
    }
    for bus in missing {
        if let Some(c) = link_cause(r, bus) {
            out.push(c);
        }
    }
    // Excluded on purpose: /proc/driver/nvidia/gpus/<bus>/information and the option naming it.
    let excluded: Vec<(String, String)> = crate::host::profile::proc_gpus(r)
        .into_iter()
        .filter(|(_, i)| i.excluded == Some(true))
        .map(|(p, i)| (p, i.bus_location.unwrap_or_default()))
        .collect();
    if !excluded.is_empty() || out.iter().any(|c| c.deliberate) {
        let mut ev: Vec<Evidence> = excluded
            .iter()
            .map(|(p, _)| Evidence::file(p, "GPU Excluded: Yes"))
            .collect();
        let mut files = Vec::new();
        for (p, text) in modprobe_files(r) {
            for l in text.lines() {
                if l.contains("NVreg_ExcludedGpus") || l.contains("NVreg_ExcludeAllGpus") {
                    ev.push(Evidence::file(&p, l.trim()));
                    files.push(p.clone());
                }
            }
        }
        if let Some(c) = r.read_string("/proc/cmdline") {
            if c.contains("NVreg_ExcludedGpus") || c.contains("NVreg_ExcludeAllGpus") {
                ev.push(Evidence::file("/proc/cmdline", c.trim()));
                files.push("/proc/cmdline".into());
            }
        }
        let buses: Vec<&str> = excluded.iter().map(|(_, b)| b.as_str()).collect();
        if let Some(c) = out.iter_mut().find(|c| c.deliberate) {
            c.evidence.extend(ev);
        } else {
            out.push(Cause {
                what: format!(
                    "the driver excludes {} (NVreg_ExcludedGpus)",
                    buses.join(", ")
                ),
                fix: String::new(),
                evidence: ev,
                deliberate: true,
            });
        }
        let where_ = if files.is_empty() {
            "the nvidia module options".to_string()
        } else {
            files.join(", ")
        };
        if let Some(c) = out.iter_mut().find(|c| c.deliberate) {
            c.fix = format!("If the GPU should be used, remove its UUID from NVreg_ExcludedGpus (or NVreg_ExcludeAllGpus) in {where_} and reload the nvidia module or reboot.");
        }
    }
    out
}

/// NVRM messages span lines (`NVRM: The NVIDIA GPU … (PCI ID: 10de:2684)` / `NVRM: installed
/// in this system is not supported by the` / `NVRM: NVIDIA 515.65.01 driver release.`): joined
/// per message, a new one starting at each "NVRM: The NVIDIA GPU".
pub(crate) fn dmesg_causes(log: &str, missing: &[String]) -> Vec<Cause> {
    let names_missing = |l: &str| {
        let l = l.to_ascii_lowercase();
        missing.iter().any(|b| {
            let b = b.to_ascii_lowercase();
            // Kernel lines use 0000:00:07.0; NVRM may drop the domain (PCI:0000:00:07.0 or 00:07.0).
            l.contains(&b) || l.contains(&b[b.len().saturating_sub(7)..])
        })
    };
    let mut out: Vec<Cause> = Vec::new();
    let lines: Vec<&str> = log.lines().collect();
    let body = |l: &str| -> String {
        // Drop the `[  5.5] ` timestamp.
        match l.trim_start().strip_prefix('[') {
            Some(rest) => rest
                .split_once(']')
                .map_or(l, |(_, b)| b)
                .trim()
                .to_string(),
            None => l.trim().to_string(),
        }
    };
    // Not supported by this driver release (too old for a new GPU, or a GPU left to a legacy branch).
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("NVRM: The NVIDIA GPU") {
            continue;
        }
        let msg: Vec<String> = lines[i..]
            .iter()
            .take(6)
            .take_while(|x| x.contains("NVRM:"))
            .map(|x| body(x))
            .collect();
        let joined = msg
            .iter()
            .map(|m| m.trim_start_matches("NVRM:").trim())
            .collect::<Vec<_>>()
            .join(" ");
        if !joined.contains("is not supported by the") || !joined.contains("driver release") {
            continue;
        }
        if !missing.is_empty() && !names_missing(&joined) {
            continue;
        }
        let pci_id = joined
            .split("PCI ID: ")
            .nth(1)
            .and_then(|x| x.split(')').next())
            .unwrap_or("?")
            .to_string();
        let bus = joined
            .strip_prefix("The NVIDIA GPU ")
            .and_then(|x| x.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        // "… not supported by the NVIDIA 555.58.02 driver release" (current) or "… by the
        // 304.116 NVIDIA Linux driver release" (older): the first version-like word after it.
        let release = joined
            .split_once("is not supported by the")
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
            .map(|w| w.trim_end_matches('.').to_string())
            .unwrap_or_default();
        out.push(Cause {
            what: format!(
                "the {} driver release does not support GPU {bus} (PCI ID {pci_id})",
                if release.is_empty() { "installed".to_string() } else { release.clone() }
            ),
            fix: format!("Install a driver branch whose README (Appendix A, supported chips) lists PCI ID {pci_id}: a newer branch for a GPU newer than the driver, the legacy branch NVIDIA names for an old one."),
            evidence: msg.iter().take(3).map(|m| Evidence::command("dmesg", m)).collect(),
            deliberate: false,
        });
    }
    // (kernel log needles, cause, fix, deliberate)
    let rules: &[(&[&str], &str, &str, bool)] = &[
        (
            &["RmInitAdapter failed", "rm_init_adapter failed"],
            "the driver failed to initialize it (RmInitAdapter failed)",
            "Power-cycle the machine (a cold boot, not a reboot); if it persists, update the driver and the system/GPU firmware and check the GPU's power connectors and seating; the NVRM lines before the failure name the failing step.",
            false,
        ),
        (
            // Every wording of the PCI core (old and new kernels) and of NVRM for a BAR left
            // without an address: "BAR 1: failed to assign", "BAR 1 [mem size …]: can't assign;
            // no space", "can't allocate", "no compatible bridge window", "no space for".
            &["failed to assign", "can't assign", "can't allocate", "no compatible bridge window", "no space for", "not enough MMIO", "BAR1 is 0M", "PCI I/O region assigned to your NVIDIA device is invalid"],
            "its PCI BAR (MMIO window) could not be assigned",
            "Enable \"Above 4G Decoding\" (and Resizable BAR where offered) in the system firmware; for a VM, give it a 64-bit MMIO window larger than the GPUs' BARs (e.g. QEMU `-global q35-pcihost.pci-hole64-size=2048G`, VMware `pciPassthru.64bitMMIOSizeGB`); or boot with `pci=realloc`.",
            false,
        ),
        (
            &["Link Down", "PCIe Bus Error", "fallen off the bus", "Surprise Down"],
            "the kernel log shows its PCIe link failing (link down / PCIe bus errors)",
            "Check the slot, riser and the GPU's power cables (reseat it, try another slot); AER errors or a link below its maximum width point at the slot, riser or the GPU itself.",
            false,
        ),
        (
            &["Excluded GPU", "Excluding all GPUs"],
            "the driver excluded it on request (NVreg_ExcludedGpus)",
            "",
            true,
        ),
    ];
    for (needles, what, fix, deliberate) in rules {
        let hits: Vec<Evidence> = lines
            .iter()
            .filter(|l| needles.iter().any(|n| l.contains(n)))
            // Lines about a missing GPU, or naming no PCI address at all.
            .filter(|l| missing.is_empty() || names_missing(l) || !l.contains("0000:"))
            .map(|l| Evidence::command("dmesg", body(l)))
            .collect();
        if hits.is_empty() {
            continue;
        }
        let buses: Vec<&String> = missing
            .iter()
            .filter(|b| hits.iter().any(|h| names_missing_one(&h.text, b)))
            .collect();
        let who = if buses.is_empty() {
            "a GPU".to_string()
        } else {
            buses
                .iter()
                .map(|b| b.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(Cause {
            what: format!("{who}: {what}"),
            fix: fix.to_string(),
            evidence: hits.into_iter().take(4).collect(),
            deliberate: *deliberate,
        });
    }
    out
}

/// The PCIe link of a GPU as sysfs states it: AER error counters (`aer_dev_fatal`,
/// `aer_dev_nonfatal`, `aer_dev_correctable`: `TOTAL_ERR_* N`) and a link trained below its
/// maximum width or speed.
fn link_cause(r: &dyn HostReader, bus: &str) -> Option<Cause> {
    let base = format!("/sys/bus/pci/devices/{bus}");
    let mut what = Vec::new();
    let mut evidence = Vec::new();
    for kind in ["fatal", "nonfatal", "correctable"] {
        let path = format!("{base}/aer_dev_{kind}");
        let Some(text) = r.read_string(&path) else {
            continue;
        };
        let total: u64 = text
            .lines()
            .find(|l| l.starts_with("TOTAL_ERR"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        // Correctable errors alone are retried by the link and do not lose a GPU.
        if total > 0 && kind != "correctable" {
            what.push(format!("{total} {kind} AER error(s)"));
            evidence.push(Evidence::file(&path, format!("TOTAL_ERR {total}")));
        }
    }
    for (cur, max, what_, x) in [
        ("current_link_width", "max_link_width", "width", "x"),
        ("current_link_speed", "max_link_speed", "speed", ""),
    ] {
        let c = r.read_string(&format!("{base}/{cur}"));
        let m = r.read_string(&format!("{base}/{max}"));
        let (Some(c), Some(m)) = (c, m) else {
            continue;
        };
        let (c, m) = (c.trim().to_string(), m.trim().to_string());
        let num = |s: &str| {
            s.split_whitespace()
                .next()
                .and_then(|n| n.parse::<f64>().ok())
        };
        if let (Some(cn), Some(mn)) = (num(&c), num(&m)) {
            if cn < mn {
                what.push(format!("link {what_} {x}{c} of {x}{m}"));
                evidence.push(Evidence::file(format!("{base}/{cur}"), &c));
                evidence.push(Evidence::file(format!("{base}/{max}"), &m));
            }
        }
    }
    if what.is_empty() {
        return None;
    }
    Some(Cause {
        what: format!("{bus}: its PCIe link is degraded ({})", what.join(", ")),
        fix: "Check the slot, riser and the GPU's power cables (reseat it, try another slot); AER errors or a link below its maximum width point at the slot, riser or the GPU itself.".into(),
        evidence,
        deliberate: false,
    })
}

fn names_missing_one(line: &str, bus: &str) -> bool {
    let l = line.to_ascii_lowercase();
    let b = bus.to_ascii_lowercase();
    l.contains(&b) || l.contains(&b[b.len().saturating_sub(7)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUS: &str = "0000:01:00.0";

    #[test]
    fn unsupported_by_this_driver_release() {
        // The message of osinit.c, as the kernel log shows it.
        let log = "[    8.29] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d04)\n\
[    8.29] NVRM: installed in this system is not supported by the\n\
[    8.29] NVRM: NVIDIA 555.58.02 driver release.\n\
[    8.29] NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\n\
[    8.29] nvidia 0000:01:00.0: probe with driver nvidia failed with error -1\n";
        let c = dmesg_causes(log, &[BUS.into()]);
        assert_eq!(c.len(), 1, "{c:#?}");
        assert!(
            c[0].what.contains("555.58.02") && c[0].what.contains("10de:2d04"),
            "{}",
            c[0].what
        );
        assert!(c[0].fix.contains("10de:2d04"));
        // The older wording puts the version before "NVIDIA Linux driver release".
        let old = "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1292)\n\
NVRM: installed in this system is not supported by the 304.116\n\
NVRM: NVIDIA Linux driver release.  Please see 'Appendix\n";
        let c = dmesg_causes(old, &[BUS.into()]);
        assert!(
            c[0].what.contains("the 304.116 driver release"),
            "{}",
            c[0].what
        );
        // The same message for another bus is not this GPU's cause.
        assert!(dmesg_causes(log, &["0000:02:00.0".into()]).is_empty());
    }

    #[test]
    fn rm_init_bar_and_exclusion() {
        let log = "[ 5.1] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n\
[ 5.1] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 1\n";
        let c = dmesg_causes(log, &[BUS.into()]);
        assert_eq!(c.len(), 1);
        assert!(c[0]
            .what
            .starts_with("0000:01:00.0: the driver failed to initialize"));
        let log =
            "[ 0.9] pci 0000:01:00.0: BAR 1: no space for [mem size 0x4000000000 64bit pref]\n\
[ 0.9] pci 0000:01:00.0: BAR 1: failed to assign [mem size 0x4000000000 64bit pref]\n";
        let c = dmesg_causes(log, &[BUS.into()]);
        assert!(c[0].fix.contains("Above 4G Decoding"), "{c:#?}");
        // The other wordings of the PCI core, each alone, name the same cause and fix.
        for line in [
            "[ 0.9] pci 0000:01:00.0: BAR 1 [mem size 0x4000000000 64bit pref]: can't assign; no space",
            "[ 0.9] pci 0000:01:00.0: BAR 1: can't allocate mem resource [mem 0x00000000-0x3fffffffff 64bit pref]",
            "[ 0.9] pci 0000:01:00.0: BAR 1: no compatible bridge window for [mem 0x00000000-0x3fffffffff 64bit pref]",
        ] {
            let c = dmesg_causes(line, &[BUS.into()]);
            assert_eq!(c.len(), 1, "{line}: {c:#?}");
            assert!(c[0].what.contains("BAR"), "{line}: {}", c[0].what);
            assert!(c[0].fix.contains("Above 4G Decoding"), "{line}");
        }
        // Another device's BAR is not this GPU's cause.
        assert!(dmesg_causes(
            "[ 0.9] pci 0000:02:00.0: BAR 0: can't assign; no space",
            &[BUS.into()]
        )
        .is_empty());
        assert!(dmesg_causes(
            "[ 1.0] NVRM: loading NVIDIA UNIX Open Kernel Module",
            &[BUS.into()]
        )
        .is_empty());
    }
}
