//! GL209: MIG enabled (with or without instances) or a MIG mode change pending.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL209"),
    name: "mig-misconfigured",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary:
        "MIG is enabled without instances, a MIG mode change is pending, or MIG splits the GPU",
    doc: RuleDoc {
        what:
            "Reads each GPU's MIG mode (current and pending) and its MIG devices (nvidia-smi -q -x \
            / -L).",
        why:
            "With MIG enabled, CUDA sees only MIG devices. With no GPU/compute instances created, \
            every job sees no device at all (\"no CUDA-capable device is detected\"). A pending \
            mode change takes effect only after a GPU reset or reboot. With instances, a job that \
            expects the whole GPU gets one slice, and containers must be given MIG devices \
            (NVIDIA_VISIBLE_DEVICES=MIG-<uuid>, or the device plugin's MIG strategy).",
        example:
            "An A100 where MIG was enabled with `nvidia-smi -i 0 -mig 1` but no GPU instances were \
            created: `GPU 0 NVIDIA A100-SXM4-80GB: MIG is enabled but no MIG devices exist: CUDA \
            sees no device on this GPU`.",
        fix: "Create instances (`nvidia-smi mig -cgi <profiles> -C`), or disable MIG (`nvidia-smi \
            -i <gpu> -mig 0`) and reset the GPU; for pending changes, reset or reboot.",
        sources: &["https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html"],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    // `out` may hold other checks' results: only this check's own count.
    let before = out.len();
    let gpus = &cx.profile.gpus;
    if gpus.is_empty() {
        out.push(CheckResult::could_not(
            &META,
            "no GPU seen: MIG mode unknown",
        ));
        return;
    }
    let mut evidence = Vec::new();
    let mut any_known = false;
    for g in gpus {
        let label = format!("GPU {} {}", g.index.unwrap_or(0), g.name);
        let cur = g.mig_mode.as_deref();
        let pend = g.mig_pending.as_deref();
        if cur.is_some() {
            any_known = true;
        }
        let ev = Evidence::command(
            "nvidia-smi",
            format!(
                "{label} mig current {} pending {} devices {}",
                cur.unwrap_or("N/A"),
                pend.unwrap_or("N/A"),
                g.mig_devices.len()
            ),
        );
        evidence.push(ev.clone());
        let mut gev = vec![ev];
        gev.extend(
            g.mig_devices
                .iter()
                .map(|d| Evidence::command("nvidia-smi", d.as_str())),
        );
        if let (Some(c), Some(p)) = (cur, pend) {
            if c != p {
                out.push(
                    CheckResult::problem(&META, format!("{label}: MIG mode change pending ({c} → {p}) until the GPU is reset"))
                        .severity(Severity::Warning)
                        .evidence(gev.clone())
                        .fix("Reset the GPU (`sudo nvidia-smi -i <gpu> -r` with no processes on it) or reboot."),
                );
            }
        }
        if cur == Some("Enabled") {
            if g.mig_devices.is_empty() {
                out.push(
                    CheckResult::problem(&META, format!("{label}: MIG is enabled but no MIG devices exist: CUDA sees no device on this GPU"))
                        .evidence(gev)
                        .fix("Create instances (`sudo nvidia-smi mig -i <gpu> -cgi <profiles> -C`) or disable MIG (`sudo nvidia-smi -i <gpu> -mig 0`) and reset the GPU."),
                );
            } else {
                out.push(
                    CheckResult::problem(&META, format!("{label}: MIG is enabled with {} MIG device(s): jobs get a slice, containers need MIG device ids", g.mig_devices.len()))
                        .severity(Severity::Info)
                        .evidence(gev)
                        .fix("Request MIG devices (NVIDIA_VISIBLE_DEVICES=MIG-<uuid>, or the device plugin's mixed/single strategy), or disable MIG for whole-GPU jobs."),
                );
            }
        }
    }
    if out.len() > before {
        return;
    }
    if !any_known {
        out.push(
            CheckResult::could_not(
                &META,
                "MIG mode unknown (no nvidia-smi output, or GPUs without MIG support)",
            )
            .evidence(evidence),
        );
        return;
    }
    out.push(CheckResult::ok(&META, "MIG is disabled on every GPU").evidence(evidence));
}
