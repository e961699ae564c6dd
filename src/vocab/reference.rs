//! Docker image references, one grammar for every reader: the registry client, the
//! Dockerfile/compose/Kubernetes rules and the CLI's bare-name detection.
//!
//! The grammar is the distribution project's `reference` package (what `docker pull` parses):
//!
//! ```text
//! reference      := name [ ":" tag ] [ "@" digest ]
//! name           := [ domain "/" ] path-component [ "/" path-component ]*
//! domain         := host [ ":" port ]       first component with a `.` or `:`, `localhost`,
//!                                            or an upper-case letter
//! path-component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
//! tag            := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//! digest         := algorithm ":" hex{32,}
//! ```
//!
//! [`Reference::split`] only cuts a reference into its parts (Dockerfile lines may still hold
//! `${VAR}`s, which the rules then judge); [`Reference::parse`] also checks every part.

use std::fmt;

/// Docker Hub's canonical domain.
pub const DOCKER_HUB: &str = "docker.io";

/// Other names of Docker Hub: its index and its API host. Lower case.
pub const DOCKER_HUB_ALIASES: &[&str] = &["index.docker.io", "registry-1.docker.io"];

/// Whether a domain (lower case) is Docker Hub under any of its names.
pub fn is_docker_hub(domain: &str) -> bool {
    domain == DOCKER_HUB || DOCKER_HUB_ALIASES.contains(&domain)
}

/// An image reference cut into its parts, as written (no normalisation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reference {
    /// `ghcr.io`, `localhost:5000`; None when the name has no domain (Docker Hub).
    pub domain: Option<String>,
    /// The repository path below the domain: `nvidia/cuda`, `ubuntu`.
    pub path: String,
    pub tag: Option<String>,
    /// `sha256:<hex>`.
    pub digest: Option<String>,
}

/// Why a reference does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceError {
    Empty,
    BadDomain,
    BadPath,
    BadTag,
    BadDigest,
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReferenceError::Empty => "empty",
            ReferenceError::BadDomain => "bad registry host[:port]",
            ReferenceError::BadPath => {
                "repository must be lowercase [a-z0-9] components joined by `.`, `_`, `__` or `-`, \
                 separated by /"
            }
            ReferenceError::BadTag => {
                "bad tag (at most 128 of [A-Za-z0-9_.-], not starting with . or -)"
            }
            ReferenceError::BadDigest => "bad digest (algorithm:hex, at least 32 hex digits)",
        })
    }
}

impl std::error::Error for ReferenceError {}

/// Whether the first component of a name is a registry domain (distribution's rule).
fn is_domain(first: &str) -> bool {
    first.contains(['.', ':'])
        || first == "localhost"
        || first.chars().any(|c| c.is_ascii_uppercase())
}

fn is_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'a'..=b'z' | b'0'..=b'9' => i += 1,
            b'.' | b'_' | b'-' => {
                // A separator: `.`, `_`, `__` or a run of `-`, then alphanumerics again.
                let start = i;
                while i < b.len() && matches!(b[i], b'.' | b'_' | b'-') {
                    i += 1;
                }
                let sep = &c[start..i];
                let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|x| x == b'-');
                if !ok {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn is_domain_valid(d: &str) -> bool {
    let (host, port) = if let Some(end) = d.strip_prefix('[').and_then(|r| r.find(']')) {
        let (host, rest) = d.split_at(end + 2);
        match rest.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if rest.is_empty() => (host, None),
            None => return false,
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
    } else {
        !host.is_empty()
            && host.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    };
    port_ok && host_ok
}

fn is_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|x| x.is_ascii_alphanumeric() || matches!(x, b'_' | b'.' | b'-'))
}

fn is_digest(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let alg_ok = alg.starts_with(|c: char| c.is_ascii_alphabetic())
        && alg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-' | b'_'));
    alg_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Reference {
    /// Cuts a reference into domain, path, tag and digest without judging the characters:
    /// the tag is after the last `:` of the last path component, the digest after `@`.
    /// None when there is no name at all.
    pub fn split(s: &str) -> Option<Reference> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        let (name_tag, digest) = match s.split_once('@') {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (s, None),
        };
        let last_slash = name_tag.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => (
                &name_tag[..last_slash + i],
                Some(name_tag[last_slash + i + 1..].to_string()),
            ),
            None => (name_tag, None),
        };
        let (domain, path) = match name.split_once('/') {
            Some((first, rest)) if is_domain(first) => (Some(first.to_string()), rest),
            _ => (None, name),
        };
        if path.is_empty() {
            return None;
        }
        Some(Reference {
            domain,
            path: path.to_string(),
            tag,
            digest,
        })
    }

    /// Splits and checks every part against the grammar.
    pub fn parse(s: &str) -> Result<Reference, ReferenceError> {
        let r = Reference::split(s).ok_or(ReferenceError::Empty)?;
        if r.domain.as_deref().is_some_and(|d| !is_domain_valid(d)) {
            return Err(ReferenceError::BadDomain);
        }
        if !r.path.split('/').all(is_path_component) {
            return Err(ReferenceError::BadPath);
        }
        if r.tag.as_deref().is_some_and(|t| !is_tag(t)) {
            return Err(ReferenceError::BadTag);
        }
        if r.digest.as_deref().is_some_and(|d| !is_digest(d)) {
            return Err(ReferenceError::BadDigest);
        }
        Ok(r)
    }

    /// The registry the name lives on: its domain, lower-cased, with Docker Hub's aliases
    /// (`index.docker.io`, `registry-1.docker.io`) and no domain at all as `docker.io`.
    pub fn registry(&self) -> String {
        match self.domain.as_deref().map(str::to_ascii_lowercase) {
            None => DOCKER_HUB.to_string(),
            Some(d) if is_docker_hub(&d) => DOCKER_HUB.to_string(),
            Some(d) => d,
        }
    }

    /// The repository as the registry API names it: Docker Hub's one-component names are
    /// under `library/` (`ubuntu` → `library/ubuntu`).
    pub fn api_repository(&self) -> String {
        if self.registry() == DOCKER_HUB && !self.path.contains('/') {
            format!("library/{}", self.path)
        } else {
            self.path.clone()
        }
    }

    /// The repository as people write it: Docker Hub's `library/` dropped.
    pub fn short_repository(&self) -> String {
        match self.path.strip_prefix("library/") {
            Some(r) if self.registry() == DOCKER_HUB => r.to_string(),
            _ => self.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_domain_path_tag_digest() {
        let r = Reference::split("localhost:5000/a/b:1.0@sha256:abc").unwrap();
        assert_eq!(r.domain.as_deref(), Some("localhost:5000"));
        assert_eq!(r.path, "a/b");
        assert_eq!(r.tag.as_deref(), Some("1.0"));
        assert_eq!(r.digest.as_deref(), Some("sha256:abc"));
        let r = Reference::split("nvidia/cuda:12.4.1-runtime-ubuntu22.04").unwrap();
        assert_eq!(r.domain, None);
        assert_eq!(r.registry(), "docker.io");
        assert_eq!(r.api_repository(), "nvidia/cuda");
        let r = Reference::split("ubuntu").unwrap();
        assert_eq!(
            (r.api_repository().as_str(), r.short_repository().as_str()),
            ("library/ubuntu", "ubuntu")
        );
        let r = Reference::split("docker.io/library/ubuntu:22.04").unwrap();
        assert_eq!(r.short_repository(), "ubuntu");
        assert_eq!(
            Reference::split("index.docker.io/x/y").unwrap().registry(),
            "docker.io"
        );
        // The port of a domain is not a tag.
        let r = Reference::split("reg:5000/x").unwrap();
        assert_eq!(
            (r.domain.as_deref(), r.tag.as_deref()),
            (Some("reg:5000"), None)
        );
        // Uppercase first component: a domain (distribution's rule).
        assert_eq!(
            Reference::split("MyReg/x").unwrap().domain.as_deref(),
            Some("MyReg")
        );
        assert!(Reference::split("  ").is_none());
        assert!(Reference::split("ghcr.io/").is_none());
    }

    #[test]
    fn grammar_checks_every_part() {
        for ok in [
            "ubuntu",
            "nvcr.io/nvidia/pytorch:24.05-py3",
            "a__b/c--d/e.f_g:_tag",
            "[::1]:5000/x:1",
            "[fe80::1]/x",
            "x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(
                Reference::parse(ok).is_ok(),
                "{ok}: {:?}",
                Reference::parse(ok)
            );
        }
        for (bad, why) in [
            ("", ReferenceError::Empty),
            ("Ubuntu", ReferenceError::BadPath),
            ("base-", ReferenceError::BadPath),
            ("a___b", ReferenceError::BadPath),
            ("a/-b", ReferenceError::BadPath),
            ("x:.hidden", ReferenceError::BadTag),
            ("x:", ReferenceError::BadTag),
            ("x@md5:12", ReferenceError::BadDigest),
            ("bad_host.io/x", ReferenceError::BadDomain),
            ("host:port/x", ReferenceError::BadDomain),
            ("nvidia/cuda:${CUDA}", ReferenceError::BadTag),
        ] {
            assert_eq!(Reference::parse(bad), Err(why), "{bad:?}");
        }
    }

    #[test]
    fn docker_hub_has_one_list_of_names() {
        for d in ["docker.io", "index.docker.io", "registry-1.docker.io"] {
            assert!(is_docker_hub(d), "{d}");
        }
        assert!(!is_docker_hub("ghcr.io"));
        assert_eq!(
            Reference::split("registry-1.docker.io/x/y")
                .unwrap()
                .registry(),
            "docker.io"
        );
    }
}
