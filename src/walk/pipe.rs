//! A layer's decoder on a thread of its own: reading the blob (and checking its digest) and
//! inflating it overlap with the walking thread's diff_id hashing, tar parsing and detection.
//! On a 2-core machine the last, largest layer of an image otherwise leaves a core idle
//! (README, "Performance").

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

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
    source: R,
    walk: impl FnOnce(&mut ChunkReader) -> T,
) -> (T, Option<io::Error>)
where
    R: Read + Send,
{
    std::thread::scope(|s| {
        let (full_tx, full_rx) = sync_channel(AHEAD);
        let (empty_tx, empty_rx) = sync_channel(AHEAD + 2);
        let decoder = s.spawn(move || pump(source, &full_tx, &empty_rx));
        let mut reader = ChunkReader {
            full: full_rx,
            empty: empty_tx,
            chunk: None,
            pos: 0,
            done: false,
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

/// The walking thread's end: the decoded bytes in order, then the decoder's error (once)
/// or the end of the stream.
pub(crate) struct ChunkReader {
    full: Receiver<io::Result<Chunk>>,
    empty: SyncSender<Chunk>,
    chunk: Option<Chunk>,
    pos: usize,
    done: bool,
}

impl Read for ChunkReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some((buf, len)) = &self.chunk {
                if self.pos < *len {
                    let n = out.len().min(len - self.pos);
                    out[..n].copy_from_slice(&buf[self.pos..self.pos + n]);
                    self.pos += n;
                    return Ok(n);
                }
            }
            if self.done {
                return Ok(0);
            }
            if let Some(used) = self.chunk.take() {
                // Recycled when the decoder has room for it; dropped otherwise.
                let _ = self.empty.try_send(used);
            }
            self.pos = 0;
            match self.full.recv() {
                Ok(Ok(chunk)) => self.chunk = Some(chunk),
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
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
        let ((got, err), _) = with_decoder_thread(source, |r| {
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
        let (n, _) = with_decoder_thread(Endless, |r| {
            let mut first = vec![0; 100];
            r.read_exact(&mut first).unwrap();
            first.iter().map(|&b| b as usize).sum::<usize>()
        });
        assert_eq!(n, 100);
    }
}
