//! Tar files read in place: an index of members (name → offset, size, link target) built
//! in one pass over the headers, and members opened by seeking (or, for a gzip/zstd
//! compressed archive, by decompressing and skipping) to their data. Links inside the
//! archive are resolved inside the archive. Also the `docker-archive:` transport on top.
//!
//! A compressed archive is decompressed twice in all, whatever its number of layers: once to
//! index it (keeping its small members, the manifests and configs, in memory) and once to
//! read its layers, which go through one forward-only decoder in archive order (the layer
//! walk orders them so, see [`LayerBlob::stream_offset`]).

use super::digest::{sha256_hex, Digest, VerifyingReader};
use super::{
    check_platform, display_path, parse_config, read_limited, Image, Layer, LayerBlob,
    LayerContent, Platform, Selector, SourceError, MAX_JSON,
};
use crate::format::tar::{EntryKind, TarReader};
use crate::io_util::read_up_to;
pub use crate::vocab::Compression;
use crate::vocab::{name_from_bytes, ImagePath};
use serde::Deserialize;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// More members than this is not an image archive (and would only cost memory).
const MAX_MEMBERS: usize = 1_000_000;
const MAX_LINK_HOPS: usize = 40;
/// A compressed archive's members up to this size are kept from the index pass (manifests,
/// configs, index.json), up to [`KEEP_TOTAL`] bytes in all.
const KEEP_MEMBER: u64 = 1 << 20;
const KEEP_TOTAL: u64 = 64 << 20;

#[derive(Debug, Clone)]
enum MemberKind {
    File,
    Dir,
    Symlink(String),
    Hardlink(String),
    Other,
}

#[derive(Debug, Clone)]
struct Member {
    kind: MemberKind,
    offset: u64,
    size: u64,
}

/// An indexed tar file.
pub struct TarArchive {
    path: PathBuf,
    compression: Compression,
    members: HashMap<String, Member>,
    /// Small members of a compressed archive, read during the index pass.
    kept: HashMap<String, Arc<[u8]>>,
    /// A compressed archive's decoder, left where the last member read stopped.
    cursor: Arc<Mutex<Option<Decoder>>>,
    /// Decoders of a compressed archive started so far (each is a pass from its start).
    decoders_started: AtomicUsize,
}

/// A decoder of a compressed archive and how far into the uncompressed tar it is.
struct Decoder {
    stream: Box<dyn Read + Send>,
    pos: u64,
}

impl TarArchive {
    pub fn open(path: &Path) -> Result<TarArchive, SourceError> {
        let meta = std::fs::metadata(path).map_err(|e| SourceError::io(path, e))?;
        if meta.is_dir() {
            return Err(SourceError::NotAnImage {
                path: path.to_path_buf(),
                reason: "a directory, expected a tar archive".into(),
            });
        }
        let mut f = File::open(path).map_err(|e| SourceError::io(path, e))?;
        let mut head = [0u8; 4];
        let n = read_up_to(&mut f, &mut head).map_err(|e| SourceError::io(path, e))?;
        f.seek(SeekFrom::Start(0))
            .map_err(|e| SourceError::io(path, e))?;
        let compression = Compression::sniff(&head[..n]);
        let not_tar = |e: io::Error| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                SourceError::Invalid {
                    path: path.to_path_buf(),
                    what: "archive".into(),
                    reason: format!("truncated: the archive ends inside its content ({e})"),
                }
            } else {
                SourceError::NotAnImage {
                    path: path.to_path_buf(),
                    reason: format!("not a readable tar archive: {e}"),
                }
            }
        };
        let (members, kept) = match compression {
            Compression::None => {
                index_entries(TarReader::new_seekable(BufReader::new(f)), false).map_err(not_tar)?
            }
            Compression::Gzip | Compression::Zstd => {
                let dec = decoder(compression, f).map_err(not_tar)?;
                index_entries(TarReader::new(dec), true).map_err(not_tar)?
            }
        };
        let decoders_started = AtomicUsize::new(usize::from(compression != Compression::None));
        // A plain tar is indexed by seeking past member data, which succeeds beyond the end
        // of a cut-off file: a member that ends past the file's length means truncation
        // (`docker save` writes manifest.json last, so it would look like "not an image").
        if compression == Compression::None {
            if let Some((name, end)) = members
                .iter()
                .map(|(n, m)| (n, m.offset.saturating_add(m.size)))
                .max_by_key(|(_, end)| *end)
                .filter(|(_, end)| *end > meta.len())
            {
                return Err(SourceError::Invalid {
                    path: path.to_path_buf(),
                    what: "archive".into(),
                    reason: format!(
                        "truncated: member {name} ends at byte {end} but the file has {} bytes",
                        meta.len()
                    ),
                });
            }
        }
        if members.is_empty() {
            return Err(SourceError::NotAnImage {
                path: path.to_path_buf(),
                reason: "not a tar archive (or an empty one)".into(),
            });
        }
        Ok(TarArchive {
            path: path.to_path_buf(),
            compression,
            members,
            kept,
            cursor: Arc::default(),
            decoders_started,
        })
    }

    /// How many times a decoder started from the beginning of this (compressed) archive.
    #[cfg(test)]
    pub(crate) fn decoders_started(&self) -> usize {
        self.decoders_started.load(Ordering::SeqCst)
    }

    /// Where member `name`'s data starts in the decompressed stream, for a compressed
    /// archive (whose members are best read in this order); None for a plain one.
    fn stream_offset(&self, name: &str) -> Option<u64> {
        if self.compression == Compression::None {
            return None;
        }
        self.resolve(name).ok().map(|(_, m)| m.offset)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `name` exists (after resolving links) as a regular file.
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_ok()
    }

    /// Follow symlinks (in any component) and hardlinks inside the archive to a regular file.
    fn resolve(&self, name: &str) -> Result<(String, &Member), String> {
        let mut hops = 0;
        let mut cur = ImagePath::new(name).map_err(|e| format!("member {name:?}: {e}"))?;
        'restart: loop {
            // Resolve directory components first.
            let comps: Vec<String> = cur.components().map(str::to_string).collect();
            let mut prefix = ImagePath::root();
            for (i, c) in comps.iter().enumerate() {
                let next = prefix.join(c)?;
                let last = i + 1 == comps.len();
                match self.members.get(next.as_str()) {
                    Some(Member {
                        kind: MemberKind::Symlink(t),
                        ..
                    }) => {
                        hops += 1;
                        if hops > MAX_LINK_HOPS {
                            return Err(format!("member {name:?}: too many links"));
                        }
                        let mut target = next.resolve_link(t);
                        for rest in &comps[i + 1..] {
                            target = target.join(rest)?;
                        }
                        cur = target;
                        continue 'restart;
                    }
                    Some(Member {
                        kind: MemberKind::Hardlink(t),
                        ..
                    }) if last => {
                        hops += 1;
                        if hops > MAX_LINK_HOPS {
                            return Err(format!("member {name:?}: too many links"));
                        }
                        cur = ImagePath::new(t)?;
                        continue 'restart;
                    }
                    Some(
                        m @ Member {
                            kind: MemberKind::File,
                            ..
                        },
                    ) if last => return Ok((next.as_str().to_string(), m)),
                    Some(Member {
                        kind: MemberKind::Dir | MemberKind::Other,
                        ..
                    }) if last => {
                        return Err(format!("member {name:?} is not a regular file"));
                    }
                    None if last => return Err(format!("no member {name:?}")),
                    _ => {}
                }
                prefix = next;
            }
            return Err(format!("no member {name:?}"));
        }
    }

    /// Size of the regular file `name` (after links).
    pub fn member_size(&self, name: &str) -> Result<u64, String> {
        self.resolve(name).map(|(_, m)| m.size)
    }

    /// Stream the content of member `name` (after links).
    pub fn open_member(&self, name: &str) -> io::Result<Box<dyn Read + Send>> {
        let (resolved, m) = self
            .resolve(name)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?;
        let (offset, size) = (m.offset, m.size);
        if let Some(data) = self.kept.get(&resolved) {
            return Ok(Box::new(io::Cursor::new(data.clone())));
        }
        if self.compression == Compression::None {
            let mut f = File::open(&self.path)?;
            f.seek(SeekFrom::Start(offset))?;
            return Ok(Box::new(BufReader::new(f).take(size)));
        }
        // The shared decoder when it has not passed the member yet (it is busy, or absent,
        // when another member is being read: then a decoder of our own).
        let shared = {
            let mut slot = self.cursor.lock().unwrap_or_else(|e| e.into_inner());
            match &*slot {
                Some(d) if d.pos <= offset => slot.take(),
                _ => None,
            }
        };
        let mut dec = match shared {
            Some(d) => d,
            None => {
                self.decoders_started.fetch_add(1, Ordering::SeqCst);
                Decoder {
                    stream: decoder(self.compression, File::open(&self.path)?)?,
                    pos: 0,
                }
            }
        };
        let gap = offset - dec.pos;
        let skipped = io::copy(&mut (&mut dec.stream).take(gap), &mut io::sink())?;
        if skipped < gap {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "archive ended before the member",
            ));
        }
        dec.pos = offset;
        Ok(Box::new(ForwardMember {
            decoder: Some(dec),
            left: size,
            slot: self.cursor.clone(),
        }))
    }

    /// Read a small member whole (manifests, configs).
    pub fn read_member(&self, name: &str) -> Result<Vec<u8>, SourceError> {
        let invalid = |reason: String| SourceError::Invalid {
            path: self.path.clone(),
            what: name.to_string(),
            reason,
        };
        let r = self.open_member(name).map_err(|e| invalid(e.to_string()))?;
        read_limited(r, MAX_JSON).map_err(|e| invalid(e.to_string()))
    }
}

fn decoder(compression: Compression, f: File) -> io::Result<Box<dyn Read + Send>> {
    Ok(match compression {
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            128 << 10,
            f,
        ))),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(f)?),
        Compression::None => Box::new(f),
    })
}

/// One member read through a compressed archive's decoder; dropped, it leaves the decoder
/// (where it stopped) for the next member, unless the stream failed.
struct ForwardMember {
    decoder: Option<Decoder>,
    left: u64,
    slot: Arc<Mutex<Option<Decoder>>>,
}

impl Read for ForwardMember {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(dec) = &mut self.decoder else {
            return Ok(0);
        };
        let cap = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        if cap == 0 {
            return Ok(0);
        }
        match dec.stream.read(&mut buf[..cap]) {
            Ok(n) => {
                dec.pos += n as u64;
                self.left -= n as u64;
                Ok(n)
            }
            Err(e) => {
                self.decoder = None;
                Err(e)
            }
        }
    }
}

impl Drop for ForwardMember {
    fn drop(&mut self) {
        if let Some(dec) = self.decoder.take() {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            // The decoder furthest along serves the members after it.
            if slot.as_ref().is_none_or(|d| d.pos < dec.pos) {
                *slot = Some(dec);
            }
        }
    }
}

type Index = (HashMap<String, Member>, HashMap<String, Arc<[u8]>>);

/// Every member's place; with `keep_small`, the content of small members too.
fn index_entries<R: Read>(mut tar: TarReader<R>, keep_small: bool) -> io::Result<Index> {
    let mut members = HashMap::new();
    let mut kept = HashMap::new();
    let mut kept_bytes = 0;
    while let Some(entry) = tar.next_entry()? {
        if members.len() >= MAX_MEMBERS {
            return Err(io::Error::other(format!("more than {MAX_MEMBERS} members")));
        }
        let Ok(name) = ImagePath::from_bytes(&entry.path) else {
            continue; // an escaping member name can never be referenced by a manifest
        };
        let link = || {
            entry
                .link
                .as_deref()
                .map(name_from_bytes)
                .unwrap_or_default()
        };
        let kind = match entry.kind {
            EntryKind::File if !entry.sparse => MemberKind::File,
            EntryKind::Dir => MemberKind::Dir,
            EntryKind::Symlink => MemberKind::Symlink(link()),
            EntryKind::Hardlink => MemberKind::Hardlink(link()),
            _ => MemberKind::Other,
        };
        let keep = keep_small
            && matches!(kind, MemberKind::File)
            && entry.size <= KEEP_MEMBER
            && kept_bytes + entry.size <= KEEP_TOTAL;
        if keep {
            let mut data = Vec::new();
            tar.content().read_to_end(&mut data)?;
            kept_bytes += entry.size;
            kept.insert(name.as_str().to_string(), Arc::from(data));
        }
        members.insert(
            name.as_str().to_string(),
            Member {
                kind,
                offset: entry.data_offset,
                size: entry.size,
            },
        );
    }
    Ok((members, kept))
}

/// A layer (or any blob) stored as an archive member, opened in place.
pub(crate) struct MemberBlob {
    pub archive: Arc<TarArchive>,
    pub name: String,
    /// Checked while streaming, when set.
    pub verify: Option<Digest>,
    /// See [`VerifyingReader::only_if_plain`].
    pub verify_only_if_plain: bool,
}

impl LayerBlob for MemberBlob {
    fn stream_offset(&self) -> Option<u64> {
        self.archive.stream_offset(&self.name)
    }

    fn stored_size(&self) -> Result<Option<u64>, String> {
        self.archive.member_size(&self.name).map(Some)
    }

    /// Checked only when the member is a plain tar, when it is `only_if_plain`: the walk asks
    /// for the checked digest of plain layers only.
    fn checked_digest(&self) -> Option<String> {
        self.verify
            .as_ref()
            .filter(|d| d.verifiable())
            .map(|d| d.to_string())
    }

    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        let r = self.archive.open_member(&self.name).map_err(|e| {
            anyhow::anyhow!("{}: member {}: {e}", self.archive.path.display(), self.name)
        })?;
        Ok(match &self.verify {
            Some(d) if d.verifiable() => {
                let v = VerifyingReader::new(r, d.clone());
                if self.verify_only_if_plain {
                    Box::new(v.only_if_plain())
                } else {
                    Box::new(v)
                }
            }
            _ => r,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DockerManifestEntry {
    config: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    layers: Vec<String>,
}

/// `name[:tag]` in the fully qualified form docker uses, for comparing RepoTags (the one
/// reference grammar, [`crate::vocab::reference`]); a name it cannot cut stays as written.
fn normalize_name(name: &str) -> String {
    match crate::vocab::Reference::split(name) {
        Some(r) => format!(
            "{}/{}:{}",
            r.registry(),
            r.api_repository(),
            r.tag.as_deref().unwrap_or("latest")
        ),
        None => name.to_string(),
    }
}

/// `docker-archive:`: follow manifest.json, never a fixed layout (docker's `<id>/layer.tar`,
/// skopeo's `<diffid>.tar` with symlinked legacy folders, Docker 25's `blobs/sha256/…`).
pub fn open_docker_archive(
    archive: Arc<TarArchive>,
    selector: Option<&Selector>,
    platform: Option<&Platform>,
) -> Result<Image, SourceError> {
    let path = archive.path.clone();
    let shown = display_path(&path);
    if !archive.contains("manifest.json") {
        return Err(SourceError::NotAnImage {
            path,
            reason: "no manifest.json in the archive (not a docker-archive)".into(),
        });
    }
    let invalid = |what: &str, reason: String| SourceError::Invalid {
        path: archive.path.clone(),
        what: what.to_string(),
        reason,
    };
    let data = archive.read_member("manifest.json")?;
    let entries: Vec<DockerManifestEntry> =
        serde_json::from_slice(&data).map_err(|e| invalid("manifest.json", e.to_string()))?;
    let describe = |i: usize, e: &DockerManifestEntry| -> Vec<String> {
        match e.repo_tags.as_deref() {
            Some(tags) if !tags.is_empty() => tags.to_vec(),
            _ => vec![format!("@{i}")],
        }
    };
    let available = || -> Vec<String> {
        entries
            .iter()
            .enumerate()
            .flat_map(|(i, e)| describe(i, e))
            .collect()
    };
    let (index, entry) = match selector {
        None if entries.len() == 1 => (0, &entries[0]),
        None => {
            return Err(SourceError::ImageNotFound {
                reference: format!("docker-archive:{shown}"),
                wanted: format!(
                    "chosen: the archive holds {} images, pick one with :NAME:TAG or :@N",
                    entries.len()
                ),
                available: available(),
            })
        }
        Some(Selector::Index(i)) => match entries.get(*i) {
            Some(e) => (*i, e),
            None => {
                return Err(SourceError::ImageNotFound {
                    reference: format!("docker-archive:{shown}"),
                    wanted: format!("@{i}"),
                    available: available(),
                })
            }
        },
        Some(Selector::Name(n)) => {
            let want = normalize_name(n);
            match entries.iter().enumerate().find(|(_, e)| {
                e.repo_tags
                    .iter()
                    .flatten()
                    .any(|t| t == n || normalize_name(t) == want)
            }) {
                Some(found) => found,
                None => {
                    return Err(SourceError::ImageNotFound {
                        reference: format!("docker-archive:{shown}"),
                        wanted: n.clone(),
                        available: available(),
                    })
                }
            }
        }
        Some(Selector::Digest(d)) => {
            return Err(SourceError::BadReference {
                reference: format!("docker-archive:{shown}:@{d}"),
                reason: "docker-archive images are chosen by name:tag or @index".into(),
            })
        }
    };

    let config_bytes = archive.read_member(&entry.config)?;
    let config_hex = sha256_hex(&config_bytes);
    // Docker names the config `<sha256>.json` (or blobs/sha256/<hex>): check it when it does.
    let file_stem = entry
        .config
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_end_matches(".json");
    if file_stem.len() == 64
        && file_stem.bytes().all(|b| b.is_ascii_hexdigit())
        && file_stem != config_hex
    {
        return Err(invalid(
            &entry.config,
            format!("config digest mismatch: content hashes to sha256:{config_hex}"),
        ));
    }
    let parsed = parse_config(&config_bytes).map_err(|e| invalid(&entry.config, e))?;
    let reference = match selector {
        Some(s) => format!("docker-archive:{shown}:{s}"),
        None => format!("docker-archive:{shown}"),
    };
    let platform = check_platform(&reference, parsed.platform.as_ref(), platform)?;

    super::check_diff_id_count(entry.layers.len(), &parsed.diff_ids)
        .map_err(|e| invalid(&entry.config, e))?;
    let mut layers = Vec::with_capacity(entry.layers.len());
    for (i, name) in entry.layers.iter().enumerate() {
        let size = archive
            .member_size(name)
            .map_err(|e| invalid(&format!("layer {name}"), e))?;
        let diff_id = parsed.diff_ids.get(i).cloned();
        let verify = diff_id.as_deref().and_then(|d| Digest::parse(d).ok());
        layers.push(Layer {
            // docker save writes layers uncompressed, so the blob digest is the diff_id.
            digest: diff_id.clone(),
            diff_id,
            media_type: Some("application/vnd.docker.image.rootfs.diff.tar".into()),
            size: Some(size),
            content: LayerContent::Tar(Box::new(MemberBlob {
                archive: archive.clone(),
                name: name.clone(),
                verify,
                verify_only_if_plain: true,
            })),
        });
    }
    let _ = index;
    Ok(Image {
        reference,
        platform,
        digest: Some(format!("sha256:{config_hex}")),
        config: parsed.facts,
        layers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = ::tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut h = ::tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    /// A docker-archive of `layers` layers (each with a file of its own, larger than the
    /// members kept in memory), compressed whole with `compress`.
    fn docker_archive(layers: usize, compress: fn(&[u8]) -> Vec<u8>) -> tempfile::NamedTempFile {
        let mut members: Vec<(String, Vec<u8>)> = Vec::new();
        let mut diff_ids = Vec::new();
        for i in 0..layers {
            let big: Vec<u8> = (0..(KEEP_MEMBER as usize + 4096))
                .map(|k| (k * (i + 7) % 251) as u8)
                .collect();
            let layer = tar_of(&[(&format!("layer{i}/data.bin"), &big)]);
            let hex = sha256_hex(&layer);
            diff_ids.push(format!("sha256:{hex}"));
            members.push((format!("{hex}/layer.tar"), layer));
        }
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "amd64", "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": diff_ids}}))
        .unwrap();
        let config_name = format!("{}.json", sha256_hex(&config));
        let layer_names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        let manifest = serde_json::to_vec(&serde_json::json!([{
            "Config": config_name, "RepoTags": ["t:1"], "Layers": layer_names}]))
        .unwrap();
        members.push((config_name, config));
        // Last, as `docker save` writes it.
        members.push(("manifest.json".into(), manifest));
        let files: Vec<(&str, &[u8])> = members
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&compress(&tar_of(&files))).unwrap();
        f
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 1).unwrap()
    }

    #[test]
    fn compressed_archive_is_decompressed_twice_whatever_its_layer_count() {
        for (what, compress) in [("gzip", gzip as fn(&[u8]) -> Vec<u8>), ("zstd", zstd)] {
            let file = docker_archive(6, compress);
            let archive = Arc::new(TarArchive::open(file.path()).unwrap());
            assert_eq!(archive.decoders_started(), 1, "{what}: the index pass");
            let image = open_docker_archive(archive.clone(), None, None).unwrap();
            // Several walker threads, as by default: the layers still go one pass.
            let opts = crate::scan::ScanOptions {
                walk: crate::walk::WalkOptions {
                    threads: Some(4),
                    ..Default::default()
                },
                ..Default::default()
            };
            let walked = crate::scan::walk_image(&image, &crate::detect::Detectors::none(), &opts);
            assert!(walked.errors.is_empty(), "{what}: {:?}", walked.errors);
            for (i, layer) in walked.layers.iter().enumerate() {
                assert!(layer.verified_diff_id.is_some(), "{what}: layer {i}");
                let p = crate::vocab::ImagePath::new(&format!("layer{i}/data.bin")).unwrap();
                assert!(walked.tree.get(&p).is_some(), "{what}: layer {i}'s file");
            }
            assert_eq!(
                archive.decoders_started(),
                2,
                "{what}: index + one pass over the layers, not one per layer"
            );
        }
    }

    #[test]
    fn normalizes_repo_tags() {
        assert_eq!(normalize_name("foo"), "docker.io/library/foo:latest");
        assert_eq!(normalize_name("foo:1"), "docker.io/library/foo:1");
        assert_eq!(normalize_name("a/b:1"), "docker.io/a/b:1");
        assert_eq!(normalize_name("localhost:5000/a:2"), "localhost:5000/a:2");
        assert_eq!(
            normalize_name("nvcr.io/nvidia/cuda:12"),
            "nvcr.io/nvidia/cuda:12"
        );
    }
}
