//! Human-readable report, grouped by target. Honors NO_COLOR (the caller decides `color`).

use super::{escape_control as esc, Report};
use crate::finding::Severity;
use std::fmt::Write;

fn paint(s: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

pub fn render(report: &Report, color: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", paint(&esc(&report.subject), "1", color));
    for line in &report.preamble {
        let _ = writeln!(out, "{}", esc(line));
    }
    // Target-independent findings first, then one group per target in the given order.
    let mut groups: Vec<Option<&str>> = vec![None];
    groups.extend(report.targets.iter().map(|t| Some(t.as_str())));
    for f in &report.findings {
        let t = f.target.as_deref();
        if !groups.contains(&t) {
            groups.push(t);
        }
    }
    for g in groups {
        let fs: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.target.as_deref() == g)
            .collect();
        match g {
            Some(t) if fs.is_empty() => {
                let _ = writeln!(out, "\n{} {}", paint("target", "1", color), esc(t));
                let _ = writeln!(out, "  {}", paint("ok: no findings", "32", color));
                continue;
            }
            Some(t) => {
                let _ = writeln!(out, "\n{} {}", paint("target", "1", color), esc(t));
            }
            None if fs.is_empty() => continue,
            None => {
                let _ = writeln!(out, "\n{}", paint("all targets", "1", color));
            }
        }
        for f in fs {
            let (label, code) = match f.severity {
                Severity::Error => ("error", "31"),
                Severity::Warning => ("warning", "33"),
                Severity::Info => ("info", "36"),
            };
            let _ = write!(
                out,
                "  {}[{} {}]: {}",
                paint(label, code, color),
                f.rule,
                f.name,
                esc(&f.message)
            );
            if let Some(loc) = &f.location {
                let _ = write!(out, "\n      at {}", esc(&loc.to_string()));
            }
            if let Some(h) = &f.help {
                let _ = write!(out, "\n      help: {}", esc(h));
            }
            out.push('\n');
        }
    }
    let (e, w, i) = (
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info),
    );
    let _ = writeln!(out, "\n{e} error(s), {w} warning(s), {i} info");
    out
}
