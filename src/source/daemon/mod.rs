//! `docker-daemon:NAME[:TAG]`: an image in a Docker or podman daemon, over the Docker
//! Engine API (bollard), the API version negotiated (Docker 20.10 speaks 1.41 at most).
//!
//! Where: `--docker-host` alone when given; else `DOCKER_HOST`, the current Docker context
//! (`DOCKER_CONTEXT` or `currentContext` in `config.json`, endpoint from
//! `contexts/meta/<sha256(name)>/meta.json`), `/var/run/docker.sock`, podman's
//! `CONTAINER_HOST`, `$XDG_RUNTIME_DIR/podman/podman.sock` and `/run/podman/podman.sock`.
//! The first daemon that has the image wins; when none answers, the error lists every
//! socket tried.
//!
//! What: the config and the layer diff_ids come from `GET /images/{id}/json`; layer bytes
//! from one export, `GET /images/{id}/get`, a docker-archive tar read forward once, never
//! saved whole. An export names its layers either by diff_id (podman and skopeo:
//! `<hex>.tar`; Docker 25+: `blobs/sha256/<hex>`) or by a legacy v1 id
//! (`<v1id>/layer.tar`, Docker < 25, in hash order, with `manifest.json` last), which says
//! nothing of its content until it has been hashed. So each layer entry goes:
//! - named by diff_id, and its reader is waiting: piped straight to it, hashed on the way,
//!   a mismatch failing the read;
//! - otherwise: written to a spool file while hashed, then handed to its reader, the file
//!   unlinked on open. Disk use is bounded by the layers that arrive before anyone asked
//!   for them, not the image size, when readers ask early (the scan asks for all layers it
//!   walks at once).
//!
//! A layer opened a second time, or missing from the pass, starts another export pass.

mod export;

use crate::source::error::{LiveError, LiveErrorKind};
use crate::source::options::{home_dir, SourceOptions};
use crate::source::{Image, ImageConfigFacts, Layer, LayerContent, Platform};
use anyhow::Context;
use bollard::Docker;
use export::Export;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Inspecting an image is one small request: a daemon that does not answer it is stuck.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A daemon endpoint and why we tried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `unix:///path` or `tcp://host:port`.
    pub host: String,
    /// `DOCKER_HOST`, `docker context NAME`, `default Docker socket`, `podman`, …
    pub origin: String,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.host, self.origin)
    }
}

/// The endpoints to try, in order, without duplicates.
pub fn candidate_endpoints(opts: &SourceOptions) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = Vec::new();
    let mut push = |host: String, origin: String| {
        let host = if host.starts_with('/') {
            format!("unix://{host}")
        } else {
            host
        };
        if !out.iter().any(|e| e.host == host) {
            out.push(Endpoint { host, origin });
        }
    };
    if let Some(h) = &opts.docker_host {
        push(h.clone(), "--docker-host".into());
        return out;
    }
    if let Ok(h) = std::env::var("DOCKER_HOST") {
        if !h.is_empty() {
            push(h, "DOCKER_HOST".into());
        }
    }
    if let Some((name, host)) = current_context(opts) {
        push(host, format!("docker context {name}"));
    }
    push(
        "unix:///var/run/docker.sock".into(),
        "default Docker socket".into(),
    );
    if let Ok(h) = std::env::var("CONTAINER_HOST") {
        if !h.is_empty() {
            push(h, "CONTAINER_HOST".into());
        }
    }
    if let Some(rt) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(rt).join("podman/podman.sock");
        push(
            format!("unix://{}", p.display()),
            "podman (rootless)".into(),
        );
    }
    push("unix:///run/podman/podman.sock".into(), "podman".into());
    out
}

/// The current Docker context's endpoint, unless it is `default`.
fn current_context(opts: &SourceOptions) -> Option<(String, String)> {
    let dir = opts
        .docker_config_dir()
        .or_else(|| home_dir().map(|h| h.join(".docker")))?;
    let name = match std::env::var("DOCKER_CONTEXT") {
        Ok(n) if !n.is_empty() => n,
        _ => {
            let cfg: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("config.json")).ok()?).ok()?;
            cfg.get("currentContext")?.as_str()?.to_string()
        }
    };
    if name.is_empty() || name == "default" {
        return None;
    }
    let id = hex::encode(Sha256::digest(name.as_bytes()));
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("contexts/meta").join(id).join("meta.json")).ok()?,
    )
    .ok()?;
    let host = meta
        .get("Endpoints")?
        .get("docker")?
        .get("Host")?
        .as_str()?;
    Some((name, host.to_string()))
}

fn runtime() -> anyhow::Result<Arc<tokio::runtime::Runtime>> {
    Ok(Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("starting the async runtime for the daemon client")?,
    ))
}

/// Connect and negotiate; Err is a one-line reason for the "tried" list.
fn connect(rt: &tokio::runtime::Runtime, ep: &Endpoint) -> Result<Docker, String> {
    let docker = if let Some(path) = ep.host.strip_prefix("unix://") {
        if !Path::new(path).exists() {
            return Err("no such socket".into());
        }
        Docker::connect_with_unix(path, 600, bollard::API_DEFAULT_VERSION)
    } else if ep.host.starts_with("tcp://") || ep.host.starts_with("http://") {
        if std::env::var_os("DOCKER_TLS_VERIFY").is_some_and(|v| !v.is_empty()) {
            return Err("TLS daemon endpoints are not supported".into());
        }
        Docker::connect_with_http(&ep.host, 600, bollard::API_DEFAULT_VERSION)
    } else {
        return Err("unsupported scheme (unix:// or tcp:// only)".into());
    }
    .map_err(|e| e.to_string())?;
    rt.block_on(async {
        match tokio::time::timeout(PING_TIMEOUT, docker.negotiate_version()).await {
            Ok(Ok(d)) => Ok(d),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {}s", PING_TIMEOUT.as_secs())),
        }
    })
}

/// Open `NAME[:TAG]` (or an image id) from the first reachable daemon that has it.
/// `platform`, when given, must match the image's (a daemon keeps one per tag).
pub fn open_daemon(
    name: &str,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    let name = name.strip_prefix("docker-daemon:").unwrap_or(name);
    if name.is_empty()
        || name.contains(char::is_whitespace)
        || name.contains('?')
        || name.contains('#')
    {
        return Err(LiveError::new(
            LiveErrorKind::BadReference,
            format!("invalid image name {name:?}"),
        )
        .into());
    }
    let rt = runtime()?;
    let mut tried = Vec::new();
    let mut reachable = Vec::new();
    for ep in candidate_endpoints(opts) {
        let docker = match connect(&rt, &ep) {
            Ok(d) => d,
            Err(why) => {
                tried.push(format!("{ep}: {why}"));
                continue;
            }
        };
        let inspected = rt.block_on(async {
            tokio::time::timeout(INSPECT_TIMEOUT, docker.inspect_image(name)).await
        });
        let Ok(inspected) = inspected else {
            return Err(LiveError::new(
                LiveErrorKind::Timeout,
                format!(
                    "{ep}: inspecting {name}: no answer in {} s",
                    INSPECT_TIMEOUT.as_secs()
                ),
            )
            .into());
        };
        match inspected {
            Ok(info) => {
                return image_from_inspect(name, &ep, docker, rt.clone(), info, platform, opts)
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                reachable.push(ep.to_string());
            }
            Err(e) => {
                return Err(LiveError::new(
                    LiveErrorKind::Protocol,
                    format!("{ep}: inspecting {name}: {e}"),
                )
                .into())
            }
        }
    }
    if reachable.is_empty() {
        Err(LiveError::new(
            LiveErrorKind::NoDaemon,
            format!(
                "no Docker or podman daemon reachable; tried: {}",
                tried.join("; ")
            ),
        )
        .into())
    } else {
        Err(LiveError::new(
            LiveErrorKind::NotFound,
            format!("image {name} not found in {}", reachable.join(", ")),
        )
        .into())
    }
}

fn image_from_inspect(
    name: &str,
    ep: &Endpoint,
    docker: Docker,
    rt: Arc<tokio::runtime::Runtime>,
    info: bollard::models::ImageInspect,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    let id = info.id.clone().ok_or_else(|| {
        LiveError::new(
            LiveErrorKind::Protocol,
            format!("{ep}: image {name} has no id"),
        )
    })?;
    let image_platform = Platform {
        os: info
            .os
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "linux".into()),
        architecture: info
            .architecture
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| Platform::host().architecture),
        variant: info.variant.clone().filter(|s| !s.is_empty()),
    };
    if let Some(p) = platform {
        if p.os != image_platform.os || p.architecture != image_platform.architecture {
            return Err(LiveError::new(
                LiveErrorKind::NotFound,
                format!("{name} in {ep} is {image_platform}, not {p}"),
            )
            .into());
        }
    }
    let diff_ids: Vec<String> = info
        .root_fs
        .as_ref()
        .and_then(|r| r.layers.clone())
        .unwrap_or_default();
    for d in &diff_ids {
        if !is_sha256(d) {
            return Err(LiveError::new(
                LiveErrorKind::Protocol,
                format!("{ep}: {name}: odd layer id {d:?}"),
            )
            .into());
        }
    }
    let cfg = info.config.unwrap_or_default();
    let mut labels: Vec<(String, String)> = cfg.labels.unwrap_or_default().into_iter().collect();
    labels.sort();
    let export = Export::new(
        docker,
        rt,
        id.clone(),
        format!("{name} in {ep}"),
        &diff_ids,
        opts,
    );
    let layers = diff_ids
        .iter()
        .map(|d| Layer {
            digest: Some(d.clone()),
            diff_id: Some(d.clone()),
            media_type: Some("application/vnd.docker.image.rootfs.diff.tar".into()),
            size: None,
            content: LayerContent::Tar(export.blob(d)),
        })
        .collect();
    Ok(Image {
        reference: format!("docker-daemon:{name}"),
        platform: image_platform,
        digest: Some(id),
        config: ImageConfigFacts {
            env: cfg.env.unwrap_or_default(),
            entrypoint: cfg.entrypoint.unwrap_or_default(),
            cmd: cfg.cmd.unwrap_or_default(),
            labels: labels.into_iter().collect(),
            working_dir: cfg.working_dir.filter(|s| !s.is_empty()),
            user: cfg.user.filter(|s| !s.is_empty()),
        },
        layers,
    })
}

fn is_sha256(d: &str) -> bool {
    d.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_host_is_the_only_candidate() {
        let o = SourceOptions {
            docker_host: Some("/tmp/x.sock".into()),
            ..SourceOptions::default()
        };
        let c = candidate_endpoints(&o);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].host, "unix:///tmp/x.sock");
    }

    #[test]
    fn docker_context_endpoint() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("config.json"),
            r#"{"currentContext":"remote"}"#,
        )
        .unwrap();
        let id = hex::encode(Sha256::digest(b"remote"));
        let meta = d.path().join("contexts/meta").join(id);
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(
            meta.join("meta.json"),
            r#"{"Name":"remote","Endpoints":{"docker":{"Host":"unix:///tmp/ctx.sock"}}}"#,
        )
        .unwrap();
        let o = SourceOptions {
            docker_config_dir: Some(d.path().to_path_buf()),
            ..SourceOptions::default()
        };
        assert_eq!(
            current_context(&o),
            Some(("remote".into(), "unix:///tmp/ctx.sock".into()))
        );
    }

    #[test]
    fn no_daemon_lists_sockets() {
        let d = tempfile::tempdir().unwrap();
        let sock = d.path().join("absent.sock");
        let o = SourceOptions {
            docker_host: Some(format!("unix://{}", sock.display())),
            ..SourceOptions::default()
        };
        let Err(e) = open_daemon("x:1", None, &o) else {
            panic!("no daemon there")
        };
        let l = e.downcast_ref::<LiveError>().unwrap();
        assert_eq!(l.kind, LiveErrorKind::NoDaemon);
        assert!(l.message.contains("absent.sock"), "{}", l.message);
    }
}
