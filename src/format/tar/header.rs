//! The fixed fields of a 512-byte tar header, each read exactly one way.

use super::BLOCK;

pub(super) fn padding(n: u64) -> u64 {
    (BLOCK - n % BLOCK) % BLOCK
}

/// A numeric header field: base-256 when the high bit of the first byte is set, else octal
/// digits (after optional leading spaces) ended by NUL or space, with only NULs and spaces
/// after the end. Anything else is an error: there is exactly one reading of a field.
pub(super) fn number(f: &[u8]) -> Result<u64, String> {
    if f.first().is_some_and(|b| b & 0x80 != 0) {
        if f[0] & 0x40 != 0 {
            return Err("is a negative base-256 number".into());
        }
        let mut v = u64::from(f[0] & 0x3f);
        for b in &f[1..] {
            v = v
                .checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(*b)))
                .ok_or("is a base-256 number over 64 bits")?;
        }
        return Ok(v);
    }
    let start = f.iter().position(|b| *b != b' ').unwrap_or(f.len());
    let digits = f[start..]
        .iter()
        .position(|b| !(b'0'..=b'7').contains(b))
        .map_or(f.len(), |i| start + i);
    if f[digits..].iter().any(|b| *b != 0 && *b != b' ') {
        return Err(format!(
            "{:?} is not an octal number",
            String::from_utf8_lossy(f)
        ));
    }
    let mut v: u64 = 0;
    for b in &f[start..digits] {
        v = v
            .checked_mul(8)
            .map(|v| v + u64::from(b - b'0'))
            .ok_or("is an octal number over 64 bits")?;
    }
    Ok(v)
}

/// A NUL-terminated text field.
pub(super) fn field_str(f: &[u8]) -> &[u8] {
    let end = f.iter().position(|b| *b == 0).unwrap_or(f.len());
    &f[..end]
}

pub(super) fn trim_nuls(mut v: Vec<u8>) -> Vec<u8> {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The entry name: ustar headers put a prefix in bytes 345..500; GNU headers use those bytes
/// for other fields.
pub(super) fn header_name(h: &[u8; 512]) -> Vec<u8> {
    let name = field_str(&h[..100]);
    if &h[257..263] == b"ustar\0" {
        let prefix = field_str(&h[345..500]);
        if !prefix.is_empty() {
            let mut p = prefix.to_vec();
            p.push(b'/');
            p.extend_from_slice(name);
            return p;
        }
    }
    name.to_vec()
}
