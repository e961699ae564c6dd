//! Image references in the transport syntax of skopeo / containers-image:
//! `docker-archive:PATH[:name:tag|:@N]`, `oci:DIR[:tag|@digest]`, `oci-archive:PATH[:tag]`,
//! `dir:PATH`, a bare path that is auto-detected, `docker-daemon:NAME[:TAG]` and
//! `docker://REGISTRY/REPO[:TAG|@DIGEST]`. Only the syntax: `open` decides what a bare name
//! that is not a path means.

use super::SourceError;
use std::path::PathBuf;

/// Which image inside an archive or layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `name:tag` (docker-archive RepoTags) or `tag` (OCI `org.opencontainers.image.ref.name`).
    Name(String),
    /// `@N`: the N-th image (docker-archive manifest.json entry, OCI index.json manifest).
    Index(usize),
    /// `@sha256:…`: a manifest digest (OCI layouts).
    Digest(String),
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Name(n) => write!(f, "{n}"),
            Selector::Index(i) => write!(f, "@{i}"),
            Selector::Digest(d) => write!(f, "@{d}"),
        }
    }
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    DockerArchive {
        path: PathBuf,
        selector: Option<Selector>,
    },
    Oci {
        path: PathBuf,
        selector: Option<Selector>,
    },
    OciArchive {
        path: PathBuf,
        selector: Option<Selector>,
    },
    Dir {
        path: PathBuf,
    },
    /// A path without a transport prefix: the kind is decided by looking at it.
    Auto {
        path: PathBuf,
    },
    /// `docker-daemon:name:tag`: an image in a local Docker or podman daemon.
    DockerDaemon {
        reference: String,
    },
    /// `docker://registry/name:tag`: an image pulled from a registry.
    Registry {
        reference: String,
    },
}

impl Transport {
    /// The transport's name as written in references (`auto` for a bare path).
    pub fn name(&self) -> &'static str {
        match self {
            Transport::DockerArchive { .. } => "docker-archive",
            Transport::Oci { .. } => "oci",
            Transport::OciArchive { .. } => "oci-archive",
            Transport::Dir { .. } => "dir",
            Transport::Auto { .. } => "auto",
            Transport::DockerDaemon { .. } => "docker-daemon",
            Transport::Registry { .. } => "docker",
        }
    }
}

/// Transport names other tools accept that gpulint does not read (yet).
const FOREIGN_TRANSPORTS: &[&str] = &[
    "containers-storage",
    "ostree",
    "sif",
    "tarball",
    "atomic",
    "podman",
];

/// Parse a reference. Never touches the filesystem, except to let a bare path that happens
/// to look like `word:rest` win over an unknown transport when such a path exists.
pub fn parse_reference(reference: &str) -> Result<Transport, SourceError> {
    let bad = |reason: &str| SourceError::BadReference {
        reference: reference.to_string(),
        reason: reason.to_string(),
    };
    if reference.is_empty() {
        return Err(bad("empty image reference"));
    }
    if let Some(rest) = reference.strip_prefix("docker://") {
        if rest.is_empty() {
            return Err(bad("docker:// needs an image name"));
        }
        return Ok(Transport::Registry {
            reference: rest.to_string(),
        });
    }
    let Some((prefix, rest)) = reference.split_once(':') else {
        return Ok(Transport::Auto {
            path: PathBuf::from(reference),
        });
    };
    let looks_like_transport = !prefix.is_empty()
        && prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    match prefix {
        "docker-archive" => {
            let (path, sel) = split_path_and_selector(rest);
            let selector = match sel {
                None => None,
                Some(s) => Some(parse_archive_selector(s).ok_or_else(|| {
                    bad("expected docker-archive:PATH[:name:tag|:@N] (a name:tag or @index after the path)")
                })?),
            };
            Ok(Transport::DockerArchive {
                path: non_empty_path(path, reference)?,
                selector,
            })
        }
        "oci" | "oci-archive" => {
            let (path, selector) = split_oci(rest).map_err(|r| bad(&r))?;
            let path = non_empty_path(path, reference)?;
            Ok(if prefix == "oci" {
                Transport::Oci { path, selector }
            } else {
                Transport::OciArchive { path, selector }
            })
        }
        "dir" => Ok(Transport::Dir {
            path: non_empty_path(rest, reference)?,
        }),
        "docker-daemon" => {
            if rest.is_empty() {
                return Err(bad("docker-daemon: needs an image name or ID"));
            }
            Ok(Transport::DockerDaemon {
                reference: rest.to_string(),
            })
        }
        "docker" => Err(bad("registry references are written docker://NAME[:TAG]")),
        _ if looks_like_transport => {
            // `./x:y` never gets here (the prefix has a `.`), but a relative file named
            // `foo:bar` does: prefer the file when it exists.
            if std::path::Path::new(reference).exists() {
                return Ok(Transport::Auto {
                    path: PathBuf::from(reference),
                });
            }
            Err(SourceError::UnknownTransport {
                transport: prefix.to_string(),
                reference: reference.to_string(),
                foreign: FOREIGN_TRANSPORTS.contains(&prefix),
            })
        }
        _ => Ok(Transport::Auto {
            path: PathBuf::from(reference),
        }),
    }
}

fn non_empty_path(p: &str, reference: &str) -> Result<PathBuf, SourceError> {
    if p.is_empty() {
        return Err(SourceError::BadReference {
            reference: reference.to_string(),
            reason: "the path is empty".into(),
        });
    }
    Ok(PathBuf::from(p))
}

/// `PATH[:rest]` split at the first `:`, as containers-image does.
fn split_path_and_selector(s: &str) -> (&str, Option<&str>) {
    match s.split_once(':') {
        Some((p, r)) => (p, Some(r)),
        None => (s, None),
    }
}

fn parse_archive_selector(s: &str) -> Option<Selector> {
    if let Some(n) = s.strip_prefix('@') {
        return n.parse().ok().map(Selector::Index);
    }
    // name:tag, name@digest, or a bare name (tag `latest`).
    if s.is_empty() || s.contains(char::is_whitespace) {
        return None;
    }
    Some(Selector::Name(s.to_string()))
}

/// `DIR[:tag]`, `DIR[:@N]`, `DIR@sha256:…` or `DIR:@sha256:…`.
fn split_oci(s: &str) -> Result<(&str, Option<Selector>), String> {
    for marker in [":@sha256:", "@sha256:", ":@sha512:", "@sha512:"] {
        if let Some(i) = s.find(marker) {
            let digest = &s[i + marker.find('@').map_or(0, |j| j + 1)..];
            super::digest::Digest::parse(digest)
                .map_err(|e| format!("bad manifest digest: {e}"))?;
            return Ok((&s[..i], Some(Selector::Digest(digest.to_string()))));
        }
    }
    let (path, sel) = split_path_and_selector(s);
    let selector = match sel {
        None | Some("") => None,
        Some(t) if t.starts_with('@') => {
            Some(Selector::Index(t[1..].parse().map_err(|_| {
                format!("bad image index {t:?}: expected @N or @sha256:…")
            })?))
        }
        Some(t) => {
            if t.contains(|c: char| c.is_whitespace() || c == '/' || c == ':') {
                return Err(format!("bad tag {t:?}"));
            }
            Some(Selector::Name(t.to_string()))
        }
    };
    Ok((path, selector))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Transport {
        parse_reference(s).unwrap()
    }

    #[test]
    fn parses_transports() {
        assert_eq!(
            p("docker-archive:/x/img.tar:foo/bar:1.0"),
            Transport::DockerArchive {
                path: "/x/img.tar".into(),
                selector: Some(Selector::Name("foo/bar:1.0".into()))
            }
        );
        assert_eq!(
            p("docker-archive:img.tar:@2"),
            Transport::DockerArchive {
                path: "img.tar".into(),
                selector: Some(Selector::Index(2))
            }
        );
        assert_eq!(
            p("oci:/l:v1"),
            Transport::Oci {
                path: "/l".into(),
                selector: Some(Selector::Name("v1".into()))
            }
        );
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            p(&format!("oci:/l@{d}")),
            Transport::Oci {
                path: "/l".into(),
                selector: Some(Selector::Digest(d.clone()))
            }
        );
        assert_eq!(
            p(&format!("oci-archive:/l.tar:@{d}")),
            Transport::OciArchive {
                path: "/l.tar".into(),
                selector: Some(Selector::Digest(d))
            }
        );
        assert_eq!(p("dir:/"), Transport::Dir { path: "/".into() });
        assert_eq!(
            p("./some/path"),
            Transport::Auto {
                path: "./some/path".into()
            }
        );
        assert!(matches!(
            p("docker://nvcr.io/nvidia/cuda:12.4.1-base"),
            Transport::Registry { .. }
        ));
        assert!(matches!(
            p("docker-daemon:x:1"),
            Transport::DockerDaemon { .. }
        ));
    }

    #[test]
    fn rejects_bad_references() {
        for r in [
            "",
            "oci:",
            "dir:",
            "docker-archive:",
            "docker-archive:x.tar:@notanumber",
            "oci:/x:@zz",
            "oci:/x@sha256:short",
            "docker://",
            "docker:foo",
        ] {
            let e = parse_reference(r).unwrap_err();
            assert!(matches!(e, SourceError::BadReference { .. }), "{r}: {e}");
        }
        let e = parse_reference("containers-storage:foo").unwrap_err();
        assert!(
            e.to_string().contains("containers-storage"),
            "message names the transport: {e}"
        );
        assert!(matches!(
            e,
            SourceError::UnknownTransport { foreign: true, ref transport, .. } if transport == "containers-storage"
        ));
        assert!(
            e.to_string()
                .contains("containers-storage: (a transport gpulint does not read)"),
            "{e}"
        );
        // An unknown prefix that no tool uses may be an image name with a tag (`myimage:1.0`).
        let e = parse_reference("myimage:1.0").unwrap_err();
        assert!(
            matches!(e, SourceError::UnknownTransport { foreign: false, .. }),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("unknown transport myimage: in"),
            "{e}"
        );
        // Every transport gpulint reads is listed, not only the file ones.
        for t in [
            "NAME[:TAG]",
            "docker-daemon:",
            "docker://",
            "docker-archive:",
            "oci:",
            "dir:",
        ] {
            assert!(e.to_string().contains(t), "{t} not listed: {e}");
        }
    }
}
