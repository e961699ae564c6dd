//! Where an image comes from. Each transport (`docker-archive:`, `oci:`, `oci-archive:`,
//! `dir:`, and later `docker-daemon:` / `docker://`) turns a reference into an [`Image`]:
//! the image config facts plus an ordered list of layers whose bytes can be streamed.
//! Nothing here looks inside layers; that is `walk`'s job.

pub mod daemon;
pub mod live;
pub mod registry;

pub use daemon::open_daemon;
pub use live::{open_bare_name, LiveError, LiveErrorKind, SourceArgs, SourceOptions};
pub use registry::open_registry;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

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
}

/// The content of one layer.
pub enum LayerContent {
    /// A tar stream (possibly compressed).
    Tar(Box<dyn LayerBlob>),
    /// A plain directory tree on disk (the `dir:` transport): walked with the filesystem,
    /// never following links out of it.
    Dir(PathBuf),
}

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
pub struct Image {
    /// The reference the user gave, normalized (`docker-archive:/x.tar`, `oci:/dir:tag`).
    pub reference: String,
    pub platform: Platform,
    /// Digest of the manifest (or of the config when there is no manifest), when known.
    pub digest: Option<String>,
    pub config: ImageConfigFacts,
    pub layers: Vec<Layer>,
}
