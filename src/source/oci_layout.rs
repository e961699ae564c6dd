//! OCI image layouts (`oci:DIR`, and `oci-archive:PATH` through an indexed tar): index.json,
//! nested image indexes (OCI or Docker manifest lists), platform selection, then the
//! manifest and config, both checked against their digests.

use super::archive::{MemberBlob, TarArchive};
use super::digest::{sha256_hex, Digest, VerifyingReader};
use super::{
    display_path, parse_config, read_limited, Image, Layer, LayerBlob, LayerContent, Platform,
    Selector, SourceError, MAX_JSON,
};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

const REF_NAME: &str = "org.opencontainers.image.ref.name";
const CONTAINERD_NAME: &str = "io.containerd.image.name";
const MAX_INDEX_DEPTH: usize = 4;
const MAX_CANDIDATES: usize = 10_000;
/// Indexes and manifests visited while expanding the top-level entries (each repeat counts):
/// a small layout whose indexes list one another many times cannot fan out without bound.
const MAX_VISITS: usize = 10_000;

/// Where the layout's files live.
trait Store {
    fn location(&self) -> &Path;
    fn read_file(&self, name: &str) -> Result<Vec<u8>, SourceError>;
    fn has_file(&self, name: &str) -> bool;
    fn blob_size(&self, d: &Digest) -> Option<u64>;
    fn layer_blob(&self, d: &Digest) -> Box<dyn LayerBlob>;
}

struct DirStore {
    root: PathBuf,
}

impl Store for DirStore {
    fn location(&self) -> &Path {
        &self.root
    }
    fn read_file(&self, name: &str) -> Result<Vec<u8>, SourceError> {
        let p = self.root.join(name);
        // Only regular files inside the layout: a symlinked or FIFO `index.json` or blob is
        // refused (never read through, never echoed).
        if !crate::io_util::inside(&self.root, &p) {
            return Err(SourceError::Invalid {
                path: p.clone(),
                what: name.to_string(),
                reason: "resolves outside the image layout; refused".into(),
            });
        }
        let f = crate::io_util::open_regular(&p, u64::MAX).map_err(|e| SourceError::Invalid {
            path: p.clone(),
            what: name.to_string(),
            reason: e.to_string(),
        })?;
        read_limited(f, MAX_JSON).map_err(|e| SourceError::Invalid {
            path: p.clone(),
            what: name.to_string(),
            reason: e.to_string(),
        })
    }
    fn has_file(&self, name: &str) -> bool {
        self.root.join(name).is_file()
    }
    fn blob_size(&self, d: &Digest) -> Option<u64> {
        std::fs::metadata(self.root.join(d.blob_path()))
            .ok()
            .map(|m| m.len())
    }
    fn layer_blob(&self, d: &Digest) -> Box<dyn LayerBlob> {
        Box::new(FileBlob {
            path: self.root.join(d.blob_path()),
            digest: d.clone(),
        })
    }
}

struct FileBlob {
    path: PathBuf,
    digest: Digest,
}

impl LayerBlob for FileBlob {
    fn checked_digest(&self) -> Option<String> {
        self.digest.verifiable().then(|| self.digest.to_string())
    }

    fn stored_size(&self) -> Result<Option<u64>, String> {
        // Not through a link: `open` refuses one too.
        std::fs::symlink_metadata(&self.path)
            .map(|m| Some(m.len()))
            .map_err(|e| format!("blob {}: {e}", self.digest))
    }

    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        let f = crate::io_util::open_regular(&self.path, u64::MAX)
            .map_err(|e| anyhow::anyhow!("blob {}: {e}", self.digest))?;
        let r = std::io::BufReader::with_capacity(256 << 10, f);
        Ok(if self.digest.verifiable() {
            Box::new(VerifyingReader::new(r, self.digest.clone()))
        } else {
            Box::new(r)
        })
    }
}

struct ArchiveStore {
    archive: Arc<TarArchive>,
}

impl Store for ArchiveStore {
    fn location(&self) -> &Path {
        self.archive.path()
    }
    fn read_file(&self, name: &str) -> Result<Vec<u8>, SourceError> {
        self.archive.read_member(name)
    }
    fn has_file(&self, name: &str) -> bool {
        self.archive.contains(name)
    }
    fn blob_size(&self, d: &Digest) -> Option<u64> {
        self.archive.member_size(&d.blob_path()).ok()
    }
    fn layer_blob(&self, d: &Digest) -> Box<dyn LayerBlob> {
        Box::new(MemberBlob {
            archive: self.archive.clone(),
            name: d.blob_path(),
            verify: Some(d.clone()),
            verify_only_if_plain: false,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: Option<String>,
    digest: String,
    size: Option<i64>,
    platform: Option<RawPlatform>,
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawPlatform {
    architecture: String,
    os: String,
    variant: Option<String>,
}

impl RawPlatform {
    fn to_platform(&self) -> Platform {
        Platform {
            os: self.os.clone(),
            architecture: self.architecture.clone(),
            variant: self.variant.clone().filter(|v| !v.is_empty()),
        }
    }
}

/// A manifest or an index: which one is decided by the fields present.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    media_type: Option<String>,
    manifests: Option<Vec<Descriptor>>,
    config: Option<Descriptor>,
    layers: Option<Vec<Descriptor>>,
}

pub fn open_layout_dir(
    path: &Path,
    selector: Option<&Selector>,
    platform: Option<&Platform>,
) -> Result<Image, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| SourceError::io(path, e))?;
    if !meta.is_dir() {
        return Err(SourceError::NotAnImage {
            path: path.to_path_buf(),
            reason: "oci: expects an OCI layout directory (use oci-archive: for a tar)".into(),
        });
    }
    let store = DirStore {
        root: path.to_path_buf(),
    };
    let shown = format!("oci:{}", display_path(path));
    open_layout(&store, &shown, selector, platform)
}

pub fn open_layout_archive(
    archive: Arc<TarArchive>,
    selector: Option<&Selector>,
    platform: Option<&Platform>,
) -> Result<Image, SourceError> {
    let shown = format!("oci-archive:{}", display_path(archive.path()));
    let store = ArchiveStore { archive };
    open_layout(&store, &shown, selector, platform)
}

/// One image manifest reachable from index.json.
struct Candidate {
    digest: Digest,
    platform: Option<Platform>,
    /// The top-level index.json entry it came from (its ref name, or `@N`).
    top: String,
}

fn open_layout(
    store: &dyn Store,
    shown: &str,
    selector: Option<&Selector>,
    platform: Option<&Platform>,
) -> Result<Image, SourceError> {
    let loc = store.location().to_path_buf();
    if !store.has_file("index.json") {
        return Err(SourceError::NotAnImage {
            path: loc,
            reason: "no index.json (not an OCI image layout)".into(),
        });
    }
    let invalid = |what: &str, reason: String| SourceError::Invalid {
        path: store.location().to_path_buf(),
        what: what.to_string(),
        reason,
    };
    let index_bytes = store.read_file("index.json")?;
    let index: Document =
        serde_json::from_slice(&index_bytes).map_err(|e| invalid("index.json", e.to_string()))?;
    let top = index
        .manifests
        .ok_or_else(|| invalid("index.json", "no manifests list".into()))?;
    let top_name = |i: usize, d: &Descriptor| -> String {
        d.annotations
            .as_ref()
            .and_then(|a| a.get(REF_NAME))
            .cloned()
            .unwrap_or_else(|| format!("@{i}"))
    };
    let all_names = || -> Vec<String> {
        top.iter()
            .enumerate()
            .map(|(i, d)| top_name(i, d))
            .collect()
    };
    let reference = match selector {
        Some(Selector::Digest(d)) => format!("{shown}@{d}"),
        Some(s) => format!("{shown}:{s}"),
        None => shown.to_string(),
    };

    // The top-level entries in play.
    let chosen: Vec<(usize, &Descriptor)> = match selector {
        None | Some(Selector::Digest(_)) => top.iter().enumerate().collect(),
        Some(Selector::Index(n)) => match top.get(*n) {
            Some(d) => vec![(*n, d)],
            None => {
                return Err(SourceError::ImageNotFound {
                    reference,
                    wanted: format!("@{n}"),
                    available: all_names(),
                })
            }
        },
        Some(Selector::Name(tag)) => {
            let hits: Vec<(usize, &Descriptor)> = top
                .iter()
                .enumerate()
                .filter(|(_, d)| {
                    d.annotations.as_ref().is_some_and(|a| {
                        a.get(REF_NAME) == Some(tag) || a.get(CONTAINERD_NAME) == Some(tag)
                    })
                })
                .collect();
            if hits.is_empty() {
                return Err(SourceError::ImageNotFound {
                    reference,
                    wanted: format!("tagged {tag:?}"),
                    available: all_names(),
                });
            }
            hits
        }
    };

    // Expand nested indexes into image manifests.
    let mut candidates = Vec::new();
    let mut walk = Expander::new(store);
    for (i, d) in &chosen {
        walk.expand(d, &top_name(*i, d), 0, &mut candidates)?;
    }
    if let Some(Selector::Digest(want)) = selector {
        // A digest names a manifest anywhere in the tree, or an index whose manifests count.
        let direct: Vec<Candidate> = candidates
            .iter()
            .filter(|c| &c.digest.to_string() == want)
            .map(|c| Candidate {
                digest: c.digest.clone(),
                platform: c.platform.clone(),
                top: c.top.clone(),
            })
            .collect();
        if !direct.is_empty() {
            candidates = direct;
        } else {
            let under: Vec<(usize, &Descriptor)> = chosen
                .iter()
                .copied()
                .filter(|(_, d)| &d.digest == want)
                .collect();
            if under.is_empty() {
                return Err(SourceError::ImageNotFound {
                    reference,
                    wanted: format!("with manifest digest {want}"),
                    available: candidates.iter().map(|c| c.digest.to_string()).collect(),
                });
            }
            let mut again = Vec::new();
            for (i, d) in under {
                walk.expand(d, &top_name(i, d), 0, &mut again)?;
            }
            candidates = again;
        }
    }
    if candidates.is_empty() {
        return Err(SourceError::NotAnImage {
            path: loc,
            reason: "index.json lists no image manifests".into(),
        });
    }

    // Fill in platforms the descriptors do not carry from the configs.
    let mut loaded: BTreeMap<String, (Document, Vec<u8>)> = BTreeMap::new();
    for c in candidates.iter_mut() {
        if c.platform.is_none() {
            let (doc, cfg) = load_manifest(store, &c.digest)?;
            c.platform = parse_config(&cfg)
                .map_err(|e| invalid(&format!("config of {}", c.digest), e))?
                .platform;
            loaded.insert(c.digest.to_string(), (doc, cfg));
        }
    }

    let mut tops: Vec<&str> = candidates
        .iter()
        .map(|c| c.top.as_str())
        .filter(|t| !t.starts_with('@'))
        .collect();
    tops.sort();
    tops.dedup();
    if selector.is_none() && tops.len() > 1 {
        return Err(SourceError::ImageNotFound {
            reference,
            wanted: "chosen: the layout holds several images, pick one with :TAG".into(),
            available: tops.iter().map(|s| s.to_string()).collect(),
        });
    }

    let pick = if candidates.len() == 1 && platform.is_none() {
        0
    } else {
        let wanted = platform.cloned().unwrap_or_else(Platform::host);
        let matching: Vec<usize> = (0..candidates.len())
            .filter(|&i| {
                candidates[i]
                    .platform
                    .as_ref()
                    .is_none_or(|p| p.satisfies(&wanted))
            })
            .collect();
        let exact = matching
            .iter()
            .copied()
            .find(|&i| candidates[i].platform.as_ref() == Some(&wanted));
        match exact.or_else(|| matching.first().copied()) {
            Some(i) => i,
            None => {
                let mut available: Vec<Platform> = candidates
                    .iter()
                    .filter_map(|c| c.platform.clone())
                    .collect();
                available.sort();
                available.dedup();
                return Err(SourceError::PlatformNotFound {
                    reference,
                    requested: wanted,
                    available,
                });
            }
        }
    };
    let chosen = &candidates[pick];
    let (manifest, config_bytes) = match loaded.remove(&chosen.digest.to_string()) {
        Some(x) => x,
        None => load_manifest(store, &chosen.digest)?,
    };
    let parsed = parse_config(&config_bytes)
        .map_err(|e| invalid(&format!("config of {}", chosen.digest), e))?;
    let platform = parsed
        .platform
        .clone()
        .or_else(|| chosen.platform.clone())
        .unwrap_or_else(Platform::host);

    let manifest_layers = manifest.layers.unwrap_or_default();
    super::check_diff_id_count(manifest_layers.len(), &parsed.diff_ids)
        .map_err(|e| invalid(&format!("config of {}", chosen.digest), e))?;
    let mut layers = Vec::new();
    for (i, l) in manifest_layers.iter().enumerate() {
        let d = Digest::parse(&l.digest)
            .map_err(|e| invalid(&format!("layer {i} of {}", chosen.digest), e))?;
        layers.push(Layer {
            digest: Some(d.to_string()),
            diff_id: parsed.diff_ids.get(i).cloned(),
            media_type: l.media_type.clone(),
            size: l
                .size
                .and_then(|s| u64::try_from(s).ok())
                .or_else(|| store.blob_size(&d)),
            content: LayerContent::Tar(store.layer_blob(&d)),
        });
    }
    Ok(Image {
        reference,
        platform,
        digest: Some(chosen.digest.to_string()),
        config: parsed.facts,
        layers,
    })
}

fn is_index(d: &Descriptor) -> Option<bool> {
    match d.media_type.as_deref() {
        Some("application/vnd.oci.image.index.v1+json")
        | Some("application/vnd.docker.distribution.manifest.list.v2+json") => Some(true),
        Some("application/vnd.oci.image.manifest.v1+json")
        | Some("application/vnd.docker.distribution.manifest.v2+json") => Some(false),
        _ => None,
    }
}

fn is_attestation(d: &Descriptor) -> bool {
    d.annotations
        .as_ref()
        .and_then(|a| a.get("vnd.docker.reference.type"))
        .is_some_and(|t| t == "attestation-manifest")
        || d.platform
            .as_ref()
            .is_some_and(|p| p.os == "unknown" && p.architecture == "unknown")
}

/// Expands indexes into manifests, counting every descriptor visited against
/// [`MAX_VISITS`] and parsing each blob once.
struct Expander<'a> {
    store: &'a dyn Store,
    visits: usize,
    docs: HashMap<String, Rc<Document>>,
}

impl<'a> Expander<'a> {
    fn new(store: &'a dyn Store) -> Expander<'a> {
        Expander {
            store,
            visits: 0,
            docs: HashMap::new(),
        }
    }

    fn document(&mut self, digest: &Digest) -> Result<Rc<Document>, SourceError> {
        let key = digest.to_string();
        if let Some(d) = self.docs.get(&key) {
            return Ok(d.clone());
        }
        let doc: Document =
            serde_json::from_slice(&read_blob(self.store, digest)?).map_err(|e| {
                SourceError::Invalid {
                    path: self.store.location().to_path_buf(),
                    what: format!("descriptor {digest}"),
                    reason: e.to_string(),
                }
            })?;
        let doc = Rc::new(doc);
        self.docs.insert(key, doc.clone());
        Ok(doc)
    }

    fn expand(
        &mut self,
        d: &Descriptor,
        top: &str,
        depth: usize,
        out: &mut Vec<Candidate>,
    ) -> Result<(), SourceError> {
        let invalid = |reason: String| SourceError::Invalid {
            path: self.store.location().to_path_buf(),
            what: format!("descriptor {}", d.digest),
            reason,
        };
        self.visits += 1;
        if out.len() >= MAX_CANDIDATES || depth > MAX_INDEX_DEPTH || self.visits > MAX_VISITS {
            return Err(invalid(format!(
                "image indexes nested too deep or too large (more than {MAX_VISITS} \
                 descriptors, {MAX_INDEX_DEPTH} levels)"
            )));
        }
        if is_attestation(d) {
            return Ok(());
        }
        let digest = Digest::parse(&d.digest).map_err(invalid)?;
        let index = match is_index(d) {
            Some(b) => b,
            None => self.document(&digest)?.manifests.is_some(),
        };
        if index {
            let doc = self.document(&digest)?;
            for child in doc.manifests.as_deref().unwrap_or_default() {
                self.expand(child, top, depth + 1, out)?;
            }
        } else {
            out.push(Candidate {
                digest,
                platform: d.platform.as_ref().map(RawPlatform::to_platform),
                top: top.to_string(),
            });
        }
        Ok(())
    }
}

/// Read a small blob whole and check its digest.
fn read_blob(store: &dyn Store, d: &Digest) -> Result<Vec<u8>, SourceError> {
    let data = store.read_file(&d.blob_path()).map_err(|e| match e {
        SourceError::NotFound { .. } => SourceError::Invalid {
            path: store.location().to_path_buf(),
            what: format!("blob {d}"),
            reason: "missing from the layout".into(),
        },
        SourceError::Invalid { path, reason, .. } if reason.starts_with("no member") => {
            SourceError::Invalid {
                path,
                what: format!("blob {d}"),
                reason: "missing from the layout".into(),
            }
        }
        e => e,
    })?;
    if d.verifiable() {
        let actual = sha256_hex(&data);
        if actual != d.hex {
            return Err(SourceError::Invalid {
                path: store.location().to_path_buf(),
                what: format!("blob {d}"),
                reason: format!("digest mismatch: content hashes to sha256:{actual}"),
            });
        }
    }
    Ok(data)
}

/// A manifest and its config bytes.
fn load_manifest(store: &dyn Store, d: &Digest) -> Result<(Document, Vec<u8>), SourceError> {
    let invalid = |what: String, reason: String| SourceError::Invalid {
        path: store.location().to_path_buf(),
        what,
        reason,
    };
    let doc: Document = serde_json::from_slice(&read_blob(store, d)?)
        .map_err(|e| invalid(format!("manifest {d}"), e.to_string()))?;
    if doc.manifests.is_some() || doc.config.is_none() {
        return Err(invalid(
            format!("manifest {d}"),
            format!(
                "not an image manifest (media type {})",
                doc.media_type.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    let cfg = doc
        .config
        .as_ref()
        .map(|c| c.digest.clone())
        .unwrap_or_default();
    let cd = Digest::parse(&cfg).map_err(|e| invalid(format!("config of manifest {d}"), e))?;
    let config = read_blob(store, &cd)?;
    Ok((doc, config))
}
