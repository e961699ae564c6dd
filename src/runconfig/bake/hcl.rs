//! The HCL form of a bake file (`docker-bake.hcl`): the subset bake files use, read into
//! blocks of attributes; nesting is bounded.

use super::*;

pub(super) struct Parser<'a> {
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

pub(super) fn parse_hcl_blocks(text: &str) -> Vec<Block> {
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
