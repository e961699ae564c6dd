//! Layer-result cache: one [`LayerTree`] per layer, as JSON, keyed by the layer's content
//! digest and the analyzer version (gpulint's version plus every detector's), so a second
//! scan of an image, or of a sibling sharing base layers, walks only the layers it has not
//! seen. For a registry image a fully cached scan fetches only the manifest and config:
//! layers are opened lazily, and only on a miss.
//!
//! Key: the layer's blob digest *and* its diff_id (uncompressed digest), as the image names
//! them. An entry is written only after the walk hashed the uncompressed stream to that
//! diff_id (`LayerTree::verified_diff_id`) while the source checked the blob digest, and is
//! read back only when the entry says so too. So an image can neither store its layer's facts
//! under another image's layer (a lying diff_id fails the walk, a lying blob digest fails the
//! source), nor borrow another layer's facts by claiming its diff_id alone (the blob digest,
//! which names the stored bytes, is part of the key). The price: a daemon export (blob digest =
//! diff_id) and a registry's gzip blob of the same layer are two entries.
//!
//! Layout: `<dir>/layers/<analyzer-hash>/<key>.json`. Writes go to a temp file in the
//! same directory and are renamed into place, so readers see a whole entry or none, and
//! concurrent gpulint processes need no lock: two writers of one key write the same bytes.
//! An unreadable entry is a miss, and so is one that is not a regular file (a symlink, a
//! FIFO, a device) or is larger than [`MAX_ENTRY_BYTES`]. Trees that recorded errors are not
//! cached (the error may have been a network failure, not the layer).

use crate::progress::Progress;
use crate::source::{Image, Layer, LayerContent};
use crate::walk::LayerTree;
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

const LAYERS_DIR: &str = "layers";
const TAG_NAME: &str = "CACHEDIR.TAG";
const TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by gpulint.\n";

/// `$XDG_CACHE_HOME/gpulint`, else `~/.cache/gpulint`.
pub fn default_dir() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        let p = PathBuf::from(x);
        if p.is_absolute() {
            return Ok(p.join("gpulint"));
        }
    }
    let home = crate::source::live::home_dir()
        .context("no cache directory: neither XDG_CACHE_HOME nor HOME is set (use --cache-dir or --no-cache)")?;
    Ok(home.join(".cache").join("gpulint"))
}

/// Remove every cached layer result under `dir` (what `gpulint cache clean` does). Only
/// gpulint's own entries are removed, never other files a user put there. Returns how many
/// entries were removed.
pub fn cache_clean(dir: &Path) -> anyhow::Result<u64> {
    let layers = dir.join(LAYERS_DIR);
    if !layers.exists() {
        return Ok(0);
    }
    let mut removed = 0;
    for version in
        std::fs::read_dir(&layers).with_context(|| format!("reading {}", layers.display()))?
    {
        let version = version?.path();
        if !version.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&version)? {
            let p = entry?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".json") || name.starts_with(".tmp") {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
                removed += 1;
            }
        }
        let _ = std::fs::remove_dir(&version);
    }
    let _ = std::fs::remove_dir(&layers);
    Ok(removed)
}

/// A digest usable as a file name: `sha256:<64 hex>` (or another algorithm with a hex
/// value). Anything else (a path, `..`) is refused: digests come from untrusted images.
fn key_file_name(key: &str) -> Option<String> {
    let (alg, hex) = key.split_once(':')?;
    let alg_ok = !alg.is_empty()
        && alg
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let hex_ok = hex.len() >= 32 && hex.len() <= 128 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    (alg_ok && hex_ok).then(|| format!("{alg}-{}.json", hex.to_ascii_lowercase()))
}

/// Largest cache entry read back: far above any real layer's facts (a CUDA layer's tree is a
/// few MB of JSON), small enough that a planted huge file costs no memory.
pub const MAX_ENTRY_BYTES: u64 = 256 << 20;

/// The cache key of a layer: `<blob digest>+<diff_id>`, both required (a `dir:` layer has
/// neither and is not cached).
pub fn layer_key(layer: &Layer) -> Option<String> {
    let digest = layer.digest.as_deref()?;
    let diff_id = layer.diff_id.as_deref()?;
    Some(format!("{digest}+{diff_id}"))
}

/// What makes two listings of a layer the same walk: its digest and the diff_id it is
/// checked against. None (each listing walked) without a digest.
fn repeat_key(layer: &Layer) -> Option<String> {
    let digest = layer.digest.as_deref()?;
    Some(format!(
        "{digest}+{}",
        layer.diff_id.as_deref().unwrap_or("")
    ))
}

/// Whether a walked tree may be stored for `layer`: a layer named by a diff_id only when the
/// walk hashed its content to exactly that diff_id.
fn storable(layer: &Layer, tree: &LayerTree) -> bool {
    match &layer.diff_id {
        Some(d) => tree.verified_diff_id.as_deref() == Some(d.as_str()),
        None => true,
    }
}

#[derive(Debug, Clone)]
pub struct LayerCache {
    dir: PathBuf,
}

impl LayerCache {
    pub fn new(dir: impl Into<PathBuf>) -> LayerCache {
        LayerCache { dir: dir.into() }
    }

    /// The cache the command line asks for: None with `--no-cache`, else `--cache-dir` or
    /// the default directory.
    pub fn from_flags(no_cache: bool, cache_dir: Option<&Path>) -> anyhow::Result<Option<Self>> {
        if no_cache {
            return Ok(None);
        }
        let dir = match cache_dir {
            Some(d) => d.to_path_buf(),
            None => default_dir()?,
        };
        Ok(Some(LayerCache::new(dir)))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry_path(&self, key: &str, analyzer: &str) -> Option<PathBuf> {
        // Each `+`-separated digest must be a plain digest (they come from untrusted images).
        let parts = key
            .split('+')
            .map(|k| key_file_name(k).map(|n| n.trim_end_matches(".json").to_string()))
            .collect::<Option<Vec<_>>>()?;
        let name = format!("{}.json", parts.join("+"));
        let v = hex::encode(Sha256::digest(analyzer.as_bytes()));
        Some(self.dir.join(LAYERS_DIR).join(&v[..16]).join(name))
    }

    /// The cached tree for a layer, re-indexed to `index` (a shared base layer may sit at a
    /// different position in another image).
    pub fn get(&self, key: &str, analyzer: &str, index: usize) -> Option<LayerTree> {
        let path = self.entry_path(key, analyzer)?;
        let bytes = read_entry(&path)?;
        let mut tree: LayerTree = serde_json::from_slice(&bytes).ok()?;
        // An entry under a diff_id must say it was verified against that diff_id (a file
        // copied or planted under another name is a miss), and must carry no errors.
        let diff_id = key.rsplit('+').next();
        if !tree.errors.is_empty()
            || tree
                .verified_diff_id
                .as_deref()
                .is_some_and(|d| Some(d) != diff_id)
        {
            return None;
        }
        for node in tree.nodes_mut() {
            node.layer = index;
        }
        Some(tree)
    }

    /// Store a tree atomically. Trees with errors are skipped (returns Ok(false)).
    pub fn put(&self, key: &str, analyzer: &str, tree: &LayerTree) -> anyhow::Result<bool> {
        if !tree.errors.is_empty() {
            return Ok(false);
        }
        let Some(path) = self.entry_path(key, analyzer) else {
            return Ok(false);
        };
        let parent = path.parent().context("cache entry has no parent")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating cache directory {}", parent.display()))?;
        let tag = self.dir.join(TAG_NAME);
        if !tag.exists() {
            let _ = std::fs::write(&tag, TAG);
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp")
            .tempfile_in(parent)
            .with_context(|| format!("creating a temp file in {}", parent.display()))?;
        serde_json::to_writer(std::io::BufWriter::new(tmp.as_file_mut()), tree)?;
        tmp.as_file_mut().flush()?;
        tmp.persist(&path)
            .with_context(|| format!("writing cache entry {}", path.display()))?;
        Ok(true)
    }
}

/// The bytes of a cache entry: only a regular file (never through a symlink, never a FIFO or
/// device) of at most [`MAX_ENTRY_BYTES`]; anything else is a miss.
fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let file = crate::io_util::open_regular(path, MAX_ENTRY_BYTES).ok()?;
    let mut bytes = Vec::new();
    use std::io::Read;
    file.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_ENTRY_BYTES).then_some(bytes)
}

/// Per-layer outcome counts of one [`scan_layers`] run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub cache_hits: usize,
    pub walked: usize,
}

/// Walk every layer of `image` (or take it from the cache), up to `jobs` at once, and return
/// the trees bottom first. `walk` is the walker (`walk_layer` with the detectors bound);
/// `analyzer` is the analyzer version string that keys the cache. Registry and daemon layers
/// are fetched only here, on a cache miss, so parallel walking is parallel downloading.
pub fn scan_layers<F>(
    image: &Image,
    cache: Option<&LayerCache>,
    analyzer: &str,
    jobs: usize,
    progress: &Progress,
    walk: F,
) -> (Vec<LayerTree>, ScanStats)
where
    F: Fn(&Layer, usize) -> LayerTree + Sync,
{
    let n = image.layers.len();
    let mut results: Vec<Option<LayerTree>> = vec![None; n];
    let mut stats = ScanStats::default();
    progress.set_layers(n as u64);
    let mut todo = Vec::new();
    // A digest listed again is walked once: (index, index of its first listing).
    let mut first_of: HashMap<String, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    for (i, layer) in image.layers.iter().enumerate() {
        if let Some(key) = repeat_key(layer) {
            match first_of.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    repeats.push((i, *e.get()));
                    continue;
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
        let hit = cache
            .zip(layer_key(layer))
            .and_then(|(c, k)| c.get(&k, analyzer, i))
            .filter(|t| storable(layer, t));
        match hit {
            Some(tree) => {
                results[i] = Some(tree);
                stats.cache_hits += 1;
                progress.layer_done(&layer.display_name(i));
            }
            None => {
                progress.add_download_total(layer.size.unwrap_or(0));
                todo.push(i);
            }
        }
    }
    stats.walked = todo.len();
    // Layers that share one compressed stream (a compressed archive's members) are walked
    // one after another in stream order: one pass over the stream for all of them.
    let offset = |i: usize| match &image.layers[i].content {
        LayerContent::Tar(blob) => blob.stream_offset(),
        LayerContent::Dir(_) => None,
    };
    let jobs = if todo.iter().any(|&i| offset(i).is_some()) {
        todo.sort_by_key(|&i| offset(i).unwrap_or(u64::MAX));
        1
    } else {
        jobs
    };
    let walked = crate::parallel::map_indexed(todo.len(), jobs, |k| {
        let i = todo[k];
        let layer = &image.layers[i];
        let tree = walk(layer, i);
        if let (Some(c), Some(key)) = (cache, layer_key(layer)) {
            // A cache that cannot be written only costs time next run.
            if storable(layer, &tree) {
                let _ = c.put(&key, analyzer, &tree);
            }
        }
        progress.layer_done(&layer.display_name(i));
        tree
    });
    // A walker that panicked leaves its layers empty: reported below.
    for (&i, tree) in todo.iter().zip(walked) {
        results[i] = tree;
    }
    for (i, first) in repeats {
        results[i] = results[first].clone().map(|mut t| {
            for node in t.nodes_mut() {
                node.layer = i;
            }
            t
        });
        progress.layer_done(&image.layers[i].display_name(i));
    }
    let trees = results
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.unwrap_or_else(|| LayerTree {
                errors: vec![crate::walk::ScanIssue::layer(
                    &image.layers[i].display_name(i),
                    crate::walk::IssueKind::Unreadable,
                    "walker panicked",
                )],
                partial: true,
                ..LayerTree::default()
            })
        })
        .collect();
    (trees, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::{ImagePath, Node, NodeKind};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tree() -> LayerTree {
        let mut t = LayerTree::default();
        t.push_entry(
            ImagePath::new("usr/lib/libcuda.so.1").unwrap(),
            Node {
                kind: NodeKind::File {
                    size: 3,
                    mode: 0o644,
                },
                layer: 0,
                facts: vec![],
            },
        );
        t
    }

    const K: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn round_trip_reindexes_and_versions_separate() {
        let d = tempfile::tempdir().unwrap();
        let c = LayerCache::new(d.path());
        assert!(c.get(K, "v1", 0).is_none());
        assert!(c.put(K, "v1", &tree()).unwrap());
        let got = c.get(K, "v1", 3).unwrap();
        assert_eq!(got.entries().next().unwrap().1.layer, 3);
        assert!(
            c.get(K, "v2", 0).is_none(),
            "another analyzer version misses"
        );
        assert!(d.path().join(TAG_NAME).exists());
        assert_eq!(cache_clean(d.path()).unwrap(), 1);
        assert!(c.get(K, "v1", 0).is_none());
        assert!(d.path().join(TAG_NAME).exists(), "clean leaves other files");
    }

    #[test]
    fn a_layer_listed_many_times_is_walked_once() {
        let layer = |digest: &str| Layer {
            digest: Some(digest.to_string()),
            diff_id: None,
            media_type: None,
            size: None,
            content: crate::source::LayerContent::Dir(PathBuf::from("/nonexistent")),
        };
        let mut layers: Vec<Layer> = (0..50).map(|_| layer(K)).collect();
        layers.insert(1, layer("sha256:other"));
        let image = Image {
            reference: "test".into(),
            platform: crate::source::Platform::host(),
            digest: None,
            config: Default::default(),
            layers,
        };
        let walks = AtomicUsize::new(0);
        let (trees, stats) = scan_layers(&image, None, "v", 4, &Progress::hidden(), |_, i| {
            walks.fetch_add(1, Ordering::SeqCst);
            let mut t = tree();
            t.nodes_mut().for_each(|n| n.layer = i);
            t
        });
        assert_eq!(walks.load(Ordering::SeqCst), 2, "once per digest");
        assert_eq!(stats.walked, 2);
        assert_eq!(trees.len(), 51);
        for (i, t) in trees.iter().enumerate() {
            assert_eq!(t.entries().next().unwrap().1.layer, i, "reindexed");
        }
    }

    #[test]
    fn refuses_bad_keys_and_error_trees() {
        let d = tempfile::tempdir().unwrap();
        let c = LayerCache::new(d.path());
        assert!(!c.put("sha256:../../etc", "v", &tree()).unwrap());
        assert!(!c.put("../x:abcd", "v", &tree()).unwrap());
        let mut t = tree();
        t.errors.push(crate::walk::ScanIssue::layer(
            "l",
            crate::walk::IssueKind::Corrupt,
            "boom",
        ));
        assert!(!c.put(K, "v", &t).unwrap());
    }

    #[test]
    fn corrupt_entry_is_a_miss_and_concurrent_writers_agree() {
        let d = tempfile::tempdir().unwrap();
        let c = LayerCache::new(d.path());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| c.put(K, "v", &tree()).unwrap());
            }
        });
        assert!(c.get(K, "v", 0).is_some());
        let p = c.entry_path(K, "v").unwrap();
        std::fs::write(&p, b"{not json").unwrap();
        assert!(c.get(K, "v", 0).is_none());
        let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp")
            })
            .collect();
        assert!(leftovers.is_empty());
    }
}
