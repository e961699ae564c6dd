//! [`RunSpec`]: how one container is started (a `docker run` line, a compose service, a
//! Kubernetes container), in one shape the run-configuration rules read. This module also
//! parses `docker run` / `podman run` / `nvidia-docker run` argument lists and finds such
//! lines in shell scripts and Markdown code blocks.

use super::build::SpecError;
use super::dockerfile::Pos;
use super::image::{image_info, ImageInfo, ImageRef};
use super::shell::{self, Var, Vars};
use crate::matrix::Facts;

mod build_cmd;
mod docker_run;
mod script;
pub use build_cmd::*;
pub use docker_run::*;
pub use script::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    DockerRun,
    Compose,
    K8s,
}

/// A GPU request: `--gpus`, a compose device reservation / `gpus:`, `nvidia.com/gpu`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRequest {
    pub all: bool,
    pub count: Option<u32>,
    pub ids: Vec<String>,
    pub pos: Pos,
}

impl GpuRequest {
    /// How many GPUs the container gets, when known.
    pub fn n(&self) -> Option<u32> {
        if self.all {
            None
        } else if !self.ids.is_empty() {
            Some(self.ids.len() as u32)
        } else {
            self.count
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: String,
    pub container: String,
    pub read_only: bool,
    pub pos: Pos,
}

impl Mount {
    /// The short volume syntax shared by `docker run -v` and compose: `HOST:CONTAINER[:OPTS]`.
    pub fn from_short_syntax(spec: &str, pos: Pos) -> Option<Mount> {
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() < 2 {
            return None;
        }
        Some(Mount {
            host: parts[0].to_string(),
            container: parts[1].to_string(),
            read_only: parts
                .get(2)
                .is_some_and(|o| o.split(',').any(|x| x == "ro")),
            pos,
        })
    }
}

#[derive(Debug, Clone)]
pub struct RunSpec {
    pub kind: RunKind,
    pub file: String,
    /// The `docker run` word, the service key, the container's `- name:`.
    pub pos: Pos,
    /// Service / container name, or the image for docker run.
    pub name: String,
    /// `docker`, `podman`, `nvidia-docker`, `compose`, `kubernetes`.
    pub engine: String,
    pub image: Option<RunImage>,
    pub image_pos: Pos,
    pub gpus: Option<GpuRequest>,
    pub runtime: Option<(String, Pos)>,
    pub env: Vec<(String, String, Pos)>,
    pub mounts: Vec<Mount>,
    pub devices: Vec<(String, Pos)>,
    /// Bytes.
    pub shm_size: Option<(u64, Pos)>,
    pub ipc_host: bool,
    pub privileged: bool,
    pub command: Vec<String>,
    /// Kubernetes: nodeSelector / affinity / tolerations on GPU labels.
    pub gpu_scheduling: Option<(String, Pos)>,
    pub runtime_class: Option<(String, Pos)>,
    /// GPU infrastructure (device plugin, operator, DCGM): host mounts are its job.
    pub infra: bool,
    /// `/dev/shm` is a memory-backed volume (k8s emptyDir medium: Memory, or a tmpfs).
    pub shm_volume: bool,
    /// The image is built from a Dockerfile we read, and that image is a GPU image.
    pub built_gpu_image: Option<bool>,
    /// k8s: `requests` without `limits` for nvidia.com/gpu.
    pub gpu_request_without_limit: Option<Pos>,
    /// A GPU request that is commented out (`# runtime: nvidia`, `# - driver: nvidia`).
    pub commented_gpu: Option<Pos>,
    /// k8s: the GPU model the pod is pinned to (`nodeSelector` `nvidia.com/gpu.product`, in
    /// GPU feature discovery's form: `NVIDIA-A100-SXM4-80GB`).
    pub gpu_product: Option<String>,
    /// compose: the service has a `build:`, so its `image:` names what the build produces
    /// (it may not exist yet).
    pub build: bool,
    /// Why this container is meant to run without a GPU, when its configuration says so: a
    /// compose CPU profile (`deploy` overriding a GPU anchor, a `cpu` profile), a sidecar or
    /// init container of a pod whose GPU container is another one, a node agent (DaemonSet).
    pub cpu_role: Option<String>,
    /// The GPU is requested by a mechanism other than an `nvidia.com/gpu` limit, so whether
    /// one is attached cannot be told here: a DRA resource claim, a KServe serving runtime
    /// (the InferenceService that uses it sets the resources).
    pub gpu_elsewhere: Option<String>,
    /// compose `build.args` (after interpolation): passed to the Dockerfile's build.
    pub build_args: Vec<(String, String, Pos)>,
    /// compose `build:`: the context directory and the Dockerfile.
    pub build_files: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// k8s: the pod's scheduling constraints, matched against node pools
    /// (`--fleet-from-nodes`).
    pub scheduling: Option<crate::gpu_target::schedule::Scheduling>,
}

/// The image a container runs: as written (variables expanded), the reference read from it
/// when it is one, and what the knowledge tables say that reference is. The parsers fill the
/// first two; [`resolve_images`] fills `info` once, before the rules judge the specs.
#[derive(Debug, Clone)]
pub struct RunImage {
    pub text: String,
    /// None: the text cannot be cut as a reference (whitespace in it, a leading `-`).
    pub reference: Option<ImageRef>,
    /// What the reference is; None before [`resolve_images`], and without a reference.
    pub info: Option<ImageInfo>,
}

impl RunImage {
    /// An image as a configuration writes it, not yet resolved.
    pub fn written(text: String) -> RunImage {
        RunImage {
            reference: ImageRef::parse(&text),
            text,
            info: None,
        }
    }

    /// Whether [`resolve_images`] has filled what the reference is.
    pub fn is_resolved(&self) -> bool {
        self.reference.is_some() == self.info.is_some()
    }
}

/// Fill in what each spec's image is, from the knowledge tables: once per file read, before
/// the rules (which take it from [`RunImage::info`] and never parse a reference again).
pub fn resolve_images(specs: &mut [RunSpec], facts: &Facts) {
    for image in specs.iter_mut().filter_map(|r| r.image.as_mut()) {
        image.info = image.reference.as_ref().map(|r| image_info(r, facts));
    }
}

impl RunSpec {
    /// The image as written, if the container names one.
    pub fn image_text(&self) -> Option<&str> {
        self.image.as_ref().map(|i| i.text.as_str())
    }
    pub fn new(kind: RunKind, file: &str, pos: Pos, name: &str, engine: &str) -> RunSpec {
        RunSpec {
            kind,
            file: file.to_string(),
            pos,
            name: name.to_string(),
            engine: engine.to_string(),
            image: None,
            image_pos: pos,
            gpus: None,
            runtime: None,
            env: Vec::new(),
            mounts: Vec::new(),
            devices: Vec::new(),
            shm_size: None,
            ipc_host: false,
            privileged: false,
            command: Vec::new(),
            gpu_scheduling: None,
            runtime_class: None,
            infra: false,
            shm_volume: false,
            built_gpu_image: None,
            gpu_request_without_limit: None,
            commented_gpu: None,
            gpu_product: None,
            build: false,
            cpu_role: None,
            gpu_elsewhere: None,
            build_args: Vec::new(),
            build_files: None,
            scheduling: None,
        }
    }
    pub fn env_value(&self, name: &str) -> Option<&(String, String, Pos)> {
        self.env.iter().rev().find(|e| e.0 == name)
    }
    /// The command names a GPU (`nvidia-smi`, `--device cuda`, `--gpus`, `cuda:0`): what runs
    /// wants one, whatever the configuration around it says.
    pub fn command_uses_gpu(&self) -> bool {
        self.command.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            // Word-level: `--gpu_nic_preset` of a network daemon does not want a GPU.
            a.contains("nvidia-smi")
                || a.contains("torch.cuda")
                || a.contains("cuda:")
                || a.contains("device=cuda")
                || a == "cuda"
                || a.starts_with("--gpus")
        })
    }
    /// The command only launches ranks on other hosts (`mpirun --host …`, `mpiexec
    /// --hostfile …`, `horovodrun -H …`): the GPU work runs where it starts them, not here.
    pub fn is_remote_launcher(&self) -> bool {
        let words: Vec<&str> = self
            .command
            .iter()
            .flat_map(|a| a.split(|c: char| c.is_whitespace() || c == ';'))
            .collect();
        words.iter().enumerate().any(|(i, w)| {
            let prog = w.rsplit('/').next().unwrap_or(w);
            matches!(prog, "mpirun" | "mpiexec" | "horovodrun")
                && words[i + 1..]
                    .iter()
                    .take_while(|x| !matches!(**x, "python" | "python3" | "&&" | "||"))
                    .any(|x| {
                        matches!(
                            *x,
                            "--host"
                                | "-host"
                                | "-H"
                                | "--hostfile"
                                | "-hostfile"
                                | "--machinefile"
                                | "-machinefile"
                        ) || x.starts_with("--host=")
                            || x.starts_with("--hostfile=")
                    })
        })
    }
    /// Any way of handing GPUs to the container.
    pub fn gets_gpus(&self) -> bool {
        self.gpus.is_some()
            || self
                .runtime
                .as_ref()
                .map(|r| r.0 == "nvidia")
                .unwrap_or(false)
            || self.engine == "nvidia-docker"
            || self
                .devices
                .iter()
                .any(|d| d.0.starts_with("/dev/nvidia") || d.0.starts_with("nvidia.com/gpu"))
            || self
                .runtime_class
                .as_ref()
                .map(|r| r.0.contains("nvidia"))
                .unwrap_or(false)
    }
}

/// Parse a size like `1g`, `8gb`, `64m`, `2Gi`, `1073741824`.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim().trim_matches('"').to_ascii_lowercase();
    let num_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n: f64 = t[..num_end].parse().ok()?;
    let unit = t[num_end..].trim();
    let m: u64 = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    Some((n * m as f64) as u64)
}

/// `--gpus` value: `all`, `2`, `"device=0,1"`, `count=2,capabilities=compute`.
pub fn parse_gpus_flag(v: &str, pos: Pos) -> GpuRequest {
    let v = v.trim().trim_matches(['"', '\'']);
    let mut g = GpuRequest {
        all: false,
        count: None,
        ids: Vec::new(),
        pos,
    };
    if v == "all" {
        g.all = true;
        return g;
    }
    if let Ok(n) = v.parse() {
        g.count = Some(n);
        return g;
    }
    // Comma-separated key=value pairs; device= lists continue after commas.
    let mut in_devices = false;
    for part in v.split(',') {
        let part = part.trim().trim_matches(['"', '\'']);
        if let Some((k, val)) = part.split_once('=') {
            in_devices = false;
            match k {
                "device" | "devices" => {
                    in_devices = true;
                    g.ids.push(val.to_string());
                }
                "count" => {
                    if val == "all" {
                        g.all = true;
                    } else {
                        g.count = val.parse().ok();
                    }
                }
                _ => {}
            }
        } else if in_devices && !part.is_empty() {
            g.ids.push(part.to_string());
        }
    }
    if g.ids.is_empty() && g.count.is_none() {
        g.all = true;
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec's image is read once: the reference when the parser makes the spec, what it is
    /// when the specs are resolved; a word that is no reference stays without either.
    #[test]
    fn images_are_resolved_once_with_their_reference() {
        let sh = "docker run --gpus all nvidia/cuda:12.4.1-runtime-ubuntu22.04 python x.py\ndocker run --gpus all \"my image\" python x.py\n";
        let mut v = scan_script("run.sh", sh, false);
        assert_eq!(v.len(), 2, "{v:?}");
        let cuda = v[0].image.as_ref().unwrap();
        assert_eq!(cuda.reference.as_ref().unwrap().full_repo(), "nvidia/cuda");
        assert!(cuda.info.is_none() && !cuda.is_resolved());
        let facts = crate::matrix::Facts::new(crate::matrix::Matrix::embedded().unwrap());
        resolve_images(&mut v, &facts);
        let cuda = v[0].image.as_ref().unwrap();
        assert!(cuda.is_resolved());
        let info = cuda.info.as_ref().unwrap();
        assert_eq!(info.kind, crate::runconfig::image::ImageKind::NvidiaCuda);
        assert_eq!(
            info.cuda.as_ref().map(|c| c.major_minor()),
            Some("12.4".into()),
            "{info:?}"
        );
        let unknown = v[1].image.as_ref().unwrap();
        assert_eq!(unknown.text, "my image");
        assert!(unknown.reference.is_none() && unknown.info.is_none() && unknown.is_resolved());
    }

    #[test]
    fn built_tags_read_every_spelling_of_the_tag_option() {
        let argv = [
            "docker",
            "buildx",
            "build",
            "--build-arg",
            "X=-tnot",
            "-t",
            "a",
            "--tag=b:1",
            "-tc",
            "-t=d",
            "--label",
            "-te",
            "-f",
            "Dockerfile",
            ".",
        ];
        assert_eq!(
            built_tags(&argv),
            ["a:latest", "a", "b:1", "c:latest", "c", "d:latest", "d"]
        );
        assert!(built_tags(&["docker", "run", "-t", "x"]).is_empty());
    }

    #[test]
    fn docker_build_calls_and_their_build_args() {
        let sh = "#!/bin/sh\nset -e\ndocker build --build-arg CUDA=11.8.0 --build-arg=TORCH=2.3.0 --build-arg HOME \\\n  -t app:dev -f docker/Dockerfile.gpu --target runtime --no-cache ctx\ndocker buildx build --platform linux/amd64 .\ndocker run --gpus all app:dev\n";
        let b = script_builds("build.sh", sh, false);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].pos.line, 3);
        assert_eq!(b[0].context, "ctx");
        assert_eq!(b[0].dockerfile.as_deref(), Some("docker/Dockerfile.gpu"));
        assert_eq!(b[0].target.as_deref(), Some("runtime"));
        let args: Vec<(&str, &str, u32)> = b[0]
            .build_args
            .iter()
            .map(|(k, v, p)| (k.as_str(), v.as_str(), p.line))
            .collect();
        assert_eq!(args, vec![("CUDA", "11.8.0", 3), ("TORCH", "2.3.0", 3)]);
        assert_eq!((b[1].context.as_str(), b[1].build_args.len()), (".", 0));
        // In Markdown, only shell blocks.
        let md = "Run `docker build --build-arg A=1 .` in prose.\n\n```sh\ndocker build --build-arg A=2 .\n```\n";
        let b = script_builds("README.md", md, true);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].build_args[0].1, "2");
    }

    #[test]
    fn ld_library_path_set_by_a_script() {
        let v = script_ld_library_paths(
            "#!/bin/sh\nif [ x ]; then\n    export LD_LIBRARY_PATH=\"/usr/local/cuda/compat:${LD_LIBRARY_PATH}\"\nfi\nLD_LIBRARY_PATH=/opt/lib exec app\n",
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].0, "/usr/local/cuda/compat:${LD_LIBRARY_PATH}");
        assert_eq!(v[0].1.line, 3);
        assert_eq!(v[1].0, "/opt/lib");
    }

    #[test]
    fn ld_library_path_entries_name_their_toolkit_release() {
        use crate::version::CudaVersion;
        let r = ld_entry_cuda_release;
        assert_eq!(
            r("/usr/local/cuda-12.4/lib64"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(r("/usr/local/cuda-11.8"), Some(CudaVersion::new(11, 8)));
        assert_eq!(r("/usr/local/cuda/lib64"), None);
        assert_eq!(r("/usr/local/cuda-x/lib64"), None);
        assert_eq!(r("/opt/cuda-12.4/lib64"), None);
    }

    #[test]
    fn an_image_from_a_variable_is_placed_at_its_assignment() {
        let v = scan_script(
            "run.sh",
            "IMAGE=repo/app-cuda:latest\nX=1\n\ndocker run --gpus all \\\n  ${IMAGE}\n",
            false,
        );
        assert_eq!(v[0].image_text(), Some("repo/app-cuda:latest"));
        assert_eq!(v[0].image_pos, Pos { line: 1, col: 1 });
        // Written in the command itself: placed there.
        let v = scan_script("run.sh", "docker run --gpus all \\\n  repo/app:1\n", false);
        assert_eq!(v[0].image_pos.line, 2);
        assert_eq!(lone_variable("\"${A_1}\""), Some("A_1"));
        assert_eq!(lone_variable("$A:tag"), None);
    }

    #[test]
    fn docker_run_held_in_a_variable() {
        let v = scan_script(
            "run.sh",
            "RUNCMD=\"docker run --runtime=nvidia -it\"\n$RUNCMD -v /data:/data nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
            false,
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].runtime.as_ref().unwrap().0, "nvidia");
        assert_eq!(
            v[0].image_text(),
            Some("nvidia/cuda:12.4.1-base-ubuntu22.04")
        );
        assert_eq!(v[0].pos.line, 2);
        // Quoted, the expansion is one word: the shell runs a command named "docker run …".
        let quoted = scan_script(
            "run.sh",
            "RUNCMD=\"docker run --runtime=nvidia -it\"\n\"$RUNCMD\" nvidia/cuda:12.4.1-base-ubuntu22.04\n",
            false,
        );
        assert!(quoted.is_empty(), "{quoted:?}");
        // A command substitution's output is unknown: the word stays whole.
        let v = scan_script(
            "run.sh",
            "docker run --gpus all -e X=$(cat f | head -1) repo/app:1 python t.py\n",
            false,
        );
        assert_eq!(v[0].image_text(), Some("repo/app:1"), "{v:?}");
    }

    #[test]
    fn docker_run_flags() {
        let v = scan_script(
            "run.sh",
            "IMG=nvidia/cuda:12.4.1-base-ubuntu22.04\nsudo docker run --rm -it \\\n  --gpus '\"device=0,1\"' -e NVIDIA_VISIBLE_DEVICES=all \\\n  -v /usr/local/cuda:/usr/local/cuda:ro --shm-size=8g --ipc host $IMG nvidia-smi\n",
            false,
        );
        assert_eq!(v.len(), 1);
        let r = &v[0];
        assert_eq!(r.gpus.as_ref().unwrap().ids, vec!["0", "1"]);
        assert_eq!(r.image_text(), Some("nvidia/cuda:12.4.1-base-ubuntu22.04"));
        assert_eq!(r.mounts[0].host, "/usr/local/cuda");
        assert!(r.mounts[0].read_only);
        assert_eq!(r.mounts[0].pos, Pos { line: 4, col: 6 });
        assert_eq!(r.shm_size.unwrap().0, 8 << 30);
        assert!(r.ipc_host);
        assert_eq!(r.command, vec!["nvidia-smi"]);
        assert_eq!(r.pos.line, 2);
    }

    #[test]
    fn markdown_blocks() {
        let md = "# T\n\nrun `docker run x`\n\n```bash\n$ docker run --gpus all img:1 \\\n    --shm-size 1g\n```\n\n```python\ndocker run bad\n```\n";
        let v = scan_script("README.md", md, true);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].pos, Pos { line: 6, col: 3 });
        assert!(v[0].gpus.as_ref().unwrap().all);
    }

    #[test]
    fn gpus_values() {
        let p = Pos::default();
        assert_eq!(parse_gpus_flag("2", p).n(), Some(2));
        assert_eq!(parse_gpus_flag("\"device=0,2\"", p).n(), Some(2));
        assert!(parse_gpus_flag("all", p).all);
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("2Gi"), Some(2 << 30));
    }
}
