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

use crate::format::tar::{EntryKind, TarReader};
use crate::progress::Progress;
use crate::source::live::{home_dir, LiveError, LiveErrorKind, SourceOptions};
use crate::source::{Image, ImageConfigFacts, Layer, LayerBlob, LayerContent, Platform};
use crate::vocab::name_from_bytes;
use anyhow::Context;
use bollard::Docker;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Inspecting an image is one small request: a daemon that does not answer it is stuck.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(30);
const CHUNK: usize = 256 * 1024;

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
    let export = Arc::new(Export {
        docker,
        rt,
        image: id.clone(),
        display: format!("{name} in {ep}"),
        diff_ids: diff_ids.iter().cloned().collect(),
        spool_dir: opts.spool_dir.clone(),
        progress: opts.progress.clone(),
        deadline: opts.deadline(),
        current: Mutex::new(None),
        handed_out: Mutex::new(HashSet::new()),
    });
    let layers = diff_ids
        .iter()
        .map(|d| Layer {
            digest: Some(d.clone()),
            diff_id: Some(d.clone()),
            media_type: Some("application/vnd.docker.image.rootfs.diff.tar".into()),
            size: None,
            content: LayerContent::Tar(Box::new(DaemonBlob {
                export: export.clone(),
                diff_id: d.clone(),
            })),
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

/// One image's export machinery, shared by its layer blobs.
struct Export {
    docker: Docker,
    rt: Arc<tokio::runtime::Runtime>,
    /// Image id to export (exactly what was inspected).
    image: String,
    display: String,
    diff_ids: HashSet<String>,
    spool_dir: Option<PathBuf>,
    progress: Progress,
    /// When reading this image must be over (`--timeout`).
    deadline: std::time::Instant,
    current: Mutex<Option<Arc<Pass>>>,
    /// Layers some reader has already received (a second open needs a new pass).
    handed_out: Mutex<HashSet<String>>,
}

enum Route {
    Stream(SyncSender<Chunk>),
    Spool,
    Skip,
}

enum Chunk {
    Data(Vec<u8>),
    End,
    Error(String),
}

enum Slot {
    /// A reader is waiting on this channel.
    Waiting(SyncSender<Chunk>),
    /// Spooled, verified, ready to be opened.
    Spooled(tempfile::NamedTempFile),
    /// Given out, or failed.
    Gone,
}

#[derive(Default)]
struct PassState {
    slots: HashMap<String, Slot>,
    /// The export has been read to its end (or failed).
    finished: bool,
    failure: Option<String>,
}

/// One forward read of the export.
struct Pass {
    state: Mutex<PassState>,
}

struct DaemonBlob {
    export: Arc<Export>,
    diff_id: String,
}

impl LayerBlob for DaemonBlob {
    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        self.export.open(&self.diff_id)
    }
}

impl Export {
    fn open(self: &Arc<Self>, diff_id: &str) -> anyhow::Result<Box<dyn Read + Send>> {
        loop {
            let pass = self.pass_for(diff_id)?;
            let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut handed = self.handed_out.lock().unwrap_or_else(|e| e.into_inner());
            match st.slots.remove(diff_id) {
                Some(Slot::Spooled(file)) => {
                    st.slots.insert(diff_id.to_string(), Slot::Gone);
                    handed.insert(diff_id.to_string());
                    // Reopen through the path, then let the temp file go: the handle keeps
                    // the bytes readable and the space returns when the reader is dropped.
                    let f = file.reopen().context("reopening a spooled layer")?;
                    drop(file);
                    return Ok(Box::new(std::io::BufReader::new(f)));
                }
                Some(other) => {
                    // Passed already (or someone else waits): another pass.
                    st.slots.insert(diff_id.to_string(), other);
                    drop((handed, st));
                    self.retire(&pass);
                }
                None if st.finished => {
                    drop((handed, st));
                    self.retire(&pass);
                }
                None => {
                    handed.insert(diff_id.to_string());
                    let (tx, rx) = sync_channel(8);
                    st.slots.insert(diff_id.to_string(), Slot::Waiting(tx));
                    return Ok(Box::new(ChannelReader {
                        rx,
                        buf: Vec::new(),
                        pos: 0,
                        layer: diff_id.to_string(),
                        image: self.display.clone(),
                        done: false,
                    }));
                }
            }
        }
    }

    /// The current pass, or a new one when there is none.
    fn pass_for(self: &Arc<Self>, _diff_id: &str) -> anyhow::Result<Arc<Pass>> {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = cur.as_ref() {
            return Ok(p.clone());
        }
        let p = Arc::new(Pass {
            state: Mutex::new(PassState::default()),
        });
        *cur = Some(p.clone());
        let me = self.clone();
        let pass = p.clone();
        std::thread::Builder::new()
            .name("gpulint-export".into())
            .spawn(move || me.pump(&pass))
            .context("starting the export thread")?;
        Ok(p)
    }

    /// Stop handing out `pass` to new opens (it cannot serve them).
    fn retire(&self, pass: &Arc<Pass>) {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, pass)) {
            *cur = None;
        }
    }

    /// Read the export once, routing layers; at the end fail every reader still waiting.
    fn pump(self: &Arc<Self>, pass: &Pass) {
        let result = self.pump_inner(pass);
        let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
        st.finished = true;
        if let Err(e) = &result {
            st.failure = Some(format!("{e:#}"));
        }
        for (d, slot) in st.slots.iter_mut() {
            if let Slot::Waiting(tx) = slot {
                let msg = match &result {
                    Err(e) => format!("layer {d}: export of {} failed: {e:#}", self.display),
                    Ok(()) => format!("layer {d}: not in the export of {}", self.display),
                };
                let _ = tx.send(Chunk::Error(msg));
                *slot = Slot::Gone;
            }
        }
    }

    fn pump_inner(self: &Arc<Self>, pass: &Pass) -> anyhow::Result<()> {
        let stream = self.docker.export_image(&self.image);
        let reader = StreamRead {
            rt: self.rt.clone(),
            stream: Box::pin(stream),
            chunk: bytes::Bytes::new(),
            deadline: self.deadline,
        };
        let mut archive = TarReader::new(reader);
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(header) = archive.next_entry().context("reading the export stream")? {
            if header.kind != EntryKind::File || header.sparse {
                continue;
            }
            let mut entry = archive.content();
            let path = name_from_bytes(&header.path);
            let named = named_diff_id(&path).filter(|d| self.diff_ids.contains(d));
            let legacy = path.ends_with("/layer.tar") && !path.contains("..");
            if named.is_none() && !legacy {
                continue;
            }
            if self.nobody_left(pass) {
                break;
            }
            if let Some(d) = &named {
                if seen.contains(d) {
                    continue;
                }
                // Decide under the lock: an open registers its reader under it too.
                let route = {
                    let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
                    match st.slots.remove(d) {
                        Some(Slot::Waiting(tx)) => {
                            st.slots.insert(d.clone(), Slot::Gone);
                            Route::Stream(tx)
                        }
                        Some(other) => {
                            st.slots.insert(d.clone(), other);
                            Route::Skip
                        }
                        None if self.wanted_later(d) => Route::Spool,
                        None => Route::Skip,
                    }
                };
                match route {
                    Route::Stream(tx) => {
                        seen.insert(d.clone());
                        self.stream_to(&mut entry, d, &tx);
                        continue;
                    }
                    Route::Skip => continue,
                    Route::Spool => {}
                }
            }
            // Unknown until hashed, or nobody asked yet: spool.
            let (file, got) = self.spool(&mut entry, &path)?;
            if let Some(d) = &named {
                if &got != d {
                    self.fail_slot(pass, d, format!("layer {d}: digest mismatch in the export of {}: content hashes to {got}", self.display));
                    seen.insert(d.clone());
                    continue;
                }
            }
            if !self.diff_ids.contains(&got) || seen.contains(&got) {
                continue;
            }
            seen.insert(got.clone());
            self.deliver(pass, &got, file)?;
        }
        Ok(())
    }

    /// The image (and so every blob) is gone and no reader waits: stop reading.
    fn nobody_left(self: &Arc<Self>, pass: &Pass) -> bool {
        if Arc::strong_count(self) > 1 {
            return false;
        }
        let st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
        !st.slots.values().any(|s| matches!(s, Slot::Waiting(_)))
    }

    /// Whether a reader may still ask for this layer in this pass.
    fn wanted_later(&self, d: &str) -> bool {
        !self
            .handed_out
            .lock()
            .map(|h| h.contains(d))
            .unwrap_or(true)
    }

    fn fail_slot(&self, pass: &Pass, d: &str, msg: String) {
        let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Slot::Waiting(tx)) = st.slots.insert(d.to_string(), Slot::Gone) {
            let _ = tx.send(Chunk::Error(msg));
        }
    }

    /// Hand a spooled layer to its waiting reader (streaming the file), or park it.
    fn deliver(
        &self,
        pass: &Pass,
        d: &str,
        mut file: tempfile::NamedTempFile,
    ) -> anyhow::Result<()> {
        let waiting = {
            let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
            match st.slots.remove(d) {
                Some(Slot::Waiting(tx)) => {
                    st.slots.insert(d.to_string(), Slot::Gone);
                    Some(tx)
                }
                Some(Slot::Gone) => {
                    st.slots.insert(d.to_string(), Slot::Gone);
                    return Ok(());
                }
                _ => {
                    if self.wanted_later(d) {
                        st.slots.insert(d.to_string(), Slot::Spooled(file));
                    }
                    return Ok(());
                }
            }
        };
        if let Some(tx) = waiting {
            use std::io::Seek;
            let f = file.as_file_mut();
            f.seek(std::io::SeekFrom::Start(0))?;
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = match f.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) => {
                        let _ = tx.send(Chunk::Error(format!("layer {d}: reading spool: {e}")));
                        return Ok(());
                    }
                };
                if n == 0 {
                    let _ = tx.send(Chunk::End);
                    return Ok(());
                }
                if tx.send(Chunk::Data(buf[..n].to_vec())).is_err() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Pipe a layer named by its diff_id to its reader, verifying as it goes.
    fn stream_to(&self, entry: &mut impl Read, d: &str, tx: &SyncSender<Chunk>) {
        let mut h = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let mut reader_gone = false;
        loop {
            let n = match entry.read(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    let _ = tx.send(Chunk::Error(format!(
                        "layer {d}: export stream of {}: {e}",
                        self.display
                    )));
                    return;
                }
            };
            if n == 0 {
                break;
            }
            self.progress.downloaded(n as u64);
            h.update(&buf[..n]);
            // Keep draining when the reader left: the entry must be consumed anyway.
            if !reader_gone && tx.send(Chunk::Data(buf[..n].to_vec())).is_err() {
                reader_gone = true;
            }
        }
        let got = format!("sha256:{}", hex::encode(h.finalize()));
        let last = if got == d {
            Chunk::End
        } else {
            Chunk::Error(format!(
                "layer {d}: digest mismatch in the export of {}: content hashes to {got}",
                self.display
            ))
        };
        let _ = tx.send(last);
    }

    fn spool(
        &self,
        entry: &mut impl Read,
        path: &str,
    ) -> anyhow::Result<(tempfile::NamedTempFile, String)> {
        let mut b = tempfile::Builder::new();
        b.prefix("gpulint-layer-");
        let mut file = match &self.spool_dir {
            Some(d) => b.tempfile_in(d),
            None => b.tempfile(),
        }
        .context("creating a spool file for a daemon export layer")?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        {
            let mut w = std::io::BufWriter::new(file.as_file_mut());
            loop {
                let n = entry.read(&mut buf).with_context(|| {
                    format!("reading {path} from the export of {}", self.display)
                })?;
                if n == 0 {
                    break;
                }
                self.progress.downloaded(n as u64);
                h.update(&buf[..n]);
                w.write_all(&buf[..n]).context("writing a spool file")?;
            }
            w.flush().context("writing a spool file")?;
        }
        Ok((file, format!("sha256:{}", hex::encode(h.finalize()))))
    }
}

/// `<hex>.tar` (podman, skopeo) or `blobs/sha256/<hex>` (Docker 25+ OCI export).
fn named_diff_id(path: &str) -> Option<String> {
    let hex = path
        .strip_suffix(".tar")
        .filter(|h| !h.contains('/'))
        .or_else(|| path.strip_prefix("blobs/sha256/"))?;
    let d = format!("sha256:{hex}");
    is_sha256(&d).then_some(d)
}

type ExportStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<bytes::Bytes, bollard::errors::Error>> + Send>,
>;

/// The export's async byte stream as a blocking `Read`, driven by the shared runtime.
struct StreamRead {
    rt: Arc<tokio::runtime::Runtime>,
    stream: ExportStream,
    /// The unread rest of the last chunk.
    chunk: bytes::Bytes,
    /// `--timeout` for the image: a stalled export ends there.
    deadline: std::time::Instant,
}

impl Read for StreamRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            let left = self
                .deadline
                .saturating_duration_since(std::time::Instant::now());
            let next = self
                .rt
                .block_on(async { tokio::time::timeout(left, self.stream.next()).await });
            let Ok(next) = next else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    LiveError::new(
                        LiveErrorKind::Timeout,
                        "the daemon's export did not finish within --timeout",
                    ),
                ));
            };
            match next {
                None => return Ok(0),
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => return Err(std::io::Error::other(e.to_string())),
            }
        }
        let n = out.len().min(self.chunk.len());
        let head = self.chunk.split_to(n);
        out[..n].copy_from_slice(&head);
        Ok(n)
    }
}

/// A layer's reader fed by the export thread.
struct ChannelReader {
    rx: Receiver<Chunk>,
    buf: Vec<u8>,
    pos: usize,
    layer: String,
    image: String,
    done: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Chunk::Data(d)) => {
                    self.buf = d;
                    self.pos = 0;
                }
                Ok(Chunk::End) => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(Chunk::Error(msg)) => {
                    self.done = true;
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, msg));
                }
                Err(_) => {
                    self.done = true;
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "layer {}: export of {} stopped early",
                            self.layer, self.image
                        ),
                    ));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_entry_names() {
        let h = "a".repeat(64);
        assert_eq!(
            named_diff_id(&format!("{h}.tar")),
            Some(format!("sha256:{h}"))
        );
        assert_eq!(
            named_diff_id(&format!("blobs/sha256/{h}")),
            Some(format!("sha256:{h}"))
        );
        assert_eq!(named_diff_id(&format!("{h}/layer.tar")), None);
        assert_eq!(named_diff_id("manifest.json"), None);
        assert_eq!(named_diff_id(&format!("x/{h}.tar")), None);
    }

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
