//! A small, tolerant XML reader for `nvidia-smi -q -x`: elements, attributes and text only.
//! Declarations, DOCTYPE, comments and CDATA are skipped; unbalanced close tags close up to
//! the nearest open element of that name, so a truncated or odd document still yields a tree.

/// One element.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    /// Concatenated direct text, trimmed.
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
    /// The element at a path of child names.
    pub fn at(&self, path: &[&str]) -> Option<&Element> {
        let mut e = self;
        for p in path {
            e = e.child(p)?;
        }
        Some(e)
    }
    /// Text at a path, None when empty or "N/A".
    pub fn text_at(&self, path: &[&str]) -> Option<String> {
        let t = self.at(path)?.text.trim();
        (!t.is_empty() && t != "N/A").then(|| t.to_string())
    }
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn parse_tag(inner: &str) -> (String, Vec<(String, String)>) {
    let inner = inner.trim();
    let name_end = inner
        .find(|c: char| c.is_whitespace())
        .unwrap_or(inner.len());
    let name = inner[..name_end].to_string();
    let mut attrs = Vec::new();
    let mut rest = &inner[name_end..];
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let Some(q) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            break;
        };
        let body = &after[1..];
        let Some(end) = body.find(q) else {
            break;
        };
        attrs.push((key, unescape(&body[..end])));
        rest = &body[end + 1..];
    }
    (name, attrs)
}

/// Parse a document; returns a synthetic root whose children are the top-level elements.
pub fn parse(doc: &str) -> Element {
    let mut stack: Vec<Element> = vec![Element::default()];
    let mut rest = doc;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            if let Some(top) = stack.last_mut() {
                top.text.push_str(&unescape(rest));
            }
            break;
        };
        if lt > 0 {
            if let Some(top) = stack.last_mut() {
                top.text.push_str(&unescape(&rest[..lt]));
            }
        }
        rest = &rest[lt..];
        // Skip markup that is not an element.
        let skip_until = if rest.starts_with("<!--") {
            Some("-->")
        } else if rest.starts_with("<![CDATA[") {
            Some("]]>")
        } else if rest.starts_with("<?") {
            Some("?>")
        } else if rest.starts_with("<!") {
            Some(">")
        } else {
            None
        };
        if let Some(end) = skip_until {
            match rest.find(end) {
                Some(i) => rest = &rest[i + end.len()..],
                None => break,
            }
            continue;
        }
        let Some(gt) = rest.find('>') else {
            break;
        };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            // Close up to the nearest open element with this name; ignore stray closes.
            if let Some(pos) = stack.iter().rposition(|e| e.name == name) {
                if pos > 0 {
                    while stack.len() > pos {
                        if let Some(mut done) = stack.pop() {
                            done.text = done.text.trim().to_string();
                            if let Some(parent) = stack.last_mut() {
                                parent.children.push(done);
                            }
                        }
                    }
                }
            }
        } else if let Some(selfc) = tag.strip_suffix('/') {
            let (name, attrs) = parse_tag(selfc);
            if let Some(parent) = stack.last_mut() {
                parent.children.push(Element {
                    name,
                    attrs,
                    ..Default::default()
                });
            }
        } else {
            let (name, attrs) = parse_tag(tag);
            stack.push(Element {
                name,
                attrs,
                ..Default::default()
            });
        }
    }
    // Close whatever is still open (truncated input).
    while stack.len() > 1 {
        if let Some(mut done) = stack.pop() {
            done.text = done.text.trim().to_string();
            if let Some(parent) = stack.last_mut() {
                parent.children.push(done);
            }
        }
    }
    let mut root = stack.pop().unwrap_or_default();
    root.text = root.text.trim().to_string();
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_elements_attrs_text_and_skips_markup() {
        let r = parse(
            "<?xml version=\"1.0\" ?>\n<!DOCTYPE x SYSTEM \"y.dtd\">\n<!-- c -->\n<a><gpu id=\"0000:01:00.0\"><n>A &amp; B</n><e/></gpu></a>",
        );
        let a = r.child("a").unwrap();
        let g = a.child("gpu").unwrap();
        assert_eq!(g.attr("id"), Some("0000:01:00.0"));
        assert_eq!(g.text_at(&["n"]).as_deref(), Some("A & B"));
        assert!(g.child("e").is_some());
    }

    #[test]
    fn tolerates_truncation_and_stray_closes() {
        let r = parse("<a><b>x</c></b><d>y");
        let a = r.child("a").unwrap();
        assert_eq!(a.text_at(&["b"]).as_deref(), Some("x"));
        assert_eq!(a.text_at(&["d"]).as_deref(), Some("y"));
        assert_eq!(parse("").children.len(), 0);
        let _ = parse("<<<>>><a");
    }
}
