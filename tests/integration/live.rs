//! Live sources against real components: dockerd 20.10, podman's Docker-compatible
//! service, the distribution registry (anonymous and htpasswd).
//!
//! Design: one test, `live_sources`, owns the services for its run. It calls
//! `ci/services.sh start DIR` (which installs the packages when missing, as root on Debian)
//! and `ci/services.sh stop DIR` when done, even on failure. With `GPULINT_SERVICES_ENV`
//! pointing at the `env` file of services already started, it uses those and leaves them
//! running. It is `#[ignore]`d in a plain `cargo test` (no daemon is assumed there) and
//! selected by `ci/test.sh` with `--ignored`; once selected, services that cannot be
//! installed or started fail the test: nothing is skipped silently. The fixture images are built here, offline: an OCI layout written by
//! this file, turned into the other forms with skopeo, docker and podman.
//!
//! What it shows: the same image read through the Docker daemon, the podman socket, the
//! registry (Docker schema2 via `docker push`, OCI via `skopeo copy`, and with auth from a
//! docker config file), a docker-archive and an OCI layout gives the same full inventory
//! (`gpulint::scan::scan`, the pipeline the CLI runs) and identical per-layer trees (the real
//! walker, `walk_layer`, with every detector); platform selection from a multi-platform
//! index; a corrupted registry blob is reported by digest; the cache makes a second scan
//! fetch no layer.

use gpulint::cache::{scan_layers, LayerCache};
use gpulint::detect::Detectors;
use gpulint::progress::Progress;
use gpulint::scan::ScanOptions;
use gpulint::source::{
    open_daemon, open_image, open_registry, Image, Layer, LiveError, LiveErrorKind, Platform,
    SourceOptions,
};
use gpulint::walk::{walk_layer, FileTree, LayerTree, WalkOptions};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ANALYZER: &str = "live-test/1";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------- fixture: an OCI layout written by hand ----------

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

enum E<'a> {
    Dir(&'a str),
    File(&'a str, Vec<u8>),
    Link(&'a str, &'a str),
}

fn layer_tar(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_ustar();
        h.set_mtime(1_700_000_000);
        h.set_uid(0);
        h.set_gid(0);
        match e {
            E::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, p, std::io::empty()).unwrap();
            }
            E::File(p, data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(data.len() as u64);
                b.append_data(&mut h, p, data.as_slice()).unwrap();
            }
            E::Link(p, t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, p, t).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(data).unwrap();
    g.finish().unwrap()
}

fn pseudo_random(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

struct Layout {
    dir: PathBuf,
    /// Gzip the layers (else plain tar).
    gzip: bool,
}

impl Layout {
    fn new(dir: &Path) -> Layout {
        std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
        std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        Layout {
            dir: dir.to_path_buf(),
            gzip: true,
        }
    }

    fn blob(&self, data: &[u8]) -> (String, usize) {
        let d = sha(data);
        std::fs::write(self.dir.join("blobs/sha256").join(&d[7..]), data).unwrap();
        (d, data.len())
    }

    /// An image manifest for `arch` with these (uncompressed) layer tars; returns its
    /// descriptor JSON.
    fn image(&self, arch: &str, layers: &[Vec<u8>], env: &[&str]) -> serde_json::Value {
        let diff_ids: Vec<String> = layers.iter().map(|l| sha(l)).collect();
        let config = serde_json::json!({
            "architecture": arch, "os": "linux",
            "config": {"Env": env, "Cmd": ["python3", "app.py"], "WorkingDir": "/opt/app",
                        "Labels": {"org.example.gpu": "yes"}},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": layers.iter().map(|_| serde_json::json!({"created_by": "fixture"})).collect::<Vec<_>>(),
        });
        let (cd, cs) = self.blob(&serde_json::to_vec(&config).unwrap());
        let descs: Vec<_> = layers
            .iter()
            .map(|l| {
                let (bytes, mt) = if self.gzip {
                    (gzip(l), "application/vnd.oci.image.layer.v1.tar+gzip")
                } else {
                    (l.clone(), "application/vnd.oci.image.layer.v1.tar")
                };
                let (d, s) = self.blob(&bytes);
                serde_json::json!({"mediaType": mt, "digest": d, "size": s})
            })
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
            "layers": descs,
        });
        let (md, ms) = self.blob(&serde_json::to_vec(&manifest).unwrap());
        serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
                           "platform": {"architecture": arch, "os": "linux"}})
    }

    fn tag(&self, tag: &str, mut desc: serde_json::Value) {
        desc["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": tag});
        let index = serde_json::json!({"schemaVersion": 2, "manifests": [desc]});
        std::fs::write(
            self.dir.join("index.json"),
            serde_json::to_vec(&index).unwrap(),
        )
        .unwrap();
    }

    fn index_of(&self, descs: Vec<serde_json::Value>) -> serde_json::Value {
        let idx = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": descs});
        let (d, s) = self.blob(&serde_json::to_vec(&idx).unwrap());
        serde_json::json!({"mediaType": "application/vnd.oci.image.index.v1+json", "digest": d, "size": s})
    }
}

fn main_layers() -> Vec<Vec<u8>> {
    vec![
        layer_tar(&[
            E::Dir("etc/"),
            E::File("etc/os-release", b"ID=fixture\n".to_vec()),
            E::Dir("usr/"),
            E::Dir("usr/lib/"),
            E::File("usr/lib/libfoo.so.1", pseudo_random(200_000, 1)),
            E::Link("usr/lib/libfoo.so", "libfoo.so.1"),
        ]),
        layer_tar(&[
            E::Dir("usr/local/"),
            E::Dir("usr/local/cuda-12.1/"),
            E::Dir("usr/local/cuda-12.1/lib64/"),
            E::File(
                "usr/local/cuda-12.1/lib64/libcudart.so.12.1.105",
                pseudo_random(300_000, 2),
            ),
            E::Link(
                "usr/local/cuda-12.1/lib64/libcudart.so.12",
                "libcudart.so.12.1.105",
            ),
            E::Link("usr/local/cuda", "cuda-12.1"),
        ]),
        layer_tar(&[
            E::Dir("etc/"),
            E::File("etc/.wh.os-release", vec![]),
            E::Dir("opt/"),
            E::Dir("opt/app/"),
            E::File("opt/app/app.py", b"import torch\n".to_vec()),
            // A real nvcc-built CUDA library (SASS sm_75 only) and a torch install, so the
            // inventories compared below have binaries and Python packages in them.
            E::Dir("opt/app/ext/"),
            E::File("opt/app/ext/_C.so", cuda_elf()),
            E::Dir("usr/local/lib/"),
            E::Dir("usr/local/lib/python3.11/"),
            E::Dir("usr/local/lib/python3.11/site-packages/"),
            E::Dir("usr/local/lib/python3.11/site-packages/torch/"),
            E::File(
                "usr/local/lib/python3.11/site-packages/torch/version.py",
                b"__version__ = '2.3.0+cu121'\ncuda = '12.1'\n".to_vec(),
            ),
            E::Dir("usr/local/lib/python3.11/site-packages/torch-2.3.0.dist-info/"),
            E::File(
                "usr/local/lib/python3.11/site-packages/torch-2.3.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: torch\nVersion: 2.3.0\n".to_vec(),
            ),
            E::File(
                "usr/local/lib/python3.11/site-packages/torch-2.3.0.dist-info/WHEEL",
                b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux1_x86_64\n"
                    .to_vec(),
            ),
        ]),
    ]
}

const CUDA_ELF: &str = "testdata/fatbin/cuda-binaries/v02_sm75_only/libv02_sm75_only.so";

fn cuda_elf() -> Vec<u8> {
    std::fs::read(repo_root().join(CUDA_ELF)).unwrap_or_else(|e| panic!("{CUDA_ELF}: {e}"))
}

// ---------- scanning and comparing ----------

fn detectors() -> &'static Detectors {
    static D: std::sync::OnceLock<Detectors> = std::sync::OnceLock::new();
    D.get_or_init(gpulint::detect::detectors)
}

/// One layer through the real walker, every detector on.
fn walk(layer: &Layer, index: usize) -> LayerTree {
    walk_layer(layer, index, detectors(), &WalkOptions::default())
}

fn scan(image: &Image, cache: Option<&LayerCache>) -> Vec<LayerTree> {
    let (trees, _) = scan_layers(image, cache, ANALYZER, 4, &Progress::hidden(), walk);
    trees
}

/// The full inventory through the CLI's pipeline (open → walk → inventory), no cache, as
/// JSON with the storage facts removed: the reference, the manifest digest and each layer
/// blob's digest / media type / size differ by transport (a daemon exports plain tars, a
/// registry serves gzip). The diff_ids and everything found in the image must not.
fn inventory(reference: &str, source: &SourceOptions) -> serde_json::Value {
    let opts = ScanOptions {
        source: source.clone(),
        ..ScanOptions::default()
    };
    let inv =
        gpulint::scan::scan(reference, &opts).unwrap_or_else(|e| panic!("scan {reference}: {e:#}"));
    assert!(!inv.partial, "{reference}: partial: {:?}", inv.errors);
    let mut v = serde_json::to_value(&inv).unwrap();
    let img = v["image"].as_object_mut().unwrap();
    img.remove("reference");
    img.remove("digest");
    for l in img["layers"].as_array_mut().unwrap() {
        let l = l.as_object_mut().unwrap();
        for k in ["digest", "media_type", "size"] {
            l.remove(k);
        }
    }
    v
}

/// The per-layer trees as comparable JSON, keyed by diff_id.
fn fingerprint(image: &Image, trees: &[LayerTree]) -> Vec<(String, String)> {
    image
        .layers
        .iter()
        .zip(trees)
        .map(|(l, t)| {
            assert!(t.errors.is_empty(), "{}: {:?}", image.reference, t.errors);
            (
                l.diff_id.clone().unwrap_or_default(),
                serde_json::to_string(t).unwrap(),
            )
        })
        .collect()
}

fn expect_kind(r: anyhow::Result<Image>, kind: LiveErrorKind) -> String {
    match r {
        Ok(img) => panic!("{} opened, expected {kind:?}", img.reference),
        Err(e) => {
            let l = e
                .chain()
                .find_map(|c| c.downcast_ref::<LiveError>())
                .unwrap_or_else(|| panic!("not a LiveError: {e:#}"));
            assert_eq!(l.kind, kind, "{e:#}");
            format!("{e:#}")
        }
    }
}

#[test]
#[ignore = "needs dockerd, a registry and podman: ci/test.sh starts them and runs this with --ignored"]
fn live_sources() {
    let svc = crate::common::start_services();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let docker_cli = svc.get("DOCKER_CLI").to_string();
    let docker_host = svc.get("GPULINT_DOCKER_HOST").to_string();
    let podman_host = svc.get("GPULINT_PODMAN_HOST").to_string();
    let reg = svc.get("GPULINT_REGISTRY").to_string();
    let auth_reg = svc.get("GPULINT_AUTH_REGISTRY").to_string();
    let user = svc.get("GPULINT_AUTH_USER").to_string();
    let password = std::fs::read_to_string(svc.get("GPULINT_AUTH_PASSWORD_FILE")).unwrap();
    let docker = || {
        let mut c = Command::new(&docker_cli);
        c.arg("-H").arg(&docker_host);
        c
    };
    let skopeo = || {
        let mut c = Command::new("skopeo");
        c.arg("copy").arg("-q").arg("--dest-tls-verify=false");
        c
    };

    // Fixture in every form.
    let oci = w.join("oci");
    let layout = Layout::new(&oci);
    let desc = layout.image(
        "amd64",
        &main_layers(),
        &["PATH=/usr/bin", "CUDA_VERSION=12.1.0"],
    );
    layout.tag("v1", desc);
    let archive = w.join("img.tar");
    run(skopeo()
        .arg(format!("oci:{}:v1", oci.display()))
        .arg(format!("docker-archive:{}:live/img:v1", archive.display())));
    run(docker().arg("load").arg("-q").arg("-i").arg(&archive));
    let saved = w.join("saved.tar");
    run(docker().args(["save", "-o"]).arg(&saved).arg("live/img:v1"));
    run(docker().args(["tag", "live/img:v1", &format!("{reg}/live/schema2:v1")]));
    run(docker().args(["push", "-q", &format!("{reg}/live/schema2:v1")]));
    run(skopeo()
        .arg(format!("oci:{}:v1", oci.display()))
        .arg(format!("docker://{reg}/live/oci:v1")));
    run(skopeo()
        .arg(format!("--dest-creds={user}:{password}"))
        .arg(format!("oci:{}:v1", oci.display()))
        .arg(format!("docker://{auth_reg}/live/auth:v1")));
    run(Command::new("podman")
        .args(["--url", &podman_host, "load", "-q", "-i"])
        .arg(&archive));

    let with_host = |h: &str| SourceOptions {
        docker_host: Some(h.to_string()),
        ..SourceOptions::default()
    };
    let none = SourceOptions {
        docker_host: Some(format!("unix://{}/absent.sock", w.display())),
        docker_config_dir: Some(w.join("no-docker-config")),
        ..SourceOptions::default()
    };
    let docker_cfg = w.join("docker-config");
    std::fs::create_dir_all(&docker_cfg).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    std::fs::write(
        docker_cfg.join("config.json"),
        format!(r#"{{"auths":{{"{auth_reg}":{{"auth":"{b64}"}}}}}}"#),
    )
    .unwrap();
    let authed = SourceOptions {
        docker_config_dir: Some(docker_cfg.clone()),
        ..none.clone()
    };

    // The same image through every source: the per-layer trees of the real walker, and the
    // full inventory of the CLI's pipeline.
    let layout_ref = format!("oci:{}:v1", oci.display());
    let reference = open_image(&layout_ref, None, &SourceOptions::default()).unwrap();
    let want = fingerprint(&reference, &scan(&reference, None));
    assert_eq!(want.len(), 3);
    let want_inv = inventory(&layout_ref, &none);
    {
        let bins = want_inv["binaries"].as_array().unwrap();
        let ext = bins
            .iter()
            .find(|b| b["path"] == "/opt/app/ext/_C.so")
            .unwrap_or_else(|| panic!("the CUDA binary is in the inventory: {want_inv:#}"));
        assert_eq!(ext["sass"], serde_json::json!(["sm_75"]));
        assert!(want_inv["cuda_libraries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["name"] == "cudart" && l["version"] == "12.1.105"));
        assert!(want_inv["python_packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "torch"));
        assert_eq!(want_inv["image"]["env"]["CUDA_VERSION"], "12.1.0");
    }
    let daemon_opts = with_host(&docker_host);
    let podman_opts = with_host(&podman_host);
    let sources: Vec<(&str, String, &SourceOptions)> = vec![
        (
            "docker daemon",
            "docker-daemon:live/img:v1".to_string(),
            &daemon_opts,
        ),
        (
            "podman socket",
            "docker-daemon:live/img:v1".to_string(),
            &podman_opts,
        ),
        (
            "registry schema2",
            format!("docker://{reg}/live/schema2:v1"),
            &none,
        ),
        ("registry oci", format!("docker://{reg}/live/oci:v1"), &none),
        (
            "registry auth",
            format!("docker://{auth_reg}/live/auth:v1"),
            &authed,
        ),
        (
            "docker-archive (docker save)",
            format!("docker-archive:{}", saved.display()),
            &none,
        ),
        (
            "docker-archive (skopeo)",
            format!("docker-archive:{}", archive.display()),
            &none,
        ),
        ("bare name, daemon", "live/img:v1".to_string(), &daemon_opts),
        ("bare name, registry", format!("{reg}/live/oci:v1"), &none),
    ];
    let mut opened: Vec<(&str, Image)> = Vec::new();
    for (what, r, opts) in &sources {
        let scan_opts = ScanOptions {
            source: (*opts).clone(),
            ..ScanOptions::default()
        };
        let img = gpulint::scan::open(r, &scan_opts).unwrap_or_else(|e| panic!("{what}: {e:#}"));
        let got = fingerprint(&img, &scan(&img, None));
        assert_eq!(
            got, want,
            "{what} ({}) differs from the OCI layout",
            img.reference
        );
        assert_eq!(img.config.env_var("CUDA_VERSION"), Some("12.1.0"), "{what}");
        let inv = inventory(r, opts);
        assert!(
            inv == want_inv,
            "{what} ({r}): inventory differs from the OCI layout's\n--- {what}\n{inv:#}\n--- OCI layout\n{want_inv:#}"
        );
        eprintln!(
            "live: {what}: same {} layers and the same inventory as the OCI layout",
            got.len()
        );
        opened.push((what, img));
    }
    let sources = opened;
    let mt = |img: &Image| img.layers[0].media_type.clone().unwrap_or_default();
    assert!(
        mt(&sources[2].1).starts_with("application/vnd.docker."),
        "docker push gives schema2"
    );
    assert!(
        mt(&sources[3].1).starts_with("application/vnd.oci."),
        "skopeo from OCI gives OCI"
    );
    let squashed = FileTree::squash(scan(&sources[0].1, None));
    assert!(
        squashed
            .get(&gpulint::walk::ImagePath::new("etc/os-release").unwrap())
            .is_none(),
        "whiteout applied"
    );
    assert!(squashed
        .resolve(&gpulint::walk::ImagePath::new("usr/local/cuda/lib64/libcudart.so.12").unwrap())
        .is_some());

    // A daemon layer opened twice (a second export pass), and in parallel.
    let img = &sources[0].1;
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .flat_map(|_| img.layers.iter().enumerate())
            .map(|(i, l)| s.spawn(move || walk(l, i)))
            .collect();
        for h in hs {
            assert!(h.join().unwrap().errors.is_empty());
        }
    });

    // Auth: no credentials, wrong credentials.
    let msg = expect_kind(
        open_registry(&format!("{auth_reg}/live/auth:v1"), None, &none),
        LiveErrorKind::Auth,
    );
    assert!(msg.contains("no credentials"), "{msg}");
    let bad_cfg = w.join("bad-config");
    std::fs::create_dir_all(&bad_cfg).unwrap();
    std::fs::write(
        bad_cfg.join("config.json"),
        format!(r#"{{"auths":{{"{auth_reg}":{{"username":"{user}","password":"wrong-pw"}}}}}}"#),
    )
    .unwrap();
    let bad = SourceOptions {
        docker_config_dir: Some(bad_cfg),
        ..none.clone()
    };
    let msg = expect_kind(
        open_registry(&format!("{auth_reg}/live/auth:v1"), None, &bad),
        LiveErrorKind::Auth,
    );
    assert!(
        !msg.contains("wrong-pw") && !msg.contains(&password),
        "never print credentials: {msg}"
    );

    // Multi-platform index: amd64 and arm64 with different content.
    let multi = w.join("multi");
    let ml = Layout::new(&multi);
    let amd = ml.image(
        "amd64",
        &[layer_tar(&[E::File("arch", b"amd64\n".to_vec())])],
        &[],
    );
    let arm = ml.image(
        "arm64",
        &[layer_tar(&[
            E::File("arch", b"arm64\n".to_vec()),
            E::File("arm-only", vec![]),
        ])],
        &[],
    );
    let idx = ml.index_of(vec![amd, arm]);
    ml.tag("v1", idx);
    run(skopeo()
        .arg("--all")
        .arg(format!("oci:{}:v1", multi.display()))
        .arg(format!("docker://{reg}/live/multi:v1")));
    let arm64: Platform = "linux/arm64".parse().unwrap();
    let a = open_registry(&format!("{reg}/live/multi:v1"), Some(&arm64), &none).unwrap();
    assert_eq!(a.platform.architecture, "arm64");
    let at = scan(&a, None);
    assert!(at[0]
        .entry(&gpulint::walk::ImagePath::new("arm-only").unwrap())
        .is_some());
    let amd64: Platform = "linux/amd64".parse().unwrap();
    let b = open_registry(&format!("{reg}/live/multi:v1"), Some(&amd64), &none).unwrap();
    assert_eq!(b.platform.architecture, "amd64");
    assert_eq!(scan(&b, None)[0].entries().count(), 1);
    let s390: Platform = "linux/s390x".parse().unwrap();
    let msg = expect_kind(
        open_registry(&format!("{reg}/live/multi:v1"), Some(&s390), &none),
        LiveErrorKind::NotFound,
    );
    assert!(
        msg.contains("linux/arm64") && msg.contains("linux/amd64"),
        "{msg}"
    );

    // Cache: the second scan walks nothing and fetches no layer; the daemon shares it.
    let cache = LayerCache::with_key(w.join("cache"), [7; 32]);
    let img = open_registry(&format!("{reg}/live/oci:v1"), None, &none).unwrap();
    let (_, s1) = scan_layers(&img, Some(&cache), ANALYZER, 4, &Progress::hidden(), walk);
    assert_eq!((s1.cache_hits, s1.walked), (0, 3));
    let (t2, s2) = scan_layers(
        &img,
        Some(&cache),
        ANALYZER,
        4,
        &Progress::hidden(),
        |_, _| panic!("cached layer walked"),
    );
    assert_eq!((s2.cache_hits, s2.walked), (3, 0));
    assert_eq!(fingerprint(&img, &t2), want);
    // The daemon's export names layers by diff_id only: its entries are its own (the cache
    // key is blob digest + diff_id, so a claimed diff_id alone never borrows an entry).
    let d = open_daemon("live/img:v1", None, &with_host(&docker_host)).unwrap();
    let (_, s3) = scan_layers(&d, Some(&cache), ANALYZER, 4, &Progress::hidden(), walk);
    assert_eq!((s3.cache_hits, s3.walked), (0, 3));
    let (_, s3) = scan_layers(
        &d,
        Some(&cache),
        ANALYZER,
        4,
        &Progress::hidden(),
        |_, _| panic!("cached layer walked"),
    );
    assert_eq!(s3.cache_hits, 3, "the daemon's own entries are reused");

    // A corrupted blob in the registry's storage is caught by its digest.
    let bad_oci = w.join("corrupt");
    let bl = Layout::new(&bad_oci);
    // Fresh content each run: services may be reused across runs.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let payload = pseudo_random(100_000, seed);
    let d = bl.image("amd64", &[layer_tar(&[E::File("payload", payload)])], &[]);
    bl.tag("v1", d);
    run(skopeo()
        .arg(format!("oci:{}:v1", bad_oci.display()))
        .arg(format!("docker://{reg}/live/corrupt:v1")));
    let img = open_registry(&format!("{reg}/live/corrupt:v1"), None, &none).unwrap();
    let digest = img.layers[0].digest.clone().unwrap();
    let data = PathBuf::from(svc.get("GPULINT_REGISTRY_ROOT"))
        .join("docker/registry/v2/blobs/sha256")
        .join(&digest[7..9])
        .join(&digest[7..])
        .join("data");
    let mut bytes = std::fs::read(&data).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    let trees = scan(&img, None);
    let errs = trees[0]
        .errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        errs.contains(&digest) && errs.contains("digest mismatch"),
        "{errs}"
    );
    eprintln!("live: corrupted blob reported: {errs}");

    // Unreachable registry and daemon fail fast, with exit code 2.
    let t = Instant::now();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = listener.local_addr().unwrap().port();
    drop(listener);
    let msg = expect_kind(
        open_registry(&format!("127.0.0.1:{closed}/x/y:1"), None, &none),
        LiveErrorKind::Unreachable,
    );
    assert!(msg.contains(&format!("127.0.0.1:{closed}")), "{msg}");
    let msg = expect_kind(
        open_daemon("live/img:v1", None, &none),
        LiveErrorKind::NoDaemon,
    );
    assert!(msg.contains("absent.sock"), "{msg}");
    expect_kind(
        open_daemon("live/absent:v9", None, &with_host(&docker_host)),
        LiveErrorKind::NotFound,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "fail fast, took {:?}",
        t.elapsed()
    );
}
