//! The layer cache as an attacker with write access to it (a CI cache restored from a fork)
//! and a blob changed after it was cached meet it: neither turns into a verdict.

use crate::common::*;
use gpulint::cache::LayerCache;
use gpulint::scan::{scan, ScanOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/images/example.tar")
        .to_string_lossy()
        .into_owned()
}

/// The binary with its own HOME (so its own cache key under `~/.config/gpulint`).
fn gpulint(home: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("GPULINT_CACHE_KEY")
        .env("CI", "true")
        .env("DOCKER_HOST", format!("unix://{}/no.sock", home.display()))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn entries(cache: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(cache.join("layers"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| e.into_path())
        .collect()
}

/// The attack: the cached layer's `sm_75` edited to `sm_90` (still valid JSON) made
/// GL001 (exit 1) "ok" (exit 0). Now the entry fails its MAC: a warning, the layer is walked
/// again, GL001 stands, and the entry is rewritten.
#[test]
fn an_edited_cache_entry_is_a_miss_with_a_warning() {
    let home = tmp();
    let cache = home.path().join("c");
    let c = path_str(&cache);
    let args = [
        "image",
        &example(),
        "--gpu",
        "NVIDIA H200",
        "--driver",
        "580.159.04",
        "--cache-dir",
        &c,
        "--format",
        "json",
    ];
    let (code, out, err) = gpulint(home.path(), &args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("GL001"), "{out}");
    let key = home.path().join(".config/gpulint/cache-key");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", key.display());
    }
    let mut edited = 0;
    for e in entries(&cache) {
        let text = std::fs::read_to_string(&e).unwrap();
        if text.contains("sm_75") {
            std::fs::write(&e, text.replace("sm_75", "sm_90")).unwrap();
            edited += 1;
        }
    }
    assert!(edited > 0, "no cached entry holds sm_75");

    let (code, out, err) = gpulint(home.path(), &args);
    assert_eq!(code, 1, "the edit must not make GL001 go away: {out}{err}");
    assert!(out.contains("GL001"), "{out}");
    assert!(err.contains("failed authentication"), "{err}");
    assert!(!err.contains(&std::fs::read_to_string(&key).unwrap().trim().to_string()));

    // Rewritten by the walk: the next run is warm and silent.
    let (code, _, err) = gpulint(home.path(), &args);
    assert_eq!(code, 1);
    assert!(!err.contains("failed authentication"), "{err}");

    // Another user's key (a cache restored from elsewhere): a miss, never a verdict.
    let other = tmp();
    let (code, out, err) = gpulint(other.path(), &args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("failed authentication"), "{err}");
}

fn one_layer_layout(d: &tempfile::TempDir) -> (PathBuf, PathBuf) {
    let img = TestImage {
        layers: vec![(
            layer_tar(&[file(
                "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                "aaaa",
            )]),
            Comp::Gzip,
        )],
        cfg: Cfg::default(),
    };
    let layout = join(d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let blob = layout
        .join("blobs/sha256")
        .join(sha256_hex(&compress(&img.layers[0].0, Comp::Gzip)));
    assert!(blob.is_file());
    (layout, blob)
}

fn scan_cached(layout: &Path, cache: &Path, verify_blobs: bool) -> gpulint::inventory::Inventory {
    let opts = ScanOptions {
        cache: Some(LayerCache::with_key(cache, [9; 32]).verifying_blobs(verify_blobs)),
        ..ScanOptions::default()
    };
    scan(&format!("oci:{}:v1", layout.display()), &opts).unwrap()
}

/// A blob that grew or shrank after its layer was cached no longer matches the manifest's
/// size: the cached result is not used, and the walk reports the damage.
#[test]
fn a_blob_whose_size_left_the_manifest_is_not_taken_from_the_cache() {
    let d = tmp();
    let (layout, blob) = one_layer_layout(&d);
    let cache = join(&d, "cache");
    assert!(scan_cached(&layout, &cache, false).errors.is_empty());
    let mut data = std::fs::read(&blob).unwrap();
    data.extend_from_slice(b"junk");
    std::fs::write(&blob, data).unwrap();
    let inv = scan_cached(&layout, &cache, false);
    assert!(inv.partial, "{:?}", inv.errors);
    assert!(!inv.errors.is_empty());
}

/// Bytes changed in place at the same size are not seen by a cached scan (documented); with
/// `--verify-blobs` every layer is walked and the digest mismatch is reported.
#[test]
fn verify_blobs_rehashes_cached_layers() {
    let d = tmp();
    let (layout, blob) = one_layer_layout(&d);
    let cache = join(&d, "cache");
    assert!(scan_cached(&layout, &cache, false).errors.is_empty());
    let mut data = std::fs::read(&blob).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    std::fs::write(&blob, data).unwrap();
    let inv = scan_cached(&layout, &cache, true);
    assert!(inv.partial);
    assert!(
        inv.errors
            .iter()
            .any(|e| e.to_string().contains("digest mismatch")),
        "{:?}",
        inv.errors
    );
}

/// `gpulint inventory --stats` on the example image with this config dir and, when given,
/// this `GPULINT_CACHE_KEY`: exit code, how many files the walk read, stderr.
fn inventory_with_key(
    home: &Path,
    config: &Path,
    cache: &Path,
    key: Option<&str>,
) -> (i32, Option<u64>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpulint"));
    cmd.args(["inventory", &example(), "--stats", "--cache-dir"])
        .arg(cache)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", config)
        .env_remove("XDG_CACHE_HOME")
        .env("CI", "true")
        .env("DOCKER_HOST", format!("unix://{}/no.sock", home.display()));
    match key {
        Some(k) => cmd.env("GPULINT_CACHE_KEY", k),
        None => cmd.env_remove("GPULINT_CACHE_KEY"),
    };
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    // `gpulint: read 0.7 MB of 0.7 MB (99.96%) in 17 files, 0.04 s`
    let files = err
        .lines()
        .find_map(|l| l.strip_prefix("gpulint: read "))
        .and_then(|l| l.split(" in ").nth(1))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok());
    (o.status.code().unwrap_or(-1), files, err)
}

/// A CI job's config dir does not persist, so the per-user key file is new each job and a
/// restored cache never hit. With `GPULINT_CACHE_KEY` (a CI secret) two jobs with different
/// config dirs share hits; another key misses with the warning; an unusable value is
/// refused (exit 2) without being shown; an empty one (a fork: no secrets) is unset.
#[test]
fn the_env_cache_key_is_shared_across_config_dirs_and_checked() {
    let d = tmp();
    let home = d.path();
    let cache = home.join("cache");
    let key = "0123456789abcdef".repeat(4);
    let cfg = |job: &str| home.join(job).join("config");

    let (code, files, err) = inventory_with_key(home, &cfg("job1"), &cache, Some(&key));
    assert_eq!(code, 0, "{err}");
    assert!(
        files.is_some_and(|n| n > 0),
        "a cold scan reads files: {err}"
    );
    assert!(!entries(&cache).is_empty(), "nothing cached: {err}");

    let (code, files, err) = inventory_with_key(home, &cfg("job2"), &cache, Some(&key));
    assert_eq!(code, 0, "{err}");
    assert_eq!(files, Some(0), "the second job must hit the cache: {err}");
    assert!(!err.contains("failed authentication"), "{err}");
    for job in ["job1", "job2"] {
        assert!(
            !cfg(job).join("gpulint/cache-key").exists(),
            "the env key replaces the key file"
        );
    }

    let other = "fedcba9876543210".repeat(4);
    let (code, files, err) = inventory_with_key(home, &cfg("job3"), &cache, Some(&other));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("failed authentication"), "{err}");
    assert!(files.is_some_and(|n| n > 0), "another key is a miss: {err}");

    // 31 bytes, and not hex or base64: refused, never echoed.
    let short = "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e7";
    for bad in [short, "s3cr3t-but-not-a-key!!"] {
        let (code, _, err) = inventory_with_key(home, &cfg("job4"), &cache, Some(bad));
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("GPULINT_CACHE_KEY"), "{err}");
        assert!(!err.contains(bad), "the value is printed: {err}");
    }

    // A fork's job: the secret expands to nothing, so the per-user key file is used (made
    // fresh here) and the restored entries miss.
    let (code, files, err) = inventory_with_key(home, &cfg("fork"), &cache, Some(""));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("failed authentication"), "{err}");
    assert!(files.is_some_and(|n| n > 0), "{err}");
    assert!(cfg("fork").join("gpulint/cache-key").is_file());
}
