//! Scripts as commands: a script split on `&&` `
//!
//! ` `;` `
//! ` `&` and newlines into simple
//! commands with their words, redirections and assignments (which set variables for later words).

use super::*;

pub(super) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
];

/// Parse a shell script into simple commands, in order. Assignments (`X=1`, `export X=1`)
/// update `vars` for the commands after them. Never fails: odd input gives odd words.
pub fn parse_script(src: &str, vars: &mut Vars) -> Vec<Command> {
    try_parse_script(src, vars).0
}

/// [`parse_script`], and the first expansion limit a word hit (that word stays as written,
/// unresolved).
pub fn try_parse_script(src: &str, vars: &mut Vars) -> (Vec<Command>, Option<ExpandLimit>) {
    try_parse_script_within(src, vars, &mut ExpansionBudget::per_file())
}

/// [`try_parse_script`] of a whole file, with the byte offset of the word that hit the limit.
pub fn try_parse_script_located(
    src: &str,
    vars: &mut Vars,
) -> (Vec<Command>, Option<(ExpandLimit, usize)>) {
    parse_script_budgeted(src, vars, &mut ExpansionBudget::per_file())
}

/// [`try_parse_script`] with the expansion budget of the file it is part of (a Dockerfile's
/// RUN instructions and values): the bytes its words expand to are charged to `budget`; once
/// it is spent, words that would expand stay as written, unresolved ([`ExpandLimit::Total`]).
pub(crate) fn try_parse_script_within(
    src: &str,
    vars: &mut Vars,
    budget: &mut ExpansionBudget,
) -> (Vec<Command>, Option<ExpandLimit>) {
    let (cmds, limit) = parse_script_budgeted(src, vars, budget);
    (cmds, limit.map(|l| l.0))
}

pub(super) fn parse_script_budgeted(
    src: &str,
    vars: &mut Vars,
    budget: &mut ExpansionBudget,
) -> (Vec<Command>, Option<(ExpandLimit, usize)>) {
    let mut first_limit = None;
    let no_vars = Vars::new();
    let mut lx = Lexer::new(src, b'\\', 0);
    let mut cmds = Vec::new();
    let mut cur = Command::default();
    let mut pending_redirect: Option<Redirect> = None;
    let mut in_for = false;
    let mut in_case = false;
    let finish = |cur: &mut Command, cmds: &mut Vec<Command>, vars: &mut Vars| {
        let mut c = std::mem::take(cur);
        // Strip leading keywords (`if`, `then`, `do`…): the command follows them.
        while c
            .words
            .first()
            .map(|w| !w.quoted && KEYWORDS.contains(&w.raw.as_str()))
            .unwrap_or(false)
        {
            let w = c.words.remove(0);
            // `if X=1 cmd` is rare; keep it simple.
            let _ = w;
            // `then X=$(…) && …`: words after a keyword that are assignments are assignments.
            while let Some(w) = c.words.first() {
                match w.raw.split_once('=').map(|(k, _)| k.to_string()) {
                    Some(k) if !w.quoted && is_name(&k) => {
                        let w = c.words.remove(0);
                        let v = w.text.split_once('=').map(|x| x.1).unwrap_or("");
                        if w.unresolved {
                            c.unknown_assigns.push(k.clone());
                        }
                        c.assigns.push((k, v.to_string()));
                    }
                    _ => break,
                }
            }
        }
        if c.words.is_empty() {
            for (k, v) in &c.assigns {
                let val = if c.unknown_assigns.contains(k) {
                    Var::Unknown
                } else {
                    Var::Set(v.clone())
                };
                vars.insert(k.clone(), val);
            }
        } else {
            let name = c.words[0].text.as_str();
            if matches!(name, "export" | "ENV" | "declare" | "local" | "readonly") {
                for w in &c.words[1..] {
                    if let Some((k, v)) = w.text.split_once('=') {
                        if is_name(k) {
                            let val = if w.unresolved {
                                Var::Unknown
                            } else {
                                Var::Set(v.to_string())
                            };
                            vars.insert(k.to_string(), val);
                        }
                    }
                }
            } else if name == "unset" {
                for w in &c.words[1..] {
                    vars.remove(&w.text);
                }
            }
        }
        if !c.words.is_empty() || !c.redirects.is_empty() || !c.assigns.is_empty() {
            cmds.push(c);
        }
    };
    loop {
        // Skip blanks.
        while let Some(b) = lx.peek() {
            if b == b' ' || b == b'\t' || b == b'\r' {
                lx.i += 1;
            } else if b == b'\\' && lx.peek_at(1) == Some(b'\n') {
                lx.i += 2;
            } else {
                break;
            }
        }
        let Some(b) = lx.peek() else { break };
        let start = lx.i;
        match b {
            b'#' => {
                while let Some(c) = lx.peek() {
                    if c == b'\n' {
                        break;
                    }
                    lx.i += 1;
                }
                continue;
            }
            b'\n' | b';' | b'&' | b'|' | b'(' | b')' => {
                // `;;` in case, `&&`, `||`, `|&`: all separate commands.
                lx.i += 1;
                if matches!(lx.peek(), Some(b'&') | Some(b'|') | Some(b';'))
                    && b != b'('
                    && b != b')'
                {
                    lx.i += 1;
                }
                if b == b'&' && lx.peek() == Some(b'>') {
                    // `&>file`
                    lx.i += 1;
                    pending_redirect = Some(Redirect {
                        op: "&>".into(),
                        target: None,
                        offset: start,
                    });
                    continue;
                }
                if b == b'\n' || b == b';' {
                    in_for = false;
                }
                pending_redirect = None;
                finish(&mut cur, &mut cmds, vars);
                continue;
            }
            b'<' | b'>' => {
                let mut op = String::new();
                while let Some(c) = lx.peek() {
                    if matches!(c, b'<' | b'>' | b'&' | b'-' | b'|') && op.len() < 3 {
                        op.push(c as char);
                        lx.i += 1;
                    } else {
                        break;
                    }
                }
                pending_redirect = Some(Redirect {
                    op,
                    target: None,
                    offset: start,
                });
                // `2>&1`: the target is the fd digits that follow.
                continue;
            }
            _ => {}
        }
        if !budget.take_word() {
            first_limit.get_or_insert((ExpandLimit::Words, start));
            break;
        }
        let mut text = String::new();
        let mut unresolved = false;
        let mut quoted = false;
        // Budget spent: lexed without expanding (the word is kept as written below).
        let spent = budget.is_spent();
        let word_vars: &Vars = if spent { &no_vars } else { vars };
        lx.word_body(word_vars, &mut text, &mut unresolved, &mut quoted, true);
        if lx.i == start {
            // Could not make progress (stray byte): skip it.
            lx.next_char();
            continue;
        }
        let raw = src[start..lx.i].to_string();
        if let Some(l) = lx.limit.take() {
            first_limit.get_or_insert((l, start));
            text = raw.clone();
            unresolved = true;
        } else if spent {
            if raw.contains(['$', '`']) {
                first_limit.get_or_insert((ExpandLimit::Total, start));
                text = raw.clone();
                unresolved = true;
            }
        } else if let Err(l) = budget.charge(text.len()) {
            first_limit.get_or_insert((l, start));
            text = raw.clone();
            unresolved = true;
        }
        let word = Word {
            text,
            raw,
            offset: start,
            unresolved,
            quoted,
        };
        // fd number glued to a redirect (`2>`): the next char is `<` or `>`.
        if matches!(lx.peek(), Some(b'<') | Some(b'>'))
            && word.raw.bytes().all(|b| b.is_ascii_digit())
            && pending_redirect.is_none()
        {
            continue;
        }
        if let Some(mut r) = pending_redirect.take() {
            r.target = Some(word);
            cur.redirects.push(r);
            continue;
        }
        // `X="a b"` is an assignment too: only the name must be unquoted (is_name).
        if cur.words.is_empty() {
            if let Some((k, v)) = word.raw.split_once('=') {
                if is_name(k) {
                    let (val, _) = word
                        .text
                        .split_once('=')
                        .map(|(_, v)| (v.to_string(), ()))
                        .unwrap_or((v.to_string(), ()));
                    if word.unresolved {
                        cur.unknown_assigns.push(k.to_string());
                    }
                    cur.assigns.push((k.to_string(), val));
                    continue;
                }
            }
        }
        if cur.words.is_empty() && cur.assigns.is_empty() {
            cur.offset = start;
            if word.raw == "for" || word.raw == "select" {
                in_for = true;
            }
            if word.raw == "case" {
                in_case = true;
            }
            if word.raw == "esac" {
                in_case = false;
            }
        }
        let _ = (in_for, in_case);
        cur.words.push(word);
    }
    if let Some(r) = pending_redirect.take() {
        cur.redirects.push(r);
    }
    finish(&mut cur, &mut cmds, vars);
    (cmds, first_limit)
}
