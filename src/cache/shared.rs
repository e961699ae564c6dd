//! The layers of one run over many images ([`SharedLayers`]): each read once per run.

use crate::source::Layer;
use crate::walk::LayerTree;
use std::collections::HashMap;

/// Whether a walked tree may be stored for `layer`: a layer named by a diff_id only when the
/// walk hashed its content to exactly that diff_id.
pub(super) fn storable(layer: &Layer, tree: &LayerTree) -> bool {
    match &layer.diff_id {
        Some(d) => tree.verified_diff_id.as_deref() == Some(d.as_str()),
        None => true,
    }
}

/// The layers of one run over many images, by digest and diff_id: a base layer that several
/// images share is read once per run, even when the images are scanned at the same time and
/// with no disk cache (`--no-cache`, a read-only cache). Only a tree that could go to the
/// disk cache is shared (walked without errors, its content hashed to the diff_id it claims),
/// so an image cannot lend another its facts by naming the other's digest; otherwise each
/// image walks the layer itself.
#[derive(Debug, Default)]
pub struct SharedLayers {
    trees: std::sync::Mutex<HashMap<String, SharedTree>>,
    /// Entries of the trees held, against [`MAX_SHARED_ENTRIES`].
    held: std::sync::atomic::AtomicUsize,
    hits: std::sync::atomic::AtomicUsize,
    walked: std::sync::atomic::AtomicUsize,
    from_disk: std::sync::atomic::AtomicUsize,
}

/// The most file entries a run holds in shared trees (some hundred MB of memory: the base
/// layers of dozens of CUDA images). Past it, layers are not shared but walked (or loaded from
/// the disk cache) by each image, as without a run: memory stays bounded on any sweep.
pub const MAX_SHARED_ENTRIES: usize = 2_000_000;

/// The one walk of a layer: set once by whoever walked it first; `None` inside when that
/// walk's tree may not be shared.
type SharedTree = std::sync::Arc<std::sync::OnceLock<Option<LayerTree>>>;

/// What a run's [`SharedLayers`] saved: layers walked, taken from the disk cache, and taken
/// from another image of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedStats {
    pub walked: usize,
    pub disk_hits: usize,
    pub shared_hits: usize,
}

impl SharedLayers {
    pub fn new() -> SharedLayers {
        SharedLayers::default()
    }

    fn cell(&self, key: &str) -> SharedTree {
        let mut trees = self.trees.lock().unwrap_or_else(|e| e.into_inner());
        trees.entry(key.to_string()).or_default().clone()
    }

    /// The tree another image of the run already has for `key`, re-indexed to `index`.
    pub(super) fn get(&self, key: &str, index: usize) -> Option<LayerTree> {
        let cell = {
            let trees = self.trees.lock().unwrap_or_else(|e| e.into_inner());
            trees.get(key)?.clone()
        };
        let tree = cell.get()?.clone()?;
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(reindexed(tree, index))
    }

    /// Walk a layer unless another image of the run walks or walked it: concurrent callers
    /// for one key wait for the first walk. Returns the tree and whether it was walked here.
    pub(super) fn walk_once(
        &self,
        key: &str,
        layer: &Layer,
        index: usize,
        walk: impl Fn(&Layer, usize) -> LayerTree,
    ) -> (LayerTree, bool) {
        let cell = self.cell(key);
        let mut mine = None;
        let shared = cell.get_or_init(|| {
            let tree = walk(layer, index);
            let shareable = tree.errors.is_empty() && storable(layer, &tree) && self.hold(&tree);
            let copy = shareable.then(|| tree.clone());
            mine = Some(tree);
            copy
        });
        let counted = |c: &std::sync::atomic::AtomicUsize| {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        match (mine, shared) {
            (Some(tree), _) => {
                counted(&self.walked);
                (tree, true)
            }
            (None, Some(tree)) => {
                counted(&self.hits);
                (reindexed(tree.clone(), index), false)
            }
            // The first walk's tree may not be shared: this image reads its own copy.
            (None, None) => {
                counted(&self.walked);
                (walk(layer, index), true)
            }
        }
    }

    /// Whether the run may hold `tree` too (within [`MAX_SHARED_ENTRIES`]); counts it if so.
    fn hold(&self, tree: &LayerTree) -> bool {
        let n = tree.entries().count();
        self.held
            .fetch_update(
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
                |held| (held + n <= MAX_SHARED_ENTRIES).then_some(held + n),
            )
            .is_ok()
    }

    /// Keep a tree the disk cache gave, so the run's other images need not read it again.
    pub(super) fn keep(&self, key: &str, tree: &LayerTree) {
        if !self.hold(tree) {
            return;
        }
        let _ = self.cell(key).set(Some(tree.clone()));
        self.from_disk
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn stats(&self) -> SharedStats {
        let get = |c: &std::sync::atomic::AtomicUsize| c.load(std::sync::atomic::Ordering::Relaxed);
        SharedStats {
            walked: get(&self.walked),
            disk_hits: get(&self.from_disk),
            shared_hits: get(&self.hits),
        }
    }
}

/// A tree's nodes moved to layer position `index` (a shared layer may sit elsewhere in
/// another image).
fn reindexed(mut tree: LayerTree, index: usize) -> LayerTree {
    for node in tree.nodes_mut() {
        node.layer = index;
    }
    tree
}
