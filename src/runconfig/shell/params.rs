//! Parameter expansion inside a word: `${V:-x}`, `${V:+x}`, `${V#p}`, `${V%p}`, `${V/p/r}`
//! and the shell glob patterns they trim with, bounded in size and nesting.

use super::*;

impl Lexer<'_> {
    /// Past [`MAX_EXPANDED`]: record the limit (the caller drops the output).
    pub(super) fn check_size(&mut self, out: &str, unresolved: &mut bool) {
        if out.len() > MAX_EXPANDED {
            self.limit.get_or_insert(ExpandLimit::Size);
            *unresolved = true;
        }
    }
}

/// The text of a `${…}` operand word, expanded one level deeper.
pub(super) fn expand_sub(
    w: &str,
    vars: &Vars,
    depth: usize,
    limit: &mut Option<ExpandLimit>,
) -> (String, bool) {
    let mut l = Lexer::new(w, b'\\', depth);
    let mut o = String::new();
    let mut u = false;
    let mut q = false;
    while l.i < l.s.len() && l.limit.is_none() {
        l.word_body(vars, &mut o, &mut u, &mut q, false);
        if l.i < l.s.len() {
            let c = l.next_char();
            o.push(c);
        }
    }
    if l.limit.is_some() {
        *limit = l.limit;
        return (String::new(), true);
    }
    (o, u)
}

/// `${…}` body: `NAME`, `NAME:-w`, `NAME-w`, `NAME:+w`, `NAME+w`, `NAME:?w`, `NAME#p`,
/// `NAME##p`, `NAME%p`, `NAME%%p`, `NAME/p/r`, `NAME//p/r`, `#NAME`. None = not understood.
/// Operand words are expanded at `depth`; a limit hit there is set in `limit`.
pub(super) fn expand_braced(
    body: &str,
    vars: &Vars,
    depth: usize,
    limit: &mut Option<ExpandLimit>,
) -> Option<(String, bool)> {
    if let Some(name) = body.strip_prefix('#') {
        if is_name(name) {
            return match vars.get(name) {
                Some(Var::Set(v)) => Some((v.chars().count().to_string(), false)),
                Some(Var::Unknown) => None,
                None => Some(("0".into(), false)),
            };
        }
    }
    let name_len = body
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    if name_len == 0 {
        return None;
    }
    let name = &body[..name_len];
    let op_and_word = &body[name_len..];
    let val = vars.get(name);
    let mut sub = |w: &str| -> (String, bool) { expand_sub(w, vars, depth, limit) };
    if op_and_word.is_empty() {
        return match val {
            Some(Var::Set(v)) => Some((v.clone(), false)),
            Some(Var::Unknown) => None,
            None => Some((String::new(), false)),
        };
    }
    let ops: [&str; 13] = [
        "//", "/", ":-", ":+", ":?", ":=", "##", "%%", "-", "+", "?", "#", "%",
    ];
    let op = *ops.iter().find(|o| op_and_word.starts_with(**o))?;
    let word = &op_and_word[op.len()..];
    match op {
        ":-" | "-" | ":=" => match val {
            Some(Var::Set(v)) if !(v.is_empty() && op.starts_with(':')) => Some((v.clone(), false)),
            Some(Var::Set(_)) | None => Some(sub(word)),
            // An ARG that may be passed at build time: the default is only a guess.
            Some(Var::Unknown) => None,
        },
        ":+" | "+" => match val {
            Some(Var::Set(v)) if !(v.is_empty() && op == ":+") => Some(sub(word)),
            Some(Var::Set(_)) | None => Some((String::new(), false)),
            Some(Var::Unknown) => None,
        },
        ":?" | "?" => match val {
            Some(Var::Set(v)) => Some((v.clone(), false)),
            _ => None,
        },
        "#" | "##" | "%" | "%%" => match val {
            Some(Var::Set(v)) => {
                let (pat, u) = sub(word);
                if pat.contains(['*', '?']) && v.len().saturating_mul(pat.len()) > MAX_GLOB_TRIM {
                    *limit = Some(ExpandLimit::Trim);
                    return None;
                }
                Some((trim_pattern(v, &pat, op), u))
            }
            Some(Var::Unknown) => None,
            None => Some((String::new(), false)),
        },
        "/" | "//" => match val {
            Some(Var::Set(v)) => {
                let (p, r) = match word.split_once('/') {
                    Some((p, r)) => (p, r),
                    None => (word, ""),
                };
                let (p, _) = sub(p);
                let (r, _) = sub(r);
                if p.is_empty() {
                    return Some((v.clone(), false));
                }
                if r.len() > p.len() {
                    let n = if op == "//" {
                        v.matches(p.as_str()).count()
                    } else {
                        usize::from(v.contains(p.as_str()))
                    };
                    if v.len().saturating_add(n.saturating_mul(r.len() - p.len())) > MAX_EXPANDED {
                        *limit = Some(ExpandLimit::Size);
                        return None;
                    }
                }
                Some((
                    if op == "//" {
                        v.replace(&p, &r)
                    } else {
                        v.replacen(&p, &r, 1)
                    },
                    false,
                ))
            }
            Some(Var::Unknown) => None,
            None => Some((String::new(), false)),
        },
        _ => None,
    }
}

pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

/// Shell glob match (`*`, `?`, literal) of the whole of `s`.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ti;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Does the `?`-wildcard segment `seg` match `t` (same length) exactly?
pub(super) fn seg_eq(seg: &[char], t: &[char]) -> bool {
    seg.len() == t.len() && seg.iter().zip(t).all(|(p, c)| *p == '?' || p == c)
}

/// The lengths `i` (in chars) of the prefixes `t[..i]` that the glob `p` matches whole: the
/// shortest and the longest, or None. One left-to-right pass: the segments between `*`s are
/// placed leftmost in order (the placement that leaves every later choice open), then the last
/// segment must end the prefix. O(|t| · |p|) at worst, never O(|t|²) over the candidate splits.
pub(super) fn glob_prefixes(p: &[char], t: &[char]) -> Option<(usize, usize)> {
    let segs: Vec<&[char]> = p.split(|c| *c == '*').collect();
    let [first, mid @ .., last] = segs.as_slice() else {
        // No `*`: one candidate length.
        return (t.len() >= p.len() && seg_eq(p, &t[..p.len()])).then_some((p.len(), p.len()));
    };
    if t.len() < first.len() || !seg_eq(first, &t[..first.len()]) {
        return None;
    }
    let mut pos = first.len();
    for seg in mid {
        if seg.is_empty() {
            continue;
        }
        let at =
            (pos..=t.len().checked_sub(seg.len())?).find(|&i| seg_eq(seg, &t[i..i + seg.len()]))?;
        pos = at + seg.len();
    }
    let ends = |i: &usize| seg_eq(last, &t[i - last.len()..*i]);
    let lo = pos + last.len();
    if lo > t.len() {
        return None;
    }
    let shortest = (lo..=t.len()).find(ends)?;
    let longest = (lo..=t.len()).rev().find(ends)?;
    Some((shortest, longest))
}

/// `${v#pat}`, `${v##pat}`, `${v%pat}`, `${v%%pat}`: linear in the value for a fixed pattern
/// (a suffix trim is a prefix trim of both reversed).
pub(super) fn trim_pattern(v: &str, pat: &str, op: &str) -> String {
    if !pat.contains(['*', '?']) {
        // A literal: one match at most, no need to try every split.
        let t = match op {
            "#" | "##" => v.strip_prefix(pat),
            _ => v.strip_suffix(pat),
        };
        return t.unwrap_or(v).to_string();
    }
    let mut p: Vec<char> = pat.chars().collect();
    let mut t: Vec<char> = v.chars().collect();
    let suffix = matches!(op, "%" | "%%");
    if suffix {
        p.reverse();
        t.reverse();
    }
    let Some((shortest, longest)) = glob_prefixes(&p, &t) else {
        return v.to_string();
    };
    let n = if op.len() == 2 { longest } else { shortest };
    if suffix {
        t[n..].iter().rev().collect()
    } else {
        t[n..].iter().collect()
    }
}
