//! `--fix` / `--diff` after the first lint: the chosen edits of each linted file are written
//! back (atomically, never through a link) or printed as a unified diff.

use super::{print, runconfig::CommandContext};
use crate::cli::FixArgs;
use crate::finding::Finding;
use crate::fix::apply;
use crate::report::escape;

/// How many times `--fix` lints, fixes and lints again: fixes that touched the same text as
/// one applied before them are tried again on the edited text (ruff loops the same way).
pub(super) const MAX_PASSES: usize = 4;

/// What one pass of `--fix` wrote.
#[derive(Default)]
pub(super) struct Applied {
    pub(super) fixes: usize,
    pub(super) files: std::collections::BTreeSet<String>,
    /// A fix could not be written.
    pub(super) failed: bool,
}

/// Say on stderr what `--fix` applied over all its passes.
pub(super) fn report_applied(total: &Applied, quiet: bool) {
    if !quiet {
        let (n, files) = (total.fixes, total.files.len());
        eprintln!(
            "gpulint: applied {n} fix{} to {files} file{}",
            if n == 1 { "" } else { "es" },
            if files == 1 { "" } else { "s" },
        );
    }
}

/// Apply (or, with `--diff`, print) the fixes of `findings`: what was written, and whether a
/// fix could not be written.
pub(super) fn apply_fixes(
    findings: &[Finding],
    fix: &FixArgs,
    ctx: &CommandContext,
    quiet: bool,
) -> anyhow::Result<Applied> {
    let mut fix_failed = false;
    let linted = ctx.linted.borrow_mut().take().unwrap_or_default();
    let chosen = apply::choose(findings, fix.unsafe_fixes, &|f| linted.contains_key(f));
    let mut done = Applied::default();
    for (file, edits) in &chosen.edits {
        let old = &linted[file];
        let new = apply::apply(old, edits);
        if fix.diff {
            print(&apply::unified_diff(
                &apply::diff_name(file, &ctx.cwd),
                old,
                edits,
            ))?;
            continue;
        }
        let path = crate::report::paths::absolute(file, &ctx.root, &ctx.cwd);
        match apply::rewrite(&path, old, &new) {
            Ok(()) => {
                done.fixes += chosen.fixes.get(file).copied().unwrap_or(0);
                done.files.insert(file.clone());
            }
            Err(e) => {
                fix_failed = true;
                eprintln!(
                    "gpulint: error: cannot fix {}: {}",
                    escape::field(file),
                    escape::block(&e.to_string())
                );
            }
        }
    }
    if fix.diff && !quiet {
        eprintln!(
            "gpulint: {} fix{} would be applied to {} file{} (nothing written)",
            chosen.total(),
            if chosen.total() == 1 { "" } else { "es" },
            chosen.edits.len(),
            if chosen.edits.len() == 1 { "" } else { "s" },
        );
    }
    done.failed = fix_failed;
    Ok(done)
}
