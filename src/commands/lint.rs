//! `gpulint lint`: which files of a repository are Dockerfiles, compose files, Kubernetes
//! manifests, scripts or Markdown with run lines (hadolint/Trivy naming, `git ls-files` where
//! there is a work tree, vendored trees and Helm templates skipped), each linted as its kind.

use super::context::read;
use super::runconfig::*;
use crate::cli::LintArgs;
use crate::finding::Finding;
use crate::runconfig::build::BuildOptions;
use crate::runconfig::{compose, dockerfile, k8s, shell, Subject};
use crate::suppress::FileText;
use std::path::{Path, PathBuf};

use super::discover::{helm_chart_of, is_yaml_name};
// Discovery lived here first; its public paths stay.
pub use super::discover::{ci_shell_steps, classify, discover, markdown_code_only, FileKind};

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
            let bf = crate::runconfig::build::analyze_parsed(&file, parsed, &opts, &ctx.facts);
            all.extend(build_findings(&file, &bf, ctx));
            texts.push(FileText {
                display: file,
                text,
                statements: Some(ranges),
                original: None,
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
    texts.push(super::discover::pragma_text(
        file,
        text,
        kind == FileKind::Markdown,
    ));
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
                            let specs = resolved(
                                compose::specs_from(&[cf], Path::new("."), &vars, &|_, _| None),
                                ctx,
                            );
                            out.extend(run_checks(Subject::Runs(&specs), ctx));
                            all_specs.extend(specs);
                        }
                    } else if manifest {
                        let specs = resolved(k8s::parse(file, &padded).0, ctx);
                        out.extend(run_checks(Subject::Runs(&specs), ctx));
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
    crate::rules::runconfig::mark_repeats(out, &all_specs)
}

#[cfg(test)]
mod tests {
    use super::super::discover::walk_ignoring;
    use super::*;
    use crate::config::Config;
    use crate::runconfig::testutil;

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
            "src/runconfig/dockerfile.py",
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
        let f = crate::commands::runconfig::script_build_findings(&p, "build.sh", &script, &c);
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
