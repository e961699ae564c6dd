//! Why an image could not be opened. Every error here is an input error (exit code 2):
//! [`SourceError`] for references and local transports (files and directories),
//! [`LiveError`] for daemons and registries, with a kind so callers can tell "no daemon" from
//! "digest mismatch" without parsing text.

use super::Platform;
use std::path::{Path, PathBuf};

/// Why an image could not be opened. Every variant is unusable input: the CLI exits with
/// [`crate::exit::USAGE_OR_INPUT`].
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("bad image reference {reference:?}: {reason}")]
    BadReference { reference: String, reason: String },
    #[error(
        "unknown transport {transport}:{} in {reference:?}: gpulint reads NAME[:TAG] (the local \
         daemon, then the registry), docker-daemon:NAME[:TAG], \
         docker://REGISTRY/REPO[:TAG|@DIGEST], docker-archive:PATH, oci:DIR, oci-archive:PATH, \
         dir:PATH or a bare path",
        if *.foreign { " (a transport gpulint does not read)" } else { "" }
    )]
    UnknownTransport {
        /// The prefix before `:`, without the colon.
        transport: String,
        reference: String,
        /// A transport other tools read (containers-storage:, ostree:, …), so the reference is
        /// meant as one and is not an image name with a port or tag.
        foreign: bool,
    },
    #[error("{}: no such file or directory", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: not an image: {reason}", path.display())]
    NotAnImage { path: PathBuf, reason: String },
    #[error("{}: {what}: {reason}", path.display())]
    Invalid {
        path: PathBuf,
        what: String,
        reason: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{reference}: no image for platform {requested}; available: {}",
        list(available)
    )]
    PlatformNotFound {
        reference: String,
        requested: Platform,
        available: Vec<Platform>,
    },
    #[error("{reference}: no image {wanted}; available: {}", list(available))]
    ImageNotFound {
        reference: String,
        wanted: String,
        available: Vec<String>,
    },
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl SourceError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> SourceError {
        if source.kind() == std::io::ErrorKind::NotFound {
            SourceError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            SourceError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }
}

/// What went wrong, coarsely, for callers that react differently (fall back from daemon to
/// registry, pick an exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveErrorKind {
    /// No daemon answered on any socket tried.
    NoDaemon,
    /// The daemon or registry answered but has no such image (or platform).
    NotFound,
    /// The registry could not be reached (DNS, refused, TLS).
    Unreachable,
    /// Credentials missing or refused.
    Auth,
    /// Content does not match its digest.
    Integrity,
    /// Anything else the daemon or registry said that we cannot use.
    Protocol,
    /// The reference itself is malformed.
    BadReference,
    /// No answer in time: a silent connection, a request over its bound, or `--timeout`
    /// for the whole image ran out.
    Timeout,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LiveError {
    pub kind: LiveErrorKind,
    pub message: String,
}

impl LiveError {
    pub(crate) fn new(kind: LiveErrorKind, message: impl Into<String>) -> LiveError {
        LiveError {
            kind,
            message: message.into(),
        }
    }
}

/// The kind of a live error inside an anyhow chain, if there is one.
pub fn live_error_kind(e: &anyhow::Error) -> Option<LiveErrorKind> {
    e.chain()
        .find_map(|c| c.downcast_ref::<LiveError>())
        .map(|l| l.kind)
}
