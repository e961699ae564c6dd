//! Command handlers: each takes validated arguments, calls the library, prints through a
//! reporter and returns the exit code.

mod host;
mod image;
pub mod lint;
pub(crate) mod scan_images;
pub mod spec;

use host::host;
use image::{image, inventory};

use crate::baseline;
use crate::cli::{
    CacheAction, CacheArgs, Cli, Command, ExplainArgs, GpusArgs, HostCmdArgs, ImageArgs,
    InventoryArgs, InventoryFormat, OutputArgs, RulesArgs, SpecCmd, TargetArgs,
};
use crate::exit;
use crate::finding::{FailOn, Finding, Severity};
use crate::matrix::Matrix;
use crate::report::{self, ColorChoice, Format, Report, Style};
use crate::rules;
use crate::target::Target;
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Run a parsed command line; errors are usage/input errors (exit 2).
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    let color = cli.color;
    match cli.command {
        Command::Inventory(a) => inventory(a),
        Command::Image(a) => image(a, color),
        Command::Explain(a) => explain(a),
        Command::Rules(a) => list_rules(a),
        Command::Host(a) => host(a, color),
        Command::Dockerfile(c) => spec(&c, "Dockerfile", spec::cmd_dockerfile, color),
        Command::Compose(c) => spec(&c, "compose", spec::cmd_compose, color),
        Command::K8s(c) => spec(&c, "Kubernetes manifests", spec::cmd_k8s, color),
        Command::Run(c) => spec(&c, "run lines", spec::cmd_run, color),
        Command::Lint(c) => spec(&c, "repository", lint::cmd_lint, color),
        Command::Gpus(a) => gpus(a),
        Command::Cache(a) => cache(a),
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

/// The inputs of a configuration linter, so `.gpulint.toml` is found beside them.
pub trait LintInputs {
    fn inputs(&self) -> Vec<PathBuf>;
}

impl LintInputs for crate::cli::DockerfileArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.paths.clone()
    }
}
impl LintInputs for crate::cli::ComposeArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.iter().chain(&self.paths).cloned().collect()
    }
}
impl LintInputs for crate::cli::K8sArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.clone()
    }
}
impl LintInputs for crate::cli::RunArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.clone()
    }
}
impl LintInputs for crate::cli::LintArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.paths.clone()
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

/// Targets from flags, a host profile or a fleet file. Empty = none given.
pub fn resolve_targets(t: &TargetArgs, matrix: &Matrix) -> anyhow::Result<Vec<Target>> {
    if let Some(f) = &t.fleet {
        return crate::target::cli::fleet_from_file(matrix, f);
    }
    if let Some(h) = &t.host {
        let text = crate::io_util::read_regular_string(h, crate::io_util::MAX_CONFIG_FILE)
            .with_context(|| format!("reading host profile {}", h.display()))?;
        let target = crate::host::load_target_json(&text)
            .with_context(|| format!("host profile {}", h.display()))?;
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
    crate::target::cli::targets_from_flags(matrix, &t.gpus, t.driver.as_deref(), None)
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
fn local_host_target(matrix: &Matrix) -> Option<Target> {
    if !std::path::Path::new("/proc/driver/nvidia/version").exists() {
        return None;
    }
    let reader = crate::host::LiveReader::new();
    let profile = crate::host::detect_host_with(&reader, matrix).ok()?;
    profile.driver.as_ref()?;
    let mut t = complete_target(matrix, profile.into_target());
    t.name = format!("local host ({})", t.name);
    Some(t)
}

/// The configuration a command uses: `--config FILE`, else `.gpulint.toml` found upward from
/// the first linted input (`gpulint lint repo/` uses `repo/.gpulint.toml`), else from the
/// working directory upward, else the user config, else defaults. The command line's
/// `--select`/`--extend-select`/`--ignore` then apply over it.
fn load_config(output: &OutputArgs, inputs: &[PathBuf]) -> anyhow::Result<crate::config::Config> {
    let mut config = match &output.config {
        Some(p) => crate::config::Config::load(p)?,
        None => {
            let near_input = inputs
                .iter()
                .filter(|p| p.as_os_str() != "-")
                .find_map(|p| {
                    let dir = if p.is_dir() { p.as_path() } else { p.parent()? };
                    let dir = if dir.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        dir
                    };
                    crate::config::Config::find_project(dir)
                });
            match near_input {
                Some(p) => crate::config::Config::load(&p)?,
                None => crate::config::Config::discover(
                    &std::env::current_dir().context("current directory")?,
                )?,
            }
        }
    };
    let cli = output.selection();
    let codes: Vec<&str> = rules::all().iter().map(|m| m.code.as_str()).collect();
    for code in cli
        .select
        .iter()
        .flatten()
        .chain(&cli.extend_select)
        .chain(&cli.ignore)
    {
        crate::selection::check_selector(code, &codes).map_err(anyhow::Error::msg)?;
    }
    config.selection.overlay(&cli);
    Ok(config)
}

/// `gpulint explain` wraps its text for an 80-column terminal.
const EXPLAIN_WIDTH: usize = 80;

fn explain(a: ExplainArgs) -> anyhow::Result<i32> {
    match rules::find(&a.rule) {
        Some(r) => {
            print(&format!(
                "{} {} (severity: {})\n{}\n{}\nMore: {}\n",
                r.code,
                r.name,
                r.severity_label(),
                crate::rule_meta::wrap(r.summary, EXPLAIN_WIDTH, ""),
                r.explanation(EXPLAIN_WIDTH),
                r.doc_path()
            ))?;
            Ok(exit::OK)
        }
        None => anyhow::bail!("unknown rule {:?}; `gpulint rules` lists them", a.rule),
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

type SpecFn<A> = fn(&A, &spec::CommandContext) -> anyhow::Result<Vec<Finding>>;

fn spec<A: clap::Args + LintInputs>(
    c: &SpecCmd<A>,
    what: &str,
    run: SpecFn<A>,
    color: ColorChoice,
) -> anyhow::Result<i32> {
    let matrix = load_matrix(&c.targets)?;
    let config = load_config(&c.output, &c.args.inputs())?;
    let mut targets = resolve_targets(&c.targets, &matrix)?;
    if targets.is_empty() {
        targets = config_targets(&config, &matrix)?;
    }
    let fail_on = c
        .output
        .fail_on
        .or(config.fail_on)
        .unwrap_or(FailOn::At(Severity::Error));
    let checked_rules: Vec<String> = rules::spec_checks()
        .map(|(meta, _)| meta.code.to_string())
        .filter(|code| config.rule_enabled(code))
        .collect();
    let mut ctx = spec::CommandContext::new(targets, config, matrix)?;
    ctx.quiet = c.source.quiet;
    if c.scan_images {
        ctx.scan_images = Some(scan_images::ImageScan::new(
            crate::scan::ScanOptions::from_args(&c.source)?,
        ));
    }
    let mut report = Report::new(what.to_string());
    report.targets = ctx.targets.iter().map(|t| t.name.clone()).collect();
    report.checked_rules = checked_rules;
    report.findings = run(&c.args, &ctx)?;
    report.normalize();
    if let Some(file) = &c.output.baseline {
        let inputs: Vec<String> = c.args.inputs().iter().map(|p| ctx.display(p)).collect();
        let scan_images = c.scan_images;
        apply_baseline(&mut report, file, &ctx.config, &|e, code| {
            (code.number() >= 100 || scan_images) && baseline::path_in_inputs(&e.path, &inputs)
        })?;
    }
    emit(
        &report,
        c.output.format,
        c.output.output_file.as_deref(),
        color,
        c.source.quiet,
    )?;
    // An input that could not be read is an error for that input only: the others were
    // linted and reported above; the run as a whole is unusable input (exit 2).
    let input_errors = ctx.input_errors.borrow();
    if !input_errors.is_empty() {
        for e in input_errors.iter() {
            eprintln!("gpulint: error: {}", report::escape::block(e));
        }
        if c.output.write_baseline.is_some() {
            eprintln!("gpulint: error: the baseline was not written: the run is incomplete");
        }
        return Ok(exit::USAGE_OR_INPUT);
    }
    if let Some(file) = &c.output.write_baseline {
        return write_baseline(file, &report);
    }
    Ok(verdict(&report, fail_on))
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
    let stale = rules::spec::gl198_stale_baseline_entry::META.code;
    let severity = config.rule_enabled(&stale).then(|| {
        config
            .severity_override(&stale)
            .unwrap_or(rules::spec::gl198_stale_baseline_entry::META.default_severity)
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
        let base = config
            .path
            .as_ref()
            .and_then(|p| p.parent())
            .map(|d| d.join(f))
            .unwrap_or_else(|| f.clone());
        return crate::target::cli::fleet_from_file(matrix, &base);
    }
    let mut out = Vec::new();
    for t in &config.targets {
        let mut ts =
            crate::target::cli::targets_from_flags(matrix, &t.gpus, t.driver.as_deref(), None)?;
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
