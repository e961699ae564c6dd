//! Rows known by inference rather than stated by a document (`basis = "inferred"`), listed
//! with their evidence so `gpulint explain` can show what a verdict rests on, and the words a
//! finding adds when its verdict rests on one.

use super::{Basis, Facts, Matrix, CUDA_DRIVER, FORWARD_COMPAT, GPUS};

/// One inferred row: where it is and why it is believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferredRow {
    /// The data file, e.g. `cuda_driver.toml`.
    pub file: &'static str,
    /// The row as the file names it, e.g. `release 13.5.0`.
    pub row: String,
    pub source: String,
    /// The evidence the row is inferred from (its `note`).
    pub evidence: String,
}

/// The data files whose rows each rule's verdicts read. Rules not listed read none of the
/// files that can hold inferred rows today.
const RULE_TABLES: &[(&str, &[&str])] = &[
    ("GL001", &[GPUS]),
    ("GL002", &[CUDA_DRIVER]),
    ("GL003", &[CUDA_DRIVER, GPUS]),
    ("GL005", &[CUDA_DRIVER, FORWARD_COMPAT, GPUS]),
    ("GL010", &[CUDA_DRIVER]),
    ("GL011", &[CUDA_DRIVER, GPUS]),
    ("GL201", &[GPUS]),
    ("GL212", &[CUDA_DRIVER]),
    ("GL215", &[CUDA_DRIVER, GPUS]),
];

impl Matrix {
    /// Every inferred row of the files that can hold one, in file order.
    pub fn inferred_rows(&self) -> Vec<InferredRow> {
        let mut out = Vec::new();
        let inferred = |b: Option<Basis>| b == Some(Basis::Inferred);
        for r in self.releases.iter().filter(|r| inferred(r.basis)) {
            out.push(InferredRow {
                file: CUDA_DRIVER,
                row: format!("release {}", r.version),
                source: r.source.clone(),
                evidence: r.note.clone().unwrap_or_default(),
            });
        }
        for p in &self.fc_packages {
            let whole = inferred(p.basis);
            if whole || !p.inferred_cells.is_empty() {
                let cells = if whole {
                    String::new()
                } else {
                    let b: Vec<String> = p.inferred_cells.iter().map(|b| format!("R{b}")).collect();
                    format!(" (cells {})", b.join(", "))
                };
                out.push(InferredRow {
                    file: FORWARD_COMPAT,
                    row: format!("package {}{cells}", p.cuda),
                    source: p.source.clone(),
                    evidence: p.note.clone().unwrap_or_default(),
                });
            }
        }
        for g in self.gpus.iter().filter(|g| inferred(g.basis)) {
            out.push(InferredRow {
                file: GPUS,
                row: format!("gpu {}", g.name),
                source: g.source.clone(),
                evidence: g.note.clone().unwrap_or_default(),
            });
        }
        out
    }
}

impl Facts {
    /// The inferred rows a rule's verdicts may rest on (see [`RULE_TABLES`]).
    pub fn inferred_rows_for_rule(&self, code: &str) -> Vec<InferredRow> {
        let Some((_, files)) = RULE_TABLES.iter().find(|(c, _)| *c == code) else {
            return Vec::new();
        };
        self.matrix()
            .inferred_rows()
            .into_iter()
            .filter(|r| files.contains(&r.file))
            .collect()
    }
}

/// The words a finding of `code` adds when its verdict rests on an inferred row (`what` names
/// the row, e.g. "CUDA 13.5 -> driver R620"): the verdict is only as good as the inference,
/// and `gpulint explain` shows the evidence.
pub fn inferred_note(code: &str, what: &str) -> String {
    format!(" [rests on an inferred row, not a document's statement: {what}; `gpulint explain {code}` shows the evidence]")
}

/// The section `gpulint explain <code>` adds for a rule with inferred rows under it; `None`
/// when it has none.
pub fn explain_section(facts: &Facts, code: &str, width: usize) -> Option<String> {
    let rows = facts.inferred_rows_for_rule(code);
    if rows.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Inferred rows (no document states them; a verdict resting on one says so):\n",
    );
    for r in rows {
        out.push_str(&format!("  {} {}\n", r.file, r.row));
        out.push_str(&crate::rule_meta::wrap(
            &format!("basis: inferred. {}", r.evidence),
            width,
            "    ",
        ));
        // The URL alone on its line, as under "Sources:" (only a URL may pass the width).
        out.push_str(&format!("    {}\n", r.source));
    }
    Some(out)
}

#[cfg(test)]
#[path = "inferred_tests.rs"]
mod tests;
