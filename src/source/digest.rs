//! Content digests (`sha256:<hex>`): strict parsing (a digest becomes a file name under
//! `blobs/`, so it must never carry a path) and verification while streaming.

use sha2::{Digest as _, Sha256};
use std::io::{self, Read};

/// A validated `algorithm:hex` digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub algorithm: String,
    pub hex: String,
}

impl Digest {
    pub fn parse(s: &str) -> Result<Digest, String> {
        let (algorithm, hex) = s
            .split_once(':')
            .ok_or_else(|| format!("digest {s:?} is not algorithm:hex"))?;
        let want_len = match algorithm {
            "sha256" => 64,
            "sha512" => 128,
            _ => return Err(format!("digest {s:?}: unsupported algorithm {algorithm:?}")),
        };
        if hex.len() != want_len || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(format!(
                "digest {s:?}: expected {want_len} lowercase hex digits"
            ));
        }
        Ok(Digest {
            algorithm: algorithm.to_string(),
            hex: hex.to_string(),
        })
    }

    /// Whether this crate can verify it (sha256 only; others are accepted unverified).
    pub fn verifiable(&self) -> bool {
        self.algorithm == "sha256"
    }

    /// `blobs/<algorithm>/<hex>`, the path in an OCI layout.
    pub fn blob_path(&self) -> String {
        format!("blobs/{}/{}", self.algorithm, self.hex)
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.algorithm, self.hex)
    }
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Content that does not hash to the digest naming it, carried inside an `io::Error` so the
/// walker can tell it from corruption (see `walk::issue::stream_error_kind`).
#[derive(Debug, thiserror::Error)]
#[error("{what} digest mismatch: expected {expected}, content hashes to {actual}")]
pub struct DigestMismatch {
    pub what: &'static str,
    pub expected: String,
    pub actual: String,
}

/// Hashes everything read through it; at end of stream, a mismatch with the expected digest
/// is returned as an `InvalidData` error (so the consumer reports it like any read error).
pub struct VerifyingReader<R> {
    inner: R,
    hasher: Sha256,
    expected: Digest,
    /// When set, a mismatch is ignored if the stream starts with gzip/zstd magic: the digest
    /// was of the uncompressed tar (a docker-archive diff_id) but the blob is compressed.
    only_if_plain: bool,
    head: [u8; 4],
    head_len: usize,
    done: bool,
}

impl<R: Read> VerifyingReader<R> {
    pub fn new(inner: R, expected: Digest) -> Self {
        VerifyingReader {
            inner,
            hasher: Sha256::new(),
            expected,
            only_if_plain: false,
            head: [0; 4],
            head_len: 0,
            done: false,
        }
    }

    pub fn only_if_plain(mut self) -> Self {
        self.only_if_plain = true;
        self
    }
}

impl<R: Read> Read for VerifyingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            let chunk = &buf[..n];
            self.hasher.update(chunk);
            while self.head_len < 4 {
                let Some(b) = chunk.get(self.head_len) else {
                    break;
                };
                self.head[self.head_len] = *b;
                self.head_len += 1;
            }
            return Ok(n);
        }
        if !buf.is_empty() && !self.done {
            self.done = true;
            let actual = hex(&self.hasher.clone().finalize());
            let compressed =
                self.head[..2] == [0x1f, 0x8b] || self.head == [0x28, 0xb5, 0x2f, 0xfd];
            if actual != self.expected.hex && !(self.only_if_plain && compressed) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    DigestMismatch {
                        what: "blob",
                        expected: self.expected.to_string(),
                        actual: format!("sha256:{actual}"),
                    },
                ));
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_path_like_digests() {
        assert!(Digest::parse("sha256:../../etc/passwd").is_err());
        assert!(Digest::parse(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert!(Digest::parse(&format!("sha256:{}", "a".repeat(64))).is_ok());
        assert!(Digest::parse("md5:abc").is_err());
    }

    #[test]
    fn verifies_at_end_of_stream() {
        let data = b"hello world";
        let good = Digest::parse(&format!("sha256:{}", sha256_hex(data))).unwrap();
        let mut out = Vec::new();
        VerifyingReader::new(&data[..], good)
            .read_to_end(&mut out)
            .unwrap();
        let bad = Digest::parse(&format!("sha256:{}", "0".repeat(64))).unwrap();
        let e = VerifyingReader::new(&data[..], bad)
            .read_to_end(&mut out)
            .unwrap_err();
        assert!(e.to_string().contains("digest mismatch"), "{e}");
    }
}
