//! `ImagePath`: a path inside an image, normalized and guaranteed to stay inside it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A normalized in-image path: relative to the image root, `/`-separated, no `.`/`..`
/// components, no empty components. `""` is the root. Built only through [`ImagePath::new`],
/// which rejects paths that would escape the root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
    fn prefix_matching_is_by_component() {
        let a = ImagePath::new("usr/lib64").unwrap();
        let b = ImagePath::new("usr/lib").unwrap();
        assert!(!a.starts_with(&b));
        assert!(ImagePath::new("usr/lib/x").unwrap().starts_with(&b));
    }
}
