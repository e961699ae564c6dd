//! A Dockerfile parser that follows BuildKit's `frontend/dockerfile/parser` line for line:
//! parser directives (`# syntax`, `# escape`, `# check`) before anything else, continuation
//! lines (comments and blank lines inside a continuation are dropped), heredocs on RUN / COPY /
//! ADD (`<<EOF`, `<<-EOF`, quoted names, several per line), JSON vs shell form, and flags
//! (`--from=…`). Every instruction keeps a map from offsets in its joined text back to the
//! original file line and column, so facts found deep inside a RUN point at the right place.
//!
//! The parser never fails: what BuildKit would reject becomes a [`ParseError`] with a line, and
//! parsing goes on where BuildKit's would stop (we report, it aborts).

use serde::Serialize;

/// A 1-based line and column in the source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

/// Maps byte offsets of a joined text back to file positions.
#[derive(Debug, Clone, Default)]
pub struct PosMap {
    /// (offset in the joined text, file line, file column of that offset), sorted by offset.
    segs: Vec<(usize, u32, u32)>,
}

impl PosMap {
    pub fn push(&mut self, offset: usize, line: u32, col: u32) {
        self.segs.push((offset, line, col));
    }
    pub fn pos(&self, offset: usize) -> Pos {
        let i = match self.segs.binary_search_by(|s| s.0.cmp(&offset)) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        };
        match self.segs.get(i) {
            Some(&(o, l, c)) => Pos {
                line: l,
                col: c + offset.saturating_sub(o) as u32,
            },
            None => Pos { line: 1, col: 1 },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    pub name: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Heredoc {
    pub name: String,
    /// `<<-`: leading tabs stripped from the body and the terminator.
    pub chomp: bool,
    /// Quoted name (`<<'EOF'`, `<<"EOF"`): no expansion inside.
    pub expand: bool,
    pub content: String,
    /// File line of the first content line.
    pub first_line: u32,
}

#[derive(Debug, Clone)]
pub struct Instruction {
    /// Upper-case keyword (`RUN`), as BuildKit reports it.
    pub cmd: String,
    /// Everything after the keyword and flags, continuation-joined, still unexpanded.
    pub rest: String,
    /// Offset of `rest` inside the joined line.
    pub rest_offset: usize,
    pub flags: Vec<Flag>,
    /// `Some` for JSON (exec) form: RUN, CMD, ENTRYPOINT, SHELL, COPY, ADD, VOLUME, and the
    /// command of `HEALTHCHECK CMD [...]`.
    pub json: Option<Vec<String>>,
    pub heredocs: Vec<Heredoc>,
    pub start_line: u32,
    pub end_line: u32,
    /// The full joined line (keyword included), as BuildKit's `original`.
    pub original: String,
    pub map: PosMap,
    /// ONBUILD's inner instruction.
    pub sub: Option<Box<Instruction>>,
}

impl Instruction {
    /// File position of a byte offset in `rest`.
    pub fn pos_in_rest(&self, off: usize) -> Pos {
        self.map.pos(self.rest_offset + off)
    }
    pub fn pos(&self) -> Pos {
        self.map.pos(0)
    }
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.as_deref())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct Dockerfile {
    /// `(name, value, line)` of parser directives, lower-case names.
    pub directives: Vec<(String, String, u32)>,
    pub escape: char,
    pub instructions: Vec<Instruction>,
    pub errors: Vec<ParseError>,
    /// Comments, by line, for inline suppressions.
    pub comments: Vec<(u32, String)>,
}

/// The instructions BuildKit knows (anything else parses but fails to build).
pub const KNOWN: &[&str] = &[
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

fn trim_left_ws(s: &str) -> &str {
    s.trim_start_matches([' ', '\t'])
}

fn is_comment(raw: &str) -> bool {
    trim_left_ws(raw).starts_with('#')
}

/// `# name=value` before any instruction; None when the line is not one.
fn directive(line: &str) -> Option<(String, String)> {
    let t = line.strip_prefix('#')?;
    let t = t.trim_start();
    let eq = t.find('=')?;
    let name = t[..eq].trim_end();
    let value = t[eq + 1..].trim();
    let mut chars = name.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic() || !chars.all(|c| c.is_ascii_alphanumeric()) || value.is_empty()
    {
        return None;
    }
    Some((name.to_ascii_lowercase(), value.to_string()))
}

/// Strip a trailing escape char (plus trailing spaces/tabs): `(text, ends_line)`.
fn trim_continuation(line: &str, escape: char) -> (&str, bool) {
    let t = line.trim_end_matches([' ', '\t']);
    if let Some(stripped) = t.strip_suffix(escape) {
        (stripped, false)
    } else {
        (line, true)
    }
}

pub fn parse(text: &str) -> Dockerfile {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut df = Dockerfile {
        escape: '\\',
        ..Default::default()
    };
    // The lines one at a time, never listed: a list cost 16 bytes per line, most of the
    // memory of a file of continuation lines. A trailing newline does not make a last empty
    // line. `i` counts the lines taken.
    let mut lines = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut directives_done = false;
    let mut i = 0usize;
    while let Some(raw) = lines.next() {
        let lineno = (i + 1) as u32;
        i += 1;
        if !directives_done {
            match directive(trim_left_ws(raw)) {
                Some((name, value)) if matches!(name.as_str(), "syntax" | "escape" | "check") => {
                    if df.directives.iter().any(|d| d.0 == name) {
                        df.errors.push(ParseError {
                            line: lineno,
                            col: 1,
                            message: format!("only one {name} parser directive can be used"),
                        });
                    }
                    if name == "escape" {
                        if value == "`" {
                            df.escape = '`';
                        } else if value != "\\" {
                            df.errors.push(ParseError {
                                line: lineno,
                                col: 1,
                                message: format!(
                                    "invalid escape token '{value}' does not match ` or \\"
                                ),
                            });
                        }
                    }
                    df.directives.push((name, value, lineno));
                    continue;
                }
                _ => directives_done = true,
            }
        }
        if is_comment(raw) {
            df.comments
                .push((lineno, trim_left_ws(raw)[1..].trim().to_string()));
            continue;
        }
        let lead = raw.len() - trim_left_ws(raw).len();
        let first = &raw[lead..];
        let (part, mut eol) = trim_continuation(first, df.escape);
        if eol && part.is_empty() {
            continue;
        }
        let mut joined = String::from(part);
        let mut map = PosMap::default();
        map.push(0, lineno, lead as u32 + 1);
        let start_line = lineno;
        let mut end_line = lineno;
        while !eol {
            let Some(raw) = lines.next() else { break };
            let ln = (i + 1) as u32;
            i += 1;
            end_line = ln;
            if is_comment(raw) {
                df.comments
                    .push((ln, trim_left_ws(raw)[1..].trim().to_string()));
                continue;
            }
            if trim_left_ws(raw).is_empty() {
                continue;
            }
            let (p, e) = trim_continuation(raw, df.escape);
            // A line that adds no text has no offset to map (and would cost an entry).
            if !p.is_empty() {
                map.push(joined.len(), ln, 1);
                joined.push_str(p);
            }
            eol = e;
        }
        let mut ins = match node_from_line(&joined, map, start_line, end_line) {
            Ok(ins) => ins,
            Err(e) => {
                df.errors.push(ParseError {
                    line: start_line,
                    col: 1,
                    message: e,
                });
                continue;
            }
        };
        // Heredocs: bodies follow the instruction line.
        let heredoc_cmd = match ins.sub.as_deref() {
            Some(s) => s.cmd.as_str(),
            None => ins.cmd.as_str(),
        };
        if matches!(heredoc_cmd, "RUN" | "COPY" | "ADD")
            && ins.json.is_none()
            && joined.contains("<<")
        {
            for (name, chomp, expand) in heredoc_names(&ins.rest) {
                let mut content = String::new();
                let first_line = (i + 1) as u32;
                let mut done = false;
                for raw in lines.by_ref() {
                    i += 1;
                    ins.end_line = i as u32;
                    let term = if chomp {
                        raw.trim_start_matches('\t')
                    } else {
                        raw
                    };
                    if term == name {
                        done = true;
                        break;
                    }
                    if chomp {
                        content.push_str(raw.trim_start_matches('\t'));
                    } else {
                        content.push_str(raw);
                    }
                    content.push('\n');
                }
                if !done {
                    df.errors.push(ParseError {
                        line: start_line,
                        col: 1,
                        message: format!("unterminated heredoc {name}"),
                    });
                }
                ins.heredocs.push(Heredoc {
                    name,
                    chomp,
                    expand,
                    content,
                    first_line,
                });
            }
        }
        df.instructions.push(ins);
    }
    df
}

fn node_from_line(
    line: &str,
    map: PosMap,
    start_line: u32,
    end_line: u32,
) -> Result<Instruction, String> {
    let trimmed_start = line.len() - line.trim_start().len();
    let body = line.trim();
    let kw_end = body.find(|c: char| c.is_whitespace()).unwrap_or(body.len());
    let cmd = body[..kw_end].to_ascii_uppercase();
    let mut off = trimmed_start + kw_end;
    // Skip whitespace after the keyword.
    let after = &line[off..];
    off += after.len() - after.trim_start().len();
    let mut rest_all = line[off..].trim_end();
    let mut flags = Vec::new();
    // BuildKit's extractBuilderFlags: leading `--name[=value]` words.
    loop {
        if !rest_all.starts_with("--") {
            break;
        }
        let wend = rest_all
            .find(|c: char| c.is_whitespace())
            .unwrap_or(rest_all.len());
        let word = &rest_all[2..wend];
        if word.is_empty() {
            // `--` alone ends the flags.
            off += wend;
            let r = &line[off..];
            off += r.len() - r.trim_start().len();
            rest_all = line[off..].trim_end();
            break;
        }
        let (name, value) = match word.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(unquote_flag(v))),
            None => (word.to_string(), None),
        };
        flags.push(Flag { name, value });
        off += wend;
        let r = &line[off..];
        off += r.len() - r.trim_start().len();
        rest_all = line[off..].trim_end();
    }
    let rest = rest_all.to_string();
    let json = if matches!(
        cmd.as_str(),
        "RUN" | "CMD" | "ENTRYPOINT" | "SHELL" | "COPY" | "ADD" | "VOLUME"
    ) {
        parse_json_array(&rest)
    } else if cmd == "HEALTHCHECK" {
        // `HEALTHCHECK [flags] CMD <command>`: the command is JSON or shell form like CMD's
        // (BuildKit's parseHealthConfig → parseMaybeJSON).
        let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((&rest, ""));
        if word.eq_ignore_ascii_case("CMD") {
            parse_json_array(after.trim())
        } else {
            None
        }
    } else {
        None
    };
    let mut ins = Instruction {
        cmd: cmd.clone(),
        rest,
        rest_offset: off,
        flags,
        json,
        heredocs: Vec::new(),
        start_line,
        end_line,
        original: line.trim().to_string(),
        map,
        sub: None,
    };
    if cmd == "ONBUILD" {
        let inner_kw = ins
            .rest
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        if matches!(inner_kw.as_str(), "ONBUILD" | "FROM" | "MAINTAINER") {
            return Err(format!("{inner_kw} isn't allowed as an ONBUILD trigger"));
        }
        if !ins.rest.is_empty() {
            let mut sub_map = PosMap::default();
            let base = ins.map.pos(off);
            sub_map.push(0, base.line, base.col);
            let mut sub = node_from_line(&ins.rest.clone(), sub_map, start_line, end_line)?;
            sub.rest_offset += 0;
            ins.sub = Some(Box::new(sub));
        }
    }
    Ok(ins)
}

fn unquote_flag(v: &str) -> String {
    v.to_string()
}

/// BuildKit's JSON form: a JSON array of strings, else shell form.
fn parse_json_array(s: &str) -> Option<Vec<String>> {
    if !s.starts_with('[') || !s.ends_with(']') {
        return None;
    }
    serde_json::from_str::<Vec<String>>(s).ok()
}

/// Heredoc names in a RUN/COPY/ADD line, in order: `(name, chomp, expand)`.
fn heredoc_names(rest: &str) -> Vec<(String, bool, bool)> {
    let mut out = Vec::new();
    for w in shellish_words(rest) {
        // `<<EOF`, `<<-EOF`, `3<<EOF`, `<<"EOF"`.
        let t = w.trim_start_matches(|c: char| c.is_ascii_digit());
        let Some(r) = t.strip_prefix("<<") else {
            continue;
        };
        if r.starts_with('<') {
            continue; // here-string
        }
        let (chomp, r) = match r.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, r),
        };
        if r.is_empty() || r.contains('<') {
            continue;
        }
        let quoted = r.contains('\'') || r.contains('"');
        let name: String = r.chars().filter(|&c| c != '\'' && c != '"').collect();
        if name.is_empty() {
            continue;
        }
        out.push((name, chomp, !quoted));
    }
    out
}

/// Whitespace-separated words that keep quotes, honoring quotes when splitting.
fn shellish_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q: Option<char> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match q {
            Some(qc) => {
                cur.push(c);
                if c == qc {
                    q = None;
                }
            }
            None => {
                if c.is_whitespace() {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                } else {
                    if c == '\'' || c == '"' {
                        q = Some(c);
                    }
                    if c == '\\' {
                        cur.push(c);
                        if let Some(n) = chars.next() {
                            cur.push(n);
                        }
                        continue;
                    }
                    cur.push(c);
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word of an instruction's arguments with its byte offset in `rest`.
#[derive(Debug, Clone)]
pub struct ArgWord {
    pub text: String,
    pub offset: usize,
}

/// Split `rest` on unquoted whitespace (for FROM, ARG, ENV, COPY…); quotes and escapes are
/// kept for the later variable expansion, which removes them (BuildKit's ProcessWord).
pub fn split_args(rest: &str, escape: char) -> Vec<ArgWord> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0usize;
    let mut q: Option<char> = None;
    let mut it = rest.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if cur.is_empty() && q.is_none() && c.is_whitespace() {
            continue;
        }
        if cur.is_empty() {
            start = i;
        }
        match q {
            Some(qc) => {
                if c == escape && qc == '"' {
                    cur.push(c);
                    if let Some((_, n)) = it.next() {
                        cur.push(n);
                    }
                    continue;
                }
                cur.push(c);
                if c == qc {
                    q = None;
                }
            }
            None => {
                if c.is_whitespace() {
                    out.push(ArgWord {
                        text: std::mem::take(&mut cur),
                        offset: start,
                    });
                    continue;
                }
                if c == escape {
                    cur.push(c);
                    if let Some((_, n)) = it.next() {
                        cur.push(n);
                    }
                    continue;
                }
                if c == '\'' || c == '"' {
                    q = Some(c);
                }
                cur.push(c);
            }
        }
    }
    if !cur.is_empty() {
        out.push(ArgWord {
            text: cur,
            offset: start,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Continuation lines that add no text cost no position entry: a file of them kept one
    /// per line (16 bytes each) beside a list of every line (16 more).
    #[test]
    fn empty_continuation_lines_cost_no_position_entries() {
        let text = format!("FROM x\nRUN a \\\n{}  b\n", "\\\n\n# c\n".repeat(100_000));
        let df = parse(&text);
        assert_eq!(df.instructions.len(), 2, "{:?}", df.errors);
        let run = &df.instructions[1];
        assert_eq!(run.rest, "a   b");
        assert_eq!(run.map.segs.len(), 2, "one entry per line that adds text");
        assert_eq!(
            run.pos_in_rest(4),
            Pos {
                line: 300_003,
                col: 3
            }
        );
        assert_eq!(run.end_line, 300_003);
    }

    #[test]
    fn continuation_comments_and_lines() {
        let df = parse(
            "# syntax=docker/dockerfile:1\nFROM ubuntu:22.04 AS base\nRUN apt-get update \\\n  # a comment\n\n  && apt-get install -y curl\nENV A=1\n",
        );
        assert!(df.errors.is_empty(), "{:?}", df.errors);
        assert_eq!(df.directives[0].0, "syntax");
        let cmds: Vec<_> = df
            .instructions
            .iter()
            .map(|i| (i.cmd.as_str(), i.start_line, i.end_line))
            .collect();
        assert_eq!(cmds, vec![("FROM", 2, 2), ("RUN", 3, 6), ("ENV", 7, 7)]);
        let run = &df.instructions[1];
        let off = run.rest.find("apt-get install").unwrap();
        assert_eq!(run.pos_in_rest(off), Pos { line: 6, col: 6 });
    }

    #[test]
    fn escape_directive_and_json() {
        let df = parse("# escape=`\nFROM windows\nRUN dir `\n  c:\\\nCMD [\"a\", \"b\"]\n");
        assert_eq!(df.escape, '`');
        assert_eq!(df.instructions[1].end_line, 4);
        assert_eq!(
            df.instructions[2].json.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
    }

    /// BuildKit reads a HEALTHCHECK's command like CMD: JSON form with spaces inside the
    /// brackets too; shell form and NONE are not JSON.
    #[test]
    fn healthcheck_command_forms() {
        let df = parse("FROM x\nHEALTHCHECK --interval=5s CMD [ \"curl\", \"-f\", \"http://localhost/\" ]\nHEALTHCHECK CMD curl -f http://localhost/ || exit 1\nHEALTHCHECK NONE\n");
        let j = |i: usize| df.instructions[i].json.clone();
        assert_eq!(
            j(1),
            Some(vec!["curl".into(), "-f".into(), "http://localhost/".into()])
        );
        assert_eq!(j(2), None);
        assert_eq!(j(3), None);
    }

    #[test]
    fn heredocs() {
        let df = parse("FROM x\nRUN <<EOF bash\nset -e\npip install torch\nEOF\nRUN <<-'A' cat <<B\n\tone\n\tA\ntwo\nB\nCMD x\n");
        assert!(df.errors.is_empty(), "{:?}", df.errors);
        let run = &df.instructions[1];
        assert_eq!((run.start_line, run.end_line), (2, 5));
        assert_eq!(run.heredocs[0].content, "set -e\npip install torch\n");
        assert_eq!(run.heredocs[0].first_line, 3);
        let r2 = &df.instructions[2];
        assert_eq!(r2.heredocs.len(), 2);
        assert!(!r2.heredocs[0].expand && r2.heredocs[0].chomp);
        assert_eq!(r2.heredocs[0].content, "one\n");
        assert_eq!(df.instructions[3].start_line, 11);
    }

    #[test]
    fn unterminated_heredoc_is_an_error_not_a_panic() {
        let df = parse("FROM x\nRUN <<EOF\necho\n");
        assert_eq!(df.errors.len(), 1);
    }

    #[test]
    fn flags() {
        let df = parse("COPY --from=build --chown=1:1 /a /b\nRUN --mount=type=cache,target=/root/.cache pip install x\n");
        assert_eq!(df.instructions[0].flag("from"), Some("build"));
        assert_eq!(df.instructions[0].rest, "/a /b");
        assert_eq!(df.instructions[1].rest, "pip install x");
    }
}
