//! `REGISTRY/REPO[:TAG|@DIGEST]` for the registry API: the one reference grammar
//! ([`crate::vocab::reference`]) with Docker Hub's normalisation (no domain → `docker.io`, a
//! one-component name under `library/`), `:latest` when neither tag nor digest is given, and
//! sha256 digests only (every blob is verified by it).

use crate::source::error::{LiveError, LiveErrorKind};
use crate::vocab::Reference;
use std::fmt;

pub use crate::vocab::reference::DOCKER_HUB;
/// Where Docker Hub's API actually lives.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRef {
    /// `docker.io`, `ghcr.io`, `127.0.0.1:5000`.
    pub registry: String,
    /// `library/ubuntu`, `pytorch/pytorch`.
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<hex>`.
    pub digest: Option<String>,
}

fn bad(s: &str, why: &str) -> LiveError {
    LiveError::new(
        LiveErrorKind::BadReference,
        format!("invalid image reference {s:?}: {why}"),
    )
}

impl RegistryRef {
    /// Parse with or without a leading `docker://`. A reference with neither tag nor digest
    /// means `:latest`.
    pub fn parse(input: &str) -> Result<RegistryRef, LiveError> {
        let s = input.strip_prefix("docker://").unwrap_or(input);
        let s = s.strip_prefix("//").unwrap_or(s);
        let r = Reference::parse(s).map_err(|e| bad(input, &e.to_string()))?;
        // Blobs and manifests are verified by their sha256 digest: other algorithms are refused.
        if let Some(d) = &r.digest {
            let ok = d.strip_prefix("sha256:").is_some_and(|h| {
                h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            });
            if !ok {
                return Err(bad(input, "digest must be sha256:<64 lowercase hex>"));
            }
        }
        let tag = if r.tag.is_none() && r.digest.is_none() {
            Some("latest".to_string())
        } else {
            r.tag.clone()
        };
        Ok(RegistryRef {
            registry: r.registry(),
            repository: r.api_repository(),
            tag,
            digest: r.digest,
        })
    }

    /// The host:port the API is served on.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What to ask `/v2/<repo>/manifests/` for: the digest when pinned, else the tag.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }
}

impl fmt::Display for RegistryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Host part of `host[:port]`, brackets of IPv6 literals removed.
pub(crate) fn host_only(host_port: &str) -> &str {
    if let Some(rest) = host_port.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host_port.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host_port,
    }
}

/// Loopback registries may be plain HTTP, as Docker allows.
pub(crate) fn is_loopback(host_port: &str) -> bool {
    let h = host_only(host_port);
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        RegistryRef::parse(s).unwrap().to_string()
    }

    #[test]
    fn docker_hub_normalisation() {
        assert_eq!(p("ubuntu"), "docker.io/library/ubuntu:latest");
        assert_eq!(
            p("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"),
            "docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
        );
        assert_eq!(
            p("docker.io/ubuntu:22.04"),
            "docker.io/library/ubuntu:22.04"
        );
        assert_eq!(
            p("index.docker.io/library/ubuntu"),
            "docker.io/library/ubuntu:latest"
        );
        assert_eq!(
            p("docker://nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
            "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
        );
        assert_eq!(p("localhost/x"), "localhost/x:latest");
        assert_eq!(p("127.0.0.1:5000/a/b:v1"), "127.0.0.1:5000/a/b:v1");
        let d = "sha256:".to_string() + &"a".repeat(64);
        let r = RegistryRef::parse(&format!("127.0.0.1:5000/a/b@{d}")).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.manifest_ref(), d);
        assert_eq!(
            RegistryRef::parse("ubuntu").unwrap().api_host(),
            DOCKER_HUB_API
        );
        assert_eq!(
            RegistryRef::parse("localhost:5000/x").unwrap().api_host(),
            "localhost:5000"
        );
    }

    #[test]
    fn rejects_bad_references() {
        for s in [
            "",
            // An upper-case first component is a registry host (distribution's rule); in
            // the path it is invalid.
            "x/UPPER",
            "a//b",
            "x:",
            "x@sha256:abc",
            "a/b:-tag",
            "/x",
        ] {
            let e = RegistryRef::parse(s).unwrap_err();
            assert_eq!(e.kind, LiveErrorKind::BadReference, "{s}");
        }
    }

    #[test]
    fn loopback() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("registry.example.com:5000"));
        assert!(!is_loopback("10.0.0.1"));
    }
}
