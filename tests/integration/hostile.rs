//! Hostile and broken inputs (issue 11): each case asserts the exact error class, and the
//! gate never answers "ok" for input it could not read.

use crate::common::*;
use gpulint::cache::LayerCache;
use gpulint::scan::{scan, ScanOptions};
use gpulint::walk::IssueKind;
use std::process::{Command, Output};

fn gpulint(args: &[&str], cwd: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const DRIVER_LIB: &str = "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15";

fn scan_with_cache(
    layout: &std::path::Path,
    cache: &std::path::Path,
) -> gpulint::inventory::Inventory {
    let opts = ScanOptions {
        cache: Some(LayerCache::with_key(cache, [7; 32])),
        ..ScanOptions::default()
    };
    scan(&format!("oci:{}:v1", layout.display()), &opts).unwrap()
}

#[test]
fn an_image_cannot_poison_another_images_cached_layer() {
    let d = tmp();
    let honest_tar = layer_tar(&[file(DRIVER_LIB, "driver")]);
    let honest = TestImage {
        layers: vec![(honest_tar.clone(), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    let honest_dir = join(&d, "honest");
    write_oci_layout(&honest_dir, &honest, "v1");

    // The attacker's layer is harmless, but its config claims the honest layer's diff_id.
    let attacker_dir = join(&d, "attacker");
    let evil_tar = layer_tar(&[file("hello.txt", "hi")]);
    let layer = put_blob(
        &attacker_dir,
        &compress(&evil_tar, Comp::Gzip),
        Comp::Gzip.media_type(),
    );
    let cfg = config_json(&Cfg::default(), &[digest(&honest_tar)]);
    let cd = put_blob(
        &attacker_dir,
        &cfg,
        "application/vnd.oci.image.config.v1+json",
    );
    let m = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "config": cd, "layers": [layer],
        "mediaType": "application/vnd.oci.image.manifest.v1+json"}))
    .unwrap();
    let md = put_blob(
        &attacker_dir,
        &m,
        "application/vnd.oci.image.manifest.v1+json",
    );
    write_index(&attacker_dir, vec![tagged(md, "v1")]);

    let cache = join(&d, "cache");
    let evil = scan_with_cache(&attacker_dir, &cache);
    assert!(
        evil.partial,
        "the lying diff_id is caught: {:?}",
        evil.image.layers
    );
    assert_eq!(evil.errors.len(), 1, "{:?}", evil.errors);
    assert_eq!(evil.errors[0].kind, IssueKind::DigestMismatch);

    let good = scan_with_cache(&honest_dir, &cache);
    assert!(!good.partial, "{:?}", good.errors);
    assert_eq!(
        good.driver_libraries.len(),
        1,
        "the honest image keeps its own facts: {:?}",
        good.driver_libraries
    );
    // And a second scan of the honest image is served from the cache with the same facts.
    let again = scan_with_cache(&honest_dir, &cache);
    assert_eq!(again.driver_libraries.len(), 1);
    // Reverse order: claiming the honest diff_id does not borrow the honest entry either.
    let evil = scan_with_cache(&attacker_dir, &cache);
    assert!(evil.partial, "{:?}", evil.errors);
    assert!(evil.driver_libraries.is_empty());
    assert_eq!(
        scan_with_cache(&honest_dir, &cache).driver_libraries.len(),
        1
    );
}

/// An OCI layout whose first layer blob is cut in half (named by the cut blob's own digest,
/// so only the truncation is wrong), plus a driver library layer the verdict would flag.
fn truncated_layout(d: &tempfile::TempDir) -> std::path::PathBuf {
    let layout = join(d, "layout");
    let big: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let tar0 = layer_tar(&[E::File("first/big.bin", big), file("zz/last.txt", "z")]);
    let cut = compress(&tar0, Comp::Gzip);
    let cut = &cut[..cut.len() / 2];
    let l0 = put_blob(&layout, cut, Comp::Gzip.media_type());
    let cfg = config_json(&Cfg::default(), &[digest(&tar0)]);
    let cd = put_blob(&layout, &cfg, "application/vnd.oci.image.config.v1+json");
    let m = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "config": cd, "layers": [l0],
        "mediaType": "application/vnd.oci.image.manifest.v1+json"}))
    .unwrap();
    let md = put_blob(&layout, &m, "application/vnd.oci.image.manifest.v1+json");
    write_index(&layout, vec![tagged(md, "v1")]);
    layout
}

#[test]
fn incomplete_image_fails_closed_unless_partial_is_allowed() {
    let d = tmp();
    let layout = truncated_layout(&d);
    let r = format!("oci:{}:v1", layout.display());
    let base = ["--gpu", "H100", "--driver", "550.54.15", "--no-cache", "-q"];

    let mut args = vec!["image", r.as_str()];
    args.extend(base);
    let o = gpulint(&args, d.path());
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("error[GL000"), "{out}");
    assert!(out.contains("(truncated)"), "{out}");
    assert!(out.contains("--allow-partial"), "{out}");

    // JSON and SARIF carry the location (layer) of the problem.
    let mut json = args.clone();
    json.extend(["--format", "json"]);
    let o = gpulint(&json, d.path());
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let gl000 = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "GL000")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        gl000["location"]["layer"]
            .as_str()
            .is_some_and(|l| l.starts_with("sha256:")),
        "{gl000}"
    );

    let mut partial = args.clone();
    partial.push("--allow-partial");
    let o = gpulint(&partial, d.path());
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("warning[GL000"), "{out}");

    let o = gpulint(&["inventory", r.as_str(), "--no-cache", "-q"], d.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = gpulint(
        &[
            "inventory",
            r.as_str(),
            "--no-cache",
            "-q",
            "--allow-partial",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("[truncated]"), "{}", text(&o));
}

#[test]
fn truncated_docker_save_archive_says_truncated() {
    let d = tmp();
    let img = TestImage {
        layers: vec![(
            layer_tar(&[file("a/b.txt", &"x".repeat(50_000))]),
            Comp::Plain,
        )],
        cfg: Cfg::default(),
    };
    let full = join(&d, "full.tar");
    write_docker_archive(&full, &[(vec!["x:1"], &img)]);
    let data = std::fs::read(&full).unwrap();
    // Cut inside the layer: manifest.json (written last) is gone.
    let cut = join(&d, "cut.tar");
    std::fs::write(&cut, &data[..data.len() / 2 + 100]).unwrap();
    let o = gpulint(
        &["inventory", cut.to_str().unwrap(), "--no-cache"],
        d.path(),
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("truncated"), "{out}");
    assert!(!out.contains("neither manifest.json"), "{out}");
}

#[test]
fn nothing_to_judge_is_never_ok() {
    let d = tmp();
    // A bare directory that is neither an OCI layout nor a root filesystem.
    let empty = join(&d, "empty");
    std::fs::create_dir_all(empty.join("notes")).unwrap();
    let o = gpulint(
        &[
            "image",
            empty.to_str().unwrap(),
            "--gpu",
            "H100",
            "--no-cache",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not an image"), "{}", text(&o));

    // A host profile made on a machine without GPU or driver.
    let host = join(&d, "host.json");
    std::fs::write(&host, r#"{"name":"laptop","gpus":[]}"#).unwrap();
    let rootfs = join(&d, "rootfs");
    std::fs::create_dir_all(rootfs.join("usr/bin")).unwrap();
    let o = gpulint(
        &[
            "image",
            rootfs.to_str().unwrap(),
            "--host",
            host.to_str().unwrap(),
            "--no-cache",
        ],
        d.path(),
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("no NVIDIA driver and no GPU"), "{out}");
    assert!(!out.contains("ok: no findings"), "{out}");
}

#[test]
fn empty_dockerfile_and_unknown_target_are_input_errors() {
    let d = tmp();
    let df = join(&d, "Dockerfile");
    std::fs::write(&df, "# only a comment\n\n").unwrap();
    let o = gpulint(&["dockerfile", df.to_str().unwrap()], d.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("empty"), "{}", text(&o));

    std::fs::write(&df, "FROM ubuntu:22.04 AS build\nRUN true\n").unwrap();
    let o = gpulint(
        &["dockerfile", df.to_str().unwrap(), "--target", "nope"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no such build stage"), "{}", text(&o));
    let o = gpulint(
        &["dockerfile", df.to_str().unwrap(), "--target", "build"],
        d.path(),
    );
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn control_characters_from_the_image_are_escaped_in_the_text_report() {
    let d = tmp();
    // A tar name that escapes the root and carries a newline and an ANSI escape: it ends up in
    // a GL000 message, which must not forge a report line.
    let img = TestImage {
        layers: vec![(
            layer_tar(&[
                E::RawName("../x\n  ok: no findings\x1b[2J", b"x".to_vec()),
                file("usr/bin/true", "t"),
            ]),
            Comp::Plain,
        )],
        cfg: Cfg::default(),
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let r = format!("oci:{}:v1", layout.display());
    let o = gpulint(
        &[
            "image",
            &r,
            "--gpu",
            "H100",
            "--driver",
            "550.54.15",
            "--no-cache",
            "--allow-partial",
        ],
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("warning[GL000"), "{out}");
    assert!(!out.contains('\x1b'), "{out:?}");
    assert!(out.contains("\\x0a  ok: no findings"), "{out}");
    // The one "ok" line is the target's own (GL000 is not target-specific).
    assert_eq!(
        out.lines().filter(|l| *l == "  ok: no findings").count(),
        1,
        "a forged ok line: {out}"
    );
}

/// A one-thread HTTP server on 127.0.0.1 that logs each request's first line and
/// Authorization header, and answers with `respond(path_and_query, port)`.
fn tiny_http(
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    name: &'static str,
    respond: impl Fn(&str) -> String + Send + 'static,
) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            if r.read_line(&mut first).is_err() {
                continue;
            }
            let mut auth = String::from("none");
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("authorization") {
                        auth = v.trim().to_string();
                    }
                }
            }
            let path = first.split(' ').nth(1).unwrap_or("").to_string();
            log.lock()
                .unwrap()
                .push(format!("{name} {path} auth={auth}"));
            let _ = conn.write_all(respond(&path).as_bytes());
        }
    });
    port
}

#[test]
fn registry_credentials_never_follow_a_redirect_to_another_hosts_challenge() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // C: a token endpoint that collects whatever it is sent.
    let c = tiny_http(log.clone(), "C", |_| {
        "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
    });
    // B: the host A redirects to; it challenges with C as its realm.
    let b = tiny_http(log.clone(), "B", move |_| {
        format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"http://127.0.0.1:{c}/token\",service=\"evil\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    });
    // A: the registry the credentials belong to; it redirects everything to B.
    let a = tiny_http(log.clone(), "A", move |path| {
        if path == "/v2/" {
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
        } else {
            format!(
                "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{b}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        }
    });
    let d = tmp();
    let authfile = join(&d, "auth.json");
    std::fs::write(
        &authfile,
        format!(r#"{{"auths":{{"127.0.0.1:{a}":{{"auth":"dXNlcjpzZWNyZXQ="}}}}}}"#),
    )
    .unwrap();
    let o = gpulint(
        &[
            "inventory",
            "--no-cache",
            "-q",
            "--authfile",
            authfile.to_str().unwrap(),
            &format!("docker://127.0.0.1:{a}/foo:latest"),
        ],
        d.path(),
    );
    let log = log.lock().unwrap().join("\n");
    assert_eq!(o.status.code(), Some(2), "{}\n{log}", text(&o));
    assert!(!log.contains("Basic"), "credentials leaked:\n{log}");
    assert!(
        !log.contains("C "),
        "the foreign realm was contacted:\n{log}"
    );
    assert!(text(&o).contains("redirected to"), "{}", text(&o));
}

#[test]
fn an_empty_registry_auth_file_variable_means_unset() {
    let d = tmp();
    let img = TestImage {
        layers: vec![(layer_tar(&[file("hello.txt", "hi")]), Comp::Gzip)],
        cfg: Cfg::default(),
    };
    let dir = join(&d, "img");
    write_oci_layout(&dir, &img, "v1");
    let o = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(["inventory", "--no-cache", "-q"])
        .arg(format!("oci:{}:v1", dir.display()))
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .env("REGISTRY_AUTH_FILE", "")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("--authfile"), "{}", text(&o));
}

#[test]
fn variable_expansion_bombs_are_bounded_findings_not_aborts() {
    let d = tmp();
    // Doubling ENV chain: 16 bytes << 17 = 2 MiB at V17 (line 19).
    let mut chain = String::from("FROM ubuntu:22.04\nENV V0=aaaaaaaaaaaaaaaa\n");
    for i in 1..19 {
        chain.push_str(&format!("ENV V{i}=${{V{}}}${{V{}}}\n", i - 1, i - 1));
    }
    // Pattern replacement growing tenfold a line: past 1 MiB at line 8.
    let mut repl = String::from("FROM ubuntu:22.04\nENV V=aaaaaaaaaa\n");
    for _ in 0..7 {
        repl.push_str("ENV V=${V//a/aaaaaaaaaa}\n");
    }
    // 20 000 nested defaults: a stack overflow when expanded recursively.
    let nest = format!(
        "FROM ubuntu:22.04\nENV X={}x{}\nRUN echo ok\n",
        "${U:-".repeat(20_000),
        "}".repeat(20_000)
    );
    for (name, body, want) in [
        ("Dockerfile.chain", chain, "Dockerfile.chain:19:5"),
        ("Dockerfile.repl", repl, "Dockerfile.repl:8:5"),
        ("Dockerfile.nest", nest, "Dockerfile.nest:2:5"),
    ] {
        std::fs::write(join(&d, name), body).unwrap();
        let t = std::time::Instant::now();
        let o = gpulint(&["dockerfile", name], d.path());
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {out}");
        assert!(
            out.contains("GL100") && out.contains(want) && out.contains("left unexpanded"),
            "{name}: {out}"
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{name}: hang guard: took {:?}, over its absolute limit of 20 s",
            t.elapsed()
        );
    }
    // Compose interpolation nested past the limit: an error, not a crash.
    std::fs::write(
        join(&d, "compose.yaml"),
        format!(
            "services:\n  a:\n    image: \"x{}y{}\"\n",
            "${U:-".repeat(5_000),
            "}".repeat(5_000)
        ),
    )
    .unwrap();
    let o = gpulint(&["compose", "-f", "compose.yaml"], d.path());
    let out = text(&o);
    assert!(
        out.contains("nested more than 64 deep") && out.contains("compose.yaml:3"),
        "{out}"
    );
}

/// Every interpolation engine shares the expansion bounds: a bake file whose variables double
/// at each step (64 steps in 2.8 KB grew to 24 GB and was killed) and a script doing the
/// same with assignments are GL100 findings at the first value past 1 MiB.
#[test]
fn bake_and_script_expansion_bombs_are_bounded_findings() {
    let d = tmp();
    let mut bake = String::from("variable \"V0\" { default = \"a\" }\n");
    for i in 1..=64 {
        bake += &format!(
            "variable \"V{i}\" {{ default = \"${{V{p}}}${{V{p}}}\" }}\n",
            p = i - 1
        );
    }
    bake += "target \"t\" {\n  args = { X = \"${V64}\" }\n}\n";
    let script = String::from("#!/bin/sh\nV=aaaaaaaaaaaaaaaa\n")
        + &"V=$V$V\n".repeat(60)
        + "docker run --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 echo $V\n";
    for (name, body, want) in [
        ("docker-bake.hcl", bake, "docker-bake.hcl:22:29"),
        ("run.sh", script, "run.sh:18:1"),
    ] {
        std::fs::write(join(&d, name), body).unwrap();
        // A hang guard, not a measurement.
        let o = gpulint_within(&["lint", name], d.path(), 60).unwrap_or_else(|| {
            panic!("{name}: hang guard: still running at its absolute limit of 60 s")
        });
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {out}");
        assert!(
            out.contains("GL100") && out.contains(want) && out.contains("exceeds 1 MiB"),
            "{name}: {out}"
        );
    }
}

/// A script or Dockerfile of more shell words than a file may yield (each word cost ~200
/// bytes of memory, so `a a a …` cost 50-130 bytes per input byte: 16 MiB, over 1 GB) is read
/// up to the bound and says so.
#[test]
fn shell_words_past_the_bound_are_a_finding() {
    let d = tmp();
    let words = " b".repeat(1_200_000);
    for (sub, name, body) in [
        (
            "run",
            "run.sh",
            format!("docker run --gpus all img{words}\n"),
        ),
        (
            "dockerfile",
            "Dockerfile",
            format!("FROM ubuntu:22.04\nRUN echo{words}\n"),
        ),
    ] {
        std::fs::write(join(&d, name), body).unwrap();
        let args = match sub {
            "run" => vec!["run", "--file", name],
            _ => vec![sub, name],
        };
        // A hang guard, not a measurement.
        let o = gpulint_within(&args, d.path(), 120).unwrap_or_else(|| {
            panic!("{name}: hang guard: still running at its absolute limit of 120 s")
        });
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {out}");
        assert!(
            out.contains("GL100") && out.contains("more than 1048576 shell words"),
            "{name}: {out}"
        );
    }
}

/// Input past its size bound is an input error (exit 2), never read unbounded nor passed
/// over in silence: a manifest on stdin (was read whole, whatever its size) and a Dockerfile
/// `lint` finds (was skipped without a word past 4 MiB).
#[test]
fn oversized_inputs_are_input_errors() {
    let d = tmp();
    let big = format!("FROM ubuntu:22.04\n{}", "# padding\n".repeat(500_000));
    std::fs::write(join(&d, "Dockerfile"), &big).unwrap();
    // Found by `lint`: a GL000 warning in the report, counted (the rest of the tree was
    // linted); named on the command line (as pre-commit does): an input error, exit 2.
    let o = gpulint(&["lint", "."], d.path());
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("warning[GL000") && out.contains("more than the 4194304 accepted"),
        "{out}"
    );
    let o = gpulint(&["lint", "Dockerfile"], d.path());
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("more than the 4194304 accepted"), "{out}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(["k8s", "-"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "# padding\n".repeat(100_000);
        // 20 MB, unless gpulint stops reading first (a broken pipe ends the writing).
        for _ in 0..20 {
            if std::io::Write::write_all(&mut stdin, chunk.as_bytes()).is_err() {
                break;
            }
        }
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("stdin is more than the 16777216 bytes accepted"),
        "{out}"
    );
}

/// Run the CLI, killing it after `limit`: None when it had to be killed.
fn gpulint_within(args: &[&str], cwd: &std::path::Path, limit: u64) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("REGISTRY_AUTH_FILE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(limit) {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_small_layout_of_indexes_listing_one_another_cannot_fan_out() {
    use sha2::{Digest, Sha256};
    let d = tmp();
    let root = join(&d, "nested");
    std::fs::create_dir_all(root.join("blobs/sha256")).unwrap();
    let put = |data: &[u8]| -> String {
        let hex = format!("{:x}", Sha256::digest(data));
        std::fs::write(root.join("blobs/sha256").join(&hex), data).unwrap();
        format!("sha256:{hex}")
    };
    let idx = |children: Vec<String>| -> Vec<u8> {
        format!(
            r#"{{"schemaVersion":2,"manifests":[{}]}}"#,
            children.join(",")
        )
        .into_bytes()
    };
    let desc = |mt: &str, digest: &str, extra: &str| {
        format!(r#"{{"mediaType":"{mt}","digest":"{digest}","size":1{extra}}}"#)
    };
    const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    // The leaf index holds only an attestation: no candidate ever counts.
    let leaf = put(&idx(vec![desc(
        "application/vnd.oci.image.manifest.v1+json",
        &format!("sha256:{}", "0".repeat(64)),
        r#","platform":{"os":"unknown","architecture":"unknown"}"#,
    )]));
    let mut level = leaf;
    for _ in 0..3 {
        level = put(&idx(vec![desc(INDEX, &level, ""); 300]));
    }
    std::fs::write(
        root.join("index.json"),
        idx(vec![desc(
            INDEX,
            &level,
            r#","annotations":{"org.opencontainers.image.ref.name":"v1"}"#,
        )]),
    )
    .unwrap();
    std::fs::write(root.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let o = gpulint_within(
        &[
            "inventory",
            "--no-cache",
            "-q",
            &format!("oci:{}:v1", root.display()),
        ],
        d.path(),
        20,
    )
    .expect("27 million index visits: hang guard: killed at its absolute limit of 20 s");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("nested too deep or too large"),
        "{}",
        text(&o)
    );
}

fn mkfifo(p: &std::path::Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success(), "mkfifo {}", p.display());
}

#[test]
fn files_named_by_path_are_regular_files_opened_without_blocking() {
    let d = tmp();
    mkfifo(&join(&d, "fifo"));
    std::fs::write(join(&d, "Dockerfile.ok"), "FROM ubuntu:22.04\n").unwrap();
    // compose build.dockerfile naming a FIFO.
    std::fs::write(
        join(&d, "compose.yaml"),
        "services:\n  a:\n    build:\n      context: .\n      dockerfile: fifo\n",
    )
    .unwrap();
    let o = gpulint_within(&["compose", "-f", "compose.yaml"], d.path(), 20)
        .expect("compose: blocked on build.dockerfile FIFO (hang guard: absolute limit 20 s)");
    assert_ne!(o.status.code(), None, "{}", text(&o));
    // --config and --fleet naming a FIFO: an input error, not a hang.
    let o = gpulint_within(
        &["dockerfile", "--config", "fifo", "Dockerfile.ok"],
        d.path(),
        20,
    )
    .expect("--config: blocked on a FIFO (hang guard: absolute limit 20 s)");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a regular file"), "{}", text(&o));
    let o = gpulint_within(&["image", "--fleet", "fifo", "oci:absent:v1"], d.path(), 20)
        .expect("--fleet: blocked on a FIFO (hang guard: absolute limit 20 s)");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a regular file"), "{}", text(&o));
    // lint: a Dockerfile that is a FIFO, and one that links to /dev/zero, are skipped.
    let repo = join(&d, "repo");
    std::fs::create_dir_all(repo.join("a")).unwrap();
    std::fs::create_dir_all(repo.join("b")).unwrap();
    mkfifo(&repo.join("a/Dockerfile"));
    std::os::unix::fs::symlink("/dev/zero", repo.join("b/Dockerfile")).unwrap();
    std::fs::write(repo.join("Dockerfile"), "FROM ubuntu:22.04\n").unwrap();
    let o = gpulint_within(&["lint", "repo"], d.path(), 20)
        .expect("lint: blocked or reading forever (hang guard: absolute limit 20 s)");
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
}

/// Run the CLI, killing it after `limit` seconds; also its peak resident memory in KiB
/// (VmHWM, sampled until it exits). The output is None when it had to be killed.
fn gpulint_measured(
    args: &[&str],
    cwd: &std::path::Path,
    limit: u64,
) -> (Option<Output>, u64, std::time::Duration) {
    // Output goes to files, not pipes: a child with much to say must not block on a full
    // pipe while it is being timed.
    let out_dir = tmp();
    let (out_path, err_path) = (join(&out_dir, "stdout"), join(&out_dir, "stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("REGISTRY_AUTH_FILE")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let t = std::time::Instant::now();
    let mut peak = 0u64;
    while t.elapsed() < std::time::Duration::from_secs(limit) {
        if let Some(kb) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kb);
        }
        if let Some(st) = child.try_wait().unwrap() {
            let took = t.elapsed();
            let o = Output {
                status: st,
                stdout: std::fs::read(&out_path).unwrap(),
                stderr: std::fs::read(&err_path).unwrap(),
            };
            return (Some(o), peak, took);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    (None, peak, t.elapsed())
}

/// A zstd frame of `n` zero bytes made of RLE blocks (4 bytes per 128 KiB): a huge
/// decompressed stream that costs nothing to build.
fn zstd_zeros(n: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    // Magic, frame header descriptor (no content size, no checksum), a 128 KiB window.
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let mut left = n;
    loop {
        let size = left.min(BLOCK);
        left -= size;
        let last = u32::from(left == 0);
        let header = last | (1 << 1) | ((size as u32) << 3);
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
        if left == 0 {
            return f;
        }
    }
}

/// An OCI layout with one zstd layer (concatenated frames): `head` (raw tar bytes), then
/// `zeros` zero bytes, then two end blocks. The diff_id is not that content's: the layer is
/// refused before its end, where it would be checked.
fn layout_with_crafted_layer(d: &tempfile::TempDir, head: &[u8], zeros: u64) -> String {
    let layout = join(d, "layout");
    let mut blob = zstd::encode_all(head, 1).unwrap();
    blob.extend(zstd_zeros(zeros));
    blob.extend(zstd::encode_all(&[0u8; 1024][..], 1).unwrap());
    let l0 = put_blob(&layout, &blob, Comp::Zstd.media_type());
    let cfg = config_json(&Cfg::default(), &[digest(b"not this content")]);
    let cd = put_blob(&layout, &cfg, "application/vnd.oci.image.config.v1+json");
    let m = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "config": cd, "layers": [l0],
        "mediaType": "application/vnd.oci.image.manifest.v1+json"}))
    .unwrap();
    let md = put_blob(&layout, &m, "application/vnd.oci.image.manifest.v1+json");
    write_index(&layout, vec![tagged(md, "v1")]);
    format!("oci:{}:v1", layout.display())
}

/// A 512-byte GNU header for `name`, with `edit` applied to its bytes and the checksum made
/// right afterwards (so only the edited field is hostile).
fn crafted_header(
    name: &str,
    kind: tar::EntryType,
    size: u64,
    edit: impl Fn(&mut [u8]),
) -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    h.set_path(name).unwrap();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(kind);
    let mut b = h.as_bytes().to_vec();
    edit(&mut b);
    b[148..156].fill(b' ');
    let sum: u32 = b.iter().map(|x| u32::from(*x)).sum();
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    b
}

#[test]
fn tar_headers_have_one_reading_so_a_small_layer_cannot_cost_gigabytes() {
    // Each layer is ~10 KB compressed and 1 GiB decompressed. Two tar readers used to
    // disagree on where headers are: a size field "0\0777…" read as 0 by one and as ~8 GiB by
    // the other, or a malformed PAX record set; the reader that kept going then took a 1 GiB
    // GNU long name into memory (a 1 MB layer: 4.3 GB). Now one parser decides and stops at the first lie.
    let big = 1u64 << 30;
    let probe = zstd::decode_all(&zstd_zeros((1 << 20) + 5)[..]).unwrap();
    assert!(probe.len() == (1 << 20) + 5 && probe.iter().all(|b| *b == 0));
    let long_name = crafted_header("././@LongLink", tar::EntryType::GNULongName, big, |_| {});
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    // 1. A size field with digits after its NUL terminator.
    let mut head = crafted_header("a", tar::EntryType::Regular, 0, |b| {
        b[124..136].copy_from_slice(b"0\x007777777777")
    });
    head.extend_from_slice(&long_name);
    cases.push(("size field", head, "[corrupt]"));
    // 2. A PAX record set that does not parse (a record shorter than its length says).
    let pax = b"30 size=0\n5 x\n";
    let mut head = crafted_header("pax", tar::EntryType::XHeader, pax.len() as u64, |_| {});
    head.extend_from_slice(pax);
    head.resize(1024, 0);
    head.extend_from_slice(&crafted_header("b", tar::EntryType::Regular, 0, |_| {}));
    head.extend_from_slice(&long_name);
    cases.push(("PAX", head, "[corrupt]"));
    // 3. The long name alone: over the extension-header bound.
    cases.push(("extension header", long_name.clone(), "[too-large]"));
    for (what, head, class) in cases {
        let d = tmp();
        let r = layout_with_crafted_layer(&d, &head, big);
        let (o, peak_kib, took) = gpulint_measured(
            &["inventory", r.as_str(), "--no-cache", "-q"],
            d.path(),
            120,
        );
        let o = o.unwrap_or_else(|| {
            panic!("{what}: hang guard: still running at its absolute limit of 120 s")
        });
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {out}");
        assert!(out.contains(what) && out.contains(class), "{what}: {out}");
        eprintln!("{what}: peak RSS {peak_kib} KiB, {took:?}");
        assert!(
            peak_kib < 100 << 10,
            "{what}: peak RSS {peak_kib} KiB for a 1 GiB long name"
        );
        assert!(
            took.as_secs() < 60,
            "{what}: hang guard: took {took:?}, over its absolute limit of 60 s"
        );
    }
}

/// A registry on 127.0.0.1 that serves one connection per thread with `serve(path, conn)`
/// (the request head already read).
fn misbehaving_registry(serve: impl Fn(&str, std::net::TcpStream) + Send + Sync + 'static) -> u16 {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = std::sync::Arc::new(serve);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let serve = serve.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut first = String::new();
                if r.read_line(&mut first).is_err() {
                    return;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                }
                let path = first.split(' ').nth(1).unwrap_or("").to_string();
                serve(&path, conn);
            });
        }
    });
    port
}

fn send(mut conn: &std::net::TcpStream, head: &str, body: &[u8]) {
    use std::io::Write;
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
}

/// A manifest (one layer, the layer descriptor without `size` when `sized` is false) and its
/// config, served by digest; the layer itself is left to `blob`.
fn registry_with_layer(
    sized: bool,
    blob: impl Fn(std::net::TcpStream) + Send + Sync + 'static,
) -> u16 {
    let layer = b"any layer".to_vec();
    let cfg = config_json(&Cfg::default(), &[digest(&layer)]);
    let mut ldesc = serde_json::json!({
        "mediaType": Comp::Plain.media_type(), "digest": digest(&layer)});
    if sized {
        ldesc["size"] = (1u64 << 30).into();
    }
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(&cfg), "size": cfg.len()},
        "layers": [ldesc]}))
    .unwrap();
    let (cfg_path, layer_path) = (
        format!("/v2/foo/blobs/{}", digest(&cfg)),
        format!("/v2/foo/blobs/{}", digest(&layer)),
    );
    misbehaving_registry(move |path, conn| {
        let ok = |ct: &str, body: &[u8]| {
            send(
                &conn,
                &format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                ),
                body,
            )
        };
        if path == "/v2/" {
            ok("application/json", b"{}");
        } else if path.starts_with("/v2/foo/manifests/") {
            ok("application/vnd.oci.image.manifest.v1+json", &manifest);
        } else if path == cfg_path {
            ok("application/octet-stream", &cfg);
        } else if path == layer_path {
            blob(conn);
        } else {
            send(
                &conn,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                b"",
            );
        }
    })
}

fn inventory_of_registry(port: u16, extra: &[&str]) -> (String, Option<i32>, std::time::Duration) {
    let d = tmp();
    let r = format!("docker://127.0.0.1:{port}/foo:latest");
    let mut args = vec!["inventory", "--no-cache", "-q", r.as_str()];
    args.extend(extra);
    let (o, _, took) = gpulint_measured(&args, d.path(), 120);
    let o = o.unwrap_or_else(|| panic!("hang guard: still running at its absolute limit of 120 s"));
    (text(&o), o.status.code(), took)
}

#[test]
fn a_registry_that_accepts_and_never_answers_fails_at_the_30_second_request_deadline() {
    let port = misbehaving_registry(|_, conn| {
        std::thread::sleep(std::time::Duration::from_secs(300));
        drop(conn);
    });
    let (out, code, took) = inventory_of_registry(port, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no answer in time"), "{out}");
    // One attempt within the deadline: "tried once", not "tried 1 times".
    assert!(out.contains("tried once"), "{out}");
    // The small-request deadline is 30 s (registry/client.rs SMALL_REQUEST): gpulint gives up
    // at it, not before (another failure) and not long after (15 s for a loaded machine).
    assert!(
        (30..45).contains(&took.as_secs()),
        "took {took:?}, want the 30 s request deadline (+15 s slack): {out}"
    );
}

#[test]
fn a_trickling_manifest_is_cut_off() {
    let port = misbehaving_registry(|path, conn| {
        if path == "/v2/" {
            send(&conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", b"{}");
            return;
        }
        // One byte a second of a 100 KB manifest: never silent long enough to time out.
        send(
            &conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 100000\r\n\r\n{",
            b"",
        );
        for _ in 0..300 {
            std::thread::sleep(std::time::Duration::from_secs(1));
            use std::io::Write;
            if (&conn).write_all(b" ").is_err() {
                return;
            }
        }
    });
    let (out, code, took) = inventory_of_registry(port, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("reading manifest") || out.contains("timed out"),
        "{out}"
    );
    // A hang guard with an absolute limit, not a measurement.
    assert!(
        took.as_secs() < 45,
        "hang guard: took {took:?}, over its absolute limit of 45 s: {out}"
    );
}

#[test]
fn an_endless_blob_without_size_ends_at_the_timeout() {
    let port = registry_with_layer(false, |conn| {
        send(&conn, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"");
        let junk = vec![b'7'; 64 << 10];
        for _ in 0..1_000_000 {
            use std::io::Write;
            if (&conn).write_all(&junk).is_err() {
                return;
            }
        }
    });
    let (out, code, took) = inventory_of_registry(port, &["--timeout", "5"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--timeout"), "{out}");
    // "At the timeout": not before --timeout 5 ran out, and (a hang guard with an absolute
    // limit of 25 s, not a measurement) not long after.
    assert!(
        took.as_secs() >= 5,
        "ended after {took:?}, before --timeout 5: {out}"
    );
    assert!(
        took.as_secs() < 25,
        "hang guard: took {took:?}, over its absolute limit of 25 s (--timeout 5): {out}"
    );
}

#[test]
fn a_lying_content_length_is_bounded() {
    let port = registry_with_layer(true, |conn| {
        // Says 1 GiB, sends 1000 bytes, then holds the connection open and silent.
        send(
            &conn,
            "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n",
            &[b'7'; 1000],
        );
        std::thread::sleep(std::time::Duration::from_secs(300));
    });
    let (out, code, took) = inventory_of_registry(port, &["--timeout", "8"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no data in time"), "{out}");
    // --timeout 8: a hang guard with an absolute limit of 30 s, not a measurement.
    assert!(
        took.as_secs() < 30,
        "hang guard: took {took:?}, over its absolute limit of 30 s (--timeout 8): {out}"
    );
}

#[test]
fn the_inventory_text_escapes_what_the_image_says() {
    // An env value and a Python package version (dist-info METADATA) that each try to end
    // their line and print a line of their own.
    let d = tmp();
    let meta = "Metadata-Version: 2.1\nName: torch\nVersion: 2.3.0+cu121\x1b[2J\r\n";
    let img = TestImage {
        layers: vec![(
            layer_tar(&[file(
                "usr/lib/python3/dist-packages/torch-2.3.0.dist-info/METADATA",
                meta,
            )]),
            Comp::Plain,
        )],
        cfg: Cfg {
            env: vec!["NVIDIA_VISIBLE_DEVICES=a\n  ok: no findings\x1b]0;title\x07"],
            ..Cfg::default()
        },
    };
    let layout = join(&d, "layout");
    write_oci_layout(&layout, &img, "v1");
    let r = format!("oci:{}:v1", layout.display());
    let o = gpulint(&["inventory", &r, "--no-cache", "-q"], d.path());
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        out.contains("NVIDIA_VISIBLE_DEVICES=a\\x0a  ok: no findings"),
        "{out}"
    );
    assert!(out.contains("2.3.0+cu121\\x1b[2J"), "{out}");
    assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
    assert!(
        !out.lines().any(|l| l.trim() == "ok: no findings"),
        "a forged line: {out}"
    );
}

/// Seconds `gpulint ARGS` takes on `text` written to `name`: the fastest of three runs, so
/// that a run slowed by the tests running beside it does not read as superlinear growth.
fn lint_seconds(sub: &str, name: &str, content: &str) -> f64 {
    (0..3)
        .map(|_| lint_seconds_once(sub, name, content))
        .fold(f64::INFINITY, f64::min)
}

fn lint_seconds_once(sub: &str, name: &str, content: &str) -> f64 {
    let d = tmp();
    let f = join(&d, name);
    std::fs::write(&f, content).unwrap();
    let args: Vec<&str> = match sub {
        "compose" => vec!["compose", "-f", f.to_str().unwrap()],
        "run" => vec!["run", "--file", f.to_str().unwrap()],
        _ => vec![sub, f.to_str().unwrap()],
    };
    let (o, _, took) = gpulint_measured(&args, d.path(), 300);
    let o = o.unwrap_or_else(|| panic!("{sub} {name}: still running after 300 s"));
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{sub} {name}: {}",
        text(&o)
    );
    took.as_secs_f64()
}

/// Linear, not quadratic: four times the input takes well under 16 times as long (the
/// fixed start-up cost only helps a linear parser here).
fn assert_linear(what: &str, small: f64, big: f64) {
    eprintln!("{what}: {small:.2} s -> {big:.2} s for 4x the input");
    assert!(
        big < 8.0 * small,
        "{what}: {small:.2} s -> {big:.2} s for 4x the input"
    );
}

#[test]
fn compose_files_with_many_services_lint_in_linear_time() {
    let svc = |n: usize| -> String {
        "services:\n".to_string()
            + &(0..n)
                .map(|i| {
                    format!("  s{i}:\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    environment:\n      - NVIDIA_VISIBLE_DEVICES=all\n")
                })
                .collect::<String>()
    };
    let small = lint_seconds("compose", "compose.yaml", &svc(500));
    let big = lint_seconds("compose", "compose.yaml", &svc(2000));
    assert_linear("compose services", small, big);
}

#[test]
fn run_configuration_fixes_of_many_commands_are_made_in_linear_time() {
    // One GL116 finding stands for every `--runtime=nvidia` line of a script, its fix one edit
    // per line; each GL110/GL114 fix is an edit too: placing each edit by counting lines from
    // the start of the text, or finding each command by a scan, was quadratic.
    let script = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "docker run --runtime=nvidia --rm nvidia/cuda:12.4.1-runtime-ubuntu22.04 nvidia-smi -i {i}\ndocker run --rm pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime torchrun t{i}.py\n"
                )
            })
            .collect()
    };
    let small = lint_seconds("run", "run.sh", &script(500));
    let big = lint_seconds("run", "run.sh", &script(2000));
    assert_linear("run-configuration fixes", small, big);
}

#[test]
fn dockerfiles_with_many_stages_and_heredocs_lint_in_linear_time() {
    let stages = |n: usize| -> String {
        (0..n)
            .map(|i| {
                let from = if i == 0 {
                    "nvidia/cuda:12.4.1-runtime-ubuntu22.04".to_string()
                } else {
                    format!("s{}", i - 1)
                };
                format!("FROM {from} AS s{i}\nRUN echo {i}\n")
            })
            .collect()
    };
    let small = lint_seconds("dockerfile", "Dockerfile", &stages(1000));
    let big = lint_seconds("dockerfile", "Dockerfile", &stages(4000));
    assert_linear("FROM stages", small, big);

    let heredoc = |n: usize| -> String {
        "FROM ubuntu:22.04\nRUN <<EOF\n".to_string()
            + &(0..n)
                .map(|i| format!("echo line {i} && pip install torch==2.3.0\n"))
                .collect::<String>()
            + "EOF\n"
    };
    let small = lint_seconds("dockerfile", "Dockerfile", &heredoc(5000));
    let big = lint_seconds("dockerfile", "Dockerfile", &heredoc(20000));
    assert_linear("a 20k-line heredoc", small, big);
}

#[test]
fn k8s_manifests_with_many_documents_lint_in_linear_time() {
    let docs = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\nspec:\n  containers:\n  - name: c\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
                )
            })
            .collect()
    };
    let small = lint_seconds("k8s", "pods.yaml", &docs(500));
    let big = lint_seconds("k8s", "pods.yaml", &docs(2000));
    assert_linear("k8s documents", small, big);
}

#[test]
fn deep_yaml_flow_collections_lint_in_linear_time() {
    // Many documents, each with flow collections nested 100 deep (under the YAML parser's
    // recursion limit), in a k8s manifest and a compose file.
    let nest = |i: usize| format!("{}{i}{}", "[".repeat(100), "]".repeat(100));
    let k8s = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, labels: {{a: {{b: {{c: {{d: x}}}}}}}}}}\nspec: {{containers: [{{name: c, image: 'nvidia/cuda:12.4.1-runtime-ubuntu22.04', args: {}}}]}}\n",
                    nest(i)
                )
            })
            .collect()
    };
    let small = lint_seconds("k8s", "pods.yaml", &k8s(200));
    let big = lint_seconds("k8s", "pods.yaml", &k8s(800));
    assert_linear("k8s deep flow collections", small, big);

    let compose = |n: usize| -> String {
        "services:\n".to_string()
            + &(0..n)
                .map(|i| {
                    format!(
                        "  s{i}: {{image: 'nvidia/cuda:12.4.1-runtime-ubuntu22.04', command: {}}}\n",
                        nest(i)
                    )
                })
                .collect::<String>()
    };
    let small = lint_seconds("compose", "compose.yaml", &compose(200));
    let big = lint_seconds("compose", "compose.yaml", &compose(800));
    assert_linear("compose deep flow collections", small, big);
}

#[test]
fn yaml_nested_past_the_parsers_limit_is_refused_in_linear_time() {
    // Flow collections nested far past the parser's limit (128): libyaml scanned them in time
    // quadratic in the depth before the YAML parser refused them (200 KB took 35-40 s; 16 MiB,
    // about a day). Refused by a linear pre-scan, as GL100 at the bracket past the limit.
    let compose = |n: usize| {
        format!(
            "services:\n  a:\n    image: x\n    command: {}{}\n",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let k8s = |n: usize| {
        format!(
            "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\nspec: {}{}\n",
            "{a: ".repeat(n),
            "}".repeat(n)
        )
    };
    for (sub, name, doc, at) in [
        (
            "compose",
            "compose.yaml",
            &compose as &dyn Fn(usize) -> String,
            "compose.yaml:4:139",
        ),
        ("k8s", "pods.yaml", &k8s, "pods.yaml:6:515"),
    ] {
        let d = tmp();
        std::fs::write(join(&d, name), doc(100_000)).unwrap();
        let f = join(&d, name);
        let args: Vec<&str> = match sub {
            "compose" => vec!["compose", "-f", f.to_str().unwrap()],
            _ => vec![sub, f.to_str().unwrap()],
        };
        // A hang guard, not a measurement.
        let o = gpulint_within(&args, d.path(), 60)
            .unwrap_or_else(|| panic!("{sub}: still running after 60 s"));
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{sub}: {out}");
        assert!(
            out.contains("GL100") && out.contains("nested more than 128 deep") && out.contains(at),
            "{sub}: {out}"
        );
        let small = lint_seconds(sub, name, &doc(200_000));
        let big = lint_seconds(sub, name, &doc(800_000));
        assert_linear(&format!("{sub}: flow collections nested deep"), small, big);
    }
}

#[test]
fn runs_of_suppression_pragmas_lint_in_linear_time() {
    // Each own-line pragma scanned every line after it to the statement it covers: a run of
    // pragma lines was quadratic.
    let df = |n: usize| -> String {
        "FROM ubuntu:22.04\n".to_string()
            + &"# gpulint ignore=GL101\n".repeat(n)
            + "RUN pip install torch==2.3.0\n"
    };
    let small = lint_seconds("dockerfile", "Dockerfile", &df(10_000));
    let big = lint_seconds("dockerfile", "Dockerfile", &df(40_000));
    assert_linear("a run of pragma lines", small, big);
}

#[test]
fn glob_trims_of_long_values_lint_in_linear_time() {
    // `${V%%*b*c}` tries every suffix; on a value without a match that was quadratic.
    let df = |n: usize| -> String {
        format!(
            "FROM ubuntu:22.04\nARG V={}\nENV W=${{V%%*b*c}} X=${{V##*c*b}} Y=${{V%*b?c}} Z=${{V#a*c}}\nRUN echo $W $X $Y $Z\n",
            "ab".repeat(n)
        )
    };
    let small = lint_seconds("dockerfile", "Dockerfile", &df(60_000));
    let big = lint_seconds("dockerfile", "Dockerfile", &df(240_000));
    assert_linear("a glob trim of a long value", small, big);
}

#[test]
fn shell_scripts_with_many_heredocs_lint_in_linear_time() {
    let script = |n: usize| -> String {
        "#!/bin/sh\n".to_string()
            + &(0..n)
                .map(|i| {
                    format!("cat <<EOF{i} > /tmp/f{i}\nline {i}\n$HOME\nEOF{i}\ndocker run --gpus all nvidia/cuda:12.4.1-runtime-ubuntu22.04 echo {i}\n")
                })
                .collect::<String>()
    };
    let small = lint_seconds("run", "run.sh", &script(2500));
    let big = lint_seconds("run", "run.sh", &script(10_000));
    assert_linear("shell heredocs", small, big);
}
