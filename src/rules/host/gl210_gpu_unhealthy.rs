//! GL210: GPUs in an error state: ERR!, reset required, uncorrectable ECC, pending page
//! retirement / row remapping, Xid errors.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::smi;
use crate::host::parse::xid::{self, XidClass};
use crate::host::query::smi_report;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL210"),
    name: "gpu-unhealthy",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "A GPU reports errors: ERR!, reset required, uncorrectable ECC, pending retirement or remap, Xid",
    doc: RuleDoc {
        what: "Scans nvidia-smi (summary table, -q -x or -q) for `ERR!`, \"GPU requires reset\", \
            \"Unable to determine the device handle\", uncorrectable ECC counts, pending page \
            retirement or row remapping and a recovery action; scans the kernel log (dmesg) for \
            NVRM Xid errors and grades each by its code in NVIDIA's Xid catalogue: fatal ones \
            (48 double-bit ECC, 61, 62, 64, 74 NVLink, 79 fallen off the bus, 94/95 ECC, 119/120 \
            GSP, 121, 140) are errors, the application's own faults (13, 31, 43, 45) info, other \
            codes warnings, naming the GPU (index, UUID) at the Xid's PCI address; reads \"GPU Excluded\" in /proc/driver/nvidia/gpus/*/information.",
        why: "Such a GPU fails or corrupts jobs (\"CUDA error: an illegal memory access\", \
            \"uncorrectable ECC error encountered\", \"Unable to determine the device handle for \
            GPU: Unknown Error\"). Pending retirement/remapping only takes effect after a GPU \
            reset.",
        example: "A GPU that fell off the bus; the kernel log holds `NVRM: Xid (PCI:0000:3b:00): 79, \
            GPU has fallen off the bus.`: an error, `1 GPU error indication(s); Xid 79 on GPU 0 \
            (GPU-…, 00000000:3B:00.0) (fatal: reset or service)`, with the Xid line as evidence.",
        fix: "Drain the node, reset the GPU (`nvidia-smi -r`) or reboot; if errors return, or Xid \
            79 (fallen off the bus) / 48 / 94 / 95 recur, have the GPU serviced.",
        sources: &[
            "https://docs.nvidia.com/deploy/xid-errors/index.html",
            "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let mut bad_err = Vec::new();
    let mut bad_warn = Vec::new();
    let mut looked = Vec::new();
    for cmd in [
        HostCommand::NvidiaSmi,
        HostCommand::NvidiaSmiQueryGpu,
        HostCommand::NvidiaSmiL,
    ] {
        if let Some(o) = r.run(cmd).any_output() {
            looked.push(cmd.display());
            for l in smi::error_lines(&o) {
                bad_err.push(Evidence::command(cmd.display(), l));
            }
        }
    }
    if let Some((rep, src)) = smi_report(r) {
        looked.push(src.clone());
        for g in &rep.gpus {
            for h in &g.health {
                let line = Evidence::command(
                    &src,
                    format!(
                        "GPU {} {}: {h}",
                        g.pci_bus_id.clone().unwrap_or_default(),
                        g.name.clone().unwrap_or_default()
                    ),
                );
                let lower = h.to_ascii_lowercase();
                if lower.contains("pending")
                    || lower.contains("failure")
                    || lower.contains("recovery")
                    || lower.contains("volatile")
                {
                    bad_err.push(line);
                } else {
                    bad_warn.push(line);
                }
            }
        }
    }
    // An excluded GPU (NVreg_ExcludedGpus) is not a health problem: GL201 reports it as a GPU
    // the driver does not drive, with the option that excludes it.
    let mut bad_info = Vec::new();
    let mut xid_what: Vec<String> = Vec::new();
    match r.run(HostCommand::Dmesg).ok_stdout() {
        Some(log) => {
            looked.push("dmesg".into());
            for x in xid::xids(log) {
                let (kind, bucket) = match xid::class(x.code) {
                    XidClass::Fatal => ("fatal: reset or service", &mut bad_err),
                    XidClass::Application => ("usually the application's fault", &mut bad_info),
                    XidClass::Other => ("see the Xid catalogue", &mut bad_warn),
                };
                let what = format!("Xid {} on {} ({kind})", x.code, gpu_named(cx, x.pci));
                bucket.push(Evidence::command("dmesg", x.line));
                if !xid_what.contains(&what) {
                    xid_what.push(what);
                }
            }
        }
        None => looked.push("dmesg (not readable)".into()),
    }
    looked.dedup();
    if !bad_err.is_empty() || !bad_warn.is_empty() || !bad_info.is_empty() {
        // Graded by the worst indication: an application's own fault alone is info.
        let sev = if !bad_err.is_empty() {
            Severity::Error
        } else if !bad_warn.is_empty() {
            Severity::Warning
        } else {
            Severity::Info
        };
        let n = bad_err.len() + bad_warn.len() + bad_info.len();
        let mut ev = bad_err;
        ev.extend(bad_warn);
        ev.extend(bad_info);
        let mut summary = format!("{n} GPU error indication(s)");
        if !xid_what.is_empty() {
            summary.push_str(&format!("; {}", xid_what.join("; ")));
        }
        let fix = if sev == Severity::Info {
            "These Xids usually come from the application (an illegal address, a killed context): fix the program; if they recur with different programs, run the GPU's diagnostics (`dcgmi diag -r 3`)."
        } else {
            "Drain the node and reset the GPU (`sudo nvidia-smi -r -i <gpu>`) or reboot; if errors return, have the GPU serviced."
        };
        out.push(
            CheckResult::problem(&META, summary)
                .severity(sev)
                .evidence(ev)
                .fix(fix),
        );
        return;
    }
    if looked.iter().all(|l| l.contains("not readable")) {
        out.push(CheckResult::could_not(
            &META,
            "no nvidia-smi output and no kernel log to check GPU health",
        ));
        return;
    }
    out.push(
        CheckResult::ok(&META, "no GPU error indication").evidence(
            looked
                .into_iter()
                .map(|l| Evidence::note(format!("checked: {l}"))),
        ),
    );
}

/// The GPU at an Xid's PCI address, as nvidia-smi or /proc name it: "GPU 0 (GPU-…,
/// 00000000:3B:00.0)"; the bare address when the driver lists no GPU there.
fn gpu_named(cx: &HostContext<'_>, pci: Option<(u32, u32, u32)>) -> String {
    let Some(addr) = pci else {
        return "an unnamed GPU".into();
    };
    let gpu = cx.profile.gpus.iter().find(|g| {
        g.pci_bus_id
            .as_deref()
            .and_then(xid::pci_address)
            .is_some_and(|a| a == addr)
    });
    match gpu {
        Some(g) => {
            let mut ids: Vec<String> = g.uuid.iter().cloned().collect();
            ids.extend(g.pci_bus_id.iter().cloned());
            format!(
                "GPU {} ({})",
                g.index.map(|i| i.to_string()).unwrap_or_else(|| "?".into()),
                ids.join(", ")
            )
        }
        None => {
            let at = format!("PCI {:04x}:{:02x}:{:02x}", addr.0, addr.1, addr.2);
            // Only a claim when the driver's GPU list was read at all.
            if cx.profile.gpus.is_empty() {
                at
            } else {
                format!("{at} (not listed by the driver)")
            }
        }
    }
}
