//! Kubernetes manifests → [`RunSpec`]s, one per container: multi-document YAML (Helm-rendered
//! output with `# Source:` comments included), pod templates wherever they sit (Pod,
//! Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, List, and operator kinds such
//! as TFJob / PyTorchJob: any mapping with `containers`), `nvidia.com/gpu` limits and requests,
//! hostPath volumes, `/dev/shm` emptyDirs, env, privileged, runtimeClassName and GPU
//! scheduling (nodeSelector, affinity, tolerations).

use super::build::SpecError;
use super::dockerfile::Pos;
use super::runspec::{GpuRequest, Mount, RunImage, RunKind, RunSpec};
use super::yamlloc::scalar as s;
use super::yamlloc::{Block, YamlText};
use crate::gpu_target::schedule::{Operator, Requirement, Scheduling, Toleration};
use yaml_serde::Value;

/// Documents of a multi-document YAML text: `(first line, text)`.
pub fn split_docs(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 1u32;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("---") && line[3..].trim().is_empty()
            || line.starts_with("--- ") && !line[4..].trim_start().starts_with('|')
        {
            out.push((start, std::mem::take(&mut cur)));
            start = i as u32 + 2;
            continue;
        }
        if line.trim() == "..." {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
    }
    out.push((start, cur));
    out
}

/// The GPU resource of a `limits` / `requests` map: `nvidia.com/gpu`, else a MIG device
/// (`nvidia.com/mig-1g.10gb`, the device plugin's mixed strategy), with its quantity as written.
fn gpu_resource(m: &Value) -> Option<(String, String)> {
    let m = m.as_mapping()?;
    let of = |want: &dyn Fn(&str) -> bool| {
        m.iter().find_map(|(k, v)| {
            let k = k.as_str()?;
            want(k).then(|| Some((k.to_string(), s(v)?))).flatten()
        })
    };
    of(&|k| k == "nvidia.com/gpu").or_else(|| of(&|k| k.starts_with("nvidia.com/mig-")))
}

fn is_gpu_label(k: &str) -> bool {
    k.contains("nvidia.com/gpu")
        || k.contains("gke-accelerator")
        || k.contains("nvidia.com/")
        || k.contains("accelerator")
}

/// Parse a manifest file. YAML errors are per document; the others still count.
pub fn parse(file: &str, text: &str) -> (Vec<RunSpec>, Vec<SpecError>) {
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for (first, doc) in split_docs(text) {
        if doc
            .trim()
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            continue;
        }
        if let Some(e) = super::yamlloc::nesting_error(&doc, first) {
            errors.push(e);
            continue;
        }
        let mut v: Value = match yaml_serde::from_str(&doc) {
            Ok(v) => v,
            Err(e) => {
                errors.push(SpecError {
                    pos: e
                        .location()
                        .map(|l| Pos {
                            line: first + l.line() as u32 - 1,
                            col: l.column() as u32,
                        })
                        .unwrap_or(Pos {
                            line: first,
                            col: 1,
                        }),
                    message: format!("invalid YAML: {e}"),
                });
                continue;
            }
        };
        let _ = v.apply_merge();
        let y = YamlText::new(&doc, first);
        let mut pods = Vec::new();
        find_pod_specs(&v, &v, &mut pods, 0);
        for (pod, top) in pods {
            pod_specs(file, &y, top, pod, &mut specs);
        }
    }
    (specs, errors)
}

/// Collect every mapping with a `containers` list (a pod spec), with its document root.
fn find_pod_specs<'a>(
    v: &'a Value,
    root: &'a Value,
    out: &mut Vec<(&'a Value, &'a Value)>,
    depth: u32,
) {
    if depth > 16 {
        return;
    }
    match v {
        Value::Mapping(m) => {
            if m.get("containers")
                .map(|c| c.is_sequence())
                .unwrap_or(false)
            {
                out.push((v, root));
                return;
            }
            // `kind: List` items are their own roots.
            let is_list = m.get("kind").and_then(|k| k.as_str()) == Some("List");
            for (k, x) in m {
                if is_list && k.as_str() == Some("items") {
                    if let Some(items) = x.as_sequence() {
                        for it in items {
                            find_pod_specs(it, it, out, depth + 1);
                        }
                    }
                    continue;
                }
                find_pod_specs(x, root, out, depth + 1);
            }
        }
        Value::Sequence(l) => {
            for x in l {
                find_pod_specs(x, root, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn pod_specs(file: &str, y: &YamlText, root: &Value, pod: &Value, out: &mut Vec<RunSpec>) {
    let all = y.all();
    let kind = root.get("kind").and_then(s).unwrap_or_default();
    let meta_name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(s)
        .unwrap_or_default();
    let namespace = root
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(s)
        .unwrap_or_default();
    // hostPath volumes and /dev/shm emptyDirs by volume name.
    let mut host_paths: Vec<(String, String)> = Vec::new();
    let mut mem_volumes: Vec<String> = Vec::new();
    if let Some(vols) = pod.get("volumes").and_then(|v| v.as_sequence()) {
        for v in vols {
            let name = v.get("name").and_then(s).unwrap_or_default();
            if let Some(p) = v.get("hostPath").and_then(|h| h.get("path")).and_then(s) {
                host_paths.push((name.clone(), p));
            }
            if v.get("emptyDir")
                .and_then(|e| e.get("medium"))
                .and_then(s)
                .as_deref()
                == Some("Memory")
            {
                mem_volumes.push(name);
            }
        }
    }
    let runtime_class = pod.get("runtimeClassName").and_then(s);
    let mut gpu_sched: Option<String> = None;
    let mut gpu_product: Option<String> = None;
    if let Some(ns) = pod.get("nodeSelector").and_then(|n| n.as_mapping()) {
        for (k, v) in ns {
            let k = k.as_str().unwrap_or("");
            if k == "nvidia.com/gpu.product" {
                gpu_product = s(v).filter(|p| !p.is_empty());
            }
            if is_gpu_label(k) {
                gpu_sched = Some(format!("{k}={}", s(v).unwrap_or_default()));
            }
        }
    }
    if gpu_sched.is_none() {
        if let Some(a) = pod.get("affinity") {
            let t = yaml_serde::to_string(a).unwrap_or_default();
            if is_gpu_label(&t) {
                gpu_sched = Some("affinity on GPU node labels".into());
            }
        }
    }
    let tolerates_gpu = pod
        .get("tolerations")
        .and_then(|t| t.as_sequence())
        .map(|l| {
            l.iter().any(|t| {
                t.get("key")
                    .and_then(s)
                    .map(|k| k.contains("nvidia.com/gpu"))
                    .unwrap_or(false)
            })
        })
        .unwrap_or(false);
    let scheduling = pod_scheduling(pod);
    let mut containers: Vec<(&Value, bool)> = Vec::new();
    for key in ["initContainers", "containers"] {
        if let Some(l) = pod.get(key).and_then(|c| c.as_sequence()) {
            containers.extend(l.iter().map(|c| (c, key == "initContainers")));
        }
    }
    // GPUs are a per-container resource: in a pod where one container has the GPU limit, the
    // others (network daemons, log shippers, init steps) are meant to run without one.
    let gpu_container = containers.iter().find_map(|(c, _)| {
        let res = c.get("resources")?;
        ["limits", "requests"]
            .iter()
            .any(|k| res.get(*k).and_then(gpu_resource).is_some())
            .then(|| c.get("name").and_then(s).unwrap_or_default())
    });
    for (c, init) in containers {
        let cname = c.get("name").and_then(s).unwrap_or_default();
        let image = c.get("image").and_then(s);
        // The container's block: from its `- name:` / `image:` line.
        // `- name: x` first: a bare `name: x` may be the workload's metadata.name.
        // Containers already placed are skipped: two of one name (an MPIJob's launcher and
        // worker) are two items, in document order.
        let taken: Vec<u32> = out
            .iter()
            .filter(|r| r.file == file)
            .map(|r| r.pos.line)
            .collect();
        let cpos = y
            .item_named(all, &cname, &taken)
            .filter(|_| !cname.is_empty())
            .or_else(|| image.as_ref().and_then(|i| y.text(all, i)))
            .unwrap_or(Pos {
                line: all.start,
                col: 1,
            });
        let blk = container_block(y, cpos.line, all);
        let at = |key: &str| y.key(blk, key).unwrap_or(cpos);
        let mut rs = RunSpec::new(
            RunKind::K8s,
            file,
            cpos,
            &format!(
                "{}{}{cname}",
                if meta_name.is_empty() {
                    kind.clone()
                } else {
                    meta_name.clone()
                },
                "/"
            ),
            "kubernetes",
        );
        rs.image_pos = at("image");
        rs.image = image.clone().map(RunImage::written);
        rs.scheduling = Some(scheduling.clone());
        rs.gpu_product = gpu_product.clone();
        rs.cpu_role = if init {
            Some("it is an init container".to_string())
        } else if let Some(g) = gpu_container.as_ref().filter(|g| **g != cname) {
            Some(format!("it is a sidecar of GPU container `{g}`"))
        } else if kind == "DaemonSet" {
            Some("it is a per-node agent (DaemonSet)".to_string())
        } else {
            None
        };
        // Dynamic Resource Allocation: the container names claims of the pod's
        // `resourceClaims` (a GPU device class, as a rule, on GPU nodes); KServe serving
        // runtimes are templates whose resources the InferenceService sets.
        let claims = c
            .get("resources")
            .and_then(|r| r.get("claims"))
            .and_then(|l| l.as_sequence())
            .is_some_and(|l| !l.is_empty());
        if claims {
            rs.gpu_elsewhere = Some("a DRA resource claim".into());
        } else if matches!(kind.as_str(), "ServingRuntime" | "ClusterServingRuntime") {
            rs.gpu_elsewhere = Some("the InferenceService using this runtime".into());
        } else if matches!(kind.as_str(), "TrainingRuntime" | "ClusterTrainingRuntime") {
            // Kubeflow Trainer: the TrainJob sets `resourcesPerNode` on these templates.
            rs.gpu_elsewhere = Some("the TrainJob using this runtime".into());
        }
        if let Some(rc) = &runtime_class {
            rs.runtime_class = Some((rc.clone(), y.key(all, "runtimeClassName").unwrap_or(cpos)));
        }
        if let Some(g) = &gpu_sched {
            rs.gpu_scheduling = Some((
                g.clone(),
                y.key(all, "nodeSelector")
                    .or_else(|| y.key(all, "affinity"))
                    .unwrap_or(cpos),
            ));
        } else if tolerates_gpu {
            rs.gpu_scheduling = Some((
                "toleration for nvidia.com/gpu".into(),
                y.key(all, "tolerations").unwrap_or(cpos),
            ));
        }
        let res = c.get("resources");
        let lim = res.and_then(|r| r.get("limits")).and_then(gpu_resource);
        let req = res.and_then(|r| r.get("requests")).and_then(gpu_resource);
        if let Some((key, n)) = lim.clone().or(req.clone()) {
            let count = n.parse::<u32>().ok();
            if count != Some(0) {
                rs.gpus = Some(GpuRequest {
                    all: false,
                    count,
                    ids: Vec::new(),
                    pos: y.text(blk, &key).unwrap_or(cpos),
                });
            }
        }
        if let (Some((key, _)), None) = (&req, &lim) {
            rs.gpu_request_without_limit = Some(y.text(blk, key).unwrap_or(cpos));
        }
        if let Some(env) = c.get("env").and_then(|e| e.as_sequence()) {
            for e in env {
                let n = e.get("name").and_then(s).unwrap_or_default();
                if let Some(v) = e.get("value").and_then(s) {
                    let p = y.text(blk, &format!("name: {n}")).unwrap_or(cpos);
                    rs.env.push((n, v, p));
                }
            }
        }
        if let Some(vm) = c.get("volumeMounts").and_then(|e| e.as_sequence()) {
            for m in vm {
                let vname = m.get("name").and_then(s).unwrap_or_default();
                let mp = m.get("mountPath").and_then(s).unwrap_or_default();
                if mp == "/dev/shm" && mem_volumes.contains(&vname) {
                    rs.shm_volume = true;
                }
                if let Some((_, hp)) = host_paths.iter().find(|h| h.0 == vname) {
                    if mp == "/dev/shm" && hp == "/dev/shm" {
                        rs.shm_volume = true;
                    }
                    rs.mounts.push(Mount {
                        host: hp.clone(),
                        container: mp.clone(),
                        read_only: m.get("readOnly").and_then(|x| x.as_bool()).unwrap_or(false),
                        pos: y
                            .text(all, &format!("path: {hp}"))
                            .or_else(|| y.text(all, hp))
                            .unwrap_or(cpos),
                    });
                }
            }
        }
        rs.privileged = c
            .get("securityContext")
            .and_then(|sc| sc.get("privileged"))
            .and_then(|p| p.as_bool())
            .unwrap_or(false);
        for key in ["command", "args"] {
            if let Some(l) = c.get(key).and_then(|x| x.as_sequence()) {
                rs.command.extend(l.iter().filter_map(s));
            }
        }
        let img_l = image.clone().unwrap_or_default().to_ascii_lowercase();
        rs.infra = [
            "device-plugin",
            "gpu-operator",
            "dcgm",
            "nvidia/driver",
            "container-toolkit",
            "gpu-feature-discovery",
            "nvidia/k8s/dcgm",
            "nvidia/k8s/container-toolkit",
            "cuda-validator",
            "mig-manager",
        ]
        .iter()
        .any(|k| img_l.contains(k) || meta_name.contains(k))
            || host_paths.iter().any(|h| h.1.contains("device-plugins"))
            // The operator's own controllers and agents; a one-off Pod or Job there is a test
            // workload someone runs (the CUDA samples of the operator's docs), judged by what
            // it runs.
            || ((namespace == "gpu-operator" || namespace.contains("nvidia"))
                && !matches!(kind.as_str(), "Pod" | "Job" | "CronJob"));
        out.push(rs);
    }
}

/// What the scheduler reads of a pod spec: nodeSelector, required node affinity,
/// tolerations, the NVIDIA resources it needs on one node, and `nodeName`.
fn pod_scheduling(pod: &Value) -> Scheduling {
    let strs = |v: Option<&Value>| -> Vec<String> {
        v.and_then(|l| l.as_sequence())
            .map(|l| l.iter().filter_map(s).collect())
            .unwrap_or_default()
    };
    let mut out = Scheduling {
        node_name: pod.get("nodeName").and_then(s).filter(|n| !n.is_empty()),
        ..Default::default()
    };
    if let Some(ns) = pod.get("nodeSelector").and_then(|n| n.as_mapping()) {
        out.node_selector = ns
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), s(v).unwrap_or_default())))
            .collect();
    }
    let terms = pod
        .get("affinity")
        .and_then(|a| a.get("nodeAffinity"))
        .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(|r| r.get("nodeSelectorTerms"))
        .and_then(|t| t.as_sequence());
    for term in terms.into_iter().flatten() {
        let mut reqs = Vec::new();
        for (list, field) in [("matchExpressions", false), ("matchFields", true)] {
            for e in term
                .get(list)
                .and_then(|l| l.as_sequence())
                .into_iter()
                .flatten()
            {
                let op = e.get("operator").and_then(s).unwrap_or_default();
                reqs.push(Requirement {
                    key: e.get("key").and_then(s).unwrap_or_default(),
                    // An operator the API server would refuse: nothing matches it.
                    operator: Operator::parse(&op).unwrap_or(Operator::In),
                    values: if Operator::parse(&op).is_some() {
                        strs(e.get("values"))
                    } else {
                        Vec::new()
                    },
                    field,
                });
            }
        }
        out.required_terms.push(reqs);
    }
    for t in pod
        .get("tolerations")
        .and_then(|t| t.as_sequence())
        .into_iter()
        .flatten()
    {
        out.tolerations.push(Toleration {
            key: t.get("key").and_then(s).unwrap_or_default(),
            exists: t.get("operator").and_then(s).as_deref() == Some("Exists"),
            value: t.get("value").and_then(s).unwrap_or_default(),
            effect: t.get("effect").and_then(s).unwrap_or_default(),
        });
    }
    // Extended resources: limits (requests must equal them), summed over the containers,
    // and at least the largest init container's.
    let needs = |c: &Value| -> Vec<(String, u64)> {
        let res = c.get("resources");
        let of = |k: &str| res.and_then(|r| r.get(k)).and_then(|l| l.as_mapping());
        of("limits")
            .or_else(|| of("requests"))
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let k = k.as_str()?;
                k.starts_with("nvidia.com/")
                    .then(|| Some((k.to_string(), s(v)?.trim().parse().ok()?)))
                    .flatten()
            })
            .collect()
    };
    let list = |k: &str| {
        pod.get(k)
            .and_then(|c| c.as_sequence())
            .into_iter()
            .flatten()
    };
    for c in list("containers") {
        for (k, n) in needs(c) {
            let e = out.resources.entry(k).or_insert(0);
            *e = e.saturating_add(n);
        }
    }
    for c in list("initContainers") {
        for (k, n) in needs(c) {
            let e = out.resources.entry(k).or_insert(0);
            *e = (*e).max(n);
        }
    }
    out.resources.retain(|_, n| *n > 0);
    out
}

fn container_block(y: &YamlText, line: u32, within: Block) -> Block {
    y.block_of(line, within)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELM: &str = r#"---
# Source: chart/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: train
spec:
  template:
    spec:
      runtimeClassName: nvidia
      containers:
        - name: worker
          image: nvcr.io/nvidia/pytorch:24.04-py3
          env:
            - name: NVIDIA_VISIBLE_DEVICES
              value: all
          resources:
            limits:
              nvidia.com/gpu: 2
          volumeMounts:
            - name: cuda
              mountPath: /usr/local/cuda
      volumes:
        - name: cuda
          hostPath:
            path: /usr/local/cuda-12.4
---
# Source: chart/templates/empty.yaml
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: eval
              image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
"#;

    #[test]
    fn helm_output_and_templates() {
        let (v, e) = parse("out.yaml", HELM);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(v.len(), 2);
        let w = &v[0];
        assert_eq!(w.pos.line, 12);
        assert_eq!(w.gpus.as_ref().unwrap().count, Some(2));
        assert_eq!(w.env_value("NVIDIA_VISIBLE_DEVICES").unwrap().2.line, 15);
        assert_eq!(w.mounts[0].host, "/usr/local/cuda-12.4");
        assert_eq!(w.mounts[0].pos.line, 26);
        assert_eq!(w.runtime_class.as_ref().unwrap().0, "nvidia");
        assert_eq!(v[1].name, "nightly/eval");
        assert!(v[1].gpus.is_none());
    }

    #[test]
    fn broken_document_is_located_and_others_survive() {
        let (v, e) = parse(
            "x.yaml",
            "kind: Pod\nspec:\n  containers:\n  - name: a\n    image: x\n---\nkind: Pod\nspec: [\n",
        );
        assert_eq!(v.len(), 1);
        assert_eq!(e.len(), 1);
        assert!(e[0].pos.line >= 7);
    }

    /// What the scheduler reads of a pod spec lands in `scheduling`, the same for each of its
    /// containers: nodeSelector, required affinity (matchExpressions and matchFields),
    /// tolerations, NVIDIA resources (containers summed, init containers at most), nodeName.
    #[test]
    fn scheduling_fields() {
        let (v, e) = parse(
            "p.yaml",
            r#"apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  nodeName: h100-a
  nodeSelector:
    nvidia.com/gpu.family: hopper
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - key: nvidia.com/cuda.driver-version.major
                operator: Gt
                values: ["535"]
            matchFields:
              - key: metadata.name
                operator: NotIn
                values: [bad-node]
  tolerations:
    - key: nvidia.com/gpu
      operator: Exists
      effect: NoSchedule
  initContainers:
    - name: warm
      image: x
      resources:
        limits:
          nvidia.com/gpu: 3
  containers:
    - name: a
      image: x
      resources:
        limits:
          nvidia.com/gpu: 1
          cpu: 2
    - name: b
      image: x
      resources:
        limits:
          nvidia.com/gpu: "1"
          nvidia.com/mig-1g.10gb: 2
"#,
        );
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(v.len(), 3);
        let s = v[1].scheduling.as_ref().unwrap();
        assert!(v.iter().all(|r| r.scheduling.as_ref() == Some(s)));
        assert_eq!(s.node_name.as_deref(), Some("h100-a"));
        assert_eq!(
            s.node_selector,
            [("nvidia.com/gpu.family".to_string(), "hopper".to_string())]
        );
        assert_eq!(s.required_terms.len(), 1);
        let term = &s.required_terms[0];
        assert_eq!(term[0].operator, Operator::Gt);
        assert_eq!(term[0].values, ["535"]);
        assert!(!term[0].field && term[1].field);
        assert_eq!(term[1].operator, Operator::NotIn);
        assert!(s.tolerations[0].exists);
        assert_eq!(s.tolerations[0].effect, "NoSchedule");
        // Containers 1 + 1 = 2, the init container's 3 is more.
        assert_eq!(s.resources.get("nvidia.com/gpu"), Some(&3));
        assert_eq!(s.resources.get("nvidia.com/mig-1g.10gb"), Some(&2));
    }

    /// A MIG device (`nvidia.com/mig-1g.10gb`, the device plugin's mixed strategy) is a GPU
    /// request: before, only `nvidia.com/gpu` counted, and GL110 called such a container
    /// GPU-less.
    #[test]
    fn mig_resources_are_gpu_requests() {
        let (v, _) = parse(
            "j.yaml",
            "kind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n      containers:\n        - name: infer\n          image: nvcr.io/nvidia/pytorch:24.04-py3\n          resources:\n            limits:\n              nvidia.com/mig-1g.10gb: 1\n        - name: log\n          image: busybox\n",
        );
        let g = v[0].gpus.as_ref().expect("a MIG limit is a GPU request");
        assert_eq!(g.count, Some(1));
        assert_eq!(g.pos.line, 12);
        assert_eq!(
            v[1].cpu_role.as_deref(),
            Some("it is a sidecar of GPU container `infer`")
        );
    }
}
