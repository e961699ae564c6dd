//! GL210: GPUs in an error state: ERR!, reset required, uncorrectable ECC, pending page
//! retirement / row remapping, Xid errors.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::{self, smi};
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
            NVRM Xid errors; reads \"GPU Excluded\" in /proc/driver/nvidia/gpus/*/information.",
        why: "Such a GPU fails or corrupts jobs (\"CUDA error: an illegal memory access\", \
            \"uncorrectable ECC error encountered\", \"Unable to determine the device handle for \
            GPU: Unknown Error\"). Pending retirement/remapping only takes effect after a GPU \
            reset.",
        example: "A GPU that fell off the bus; the kernel log holds `NVRM: Xid (PCI:0000:3b:00): 79, \
            GPU has fallen off the bus.`: `1 GPU error indication(s)`, with the Xid line as \
            evidence.",
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
    match r.run(HostCommand::Dmesg).ok_stdout() {
        Some(log) => {
            looked.push("dmesg".into());
            for (line, _) in parse::xid_lines(log) {
                bad_warn.push(Evidence::command("dmesg", line));
            }
        }
        None => looked.push("dmesg (not readable)".into()),
    }
    looked.dedup();
    if !bad_err.is_empty() || !bad_warn.is_empty() {
        let sev = if bad_err.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        };
        let n = bad_err.len() + bad_warn.len();
        let mut ev = bad_err;
        ev.extend(bad_warn);
        out.push(CheckResult::problem(&META, format!("{n} GPU error indication(s)"))
            .severity(sev)
            .evidence(ev)
            .fix("Drain the node and reset the GPU (`sudo nvidia-smi -r -i <gpu>`) or reboot; if errors return, have the GPU serviced."));
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
