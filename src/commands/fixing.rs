//! `--fix` / `--diff` after the first lint: the chosen edits of each linted file are written
//! back (atomically, never through a link) or printed as a unified diff.

use super::{print, runconfig::CommandContext};
use crate::cli::FixArgs;
use crate::finding::Finding;
use crate::fix::apply;
use crate::report::escape;

/// Apply (or, with `--diff`, print) the fixes of `findings`: the files rewritten, and whether
/// a fix could not be written.
pub(super) fn apply_fixes(
    findings: &[Finding],
    fix: &FixArgs,
    ctx: &CommandContext,
    quiet: bool,
) -> anyhow::Result<(usize, bool)> {
    let mut fix_failed = false;
    let linted = ctx.linted.borrow_mut().take().unwrap_or_default();
    let chosen = apply::choose(findings, fix.unsafe_fixes, &|f| linted.contains_key(f));
    let mut applied = 0;
    let mut files = 0;
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
                applied += chosen.fixes.get(file).copied().unwrap_or(0);
                files += 1;
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
    if fix.diff {
        if !quiet {
            eprintln!(
                "gpulint: {} fix{} would be applied to {} file{} (nothing written)",
                chosen.total(),
                if chosen.total() == 1 { "" } else { "es" },
                chosen.edits.len(),
                if chosen.edits.len() == 1 { "" } else { "s" },
            );
        }
    } else if !quiet {
        eprintln!(
            "gpulint: applied {applied} fix{} to {files} file{}",
            if applied == 1 { "" } else { "es" },
            if files == 1 { "" } else { "s" },
        );
    }
    Ok((files, fix_failed))
}
