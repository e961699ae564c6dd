//! Human-readable report, grouped by target. The caller decides colour (`--color`,
//! `NO_COLOR`, a terminal); every string from input is escaped with [`escape::field`].
//! With `-q` only the findings are printed.

use super::{escape, Report, Style};
use crate::finding::Severity;
use std::fmt::Write;

fn paint(s: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

pub fn render(report: &Report, style: Style) -> String {
    let color = style.color;
    let mut out = String::new();
    if !style.quiet {
        let _ = writeln!(
            out,
            "{}",
            paint(&escape::field(&report.subject), "1", color)
        );
        for line in &report.preamble {
            let _ = writeln!(out, "{}", escape::field(line));
        }
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
        // `-q`: no headings or "ok" lines; each finding names its target itself.
        match g {
            _ if style.quiet => {}
            Some(t) if fs.is_empty() => {
                let _ = writeln!(
                    out,
                    "\n{} {}",
                    paint("target", "1", color),
                    escape::field(t)
                );
                let _ = writeln!(out, "  {}", paint("ok: no findings", "32", color));
                continue;
            }
            Some(t) => {
                let _ = writeln!(
                    out,
                    "\n{} {}",
                    paint("target", "1", color),
                    escape::field(t)
                );
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
            let target = match (&f.target, style.quiet) {
                (Some(t), true) => format!("[{}] ", escape::field(t)),
                _ => String::new(),
            };
            let _ = write!(
                out,
                "{}{}[{} {}]: {target}{}",
                if style.quiet { "" } else { "  " },
                paint(label, code, color),
                escape::field(&f.rule),
                escape::field(&f.name),
                escape::field(&f.message)
            );
            if let Some(loc) = &f.location {
                let _ = write!(out, "\n      at {}", escape::field(&loc.to_string()));
            }
            if let Some(h) = &f.help {
                let _ = write!(out, "\n      help: {}", escape::field(h));
            }
            out.push('\n');
        }
    }
    if !style.quiet {
        // Built by the command from escaped fields already.
        out.push_str(&report.epilogue);
        let (e, w, i) = (
            report.count(Severity::Error),
            report.count(Severity::Warning),
            report.count(Severity::Info),
        );
        let scope = report
            .scope
            .as_deref()
            .map(|s| format!("{}: ", escape::field(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{scope}{}, {}, {i} info",
            crate::vocab::count(e, "error", "errors"),
            crate::vocab::count(w, "warning", "warnings")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Location;

    #[test]
    fn input_cannot_reach_the_terminal_raw_and_quiet_keeps_findings_only() {
        let mut r = Report::new("Dockerfile\x1b[2J");
        r.targets = vec!["T4".into()];
        r.findings = vec![crate::rules::find("GL101")
            .unwrap()
            .finding("base \x1b]0;pwned\x07 image\nerror[GL000]: forged")
            .with_location(Location::in_file("a\x1b[31m/Dockerfile", 3, 1))
            .with_help("pin \u{202e}it")];
        let out = render(&r, Style::default());
        assert!(!out.contains('\x1b') && !out.contains('\x07') && !out.contains('\u{202e}'));
        assert!(out.contains("\\x1b]0;pwned\\x07"), "{out}");
        assert_eq!(out.lines().filter(|l| l.contains("forged")).count(), 1);
        assert!(!out.lines().any(|l| l.starts_with("error[GL000]")));

        let quiet = render(
            &r,
            Style {
                color: false,
                quiet: true,
            },
        );
        assert!(quiet.contains("GL101"));
        // Only the finding, its location and help: no heading, blank line or summary.
        assert_eq!(quiet.lines().count(), 3, "{quiet}");
        assert!(quiet.starts_with("error[GL101 "), "{quiet}");
        assert!(!quiet.contains("target T4"), "{quiet}");
        assert!(!quiet.contains(" info") && !quiet.contains("ok: no findings"));
        assert!(!quiet.contains("Dockerfile\\x1b[2J\n"), "{quiet}");
    }
}
