//! Scripts, Markdown shell blocks and bake files: the `docker run`/`docker build` lines they
//! hold, linted like the run configurations they are, and their build arguments flowing into
//! the Dockerfiles they build.

use super::*;

/// A script's `docker build --build-arg K=V` (also in Markdown shell blocks) flows into the
/// Dockerfile it builds, as compose `build.args` do, when that Dockerfile is in the tree:
/// the context and `-f` are taken relative to the script's directory, else to where gpulint
/// runs (Docker resolves them against the directory the command runs in).
pub(crate) fn script_build_findings(
    path: &Path,
    file: &str,
    text: &str,
    ctx: &CommandContext,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut builds = BuildBudget::default();
    for b in runspec::script_builds(file, text, is_markdown_name(file)) {
        if b.build_args.is_empty() || b.context.contains("://") || b.context == "-" {
            continue;
        }
        let bases = [path.parent(), Some(ctx.cwd.as_path())];
        let found = bases.iter().flatten().find_map(|base| {
            let cdir = base.join(&b.context);
            let dfp = match &b.dockerfile {
                Some(f) => base.join(f),
                None => cdir.join("Dockerfile"),
            };
            dfp.is_file().then_some((cdir, dfp))
        });
        let Some((cdir, dfp)) = found else {
            continue;
        };
        let src = ArgSource {
            who: "`docker build`".into(),
            file,
            args: &b.build_args,
            target: b.target.clone(),
        };
        out.extend(builds.analyse(ctx, &src, &cdir, &dfp));
    }
    builds.note_skipped(file, ctx);
    out
}

/// A script's findings (or a Markdown file's, or a CI pipeline's shell steps): its container
/// starts, and what its `docker build --build-arg`s cause in the Dockerfiles they build.
pub(crate) fn shell_findings(
    path: &Path,
    file: &str,
    text: &str,
    ctx: &CommandContext,
) -> Vec<Finding> {
    let mut out = script_findings(file, text, ctx);
    out.extend(script_build_findings(path, file, text, ctx));
    out
}

/// Builds analysed for one file: each (Dockerfile, args, stage) once, and at most
/// [`BuildBudget::MAX`] of them, so a script of thousands of `docker build` lines (or a bake
/// matrix) costs a bounded number of Dockerfile analyses.
#[derive(Default)]
struct BuildBudget {
    seen: std::collections::BTreeSet<(PathBuf, BTreeMap<String, String>, Option<String>)>,
    skipped: usize,
}

impl BuildBudget {
    const MAX: usize = 64;

    /// What `src`'s arguments cause in the Dockerfile `dfp` ([`build_arg_findings`]), for a
    /// build not analysed before while the budget lasts; nothing otherwise.
    fn analyse(
        &mut self,
        ctx: &CommandContext,
        src: &ArgSource,
        cdir: &Path,
        dfp: &Path,
    ) -> Vec<Finding> {
        let args = arg_map(src.args);
        let key = (dfp.to_path_buf(), args, src.target.clone());
        if self.seen.contains(&key) {
            return Vec::new();
        }
        if self.seen.len() >= Self::MAX {
            self.skipped += 1;
            return Vec::new();
        }
        let found = build_arg_findings(ctx, src, cdir, dfp, &key.1);
        self.seen.insert(key);
        found
    }

    /// Say what was not analysed (never silently).
    fn note_skipped(&self, file: &str, ctx: &CommandContext) {
        if self.skipped > 0 && !ctx.quiet {
            eprintln!(
                "note: {file}: {} more builds with other args not analysed (at most {} per file)",
                self.skipped,
                Self::MAX
            );
        }
    }
}

/// A bake file's targets (`docker-bake.hcl` / `.json`): each target whose Dockerfile is in
/// the tree is analyzed with its `args` (inherited, matrix-expanded, variables substituted)
/// and stage, and what those args cause is reported at the arg, as for compose `build.args`.
pub(crate) fn bake_findings(
    path: &Path,
    file: &str,
    text: &str,
    ctx: &CommandContext,
) -> Vec<Finding> {
    let json = file.to_ascii_lowercase().ends_with(".json");
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out: Vec<Finding> = Vec::new();
    let mut builds = BuildBudget::default();
    let bake = crate::runconfig::bake::parse(text, json);
    out.extend(bake.errors.iter().map(|e| error_finding(file, e)));
    for t in bake.targets {
        // `target:other` / `docker-image://…` / git URLs are not directories here.
        if t.args.is_empty() || t.context.contains(':') {
            continue;
        }
        let cdir = dir.join(&t.context);
        let dfp = cdir.join(&t.dockerfile);
        if !dfp.is_file() {
            continue;
        }
        let src = ArgSource {
            who: format!("bake target `{}`", t.name),
            file,
            args: &t.args,
            target: t.target.clone(),
        };
        for f in builds.analyse(ctx, &src, &cdir, &dfp) {
            // Matrix combinations sharing an arg report what it causes once.
            let same = |o: &Finding| {
                o.rule == f.rule
                    && o.location == f.location
                    && o.message.split_once(", ").map(|x| x.1)
                        == f.message.split_once(", ").map(|x| x.1)
            };
            if !out.iter().any(same) {
                out.push(f);
            }
        }
    }
    builds.note_skipped(file, ctx);
    out
}

pub(crate) fn is_markdown_name(file: &str) -> bool {
    file.ends_with(".md") || file.ends_with(".mdx") || file.ends_with(".markdown")
}

/// A script's (or Markdown file's) findings: its container starts, then its own lines.
pub(crate) fn script_findings(file: &str, text: &str, ctx: &CommandContext) -> Vec<Finding> {
    let markdown = is_markdown_name(file);
    let (specs, bound) = runspec::scan_script_checked(file, text, markdown);
    let specs = resolved(specs, ctx);
    let mut out = if markdown {
        // Documentation examples (placeholders, registry pulls): no image scans.
        run_checks(Subject::Runs(&specs), ctx)
    } else {
        runs_checks(&specs, ctx)
    };
    let script = Script {
        file,
        text,
        markdown,
        runs: &specs,
    };
    out.extend(run_checks(Subject::Script(&script), ctx));
    out.extend(bound.map(|e| error_finding(file, &e)));
    out
}
