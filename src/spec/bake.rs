//! `docker buildx bake` files (`docker-bake.hcl`, `docker-bake.json`): the (Dockerfile, build
//! args) pairs a bake builds. Each `target`'s context, dockerfile, `args` and stage `target`,
//! with `inherits` merged, `matrix` expanded (one target per combination) and `variable`
//! defaults substituted into `${…}`. A subset of HCL: attributes, blocks, strings with
//! interpolation, lists, objects; anything else (functions, operators, heredocs) is an
//! unknown value, never guessed. Bake files are untrusted input: nesting is bounded.
//!
//! Bake's file format: <https://docs.docker.com/build/bake/reference/>.

use crate::spec::build::SpecError;
use crate::spec::dockerfile::Pos;
use crate::spec::expand::{ExpandLimit, ExpansionBudget, MAX_WORD};
use crate::spec::runspec::LineIndex;
use std::collections::HashMap;
use std::rc::Rc;

/// A value as written: a string (raw, with its `${…}`, and the offset of its first
/// character), a bare word (a variable, number or bool), a list, an object, or something we
/// do not evaluate. Text is shared, not copied, by the targets that inherit it (a long value
/// inherited by thousands of targets was copied into each).
#[derive(Debug, Clone, PartialEq)]
enum V {
    Str(Rc<str>, usize),
    Word(Rc<str>, usize),
    List(Vec<V>),
    Obj(Vec<(String, V)>),
    Other,
}

#[derive(Debug)]
struct Block {
    kind: String,
    labels: Vec<String>,
    attrs: Vec<(String, V)>,
    off: usize,
}

/// One target of the bake (a matrix combination is a target of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BakeTarget {
    pub name: String,
    /// The target block.
    pub pos: Pos,
    /// Relative to the bake file's directory (`.` when not given).
    pub context: String,
    /// Relative to the context (`Dockerfile` when not given).
    pub dockerfile: String,
    /// `args` after substitution, each at its value; values we cannot evaluate are left out.
    pub args: Vec<(String, String, Pos)>,
    /// The stage to build (`target = "runtime"`).
    pub target: Option<String>,
}

const MAX_DEPTH: usize = 32;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    /// Spaces, tabs and comments; newlines too when `lines`.
    fn skip(&mut self, lines: bool) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\n' if lines => self.i += 1,
                b'#' => self.skip_line(),
                b'/' if self.s.get(self.i + 1) == Some(&b'/') => self.skip_line(),
                b'/' if self.s.get(self.i + 1) == Some(&b'*') => {
                    self.i += 2;
                    while self.i < self.s.len() && !self.s[self.i..].starts_with(b"*/") {
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(self.s.len());
                }
                _ => return,
            }
        }
    }
    fn skip_line(&mut self) {
        while self.peek().is_some_and(|c| c != b'\n') {
            self.i += 1;
        }
    }
    fn ident(&mut self) -> String {
        let st = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[st..self.i]).into_owned()
    }
    /// A quoted string from its opening quote: the raw text between the quotes (escapes
    /// and `${…}` kept) and the offset after the quote.
    fn string(&mut self) -> (String, usize) {
        self.i += 1;
        let st = self.i;
        let mut braces = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.i += 1,
                b'$' if self.s.get(self.i + 1) == Some(&b'{') => {
                    braces += 1;
                    self.i += 1;
                }
                b'}' if braces > 0 => braces -= 1,
                b'"' if braces == 0 => break,
                b'\n' if braces == 0 => break,
                _ => {}
            }
            self.i += 1;
        }
        let raw = String::from_utf8_lossy(&self.s[st..self.i.min(self.s.len())]).into_owned();
        if self.peek() == Some(b'"') {
            self.i += 1;
        }
        (raw, st)
    }
    /// Skip to the end of an expression we do not evaluate: the next `,` / newline / closing
    /// bracket outside brackets.
    fn skip_expr(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    self.string();
                    continue;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth == 0 => return,
                b')' | b']' | b'}' => depth -= 1,
                b',' | b'\n' if depth == 0 => return,
                _ => {}
            }
            self.i += 1;
        }
    }
    fn expr(&mut self) -> V {
        self.skip(true);
        if self.depth > MAX_DEPTH {
            self.skip_expr();
            return V::Other;
        }
        let v = match self.peek() {
            Some(b'"') => {
                let (raw, off) = self.string();
                V::Str(raw.into(), off)
            }
            Some(b'[') => {
                self.i += 1;
                self.depth += 1;
                let mut items = Vec::new();
                loop {
                    self.skip(true);
                    match self.peek() {
                        None => break,
                        Some(b']') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => self.i += 1,
                        _ => {
                            let before = self.i;
                            items.push(self.expr());
                            if self.i == before {
                                self.i += 1;
                            }
                        }
                    }
                }
                self.depth -= 1;
                V::List(items)
            }
            Some(b'{') => {
                self.i += 1;
                self.depth += 1;
                let mut fields = Vec::new();
                loop {
                    self.skip(true);
                    match self.peek() {
                        None => break,
                        Some(b'}') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => self.i += 1,
                        Some(c) => {
                            let key = if c == b'"' {
                                self.string().0
                            } else {
                                self.ident()
                            };
                            self.skip(false);
                            if key.is_empty() || !matches!(self.peek(), Some(b'=') | Some(b':')) {
                                self.skip_expr();
                                if self.peek().is_some_and(|c| c != b'}') {
                                    self.i += 1;
                                }
                                continue;
                            }
                            self.i += 1;
                            let v = self.expr();
                            fields.push((key, v));
                        }
                    }
                }
                self.depth -= 1;
                V::Obj(fields)
            }
            Some(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => {
                let off = self.i;
                V::Word(self.ident().into(), off)
            }
            _ => {
                self.skip_expr();
                return V::Other;
            }
        };
        // Operators, calls, conditionals after the first term: not evaluated.
        self.skip(false);
        match self.peek() {
            None | Some(b',' | b']' | b'}' | b'\n') => v,
            _ => {
                self.skip_expr();
                V::Other
            }
        }
    }
    fn body(&mut self, out: &mut Vec<Block>, attrs: &mut Vec<(String, V)>) {
        loop {
            self.skip(true);
            match self.peek() {
                None => return,
                Some(b'}') => {
                    self.i += 1;
                    return;
                }
                _ => {}
            }
            let off = self.i;
            let name = self.ident();
            if name.is_empty() {
                self.skip_expr();
                self.i = (self.i + 1).min(self.s.len());
                continue;
            }
            self.skip(false);
            if self.peek() == Some(b'=') && self.s.get(self.i + 1) != Some(&b'=') {
                self.i += 1;
                let v = self.expr();
                attrs.push((name, v));
                continue;
            }
            let mut labels = Vec::new();
            loop {
                self.skip(false);
                match self.peek() {
                    Some(b'"') => labels.push(self.string().0),
                    Some(c) if c.is_ascii_alphanumeric() || c == b'_' => labels.push(self.ident()),
                    _ => break,
                }
            }
            if self.peek() != Some(b'{') || self.depth > MAX_DEPTH {
                self.skip_line();
                continue;
            }
            self.i += 1;
            self.depth += 1;
            let mut b = Block {
                kind: name,
                labels,
                attrs: Vec::new(),
                off,
            };
            let mut inner = Vec::new();
            self.body(&mut inner, &mut b.attrs);
            self.depth -= 1;
            out.push(b);
        }
    }
}

fn parse_hcl_blocks(text: &str) -> Vec<Block> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let mut blocks = Vec::new();
    let mut top = Vec::new();
    while p.i < p.s.len() {
        p.body(&mut blocks, &mut top);
    }
    blocks
}

/// Where each JSON string of a text occurs: its decoded value → the offsets just after its
/// opening quote, in order. Built in one pass, so placing every string costs a lookup, not a
/// search of the rest of the file (a search per string, which missed and ran to the end for
/// every escaped one, made a 2 MB bake file take minutes).
struct JsonStrings(HashMap<String, Vec<usize>>);

impl JsonStrings {
    fn of(text: &str) -> JsonStrings {
        let mut m: HashMap<String, Vec<usize>> = HashMap::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'"' {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            let end = (i + 1).min(b.len());
            if let Some(raw) = text.get(start..end) {
                if let Ok(v) = serde_json::from_str::<String>(raw) {
                    m.entry(v).or_default().push(start + 1);
                }
            }
            i = end;
        }
        JsonStrings(m)
    }

    /// The first occurrence of the string `s` whose text starts at or after `from`.
    fn at_or_after(&self, s: &str, from: usize) -> Option<usize> {
        let offs = self.0.get(s)?;
        offs.get(offs.partition_point(|&o| o < from)).copied()
    }
}

/// Bake's JSON form (`{"variable": {…}, "target": {name: {…}}}`) as blocks. JSON has no
/// positions: a string's offset is where it first occurs after its key.
fn parse_json_blocks(text: &str) -> Vec<Block> {
    let Ok(serde_json::Value::Object(top)) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let strings = JsonStrings::of(text);
    fn conv(v: &serde_json::Value, strings: &JsonStrings, from: &mut usize, depth: usize) -> V {
        match v {
            serde_json::Value::String(s) => {
                let off = strings.at_or_after(s, *from).unwrap_or(0);
                if off > 0 {
                    *from = off;
                }
                V::Str(s.replace('\\', "\\\\").replace('"', "\\\"").into(), off)
            }
            serde_json::Value::Number(n) => V::Word(n.to_string().into(), *from),
            serde_json::Value::Bool(b) => V::Word(b.to_string().into(), *from),
            serde_json::Value::Array(a) if depth < MAX_DEPTH => V::List(
                a.iter()
                    .map(|x| conv(x, strings, from, depth + 1))
                    .collect(),
            ),
            serde_json::Value::Object(m) if depth < MAX_DEPTH => V::Obj(
                m.iter()
                    .map(|(k, x)| {
                        // Past the key, so a value equal to its key is not placed on the key.
                        if let Some(o) = strings.at_or_after(k, *from) {
                            *from = o + 1;
                        }
                        (k.clone(), conv(x, strings, from, depth + 1))
                    })
                    .collect(),
            ),
            _ => V::Other,
        }
    }
    let mut out = Vec::new();
    for kind in ["variable", "target"] {
        let Some(serde_json::Value::Object(m)) = top.get(kind) else {
            continue;
        };
        let kind_at = strings.at_or_after(kind, 0).unwrap_or(0);
        for (name, body) in m {
            // At the name's opening quote.
            let off = strings
                .at_or_after(name, kind_at)
                .map_or(kind_at.saturating_sub(1), |o| o - 1);
            let mut from = off + 1;
            let attrs = match conv(body, &strings, &mut from, 0) {
                V::Obj(f) => f,
                _ => Vec::new(),
            };
            out.push(Block {
                kind: kind.to_string(),
                labels: vec![name.clone()],
                attrs,
                off,
            });
        }
    }
    out
}

/// The variables a value sees: a matrix combination's bindings over the file's `variable`
/// defaults (looked up, never copied per target).
struct Scope<'a> {
    vars: &'a HashMap<String, String>,
    combo: &'a [Binding],
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        match self.combo.iter().rev().find(|(k, _, _)| &**k == name) {
            Some((_, v, _)) => Some(v),
            None => self.vars.get(name).map(String::as_str),
        }
    }
}

/// `${NAME}` / `${obj.field}` / `$${` in a raw string, with the variables of `scope`:
/// `Ok(None)` when something is not a plain known reference (a function, an operator, an
/// unknown variable); past an expansion bound, the bound (the value is never built past
/// [`MAX_WORD`], and what it costs is charged to the file's `budget`).
fn interpolate(
    raw: &str,
    scope: &Scope,
    budget: &mut ExpansionBudget,
) -> Result<Option<String>, ExpandLimit> {
    let mut out = String::new();
    let mut rest = raw;
    let push = |out: &mut String, piece: &str| {
        if out.len() + piece.len() > MAX_WORD {
            return Err(ExpandLimit::Size);
        }
        out.push_str(piece);
        Ok(())
    };
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            // `$${` is a literal `${`.
            push(&mut out, &rest[..i - 1])?;
            push(&mut out, "${")?;
            rest = &rest[i + 2..];
            continue;
        }
        push(&mut out, &rest[..i])?;
        let Some(end) = rest[i..].find('}').map(|e| e + i) else {
            return Ok(None);
        };
        let name = rest[i + 2..end].trim();
        let Some(v) = scope.get(name) else {
            return Ok(None);
        };
        push(&mut out, v)?;
        rest = &rest[end + 1..];
    }
    push(&mut out, rest)?;
    let out = out.replace("\\\"", "\"").replace("\\\\", "\\");
    budget.charge(out.len())?;
    Ok(Some(out))
}

/// A value as a string (see [`interpolate`]), charged to `budget` like any expansion: copies
/// of a long value into many targets cost as much memory as the value doubling.
fn scalar(
    v: &V,
    scope: &Scope,
    budget: &mut ExpansionBudget,
) -> Result<Option<String>, ExpandLimit> {
    match v {
        V::Str(raw, _) => interpolate(raw, scope, budget),
        V::Word(w, _) => {
            let x = match scope.get(w) {
                Some(x) => x,
                None if w.chars().all(|c| c.is_ascii_digit() || c == '.')
                    || &**w == "true"
                    || &**w == "false" =>
                {
                    w
                }
                None => return Ok(None),
            };
            budget.charge(x.len())?;
            Ok(Some(x.to_string()))
        }
        _ => Ok(None),
    }
}

/// Where a value is written, for an error about it.
fn offset_of(v: &V) -> Option<usize> {
    match v {
        V::Str(_, off) | V::Word(_, off) => Some(*off),
        _ => None,
    }
}

fn attr<'a>(attrs: &'a [(String, V)], k: &str) -> Option<&'a V> {
    attrs.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// Parent resolutions one target may cost: `inherits` lists may repeat a parent or fan out,
/// and a chain of them would otherwise cost exponentially many visits.
const MAX_INHERIT_VISITS: usize = 256;
/// Targets one bake file yields (matrix combinations included) for analysis.
pub const MAX_TARGETS: usize = 256;

/// The target blocks by name, the last of each name (as bake reads a redefinition): one
/// lookup per `inherits` entry, not a scan of every block.
fn target_index(blocks: &[Block]) -> HashMap<&str, &Block> {
    let mut m = HashMap::new();
    for b in blocks.iter().filter(|b| b.kind == "target") {
        if let Some(n) = b.labels.first() {
            m.insert(n.as_str(), b);
        }
    }
    m
}

/// A target's attributes with its `inherits` parents' underneath (args merged by key). A
/// parent already on the chain (a cycle, which buildx refuses) is skipped; `visits` bounds
/// the total work.
fn resolved(
    by_name: &HashMap<&str, &Block>,
    name: &str,
    chain: &mut Vec<String>,
    visits: &mut usize,
) -> Vec<(String, V)> {
    let Some(b) = by_name.get(name) else {
        return Vec::new();
    };
    *visits += 1;
    let mut out = Merged::default();
    chain.push(name.to_string());
    if let Some(V::List(ps)) = attr(&b.attrs, "inherits") {
        for p in ps {
            if let V::Str(p, _) = p {
                if chain.iter().any(|c| **c == **p) || *visits >= MAX_INHERIT_VISITS {
                    continue;
                }
                for (k, v) in resolved(by_name, p, chain, visits) {
                    out.merge(k, v);
                }
            }
        }
    }
    chain.pop();
    for (k, v) in &b.attrs {
        out.merge(k.clone(), v.clone());
    }
    out.list
}

/// Attributes being merged, each found by name, not searched for (a block of many
/// attributes, or `args`, merged in time quadratic in their number).
#[derive(Default)]
struct Merged {
    list: Vec<(String, V)>,
    at: HashMap<String, usize>,
}

impl Merged {
    /// `k = v` over what is there: `args` merge by key, anything else replaces.
    fn merge(&mut self, k: String, v: V) {
        match (self.at.get(&k).map(|&i| &mut self.list[i].1), v) {
            (Some(V::Obj(old)), V::Obj(new)) if k == "args" => merge_args(old, new),
            (Some(slot), v) => *slot = v,
            (None, v) => {
                self.at.insert(k.clone(), self.list.len());
                self.list.push((k, v));
            }
        }
    }
}

/// `new` args over `old`: a key set again moves to the end with its new value (the last of
/// a key repeated in `new` wins), in one pass.
fn merge_args(old: &mut Vec<(String, V)>, new: Vec<(String, V)>) {
    let keys: std::collections::HashSet<String> = new.iter().map(|(k, _)| k.clone()).collect();
    old.retain(|(k, _)| !keys.contains(k));
    let mut seen = std::collections::HashSet::new();
    let mut fresh: Vec<(String, V)> = new
        .into_iter()
        .rev()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect();
    fresh.reverse();
    old.extend(fresh);
}

/// One matrix binding: variable, value, where the value is written. Shared, not copied, by
/// the combinations that use it (up to [`MAX_TARGETS`] of them).
type Binding = (Rc<str>, Rc<str>, usize);

/// The matrix combinations: each a list of bindings; one empty combination when there is no
/// matrix. Object values bind `key.field`. The values are charged to `budget` once.
fn combinations(
    m: Option<&V>,
    budget: &mut ExpansionBudget,
) -> Result<Vec<Vec<Binding>>, ExpandLimit> {
    let mut out: Vec<Vec<Binding>> = vec![Vec::new()];
    let Some(V::Obj(fields)) = m else {
        return Ok(out);
    };
    let no_vars = Default::default();
    let literal = Scope {
        vars: &no_vars,
        combo: &[],
    };
    for (k, v) in fields {
        let V::List(vals) = v else {
            return Ok(Vec::new());
        };
        let key: Rc<str> = k.as_str().into();
        let mut options: Vec<Vec<Binding>> = Vec::new();
        for x in vals {
            match x {
                V::Str(raw, off) => {
                    let Some(x) = interpolate(raw, &literal, budget)? else {
                        return Ok(Vec::new());
                    };
                    options.push(vec![(key.clone(), x.into(), *off)]);
                }
                V::Obj(f) => {
                    let mut o = Vec::new();
                    for (fk, fv) in f {
                        if let V::Str(raw, off) = fv {
                            if let Some(x) = interpolate(raw, &literal, budget)? {
                                o.push((format!("{k}.{fk}").into(), x.into(), *off));
                            }
                        }
                    }
                    options.push(o);
                }
                _ => return Ok(Vec::new()),
            }
        }
        // Bounded while built, not after: a matrix is a handful of axes of a few values each,
        // and a hostile one must not allocate the full product first.
        out = out
            .iter()
            .flat_map(|c| {
                options.iter().map(move |o| {
                    let mut c = c.clone();
                    c.extend(o.iter().cloned());
                    c
                })
            })
            .take(MAX_TARGETS)
            .collect();
    }
    Ok(out)
}

/// Records an expansion bound hit by the value written at `off` (once for the file's total).
struct Errors<'a> {
    idx: &'a LineIndex,
    list: Vec<SpecError>,
}

impl Errors<'_> {
    fn bound(&mut self, budget: &mut ExpansionBudget, limit: ExpandLimit, off: usize) {
        if budget.should_report(limit) {
            self.list.push(SpecError {
                pos: self.idx.pos(off),
                message: limit.to_string(),
            });
        }
    }
}

fn targets(blocks: &[Block], text: &str) -> Bake {
    let idx = LineIndex::new(text);
    let mut errors = Errors {
        idx: &idx,
        list: Vec::new(),
    };
    let mut budget = ExpansionBudget::per_file();
    let by_name = target_index(blocks);
    // Two passes: a default may name a variable defined further down. A bound is reported
    // from the second, which meets it again.
    let mut vars: HashMap<String, String> = HashMap::new();
    for pass in 0..2 {
        for b in blocks.iter().filter(|b| b.kind == "variable") {
            if let (Some(n), Some(v)) = (b.labels.first(), attr(&b.attrs, "default")) {
                let scope = Scope {
                    vars: &vars,
                    combo: &[],
                };
                match scalar(v, &scope, &mut budget) {
                    Ok(Some(v)) => {
                        vars.insert(n.clone(), v);
                    }
                    Ok(None) => {}
                    Err(l) if pass == 1 => {
                        errors.bound(&mut budget, l, offset_of(v).unwrap_or(b.off))
                    }
                    Err(_) => {}
                }
            }
        }
    }
    let mut out = Vec::new();
    for b in blocks.iter().filter(|b| b.kind == "target") {
        let Some(name) = b.labels.first() else {
            continue;
        };
        let attrs = resolved(&by_name, name, &mut Vec::new(), &mut 0);
        if attr(&attrs, "dockerfile-inline").is_some() {
            continue;
        }
        let combos = match combinations(attr(&attrs, "matrix"), &mut budget) {
            Ok(c) => c,
            Err(l) => {
                errors.bound(&mut budget, l, b.off);
                continue;
            }
        };
        for combo in combos {
            if out.len() >= MAX_TARGETS {
                return Bake {
                    targets: out,
                    errors: errors.list,
                };
            }
            let scope = Scope {
                vars: &vars,
                combo: &combo,
            };
            let mut get = |k: &str, budget: &mut ExpansionBudget| {
                let x = attr(&attrs, k)?;
                scalar(x, &scope, budget).unwrap_or_else(|l| {
                    errors.bound(budget, l, offset_of(x).unwrap_or(b.off));
                    None
                })
            };
            let tname = if combo.is_empty() {
                name.clone()
            } else {
                get("name", &mut budget).unwrap_or_else(|| {
                    let vals: Vec<&str> = combo.iter().map(|c| &*c.1).collect();
                    format!("{name}-{}", vals.join("-"))
                })
            };
            let context = get("context", &mut budget).unwrap_or_else(|| ".".into());
            let dockerfile = get("dockerfile", &mut budget).unwrap_or_else(|| "Dockerfile".into());
            let target = get("target", &mut budget);
            let mut args = Vec::new();
            if let Some(V::Obj(fields)) = attr(&attrs, "args") {
                for (k, x) in fields {
                    let val = match scalar(x, &scope, &mut budget) {
                        Ok(Some(val)) => val,
                        Ok(None) => continue,
                        Err(l) => {
                            errors.bound(&mut budget, l, offset_of(x).unwrap_or(b.off));
                            continue;
                        }
                    };
                    // At the value as written; a value from a matrix variable is written in
                    // the matrix.
                    let off = match x {
                        V::Str(raw, off) => combo
                            .iter()
                            .find(|c| raw.trim() == format!("${{{}}}", c.0))
                            .map(|c| c.2)
                            .unwrap_or(*off),
                        V::Word(w, off) => combo
                            .iter()
                            .find(|c| *c.0 == **w)
                            .map(|c| c.2)
                            .unwrap_or(*off),
                        _ => b.off,
                    };
                    args.push((k.clone(), val, idx.pos(off)));
                }
            }
            out.push(BakeTarget {
                name: tname,
                pos: idx.pos(b.off),
                context,
                dockerfile,
                args,
                target,
            });
        }
    }
    Bake {
        targets: out,
        errors: errors.list,
    }
}

/// A bake file read: its targets, and where it went past an expansion bound (GL100; the
/// value is left out, as a value we cannot evaluate is).
#[derive(Debug, Default)]
pub struct Bake {
    pub targets: Vec<BakeTarget>,
    pub errors: Vec<SpecError>,
}

/// The targets of a bake file: HCL, or JSON when `json`.
pub fn parse(text: &str, json: bool) -> Bake {
    let blocks = if json {
        parse_json_blocks(text)
    } else {
        parse_hcl_blocks(text)
    };
    targets(&blocks, text)
}

/// Bake's default file names (`docker buildx bake` reads these without `-f`).
pub fn is_bake_name(name: &str) -> Option<bool> {
    let n = name.to_ascii_lowercase();
    if !n.starts_with("docker-bake") {
        return None;
    }
    if n.ends_with(".hcl") {
        Some(false)
    } else if n.ends_with(".json") {
        Some(true)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `inherits` fan-out over a long chain (8 parents per level, 12 levels: 8^12 visits
    /// without a bound) and a self-cycle cost a bounded number of visits, and still merge.
    #[test]
    fn inherits_fan_out_and_cycles_are_bounded() {
        let mut text = String::new();
        for level in 0..12 {
            let parent = format!("\"t{}\"", level + 1);
            let parents = vec![parent; 8].join(", ");
            text.push_str(&format!(
                "target \"t{level}\" {{\n  inherits = [{parents}, \"t{level}\"]\n}}\n"
            ));
        }
        text.push_str("target \"t12\" {\n  args = { DEEP = \"1\" }\n}\n");
        let blocks = parse_hcl_blocks(&text);
        let mut visits = 0;
        let attrs = resolved(&target_index(&blocks), "t0", &mut Vec::new(), &mut visits);
        assert!(visits <= MAX_INHERIT_VISITS, "{visits}");
        assert!(
            matches!(attr(&attrs, "args"), Some(V::Obj(f)) if f.iter().any(|(k, _)| k == "DEEP")),
            "{attrs:?}"
        );
    }

    /// Variables that double at each step (`V2 = "${V1}${V1}"`, 64 steps in 2.8 KB) grew to
    /// 2^64 bytes: the first value past 1 MiB is a located error and is left out, and what
    /// refers to it is unknown, never expanded further.
    #[test]
    fn doubling_variables_stop_at_the_word_bound() {
        let mut text = String::from("variable \"V0\" { default = \"a\" }\n");
        for i in 1..=64 {
            text += &format!(
                "variable \"V{i}\" {{ default = \"${{V{p}}}${{V{p}}}\" }}\n",
                p = i - 1
            );
        }
        text += "target \"t\" {\n  args = {\n    A = \"${V64}\"\n    B = \"${V20}\"\n  }\n}\n";
        let bake = parse(&text, false);
        assert_eq!(bake.errors.len(), 1, "{:?}", bake.errors);
        // V21 (line 22) is 2 MiB: the first past the bound, at its value.
        assert_eq!(bake.errors[0].pos, Pos { line: 22, col: 29 });
        assert!(
            bake.errors[0].message.contains("exceeds 1 MiB"),
            "{:?}",
            bake.errors
        );
        let args = &bake.targets[0].args;
        assert_eq!(args.len(), 1, "A is unknown, B is 1 MiB: {:?}", args.len());
        assert_eq!((args[0].0.as_str(), args[0].1.len()), ("B", 1 << 20));
    }

    /// Values each under 1 MiB, copied into many targets (a matrix): the file's expansions
    /// stop at the shared budget, reported once, and the values past it are left out.
    #[test]
    fn copies_into_many_targets_share_one_budget() {
        let mut text = String::from("variable \"V0\" { default = \"aaaaaaaa\" }\n");
        for i in 1..=17 {
            text += &format!(
                "variable \"V{i}\" {{ default = \"${{V{p}}}${{V{p}}}\" }}\n",
                p = i - 1
            );
        }
        let vals: Vec<String> = (0..100).map(|i| format!("\"{i}\"")).collect();
        text += &format!(
            "target \"t\" {{\n  matrix = {{ i = [{}] }}\n  args = {{ A = \"${{V17}}\" }}\n}}\n",
            vals.join(", ")
        );
        let bake = parse(&text, false);
        assert_eq!(bake.targets.len(), 100);
        assert_eq!(bake.errors.len(), 1, "{:?}", bake.errors);
        assert!(
            bake.errors[0].message.contains("in all"),
            "{:?}",
            bake.errors
        );
        assert_eq!(bake.errors[0].pos.line, 21);
        let kept: usize = bake
            .targets
            .iter()
            .flat_map(|t| &t.args)
            .map(|a| a.1.len())
            .sum();
        assert!(kept <= crate::spec::expand::MAX_FILE, "{kept}");
        // The first targets have the value; the budget ends about 31 MiB in (the variables
        // took 2 MiB of it).
        assert_eq!(bake.targets[0].args[0].1.len(), 1 << 20);
        assert!(bake.targets[99].args.is_empty());
    }

    /// Many variables and targets: each name is looked up, not searched for among all the
    /// blocks (a scan per reference made a long file quadratic: 20 000 variables and targets
    /// took over 2 minutes here).
    #[test]
    fn many_variables_and_targets_resolve_by_lookup() {
        let n = 20_000;
        let mut text = String::from("variable \"V0\" { default = \"1\" }\n");
        for i in 1..n {
            text += &format!("variable \"V{i}\" {{ default = V{} }}\n", i - 1);
        }
        text += &format!("target \"base\" {{\n  args = {{ A = V{} }}\n}}\n", n - 1);
        for i in 0..n {
            text += &format!(
                "target \"t{i}\" {{\n  inherits = [\"base\"]\n  dockerfile-inline = \"FROM x\"\n}}\n"
            );
        }
        let t = std::time::Instant::now();
        let bake = parse(&text, false);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        assert!(bake.errors.is_empty(), "{:?}", bake.errors);
        assert_eq!(bake.targets.len(), 1);
        assert_eq!(bake.targets[0].args[0].1, "1");
    }

    /// JSON strings are placed by lookup: an escaped string (`\u0041`) is not found as
    /// re-encoded text, and each such miss searched the rest of the file (60 000 of them in
    /// 2 MB: over 100 s here).
    #[test]
    fn json_strings_are_placed_in_linear_time() {
        let vars: Vec<String> = (0..60_000)
            .map(|i| format!("\"V{i:06}\": {{\"default\": \"\\u0041x\"}}"))
            .collect();
        let text = format!(
            "{{\"variable\": {{{}}},\n \"target\": {{\"t\": {{\"args\": {{\"A\": \"${{V059999}}\"}}}}}}}}",
            vars.join(", ")
        );
        let t = std::time::Instant::now();
        let bake = parse(&text, true);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        let a = &bake.targets[0].args[0];
        assert_eq!((a.0.as_str(), a.1.as_str(), a.2.line), ("A", "Ax", 2));
    }

    /// A target setting many args over a parent's many args merges them by key in one pass
    /// (a search of the merged args per arg made 50 000 over 50 000 take minutes), and the
    /// parent's text is shared by the targets that inherit it, not copied into each.
    #[test]
    fn inherited_args_merge_in_linear_time() {
        let args = |p: &str| -> String {
            (0..50_000)
                .map(|i| format!("    {p}{i} = \"{i}\"\n"))
                .collect()
        };
        let text = format!(
            "target \"base\" {{\n  args = {{\n{}    BIG = \"{}\"\n  }}\n}}\n\
             target \"app\" {{\n  inherits = [\"base\"]\n  args = {{\n{}    A7 = \"x\"\n  }}\n}}\n",
            args("A"),
            "b".repeat(1 << 20),
            args("B"),
        );
        let t = std::time::Instant::now();
        let bake = parse(&text, false);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(30));
        let app = bake.targets.iter().find(|t| t.name == "app").unwrap();
        assert_eq!(app.args.len(), 100_001);
        // Set again by the target: its value, after the parent's others.
        assert_eq!(
            app.args.last().map(|a| (a.0.as_str(), a.1.as_str())),
            Some(("A7", "x"))
        );
        assert!(!app.args.iter().any(|a| a.0 == "A7" && a.1 == "7"));
    }

    /// A matrix whose product is huge yields at most MAX_TARGETS targets, built lazily.
    #[test]
    fn a_huge_matrix_is_bounded() {
        let vals = |n: usize| {
            (0..n)
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let text = format!(
            "target \"m\" {{\n  dockerfile = \"Dockerfile\"\n  matrix = {{\n    a = [{}]\n    b = [{}]\n    c = [{}]\n  }}\n  args = {{ A = \"${{a}}\" }}\n}}\ntarget \"n\" {{\n  args = {{ B = \"1\" }}\n}}\n",
            vals(300),
            vals(300),
            vals(300)
        );
        let t = parse(&text, false).targets;
        assert_eq!(t.len(), MAX_TARGETS);
        let m = parse_hcl_blocks(&text);
        let c = combinations(attr(&m[0].attrs, "matrix"), &mut Default::default());
        assert!(c.unwrap().len() <= MAX_TARGETS);
    }

    #[test]
    fn targets_variables_inherits_and_matrix() {
        let hcl = r#"
# comment
variable "CUDA" {
  default = "12.4.1"
}
group "default" {
  targets = ["base", "app"]
}
target "base" {
  context = "docker"
  args = {
    CUDA_VERSION = "${CUDA}"
    PY = 3.11
  }
}
target "app" {
  inherits = ["base"]
  dockerfile = "Dockerfile.gpu"
  target = "runtime"
  name = "app-${torch}"
  matrix = {
    torch = ["2.3.0", "2.5.1"]
  }
  args = {
    TORCH = "${torch}"
    TAG = "${upper(CUDA)}" // a function: not evaluated
  }
}
"#;
        let t = parse(hcl, false).targets;
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["base", "app-2.3.0", "app-2.5.1"]);
        assert_eq!(
            (t[0].context.as_str(), t[0].dockerfile.as_str()),
            ("docker", "Dockerfile")
        );
        let args = |t: &BakeTarget| -> Vec<(String, String, u32)> {
            t.args
                .iter()
                .map(|(k, v, p)| (k.clone(), v.clone(), p.line))
                .collect()
        };
        assert_eq!(
            args(&t[0]),
            vec![
                ("CUDA_VERSION".into(), "12.4.1".into(), 12),
                ("PY".into(), "3.11".into(), 13)
            ]
        );
        // Inherited context and args, its own dockerfile and stage; the matrix value is
        // placed in the matrix.
        assert_eq!(t[2].context, "docker");
        assert_eq!(t[2].dockerfile, "Dockerfile.gpu");
        assert_eq!(t[2].target.as_deref(), Some("runtime"));
        let a = args(&t[2]);
        assert!(a.contains(&("TORCH".into(), "2.5.1".into(), 22)), "{a:?}");
        assert!(
            a.contains(&("CUDA_VERSION".into(), "12.4.1".into(), 12)),
            "{a:?}"
        );
        assert!(!a.iter().any(|x| x.0 == "TAG"), "{a:?}");
    }

    #[test]
    fn json_form_and_hostile_input() {
        let j = r#"{"variable": {"CUDA": {"default": "11.3.1"}},
 "target": {"gpu": {"context": ".", "dockerfile": "Dockerfile",
   "args": {"CUDA_VERSION": "${CUDA}"}}}}"#;
        let t = parse(j, true).targets;
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].args[0].0, "CUDA_VERSION");
        assert_eq!(t[0].args[0].1, "11.3.1");
        assert_eq!(t[0].args[0].2.line, 3);
        // Deep nesting, unterminated strings and blocks: no panic, bounded.
        let deep = format!("target \"x\" {{ args = {}", "[".repeat(10_000));
        let _ = parse(&deep, false);
        let _ = parse("target \"x\" { context = \"unterminated\n", false);
        let _ = parse("}}}} = = \"\" target", false);
        assert!(parse("not json", true).targets.is_empty());
        // Token soup (a fixed pseudo-random sequence): parsing ends, without a panic.
        let toks = [
            "target", "\"t\"", "{", "}", "[", "]", "=", ",", "\n", "args", "matrix", "name",
            "\"${x}\"", "\"$${\"", "x", "# c\n", "/*", "*/", "inherits", "\"", ":", "(", ")", "${",
            "variable", "default",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut t = String::new();
            for _ in 0..40 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                t.push_str(toks[(seed % toks.len() as u64) as usize]);
                t.push(' ');
            }
            let _ = parse(&t, false);
        }
    }
}
