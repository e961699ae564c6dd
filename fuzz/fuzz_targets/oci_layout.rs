//! OCI image layout: index.json (nested indexes, platforms, ref names), the image manifest
//! and the image config, read through `open_layout_dir` as a scan does; the config also
//! through `parse_config` directly.
//!
//! Input: three parts split on the line `----`: index.json, a manifest, a config. Each part
//! is stored as a blob under its own sha256; before hashing, `@CONFIG@` in the manifest is
//! replaced by the config's digest and `@MANIFEST@` in the index by the manifest's, so the
//! fuzzer reaches past digest checks.
#![no_main]
use gpulint::source::oci_layout::open_layout_dir;
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

fn put(blobs: &std::path::Path, data: &[u8]) -> String {
    let hex = hex::encode(Sha256::digest(data));
    std::fs::write(blobs.join(&hex), data).unwrap();
    format!("sha256:{hex}")
}

fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut parts = Vec::new();
    let mut rest = data;
    while parts.len() < 2 {
        match rest.windows(6).position(|w| w == b"\n----\n") {
            Some(i) => {
                parts.push(&rest[..i]);
                rest = &rest[i + 6..];
            }
            None => break,
        }
    }
    parts.push(rest);
    let (index, manifest, config) = match parts.as_slice() {
        [i, m, c] => (*i, *m, *c),
        [i, m] => (*i, *m, &b"{}"[..]),
        [i] => (*i, &b"{}"[..], &b"{}"[..]),
        _ => unreachable!(),
    };
    let _ = gpulint::source::parse_config(config);

    let d = tempfile::tempdir().unwrap();
    let blobs = d.path().join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::write(
        d.path().join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let cfg = put(&blobs, config);
    let man = put(&blobs, &replace(manifest, b"@CONFIG@", cfg.as_bytes()));
    std::fs::write(
        d.path().join("index.json"),
        replace(index, b"@MANIFEST@", man.as_bytes()),
    )
    .unwrap();
    if let Ok(img) = open_layout_dir(d.path(), None, None) {
        let _ = (img.config, img.layers.len());
    }
});
