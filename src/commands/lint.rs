//! `gpulint lint`: which files of a repository are Dockerfiles, compose files, Kubernetes
//! manifests, scripts or Markdown with run lines (hadolint/Trivy naming, `git ls-files` where
//! there is a work tree, vendored trees and Helm templates skipped), each linted as its kind.

use super::spec::*;
use crate::cli::LintArgs;
use crate::config::Config;
use crate::finding::Finding;
use crate::spec::build::BuildOptions;
use crate::spec::{compose, dockerfile, k8s, shell, Subject};
use crate::suppress::FileText;
use std::path::{Path, PathBuf};

/// What kind of file `lint` treats a path as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dockerfile,
    Compose,
    K8s,
    Script,
    Markdown,
    /// `docker-bake.hcl` / `docker-bake.json`.
    Bake,
    /// A CI pipeline (GitHub Actions workflow, `.gitlab-ci.yml`): its shell steps.
    CiYaml,
}

/// Classify by name, then by content for YAML and Markdown.
pub fn classify(path: &Path, text: Option<&str>) -> Option<FileKind> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if is_dockerfile_name(&name) {
        return Some(FileKind::Dockerfile);
    }
    if crate::spec::bake::is_bake_name(&name).is_some() {
        return Some(FileKind::Bake);
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
        let in_workflows = path
            .parent()
            .is_some_and(|d| d.ends_with(".github/workflows"));
        if in_workflows || name == ".gitlab-ci.yml" {
            return Some(FileKind::CiYaml);
        }
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

fn is_yaml_name(path: &Path) -> bool {
    path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy().to_ascii_lowercase();
        n.ends_with(".yaml") || n.ends_with(".yml")
    })
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
pub(crate) fn is_dockerfile_name(name: &str) -> bool {
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
/// (so .gitignore is respected exactly), else (or when git lists nothing) ripgrep's walker
/// (`ignore`): `.gitignore` and `.ignore` files inside `dir` are honoured without a `.git`,
/// hidden and vendored directories are not entered.
/// `config`'s `ignore-paths` (relative to its directory; `cwd` = what `dir` is relative to)
/// drop files too.
pub fn discover(dir: &Path, config: &Config, cwd: &Path) -> Vec<PathBuf> {
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
    if let Ok(o) = git.as_ref() {
        if o.status.success() {
            for f in o.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
                files.push(dir.join(String::from_utf8_lossy(f).as_ref()));
            }
        }
    }
    // Not a work tree, or `dir` itself is ignored by the tree around it (named explicitly, it
    // is linted, with its own ignore files).
    if files.is_empty() {
        files = walk_ignoring(dir);
    }
    files.retain(|p| {
        let rel = p.strip_prefix(dir).unwrap_or(p);
        !in_vendored_tree(rel) && !config.path_ignored(p, cwd)
    });
    files.sort();
    files
}

/// The walk outside a git work tree. Ignore files above `dir` are not read (the tree named is
/// the tree linted), nor the user's global git excludes: the result depends on `dir` only.
fn walk_ignoring(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let walk = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            // Hidden entries are skipped, but for the CI pipelines (`.github/workflows`,
            // `.gitlab-ci.yml`), which `git ls-files` lists in a work tree too.
            let hidden = name.starts_with('.') && name != ".github" && name != ".gitlab-ci.yml";
            e.depth() == 0
                || (!hidden
                    && (!e.file_type().is_some_and(|t| t.is_dir())
                        || !VENDORED_DIRS.contains(&name.as_ref())))
        })
        .build();
    for e in walk.flatten() {
        if e.file_type().is_some_and(|t| t.is_file()) {
            files.push(e.into_path());
        }
    }
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

pub(crate) fn in_vendored_tree(rel: &Path) -> bool {
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
pub(crate) fn helm_chart_of(p: &Path) -> Option<PathBuf> {
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

/// The shell steps of a CI pipeline, everything else blanked (lines kept, so findings point
/// into the YAML): GitHub Actions `run:` (inline or a `|` / `>` block) and GitLab
/// `script:` / `before_script:` / `after_script:` (a command or a list of them).
pub fn ci_shell_steps(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Inside a block: the key's indentation, and whether items are list entries (GitLab).
    let mut block: Option<(usize, bool)> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let nl = &line[body.len()..];
        let t = body.trim_start();
        let indent = body.len() - t.len();
        if let Some((key_indent, list)) = block {
            if t.is_empty() || t.starts_with('#') {
                out.push_str(nl);
                continue;
            }
            let item = t.strip_prefix("- ").filter(|_| list);
            if indent > key_indent || (list && indent == key_indent && item.is_some()) {
                match item {
                    Some(cmd) => out.push_str(unquote(cmd)),
                    None if list => {}
                    None => out.push_str(t),
                }
                out.push_str(nl);
                continue;
            }
            block = None;
        }
        let key = t.strip_prefix("- ").unwrap_or(t);
        let key_indent = indent + (t.len() - key.len());
        let found = ["run:", "script:", "before_script:", "after_script:"]
            .iter()
            .find_map(|k| key.strip_prefix(k).map(|v| (*k, v.trim())));
        if let Some((k, v)) = found {
            let list = k != "run:";
            if v.is_empty() || v.starts_with('|') || v.starts_with('>') {
                block = Some((key_indent, list));
            } else if !v.starts_with('[') {
                out.push_str(unquote(v));
            }
        }
        out.push_str(nl);
    }
    out
}

/// A YAML scalar written in quotes, without them.
fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if let Some(x) = v.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return x;
        }
    }
    v
}

pub fn cmd_lint(args: &LintArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let roots = if args.paths.is_empty() && args.found.is_empty() {
        vec![ctx.cwd.clone()]
    } else {
        args.paths.clone()
    };
    let mut all = Vec::new();
    let mut texts = Vec::new();
    let mut walked = args.walked.clone();
    let mut helm_charts: std::collections::BTreeSet<PathBuf> = Default::default();
    for root in &roots {
        // The tree a found file belongs to; None for a file named on the command line.
        let tree = root.is_dir().then_some(root.as_path());
        let files = if root.is_dir() {
            walked.push(root.clone());
            discover(root, &ctx.config, &ctx.cwd)
        } else if root.is_file() {
            // A file named on the command line (pre-commit passes the changed files).
            if classify(root, None).is_none() && !ctx.quiet {
                let text = crate::io_util::read_regular(root, MAX_LINTED_FILE).unwrap_or_default();
                if classify(root, Some(&String::from_utf8_lossy(&text))).is_none() {
                    eprintln!(
                        "note: {}: not a Dockerfile, compose file, Kubernetes manifest, script or Markdown file; skipped",
                        crate::report::escape::field(&ctx.display(root))
                    );
                }
            }
            vec![root.clone()]
        } else {
            // Missing (or not a file): an error for this input; the others are still linted
            // (exit 2).
            let why = if root.exists() {
                "not a regular file or directory"
            } else {
                "no such file or directory"
            };
            ctx.input_error(
                ctx.display(root),
                format!("cannot read {}: {why}", root.display()),
            );
            continue;
        };
        for p in files {
            lint_discovered(&p, tree, ctx, &mut all, &mut texts, &mut helm_charts);
        }
    }
    for (tree, p) in &args.found {
        lint_discovered(p, Some(tree), ctx, &mut all, &mut texts, &mut helm_charts);
    }
    Ok(finish_walked(all, &texts, &walked, ctx))
}

/// Lint one file `lint` found in `tree` (or was given: `tree` None), by its kind; files of no
/// known kind and Helm templates are skipped. A file of a lintable kind that cannot be read
/// (over the size bound, not a regular file, a link out of the tree, no permission) is never
/// skipped silently: named, it is an input error (exit 2); found, a GL000 warning in the
/// report. A found link into its tree is skipped (its target is linted under its own name); a
/// named one is read through when it stays in the repository.
pub(crate) fn lint_discovered(
    p: &Path,
    tree: Option<&Path>,
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
    // Only YAML needs its text to be classified: other names decide alone, so the source
    // files that make up most of a repository are never opened.
    if classify(p, None).is_none() && !is_yaml_name(p) {
        return;
    }
    let file = ctx.display(p);
    let is_link = p
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    let mut read_from = p.to_path_buf();
    if is_link {
        let within = |dir: &Path| crate::io_util::inside(dir, p);
        match tree {
            Some(t) if within(t) => return,
            None if within(&ctx.root) || within(&ctx.cwd) => {
                if let Ok(target) = p.canonicalize() {
                    read_from = target;
                }
            }
            _ => {}
        }
    }
    // Regular files of at most 4 MiB only: checked on the opened handle before reading
    // (a FIFO, a link out of the tree or a link to /dev/zero is not read). A larger YAML file
    // of no known name (a data file, most likely) is skipped with a note; any other file that
    // cannot be read is never a silent pass.
    let bytes = match crate::io_util::read_regular(&read_from, MAX_LINTED_FILE) {
        Ok(b) => b,
        Err(e) => {
            let too_large = std::fs::symlink_metadata(&read_from)
                .is_ok_and(|m| m.is_file() && m.len() > MAX_LINTED_FILE);
            if too_large && classify(p, None).is_none() {
                if !ctx.quiet {
                    eprintln!(
                        "note: {}: over {} MiB; not read, so not linted",
                        crate::report::escape::field(&file),
                        MAX_LINTED_FILE >> 20
                    );
                }
                return;
            }
            let message = format!("cannot read {file}: {e}; it was not linted");
            match tree {
                None => ctx.input_error(file, message),
                Some(_) => all.push(unreadable_finding(file, message)),
            }
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let Some(kind) = classify(p, Some(&text)) else {
        return;
    };
    match kind {
        FileKind::Dockerfile => {
            let opts = BuildOptions {
                context: p.parent().map(Path::to_path_buf),
                ..Default::default()
            };
            let parsed = dockerfile::parse(&text);
            let ranges = parsed
                .instructions
                .iter()
                .map(|i| (i.start_line, i.end_line))
                .collect();
            let bf = crate::spec::build::analyze_parsed(&file, parsed, &opts, &ctx.facts);
            all.extend(build_findings(&file, &bf, ctx));
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
        }
        _ => {}
    }
    all.extend(text_findings(p, &file, kind, &text, ctx));
    // Pragmas in Markdown count only inside its code blocks.
    let text = if kind == FileKind::Markdown {
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

/// The largest file `lint` reads (Dockerfiles, manifests, scripts are far smaller).
const MAX_LINTED_FILE: u64 = 4 << 20;

/// GL000 (a warning: the rest of the tree was linted) for a file found that could not be read.
fn unreadable_finding(file: String, message: String) -> Finding {
    crate::rules::image::gl000_unreadable_input::META
        .finding(message)
        .with_severity(crate::finding::Severity::Warning)
        .with_location(crate::finding::Location {
            file: Some(file),
            ..Default::default()
        })
        .with_help("Make the file readable and under 4 MiB, or exclude it with `ignore-paths`.")
}

/// Check one file as `kind` (what `lint` does per file), without config or suppressions.
/// `display` is the path shown in findings.
pub fn lint_file(
    path: &Path,
    display: &str,
    kind: FileKind,
    ctx: &CommandContext,
) -> anyhow::Result<Vec<Finding>> {
    Ok(text_findings(path, display, kind, &read(path)?, ctx))
}

/// The findings of one file of `kind` whose content is `text` (before the post-pass): what
/// `lint` and [`lint_file`] both run.
fn text_findings(
    path: &Path,
    display: &str,
    kind: FileKind,
    text: &str,
    ctx: &CommandContext,
) -> Vec<Finding> {
    match kind {
        FileKind::Dockerfile => {
            let opts = BuildOptions {
                context: path.parent().map(Path::to_path_buf),
                ..Default::default()
            };
            analyze_dockerfile(display, text, &opts, ctx)
        }
        FileKind::Compose => compose_findings(&[(display.to_string(), path.to_path_buf())], ctx).0,
        FileKind::K8s => k8s_findings(display, text, ctx),
        FileKind::Script => shell_findings(path, display, text, ctx),
        FileKind::Bake => bake_findings(path, display, text, ctx),
        FileKind::CiYaml => shell_findings(path, display, &ci_shell_steps(text), ctx),
        FileKind::Markdown => {
            let mut v = shell_findings(path, display, text, ctx);
            v.extend(markdown_yaml_findings(display, text, ctx));
            v
        }
    }
}

/// YAML code blocks in Markdown: Kubernetes manifests or compose files, by content. Like
/// `docker run` lines in Markdown, their images are not scanned. Fences tagged `yaml`/`yml`,
/// and untagged fences whose content is a compose file (`services:`) or a manifest
/// (`apiVersion:` and `kind:`); prose is never read.
pub(crate) fn markdown_yaml_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let mut out = Vec::new();
    // Every block's services: one document repeating a configuration in several snippets
    // gets one finding per problem (as its repeated `docker run` lines do).
    let mut all_specs = Vec::new();
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
                            all_specs.extend(specs);
                        }
                    } else if manifest {
                        let (specs, _) = k8s::parse(file, &padded);
                        out.extend(run_checks(&Subject::Runs(&specs), ctx));
                        all_specs.extend(specs);
                    }
                    block = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    crate::rules::spec::mark_repeats(out, &all_specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::testutil;

    /// Writes `text` at `rel` under `root`, creating the directories on the way.
    fn write_file(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

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
        let w = |rel: &str, t: &str| write_file(d.path(), rel, t);
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
        let files = discover(d.path(), &Config::default(), d.path());
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
                ..Default::default()
            },
            &c,
        )
        .unwrap();
        assert!(f.iter().all(|f| f.rule != "GL100"), "{f:?}");
        assert!(f.iter().any(|f| f.rule == "GL101"), "{f:?}");
    }

    #[test]
    fn discovery_outside_git_honours_gitignore() {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, t: &str| write_file(d.path(), rel, t);
        let df = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n";
        w(".gitignore", "build/\n*.generated.Dockerfile\n");
        w("build/Dockerfile", df);
        w("docker/x.generated.Dockerfile", df);
        w("docker/Dockerfile", df);
        w("sub/.gitignore", "local/\n");
        w("sub/local/Dockerfile", df);
        w("sub/Dockerfile", df);
        w(".hidden/Dockerfile", df);
        let rel = |files: Vec<PathBuf>| -> Vec<String> {
            files
                .iter()
                .map(|p| {
                    p.strip_prefix(d.path())
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/")
                })
                .collect()
        };
        // The walker itself (a temp dir is not in a git work tree, but make sure of it).
        let walked = rel(walk_ignoring(d.path()));
        assert!(
            walked.contains(&"docker/Dockerfile".to_string()),
            "{walked:?}"
        );
        assert!(walked.contains(&"sub/Dockerfile".to_string()), "{walked:?}");
        for skipped in [
            "build/Dockerfile",
            "docker/x.generated.Dockerfile",
            "sub/local/Dockerfile",
            ".hidden/Dockerfile",
        ] {
            assert!(
                !walked.contains(&skipped.to_string()),
                "{skipped}: {walked:?}"
            );
        }
        let found = rel(discover(d.path(), &Config::default(), d.path()));
        assert!(
            !found.contains(&"build/Dockerfile".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"docker/Dockerfile".to_string()),
            "{found:?}"
        );
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
                ..Default::default()
            },
            &c,
        )
        .unwrap();
        // The untagged fence is a compose file: its legacy runtime is reported, and the prose
        // "pragma" neither suppresses anything nor is reported unused.
        assert!(f.iter().any(|f| f.rule == "GL116"), "{f:?}");
        assert!(f.iter().all(|f| f.rule != "GL199"), "{f:?}");
    }

    /// Lints a tree holding `docker/Dockerfile` (a supported CUDA by default, from
    /// `ARG CUDA`) and `rel`, which builds it with `CUDA=11.3.1`: the one GL109 that causes,
    /// reported in `rel` (the Dockerfile alone reports nothing).
    fn eol_through_build_arg(rel: &str, text: &str) -> Finding {
        let d = tempfile::tempdir().unwrap();
        write_file(
            d.path(),
            "docker/Dockerfile",
            "ARG CUDA=12.4.1\nFROM nvidia/cuda:${CUDA}-devel-ubuntu22.04\nRUN true\n",
        );
        write_file(d.path(), rel, text);
        let c = CommandContext {
            cwd: d.path().to_path_buf(),
            ..testutil::ctx(vec![])
        };
        let args = LintArgs {
            paths: vec![d.path().to_path_buf()],
            ..Default::default()
        };
        let f = cmd_lint(&args, &c).unwrap();
        let eol: Vec<&Finding> = f.iter().filter(|f| f.rule == "GL109").collect();
        assert_eq!(eol.len(), 1, "{f:?}");
        let file = eol[0].location.as_ref().and_then(|l| l.file.clone());
        assert!(file.unwrap_or_default().ends_with(rel), "{:?}", eol[0]);
        eol[0].clone()
    }

    #[test]
    fn docker_build_args_in_a_script_flow_into_its_dockerfile() {
        // Relative to the script's directory.
        let f = eol_through_build_arg(
            "scripts/build.sh",
            "#!/bin/sh\ndocker build -f ../docker/Dockerfile --build-arg CUDA=11.3.1 -t app ..\n",
        );
        assert_eq!(f.location.as_ref().unwrap().line, Some(2));
        let m = "with build arg `CUDA=11.3.1` of `docker build`";
        assert!(f.message.starts_with(m), "{}", f.message);
    }

    /// Thousands of `docker build` lines cost a bounded number of Dockerfile analyses: each
    /// (Dockerfile, args, stage) once, at most 64 per file (the rest noted on stderr).
    #[test]
    fn build_analyses_per_file_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        write_file(
            d.path(),
            "docker/Dockerfile",
            "ARG CUDA=12.4.1\nARG N=0\nFROM nvidia/cuda:${CUDA}-devel-ubuntu22.04\nRUN echo $N\n",
        );
        // 200 distinct builds, each of an end-of-life CUDA, plus the first repeated 200 times.
        let mut script = String::from("#!/bin/sh\n");
        for n in 0..200 {
            script.push_str(&format!(
                "docker build -f docker/Dockerfile --build-arg CUDA=11.3.1 --build-arg N={n} .\n"
            ));
        }
        for _ in 0..200 {
            script.push_str(
                "docker build -f docker/Dockerfile --build-arg CUDA=11.3.1 --build-arg N=0 .\n",
            );
        }
        let c = CommandContext {
            cwd: d.path().to_path_buf(),
            quiet: true,
            ..testutil::ctx(vec![])
        };
        let p = d.path().join("build.sh");
        std::fs::write(&p, &script).unwrap();
        let f = crate::commands::spec::script_build_findings(&p, "build.sh", &script, &c);
        let eol = f.iter().filter(|f| f.rule == "GL109").count();
        assert_eq!(eol, 64, "{eol}");
    }

    #[test]
    fn ci_shell_steps_keep_lines_and_only_commands() {
        let gh = "on: push\njobs:\n  b:\n    steps:\n      - uses: actions/checkout@v4\n      - run: docker build --build-arg A=1 .\n      - name: gpu\n        run: |\n          docker build \\\n            --build-arg CUDA=11.3.1 .\n\n          echo done\n      - run: 'docker run --gpus all x:1'\nenv:\n  X: docker build\n";
        let s = ci_shell_steps(gh);
        assert_eq!(s.lines().count(), gh.lines().count());
        let l: Vec<&str> = s.lines().collect();
        assert_eq!(l[5], "docker build --build-arg A=1 .");
        assert_eq!(l[8].trim(), "docker build \\");
        assert_eq!(l[9].trim(), "--build-arg CUDA=11.3.1 .");
        assert_eq!(l[11].trim(), "echo done");
        assert_eq!(l[12], "docker run --gpus all x:1");
        assert!(l[14].is_empty() && l[4].is_empty());
        let gl = "build:\n  image: docker:24\n  script:\n    - docker build --build-arg CUDA=11.3.1 .\n    - \"docker push x\"\n  tags: [gpu]\n";
        let s = ci_shell_steps(gl);
        let l: Vec<&str> = s.lines().collect();
        assert_eq!(l[3], "docker build --build-arg CUDA=11.3.1 .");
        assert_eq!(l[4], "docker push x");
        assert!(l[5].is_empty() && l[1].is_empty());
        assert_eq!(
            classify(Path::new("repo/.github/workflows/ci.yml"), None),
            Some(FileKind::CiYaml)
        );
    }

    #[test]
    fn docker_build_args_in_a_workflow_flow_into_its_dockerfile() {
        // Relative to where gpulint runs (the repository root, where CI runs it).
        let f = eol_through_build_arg(
            ".github/workflows/image.yml",
            "jobs:\n  b:\n    steps:\n      - run: |\n          docker build -f docker/Dockerfile \\\n            --build-arg CUDA=11.3.1 docker\n",
        );
        assert_eq!(f.location.as_ref().unwrap().line, Some(6));
    }

    #[test]
    fn bake_targets_are_built_with_their_args() {
        let f = eol_through_build_arg(
            "docker-bake.hcl",
            "target \"gpu\" {\n  context = \"docker\"\n  matrix = {\n    cuda = [\"12.4.1\", \"11.3.1\"]\n  }\n  name = \"gpu-${cuda}\"\n  args = {\n    CUDA = \"${cuda}\"\n  }\n}\n",
        );
        // At the matrix value that causes it.
        assert_eq!(f.location.as_ref().unwrap().line, Some(4));
        let m = "with build arg `CUDA=11.3.1` of bake target `gpu-11.3.1`";
        assert!(f.message.starts_with(m), "{}", f.message);
    }

    #[test]
    fn a_document_repeating_a_compose_snippet_gets_one_finding() {
        let block = |name: &str| {
            format!("```yaml\nservices:\n  {name}:\n    image: tensorflow/serving:2.11.0-gpu\n#    runtime: nvidia\n    environment:\n      CUDA_VISIBLE_DEVICES: 0\n```\n")
        };
        let md = format!("# app\n{}\n# serving\n{}", block("app"), block("serving"));
        let c = testutil::ctx(vec![]);
        let found = markdown_yaml_findings("README.md", &md, &c);
        let f: Vec<Finding> = crate::finding::merge_repeats(found)
            .into_iter()
            .filter(|f| f.rule == "GL117")
            .collect();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(8));
        assert!(
            f[0].message.contains("`serving` (line 18)"),
            "{}",
            f[0].message
        );
    }
}
