//! A fleet read from the cluster itself: `kubectl get nodes -o json`, each node's GPU as NVIDIA's
//! GPU Feature Discovery (GFD) labels it, grouped into pools of the same product, compute
//! capability and driver.
//!
//! Label names and value formats are GFD's, read from NVIDIA/k8s-device-plugin at commit
//! 1b826acc6af3079d8923bac395c3124b8861a9a6 (GFD lives there now):
//! - `internal/lm/nvml.go` `newVersionLabeler`: `nvidia.com/cuda.driver-version.{major,minor,
//!   revision,full}` (`full` is the driver as NVML prints it, `550.107.02`), the deprecated
//!   `nvidia.com/cuda.driver.{major,minor,rev}` (rev may be empty), and the driver's CUDA as
//!   `nvidia.com/cuda.runtime-version.{major,minor,full}` / deprecated `cuda.runtime.{major,minor}`;
//! - `internal/lm/resource.go`: `<resource>.product` is the NVML name with every character
//!   outside `[A-Za-z0-9-_. ]` dropped and blanks joined by `-` (`sanitise`), then `-MIG-<profile>`
//!   for MIG devices and `-SHARED` when replicas > 1 (time-slicing/MPS) unless renamed;
//!   `<resource>.count`, `.replicas`, `.sharing-strategy`, and `.family`, `.compute.major`,
//!   `.compute.minor` (`newArchitectureLabels`) for full GPUs;
//! - `docs/gpu-feature-discovery/README.md`: `nvidia.com/mig.strategy` (`single`: the
//!   `nvidia.com/gpu.*` labels describe the MIG devices, product `A100-SXM4-40GB-MIG-1g.5gb`;
//!   `mixed`: `nvidia.com/mig-<g>g.<mem>gb.{count,product,…}` per MIG type).
//!
//! What a node offers the scheduler is its `status.allocatable` (else `status.capacity`):
//! `nvidia.com/gpu` and, under the mixed strategy, `nvidia.com/mig-<profile>`.

use super::{Target, TargetGpu};
use crate::arch::ComputeCapability;
use crate::matrix::Matrix;
use crate::source::Platform;
use crate::version::{CudaVersion, DriverVersion};
use anyhow::bail;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

pub const PRODUCT: &str = "nvidia.com/gpu.product";
pub const COUNT: &str = "nvidia.com/gpu.count";
pub const COMPUTE_MAJOR: &str = "nvidia.com/gpu.compute.major";
pub const COMPUTE_MINOR: &str = "nvidia.com/gpu.compute.minor";
pub const FAMILY: &str = "nvidia.com/gpu.family";
pub const MIG_STRATEGY: &str = "nvidia.com/mig.strategy";
pub const REPLICAS: &str = "nvidia.com/gpu.replicas";
pub const DRIVER_FULL: &str = "nvidia.com/cuda.driver-version.full";
const DRIVER_PARTS: [&str; 3] = [
    "nvidia.com/cuda.driver-version.major",
    "nvidia.com/cuda.driver-version.minor",
    "nvidia.com/cuda.driver-version.revision",
];
const DRIVER_PARTS_DEPRECATED: [&str; 3] = [
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
];
const RUNTIME_FULL: &str = "nvidia.com/cuda.runtime-version.full";
const RUNTIME_PARTS: [&str; 2] = [
    "nvidia.com/cuda.runtime-version.major",
    "nvidia.com/cuda.runtime-version.minor",
];
const RUNTIME_PARTS_DEPRECATED: [&str; 2] = [
    "nvidia.com/cuda.runtime.major",
    "nvidia.com/cuda.runtime.minor",
];
/// The full-GPU extended resource the device plugin advertises.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// Mixed-strategy MIG resources: `nvidia.com/mig-1g.10gb`.
pub const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";

/// More nodes than any cluster has: past it the input is not a node list we should trust.
const MAX_NODES: usize = 100_000;

/// A node as scheduling sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// NVIDIA extended resources the node offers (allocatable, else capacity), by name.
    pub resources: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

impl Node {
    fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .get(k)
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
    }

    /// Whether the node has NVIDIA GPUs: it offers a GPU or MIG resource, or GFD labelled it.
    fn has_gpu(&self) -> bool {
        self.resources
            .iter()
            .any(|(k, n)| *n > 0 && (k == GPU_RESOURCE || k.starts_with(MIG_RESOURCE_PREFIX)))
            || self.product().is_some()
    }

    /// The driver from GFD's labels: the full version, else the parts (new, then deprecated).
    fn driver(&self) -> Option<DriverVersion> {
        if let Some(d) = self.label(DRIVER_FULL).and_then(|s| s.parse().ok()) {
            return Some(d);
        }
        [DRIVER_PARTS, DRIVER_PARTS_DEPRECATED]
            .iter()
            .find_map(|keys| {
                let parts: Vec<&str> = keys.iter().filter_map(|k| self.label(k)).collect();
                // major and minor at least; the revision label is empty for two-part versions.
                (parts.len() >= 2 && self.label(keys[0]).is_some() && self.label(keys[1]).is_some())
                    .then(|| parts.join("."))
                    .and_then(|s| s.parse().ok())
            })
    }

    /// The CUDA version the driver supports (GFD's "runtime" labels are the driver's CUDA).
    fn driver_cuda(&self) -> Option<CudaVersion> {
        if let Some(c) = self.label(RUNTIME_FULL).and_then(|s| s.parse().ok()) {
            return Some(c);
        }
        [RUNTIME_PARTS, RUNTIME_PARTS_DEPRECATED]
            .iter()
            .find_map(|[ma, mi]| {
                format!("{}.{}", self.label(ma)?, self.label(mi)?)
                    .parse()
                    .ok()
            })
    }

    /// The GPU product: `nvidia.com/gpu.product`, else (a node whose GPUs are all MIG devices
    /// under the mixed strategy has no full-GPU labels) the parent model of a
    /// `nvidia.com/mig-<profile>.product` label.
    fn product(&self) -> Option<String> {
        if let Some(p) = self.label(PRODUCT) {
            return Some(p.to_string());
        }
        self.labels.iter().find_map(|(k, v)| {
            let profile = k
                .strip_prefix(MIG_RESOURCE_PREFIX)?
                .strip_suffix(".product")?;
            let p = parse_product(v.trim());
            (!profile.is_empty() && p.mig_profile.is_some() && !p.model.is_empty())
                .then(|| p.model.to_string())
        })
    }

    fn compute_capability(&self) -> Option<ComputeCapability> {
        let major = self.label(COMPUTE_MAJOR)?.parse().ok()?;
        let minor = self.label(COMPUTE_MINOR)?.parse().ok()?;
        Some(ComputeCapability::new(major, minor))
    }

    fn platform(&self) -> Option<Platform> {
        let os = self.label("kubernetes.io/os")?;
        let arch = self.label("kubernetes.io/arch")?;
        format!("{os}/{arch}").parse().ok()
    }
}

/// A GFD product label cut into its parts: `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED` →
/// model `NVIDIA-A100-SXM4-40GB`, MIG profile `1g.5gb`, shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product<'a> {
    pub model: &'a str,
    pub mig_profile: Option<&'a str>,
    pub shared: bool,
}

pub fn parse_product(label: &str) -> Product<'_> {
    let (rest, shared) = match label.strip_suffix("-SHARED") {
        Some(r) => (r, true),
        None => (label, false),
    };
    match rest.rsplit_once("-MIG-") {
        Some((model, profile)) => Product {
            model,
            mig_profile: Some(profile),
            shared,
        },
        None => Product {
            model: rest,
            mig_profile: None,
            shared,
        },
    }
}

/// Nodes of the pool a product/capability/driver triple names.
#[derive(Debug, Clone, Serialize)]
pub struct Pool {
    pub target: Target,
    pub nodes: Vec<Node>,
    /// Why the pool's GPUs cannot be told (GPU capacity without GFD labels, a product neither
    /// the labels nor the GPU matrix give a compute capability for); None when known.
    pub unknown: Option<String>,
}

impl Pool {
    pub fn node_names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }
}

/// The GPU pools of a cluster; nodes without GPUs are left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fleet {
    pub pools: Vec<Pool>,
}

impl Fleet {
    pub fn targets(&self) -> Vec<Target> {
        self.pools.iter().map(|p| p.target.clone()).collect()
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.target.name == name)
    }

    /// The pool a node belongs to.
    pub fn pool_of_node(&self, node: &str) -> Option<&Pool> {
        self.pools
            .iter()
            .find(|p| p.nodes.iter().any(|n| n.name == node))
    }
}

/// The name of the pool that holds GPU nodes GFD did not label.
pub const UNLABELLED_POOL: &str = "GPU nodes without GPU Feature Discovery labels";

/// Read `kubectl get nodes -o json` (a `List`/`NodeList`, or one `Node`) into GPU pools.
/// Errors never quote the input: it may be anything the user pointed at.
pub fn fleet_from_nodes_json(matrix: &Matrix, text: &str) -> anyhow::Result<Fleet> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "line {}, column {}: not `kubectl get nodes -o json` output (invalid JSON)",
            e.line(),
            e.column()
        )
    })?;
    let items: Vec<&Value> = match v.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None if v.get("kind").and_then(Value::as_str) == Some("Node") => vec![&v],
        None => bail!("not `kubectl get nodes -o json` output (no `items` list, not a Node)"),
    };
    if items.len() > MAX_NODES {
        bail!("more than {MAX_NODES} nodes: not read");
    }
    let mut nodes = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item.get("kind").and_then(Value::as_str) {
            Some("Node") | None => {}
            Some(_) => bail!("item {i} is not a Node (use `kubectl get nodes -o json`)"),
        }
        nodes.push(
            node_from_json(item)
                .ok_or_else(|| anyhow::anyhow!("item {i}: a Node without metadata.name"))?,
        );
    }
    Ok(group(matrix, nodes))
}

fn node_from_json(v: &Value) -> Option<Node> {
    let name = v.get("metadata")?.get("name")?.as_str()?.to_string();
    let labels = v
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let taints = v
        .get("spec")
        .and_then(|s| s.get("taints"))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|t| {
                    let str_of = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                    Some(Taint {
                        key: t.get("key")?.as_str()?.to_string(),
                        value: str_of("value").to_string(),
                        effect: str_of("effect").to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let status = v.get("status");
    let resources_in = |k: &str| status.and_then(|s| s.get(k)).and_then(Value::as_object);
    let resources = resources_in("allocatable")
        .or_else(|| resources_in("capacity"))
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("nvidia.com/"))
                .filter_map(|(k, q)| Some((k.clone(), quantity(q)?)))
                .collect()
        })
        .unwrap_or_default();
    Some(Node {
        name,
        labels,
        taints,
        resources,
    })
}

/// A whole-number resource quantity (`"8"`, or 8); extended resources are integers.
pub fn quantity(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// Group GPU nodes by (product, compute capability, driver); the unlabelled ones form one
/// pool of unknown GPUs.
fn group(matrix: &Matrix, nodes: Vec<Node>) -> Fleet {
    type Key = (String, Option<ComputeCapability>, Option<String>);
    let mut known: BTreeMap<Key, Vec<Node>> = BTreeMap::new();
    let mut unlabelled = Vec::new();
    for n in nodes.into_iter().filter(Node::has_gpu) {
        match n.product() {
            Some(p) => {
                let key = (p, n.compute_capability(), n.driver().map(|d| d.to_string()));
                known.entry(key).or_default().push(n);
            }
            None => unlabelled.push(n),
        }
    }
    let mut pools = Vec::new();
    let names_taken = |product: &str, driver: &Option<String>| {
        known
            .keys()
            .filter(|(p, _, d)| p == product && d == driver)
            .count()
            > 1
    };
    for ((product, cc_label, driver_text), nodes) in &known {
        let first = &nodes[0];
        let model = matrix.gpu(parse_product(product).model);
        // The labels' capability is what NVML reported on the node: it wins over the table.
        let cc = cc_label.or(model.map(|m| m.cc));
        let driver: Option<DriverVersion> = driver_text.as_ref().and_then(|d| d.parse().ok());
        let mut name = format!(
            "{product} / {}",
            driver_text.as_deref().unwrap_or("driver unknown")
        );
        if names_taken(product, driver_text) {
            name.push_str(&format!(
                " / {}",
                cc.map(|c| format!("sm_{}", c.sm()))
                    .unwrap_or_else(|| "capability unknown".into())
            ));
        }
        let count = first.label(COUNT).and_then(|c| c.parse().ok());
        let platforms: Vec<Option<Platform>> = nodes.iter().map(Node::platform).collect();
        let platform = platforms
            .iter()
            .all(|p| p == &platforms[0])
            .then(|| platforms[0].clone())
            .flatten();
        let unknown = cc.is_none().then(|| {
            format!(
                "GFD names the product {product:?} but no compute capability \
                 (nvidia.com/gpu.compute.major/minor), and gpulint's GPU matrix does not know it"
            )
        });
        pools.push(Pool {
            target: Target {
                name,
                driver,
                driver_cuda: first.driver_cuda(),
                gpus: vec![TargetGpu {
                    name: product.clone(),
                    cc,
                    datacenter: model.and_then(|m| m.forward_compat_eligible()),
                    uuid: None,
                    mig_mode: first.label(MIG_STRATEGY).map(str::to_string),
                    count,
                }],
                platform,
            },
            nodes: nodes.clone(),
            unknown,
        });
    }
    if !unlabelled.is_empty() {
        pools.push(Pool {
            target: Target {
                name: UNLABELLED_POOL.to_string(),
                driver: None,
                driver_cuda: None,
                gpus: vec![],
                platform: None,
            },
            nodes: unlabelled,
            unknown: Some(
                "the nodes offer NVIDIA GPUs but carry no GPU Feature Discovery labels \
                 (nvidia.com/gpu.product, …): their GPU and driver are unknown"
                    .into(),
            ),
        });
    }
    Fleet { pools }
}

/// A fleet file (`--fleet`) pinning these pools: what [`super::cli::fleet_from_str`] reads
/// back. Pools of unknown GPUs cannot be pinned; they are named in a comment.
pub fn to_fleet_toml(fleet: &Fleet, matrix: &Matrix) -> String {
    #[derive(Serialize)]
    struct File {
        pool: Vec<PoolOut>,
    }
    #[derive(Serialize)]
    struct PoolOut {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        driver: Option<String>,
        gpus: Vec<GpuOut>,
        #[serde(skip_serializing_if = "Option::is_none")]
        platform: Option<String>,
        nodes: Vec<String>,
    }
    #[derive(Serialize)]
    struct GpuOut {
        model: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
    }
    let mut out = String::from(
        "# GPU node pools derived by `gpulint fleet --from-nodes` from GPU Feature Discovery labels.\n",
    );
    let mut pools = Vec::new();
    for p in &fleet.pools {
        if p.unknown.is_some() {
            out.push_str(&format!(
                "# not pinned: {} ({} node(s)), GPUs unknown\n",
                comment_safe(&p.target.name),
                p.nodes.len()
            ));
            continue;
        }
        let gpus = p
            .target
            .gpus
            .iter()
            .filter_map(|g| {
                let cc = g.cc?;
                // The model by its matrix name when that gives the same capability, else the
                // capability itself (the labels' capability is authoritative).
                let model = matrix
                    .gpu(parse_product(&g.name).model)
                    .filter(|m| m.cc == cc)
                    .map(|m| m.name.clone())
                    .unwrap_or_else(|| cc.to_string());
                Some(GpuOut {
                    model,
                    count: g.count,
                })
            })
            .collect();
        pools.push(PoolOut {
            name: p.target.name.clone(),
            driver: p.target.driver.as_ref().map(|d| d.to_string()),
            gpus,
            platform: p.target.platform.as_ref().map(|p| p.to_string()),
            nodes: p.nodes.iter().map(|n| n.name.clone()).collect(),
        });
    }
    out.push_str(&toml::to_string(&File { pool: pools }).unwrap_or_default());
    out
}

/// Only characters that cannot end a TOML comment or start a new line.
fn comment_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kubectl get nodes -o json` with GFD's labels as its labelers write them (see the
    /// module comment): full GPUs, an older GFD with only the deprecated driver labels, MIG
    /// single and mixed strategies, a node with GPUs but no labels, a CPU node.
    const NODES: &str = include_str!("../../testdata/fleet/nodes.json");

    fn fleet() -> Fleet {
        fleet_from_nodes_json(&Matrix::embedded().unwrap(), NODES).unwrap()
    }

    fn pool<'a>(f: &'a Fleet, product: &str) -> &'a Pool {
        f.pools
            .iter()
            .find(|p| p.target.gpus.first().is_some_and(|g| g.name == product))
            .unwrap_or_else(|| panic!("no pool of {product}"))
    }

    #[test]
    fn pools_by_product_capability_and_driver() {
        let f = fleet();
        let names: Vec<&str> = f.pools.iter().map(|p| p.target.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb / 535.104.05",
                "NVIDIA-A100-SXM4-80GB / 535.104.05",
                "NVIDIA-H100-80GB-HBM3 / 550.54.15",
                "Tesla-T4 / 580.95.05",
                "Tesla-V100-SXM2-16GB / 470.82.01",
                UNLABELLED_POOL,
            ]
        );
        let h100 = pool(&f, "NVIDIA-H100-80GB-HBM3");
        assert_eq!(h100.node_names(), ["h100-a", "h100-b"]);
        assert_eq!(
            h100.target.capabilities(),
            vec![ComputeCapability::new(9, 0)]
        );
        assert_eq!(
            h100.target.driver_cuda.as_ref().unwrap().to_string(),
            "12.4"
        );
        assert_eq!(h100.target.gpus[0].count, Some(8));
        assert_eq!(h100.target.gpus[0].datacenter, Some(true));
        assert_eq!(
            h100.nodes[0].taints[0].to_string(),
            "nvidia.com/gpu=present:NoSchedule"
        );
        assert_eq!(
            h100.target.platform.as_ref().unwrap().to_string(),
            "linux/amd64"
        );
        assert!(h100.unknown.is_none());
        // The CPU node is no pool.
        assert!(f.pool_of_node("cpu-1").is_none());
    }

    /// An older GFD sets only `nvidia.com/cuda.driver.{major,minor,rev}`: the driver is read
    /// from them, leading zeros kept (`470.82.01`).
    #[test]
    fn deprecated_driver_labels() {
        let f = fleet();
        let v100 = pool(&f, "Tesla-V100-SXM2-16GB");
        assert_eq!(
            v100.target.driver.as_ref().unwrap().to_string(),
            "470.82.01"
        );
        assert_eq!(
            v100.target.capabilities(),
            vec![ComputeCapability::new(7, 0)]
        );
    }

    /// MIG single: the product carries the profile and the count is of MIG devices; the
    /// capability is the parent's. Mixed: the product is the full GPU and the node offers
    /// `nvidia.com/mig-1g.10gb`, not `nvidia.com/gpu`.
    #[test]
    fn mig_strategies() {
        let f = fleet();
        let single = pool(&f, "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
        assert_eq!(single.target.gpus[0].mig_mode.as_deref(), Some("single"));
        assert_eq!(single.target.gpus[0].count, Some(56));
        assert_eq!(
            single.target.capabilities(),
            vec![ComputeCapability::new(8, 0)]
        );
        let mixed = pool(&f, "NVIDIA-A100-SXM4-80GB");
        assert_eq!(mixed.target.gpus[0].mig_mode.as_deref(), Some("mixed"));
        assert_eq!(
            mixed.nodes[0].resources.get("nvidia.com/mig-1g.10gb"),
            Some(&7)
        );
        assert_eq!(mixed.nodes[0].resources.get(GPU_RESOURCE), Some(&0));
    }

    #[test]
    fn products_cut_into_model_profile_and_sharing() {
        let p = parse_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
        assert_eq!(p.model, "NVIDIA-A100-SXM4-40GB");
        assert_eq!(p.mig_profile, Some("1g.5gb"));
        assert!(p.shared);
        let p = parse_product("Tesla-V100-SXM2-16GB");
        assert_eq!(
            (p.model, p.mig_profile, p.shared),
            ("Tesla-V100-SXM2-16GB", None, false)
        );
        let m = Matrix::embedded().unwrap();
        for (label, cc) in [
            ("NVIDIA-H100-80GB-HBM3", (9, 0)),
            ("Tesla-V100-SXM2-16GB", (7, 0)),
            ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", (8, 0)),
            ("Tesla-T4-SHARED", (7, 5)),
        ] {
            let g = m.gpu(parse_product(label).model).unwrap();
            assert_eq!(g.cc, ComputeCapability::new(cc.0, cc.1), "{label}");
        }
    }

    /// The labels' compute capability wins over the GPU matrix's; a product neither knows
    /// is an unknown target, as are GPU nodes without labels.
    #[test]
    fn capability_labels_win_and_unknowns_stay_unknown() {
        let m = Matrix::embedded().unwrap();
        let node = |name: &str, labels: &str, gpus: u32| {
            format!(
                r#"{{"kind":"Node","metadata":{{"name":"{name}","labels":{{{labels}}}}},"status":{{"capacity":{{"nvidia.com/gpu":"{gpus}"}}}}}}"#
            )
        };
        let list = |items: &[String]| format!(r#"{{"kind":"List","items":[{}]}}"#, items.join(","));
        let f = fleet_from_nodes_json(
            &m,
            &list(&[
                node(
                    "a",
                    r#""nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.compute.major":"9","nvidia.com/gpu.compute.minor":"5""#,
                    1,
                ),
                node("b", r#""nvidia.com/gpu.product":"Mystery-Board-X""#, 2),
                node("c", "", 4),
            ]),
        )
        .unwrap();
        assert_eq!(f.pools.len(), 3);
        let h100 = pool(&f, "NVIDIA-H100-80GB-HBM3");
        assert_eq!(
            h100.target.capabilities(),
            vec![ComputeCapability::new(9, 5)]
        );
        assert!(h100.target.driver.is_none());
        assert!(h100.target.name.ends_with("/ driver unknown"));
        let mystery = pool(&f, "Mystery-Board-X");
        assert!(mystery
            .unknown
            .as_deref()
            .unwrap()
            .contains("Mystery-Board-X"));
        assert!(mystery.target.capabilities().is_empty());
        assert_eq!(f.pools[2].target.name, UNLABELLED_POOL);
        assert!(f.pools[2].unknown.is_some());
        assert!(f.pools[2].target.gpus.is_empty());
    }

    /// What `--write-fleet` writes reads back through the fleet loader as the same pools
    /// (names, drivers, capabilities, counts, platforms); unknown pools are not pinned.
    #[test]
    fn written_fleet_round_trips() {
        let m = Matrix::embedded().unwrap();
        let f = fleet();
        let text = to_fleet_toml(&f, &m);
        let back = super::super::cli::fleet_from_str(&m, &text).unwrap();
        let known: Vec<&Pool> = f.pools.iter().filter(|p| p.unknown.is_none()).collect();
        assert_eq!(back.len(), known.len());
        for (p, t) in known.iter().zip(&back) {
            assert_eq!(t.name, p.target.name);
            assert_eq!(t.driver, p.target.driver);
            assert_eq!(t.capabilities(), p.target.capabilities());
            assert_eq!(t.gpus[0].count, p.target.gpus[0].count);
            assert_eq!(t.platform, p.target.platform);
        }
        assert!(text.contains("# not pinned: GPU nodes without GPU Feature Discovery labels"));
        assert!(text.contains(r#"nodes = ["h100-a", "h100-b"]"#), "{text}");
    }

    /// Whatever the file holds, errors say where, never what.
    #[test]
    fn errors_never_echo_the_input() {
        let m = Matrix::embedded().unwrap();
        for bad in [
            "SECRETSECRET",
            r#"{"token":"SECRETSECRET"}"#,
            r#"{"items":[{"kind":"Secret","data":"SECRETSECRET"}]}"#,
            r#"{"items":[{"kind":"Node","metadata":{"labels":{"SECRETSECRET":"x"}}}]}"#,
        ] {
            let e = format!("{:#}", fleet_from_nodes_json(&m, bad).unwrap_err());
            assert!(!e.contains("SECRET"), "{bad}: {e}");
        }
    }
}
