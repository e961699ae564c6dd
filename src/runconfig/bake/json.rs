//! The JSON form of a bake file (`docker-bake.json`): the same blocks as the HCL form,
//! each value located in the text.

use super::*;

/// Where each JSON string of a text occurs: its decoded value → the offsets just after its
/// opening quote, in order. Built in one pass, so placing every string costs a lookup, not a
/// search of the rest of the file (a search per string, which missed and ran to the end for
/// every escaped one, made a 2 MB bake file take minutes).
pub(super) struct JsonStrings(HashMap<String, Vec<usize>>);

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
pub(super) fn parse_json_blocks(text: &str) -> Vec<Block> {
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
