//! `ImagePath`: a path inside an image, normalized and guaranteed to stay inside it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A normalized in-image path: relative to the image root, `/`-separated, no `.`/`..`
/// components, no empty components. `""` is the root. Built only through [`ImagePath::new`],
/// which rejects paths that would escape the root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ImagePath(String);

impl ImagePath {
    pub fn root() -> Self {
        ImagePath(String::new())
    }

    /// Normalize a path from a tar header or a link target. `..` that would climb above the
    /// root is an error (tar entries must not escape the image).
    pub fn new(raw: &str) -> Result<ImagePath, String> {
        let mut parts: Vec<&str> = Vec::new();
        for c in raw.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!("path {raw:?} escapes the image root"));
                    }
                }
                c => {
                    if c.contains('\0') {
                        return Err(format!("path {raw:?} contains NUL"));
                    }
                    parts.push(c)
                }
            }
        }
        Ok(ImagePath(parts.join("/")))
    }

    /// A path from raw bytes (a tar header, a directory entry), kept apart from every other
    /// byte string: see [`name_from_bytes`].
    pub fn from_bytes(raw: &[u8]) -> Result<ImagePath, String> {
        ImagePath::new(&name_from_bytes(raw))
    }

    /// Resolve `target` (a symlink's text) relative to `self`'s parent directory, the way the
    /// kernel does inside a chroot: absolute targets start at the image root and `..` at the
    /// root stays at the root, so a link can never point outside the image.
    pub fn resolve_link(&self, target: &str) -> ImagePath {
        let mut parts: Vec<&str> = if target.starts_with('/') {
            Vec::new()
        } else {
            let mut v: Vec<&str> = self.components().collect();
            v.pop();
            v
        };
        for c in target.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        ImagePath(parts.join("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|c| !c.is_empty())
    }
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }
    pub fn parent(&self) -> Option<ImagePath> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(i) => ImagePath(self.0[..i].to_string()),
            None => ImagePath::root(),
        })
    }
    pub fn join(&self, name: &str) -> Result<ImagePath, String> {
        ImagePath::new(&format!("{}/{}", self.0, name))
    }
    /// True if `self` is `dir` or lies below it.
    pub fn starts_with(&self, dir: &ImagePath) -> bool {
        dir.0.is_empty()
            || self.0 == dir.0
            || (self.0.starts_with(&dir.0) && self.0.as_bytes().get(dir.0.len()) == Some(&b'/'))
    }
}

/// Text for a file name or link target taken as bytes from an image, one-to-one: valid UTF-8
/// is kept, except that a backslash becomes `\\`, and every byte of a control character
/// (C0, DEL, C1) and every byte that is not UTF-8 becomes `\xHH`. So `_C\xff.so` and
/// `_C\xfe.so` stay two names (a whiteout of one never hides the other), and no name can
/// carry a terminal escape or a newline into any output.
pub fn name_from_bytes(raw: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(raw.len());
    let hex = |out: &mut String, bytes: &[u8]| {
        for b in bytes {
            let _ = write!(out, "\\x{b:02x}");
        }
    };
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() {
                hex(&mut out, c.encode_utf8(&mut [0u8; 4]).as_bytes());
            } else {
                out.push(c);
            }
        }
        hex(&mut out, chunk.invalid());
    }
    out
}

/// A path compares equal to text naming the same in-image path, absolute or not
/// (`/usr/lib/x` and `usr/lib/x`).
impl PartialEq<str> for ImagePath {
    fn eq(&self, other: &str) -> bool {
        ImagePath::new(other).is_ok_and(|o| o == *self)
    }
}
impl PartialEq<&str> for ImagePath {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// Serde for an [`ImagePath`] shown to users (inventory JSON, findings): the absolute form
/// `/usr/lib/x`, the way every report prints it. The transparent default (`usr/lib/x`) stays
/// for internal data such as the layer cache.
pub mod absolute {
    use super::ImagePath;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &ImagePath, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(p)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ImagePath, D::Error> {
        let raw = String::deserialize(d)?;
        ImagePath::new(&raw).map_err(serde::de::Error::custom)
    }

    /// The same for a list of paths.
    pub mod list {
        use super::ImagePath;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(ps: &[ImagePath], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(ps.iter().map(|p| p.to_string()))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ImagePath>, D::Error> {
            Vec::<String>::deserialize(d)?
                .iter()
                .map(|raw| ImagePath::new(raw).map_err(serde::de::Error::custom))
                .collect()
        }
    }
}

impl fmt::Display for ImagePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_rejects_escapes() {
        assert_eq!(ImagePath::new("./usr//lib/").unwrap().as_str(), "usr/lib");
        assert_eq!(
            ImagePath::new("/usr/lib/../bin").unwrap().as_str(),
            "usr/bin"
        );
        assert!(ImagePath::new("../etc/passwd").is_err());
        assert!(ImagePath::new("usr/../../x").is_err());
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let p = ImagePath::new("usr/local/cuda").unwrap();
        assert_eq!(p.resolve_link("cuda-12.1").as_str(), "usr/local/cuda-12.1");
        assert_eq!(p.resolve_link("/opt/x").as_str(), "opt/x");
        assert_eq!(p.resolve_link("../../../../../etc").as_str(), "etc");
    }

    #[test]
    fn names_from_bytes_are_one_to_one_and_inert() {
        let a = ImagePath::from_bytes(b"usr/lib/_C\xff.so").unwrap();
        let b = ImagePath::from_bytes(b"usr/lib/_C\xfe.so").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str(), "usr/lib/_C\\xff.so");
        // The text of an escape is itself escaped, so it cannot collide with the byte.
        let lit = ImagePath::from_bytes(b"usr/lib/_C\\xff.so").unwrap();
        assert_ne!(lit, a);
        assert_eq!(lit.as_str(), "usr/lib/_C\\\\xff.so");
        let ctl = ImagePath::from_bytes("a/\x1b[2Kok\nb\u{85}".as_bytes()).unwrap();
        assert_eq!(ctl.as_str(), "a/\\x1b[2Kok\\x0ab\\xc2\\x85");
        assert_eq!(
            ImagePath::from_bytes("usr/lib/libcuda.so.1".as_bytes())
                .unwrap()
                .as_str(),
            "usr/lib/libcuda.so.1"
        );
    }

    #[test]
    fn prefix_matching_is_by_component() {
        let a = ImagePath::new("usr/lib64").unwrap();
        let b = ImagePath::new("usr/lib").unwrap();
        assert!(!a.starts_with(&b));
        assert!(ImagePath::new("usr/lib/x").unwrap().starts_with(&b));
    }
}
