//! GL203: the nvidia / nvidia_uvm kernel modules are not loaded.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::{loaded_modules, proc_version};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL203"),
    name: "nvidia-module-not-loaded",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "The nvidia or nvidia_uvm kernel module is not loaded",
    doc: RuleDoc {
        what:
            "Looks for `nvidia` and `nvidia_uvm` in /proc/modules (or /sys/module), falling back \
            to /proc/driver/nvidia/version and /dev/nvidia-uvm when module lists are not readable.",
        why:
            "Without `nvidia` there is no GPU at all (\"NVIDIA-SMI has failed because it couldn't \
            communicate with the NVIDIA driver\"). Without `nvidia_uvm`, nvidia-smi works but \
            every CUDA program fails at cuInit with CUDA_ERROR_UNKNOWN (\"CUDA unknown error\") — \
            common in containers and after boot when nothing ran nvidia-modprobe as root.",
        example:
            "A headless node where nothing has run a CUDA program or `nvidia-modprobe -u` since \
            boot: `nvidia_uvm is not loaded: CUDA programs will fail at cuInit (CUDA unknown \
            error)`.",
        fix:
            "`sudo modprobe nvidia` / `sudo nvidia-modprobe -u -c=0` (loads nvidia_uvm and creates \
            /dev/nvidia-uvm); make it permanent with a modules-load.d entry.",
        sources: &["https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    // `out` may hold other checks' results: only this check's own count.
    let before = out.len();
    let r = cx.reader;
    let pv = proc_version(r);
    let dev_uvm = r
        .dev_nodes()
        .map(|v| v.into_iter().find(|n| n.path == "/dev/nvidia-uvm"));
    let (nvidia, uvm, mut evidence) = match loaded_modules(r) {
        Some((mods, src)) => {
            let has = |m: &str| mods.iter().any(|x| x == m);
            let ev = vec![Evidence::file(
                src,
                ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]
                    .iter()
                    .map(|m| format!("{m} {}", if has(m) { "loaded" } else { "absent" }))
                    .collect::<Vec<_>>()
                    .join(", "),
            )];
            (Some(has("nvidia")), Some(has("nvidia_uvm")), ev)
        }
        None => {
            let mut ev = vec![Evidence::file("/proc/modules", "not readable")];
            let nvidia = pv.as_ref().map(|_| true);
            if let Some(v) = &pv {
                ev.push(Evidence::file(
                    "/proc/driver/nvidia/version",
                    v.line.to_string(),
                ));
            }
            let uvm = match &dev_uvm {
                Some(Some(n)) => {
                    ev.push(Evidence::file("/dev/nvidia-uvm", &n.line));
                    Some(true)
                }
                _ => None,
            };
            (nvidia, uvm, ev)
        }
    };
    if nvidia == Some(false) && pv.is_some() {
        evidence.push(Evidence::file(
            "/proc/driver/nvidia/version",
            "present (module built in?)",
        ));
    }
    match (nvidia, pv.is_some()) {
        (Some(false), false) => out.push(
            CheckResult::problem(&META, "the nvidia kernel module is not loaded")
                .evidence(evidence.clone())
                .fix("Load it (`sudo modprobe nvidia`) and read `dmesg | grep -i nvrm` if that fails; see GL206 when it was built for another kernel."),
        ),
        (None, false) => out.push(CheckResult::could_not(
            &META,
            "cannot tell whether the nvidia module is loaded (no /proc/modules, no /proc/driver/nvidia/version)",
        ).evidence(evidence.clone())),
        _ => {}
    }
    match uvm {
        Some(false) => out.push(
            CheckResult::problem(&META, "nvidia_uvm is not loaded: CUDA programs will fail at cuInit (CUDA unknown error)")
                .evidence(evidence.clone())
                .fix("`sudo nvidia-modprobe -u -c=0` (or `sudo modprobe nvidia_uvm`), and add nvidia_uvm to /etc/modules-load.d/."),
        ),
        None if out.len() == before => out.push(CheckResult::could_not(
            &META,
            "cannot tell whether nvidia_uvm is loaded (no module list, no /dev/nvidia-uvm)",
        ).evidence(evidence.clone())),
        _ => {}
    }
    if out.len() == before {
        out.push(CheckResult::ok(&META, "nvidia and nvidia_uvm are loaded").evidence(evidence));
    }
}
