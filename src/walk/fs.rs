//! `dir:` layers: a directory tree walked with the filesystem, never following links (they are
//! recorded as symlink entries and resolved inside the image later). `proc`, `sys` and `dev`
//! at the top are recorded but not descended into; special files are never opened. ELF files
//! are scanned by seeking to their headers (`GPULINT_STREAM_FILES=1` reads them whole, as
//! from a tar layer: the benchmark's baseline).

use super::content::{file_facts, file_facts_seekable, Sink};
use super::issue::{IssueKind, ScanIssue};
use super::{ImagePath, LayerTree, Node, NodeKind, WalkOptions};
use crate::detect::Detectors;
use crate::vocab::name_from_bytes;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const PSEUDO_FS: &[&str] = &["proc", "sys", "dev"];

pub(crate) fn walk_dir(
    root: &Path,
    index: usize,
    detectors: &Detectors,
    opts: &WalkOptions,
) -> LayerTree {
    let name = format!("dir:{}", root.display());
    let stream_files = std::env::var_os("GPULINT_STREAM_FILES").is_some_and(|v| v == "1");
    let mut tree = LayerTree::default();
    let mut it = walkdir::WalkDir::new(root).follow_links(false).into_iter();
    while let Some(res) = it.next() {
        let entry = match res {
            Ok(e) => e,
            Err(e) => {
                let at = e
                    .path()
                    .and_then(|p| p.strip_prefix(root).ok())
                    .map(|p| format!("/{}", name_from_bytes(p.as_os_str().as_bytes())))
                    .unwrap_or_default();
                tree.errors.push(ScanIssue::at(
                    &name,
                    at,
                    IssueKind::Unreadable,
                    e.to_string(),
                ));
                if e.depth() == 0 {
                    tree.partial = true;
                }
                continue;
            }
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .map(|p| name_from_bytes(p.as_os_str().as_bytes()))
            .unwrap_or_default();
        let path = match ImagePath::new(&rel) {
            Ok(p) if p.is_root() => continue,
            Ok(p) => p,
            Err(e) => {
                tree.errors.push(ScanIssue::at(
                    &name,
                    &rel,
                    IssueKind::BadEntry,
                    e.to_string(),
                ));
                continue;
            }
        };
        let ft = entry.file_type();
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(e) => {
                tree.errors.push(ScanIssue::at(
                    &name,
                    &path,
                    IssueKind::Unreadable,
                    e.to_string(),
                ));
                continue;
            }
        };
        let mode = mode_of(&meta);
        let mut facts = Vec::new();
        let kind = if ft.is_symlink() {
            match std::fs::read_link(entry.path()) {
                Ok(t) => NodeKind::Symlink {
                    target: name_from_bytes(t.as_os_str().as_bytes()),
                },
                Err(e) => {
                    tree.errors.push(ScanIssue::at(
                        &name,
                        &path,
                        IssueKind::Unreadable,
                        e.to_string(),
                    ));
                    continue;
                }
            }
        } else if ft.is_dir() {
            if entry.depth() == 1 && PSEUDO_FS.contains(&path.as_str()) {
                it.skip_current_dir();
            }
            NodeKind::Dir { mode }
        } else if ft.is_file() {
            let size = meta.len();
            match std::fs::File::open(entry.path()) {
                Ok(f) => {
                    let mut sink = Sink {
                        layer: &name,
                        errors: &mut tree.errors,
                        warnings: &mut tree.warnings,
                    };
                    facts = if stream_files {
                        let mut r = std::io::BufReader::new(f);
                        file_facts(&path, size, &mut r, detectors, opts, &mut sink)
                    } else {
                        file_facts_seekable(&path, size, &f, detectors, opts, &mut sink)
                    };
                }
                Err(e) => tree.errors.push(ScanIssue::at(
                    &name,
                    &path,
                    IssueKind::Unreadable,
                    e.to_string(),
                )),
            }
            NodeKind::File { size, mode }
        } else {
            NodeKind::Other
        };
        tree.entries.insert(
            path,
            Node {
                kind,
                layer: index,
                facts,
            },
        );
    }
    tree
}

#[cfg(unix)]
fn mode_of(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(m: &std::fs::Metadata) -> u32 {
    if m.is_dir() {
        0o755
    } else {
        0o644
    }
}
