//! Line lookups in YAML text. The YAML parser (yaml_serde) gives values without positions, so findings in
//! compose and Kubernetes files are placed by finding the key or value in the text within the
//! block (by indentation) of the service or container they belong to.

use super::build::SpecError;
use super::dockerfile::Pos;

/// A YAML scalar as text (`"x"`, `3`, `true`); None for maps, lists and null.
pub(crate) fn scalar(v: &yaml_serde::Value) -> Option<String> {
    use yaml_serde::Value;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The deepest nesting of collections (flow `[`/`{` and block levels together) a YAML
/// document may have: yaml_serde refuses deeper ones anyway (its recursion limit, 128 as in
/// the archived serde_yaml it forks), but only after libyaml has scanned the whole document,
/// in time quadratic in the flow depth (its simple-key check walks every open flow level at
/// each token: 40 000 `[` took 9 s, 16 MiB of them about a day).
pub const MAX_YAML_DEPTH: usize = 128;

/// A linear pre-scan of one YAML document for nesting deeper than [`MAX_YAML_DEPTH`]: flow
/// collections counted outside quoted scalars, comments and block scalars, block levels by
/// indentation (a deeper line under a `key:` line or a lone `-`) and compact `- - x` items.
/// Where it is unsure it counts fewer levels than the parser sees, never more, so what it
/// refuses yaml_serde would refuse too. The error is at the first bracket or item past the
/// bound (1-based line and column within `text`).
pub(crate) fn check_nesting(text: &str) -> Result<(), Pos> {
    check_nesting_within(text, MAX_YAML_DEPTH)
}

/// [`check_nesting`] against a bound of `max` levels.
fn check_nesting_within(text: &str, max: usize) -> Result<(), Pos> {
    let at = |line: usize, col: usize| Pos {
        line: line as u32 + 1,
        col: col as u32 + 1,
    };
    let spaced = |b: &[u8], i: usize| b.get(i).is_none_or(|c| matches!(c, b' ' | b'\t' | b'\r'));
    // Open block levels, by the column of their content.
    let mut blocks: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // Inside a quoted scalar that may span lines: its quote.
    let mut quote: Option<u8> = None;
    // Inside a block scalar (`|`, `>`): lines indented deeper than this belong to it.
    let mut block_scalar: Option<usize> = None;
    // The last content line opened a nested block (`key:`, a lone `-`).
    let mut opens = false;
    for (ln, line) in text.split('\n').enumerate() {
        let b = line.as_bytes();
        let indent = b.iter().take_while(|c| **c == b' ').count();
        let blank = b[indent..].iter().all(u8::is_ascii_whitespace);
        if let Some(parent) = block_scalar {
            if blank || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        let mut i = 0;
        let mut tentative = false;
        let mut confirmed = false;
        if quote.is_none() && flow == 0 {
            if blank || b[indent] == b'#' {
                continue;
            }
            if b[indent..].starts_with(b"---") || b[indent..].starts_with(b"...") {
                blocks.clear();
                opens = false;
                continue;
            }
            while blocks.last().is_some_and(|&c| c > indent) {
                blocks.pop();
            }
            // A new level here, if the line turns out to be a block collection (an item or
            // a `key:`), not a scalar or flow collection on a line of its own.
            if blocks.last() != Some(&indent) && (opens || blocks.is_empty()) {
                blocks.push(indent);
                tentative = true;
            }
            i = indent;
            confirmed = matches!(b.get(i), Some(b'-' | b'?')) && spaced(b, i + 1);
            if confirmed && blocks.len() > max {
                return Err(at(ln, i));
            }
            // Compact nested items: `- - x`, `? - x` (each indicator after the first opens a
            // collection; the first one's is the line's own level).
            let mut nested = false;
            while matches!(b.get(i), Some(b'-' | b'?')) && spaced(b, i + 1) {
                if std::mem::replace(&mut nested, true) {
                    blocks.push(i);
                    if blocks.len() > max {
                        return Err(at(ln, i));
                    }
                }
                i += 1;
                while matches!(b.get(i), Some(b' ' | b'\t')) {
                    i += 1;
                }
            }
        }
        // A node may start here: a quote, bracket or block scalar indicator is syntax.
        let mut at_start = true;
        let mut last_content = None;
        while i < b.len() {
            let c = b[i];
            if let Some(q) = quote {
                if c == b'\\' && q == b'"' || c == b'\'' && q == c && b.get(i + 1) == Some(&c) {
                    i += 2;
                    continue;
                }
                if c == q {
                    quote = None;
                    last_content = Some(c);
                    at_start = false;
                }
                i += 1;
                continue;
            }
            let mut starts = false;
            match c {
                b'#' if i == 0 || matches!(b[i - 1], b' ' | b'\t') => break,
                b' ' | b'\t' | b'\r' => {
                    i += 1;
                    continue;
                }
                b'"' | b'\'' if at_start => quote = Some(c),
                b'[' | b'{' if at_start || flow > 0 => {
                    flow += 1;
                    if blocks.len() - usize::from(tentative && !confirmed) + flow > max {
                        return Err(at(ln, i));
                    }
                    starts = true;
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                b',' if flow > 0 => starts = true,
                b'|' | b'>' if at_start && flow == 0 => {
                    block_scalar = Some(indent);
                    break;
                }
                b':' if flow > 0 => starts = true,
                b':' if spaced(b, i + 1) => {
                    starts = true;
                    if tentative && !std::mem::replace(&mut confirmed, true) && blocks.len() > max {
                        return Err(at(ln, indent));
                    }
                }
                b'-' | b'?' if at_start && spaced(b, i + 1) => starts = true,
                // An anchor or tag before a node: the node may still start after it.
                b'&' | b'!' if at_start => {
                    while i < b.len() && !matches!(b[i], b' ' | b'\t') {
                        i += 1;
                    }
                    continue;
                }
                _ => {}
            }
            last_content = Some(c);
            at_start = starts;
            i += 1;
        }
        if tentative && !confirmed {
            blocks.pop();
        }
        if quote.is_none() && flow == 0 && block_scalar.is_none() {
            opens = matches!(last_content, Some(b':' | b'-' | b'?')) && at_start;
        }
    }
    Ok(())
}

/// [`check_nesting`] of a document whose first line is `first_line` of its file, as the
/// GL100 error a parse error would be.
pub(crate) fn nesting_error(doc: &str, first_line: u32) -> Option<SpecError> {
    let p = check_nesting(doc).err()?;
    Some(SpecError {
        pos: Pos {
            line: first_line + p.line - 1,
            col: p.col,
        },
        message: format!(
            "invalid YAML: collections nested more than {MAX_YAML_DEPTH} deep; not parsed"
        ),
    })
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

    /// The first line of the sequence item in `b` whose `name:` is exactly `value` (`- name:
    /// x`, or `- image: …` with `name: x` among the item's keys), skipping items that start at
    /// a line in `taken`: a second container of the same name is the next such item, and
    /// neither `metadata.name` nor a longer name (`trainer-node` for `trainer`) matches. An
    /// item with an `image:` key (a container) wins over one without (a task or job of the
    /// same name around it).
    pub fn item_named(&self, b: Block, value: &str, taken: &[u32]) -> Option<Pos> {
        let spaces = |l: &str| l.len() - l.trim_start_matches(' ').len();
        // The column of an item line's first key (`- name:` → the `n`).
        let key_col = |l: &str| {
            let after = &l.trim_start()[1..];
            spaces(l) + 1 + after.len() - after.trim_start().len()
        };
        // (has an image key, start line)
        let mut found: Vec<(bool, u32)> = Vec::new();
        for n in b.start..=b.end {
            let l = self.line(n);
            let t = l.trim_start();
            let (item, rest) = match t.strip_prefix("- ") {
                Some(r) => (true, r.trim_start()),
                None => (false, t),
            };
            let Some(v) = rest.strip_prefix("name:") else {
                continue;
            };
            let v = v.split(" #").next().unwrap_or("").trim();
            if v.trim_matches(['"', '\'']) != value {
                continue;
            }
            // A key of an item that starts on an earlier line: the first line above indented
            // less (siblings and their children are not) must be that item's `- `, with its
            // first key at this key's column.
            let col = if item { key_col(l) } else { spaces(l) };
            let start = if item {
                Some(n)
            } else {
                (b.start..n)
                    .rev()
                    .map(|m| (m, self.line(m)))
                    .filter(|(_, pl)| !pl.trim().is_empty() && !pl.trim_start().starts_with('#'))
                    .find(|(_, pl)| spaces(pl) < col)
                    .filter(|(_, pl)| pl.trim_start().starts_with("- ") && key_col(pl) == col)
                    .map(|(m, _)| m)
            };
            let Some(m) = start.filter(|m| !taken.contains(m)) else {
                continue;
            };
            let item = self.block_of(m, b);
            let image = (m..=item.end).any(|k| {
                let kl = self.line(k);
                let kt = kl.trim_start();
                let kt = if k == m { &kt[1..] } else { kt };
                kt.trim_start().starts_with("image:")
                    && (if k == m { key_col(kl) } else { spaces(kl) }) == col
            });
            found.push((image, m));
        }
        found
            .iter()
            .find(|(image, _)| *image)
            .or(found.first())
            .map(|(_, m)| Pos {
                line: *m,
                col: spaces(self.line(*m)) as u32 + 1,
            })
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
    /// First line in `b` that is the sequence item entry `- key: value` (the value quoted or
    /// not, a comment after it), at the `-`: unlike [`Self::text`], `- name: app` is not found
    /// in `- name: app-proxy`.
    pub fn item_entry(&self, b: Block, key: &str, value: &str) -> Option<Pos> {
        for n in b.start..=b.end {
            let l = self.line(n);
            let t = l.trim_start();
            let Some(rest) = t.strip_prefix('-') else {
                continue;
            };
            let Some(v) = rest
                .trim_start()
                .strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
            else {
                continue;
            };
            let v = v.split(" #").next().unwrap_or("").trim();
            if !v.is_empty() && v.trim_matches(['"', '\'']) == value {
                return Some(Pos {
                    line: n,
                    col: (l.len() - t.len()) as u32 + 1,
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

    /// Containers are found by their exact name, as items: not at `metadata.name`, not at a
    /// longer name starting with theirs, and a second container of one name at its own item.
    #[test]
    fn items_by_exact_name() {
        let t = "metadata:\n  name: bench\nspec:\n  jobs:\n  - name: bench-node\n    containers:\n    - image: a:1\n      command:\n      - run\n      name: bench\n  - name: worker\n    containers:\n    - name: \"bench\" # the same\n      image: a:1\n";
        let y = YamlText::new(t, 1);
        let first = y.item_named(y.all(), "bench", &[]).unwrap();
        assert_eq!((first.line, first.col), (7, 5));
        assert_eq!(y.item_named(y.all(), "bench", &[7]).unwrap().line, 13);
        assert_eq!(y.item_named(y.all(), "bench", &[7, 13]), None);
        assert_eq!(y.item_named(y.all(), "bench-node", &[]).unwrap().line, 5);
        assert_eq!(y.item_named(y.all(), "work", &[]), None);
        // A task named like its container: the container (the item with an image) is meant.
        let t = "tasks:\n  - replicas: 2\n    name: worker\n    template:\n      spec:\n        containers:\n          - name: worker\n            image: a:1\n";
        let y = YamlText::new(t, 1);
        assert_eq!(y.item_named(y.all(), "worker", &[]).unwrap().line, 7);
    }

    /// The depth of a parsed value: what yaml_serde's recursion limit counts.
    fn depth(v: &yaml_serde::Value) -> usize {
        use yaml_serde::Value;
        match v {
            Value::Sequence(s) => 1 + s.iter().map(depth).max().unwrap_or(0),
            Value::Mapping(m) => {
                1 + m
                    .iter()
                    .map(|(k, v)| depth(k).max(depth(v)))
                    .max()
                    .unwrap_or(0)
            }
            Value::Tagged(t) => depth(&t.value),
            _ => 0,
        }
    }

    /// The pre-scan never counts more levels than the parser builds: on every document that
    /// parses (brackets in quotes, comments, block scalars and plain scalars included, and
    /// the real-world corpus when it is there), a bound of the document's own depth passes.
    #[test]
    fn nesting_is_never_overcounted() {
        let mut docs: Vec<String> = [
            "a: [1, [2, {b: [3]}]]\n",
            "a: \"[[[[\"\nb: '{{{{ it''s [[[ '\nc: x[[[[ y\n# [[[[[[\nd: [a, \"]]\", '[']\n",
            "script: |\n  if [[ -f x ]]; then [ [ [\n  {{{{\nnext: {a: 1}\n",
            "- - - [1]\n  - {a: [b]}\n- ? [x]\n  : y\n",
            "k: &anc [1, [2]]\nl: !!seq [3]\nm: *anc\n",
            "a: \"multi\n  line [[[ \\\" still\"\nb:\n  - c:\n      - [d]\n",
            "{\"a\":[\"b\",{\"c\":[1,2]}],\"d\":\"[\"}\n",
            "a: >-\n  folded [[[\n  text\nb: [\n  1,\n  [2]\n]\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for root in ["../shared/realworld", "testdata", "examples"] {
            docs.extend(yaml_files(std::path::Path::new(root)));
        }
        let mut checked = 0;
        for text in &docs {
            for doc in text.split("\n---") {
                let Ok(v) = yaml_serde::from_str::<yaml_serde::Value>(doc) else {
                    continue;
                };
                let d = depth(&v);
                assert_eq!(check_nesting_within(doc, d), Ok(()), "depth {d}:\n{doc}");
                checked += 1;
            }
        }
        assert!(checked > 8, "{checked}");
    }

    fn yaml_files(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let n = p.to_string_lossy();
            if p.is_dir() {
                out.extend(yaml_files(&p));
            } else if n.ends_with(".yaml") || n.ends_with(".yml") {
                out.extend(std::fs::read_to_string(&p));
            }
        }
        out
    }

    /// Flow collections past the bound are refused at the bracket that goes past it, in
    /// linear time, whatever the block levels around them; brackets that are text are not
    /// counted.
    #[test]
    fn deep_flow_collections_are_refused_at_the_bracket() {
        let deep = |n: usize| {
            format!(
                "services:\n  a:\n    command: {}{}\n",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        // Three mappings and 125 brackets: 128 in all.
        assert_eq!(check_nesting(&deep(125)), Ok(()));
        assert_eq!(check_nesting(&deep(126)), Err(Pos { line: 3, col: 139 }));
        // The same boundary as the parser's.
        assert!(yaml_serde::from_str::<yaml_serde::Value>(&deep(125)).is_ok());
        assert!(yaml_serde::from_str::<yaml_serde::Value>(&deep(126)).is_err());
        let e = nesting_error(&deep(200_000), 10).unwrap();
        assert_eq!(e.pos, Pos { line: 12, col: 139 });
        assert!(
            e.message.contains("nested more than 128 deep"),
            "{}",
            e.message
        );
        let text = |n: usize| {
            format!(
                "a: \"{b}\"\nb: '{b}'\nc: x{b}\n# {b}\nd: |\n  {b}\ne: [1]\n",
                b = "[".repeat(n)
            )
        };
        assert_eq!(check_nesting(&text(100_000)), Ok(()));
        // Block levels alone: `- - - x` compact items, and keys indented deeper and deeper.
        let items = format!("{}x\n", "- ".repeat(200));
        assert_eq!(check_nesting(&items), Err(Pos { line: 1, col: 257 }));
        let keys: String = (0..200).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert_eq!(check_nesting(&keys).map_err(|p| p.line), Err(129));
    }

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
        // A container's `- name:` item, not another whose name starts the same.
        let k = YamlText::new(
            "containers:\n- name: app-proxy\n- image: x\n  name: y\n-   name: \"app\" # main\n",
            1,
        );
        assert_eq!(
            k.item_entry(k.all(), "name", "app"),
            Some(Pos { line: 5, col: 1 })
        );
        assert_eq!(k.item_entry(k.all(), "name", "y"), None);
        let q = YamlText::new("services:\n  \"x y\" :\n    image: z\n  # c:\n  'w':\n", 1);
        let keys = q.child_keys(q.all());
        assert_eq!(keys["x y"].line, 2);
        assert_eq!(keys["w"].line, 5);
        assert!(!keys.contains_key("c") && !keys.contains_key("image"));
    }
}
