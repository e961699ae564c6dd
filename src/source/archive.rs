//! Tar files read in place: an index of members (name → offset, size, link target) built
//! in one pass over the headers, and members opened by seeking (or, for a gzip/zstd
//! compressed archive, by decompressing and skipping) to their data. Links inside the
//! archive are resolved inside the archive. Also the `docker-archive:` transport on top.

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
use std::sync::Arc;

/// More members than this is not an image archive (and would only cost memory).
const MAX_MEMBERS: usize = 1_000_000;
const MAX_LINK_HOPS: usize = 40;

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
        let members = match compression {
            Compression::None => {
                index_entries(TarReader::new_seekable(BufReader::new(f))).map_err(not_tar)?
            }
            Compression::Gzip => index_entries(TarReader::new(flate2::read::MultiGzDecoder::new(
                BufReader::new(f),
            )))
            .map_err(not_tar)?,
            Compression::Zstd => {
                let dec = zstd::stream::read::Decoder::new(f).map_err(not_tar)?;
                index_entries(TarReader::new(dec)).map_err(not_tar)?
            }
        };
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
        })
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
        let (_, m) = self
            .resolve(name)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?;
        let (offset, size) = (m.offset, m.size);
        let f = File::open(&self.path)?;
        match self.compression {
            Compression::None => {
                let mut f = f;
                f.seek(SeekFrom::Start(offset))?;
                Ok(Box::new(BufReader::new(f).take(size)))
            }
            Compression::Gzip => skip_then_take(
                flate2::read::MultiGzDecoder::new(BufReader::new(f)),
                offset,
                size,
            ),
            Compression::Zstd => skip_then_take(zstd::stream::read::Decoder::new(f)?, offset, size),
        }
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

fn skip_then_take<R: Read + Send + 'static>(
    mut r: R,
    offset: u64,
    size: u64,
) -> io::Result<Box<dyn Read + Send>> {
    let skipped = io::copy(&mut (&mut r).take(offset), &mut io::sink())?;
    if skipped < offset {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "archive ended before the member",
        ));
    }
    Ok(Box::new(r.take(size)))
}

fn index_entries<R: Read>(mut tar: TarReader<R>) -> io::Result<HashMap<String, Member>> {
    let mut members = HashMap::new();
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
        members.insert(
            name.as_str().to_string(),
            Member {
                kind,
                offset: entry.data_offset,
                size: entry.size,
            },
        );
    }
    Ok(members)
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
