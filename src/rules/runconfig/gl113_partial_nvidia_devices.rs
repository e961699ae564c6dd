//! GL113: GPU device nodes passed by hand, incompletely.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL113"),
    name: "partial-nvidia-devices",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "/dev/nvidia* device nodes are passed by hand and some are missing",
    doc: RuleDoc {
        what: "`--device /dev/nvidia0` (compose `devices:`) without /dev/nvidiactl or \
            /dev/nvidia-uvm, or any hand-picked GPU device list without `--gpus` / the NVIDIA \
            runtime.",
        why: "CUDA needs the control node (nvidiactl) and the unified-memory node (nvidia-uvm) \
            besides the per-GPU node; without them cuInit fails. Passing device nodes by hand \
            also injects no driver libraries, so the image must carry or mount them (see GL112). \
            Jetson boards need their nvhost/nvmap set, which `--runtime nvidia` provides.",
        example: "`docker run --device /dev/nvidia0 --device /dev/nvidiactl img`.",
        fix: "Use `--gpus all` (or `--gpus '\"device=0\"'`) instead of device nodes.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
            "https://docs.docker.com/reference/cli/docker/container/run/",
        ],
    },
};

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Runs(specs) = s else {
        return;
    };
    for r in specs.iter().filter(|r| !r.infra) {
        let nv: Vec<&(String, crate::runconfig::dockerfile::Pos)> = r
            .devices
            .iter()
            .filter(|d| d.0.starts_with("/dev/nvidia"))
            .collect();
        let tegra: Vec<_> = r
            .devices
            .iter()
            .filter(|d| d.0.starts_with("/dev/nvhost") || d.0 == "/dev/nvmap")
            .collect();
        let injected = r.gpus.is_some()
            || r.runtime.as_ref().map(|x| x.0 == "nvidia").unwrap_or(false)
            || r.engine == "nvidia-docker";
        if let Some(first) = nv.first() {
            let has_gpu_node = nv.iter().any(|d| {
                d.0.trim_start_matches("/dev/nvidia")
                    .chars()
                    .next()
                    .map(|c| c.is_ascii_digit())
                    .unwrap_or(false)
            });
            let missing: Vec<String> = cx
                .facts
                .required_devices()
                .into_iter()
                .map(|d| d.value)
                .filter(|req| !nv.iter().any(|d| &d.0 == req))
                .collect();
            if !missing.is_empty() || !has_gpu_node {
                let mut what = missing.join(", ");
                if !has_gpu_node {
                    if !what.is_empty() {
                        what.push_str(", ");
                    }
                    what.push_str("a /dev/nvidiaN GPU node");
                }
                out.push(
                    META.finding(format!("GPU device nodes are passed by hand without {what}: CUDA initialization fails"))
                        .with_severity(if injected { Severity::Warning } else { Severity::Error })
                        .with_location(loc(&r.file, first.1))
                        .with_help("use --gpus (compose: a device reservation) instead of listing /dev/nvidia* nodes"),
                );
            } else if !injected {
                out.push(
                    META.finding("GPU device nodes are passed by hand: no driver libraries are injected, and the list must be kept in sync with the host's GPUs")
                        .with_severity(Severity::Warning)
                        .with_location(loc(&r.file, first.1))
                        .with_help("use --gpus (compose: a device reservation) instead of listing /dev/nvidia* nodes"),
                );
            }
        } else if let Some(first) = tegra.first() {
            if !injected {
                out.push(
                    META.finding("Jetson device nodes (nvhost/nvmap) are passed by hand without --runtime nvidia: others the GPU needs may be missing")
                        .with_severity(Severity::Warning)
                        .with_location(loc(&r.file, first.1))
                        .with_help("run with --runtime nvidia, which passes the board's full device and library set"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::runs;

    #[test]
    fn partial_lists() {
        let f = runs(
            "sh",
            "docker run --device /dev/nvidia0 --device /dev/nvidiactl img\n",
            "GL113",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("nvidia-uvm"));
        assert_eq!(f[0].severity, Severity::Error);
        let f = runs("sh", "docker run --device /dev/nvidia0 --device /dev/nvidiactl --device /dev/nvidia-uvm img\n", "GL113", vec![]);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(runs("sh", "docker run --gpus all img\n", "GL113", vec![]).is_empty());
    }
}
