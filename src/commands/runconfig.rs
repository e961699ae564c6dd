//! The Dockerfile, compose, Kubernetes and `docker run` commands: read each input, parse it
//! into spec facts (`crate::runconfig`), run the GL1xx rules over it (and, with `--scan-images`, the
//! image rules over the images it names), then the one post-pass (configuration, severity
//! overrides, suppressions). Unreadable input is recorded as an input error (exit 2, the other
//! inputs are still linted); input that is read but does not parse is a GL100 finding at its
//! file:line:col.

pub use super::context::{CommandContext, InputError};
use super::scan_images;
use crate::cli::{ComposeArgs, DockerfileArgs, K8sArgs, RunArgs};
use crate::finding::Finding;
use crate::runconfig::build::{self, BuildOptions, SpecError};
use crate::runconfig::runspec::{self, RunSpec};
use crate::runconfig::{compose, dockerfile, k8s, loc, pkg, Script, SpecContext, Subject};
use crate::suppress::FileText;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod scripts;
pub(crate) use scripts::*;

pub(crate) fn error_finding(file: &str, e: &SpecError) -> Finding {
    crate::rules::runconfig::gl100_invalid_spec_file::META
        .finding(e.message.clone())
        .with_location(loc(file, e.pos))
}

/// Run specs as the rules see them: each image resolved once against the command's facts.
pub(crate) fn resolved(mut specs: Vec<RunSpec>, ctx: &CommandContext) -> Vec<RunSpec> {
    runspec::resolve_images(&mut specs, &ctx.facts);
    specs
}

/// Every enabled GL1xx check of the rule table on one subject.
pub(crate) fn run_checks(subject: Subject<'_>, ctx: &CommandContext) -> Vec<Finding> {
    run_checks_against(subject, &ctx.targets, ctx)
}

/// [`run_checks`] against these targets instead of the command's.
pub(crate) fn run_checks_against(
    subject: Subject<'_>,
    targets: &[crate::gpu_target::Target],
    ctx: &CommandContext,
) -> Vec<Finding> {
    if let Subject::Runs(specs) = &subject {
        debug_assert!(
            specs
                .iter()
                .all(|r| r.image.as_ref().is_none_or(|i| i.is_resolved())),
            "run specs reach the rules through `resolved`"
        );
    }
    let cx = SpecContext {
        subject,
        targets,
        facts: &ctx.facts,
    };
    let mut out = Vec::new();
    for (meta, check) in crate::rules::spec_checks() {
        if !ctx.config.rule_enabled(&meta.code) {
            continue;
        }
        check(&cx, &mut out);
    }
    match cx.subject {
        Subject::Runs(specs) => crate::rules::runconfig::mark_repeats(out, specs),
        Subject::Dockerfile(_) | Subject::Script(_) => out,
    }
}

/// The GL1xx checks on run specs, plus the image checks on the images they name when
/// `--scan-images` is on.
pub(crate) fn runs_checks(specs: &[RunSpec], ctx: &CommandContext) -> Vec<Finding> {
    // Pools from the cluster: each Kubernetes workload against the pools it can land on.
    if let Some(fleet) = ctx.fleet.as_deref() {
        return super::fleet::matched_runs_checks(specs, fleet, ctx, &|some, targets| {
            let mut out = run_checks_against(Subject::Runs(some), targets, ctx);
            out.extend(scan_images::findings(
                some,
                ctx.scan_images.as_ref(),
                targets,
                &ctx.facts,
            ));
            out
        });
    }
    let mut out = run_checks(Subject::Runs(specs), ctx);
    out.extend(scan_images::findings(
        specs,
        ctx.scan_images.as_ref(),
        &ctx.targets,
        &ctx.facts,
    ));
    out
}

/// Parse `KEY=VALUE` build args; `KEY` alone takes the value from the environment.
pub(crate) fn build_args(list: &[String]) -> BTreeMap<String, String> {
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
    build_findings(file, &build::analyze(file, text, opts, &ctx.facts), ctx)
}

/// GL100 for what does not parse, then the GL1xx checks, on one analyzed Dockerfile.
pub(crate) fn build_findings(
    file: &str,
    bf: &build::BuildFacts,
    ctx: &CommandContext,
) -> Vec<Finding> {
    if let Some(at) = crate::runconfig::template::dockerfile_action(&bf.df) {
        return vec![
            crate::rules::runconfig::gl100_invalid_spec_file::template_finding(
                file,
                at,
                "fill in the template, then `gpulint dockerfile <rendered Dockerfile>`",
            ),
        ];
    }
    let mut out: Vec<Finding> = bf
        .errors
        .iter()
        .map(|e| {
            crate::rules::runconfig::gl100_invalid_spec_file::fragment_finding(error_finding(
                file, e,
            ))
        })
        .collect();
    out.extend(run_checks(Subject::Dockerfile(bf), ctx));
    out
}

/// Finish a command: config (enable/severity), suppressions, deterministic order.
pub(crate) fn finish(
    findings: Vec<Finding>,
    texts: &[FileText],
    ctx: &CommandContext,
) -> Vec<Finding> {
    finish_walked(findings, texts, &[], ctx)
}

/// [`finish`] for a run that also checked the directories `walked` whole.
pub(crate) fn finish_walked(
    mut findings: Vec<Finding>,
    texts: &[FileText],
    walked: &[PathBuf],
    ctx: &CommandContext,
) -> Vec<Finding> {
    ctx.checked.set(ctx.checked.get() + texts.len());
    ctx.remember_linted(texts);
    // Torch-build and arch-list fixes that are edits of a Dockerfile (statement ranges mark
    // one) get them.
    for t in texts.iter().filter(|t| t.statements.is_some()) {
        crate::fix::suggest::dockerfile_edit::attach(&mut findings, &t.display, &t.text);
        crate::fix::suggest::arch_list_edit::attach(&mut findings, &t.display, &t.text);
    }
    // Run-configuration fixes (GPU request, shared memory, legacy runtime) planned by the
    // rules become edits of the compose, Kubernetes and script texts.
    for t in texts.iter().filter(|t| t.statements.is_none()) {
        match &t.original {
            // Markdown: the edits are of the file, its shell read from the code blocks.
            Some(own) => crate::fix::runconfig_edit::attach(&mut findings, &t.display, own, true),
            None => crate::fix::runconfig_edit::attach(&mut findings, &t.display, &t.text, false),
        }
    }
    let locate = |shown: &str| crate::report::paths::absolute(shown, &ctx.root, &ctx.cwd);
    let mut f = crate::suppress::apply(findings, texts, walked, &ctx.config, &ctx.cwd, &locate);
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
        let Some(text) = ctx.read_or_record(p) else {
            continue;
        };
        let file = ctx.display(p);
        let parsed = dockerfile::parse(&text);
        // BuildKit refuses both: "the Dockerfile cannot be empty", "target stage … could not
        // be found". Linting on would judge a build that cannot happen.
        if parsed.instructions.is_empty() {
            ctx.input_error(
                file.clone(),
                format!("{file}: the Dockerfile is empty (no instructions); a build refuses it"),
            );
            continue;
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
        // One parse and one analysis per file: every stage is kept whatever the target.
        let ranges = parsed
            .instructions
            .iter()
            .map(|i| (i.start_line, i.end_line))
            .collect();
        let bf = build::analyze_parsed(&file, parsed, &opts, &ctx.facts);
        if let Some(t) = &args.target {
            let wanted = t.to_ascii_lowercase();
            if !bf
                .stages
                .iter()
                .any(|s| s.name.as_deref() == Some(wanted.as_str()))
            {
                let names: Vec<&str> = bf.stages.iter().filter_map(|s| s.name.as_deref()).collect();
                ctx.input_error(
                    file.clone(),
                    format!(
                        "{file}: --target {t:?}: no such build stage (named stages: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
                continue;
            }
        }
        all.extend(build_findings(&file, &bf, ctx));
        texts.push(FileText {
            display: file,
            text,
            statements: Some(ranges),
            original: None,
        });
    }
    Ok(finish(all, &texts, ctx))
}

/// Whether the image a Dockerfile builds is meant for a GPU (CUDA base or CUDA torch).
pub(crate) fn dockerfile_is_gpu(ctx: &CommandContext, context: &Path, df: &Path) -> Option<bool> {
    dockerfile_is_gpu_with(ctx, context, df, &BTreeMap::new())
}

/// [`dockerfile_is_gpu`] for a build given `build_args` (`--build-arg`, compose `build.args`).
fn dockerfile_is_gpu_with(
    ctx: &CommandContext,
    context: &Path,
    df: &Path,
    build_args: &BTreeMap<String, String>,
) -> Option<bool> {
    // Named by an untrusted compose file: a regular file, bounded, opened without blocking.
    let text = crate::io_util::read_regular_string(df, crate::io_util::MAX_CONFIG_FILE).ok()?;
    let bf = build::analyze(
        "",
        &text,
        &BuildOptions {
            context: Some(context.to_path_buf()),
            build_args: build_args.clone(),
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
                .any(|p| p.name == "pytorch-cuda" || p.name == "cudatoolkit"),
            _ => false,
        })
    });
    Some(torch)
}

/// Build arguments by name (a name given twice: the last value, as `docker build` takes it).
fn arg_map(
    args: &[(String, String, crate::runconfig::dockerfile::Pos)],
) -> BTreeMap<String, String> {
    args.iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect()
}

/// Who passes build arguments, and where: a compose service or a script's `docker build`.
struct ArgSource<'a> {
    /// `service `app``, `` `docker build` ``.
    who: String,
    file: &'a str,
    args: &'a [(String, String, crate::runconfig::dockerfile::Pos)],
    target: Option<String>,
}

/// What build arguments (a service's `build.args`, a script's `docker build --build-arg`)
/// change in their Dockerfile's findings: the Dockerfile is analyzed with and without them,
/// and each finding only the arguments cause is reported at the argument (the Dockerfile
/// alone is linted on its own defaults).
fn build_arg_findings(
    ctx: &CommandContext,
    src: &ArgSource,
    cdir: &Path,
    dfp: &Path,
    args: &BTreeMap<String, String>,
) -> Vec<Finding> {
    let Ok(text) = crate::io_util::read_regular_string(dfp, crate::io_util::MAX_CONFIG_FILE) else {
        return Vec::new();
    };
    let shown = ctx.display(dfp);
    let analyze = |build_args: BTreeMap<String, String>| {
        let opts = BuildOptions {
            build_args,
            context: Some(cdir.to_path_buf()),
            target: src.target.clone(),
        };
        let bf = build::analyze(&shown, &text, &opts, &ctx.facts);
        run_checks(Subject::Dockerfile(&bf), ctx)
    };
    let plain = analyze(BTreeMap::new());
    let key = |f: &Finding| (f.rule, f.message.clone());
    let seen: std::collections::BTreeSet<_> = plain.iter().map(key).collect();
    let mut out = Vec::new();
    for mut f in analyze(args.clone()) {
        if seen.contains(&key(&f)) {
            continue;
        }
        // The argument the finding names (its value or its name), else the first one.
        let (k, v, p) = src
            .args
            .iter()
            .find(|(_, v, _)| !v.is_empty() && f.message.contains(v.as_str()))
            .or_else(|| {
                src.args
                    .iter()
                    .find(|(k, _, _)| f.message.contains(k.as_str()))
            })
            .unwrap_or(&src.args[0]);
        let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
        f.message = format!(
            "with build arg `{k}={v}` of {}, {shown}:{line}: {}",
            src.who, f.message
        );
        f.location = Some(loc(src.file, *p));
        out.push(f);
    }
    out
}

pub(crate) fn compose_findings(
    files: &[(String, PathBuf)],
    ctx: &CommandContext,
) -> (Vec<Finding>, Vec<FileText>) {
    let (specs, errors) = compose::load(files, &|c, d| dockerfile_is_gpu(ctx, c, d));
    let mut specs = resolved(specs, ctx);
    let mut out: Vec<Finding> = errors.iter().map(|(f, e)| error_finding(f, e)).collect();
    // A templated compose file is said once; its own errors and services are not judged.
    let templates = crate::rules::runconfig::gl100_invalid_spec_file::compose_templates(
        files, &mut out, &errors,
    );
    specs.retain(|r| !templates.contains(&r.file));
    for r in specs.iter_mut().filter(|r| !r.build_args.is_empty()) {
        let Some((cdir, dfp)) = r.build_files.clone() else {
            continue;
        };
        let args = arg_map(&r.build_args);
        r.built_gpu_image = dockerfile_is_gpu_with(ctx, &cdir, &dfp, &args);
        let src = ArgSource {
            who: format!("service `{}`", r.name),
            file: &r.file,
            args: &r.build_args,
            target: None,
        };
        out.extend(build_arg_findings(ctx, &src, &cdir, &dfp, &args));
    }
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
                    original: None,
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
    // A missing file is an error for that input (GL000 in the report, exit 2); the others
    // are still linted.
    files.retain(|f| {
        let found = f.is_file();
        if !found {
            ctx.input_error(
                ctx.display(f),
                format!("cannot read {}: no such file", f.display()),
            );
        }
        found
    });
    let named: Vec<(String, PathBuf)> = files.iter().map(|p| (ctx.display(p), p.clone())).collect();
    let (out, texts) = compose_findings(&named, ctx);
    Ok(finish(out, &texts, ctx))
}

pub(crate) fn k8s_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let (specs, errors) = k8s::parse(file, text);
    if let Some(at) = crate::runconfig::template::yaml_action(text, errors.is_empty()) {
        return vec![
            crate::rules::runconfig::gl100_invalid_spec_file::template_finding(
                file,
                at,
                "`helm template <chart> | gpulint k8s -` (or your renderer's output)",
            ),
        ];
    }
    let specs = resolved(specs, ctx);
    let mut out: Vec<Finding> = errors.iter().map(|e| error_finding(file, e)).collect();
    out.extend(runs_checks(&specs, ctx));
    out
}

pub fn cmd_k8s(args: &K8sArgs, ctx: &CommandContext) -> anyhow::Result<Vec<Finding>> {
    let mut all = Vec::new();
    let mut texts = Vec::new();
    for p in &args.files {
        let Some(text) = ctx.read_or_record(p) else {
            continue;
        };
        let file = if p == Path::new("-") {
            "<stdin>".to_string()
        } else {
            ctx.display(p)
        };
        // A file named as a manifest that holds none (a Helm values file, a template before
        // `helm template`) is said so, not passed over in silence.
        // `kubectl get … -o json` lists are manifests too.
        let has_kind = |l: &str| {
            let l = l.trim_start();
            l.starts_with("kind:") || l.starts_with("\"kind\"")
        };
        if !ctx.quiet && !text.lines().any(has_kind) {
            eprintln!(
                "note: {}: no Kubernetes object in it (a Helm values file or an unrendered template?); nothing checked",
                crate::report::escape::field(&file)
            );
        }
        all.extend(k8s_findings(&file, &text, ctx));
        texts.push(FileText {
            display: file,
            text,
            statements: None,
            original: None,
        });
    }
    Ok(finish(all, &texts, ctx))
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
        let specs = resolved(runspec::scan_script("<command line>", &line, false), ctx);
        if specs.is_empty() {
            anyhow::bail!("not a container start: expected `docker run …`, `podman run …` or `nvidia-docker run …`");
        }
        ctx.checked.set(ctx.checked.get() + 1);
        all.extend(runs_checks(&specs, ctx));
    }
    for p in run_files(&args.files, ctx) {
        let Some(text) = ctx.read_or_record(&p) else {
            continue;
        };
        let file = ctx.display(&p);
        all.extend(shell_findings(&p, &file, &text, ctx));
        let markdown = is_markdown_name(&file);
        texts.push(super::discover::pragma_text(file, text, markdown));
    }
    if args.argv.is_empty() && args.files.is_empty() {
        anyhow::bail!("nothing to check: give `--file SCRIPT` or `-- docker run …`");
    }
    Ok(finish(all, &texts, ctx))
}

/// The files `run --file` reads: a file as given; a directory stands for the scripts and
/// Markdown files in it, found as `lint` finds files (so the Action's and the GitLab job's
/// default target, the repository, works for `run` too).
fn run_files(given: &[PathBuf], ctx: &CommandContext) -> Vec<PathBuf> {
    use super::discover::{classify, discover, FileKind};
    let mut out = Vec::new();
    for p in given {
        if p.is_dir() {
            out.extend(discover(p, &ctx.config, &ctx.cwd).into_iter().filter(|f| {
                matches!(
                    classify(f, None),
                    Some(FileKind::Script | FileKind::Markdown)
                )
            }));
        } else {
            out.push(p.clone());
        }
    }
    out
}

pub(crate) fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=/.:,@%+".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runconfig::testutil::{ctx, target};

    /// A script's own lines (a package install, an `export`) are a subject of the rule table:
    /// GL106 and GL116 judge them through `run_checks`, each switched off by its own setting
    /// like every other rule, and a Markdown document's `export` lines stay examples.
    #[test]
    fn script_lines_are_judged_through_the_rule_table() {
        let sh = "sudo apt-get install -y nvidia-docker2\ndocker run --gpus all -v /usr/cuda_files:/usr/cuda_files img bash\nexport LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/cuda_files/\n";
        let runs = runspec::scan_script("start.sh", sh, false);
        let script = Script {
            file: "start.sh",
            text: sh,
            markdown: false,
            runs: &runs,
        };
        let mut c = ctx(vec![]);
        let lines = |f: &[Finding], rule: &str| -> Vec<u32> {
            f.iter()
                .filter(|x| x.rule == rule)
                .map(|x| x.location.as_ref().unwrap().line.unwrap())
                .collect()
        };
        let f = run_checks(Subject::Script(&script), &c);
        assert_eq!(lines(&f, "GL116"), vec![1], "{f:?}");
        assert_eq!(lines(&f, "GL106"), vec![3], "{f:?}");
        assert_eq!(f.len(), 2, "{f:?}");
        // The same through the command's script path, with GL116 off in the config.
        c.config
            .rules
            .insert("GL116".into(), crate::config::RuleSetting::Off);
        let f = script_findings("start.sh", sh, &c);
        assert!(lines(&f, "GL116").is_empty(), "{f:?}");
        assert_eq!(lines(&f, "GL106"), vec![3], "{f:?}");
        let md = format!("```sh\n{sh}```\n");
        let f = script_findings("README.md", &md, &ctx(vec![]));
        assert_eq!(lines(&f, "GL116"), vec![2], "{f:?}");
        assert!(lines(&f, "GL106").is_empty(), "{f:?}");
    }

    #[test]
    fn compose_build_args_flow_into_the_dockerfile() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Dockerfile"),
            "ARG CUDA=12.4.1\nFROM nvidia/cuda:${CUDA}-devel-ubuntu22.04\nARG TORCH_CUDA_ARCH_LIST=\"8.0;9.0\"\nRUN pip install flash-attn\n",
        )
        .unwrap();
        let compose = d.path().join("compose.yaml");
        std::fs::write(
            &compose,
            "services:\n  train:\n    build:\n      context: .\n      args:\n        CUDA: 11.3.1\n        TORCH_CUDA_ARCH_LIST: \"7.5\"\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              capabilities: [gpu]\n",
        )
        .unwrap();
        let c = ctx(vec![target("h100", &["9.0"], None)]);
        let (f, _) = compose_findings(&[("compose.yaml".into(), compose.clone())], &c);
        let at = |rule: &str| -> Vec<u32> {
            f.iter()
                .filter(|x| x.rule == rule)
                .map(|x| x.location.as_ref().unwrap().line.unwrap())
                .collect()
        };
        // CUDA 11.3 (end of life) comes from the CUDA arg, the H100 miss from the arch list:
        // each reported at its argument, naming the Dockerfile line.
        assert_eq!(at("GL109"), vec![6], "{f:?}");
        assert_eq!(at("GL107"), vec![7], "{f:?}");
        assert!(
            f.iter().any(|x| x.message.contains("Dockerfile:2")),
            "{f:?}"
        );
        // The Dockerfile's own defaults cause nothing of this.
        std::fs::write(
            &compose,
            "services:\n  train:\n    build:\n      context: .\n      args:\n        UNUSED: x\n",
        )
        .unwrap();
        let (f, _) = compose_findings(&[("compose.yaml".into(), compose)], &c);
        assert!(
            f.iter().all(|x| x.rule != "GL107" && x.rule != "GL109"),
            "{f:?}"
        );
    }
}
