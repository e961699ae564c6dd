//! GL111: the host's CUDA toolkit mounted into the container.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::{loc, SpecContext};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL111"),
    name: "host-cuda-mounted",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "The host's CUDA toolkit (/usr/local/cuda*) is mounted into the container",
    doc: RuleDoc {
        what:
            "A bind mount / hostPath of `/usr/local/cuda` or `/usr/local/cuda-X.Y` from the host.",
        why: "The container then runs whatever CUDA the host happens to have, not what the image \
            was built and tested with; it breaks when the host upgrades, when the path does not \
            exist (Docker creates an empty directory), and when the image's own libraries expect \
            another release. The driver, the only host component a container needs, is injected \
            by the NVIDIA Container Toolkit.",
        example: "`docker run -v /usr/local/cuda:/usr/local/cuda …`.",
        fix:
            "Use an image that contains the CUDA runtime it needs (nvidia/cuda:<ver>-runtime) and \
            request GPUs with --gpus / the device plugin.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/index.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
        ],
    },
};

pub fn is_host_cuda(p: &str) -> bool {
    let p = p.trim_end_matches('/');
    p == "/usr/local/cuda" || p.starts_with("/usr/local/cuda/") || p.starts_with("/usr/local/cuda-")
}

/// A container path whose mount replaces the image's CUDA toolkit: `/usr/local/cuda*` itself
/// or a directory above it (`-v /usr:/usr`, `-v /usr/local:/usr/local`).
fn covers_image_cuda(container: &str) -> bool {
    let c = container.trim_end_matches('/');
    matches!(c, "/usr" | "/usr/local") || is_host_cuda(c)
}

/// A bind mount from a host path (not a named volume, which Docker seeds from the image).
fn is_bind(host: &str) -> bool {
    host.starts_with(['/', '~', '.', '$'])
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    for (r, m) in super::workload_mounts(s) {
        if is_host_cuda(&m.host) || is_bind(&m.host) && covers_image_cuda(&m.container) {
            out.push(
                META.finding(format!(
                    "host CUDA `{}` is mounted at `{}`{}: the container's CUDA now depends on the host's installation",
                    m.host,
                    m.container,
                    if m.read_only { " (read-only does not change that)" } else { "" }
                ))
                .with_location(loc(&r.file, m.pos))
                .with_help("ship the CUDA runtime in the image (nvidia/cuda:<ver>-runtime) and request GPUs instead"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::runs;

    #[test]
    fn seed_usr_local_cuda_from_host() {
        let f = runs(
            "sh",
            "docker run --gpus all -v /usr/local/cuda:/usr/local/cuda myimg\n",
            "GL111",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().column, Some(26));
        let k = "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n    volumeMounts:\n    - name: cuda\n      mountPath: /usr/local/cuda\n  volumes:\n  - name: cuda\n    hostPath:\n      path: /usr/local/cuda-12.4\n";
        let f = runs("k8s", k, "GL111", vec![]);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(12));
    }

    #[test]
    fn parent_directories_and_toolkits_from_anywhere_over_the_images_cuda() {
        for m in [
            "-v /usr:/usr",
            "-v /usr/local:/usr/local:ro",
            "-v /home/u/cuda:/usr/local/cuda",
            "-v $HOME/cuda-12.1:/usr/local/cuda-12.1",
        ] {
            let f = runs(
                "sh",
                &format!("docker run --gpus all {m} img\n"),
                "GL111",
                vec![],
            );
            assert_eq!(f.len(), 1, "{m}: {f:?}");
        }
        // A named volume is seeded from the image; a host /usr under another path is not
        // the container's CUDA.
        for m in [
            "-v cudavol:/usr/local/cuda",
            "-v /usr:/host/usr:ro",
            "-v /data:/data",
        ] {
            let f = runs(
                "sh",
                &format!("docker run --gpus all {m} img\n"),
                "GL111",
                vec![],
            );
            assert!(f.is_empty(), "{m}: {f:?}");
        }
    }
}
