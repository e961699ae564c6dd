//! `docker://REGISTRY/REPO[:TAG|@DIGEST]`: the OCI distribution API. Opening an image
//! fetches the manifest (choosing a platform from an index or manifest list) and the config,
//! each verified against its digest; layers are fetched only when the walker opens them, so
//! a fully cached image costs two or three small requests. Layer bytes are hashed while they
//! stream and a mismatch fails the read with an error naming the layer; a connection broken
//! mid-blob is resumed with a Range request.

mod auth;
#[doc(hidden)] // for the fuzz targets only
pub use auth::{parse_challenge, Challenge};
mod client;
pub mod reference;

use crate::source::error::{LiveError, LiveErrorKind};
use crate::source::options::SourceOptions;
use crate::source::{Image, ImageConfigFacts, Layer, LayerBlob, LayerContent, Platform};
use client::Client;
use reference::RegistryRef;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

pub use reference::RegistryRef as Reference;

pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_SCHEMA1: &str = "application/vnd.docker.distribution.manifest.v1";

/// Without an Accept listing these, distribution answers with schema1.
const ACCEPT_ANY: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json";

const MAX_MANIFEST: u64 = 4 << 20;
const MAX_CONFIG: u64 = 64 << 20;
const MAX_RESUMES: u32 = 3;

#[derive(Deserialize)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: Option<String>,
    digest: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    platform: Option<DescPlatform>,
}

#[derive(Deserialize)]
struct DescPlatform {
    architecture: String,
    os: String,
    #[serde(default)]
    variant: Option<String>,
}

#[derive(Deserialize)]
struct ManifestDoc {
    #[serde(rename = "schemaVersion", default)]
    schema_version: Option<u32>,
    #[serde(rename = "mediaType", default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
}

#[derive(Deserialize, Default)]
struct ConfigDoc {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    config: Option<RunConfig>,
    #[serde(default)]
    rootfs: Option<RootFs>,
}

#[derive(Deserialize, Default)]
struct RunConfig {
    #[serde(rename = "Env", default)]
    env: Option<Vec<String>>,
    #[serde(rename = "Entrypoint", default)]
    entrypoint: Option<Vec<String>>,
    #[serde(rename = "Cmd", default)]
    cmd: Option<Vec<String>>,
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "WorkingDir", default)]
    working_dir: Option<String>,
    #[serde(rename = "User", default)]
    user: Option<String>,
}

#[derive(Deserialize, Default)]
struct RootFs {
    #[serde(default)]
    diff_ids: Vec<String>,
}

fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn integrity(msg: String) -> anyhow::Error {
    LiveError::new(LiveErrorKind::Integrity, msg).into()
}

fn protocol(msg: String) -> anyhow::Error {
    LiveError::new(LiveErrorKind::Protocol, msg).into()
}

/// Read a small document, bounded, and check it against `expected` when given.
fn fetch_small(
    client: &Client,
    path: &str,
    accept: Option<&str>,
    limit: u64,
    expected: Option<&str>,
    what: &str,
) -> anyhow::Result<(Vec<u8>, Option<String>)> {
    let resp = client.get(path, accept, None, Some(client::SMALL_REQUEST))?;
    let content_type = resp.header("content-type").map(str::to_string);
    let mut body = Vec::new();
    resp.into_reader()
        .take(limit + 1)
        .read_to_end(&mut body)
        .map_err(|e| {
            LiveError::new(
                if client::is_io_timeout(&e) {
                    LiveErrorKind::Timeout
                } else {
                    LiveErrorKind::Unreachable
                },
                format!("{}: reading {what}: {e}", client.registry()),
            )
        })?;
    if body.len() as u64 > limit {
        return Err(protocol(format!(
            "{}: {what} is larger than {limit} bytes",
            client.registry()
        )));
    }
    if let Some(exp) = expected {
        if !exp.starts_with("sha256:") {
            return Err(integrity(format!(
                "{what}: unsupported digest algorithm in {exp}"
            )));
        }
        let got = sha256_digest(&body);
        if got != exp {
            return Err(integrity(format!(
                "{what} {exp}: digest mismatch: content hashes to {got}"
            )));
        }
    }
    Ok((body, content_type))
}

fn platform_of(p: &DescPlatform) -> Platform {
    Platform {
        os: p.os.clone(),
        architecture: p.architecture.clone(),
        variant: p.variant.clone().filter(|v| !v.is_empty()),
    }
}

/// Whether an index entry serves `want`. arm64's variant v8 is implied; 32-bit arm
/// defaults to v7 when no variant is asked for.
fn platform_matches(have: &Platform, want: &Platform) -> bool {
    if have.os != want.os || have.architecture != want.architecture {
        return false;
    }
    let norm = |p: &Platform| -> Option<String> {
        match (p.architecture.as_str(), p.variant.as_deref()) {
            ("arm64", Some("v8")) | ("arm64", None) => None,
            ("arm", None) => Some("v7".into()),
            (_, v) => v.map(str::to_string),
        }
    };
    match &want.variant {
        None if want.architecture != "arm" => true,
        _ => norm(have) == norm(want),
    }
}

fn kind_of(doc: &ManifestDoc, content_type: Option<&str>) -> &'static str {
    let mt = doc
        .media_type
        .as_deref()
        .or(content_type)
        .map(|m| m.split(';').next().unwrap_or(m).trim())
        .unwrap_or("");
    if doc.schema_version == Some(1) || mt.starts_with(DOCKER_SCHEMA1) {
        "schema1"
    } else if doc.manifests.is_some() || mt == OCI_INDEX || mt == DOCKER_LIST {
        "index"
    } else {
        "manifest"
    }
}

/// Open `docker://REGISTRY/REPO[:TAG|@DIGEST]` (the `docker://` prefix optional; bare names
/// are normalised as Docker Hub names). `platform`: the one to pick from an index (default:
/// this host's); for a single-platform image, a different explicit platform is an error.
pub fn open_registry(
    reference: &str,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    let r = RegistryRef::parse(reference)?;
    let client = Arc::new(Client::new(&r, opts));
    let want = platform.cloned().unwrap_or_else(Platform::host);

    let (mut body, mut ctype) = fetch_small(
        &client,
        &format!("manifests/{}", r.manifest_ref()),
        Some(ACCEPT_ANY),
        MAX_MANIFEST,
        r.digest.as_deref(),
        &format!("manifest of {r}"),
    )?;
    let mut manifest_digest = sha256_digest(&body);
    let mut doc: ManifestDoc = serde_json::from_slice(&body)
        .map_err(|e| protocol(format!("{r}: manifest is not valid JSON: {e}")))?;
    match kind_of(&doc, ctype.as_deref()) {
        "schema1" => {
            return Err(protocol(format!(
                "{r}: the registry answered with a Docker schema1 manifest, which gpulint does not read"
            )))
        }
        "index" => {
            let entries = doc.manifests.take().unwrap_or_default();
            let available: Vec<String> = entries
                .iter()
                .filter_map(|d| d.platform.as_ref().map(|p| platform_of(p).to_string()))
                .filter(|p| p != "unknown/unknown")
                .collect();
            let chosen = entries
                .iter()
                .find(|d| d.platform.as_ref().is_some_and(|p| platform_matches(&platform_of(p), &want)))
                .ok_or_else(|| {
                    anyhow::Error::new(LiveError::new(
                        LiveErrorKind::NotFound,
                        format!("{r}: no image for platform {want}; available: {}", available.join(", ")),
                    ))
                })?;
            let digest = chosen.digest.clone();
            (body, ctype) = fetch_small(
                &client,
                &format!("manifests/{digest}"),
                Some(ACCEPT_ANY),
                MAX_MANIFEST,
                Some(&digest),
                &format!("manifest of {r} for {want}"),
            )?;
            manifest_digest = digest;
            doc = serde_json::from_slice(&body)
                .map_err(|e| protocol(format!("{r}: platform manifest is not valid JSON: {e}")))?;
            if kind_of(&doc, ctype.as_deref()) != "manifest" {
                return Err(protocol(format!("{r}: index entry {manifest_digest} is not an image manifest")));
            }
        }
        _ => {}
    }

    let config_desc = doc
        .config
        .as_ref()
        .ok_or_else(|| protocol(format!("{r}: manifest has no config")))?;
    let (config_bytes, _) = fetch_small(
        &client,
        &format!("blobs/{}", config_desc.digest),
        None,
        MAX_CONFIG,
        Some(&config_desc.digest),
        &format!("config of {r}"),
    )?;
    let cfg: ConfigDoc = serde_json::from_slice(&config_bytes)
        .map_err(|e| protocol(format!("{r}: config is not valid JSON: {e}")))?;
    let image_platform = Platform {
        os: cfg.os.clone(),
        architecture: cfg.architecture.clone(),
        variant: cfg.variant.clone().filter(|v| !v.is_empty()),
    };
    if let Some(p) = platform {
        if !cfg.os.is_empty() && !platform_matches(&image_platform, p) {
            return Err(LiveError::new(
                LiveErrorKind::NotFound,
                format!("{r} is a single-platform image for {image_platform}, not {p}"),
            )
            .into());
        }
    }

    let layer_descs = doc.layers.unwrap_or_default();
    let diff_ids = cfg.rootfs.map(|r| r.diff_ids).unwrap_or_default();
    if diff_ids.len() != layer_descs.len() {
        return Err(protocol(format!(
            "{r}: manifest lists {} layers but the config has {} diff_ids",
            layer_descs.len(),
            diff_ids.len()
        )));
    }
    let layers = layer_descs
        .into_iter()
        .zip(diff_ids)
        .map(|(d, diff_id)| {
            if !d.digest.starts_with("sha256:") {
                return Err(integrity(format!(
                    "{r}: layer {}: unsupported digest algorithm",
                    d.digest
                )));
            }
            Ok(Layer {
                digest: Some(d.digest.clone()),
                diff_id: Some(diff_id),
                media_type: d.media_type.clone(),
                size: d.size,
                content: LayerContent::Tar(Box::new(RegistryBlob {
                    client: client.clone(),
                    digest: d.digest,
                    size: d.size,
                    progress: opts.progress.clone(),
                })),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;

    let rc = cfg.config.unwrap_or_default();
    Ok(Image {
        reference: format!("docker://{r}"),
        platform: if cfg.os.is_empty() {
            want
        } else {
            image_platform
        },
        digest: Some(manifest_digest),
        config: ImageConfigFacts {
            env: rc.env.unwrap_or_default(),
            entrypoint: rc.entrypoint.unwrap_or_default(),
            cmd: rc.cmd.unwrap_or_default(),
            labels: rc.labels.unwrap_or_default(),
            working_dir: rc.working_dir.filter(|w| !w.is_empty()),
            user: rc.user.filter(|u| !u.is_empty()),
        },
        layers,
    })
}

struct RegistryBlob {
    client: Arc<Client>,
    digest: String,
    size: Option<u64>,
    progress: crate::progress::Progress,
}

impl LayerBlob for RegistryBlob {
    /// The download is hashed against the manifest's digest (`VerifyingReader` below).
    fn checked_digest(&self) -> Option<String> {
        Some(self.digest.clone())
    }

    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        let permit = self.client.download_permit();
        let resp = self
            .client
            .get(&format!("blobs/{}", self.digest), None, None, None)
            .map_err(|e| LiveError::new(e.kind, format!("layer {}: {}", self.digest, e.message)))?;
        Ok(Box::new(VerifyingReader {
            blob: RegistryBlob {
                client: self.client.clone(),
                digest: self.digest.clone(),
                size: self.size,
                progress: self.progress.clone(),
            },
            inner: resp.into_reader(),
            hasher: Sha256::new(),
            read: 0,
            resumes: 0,
            timeouts: 0,
            done: false,
            _permit: permit,
        }))
    }
}

/// Hashes the blob as it streams; at EOF a digest (or size) mismatch is an error naming the
/// layer, so nothing downstream can take a corrupt layer for a good one. A read error
/// mid-stream resumes from the current offset.
struct VerifyingReader {
    blob: RegistryBlob,
    inner: Box<dyn Read + Send + Sync>,
    hasher: Sha256,
    read: u64,
    resumes: u32,
    /// Reads that timed out (a second one ends the download).
    timeouts: u32,
    done: bool,
    _permit: client::Permit,
}

impl VerifyingReader {
    fn fail(&self, msg: String) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("layer {}: {msg}", self.blob.digest),
        )
    }

    /// Content that does not match its digest: typed, so the walk reports a digest mismatch
    /// without reading the message.
    fn integrity(&self, msg: String) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            LiveError::new(
                LiveErrorKind::Integrity,
                format!("layer {}: {msg}", self.blob.digest),
            ),
        )
    }

    fn resume(&mut self, cause: std::io::Error) -> std::io::Result<()> {
        if client::is_io_timeout(&cause) {
            self.timeouts += 1;
            let out_of_time = self.blob.client.time_left("downloading").is_err();
            if self.timeouts > 1 || out_of_time {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    LiveError::new(
                        LiveErrorKind::Timeout,
                        format!(
                            "layer {}: no data in time after {} bytes ({cause}){}",
                            self.blob.digest,
                            self.read,
                            if out_of_time {
                                "; --timeout ran out"
                            } else {
                                ""
                            }
                        ),
                    ),
                ));
            }
        }
        if self.resumes >= MAX_RESUMES {
            return Err(self.fail(format!(
                "download failed after {MAX_RESUMES} resumes: {cause}"
            )));
        }
        self.resumes += 1;
        std::thread::sleep(std::time::Duration::from_millis(250 << self.resumes));
        let resp = self
            .blob
            .client
            .get(
                &format!("blobs/{}", self.blob.digest),
                None,
                Some(self.read),
                None,
            )
            .map_err(|e| self.fail(format!("resuming after {cause}: {e}")))?;
        if resp.status() != 206 {
            return Err(self.fail(format!(
                "download broke ({cause}) and the registry cannot resume it"
            )));
        }
        self.inner = resp.into_reader();
        Ok(())
    }
}

impl Read for VerifyingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        loop {
            match self.inner.read(buf) {
                Ok(0) => {
                    self.done = true;
                    if let Some(size) = self.blob.size {
                        if self.read != size {
                            return Err(
                                self.fail(format!("expected {size} bytes, got {}", self.read))
                            );
                        }
                    }
                    let got = format!("sha256:{}", hex::encode(self.hasher.clone().finalize()));
                    if got != self.blob.digest {
                        return Err(
                            self.integrity(format!("digest mismatch: content hashes to {got}"))
                        );
                    }
                    return Ok(0);
                }
                Ok(n) => {
                    if let Err(e) = self.blob.client.time_left("downloading") {
                        self.done = true;
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            LiveError::new(
                                e.kind,
                                format!(
                                    "layer {}: {} after {} bytes",
                                    self.blob.digest, e.message, self.read
                                ),
                            ),
                        ));
                    }
                    self.read += n as u64;
                    if self.blob.size.is_some_and(|s| self.read > s) {
                        self.done = true;
                        return Err(self.fail(format!(
                            "more bytes than the {} the manifest declares",
                            self.blob.size.unwrap_or(0)
                        )));
                    }
                    self.hasher.update(&buf[..n]);
                    self.blob.progress.downloaded(n as u64);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => self.resume(e)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Platform {
        s.parse().unwrap()
    }

    #[test]
    fn platform_matching() {
        assert!(platform_matches(&p("linux/amd64"), &p("linux/amd64")));
        assert!(!platform_matches(&p("linux/arm64"), &p("linux/amd64")));
        assert!(platform_matches(&p("linux/arm64/v8"), &p("linux/arm64")));
        assert!(platform_matches(&p("linux/arm64"), &p("linux/arm64/v8")));
        assert!(platform_matches(&p("linux/arm/v7"), &p("linux/arm")));
        assert!(!platform_matches(&p("linux/arm/v6"), &p("linux/arm")));
        assert!(platform_matches(&p("linux/amd64/v3"), &p("linux/amd64")));
    }
}
