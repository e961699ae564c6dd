//! The Dockerfile edits that carry out a base-image suggestion (the tag where the FROM, or the
//! ARG default it expands, writes it) and a torch-build suggestion (GL101, GL102, GL119): the
//! torch requirement the finding points at becomes `torch==V --index-url …/cuXYZ`, and pinned
//! torchvision / torchaudio of the same pip command move to the companions of V. Only a plain
//! `pip install` (or `uv pip install`) in a RUN line qualifies: no index or find-links option
//! already (that choice is the user's), no quoting, heredoc or variable at the requirement.
//! The edit is safe when it changes only the CUDA variant (same version) of a command that
//! installs only torch and its companions; otherwise (another version, or other packages that
//! would also be looked up on the torch index) it is unsafe.

use crate::finding::Finding;
use crate::fix::{Applicability, Change, FixKind, TagSite, TextEdit};

/// The rules whose torch-build fixes are edits of the torch requirement they point at.
const EDITABLE: [&str; 3] = ["GL101", "GL102", "GL119"];
const COMPANIONS: [&str; 2] = ["torchvision", "torchaudio"];
/// Options that choose where packages come from: an edit would fight them.
const INDEX_OPTIONS: [&str; 7] = [
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--torch-backend",
    "--index",
];

/// Attach edits to the torch-build fixes of `findings` that point into `file` (`text`).
pub fn attach(findings: &mut [Finding], file: &str, text: &str) {
    // Line starts once per file: a file may hold thousands of findings.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    for f in findings.iter_mut() {
        if !EDITABLE.contains(&f.rule.as_str()) {
            continue;
        }
        let Some(loc) = &f.location else { continue };
        if loc.file.as_deref() != Some(file) {
            continue;
        }
        for fix in f.fixes.iter_mut().filter(|x| x.edits.is_empty()) {
            if let Some(Change::BaseImage { sites, .. }) = &fix.change {
                fix.edits = tag_edit(file, text, &line_starts, sites)
                    .into_iter()
                    .collect();
            }
        }
        let (Some(line), Some(col)) = (loc.line, loc.column) else {
            continue;
        };
        let Some(at) = offset_of(text, &line_starts, line, col) else {
            continue;
        };
        let Some(words) = command_words(text, at) else {
            continue;
        };
        for fix in f
            .fixes
            .iter_mut()
            .filter(|x| x.kind == FixKind::Package && x.edits.is_empty())
        {
            if let Some((edits, applicability)) = edits_for(file, text, &words, at, fix) {
                fix.edits = edits;
                fix.applicability = applicability;
            }
        }
    }
}

/// The edit of the first site whose line holds its old text exactly once (a FROM or ARG
/// line written otherwise, e.g. through another variable, gets none).
fn tag_edit(file: &str, text: &str, line_starts: &[usize], sites: &[TagSite]) -> Option<TextEdit> {
    sites.iter().find_map(|s| {
        let start = *line_starts.get(s.line.checked_sub(1)? as usize)?;
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        if s.old.is_empty() || line.matches(s.old.as_str()).count() != 1 {
            return None;
        }
        let at = start + line.find(s.old.as_str())?;
        TextEdit::new(file, text, at, at + s.old.len(), &s.new)
    })
}

/// The byte offset of a 1-based line and byte column.
fn offset_of(text: &str, line_starts: &[usize], line: u32, col: u32) -> Option<usize> {
    let start = *line_starts.get(line.checked_sub(1)? as usize)?;
    let at = start + col.checked_sub(1)? as usize;
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    (at < line_end && text.is_char_boundary(at)).then_some(at)
}

/// One word of a shell command, with its byte range in the file.
#[derive(Debug, Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    start: usize,
}

/// The words of the shell command (between `&&`, `||`, `;`, `|` and the instruction's ends)
/// around byte `at`, when `at` is inside a shell-form RUN instruction without heredocs.
fn command_words(text: &str, at: usize) -> Option<Vec<Word<'_>>> {
    let continues = |line: &str| line.trim_end().ends_with('\\');
    // The instruction: back over continued lines to its first line, forward to its last.
    let mut first = text[..at].rfind('\n').map_or(0, |i| i + 1);
    while first > 0 {
        let prev = text[..first - 1].rfind('\n').map_or(0, |i| i + 1);
        if !continues(&text[prev..first - 1]) {
            break;
        }
        first = prev;
    }
    let mut end = at;
    loop {
        let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let line_start = text[..line_end].rfind('\n').map_or(0, |i| i + 1);
        if line_end == text.len() || !continues(&text[line_start..line_end]) {
            end = line_end;
            break;
        }
        end = line_end + 1;
    }
    let instruction = &text[first..end];
    let keyword = instruction.trim_start();
    if !keyword
        .get(..4)
        .is_some_and(|k| k.eq_ignore_ascii_case("RUN "))
        || instruction.contains("<<")
        || keyword[4..].trim_start().starts_with('[')
    {
        return None;
    }
    // Words of the instruction, then the command around `at`.
    let mut words: Vec<Word> = Vec::new();
    let mut i = first;
    let bytes = text.as_bytes();
    while i < end {
        while i < end && (bytes[i] as char).is_ascii_whitespace() {
            i += 1;
        }
        let s = i;
        while i < end && !(bytes[i] as char).is_ascii_whitespace() {
            i += 1;
        }
        if s < i && &text[s..i] != "\\" {
            words.push(Word {
                text: &text[s..i],
                start: s,
            });
        }
    }
    let here = words.iter().position(|w| w.start == at)?;
    let separator = |w: &Word| matches!(w.text, "&&" | "||" | ";" | "|") || w.text.ends_with(';');
    let from = words[..here]
        .iter()
        .rposition(separator)
        .map_or(1, |i| i + 1);
    let to = words[here..]
        .iter()
        .position(separator)
        .map_or(words.len(), |i| here + i);
    Some(words[from..to].to_vec())
}

/// The name and pinned version of a requirement word (`torch==2.6.0` → ("torch", "2.6.0")).
fn requirement(word: &str) -> (String, Option<&str>) {
    let end = word
        .find(['=', '<', '>', '~', '!', '[', ';', '@'])
        .unwrap_or(word.len());
    let pinned = word[end..].strip_prefix("==");
    (word[..end].to_ascii_lowercase().replace('_', "-"), pinned)
}

/// The edits for one fix, and whether they are safe.
fn edits_for(
    file: &str,
    text: &str,
    words: &[Word],
    at: usize,
    fix: &crate::fix::Fix,
) -> Option<(Vec<TextEdit>, Applicability)> {
    // The build, from the fix's structured change; the companion pins from its install line.
    let Some(Change::TorchBuild {
        version, index_url, ..
    }) = &fix.change
    else {
        return None;
    };
    let (version, url) = (version.as_str(), index_url.as_str());
    let parts: Vec<&str> = fix.replacement.split_whitespace().collect();
    let install = words.iter().position(|w| w.text == "install")?;
    let installer = words[..install]
        .iter()
        .any(|w| w.text.ends_with("pip") || w.text.ends_with("pip3") || w.text == "uv");
    if !installer {
        return None;
    }
    let args = &words[install + 1..];
    if args.iter().any(|w| {
        INDEX_OPTIONS
            .iter()
            .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
            || w.text.contains('$')
            || w.text.starts_with(['"', '\''])
    }) {
        return None;
    }
    let torch = args.iter().find(|w| w.start == at)?;
    let (name, old_version) = requirement(torch.text);
    if name != "torch" || torch.text.contains("://") {
        return None;
    }
    let mut edits = vec![TextEdit::new(
        file,
        text,
        torch.start,
        torch.start + torch.text.len(),
        &format!("torch=={version} --index-url {url}"),
    )?];
    // Requirement files and other packages would be looked up on the torch index too.
    let mut others = false;
    for w in args.iter().filter(|w| w.start != at) {
        if w.text.starts_with('-') {
            others |= matches!(w.text, "-r" | "--requirement" | "-c" | "--constraint")
                || w.text.starts_with("--requirement=");
            continue;
        }
        let (n, pinned) = requirement(w.text);
        if !COMPANIONS.contains(&n.as_str()) {
            others = true;
            continue;
        }
        let new = parts.iter().find_map(|p| p.strip_prefix(&format!("{n}==")));
        if let (Some(old), Some(new)) = (pinned, new) {
            if old != new {
                edits.push(TextEdit::new(
                    file,
                    text,
                    w.start,
                    w.start + w.text.len(),
                    &format!("{n}=={new}"),
                )?);
            }
        }
    }
    let same_version = old_version.is_some_and(|v| v.split('+').next() == Some(version));
    let applicability = if same_version && !others && edits.len() == 1 {
        Applicability::Safe
    } else {
        Applicability::Unsafe
    };
    Some((edits, applicability))
}

/// `text` with `edits` applied (non-overlapping; applied from the end).
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.start));
    let mut out = text.to_string();
    for e in sorted {
        out.replace_range(e.start..e.end, &e.new_text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runconfig::testutil::{dockerfile, target};

    fn fixed(text: &str, rule: &str, cc: &str) -> Vec<(String, Applicability)> {
        let targets = vec![target("pool", &[cc], Some("575.51.03"))];
        let mut f = dockerfile(text, rule, targets);
        attach(&mut f, "Dockerfile", text);
        f.iter()
            .flat_map(|f| &f.fixes)
            .filter(|x| !x.edits.is_empty())
            .map(|x| (apply(text, &x.edits), x.applicability))
            .collect()
    }

    #[test]
    fn the_edited_dockerfile_relints_clean_for_the_rule() {
        let text = "FROM python:3.12\nRUN pip install --no-cache-dir torch==2.6.0 \\\n    torchvision==0.21.0 && python -c 'import torch'\n";
        let edited = fixed(text, "GL119", "12.0");
        // The nearest release first: 2.7.0's cu128 build.
        assert!(edited[0]
            .0
            .contains("torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128"));
        for (new, applicability) in &edited {
            // A new torch release: unsafe, and the companion moves with it.
            assert_eq!(*applicability, Applicability::Unsafe);
            assert!(
                new.contains(" --index-url https://download.pytorch.org/whl/cu"),
                "{new}"
            );
            assert!(!new.contains("torchvision==0.21.0"), "{new}");
            assert!(new.ends_with("&& python -c 'import torch'\n"), "{new}");
            let again = dockerfile(
                new,
                "GL119",
                vec![target("pool", &["12.0"], Some("575.51.03"))],
            );
            assert!(again.is_empty(), "{new}: {again:?}");
        }
    }

    #[test]
    fn pinning_only_the_variant_is_safe_and_removes_gl102() {
        let text = "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.7.0\n";
        let edited = fixed(text, "GL102", "9.0");
        assert_eq!(edited.len(), 1, "{edited:?}");
        let (new, applicability) = &edited[0];
        assert_eq!(*applicability, Applicability::Safe);
        assert_eq!(
            new,
            "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu126\n"
        );
        assert!(dockerfile(new, "GL102", vec![]).is_empty());
    }

    #[test]
    fn an_install_that_already_chooses_an_index_or_is_not_plain_gets_no_edit() {
        for text in [
            "FROM python:3.12\nRUN pip install -i https://mirror/simple torch==2.6.0\n",
            "FROM python:3.12\nRUN pip install \"torch==2.6.0\"\n",
            "FROM python:3.12\nRUN [\"pip\", \"install\", \"torch==2.6.0\"]\n",
        ] {
            assert!(fixed(text, "GL119", "12.0").is_empty(), "{text}");
        }
        // Another package in the command would be looked up on the torch index: unsafe.
        let text = "FROM python:3.12\nRUN pip install numpy torch==2.7.0\n";
        let edited = fixed(text, "GL102", "9.0");
        assert!(
            edited.iter().all(|(_, a)| *a == Applicability::Unsafe),
            "{edited:?}"
        );
    }
}
