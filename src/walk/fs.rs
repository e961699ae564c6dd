//! `dir:` layers: a directory tree walked with the filesystem, never following links (they are
//! recorded as symlink entries and resolved inside the image later). `proc`, `sys` and `dev`
//! at the top are recorded but not descended into; special files are never opened. ELF files
//! are scanned by seeking to their headers (`GPULINT_STREAM_FILES=1` reads them whole, as
//! from a tar layer: the benchmark's baseline).

use super::content::{file_facts, file_facts_seekable, Sink};
use super::issue::{IssueKind, ScanIssue};
use super::{Change, ImagePath, LayerTree, Node, NodeKind, WalkOptions};
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
    // The tree is listed first; the files' contents are read after, on every core.
    let mut files = Vec::new();
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
        if !opts.entries.take() {
            tree.errors.push(ScanIssue::at(
                &name,
                &path,
                IssueKind::TooLarge,
                format!(
                    "{}; this and later entries are missing",
                    opts.entries.exceeded()
                ),
            ));
            tree.partial = true;
            break;
        }
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
            files.push(FileJob {
                path: path.clone(),
                change: tree.changes.len(),
                on_disk: entry.into_path(),
                size,
            });
            NodeKind::File { size, mode }
        } else {
            NodeKind::Other
        };
        tree.push_entry(
            path,
            Node {
                kind,
                layer: index,
                // Filled in once the files are read, below.
                facts: Vec::new(),
            },
        );
    }
    let found = crate::parallel::map_indexed(files.len(), opts.jobs(), |i| {
        scan_file(&files[i], &name, stream_files, detectors, opts)
    });
    for (job, found) in files.iter().zip(found) {
        // As when the files were read on this thread: a reader's panic is the walk's.
        let found = found.unwrap_or_else(|| panic!("reading {} panicked", job.path));
        tree.errors.extend(found.errors);
        tree.warnings.extend(found.warnings);
        if let Some(Change::Entry { node, .. }) = tree.changes.get_mut(job.change) {
            node.facts = found.facts;
        }
    }
    tree
}

/// A regular file whose content is read after the listing.
struct FileJob {
    path: ImagePath,
    /// Its entry's index in the layer's changes.
    change: usize,
    on_disk: std::path::PathBuf,
    size: u64,
}

/// What reading one file found.
#[derive(Default)]
struct FileFound {
    facts: Vec<super::Fact>,
    errors: Vec<ScanIssue>,
    warnings: Vec<String>,
}

fn scan_file(
    job: &FileJob,
    layer: &str,
    stream_files: bool,
    detectors: &Detectors,
    opts: &WalkOptions,
) -> FileFound {
    let mut found = FileFound::default();
    match std::fs::File::open(&job.on_disk) {
        Ok(f) => {
            let mut sink = Sink {
                layer,
                errors: &mut found.errors,
                warnings: &mut found.warnings,
            };
            found.facts = if stream_files {
                let mut r = std::io::BufReader::new(f);
                file_facts(&job.path, job.size, &mut r, detectors, opts, &mut sink)
            } else {
                file_facts_seekable(&job.path, job.size, &f, detectors, opts, &mut sink)
            };
        }
        Err(e) => found.errors.push(ScanIssue::at(
            layer,
            &job.path,
            IssueKind::Unreadable,
            e.to_string(),
        )),
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Files read on several threads give the tree one thread gives: the same entries, facts
    /// and errors, in the same order.
    #[test]
    fn files_read_on_several_threads_give_the_same_tree_as_one() {
        let root = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin/fatbin-format");
        let lib = root.path().join("usr/lib");
        std::fs::create_dir_all(&lib).unwrap();
        for e in std::fs::read_dir(&fixtures).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), lib.join(e.file_name())).unwrap();
        }
        // A malformed ELF among them: what it reports keeps its place.
        let head = std::fs::read(fixtures.join("fx_default.so")).unwrap();
        std::fs::write(lib.join("libcut.so"), &head[..2000]).unwrap();
        let detectors = crate::detect::detectors();
        let walk = |threads| {
            let opts = WalkOptions {
                threads: Some(threads),
                ..WalkOptions::default()
            };
            walk_dir(root.path(), 0, &detectors, &opts)
        };
        let json = |t: &LayerTree| serde_json::to_string(t).unwrap();
        let one = walk(1);
        assert!(
            json(&one).contains("sm_90a"),
            "the fixtures' facts are there"
        );
        assert!(
            one.errors
                .iter()
                .any(|e| e.to_string().contains("libcut.so"))
                || one.warnings.iter().any(|w| w.contains("libcut.so")),
            "the cut file is reported: {:?} {:?}",
            one.errors,
            one.warnings
        );
        for threads in [2, 3, 8] {
            assert_eq!(json(&walk(threads)), json(&one), "{threads} threads");
        }
    }

    /// A `dir:` layer records at most the image's entry budget: past it, a `too-large` issue
    /// at the first entry left out, and the layer is partial.
    #[test]
    fn a_directory_layer_stops_at_the_entry_budget() {
        let root = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(root.path().join(format!("f{i}")), "").unwrap();
        }
        let walk = |max| {
            let opts = WalkOptions {
                entries: crate::walk::EntryBudget::new(max),
                ..WalkOptions::default()
            };
            walk_dir(root.path(), 0, &crate::detect::Detectors::none(), &opts)
        };
        let cut = walk(4);
        assert!(cut.partial);
        assert_eq!(cut.entries().count(), 4);
        assert_eq!(cut.errors.len(), 1, "{:?}", cut.errors);
        assert_eq!(cut.errors[0].kind, IssueKind::TooLarge);
        assert!(cut.errors[0].message.contains("more than 4 entries"));
        let whole = walk(10);
        assert!(
            !whole.partial && whole.errors.is_empty(),
            "{:?}",
            whole.errors
        );
        assert_eq!(whole.entries().count(), 10);
    }
}
