//! Command handlers: each takes validated arguments, calls the library, prints through a
//! reporter and returns the exit code.

use crate::cli::{
    Cli, Command, ExplainArgs, ImageArgs, InventoryArgs, InventoryFormat, RulesArgs, TargetArgs,
};
use crate::exit;
use crate::matrix::Matrix;
use crate::report::{self, Report};
use crate::rules;
use crate::source::Platform;
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

fn parse_platform(p: &Option<String>) -> anyhow::Result<Option<Platform>> {
    p.as_deref()
        .map(|s| s.parse::<Platform>().map_err(anyhow::Error::msg))
        .transpose()
}

/// Targets from flags, a host profile or a fleet file. Empty = none given.
pub fn resolve_targets(t: &TargetArgs, matrix: &Matrix) -> anyhow::Result<Vec<Target>> {
    if let Some(f) = &t.fleet {
        return crate::target::cli::fleet_from_file(matrix, f);
    }
    if let Some(h) = &t.host {
        return Ok(vec![crate::target::host_profile_target(matrix, h)?]);
    }
    crate::target::cli::targets_from_flags(matrix, &t.gpus, t.driver.as_deref(), None)
}

fn inventory(a: InventoryArgs) -> anyhow::Result<i32> {
    let platform = parse_platform(&a.source.platform)?;
    let inv = crate::scan::scan_image(&a.source.image, platform.as_ref())?;
    match a.format {
        InventoryFormat::Json => print(&format!("{}\n", serde_json::to_string_pretty(&inv)?))?,
        InventoryFormat::Text => print(&crate::inventory::render_text(&inv))?,
    }
    Ok(exit::OK)
}

fn image(a: ImageArgs) -> anyhow::Result<i32> {
    let matrix = load_matrix(&a.targets)?;
    let mut targets = resolve_targets(&a.targets, &matrix)?;
    if targets.is_empty() && !a.targets.no_local_host {
        if let Some(t) = crate::target::local_host_target(&matrix) {
            targets.push(t);
        }
    }
    let platform = parse_platform(&a.source.platform)?;
    let inv = crate::scan::scan_image(&a.source.image, platform.as_ref())?;
    let ctx = rules::context::ImageContext {
        inventory: &inv,
        matrix: &matrix,
        target: None,
    };
    let reqs = rules::requirements::compute(&ctx);
    let mut report = Report::new(format!("image {}", inv.image.reference));
    report.targets = targets.iter().map(|t| t.name.clone()).collect();
    report.findings = rules::check_image(&inv, &matrix, &targets);
    for e in &inv.errors {
        report.findings.push(scan_error_finding(e));
    }
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
    Ok(if report.fails(a.output.fail_on) {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

/// A problem met while reading the image becomes a warning: the verdict may be incomplete.
fn scan_error_finding(e: &str) -> crate::finding::Finding {
    crate::finding::Finding {
        rule: "GL000".into(),
        name: "unreadable-input".into(),
        severity: crate::finding::Severity::Warning,
        message: format!("part of the image could not be read, the result is partial: {e}"),
        target: None,
        location: None,
        help: None,
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
