//! Line lookups in YAML text. serde_yaml gives values without positions, so findings in
//! compose and Kubernetes files are placed by finding the key or value in the text within the
//! block (by indentation) of the service or container they belong to.

use super::dockerfile::Pos;

/// A YAML scalar as text (`"x"`, `3`, `true`); None for maps, lists and null.
pub(crate) fn scalar(v: &serde_yaml::Value) -> Option<String> {
    use serde_yaml::Value;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub struct YamlText<'a> {
    lines: Vec<&'a str>,
    /// 1-based number of `lines[0]`.
    first: u32,
}

/// An inclusive range of 1-based lines.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub start: u32,
    pub end: u32,
}

impl<'a> YamlText<'a> {
    pub fn new(text: &'a str, first_line: u32) -> Self {
        YamlText {
            lines: text.lines().collect(),
            first: first_line,
        }
    }
    pub fn all(&self) -> Block {
        Block {
            start: self.first,
            end: self.first + self.lines.len().saturating_sub(1) as u32,
        }
    }
    fn line(&self, n: u32) -> &str {
        self.lines
            .get((n.saturating_sub(self.first)) as usize)
            .copied()
            .unwrap_or("")
    }
    /// The block a key line opens: up to the next line indented no deeper.
    pub fn block_of(&self, line: u32, within: Block) -> Block {
        let spaces = |l: &str| l.len() - l.trim_start_matches(' ').len();
        let first = self.line(line);
        let base = spaces(first);
        let first_is_item = first.trim_start().starts_with('-');
        let mut end = line;
        let mut n = line + 1;
        while n <= within.end {
            let l = self.line(n);
            let t = l.trim();
            if t.starts_with('#') && spaces(l) > base {
                end = n;
            } else if !t.is_empty() && !t.starts_with('#') {
                let sp = spaces(l);
                let item = t.starts_with('-');
                if !(sp > base || sp == base && item && !first_is_item) {
                    break;
                }
                end = n;
            }
            n += 1;
        }
        Block { start: line, end }
    }
    /// First line in `b` whose content is `key:` (or `- key:`, quoted key), not in a comment.
    pub fn key(&self, b: Block, key: &str) -> Option<Pos> {
        for n in b.start..=b.end {
            let l = self.line(n);
            let t = l.trim_start();
            let t2 = t.trim_start_matches(['-', ' ']);
            if t.starts_with('#') {
                continue;
            }
            for k in [key.to_string(), format!("\"{key}\""), format!("'{key}'")] {
                if let Some(r) = t2.strip_prefix(&k) {
                    if r.trim_start().starts_with(':') {
                        return Some(Pos {
                            line: n,
                            col: (l.len() - t2.len()) as u32 + 1,
                        });
                    }
                }
            }
        }
        None
    }
    /// The keys one level below the line that opens `b` (e.g. every service name under
    /// `services:`), each at its first occurrence: one pass, so placing N keys costs O(N),
    /// not N scans of the block.
    pub fn child_keys(&self, b: Block) -> std::collections::HashMap<String, Pos> {
        let spaces = |l: &str| l.len() - l.trim_start_matches(' ').len();
        let base = spaces(self.line(b.start));
        let mut child: Option<usize> = None;
        let mut out = std::collections::HashMap::new();
        for n in b.start + 1..=b.end {
            let l = self.line(n);
            let t = l.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let sp = spaces(l);
            if sp <= base {
                continue;
            }
            if *child.get_or_insert(sp) != sp {
                continue;
            }
            let t = l.trim_start();
            let (key, rest) = match t.chars().next() {
                Some(q @ ('"' | '\'')) => match t[1..].find(q) {
                    Some(i) => (&t[1..1 + i], &t[2 + i..]),
                    None => continue,
                },
                _ => match t.find(':') {
                    Some(i) => (t[..i].trim_end(), &t[i..]),
                    None => continue,
                },
            };
            if rest.trim_start().starts_with(':') {
                out.entry(key.to_string()).or_insert(Pos {
                    line: n,
                    col: sp as u32 + 1,
                });
            }
        }
        out
    }

    /// First line in `b` containing `needle` outside a comment.
    pub fn text(&self, b: Block, needle: &str) -> Option<Pos> {
        if needle.is_empty() {
            return None;
        }
        for n in b.start..=b.end {
            let l = self.line(n);
            if l.trim_start().starts_with('#') {
                continue;
            }
            if let Some(i) = l.find(needle) {
                return Some(Pos {
                    line: n,
                    col: i as u32 + 1,
                });
            }
        }
        None
    }
    /// Comment lines in `b` mentioning `needle` (commented-out config).
    pub fn commented(&self, b: Block, needle: &str) -> Option<Pos> {
        for n in b.start..=b.end {
            let l = self.line(n);
            let t = l.trim_start();
            if t.starts_with('#') && t.contains(needle) {
                return Some(Pos {
                    line: n,
                    col: (l.len() - t.len()) as u32 + 1,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_keys() {
        let t = "services:\n  a:\n    image: x\n    # gpus: all\n  b:\n    image: y\n    environment:\n      - A=1\n";
        let y = YamlText::new(t, 1);
        let s = y.key(y.all(), "b").unwrap();
        assert_eq!(s.line, 5);
        let blk = y.block_of(s.line, y.all());
        assert_eq!((blk.start, blk.end), (5, 8));
        assert_eq!(y.key(blk, "image").unwrap(), Pos { line: 6, col: 5 });
        assert_eq!(y.text(blk, "A=1").unwrap().line, 8);
        let a = y.block_of(2, y.all());
        assert_eq!(y.commented(a, "gpus").unwrap().line, 4);
        // The same places as `key`, found in one pass.
        let services = y.block_of(1, y.all());
        let keys = y.child_keys(services);
        assert_eq!(keys.len(), 2);
        for k in ["a", "b"] {
            assert_eq!(keys[k], y.key(services, k).unwrap());
        }
        let q = YamlText::new("services:\n  \"x y\" :\n    image: z\n  # c:\n  'w':\n", 1);
        let keys = q.child_keys(q.all());
        assert_eq!(keys["x y"].line, 2);
        assert_eq!(keys["w"].line, 5);
        assert!(!keys.contains_key("c") && !keys.contains_key("image"));
    }
}
