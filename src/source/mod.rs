//! Where an image comes from. Each transport (`docker-archive:`, `oci:`, `oci-archive:`,
//! `dir:`, `docker-daemon:`, `docker://`) turns a reference into an [`Image`]:
//! the image config facts plus an ordered list of layers whose bytes can be streamed.
//! Nothing here looks inside layers; that is `walk`'s job.
//!
//! [`open_image`] (in `open`) is the one dispatcher from a reference to its transport's
//! module. Every failure is a [`SourceError`] or a [`LiveError`] (in `error`) whose message
//! names the thing; all of them mean "unusable input" (exit 2). `options` holds how daemons
//! and registries are reached and the flags that say so.

pub mod archive;
pub mod daemon;
pub mod digest;
pub mod dir;
pub mod error;
pub mod oci_layout;
pub mod open;
pub mod options;
pub mod reference;
pub mod registry;

pub use daemon::open_daemon;
pub use error::{live_error_kind, LiveError, LiveErrorKind, SourceError};
pub use open::{open_image, open_transport};
pub use options::{SourceArgs, SourceOptions};
pub use reference::{parse_reference, Selector, Transport};
pub use registry::open_registry;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// os/arch[/variant], as in OCI image indexes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// The platform of the machine gpulint runs on, in OCI/Go naming (amd64, arm64, …).
    pub fn host() -> Platform {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "powerpc64" => "ppc64le",
            other => other,
        }
        .to_string();
        Platform {
            os: "linux".into(),
            architecture,
            variant: None,
        }
    }
}

impl Platform {
    /// Whether an image of platform `self` satisfies a request for `wanted`. A request without
    /// a variant accepts any variant; arm64's default variant `v8` equals no variant.
    pub fn satisfies(&self, wanted: &Platform) -> bool {
        let norm = |p: &Platform| match (p.architecture.as_str(), p.variant.as_deref()) {
            ("arm64", Some("v8")) => None,
            (_, v) => v.map(str::to_string),
        };
        self.os == wanted.os
            && self.architecture == wanted.architecture
            && (wanted.variant.is_none() || norm(self) == norm(wanted))
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Platform {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: None,
            }),
            [os, arch, v] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: Some(v.to_string()),
            }),
            _ => Err(format!(
                "invalid platform {s:?}: expected os/arch[/variant], e.g. linux/amd64"
            )),
        }
    }
}

/// What the image config says that matters to us.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImageConfigFacts {
    /// `KEY=VALUE` pairs in config order.
    pub env: Vec<String>,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
}

impl ImageConfigFacts {
    /// The last value of `key` in ENV (later entries win, as in Docker).
    pub fn env_var(&self, key: &str) -> Option<&str> {
        self.env.iter().rev().find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then_some(v)
        })
    }
}

/// A way to (re)open a layer's bytes as a stream. Compressed or not: the walker sniffs
/// gzip / zstd / plain tar from the first bytes.
pub trait LayerBlob: Send + Sync {
    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>>;

    /// Where the blob starts in a decompressed stream it shares with other blobs (a member
    /// of a compressed archive). Such blobs are opened one at a time in this order, so the
    /// stream is decompressed once for all of them.
    fn stream_offset(&self) -> Option<u64> {
        None
    }

    /// The digest that `open`'s reader checks the blob's bytes against (a mismatch is an error
    /// at the end of the stream), when it checks one. An uncompressed layer checked against
    /// its diff_id this way is not hashed a second time by the walk.
    fn checked_digest(&self) -> Option<String> {
        None
    }

    /// The blob's size as stored now, when that can be had without reading it (a file's or
    /// an archive member's length): a cache hit is taken only when it equals the manifest's
    /// size. Ok(None) where it cannot (a registry or daemon blob); Err where the blob is gone.
    fn stored_size(&self) -> Result<Option<u64>, String> {
        Ok(None)
    }
}

/// The content of one layer.
pub enum LayerContent {
    /// A tar stream (possibly compressed).
    Tar(Box<dyn LayerBlob>),
    /// A plain directory tree on disk (the `dir:` transport): walked with the filesystem,
    /// never following links out of it.
    Dir(PathBuf),
}

impl std::fmt::Debug for LayerContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayerContent::Tar(_) => f.write_str("Tar(..)"),
            LayerContent::Dir(p) => f.debug_tuple("Dir").field(p).finish(),
        }
    }
}

#[derive(Debug)]
pub struct Layer {
    /// Blob digest (`sha256:…`) when known: the cache key and the name used in messages.
    pub digest: Option<String>,
    /// Uncompressed digest from the config's rootfs.diff_ids, when known.
    pub diff_id: Option<String>,
    pub media_type: Option<String>,
    /// Size in bytes of the blob as stored, when known.
    pub size: Option<u64>,
    pub content: LayerContent,
}

impl Layer {
    /// A short human name for messages: digest, else diff_id, else the position.
    pub fn display_name(&self, index: usize) -> String {
        self.digest
            .clone()
            .or_else(|| self.diff_id.clone())
            .unwrap_or_else(|| format!("layer #{index}"))
    }
}

/// An image resolved from a reference: config facts and layers, bottom first.
#[derive(Debug)]
pub struct Image {
    /// The reference the user gave, normalized (`docker-archive:/x.tar`, `oci:/dir:tag`).
    pub reference: String,
    pub platform: Platform,
    /// Digest of the manifest (or of the config when there is no manifest), when known.
    pub digest: Option<String>,
    pub config: ImageConfigFacts,
    pub layers: Vec<Layer>,
}

/// `path` made absolute for messages and normalized references (not canonicalized: the
/// user's symlinks stay as written).
pub(crate) fn display_path(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// The parts of an image config (OCI or Docker: both use `config.Env` etc.) that we keep.
#[doc(hidden)] // pub for the fuzz targets only
pub struct ParsedConfig {
    pub facts: ImageConfigFacts,
    pub platform: Option<Platform>,
    pub diff_ids: Vec<String>,
}

#[doc(hidden)] // pub for the fuzz targets only
pub fn parse_config(data: &[u8]) -> Result<ParsedConfig, String> {
    #[derive(Deserialize)]
    struct Raw {
        architecture: Option<String>,
        os: Option<String>,
        variant: Option<String>,
        config: Option<RawContainer>,
        rootfs: Option<RawRootfs>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct RawContainer {
        env: Option<Vec<String>>,
        entrypoint: Option<Vec<String>>,
        cmd: Option<Vec<String>>,
        labels: Option<BTreeMap<String, String>>,
        working_dir: Option<String>,
        user: Option<String>,
    }
    #[derive(Deserialize)]
    struct RawRootfs {
        diff_ids: Option<Vec<String>>,
    }
    let raw: Raw =
        serde_json::from_slice(data).map_err(|e| format!("invalid image config: {e}"))?;
    let c = raw.config;
    let facts = match c {
        Some(c) => ImageConfigFacts {
            env: c.env.unwrap_or_default(),
            entrypoint: c.entrypoint.unwrap_or_default(),
            cmd: c.cmd.unwrap_or_default(),
            labels: c.labels.unwrap_or_default(),
            working_dir: c.working_dir.filter(|s| !s.is_empty()),
            user: c.user.filter(|s| !s.is_empty()),
        },
        None => ImageConfigFacts::default(),
    };
    let platform = match (raw.os, raw.architecture) {
        (Some(os), Some(architecture)) if !os.is_empty() && !architecture.is_empty() => {
            Some(Platform {
                os,
                architecture,
                variant: raw.variant.filter(|v| !v.is_empty()),
            })
        }
        _ => None,
    };
    Ok(ParsedConfig {
        facts,
        platform,
        diff_ids: raw.rootfs.and_then(|r| r.diff_ids).unwrap_or_default(),
    })
}

/// The config's `rootfs.diff_ids` must name every manifest layer, one to one: with another
/// count, layers and diff_ids cannot be paired (a layer would be walked unverified), and
/// podman and containerd refuse the image.
pub(crate) fn check_diff_id_count(layers: usize, diff_ids: &[String]) -> Result<(), String> {
    if layers == diff_ids.len() {
        return Ok(());
    }
    Err(format!(
        "the manifest lists {layers} layers but the config's rootfs.diff_ids has {} entries",
        diff_ids.len()
    ))
}

/// A single-platform image checked against an explicit `--platform`.
pub(crate) fn check_platform(
    reference: &str,
    actual: Option<&Platform>,
    requested: Option<&Platform>,
) -> Result<Platform, SourceError> {
    match (actual, requested) {
        (Some(a), Some(r)) if !a.satisfies(r) => Err(SourceError::PlatformNotFound {
            reference: reference.to_string(),
            requested: r.clone(),
            available: vec![a.clone()],
        }),
        (Some(a), _) => Ok(a.clone()),
        (None, Some(r)) => Ok(r.clone()),
        (None, None) => Ok(Platform::host()),
    }
}

/// Read at most `limit` bytes; more is an error (manifests and configs are small; a huge
/// one is hostile or not what we think it is).
pub(crate) fn read_limited(mut r: impl Read, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    (&mut r).take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(buf)
}

/// Size limits for the JSON documents we read whole.
pub(crate) const MAX_JSON: u64 = 32 << 20;
