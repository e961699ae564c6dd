//! GL112: host library directories or driver libraries mounted into the container.

use crate::finding::{Finding, Severity};
use crate::inventory::names::{is_cuda_runtime_library_file, is_driver_library_file};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::{loc, SpecContext};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL112"),
    name: "host-libs-mounted",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "Host library directories or NVIDIA driver libraries are mounted into the container",
    doc: RuleDoc {
        what: "A bind mount / hostPath of a system library directory (/usr/lib/x86_64-linux-gnu, \
            /usr/lib64, /usr/lib/aarch64-linux-gnu, /usr/local/nvidia), of driver files \
            (libcuda.so*, libnvidia-*.so*, nvidia-smi), or of a hand-made CUDA library directory.",
        why: "Mounting a host library directory over the container's replaces glibc, libstdc++ and \
            everything else in it with the host distribution's copies — read-only or not — and \
            breaks the image in ways unrelated to CUDA. Hand-mounted driver files must match the \
            host kernel module and miss the ones the NVIDIA Container Toolkit would add \
            (libnvidia-ptxjitcompiler, firmware, device nodes).",
        example: "`-v /usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:ro`.",
        fix: "Remove the mount and use `--gpus` / the NVIDIA runtime / the device plugin, which \
            inject exactly the driver files the container needs.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/index.html",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
        ],
    },
};

fn classify(host: &str) -> Option<&'static str> {
    let h = host.trim_end_matches('/');
    let base = h.rsplit('/').next().unwrap_or(h);
    const LIBDIRS: &[&str] = &[
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/powerpc64le-linux-gnu",
    ];
    if LIBDIRS.contains(&h) {
        return Some("a host system library directory");
    }
    if h.starts_with("/usr/local/nvidia")
        || h.starts_with("/usr/lib/nvidia")
        || h.contains("/tegra")
        || h.starts_with("/run/nvidia/driver")
    {
        return Some("host NVIDIA driver files");
    }
    if is_driver_library_file(base)
        || is_cuda_runtime_library_file(base)
        || base == "nvidia-smi"
        || base.starts_with("nvidia-") && h.starts_with("/usr/bin")
    {
        return Some("a host driver/CUDA file");
    }
    if h.starts_with("/usr/")
        && base.to_ascii_lowercase().contains("cuda")
        && !super::gl111_host_cuda_mounted::is_host_cuda(h)
    {
        return Some("a host CUDA library directory");
    }
    None
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    for (r, m) in super::workload_mounts(s) {
        if let Some(what) = classify(&m.host) {
            out.push(
                META.finding(format!(
                    "`{}` ({what}) is mounted at `{}`{}",
                    m.host,
                    m.container,
                    if m.read_only { ": read-only still replaces the container's files with the host's" } else { "" }
                ))
                .with_location(loc(&r.file, m.pos))
                .with_help("remove the mount; request GPUs (--gpus / NVIDIA runtime / device plugin) so the toolkit injects matching driver files"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::runs;

    #[test]
    fn seed_host_libdir_read_only() {
        let f = runs(
            "sh",
            "docker run --gpus all -v /usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:ro img\n",
            "GL112",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("read-only"));
        let f = runs("sh", "docker run -v /usr/bin/nvidia-smi:/usr/bin/nvidia-smi -v /usr/cuda_files:/usr/cuda_files -v /data:/data img\n", "GL112", vec![]);
        assert_eq!(f.len(), 2);
        let infra = "kind: DaemonSet\nmetadata:\n  name: nvidia-device-plugin-daemonset\nspec:\n  template:\n    spec:\n      containers:\n      - name: p\n        image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0\n        volumeMounts:\n        - name: d\n          mountPath: /run/nvidia/driver\n      volumes:\n      - name: d\n        hostPath:\n          path: /run/nvidia/driver\n";
        assert!(runs("k8s", infra, "GL112", vec![]).is_empty());
    }
}
