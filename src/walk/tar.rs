//! One streaming pass over a layer's tar stream (plain, gzip or zstd, sniffed from the first
//! bytes): entries, whiteouts, links, and the content detectors ask for. Nothing is extracted.

use super::content::{file_facts, Sink};
use super::issue::{stream_error_kind, IssueKind, LimitExceeded, ScanIssue};
use super::pipe::with_decoder_thread;
use super::{Change, ImagePath, LayerTree, Node, NodeKind, WalkOptions};
use crate::detect::Detectors;
use crate::format::tar::{Entry, EntryKind, TarReader};
use crate::io_util::read_up_to;
use crate::source::digest::Digest;
use crate::vocab::name_from_bytes;
use crate::vocab::Compression;
use sha2::{Digest as _, Sha256};
use std::io::{self, BufRead, Read};

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

pub(crate) fn walk_tar(
    mut raw: Box<dyn Read + Send>,
    index: usize,
    name: &str,
    diff_id: Option<&str>,
    checked_digest: Option<&str>,
    detectors: &Detectors,
    opts: &WalkOptions,
) -> LayerTree {
    let mut tree = LayerTree::default();
    let mut head = [0u8; 4];
    let n = match read_up_to(&mut raw, &mut head) {
        Ok(n) => n,
        Err(e) => {
            tree.errors.push(ScanIssue::layer(
                name,
                stream_error_kind(&e),
                format!("read failed: {e}"),
            ));
            tree.partial = true;
            return tree;
        }
    };
    let compression = Compression::sniff(&head[..n]);
    let stream = io::Cursor::new(head[..n].to_vec()).chain(raw);
    // The uncompressed stream is hashed as it is decoded: the layer's facts are used (and
    // cached under its diff_id) only when it is the layer the image config names.
    let expected = diff_id.and_then(|d| Digest::parse(d).ok().filter(Digest::verifiable));
    // A plain layer whose blob reader checks its diff_id already (a `docker save` layer) is
    // not hashed twice: that check fails the stream at its end, as this one would.
    let checked_by_reader = compression == Compression::None
        && expected
            .as_ref()
            .is_some_and(|want| checked_digest == Some(want.to_string().as_str()));
    let walk = |decoded: &mut dyn BufRead, tree: &mut LayerTree| {
        read_entries(
            decoded,
            expected.is_some() && !checked_by_reader,
            index,
            name,
            detectors,
            opts,
            tree,
        )
    };
    // Reading the blob (and its digest check) runs on a thread of its own, beside the decoder
    // rather than before it (`pipe`).
    let ((outcome, rest), unread) = with_decoder_thread("read", stream, |blob| {
        let (outcome, undelivered) = match compression {
            Compression::Gzip => with_decoder_thread(
                "decode",
                flate2::bufread::MultiGzDecoder::new(&mut *blob),
                |decoded| walk(decoded, &mut tree),
            ),
            Compression::Zstd => match zstd::stream::read::Decoder::with_buffer(&mut *blob) {
                Ok(d) => with_decoder_thread("decode", d, |decoded| walk(decoded, &mut tree)),
                Err(e) => (
                    Outcome::Failed {
                        error: io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("zstd stream cannot be read: {e}"),
                        ),
                        after: "before the first entry".to_string(),
                    },
                    None,
                ),
            },
            Compression::None => (walk(blob, &mut tree), None),
        };
        // After a failure, the rest of the blob is read to its end: the digest check runs
        // there, and a digest mismatch is the root cause of any decode error before it. A
        // blob that failed already names its own error (reading on would only wait for it
        // again).
        let rest = if matches!(outcome, Outcome::Read(_)) {
            Ok(0)
        } else {
            match blob.source_failure() {
                // As the decoder reported it when the walk never saw that, else as the blob did.
                Some(failure) => Err(undelivered.unwrap_or(failure)),
                None => io::copy(blob, &mut io::sink()),
            }
        };
        (outcome, rest)
    });
    let drain_rest = || match (rest, unread) {
        (Ok(_), Some(e)) => Err(e),
        (rest, _) => rest,
    };
    match outcome {
        Outcome::Failed { error, after } => {
            let issue = match drain_rest() {
                Err(cause) => ScanIssue::layer(
                    name,
                    stream_error_kind(&cause),
                    format!(
                        "{cause} (the layer stream failed to decode {after}: {error}; later entries are missing)"
                    ),
                ),
                Ok(_) => {
                    let kind = stream_error_kind(&error);
                    let what = match kind {
                        IssueKind::Truncated => "truncated layer stream",
                        IssueKind::TooLarge => "layer stream over a bound",
                        _ => "corrupt layer stream",
                    };
                    ScanIssue::layer(
                        name,
                        kind,
                        format!("{what} {after}: {error}; later entries are missing"),
                    )
                }
            };
            tree.errors.push(issue);
            tree.partial = true;
        }
        Outcome::FailedAtEnd(e) => {
            tree.errors.push(match drain_rest() {
                Err(cause) => ScanIssue::layer(
                    name,
                    stream_error_kind(&cause),
                    format!("{cause} (the layer stream failed to decode at its end: {e})"),
                ),
                Ok(_) => ScanIssue::layer(
                    name,
                    stream_error_kind(&e),
                    format!("error at the end of the layer stream: {e}"),
                ),
            });
            tree.partial = true;
        }
        Outcome::Read(_) if checked_by_reader => {
            tree.verified_diff_id = expected.map(|want| want.to_string());
        }
        Outcome::Read(hasher) => {
            if let (Some(want), Some(h)) = (expected, hasher) {
                let got = hex::encode(h.finalize());
                if got == want.hex {
                    tree.verified_diff_id = Some(want.to_string());
                } else {
                    tree.errors.push(ScanIssue::layer(
                        name,
                        IssueKind::DigestMismatch,
                        format!(
                            "uncompressed content hashes to sha256:{got}, not the diff_id {want} the image config names; the layer's facts are not used"
                        ),
                    ));
                    tree.partial = true;
                }
            }
        }
    }
    tree
}

/// How reading a layer's entries ended.
enum Outcome {
    /// The stream failed to decode or parse `after` some entry.
    Failed { error: io::Error, after: String },
    /// Every entry was read, but the stream failed after them (padding, digest check).
    FailedAtEnd(io::Error),
    /// Read to the end; the hash of the uncompressed stream when one was asked for.
    Read(Option<Sha256>),
}

/// The walking thread's part: hash the decoded stream, parse its tar headers and record
/// every entry into `tree`, then read to the end of the stream (trailing padding, and the
/// digest checks that run at EOF).
fn read_entries(
    decoded: &mut dyn BufRead,
    hash: bool,
    index: usize,
    name: &str,
    detectors: &Detectors,
    opts: &WalkOptions,
    tree: &mut LayerTree,
) -> Outcome {
    let hashed = Hashing {
        inner: decoded,
        hasher: hash.then(Sha256::new),
    };
    let bounded = Bounded {
        inner: hashed,
        left: opts.max_layer_bytes,
        limit: opts.max_layer_bytes,
    };
    // The decoded bytes are read where they lie in the pipe's chunks: no buffer in between.
    let mut archive = TarReader::new(bounded);
    let mut last_good: Option<ImagePath> = None;
    loop {
        match archive.next_entry() {
            Ok(Some(_)) if !opts.entries.take() => {
                let after = match &last_good {
                    Some(p) => format!("after {p}"),
                    None => "before the first entry".to_string(),
                };
                let error = io::Error::other(LimitExceeded(opts.entries.exceeded()));
                return Outcome::Failed { error, after };
            }
            Ok(Some(e)) => {
                if let Some(p) = entry_into(&e, &mut archive, index, name, detectors, opts, tree) {
                    last_good = Some(p);
                }
            }
            Ok(None) => break,
            Err(error) => {
                let after = match &last_good {
                    Some(p) => format!("after {p}"),
                    None => "before the first entry".to_string(),
                };
                return Outcome::Failed { error, after };
            }
        }
    }
    let mut inner = archive.into_inner();
    if let Err(e) = io::copy(&mut inner, &mut io::sink()) {
        return Outcome::FailedAtEnd(e);
    }
    Outcome::Read(inner.inner.hasher)
}

/// Hashes the decompressed stream on its way to the tar reader (one pass, no extra copy).
struct Hashing<R> {
    inner: R,
    hasher: Option<Sha256>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let (Some(h), Some(chunk)) = (&mut self.hasher, buf.get(..n)) {
            h.update(chunk);
        }
        Ok(n)
    }
}

/// Record one tar entry. Returns its path when it was usable.
fn entry_into<R: Read>(
    e: &Entry,
    archive: &mut TarReader<R>,
    index: usize,
    name: &str,
    detectors: &Detectors,
    opts: &WalkOptions,
    tree: &mut LayerTree,
) -> Option<ImagePath> {
    let path = match ImagePath::from_bytes(&e.path) {
        Ok(p) => p,
        Err(err) => {
            tree.errors.push(ScanIssue::at(
                name,
                name_from_bytes(&e.path),
                IssueKind::BadEntry,
                format!("entry skipped: {err}"),
            ));
            return None;
        }
    };
    if path.is_root() {
        return Some(path);
    }
    let file_name = path.file_name();
    if let Some(rest) = file_name.strip_prefix(WHITEOUT_PREFIX) {
        let parent = path.parent().unwrap_or_else(ImagePath::root);
        if file_name == OPAQUE {
            tree.changes.push(Change::Opaque { path: parent });
        } else if rest.starts_with(WHITEOUT_PREFIX) {
            // Other `.wh..wh.` names are aufs bookkeeping, not part of the filesystem.
        } else if rest.is_empty() || rest == "." || rest == ".." {
            tree.errors.push(ScanIssue::at(
                name,
                &path,
                IssueKind::BadEntry,
                "invalid whiteout name; skipped",
            ));
            return None;
        } else {
            match parent.join(rest) {
                Ok(p) => tree.changes.push(Change::Whiteout { path: p }),
                Err(err) => {
                    tree.errors.push(ScanIssue::at(
                        name,
                        &path,
                        IssueKind::BadEntry,
                        err.to_string(),
                    ));
                    return None;
                }
            }
        }
        return Some(path);
    }

    let mode = e.mode;
    let link = e.link.as_deref().map(name_from_bytes);
    let kind = match e.kind {
        EntryKind::File => NodeKind::File { size: e.size, mode },
        EntryKind::Dir => NodeKind::Dir { mode },
        EntryKind::Symlink => match link {
            Some(target) if !target.is_empty() => NodeKind::Symlink { target },
            _ => {
                tree.errors.push(ScanIssue::at(
                    name,
                    &path,
                    IssueKind::BadEntry,
                    "symlink without a target; skipped",
                ));
                return None;
            }
        },
        EntryKind::Hardlink => match link.filter(|t| !t.is_empty()).map(|t| ImagePath::new(&t)) {
            Some(Ok(target)) => NodeKind::Hardlink { target },
            Some(Err(err)) => {
                tree.errors.push(ScanIssue::at(
                    name,
                    &path,
                    IssueKind::BadEntry,
                    format!("hardlink target {err}; skipped"),
                ));
                return None;
            }
            None => {
                tree.errors.push(ScanIssue::at(
                    name,
                    &path,
                    IssueKind::BadEntry,
                    "hardlink without a target; skipped",
                ));
                return None;
            }
        },
        EntryKind::Other(_) => NodeKind::Other,
    };
    let mut facts = Vec::new();
    if let NodeKind::File { size, .. } = kind {
        let mut sink = Sink {
            layer: name,
            errors: &mut tree.errors,
            warnings: &mut tree.warnings,
        };
        facts = file_facts(
            &path,
            size,
            &mut archive.content(),
            detectors,
            opts,
            &mut sink,
        );
    }
    tree.push_entry(
        path.clone(),
        Node {
            kind,
            layer: index,
            facts,
        },
    );
    Some(path)
}

/// Fails (rather than ending quietly) once more than `limit` bytes have come through.
/// A reader shared between the decoder and the walk (see `walk_tar`); `failed` once a read
/// of it failed.
#[derive(Clone)]
struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(LimitExceeded(format!(
                    "layer is larger than the limit of {} decompressed bytes",
                    self.limit
                )))),
            };
        }
        let cap = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..cap])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    fn layer(names: &[&[u8]]) -> Box<dyn Read + Send> {
        let mut b = ::tar::Builder::new(Vec::new());
        for n in names {
            let mut h = ::tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            b.append_data(&mut h, OsStr::from_bytes(n), &b"x"[..])
                .unwrap();
        }
        Box::new(io::Cursor::new(b.into_inner().unwrap()))
    }

    #[test]
    fn non_utf8_names_stay_distinct_through_whiteouts() {
        let opts = WalkOptions::default();
        let l0 = walk_tar(
            layer(&[b"usr/lib/_C\xff.so", b"usr/lib/_C\xfe.so"]),
            0,
            "l0",
            None,
            None,
            &crate::detect::Detectors::none(),
            &opts,
        );
        assert_eq!(l0.entries().count(), 2, "{:?}", l0.changes);
        let l1 = walk_tar(
            layer(&[b"usr/lib/.wh._C\xff.so"]),
            1,
            "l1",
            None,
            None,
            &crate::detect::Detectors::none(),
            &opts,
        );
        assert!(l0.errors.is_empty() && l1.errors.is_empty());
        let tree = super::super::FileTree::squash([l0, l1]);
        let names: Vec<String> = tree.nodes.keys().map(|p| p.to_string()).collect();
        assert_eq!(names, vec!["/usr/lib/_C\\xfe.so"]);
    }

    /// A plain layer whose reader checks its diff_id is hashed once, and still fails on a
    /// mismatch; without the reader's check, the walk's own hash decides.
    #[test]
    fn a_plain_layer_checked_by_its_reader_is_verified_once_and_still_fails_on_a_mismatch() {
        use crate::source::digest::{sha256_hex, VerifyingReader};
        let mut bytes = Vec::new();
        layer(&[b"usr/lib/libcudart.so.12"])
            .read_to_end(&mut bytes)
            .unwrap();
        let good = format!("sha256:{}", sha256_hex(&bytes));
        let bad = format!("sha256:{}", sha256_hex(b"another layer"));
        let opts = WalkOptions::default();
        let walk = |digest: &str, checked: Option<&str>| {
            let reader = VerifyingReader::new(
                io::Cursor::new(bytes.clone()),
                Digest::parse(digest).unwrap(),
            );
            walk_tar(
                Box::new(reader),
                0,
                "l0",
                Some(digest),
                checked,
                &crate::detect::Detectors::none(),
                &opts,
            )
        };
        let ok = walk(&good, Some(&good));
        assert!(ok.errors.is_empty(), "{:?}", ok.errors);
        assert_eq!(ok.verified_diff_id.as_deref(), Some(good.as_str()));
        assert_eq!(ok.entries().count(), 1);
        for checked in [Some(bad.as_str()), None] {
            let t = walk(&bad, checked);
            assert!(t.partial && t.verified_diff_id.is_none(), "{checked:?}");
            assert!(
                t.errors.iter().any(|e| e.kind == IssueKind::DigestMismatch),
                "{checked:?}: {:?}",
                t.errors
            );
        }
    }
}
