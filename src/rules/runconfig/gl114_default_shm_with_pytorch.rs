//! GL114: PyTorch / NCCL workloads on the default 64 MB /dev/shm.

use crate::finding::{Finding, Severity};
use crate::fix::plan::{self, At, Plan, PlannedEdit, YamlLeaf, YamlMap};
use crate::fix::{Applicability, Fix, FixKind};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::runspec::{RunKind, RunSpec};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL114"),
    name: "default-shm-with-pytorch",
    default_severity: Severity::Warning,
    other_severities: &[],
    summary: "A PyTorch / NCCL workload runs with the default 64 MB /dev/shm",
    doc: RuleDoc {
        what:
            "A GPU container that runs PyTorch (pytorch / NGC images, torchrun, training commands) \
            or NCCL without `--shm-size` / `--ipc=host` (compose `shm_size` / `ipc: host`, \
            Kubernetes an emptyDir with `medium: Memory` at /dev/shm).",
        why: "Docker and Kubernetes give containers 64 MB of /dev/shm. PyTorch DataLoader workers \
            pass batches through shared memory and die with `Bus error` / `unable to write to \
            file </torch_…>`; NCCL's intra-node transport needs shared memory too and falls back \
            or fails.",
        example: "`docker run --gpus all nvcr.io/nvidia/pytorch:24.04-py3 torchrun train.py`.",
        fix: "`--shm-size=8g` or `--ipc=host`; in Kubernetes mount an emptyDir {medium: Memory, \
            sizeLimit: 8Gi} at /dev/shm. `--fix` adds `--shm-size=8g` after the `run` word of a \
            `docker run` line, and `shm_size: 8gb` to a compose service (not `ipc: host`, which \
            shares the host's IPC namespace, a change beyond the finding): both safe, since they \
            only raise a ceiling. 8 GiB is this rule's default, not a documented figure (PyTorch's \
            Docker instructions say to raise the 64 MB with `--shm-size`, or to use `--ipc=host`, \
            and give no size); the tmpfs \
            takes memory only as DataLoader workers write batches, charged to the container, so \
            size it to workers x prefetched batches. In Kubernetes `--fix --unsafe-fixes` adds a \
            `dshm` volume (`emptyDir: {medium: Memory, sizeLimit: 8Gi}`) to the pod's `volumes:` \
            and its mount at /dev/shm to the container's `volumeMounts:`: unsafe, as a new \
            pod-level volume whose pages count against the container's memory limit.",
        sources: &[
            "https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
            "https://docs.docker.com/reference/cli/docker/container/run/",
        ],
    },
};

const WORDS: &[&str] = &[
    "pytorch",
    "torchrun",
    "torch.distributed",
    "accelerate",
    "deepspeed",
    "lightning",
    "nccl",
    "fairseq",
    "detectron",
    "mmdet",
    "megatron",
    "nemo",
];

fn torch_workload(r: &RunSpec) -> Option<String> {
    use crate::runconfig::image::ImageKind;
    let img = r.image_text().unwrap_or_default().to_ascii_lowercase();
    // The published PyTorch images (`pytorch/pytorch`, NGC PyTorch) are PyTorch; any other
    // name saying "pytorch" is a guess (a local build, a project named after it), and
    // `torch` alone may be Lua Torch7: there what runs decides.
    let known = r
        .image
        .as_ref()
        .and_then(|i| i.info.as_ref())
        .is_some_and(|i| matches!(i.kind, ImageKind::PyTorch | ImageKind::NgcPyTorch));
    if known {
        return Some(format!("image {}", r.image_text().unwrap_or("")));
    }
    let cmd = r.command.join(" ").to_ascii_lowercase();
    if img.contains("tensorflow") && !cmd.contains("nccl") {
        return None;
    }
    WORDS
        .iter()
        .find(|w| cmd.contains(**w))
        .map(|w| format!("command mentions `{w}`"))
}

/// What the finding is about: a `docker run` line is named by its image, so the image is said
/// once, not as its name and again as the reason.
fn workload(r: &RunSpec, why: &str) -> String {
    if why.strip_prefix("image ") == Some(r.name.as_str()) {
        format!("`{}` is a PyTorch/NCCL image", r.name)
    } else {
        format!("`{}` is a PyTorch/NCCL workload ({why})", r.name)
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Runs(specs) = s else {
        return;
    };
    for r in specs.iter().filter(|r| !r.infra) {
        if r.shm_size.is_some() || r.ipc_host || r.shm_volume {
            continue;
        }
        // A GPU from a DRA claim or from what instantiates a runtime template (KServe's
        // InferenceService, Kubeflow Trainer's TrainJob) is a GPU workload too.
        let gpu = r.gets_gpus() || r.gpus.is_some() || r.gpu_elsewhere.is_some();
        if !gpu {
            continue;
        }
        let Some(why) = torch_workload(r) else {
            continue;
        };
        let fix = match r.kind {
            RunKind::DockerRun => "add --shm-size=8g (or --ipc=host)",
            RunKind::Compose => "add shm_size: 8gb (or ipc: host)",
            RunKind::K8s => "mount an emptyDir {medium: Memory, sizeLimit: 8Gi} at /dev/shm",
        };
        let (shown, plan) = shm_fix(r);
        out.push(
            META.finding(format!("{} on the default 64 MB /dev/shm: DataLoader workers and NCCL fail with bus errors", workload(r, &why)))
                .with_location(loc(&r.file, r.pos))
                .with_help(fix)
                .with_planned_fix(shown, plan),
        );
    }
}

/// Why the fixes' size is 8 GiB, said in every fix.
const SIZE_WHY: &str = "8 GiB is this rule's default, not a documented figure (PyTorch's Docker instructions say to raise the 64 MB with --shm-size, or to use --ipc=host, and give no size): a ceiling, taken from memory only as workers write batches and charged to the container's memory, so size it to DataLoader workers x prefetched batches";

/// The shared-memory fix and its planned edits. `shm_size` rather than `ipc: host`: it
/// raises a limit and keeps the container's own IPC namespace, where `ipc: host` shares the
/// host's (its shared memory segments and semaphores), a change beyond the finding. Safe for
/// docker and compose (one option, only a ceiling); unsafe for Kubernetes, where the volume
/// is a new pod-level object and memory-backed emptyDir pages count against the container's
/// memory limit (a pod near its limit may be OOM-killed where it used to fail with bus errors).
fn shm_fix(r: &RunSpec) -> (Fix, Option<Plan>) {
    let at = At {
        line: r.pos.line,
        col: r.pos.col,
    };
    let name = super::container_name(r);
    let fix = |replacement: &str, how: &str, applicability: Applicability| Fix {
        kind: FixKind::RunConfig,
        replacement: replacement.to_string(),
        rationale: format!("{how}; {SIZE_WHY}"),
        basis: Vec::new(),
        edits: Vec::new(),
        change: None,
        applicability,
    };
    match r.kind {
        RunKind::DockerRun => (
            fix("--shm-size=8g", "raises the container's /dev/shm from Docker's 64 MB default", Applicability::Safe),
            plan::one(Applicability::Safe, PlannedEdit::RunFlags { command: at, flags: "--shm-size=8g".into() }),
        ),
        RunKind::Compose => (
            fix("shm_size: 8gb", "raises the service's /dev/shm from Docker's 64 MB default (ipc: host would share the host's IPC namespace instead)", Applicability::Safe),
            plan::one(Applicability::Safe, PlannedEdit::YamlAdd {
                map: YamlMap::ValueOf { at, key: r.name.clone() },
                path: Vec::new(),
                leaf: YamlLeaf::Entries(vec!["shm_size: 8gb".into()]),
            }),
        ),
        RunKind::K8s => (
            fix("an emptyDir {medium: Memory, sizeLimit: 8Gi} mounted at /dev/shm", "a memory-backed emptyDir at /dev/shm replaces the container runtime's 64 MB one; unsafe: a new pod volume whose pages count against the container's memory limit", Applicability::Unsafe),
            Some(Plan::new(Applicability::Unsafe, vec![
                PlannedEdit::YamlAdd {
                    map: YamlMap::Container { at, name: name.clone() },
                    path: vec!["volumeMounts".into()],
                    leaf: YamlLeaf::Item(vec!["name: dshm".into(), "mountPath: /dev/shm".into()]),
                },
                PlannedEdit::YamlAdd {
                    map: YamlMap::PodOf { at, name },
                    path: vec!["volumes".into()],
                    leaf: YamlLeaf::Item(vec![
                        "name: dshm".into(),
                        "emptyDir:".into(),
                        "  medium: Memory".into(),
                        "  sizeLimit: 8Gi".into(),
                    ]),
                },
            ])),
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::runs;

    /// An absence is reported on the container's line: the container named exactly, not an
    /// enclosing job whose name starts with the container's.
    #[test]
    fn reported_at_the_container_not_a_job_of_a_longer_name() {
        let k = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: train\nspec:\n  replicatedJobs:\n  - name: trainer-node\n    template:\n      spec:\n        template:\n          spec:\n            containers:\n            - name: trainer\n              image: pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime\n              command: [torchrun, train.py]\n              resources:\n                limits:\n                  nvidia.com/gpu: 8\n";
        let f = runs("k8s", k, "GL114", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(13));
    }

    #[test]
    fn shm() {
        let f = runs(
            "sh",
            "docker run --gpus all nvcr.io/nvidia/pytorch:24.04-py3 torchrun train.py\n",
            "GL114",
            vec![],
        );
        assert_eq!(f.len(), 1);
        // A `docker run` line is named by its image: said once.
        assert!(
            f[0].message.starts_with(
                "`nvcr.io/nvidia/pytorch:24.04-py3` is a PyTorch/NCCL image on the default"
            ),
            "{}",
            f[0].message
        );
        assert!(runs(
            "sh",
            "docker run --gpus all --ipc=host nvcr.io/nvidia/pytorch:24.04-py3\n",
            "GL114",
            vec![]
        )
        .is_empty());
        assert!(runs(
            "sh",
            "docker run nvcr.io/nvidia/pytorch:24.04-py3\n",
            "GL114",
            vec![]
        )
        .is_empty());
        let k = "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    resources:\n      limits:\n        nvidia.com/gpu: 8\n    volumeMounts:\n    - {name: shm, mountPath: /dev/shm}\n  volumes:\n  - name: shm\n    emptyDir: {medium: Memory}\n";
        assert!(runs("k8s", k, "GL114", vec![]).is_empty());
    }

    #[test]
    fn no_pytorch_guess_from_an_image_name() {
        // A project image named after PyTorch, running nothing that says so.
        let sh = "docker run --gpus all myorg/pytorch-app:1.0 ./serve\n";
        assert!(runs("sh", sh, "GL114", vec![]).is_empty());
        // What runs says it: reported.
        let sh = "docker run --gpus all myorg/pytorch-app:1.0 torchrun --nproc-per-node 2 t.py\n";
        assert_eq!(runs("sh", sh, "GL114", vec![]).len(), 1);
    }

    #[test]
    fn no_pytorch_guess_from_train_or_torch7() {
        let k = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    image: tfjob-deep-gpu/tensorflow:1.0\n    command: [python, run_train.py]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n";
        assert!(crate::runconfig::testutil::runs("k8s", k, "GL114", vec![]).is_empty());
        let sh = "docker run --gpus all kaixhin/cuda-torch:7.5 th train.lua\n";
        assert!(crate::runconfig::testutil::runs("sh", sh, "GL114", vec![]).is_empty());
        let sh =
            "docker run --gpus all pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime python x.py\n";
        assert_eq!(
            crate::runconfig::testutil::runs("sh", sh, "GL114", vec![]).len(),
            1
        );
    }

    /// A training runtime template gets its GPUs from the TrainJob: its torchrun container
    /// still needs shared memory, which only the template can give it.
    #[test]
    fn runtime_templates_are_gpu_workloads() {
        let tr = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: torch\nspec:\n  template:\n    spec:\n      replicatedJobs:\n      - name: node\n        template:\n          spec:\n            template:\n              spec:\n                containers:\n                - name: trainer\n                  image: pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime\n                  command: [\"torchrun\", \"train.py\"]\n";
        let f = crate::runconfig::testutil::runs("k8s", tr, "GL114", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(15));
    }
}
