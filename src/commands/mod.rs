//! Command handlers: each takes validated arguments, calls the library, prints through a
//! reporter and returns the exit code.

pub mod context;
pub mod discover;
mod fixing;
mod fleet;
mod host;
mod image;
mod images;
pub mod lint;
pub mod runconfig;
pub(crate) mod scan_images;
pub mod settings;
mod spec_pass;
use spec_pass::lint_pass;

use host::host;
use image::{image, inventory};
use settings::{ConfigSet, LintInputs};

use crate::baseline;
use crate::cli::{
    CacheAction, CacheArgs, Cli, Command, ExplainArgs, GpusArgs, HostCmdArgs, ImageArgs,
    InventoryArgs, InventoryFormat, RulesArgs, SpecCmd, TargetArgs,
};
use crate::exit;
use crate::finding::{FailOn, Finding, Severity};
use crate::gpu_target::Target;
use crate::matrix::Matrix;
use crate::report::{self, ColorChoice, Format, Report, Style};
use crate::rules;
use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Run a parsed command line; errors are usage/input errors (exit 2).
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    let color = cli.color;
    match cli.command {
        Command::Inventory(a) => inventory(a),
        Command::Image(a) => image(a, color),
        Command::Explain(a) => explain(a),
        Command::Rules(a) => list_rules(a),
        Command::Host(a) => host(a, color),
        Command::Dockerfile(c) => spec(&c, "Dockerfile", runconfig::cmd_dockerfile, color),
        Command::Compose(c) => spec(&c, "compose", runconfig::cmd_compose, color),
        Command::K8s(c) => spec(&c, "Kubernetes manifests", runconfig::cmd_k8s, color),
        Command::Run(c) => spec(&c, "run lines", runconfig::cmd_run, color),
        Command::Lint(c) => spec(&c, "repository", lint::cmd_lint, color),
        Command::Gpus(a) => gpus(a),
        Command::Cache(a) => cache(a),
        Command::Fleet(a) => fleet::fleet(a, color),
        Command::Report(r) => match r.action {
            crate::cli::ReportAction::Merge(a) => images::merge(a, color),
        },
    }
}

/// Render a report to `--output-file` or stdout; colour only where `--color`, the
/// environment and a terminal allow it (never into a file unless `--color always`).
fn emit(
    report: &Report,
    format: Format,
    output_file: Option<&Path>,
    color: ColorChoice,
    quiet: bool,
) -> anyhow::Result<()> {
    let to_terminal = output_file.is_none() && report::stdout_is_terminal();
    let style = Style {
        color: report::use_color(color, to_terminal),
        quiet,
    };
    let text = report.render(format, style);
    match output_file {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display())),
        None => print(&text),
    }
}

/// Exit code for a rendered report.
fn verdict(report: &Report, fail_on: FailOn) -> i32 {
    if report.fails(fail_on.threshold()) {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
pub fn print(s: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

pub fn load_matrix(t: &TargetArgs) -> anyhow::Result<Matrix> {
    matrix_from(t.matrices.as_deref())
}

/// The built-in matrices, each file in `dir` (with `--matrices DIR`) replacing its namesake.
fn matrix_from(dir: Option<&Path>) -> anyhow::Result<Matrix> {
    match dir {
        Some(dir) => Matrix::with_overrides(dir)
            .with_context(|| format!("loading matrices from {}", dir.display())),
        None => Matrix::embedded().context("loading built-in matrices"),
    }
}

/// Targets from flags, a host profile, a fleet file or the cluster's nodes. Empty = none given.
pub fn resolve_targets(t: &TargetArgs, matrix: &Matrix) -> anyhow::Result<Vec<Target>> {
    Ok(targets_and_fleet(t, matrix)?.0)
}

/// [`resolve_targets`], with the pools and their nodes when they come from the cluster
/// (`--fleet-from-nodes`).
pub(crate) fn targets_and_fleet(
    t: &TargetArgs,
    matrix: &Matrix,
) -> anyhow::Result<(Vec<Target>, Option<crate::gpu_target::nodes::Fleet>)> {
    if let Some(p) = &t.fleet_from_nodes {
        let f = fleet::read_nodes(matrix, p)?;
        return Ok((f.targets(), Some(f)));
    }
    Ok((targets_from_args(t, matrix)?, None))
}

fn targets_from_args(t: &TargetArgs, matrix: &Matrix) -> anyhow::Result<Vec<Target>> {
    if let Some(f) = &t.fleet {
        return crate::gpu_target::cli::fleet_from_file(matrix, f);
    }
    if let Some(h) = &t.host {
        let text = crate::io_util::read_regular_string(h, crate::io_util::MAX_CONFIG_FILE)
            .with_context(|| format!("reading host profile {}", h.display()))?;
        // The file may be anything: serde's errors quote values, so none is passed on.
        let target = crate::host::load_target_json(&text).map_err(|_| {
            anyhow::anyhow!(
                "host profile {}: not a host profile (write one with `gpulint host --format json`)",
                h.display()
            )
        })?;
        // A profile written on a machine without an NVIDIA driver names nothing to check
        // against: judging an image against it would print "ok" for any image.
        if target.driver.is_none() && target.gpus.is_empty() {
            anyhow::bail!(
                "host profile {}: no NVIDIA driver and no GPU in it (was it made on a machine \
                 without a GPU or driver?); nothing to check against",
                h.display()
            );
        }
        return Ok(vec![complete_target(matrix, target)]);
    }
    crate::gpu_target::cli::targets_from_flags(matrix, &t.gpus, t.driver.as_deref(), None)
}

/// Fill what a host profile may lack (compute capability, datacenter flag) from the matrix.
fn complete_target(matrix: &Matrix, mut t: Target) -> Target {
    for g in &mut t.gpus {
        if let Some(m) = matrix.gpu(&g.name) {
            g.cc = g.cc.or(Some(m.cc));
            g.datacenter = g.datacenter.or(m.forward_compat_eligible());
        }
    }
    t
}

/// The local host as default target, only where an NVIDIA driver is loaded.
fn local_host_target(facts: &crate::matrix::Facts) -> Option<Target> {
    if !std::path::Path::new("/proc/driver/nvidia/version").exists() {
        return None;
    }
    let reader = crate::host::LiveReader::new();
    let profile = crate::host::detect_host_with(&reader, facts).ok()?;
    profile.driver.as_ref()?;
    let mut t = complete_target(facts.matrix(), profile.into_target());
    t.name = format!("local host ({})", t.name);
    Some(t)
}

/// The configuration of a command that checks no files (`image`, `host --check`):
/// `--config FILE`, else `.gpulint.toml` from the working directory upward, else the user
/// config, else defaults; the command line's `--select`/`--extend-select`/`--ignore` over it.
fn load_config(
    explicit: Option<&Path>,
    rules: &crate::cli::SelectionArgs,
) -> anyhow::Result<crate::config::Config> {
    let cwd = std::env::current_dir().context("current directory")?;
    let cli = rules.selection().map_err(anyhow::Error::msg)?;
    let mut configs = ConfigSet::new(explicit, cli, &cwd)?;
    let i = configs.fallback()?;
    Ok(configs.get(i).clone())
}

/// `gpulint explain` wraps its text for an 80-column terminal.
const EXPLAIN_WIDTH: usize = 80;

fn explain(a: ExplainArgs) -> anyhow::Result<i32> {
    match rules::find(&a.rule) {
        Some(r) => {
            // Rules whose fixes are computed say how, after the rule's own text.
            let how = crate::fix::suggest::how_computed(r.code.as_str())
                .map(|h| {
                    format!(
                        "Suggestions:\n{}",
                        crate::rule_meta::wrap(&h, EXPLAIN_WIDTH, "  ")
                    )
                })
                .unwrap_or_default();
            // Inferred rows under the rule's verdicts, with their evidence (issue 27).
            let facts = crate::matrix::Facts::embedded()?;
            let inferred = crate::matrix::explain_section(&facts, r.code.as_str(), EXPLAIN_WIDTH)
                .unwrap_or_default();
            print(&format!(
                "{} {} (severity: {})\n{}\n{}{how}{inferred}\nMore: {}\n",
                r.code,
                r.name,
                r.severity_label(),
                crate::rule_meta::wrap(r.summary, EXPLAIN_WIDTH, ""),
                r.explanation(EXPLAIN_WIDTH),
                r.doc_path()
            ))?;
            Ok(exit::OK)
        }
        None => anyhow::bail!(crate::selection::unknown_code_message(
            &a.rule,
            &crate::rules::names()
        )),
    }
}

fn list_rules(a: RulesArgs) -> anyhow::Result<i32> {
    let rules = rules::all();
    match a.format {
        InventoryFormat::Json => {
            let v: Vec<_> = rules
                .iter()
                .map(|r| {
                    let mut all = vec![r.default_severity];
                    all.extend(r.other_severities);
                    serde_json::json!({"code": r.code, "name": r.name, "severity": r.default_severity, "severities": all, "summary": r.summary})
                })
                .collect();
            print(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        }
        InventoryFormat::Text => {
            let mut s = String::new();
            for r in rules {
                s.push_str(&format!(
                    "{}  {:<32} {:<26} {}\n",
                    r.code,
                    r.name,
                    r.severity_label(),
                    r.summary
                ));
            }
            print(&s)?;
        }
    }
    Ok(exit::OK)
}

type SpecFn<A> = fn(&A, &runconfig::CommandContext) -> anyhow::Result<Vec<Finding>>;

/// A configuration linter: inputs grouped by the configuration each uses, each group checked
/// with its own settings and targets (unless the command line names targets), one report.
/// The exit code: `--fail-on` when given, else each finding judged by its own
/// configuration's `fail-on`.
fn spec<A: clap::Args + LintInputs>(
    c: &SpecCmd<A>,
    what: &str,
    run: SpecFn<A>,
    color: ColorChoice,
) -> anyhow::Result<i32> {
    let matrix = load_matrix(&c.targets)?;
    let cwd = std::env::current_dir().context("current directory")?;
    let cli = c.output.selection().map_err(anyhow::Error::msg)?;
    let mut configs = ConfigSet::new(c.output.config.as_deref(), cli, &cwd)?;
    if let Some(file) = &c.show_settings {
        let i = configs.for_input(file)?;
        print(&show_settings(file, &configs, i, c.output.fail_on, &cwd))?;
        return Ok(exit::OK);
    }
    let groups = c.args.split(&mut configs)?;
    if c.targets.fleet_from_nodes.as_deref() == Some(Path::new("-"))
        && c.args.inputs().iter().any(|p| p == Path::new("-"))
    {
        anyhow::bail!("--fleet-from-nodes - and an input - both read stdin: give one as a file");
    }
    let (cli_targets, node_fleet) = targets_and_fleet(&c.targets, &matrix)?;
    let mut ctx = runconfig::CommandContext::new(Vec::new(), Default::default(), matrix)?;
    ctx.fleet = node_fleet.map(std::sync::Arc::new);
    ctx.cwd = cwd;
    ctx.quiet = c.source.quiet;
    if c.scan_images {
        ctx.scan_images = Some(scan_images::ImageScan::new(
            crate::scan::ScanOptions::from_args(&c.source)?,
        ));
    }
    if c.fix.unsafe_fixes && !c.fix.fix && !c.fix.diff {
        anyhow::bail!("--unsafe-fixes applies with --fix or --diff");
    }
    let fixing = c.fix.fix || c.fix.diff;
    if c.fix.fix && c.args.inputs().iter().any(|p| p == Path::new("-")) {
        anyhow::bail!("--fix rewrites files: standard input cannot be fixed (use --diff)");
    }
    if fixing {
        *ctx.linted.borrow_mut() = Some(Default::default());
    }
    let (mut report, mut file_fail_on) =
        lint_pass(c, what, run, &groups, &configs, &cli_targets, &mut ctx)?;
    let mut fix_failed = false;
    if fixing {
        let mut pass = fixing::apply_fixes(&report.findings, &c.fix, &ctx, c.source.quiet)?;
        if c.fix.diff {
            fix_failed = pass.failed;
        } else {
            let mut total = fixing::Applied::default();
            let mut passes = 1;
            loop {
                fix_failed |= pass.failed;
                total.fixes += pass.fixes;
                let wrote = !pass.files.is_empty();
                total.files.append(&mut pass.files);
                if !wrote {
                    break;
                }
                // What remains is what the edited files say now; fixes that overlapped one
                // applied before them get another pass on the edited text.
                let again = passes < fixing::MAX_PASSES && !fix_failed;
                if again {
                    *ctx.linted.borrow_mut() = Some(Default::default());
                }
                ctx.input_errors.borrow_mut().clear();
                ctx.checked.set(0);
                (report, file_fail_on) =
                    lint_pass(c, what, run, &groups, &configs, &cli_targets, &mut ctx)?;
                if !again {
                    break;
                }
                passes += 1;
                pass = fixing::apply_fixes(&report.findings, &c.fix, &ctx, c.source.quiet)?;
            }
            fixing::report_applied(&total, c.source.quiet);
        }
    }
    let input_errors = ctx.input_errors.borrow();
    if !c.fix.diff || c.output.output_file.is_some() {
        emit(
            &report,
            c.output.format,
            c.output.output_file.as_deref(),
            color,
            c.source.quiet,
        )?;
    }
    // Said on stderr too where the report has no summary line, so it is never silent.
    if ctx.checked.get() == 0 && !c.source.quiet && c.output.format != Format::Text {
        eprintln!("gpulint: warning: no files found");
    }
    for e in input_errors.iter() {
        eprintln!("gpulint: error: {}", report::escape::block(&e.message));
    }
    if let Some(code) = incomplete_exit(&report, input_errors.len()) {
        if c.output.write_baseline.is_some() {
            eprintln!("gpulint: error: the baseline was not written: the run is incomplete");
        }
        return Ok(code);
    }
    // A fix asked for and not made (a symlink, a file changed meanwhile) fails closed.
    if fix_failed {
        return Ok(exit::USAGE_OR_INPUT);
    }
    if let Some(file) = &c.output.write_baseline {
        return write_baseline(file, &report);
    }
    // Each finding judged by its own file's fail-on (the baseline may have dropped some).
    let fails = report.findings.iter().any(|f| {
        let file = f.location.as_ref().and_then(|l| l.file.clone());
        file_fail_on
            .get(&file)
            .copied()
            .unwrap_or(report.fail_on)
            .is_some_and(|t| f.severity >= t)
    });
    Ok(if fails { exit::FINDINGS } else { exit::OK })
}

/// `--show-settings FILE`: the configuration FILE is checked with and what it makes of the
/// rules.
fn show_settings(
    file: &Path,
    configs: &ConfigSet,
    i: usize,
    cli_fail_on: Option<FailOn>,
    cwd: &Path,
) -> String {
    let config = configs.get(i);
    let name = |f: FailOn| match f.threshold() {
        Some(s) => s.to_string(),
        None => "none".to_string(),
    };
    let fail_on = match (cli_fail_on, config.fail_on) {
        (Some(f), _) => format!("{} (--fail-on)", name(f)),
        (None, Some(f)) => format!("{} (configuration)", name(f)),
        (None, None) => "error (default)".into(),
    };
    let mut s = format!(
        "file: {}
configuration: {}
fail-on: {fail_on}
",
        file.display(),
        configs.name(i)
    );
    if config.path_ignored(file, cwd) {
        s.push_str(
            "ignore-paths: excludes this file (`lint` does not check it)
",
        );
    }
    if let Some(f) = &config.fleet {
        s.push_str(&format!(
            "fleet: {}
",
            f.display()
        ));
    }
    for t in &config.targets {
        s.push_str(&format!(
            "target: {} gpu={:?} driver={}
",
            t.name.as_deref().unwrap_or("-"),
            t.gpus,
            t.driver.as_deref().unwrap_or("-")
        ));
    }
    let rel = config.relative(file, cwd);
    let mut on = String::new();
    let mut off = Vec::new();
    for (meta, _) in rules::spec_checks() {
        let code = meta.code.as_str();
        if !config.rule_enabled(code) {
            off.push(code);
            continue;
        }
        let severity = config
            .severity_override(code)
            .map(|s| format!("{s} (configured)"))
            .unwrap_or_else(|| meta.severity_label());
        let ignored: Vec<&str> = config
            .ignores
            .iter()
            .filter(|ig| ig.matches(code, rel.as_deref()))
            .map(|ig| ig.reason.as_str())
            .collect();
        let ignored = match ignored.first() {
            Some(reason) => format!("  ignored here: {reason}"),
            None => String::new(),
        };
        on.push_str(&format!(
            "  {code}  {:<32} {severity}{ignored}\n",
            meta.name
        ));
    }
    s.push_str(&format!("rules enabled:\n{on}"));
    s.push_str(&format!(
        "rules disabled: {}\n",
        if off.is_empty() {
            "none".to_string()
        } else {
            off.join(", ")
        }
    ));
    report::escape::block(&s).into_owned()
}

/// GL000 for an input the command could not use, at the file it names.
fn input_error_finding(e: &runconfig::InputError) -> Finding {
    let f = rules::image::gl000_unreadable_input::META
        .finding(e.message.clone())
        .with_help("Check the path and its permissions; this input was not checked.");
    match &e.file {
        Some(file) => f.with_location(crate::finding::Location {
            file: Some(file.clone()),
            ..Default::default()
        }),
        None => f,
    }
}

/// Fail closed: exit 2 when some input could not be used, or when some input (an image a
/// configuration names) could not be read and `--allow-partial` did not make that a warning
/// (a GL000 error); None when the verdict is whole.
fn incomplete_exit(report: &Report, input_errors: usize) -> Option<i32> {
    let unread = report
        .findings
        .iter()
        .filter(|f| f.rule == "GL000" && f.severity == Severity::Error)
        .count();
    if input_errors == 0 && unread == 0 {
        return None;
    }
    if unread > input_errors {
        eprintln!(
            "gpulint: error: {} input(s) could not be read (GL000); the verdict would be \
             incomplete. Use --allow-partial for a best-effort result.",
            unread - input_errors
        );
    }
    Some(exit::USAGE_OR_INPUT)
}

/// `--baseline FILE`: drop the findings it records; report its leftover entries as GL198
/// where `in_scope` (the entry, its rule's code) says this run looked, and GL198 is on.
fn apply_baseline(
    report: &mut Report,
    file: &Path,
    config: &crate::config::Config,
    in_scope: &dyn Fn(&baseline::Entry, rules::Code) -> bool,
) -> anyhow::Result<()> {
    let b = baseline::load(file)?;
    let stale = rules::runconfig::gl198_stale_baseline_entry::META.code;
    let severity = config.rule_enabled(&stale).then(|| {
        config
            .severity_override(&stale)
            .unwrap_or(rules::runconfig::gl198_stale_baseline_entry::META.default_severity)
    });
    b.apply(
        report,
        &|e| {
            rules::parse_code(&e.code)
                .is_some_and(|code| config.rule_enabled(&code) && in_scope(e, code))
        },
        severity,
    );
    report.normalize();
    Ok(())
}

/// `--write-baseline FILE`: record the report's findings; the run succeeds (exit 0).
fn write_baseline(file: &Path, report: &Report) -> anyhow::Result<i32> {
    let n = baseline::write(file, report)?;
    eprintln!(
        "gpulint: recorded {} in the baseline {}; --baseline {} reports only new ones",
        crate::vocab::count(n, "finding", "findings"),
        report::escape::field(&file.to_string_lossy()),
        report::escape::field(&file.to_string_lossy()),
    );
    Ok(exit::OK)
}

/// Targets named in the configuration file (`[[targets]]` or `fleet = "…"`).
fn config_targets(config: &crate::config::Config, matrix: &Matrix) -> anyhow::Result<Vec<Target>> {
    if let Some(f) = &config.fleet {
        // Already joined to the config's directory and confined to its repository on load.
        return crate::gpu_target::cli::fleet_from_file(matrix, f);
    }
    let mut out = Vec::new();
    for t in &config.targets {
        let mut ts =
            crate::gpu_target::cli::targets_from_flags(matrix, &t.gpus, t.driver.as_deref(), None)?;
        if let (Some(name), 1) = (&t.name, ts.len()) {
            ts[0].name = name.clone();
        }
        out.extend(ts);
    }
    Ok(out)
}

/// One row of `gpulint gpus`.
#[derive(Debug, serde::Serialize)]
struct GpuRow {
    name: String,
    aliases: Vec<String>,
    compute_capability: String,
    architecture: String,
    /// The first CUDA release whose nvcc builds SASS for it; null = unknown from the tables.
    first_cuda: Option<String>,
    /// That release's minimum Linux driver; null = unknown.
    first_driver: Option<String>,
}

fn gpus(a: GpusArgs) -> anyhow::Result<i32> {
    let matrix = load_matrix(&TargetArgs {
        matrices: a.matrices.clone(),
        ..Default::default()
    })?;
    let rows: Vec<GpuRow> = matrix
        .gpus()
        .iter()
        .map(|g| {
            let first = matrix.first_cuda_for_sm(g.cc.sm());
            let driver = first
                .as_ref()
                .and_then(|c| matrix.cuda_min_driver(c))
                .and_then(|d| d.linux);
            GpuRow {
                name: g.name.clone(),
                aliases: g.aliases.clone(),
                compute_capability: g.cc.to_string(),
                architecture: g.arch.clone(),
                first_cuda: first.map(|c| format!("{}.{}", c.major, c.minor)),
                first_driver: driver.map(|d| d.to_string()),
            }
        })
        .collect();
    match a.format {
        InventoryFormat::Json => print(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?,
        InventoryFormat::Text => {
            let mut s = format!(
                "{:<36} {:<4} {:<14} {:<10} {}\n",
                "GPU", "CC", "architecture", "first CUDA", "first driver"
            );
            for r in &rows {
                s.push_str(&format!(
                    "{:<36} {:<4} {:<14} {:<10} {}\n",
                    r.name,
                    r.compute_capability,
                    r.architecture,
                    r.first_cuda.as_deref().unwrap_or("unknown"),
                    r.first_driver.as_deref().unwrap_or("unknown"),
                ));
            }
            print(&report::escape::block(&s))?;
        }
    }
    Ok(exit::OK)
}

fn cache(a: CacheArgs) -> anyhow::Result<i32> {
    match a.action {
        CacheAction::Clean { cache_dir } => {
            let dir = match cache_dir {
                Some(d) => d,
                None => crate::cache::default_dir()?,
            };
            let n = crate::cache::cache_clean(&dir)?;
            print(&format!(
                "removed {} from {}\n",
                crate::vocab::count(n, "cached layer result", "cached layer results"),
                dir.display()
            ))?;
            Ok(exit::OK)
        }
    }
}
