//! Image sources and the layer walker, on images built by `common` (and, where installed, by
//! the real skopeo / umoci / tar).

use crate::common::*;
use gpulint::detect::{elf, Detector, Detectors, Fact};
use gpulint::scan::WalkResult;
use gpulint::source::{open_image, Platform, SourceError, SourceOptions};
use gpulint::walk::{EntryBudget, FileTree, ImagePath, IssueKind, NodeKind, WalkOptions};
use std::process::Command;
use std::sync::{Arc, Mutex};

type Calls = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Wants `os-release`, `version.json` and `libv01.so`; reads at most 8 bytes; returns a
/// fixed fact so tests can see that detector facts land on the node.
struct Probe {
    calls: Calls,
    fact: Fact,
}

impl Detector for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn version(&self) -> u32 {
        1
    }
    fn globs(&self) -> &[&'static str] {
        &["**/os-release", "**/version.json", "**/libv01.so"]
    }
    fn max_bytes(&self) -> u64 {
        8
    }
    fn detect(&self, path: &ImagePath, data: &[u8]) -> Result<Vec<Fact>, String> {
        self.calls
            .lock()
            .unwrap()
            .push((path.as_str().to_string(), data.to_vec()));
        Ok(vec![self.fact.clone()])
    }
}

fn probe() -> (Detectors, Calls) {
    let calls: Calls = Arc::default();
    let elf = elf_bytes();
    let fact = Fact::Elf(elf::scan_elf(&elf[..], elf.len() as u64).expect("fixture scans"));
    (
        Detectors::new(vec![Box::new(Probe {
            calls: calls.clone(),
            fact,
        })]),
        calls,
    )
}

fn p(s: &str) -> ImagePath {
    ImagePath::new(s).unwrap()
}

fn base_layer() -> Vec<E> {
    vec![
        E::Dir("etc"),
        file("etc/os-release", "ID=ubuntu\n"),
        E::Dir("usr/local/cuda-12.4"),
        file(
            "usr/local/cuda-12.4/version.json",
            r#"{"cuda":{"version":"12.4.1"}}"#,
        ),
        E::Symlink("usr/local/cuda", "/usr/local/cuda-12.4"),
        E::Dir("usr/lib"),
        E::Exec("usr/lib/libv01.so", elf_bytes()),
        E::Hardlink("usr/lib/libv01.so.1", "usr/lib/libv01.so"),
        E::File("usr/lib/tiny.bin", b"\x7fELF tiny".to_vec()),
        E::File("usr/lib/data.bin", vec![0xab; 4096]),
        E::Symlink("etc/escape", "../../../../etc/shadow"),
        file("usr/share/doc/a.txt", "a"),
        file("usr/share/doc/b.txt", "b"),
        file("opt/app/old.txt", "old"),
        E::Fifo("run/fifo"),
    ]
}

fn top_layer() -> Vec<E> {
    vec![
        E::File("usr/share/doc/.wh.a.txt", vec![]),
        E::File("opt/app/.wh..wh..opq", vec![]),
        file("opt/app/new.txt", "new"),
        file("etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"),
    ]
}

fn standard_image(c0: Comp, c1: Comp) -> TestImage {
    TestImage {
        layers: vec![
            (layer_tar(&base_layer()), c0),
            (layer_tar(&top_layer()), c1),
        ],
        cfg: Cfg::default(),
    }
}

/// What every transport must yield for `standard_image`.
fn check_standard(r: &WalkResult, calls: &Calls) {
    assert!(r.errors.is_empty(), "errors: {:?}", r.errors);
    assert!(!r.partial);
    assert_eq!(r.layers.len(), 2);
    let t = &r.tree;
    // Whiteout and opaque dir applied.
    assert!(t.get(&p("usr/share/doc/a.txt")).is_none());
    assert!(t.get(&p("usr/share/doc/b.txt")).is_some());
    assert!(t.get(&p("opt/app/old.txt")).is_none());
    assert!(t.get(&p("opt/app/new.txt")).is_some());
    assert_eq!(r.layers[1].whiteouts(), vec![&p("usr/share/doc/a.txt")]);
    assert_eq!(r.layers[1].opaque_dirs(), vec![&p("opt/app")]);
    assert!(
        !r.layers[1]
            .entries()
            .any(|(k, _)| k.as_str().contains(".wh.")),
        "whiteout markers are not entries"
    );
    // The upper os-release wins.
    let os = t.get(&p("etc/os-release")).unwrap();
    assert_eq!(os.layer, 1);
    // Links kept as entries, resolved inside the image.
    assert_eq!(
        t.get(&p("usr/local/cuda")).unwrap().kind,
        NodeKind::Symlink {
            target: "/usr/local/cuda-12.4".into()
        }
    );
    let (rp, _) = t.resolve(&p("usr/local/cuda/version.json")).unwrap();
    assert_eq!(rp.as_str(), "usr/local/cuda-12.4/version.json");
    assert_eq!(
        t.get(&p("usr/lib/libv01.so.1")).unwrap().kind,
        NodeKind::Hardlink {
            target: p("usr/lib/libv01.so")
        }
    );
    assert!(
        t.resolve(&p("etc/escape")).is_none(),
        "a link out of the root resolves inside it (to a missing /etc/shadow)"
    );
    assert!(matches!(
        t.get(&p("run/fifo")).unwrap().kind,
        NodeKind::Other
    ));
    // ELF sniffing: the .so got the scanner's fact (plus the probe's: it asked for it too);
    // non-ELF and too-small files got none.
    let so = t.get(&p("usr/lib/libv01.so")).unwrap();
    let elf_size = elf_bytes().len() as u64;
    assert!(matches!(so.kind, NodeKind::File { size, mode: 0o755 } if size == elf_size));
    assert_eq!(so.facts.len(), 2, "probe fact + ELF scan fact");
    // The walker's streaming scan saw the whole file: same facts as a scan of the bytes.
    let direct = elf::scan_elf_bytes(&elf_bytes()).unwrap();
    assert!(!direct.sass().is_empty(), "the fixture carries SASS");
    for f in &so.facts {
        let Fact::Elf(f) = f else {
            panic!("unexpected fact {f:?}")
        };
        assert_eq!(f, &direct);
    }
    let (_, via_link) = t.resolve(&p("usr/lib/libv01.so.1")).unwrap();
    assert_eq!(via_link.facts.len(), 2);
    assert!(t.get(&p("usr/lib/tiny.bin")).unwrap().facts.is_empty());
    assert!(t.get(&p("usr/lib/data.bin")).unwrap().facts.is_empty());
    // Detectors got exactly the files they asked for, at most max_bytes of each.
    let mut got = calls.lock().unwrap().clone();
    got.sort();
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "etc/os-release",
            "etc/os-release",
            "usr/lib/libv01.so",
            "usr/local/cuda-12.4/version.json"
        ]
    );
    assert_eq!(got[0].1, b"ID=ubunt");
    assert_eq!(&got[2].1[..4], b"\x7fELF");
    assert_eq!(t.get(&p("etc/os-release")).unwrap().facts.len(), 1);
}

fn walk(reference: &str) -> (gpulint::source::Image, WalkResult, Calls) {
    let img = open_image(reference, None, &SourceOptions::default())
        .unwrap_or_else(|e| panic!("{reference}: {e}"));
    let (dets, calls) = probe();
    let r = walk_image(&img, &dets, &WalkOptions::default());
    (img, r, calls)
}

#[test]
fn docker_archive_legacy_layout() {
    let d = tmp();
    let img = standard_image(Comp::Plain, Comp::Plain);
    let tarp = join(&d, "img.tar");
    write_docker_archive(&tarp, &[(vec!["test/cuda:12.4"], &img)]);
    let (image, r, calls) = walk(&format!("docker-archive:{}", path_str(&tarp)));
    check_standard(&r, &calls);
    assert_eq!(image.config.env_var("CUDA_VERSION"), Some("12.4.1"));
    assert_eq!(
        image.config.entrypoint,
        vec!["/opt/nvidia/nvidia_entrypoint.sh"]
    );
    assert_eq!(image.config.cmd, vec!["bash"]);
    assert_eq!(image.config.working_dir.as_deref(), Some("/workspace"));
    assert_eq!(
        image.config.labels.get("maintainer").map(String::as_str),
        Some("NVIDIA CORPORATION <cudatools@nvidia.com>")
    );
    assert_eq!(image.platform.to_string(), "linux/amd64");
    let diff_ids = img.diff_ids();
    for (l, want) in image.layers.iter().zip(&diff_ids) {
        assert_eq!(l.diff_id.as_ref(), Some(want));
        assert_eq!(l.digest.as_ref(), Some(want));
    }
    assert_eq!(image.digest, Some(digest(&img.config())));
    // A bare path is auto-detected.
    let (_, r2, calls2) = walk(&path_str(&tarp));
    check_standard(&r2, &calls2);
}

#[test]
fn docker_archive_with_symlinked_layers_and_gzip_compression() {
    let d = tmp();
    let img = standard_image(Comp::Plain, Comp::Plain);
    let tarp = join(&d, "img.tar");
    write_docker_archive_with(&tarp, &[(vec!["test/cuda:12.4"], &img)], true);
    let (_, r, calls) = walk(&format!("docker-archive:{}", path_str(&tarp)));
    check_standard(&r, &calls);
    // `docker save | gzip`: read in place through the decompressor.
    let gz = join(&d, "img.tar.gz");
    std::fs::write(&gz, compress(&std::fs::read(&tarp).unwrap(), Comp::Gzip)).unwrap();
    let (_, r, calls) = walk(&format!("docker-archive:{}:test/cuda:12.4", path_str(&gz)));
    check_standard(&r, &calls);
    let (_, r, calls) = walk(&path_str(&gz));
    check_standard(&r, &calls);
}

#[test]
fn docker_archive_with_several_images_needs_a_choice() {
    let d = tmp();
    let a = standard_image(Comp::Plain, Comp::Plain);
    let mut b = TestImage {
        layers: vec![(layer_tar(&[file("only-in-b", "b")]), Comp::Plain)],
        cfg: Cfg::default(),
    };
    b.cfg.env = vec!["WHICH=b"];
    let tarp = join(&d, "multi.tar");
    write_docker_archive(
        &tarp,
        &[(vec!["test/a:1"], &a), (vec!["docker.io/test/b:2"], &b)],
    );
    let t = path_str(&tarp);
    let by_name = open_image(
        &format!("docker-archive:{t}:test/b:2"),
        None,
        &SourceOptions::default(),
    )
    .unwrap();
    assert_eq!(by_name.config.env_var("WHICH"), Some("b"));
    let by_index = open_image(
        &format!("docker-archive:{t}:@1"),
        None,
        &SourceOptions::default(),
    )
    .unwrap();
    assert_eq!(by_index.config.env_var("WHICH"), Some("b"));
    assert_eq!(by_index.layers.len(), 1);
    let first = open_image(
        &format!("docker-archive:{t}:test/a:1"),
        None,
        &SourceOptions::default(),
    )
    .unwrap();
    assert_eq!(first.layers.len(), 2);

    let e = open_image(
        &format!("docker-archive:{t}"),
        None,
        &SourceOptions::default(),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("test/a:1") && msg.contains("docker.io/test/b:2"),
        "{msg}"
    );
    let e = open_image(
        &format!("docker-archive:{t}:test/c:3"),
        None,
        &SourceOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e.downcast_ref(), Some(SourceError::ImageNotFound { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("test/c:3"), "{e}");
    let e = open_image(
        &format!("docker-archive:{t}:@7"),
        None,
        &SourceOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("@7"), "{e}");
}

#[test]
fn oci_layout_with_gzip_zstd_and_plain_layers() {
    for (c0, c1) in [
        (Comp::Gzip, Comp::Zstd),
        (Comp::Zstd, Comp::Plain),
        (Comp::Plain, Comp::Gzip),
    ] {
        let d = tmp();
        let img = standard_image(c0, c1);
        let layout = join(&d, "layout");
        write_oci_layout(&layout, &img, "v1");
        let (image, r, calls) = walk(&format!("oci:{}:v1", path_str(&layout)));
        check_standard(&r, &calls);
        assert_eq!(image.layers[0].media_type.as_deref(), Some(c0.media_type()));
        assert_eq!(image.layers[1].diff_id, Some(img.diff_ids()[1].clone()));
        assert_eq!(
            image.layers[0].digest,
            Some(digest(&compress(&img.layers[0].0, c0))),
            "{c0:?}: zstd output is deterministic at a fixed level, gzip too"
        );
        // No tag: the only image; a bare directory: auto-detected as a layout.
        walk(&format!("oci:{}", path_str(&layout)));
        let (_, r2, calls2) = walk(&path_str(&layout));
        check_standard(&r2, &calls2);
        let e = open_image(
            &format!("oci:{}:nope", path_str(&layout)),
            None,
            &SourceOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("v1"), "lists the tags: {e}");
    }
}

#[test]
fn oci_archive_made_with_system_tar() {
    let d = tmp();
    let img = standard_image(Comp::Gzip, Comp::Zstd);
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let tarp = join(&d, "oci.tar");
    system_tar(&layout, &tarp);
    let (_, r, calls) = walk(&format!("oci-archive:{}:v1", path_str(&tarp)));
    check_standard(&r, &calls);
    let (_, r2, calls2) = walk(&path_str(&tarp));
    check_standard(&r2, &calls2);
}

#[test]
fn multi_platform_index_selects_the_platform() {
    let d = tmp();
    let layout = join(&d, "layout");
    let mut amd = TestImage {
        layers: vec![(layer_tar(&[file("arch", "amd64")]), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    amd.cfg.arch = "amd64";
    let mut arm = TestImage {
        layers: vec![(layer_tar(&[file("arch", "arm64")]), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    arm.cfg.arch = "arm64";
    let mut da = put_image(&layout, &amd);
    da["platform"] = serde_json::json!({"os": "linux", "architecture": "amd64"});
    let mut dr = put_image(&layout, &arm);
    dr["platform"] = serde_json::json!({"os": "linux", "architecture": "arm64", "variant": "v8"});
    // A buildx-style attestation manifest: never a candidate.
    let mut att = put_blob(&layout, b"{}", "application/vnd.oci.image.manifest.v1+json");
    att["platform"] = serde_json::json!({"os": "unknown", "architecture": "unknown"});
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [da, dr, att],
    }))
    .unwrap();
    let idx = put_blob(&layout, &index, "application/vnd.oci.image.index.v1+json");
    write_index(&layout, vec![tagged(idx, "multi")]);
    let r = format!("oci:{}:multi", path_str(&layout));

    for (plat, want) in [("linux/amd64", "amd64"), ("linux/arm64", "arm64")] {
        let pl: Platform = plat.parse().unwrap();
        let image = open_image(&r, Some(&pl), &SourceOptions::default()).unwrap();
        assert_eq!(image.platform.architecture, want);
        let res = walk_image(&image, &Detectors::none(), &WalkOptions::default());
        assert_eq!(
            res.tree.get(&p("arch")).map(|n| n.kind.clone()),
            Some(NodeKind::File {
                size: want.len() as u64,
                mode: 0o644
            })
        );
    }
    let v8: Platform = "linux/arm64/v8".parse().unwrap();
    assert_eq!(
        open_image(&r, Some(&v8), &SourceOptions::default())
            .unwrap()
            .platform
            .architecture,
        "arm64"
    );
    // Default: the host's platform (amd64 on CI).
    if Platform::host().architecture == "amd64" {
        assert_eq!(
            open_image(&r, None, &SourceOptions::default())
                .unwrap()
                .platform
                .architecture,
            "amd64"
        );
    }
    let s390: Platform = "linux/s390x".parse().unwrap();
    let e = open_image(&r, Some(&s390), &SourceOptions::default()).unwrap_err();
    assert!(
        matches!(e.downcast_ref(), Some(SourceError::PlatformNotFound { .. })),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("linux/s390x")
            && msg.contains("linux/amd64")
            && msg.contains("linux/arm64/v8"),
        "names the request and lists what is there: {msg}"
    );
    assert!(
        !msg.contains("unknown"),
        "attestations are not platforms: {msg}"
    );
}

#[test]
fn dir_transport_walks_a_rootfs_without_following_links() {
    let d = tmp();
    let root = join(&d, "rootfs");
    let outside = join(&d, "outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.so"), elf_bytes()).unwrap();
    std::fs::create_dir_all(root.join("usr/lib")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("proc/1")).unwrap();
    std::fs::write(root.join("proc/1/status"), "x").unwrap();
    std::fs::write(root.join("etc/os-release"), "ID=debian\n").unwrap();
    std::fs::write(root.join("usr/lib/libv01.so"), elf_bytes()).unwrap();
    std::fs::hard_link(root.join("usr/lib/libv01.so"), root.join("usr/lib/hard.so")).unwrap();
    std::os::unix::fs::symlink("libv01.so", root.join("usr/lib/libv01.so.1")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("usr/lib/out")).unwrap();
    std::os::unix::fs::symlink("../../../outside/secret.so", root.join("etc/rel-out")).unwrap();
    run(Command::new("mkfifo").arg(root.join("etc/fifo")));

    for reference in [format!("dir:{}", path_str(&root)), path_str(&root)] {
        let (image, r, calls) = walk(&reference);
        assert_eq!(image.layers.len(), 1);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let t = &r.tree;
        assert!(matches!(
            t.get(&p("usr/lib/out")).unwrap().kind,
            NodeKind::Symlink { .. }
        ));
        assert!(
            t.get(&p("usr/lib/out/secret.so")).is_none(),
            "never followed out of the root"
        );
        assert!(t.resolve(&p("usr/lib/out/secret.so")).is_none());
        assert!(t.resolve(&p("etc/rel-out")).is_none());
        let (rp, n) = t.resolve(&p("usr/lib/libv01.so.1")).unwrap();
        assert_eq!(rp.as_str(), "usr/lib/libv01.so");
        assert_eq!(n.facts.len(), 2);
        assert_eq!(
            t.get(&p("usr/lib/hard.so")).unwrap().facts.len(),
            1,
            "ELF only"
        );
        assert!(matches!(
            t.get(&p("etc/fifo")).unwrap().kind,
            NodeKind::Other
        ));
        assert!(t.get(&p("proc")).is_some());
        assert!(
            t.get(&p("proc/1/status")).is_none(),
            "proc is not descended into"
        );
        assert_eq!(t.get(&p("etc/os-release")).unwrap().facts.len(), 1);
        assert_eq!(calls.lock().unwrap().len(), 2);
    }
}

#[test]
fn hostile_entries_are_reported_and_skipped() {
    let d = tmp();
    let img = TestImage {
        layers: vec![(
            layer_tar(&[
                file("ok/before", "1"),
                E::RawName("../escape", b"evil".to_vec()),
                E::RawName("a/../../escape2", b"evil".to_vec()),
                E::Hardlink("ok/hl", "../../etc/passwd"),
                E::Symlink("ok/sl", "../../../../etc/passwd"),
                file("ok/after", "2"),
            ]),
            Comp::Gzip,
        )],
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let (image, r, _) = walk(&format!("oci:{}", path_str(&layout)));
    let layer = image.layers[0].digest.clone().unwrap();
    assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
    for e in r.errors.iter().map(|e| e.to_string()) {
        assert!(e.contains(&layer), "names the layer: {e}");
    }
    assert!(
        r.errors[0].to_string().contains("../escape"),
        "{}",
        r.errors[0]
    );
    assert!(
        r.errors[1].to_string().contains("a/../../escape2"),
        "{}",
        r.errors[1]
    );
    assert!(
        r.errors[2].to_string().contains("ok/hl")
            && r.errors[2].to_string().contains("../../etc/passwd")
    );
    assert!(r.partial, "errors make the result partial");
    assert!(!r.layers[0].partial, "but the layer was read to its end");
    let t = &r.tree;
    assert!(t.get(&p("ok/before")).is_some() && t.get(&p("ok/after")).is_some());
    assert!(t.get(&p("escape")).is_none() && t.get(&p("escape2")).is_none());
    assert!(t.get(&p("ok/hl")).is_none());
    assert!(matches!(
        t.get(&p("ok/sl")).unwrap().kind,
        NodeKind::Symlink { .. }
    ));
    assert!(t.resolve(&p("ok/sl")).is_none());
}

#[test]
fn truncated_layer_keeps_what_was_read_and_names_the_layer() {
    for c in [Comp::Gzip, Comp::Zstd, Comp::Plain] {
        let d = tmp();
        let layout = join(&d, "layout");
        let mut entries = vec![file("first/a.txt", "a")];
        let big: Vec<u8> = (0..400_000u32).flat_map(|i| i.to_le_bytes()).collect();
        entries.push(E::File("first/big.bin", big));
        entries.push(file("zz/last.txt", "never seen"));
        let tar0 = layer_tar(&entries);
        let blob0 = compress(&tar0, c);
        let cut = &blob0[..blob0.len() / 2];
        let tar1 = layer_tar(&[file("second/ok.txt", "ok")]);
        // Hand-made manifest: the truncated blob's own digest, so only truncation is wrong.
        let l0 = put_blob(&layout, cut, c.media_type());
        let l1 = put_blob(&layout, &tar1, Comp::Plain.media_type());
        let cfg = config_json(&Cfg::default(), &[digest(&tar0), digest(&tar1)]);
        let cd = put_blob(&layout, &cfg, "application/vnd.oci.image.config.v1+json");
        let m = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "config": cd, "layers": [l0, l1],
            "mediaType": "application/vnd.oci.image.manifest.v1+json"}))
        .unwrap();
        let md = put_blob(&layout, &m, "application/vnd.oci.image.manifest.v1+json");
        write_index(&layout, vec![md]);
        let (_, r, _) = walk(&path_str(&layout));
        assert!(r.partial);
        assert!(r.layers[0].partial, "{c:?}");
        assert!(!r.layers[1].partial);
        assert_eq!(r.errors.len(), 1, "{c:?}: {:?}", r.errors);
        assert_eq!(
            r.errors[0].kind,
            IssueKind::Truncated,
            "{c:?}: {:?}",
            r.errors
        );
        assert_eq!(r.errors[0].layer.as_deref(), Some(digest(cut).as_str()));
        let e = &r.errors[0].to_string();
        assert!(e.contains(&digest(cut)), "names the layer digest: {e}");
        assert!(
            e.contains("/first/a.txt") || e.contains("/first/big.bin"),
            "names the last good path: {e}"
        );
        assert!(
            r.tree.get(&p("first/a.txt")).is_some(),
            "{c:?}: entries before the cut are kept"
        );
        assert!(r.tree.get(&p("zz/last.txt")).is_none());
        assert!(
            r.tree.get(&p("second/ok.txt")).is_some(),
            "the next layer is still walked"
        );
    }
}

#[test]
fn layer_digest_is_verified_while_streaming() {
    let d = tmp();
    let img = TestImage {
        layers: vec![(layer_tar(&[file("a", "aaaa")]), Comp::Plain)],
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let blob = layout
        .join("blobs/sha256")
        .join(sha256_hex(&img.layers[0].0));
    let mut data = std::fs::read(&blob).unwrap();
    let pos = data.windows(4).position(|w| w == b"aaaa").unwrap();
    data[pos] = b'b';
    std::fs::write(&blob, data).unwrap();
    let (_, r, _) = walk(&path_str(&layout));
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(
        r.errors[0].to_string().contains("digest mismatch"),
        "{}",
        r.errors[0]
    );
    assert_eq!(r.errors[0].kind, IssueKind::DigestMismatch);
    assert!(r.partial);

    // A tampered config is refused when opening.
    let cfg = img.config();
    let cfg_path = layout.join("blobs/sha256").join(sha256_hex(&cfg));
    std::fs::write(&cfg_path, b"{\"os\":\"linux\"}").unwrap();
    let e = open_image(&path_str(&layout), None, &SourceOptions::default()).unwrap_err();
    assert!(e.to_string().contains("digest mismatch"), "{e}");
}

#[test]
fn corrupt_compressed_layer_is_reported_by_its_digest() {
    // A flipped byte inside a gzip/zstd layer breaks decoding before the blob's end: the
    // walk still reads the rest so the digest check names the root cause.
    for c in [Comp::Gzip, Comp::Zstd] {
        let d = tmp();
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let img = TestImage {
            layers: vec![(
                layer_tar(&[E::File("big.bin", big), file("z/last.txt", "z")]),
                c,
            )],
            cfg: Cfg::default(),
        };
        let layout = join(&d, "layout");
        write_oci_layout(&layout, &img, "v1");
        let blob_data = compress(&img.layers[0].0, c);
        let blob = layout.join("blobs/sha256").join(sha256_hex(&blob_data));
        let mut data = std::fs::read(&blob).unwrap();
        let mid = data.len() / 2;
        data[mid] ^= 0xff;
        std::fs::write(&blob, data).unwrap();
        let (_, r, _) = walk(&path_str(&layout));
        assert!(r.partial, "{c:?}");
        assert_eq!(r.errors.len(), 1, "{c:?}: {:?}", r.errors);
        assert_eq!(r.errors[0].kind, IssueKind::DigestMismatch, "{c:?}");
        let e = &r.errors[0].to_string();
        assert!(e.contains("digest mismatch"), "{c:?}: {e}");
        assert!(
            e.contains(&digest(&blob_data)),
            "{c:?}: names the layer: {e}"
        );
    }
}

/// A gzip blob whose header changed (its mtime field) still decodes to the very diff_id, but
/// no longer matches the digest its manifest names: a corrupt image (a registry or `docker
/// load` refuses it), so the walk fails on it rather than pass what it analysed.
#[test]
fn a_blob_not_matching_its_digest_fails_even_when_its_content_is_intact() {
    let d = tmp();
    let img = TestImage {
        layers: vec![(layer_tar(&[file("a", "aaaa")]), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let blob_data = compress(&img.layers[0].0, Comp::Gzip);
    let blob = layout.join("blobs/sha256").join(sha256_hex(&blob_data));
    let mut data = std::fs::read(&blob).unwrap();
    // RFC 1952: bytes 4..8 are MTIME, which decoders ignore.
    data[4] ^= 0x5a;
    std::fs::write(&blob, data).unwrap();
    let (_, r, _) = walk(&path_str(&layout));
    assert!(r.partial, "{:?}", r.errors);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert_eq!(r.errors[0].kind, IssueKind::DigestMismatch);
    assert!(r.errors[0].to_string().contains(&digest(&blob_data)));
}

#[test]
fn decompression_is_bounded() {
    let d = tmp();
    let zeros = vec![0u8; 8 << 20];
    let img = TestImage {
        layers: vec![(layer_tar(&[E::File("bomb", zeros)]), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let image = open_image(&path_str(&layout), None, &SourceOptions::default()).unwrap();
    let opts = WalkOptions {
        max_layer_bytes: 1 << 20,
        ..WalkOptions::default()
    };
    let r = walk_image(&image, &Detectors::none(), &opts);
    assert!(r.partial);
    assert!(r.errors[0].to_string().contains("limit"), "{:?}", r.errors);
    assert_eq!(r.errors[0].kind, IssueKind::TooLarge);
    let ok = walk_image(&image, &Detectors::none(), &WalkOptions::default());
    assert!(!ok.partial, "{:?}", ok.errors);
}

/// An image's layers record at most the image's entry budget together (each entry costs
/// memory, whatever its size in the layer: a layer of millions of empty entries had no cap).
/// Past it the layer stops there: a `too-large` issue, the image partial (GL000, exit 2).
/// Every image gets a budget of its own.
#[test]
fn entries_per_image_are_bounded() {
    let d = tmp();
    let names: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
    let layer = |l: usize| {
        let files: Vec<E> = names
            .iter()
            .map(|n| E::File(Box::leak(format!("l{l}/{n}").into_boxed_str()), vec![]))
            .collect();
        (layer_tar(&files), Comp::Gzip)
    };
    let img = TestImage {
        layers: (0..3).map(layer).collect(),
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let image = open_image(&path_str(&layout), None, &SourceOptions::default()).unwrap();
    for threads in [1, 3] {
        let opts = WalkOptions {
            threads: Some(threads),
            entries: EntryBudget::new(100),
            ..WalkOptions::default()
        };
        let r = walk_image(&image, &Detectors::none(), &opts);
        assert!(r.partial, "{threads}");
        let recorded: usize = r.layers.iter().map(|l| l.entries().count()).sum();
        assert!(recorded <= 100, "{threads}: {recorded} entries recorded");
        // Every layer that met the spent budget says so (layers walked at once may both).
        let over = |errors: &[gpulint::walk::ScanIssue]| {
            assert!(!errors.is_empty());
            for e in errors {
                assert_eq!(e.kind, IssueKind::TooLarge, "{e:?}");
                assert!(
                    e.message.contains("more than 100 entries in the image"),
                    "{e:?}"
                );
            }
            errors.len()
        };
        let n = over(&r.errors);
        if threads == 1 {
            // In layer order: 40 + 40 + 20 recorded, the third layer cut.
            assert_eq!(n, 1, "{:?}", r.errors);
            assert_eq!(recorded, 100);
        }
        // The same options again: a fresh budget for this image, cut again.
        let again = walk_image(&image, &Detectors::none(), &opts);
        over(&again.errors);
        let again_recorded: usize = again.layers.iter().map(|l| l.entries().count()).sum();
        assert!(again_recorded <= 100, "{again_recorded}");
        if threads == 1 {
            assert_eq!(again_recorded, 100, "a budget spent by the first image");
        }
    }
    // Within the budget (3 layers of 40 files): read whole.
    let opts = WalkOptions {
        entries: EntryBudget::new(130),
        ..WalkOptions::default()
    };
    let ok = walk_image(&image, &Detectors::none(), &opts);
    assert!(!ok.partial, "{:?}", ok.errors);
}

#[test]
fn layers_in_parallel_keep_layer_order() {
    let d = tmp();
    let layers: Vec<(Vec<u8>, Comp)> = (0..12)
        .map(|i| {
            let name: &'static str = Box::leak(format!("f{i}").into_boxed_str());
            let shared = E::File("shared", format!("{i}").into_bytes());
            (layer_tar(&[file(name, "x"), shared]), Comp::Gzip)
        })
        .collect();
    let img = TestImage {
        layers,
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let image = open_image(&path_str(&layout), None, &SourceOptions::default()).unwrap();
    for threads in [1, 4] {
        let r = walk_image(
            &image,
            &Detectors::none(),
            &WalkOptions {
                threads: Some(threads),
                ..WalkOptions::default()
            },
        );
        for (i, l) in r.layers.iter().enumerate() {
            assert!(l.entry(&p(&format!("f{i}"))).is_some());
        }
        assert_eq!(r.tree.get(&p("shared")).unwrap().layer, 11);
        let again = FileTree::squash(r.layers.clone());
        assert_eq!(again.nodes.len(), r.tree.nodes.len());
    }
}

#[test]
fn unusable_input_is_a_named_exit_2_error() {
    let d = tmp();
    let junk = join(&d, "junk.bin");
    std::fs::write(&junk, vec![7u8; 3000]).unwrap();
    let plain_tar = join(&d, "plain.tar");
    std::fs::write(&plain_tar, layer_tar(&[file("hello", "x")])).unwrap();
    let empty_dir = join(&d, "emptylayout");
    std::fs::create_dir_all(&empty_dir).unwrap();
    let missing = join(&d, "missing.tar");
    // (docker-daemon: and docker:// references are opened by their own modules: live.rs.)
    let cases: Vec<(String, &str)> = vec![
        ("containers-storage:foo".into(), "containers-storage"),
        ("oci:".into(), "oci:"),
        (format!("docker-archive:{}:@x", path_str(&plain_tar)), "@x"),
        (
            format!("docker-archive:{}", path_str(&missing)),
            "missing.tar",
        ),
        (path_str(&missing), "missing.tar"),
        (format!("oci:{}", path_str(&missing)), "missing.tar"),
        (format!("oci:{}", path_str(&empty_dir)), "index.json"),
        (format!("oci-archive:{}", path_str(&junk)), "junk.bin"),
        (path_str(&junk), "junk.bin"),
        (path_str(&plain_tar), "manifest.json"),
        (
            format!("docker-archive:{}", path_str(&plain_tar)),
            "manifest.json",
        ),
        (format!("dir:{}", path_str(&junk)), "junk.bin"),
    ];
    for (reference, needle) in cases {
        let e = match open_image(&reference, None, &SourceOptions::default()) {
            Err(e) => e,
            Ok(_) => panic!("{reference}: opened"),
        };
        assert!(
            e.to_string().contains(needle),
            "{reference}: message {:?} should name {needle:?}",
            e.to_string()
        );
    }
}

#[test]
fn skopeo_docker_archive_and_oci_archive() {
    require("skopeo");
    let d = tmp();
    // (skopeo cannot put zstd layers into a docker-archive.)
    let img = standard_image(Comp::Gzip, Comp::Plain);
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let l = path_str(&layout);
    // skopeo's docker-archive: <diffid>.tar at the top, symlinked legacy layer.tar files.
    let da = path_str(&join(&d, "skopeo-docker.tar"));
    run(Command::new("skopeo").args([
        "copy",
        "--quiet",
        &format!("oci:{l}:v1"),
        &format!("docker-archive:{da}:test/cuda:v1"),
    ]));
    let (image, r, calls) = walk(&format!("docker-archive:{da}:test/cuda:v1"));
    check_standard(&r, &calls);
    assert_eq!(image.config.env_var("CUDA_VERSION"), Some("12.4.1"));
    let (_, r, calls) = walk(&format!("docker-archive:{da}:docker.io/test/cuda:v1"));
    check_standard(&r, &calls);

    // skopeo re-compresses into an oci-archive and back into a layout.
    let oa = path_str(&join(&d, "skopeo-oci.tar"));
    run(Command::new("skopeo").args([
        "copy",
        "--quiet",
        &format!("docker-archive:{da}"),
        &format!("oci-archive:{oa}:v2"),
    ]));
    let (_, r, calls) = walk(&format!("oci-archive:{oa}:v2"));
    check_standard(&r, &calls);
    let (_, r, calls) = walk(&oa);
    check_standard(&r, &calls);
    let l2 = path_str(&join(&d, "skopeo-layout"));
    run(Command::new("skopeo").args([
        "copy",
        "--quiet",
        "--dest-compress-format",
        "zstd",
        &format!("oci-archive:{oa}:v2"),
        &format!("oci:{l2}:v3"),
    ]));
    let (image, r, calls) = walk(&format!("oci:{l2}:v3"));
    check_standard(&r, &calls);
    assert!(
        image
            .layers
            .iter()
            .all(|l| l.media_type.as_deref().unwrap_or("").contains("zstd")),
        "{:?}",
        image
            .layers
            .iter()
            .map(|l| l.media_type.clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn umoci_built_layout() {
    require("umoci");
    let d = tmp();
    let layout = path_str(&join(&d, "layout"));
    let bundle = join(&d, "bundle");
    run(Command::new("umoci").args(["init", "--layout", &layout]));
    run(Command::new("umoci").args(["new", "--image", &format!("{layout}:v1")]));
    run(Command::new("umoci")
        .args(["unpack", "--image", &format!("{layout}:v1")])
        .arg(&bundle));
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(rootfs.join("usr/lib")).unwrap();
    std::fs::write(rootfs.join("usr/lib/libv01.so"), elf_bytes()).unwrap();
    std::os::unix::fs::symlink("libv01.so", rootfs.join("usr/lib/libv01.so.1")).unwrap();
    std::fs::write(rootfs.join("gone.txt"), "x").unwrap();
    run(Command::new("umoci")
        .args(["repack", "--image", &format!("{layout}:v1")])
        .arg(&bundle));
    run(Command::new("umoci").args([
        "config",
        "--image",
        &format!("{layout}:v1"),
        "--config.env",
        "CUDA_VERSION=12.4.1",
    ]));
    // A second layer that deletes gone.txt: umoci writes a whiteout for it.
    std::fs::remove_dir_all(&bundle).unwrap();
    run(Command::new("umoci")
        .args(["unpack", "--image", &format!("{layout}:v1")])
        .arg(&bundle));
    std::fs::remove_file(bundle.join("rootfs/gone.txt")).unwrap();
    run(Command::new("umoci")
        .args(["repack", "--image", &format!("{layout}:v1")])
        .arg(&bundle));
    let (image, r, _) = walk(&format!("oci:{layout}:v1"));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(image.config.env_var("CUDA_VERSION"), Some("12.4.1"));
    assert_eq!(image.layers.len(), 2);
    assert!(
        r.layers[1].whiteouts().contains(&&p("gone.txt")),
        "{:?}",
        r.layers[1].whiteouts()
    );
    assert!(r.tree.get(&p("gone.txt")).is_none());
    let (_, n) = r.tree.resolve(&p("usr/lib/libv01.so.1")).unwrap();
    assert!(n.facts.iter().any(|f| matches!(f, Fact::Elf(_))));
}
