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
//!
//! Authenticated: CI restores caches from other branches and forks, so an entry could be
//! edited (`sm_75` → `sm_90`, still valid JSON) into a verdict. Each entry starts with an
//! HMAC-SHA256 over its key, the analyzer version and the JSON, under a per-user random key
//! kept outside the cache directory ([`key_path`], created 0600 on first use). An entry
//! whose MAC does not check (edited, planted, or written under another key) is a miss with a
//! warning and is rewritten after the walk. Without a usable key the cache is not used.
//!
//! What a cache hit proves: that this user's gpulint walked a blob with this digest and
//! diff_id before. It does not re-read the blob: where the blob's size can be had without
//! reading it (a file in an OCI layout or archive), a size that differs from the manifest's
//! is a miss (the walk then reports the damage); bytes changed in place at the same size are
//! caught only by `--verify-blobs`, which walks (and so re-hashes) every layer.

mod shared;

use shared::storable;
pub use shared::{SharedLayers, SharedStats, MAX_SHARED_ENTRIES};

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
    let home = crate::source::options::home_dir()
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

/// Where the per-user key that authenticates cache entries lives: outside every cache
/// directory, so restoring a cache cannot bring its own key. `$XDG_CONFIG_HOME/gpulint/
/// cache-key`, else `~/.config/gpulint/cache-key`.
pub fn key_path() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        let p = PathBuf::from(x);
        if p.is_absolute() {
            return Ok(p.join("gpulint").join("cache-key"));
        }
    }
    let home = crate::source::options::home_dir()
        .context("no place for the cache key: neither XDG_CONFIG_HOME nor HOME is set")?;
    Ok(home.join(".config").join("gpulint").join("cache-key"))
}

/// A cache entry's authentication key.
pub type CacheKey = [u8; 32];

/// The key at `path`, created (32 random bytes, hex, mode 0600, directory 0700) when there
/// is none. A key file that is not a regular file, or that others may read, is refused.
pub fn load_or_create_key(path: &Path) -> anyhow::Result<CacheKey> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match crate::io_util::read_regular(path, 1024) {
        Ok(bytes) => return parse_key(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("cache key: {e}")),
    }
    let dir = path.parent().context("cache key path has no parent")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut key = [0u8; 32];
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .context("reading /dev/urandom for the cache key")?;
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".cache-key")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(format!("{}\n", hex::encode(key)).as_bytes())?;
    tmp.as_file_mut().sync_all()?;
    // Another gpulint may have created it meanwhile: then both use that one.
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            let bytes = crate::io_util::read_regular(path, 1024)
                .map_err(|e| anyhow::anyhow!("cache key: {e}"))?;
            parse_key(path, &bytes)
        }
        Err(e) => Err(anyhow::anyhow!("writing {}: {}", path.display(), e.error)),
    }
}

fn parse_key(path: &Path, bytes: &[u8]) -> anyhow::Result<CacheKey> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::symlink_metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "cache key {} may be read by others (mode {:o}); make it 0600",
            path.display(),
            mode & 0o777
        );
    }
    let text = std::str::from_utf8(bytes).unwrap_or_default().trim();
    let mut key = [0u8; 32];
    hex::decode_to_slice(text, &mut key)
        .map_err(|_| anyhow::anyhow!("cache key {} is not 64 hex digits", path.display()))?;
    Ok(key)
}

/// The environment variable that, set and not empty, holds the cache key instead of the
/// key file: a CI job's config directory does not persist, so a per-user key file is new in
/// every job and a restored cache never hits. Meant for a CI secret (forks get none: their
/// jobs fall back to a fresh key file and their restored caches miss).
pub const KEY_ENV: &str = "GPULINT_CACHE_KEY";

/// Fewest bytes a [`KEY_ENV`] secret must decode to: the key is all that keeps a restored
/// cache from planting verdicts, so it must not be guessable.
const MIN_ENV_KEY_BYTES: usize = 32;

/// Longest [`KEY_ENV`] value accepted (a key, not a document).
const MAX_ENV_KEY_CHARS: usize = 4096;

/// The key [`KEY_ENV`] gives: None when it is unset or empty. A value that is not hex or
/// base64, or decodes to fewer than 32 bytes, is an error; no error quotes the value.
pub fn key_from_env() -> anyhow::Result<Option<CacheKey>> {
    match std::env::var_os(KEY_ENV) {
        None => Ok(None),
        Some(v) => parse_env_key(&v),
    }
}

fn parse_env_key(value: &std::ffi::OsStr) -> anyhow::Result<Option<CacheKey>> {
    use base64::Engine;
    // CI secrets often carry a trailing newline.
    let text = value.to_str().map(str::trim);
    if text == Some("") {
        return Ok(None);
    }
    let bytes = text
        .filter(|t| t.len() <= MAX_ENV_KEY_CHARS)
        .and_then(|t| {
            if t.len() % 2 == 0 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
                return hex::decode(t).ok();
            }
            use base64::engine::general_purpose as b64;
            [
                b64::STANDARD,
                b64::STANDARD_NO_PAD,
                b64::URL_SAFE,
                b64::URL_SAFE_NO_PAD,
            ]
            .iter()
            .find_map(|e| e.decode(t).ok())
        })
        .with_context(|| {
            format!(
                "{KEY_ENV} is not a key: expected hex or base64 of at most \
                 {MAX_ENV_KEY_CHARS} characters (the value is not shown)"
            )
        })?;
    if bytes.len() < MIN_ENV_KEY_BYTES {
        anyhow::bail!(
            "{KEY_ENV} is too short: it must decode to at least {MIN_ENV_KEY_BYTES} random \
             bytes, e.g. `openssl rand -hex 32` (the value is not shown)"
        );
    }
    // 32 bytes are the key itself (the key file's text works as the value, same entries);
    // a longer secret is hashed to one, as HMAC does with long keys.
    Ok(Some(match <CacheKey>::try_from(bytes.as_slice()) {
        Ok(k) => k,
        Err(_) => Sha256::new()
            .chain_update(b"gpulint cache key\0")
            .chain_update(&bytes)
            .finalize()
            .into(),
    }))
}

/// HMAC-SHA256 (RFC 2104) over the concatenation of `parts`.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Equality that takes the same time wherever the first difference is.
fn same_mac(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// First line of an entry: this tag, a space, the MAC in hex.
const MAC_TAG: &str = "gpulint-cache-mac-v1";

#[derive(Debug, Clone)]
pub struct LayerCache {
    dir: PathBuf,
    /// None: no usable key, so nothing is read or written.
    key: Option<CacheKey>,
    /// `--verify-blobs`: entries are not read (every layer is walked, its blob re-hashed);
    /// walks still refresh them.
    verify_blobs: bool,
}

impl LayerCache {
    /// The cache at `dir` under this user's key ([`key_path`], created on first use). Without
    /// a usable key, a warning, and the cache is not used.
    pub fn new(dir: impl Into<PathBuf>) -> LayerCache {
        let key = key_path()
            .and_then(|p| load_or_create_key(&p))
            .map_err(|e| {
                eprintln!(
                    "gpulint: warning: layer cache not used: {}",
                    crate::report::escape::field(&format!("{e:#}"))
                )
            })
            .ok();
        LayerCache {
            dir: dir.into(),
            key,
            verify_blobs: false,
        }
    }

    /// The cache at `dir` under `key`.
    pub fn with_key(dir: impl Into<PathBuf>, key: CacheKey) -> LayerCache {
        LayerCache {
            dir: dir.into(),
            key: Some(key),
            verify_blobs: false,
        }
    }

    /// Walk every layer even when an entry holds it (`--verify-blobs`).
    pub fn verifying_blobs(mut self, on: bool) -> LayerCache {
        self.verify_blobs = on;
        self
    }

    /// The cache the command line asks for: None with `--no-cache`, else `--cache-dir` or
    /// the default directory, under the [`KEY_ENV`] key when that is set, else the user's
    /// key file. A [`KEY_ENV`] that is set but unusable is an error, not a silent fallback.
    pub fn from_flags(no_cache: bool, cache_dir: Option<&Path>) -> anyhow::Result<Option<Self>> {
        if no_cache {
            return Ok(None);
        }
        let env_key = key_from_env()?;
        let dir = match cache_dir {
            Some(d) => d.to_path_buf(),
            None => default_dir()?,
        };
        Ok(Some(match env_key {
            Some(key) => LayerCache::with_key(dir, key),
            None => LayerCache::new(dir),
        }))
    }

    fn mac(key: &CacheKey, layer_key: &str, analyzer: &str, json: &[u8]) -> String {
        // Key and analyzer hold neither newlines nor each other: the fields cannot run together.
        hex::encode(hmac_sha256(
            key,
            &[
                MAC_TAG.as_bytes(),
                b"\n",
                layer_key.as_bytes(),
                b"\n",
                analyzer.as_bytes(),
                b"\n",
                json,
            ],
        ))
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
        // The entry format is part of the directory name: entries of the unauthenticated
        // format sit elsewhere and are never read (no warning for each after an upgrade).
        let v = hex::encode(Sha256::digest(format!("{MAC_TAG}\n{analyzer}").as_bytes()));
        Some(self.dir.join(LAYERS_DIR).join(&v[..16]).join(name))
    }

    /// The cached tree for a layer, re-indexed to `index` (a shared base layer may sit at a
    /// different position in another image).
    pub fn get(&self, key: &str, analyzer: &str, index: usize) -> Option<LayerTree> {
        let mac_key = self.key.as_ref()?;
        if self.verify_blobs {
            return None;
        }
        let path = self.entry_path(key, analyzer)?;
        let bytes = read_entry(&path)?;
        let json = bytes
            .split_first_chunk::<{ MAC_TAG.len() + 1 + 64 + 1 }>()
            .filter(|(head, _)| {
                let (tag, rest) = head.split_at(MAC_TAG.len());
                tag == MAC_TAG.as_bytes()
                    && rest[0] == b' '
                    && rest[65] == b'\n'
                    && same_mac(
                        &rest[1..65],
                        Self::mac(mac_key, key, analyzer, &bytes[head.len()..]).as_bytes(),
                    )
            })
            .map(|(_, json)| json);
        let Some(json) = json else {
            eprintln!(
                "gpulint: warning: cache entry {} failed authentication (edited, or written \
                 under another key); not used, the layer is walked again",
                crate::report::escape::field(&path.display().to_string())
            );
            return None;
        };
        let mut tree: LayerTree = serde_json::from_slice(json).ok()?;
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
        let (Some(mac_key), Some(path)) = (self.key.as_ref(), self.entry_path(key, analyzer))
        else {
            return Ok(false);
        };
        let json = serde_json::to_vec(tree)?;
        let mac = Self::mac(mac_key, key, analyzer, &json);
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
        {
            let mut w = std::io::BufWriter::new(tmp.as_file_mut());
            w.write_all(format!("{MAC_TAG} {mac}\n").as_bytes())?;
            w.write_all(&json)?;
            w.flush()?;
        }
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

/// Whether the blob as stored now has the size the manifest gives it, where that can be
/// seen without reading it: a cached entry is used only for a blob that passes. A blob
/// whose size cannot be had this way (a registry's) passes; a missing one does not.
fn blob_size_matches(layer: &Layer) -> bool {
    let (Some(manifest), LayerContent::Tar(blob)) = (layer.size, &layer.content) else {
        return true;
    };
    match blob.stored_size() {
        Ok(Some(now)) => now == manifest,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// Per-layer outcome counts of one [`scan_layers`] run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub cache_hits: usize,
    pub walked: usize,
    /// Layers another image of the same run had walked or loaded already ([`SharedLayers`]).
    pub shared_hits: usize,
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
    scan_layers_shared(image, cache, None, analyzer, jobs, progress, walk)
}

/// [`scan_layers`] within a run over many images: a layer in `shared` (walked or loaded by
/// another image of the run) is neither read nor looked up again.
pub fn scan_layers_shared<F>(
    image: &Image,
    cache: Option<&LayerCache>,
    shared: Option<&SharedLayers>,
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
        let run_key = shared.zip(repeat_key(layer));
        if let Some(tree) = run_key.as_ref().and_then(|(s, k)| s.get(k, i)) {
            results[i] = Some(tree);
            stats.shared_hits += 1;
            progress.layer_done(&layer.display_name(i));
            continue;
        }
        let hit = cache
            .zip(layer_key(layer))
            .filter(|_| blob_size_matches(layer))
            .and_then(|(c, k)| c.get(&k, analyzer, i))
            .filter(|t| storable(layer, t));
        if let (Some((s, k)), Some(tree)) = (&run_key, &hit) {
            s.keep(k, tree);
        }
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
        let (tree, walked_here) = match shared.zip(repeat_key(layer)) {
            Some((s, key)) => s.walk_once(&key, layer, i, &walk),
            None => (walk(layer, i), true),
        };
        if !walked_here {
            progress.layer_done(&layer.display_name(i));
            return tree;
        }
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
        let c = LayerCache::with_key(d.path(), [7; 32]);
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

    /// Images scanned at the same time that share a layer: it is walked once for all of
    /// them; a tree that could not go to the disk cache (its diff_id not verified) is never
    /// lent to another image.
    #[test]
    fn a_run_walks_a_shared_layer_once_and_lends_only_verified_trees() {
        let layer = |digest: &str, diff_id: &str| Layer {
            digest: Some(digest.to_string()),
            diff_id: Some(diff_id.to_string()),
            media_type: None,
            size: None,
            content: crate::source::LayerContent::Dir(PathBuf::from("/nonexistent")),
        };
        let image = |own: &str| Image {
            reference: own.into(),
            platform: crate::source::Platform::host(),
            digest: None,
            config: Default::default(),
            layers: vec![
                layer("sha256:base", "sha256:base-diff"),
                layer(own, "sha256:own"),
            ],
        };
        let images: Vec<Image> = (0..8).map(|i| image(&format!("sha256:own{i}"))).collect();
        let shared = SharedLayers::new();
        let walks = AtomicUsize::new(0);
        let verified_walk = |l: &Layer, i: usize| {
            walks.fetch_add(1, Ordering::SeqCst);
            // Slow enough that the images overlap.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut t = tree();
            t.nodes_mut().for_each(|n| n.layer = i);
            t.verified_diff_id = l.diff_id.clone();
            t
        };
        crate::parallel::map_indexed(images.len(), 8, |k| {
            let (trees, _) = scan_layers_shared(
                &images[k],
                None,
                Some(&shared),
                "v",
                2,
                &Progress::hidden(),
                verified_walk,
            );
            assert_eq!(trees.len(), 2);
            assert_eq!(trees[1].entries().next().unwrap().1.layer, 1);
        });
        // The base once, each image's own layer once.
        assert_eq!(walks.load(Ordering::SeqCst), 9);
        assert_eq!(
            shared.stats(),
            SharedStats {
                walked: 9,
                disk_hits: 0,
                shared_hits: 7
            }
        );

        // A walk that did not hash the layer to its diff_id is not lent: each image walks.
        let shared = SharedLayers::new();
        let walks = AtomicUsize::new(0);
        for img in &images[..3] {
            scan_layers_shared(
                img,
                None,
                Some(&shared),
                "v",
                1,
                &Progress::hidden(),
                |_, _| {
                    walks.fetch_add(1, Ordering::SeqCst);
                    tree()
                },
            );
        }
        assert_eq!(walks.load(Ordering::SeqCst), 6);
        assert_eq!(shared.stats().shared_hits, 0);
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
        let c = LayerCache::with_key(d.path(), [7; 32]);
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
        let c = LayerCache::with_key(d.path(), [7; 32]);
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
    /// RFC 4231 test cases 2 and 6 (a short key; a key longer than the block).
    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        assert_eq!(
            hex::encode(hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    /// An entry edited by hand (still valid JSON), one written under another key, and one
    /// moved to another layer's name all fail the MAC: misses, not results.
    #[test]
    fn entries_that_fail_the_mac_are_misses() {
        let d = tempfile::tempdir().unwrap();
        let c = LayerCache::with_key(d.path(), [7; 32]);
        assert!(c.put(K, "v", &tree()).unwrap());
        assert!(c.get(K, "v", 0).is_some());
        let p = c.entry_path(K, "v").unwrap();
        let good = std::fs::read_to_string(&p).unwrap();
        assert!(good.starts_with(MAC_TAG), "{good}");
        std::fs::write(&p, good.replace("libcuda.so.1", "libcuda.so.2")).unwrap();
        assert!(c.get(K, "v", 0).is_none(), "edited");
        std::fs::write(&p, &good).unwrap();
        assert!(LayerCache::with_key(d.path(), [8; 32])
            .get(K, "v", 0)
            .is_none());
        // The old, unauthenticated format (the JSON alone) is a miss too.
        let json = good.split_once('\n').unwrap().1;
        std::fs::write(&p, json).unwrap();
        assert!(c.get(K, "v", 0).is_none(), "no MAC line");
        // The MAC covers the key: the entry copied under another layer's name misses.
        std::fs::write(&p, &good).unwrap();
        let other = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let q = c.entry_path(other, "v").unwrap();
        std::fs::copy(&p, &q).unwrap();
        assert!(c.get(other, "v", 0).is_none(), "moved");
        assert!(c.get(K, "v", 0).is_some());
        // --verify-blobs reads no entry at all.
        assert!(c.clone().verifying_blobs(true).get(K, "v", 0).is_none());
    }

    /// GPULINT_CACHE_KEY: hex or base64 of at least 32 bytes; empty is unset (a fork's CI
    /// job, which gets no secrets); anything else is refused without being quoted.
    #[test]
    fn the_env_key_is_hex_or_base64_of_32_bytes_and_never_quoted() {
        use std::ffi::OsStr;
        let key = |v: &str| parse_env_key(OsStr::new(v));
        let raw: Vec<u8> = (0u8..32).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
        let hex = hex::encode(&raw);
        let from_hex = key(&format!("{hex}\n")).unwrap().unwrap();
        assert_eq!(
            from_hex.as_slice(),
            raw.as_slice(),
            "32 bytes are the key itself"
        );
        assert_eq!(key(&hex.to_uppercase()).unwrap(), Some(from_hex));
        {
            use base64::Engine;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
            assert_eq!(key(&b64).unwrap(), Some(from_hex));
            assert_eq!(key(b64.trim_end_matches('=')).unwrap(), Some(from_hex));
        }
        // A longer secret is hashed to a key; different secrets, different keys.
        let long = key(&"ab".repeat(48)).unwrap().unwrap();
        assert_ne!(long, key(&"ac".repeat(48)).unwrap().unwrap());
        assert_eq!(key("").unwrap(), None);
        assert_eq!(key(" \n").unwrap(), None);

        let secret_short = "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e7";
        let secret_bad = "s3cr3t-but-not-a-key!!";
        let secret_long = "ab".repeat(MAX_ENV_KEY_CHARS);
        for (v, why) in [
            (secret_short, "too short"),
            ("c2hvcnQ=", "too short"),
            (secret_bad, "not a key"),
            (secret_long.as_str(), "not a key"),
        ] {
            let e = format!("{:#}", key(v).unwrap_err());
            assert!(e.contains(KEY_ENV) && e.contains(why), "{e}");
            assert!(!e.contains(v), "the error quotes the value: {e}");
        }
        {
            use std::os::unix::ffi::OsStrExt;
            assert!(parse_env_key(OsStr::from_bytes(b"\xff\xfe")).is_err());
        }
    }

    #[test]
    fn the_key_is_made_once_private_and_refused_when_others_may_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cfg/gpulint/cache-key");
        let k1 = load_or_create_key(&p).unwrap();
        let k2 = load_or_create_key(&p).unwrap();
        assert_eq!(k1, k2);
        assert_ne!(k1, [0; 32]);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(p.parent().unwrap()), 0o700);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create_key(&p).unwrap_err().to_string();
        assert!(e.contains("read by others"), "{e}");
        // Never through a link (a restored directory could point it at a known file).
        let link = d.path().join("link-key");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(load_or_create_key(&link).is_err());
    }

    /// A blob that reports a size other than the manifest's is walked, not taken from the
    /// cache; one whose size cannot be had without reading it (a registry's) is taken.
    #[test]
    fn a_cache_hit_needs_the_manifest_size() {
        struct Sized(Result<Option<u64>, String>);
        impl crate::source::LayerBlob for Sized {
            fn open(&self) -> anyhow::Result<Box<dyn std::io::Read + Send>> {
                anyhow::bail!("not opened in this test")
            }
            fn stored_size(&self) -> Result<Option<u64>, String> {
                self.0.clone()
            }
        }
        let d = tempfile::tempdir().unwrap();
        let c = LayerCache::with_key(d.path(), [7; 32]);
        let diff = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
        let mut stored = tree();
        stored.verified_diff_id = Some(diff.into());
        assert!(c.put(&format!("{K}+{diff}"), "v", &stored).unwrap());
        for (now, hit) in [
            (Ok(Some(10)), true),
            (Ok(Some(11)), false),
            (Err("gone".to_string()), false),
            (Ok(None), true),
        ] {
            let image = Image {
                reference: "test".into(),
                platform: crate::source::Platform::host(),
                digest: None,
                config: Default::default(),
                layers: vec![Layer {
                    digest: Some(K.into()),
                    diff_id: Some(diff.into()),
                    media_type: None,
                    size: Some(10),
                    content: LayerContent::Tar(Box::new(Sized(now.clone()))),
                }],
            };
            let (_, stats) = scan_layers(&image, Some(&c), "v", 1, &Progress::hidden(), |_, _| {
                LayerTree::default()
            });
            assert_eq!(stats.cache_hits == 1, hit, "{now:?}");
        }
    }
}
