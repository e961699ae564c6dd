//! One image's layers out of a daemon export (`GET /images/{id}/get`), read forward once:
//! each layer entry piped to the reader waiting for it, or spooled (hashed on the way) until
//! one asks; see the module above for the routes.

use super::is_sha256;
use crate::format::tar::{EntryKind, TarReader};
use crate::progress::Progress;
use crate::source::error::{LiveError, LiveErrorKind};
use crate::source::options::SourceOptions;
use crate::source::LayerBlob;
use crate::vocab::name_from_bytes;
use anyhow::Context;
use bollard::Docker;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

const CHUNK: usize = 256 * 1024;

/// One image's export machinery, shared by its layer blobs.
pub(super) struct Export {
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
    Error(LiveError),
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
    /// The export of image `image` (an id, exactly what was inspected); nothing is requested
    /// from the daemon until a layer is opened.
    pub(super) fn new(
        docker: Docker,
        rt: Arc<tokio::runtime::Runtime>,
        image: String,
        display: String,
        diff_ids: &[String],
        opts: &SourceOptions,
    ) -> Arc<Export> {
        Arc::new(Export {
            docker,
            rt,
            image,
            display,
            diff_ids: diff_ids.iter().cloned().collect(),
            spool_dir: opts.spool_dir.clone(),
            progress: opts.progress.clone(),
            deadline: opts.deadline(),
            current: Mutex::new(None),
            handed_out: Mutex::new(HashSet::new()),
        })
    }

    /// The layer `diff_id` of this export, as a blob the walk opens.
    pub(super) fn blob(self: &Arc<Self>, diff_id: &str) -> Box<dyn LayerBlob> {
        Box::new(DaemonBlob {
            export: self.clone(),
            diff_id: diff_id.to_string(),
        })
    }

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
                let _ = tx.send(Chunk::Error(LiveError::new(LiveErrorKind::Protocol, msg)));
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
                    self.fail_slot(
                        pass,
                        d,
                        LiveError::new(
                            LiveErrorKind::Integrity,
                            format!(
                                "layer {d}: digest mismatch in the export of {}: content hashes to {got}",
                                self.display
                            ),
                        ),
                    );
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

    fn fail_slot(&self, pass: &Pass, d: &str, error: LiveError) {
        let mut st = pass.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Slot::Waiting(tx)) = st.slots.insert(d.to_string(), Slot::Gone) {
            let _ = tx.send(Chunk::Error(error));
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
                        let _ = tx.send(Chunk::Error(LiveError::new(
                            LiveErrorKind::Protocol,
                            format!("layer {d}: reading spool: {e}"),
                        )));
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
                    let _ = tx.send(Chunk::Error(LiveError::new(
                        LiveErrorKind::Protocol,
                        format!("layer {d}: export stream of {}: {e}", self.display),
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
            Chunk::Error(LiveError::new(
                LiveErrorKind::Integrity,
                format!(
                    "layer {d}: digest mismatch in the export of {}: content hashes to {got}",
                    self.display
                ),
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
                Ok(Chunk::Error(error)) => {
                    self.done = true;
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, error));
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
}
