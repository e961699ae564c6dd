//! PAX extended headers: the records this reader uses, parsed exactly or refused, and the
//! GNU sparse formats they can announce.

use super::MAX_SPARSE_RUNS;

/// The keys of a PAX record set this reader uses.
#[derive(Debug, Default)]
pub(super) struct Pax {
    pub(super) path: Option<Vec<u8>>,
    pub(super) linkpath: Option<Vec<u8>>,
    pub(super) size: Option<u64>,
    /// The `GNU.sparse.*` records (PAX sparse formats 0.0, 0.1 and 1.0), as Go's archive/tar
    /// keeps them: the last of a key wins; 0.0's offset/numbytes pairs become the map.
    pub(super) sparse_major: Option<Vec<u8>>,
    pub(super) sparse_minor: Option<Vec<u8>>,
    pub(super) sparse_map: Option<Vec<u8>>,
    pub(super) sparse_numblocks: Option<Vec<u8>>,
    pub(super) sparse_name: Option<Vec<u8>>,
    pub(super) sparse_size: Option<Vec<u8>>,
    pub(super) sparse_realsize: Option<Vec<u8>>,
}

/// How a PAX sparse file stores its map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PaxSparse {
    /// Formats 0.0 and 0.1: `GNU.sparse.numblocks` and `GNU.sparse.map` records.
    Records,
    /// Format 1.0: decimal lines in 512-byte blocks before the data.
    Prelude,
}

impl Pax {
    /// Whether these records make the entry a PAX sparse file, and of which format (Go's
    /// `readGNUSparsePAXHeaders`). A version Go does not know is refused here rather than
    /// read as a plain file.
    pub(super) fn sparse_format(&self) -> Result<Option<PaxSparse>, String> {
        let text = |v: &Option<Vec<u8>>| v.clone().unwrap_or_default();
        let (major, minor) = (text(&self.sparse_major), text(&self.sparse_minor));
        Ok(match (major.as_slice(), minor.as_slice()) {
            (b"0", b"0" | b"1") => Some(PaxSparse::Records),
            (b"1", b"0") => Some(PaxSparse::Prelude),
            (b"", b"") if self.sparse_map.as_ref().is_some_and(|m| !m.is_empty()) => {
                Some(PaxSparse::Records)
            }
            (b"", b"") => None,
            _ => {
                return Err(format!(
                    "GNU sparse format {}.{} is not one this reader knows",
                    String::from_utf8_lossy(&major),
                    String::from_utf8_lossy(&minor)
                ))
            }
        })
    }

    /// The data runs (offset, length) of a 0.0 / 0.1 map.
    pub(super) fn sparse_records(&self) -> Result<Vec<(u64, u64)>, String> {
        let count = self
            .sparse_numblocks
            .as_deref()
            .and_then(decimal)
            .ok_or("GNU.sparse.numblocks missing or not a decimal number")?;
        let map = self.sparse_map.as_deref().unwrap_or_default();
        let fields: Vec<&[u8]> = if map.is_empty() {
            Vec::new()
        } else {
            map.split(|b| *b == b',').collect()
        };
        if count > MAX_SPARSE_RUNS as u64 {
            return Err(format!(
                "a sparse map of {count} data runs (more than {MAX_SPARSE_RUNS})"
            ));
        }
        if fields.len() as u64 != 2 * count {
            return Err(format!(
                "GNU.sparse.map has {} numbers for {count} data runs",
                fields.len()
            ));
        }
        fields
            .chunks_exact(2)
            .map(|pair| match (decimal(pair[0]), decimal(pair[1])) {
                (Some(off), Some(len)) => Ok((off, len)),
                _ => Err("GNU.sparse.map holds a field that is not a decimal number".to_string()),
            })
            .collect()
    }
}

/// A decimal number with nothing around it.
pub(super) fn decimal(v: &[u8]) -> Option<u64> {
    std::str::from_utf8(v)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
}

impl Pax {
    /// `"<len> <key>=<value>\n"` records, back to back; trailing NULs allowed. Any record that
    /// does not parse exactly is an error.
    pub(super) fn parse(mut data: &[u8]) -> Result<Pax, String> {
        let mut pax = Pax::default();
        // Format 0.0: GNU.sparse.offset and GNU.sparse.numbytes records, alternating.
        let mut pairs: Vec<Vec<u8>> = Vec::new();
        while let Some(&b) = data.first() {
            if b == 0 && data.iter().all(|b| *b == 0) {
                break;
            }
            let sp = data
                .iter()
                .take(20)
                .position(|b| *b == b' ')
                .ok_or("a record without a length")?;
            let len: usize = std::str::from_utf8(&data[..sp])
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse().ok())
                .ok_or("a record length that is not a decimal number")?;
            if len <= sp + 2 || len > data.len() || data[len - 1] != b'\n' {
                return Err(format!(
                    "a record of length {len} that does not end with a newline where it says"
                ));
            }
            let kv = &data[sp + 1..len - 1];
            let eq = kv
                .iter()
                .position(|b| *b == b'=')
                .ok_or("a record without '='")?;
            let (key, value) = (&kv[..eq], &kv[eq + 1..]);
            match key {
                b"path" => pax.path = Some(value.to_vec()),
                b"linkpath" => pax.linkpath = Some(value.to_vec()),
                b"GNU.sparse.offset" | b"GNU.sparse.numbytes" => {
                    let want: &[u8] = if pairs.len().is_multiple_of(2) {
                        b"GNU.sparse.offset"
                    } else {
                        b"GNU.sparse.numbytes"
                    };
                    if key != want || value.contains(&b',') {
                        return Err("GNU.sparse.offset/numbytes records out of order".into());
                    }
                    pairs.push(value.to_vec());
                }
                b"GNU.sparse.major" => pax.sparse_major = Some(value.to_vec()),
                b"GNU.sparse.minor" => pax.sparse_minor = Some(value.to_vec()),
                b"GNU.sparse.map" => pax.sparse_map = Some(value.to_vec()),
                b"GNU.sparse.numblocks" => pax.sparse_numblocks = Some(value.to_vec()),
                b"GNU.sparse.name" => pax.sparse_name = Some(value.to_vec()),
                b"GNU.sparse.size" => pax.sparse_size = Some(value.to_vec()),
                b"GNU.sparse.realsize" => pax.sparse_realsize = Some(value.to_vec()),
                b"size" => {
                    pax.size = Some(
                        std::str::from_utf8(value)
                            .ok()
                            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                            .and_then(|s| s.parse().ok())
                            .ok_or("a size record that is not a decimal number")?,
                    )
                }
                _ => {}
            }
            data = &data[len..];
        }
        if !pairs.is_empty() {
            pax.sparse_map = Some(pairs.join(&b","[..]));
        }
        Ok(pax)
    }
}
