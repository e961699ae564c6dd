//! `--fix` / `--diff`: which edits of the findings' fixes are applied, the unified diff they
//! make, and the atomic rewrite of a linted file. Like ruff: per finding the first fix whose
//! applicability is allowed (safe; also unsafe with `--unsafe-fixes`) and whose edits do not
//! overlap edits already chosen; a fix is applied whole or not at all.

use super::{Applicability, TextEdit};
use crate::finding::Finding;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The edits chosen for each file, and how many fixes they carry out in it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Chosen {
    pub edits: BTreeMap<String, Vec<TextEdit>>,
    pub fixes: BTreeMap<String, usize>,
}

impl Chosen {
    /// The fixes chosen, in every file.
    pub fn total(&self) -> usize {
        self.fixes.values().sum()
    }
}

/// Choose the edits to apply from `findings`, only into files `editable` accepts.
pub fn choose(findings: &[Finding], allow_unsafe: bool, editable: &dyn Fn(&str) -> bool) -> Chosen {
    let allowed =
        |a: Applicability| a == Applicability::Safe || (allow_unsafe && a == Applicability::Unsafe);
    let mut chosen = Chosen::default();
    for f in findings {
        for fix in f
            .fixes
            .iter()
            .filter(|x| allowed(x.applicability) && !x.edits.is_empty())
        {
            if !fix.edits.iter().all(|e| editable(&e.file)) {
                continue;
            }
            let fits = fix.edits.iter().all(|e| {
                chosen
                    .edits
                    .get(&e.file)
                    .is_none_or(|taken| taken.iter().all(|t| t == e || !overlaps(t, e)))
            });
            if !fits {
                continue;
            }
            for e in &fix.edits {
                let taken = chosen.edits.entry(e.file.clone()).or_default();
                // Two findings fixed by the same edit (GL102 and GL119 on one torch pin).
                if !taken.contains(e) {
                    taken.push(e.clone());
                }
            }
            *chosen.fixes.entry(fix.edits[0].file.clone()).or_default() += 1;
            break;
        }
    }
    for edits in chosen.edits.values_mut() {
        edits.sort_by_key(|e| (e.start, e.end));
    }
    chosen
}

/// Whether two edits touch the same bytes; two insertions at one offset count as touching,
/// since their order would be a guess.
fn overlaps(a: &TextEdit, b: &TextEdit) -> bool {
    (a.start < b.end && b.start < a.end) || a.start == b.start
}

/// `text` with `edits` (non-overlapping) applied, last to first by offset.
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    super::suggest::dockerfile_edit::apply(text, edits)
}

/// Lines of context around each change, as `diff -u` shows.
const CONTEXT: usize = 3;

/// One changed run of lines: old lines `start..start + removed.len()` become `added`.
struct Block<'a> {
    start: usize,
    removed: Vec<&'a str>,
    added: Vec<String>,
}

/// The unified diff (`diff -u`) that `edits` (sorted, non-overlapping) make of `old`, the
/// file shown as `file`; empty when they change nothing.
pub fn unified_diff(file: &str, old: &str, edits: &[TextEdit]) -> String {
    let lines: Vec<&str> = old.split_inclusive('\n').collect();
    let starts: Vec<usize> = lines
        .iter()
        .scan(0, |at, l| {
            let s = *at;
            *at += l.len();
            Some(s)
        })
        .collect();
    let line_start = |n: usize| starts.get(n).copied().unwrap_or(old.len());
    let line_of = |at: usize| starts.partition_point(|&s| s <= at).saturating_sub(1);
    // Whole old lines each edit touches, edits on shared lines together.
    let mut spans: Vec<(usize, usize, Vec<&TextEdit>)> = Vec::new();
    for e in edits {
        let first = if e.start == old.len() && old.ends_with('\n') || lines.is_empty() {
            lines.len()
        } else {
            line_of(e.start)
        };
        let last = if e.end > e.start && e.end == line_start(line_of(e.end)) {
            line_of(e.end)
        } else {
            (line_of(e.end) + 1).min(lines.len())
        }
        .max(first);
        match spans.last_mut() {
            Some((_, end, group)) if first < *end => {
                *end = (*end).max(last);
                group.push(e);
            }
            _ => spans.push((first, last, vec![e])),
        }
    }
    let mut blocks: Vec<Block> = Vec::new();
    for (first, last, group) in spans {
        let base = line_start(first);
        let region = &old[base..line_start(last)];
        let rebased: Vec<TextEdit> = group
            .iter()
            .map(|e| TextEdit {
                start: e.start - base,
                end: e.end - base,
                ..(*e).clone()
            })
            .collect();
        let new = apply(region, &rebased);
        let removed: Vec<&str> = region.split_inclusive('\n').collect();
        let added: Vec<&str> = new.split_inclusive('\n').collect();
        let prefix = removed
            .iter()
            .zip(&added)
            .take_while(|(a, b)| a == b)
            .count();
        let suffix = removed[prefix..]
            .iter()
            .rev()
            .zip(added[prefix..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let removed = removed[prefix..removed.len() - suffix].to_vec();
        let added: Vec<String> = added[prefix..added.len() - suffix]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if removed.is_empty() && added.is_empty() {
            continue;
        }
        blocks.push(Block {
            start: first + prefix,
            removed,
            added,
        });
    }
    if blocks.is_empty() {
        return String::new();
    }
    let name = crate::report::escape::field(diff_path(file));
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    // Blocks closer than two contexts share a hunk.
    let mut delta: isize = 0;
    let mut i = 0;
    while i < blocks.len() {
        let mut j = i + 1;
        while j < blocks.len()
            && blocks[j].start <= blocks[j - 1].start + blocks[j - 1].removed.len() + 2 * CONTEXT
        {
            j += 1;
        }
        let hunk = &blocks[i..j];
        let from = hunk[0].start.saturating_sub(CONTEXT);
        let last = &hunk[hunk.len() - 1];
        let to = (last.start + last.removed.len() + CONTEXT).min(lines.len());
        let mut body = String::new();
        let (mut old_count, mut new_count) = (0usize, 0usize);
        let mut at = from;
        for b in hunk {
            for l in &lines[at..b.start] {
                push_line(&mut body, ' ', l);
            }
            old_count += b.start - at;
            new_count += b.start - at;
            for l in &b.removed {
                push_line(&mut body, '-', l);
            }
            for l in &b.added {
                push_line(&mut body, '+', l);
            }
            old_count += b.removed.len();
            new_count += b.added.len();
            at = b.start + b.removed.len();
        }
        for l in &lines[at..to] {
            push_line(&mut body, ' ', l);
        }
        old_count += to - at;
        new_count += to - at;
        let new_from = (from as isize + delta) as usize;
        // An empty side is numbered by the line before it, as `diff -u` does.
        let number = |from: usize, count: usize| if count == 0 { from } else { from + 1 };
        out.push_str(&format!(
            "@@ -{},{old_count} +{},{new_count} @@\n",
            number(from, old_count),
            number(new_from, new_count)
        ));
        out.push_str(&body);
        delta += hunk
            .iter()
            .map(|b| b.added.len() as isize - b.removed.len() as isize)
            .sum::<isize>();
        i = j;
    }
    out
}

/// A file as a diff header names it after `a/` and `b/`: an absolute path without its
/// leading `/` (`a/tmp/x`, as `git diff --no-index` writes it), never `a//tmp/x`.
fn diff_path(file: &str) -> &str {
    file.trim_start_matches('/')
}

/// The name `--diff` gives a linted file (shown as `shown`, see
/// [`crate::report::paths::relative_to`]): relative to `cwd` when an absolute path lies
/// below it, as git names files; otherwise as shown.
pub fn diff_name(shown: &str, cwd: &Path) -> String {
    let p = Path::new(shown);
    match p.strip_prefix(cwd) {
        Ok(rel) if p.is_absolute() && !rel.as_os_str().is_empty() => {
            rel.to_string_lossy().into_owned()
        }
        _ => shown.to_string(),
    }
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// Replace the content of the linted file `path` by `new`, when it still holds `linted`:
/// never through a symlink, never anything but a regular file, atomically (a temporary file
/// beside it, renamed over it) and with its permissions kept.
pub fn rewrite(path: &Path, linted: &str, new: &str) -> std::io::Result<()> {
    let refuse = |why: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: {why}; not changed", path.display()),
        ))
    };
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return refuse("a symbolic link");
    }
    if !meta.is_file() {
        return refuse("not a regular file");
    }
    // The edits' offsets are offsets of the text that was linted: a file changed since (or
    // read with invalid UTF-8 replaced) is not edited.
    let now = crate::io_util::read_regular(path, crate::io_util::MAX_CONFIG_FILE)?;
    if now != linted.as_bytes() {
        return refuse("changed since it was linted, or not UTF-8 text");
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return refuse("not a file path");
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let tmp = dir.join(format!(
        ".{}.gpulint-fix.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(new.as_bytes())?;
        f.set_permissions(meta.permissions())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::{Fix, FixKind};

    fn edit(text: &str, from: &str, to: &str) -> TextEdit {
        let start = text.find(from).unwrap();
        TextEdit::new("f", text, start, start + from.len(), to).unwrap()
    }

    fn finding(fixes: Vec<(Vec<TextEdit>, Applicability)>) -> Finding {
        let mut f = crate::rules::runconfig::gl100_invalid_spec_file::META.finding("x".to_string());
        f.fixes = fixes
            .into_iter()
            .map(|(edits, applicability)| Fix {
                kind: FixKind::Package,
                replacement: String::new(),
                rationale: String::new(),
                basis: vec![],
                edits,
                applicability,
                change: None,
            })
            .collect();
        f
    }

    #[test]
    fn unsafe_fixes_need_asking_for_and_overlapping_fixes_are_applied_once() {
        let text = "a b c\n";
        let fs = vec![
            finding(vec![(vec![edit(text, "a", "A")], Applicability::Unsafe)]),
            finding(vec![(vec![edit(text, "b", "B")], Applicability::Safe)]),
            // Overlaps the fix above: its second fix, disjoint, is taken instead.
            finding(vec![
                (vec![edit(text, "b c", "X")], Applicability::Safe),
                (vec![edit(text, "c", "C")], Applicability::Safe),
            ]),
            // The same edit as an earlier fix: applied once, the finding counted fixed.
            finding(vec![(vec![edit(text, "b", "B")], Applicability::Safe)]),
            finding(vec![(vec![edit(text, "a", "Z")], Applicability::Manual)]),
        ];
        let safe = choose(&fs, false, &|_| true);
        assert_eq!(safe.total(), 3);
        assert_eq!(apply(text, &safe.edits["f"]), "a B C\n");
        let all = choose(&fs, true, &|_| true);
        assert_eq!(all.total(), 4);
        assert_eq!(apply(text, &all.edits["f"]), "A B C\n");
        assert_eq!(choose(&fs, true, &|_| false), Chosen::default());
    }

    #[test]
    fn the_diff_shows_each_change_with_three_lines_of_context() {
        let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let edits = vec![edit(&text, "l2\n", "two\n"), edit(&text, "l11", "eleven")];
        let d = unified_diff("f", &text, &edits);
        assert_eq!(
            d,
            "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n l4\n l5\n@@ -8,5 +8,5 @@\n l8\n l9\n l10\n-l11\n+eleven\n l12\n"
        );
        // An inserted line: only the insertion, numbered on the new side.
        let at = text.find("l4").unwrap();
        let ins = TextEdit::new("f", &text, at, at, "new\n").unwrap();
        let d = unified_diff("f", &text, &[ins]);
        assert_eq!(
            d,
            "--- a/f\n+++ b/f\n@@ -1,6 +1,7 @@\n l1\n l2\n l3\n+new\n l4\n l5\n l6\n"
        );
        // A last line without newline says so.
        let d = unified_diff("f", "a\nb", &[edit("a\nb", "b", "c")]);
        assert_eq!(
            d,
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        assert_eq!(unified_diff("f", "a\n", &[edit("a\n", "a", "a")]), "");
    }

    #[test]
    fn an_absolute_path_is_named_without_a_doubled_slash_or_relative_to_cwd_below_it() {
        let d = unified_diff("/abs/path/Dockerfile", "a\n", &[edit("a\n", "a", "b")]);
        assert!(
            d.starts_with("--- a/abs/path/Dockerfile\n+++ b/abs/path/Dockerfile\n"),
            "{d}"
        );
        let cwd = Path::new("/work/repo");
        assert_eq!(
            diff_name("/work/repo/sub/Dockerfile", cwd),
            "sub/Dockerfile"
        );
        assert_eq!(
            diff_name("/elsewhere/Dockerfile", cwd),
            "/elsewhere/Dockerfile"
        );
        assert_eq!(diff_name("sub/Dockerfile", cwd), "sub/Dockerfile");
    }

    #[test]
    fn a_symlink_or_a_changed_file_is_not_rewritten() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("Dockerfile");
        std::fs::write(&real, "FROM a\n").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(rewrite(&link, "FROM a\n", "FROM b\n").is_err());
        assert!(rewrite(&real, "FROM other\n", "FROM b\n").is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "FROM a\n");
        rewrite(&real, "FROM a\n", "FROM b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "FROM b\n");
        // Nothing left beside it.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }
}
