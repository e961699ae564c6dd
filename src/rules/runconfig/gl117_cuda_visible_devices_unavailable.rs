//! GL117: CUDA_VISIBLE_DEVICES naming GPUs the container or target does not have.

use crate::finding::{Finding, Location, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL117"),
    name: "cuda-visible-devices-unavailable",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "CUDA_VISIBLE_DEVICES names GPUs the container or the target does not have",
    doc: RuleDoc {
        what: "CUDA_VISIBLE_DEVICES lists an index at or beyond the number of GPUs the container \
            gets (--gpus 2 → indices 0 and 1 inside) or the target host has; or it is baked into \
            an image.",
        why: "Inside the container GPUs are renumbered from 0. An index that does not exist makes \
            CUDA see no device at all (`no CUDA-capable device is detected`), and an index baked \
            into the image pins every container to that GPU regardless of what the runtime \
            assigned.",
        example: "`--gpus '\"device=2,3\"' -e CUDA_VISIBLE_DEVICES=2`.",
        fix: "Select GPUs with --gpus / device_ids / nvidia.com/gpu and drop CUDA_VISIBLE_DEVICES, \
            or use indices relative to the container.",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables",
        ],
    },
};

fn indices(v: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        // UUIDs (GPU-…, MIG-…) cannot be judged here.
        out.push(p.parse().ok()?);
    }
    Some(out)
}

fn target_count(t: &crate::gpu_target::Target) -> u32 {
    t.gpus.iter().map(|g| g.count.unwrap_or(1)).sum()
}

/// CUDA_VISIBLE_DEVICES naming a GPU index that a target with GPUs does not have.
fn beyond_targets(cx: &SpecContext, v: &str, ix: &[u32], at: Location) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in cx.targets.iter().filter(|t| !t.gpus.is_empty()) {
        let n = target_count(t);
        if let Some(bad) = ix.iter().find(|i| **i >= n) {
            out.push(
                META.finding(format!(
                    "CUDA_VISIBLE_DEVICES={v} names GPU {bad}, but the target has {}",
                    crate::vocab::count(n, "GPU", "GPUs")
                ))
                .with_target(t.name.clone())
                .with_location(at.clone()),
            );
        }
    }
    out
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    match s {
        Subject::Dockerfile(bf) => {
            for st in bf.built_stages() {
                for e in st
                    .envs
                    .iter()
                    .filter(|e| e.name == "CUDA_VISIBLE_DEVICES" && !e.is_arg)
                {
                    let v = e.value.clone().unwrap_or_default();
                    out.push(
                        META.finding(format!("CUDA_VISIBLE_DEVICES={v} is baked into the image: every container is pinned to it, whatever GPUs the runtime assigns"))
                            .with_severity(Severity::Warning)
                            .with_location(loc(&bf.file, e.pos))
                            .with_help("select GPUs at run time (--gpus, device_ids, nvidia.com/gpu) instead"),
                    );
                    if let Some(ix) = indices(&v) {
                        out.extend(beyond_targets(cx, &v, &ix, loc(&bf.file, e.pos)));
                    }
                }
            }
        }
        Subject::Runs(specs) => {
            for r in specs.iter() {
                let Some((_, v, p)) = r.env_value("CUDA_VISIBLE_DEVICES") else {
                    continue;
                };
                let Some(ix) = indices(v) else { continue };
                if let Some(n) = r.gpus.as_ref().and_then(|g| g.n()) {
                    if let Some(bad) = ix.iter().find(|i| **i >= n) {
                        out.push(
                            META.finding(format!("CUDA_VISIBLE_DEVICES={v} names GPU {bad}, but the container gets {}, numbered from 0 inside", crate::vocab::count(n, "GPU", "GPUs")))
                                .with_location(loc(&r.file, *p))
                                .with_help("drop CUDA_VISIBLE_DEVICES and choose GPUs with the request (device_ids / --gpus device=…)"),
                        );
                    }
                } else if r.gpus.is_some() || r.gets_gpus() {
                    out.extend(beyond_targets(cx, v, &ix, loc(&r.file, *p)));
                } else {
                    out.push(
                        META.finding(format!("CUDA_VISIBLE_DEVICES={v} is set but the container requests no GPU: it selects nothing"))
                            .with_severity(Severity::Warning)
                            .with_location(loc(&r.file, *p))
                            .with_help("request GPUs (--gpus / device reservation / nvidia.com/gpu)"),
                    );
                }
            }
        }
        Subject::Script(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, runs, target};

    #[test]
    fn indices_vs_request_and_target() {
        let f = runs(
            "sh",
            "docker run --gpus '\"device=2,3\"' -e CUDA_VISIBLE_DEVICES=2 img\n",
            "GL117",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("the container gets 2 GPUs,"),
            "{}",
            f[0].message
        );
        let f = runs(
            "sh",
            "docker run --gpus 1 -e CUDA_VISIBLE_DEVICES=1 img\n",
            "GL117",
            vec![],
        );
        assert!(
            f[0].message.contains("the container gets 1 GPU,"),
            "{}",
            f[0].message
        );
        assert!(runs(
            "sh",
            "docker run --gpus 2 -e CUDA_VISIBLE_DEVICES=1 img\n",
            "GL117",
            vec![]
        )
        .is_empty());
        let f = runs(
            "sh",
            "docker run --gpus all -e CUDA_VISIBLE_DEVICES=3 img\n",
            "GL117",
            vec![target("h", &["9.0", "9.0"], None)],
        );
        assert_eq!(f.len(), 1);
        let f = dockerfile("FROM x\nENV CUDA_VISIBLE_DEVICES=0\n", "GL117", vec![]);
        assert_eq!(f[0].severity, Severity::Warning);
    }
}
