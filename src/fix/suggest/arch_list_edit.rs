//! The edit behind a GL107 fix in torch's syntax: the value of `TORCH_CUDA_ARCH_LIST` in the
//! Dockerfile (`ENV`/`ARG TORCH_CUDA_ARCH_LIST=…`, the legacy `ENV TORCH_CUDA_ARCH_LIST …`, or
//! an assignment prefixed to a RUN command) becomes the list that covers the targets. GL107
//! reports a list written at several places once, so every place that writes the same value
//! is edited together (the finding goes only when all of them change); a value built from a
//! variable, or a finding whose line writes no such value, gets no edit.

use super::arch_list::Syntax;
use crate::finding::Finding;
use crate::fix::{Change, TextEdit};

const NAME: &str = "TORCH_CUDA_ARCH_LIST";

/// Attach edits to GL107's torch-syntax fixes of `findings` that point into `file` (`text`).
pub fn attach(findings: &mut [Finding], file: &str, text: &str) {
    for f in findings.iter_mut().filter(|f| f.rule == "GL107") {
        let Some(line) = f
            .location
            .as_ref()
            .filter(|l| l.file.as_deref() == Some(file))
            .and_then(|l| l.line)
        else {
            continue;
        };
        let Some(old) = value_on_line(text, line) else {
            continue;
        };
        for fix in f.fixes.iter_mut().filter(|x| x.edits.is_empty()) {
            let Some(Change::ArchList {
                syntax: Syntax::Torch,
                list,
            }) = &fix.change
            else {
                continue;
            };
            let merged = merged(&old, list);
            fix.edits = edits(file, text, &old, &merged);
            if !fix.edits.is_empty() && merged != *list {
                fix.rationale.push_str(&format!(
                    "; the edit keeps the list's other entries: \"{merged}\""
                ));
            }
        }
    }
}

/// A value as written: its text without quotes and the byte range of the text to replace
/// (the quotes included, so the new value is written quoted).
#[derive(Debug, Clone, PartialEq)]
struct Written {
    value: String,
    start: usize,
    end: usize,
}

/// Every place `text` writes `TORCH_CUDA_ARCH_LIST` (as `NAME=value` or ENV's `NAME value`).
fn writes(text: &str) -> Vec<Written> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(NAME) {
        // The whole name: not `MY_TORCH_CUDA_ARCH_LIST`, not `$TORCH_CUDA_ARCH_LIST`.
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '{') {
            continue;
        }
        let rest = &text[at + NAME.len()..];
        let (skip, legacy) = if rest.starts_with('=') {
            (1, false)
        } else if rest.starts_with([' ', '\t']) {
            // `ENV NAME value` (the legacy form) only: the instruction must be ENV.
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let head = text[line_start..at].trim();
            if !head.eq_ignore_ascii_case("ENV") {
                continue;
            }
            (
                rest.len() - rest.trim_start_matches([' ', '\t']).len(),
                true,
            )
        } else {
            continue;
        };
        let start = at + NAME.len() + skip;
        let v = &text[start..];
        let (value, len) = match v.chars().next() {
            Some(q @ ('"' | '\'')) => match v[1..].find(q) {
                Some(close) => (v[1..1 + close].to_string(), close + 2),
                None => continue,
            },
            _ => {
                let end = if legacy {
                    v.find(['\n', '\r']).unwrap_or(v.len())
                } else {
                    v.find(|c: char| c.is_whitespace()).unwrap_or(v.len())
                };
                (v[..end].trim_end().to_string(), v[..end].trim_end().len())
            }
        };
        // A value built from a variable or escaped is not ours to rewrite.
        if value.is_empty() || value.contains(['$', '\\', '`']) {
            continue;
        }
        out.push(Written {
            value,
            start,
            end: start + len,
        });
    }
    out
}

/// The value the 1-based `line` writes, if it writes exactly one.
fn value_on_line(text: &str, line: u32) -> Option<String> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let on: Vec<Written> = writes(text)
        .into_iter()
        .filter(|w| w.start >= start && w.start <= end)
        .collect();
    match on.as_slice() {
        [one] => Some(one.value.clone()),
        _ => None,
    }
}

/// The covering `list` plus every entry of `old` it lacks, ordered by compute capability
/// (entries that are not numbers, such as `Ampere`, first): a fix adds the targets' GPUs and
/// takes nothing away that the list was built for.
fn merged(old: &str, list: &str) -> String {
    let split = |t: &str| -> Vec<String> {
        t.split([';', ' ', '\t'])
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    };
    let key = |e: &str| e.trim_end_matches("+PTX").to_ascii_lowercase();
    let mut entries = split(list);
    for e in split(old) {
        if !entries.iter().any(|x| key(x) == key(&e)) {
            entries.push(e);
        }
    }
    let order = |e: &String| -> (u8, u32, u32, String) {
        let k = key(e);
        let (maj, min) = k.split_once('.').unwrap_or((&k, "0"));
        let digits = |t: &str| t.trim_end_matches(char::is_alphabetic).parse::<u32>().ok();
        match (digits(maj), digits(min)) {
            (Some(a), Some(b)) => (1, a, b, k.clone()),
            _ => (0, 0, 0, k.clone()),
        }
    };
    entries.sort_by_key(order);
    entries.join(";")
}

/// One edit per place that writes `old`, each to the quoted `list`.
fn edits(file: &str, text: &str, old: &str, list: &str) -> Vec<TextEdit> {
    writes(text)
        .into_iter()
        .filter(|w| w.value == old)
        .filter_map(|w| TextEdit::new(file, text, w.start, w.end, &format!("\"{list}\"")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_is_found_and_variables_are_not() {
        let t = "FROM x\nENV TORCH_CUDA_ARCH_LIST=\"7.5;8.0\"\nARG TORCH_CUDA_ARCH_LIST='8.6'\nENV TORCH_CUDA_ARCH_LIST 7.0 7.5+PTX\nRUN TORCH_CUDA_ARCH_LIST=8.0 pip install .\nENV TORCH_CUDA_ARCH_LIST=${A}\nENV MY_TORCH_CUDA_ARCH_LIST=9.0\nRUN echo $TORCH_CUDA_ARCH_LIST\n";
        let values: Vec<String> = writes(t).into_iter().map(|w| w.value).collect();
        assert_eq!(values, ["7.5;8.0", "8.6", "7.0 7.5+PTX", "8.0"]);
        assert_eq!(value_on_line(t, 2).as_deref(), Some("7.5;8.0"));
        assert_eq!(value_on_line(t, 4).as_deref(), Some("7.0 7.5+PTX"));
        assert_eq!(value_on_line(t, 6), None);
        assert_eq!(value_on_line(t, 1), None);
    }

    #[test]
    fn the_list_keeps_its_other_entries() {
        assert_eq!(merged("7.0;7.5;8.0", "7.5;9.0+PTX"), "7.0;7.5;8.0;9.0+PTX");
        assert_eq!(
            merged("8.0 8.6+PTX", "7.5;8.6;9.0+PTX"),
            "7.5;8.0;8.6;9.0+PTX"
        );
        assert_eq!(
            merged("Ampere;9.0a", "7.5;9.0+PTX"),
            "Ampere;7.5;9.0+PTX;9.0a"
        );
        assert_eq!(merged("7.5", "7.5;9.0+PTX"), "7.5;9.0+PTX");
    }

    #[test]
    fn every_copy_of_the_value_is_edited_and_quoted() {
        let t = "FROM a AS b\nENV TORCH_CUDA_ARCH_LIST=\"8.0\"\nFROM a\nRUN TORCH_CUDA_ARCH_LIST=8.0 pip install .\nENV TORCH_CUDA_ARCH_LIST=\"9.0\"\n";
        let e = edits("Dockerfile", t, "8.0", "8.0;9.0+PTX");
        assert_eq!(e.len(), 2);
        let mut out = t.to_string();
        for x in e.iter().rev() {
            out.replace_range(x.start..x.end, &x.new_text);
        }
        assert_eq!(
            out,
            "FROM a AS b\nENV TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\"\nFROM a\nRUN TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\" pip install .\nENV TORCH_CUDA_ARCH_LIST=\"9.0\"\n"
        );
    }
}
