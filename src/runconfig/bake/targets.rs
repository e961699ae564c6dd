//! From blocks to the builds a bake makes: `variable` defaults substituted, `inherits`
//! merged, `matrix` expanded, each target's args located at their attribute.

use super::*;

/// The variables a value sees: a matrix combination's bindings over the file's `variable`
/// defaults (looked up, never copied per target).
pub(super) struct Scope<'a> {
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
pub(super) fn interpolate(
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
pub(super) fn scalar(
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
pub(super) fn offset_of(v: &V) -> Option<usize> {
    match v {
        V::Str(_, off) | V::Word(_, off) => Some(*off),
        _ => None,
    }
}

pub(super) fn attr<'a>(attrs: &'a [(String, V)], k: &str) -> Option<&'a V> {
    attrs.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// Parent resolutions one target may cost: `inherits` lists may repeat a parent or fan out,
/// and a chain of them would otherwise cost exponentially many visits.
pub(super) const MAX_INHERIT_VISITS: usize = 256;
/// Targets one bake file yields (matrix combinations included) for analysis.
pub const MAX_TARGETS: usize = 256;

/// The target blocks by name, the last of each name (as bake reads a redefinition): one
/// lookup per `inherits` entry, not a scan of every block.
pub(super) fn target_index(blocks: &[Block]) -> HashMap<&str, &Block> {
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
pub(super) fn resolved(
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
pub(super) struct Merged {
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
pub(super) fn merge_args(old: &mut Vec<(String, V)>, new: Vec<(String, V)>) {
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
pub(super) type Binding = (Rc<str>, Rc<str>, usize);

/// The matrix combinations: each a list of bindings; one empty combination when there is no
/// matrix. Object values bind `key.field`. The values are charged to `budget` once.
pub(super) fn combinations(
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
pub(super) struct Errors<'a> {
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

pub(super) fn targets(blocks: &[Block], text: &str) -> Bake {
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
