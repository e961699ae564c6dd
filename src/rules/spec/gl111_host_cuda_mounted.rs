//! GL111: the host's CUDA toolkit mounted into the container.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleMeta};
use crate::spec::{loc, RuleCtx, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL111"),
    name: "host-cuda-mounted",
    default_severity: Severity::Error,
    summary: "The host's CUDA toolkit (/usr/local/cuda*) is mounted into the container",
    explanation: "What: a bind mount / hostPath of `/usr/local/cuda` or `/usr/local/cuda-X.Y` from the host.\n\
Why: the container then runs whatever CUDA the host happens to have, not what the image was \
built and tested with; it breaks when the host upgrades, when the path does not exist (Docker \
creates an empty directory), and when the image's own libraries expect another release. The \
driver, the only host component a container needs, is injected by the NVIDIA Container Toolkit.\n\
Example: `docker run -v /usr/local/cuda:/usr/local/cuda …`.\n\
Fix: use an image that contains the CUDA runtime it needs (nvidia/cuda:<ver>-runtime) and \
request GPUs with --gpus / the device plugin.",
};

pub fn is_host_cuda(p: &str) -> bool {
    let p = p.trim_end_matches('/');
    p == "/usr/local/cuda" || p.starts_with("/usr/local/cuda/") || p.starts_with("/usr/local/cuda-")
}

pub fn check(s: &Subject, _cx: &RuleCtx) -> Vec<Finding> {
    let Subject::Runs(specs) = s else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in specs.iter().filter(|r| !r.infra) {
        for m in &r.mounts {
            if is_host_cuda(&m.host) {
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
    out
}

#[cfg(test)]
mod tests {
    use crate::spec::testutil::runs;

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
}
