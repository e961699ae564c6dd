//! Command handlers: each takes validated arguments, calls the library, prints through a
//! reporter and returns the exit code.

use crate::cli::{
    CacheAction, CacheArgs, Cli, Command, ExplainArgs, HostCmdArgs, ImageArgs, InventoryArgs,
    InventoryFormat, RulesArgs, SpecCmd, TargetArgs,
};
use crate::exit;
use crate::finding::{Finding, Severity};
use crate::matrix::Matrix;
use crate::report::Format;
use crate::report::{self, Report};
use crate::rules;
use crate::target::Target;
use anyhow::Context;
use std::io::Write;

/// Run a parsed command line; errors are usage/input errors (exit 2).
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Inventory(a) => inventory(a),
        Command::Image(a) => image(a),
        Command::Explain(a) => explain(a),
        Command::Rules(a) => list_rules(a),
        Command::Host(a) => host(a),
        Command::Dockerfile(c) => spec(&c, "Dockerfile", crate::spec::cmd_dockerfile),
        Command::Compose(c) => spec(&c, "compose", crate::spec::cmd_compose),
        Command::K8s(c) => spec(&c, "Kubernetes manifests", crate::spec::cmd_k8s),
        Command::Run(c) => spec(&c, "run lines", crate::spec::cmd_run),
        Command::Lint(c) => spec(&c, "repository", crate::spec::cmd_lint),
        Command::Cache(a) => cache(a),
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
    match &t.matrices {
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

fn inventory(a: InventoryArgs) -> anyhow::Result<i32> {
    let opts = crate::scan::ScanOptions::from_args(&a.source.source)?;
    let inv = crate::scan::scan(&a.source.image, &opts)?;
    match a.format {
        InventoryFormat::Json => print(&format!("{}\n", serde_json::to_string_pretty(&inv)?))?,
        InventoryFormat::Text => print(&crate::inventory::render_text(&inv))?,
    }
    Ok(partial_exit(&inv, &opts).unwrap_or(exit::OK))
}

/// Fail closed: an image that could not be read whole is unusable input (exit 2) unless the
/// user asked for best effort with `--allow-partial`. None when the scan was complete or
/// partial results were allowed.
fn partial_exit(inv: &crate::inventory::Inventory, opts: &crate::scan::ScanOptions) -> Option<i32> {
    if !inv.partial || opts.allow_partial {
        return None;
    }
    eprintln!(
        "error: {}: the image could not be read completely ({} problem(s), see GL000); \
         the verdict would be incomplete. Use --allow-partial for a best-effort result.",
        crate::report::escape_control(&inv.image.reference),
        inv.errors.len().max(1)
    );
    Some(exit::USAGE_OR_INPUT)
}

/// The configuration a command uses: `--config FILE`, else discovered from the working
/// directory upward, else the user config, else defaults.
fn load_config(explicit: &Option<std::path::PathBuf>) -> anyhow::Result<crate::config::Config> {
    match explicit {
        Some(p) => crate::config::Config::load(p),
        None => {
            crate::config::Config::discover(&std::env::current_dir().context("current directory")?)
        }
    }
}

/// Config rule switches and severity overrides for findings that point into an image (inline
/// pragmas do not exist there; path-scoped ignores name repository files, not image paths).
fn apply_config_to_image_findings(
    findings: Vec<Finding>,
    config: &crate::config::Config,
) -> Vec<Finding> {
    findings
        .into_iter()
        .filter(|f| config.rule_enabled(&f.rule))
        .filter(|f| !config.ignores.iter().any(|ig| ig.matches(&f.rule, None)))
        .map(|mut f| {
            if let Some(s) = config.severity_override(&f.rule) {
                f.severity = s;
            }
            f
        })
        .collect()
}

fn image(a: ImageArgs) -> anyhow::Result<i32> {
    let matrix = load_matrix(&a.targets)?;
    let config = load_config(&a.output.config)?;
    let mut targets = resolve_targets(&a.targets, &matrix)?;
    if targets.is_empty() {
        targets = config_targets(&config, &matrix)?;
    }
    if targets.is_empty() && !a.targets.no_local_host {
        if let Some(t) = local_host_target(&matrix) {
            targets.push(t);
        }
    }
    let opts = crate::scan::ScanOptions::from_args(&a.source.source)?;
    let inv = crate::scan::scan(&a.source.image, &opts)?;
    let ctx = rules::context::ImageContext {
        inventory: &inv,
        matrix: &matrix,
        target: None,
    };
    let reqs = rules::requirements::compute(&ctx);
    let mut report = Report::new(format!("image {}", inv.image.reference));
    report.targets = targets.iter().map(|t| t.name.clone()).collect();
    let mut findings = rules::check_image(&inv, &matrix, &targets);
    for e in &inv.errors {
        findings.push(scan_error_finding(e, opts.allow_partial));
    }
    report.findings = apply_config_to_image_findings(findings, &config);
    report.details = serde_json::json!({
        "requirements": reqs,
        "targets": targets,
        "partial": inv.partial,
    });
    if targets.is_empty() {
        report.preamble = reqs.lines();
    }
    report.normalize();
    print(&report.render(a.output.format, report::use_color()))?;
    if let Some(code) = partial_exit(&inv, &opts) {
        return Ok(code);
    }
    let fail_on = a
        .output
        .fail_on
        .or(config.fail_on)
        .unwrap_or(Severity::Error);
    Ok(if report.fails(fail_on) {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

/// A problem met while reading the image: an error (the scan is refused, exit 2) unless
/// `--allow-partial` asked for best effort, then a warning that the verdict may be incomplete.
/// It points at the layer and the in-image path the problem is about.
fn scan_error_finding(e: &crate::walk::ScanIssue, allow_partial: bool) -> Finding {
    let finding = rules::image::gl000_unreadable_input::META
        .finding(format!(
            "part of the image could not be read ({}), the result is partial: {e}",
            e.kind
        ))
        .with_severity(if allow_partial {
            Severity::Warning
        } else {
            Severity::Error
        })
        .with_help(if allow_partial {
            "Best effort (--allow-partial): findings cover only what could be read."
        } else {
            "Re-fetch or re-export the image; pass --allow-partial to judge what could be read."
        });
    if e.layer.is_some() || e.path.is_some() {
        finding.with_location(crate::finding::Location {
            layer: e.layer.clone(),
            path: e.path.clone(),
            ..Default::default()
        })
    } else {
        finding
    }
}

fn explain(a: ExplainArgs) -> anyhow::Result<i32> {
    match rules::find(&a.rule) {
        Some(r) => {
            print(&format!(
                "{} {} (default severity: {})\n{}\n\n{}\n",
                r.code, r.name, r.default_severity, r.summary, r.explanation
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
                .map(|r| serde_json::json!({"code": r.code, "name": r.name, "severity": r.default_severity, "summary": r.summary}))
                .collect();
            print(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        }
        InventoryFormat::Text => {
            let mut s = String::new();
            for r in rules {
                s.push_str(&format!(
                    "{}  {:<32} {:<8} {}\n",
                    r.code,
                    r.name,
                    r.default_severity.to_string(),
                    r.summary
                ));
            }
            print(&s)?;
        }
    }
    Ok(exit::OK)
}

fn host(a: HostCmdArgs) -> anyhow::Result<i32> {
    let matrix = Matrix::embedded().context("loading built-in matrices")?;
    let reader = a.host.reader()?;
    let profile = crate::host::detect_host_with(reader.as_ref(), &matrix)?;
    if !a.host.check {
        match a.host.format {
            crate::host::HostFormat::Json => print(&format!("{}\n", profile.to_json()))?,
            _ => {
                let t = complete_target(&matrix, profile.into_target());
                let mut s = String::from("host\n");
                s.push_str(&format!(
                    "  driver: {}\n  CUDA (driver API): {}\n",
                    t.driver
                        .as_ref()
                        .map(|d| d.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                    t.driver_cuda
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                ));
                for g in &t.gpus {
                    s.push_str(&format!(
                        "  GPU: {} (compute capability {}){}{}\n",
                        g.name,
                        g.cc.map(|c| c.to_string())
                            .unwrap_or_else(|| "unknown".into()),
                        g.uuid
                            .as_deref()
                            .map(|u| format!(" {u}"))
                            .unwrap_or_default(),
                        g.mig_mode
                            .as_deref()
                            .map(|m| format!(", MIG {m}"))
                            .unwrap_or_default(),
                    ));
                }
                if t.gpus.is_empty() {
                    s.push_str("  GPUs: none found\n");
                }
                print(&s)?;
            }
        }
        return Ok(exit::OK);
    }
    let scanner = crate::host::ElfArchScanner;
    let opts = crate::host::CheckOptions {
        knowledge: &matrix,
        pythons: a.host.python.clone(),
        scanner: Some(&scanner),
    };
    let results = crate::host::run_checks_with(reader.as_ref(), &profile, &opts);
    let findings = crate::host::check_findings(&results);
    let fails = findings
        .iter()
        .any(|f| f.severity >= a.fail_on && !f.message.starts_with("could not check"));
    match a.host.format {
        crate::host::HostFormat::Text => print(&crate::host::render_checks_text(&results))?,
        crate::host::HostFormat::Json => print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema_version": report::json::SCHEMA_VERSION,
                "profile": serde_json::from_str::<serde_json::Value>(&profile.to_json()).unwrap_or_default(),
                "checks": results,
                "findings": findings,
            }))?
        ))?,
        crate::host::HostFormat::Sarif => {
            let mut r = Report::new("host");
            r.findings = findings;
            r.normalize();
            print(&r.render(Format::Sarif, false))?;
        }
    }
    Ok(if fails { exit::FINDINGS } else { exit::OK })
}

type SpecFn<A> = fn(&A, &crate::spec::CommandContext) -> anyhow::Result<Vec<Finding>>;

fn spec<A: clap::Args>(c: &SpecCmd<A>, what: &str, run: SpecFn<A>) -> anyhow::Result<i32> {
    let matrix = load_matrix(&c.targets)?;
    let config = load_config(&c.config)?;
    let mut targets = resolve_targets(&c.targets, &matrix)?;
    if targets.is_empty() {
        targets = config_targets(&config, &matrix)?;
    }
    let fail_on = c.fail_on.or(config.fail_on).unwrap_or(Severity::Error);
    let mut ctx = crate::spec::CommandContext::new(targets, config, matrix)?;
    if c.scan_images {
        ctx.scan_images = Some(crate::spec::scan_images::ImageScan::new(
            crate::scan::ScanOptions::from_args(&c.source)?,
        ));
    }
    let mut report = Report::new(what.to_string());
    report.targets = ctx.targets.iter().map(|t| t.name.clone()).collect();
    report.findings = run(&c.args, &ctx)?;
    report.normalize();
    print(&report.render(c.format, report::use_color()))?;
    Ok(if report.fails(fail_on) {
        exit::FINDINGS
    } else {
        exit::OK
    })
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

fn cache(a: CacheArgs) -> anyhow::Result<i32> {
    match a.action {
        CacheAction::Clean { cache_dir } => {
            let dir = match cache_dir {
                Some(d) => d,
                None => crate::cache::default_dir()?,
            };
            let n = crate::cache::cache_clean(&dir)?;
            print(&format!(
                "removed {n} cached layer result(s) from {}\n",
                dir.display()
            ))?;
            Ok(exit::OK)
        }
    }
}
