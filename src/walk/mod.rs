//! One streaming pass over each layer, then the layers squashed into the final filesystem.
//!
//! A layer walk yields a [`LayerTree`]: every entry's metadata, the facts detectors produced
//! for the files they asked for, and the layer's whiteouts / opaque directories, in tar
//! order. Squashing (`squash.rs`) applies them bottom-up, as containerd and umoci unpack,
//! into a [`FileTree`] that describes the image as a container would see it. Symlinks are
//! kept as entries (CUDA soname chains and the dynamic loader depend on them) and resolved
//! only inside the image; a hard link is resolved when applied, to the content its target
//! has then, and kept as a [`NodeKind::Hardlink`] to one surviving name of that content.

mod content;
mod fs;
pub mod issue;

mod pipe;
mod squash;
mod tar;

pub use crate::vocab::ImagePath;
pub use content::{read_stats, ReadStats};
pub use issue::{IssueKind, ScanIssue};

use crate::detect::{Detectors, Fact};
use crate::source::{Layer, LayerContent};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum NodeKind {
    File {
        size: u64,
        mode: u32,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: String,
    },
    /// A hardlink: in a layer tree, as the tar names its target; in the squashed tree, to
    /// the one name of the same content that holds it (always a regular file).
    Hardlink {
        target: ImagePath,
    },
    Other,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Node {
    pub kind: NodeKind,
    /// Index of the layer that last wrote this path.
    pub layer: usize,
    /// What detectors found in this file's content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<Fact>,
}

/// One change a layer makes, in the order its tar stream gives them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "lowercase")]
pub enum Change {
    /// A tar entry: written at `path` (after the directory part is resolved in the image).
    Entry { path: ImagePath, node: Node },
    /// A `.wh.<name>` entry: `path`, as lower layers left it, is deleted.
    Whiteout { path: ImagePath },
    /// A `.wh..wh..opq` entry: what lower layers put below the directory `path` is hidden.
    Opaque { path: ImagePath },
}

/// What one layer contains, before squashing.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LayerTree {
    /// Entries, whiteouts and opaque markers in tar order. Order matters where a runtime's
    /// unpack depends on it: a hard link shares the content its target has when the link is
    /// applied, so a name may come twice and the first content still be in use.
    pub changes: Vec<Change>,
    /// Problems met while reading the layer (corrupt stream, bad path, malformed file):
    /// each names the layer and the in-image path. The scan goes on past them.
    pub errors: Vec<ScanIssue>,
    /// True when the layer could not be read to its end: entries after the failure point
    /// are missing (the ones read before it are kept).
    #[serde(default)]
    pub partial: bool,
    /// The diff_id the walk hashed the uncompressed stream to, when it matched the one the
    /// image config names: what makes the tree safe to cache under that diff_id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_diff_id: Option<String>,
    /// Notes that do not make the result partial (e.g. a file larger than a detector reads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The most entries (files, directories, links, whiteouts) the layers of one image may
/// record together. An entry costs about 250 bytes of memory from the walk to the squashed
/// tree (measured: 1 M empty files, 248 MB), whatever its size in the layer (a 512-byte tar
/// header; ~100 M of them fit in a 0.8 GB gzip blob), so this bounds an image's entries to
/// about 1 GB. Real images hold well under a million.
pub const MAX_IMAGE_ENTRIES: usize = 4_000_000;

/// The entries one image's layers may still record, shared by the walks of its layers (which
/// run in parallel). A layer past it stops there, as over any other bound: a `GL000`, the
/// layer not read whole.
#[derive(Debug, Clone)]
pub struct EntryBudget {
    left: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    max: usize,
}

impl EntryBudget {
    pub fn new(max: usize) -> EntryBudget {
        EntryBudget {
            left: std::sync::Arc::new(max.into()),
            max,
        }
    }

    /// Take one entry; false once the image has recorded `max` of them.
    pub fn take(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.left
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Why a layer stopped, for its `GL000`.
    pub fn exceeded(&self) -> String {
        format!("more than {} entries in the image", self.max)
    }
}

impl LayerTree {
    /// Record an entry after the changes before it.
    pub fn push_entry(&mut self, path: ImagePath, node: Node) {
        self.changes.push(Change::Entry { path, node });
    }

    /// Every entry, in tar order (a path written twice comes twice).
    pub fn entries(&self) -> impl Iterator<Item = (&ImagePath, &Node)> {
        self.changes.iter().filter_map(|c| match c {
            Change::Entry { path, node } => Some((path, node)),
            _ => None,
        })
    }

    /// The last entry written at `path` in this layer.
    pub fn entry(&self, path: &ImagePath) -> Option<&Node> {
        self.entries()
            .filter(|(p, _)| *p == path)
            .map(|(_, n)| n)
            .last()
    }

    /// Every entry's node, to re-index a tree read from the cache.
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.changes.iter_mut().filter_map(|c| match c {
            Change::Entry { node, .. } => Some(node),
            _ => None,
        })
    }

    /// The paths this layer's `.wh.` entries delete, in tar order.
    pub fn whiteouts(&self) -> Vec<&ImagePath> {
        self.changes
            .iter()
            .filter_map(|c| match c {
                Change::Whiteout { path } => Some(path),
                _ => None,
            })
            .collect()
    }

    /// The directories this layer marks opaque, in tar order.
    pub fn opaque_dirs(&self) -> Vec<&ImagePath> {
        self.changes
            .iter()
            .filter_map(|c| match c {
                Change::Opaque { path } => Some(path),
                _ => None,
            })
            .collect()
    }
}

/// How layers are walked.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Most (decompressed) bytes read from one layer. A stream going past it is cut off there
    /// and the layer marked partial, so a decompression bomb costs time, never memory.
    pub max_layer_bytes: u64,
    /// Sniff every regular file of at least 64 bytes for the ELF magic and scan ELF files.
    pub scan_elf: bool,
    /// Layers walked at once (and files of a `dir:` layer read at once); `None` = the
    /// machine's available parallelism.
    pub threads: Option<usize>,
    /// The image's entry budget ([`MAX_IMAGE_ENTRIES`]); [`WalkOptions::for_one_image`] gives
    /// each image a budget of its own.
    pub entries: EntryBudget,
}

impl WalkOptions {
    /// These options with a fresh entry budget of the same size: one per image, shared by
    /// its layers' walks.
    pub fn for_one_image(&self) -> WalkOptions {
        WalkOptions {
            entries: EntryBudget::new(self.entries.max),
            ..self.clone()
        }
    }

    /// `threads`, or the machine's available parallelism when it is not set.
    pub fn jobs(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get()))
    }
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            max_layer_bytes: 256 << 30,
            scan_elf: true,
            threads: None,
            entries: EntryBudget::new(MAX_IMAGE_ENTRIES),
        }
    }
}

/// One streaming pass over one layer. Never fails: problems are in the tree's `errors`.
pub fn walk_layer(
    layer: &Layer,
    index: usize,
    detectors: &Detectors,
    opts: &WalkOptions,
) -> LayerTree {
    let name = layer.display_name(index);
    match &layer.content {
        LayerContent::Tar(blob) => match blob.open() {
            Ok(r) => tar::walk_tar(
                r,
                index,
                &name,
                layer.diff_id.as_deref(),
                blob.checked_digest().as_deref(),
                detectors,
                opts,
            ),
            Err(e) => LayerTree {
                errors: vec![ScanIssue::layer(
                    &name,
                    issue::stream_error_kind(e.as_ref()),
                    format!("cannot open: {e:#}"),
                )],
                partial: true,
                ..LayerTree::default()
            },
        },
        LayerContent::Dir(root) => fs::walk_dir(root, index, detectors, opts),
    }
}

/// The final filesystem of an image.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileTree {
    pub nodes: BTreeMap<ImagePath, Node>,
    /// Entries a runtime's unpack would fail on (a hard link to a missing name, an entry
    /// below a file, a symlink loop in a directory part): each was skipped, so the tree is
    /// incomplete, as the runtime would refuse the image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ScanIssue>,
}

/// Links deeper than this are treated as loops (Linux's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

impl FileTree {
    /// Apply layers bottom-up, one change at a time in tar order, the way containerd and
    /// umoci unpack them (the rules are in `walk/squash.rs`). Problems are named `layer #N`.
    pub fn squash(layers: impl IntoIterator<Item = LayerTree>) -> FileTree {
        FileTree::squash_named(layers, |i| format!("layer #{i}"))
    }

    /// [`FileTree::squash`], naming the layer of each problem with `name(index)`.
    pub fn squash_named(
        layers: impl IntoIterator<Item = LayerTree>,
        name: impl Fn(usize) -> String,
    ) -> FileTree {
        let mut s = squash::Squash::default();
        for (i, layer) in layers.into_iter().enumerate() {
            s.apply_layer(&name(i), layer.changes.into_iter().map(Cow::Owned));
        }
        s.finish()
    }

    /// [`FileTree::squash`] over borrowed layer trees (kept, e.g. for a per-layer cache).
    pub fn squash_refs<'a>(layers: impl IntoIterator<Item = &'a LayerTree>) -> FileTree {
        FileTree::squash_refs_named(layers, |i| format!("layer #{i}"))
    }

    /// [`FileTree::squash_refs`], naming the layer of each problem with `name(index)`.
    pub fn squash_refs_named<'a>(
        layers: impl IntoIterator<Item = &'a LayerTree>,
        name: impl Fn(usize) -> String,
    ) -> FileTree {
        let mut s = squash::Squash::default();
        for (i, layer) in layers.into_iter().enumerate() {
            s.apply_layer(&name(i), layer.changes.iter().map(Cow::Borrowed));
        }
        s.finish()
    }

    pub fn get(&self, p: &ImagePath) -> Option<&Node> {
        self.nodes.get(p)
    }

    /// Follow symlinks (in every component) and hardlinks to the node they end at.
    /// Returns the final path and node, or None for dangling links and loops. Never leaves
    /// the image: absolute targets and `..` are resolved against the image root.
    pub fn resolve(&self, p: &ImagePath) -> Option<(ImagePath, &Node)> {
        let mut hops = 0;
        let resolved = self.resolve_dirs(p, &mut hops)?;
        self.resolve_final(resolved, &mut hops)
    }

    fn resolve_final(&self, mut p: ImagePath, hops: &mut usize) -> Option<(ImagePath, &Node)> {
        loop {
            let node = self.nodes.get(&p)?;
            match &node.kind {
                NodeKind::Symlink { target } => {
                    *hops += 1;
                    if *hops > MAX_LINK_HOPS {
                        return None;
                    }
                    let next = p.resolve_link(target);
                    p = self.resolve_dirs(&next, hops)?;
                }
                NodeKind::Hardlink { target } => {
                    *hops += 1;
                    if *hops > MAX_LINK_HOPS {
                        return None;
                    }
                    p = target.clone();
                }
                _ => return Some((p, node)),
            }
        }
    }

    /// Follow a link used as a directory component. Its target may be an implicit directory
    /// (tars often carry `a/b/file` without an `a/b` entry).
    fn resolve_dir_link(&self, mut p: ImagePath, hops: &mut usize) -> Option<ImagePath> {
        loop {
            match self.nodes.get(&p).map(|n| &n.kind) {
                Some(NodeKind::Symlink { target }) => {
                    *hops += 1;
                    if *hops > MAX_LINK_HOPS {
                        return None;
                    }
                    let next = p.resolve_link(target);
                    p = self.resolve_dirs(&next, hops)?;
                }
                Some(NodeKind::Hardlink { .. }) | Some(NodeKind::File { .. }) => return None,
                Some(NodeKind::Dir { .. }) => return Some(p),
                Some(NodeKind::Other) => return None,
                None => return self.is_implicit_dir(&p).then_some(p),
            }
        }
    }

    /// Follow a path that names a directory to the directory it ends at (links in every
    /// component; the target may be an implicit directory). None when it is not a directory.
    pub fn resolve_dir(&self, p: &ImagePath) -> Option<ImagePath> {
        let mut hops = 0;
        let p = self.resolve_dirs(p, &mut hops)?;
        self.resolve_dir_link(p, &mut hops)
    }

    /// A directory with no entry of its own but with entries below it.
    pub fn is_implicit_dir(&self, p: &ImagePath) -> bool {
        let prefix = format!("{}/", p.as_str());
        self.nodes
            .range(p.clone()..)
            .take_while(|(k, _)| k.as_str().starts_with(p.as_str()))
            .any(|(k, _)| k.as_str().starts_with(&prefix))
    }

    /// Resolve symlinks in the directory components of `p` (not the last component).
    fn resolve_dirs(&self, p: &ImagePath, hops: &mut usize) -> Option<ImagePath> {
        let comps: Vec<&str> = p.components().collect();
        let mut cur = ImagePath::root();
        for (i, c) in comps.iter().enumerate() {
            let next = cur.join(c).ok()?;
            if i + 1 == comps.len() {
                return Some(next);
            }
            cur = match self.nodes.get(&next).map(|n| &n.kind) {
                Some(NodeKind::Symlink { .. }) | Some(NodeKind::Hardlink { .. }) => {
                    self.resolve_dir_link(next, hops)?
                }
                // Directories are often implicit in tars (no entry of their own).
                _ => next,
            };
        }
        Some(cur)
    }

    /// Direct children of a directory (after resolving `dir` itself).
    pub fn children(&self, dir: &ImagePath) -> Vec<(&ImagePath, &Node)> {
        self.nodes
            .iter()
            .filter(|(k, _)| k.parent().as_ref() == Some(dir) && !k.is_root())
            .collect()
    }

    /// Every regular file with its node.
    pub fn files(&self) -> impl Iterator<Item = (&ImagePath, &Node)> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n.kind, NodeKind::File { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(layer: usize) -> Node {
        Node {
            kind: NodeKind::File {
                size: 1,
                mode: 0o644,
            },
            layer,
            facts: vec![],
        }
    }
    fn link(t: &str, layer: usize) -> Node {
        Node {
            kind: NodeKind::Symlink { target: t.into() },
            layer,
            facts: vec![],
        }
    }
    fn p(s: &str) -> ImagePath {
        ImagePath::new(s).unwrap()
    }

    #[test]
    fn whiteouts_and_opaque_dirs_apply_in_order() {
        let mut l0 = LayerTree::default();
        l0.push_entry(p("a/x"), file(0));
        l0.push_entry(p("a/y"), file(0));
        l0.push_entry(p("b/z"), file(0));
        l0.push_entry(p("ab"), file(0));
        let mut l1 = LayerTree::default();
        l1.changes.push(Change::Whiteout { path: p("a/x") });
        l1.changes.push(Change::Opaque { path: p("b") });
        l1.push_entry(p("b/new"), file(1));
        let t = FileTree::squash([l0, l1]);
        assert!(t.get(&p("a/x")).is_none());
        assert!(t.get(&p("a/y")).is_some());
        assert!(t.get(&p("b/z")).is_none());
        assert!(t.get(&p("b/new")).is_some());
        assert!(
            t.get(&p("ab")).is_some(),
            "prefix of another name must survive"
        );
    }

    #[test]
    fn links_resolve_through_dirs_and_chains() {
        let mut l0 = LayerTree::default();
        l0.push_entry(
            p("usr/local/cuda-12.1/lib64/libcudart.so.12.1.105"),
            file(0),
        );
        l0.push_entry(
            p("usr/local/cuda-12.1/lib64/libcudart.so.12"),
            link("libcudart.so.12.1.105", 0),
        );
        l0.push_entry(p("usr/local/cuda"), link("/usr/local/cuda-12.1", 0));
        l0.push_entry(p("loop"), link("loop", 0));
        l0.push_entry(p("escape"), link("../../../../etc/shadow", 0));
        let t = FileTree::squash([l0]);
        let (rp, _) = t
            .resolve(&p("usr/local/cuda/lib64/libcudart.so.12"))
            .unwrap();
        assert_eq!(
            rp.as_str(),
            "usr/local/cuda-12.1/lib64/libcudart.so.12.1.105"
        );
        assert!(t.resolve(&p("loop")).is_none());
        assert!(
            t.resolve(&p("escape")).is_none(),
            "resolves to /etc/shadow inside the image, absent"
        );
    }

    /// A file written where a directory was (one with no entry of its own, as tars often
    /// have) replaces it and everything in it, as the unpackers' RemoveAll does.
    #[test]
    fn a_file_over_an_implicit_directory_removes_what_it_held() {
        let mut l0 = LayerTree::default();
        l0.push_entry(p("a/b"), file(0));
        let mut l1 = LayerTree::default();
        l1.push_entry(p("a"), file(1));
        let t = FileTree::squash([l0, l1]);
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert!(matches!(
            t.get(&p("a")).map(|n| &n.kind),
            Some(NodeKind::File { .. })
        ));
        assert!(t.get(&p("a/b")).is_none());
    }

    /// Where an unpack fails, the entry is skipped and the failure recorded (GL000): an entry
    /// below a file, and a directory part through a symlink loop.
    #[test]
    fn entries_a_runtime_cannot_unpack_are_recorded() {
        let mut l0 = LayerTree::default();
        l0.push_entry(p("f"), file(0));
        l0.push_entry(p("x"), link("y", 0));
        l0.push_entry(p("y"), link("x", 0));
        let mut l1 = LayerTree::default();
        l1.push_entry(p("f/g"), file(1));
        l1.push_entry(p("x/h"), file(1));
        let t = FileTree::squash([l0, l1]);
        assert!(t.get(&p("f/g")).is_none() && t.get(&p("x/h")).is_none());
        assert_eq!(t.errors.len(), 2, "{:?}", t.errors);
        assert!(t.errors.iter().all(|e| e.kind == IssueKind::BadEntry));
        assert!(
            t.errors[0].message.contains("/f is not a directory"),
            "{}",
            t.errors[0]
        );
        assert!(
            t.errors[1].message.contains("more than 255"),
            "{}",
            t.errors[1]
        );
        assert_eq!(t.errors[1].layer.as_deref(), Some("layer #1"));
    }

    /// A whiteout removes what lower layers left, never what its own layer wrote before it
    /// (umoci's upper paths).
    #[test]
    fn a_whiteout_keeps_what_its_own_layer_wrote() {
        let mut l0 = LayerTree::default();
        l0.push_entry(p("d/old"), file(0));
        let mut l1 = LayerTree::default();
        l1.push_entry(p("d/new"), file(1));
        l1.changes.push(Change::Whiteout { path: p("d") });
        let t = FileTree::squash([l0, l1]);
        assert!(t.get(&p("d/new")).is_some());
        assert!(t.get(&p("d/old")).is_none());
    }
}
