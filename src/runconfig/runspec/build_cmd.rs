//! `docker build` commands of scripts (`buildx build`, `podman build`, `buildah bud`):
//! what they build, from which Dockerfile, with which `--build-arg`s.

use super::*;

/// Index of the first argument after `build` in a `docker build` / `docker buildx build` /
/// `docker image build` / `podman build` / `buildah bud` command.
pub(super) fn build_args_start(argv: &[&str]) -> Option<usize> {
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
pub(super) const BUILD_VALUE_OPTS: &[&str] = &[
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
pub(super) fn build_call(words: &[PWord], pos: Pos) -> Option<BuildCall> {
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

pub(super) fn referenced_vars(s: &str) -> Vec<String> {
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
