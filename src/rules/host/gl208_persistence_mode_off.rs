//! GL208: persistence mode off and no nvidia-persistenced.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL208"),
    name: "persistence-mode-off",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary:
        "GPUs are not kept initialized (persistence mode off, nvidia-persistenced not running)",
    doc: RuleDoc {
        what:
            "Reads each GPU's persistence mode (nvidia-smi) and whether nvidia-persistenced runs \
            (`ps`).",
        why: "Without persistence, the driver tears the GPU down when the last client exits and \
            re-initializes it for the next one: seconds of latency per job start, lost \
            application clocks and ECC/MIG state churn, and on some systems GPUs that fail to \
            come back (\"GPU requires reset\"). NVIDIA recommends nvidia-persistenced on Linux \
            compute hosts.",
        example:
            "A node with no nvidia-persistenced service: `persistence mode is off on GPU 0, GPU 1 \
            and nvidia-persistenced is not running`; each CUDA process then pays the driver's \
            initialisation time, and GPU state can reset between jobs.",
        fix: "Enable the daemon (`sudo systemctl enable --now nvidia-persistenced`); the legacy \
            `nvidia-smi -pm 1` also works until reboot.",
        sources: &["https://docs.nvidia.com/deploy/driver-persistence/index.html"],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let gpus = &cx.profile.gpus;
    let mut evidence: Vec<Evidence> = gpus
        .iter()
        .filter_map(|g| {
            g.persistence_mode.as_ref().map(|m| {
                Evidence::command(
                    "nvidia-smi",
                    format!(
                        "GPU {} {} persistence_mode {m}",
                        g.index.unwrap_or(0),
                        g.name
                    ),
                )
            })
        })
        .collect();
    let daemon = r.run(HostCommand::PsComm).ok_stdout().map(|o| {
        o.lines().any(|l| {
            l.trim() == "nvidia-persistenced" || l.trim().ends_with("/nvidia-persistenced")
        })
    });
    match daemon {
        Some(d) => evidence.push(Evidence::command(
            HostCommand::PsComm.display(),
            format!(
                "nvidia-persistenced {}",
                if d { "running" } else { "not running" }
            ),
        )),
        None => evidence.push(Evidence::command("ps", "not available")),
    }
    let off: Vec<String> = gpus
        .iter()
        .filter(|g| g.persistence_mode.as_deref() == Some("Disabled"))
        .map(|g| format!("GPU {}", g.index.unwrap_or(0)))
        .collect();
    let known = gpus.iter().any(|g| g.persistence_mode.is_some());
    if !off.is_empty() && daemon != Some(true) {
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "persistence mode is off on {} and nvidia-persistenced is {}",
                    off.join(", "),
                    if daemon.is_none() {
                        "unknown"
                    } else {
                        "not running"
                    }
                ),
            )
            .evidence(evidence)
            .fix("sudo systemctl enable --now nvidia-persistenced"),
        );
        return;
    }
    if !known && daemon != Some(true) {
        out.push(
            CheckResult::could_not(&META, "persistence mode unknown (no nvidia-smi output)")
                .evidence(evidence),
        );
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            if daemon == Some(true) {
                "nvidia-persistenced is running".to_string()
            } else {
                "persistence mode is on for every GPU".to_string()
            },
        )
        .evidence(evidence),
    );
}
