//! Which files of a repository `lint` reads, and as what: Dockerfiles, compose files,
//! Kubernetes manifests, scripts, Markdown, bake files and CI pipelines (hadolint/Trivy naming,
//! `git ls-files` where there is a work tree, vendored trees and Helm templates skipped), and
//! the parts of Markdown and CI files that hold shell. Kept apart from the linting so that the
//! spec commands can find files without depending on `lint`.

use crate::config::Config;
use crate::runconfig::compose;
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
    if crate::runconfig::bake::is_bake_name(&name).is_some() {
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

pub(super) fn is_yaml_name(path: &Path) -> bool {
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
pub(super) fn walk_ignoring(dir: &Path) -> Vec<PathBuf> {
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

/// A linted file's text as the suppression pass reads its pragmas: in Markdown only the
/// code blocks count, so the rest is blanked first.
pub fn pragma_text(display: String, text: String, markdown: bool) -> crate::suppress::FileText {
    let (text, original) = if markdown {
        (markdown_code_only(&text), Some(text))
    } else {
        (text, None)
    };
    crate::suppress::FileText {
        display,
        text,
        statements: None,
        original,
    }
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
