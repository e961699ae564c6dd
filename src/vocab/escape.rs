//! Terminal safety: the one place that decides how text taken from input (file contents, tar
//! member names, registry and daemon error bodies) is made harmless before it is printed.
//!
//! Control characters (C0 including newline and tab, DEL, C1) and the Unicode bidirectional
//! overrides used in "Trojan Source" spoofing are written as visible escapes (`\x1b`,
//! `\u{202e}`), so an input cannot move the cursor, recolour, retitle or reorder the reader's
//! terminal, nor forge extra output lines. Every reporter routes input-derived strings
//! through here; JSON-like formats use [`json_text`] on their serialized text instead, so the
//! data stays exact while the bytes on the terminal stay inert.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters that must never reach a terminal raw.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

fn escape_into(out: &mut String, c: char) {
    let code = c as u32;
    if code < 0x80 {
        let _ = write!(out, "\\x{code:02x}");
    } else {
        let _ = write!(out, "\\u{{{code:x}}}");
    }
}

fn escape_where(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One field taken from input (a message, a path, a target name): every control character,
/// newline included, becomes a visible escape, so the field stays on its line.
pub fn field(s: &str) -> Cow<'_, str> {
    escape_where(s, |_| false)
}

/// A multi-line block built by gpulint from input (host evidence, an error chain): newlines
/// are kept, every other control character is escaped.
pub fn block(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c == '\n')
}

/// Serialized JSON (or SARIF) text: serde_json already escapes C0 controls; DEL, C1 and the
/// bidi overrides are valid raw in JSON but not safe on a terminal, so they become `\u`
/// escapes of four hex digits. The parsed data is unchanged.
pub fn json_text(s: String) -> String {
    if !s.chars().any(is_unsafe_in_json) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe_in_json(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Raw characters that may appear in serde_json's output (inside strings) and are unsafe.
fn is_unsafe_in_json(c: char) -> bool {
    is_unsafe(c) && !matches!(c, '\n' | ' ' | '\t' | '\r')
}

/// XML 1.0 forbids most C0 characters even as references; a field is escaped with [`field`]
/// before it is written, which leaves only characters XML accepts.
pub fn xml_attr(s: &str) -> String {
    let s = field(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lose_every_control_character() {
        let hostile = "lib\x1b]0;owned\x07\x1b[2J\nERROR fake\r\u{9b}31m\u{202e}gpj.so\x7f";
        let f = field(hostile);
        assert!(!f.chars().any(is_unsafe), "{f}");
        assert_eq!(
            f,
            "lib\\x1b]0;owned\\x07\\x1b[2J\\x0aERROR fake\\x0d\\u{9b}31m\\u{202e}gpj.so\\x7f"
        );
        assert!(matches!(field("plain /opt/x.so"), Cow::Borrowed(_)));
    }

    #[test]
    fn blocks_keep_newlines_only() {
        assert_eq!(block("a\nb\x1b[0m\tc"), "a\nb\\x1b[0m\\x09c");
    }

    #[test]
    fn json_stays_equal_as_data() {
        let v = serde_json::json!({"m": "x\u{9b}y\u{202e}z\x1bw\u{7f}"});
        let raw = serde_json::to_string(&v).unwrap();
        let safe = json_text(raw.clone());
        assert!(!safe.chars().any(is_unsafe_in_json), "{safe}");
        assert_ne!(raw, safe);
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn xml_attributes_are_escaped_and_legal() {
        assert_eq!(xml_attr("a<b>&\"'\x01"), "a&lt;b&gt;&amp;&quot;&apos;\\x01");
    }
}
