//! GL120: a GPU node pool of the cluster whose GPUs cannot be told (no GFD labels).

use crate::finding::{Finding, Severity};
use crate::gpu_target::nodes::Pool;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL120"),
    name: "gpu-pool-unknown",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "Cluster nodes offer NVIDIA GPUs that gpulint cannot identify (no GPU Feature Discovery labels)",
    doc: RuleDoc {
        what: "With `--fleet-from-nodes` (or `gpulint fleet --from-nodes`), nodes whose status \
            offers `nvidia.com/gpu` or MIG resources but that carry no GPU Feature Discovery \
            labels (`nvidia.com/gpu.product`, `nvidia.com/gpu.compute.major/minor`, \
            `nvidia.com/cuda.driver-version.*`), or whose product is neither labelled with a \
            compute capability nor known to gpulint's GPU matrix. They form one pool of unknown \
            targets.",
        why: "Nothing can be judged against a GPU and driver that are unknown, so no check could \
            fail there: reporting those nodes as clean would let an image through to nodes \
            where it may not run. The gate fails until the nodes are labelled or excluded.",
        example: "A node with `status.capacity[\"nvidia.com/gpu\"]: \"4\"` in a cluster where GFD \
            (or the GPU Operator's GFD) does not run on that node pool.",
        fix: "Deploy GPU Feature Discovery (it ships with the NVIDIA device plugin's Helm chart \
            and the GPU Operator) on those nodes, or pin the fleet with a `--fleet` file that \
            names their GPU and driver.",
        sources: &[
            "https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md",
            "https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/",
        ],
    },
};

/// One error per pool of unknown GPUs, naming its nodes.
pub fn findings(pools: &[Pool]) -> Vec<Finding> {
    pools
        .iter()
        .filter_map(|p| {
            let why = p.unknown.as_ref()?;
            let mut f = META
                .finding(format!(
                    "{}: {why}; nothing can be judged against them (nodes: {})",
                    crate::vocab::count(p.nodes.len(), "node", "nodes"),
                    p.node_names().join(", ")
                ))
                .with_help(
                    "Run GPU Feature Discovery on these nodes, or pin their GPU and driver in a \
                     --fleet file.",
                );
            f.target = Some(p.target.name.clone());
            Some(f)
        })
        .collect()
}
