//! A small POSIX-shell reader for RUN commands, scripts and `docker run` lines: quotes,
//! escapes, `&&` `||` `;` `|` `&`, subshells, comments, redirections, assignments, and
//! variable expansion (`$V`, `${V:-x}`, `${V:+x}`, `${V#p}`, `${V%p}`, `${V/p/r}`) with values
//! from ARG / ENV. It is also BuildKit's word processor for FROM / ENV / ARG / COPY, which
//! follows the same rules for `$`, quotes and the escape character.
//!
//! A variable whose value we cannot know (an ARG without a default, `$(…)`) stays as written
//! and marks the word `unresolved`, so rules do not draw conclusions from a guess.
//!
//! Hostile input: a word expands to at most [`MAX_EXPANDED`] bytes, `${…}` nests at most
//! [`MAX_NESTING`] deep (iteratively checked before recursing), and a script's words draw from
//! one [`ExpansionBudget`] (`crate::runconfig::expand`, shared with every other engine). Past a
//! bound, the word stays as written, unresolved, and the `try_` functions say which was hit.

/// What a variable name expands to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    /// Set to this value.
    Set(String),
    /// Declared but unknown here (ARG without default): keep `$NAME` as written.
    Unknown,
}

/// Variables in scope. Names absent from the map are unset (expand to "").
/// A persistent (structure-sharing) ordered map: every stage of a Dockerfile, every RUN and
/// every command keeps its own copy of the variables in scope, and with a plain map those
/// copies made long FROM chains quadratic in time and memory; here a copy is O(1).
pub type Vars = imbl::OrdMap<String, Var>;

use super::expand::MAX_GLOB_TRIM;
pub use super::expand::{ExpandLimit, ExpansionBudget, MAX_NESTING, MAX_WORD as MAX_EXPANDED};

mod params;
mod script;
pub use params::*;
pub use script::*;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// After expansion and quote removal.
    pub text: String,
    /// As written.
    pub raw: String,
    /// Byte offset of the word's first character in the source text.
    pub offset: usize,
    /// Contains something we could not expand.
    pub unresolved: bool,
    /// Some part was quoted.
    pub quoted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// `>`, `>>`, `<`, `<<`, `<<-`, `<<<`, `>&`, `&>`…
    pub op: String,
    pub target: Option<Word>,
    pub offset: usize,
}

/// One simple command: `A=1 cmd arg >file`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    pub assigns: Vec<(String, String)>,
    /// Names among `assigns` whose value could not be expanded (`X=$(cmd)`): unknown, not
    /// the text we kept.
    pub unknown_assigns: Vec<String>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    pub offset: usize,
}

impl Command {
    pub fn argv(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.text.as_str()).collect()
    }
}

struct Lexer<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    escape: u8,
    /// `${…}` nesting of this lexer's text.
    depth: usize,
    /// The first limit hit; from then on `$` is no longer expanded.
    limit: Option<ExpandLimit>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str, escape: u8, depth: usize) -> Lexer<'a> {
        Lexer {
            s: src.as_bytes(),
            src,
            i: 0,
            escape,
            depth,
            limit: None,
        }
    }
}

/// Expand one word the way BuildKit's ProcessWord does (quotes removed, `$` expanded).
/// Past a limit, the word as written, unresolved.
pub fn expand_word(word: &str, vars: &Vars, escape: char) -> (String, bool) {
    try_expand_word(word, vars, escape).unwrap_or_else(|_| (word.to_string(), true))
}

/// [`expand_word`], saying which limit was hit.
pub fn try_expand_word(
    word: &str,
    vars: &Vars,
    escape: char,
) -> Result<(String, bool), ExpandLimit> {
    let mut lx = Lexer::new(word, escape as u8, 0);
    let mut out = String::new();
    let mut unresolved = false;
    let mut quoted = false;
    lx.word_body(vars, &mut out, &mut unresolved, &mut quoted, false);
    if let Some(l) = lx.limit {
        return Err(l);
    }
    // Anything left (whitespace in an unquoted ENV value) is taken literally.
    if lx.i < lx.s.len() {
        out.push_str(&word[lx.i..]);
    }
    Ok((out, unresolved))
}

/// Expand `$VAR` references in a string that has no shell quoting of its own (compose
/// interpolation, heredoc bodies).
/// Past a limit, the text as written, unresolved.
pub fn expand_plain(text: &str, vars: &Vars) -> (String, bool) {
    try_expand_plain(text, vars).unwrap_or_else(|_| (text.to_string(), true))
}

/// [`expand_plain`], saying which limit was hit.
pub fn try_expand_plain(text: &str, vars: &Vars) -> Result<(String, bool), ExpandLimit> {
    let mut lx = Lexer::new(text, 0, 0);
    let mut out = String::new();
    let mut unresolved = false;
    while lx.i < lx.s.len() {
        if lx.s[lx.i] == b'$' {
            lx.dollar(vars, &mut out, &mut unresolved);
        } else {
            let c = lx.next_char();
            out.push(c);
        }
        if let Some(l) = lx.limit {
            return Err(l);
        }
    }
    Ok((out, unresolved))
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }
    /// The next character, consumed; at the end `'\0'`, and the position stays at the end
    /// (never past it: callers slice `src[start..i]`).
    fn next_char(&mut self) -> char {
        match self.src.get(self.i..).and_then(|r| r.chars().next()) {
            Some(c) => {
                self.i += c.len_utf8();
                c
            }
            None => {
                self.i = self.i.max(self.src.len());
                '\0'
            }
        }
    }

    /// Read one word's characters until an unquoted delimiter. With `shell`, operators and
    /// whitespace end the word; without, only whitespace does.
    fn word_body(
        &mut self,
        vars: &Vars,
        out: &mut String,
        unresolved: &mut bool,
        quoted: &mut bool,
        shell: bool,
    ) {
        while let Some(b) = self.peek() {
            if b == b' ' || b == b'\t' || b == b'\n' || b == b'\r' {
                break;
            }
            if shell && matches!(b, b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>') {
                break;
            }
            if b == self.escape && self.escape != 0 {
                self.i += 1;
                match self.peek() {
                    Some(b'\n') => {
                        self.i += 1;
                    }
                    Some(_) => {
                        let c = self.next_char();
                        out.push(c);
                    }
                    None => out.push(self.escape as char),
                }
                continue;
            }
            match b {
                b'\'' => {
                    *quoted = true;
                    self.i += 1;
                    let start = self.i;
                    while let Some(c) = self.peek() {
                        if c == b'\'' {
                            break;
                        }
                        self.i += 1;
                    }
                    out.push_str(&self.src[start..self.i]);
                    if self.peek().is_some() {
                        self.i += 1;
                    }
                }
                b'"' => {
                    *quoted = true;
                    self.i += 1;
                    while let Some(c) = self.peek() {
                        if c == b'"' {
                            self.i += 1;
                            break;
                        }
                        if c == self.escape && self.escape != 0 {
                            match self.peek_at(1) {
                                Some(n @ (b'$' | b'"' | b'\\' | b'`')) => {
                                    out.push(n as char);
                                    self.i += 2;
                                    continue;
                                }
                                Some(b'\n') => {
                                    self.i += 2;
                                    continue;
                                }
                                Some(n) if n == self.escape => {
                                    out.push(n as char);
                                    self.i += 2;
                                    continue;
                                }
                                _ => {}
                            }
                        }
                        if c == b'$' {
                            self.dollar(vars, out, unresolved);
                            continue;
                        }
                        if c == b'`' {
                            self.backtick(out, unresolved);
                            continue;
                        }
                        let ch = self.next_char();
                        out.push(ch);
                    }
                }
                b'$' => self.dollar(vars, out, unresolved),
                b'`' if shell => self.backtick(out, unresolved),
                _ => {
                    let c = self.next_char();
                    out.push(c);
                }
            }
        }
    }

    fn backtick(&mut self, out: &mut String, unresolved: &mut bool) {
        let start = self.i;
        self.i += 1;
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == b'\\' {
                // A trailing backslash escapes nothing: stay at the end, never past it.
                self.i = (self.i + 1).min(self.s.len());
            } else if c == b'`' {
                break;
            }
        }
        out.push_str(&self.src[start..self.i]);
        *unresolved = true;
    }

    /// At a `$`: expand it into `out`.
    fn dollar(&mut self, vars: &Vars, out: &mut String, unresolved: &mut bool) {
        let start = self.i;
        self.i += 1;
        match self.peek() {
            Some(b'(') => {
                // $(…) / $((…)): not evaluated.
                let mut depth = 0i32;
                while let Some(c) = self.peek() {
                    self.i += 1;
                    match c {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        b'\'' => {
                            while let Some(q) = self.peek() {
                                self.i += 1;
                                if q == b'\'' {
                                    break;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                out.push_str(&self.src[start..self.i.min(self.s.len())]);
                *unresolved = true;
            }
            Some(b'{') => {
                self.i += 1;
                let body_start = self.i;
                let mut depth = 1;
                while let Some(c) = self.peek() {
                    match c {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                let body = &self.src[body_start..self.i.min(self.s.len())];
                if self.peek() == Some(b'}') {
                    self.i += 1;
                }
                if self.limit.is_some() {
                    *unresolved = true;
                    return;
                }
                if self.depth >= MAX_NESTING {
                    self.limit = Some(ExpandLimit::Depth);
                    *unresolved = true;
                    return;
                }
                match expand_braced(body, vars, self.depth + 1, &mut self.limit) {
                    _ if self.limit.is_some() => *unresolved = true,
                    Some((v, u)) => {
                        out.push_str(&v);
                        *unresolved |= u;
                    }
                    None => {
                        out.push_str(&self.src[start..self.i]);
                        *unresolved = true;
                    }
                }
                self.check_size(out, unresolved);
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let ns = self.i;
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || c == b'_' {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                let name = &self.src[ns..self.i];
                if self.limit.is_some() {
                    *unresolved = true;
                    return;
                }
                match vars.get(name) {
                    Some(Var::Set(v)) => {
                        if out.len() + v.len() > MAX_EXPANDED {
                            self.limit = Some(ExpandLimit::Size);
                            *unresolved = true;
                        } else {
                            out.push_str(v);
                        }
                    }
                    Some(Var::Unknown) => {
                        out.push_str(&self.src[start..self.i]);
                        *unresolved = true;
                    }
                    None => {}
                }
            }
            Some(c)
                if c.is_ascii_digit()
                    || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') =>
            {
                self.i += 1;
                out.push_str(&self.src[start..self.i]);
                *unresolved = true;
            }
            _ => out.push('$'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(kv: &[(&str, &str)]) -> Vars {
        kv.iter()
            .map(|(k, v)| (k.to_string(), Var::Set(v.to_string())))
            .collect()
    }

    #[test]
    fn expansion_operators() {
        let v = vars(&[("A", "12.1.0"), ("E", ""), ("P", "/usr/local/cuda/lib64")]);
        let x = |s: &str| expand_word(s, &v, '\\').0;
        assert_eq!(x("${A}"), "12.1.0");
        assert_eq!(x("${B:-x}"), "x");
        assert_eq!(x("${E:-x}"), "x");
        assert_eq!(x("${E-x}"), "");
        assert_eq!(x("${A:+set}"), "set");
        assert_eq!(x("${B:+set}"), "");
        assert_eq!(x("${A%.*}"), "12.1");
        assert_eq!(x("${A%%.*}"), "12");
        assert_eq!(x("${A#*.}"), "1.0");
        assert_eq!(x("${A##*.}"), "0");
        assert_eq!(x("${A//./}"), "1210");
        assert_eq!(x("${P/lib64/lib}"), "/usr/local/cuda/lib");
        assert_eq!(x("'$A'\"$A\"\\$A"), "$A12.1.0$A");
        let mut u = Vars::new();
        u.insert("T".into(), Var::Unknown);
        let (t, unres) = expand_word("torch==${T}", &u, '\\');
        assert!(unres);
        assert_eq!(t, "torch==${T}");
    }

    #[test]
    fn a_variable_set_from_a_command_is_unknown_not_empty() {
        let mut v = vars(&[("V", "1.13.1")]);
        let cmds = parse_script(
            "if true; then TAG=$(python -c 'print(1)') && pip install torch==${V}+${TAG}; fi\nexport X=`uname -m`\necho $X\n",
            &mut v,
        );
        let pip = cmds
            .iter()
            .find(|c| c.argv().first() == Some(&"pip"))
            .unwrap();
        assert_eq!(pip.words[2].text, "torch==1.13.1+${TAG}");
        assert!(pip.words[2].unresolved);
        assert_eq!(v.get("X"), Some(&Var::Unknown));
    }

    #[test]
    fn commands_and_operators() {
        let mut v = vars(&[("CU", "cu121")]);
        let cmds = parse_script(
            "apt-get update && apt-get install -y \\\n  curl; X=1 pip install 'torch==2.3.0' --index-url https://download.pytorch.org/whl/$CU | tee log || true\nexport T=2.1\npip install torch>=$T # comment\n",
            &mut v,
        );
        let argvs: Vec<Vec<&str>> = cmds.iter().map(|c| c.argv()).collect();
        assert_eq!(argvs[0], vec!["apt-get", "update"]);
        assert_eq!(argvs[1], vec!["apt-get", "install", "-y", "curl"]);
        assert_eq!(
            argvs[2],
            vec![
                "pip",
                "install",
                "torch==2.3.0",
                "--index-url",
                "https://download.pytorch.org/whl/cu121"
            ]
        );
        assert_eq!(cmds[2].assigns, vec![("X".into(), "1".into())]);
        assert_eq!(argvs[3], vec!["tee", "log"]);
        assert_eq!(argvs[4], vec!["true"]);
        assert_eq!(argvs[6], vec!["pip", "install", "torch"]);
        assert_eq!(cmds[6].redirects[0].op, ">");
        assert_eq!(cmds[6].redirects[0].target.as_ref().unwrap().text, "=2.1");
    }

    #[test]
    fn keywords_and_fd_redirects() {
        let mut v = Vars::new();
        let cmds = parse_script(
            "if [ -f x ]; then pip install a 2>&1; fi\nfor p in a b; do echo $p; done",
            &mut v,
        );
        let argvs: Vec<Vec<&str>> = cmds.iter().map(|c| c.argv()).collect();
        assert!(argvs.contains(&vec!["pip", "install", "a"]), "{argvs:?}");
        assert!(argvs.iter().all(|a| a.first() != Some(&"then")));
    }

    #[test]
    fn expansion_limits() {
        let big = "a".repeat(MAX_EXPANDED / 2 + 1);
        let v = vars(&[("B", &big), ("A", "aaaa")]);
        assert_eq!(try_expand_word("$B$B", &v, '\\'), Err(ExpandLimit::Size));
        assert_eq!(
            try_expand_word("${B}${B}", &v, '\\'),
            Err(ExpandLimit::Size)
        );
        assert_eq!(
            try_expand_word("${B//a/aa}", &v, '\\'),
            Err(ExpandLimit::Size)
        );
        // A glob trim is linear in the value: a half-MiB value takes a short pattern.
        assert_eq!(try_expand_word("${B##*b}", &v, '\\').unwrap().0, big);
        assert_eq!(try_expand_word("${B%%a*a}", &v, '\\').unwrap().0, "");
        let long_pat = format!("${{B##*{}}}", "a?".repeat(40));
        assert_eq!(try_expand_word(&long_pat, &v, '\\'), Err(ExpandLimit::Trim));
        assert_eq!(
            try_expand_word("${B#a}", &v, '\\').unwrap().0.len(),
            big.len() - 1
        );
        let deep = |n: usize| format!("{}x{}", "${U:-".repeat(n), "}".repeat(n));
        assert_eq!(
            try_expand_word(&deep(MAX_NESTING), &v, '\\'),
            Ok(("x".into(), false))
        );
        assert_eq!(
            try_expand_word(&deep(MAX_NESTING + 1), &v, '\\'),
            Err(ExpandLimit::Depth)
        );
        assert_eq!(try_expand_plain(&deep(100), &v), Err(ExpandLimit::Depth));
        // Past a limit: the word as written, unresolved; the script goes on.
        let (w, u) = expand_word("$B$B", &v, '\\');
        assert_eq!((w.as_str(), u), ("$B$B", true));
        let mut sv = v.clone();
        let (cmds, l) = try_parse_script("echo $B$B; echo $A", &mut sv);
        assert_eq!(l, Some(ExpandLimit::Size));
        assert_eq!(cmds[0].argv(), vec!["echo", "$B$B"]);
        assert_eq!(cmds[1].argv(), vec!["echo", "aaaa"]);
    }

    #[test]
    fn glob_trims_agree_with_the_shell() {
        let v = vars(&[("V", "a.b.c.tar.gz"), ("P", "xabcabcab")]);
        let cases = [
            ("${V#*.}", "b.c.tar.gz"),
            ("${V##*.}", "gz"),
            ("${V%.*}", "a.b.c.tar"),
            ("${V%%.*}", "a"),
            ("${V#?.}", "b.c.tar.gz"),
            ("${V%%?}", "a.b.c.tar.g"),
            ("${V%?}", "a.b.c.tar.g"),
            ("${V##a*c}", ".tar.gz"),
            ("${V#a*c}", ".tar.gz"),
            ("${V%.*.*}", "a.b.c"),
            ("${V%%.*.*}", "a"),
            ("${V#*}", "a.b.c.tar.gz"),
            ("${V##*}", ""),
            ("${V#x*}", "a.b.c.tar.gz"),
            ("${P%%*b*c}", "xabcabcab"),
            ("${P%%a*b}", "x"),
            ("${P%a*b}", "xabcabc"),
            ("${P##*c?}", "b"),
            ("${P#*c?}", "bcab"),
        ];
        for (w, want) in cases {
            assert_eq!(expand_word(w, &v, '\\').0, want, "{w}");
        }
    }

    /// Fuzz finds (fuzz/README.md): inputs that once panicked.
    #[test]
    fn fuzz_finds_do_not_panic() {
        let text = String::from_utf8_lossy(include_bytes!(
            "../../testdata/fuzz/shell_expand-past-the-end"
        ))
        .into_owned();
        let (value, script) = text.split_once('\n').unwrap();
        let mut v = vars(&[("V", value)]);
        let _ = try_parse_script(script, &mut v);
        // Minimized: a backtick substitution ending in a backslash.
        let cmds = parse_script("`\\", &mut v);
        assert_eq!(cmds[0].argv(), vec!["`\\"]);
    }

    #[test]
    fn glob() {
        assert!(glob_match("*.so*", "libcuda.so.1"));
        assert!(!glob_match("a?c", "ac"));
    }

    /// Each word stays under the per-word bound, but together they are bounded too: past the
    /// script's budget, words that would expand stay as written (and cost no expansion).
    #[test]
    fn a_script_expands_to_a_bounded_total() {
        let mut vars = Vars::new();
        vars.insert("V".into(), Var::Set("a".repeat(1 << 20)));
        let script = "echo $V\n".repeat(40);
        let (cmds, limit) = try_parse_script(&script, &mut vars);
        assert_eq!(limit, Some(ExpandLimit::Total));
        assert_eq!(cmds.len(), 40);
        let total: usize = cmds
            .iter()
            .flat_map(|c| &c.words)
            .map(|w| w.text.len())
            .sum();
        assert!(total <= super::super::expand::MAX_FILE, "{total}");
        assert_eq!(cmds[0].words[1].text.len(), 1 << 20);
        let last = &cmds[39].words;
        assert_eq!((last[0].text.as_str(), last[0].unresolved), ("echo", false));
        assert_eq!((last[1].text.as_str(), last[1].unresolved), ("$V", true));
        // A budget shared between scripts: what one spends, the next no longer has.
        let mut budget = ExpansionBudget::with_bytes((3 << 20) + 16);
        let (_, l1) = try_parse_script_within("echo $V $V", &mut vars, &mut budget);
        let (c2, l2) = try_parse_script_within("echo $V $V", &mut vars, &mut budget);
        assert_eq!((l1, l2), (None, Some(ExpandLimit::Total)));
        assert_eq!(c2[0].words[1].text.len(), 1 << 20);
        assert!(c2[0].words[2].unresolved);
    }

    /// A script yields at most the file's words: past them, the limit at the first word left
    /// out, and the rest is not read (a word costs its structure whatever its length).
    #[test]
    fn a_script_yields_a_bounded_number_of_words() {
        let mut vars = Vars::new();
        let mut budget = ExpansionBudget::with_words(1 << 20, 5);
        let (cmds, limit) = parse_script_budgeted("a b c\nd e f g\n", &mut vars, &mut budget);
        let words: usize = cmds.iter().map(|c| c.words.len()).sum();
        assert_eq!(words, 5);
        assert_eq!(limit, Some((ExpandLimit::Words, 10)));
        // The budget is the file's: the next script of the same file gets nothing.
        let (cmds, limit) = try_parse_script_within("h", &mut vars, &mut budget);
        assert!(cmds.is_empty());
        assert_eq!(limit, Some(ExpandLimit::Words));
    }
}
