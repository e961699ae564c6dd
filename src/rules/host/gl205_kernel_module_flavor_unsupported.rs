//! GL205: the kernel module flavour (open / proprietary) does not support a GPU.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::proc_version;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL205"),
    name: "kernel-module-flavor-unsupported",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "The open or proprietary nvidia kernel module in use does not support a GPU",
    doc: RuleDoc {
        what: "Reports which kernel module flavour is loaded (/proc/driver/nvidia/version says \
            \"Open Kernel Module\" for the open one) and looks in the kernel log for the driver \
            refusing a GPU because of the flavour.",
        why:
            "The open kernel modules support Turing and newer GPUs only; Blackwell and newer GPUs \
            are supported only by the open modules. With the wrong flavour the GPU is not probed \
            and CUDA does not see it (\"NVRM: ... is not supported by open nvidia.ko\", \"... \
            requires use of the NVIDIA open kernel modules\").",
        example: "The open kernel modules (`nvidia-driver-550-open`) on a host with a Tesla V100 \
            (Volta, older than Turing); dmesg says `NVRM: ... is not supported by open \
            nvidia.ko`: `the open kernel module refuses a GPU on this host`.",
        fix: "Install the other flavour of the same driver version (e.g. the `-open` packages, or \
            `nvidia-driver-<branch>-server-open` / the proprietary variant) and reboot.",
        sources: &[
            "https://github.com/NVIDIA/open-gpu-kernel-modules",
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let Some(pv) = proc_version(r) else {
        out.push(CheckResult::could_not(
            &META,
            "no /proc/driver/nvidia/version: the kernel module flavour is unknown",
        ));
        return;
    };
    let flavor = if pv.open { "open" } else { "proprietary" };
    let mut evidence = vec![Evidence::file(
        "/proc/driver/nvidia/version",
        pv.line.to_string(),
    )];
    let log = r.run(HostCommand::Dmesg);
    if let Some(text) = log.ok_stdout() {
        let bad: Vec<Evidence> = text
            .lines()
            .filter(|l| {
                l.contains("not supported by open nvidia.ko")
                    || l.contains("requires use of the NVIDIA open kernel modules")
                    || (l.contains("NVRM")
                        && l.contains("open kernel modules")
                        && l.contains("not supported"))
            })
            .map(|l| Evidence::command("dmesg", l.trim()))
            .collect();
        if !bad.is_empty() {
            evidence.extend(bad);
            let other = if pv.open { "proprietary" } else { "open" };
            out.push(
                CheckResult::problem(
                    &META,
                    format!("the {flavor} kernel module refuses a GPU on this host"),
                )
                .evidence(evidence)
                .fix(format!(
                "Install the {other} kernel module flavour of the same driver version and reboot."
            )),
            );
            return;
        }
    } else {
        evidence.push(Evidence::command(
            "dmesg",
            "not readable (kernel log not checked)",
        ));
    }
    out.push(
        CheckResult::ok(
            &META,
            format!(
                "{flavor} kernel module {}; it drives {} GPU(s)",
                pv.version.unwrap_or_default(),
                cx.profile.gpus.len()
            ),
        )
        .evidence(evidence),
    );
}
