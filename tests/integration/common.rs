//! Test-image builders: layer tars written entry by entry (so tests control whiteouts, links
//! and hostile names exactly), gzip/zstd compression, image configs, docker-archives, OCI
//! layouts (single and multi-platform) and oci-archives — plus wrappers for the real `tar`,
//! `skopeo` and `umoci` where a test wants an image made by the tools users have.

#![allow(dead_code)]

use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const ELF_FIXTURE: &str =
    "../shared/fixtures/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so";

/// The fixture ELF (a real CUDA shared library), found relative to the crate root.
pub fn elf_bytes() -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(ELF_FIXTURE);
    std::fs::read(&p).unwrap_or_else(|e| {
        // A worktree sits beside main; shared/ sits beside both.
        let alt = Path::new(
            "/work/shared/fixtures/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so",
        );
        std::fs::read(alt).unwrap_or_else(|_| panic!("{}: {e}", p.display()))
    })
}

pub fn sha256_hex(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn digest(data: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(data))
}

/// One entry of a test layer.
#[derive(Clone)]
pub enum E {
    File(&'static str, Vec<u8>),
    Exec(&'static str, Vec<u8>),
    Dir(&'static str),
    Symlink(&'static str, &'static str),
    Hardlink(&'static str, &'static str),
    /// A regular file whose name is written verbatim (e.g. `../escape`).
    RawName(&'static str, Vec<u8>),
    Fifo(&'static str),
}

pub fn file(p: &'static str, s: &str) -> E {
    E::File(p, s.as_bytes().to_vec())
}

/// A tar stream of `entries`, in order.
pub fn layer_tar(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(1_700_000_000);
        h.set_uid(0);
        h.set_gid(0);
        match e {
            E::File(p, d) | E::Exec(p, d) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(if matches!(e, E::Exec(..)) {
                    0o755
                } else {
                    0o644
                });
                h.set_size(d.len() as u64);
                b.append_data(&mut h, p, &d[..]).unwrap();
            }
            E::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, p, &[][..]).unwrap();
            }
            E::Symlink(p, t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, p, t).unwrap();
            }
            E::Hardlink(p, t) => {
                h.set_entry_type(tar::EntryType::Link);
                h.set_mode(0o644);
                h.set_size(0);
                b.append_link(&mut h, p, t).unwrap();
            }
            E::Fifo(p) => {
                h.set_entry_type(tar::EntryType::Fifo);
                h.set_mode(0o644);
                h.set_size(0);
                b.append_data(&mut h, p, &[][..]).unwrap();
            }
            E::RawName(name, d) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(d.len() as u64);
                let gnu = h.as_gnu_mut().unwrap();
                gnu.name = [0; 100];
                gnu.name[..name.len()].copy_from_slice(name.as_bytes());
                h.set_cksum();
                b.append(&h, &d[..]).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Comp {
    Plain,
    Gzip,
    Zstd,
}

impl Comp {
    pub fn media_type(self) -> &'static str {
        match self {
            Comp::Plain => "application/vnd.oci.image.layer.v1.tar",
            Comp::Gzip => "application/vnd.oci.image.layer.v1.tar+gzip",
            Comp::Zstd => "application/vnd.oci.image.layer.v1.tar+zstd",
        }
    }
}

pub fn compress(data: &[u8], c: Comp) -> Vec<u8> {
    match c {
        Comp::Plain => data.to_vec(),
        Comp::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Comp::Zstd => zstd::encode_all(data, 3).unwrap(),
    }
}

/// An image config (Docker and OCI share these keys).
pub struct Cfg {
    pub os: &'static str,
    pub arch: &'static str,
    pub env: Vec<&'static str>,
    pub entrypoint: Vec<&'static str>,
    pub cmd: Vec<&'static str>,
    pub labels: Vec<(&'static str, &'static str)>,
}

impl Default for Cfg {
    fn default() -> Self {
        Cfg {
            os: "linux",
            arch: "amd64",
            env: vec![
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "CUDA_VERSION=12.4.1",
            ],
            entrypoint: vec!["/opt/nvidia/nvidia_entrypoint.sh"],
            cmd: vec!["bash"],
            labels: vec![("maintainer", "NVIDIA CORPORATION <cudatools@nvidia.com>")],
        }
    }
}

pub fn config_json(cfg: &Cfg, diff_ids: &[String]) -> Vec<u8> {
    let labels: serde_json::Map<String, serde_json::Value> = cfg
        .labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "architecture": cfg.arch,
        "os": cfg.os,
        "config": {
            "Env": cfg.env,
            "Entrypoint": cfg.entrypoint,
            "Cmd": cfg.cmd,
            "Labels": labels,
            "WorkingDir": "/workspace",
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [],
    }))
    .unwrap()
}

/// An image's parts: uncompressed layer tars, how each is stored, and its config.
pub struct TestImage {
    pub layers: Vec<(Vec<u8>, Comp)>,
    pub cfg: Cfg,
}

impl TestImage {
    pub fn diff_ids(&self) -> Vec<String> {
        self.layers.iter().map(|(t, _)| digest(t)).collect()
    }
    pub fn config(&self) -> Vec<u8> {
        config_json(&self.cfg, &self.diff_ids())
    }
}

/// A `docker save`-style archive (legacy layout: `<id>/layer.tar`, `<config hex>.json`,
/// manifest.json, repositories). Layers are stored uncompressed, as docker does.
pub fn write_docker_archive(path: &Path, images: &[(Vec<&str>, &TestImage)]) {
    write_docker_archive_with(path, images, false)
}

/// With `symlinked`, layers are stored as `<diffid>.tar` and manifest.json names
/// `<id>/layer.tar`, a symlink to `../<diffid>.tar` (links inside the archive).
pub fn write_docker_archive_with(path: &Path, images: &[(Vec<&str>, &TestImage)], symlinked: bool) {
    let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
    let mut manifest = Vec::new();
    let add = |b: &mut tar::Builder<std::fs::File>, name: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, name, data).unwrap();
    };
    for (tags, img) in images {
        let config = img.config();
        let config_name = format!("{}.json", sha256_hex(&config));
        add(&mut b, &config_name, &config);
        let mut layer_names = Vec::new();
        for (i, (t, _)) in img.layers.iter().enumerate() {
            let id = sha256_hex(format!("{}{i}{}", sha256_hex(t), config_name).as_bytes());
            let name = format!("{id}/layer.tar");
            add(&mut b, &format!("{id}/VERSION"), b"1.0");
            if symlinked {
                let stored = format!("{}.tar", sha256_hex(t));
                add(&mut b, &stored, t);
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                b.append_link(&mut h, &name, format!("../{stored}"))
                    .unwrap();
            } else {
                add(&mut b, &name, t);
            }
            layer_names.push(name);
        }
        manifest.push(serde_json::json!({
            "Config": config_name,
            "RepoTags": tags,
            "Layers": layer_names,
        }));
    }
    add(
        &mut b,
        "manifest.json",
        &serde_json::to_vec(&manifest).unwrap(),
    );
    add(&mut b, "repositories", b"{}");
    b.into_inner().unwrap().flush().unwrap();
}

/// Write a blob into `layout/blobs/sha256/` and return its descriptor.
pub fn put_blob(layout: &Path, data: &[u8], media_type: &str) -> serde_json::Value {
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(sha256_hex(data)), data).unwrap();
    serde_json::json!({"mediaType": media_type, "digest": digest(data), "size": data.len()})
}

/// Write an image's blobs (layers compressed as asked, config, manifest) into an OCI layout
/// and return the manifest descriptor (without platform/annotations).
pub fn put_image(layout: &Path, img: &TestImage) -> serde_json::Value {
    let config = put_blob(
        layout,
        &img.config(),
        "application/vnd.oci.image.config.v1+json",
    );
    let layers: Vec<serde_json::Value> = img
        .layers
        .iter()
        .map(|(t, c)| put_blob(layout, &compress(t, *c), c.media_type()))
        .collect();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": layers,
    }))
    .unwrap();
    put_blob(
        layout,
        &manifest,
        "application/vnd.oci.image.manifest.v1+json",
    )
}

pub fn write_index(layout: &Path, manifests: Vec<serde_json::Value>) {
    std::fs::create_dir_all(layout).unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let index = serde_json::json!({"schemaVersion": 2, "manifests": manifests});
    std::fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
}

pub fn tagged(mut desc: serde_json::Value, tag: &str) -> serde_json::Value {
    desc["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": tag});
    desc
}

/// A single-image OCI layout tagged `tag`.
pub fn write_oci_layout(layout: &Path, img: &TestImage, tag: &str) {
    let desc = put_image(layout, img);
    write_index(layout, vec![tagged(desc, tag)]);
}

/// `tar -C dir -cf out .` with the system tar (how oci-archives are usually made).
pub fn system_tar(dir: &Path, out: &Path) {
    let st = Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-cf")
        .arg(out)
        .arg(".")
        .status()
        .expect("system tar");
    assert!(st.success());
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A test that needs an external tool fails without it, saying how to get it: a missing
/// tool must not turn into a silent pass.
pub fn require(tool: &str) {
    assert!(
        have(tool),
        "this test needs `{tool}` on PATH: ci/install-tools.sh installs it (ci/test.sh runs it)"
    );
}

/// Run a tool, panicking with its stderr on failure.
pub fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn path_str(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

pub fn join(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// The CLI's walk (`gpulint::scan::walk_image`: cache-aware layer scheduling, then squash)
/// with these walk options, no cache and no progress bars.
pub fn walk_image(
    image: &gpulint::source::Image,
    detectors: &gpulint::detect::Detectors,
    walk: &gpulint::walk::WalkOptions,
) -> gpulint::scan::WalkResult {
    gpulint::scan::walk_image(
        image,
        detectors,
        &gpulint::scan::ScanOptions {
            walk: walk.clone(),
            ..Default::default()
        },
    )
}

/// The real services of `ci/services.sh` (dockerd, registries, podman), started for one
/// test and stopped when dropped; or, with `GPULINT_SERVICES_ENV`, ones already running.
pub struct Services {
    pub dir: PathBuf,
    pub env: BTreeMap<String, String>,
    owned: bool,
    _tmp: Option<tempfile::TempDir>,
}

impl Drop for Services {
    fn drop(&mut self) {
        if self.owned {
            let _ = Command::new("bash")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/services.sh"))
                .arg("stop")
                .arg(&self.dir)
                .status();
        }
    }
}

impl Services {
    pub fn get(&self, k: &str) -> &str {
        self.env
            .get(k)
            .map(|s| s.as_str())
            .unwrap_or_else(|| panic!("{k} missing from services env"))
    }
}

fn read_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn cannot_start(why: &str) -> ! {
    panic!("a test needing real services was selected, but they cannot start: {why}")
}

/// Starts the services, or fails the test: a test that needs them is `#[ignore]`d in a plain
/// `cargo test` and selected by `ci/test.sh`, so a missing engine is never a silent pass.
pub fn start_services() -> Services {
    if let Ok(p) = std::env::var("GPULINT_SERVICES_ENV") {
        let p = PathBuf::from(p);
        return Services {
            dir: p.parent().map(Path::to_path_buf).unwrap_or_default(),
            env: read_env(&p),
            owned: false,
            _tmp: None,
        };
    }
    // Short path: unix sockets live in it.
    let tmp = tempfile::Builder::new()
        .prefix("gl-")
        .tempdir_in("/tmp")
        .unwrap_or_else(|e| cannot_start(&format!("no temporary directory in /tmp: {e}")));
    let dir = tmp.path().to_path_buf();
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/services.sh"))
        .arg("start")
        .arg(&dir)
        .output();
    let svc = Services {
        dir: dir.clone(),
        env: read_env(&dir.join("env")),
        owned: true,
        _tmp: Some(tmp),
    };
    match out {
        Ok(o) if o.status.success() => svc,
        Ok(o) => cannot_start(&format!(
            "ci/services.sh start failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .join(" | ")
        )),
        Err(e) => cannot_start(&format!("cannot run bash ci/services.sh: {e}")),
    }
}
