//! GL110: a GPU image started without asking for a GPU.

use crate::finding::{Finding, Severity};
use crate::fix::plan::{self, At, Plan, PlannedEdit, YamlLeaf, YamlMap};
use crate::fix::{Applicability, Fix, FixKind};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::image::{is_gpu_name, is_gpu_only_image};
use crate::runconfig::runspec::{RunKind, RunSpec};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL110"),
    name: "gpu-not-requested",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Error],
    summary: "A CUDA/GPU image is started without a GPU request",
    doc: RuleDoc {
        what:
            "`docker run` without `--gpus` (or --runtime=nvidia / device nodes), a compose service \
            without `deploy.resources.reservations.devices` / `gpus:`, or a Kubernetes container \
            without `resources.limits[\"nvidia.com/gpu\"]`, for an image that is meant for a GPU \
            (nvidia/cuda, pytorch CUDA builds, NGC, CUDA-only serving images, a Dockerfile with a \
            CUDA base), or whose command names a GPU. Not for containers configured to run \
            without one: compose CPU profiles, controller/API services running their own command, \
            sidecars and init containers of a pod whose GPU container is another one, per-node \
            agents, MPI launchers starting ranks on other hosts. Not for GPUs requested another \
            way (a DRA resource claim, a KServe serving runtime whose InferenceService sets the \
            resources), nor by the name of an image built in the same file.",
        why: "Without a request no GPU and no driver libraries are injected: frameworks silently \
            fall back to the CPU or fail with `no CUDA-capable device`. On Kubernetes, a GPU pod \
            without a limit is not accounted for by the scheduler; with the NVIDIA runtime as \
            default it may even see every GPU of the node (NVIDIA_VISIBLE_DEVICES=all from the \
            image). `requests` without `limits` is rejected for extended resources.",
        example:
            "`docker run --shm-size 1g ghcr.io/huggingface/text-generation-inference:latest …`.",
        fix:
            "Add `--gpus all` (docker), a device reservation (compose), or an nvidia.com/gpu limit \
            (k8s). `--fix --unsafe-fixes` makes the edit: `--gpus all` after the `run` word (only \
            where the word stands in the script as written, not from a variable); in compose a \
            `deploy.resources.reservations.devices` item `{driver: nvidia, count: all, \
            capabilities: [gpu]}` under the service, joining its own `deploy:` / `resources:` / \
            `reservations:` where they exist, at the file's indentation; in Kubernetes \
            `nvidia.com/gpu: 1` under the container's `resources.limits`, merged into existing \
            `resources:` / `limits:`. These are unsafe: the rule reads the intent from the image \
            and command, and a GPU request changes where the container can run (a host without \
            the NVIDIA Container Toolkit refuses `--gpus`; a pod with a GPU limit waits for a node \
            with a free GPU) and what it sees (every GPU of the host). A GPU request without a \
            limit gets the limit equal to the request, and that fix is safe (`--fix`): Kubernetes \
            refuses the pod as it stands, and the limit is what the request meant. A flow-style \
            mapping (`{…}` other than an empty one) on the way gets no edit.",
        sources: &[
            "https://docs.docker.com/compose/how-tos/gpu-support/",
            "https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/",
            "https://docs.docker.com/reference/cli/docker/container/run/",
        ],
    },
};

fn gets_gpus(r: &RunSpec) -> bool {
    match r.kind {
        RunKind::K8s => r.gpus.is_some(),
        _ => r.gets_gpus(),
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Runs(specs) = s else {
        return;
    };
    for r in specs.iter() {
        if let Some(p) = r.gpu_request_without_limit {
            // The pod is refused as it stands: a limit equal to the request is what the
            // request meant, and changes nothing else.
            let fix = run_fix(
                "resources.limits: {nvidia.com/gpu: N} (N as requested)",
                "Kubernetes accepts an extended resource only with a limit, and a GPU request must equal its limit: the limit the request implies",
                Applicability::Safe,
            );
            let plan = plan::one(
                Applicability::Safe,
                PlannedEdit::K8sLimitFromRequest { request: at(p) },
            );
            out.push(
                META.finding(format!("`{}` requests nvidia.com/gpu without a limit: Kubernetes requires limits for extended resources", r.name))
                    .with_severity(Severity::Error)
                    .with_location(loc(&r.file, p))
                    .with_help("set resources.limits[\"nvidia.com/gpu\"] (requests may be omitted)")
                    .with_planned_fix(fix, plan),
            );
        }
        if gets_gpus(r) || r.infra || r.gpu_elsewhere.is_some() {
            continue;
        }
        // GPU intent comes from what runs, not from other services of the same image: a
        // controller or API service of a GPU app (a compose service, a job's parameter-server
        // task beside its GPU workers) runs its own command without a GPU.
        let other_role = matches!(r.kind, RunKind::Compose | RunKind::K8s)
            && !r.command.is_empty()
            && specs.iter().any(|o| {
                o.file == r.file
                    && o.image.is_some()
                    && o.image_text() == r.image_text()
                    && gets_gpus(o)
                    && o.command != r.command
            });
        if r.commented_gpu.is_none()
            && !r.command_uses_gpu()
            && (r.cpu_role.is_some() || other_role || r.is_remote_launcher())
        {
            continue;
        }
        let image = r.image_text().unwrap_or_default().to_string();
        let info = r.image.as_ref().and_then(|i| i.info.as_ref());
        // Another tag of a repository this file builds (`build:` + `image: acme/jupyter:
        // foundation-gpu`, then `image: acme/jupyter:base-gpu`) is one of the project's own
        // build chain: its Dockerfile, not the `gpu` in its tag, says what it is.
        let own_build = specs.iter().any(|o| {
            o.file == r.file
                && o.build
                && o.image_text()
                    .is_some_and(|i| !image.is_empty() && repository(i) == repository(&image))
        });
        let reason = if r.commented_gpu.is_some() {
            Some("its GPU request is commented out".to_string())
        } else if !r.build
            && !own_build
            && (info.as_ref().map(|i| i.is_gpu()).unwrap_or(false)
                || is_gpu_name(&image)
                || is_gpu_only_image(&image))
        {
            // A tag built here (`docker build -t gpulint .`, compose `build:` + `image:`) names
            // a local image: what its Dockerfile builds says whether it is a GPU image, the
            // words in its name do not.
            Some("it is a CUDA/GPU image".to_string())
        } else if r.built_gpu_image == Some(true) {
            Some("its Dockerfile builds a CUDA image".to_string())
        } else if r.command_uses_gpu() {
            Some("its command uses a GPU".to_string())
        } else if r.gpu_scheduling.is_some() {
            Some(format!(
                "it is scheduled onto GPU nodes ({})",
                r.gpu_scheduling
                    .as_ref()
                    .map(|g| g.0.as_str())
                    .unwrap_or("")
            ))
        } else if r.env.iter().any(|e| {
            e.0 == "NVIDIA_VISIBLE_DEVICES"
                || e.0 == "NVIDIA_DRIVER_CAPABILITIES"
                || e.0 == "CUDA_VISIBLE_DEVICES"
        }) {
            Some("it sets NVIDIA/CUDA device variables".to_string())
        } else {
            None
        };
        let Some(reason) = reason else { continue };
        let how = match r.kind {
            RunKind::DockerRun => "add --gpus all (or --gpus '\"device=0\"')",
            RunKind::Compose => "add deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: [gpu]}]",
            RunKind::K8s => "add resources.limits: {nvidia.com/gpu: 1}",
        };
        let what = match r.kind {
            RunKind::DockerRun => format!("`{} run {image}`", r.engine),
            RunKind::Compose => format!("service `{}`", r.name),
            RunKind::K8s => format!("container `{}`", r.name),
        };
        let extra = if r.kind == RunKind::K8s && r.runtime_class.is_some() {
            "; runtimeClassName alone bypasses the device plugin (the image's NVIDIA_VISIBLE_DEVICES decides)"
        } else {
            ""
        };
        let (fix, plan) = request_fix(r);
        out.push(
            META.finding(format!("{what} gets no GPU, but {reason}{extra}"))
                .with_location(loc(&r.file, r.commented_gpu.unwrap_or(r.pos)))
                .with_help(how)
                .with_planned_fix(fix, plan),
        );
    }
}

/// An image reference without its tag or digest (`acme/jupyter:base-gpu` → `acme/jupyter`;
/// a registry port stays: `host:5000/app`).
fn repository(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}

fn at(p: Pos) -> At {
    At {
        line: p.line,
        col: p.col,
    }
}

fn run_fix(replacement: &str, rationale: &str, applicability: Applicability) -> Fix {
    Fix {
        kind: FixKind::RunConfig,
        replacement: replacement.to_string(),
        rationale: rationale.to_string(),
        basis: Vec::new(),
        edits: Vec::new(),
        change: None,
        applicability,
    }
}

/// The GPU request a container gets, and its planned edit. Always unsafe: the rule reads
/// intent from the image and command, and a request changes where the container can run (a
/// host without the NVIDIA Container Toolkit refuses `--gpus`; a pod with a GPU limit waits
/// for a node with a free GPU) and what it sees (every GPU of the host for `--gpus all`).
fn request_fix(r: &RunSpec) -> (Fix, Option<Plan>) {
    let a = Applicability::Unsafe;
    match r.kind {
        RunKind::DockerRun => (
            run_fix("--gpus all", "Docker hands GPUs and the driver's libraries to a container only on a --gpus request (NVIDIA Container Toolkit); unsafe: the container then needs a GPU host and sees every GPU of it", a),
            plan::one(a, PlannedEdit::RunFlags { command: at(r.pos), flags: "--gpus all".into() }),
        ),
        RunKind::Compose => (
            run_fix("deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: [gpu]}]", "Compose hands GPUs to a service only through a device reservation (the compose form of --gpus all); unsafe: the service then needs a GPU host and sees every GPU of it", a),
            plan::one(a, plan::compose_reservation(at(r.pos), &r.name, &["driver: nvidia", "count: all", "capabilities: [gpu]"])),
        ),
        RunKind::K8s => (
            run_fix("resources.limits: {nvidia.com/gpu: 1}", "the NVIDIA device plugin allocates GPUs only to containers with an nvidia.com/gpu limit; unsafe: the pod is then scheduled only onto a node with a free GPU", a),
            plan::one(a, PlannedEdit::YamlAdd {
                map: YamlMap::Container { at: at(r.pos), name: super::container_name(r) },
                path: vec!["resources".into(), "limits".into()],
                leaf: YamlLeaf::Entries(vec!["nvidia.com/gpu: 1".into()]),
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::runs;

    #[test]
    fn seed_forgotten_gpus() {
        let md = "```bash\ndocker run --gpus all --shm-size 1g -v $volume:/data ghcr.io/huggingface/text-generation-inference:latest --model-id gpt2\n```\n\n```bash\ndocker run --shm-size 1g -p 8080:80 -v $volume:/data ghcr.io/huggingface/text-generation-inference:latest --model-id /data/x\n```\n";
        let f = runs("md", md, "GL110", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(6));
        assert_eq!(
            runs(
                "sh",
                "docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
                "GL110",
                vec![]
            )
            .len(),
            1
        );
        assert!(runs("sh", "docker run --rm ubuntu:22.04 ls\n", "GL110", vec![]).is_empty());
    }

    #[test]
    fn compose_and_k8s() {
        let c = "services:\n  ollama:\n    image: ollama/ollama:latest\n  train:\n    image: nvcr.io/nvidia/pytorch:24.04-py3\n";
        let f = runs("compose", c, "GL110", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        let c = "services:\n  a:\n    image: myapp\n    # runtime: nvidia\n";
        let f = runs("compose", c, "GL110", vec![]);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  runtimeClassName: nvidia\n  containers:\n  - name: c\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    resources:\n      requests:\n        nvidia.com/gpu: 1\n";
        let f = runs("k8s", k, "GL110", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
    }

    /// A task of a job running the image of its GPU workers with its own command (a
    /// TensorFlow parameter server) is another role, not a forgotten GPU; the same command
    /// without a GPU still is one.
    #[test]
    fn another_role_of_a_gpu_image_in_a_job() {
        let task = |name: &str, job: &str, limits: &str| {
            format!("  - name: {name}\n    template:\n      spec:\n        containers:\n        - name: tf\n          image: acme/tf-gpu:1.0\n          command: [python, bench.py, --job_name={job}]\n{limits}")
        };
        let gpu = "          resources:\n            limits:\n              nvidia.com/gpu: 1\n";
        let job = |ps_job: &str| {
            format!(
                "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: j\nspec:\n  tasks:\n{}{}",
                task("ps", ps_job, ""),
                task("worker", "worker", gpu)
            )
        };
        assert!(runs("k8s", &job("ps"), "GL110", vec![]).is_empty());
        let f = runs("k8s", &job("worker"), "GL110", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(11));
    }

    /// Other tags of a repository the file builds are the project's own images (a chain of
    /// stages published under one repository), not pulled GPU images.
    #[test]
    fn tags_of_a_repository_built_here_are_local_builds() {
        let c = "services:\n  foundation:\n    image: acme/jupyter:foundation-gpu\n    build:\n      context: .\n  base:\n    image: acme/jupyter:base-gpu\n  pulled:\n    image: other/jupyter:base-gpu\n";
        let f = runs("compose", c, "GL110", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(8));
        assert_eq!(super::repository("host:5000/app:1-gpu"), "host:5000/app");
        assert_eq!(super::repository("host:5000/app"), "host:5000/app");
        assert_eq!(super::repository("a/b@sha256:00"), "a/b");
    }

    #[test]
    fn a_locally_built_image_is_not_judged_by_its_name() {
        let md = "```sh\ndocker build -t gpulint .\ndocker run --rm -v \"$PWD:/work\" gpulint lint .\n```\n";
        assert!(runs("md", md, "GL110", vec![]).is_empty());
        // Pulled, not built here: the name is all there is to go by.
        let pulled = md.replace("docker build -t gpulint .\n", "");
        assert_eq!(runs("md", &pulled, "GL110", vec![]).len(), 1);
        // Built here, but what runs asks for a GPU.
        let smi = md.replace("gpulint lint .", "gpulint nvidia-smi");
        assert_eq!(runs("md", &smi, "GL110", vec![]).len(), 1);
    }

    #[test]
    fn gpus_requested_another_way_or_used_elsewhere() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    command: [\"nvidia-smi\"]\n";
        assert_eq!(runs("k8s", pod, "GL110", vec![]).len(), 1);
        // DRA: the container names one of the pod's resource claims.
        let dra = format!("{pod}    resources:\n      claims:\n      - name: gpu\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: t\n");
        assert!(runs("k8s", &dra, "GL110", vec![]).is_empty());
        // A KServe runtime: the InferenceService sets the resources.
        let rt = pod.replace("kind: Pod", "kind: ClusterServingRuntime").replace("  name: c\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    command: [\"nvidia-smi\"]", "  name: c\n    image: vllm/vllm-openai:v0.6.3");
        assert!(runs("k8s", &rt, "GL110", vec![]).is_empty(), "{rt}");
        // A Kubeflow Trainer runtime: the TrainJob sets resourcesPerNode.
        let tr = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: torch\nspec:\n  template:\n    spec:\n      replicatedJobs:\n      - name: node\n        template:\n          spec:\n            template:\n              spec:\n                containers:\n                - name: trainer\n                  image: pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime\n";
        assert!(runs("k8s", tr, "GL110", vec![]).is_empty(), "{tr}");
        // An MPI launcher starting ranks on other hosts; a local mpirun is still judged.
        let launcher = pod.replace(
            "[\"nvidia-smi\"]",
            "[\"bash\", \"-c\", \"sleep 10; mpiexec --host w0,w1 -np 2 python t.py\"]",
        );
        assert!(runs("k8s", &launcher, "GL110", vec![]).is_empty());
        let local = pod.replace(
            "[\"nvidia-smi\"]",
            "[\"mpirun\", \"-np\", \"8\", \"python\", \"t.py\"]",
        );
        assert_eq!(runs("k8s", &local, "GL110", vec![]).len(), 1);
    }

    #[test]
    fn a_sample_pod_in_the_operator_namespace_is_a_workload() {
        let p = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: cuda-vectoradd\n  namespace: gpu-operator\nspec:\n  containers:\n  - name: cuda-vectoradd\n    image: \"nvcr.io/nvidia/k8s/cuda-sample:devicequery-cuda12.8.0-ubuntu22.04\"\n    resources: {}\n";
        let f = runs("k8s", p, "GL110", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(8));
        // The operator's own Deployment in that namespace stays an infrastructure component.
        let d = p
            .replace("kind: Pod\nmetadata:", "kind: Deployment\nmetadata:")
            .replace(
                "spec:\n  containers:",
                "spec:\n  template:\n   spec:\n    containers:",
            );
        let d = d
            .replace(
                "\n  - name: cuda-vectoradd\n    image",
                "\n    - name: cuda-vectoradd\n      image",
            )
            .replace("\n    resources: {}", "\n      resources: {}");
        assert!(runs("k8s", &d, "GL110", vec![]).is_empty(), "{d}");
        // (it parses, and outside the namespace the same Deployment is reported)
        assert!(runs("k8s", &d, "GL100", vec![]).is_empty(), "{d}");
        let elsewhere = d.replace("namespace: gpu-operator", "namespace: default");
        assert_eq!(
            runs("k8s", &elsewhere, "GL110", vec![]).len(),
            1,
            "{elsewhere}"
        );
    }

    #[test]
    fn no_gpu_intent_is_not_reported() {
        // A dual CPU/GPU image started both ways in one file: the CPU command is not a miss.
        let md = "```bash\ndocker run -d -v ollama:/root/.ollama ollama/ollama\ndocker run -d --gpus=all -v ollama:/root/.ollama ollama/ollama\n```\n";
        assert!(runs("md", md, "GL110", vec![]).is_empty());
        // Compose CPU profile overriding a GPU anchor; an API service of the same GPU image.
        let c = "x-gpu: &gpu\n  image: myorg/app:cuda12\n  deploy:\n    resources:\n      reservations:\n        devices:\n          - driver: nvidia\n            count: 1\n            capabilities: [gpu]\nservices:\n  worker:\n    <<: *gpu\n  worker-cpu:\n    <<: *gpu\n    deploy: {}\n  api:\n    <<: *gpu\n    deploy: {}\n    command: uvicorn app:api\n  plain:\n    image: myorg/app:cuda12\n";
        let f = runs("compose", c, "GL110", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("service `plain`"), "{f:?}");
        // k8s: a sidecar next to the GPU container, an init container, a DaemonSet agent.
        let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  initContainers:\n  - name: setup\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n  containers:\n  - name: main\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n  - name: net-daemon\n    image: example.com/gpudirect-rxdm:v1\n    args: [--gpu_nic_preset, a3vm]\n";
        assert!(runs("k8s", k, "GL110", vec![]).is_empty());
        let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n            - matchExpressions:\n              - key: cloud.google.com/gke-accelerator\n                operator: Exists\n      containers:\n      - name: pause\n        image: gcr.io/google-containers/pause:2.0\n";
        assert!(runs("k8s", ds, "GL110", vec![]).is_empty());
        // ...but a sidecar whose command uses the GPU is still reported.
        let k2 = k.replace(
            "image: example.com/gpudirect-rxdm:v1\n",
            "image: example.com/gpudirect-rxdm:v1\n    command: [nvidia-smi]\n",
        );
        assert_eq!(runs("k8s", &k2, "GL110", vec![]).len(), 1);
    }
}
