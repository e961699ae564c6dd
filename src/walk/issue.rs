//! A problem met while reading an image: what went wrong, in which layer, at which path.
//! Typed so the verdict can depend on it (incomplete input fails closed) and so the GL000
//! finding it becomes points at the layer and the in-image path.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of problem it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueKind {
    /// The stream ended before its structure said it would.
    Truncated,
    /// The stream could not be decoded (bad compression, bad tar header).
    Corrupt,
    /// The content does not hash to the digest that names it.
    DigestMismatch,
    /// Over one of gpulint's resource bounds (layer size, header size).
    TooLarge,
    /// An entry that cannot be used (bad path, link without a target, bad whiteout).
    BadEntry,
    /// A file whose content a detector could not parse.
    MalformedFile,
    /// Could not be opened or read (I/O or network error).
    Unreadable,
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IssueKind::Truncated => "truncated",
            IssueKind::Corrupt => "corrupt",
            IssueKind::DigestMismatch => "digest-mismatch",
            IssueKind::TooLarge => "too-large",
            IssueKind::BadEntry => "bad-entry",
            IssueKind::MalformedFile => "malformed-file",
            IssueKind::Unreadable => "unreadable",
        })
    }
}

/// One problem, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanIssue {
    /// The layer's name (digest, else diff_id, else `layer #N`); None for the image as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// The in-image path, when the problem is about one entry or file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub kind: IssueKind,
    /// What happened, without the layer and path (those are fields).
    pub message: String,
}

impl ScanIssue {
    pub fn layer(layer: &str, kind: IssueKind, message: impl Into<String>) -> ScanIssue {
        ScanIssue {
            layer: Some(layer.to_string()),
            path: None,
            kind,
            message: message.into(),
        }
    }

    pub fn at(
        layer: &str,
        path: impl fmt::Display,
        kind: IssueKind,
        message: impl Into<String>,
    ) -> ScanIssue {
        ScanIssue {
            layer: Some(layer.to_string()),
            path: Some(path.to_string()),
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScanIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = &self.layer {
            write!(f, "layer {l}: ")?;
        }
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        f.write_str(&self.message)
    }
}

pub use crate::format::tar::LimitExceeded;

/// The kind of a failed stream read, from the types in its cause chain alone: a digest check
/// that failed (ours, or a registry's or daemon's integrity error), a size bound, a timeout;
/// then an early end (`UnexpectedEof`) is truncation, anything else corruption.
pub(crate) fn stream_error_kind(e: &(dyn std::error::Error + 'static)) -> IssueKind {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut eof = false;
    while let Some(err) = cur {
        if err.is::<crate::source::digest::DigestMismatch>() {
            return IssueKind::DigestMismatch;
        }
        if err
            .downcast_ref::<crate::source::LiveError>()
            .is_some_and(|l| l.kind == crate::source::LiveErrorKind::Integrity)
        {
            return IssueKind::DigestMismatch;
        }
        if err.is::<LimitExceeded>() {
            return IssueKind::TooLarge;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            eof |= io.kind() == std::io::ErrorKind::UnexpectedEof;
            if io.kind() == std::io::ErrorKind::TimedOut {
                return IssueKind::Unreadable;
            }
            if let Some(inner) = io.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        cur = err.source();
    }
    if eof {
        IssueKind::Truncated
    } else {
        IssueKind::Corrupt
    }
}
