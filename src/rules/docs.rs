//! The rule pages under `docs/rules/`: one Markdown page per rule and an index, generated from
//! each rule's [`RuleDoc`](crate::rule_meta::RuleDoc) so the docs cannot drift from `gpulint
//! explain` and SARIF. A test compares the checked-in pages with these renderings;
//! `UPDATE_DOCS=1 cargo test --lib rules::docs` rewrites them (ruff's generated-docs pattern).

use super::{Check, Rule, RULES};
use crate::rule_meta::{wrap, RuleMeta, DOCS_DIR};

/// Markdown lines are wrapped here so that a change to one sentence shows as a small diff.
const WIDTH: usize = 100;

const GENERATED: &str = "<!-- Generated from the rule's META in src/rules/ by \
`UPDATE_DOCS=1 cargo test --lib rules::docs`; edit the rule, not this file. -->";

/// Which command runs a rule, as a reader of the docs needs it.
fn family(check: &Check) -> String {
    if let Check::Host {
        runs_on, explains, ..
    } = check
    {
        let mut s = format!("host: `gpulint host --check` ({})", runs_on.describe());
        if !explains.is_empty() {
            s.push_str(&format!(
                "; its problem explains {} (reported as evidence under it, not as errors of their own)",
                explains.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        return s;
    }
    match check {
        Check::Input => "input: reported when part of the input cannot be read",
        Check::Suppression => "suppressions: reported by `gpulint lint` after the spec rules",
        Check::Baseline => {
            "baseline: reported by a checking command given `--baseline FILE` (`lint`, `image`, …)"
        }
        Check::Fleet => {
            "fleet: reported where the fleet is read from the cluster's nodes (`--fleet-from-nodes`, `gpulint fleet`)"
        }
        Check::Image(..) => "image: `gpulint image`",
        Check::Spec(_) => {
            "spec: `gpulint lint` (Dockerfiles, compose files, Kubernetes manifests, run lines)"
        }
        Check::Host { .. } => unreachable!("handled above"),
    }
    .to_string()
}

fn paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|p| wrap(p, WIDTH, ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The page `docs/rules/GLxxx.md` for one rule.
pub fn rule_page(rule: &Rule) -> String {
    let m: &RuleMeta = rule.meta;
    let d = &m.doc;
    let mut s = format!("# {} {}\n\n{GENERATED}\n\n", m.code, m.name);
    s.push_str(&paragraphs(&format!(
        "{}.",
        m.summary.trim_end_matches('.')
    )));
    s.push_str(&format!(
        "\n- Default severity: **{}**{}\n- Family: {}\n",
        m.default_severity,
        if m.other_severities.is_empty() {
            String::new()
        } else {
            let o: Vec<String> = m.other_severities.iter().map(|s| s.to_string()).collect();
            format!(
                " (also reported as {} where the text below says)",
                o.join(", ")
            )
        },
        family(&rule.check)
    ));
    for (head, body) in [
        ("What", d.what),
        ("Why", d.why),
        ("Example", d.example),
        ("Fix", d.fix),
    ] {
        s.push_str(&format!("\n## {head}\n\n{}", paragraphs(body)));
    }
    s.push_str("\n## Sources\n\n");
    for u in d.sources {
        s.push_str(&format!("- <{u}>\n"));
    }
    s
}

/// `docs/rules/README.md`: every rule with its severity and summary, linked to its page.
pub fn index_page() -> String {
    let mut s = format!(
        "# gpulint rules\n\n{GENERATED}\n\n\
         Codes are stable and never reused. `gpulint explain CODE` prints the same text as \
         these pages.\n\n\
         | Code | Name | Severity | Summary |\n|---|---|---|---|\n"
    );
    for r in RULES {
        let m = r.meta;
        s.push_str(&format!(
            "| [{code}]({code}.md) | {} | {} | {} |\n",
            m.name,
            m.severity_label(),
            m.summary.replace('|', "\\|"),
            code = m.code
        ));
    }
    s.push_str(
        "\n## Turning a rule off or suppressing a finding\n\n\
         In `.gpulint.toml`, `[rules]` switches a rule off or changes its severity \
         (`GL114 = \"off\"`, `GL109 = \"error\"`; values: off, on, error, warning, info), and \
         `[[ignore]]` entries (`rule`, `paths`, `reason`) drop a rule's findings under some \
         paths (relative to the config's directory). In a Dockerfile, compose file or \
         manifest, `# gpulint ignore=GL101 reason` suppresses the next statement and \
         `# gpulint ignore-file=GL101` the whole file. A rule may be named by its code or its \
         name (`GL103` or `driver-in-image`) everywhere. A suppression that matches no \
         finding is itself reported ([GL199](GL199.md)); an `[[ignore]]` entry only by a run \
         that could have used it, not by one over other files.\n",
    );
    s
}

/// Every generated file as (path relative to the repository root, content).
pub fn generated_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = RULES
        .iter()
        .map(|r| (r.meta.doc_path(), rule_page(r)))
        .collect();
    files.push((format!("{DOCS_DIR}/README.md"), index_page()));
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Fails when a checked-in page differs from its rendering, is missing, or belongs to no
    /// rule. With `UPDATE_DOCS=1` it rewrites the folder instead.
    #[test]
    fn checked_in_rule_docs_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join(DOCS_DIR);
        let files = generated_files();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.extension().is_some_and(|e| e == "md") {
                    std::fs::remove_file(p).unwrap();
                }
            }
            for (path, text) in &files {
                std::fs::write(root.join(path), text).unwrap();
            }
        }
        let mut stale = Vec::new();
        for (path, text) in &files {
            match std::fs::read_to_string(root.join(path)) {
                Ok(on_disk) if on_disk == *text => {}
                Ok(_) => stale.push(format!("{path} differs")),
                Err(_) => stale.push(format!("{path} is missing")),
            }
        }
        let expected: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let rel = format!("{DOCS_DIR}/{}", entry.file_name().to_string_lossy());
            if !expected.contains(&rel.as_str()) {
                stale.push(format!("{rel} belongs to no rule"));
            }
        }
        assert!(
            stale.is_empty(),
            "docs/rules is stale; run `UPDATE_DOCS=1 cargo test --lib rules::docs`: {stale:?}"
        );
    }

    #[test]
    fn a_page_has_every_part_and_links_its_sources() {
        let rule = RULES
            .iter()
            .find(|r| r.meta.code == "GL108")
            .expect("GL108 in the table");
        let page = rule_page(rule);
        for head in ["## What", "## Why", "## Example", "## Fix", "## Sources"] {
            assert!(page.contains(head), "{head} missing:\n{page}");
        }
        assert!(page.starts_with("# GL108 unquoted-version-specifier\n"));
        assert!(page.contains("Default severity: **error**"));
        for u in rule.meta.doc.sources {
            assert!(page.contains(&format!("- <{u}>")), "{u} not linked");
        }
        let index = index_page();
        assert!(index.contains("| [GL108](GL108.md) | unquoted-version-specifier | error |"));
        assert_eq!(index.matches("](GL").count(), RULES.len() + 1); // + the GL199 link below
    }
}
