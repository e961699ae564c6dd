//! Format-preserving YAML edits: the text is never re-serialised. Block structure is read from
//! indentation (the way the parsers' positions are found, `runconfig::yamlloc`), new lines are
//! written at the indentation of their neighbours (the file's own step for deeper levels) and
//! inserted after the last line of the mapping they join, so comments, quoting and key order
//! stay as they are. Anything the plan did not expect (a flow mapping `{…}` where a block is
//! needed, a key that already holds a value, a tab) makes the edit `None`: no edit rather than
//! a guess.

use crate::fix::plan::{At, YamlLeaf, YamlMap};

/// A YAML text by lines.
pub(super) struct Doc<'a> {
    text: &'a str,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
    /// The line ending new lines use: the file's own.
    pub(super) eol: &'static str,
    /// How much deeper a nested level is indented in this file.
    step: usize,
}

/// One mapping: its entries are the lines `first..=last` whose key starts at column `col`
/// (0-based; the first line may open a sequence item, `- key:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Map {
    pub(super) first: u32,
    pub(super) last: u32,
    pub(super) col: usize,
}

/// Where new entries of a mapping go.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// An existing block mapping.
    Map(Map),
    /// A key with nothing under it yet: entries go after its line at this column.
    Empty { after: u32, col: usize },
}

/// A text insertion or replacement: bytes `start..end` become `text`.
pub(super) type Splice = (usize, usize, String);

impl<'a> Doc<'a> {
    pub(super) fn new(text: &'a str) -> Doc<'a> {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .filter(|&s| s < text.len() || s == 0)
            .collect();
        let mut d = Doc {
            text,
            starts,
            eol: if text.contains("\r\n") { "\r\n" } else { "\n" },
            step: 2,
        };
        d.step = d.guess_step();
        d
    }

    fn lines(&self) -> u32 {
        self.starts.len() as u32
    }

    /// Line `n` (1-based) without its line ending; empty past the end.
    pub(super) fn line(&self, n: u32) -> &'a str {
        let Some(&start) = n.checked_sub(1).and_then(|i| self.starts.get(i as usize)) else {
            return "";
        };
        let end = self
            .starts
            .get(n as usize)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    fn indent(&self, n: u32) -> usize {
        let l = self.line(n);
        l.len() - l.trim_start_matches(' ').len()
    }

    /// Neither blank nor a comment.
    fn is_content(&self, n: u32) -> bool {
        let t = self.line(n).trim_start();
        !t.is_empty() && !t.starts_with('#')
    }

    /// The smallest positive step between a `key:` line and the line under it.
    fn guess_step(&self) -> usize {
        let mut best: Option<usize> = None;
        let mut prev: Option<u32> = None;
        for n in 1..=self.lines() {
            if !self.is_content(n) {
                continue;
            }
            if let Some(p) = prev {
                let (a, b) = (self.indent(p), self.indent(n));
                if b > a && self.line(p).trim_end().ends_with(':') {
                    best = Some(best.map_or(b - a, |x: usize| x.min(b - a)));
                }
            }
            prev = Some(n);
        }
        best.filter(|s| (1..=8).contains(s)).unwrap_or(2)
    }

    /// Byte offset of line `n`'s start.
    pub(super) fn start_of(&self, n: u32) -> Option<usize> {
        self.starts.get(n.checked_sub(1)? as usize).copied()
    }

    /// Byte offset of the end of line `n`'s content (before its line ending).
    fn end_of(&self, n: u32) -> Option<usize> {
        Some(self.start_of(n)? + self.line(n).len())
    }

    /// The key at column `col` of line `n` (after a `- ` there), and what follows its colon
    /// with any comment removed.
    pub(super) fn key_at(&self, n: u32, col: usize) -> Option<(String, &'a str)> {
        let l = self.line(n);
        if l.contains('\t') {
            return None;
        }
        let t = l.get(col..)?;
        let (key, rest) = match t.chars().next()? {
            q @ ('"' | '\'') => {
                let close = t[1..].find(q)? + 1;
                (t[1..close].to_string(), t[close + 1..].trim_start())
            }
            _ => {
                let colon = t
                    .match_indices(':')
                    .map(|(i, _)| i)
                    .find(|&i| t[i + 1..].is_empty() || t[i + 1..].starts_with([' ', '\t']))?;
                (t[..colon].trim_end().to_string(), &t[colon..])
            }
        };
        let rest = rest.strip_prefix(':')?;
        let value = match rest.find(" #") {
            Some(i) => &rest[..i],
            None => rest,
        };
        (!key.is_empty() && !key.starts_with(['-', '#', '[', '{'])).then_some((key, value.trim()))
    }

    /// Whether line `n` opens a sequence item whose content starts at column `col`.
    fn item_at(&self, n: u32, col: usize) -> bool {
        let l = self.line(n);
        let ind = self.indent(n);
        l[ind..].starts_with('-')
            && col > ind
            && l.get(ind + 1..col)
                .is_some_and(|s| s.chars().all(|c| c == ' '))
    }

    /// The mapping the entry at line `n`, column `col` belongs to.
    pub(super) fn containing(&self, n: u32, col: usize) -> Map {
        let mut first = n;
        while !self.item_at(first, col) {
            let Some(prev) = (1..first).rev().find(|&p| self.is_content(p)) else {
                break;
            };
            if self.indent(prev) >= col || self.item_at(prev, col) {
                first = prev;
            } else {
                break;
            }
        }
        let mut last = n;
        for m in n + 1..=self.lines() {
            if !self.is_content(m) {
                continue;
            }
            if self.indent(m) < col {
                break;
            }
            last = m;
        }
        Map { first, last, col }
    }

    /// The entry `key` of `map`: its line and inline value.
    fn entry(&self, map: Map, key: &str) -> Option<(u32, &'a str)> {
        (map.first..=map.last).find_map(|n| {
            let at_col = self.indent(n) == map.col || (n == map.first && self.item_at(n, map.col));
            if !at_col || !self.is_content(n) {
                return None;
            }
            match self.key_at(n, map.col) {
                Some((k, v)) if k == key => Some((n, v)),
                _ => None,
            }
        })
    }

    /// The first content line under the key at line `n` (column `col`), when it belongs to
    /// the key's value, with its indentation.
    fn child(&self, n: u32, col: usize) -> Option<(u32, usize)> {
        let c = (n + 1..=self.lines()).find(|&m| self.is_content(m))?;
        let ind = self.indent(c);
        let compact_item = ind == col && self.line(c)[ind..].starts_with('-');
        (ind > col || compact_item).then_some((c, ind))
    }

    /// The block value of the key at line `n`, column `col`, as a mapping to add to.
    fn value_map(&self, n: u32, col: usize) -> Option<Target> {
        match self.child(n, col) {
            None => Some(Target::Empty {
                after: n,
                col: col + self.step,
            }),
            Some((c, ind)) => {
                if self.line(c)[ind..].starts_with('-') {
                    return None;
                }
                Some(Target::Map(self.containing(c, ind)))
            }
        }
    }

    /// Resolve where a plan's mapping is: `None` when the text is not what it names.
    pub(super) fn resolve(&self, map: &YamlMap) -> Option<Map> {
        match map {
            YamlMap::ValueOf { at, key } => {
                let col = at.col.checked_sub(1)? as usize;
                let (k, v) = self.key_at(at.line, col)?;
                if &k != key || !v.is_empty() {
                    return None;
                }
                match self.value_map(at.line, col)? {
                    Target::Map(m) => Some(m),
                    // A service with nothing under it: nothing to anchor new lines to safely.
                    Target::Empty { .. } => None,
                }
            }
            YamlMap::Container { at, name } => self.container(*at, name),
            YamlMap::PodOf { at, name } => {
                let container = self.container(*at, name)?;
                // The `containers:` key the container is an item of.
                let dash = self.indent(container.first);
                let key_line = (1..container.first).rev().find(|&p| {
                    self.is_content(p)
                        && (self.indent(p) < dash
                            || (self.indent(p) == dash && !self.line(p)[dash..].starts_with('-')))
                })?;
                let kcol = self.indent(key_line);
                let key_col = if self.item_at(key_line, kcol + 2) {
                    kcol + 2
                } else {
                    kcol
                };
                let (k, v) = self.key_at(key_line, key_col)?;
                if !matches!(k.as_str(), "containers" | "initContainers") || !v.is_empty() {
                    return None;
                }
                Some(self.containing(key_line, key_col))
            }
        }
    }

    /// The container mapping whose `name:` entry, naming `name`, is at `at`.
    fn container(&self, at: At, name: &str) -> Option<Map> {
        let col = self.entry_col(at)?;
        let (k, v) = self.key_at(at.line, col)?;
        (k == "name" && v.trim_matches(['"', '\'']) == name).then(|| self.containing(at.line, col))
    }

    /// The column of the key at a parser's position: after a `- ` there.
    fn entry_col(&self, at: At) -> Option<usize> {
        let col = at.col.checked_sub(1)? as usize;
        let l = self.line(at.line);
        let rest = l.get(col..)?;
        Some(match rest.strip_prefix('-') {
            Some(r) => col + 1 + (r.len() - r.trim_start_matches(' ').len()),
            None => col,
        })
    }

    /// The splice that adds `path` then `leaf` under `map`, creating what is missing.
    pub(super) fn add(&self, map: Map, path: &[String], leaf: &YamlLeaf) -> Option<Splice> {
        self.add_to(Target::Map(map), path, leaf)
    }

    fn add_to(&self, target: Target, path: &[String], leaf: &YamlLeaf) -> Option<Splice> {
        let (map, col) = match target {
            Target::Empty { after, col } => return self.insert_after(after, col, path, leaf),
            Target::Map(m) => (m, m.col),
        };
        let Some(key) = path.first() else {
            let YamlLeaf::Entries(lines) = leaf else {
                return None;
            };
            // Never a second copy of a key the mapping has.
            for l in lines {
                let k = l.split(':').next().unwrap_or("").trim();
                if !l.starts_with(' ') && self.entry(map, k).is_some() {
                    return None;
                }
            }
            return self.insert_after(map.last, col, path, leaf);
        };
        let Some((line, value)) = self.entry(map, key) else {
            return self.insert_after(map.last, col, path, leaf);
        };
        let item_here = path.len() == 1 && matches!(leaf, YamlLeaf::Item(_));
        if (value == "{}" && !item_here) || (value == "[]" && item_here) {
            // An empty flow collection becomes the block that holds the new lines.
            return self.replace_empty(line, col, &path[1..], leaf);
        }
        if !value.is_empty() {
            return None;
        }
        if path.len() == 1 {
            if let YamlLeaf::Item(_) = leaf {
                return self.add_item(line, col, leaf);
            }
        }
        self.add_to(self.value_map(line, col)?, &path[1..], leaf)
    }

    /// Append an item to the block sequence under the key at `line`, `col`.
    fn add_item(&self, line: u32, col: usize, leaf: &YamlLeaf) -> Option<Splice> {
        let Some((c, ind)) = self.child(line, col) else {
            return self.insert_after(line, col + self.step, &[], &as_item(leaf)?);
        };
        if !self.line(c)[ind..].starts_with('-') {
            return None;
        }
        // The sequence runs while lines are items at its indentation or deeper.
        let mut last = c;
        for m in c + 1..=self.lines() {
            if !self.is_content(m) {
                continue;
            }
            let i = self.indent(m);
            if i < ind || (i == ind && !self.line(m)[i..].starts_with('-')) {
                break;
            }
            last = m;
        }
        // An item named as the new one (a volume `name: dshm`) would make the list invalid.
        if let YamlLeaf::Item(lines) = leaf {
            let named = lines.first().filter(|l| l.starts_with("name:"));
            if (c..=last).any(|m| {
                let t = self.line(m).trim_start().trim_start_matches(['-', ' ']);
                named.is_some_and(|n| t == n.as_str())
            }) {
                return None;
            }
        }
        self.insert_after(last, ind, &[], &as_item(leaf)?)
    }

    /// The splice turning `key: {}` / `key: []` on line `n` into `key:` with `path`/`leaf`
    /// under it; none when anything else (a comment) follows the empty collection.
    fn replace_empty(
        &self,
        n: u32,
        col: usize,
        path: &[String],
        leaf: &YamlLeaf,
    ) -> Option<Splice> {
        let l = self.line(n);
        let colon = col + l.get(col..)?.find(':')?;
        if !matches!(l[colon + 1..].trim(), "{}" | "[]") {
            return None;
        }
        let start = self.start_of(n)? + colon + 1;
        let end = self.end_of(n)?;
        let text = self
            .render(col + self.step, path, leaf)
            .iter()
            .map(|x| format!("{}{x}", self.eol))
            .collect::<String>();
        Some((start, end, text))
    }

    /// New lines after line `n`: `path` from column `col` down, then `leaf`.
    fn insert_after(&self, n: u32, col: usize, path: &[String], leaf: &YamlLeaf) -> Option<Splice> {
        let at = self.end_of(n)?;
        let lines = self.render(col, path, leaf);
        let text = lines
            .iter()
            .map(|l| format!("{}{l}", self.eol))
            .collect::<String>();
        Some((at, at, text))
    }

    /// `path` as nested keys from column `col`, then `leaf` under the last.
    pub(super) fn render(&self, col: usize, path: &[String], leaf: &YamlLeaf) -> Vec<String> {
        let mut out = Vec::new();
        let mut c = col;
        for k in path {
            out.push(format!("{}{k}:", " ".repeat(c)));
            c += self.step;
        }
        let pad = " ".repeat(c);
        match leaf {
            YamlLeaf::Entries(lines) => out.extend(lines.iter().map(|l| format!("{pad}{l}"))),
            YamlLeaf::Item(lines) => {
                for (i, l) in lines.iter().enumerate() {
                    let mark = if i == 0 { "- " } else { "  " };
                    out.push(format!("{pad}{mark}{l}"));
                }
            }
        }
        out
    }

    /// The splice deleting line `n` whole (its line ending with it).
    pub(super) fn delete_line(&self, n: u32) -> Option<Splice> {
        let start = self.start_of(n)?;
        let end = self.start_of(n + 1).unwrap_or(self.text.len());
        if end == self.text.len() && !self.text.ends_with('\n') && start > 0 {
            // The last line has no line ending: take the one before it instead.
            let before = self.text[..start].trim_end_matches(['\n', '\r']).len();
            return Some((before, end, String::new()));
        }
        Some((start, end, String::new()))
    }

    /// Whether `key` is an entry of `map`.
    pub(super) fn has(&self, map: Map, key: &str) -> Option<(u32, &'a str)> {
        self.entry(map, key)
    }

    /// The splice adding `path`/`leaf` under the entry at `line` of `map` (its block value).
    pub(super) fn add_under(
        &self,
        map: Map,
        line: u32,
        path: &[String],
        leaf: &YamlLeaf,
    ) -> Option<Splice> {
        self.add_to(self.value_map(line, map.col)?, path, leaf)
    }
}

/// A sequence item leaf as the lines of one item.
fn as_item(leaf: &YamlLeaf) -> Option<YamlLeaf> {
    match leaf {
        YamlLeaf::Item(l) => Some(YamlLeaf::Item(l.clone())),
        YamlLeaf::Entries(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, s: Splice) -> String {
        let mut out = text.to_string();
        out.replace_range(s.0..s.1, &s.2);
        out
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keys_and_mappings_are_read_from_indentation() {
        let t = "services:\n  # the trainer\n  train:\n    image: x # pinned\n    command: [a]\n\n  \"web\":\n    image: y\n";
        let d = Doc::new(t);
        assert_eq!(d.key_at(3, 2), Some(("train".into(), "")));
        assert_eq!(d.key_at(4, 4), Some(("image".into(), "x")));
        assert_eq!(d.key_at(7, 2), Some(("web".into(), "")));
        let train = d
            .resolve(&YamlMap::ValueOf {
                at: At { line: 3, col: 3 },
                key: "train".into(),
            })
            .unwrap();
        assert_eq!(
            train,
            Map {
                first: 4,
                last: 5,
                col: 4
            }
        );
        // The name must match: a parser's fallback position is not edited.
        assert!(d
            .resolve(&YamlMap::ValueOf {
                at: At { line: 1, col: 1 },
                key: "train".into()
            })
            .is_none());
    }

    #[test]
    fn a_missing_path_is_created_at_the_files_own_step_and_an_existing_one_is_joined() {
        let t = "services:\n    train:\n        image: x\n        deploy:\n            replicas: 2\n    other:\n        image: y\n";
        let d = Doc::new(t);
        assert_eq!(d.step, 4);
        let train = d.containing(3, 8);
        let path = strings(&["deploy", "resources", "reservations", "devices"]);
        let item = YamlLeaf::Item(strings(&[
            "driver: nvidia",
            "count: all",
            "capabilities: [gpu]",
        ]));
        let s = d.add(train, &path, &item).unwrap();
        assert_eq!(
            apply(t, s),
            "services:\n    train:\n        image: x\n        deploy:\n            replicas: 2\n            resources:\n                reservations:\n                    devices:\n                        - driver: nvidia\n                          count: all\n                          capabilities: [gpu]\n    other:\n        image: y\n"
        );
        // A flow mapping on the way: no edit.
        let flow = "services:\n  a:\n    deploy: {replicas: 2}\n";
        let d = Doc::new(flow);
        assert!(d.add(d.containing(3, 4), &path, &item).is_none());
    }

    #[test]
    fn items_join_a_compact_sequence_and_entries_never_duplicate_a_key() {
        let t = "spec:\n  containers:\n  - name: c\n    volumeMounts:\n    - name: data\n      mountPath: /data\n  volumes:\n  - name: data\n    emptyDir: {}\n";
        let d = Doc::new(t);
        let c = d
            .resolve(&YamlMap::Container {
                at: At { line: 3, col: 3 },
                name: "c".into(),
            })
            .unwrap();
        assert_eq!(c.col, 4);
        let mount = YamlLeaf::Item(strings(&["name: dshm", "mountPath: /dev/shm"]));
        let s = d.add(c, &strings(&["volumeMounts"]), &mount).unwrap();
        assert_eq!(
            apply(t, s),
            t.replace(
                "      mountPath: /data\n",
                "      mountPath: /data\n    - name: dshm\n      mountPath: /dev/shm\n"
            )
        );
        let pod = d
            .resolve(&YamlMap::PodOf {
                at: At { line: 3, col: 3 },
                name: "c".into(),
            })
            .unwrap();
        // Another container's name that starts the same is not this container.
        assert!(d
            .resolve(&YamlMap::Container {
                at: At { line: 3, col: 3 },
                name: "c-proxy".into()
            })
            .is_none());
        assert_eq!((pod.first, pod.col), (2, 2));
        let vol = YamlLeaf::Item(strings(&["name: dshm", "emptyDir:", "  medium: Memory"]));
        let s = d.add(pod, &strings(&["volumes"]), &vol).unwrap();
        assert!(apply(t, s)
            .ends_with("    emptyDir: {}\n  - name: dshm\n    emptyDir:\n      medium: Memory\n"));
        let dup = YamlLeaf::Entries(strings(&["name: other"]));
        assert!(d.add(c, &[], &dup).is_none());
        // `resources: {}` and `volumes: []` are empty: the block takes their place.
        let t = "containers:\n- name: c\n  resources: {}\n  volumeMounts: []\n";
        let d = Doc::new(t);
        let c = d.containing(2, 2);
        let limit = YamlLeaf::Entries(strings(&["nvidia.com/gpu: 1"]));
        let s = d
            .add(c, &strings(&["resources", "limits"]), &limit)
            .unwrap();
        assert_eq!(
            apply(t, s),
            "containers:\n- name: c\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n  volumeMounts: []\n"
        );
        let s = d.add(c, &strings(&["volumeMounts"]), &mount).unwrap();
        assert!(
            apply(t, s).ends_with("  volumeMounts:\n    - name: dshm\n      mountPath: /dev/shm\n")
        );
    }

    #[test]
    fn lines_are_deleted_whole_and_crlf_files_keep_crlf() {
        let t = "a:\r\n  runtime: nvidia\r\n  image: x";
        let d = Doc::new(t);
        assert_eq!(d.eol, "\r\n");
        assert_eq!(apply(t, d.delete_line(2).unwrap()), "a:\r\n  image: x");
        assert_eq!(
            apply(t, d.delete_line(3).unwrap()),
            "a:\r\n  runtime: nvidia"
        );
        let m = d.containing(2, 2);
        let s = d
            .add(m, &[], &YamlLeaf::Entries(strings(&["shm_size: 8gb"])))
            .unwrap();
        assert_eq!(
            apply(t, s),
            "a:\r\n  runtime: nvidia\r\n  image: x\r\n  shm_size: 8gb"
        );
    }
}
