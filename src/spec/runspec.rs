//! [`RunSpec`]: how one container is started (a `docker run` line, a compose service, a
//! Kubernetes container), in one shape the run-configuration rules read. This module also
//! parses `docker run` / `podman run` / `nvidia-docker run` argument lists and finds such
//! lines in shell scripts and Markdown code blocks.

use super::build::SpecError;
use super::dockerfile::Pos;
use super::shell::{self, Var, Vars};

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
    pub image: Option<String>,
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
}

impl RunSpec {
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

/// Options of `docker run` that take no value.
const BOOL_LONG: &[&str] = &[
    "--rm",
    "--privileged",
    "--init",
    "--read-only",
    "--detach",
    "--interactive",
    "--tty",
    "--publish-all",
    "--no-healthcheck",
    "--oom-kill-disable",
    "--disable-content-trust",
    "--quiet",
    "--help",
    "--sig-proxy",
    "--replace",
    "--use-api-socket",
];

/// One word with a position.
#[derive(Debug, Clone)]
pub struct PWord {
    pub text: String,
    pub pos: Pos,
}

/// Parse the words after `docker run` (options, image, command).
pub fn parse_docker_run(file: &str, engine: &str, pos: Pos, args: &[PWord]) -> RunSpec {
    let mut rs = RunSpec::new(RunKind::DockerRun, file, pos, "", engine);
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let (name, inline): (String, Option<String>) = if t.starts_with("--") {
            match t.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (t.to_string(), None),
            }
        } else {
            let chars: Vec<char> = t[1..].chars().collect();
            if chars.iter().all(|c| "ditPq".contains(*c)) {
                // -it, -d, -dit
                i += 1;
                continue;
            }
            // -e X=1, -eX=1, -v a:b
            let f = format!("-{}", chars.first().copied().unwrap_or(' '));
            let rest: String = chars.iter().skip(1).collect();
            let rest = rest.strip_prefix('=').map(String::from).unwrap_or(rest);
            (f, if rest.is_empty() { None } else { Some(rest) })
        };
        let takes_value = name.starts_with("--") && !BOOL_LONG.contains(&name.as_str())
            || !name.starts_with("--");
        let (val, vpos) = match inline {
            Some(v) => (Some(v), w.pos),
            None if takes_value => {
                i += 1;
                match args.get(i) {
                    Some(v) => (Some(v.text.clone()), v.pos),
                    None => (None, w.pos),
                }
            }
            None => (None, w.pos),
        };
        let val_s = val.clone().unwrap_or_default();
        match name.as_str() {
            "--gpus" => rs.gpus = Some(parse_gpus_flag(&val_s, w.pos)),
            "--runtime" => rs.runtime = Some((val_s, w.pos)),
            "-e" | "--env" => {
                let (k, v) = match val_s.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (val_s.clone(), String::new()),
                };
                rs.env.push((k, v, vpos));
            }
            "-v" | "--volume" => {
                rs.mounts.extend(Mount::from_short_syntax(&val_s, vpos));
            }
            "--mount" => {
                let mut m = Mount {
                    host: String::new(),
                    container: String::new(),
                    read_only: false,
                    pos: vpos,
                };
                let mut is_bind = false;
                for kv in val_s.split(',') {
                    match kv.split_once('=') {
                        Some(("type", t)) => {
                            is_bind = t == "bind";
                            if t == "tmpfs" {
                                m.host = "tmpfs".into();
                            }
                        }
                        Some(("source" | "src", s)) => m.host = s.to_string(),
                        Some(("target" | "destination" | "dst", s)) => m.container = s.to_string(),
                        Some(("readonly" | "ro", v)) => m.read_only = v != "false",
                        None if kv == "readonly" || kv == "ro" => m.read_only = true,
                        _ => {}
                    }
                }
                if m.container == "/dev/shm" {
                    rs.shm_volume = true;
                }
                if is_bind {
                    rs.mounts.push(m);
                }
            }
            "--tmpfs" if val_s.starts_with("/dev/shm") => rs.shm_volume = true,
            "--device" => {
                let d = val_s.split(':').next().unwrap_or("").to_string();
                rs.devices.push((d, vpos));
            }
            "--shm-size" => {
                if let Some(b) = parse_size(&val_s) {
                    rs.shm_size = Some((b, w.pos));
                }
            }
            "--ipc" => rs.ipc_host = val_s == "host",
            "--privileged" => rs.privileged = true,
            "--name" => rs.name = val_s,
            _ => {}
        }
        i += 1;
    }
    if let Some(img) = args.get(i) {
        rs.image = Some(img.text.clone());
        rs.image_pos = img.pos;
        if rs.name.is_empty() {
            rs.name = img.text.clone();
        }
        rs.command = args[i + 1..].iter().map(|w| w.text.clone()).collect();
    }
    rs
}

/// If `argv` is a container start (`docker run`, `docker container run`, `podman run`,
/// `nvidia-docker run`, `docker create`), the engine and where its arguments start.
pub fn run_invocation(argv: &[&str]) -> Option<(String, usize)> {
    let mut i = 0;
    while argv
        .get(i)
        .map(|s| *s == "sudo" || *s == "exec" || *s == "time")
        .unwrap_or(false)
    {
        i += 1;
    }
    let eng = argv
        .get(i)?
        .rsplit(['/', '\\'])
        .next()?
        .trim_end_matches(".exe");
    let engine = match eng {
        "docker" | "podman" | "nvidia-docker" | "nerdctl" => eng.to_string(),
        _ => return None,
    };
    let mut j = i + 1;
    // Global options: `docker --context x run`, `-H host`.
    while let Some(s) = argv.get(j) {
        if *s == "--context" || *s == "-H" || *s == "--host" || *s == "-c" || *s == "--config" {
            j += 2;
        } else if s.starts_with('-') {
            j += 1;
        } else {
            break;
        }
    }
    match argv.get(j).copied() {
        Some("run") | Some("create") => Some((engine, j + 1)),
        Some("container") if matches!(argv.get(j + 1).copied(), Some("run") | Some("create")) => {
            Some((engine, j + 2))
        }
        _ => None,
    }
}

/// Byte offset → line/column over a whole text.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        LineIndex { starts }
    }
    pub fn pos(&self, off: usize) -> Pos {
        let l = match self.starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        Pos {
            line: l as u32 + 1,
            col: (off - self.starts[l]) as u32 + 1,
        }
    }
}

/// Keep only the shell in a Markdown file: fenced blocks that are shell (or untyped), with
/// prompts (`$ `, `# `-less) blanked, everything else turned into empty lines so offsets and
/// lines stay those of the original file.
pub fn markdown_shell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    let mut shell_block = false;
    let mut fence = "";
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let nl = &line[body.len()..];
        let t = body.trim_start();
        if !in_block && (t.starts_with("```") || t.starts_with("~~~")) {
            in_block = true;
            fence = if t.starts_with("```") { "```" } else { "~~~" };
            let lang = t.trim_start_matches(['`', '~']).trim().to_ascii_lowercase();
            let lang = lang.split([' ', '{', ',']).next().unwrap_or("");
            shell_block = matches!(
                lang,
                "" | "bash"
                    | "sh"
                    | "shell"
                    | "console"
                    | "zsh"
                    | "shell-session"
                    | "terminal"
                    | "text"
                    | "cmd"
                    | "powershell"
                    | "ps1"
                    | "bat"
            );
            out.push_str(&" ".repeat(body.len()));
            out.push_str(nl);
            continue;
        }
        if in_block && t.starts_with(fence) {
            in_block = false;
            out.push_str(&" ".repeat(body.len()));
            out.push_str(nl);
            continue;
        }
        if in_block && shell_block {
            // `$ docker run …`: blank the prompt.
            let lead = body.len() - t.len();
            if let Some(r) = t.strip_prefix("$ ").or_else(|| {
                t.strip_prefix("# ")
                    .filter(|r| r.starts_with("docker") || r.starts_with("podman"))
            }) {
                out.push_str(&" ".repeat(lead + 2));
                out.push_str(r);
            } else {
                out.push_str(body);
            }
        } else {
            out.push_str(&" ".repeat(body.chars().count().min(body.len())));
        }
        out.push_str(nl);
    }
    out
}

/// Every container start in a shell script (or the shell of a Markdown file).
/// The shell text of a script or of a Markdown file's shell blocks, with Windows batch /
/// PowerShell continuations made POSIX.
fn script_source(file: &str, text: &str, markdown: bool) -> String {
    let mut src = if markdown {
        markdown_shell(text)
    } else {
        text.to_string()
    };
    if file.ends_with(".bat") || file.ends_with(".cmd") || file.ends_with(".ps1") {
        // cmd.exe `^` / PowerShell backtick continuations.
        src = src
            .replace("^\r\n", "\\\r\n")
            .replace("^\n", "\\\n")
            .replace("`\n", "\\\n")
            .replace("`\r\n", "\\\r\n");
    }
    src
}

/// Every simple command of a script (or a Markdown file's shell blocks): argv and position.
pub fn script_commands(file: &str, text: &str, markdown: bool) -> Vec<(Vec<PWord>, Pos)> {
    let src = script_source(file, text, markdown);
    let idx = LineIndex::new(&src);
    let mut vars = Vars::new();
    for name in referenced_vars(&src) {
        vars.insert(name, Var::Unknown);
    }
    shell::parse_script(&src, &mut vars)
        .into_iter()
        .map(field_split)
        .map(|c| {
            let words = c
                .words
                .iter()
                .map(|w| PWord {
                    text: w.text.clone(),
                    pos: idx.pos(w.offset),
                })
                .collect();
            (words, idx.pos(c.offset))
        })
        .collect()
}

pub fn scan_script(file: &str, text: &str, markdown: bool) -> Vec<RunSpec> {
    scan_script_checked(file, text, markdown).0
}

/// [`scan_script`], and where the script's variable expansion went past a bound (its words
/// there stay as written).
pub fn scan_script_checked(
    file: &str,
    text: &str,
    markdown: bool,
) -> (Vec<RunSpec>, Option<SpecError>) {
    let src = script_source(file, text, markdown);
    if !src.contains("docker") && !src.contains("podman") {
        return (Vec::new(), None);
    }
    let idx = LineIndex::new(&src);
    // Variables the script uses but we cannot know stay as written.
    let mut vars = Vars::new();
    for name in referenced_vars(&src) {
        vars.insert(name, Var::Unknown);
    }
    let (cmds, limit) = shell::try_parse_script_located(&src, &mut vars);
    let error = limit.map(|(l, at)| SpecError {
        pos: idx.pos(at),
        message: l.to_string(),
    });
    let cmds: Vec<shell::Command> = cmds.into_iter().map(field_split).collect();
    let mut out = Vec::new();
    let mut built: Vec<String> = Vec::new();
    for c in &cmds {
        let argv: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
        built.extend(built_tags(&argv));
    }
    for c in cmds {
        let argv: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
        if let Some((engine, start)) = run_invocation(&argv) {
            let words: Vec<PWord> = c.words[start..]
                .iter()
                .map(|w| PWord {
                    text: w.text.clone(),
                    pos: idx.pos(w.offset),
                })
                .collect();
            let mut rs = parse_docker_run(
                file,
                &engine,
                idx.pos(c.words[0].offset.min(c.offset.max(c.words[0].offset))),
                &words,
            );
            rs.pos = idx.pos(c.words[0].offset);
            // The script builds this image itself: its tag names a local build.
            rs.build = rs.image.as_ref().is_some_and(|i| built.contains(i));
            // An image named through a variable (`IMAGE=repo:tag` … `docker run $IMAGE`) is
            // written, and fixed, where the variable is set.
            if let Some(w) = c.words[start..]
                .iter()
                .find(|w| Some(&w.text) == rs.image.as_ref() && w.raw.contains('$'))
            {
                if let Some(at) = lone_variable(&w.raw)
                    .and_then(|name| assignment_offset(&src, name, c.words[0].offset))
                {
                    rs.image_pos = idx.pos(at);
                }
            }
            out.push(rs);
        }
    }
    (out, error)
}

/// `LD_LIBRARY_PATH` values a script sets for what it runs (`export LD_LIBRARY_PATH=…`,
/// `LD_LIBRARY_PATH=… cmd`): an entrypoint or a "run this in the container" script. The
/// inherited value stays as written (`$LD_LIBRARY_PATH`).
pub fn script_ld_library_paths(text: &str) -> Vec<(String, Pos)> {
    if !text.contains("LD_LIBRARY_PATH") {
        return Vec::new();
    }
    let idx = LineIndex::new(text);
    let mut vars = Vars::new();
    for name in referenced_vars(text) {
        vars.insert(name, Var::Unknown);
    }
    let mut out = Vec::new();
    for c in shell::parse_script(text, &mut vars) {
        for (k, v) in &c.assigns {
            if k == "LD_LIBRARY_PATH" {
                out.push((v.clone(), idx.pos(c.offset)));
            }
        }
        if c.words.first().is_some_and(|w| w.text == "export") {
            for w in &c.words[1..] {
                if let Some(v) = w.text.strip_prefix("LD_LIBRARY_PATH=") {
                    out.push((v.to_string(), idx.pos(w.offset)));
                }
            }
        }
    }
    out
}

/// The variable a word consists of (`$IMAGE`, `${IMAGE}`, `"$IMAGE"`), if that is all it is.
fn lone_variable(raw: &str) -> Option<&str> {
    let r = raw.trim_matches('"');
    let name = r
        .strip_prefix("${")
        .and_then(|x| x.strip_suffix('}'))
        .or_else(|| r.strip_prefix('$'))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// Byte offset of the last `NAME=` assignment (`export NAME=`, `local NAME=`) starting a line
/// before `before`.
fn assignment_offset(src: &str, name: &str, before: usize) -> Option<usize> {
    let mut at = None;
    let mut off = 0;
    for line in src.split_inclusive('\n') {
        if off >= before {
            break;
        }
        let t = line.trim_start();
        let lead = line.len() - t.len();
        let (t, kw) = ["export ", "local ", "readonly ", "declare "]
            .iter()
            .find_map(|k| t.strip_prefix(k).map(|r| (r, k.len())))
            .unwrap_or((t, 0));
        if t.strip_prefix(name).is_some_and(|r| r.starts_with('=')) {
            at = Some(off + lead + kw);
        }
        off += line.len();
    }
    at
}

/// An unquoted expansion we know the value of (`$(cmd)` output is unknown: kept whole).
fn splits(w: &shell::Word) -> bool {
    !w.quoted && !w.unresolved && w.raw.contains('$') && w.text.contains(char::is_whitespace)
}

/// Field splitting: an unquoted expansion (`$RUNCMD` holding `docker run --gpus all`) becomes
/// one word per field, as the shell runs it. The fields keep the expansion's offset.
fn field_split(mut c: shell::Command) -> shell::Command {
    if !c.words.iter().any(splits) {
        return c;
    }
    c.words = c
        .words
        .into_iter()
        .flat_map(|w| {
            if !splits(&w) {
                return vec![w];
            }
            w.text
                .split_whitespace()
                .map(|f| shell::Word {
                    text: f.to_string(),
                    ..w.clone()
                })
                .collect()
        })
        .collect();
    c
}

/// Index of the first argument after `build` in a `docker build` / `docker buildx build` /
/// `docker image build` / `podman build` / `buildah bud` command.
fn build_args_start(argv: &[&str]) -> Option<usize> {
    let engine = argv
        .iter()
        .position(|w| matches!(*w, "docker" | "podman" | "nvidia-docker" | "buildah"))?;
    let rest = &argv[engine + 1..];
    let b = rest.iter().position(|w| *w == "build" || *w == "bud")?;
    // Only `build`, `buildx build`, `image build` subcommands.
    rest[..b]
        .iter()
        .all(|w| matches!(*w, "buildx" | "image") || w.starts_with('-'))
        .then_some(engine + 1 + b + 1)
}

/// The `-t`/`--tag` names of a `docker build` / `docker buildx build` / `podman build`
/// command (a `:latest` default is added to an untagged name, as Docker does).
pub fn built_tags(argv: &[&str]) -> Vec<String> {
    let words: Vec<PWord> = argv
        .iter()
        .map(|w| PWord {
            text: w.to_string(),
            pos: Pos::default(),
        })
        .collect();
    let Some(b) = build_call(&words, Pos::default()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in b.tags {
        if !t.rsplit('/').next().unwrap_or("").contains(':') {
            out.push(format!("{t}:latest"));
        }
        out.push(t);
    }
    out
}

/// A `docker build` (`buildx build`, `podman build`) command of a script or a Markdown
/// file's shell blocks: what it builds and with which `--build-arg`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildCall {
    /// The command's first word.
    pub pos: Pos,
    /// The build context as written (`.` when none is given).
    pub context: String,
    /// `-f`/`--file` as written: relative to where the command runs, like the context.
    pub dockerfile: Option<String>,
    /// `--build-arg K=V`, at the value's word (`--build-arg K` takes K from the environment,
    /// which we do not know: not listed).
    pub build_args: Vec<(String, String, Pos)>,
    pub target: Option<String>,
    /// `-t`/`--tag` names as written.
    pub tags: Vec<String>,
}

/// Options of `docker build` / `buildx build` that take a value (the next word unless
/// written `--opt=value`); the rest are switches. The context is the first other word.
const BUILD_VALUE_OPTS: &[&str] = &[
    "-t",
    "--tag",
    "-f",
    "--file",
    "--build-arg",
    "--target",
    "--platform",
    "--label",
    "--network",
    "--cache-from",
    "--cache-to",
    "--secret",
    "--ssh",
    "--progress",
    "-o",
    "--output",
    "--iidfile",
    "--add-host",
    "--build-context",
    "--shm-size",
    "--ulimit",
    "-m",
    "--memory",
    "--memory-swap",
    "--cpu-shares",
    "--cpu-period",
    "--cpu-quota",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--cgroup-parent",
    "--isolation",
    "--metadata-file",
    "--builder",
    "--attest",
    "--allow",
    "--annotation",
    "--call",
    "--security-opt",
    "--platforms",
    "--format",
    "--layers",
    "--jobs",
    "--from",
];

/// Every `docker build` of a script (or of a Markdown file's shell blocks).
pub fn script_builds(file: &str, text: &str, markdown: bool) -> Vec<BuildCall> {
    if !text.contains("build") {
        return Vec::new();
    }
    script_commands(file, text, markdown)
        .into_iter()
        .filter_map(|(words, pos)| build_call(&words, pos))
        .collect()
}

/// The one reading of a build command's options (tags, file, target, build args, context),
/// or None when `words` is not a build.
fn build_call(words: &[PWord], pos: Pos) -> Option<BuildCall> {
    let argv: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    let start = build_args_start(&argv)?;
    let mut b = BuildCall {
        pos,
        context: String::new(),
        dockerfile: None,
        build_args: Vec::new(),
        target: None,
        tags: Vec::new(),
    };
    let mut i = start;
    while i < words.len() {
        let w = words[i].text.as_str();
        let short = w.get(..2).filter(|_| w.len() > 2 && !w.starts_with("--"));
        let (opt, inline) = match (short, w.split_once('=')) {
            // `-tname`, `-fDockerfile`, `-t=name`: a short option with its value attached.
            (Some(o), _) if BUILD_VALUE_OPTS.contains(&o) => {
                let v = &w[2..];
                (o, Some(v.strip_prefix('=').unwrap_or(v)))
            }
            (_, Some((o, v))) if o.starts_with('-') => (o, Some(v)),
            _ => (w, None),
        };
        if !opt.starts_with('-') || opt == "-" {
            if b.context.is_empty() {
                b.context = w.to_string();
            }
            i += 1;
            continue;
        }
        if !BUILD_VALUE_OPTS.contains(&opt) {
            i += 1;
            continue;
        }
        let (value, at) = match inline {
            Some(v) => (v.to_string(), words[i].pos),
            None => match words.get(i + 1) {
                Some(n) => {
                    i += 1;
                    (n.text.clone(), n.pos)
                }
                None => break,
            },
        };
        i += 1;
        match opt {
            "-t" | "--tag" => b.tags.push(value),
            "-f" | "--file" => b.dockerfile = Some(value),
            "--target" => b.target = Some(value),
            "--build-arg" => {
                if let Some((k, v)) = value.split_once('=') {
                    b.build_args.push((k.to_string(), v.to_string(), at));
                }
            }
            _ => {}
        }
    }
    if b.context.is_empty() {
        b.context = ".".into();
    }
    Some(b)
}

fn referenced_vars(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let mut j = i + 1;
            if b.get(j) == Some(&b'{') {
                j += 1;
            }
            let st = j;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j > st && !b[st].is_ascii_digit() {
                out.push(s[st..j].to_string());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_image_from_a_variable_is_placed_at_its_assignment() {
        let v = scan_script(
            "run.sh",
            "IMAGE=repo/app-cuda:latest\nX=1\n\ndocker run --gpus all \\\n  ${IMAGE}\n",
            false,
        );
        assert_eq!(v[0].image.as_deref(), Some("repo/app-cuda:latest"));
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
            v[0].image.as_deref(),
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
        assert_eq!(v[0].image.as_deref(), Some("repo/app:1"), "{v:?}");
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
        assert_eq!(
            r.image.as_deref(),
            Some("nvidia/cuda:12.4.1-base-ubuntu22.04")
        );
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
