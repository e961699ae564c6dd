//! One streaming pass over each layer, then the layers squashed into the final filesystem.
//!
//! A layer walk yields a [`LayerTree`]: every entry's metadata, the facts detectors produced
//! for the files they asked for, and the layer's whiteouts / opaque directories. Squashing
//! applies the layer trees bottom-up into a [`FileTree`] that describes the image as a
//! container would see it. Symlinks and hardlinks are kept as entries (CUDA soname chains and
//! the dynamic loader depend on them) and resolved only inside the image.

mod content;
mod fs;
pub mod issue;

mod pipe;
mod tar;

pub use crate::vocab::ImagePath;
pub use content::{read_stats, ReadStats};
pub use issue::{IssueKind, ScanIssue};

use crate::detect::{Detectors, Fact};
use crate::source::{Layer, LayerContent};
use serde::{Deserialize, Serialize};
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
    /// A hardlink to another path of the same or an earlier layer.
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

/// What one layer contains, before squashing.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LayerTree {
    pub entries: BTreeMap<ImagePath, Node>,
    /// `.wh.<name>` entries: paths deleted by this layer.
    pub whiteouts: Vec<ImagePath>,
    /// `.wh..wh..opq` entries: directories whose lower-layer content this layer hides.
    pub opaque_dirs: Vec<ImagePath>,
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
}

/// Links deeper than this are treated as loops (Linux's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

impl FileTree {
    /// Apply layers bottom-up: opaque dirs and whiteouts of a layer remove lower content
    /// first, then its entries are written over.
    pub fn squash(layers: impl IntoIterator<Item = LayerTree>) -> FileTree {
        let mut tree = FileTree::default();
        for layer in layers {
            for dir in &layer.opaque_dirs {
                tree.remove_below(dir, false);
            }
            for w in &layer.whiteouts {
                tree.remove_below(w, true);
            }
            for (p, n) in layer.entries {
                // A non-directory replacing a directory hides everything below it.
                if !matches!(n.kind, NodeKind::Dir { .. }) {
                    if let Some(old) = tree.nodes.get(&p) {
                        if matches!(old.kind, NodeKind::Dir { .. }) {
                            tree.remove_below(&p, false);
                        }
                    }
                }
                tree.nodes.insert(p, n);
            }
        }
        tree
    }

    /// [`FileTree::squash`] over borrowed layer trees (kept, e.g. for a per-layer cache).
    pub fn squash_refs<'a>(layers: impl IntoIterator<Item = &'a LayerTree>) -> FileTree {
        let mut tree = FileTree::default();
        for layer in layers {
            tree.apply(layer);
        }
        tree
    }

    fn apply(&mut self, layer: &LayerTree) {
        for dir in &layer.opaque_dirs {
            self.remove_below(dir, false);
        }
        for w in &layer.whiteouts {
            self.remove_below(w, true);
        }
        for (p, n) in &layer.entries {
            if !matches!(n.kind, NodeKind::Dir { .. }) {
                if let Some(old) = self.nodes.get(p) {
                    if matches!(old.kind, NodeKind::Dir { .. }) {
                        self.remove_below(p, false);
                    }
                }
            }
            self.nodes.insert(p.clone(), n.clone());
        }
    }

    /// Remove everything strictly below `dir`, and `dir` itself when `inclusive`.
    fn remove_below(&mut self, dir: &ImagePath, inclusive: bool) {
        let keys: Vec<ImagePath> = self
            .nodes
            .range(dir.clone()..)
            .take_while(|(k, _)| k.as_str().starts_with(dir.as_str()))
            .filter(|(k, _)| k.starts_with(dir) && (inclusive || *k != dir))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.nodes.remove(&k);
        }
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
        l0.entries.insert(p("a/x"), file(0));
        l0.entries.insert(p("a/y"), file(0));
        l0.entries.insert(p("b/z"), file(0));
        l0.entries.insert(p("ab"), file(0));
        let mut l1 = LayerTree::default();
        l1.whiteouts.push(p("a/x"));
        l1.opaque_dirs.push(p("b"));
        l1.entries.insert(p("b/new"), file(1));
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
        l0.entries.insert(
            p("usr/local/cuda-12.1/lib64/libcudart.so.12.1.105"),
            file(0),
        );
        l0.entries.insert(
            p("usr/local/cuda-12.1/lib64/libcudart.so.12"),
            link("libcudart.so.12.1.105", 0),
        );
        l0.entries
            .insert(p("usr/local/cuda"), link("/usr/local/cuda-12.1", 0));
        l0.entries.insert(p("loop"), link("loop", 0));
        l0.entries
            .insert(p("escape"), link("../../../../etc/shadow", 0));
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
}
