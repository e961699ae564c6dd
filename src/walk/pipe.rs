//! A stage of a layer's pipeline on a thread of its own. A compressed layer has three:
//! reading the blob (and hashing it for its digest check), decoding it, and the walking
//! thread's diff_id hashing, tar parsing and detection. Decoding is the longest stage; the
//! others run beside it rather than before it, so the layer takes about its decoder's time
//! (README, "Performance").

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// Bytes handed over at once: large enough that the channel costs nothing per byte.
const CHUNK: usize = 1 << 20;
/// Chunks decoded ahead of the walker: what bounds the memory a layer takes (the decoder
/// waits when the walker is behind, so a decompression bomb still costs time, not memory).
const AHEAD: usize = 4;

/// Runs `walk` with a reader of `source`, which is read on a second thread. `source` is
/// dropped and its thread joined before this returns, even when `walk` stops early. Also
/// returns the error `source` failed with when `walk` stopped before reading it (a stalled
/// download's timeout is the cause to report, not a reason to wait on it again).
pub(crate) fn with_decoder_thread<R, T>(
    stage: &str,
    source: R,
    walk: impl FnOnce(&mut ChunkReader) -> T,
) -> (T, Option<io::Error>)
where
    R: Read + Send,
{
    std::thread::scope(|s| {
        let (full_tx, full_rx) = sync_channel(AHEAD);
        let (empty_tx, empty_rx) = sync_channel(AHEAD + 2);
        // Named for profilers and `top -H`: "gpulint-read" (blob) or "gpulint-decode".
        let decoder = std::thread::Builder::new()
            .name(format!("gpulint-{stage}"))
            .spawn_scoped(s, move || pump(source, &full_tx, &empty_rx))
            .expect("spawning a layer's pipeline thread");
        let mut reader = ChunkReader {
            full: full_rx,
            empty: empty_tx,
            chunk: None,
            pos: 0,
            done: false,
            failure: None,
        };
        let out = walk(&mut reader);
        // A decoder blocked on a full channel sees it closed and stops.
        drop(reader);
        let undelivered = decoder
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (out, undelivered)
    })
}

/// A chunk of `CHUNK` bytes, of which the first `.1` are data.
type Chunk = (Vec<u8>, usize);

/// Returns the error `source` failed with when the walker was gone before it could see it.
fn pump<R: Read>(
    mut source: R,
    full: &SyncSender<io::Result<Chunk>>,
    empty: &Receiver<Chunk>,
) -> Option<io::Error> {
    loop {
        let mut buf = match empty.try_recv() {
            Ok((b, _)) => b,
            Err(_) => vec![0; CHUNK],
        };
        // One read per chunk, sent as it is: a source that stalls (a registry that stops
        // sending) must not hold back the bytes already read until its timeout.
        let sent = match source.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => full.send(Ok((buf, n))),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return match full.send(Err(e)) {
                    Ok(()) => None,
                    Err(unsent) => unsent.0.err(),
                }
            }
        };
        // The walker gone (it stopped early) ends the decoder too.
        if sent.is_err() {
            return None;
        }
    }
}

/// The consuming thread's end: the source's bytes in order (as a `BufRead`, so a consumer
/// reads them where they lie, without another copy), then the source's error (once) or the
/// end of the stream.
pub(crate) struct ChunkReader {
    full: Receiver<io::Result<Chunk>>,
    empty: SyncSender<Chunk>,
    chunk: Option<Chunk>,
    pos: usize,
    done: bool,
    /// The source's error as it was handed on: a decoder that read it may report its own
    /// error instead, and the source's is the cause to name.
    failure: Option<Arc<io::Error>>,
}

/// One source error given out twice (to the consumer, and later as the cause), the original
/// kept whole underneath so its type (a digest mismatch, a bound) still tells what it was.
#[derive(Debug)]
struct SharedError(Arc<io::Error>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

fn shared(e: &Arc<io::Error>) -> io::Error {
    io::Error::new(e.kind(), SharedError(e.clone()))
}

impl ChunkReader {
    /// The error the source failed with, once the consumer has been handed it.
    pub(crate) fn source_failure(&self) -> Option<io::Error> {
        self.failure.as_ref().map(shared)
    }
}

impl BufRead for ChunkReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        loop {
            if let Some((_, len)) = &self.chunk {
                if self.pos < *len {
                    break;
                }
            }
            if self.done {
                return Ok(&[]);
            }
            if let Some(used) = self.chunk.take() {
                // Recycled when the source has room for it; dropped otherwise.
                let _ = self.empty.try_send(used);
            }
            self.pos = 0;
            match self.full.recv() {
                Ok(Ok(chunk)) => self.chunk = Some(chunk),
                Ok(Err(e)) => {
                    self.done = true;
                    let e = Arc::new(e);
                    self.failure = Some(e.clone());
                    return Err(shared(&e));
                }
                Err(_) => self.done = true,
            }
        }
        match &self.chunk {
            Some((buf, len)) => Ok(&buf[self.pos..*len]),
            None => Ok(&[]),
        }
    }

    fn consume(&mut self, amt: usize) {
        if let Some((_, len)) = &self.chunk {
            self.pos = (self.pos + amt).min(*len);
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let avail = self.fill_buf()?;
        let n = out.len().min(avail.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `data` in odd-sized reads, then `fail` (if any).
    struct Source {
        data: Vec<u8>,
        at: usize,
        fail: Option<io::ErrorKind>,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7919).min(self.data.len() - self.at);
            if n == 0 {
                return match self.fail.take() {
                    Some(k) => Err(io::Error::new(k, "decoder failed")),
                    None => Ok(0),
                };
            }
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn hands_over_every_byte_in_order_then_the_error() {
        let want = data(3 * CHUNK + 12345);
        let source = Source {
            data: want.clone(),
            at: 0,
            fail: Some(io::ErrorKind::InvalidData),
        };
        let ((got, err), _) = with_decoder_thread("test", source, |r| {
            let mut got = Vec::new();
            let err = r.read_to_end(&mut got).unwrap_err();
            (got, err)
        });
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_walker_that_stops_early_stops_the_decoder() {
        // An endless source: returning at all shows the decoder thread ended.
        struct Endless;
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                buf.fill(1);
                Ok(buf.len())
            }
        }
        let (n, _) = with_decoder_thread("test", Endless, |r| {
            let mut first = vec![0; 100];
            r.read_exact(&mut first).unwrap();
            first.iter().map(|&b| b as usize).sum::<usize>()
        });
        assert_eq!(n, 100);
    }

    #[test]
    fn buffered_reads_see_every_byte_and_the_source_error_is_kept_for_later() {
        let want = data(2 * CHUNK + 777);
        let source = Source {
            data: want.clone(),
            at: 0,
            fail: Some(io::ErrorKind::TimedOut),
        };
        let ((got, err, kept), _) = with_decoder_thread("test", source, |r| {
            assert!(r.source_failure().is_none());
            let mut got = Vec::new();
            let err = loop {
                match r.fill_buf() {
                    Ok([]) => panic!("the source's error was lost"),
                    // Consumed in odd amounts, as a decoder does.
                    Ok(b) => {
                        let n = b.len().min(4099);
                        got.extend_from_slice(&b[..n]);
                        r.consume(n);
                    }
                    Err(e) => break e,
                }
            };
            (got, err, r.source_failure())
        });
        assert!(got == want, "bytes differ");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let kept = kept.expect("the failure is kept");
        assert_eq!(kept.kind(), io::ErrorKind::TimedOut);
        assert_eq!(kept.to_string(), "decoder failed");
    }

    /// The source's error keeps its type through the pipe, both as handed on and as kept:
    /// what it was is read from the type, not from its text.
    #[test]
    fn the_source_error_keeps_its_type() {
        use crate::walk::issue::{stream_error_kind, IssueKind};
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other(crate::walk::issue::LimitExceeded(
                    "a bound".into(),
                )))
            }
        }
        let ((err, kept), _) = with_decoder_thread("test", Failing, |r| {
            let err = r.fill_buf().unwrap_err();
            (err, r.source_failure().expect("the failure is kept"))
        });
        for e in [&err, &kept] {
            assert_eq!(e.to_string(), "a bound");
            assert_eq!(stream_error_kind(e), IssueKind::TooLarge, "{e}");
        }
    }

    /// A registry's or daemon's integrity error is a digest mismatch by its kind, and text
    /// that merely sounds like a cut stream is not truncation.
    #[test]
    fn stream_errors_are_told_by_type_not_text() {
        use crate::source::{LiveError, LiveErrorKind};
        use crate::walk::issue::{stream_error_kind, IssueKind};
        let integrity = io::Error::new(
            io::ErrorKind::InvalidData,
            LiveError::new(LiveErrorKind::Integrity, "layer sha256:1: content differs"),
        );
        assert_eq!(stream_error_kind(&integrity), IssueKind::DigestMismatch);
        let worded = io::Error::new(io::ErrorKind::InvalidData, "unexpected end of the world");
        assert_eq!(stream_error_kind(&worded), IssueKind::Corrupt);
        let cut = io::Error::new(io::ErrorKind::UnexpectedEof, "incomplete frame");
        assert_eq!(stream_error_kind(&cut), IssueKind::Truncated);
    }
}
