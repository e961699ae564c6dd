//! GL202: the nouveau driver is loaded, or not blacklisted.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse;
use crate::host::query::{loaded_modules, modprobe_files};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL202"),
    name: "nouveau-loaded",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "The open-source nouveau driver is loaded or may load instead of nvidia",
    doc: RuleDoc {
        what: "Looks for `nouveau` in /proc/modules and for a blacklist in /etc/modprobe.d, \
            /usr/lib/modprobe.d, /lib/modprobe.d and the kernel command line.",
        why: "Nouveau and nvidia cannot drive the same GPU. When nouveau binds first, the nvidia \
            module fails to load (\"NVRM: The NVIDIA probe routine failed\") and CUDA sees no \
            device. Without a blacklist, nouveau can win the race on the next boot or after a \
            driver reinstall.",
        example:
            "A freshly installed Ubuntu server before the NVIDIA driver: `the nouveau driver is \
            loaded`; a host where the driver works but nothing blacklists nouveau (seen on a live \
            H200 node): `nouveau is not loaded but not blacklisted either` (warning).",
        fix: "Add `blacklist nouveau` and `options nouveau modeset=0` to \
            /etc/modprobe.d/blacklist-nouveau.conf, rebuild the initramfs (`update-initramfs -u` \
            or `dracut -f`) and reboot.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let mut evidence = Vec::new();
    let mut blacklisted = false;
    for (p, t) in modprobe_files(r) {
        if parse::parse_modprobe_blacklist(&t)
            .iter()
            .any(|m| m == "nouveau")
        {
            blacklisted = true;
            evidence.push(Evidence::file(&p, "blacklists nouveau"));
        }
    }
    if let Some(c) = r.read_string("/proc/cmdline") {
        if parse::parse_cmdline_blacklist(&c)
            .iter()
            .any(|m| m == "nouveau")
        {
            blacklisted = true;
            evidence.push(Evidence::file("/proc/cmdline", c.trim()));
        }
    }
    let Some((mods, src)) = loaded_modules(r) else {
        out.push(
            CheckResult::could_not(&META, "neither /proc/modules nor /sys/module is readable")
                .evidence(evidence),
        );
        return;
    };
    if mods.iter().any(|m| m == "nouveau") {
        evidence.insert(0, Evidence::file(src, "nouveau"));
        out.push(CheckResult::problem(&META, "the nouveau driver is loaded")
            .evidence(evidence)
            .fix("Blacklist nouveau (`blacklist nouveau` + `options nouveau modeset=0` in /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs and reboot."));
        return;
    }
    if !blacklisted {
        evidence.push(Evidence::file(src, "nouveau not loaded"));
        // It only matters if the running kernel can load nouveau at all.
        let kernel = cx.profile.kernel.clone().unwrap_or_default();
        let dep = r.read_string(&format!("/lib/modules/{kernel}/modules.dep"));
        let available = dep.as_deref().map(|d| d.contains("/nouveau.ko"));
        let sev = match available {
            Some(true) => {
                evidence.push(Evidence::file(
                    format!("/lib/modules/{kernel}/modules.dep"),
                    "nouveau.ko available",
                ));
                Severity::Warning
            }
            Some(false) => {
                out.push(
                    CheckResult::ok(
                        &META,
                        "nouveau is not loaded, and the running kernel has no nouveau module",
                    )
                    .evidence(evidence),
                );
                return;
            }
            None => Severity::Info,
        };
        out.push(CheckResult::problem(&META, "nouveau is not loaded but not blacklisted either")
            .severity(sev)
            .evidence(evidence)
            .fix("Add /etc/modprobe.d/blacklist-nouveau.conf with `blacklist nouveau` and `options nouveau modeset=0`, then rebuild the initramfs."));
        return;
    }
    out.push(CheckResult::ok(&META, "nouveau is not loaded and is blacklisted").evidence(evidence));
}
