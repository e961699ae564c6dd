//! Dockerfiles and run configurations → facts with file:line:col → GL1xx findings.
//!
//! Parsers: [`dockerfile`] (BuildKit-faithful syntax) → [`build`] (stages, ARG/ENV, RUN read
//! as shell by [`shell`], installs by [`pkg`], base images by [`image`]); [`runspec`]
//! (`docker run` lines in scripts and Markdown), [`compose`], [`k8s`] → [`runspec::RunSpec`].
//! Facts about CUDA, drivers and torch come through [`facts::Facts`].
//!
//! Commands for the CLI: [`cmd_dockerfile`], [`cmd_compose`], [`cmd_k8s`], [`cmd_run`],
//! [`cmd_lint`], each with its clap `Args` struct. They return findings after configuration
//! (rule enable/disable, severity overrides) and suppressions are applied; the caller reports
//! them and maps them to an exit code. Unreadable input is an `Err` (exit 2); input that is
//! read but does not parse is a GL100 finding at its file:line:col.

pub mod build;
pub mod compose;
pub mod dockerfile;
pub mod facts;
pub mod image;
pub mod k8s;
pub mod pkg;
pub mod runspec;
pub mod scan_images;
pub mod shell;
pub mod torch;
pub mod yamlloc;

use crate::config::Config;
use crate::finding::{Finding, Location};
use crate::suppress::FileText;
use crate::target::Target;
use anyhow::Context as _;
use build::{BuildFacts, BuildOptions, SpecError};
use dockerfile::Pos;
use facts::Facts;
use runspec::RunSpec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What every spec command needs besides its own arguments.
pub struct CommandContext {
    /// Targets from `--gpu/--driver/--host/--fleet` or the config; empty = target-independent.
    pub targets: Vec<Target>,
    pub config: Config,
    /// Compatibility facts over the command's matrix.
    pub facts: facts::SpecFacts,
    /// Paths in findings are shown relative to this directory.
    pub cwd: PathBuf,
    /// `--scan-images`: run the image checks on images run configurations name.
    pub scan_images: Option<scan_images::ImageScan>,
    /// Inputs that could not be read; the others are still linted and the command exits 2.
    pub input_errors: std::cell::RefCell<Vec<String>>,
    /// `-q`: no notes on stderr, only findings (and errors).
    pub quiet: bool,
}

impl CommandContext {
    /// A context over `matrix` (the command's, with `--matrices` overrides), the given
    /// targets and config.
    pub fn new(
        targets: Vec<Target>,
        config: Config,
        matrix: crate::matrix::Matrix,
    ) -> anyhow::Result<CommandContext> {
        Ok(CommandContext {
            targets,
            config,
            facts: facts::SpecFacts::new(matrix)?,
            cwd: std::env::current_dir().unwrap_or_default(),
            scan_images: None,
            input_errors: Default::default(),
            quiet: false,
        })
    }
    /// The compatibility matrix behind the facts.
    pub fn matrix(&self) -> &crate::matrix::Matrix {
        self.facts.matrix()
    }
    fn display(&self, p: &Path) -> String {
        let s = p.strip_prefix(&self.cwd).unwrap_or(p);
        let s = s.strip_prefix("./").unwrap_or(s);
        s.to_string_lossy().replace('\\', "/")
    }
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct DockerfileArgs {
    /// Dockerfiles to check (default: ./Dockerfile).
    pub paths: Vec<PathBuf>,
    /// Build argument, as for `docker build` (repeatable).
    #[arg(long = "build-arg", value_name = "KEY=VALUE")]
    pub build_args: Vec<String>,
    /// Check only the stages this target stage needs.
    #[arg(long)]
    pub target: Option<String>,
    /// Build context for files the Dockerfile reads (requirements); default: its directory.
    #[arg(long)]
    pub context: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ComposeArgs {
    /// Compose files, merged in order (default: compose.yaml / docker-compose.yml lookup).
    #[arg(short = 'f', long = "file")]
    pub files: Vec<PathBuf>,
    /// Positional compose files (same as -f).
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct K8sArgs {
    /// Manifests (multi-document YAML, Helm-rendered output, `-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Shell scripts or Markdown files to search for docker/podman run lines.
    #[arg(long = "file")]
    pub files: Vec<PathBuf>,
    /// A command line: `gpulint run -- docker run --gpus all IMAGE`.
    #[arg(last = true)]
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct LintArgs {
    /// Repository directories or single files (default: the current directory). A path that
    /// does not exist is an error for that path; the others are still linted (exit 2).
    pub paths: Vec<PathBuf>,
}

/// Input for the GL1xx checks.
pub enum Subject<'a> {
    Dockerfile(&'a BuildFacts),
    Runs(&'a [RunSpec]),
}

/// What a check sees besides its subject.
pub struct RuleCtx<'a> {
    pub targets: &'a [Target],
    pub facts: &'a dyn Facts,
}

pub fn loc(file: &str, p: Pos) -> Location {
    Location::in_file(file, p.line.max(1), p.col.max(1))
}

fn error_finding(file: &str, e: &SpecError) -> Finding {
    crate::rules::spec::gl100_invalid_spec_file::META
        .finding(e.message.clone())
        .with_location(loc(file, e.pos))
}

fn run_checks(subject: &Subject, ctx: &CommandContext) -> Vec<Finding> {
    let rc = RuleCtx {
        targets: &ctx.targets,
        facts: &ctx.facts,
    };
    let mut out = Vec::new();
    for (meta, check) in crate::rules::spec_checks() {
        if !ctx.config.rule_enabled(&meta.code) {
            continue;
        }
        out.extend(check(subject, &rc));
    }
    out
}

/// The GL1xx checks on run specs, plus the image checks on the images they name when
/// `--scan-images` is on.
fn runs_checks(specs: &[RunSpec], ctx: &CommandContext) -> Vec<Finding> {
    let mut out = run_checks(&Subject::Runs(specs), ctx);
    out.extend(scan_images::findings(specs, ctx));
    out
}

/// Parse `KEY=VALUE` build args; `KEY` alone takes the value from the environment.
fn build_args(list: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for a in list {
        match a.split_once('=') {
            Some((k, v)) => {
                m.insert(k.to_string(), v.to_string());
            }
            None => {
                if let Ok(v) = std::env::var(a) {
                    m.insert(a.clone(), v);
                }
            }
        }
    }
    m
}

/// Analyze one Dockerfile's text (no config, no suppressions): for tests and `lint`.
pub fn analyze_dockerfile(
    file: &str,
    text: &str,
    opts: &BuildOptions,
    ctx: &CommandContext,
) -> Vec<Finding> {
    let bf = build::analyze(file, text, opts, &ctx.facts);
    let mut out: Vec<Finding> = bf.errors.iter().map(|e| error_finding(file, e)).collect();
    out.extend(run_checks(&Subject::Dockerfile(&bf), ctx));
    out
}

fn read(p: &Path) -> anyhow::Result<String> {
    if p == Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        return Ok(s);
    }
    let bytes = crate::io_util::read_regular(p, crate::io_util::MAX_CONFIG_FILE)
        .with_context(|| format!("cannot read {}", p.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Finish a command: config (enable/severity), suppressions, deterministic order.
fn finish(findings: Vec<Finding>, texts: &[FileText], ctx: &CommandContext) -> Vec<Finding> {
    let mut f = crate::suppress::apply(findings, texts, &ctx.config);
    f.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    f.dedup();
    f
}

pub fn cmd_dockerfile(args: &DockerfileArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("Dockerfile")]
    } else {
        args.paths.clone()
    };
    let mut all = Vec::new();
    let mut texts = Vec::new();
    for p in &paths {
        let text = match read(p) {
            Ok(t) => t,
            Err(e) => {
                ctx.input_errors.borrow_mut().push(format!("{e:#}"));
                continue;
            }
        };
        let file = ctx.display(p);
        let parsed = dockerfile::parse(&text);
        // BuildKit refuses both: "the Dockerfile cannot be empty", "target stage … could not
        // be found". Linting on would judge a build that cannot happen.
        if parsed.instructions.is_empty() {
            ctx.input_errors.borrow_mut().push(format!(
                "{file}: the Dockerfile is empty (no instructions); a build refuses it"
            ));
            continue;
        }
        if let Some(t) = &args.target {
            let wanted = t.to_ascii_lowercase();
            let stages = build::analyze("", &text, &BuildOptions::default(), &ctx.facts).stages;
            if !stages
                .iter()
                .any(|s| s.name.as_deref() == Some(wanted.as_str()))
            {
                let names: Vec<&str> = stages.iter().filter_map(|s| s.name.as_deref()).collect();
                ctx.input_errors.borrow_mut().push(format!(
                    "{file}: --target {t:?}: no such build stage (named stages: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
                continue;
            }
        }
        let opts = BuildOptions {
            build_args: build_args(&args.build_args),
            target: args.target.clone(),
            context: args.context.clone().or_else(|| {
                p.parent().map(|d| {
                    if d.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        d.to_path_buf()
                    }
                })
            }),
        };
        all.extend(analyze_dockerfile(&file, &text, &opts, ctx));
        let ranges = parsed
            .instructions
            .iter()
            .map(|i| (i.start_line, i.end_line))
            .collect();
        texts.push(FileText {
            display: file,
            text,
            statements: Some(ranges),
        });
    }
    Ok(finish(all, &texts, ctx))
}

/// Whether the image a Dockerfile builds is meant for a GPU (CUDA base or CUDA torch).
fn dockerfile_is_gpu(ctx: &CommandContext, context: &Path, df: &Path) -> Option<bool> {
    // Named by an untrusted compose file: a regular file, bounded, opened without blocking.
    let text = crate::io_util::read_regular_string(df, crate::io_util::MAX_CONFIG_FILE).ok()?;
    let bf = build::analyze(
        "",
        &text,
        &BuildOptions {
            context: Some(context.to_path_buf()),
            ..Default::default()
        },
        &ctx.facts,
    );
    let last = bf.stages.last()?;
    if last.info.is_gpu() {
        return Some(true);
    }
    let torch = bf.chain(last.index).iter().any(|s| {
        s.installs.iter().any(|i| match i {
            pkg::Install::Pip(p) => {
                p.reqs
                    .iter()
                    .any(|r| r.name == "torch" && r.local.as_deref() != Some("cpu"))
                    && !p.index_url.as_deref().unwrap_or("").contains("/cpu")
            }
            pkg::Install::Conda(c) => c
                .pkgs
                .iter()
                .any(|p| p.0 == "pytorch-cuda" || p.0 == "cudatoolkit"),
            _ => false,
        })
    });
    Some(torch)
}

fn compose_findings(
    files: &[(String, PathBuf)],
    ctx: &CommandContext,
) -> (Vec<Finding>, Vec<FileText>) {
    let (specs, errors) = compose::load(files, &|c, d| dockerfile_is_gpu(ctx, c, d));
    let mut out: Vec<Finding> = errors.iter().map(|(f, e)| error_finding(f, e)).collect();
    out.extend(runs_checks(&specs, ctx));
    let texts = files
        .iter()
        .filter_map(|(d, p)| {
            crate::io_util::read_regular_string(p, crate::io_util::MAX_CONFIG_FILE)
                .ok()
                .map(|text| FileText {
                    display: d.clone(),
                    text,
                    statements: None,
                })
        })
        .collect();
    (out, texts)
}

pub fn cmd_compose(args: &ComposeArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let mut files: Vec<PathBuf> = args.files.iter().chain(&args.paths).cloned().collect();
    if files.is_empty() {
        files = compose::default_files(&ctx.cwd);
        if files.is_empty() {
            anyhow::bail!(
                "no compose file found in {} (looked for {})",
                ctx.cwd.display(),
                compose::DEFAULT_FILES.join(", ")
            );
        }
    }
    for f in &files {
        if !f.is_file() {
            anyhow::bail!("cannot read {}", f.display());
        }
    }
    let named: Vec<(String, PathBuf)> = files.iter().map(|p| (ctx.display(p), p.clone())).collect();
    let (out, texts) = compose_findings(&named, ctx);
    Ok(finish(out, &texts, ctx))
}

fn k8s_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let (specs, errors) = k8s::parse(file, text);
    let mut out: Vec<Finding> = errors.iter().map(|e| error_finding(file, e)).collect();
    out.extend(runs_checks(&specs, ctx));
    out
}

pub fn cmd_k8s(args: &K8sArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let mut all = Vec::new();
    let mut texts = Vec::new();
    for p in &args.files {
        let text = match read(p) {
            Ok(t) => t,
            Err(e) => {
                ctx.input_errors.borrow_mut().push(format!("{e:#}"));
                continue;
            }
        };
        let file = if p == Path::new("-") {
            "<stdin>".to_string()
        } else {
            ctx.display(p)
        };
        all.extend(k8s_findings(&file, &text, ctx));
        texts.push(FileText {
            display: file,
            text,
            statements: None,
        });
    }
    Ok(finish(all, &texts, ctx))
}

fn is_markdown_name(file: &str) -> bool {
    file.ends_with(".md") || file.ends_with(".mdx") || file.ends_with(".markdown")
}

fn script_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let md = is_markdown_name(file);
    let specs = runspec::scan_script(file, text, md);
    if md {
        // Documentation examples (placeholders, registry pulls): no image scans.
        return run_checks(&Subject::Runs(&specs), ctx);
    }
    runs_checks(&specs, ctx)
}

pub fn cmd_run(args: &RunArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let mut all = Vec::new();
    let mut texts = Vec::new();
    if !args.argv.is_empty() {
        let line = args
            .argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let specs = runspec::scan_script("<command line>", &line, false);
        if specs.is_empty() {
            anyhow::bail!("not a container start: expected `docker run …`, `podman run …` or `nvidia-docker run …`");
        }
        all.extend(runs_checks(&specs, ctx));
    }
    for p in &args.files {
        let text = match read(p) {
            Ok(t) => t,
            Err(e) => {
                ctx.input_errors.borrow_mut().push(format!("{e:#}"));
                continue;
            }
        };
        let file = ctx.display(p);
        all.extend(script_findings(&file, &text, ctx));
        let text = if is_markdown_name(&file) {
            markdown_code_only(&text)
        } else {
            text
        };
        texts.push(FileText {
            display: file,
            text,
            statements: None,
        });
    }
    if args.argv.is_empty() && args.files.is_empty() {
        anyhow::bail!("nothing to check: give `--file SCRIPT` or `-- docker run …`");
    }
    Ok(finish(all, &texts, ctx))
}

fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=/.:,@%+".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// What kind of file `lint` treats a path as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dockerfile,
    Compose,
    K8s,
    Script,
    Markdown,
}

/// Classify by name, then by content for YAML and Markdown.
pub fn classify(path: &Path, text: Option<&str>) -> Option<FileKind> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if is_dockerfile_name(&name) {
        return Some(FileKind::Dockerfile);
    }
    if name.ends_with(".sh")
        || name.ends_with(".bash")
        || name.ends_with(".bat")
        || name.ends_with(".cmd")
    {
        return Some(FileKind::Script);
    }
    if name.ends_with(".md") || name.ends_with(".mdx") || name.ends_with(".markdown") {
        return Some(FileKind::Markdown);
    }
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        if compose::DEFAULT_FILES.contains(&name.as_str())
            || name.starts_with("docker-compose")
            || name.starts_with("compose.")
        {
            return Some(FileKind::Compose);
        }
        let t = text?;
        if t.lines().any(|l| l.starts_with("services:")) {
            return Some(FileKind::Compose);
        }
        if t.lines()
            .any(|l| l.starts_with("kind:") || l.starts_with("apiVersion:"))
        {
            return Some(FileKind::K8s);
        }
    }
    None
}

/// Extensions that mark a `Dockerfile.<ext>` name as source code, data or documentation about
/// Dockerfiles (`dockerfile.rs`, `dockerfile.py`, `Dockerfile.md`), not as a Dockerfile variant.
const NON_DOCKERFILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "go", "js", "ts", "jsx", "tsx", "java", "kt", "c", "h", "cc", "cpp", "hpp", "rb",
    "php", "cs", "swift", "scala", "lua", "pl", "md", "mdx", "rst", "txt", "html", "json", "toml",
    "lock", "snap", "sh", "bash", "yaml", "yml", "xml", "j2", "tmpl", "tpl", "erb", "orig", "rej",
    "bak", "swp",
];

/// hadolint/Trivy naming: `Dockerfile`, `Containerfile`, `Dockerfile.*` / `Dockerfile-*`,
/// `*.Dockerfile`; a `Dockerfile.<ext>` whose extension names a source/doc/template format is
/// not one (name is lower-cased by the caller).
fn is_dockerfile_name(name: &str) -> bool {
    if name == "dockerfile" || name == "containerfile" || name.ends_with(".dockerfile") {
        return true;
    }
    let suffix = [
        "dockerfile.",
        "dockerfile-",
        "dockerfile_",
        "containerfile.",
    ]
    .iter()
    .find_map(|p| name.strip_prefix(p));
    match suffix {
        Some(rest) => {
            let ext = rest.rsplit('.').next().unwrap_or(rest);
            !NON_DOCKERFILE_EXTENSIONS.contains(&ext)
        }
        None => false,
    }
}

/// Files under `dir` that `lint` reads: `git ls-files` when `dir` is in a git work tree
/// (so .gitignore is respected exactly), else a walk that skips hidden and vendored dirs.
pub fn discover(dir: &Path, config: &Config) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    match git {
        Ok(o) if o.status.success() => {
            for f in o.stdout.split(|b| *b == 0) {
                if !f.is_empty() {
                    files.push(dir.join(String::from_utf8_lossy(f).as_ref()));
                }
            }
        }
        _ => {
            for e in walkdir::WalkDir::new(dir)
                .into_iter()
                .filter_entry(|e| {
                    let n = e.file_name().to_string_lossy();
                    e.depth() == 0
                        || !(n.starts_with('.')
                            || n == "node_modules"
                            || n == "target"
                            || n == "vendor")
                })
                .flatten()
            {
                if e.file_type().is_file() {
                    files.push(e.into_path());
                }
            }
        }
    }
    files.retain(|p| {
        let rel = p.strip_prefix(dir).unwrap_or(p);
        !in_vendored_tree(rel) && !config.path_ignored(&rel.to_string_lossy())
    });
    files.sort();
    files
}

/// Directories that hold other projects' files or build output, never this repository's own
/// run configurations (hadolint/Trivy/ripgrep skip them too): `node_modules`, `vendor`,
/// `third_party`/`third-party`, `target`, `.git`. Committed or not, they are skipped.
const VENDORED_DIRS: &[&str] = &[
    "node_modules",
    "vendor",
    "third_party",
    "third-party",
    "thirdparty",
    "target",
    ".git",
];

fn in_vendored_tree(rel: &Path) -> bool {
    let comps: Vec<_> = rel.components().collect();
    // The file's own name does not count, only the directories above it.
    comps.iter().take(comps.len().saturating_sub(1)).any(|c| {
        let n = c.as_os_str().to_string_lossy();
        VENDORED_DIRS.contains(&n.as_ref())
    })
}

/// The Helm chart directory a file is a template of: `CHART/templates/**.yaml` next to
/// `CHART/Chart.yaml`. Templates are Go text/template, not YAML, until `helm template` renders
/// them.
fn helm_chart_of(p: &Path) -> Option<PathBuf> {
    let mut dir = p.parent();
    while let Some(d) = dir {
        if d.file_name().is_some_and(|n| n == "templates") {
            let chart = d.parent()?;
            if chart.join("Chart.yaml").is_file() || chart.join("Chart.yml").is_file() {
                return Some(chart.to_path_buf());
            }
        }
        dir = d.parent();
    }
    None
}

/// Only the fenced code blocks of a Markdown file, prose blanked (lines kept): what the
/// suppression pass reads, so a pragma quoted in prose as an example is not a suppression.
pub fn markdown_code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let nl = &line[body.len()..];
        let t = body.trim_start();
        match fence {
            None if t.starts_with("```") || t.starts_with("~~~") => {
                fence = Some(if t.starts_with("```") { "```" } else { "~~~" });
            }
            Some(f) if t.starts_with(f) => fence = None,
            Some(_) => out.push_str(body),
            None => {}
        }
        out.push_str(nl);
    }
    out
}

pub fn cmd_lint(args: &LintArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let roots = if args.paths.is_empty() {
        vec![ctx.cwd.clone()]
    } else {
        args.paths.clone()
    };
    let mut all = Vec::new();
    let mut texts = Vec::new();
    let mut helm_charts: std::collections::BTreeSet<PathBuf> = Default::default();
    for root in &roots {
        let files = if root.is_dir() {
            discover(root, &ctx.config)
        } else if root.is_file() {
            // A file named on the command line (pre-commit passes the changed files).
            if classify(root, None).is_none() && !ctx.quiet {
                let text = crate::io_util::read_regular(root, 4 << 20).unwrap_or_default();
                if classify(root, Some(&String::from_utf8_lossy(&text))).is_none() {
                    eprintln!(
                        "note: {}: not a Dockerfile, compose file, Kubernetes manifest, script or Markdown file; skipped",
                        crate::report::escape::field(&ctx.display(root))
                    );
                }
            }
            vec![root.clone()]
        } else {
            // Missing: an error for this input; the others are still linted (exit 2).
            ctx.input_errors.borrow_mut().push(format!(
                "cannot read {}: no such file or directory",
                root.display()
            ));
            continue;
        };
        for p in files {
            lint_discovered(&p, ctx, &mut all, &mut texts, &mut helm_charts);
        }
    }
    Ok(finish(all, &texts, ctx))
}

/// Lint one file `lint` found (or was given), by its kind; files of no known kind, unreadable
/// files and Helm templates are skipped.
fn lint_discovered(
    p: &Path,
    ctx: &CommandContext,
    all: &mut Vec<Finding>,
    texts: &mut Vec<FileText>,
    helm_charts: &mut std::collections::BTreeSet<PathBuf>,
) {
    if let Some(chart) = helm_chart_of(p) {
        if helm_charts.insert(chart.clone()) && !ctx.quiet {
            let c = ctx.display(&chart);
            eprintln!(
                "note: {c}: Helm chart templates skipped (not YAML before rendering); check them with `helm template {c} | gpulint k8s -`"
            );
        }
        return;
    }
    // Regular files of at most 4 MiB only: checked on the opened handle before reading
    // (a FIFO or a link to /dev/zero is skipped, not read).
    let Ok(bytes) = crate::io_util::read_regular(p, 4 << 20) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let Some(kind) = classify(p, Some(&text)) else {
        return;
    };
    let file = ctx.display(p);
    match kind {
        FileKind::Dockerfile => {
            let opts = BuildOptions {
                context: p.parent().map(Path::to_path_buf),
                ..Default::default()
            };
            all.extend(analyze_dockerfile(&file, &text, &opts, ctx));
            let ranges = dockerfile::parse(&text)
                .instructions
                .iter()
                .map(|i| (i.start_line, i.end_line))
                .collect();
            texts.push(FileText {
                display: file,
                text,
                statements: Some(ranges),
            });
            return;
        }
        FileKind::Compose => {
            // A base file stands alone; its `.override.` files are not merged in.
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if n.contains(".override.") {
                return;
            }
            let (f, _) = compose_findings(&[(file.clone(), p.to_path_buf())], ctx);
            all.extend(f);
        }
        FileKind::K8s => all.extend(k8s_findings(&file, &text, ctx)),
        FileKind::Script => all.extend(script_findings(&file, &text, ctx)),
        FileKind::Markdown => {
            all.extend(script_findings(&file, &text, ctx));
            all.extend(markdown_yaml_findings(&file, &text, ctx));
            texts.push(FileText {
                text: markdown_code_only(&text),
                display: file,
                statements: None,
            });
            return;
        }
    }
    texts.push(FileText {
        display: file,
        text,
        statements: None,
    });
}

/// Check one file as `kind` (what `lint` does per file), without config or suppressions.
/// `display` is the path shown in findings.
pub fn lint_file(
    path: &Path,
    display: &str,
    kind: FileKind,
    ctx: &CommandContext,
) -> anyhow::Result<Vec<Finding>> {
    let text = read(path)?;
    Ok(match kind {
        FileKind::Dockerfile => {
            let opts = BuildOptions {
                context: path.parent().map(Path::to_path_buf),
                ..Default::default()
            };
            analyze_dockerfile(display, &text, &opts, ctx)
        }
        FileKind::Compose => compose_findings(&[(display.to_string(), path.to_path_buf())], ctx).0,
        FileKind::K8s => k8s_findings(display, &text, ctx),
        FileKind::Script => script_findings(display, &text, ctx),
        FileKind::Markdown => {
            let mut v = script_findings(display, &text, ctx);
            v.extend(markdown_yaml_findings(display, &text, ctx));
            v
        }
    })
}

/// YAML code blocks in Markdown: Kubernetes manifests or compose files, by content. Like
/// `docker run` lines in Markdown, their images are not scanned. Fences tagged `yaml`/`yml`,
/// and untagged fences whose content is a compose file (`services:`) or a manifest
/// (`apiVersion:` and `kind:`); prose is never read.
fn markdown_yaml_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let mut out = Vec::new();
    // (first body line, body, tagged as YAML)
    let mut block: Option<(u32, String, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match &mut block {
            None => {
                if t.starts_with("```") {
                    let lang = t.trim_start_matches('`').trim().to_ascii_lowercase();
                    if lang.starts_with("yaml") || lang.starts_with("yml") || lang.is_empty() {
                        block = Some((i as u32 + 2, String::new(), !lang.is_empty()));
                    }
                }
            }
            Some((start, body, tagged)) => {
                if t.starts_with("```") {
                    let start = *start;
                    let manifest = body.contains("kind:")
                        && (*tagged || body.lines().any(|l| l.starts_with("apiVersion:")));
                    // Pad so that lines match the Markdown file.
                    let padded = format!("{}{}", "\n".repeat(start as usize - 1), body);
                    if body.lines().any(|l| l.starts_with("services:")) {
                        // Compose: parse from the padded text.
                        let vars = shell::Vars::new();
                        if let Ok(cf) = compose::parse_file(file, Path::new(file), &padded, &vars) {
                            let specs =
                                compose::specs_from(&[cf], Path::new("."), &vars, &|_, _| None);
                            out.extend(run_checks(&Subject::Runs(&specs), ctx));
                        }
                    } else if manifest {
                        let (specs, _) = k8s::parse(file, &padded);
                        out.extend(run_checks(&Subject::Runs(&specs), ctx));
                    }
                    block = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// Debug view of a Dockerfile parse (for `ci/corpus.sh`'s BuildKit comparison):
/// `[{"cmd", "start_line", "end_line", "json", "flags", "value"}]`.
pub fn dump_dockerfile_json(text: &str) -> serde_json::Value {
    let df = dockerfile::parse(text);
    let ins: Vec<serde_json::Value> = df
        .instructions
        .iter()
        .map(|i| {
            serde_json::json!({
                "cmd": i.cmd,
                "start_line": i.start_line,
                "end_line": i.end_line,
                "json": i.json.is_some(),
                "flags": i.flags.iter().map(|f| match &f.value {
                    Some(v) => format!("--{}={}", f.name, v),
                    None => format!("--{}", f.name),
                }).collect::<Vec<_>>(),
                "heredocs": i.heredocs.iter().map(|h| h.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "instructions": ins,
        "errors": df.errors,
        "directives": df.directives.iter().map(|d| (d.0.clone(), d.1.clone())).collect::<Vec<_>>(),
    })
}

/// Helpers for rule tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::target::TargetGpu;

    pub(crate) fn ctx(targets: Vec<Target>) -> CommandContext {
        CommandContext::new(
            targets,
            Config::default(),
            crate::matrix::Matrix::embedded().unwrap(),
        )
        .unwrap()
    }

    /// A target with GPUs given by compute capability (`"9.0"`), one each.
    pub(crate) fn target(name: &str, ccs: &[&str], driver: Option<&str>) -> Target {
        Target {
            name: name.into(),
            driver: driver.map(|d| d.parse().unwrap()),
            driver_cuda: None,
            gpus: ccs
                .iter()
                .map(|c| TargetGpu {
                    name: format!("sm {c}"),
                    cc: Some(c.parse().unwrap()),
                    datacenter: Some(true),
                    uuid: None,
                    mig_mode: None,
                    count: Some(1),
                })
                .collect(),
            platform: None,
        }
    }

    pub(crate) fn dockerfile(text: &str, rule: &str, targets: Vec<Target>) -> Vec<Finding> {
        let c = ctx(targets);
        analyze_dockerfile("Dockerfile", text, &BuildOptions::default(), &c)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }

    /// `kind`: "sh", "md", "compose", "k8s".
    pub(crate) fn runs(kind: &str, text: &str, rule: &str, targets: Vec<Target>) -> Vec<Finding> {
        let c = ctx(targets);
        let specs = match kind {
            "sh" => runspec::scan_script("run.sh", text, false),
            "md" => runspec::scan_script("README.md", text, true),
            "k8s" => k8s::parse("pod.yaml", text).0,
            _ => {
                let vars = shell::Vars::new();
                let cf =
                    compose::parse_file("compose.yaml", Path::new("compose.yaml"), text, &vars)
                        .unwrap();
                compose::specs_from(&[cf], Path::new("."), &vars, &|_, _| None)
            }
        };
        run_checks(&Subject::Runs(&specs), &c)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_names_follow_hadolint_not_source_files() {
        for df in [
            "Dockerfile",
            "Containerfile",
            "Dockerfile.cuda12",
            "Dockerfile-gpu",
            "Dockerfile.cuda12.4",
            "train.Dockerfile",
        ] {
            assert_eq!(
                classify(Path::new(df), None),
                Some(FileKind::Dockerfile),
                "{df}"
            );
        }
        for not_df in [
            "dockerfile.rs",
            "src/spec/dockerfile.py",
            "Dockerfile.md",
            "Dockerfile.j2",
        ] {
            assert_ne!(
                classify(Path::new(not_df), None),
                Some(FileKind::Dockerfile),
                "{not_df}"
            );
        }
    }

    #[test]
    fn lint_skips_vendored_trees_and_helm_templates() {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, t: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        let bad =
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu121\n";
        w("node_modules/x/Dockerfile", bad);
        w("vendor/y/Dockerfile", bad);
        w("third_party/z/Dockerfile", bad);
        w("chart/Chart.yaml", "apiVersion: v2\nname: c\n");
        w(
            "chart/templates/deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.gpu }}\n",
        );
        w("app/Dockerfile", bad);
        let files = discover(d.path(), &Config::default());
        let rel: Vec<String> = files
            .iter()
            .map(|p| {
                p.strip_prefix(d.path())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        assert!(rel.contains(&"app/Dockerfile".to_string()), "{rel:?}");
        assert!(
            !rel.iter().any(|r| r.starts_with("node_modules")
                || r.starts_with("vendor")
                || r.starts_with("third_party")),
            "{rel:?}"
        );
        assert_eq!(
            helm_chart_of(&d.path().join("chart/templates/deploy.yaml")),
            Some(d.path().join("chart"))
        );
        assert_eq!(helm_chart_of(&d.path().join("app/templates/x.yaml")), None);
        let c = testutil::ctx(vec![]);
        let f = cmd_lint(
            &LintArgs {
                paths: vec![d.path().to_path_buf()],
            },
            &c,
        )
        .unwrap();
        assert!(f.iter().all(|f| f.rule != "GL100"), "{f:?}");
        assert!(f.iter().any(|f| f.rule == "GL101"), "{f:?}");
    }

    #[test]
    fn markdown_prose_pragmas_are_not_suppressions_and_untagged_compose_fences_are_read() {
        let md = "Write `# gpulint ignore=GL110` above a service to silence it.\n\n```\nservices:\n  app:\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    runtime: nvidia\n```\n";
        let code = markdown_code_only(md);
        assert_eq!(code.lines().count(), md.lines().count());
        assert!(!code.contains("gpulint ignore"));
        assert!(code.contains("runtime: nvidia"));
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("README.md"), md).unwrap();
        let c = testutil::ctx(vec![]);
        let f = cmd_lint(
            &LintArgs {
                paths: vec![d.path().to_path_buf()],
            },
            &c,
        )
        .unwrap();
        // The untagged fence is a compose file: its legacy runtime is reported, and the prose
        // "pragma" neither suppresses anything nor is reported unused.
        assert!(f.iter().any(|f| f.rule == "GL116"), "{f:?}");
        assert!(f.iter().all(|f| f.rule != "GL199"), "{f:?}");
    }
}
