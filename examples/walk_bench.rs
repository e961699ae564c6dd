//! Benchmark helper for `ci/bench-inventory.sh` (not a test).
//!
//!   walk_bench generate DIR MIB [LAYERS]
//!                                 build an OCI layout (gzip layers) of about MIB MiB of
//!                                 layer content: many small files plus big incompressible ones,
//!                                 in LAYERS layers (default 6; half of each kind)
//!   walk_bench decompress REF     bare cost: open every layer, decompress it and read its tar
//!                                 headers and data, nothing else (same thread count as walk)
//!   walk_bench walk REF           `walk_image` with ELF sniffing (no path detectors)
//!
//! Each timed command prints `seconds=<float>` as its last line.

use gpulint::scan::{walk_image, ScanOptions};
use gpulint::source::{open_image, LayerContent, SourceOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let r = match args.get(1).map(String::as_str) {
        Some("generate") if (4..=5).contains(&args.len()) => {
            let layers = args.get(4).map_or(Ok(6), |l| l.parse::<u64>());
            match (args[3].parse::<u64>(), layers) {
                (Ok(mib), Ok(layers)) if layers > 0 => generate(Path::new(&args[2]), mib, layers),
                _ => Err("MIB and LAYERS: positive numbers".into()),
            }
        }
        Some("decompress") if args.len() == 3 => decompress(&args[2]),
        Some("walk") if args.len() == 3 => walk(&args[2]),
        _ => Err("usage: walk_bench generate DIR MIB [LAYERS] | decompress REF | walk REF".into()),
    };
    if let Err(e) = r {
        eprintln!("walk_bench: {e}");
        std::process::exit(2);
    }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |p| p.get())
}

fn decompress(reference: &str) -> Result<(), String> {
    let image =
        open_image(reference, None, &SourceOptions::default()).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let total = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads().min(image.layers.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(layer) = image.layers.get(i) else {
                    break;
                };
                let LayerContent::Tar(blob) = &layer.content else {
                    continue;
                };
                let raw = match blob.open() {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("layer {i}: {e}");
                        continue;
                    }
                };
                let mut ar = tar::Archive::new(flate2::read::MultiGzDecoder::new(
                    std::io::BufReader::with_capacity(128 << 10, raw),
                ));
                let mut n = 0u64;
                if let Ok(entries) = ar.entries() {
                    for mut e in entries.flatten() {
                        n += std::io::copy(&mut e, &mut std::io::sink()).unwrap_or(0);
                    }
                }
                total.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            });
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "decompressed {} layers, {} MiB of file data",
        image.layers.len(),
        total.into_inner() >> 20
    );
    println!("seconds={secs:.3}");
    Ok(())
}

fn walk(reference: &str) -> Result<(), String> {
    let image =
        open_image(reference, None, &SourceOptions::default()).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let r = walk_image(
        &image,
        &gpulint::detect::Detectors::none(),
        &ScanOptions::default(),
    );
    let secs = start.elapsed().as_secs_f64();
    let elf = r.tree.files().filter(|(_, n)| !n.facts.is_empty()).count();
    println!(
        "walked {} layers: {} paths, {} ELF files scanned, {} errors",
        r.layers.len(),
        r.tree.nodes.len(),
        elf,
        r.errors.len()
    );
    for e in r.errors.iter().take(5) {
        println!("  error: {e}");
    }
    println!("seconds={secs:.3}");
    Ok(())
}

/// xorshift64*: fast, deterministic filler.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

const WORDS: &[&str] = &[
    "cuda", "tensor", "kernel", "import", "def", "return", "self", "torch", "numpy", "version",
    "library", "shared", "object", "python", "module", "class", "for", "in", "if", "else",
];

fn generate(dir: &Path, mib: u64, layers: u64) -> Result<(), String> {
    let elf = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so"),
    )
    .or_else(|_| {
        std::fs::read(
            "/work/shared/fixtures/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so",
        )
    })
    .map_err(|e| format!("ELF fixture: {e}"))?;
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).map_err(|e| e.to_string())?;
    // Half the layers hold small text files, half big random files.
    let per_layer = (mib << 20) / layers;
    let specs: Vec<(usize, bool)> = (0..layers as usize).map(|i| (i, i % 2 == 0)).collect();
    let results: Vec<Result<(String, String, u64), String>> = std::thread::scope(|s| {
        let hs: Vec<_> = specs
            .iter()
            .map(|&(i, small)| {
                let blobs = &blobs;
                let elf = &elf;
                s.spawn(move || make_layer(blobs, i, small, per_layer, elf))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("generator panicked".into()))
            })
            .collect()
    });
    let mut layers = Vec::new();
    let mut diff_ids = Vec::new();
    for r in results {
        let (digest, diff_id, size) = r?;
        layers.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": digest, "size": size}));
        diff_ids.push(diff_id);
    }
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": gpulint::source::Platform::host().architecture, "os": "linux",
        "config": {"Env": ["CUDA_VERSION=12.4.1"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids}}))
    .map_err(|e| e.to_string())?;
    let cd = put(&blobs, &config)?;
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": config.len()},
        "layers": layers}))
    .map_err(|e| e.to_string())?;
    let md = put(&blobs, &manifest)?;
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md,
        "size": manifest.len(), "annotations": {"org.opencontainers.image.ref.name": "bench"}}]});
    std::fs::write(dir.join("index.json"), index.to_string()).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#)
        .map_err(|e| e.to_string())?;
    println!("generated {}", dir.display());
    Ok(())
}

fn put(blobs: &Path, data: &[u8]) -> Result<String, String> {
    let hex = gpulint_sha256(data);
    std::fs::write(blobs.join(&hex), data).map_err(|e| e.to_string())?;
    Ok(format!("sha256:{hex}"))
}

fn gpulint_sha256(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Hashes what passes through (for the diff_id of the uncompressed tar).
struct HashWriter<W: Write> {
    inner: W,
    h: sha2::Sha256,
}
impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.h.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn make_layer(
    blobs: &Path,
    i: usize,
    small: bool,
    bytes: u64,
    elf: &[u8],
) -> Result<(String, String, u64), String> {
    use sha2::Digest;
    let e = |e: std::io::Error| e.to_string();
    let tmp = blobs.join(format!("tmp-layer-{i}"));
    let f = std::fs::File::create(&tmp).map_err(e)?;
    let gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::fast());
    let mut b = tar::Builder::new(HashWriter {
        inner: gz,
        h: sha2::Sha256::new(),
    });
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1));
    let mut written = 0u64;
    let mut n = 0u64;
    let add = |b: &mut tar::Builder<_>, path: String, data: &[u8]| -> Result<(), String> {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, path, data).map_err(e)
    };
    while written < bytes {
        n += 1;
        if small {
            let len = 512 + (rng.next() % 7680) as usize;
            let mut s = String::with_capacity(len + 16);
            while s.len() < len {
                s.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                s.push(if rng.next().is_multiple_of(8) {
                    '\n'
                } else {
                    ' '
                });
            }
            let path = format!(
                "usr/lib/python3/site-packages/pkg{}/mod{}/f{n}.py",
                n % 97,
                n % 13
            );
            add(&mut b, path, s.as_bytes())?;
            written += s.len() as u64;
            if n.is_multiple_of(500) {
                add(
                    &mut b,
                    format!("usr/lib/x86_64-linux-gnu/libfake{i}_{n}.so"),
                    elf,
                )?;
                written += elf.len() as u64;
            }
        } else {
            let len = (bytes - written).min(160 << 20) as usize;
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            add(&mut b, format!("opt/models/layer{i}/weights{n}.bin"), &data)?;
            written += len as u64;
        }
    }
    let hw = b.into_inner().map_err(e)?;
    let diff_id = format!("sha256:{:x}", hw.h.finalize());
    let mut w = hw.inner.finish().map_err(e)?;
    w.flush().map_err(e)?;
    drop(w);
    let mut f = std::fs::File::open(&tmp).map_err(e)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(e)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        size += k as u64;
    }
    let hex = format!("{:x}", h.finalize());
    std::fs::rename(&tmp, blobs.join(&hex)).map_err(e)?;
    Ok((format!("sha256:{hex}"), diff_id, size))
}
