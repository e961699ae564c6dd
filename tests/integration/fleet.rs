//! The cluster as the target: `--fleet-from-nodes` with `kubectl get nodes -o json` in GPU
//! Feature Discovery's label format (testdata/fleet/nodes.json: H100 pool tainted
//! `nvidia.com/gpu=present:NoSchedule`, T4, V100 labelled by an older GFD, A100 under the
//! MIG single and mixed strategies, a GPU node without labels, a CPU node), Kubernetes
//! workloads and running pods judged against the pools they can be scheduled onto, and
//! `gpulint fleet`. The image is a real CUDA library built only for sm_75: it runs on the T4
//! pool and nowhere else.

use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::spec_cli::sm75_image;

const NODES: &str = "testdata/fleet/nodes.json";

/// Run gpulint hermetically in `dir` with `stdin`; (exit code, JSON report, stderr).
fn gpulint(dir: &Path, args: &[&str], stdin: &str) -> (i32, Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .args(["--format", "json"])
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env_remove("DOCKER_HOST")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn nodes_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(NODES)
        .display()
        .to_string()
}

fn with_rule<'a>(v: &'a Value, rule: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .map(|a| a.iter().filter(|f| f["rule"] == rule).collect())
        .unwrap_or_default()
}

/// The messages of `rule` that name `workload` (`` `name` ``).
fn about<'a>(v: &'a Value, rule: &str, workload: &str) -> Vec<&'a str> {
    with_rule(v, rule)
        .into_iter()
        .filter_map(|f| f["message"].as_str())
        .filter(|m| m.starts_with(&format!("`{workload}`")))
        .collect()
}

/// The pools (targets) GL001 was reported against for findings at `line`.
fn gl001_pools_at(v: &Value, line: u64) -> Vec<String> {
    let mut pools: Vec<String> = with_rule(v, "GL001")
        .into_iter()
        .filter(|f| f["location"]["line"] == line)
        .filter_map(|f| f["target"].as_str().map(str::to_string))
        .collect();
    pools.sort();
    pools.dedup();
    pools
}

fn manifest(image: &str) -> String {
    let deploy = |name: &str, pod: &str| {
        format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n{pod}"
        )
    };
    let container = |limits: &str| {
        format!(
            "      containers:\n        - name: main\n          image: {image}\n          resources:\n            limits:\n              {limits}\n          volumeMounts:\n            - name: shm\n              mountPath: /dev/shm\n      volumes:\n        - name: shm\n          emptyDir:\n            medium: Memory\n"
        )
    };
    let tolerate_gpu = "      tolerations:\n        - key: nvidia.com/gpu\n          operator: Exists\n          effect: NoSchedule\n";
    [
        deploy(
            "any-gpu",
            &format!("{tolerate_gpu}{}", container("nvidia.com/gpu: 1")),
        ),
        deploy(
            "t4-only",
            &format!(
                "      nodeSelector:\n        nvidia.com/gpu.product: Tesla-T4\n{}",
                container("nvidia.com/gpu: 1")
            ),
        ),
        deploy(
            "h100-untolerated",
            &format!(
                "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n{}",
                container("nvidia.com/gpu: 1")
            ),
        ),
        deploy("mig-slice", &container("nvidia.com/mig-1g.10gb: 1")),
        deploy("mig-absent", &container("nvidia.com/mig-3g.40gb: 1")),
        deploy(
            "new-driver",
            &format!(
                "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n              - matchExpressions:\n                  - key: nvidia.com/cuda.driver-version.major\n                    operator: Gt\n                    values: [\"540\"]\n      tolerations:\n        - operator: Exists\n{}",
                container("nvidia.com/gpu: 1")
            ),
        ),
        deploy(
            "old-driver",
            &format!(
                "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n              - matchExpressions:\n                  - key: nvidia.com/cuda.driver.major\n                    operator: Lt\n                    values: [\"500\"]\n                  - key: nvidia.com/mig.strategy\n                    operator: DoesNotExist\n{}",
                container("nvidia.com/gpu: 1")
            ),
        ),
    ]
    .concat()
}

const H100: &str = "NVIDIA-H100-80GB-HBM3 / 550.54.15";
const T4: &str = "Tesla-T4 / 580.95.05";
const V100: &str = "Tesla-V100-SXM2-16GB / 470.82.01";
const MIG_SINGLE: &str = "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb / 535.104.05";
const MIG_MIXED: &str = "NVIDIA-A100-SXM4-80GB / 535.104.05";

#[test]
fn workloads_are_judged_against_the_pools_they_can_land_on() {
    let d = tempfile::tempdir().unwrap();
    let image = sm75_image(d.path());
    std::fs::write(d.path().join("w.yaml"), manifest(&image)).unwrap();
    let nodes = nodes_path();
    let (code, v, err) = gpulint(
        d.path(),
        &[
            "k8s",
            "w.yaml",
            "--fleet-from-nodes",
            &nodes,
            "--scan-images",
            "--no-cache",
        ],
        "",
    );
    assert_eq!(code, 1, "{v:#}\n{err}");
    crate::formats::assert_valid_report(&v);
    let line_of = |name: &str| -> u64 {
        let text = manifest(&image);
        let at = text.find(&format!("name: {name}\n")).unwrap();
        // The container's `- name: main` after the workload's name.
        let main = at + text[at..].find("- name: main").unwrap();
        text[..main].lines().count() as u64 + 1
    };

    // Tolerates the H100 taint, asks for nvidia.com/gpu: every pool offering it, and no
    // other (the mixed-strategy A100 offers only MIG devices). It fails on all but the T4.
    assert_eq!(
        gl001_pools_at(&v, line_of("any-gpu")),
        [MIG_SINGLE, H100, V100]
    );
    let gl121 = about(&v, "GL121", "any-gpu");
    assert_eq!(gl121.len(), 3, "{gl121:#?}");
    assert!(gl121
        .iter()
        .any(|m| m.contains(&format!("pool {H100} (nodes: h100-a, h100-b)"))));
    assert!(gl121.iter().all(|m| !m.contains(T4)));

    // Pinned to the T4 pool, where the sm_75 image runs: nothing.
    assert!(gl001_pools_at(&v, line_of("t4-only")).is_empty());
    assert!(about(&v, "GL121", "t4-only").is_empty());
    assert!(about(&v, "GL122", "t4-only").is_empty());

    // Selects the H100 pool but does not tolerate its taint: it lands nowhere.
    let gl122 = about(&v, "GL122", "h100-untolerated");
    assert_eq!(gl122.len(), 1);
    assert!(
        gl122[0].contains(&format!(
            "pool {H100}: taint nvidia.com/gpu=present:NoSchedule not tolerated"
        )),
        "{}",
        gl122[0]
    );

    // A MIG slice only the mixed-strategy pool offers.
    assert_eq!(gl001_pools_at(&v, line_of("mig-slice")), [MIG_MIXED]);
    assert_eq!(about(&v, "GL121", "mig-slice").len(), 1);
    assert!(
        about(&v, "GL110", "mig-slice").is_empty(),
        "a MIG limit is a GPU request"
    );
    let gl122 = about(&v, "GL122", "mig-absent");
    assert!(
        gl122[0].contains("requests nvidia.com/mig-3g.40gb: 1 but no GPU pool admits it"),
        "{}",
        gl122[0]
    );

    // Gt on GFD's driver-major label: only the 550 pool (the V100 node's older GFD sets
    // only the deprecated label, which the expression does not name).
    assert_eq!(gl001_pools_at(&v, line_of("new-driver")), [H100]);
    // Lt on the deprecated label, DoesNotExist on the MIG strategy: only the V100.
    assert_eq!(gl001_pools_at(&v, line_of("old-driver")), [V100]);
    let old = about(&v, "GL121", "old-driver");
    assert_eq!(old.len(), 1);
    assert!(
        old[0].contains("(nodes: v100-a)") && old[0].contains("GL001, GL002"),
        "{}",
        old[0]
    );

    // The unlabelled GPU node is an unknown target that fails the gate.
    let gl120 = with_rule(&v, "GL120");
    assert_eq!(gl120.len(), 1);
    assert_eq!(gl120[0]["severity"], "error");
    assert!(gl120[0]["message"]
        .as_str()
        .unwrap()
        .contains("gpu-unlabelled"));
}

/// `kubectl get pods -A -o json`: each pod against its node's pool and the pools it could
/// be rescheduled to.
#[test]
fn running_pods_are_audited() {
    let d = tempfile::tempdir().unwrap();
    let image = sm75_image(d.path());
    let pod = |name: &str, node: &str, tolerations: Value| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {
                "nodeName": node,
                "tolerations": tolerations,
                "containers": [{
                    "name": "main", "image": image,
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]
                }],
                "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
            },
            "status": {"phase": "Running"}
        })
    };
    let default_tolerations = json!([
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}
    ]);
    let mut gpu_tolerations = default_tolerations.clone();
    gpu_tolerations
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}));
    let pods = json!({
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
        "items": [
            pod("on-t4", "t4-a", default_tolerations.clone()),
            pod("on-h100", "h100-a", gpu_tolerations),
            pod("on-gone-node", "gone-node", default_tolerations),
        ]
    });
    std::fs::write(
        d.path().join("pods.json"),
        serde_json::to_string_pretty(&pods).unwrap(),
    )
    .unwrap();
    let nodes = nodes_path();
    let (code, v, err) = gpulint(
        d.path(),
        &[
            "k8s",
            "pods.json",
            "--fleet-from-nodes",
            &nodes,
            "--scan-images",
            "--no-cache",
        ],
        "",
    );
    assert_eq!(code, 1, "{v:#}\n{err}");
    assert!(!err.contains("no Kubernetes object"), "{err}");
    // Runs on the T4 (fine there) but could be rescheduled onto V100 and the MIG-single A100
    // (not the tainted H100).
    let t4 = about(&v, "GL121", "on-t4");
    assert_eq!(t4.len(), 2, "{t4:#?}");
    assert!(t4.iter().any(|m| m.contains(V100)) && t4.iter().any(|m| m.contains(MIG_SINGLE)));
    assert!(t4
        .iter()
        .all(|m| !m.contains(H100) && !m.contains("runs there now")));
    // Runs on an H100 where it fails now.
    let h100 = about(&v, "GL121", "on-h100");
    assert!(
        h100.iter()
            .any(|m| m.contains(H100) && m.contains("(it runs there now, on h100-a)")),
        "{h100:#?}"
    );
    // Bound to a node that is not in the list.
    let gone = about(&v, "GL122", "on-gone-node");
    assert!(gone[0].contains("bound to node gone-node"), "{}", gone[0]);
}

/// `gpulint fleet` prints the pools and pins them; the pinned file is a `--fleet` file that
/// gives the same verdicts; `--fleet-from-nodes -` reads stdin.
#[test]
fn fleet_command_pins_the_pools() {
    let d = tempfile::tempdir().unwrap();
    let image = sm75_image(d.path());
    let nodes = nodes_path();
    let (code, v, err) = gpulint(
        d.path(),
        &[
            "fleet",
            "--from-nodes",
            &nodes,
            "--write-fleet",
            "pinned.toml",
        ],
        "",
    );
    assert_eq!(code, 1, "GL120 fails the gate: {v:#}\n{err}");
    crate::formats::assert_valid_report(&v);
    assert_eq!(with_rule(&v, "GL120").len(), 1);
    let pools = v["details"]["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 6);
    assert!(err.contains("1 pool of unknown GPUs not pinned"), "{err}");

    let run = |args: &[&str], stdin: &str| {
        let mut a = vec!["image", &image, "--no-cache", "--no-local-host"];
        a.extend_from_slice(args);
        gpulint(d.path(), &a, stdin)
    };
    let gl001_targets = |v: &Value| {
        let mut t: Vec<String> = with_rule(v, "GL001")
            .iter()
            .filter_map(|f| f["target"].as_str().map(str::to_string))
            .collect();
        t.sort();
        t
    };
    let (code, pinned, _) = run(&["--fleet", "pinned.toml"], "");
    assert_eq!(code, 1);
    let text = std::fs::read_to_string(&nodes).unwrap();
    let (code, live, err) = run(&["--fleet-from-nodes", "-"], &text);
    assert_eq!(code, 1, "{err}");
    assert_eq!(gl001_targets(&pinned), gl001_targets(&live));
    assert_eq!(gl001_targets(&live), [MIG_SINGLE, MIG_MIXED, H100, V100]);
    // Live nodes: the unlabelled pool is judged "unknown" (GL120), never ok.
    assert_eq!(with_rule(&live, "GL120").len(), 1);
    assert!(live["targets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "GPU nodes without GPU Feature Discovery labels"));
}

/// No GPU node, two readers of stdin: usage errors (exit 2), never "ok".
#[test]
fn fleet_from_nodes_refuses_what_it_cannot_use() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("cpu.json"),
        r#"{"kind":"List","items":[{"kind":"Node","metadata":{"name":"cpu-1"},"status":{"capacity":{"cpu":"8"}}}]}"#,
    )
    .unwrap();
    let (code, _, err) = gpulint(
        d.path(),
        &[
            "image",
            "oci:/nonexistent:v1",
            "--fleet-from-nodes",
            "cpu.json",
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(err.contains("no node offers an NVIDIA GPU"), "{err}");
    let (code, _, err) = gpulint(d.path(), &["k8s", "-", "--fleet-from-nodes", "-"], "");
    assert_eq!(code, 2);
    assert!(err.contains("both read stdin"), "{err}");
}
