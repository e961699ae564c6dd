//! The command line as users run it: the built `gpulint` binary on the bundled example image
//! (`testdata/images/example.tar`, made by `testdata/images/make-example-image.sh`), the H200 host capture
//! and small images written here. Checks exit codes, the JSON / SARIF contracts, host
//! profiles and fleets as targets, colour rules, and that every transport of the same image
//! gives the same inventory.

use crate::common::require;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example() -> String {
    repo()
        .join("testdata/images/example.tar")
        .to_string_lossy()
        .into_owned()
}

/// One run of the binary: stdout, stderr, exit code.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The binary with a clean environment: its own cache and HOME (no docker config), no
/// colour variables, no daemon, CI mode (no progress bars).
fn cmd(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpulint"));
    c.current_dir(repo())
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env(
            "DOCKER_HOST",
            format!("unix://{}/no-docker.sock", home.display()),
        )
        .env("CI", "true")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE");
    c
}

fn output(mut c: Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

fn gl(args: &[&str]) -> Run {
    let home = tempfile::tempdir().unwrap();
    let mut c = cmd(home.path());
    c.args(args);
    output(c)
}

fn expect(r: &Run, code: i32) {
    assert_eq!(r.code, code, "{r:?}");
}

const C_SO: &str = "/opt/venv/lib/python3.11/site-packages/myext/_C.so";

// ---------- exit codes ----------
// Exit codes and output of the plain cases (findings → 1, clean → 0, every kind of unusable
// input → 2 with the reason on stderr) are CLI cases as data: tests/cmd/*.toml (cmd_cases.rs).

#[test]
fn requirements_without_a_target_in_json() {
    let r = gl(&["image", &example(), "--no-local-host", "--format", "json"]);
    expect(&r, 0);
    let v = r.json();
    let req = &v["details"]["requirements"];
    assert_eq!(req["min_driver"], "530.30.02", "{v:#}");
    assert_eq!(req["runs_on"], serde_json::json!(["7.5"]), "{v:#}");
}

/// A root filesystem with only a baked-in driver library: a warning (GL004), no error.
fn warning_only_rootfs(d: &Path) -> String {
    let lib = d.join("rootfs/usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("libcuda.so.535.104.05"), b"not really libcuda\n").unwrap();
    std::os::unix::fs::symlink("libcuda.so.535.104.05", lib.join("libcuda.so.1")).unwrap();
    format!("dir:{}", d.join("rootfs").display())
}

#[test]
fn fail_on_sets_the_threshold() {
    let d = tempfile::tempdir().unwrap();
    let img = warning_only_rootfs(d.path());
    let base = ["image", &img, "--gpu", "T4", "--driver", "535.104.05"];
    let r = gl(&base);
    expect(&r, 0);
    assert!(r.stdout.contains("GL004"), "{r:?}");
    let with = |level: &str| {
        let mut a = base.to_vec();
        a.extend(["--fail-on", level]);
        gl(&a)
    };
    expect(&with("warning"), 1);
    expect(&with("info"), 1);
    expect(&with("error"), 0);
    // And the example's error fails at every level.
    let e = example();
    for level in ["error", "warning", "info"] {
        let r = gl(&[
            "image",
            &e,
            "--gpu",
            "H100",
            "--driver",
            "535.104.05",
            "--fail-on",
            level,
        ]);
        expect(&r, 1);
    }
}

// ---------- report formats ----------

#[test]
fn json_report_schema() {
    let r = gl(&[
        "image",
        &example(),
        "--gpu",
        "H100",
        "--driver",
        "535.104.05",
        "--format",
        "json",
    ]);
    expect(&r, 1);
    let v = r.json();
    crate::formats::assert_valid_report(&v);
    let findings = v["findings"].as_array().expect("findings[]");
    assert!(!findings.is_empty());
    for f in findings {
        for k in ["rule", "severity", "message", "target", "location"] {
            assert!(f.get(k).is_some(), "finding without {k}: {f:#}");
        }
        assert!(
            ["error", "warning", "info"].contains(&f["severity"].as_str().unwrap()),
            "{f:#}"
        );
    }
    let gl001 = findings
        .iter()
        .find(|f| f["rule"] == "GL001")
        .expect("GL001 finding");
    assert_eq!(gl001["severity"], "error");
    assert_eq!(gl001["location"]["path"], C_SO);
    assert!(
        gl001["location"]["layer"]
            .as_str()
            .is_some_and(|l| l.starts_with("sha256:")),
        "{gl001:#}"
    );
    assert!(
        gl001["target"].as_str().unwrap().contains("H100"),
        "{gl001:#}"
    );
    assert_eq!(v["summary"]["error"], 1, "{v:#}");

    // A clean run is still a complete document.
    let r = gl(&[
        "image",
        &example(),
        "--gpu",
        "T4",
        "--driver",
        "535.104.05",
        "--format",
        "json",
    ]);
    expect(&r, 0);
    assert_eq!(r.json()["findings"], serde_json::json!([]));
}

#[test]
fn sarif_report_has_every_rule_and_located_results() {
    let rules = gl(&["rules", "--format", "json"]);
    expect(&rules, 0);
    let codes: Vec<String> = rules
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect();
    assert!(codes.len() >= 10, "{codes:?}");
    for c in ["GL001", "GL002", "GL010"] {
        assert!(codes.iter().any(|x| x == c), "{c} in `rules`");
    }

    // The example (GL001), and a rootfs whose unreadable libc adds a GL000 finding.
    let d = tempfile::tempdir().unwrap();
    let rootfs = warning_only_rootfs(d.path());
    let lib = d.path().join("rootfs/usr/lib/x86_64-linux-gnu");
    let mut bad_elf = b"\x7fELF....".to_vec();
    bad_elf.resize(128, b'.');
    std::fs::write(lib.join("libc.so.6"), bad_elf).unwrap();
    let e = example();
    let cases = [
        vec!["image", &e, "--gpu", "H100", "--driver", "535.104.05"],
        vec!["image", &rootfs, "--gpu", "T4", "--driver", "535.104.05"],
    ];
    let mut seen = Vec::new();
    for args in cases {
        let mut a = args.clone();
        a.extend(["--format", "sarif"]);
        let r = gl(&a);
        let v = r.json();
        crate::formats::assert_valid_sarif(&v);
        assert_eq!(v["version"], "2.1.0", "{v:#}");
        assert!(
            v["$schema"].as_str().unwrap().contains("sarif-2.1.0"),
            "{v:#}"
        );
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "gpulint");
        let table: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        for c in &codes {
            assert!(
                table.contains(&c.as_str()),
                "{c} missing from the SARIF rules"
            );
        }
        // Each rule's help links its generated page in the repository and carries its parts.
        for rule in run["tool"]["driver"]["rules"].as_array().unwrap() {
            let id = rule["id"].as_str().unwrap();
            let uri = rule["helpUri"].as_str().unwrap();
            let page = format!("docs/rules/{id}.md");
            assert!(uri.ends_with(&page), "{id}: {uri}");
            assert!(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(&page)
                    .is_file(),
                "{page} is not in the repository"
            );
            let help = rule["help"]["text"].as_str().unwrap();
            for part in ["What:", "Why:", "Example:", "Fix:", "Sources:"] {
                assert!(help.contains(part), "{id} help lacks {part}");
            }
            assert!(rule["help"]["markdown"]
                .as_str()
                .unwrap()
                .contains("**Example:**"));
            let full = rule["fullDescription"]["text"].as_str().unwrap();
            assert_ne!(
                full,
                rule["shortDescription"]["text"].as_str().unwrap(),
                "{id}"
            );
        }
        let results = run["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{args:?}");
        for res in results {
            let id = res["ruleId"].as_str().expect("ruleId");
            let i = res["ruleIndex"].as_u64().expect("ruleIndex") as usize;
            assert_eq!(table[i], id, "ruleIndex points at the rule");
            let locs = res["locations"].as_array().expect("locations");
            assert!(!locs.is_empty());
            let phys = &locs[0]["physicalLocation"];
            let uri = phys["artifactLocation"]["uri"].as_str().unwrap();
            // The image's file in the repository, or its placeholder (a root outside the
            // repository), at line 1 as GitHub code scanning needs a line.
            assert!(
                uri == "testdata/images/example.tar" || uri.starts_with(".gpulint/image/dir_"),
                "image as artifact: {uri}"
            );
            assert_eq!(phys["region"]["startLine"], 1, "{res:#}");
            assert_eq!(
                res["partialFingerprints"]["gpulint/v1"]
                    .as_str()
                    .map(str::len),
                Some(32),
                "{res:#}"
            );
            assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap()));
            assert!(!res["message"]["text"].as_str().unwrap().is_empty());
            let logical = locs[0]["logicalLocations"][0]["fullyQualifiedName"]
                .as_str()
                .unwrap_or("");
            seen.push((id.to_string(), logical.to_string()));
        }
        for r in run["tool"]["driver"]["rules"].as_array().unwrap() {
            if codes.iter().any(|c| r["id"] == c.as_str()) {
                let uri = r["helpUri"].as_str().expect("helpUri");
                assert!(uri.ends_with(&format!("/docs/rules/{}.md", r["id"].as_str().unwrap())));
            }
        }
    }
    assert!(seen.contains(&("GL001".into(), C_SO.into())), "{seen:?}");
    assert!(seen.iter().any(|(id, _)| id == "GL000"), "{seen:?}");
    assert!(seen.iter().any(|(id, _)| id == "GL004"), "{seen:?}");
}

#[test]
fn explain_and_rules() {
    let r = gl(&["explain", "GL001"]);
    expect(&r, 0);
    assert!(r.stdout.starts_with("GL001 no-kernel-image"), "{r:?}");
    assert!(r.stdout.len() > 200, "an explanation, not a title: {r:?}");
    for part in [
        "\nWhat:\n",
        "\nWhy:\n",
        "\nExample:\n",
        "\nFix:\n",
        "\nSources:\n",
    ] {
        assert!(r.stdout.contains(part), "{part:?} missing: {}", r.stdout);
    }
    assert!(
        r.stdout.contains("More: docs/rules/GL001.md"),
        "{}",
        r.stdout
    );
    // Readable on an 80-column terminal: only a URL may be longer.
    for line in r.stdout.lines() {
        assert!(
            line.chars().count() <= 80 || line.trim_start().starts_with("https://"),
            "long line: {line:?}"
        );
    }
    let by_name = gl(&["explain", "no-kernel-image"]);
    expect(&by_name, 0);
    assert_eq!(by_name.stdout, r.stdout);
    let text = gl(&["rules"]);
    expect(&text, 0);
    for code in gl(&["rules", "--format", "json"])
        .json()
        .as_array()
        .unwrap()
    {
        let code = code["code"].as_str().unwrap();
        assert!(text.stdout.contains(code), "{code}");
        expect(&gl(&["explain", code]), 0);
    }
}

// ---------- inventory ----------

#[test]
fn inventory_json_has_every_contract_key() {
    let r = gl(&["inventory", "--format", "json", &example()]);
    expect(&r, 0);
    let v = r.json();
    for k in [
        "image",
        "cuda_toolkits",
        "cuda_libraries",
        "driver_libraries",
        "python_packages",
        "conda_packages",
        "os_packages",
        "binaries",
    ] {
        assert!(v.get(k).is_some(), "inventory without {k:?}: {v:#}");
    }
    let img = &v["image"];
    assert_eq!(img["env"]["CUDA_VERSION"], "12.1.1");
    assert!(img["env"]["NVIDIA_REQUIRE_CUDA"]
        .as_str()
        .unwrap()
        .starts_with("cuda>=12.1 brand=tesla"));
    assert!(img["env"]["LD_LIBRARY_PATH"]
        .as_str()
        .unwrap()
        .contains("nvidia/cuda_runtime/lib"));
    assert_eq!(img["layers"].as_array().unwrap().len(), 3);
    // The last layer's whiteout removed the baked-in libcuda.so.1.
    assert_eq!(v["driver_libraries"], serde_json::json!([]), "{v:#}");
    let torch = v["python_packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "torch")
        .expect("torch");
    assert_eq!(torch["version"], "2.3.0");
    assert!(
        torch.to_string().contains("12.1"),
        "torch's CUDA from torch/version.py: {torch:#}"
    );
    let cudart = v["cuda_libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "cudart")
        .expect("cudart");
    assert_eq!(cudart["version"], "12.1.105", "{cudart:#}");
    let bins = v["binaries"].as_array().unwrap();
    let ext = bins.iter().find(|b| b["path"] == C_SO).expect("_C.so");
    assert_eq!(ext["sass"], serde_json::json!(["sm_75"]), "{ext:#}");
    assert_eq!(ext["ptx"], serde_json::json!([]), "{ext:#}");

    let text = gl(&["inventory", &example()]);
    expect(&text, 0);
    for s in ["torch", "cudart", C_SO, "sm_75", "CUDA_VERSION=12.1.1"] {
        assert!(text.stdout.contains(s), "{s}: {text:?}");
    }
}

/// The storage facts of an inventory removed: what the transport itself decides (the
/// reference, the manifest/config digest, each layer blob's digest, media type and size —
/// skopeo gzips layers that docker keeps plain). The diff_ids stay.
fn content_only(mut v: serde_json::Value) -> serde_json::Value {
    let img = v["image"].as_object_mut().unwrap();
    img.remove("reference");
    img.remove("digest");
    for l in img["layers"].as_array_mut().unwrap() {
        let l = l.as_object_mut().unwrap();
        for k in ["digest", "media_type", "size"] {
            l.remove(k);
        }
        assert!(l["diff_id"].as_str().unwrap().starts_with("sha256:"));
    }
    v
}

/// The example's docker-archive rewritten as an OCI layout by hand: gzip layers, the same
/// config bytes (so the same diff_ids).
fn docker_archive_to_oci(archive: &Path, out: &Path) {
    let mut files = std::collections::BTreeMap::new();
    let mut ar = tar::Archive::new(std::fs::File::open(archive).unwrap());
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).unwrap();
        files.insert(name, data);
    }
    let manifest: serde_json::Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
    let blobs = out.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |data: &[u8], mt: &str| {
        use sha2::Digest;
        let hex = hex::encode(sha2::Sha256::digest(data));
        std::fs::write(blobs.join(&hex), data).unwrap();
        serde_json::json!({"mediaType": mt, "digest": format!("sha256:{hex}"), "size": data.len()})
    };
    let config = put(
        &files[manifest[0]["Config"].as_str().unwrap()],
        "application/vnd.oci.image.config.v1+json",
    );
    let layers: Vec<_> = manifest[0]["Layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            g.write_all(&files[l.as_str().unwrap()]).unwrap();
            put(
                &g.finish().unwrap(),
                "application/vnd.oci.image.layer.v1.tar+gzip",
            )
        })
        .collect();
    let m = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": config, "layers": layers});
    let mut desc = put(
        &serde_json::to_vec(&m).unwrap(),
        "application/vnd.oci.image.manifest.v1+json",
    );
    desc["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": "v1"});
    std::fs::write(out.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        out.join("index.json"),
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 2, "manifests": [desc]})).unwrap(),
    )
    .unwrap();
}

#[test]
fn same_inventory_through_every_transport() {
    let d = tempfile::tempdir().unwrap();
    let e = example();
    let inventory = |reference: &str| {
        let r = gl(&["inventory", "--format", "json", reference]);
        expect(&r, 0);
        let v = r.json();
        assert!(!v["image"]["reference"].as_str().unwrap().is_empty());
        assert_eq!(v["partial"], false, "{reference}: {v:#}");
        v
    };
    let want = content_only(inventory(&format!("docker-archive:{e}")));
    assert_eq!(content_only(inventory(&e)), want, "bare path");

    let layout = d.path().join("by-hand");
    docker_archive_to_oci(Path::new(&e), &layout);
    let got = content_only(inventory(&format!("oci:{}:v1", layout.display())));
    assert_eq!(got, want, "OCI layout written by hand");

    require("skopeo");
    let sk = d.path().join("skopeo-layout");
    let oa = d.path().join("skopeo.oci.tar");
    for dest in [
        format!("oci:{}:v1", sk.display()),
        format!("oci-archive:{}:v1", oa.display()),
    ] {
        let out = Command::new("skopeo")
            .args(["copy", "-q", &format!("docker-archive:{e}"), &dest])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "skopeo copy to {dest}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(content_only(inventory(&dest)), want, "{dest} (skopeo)");
    }
    // And back: skopeo's own docker-archive of the layout.
    let back = d.path().join("skopeo-docker.tar");
    let out = Command::new("skopeo")
        .args([
            "copy",
            "-q",
            &format!("oci:{}:v1", sk.display()),
            &format!("docker-archive:{}:gpulint/example:latest", back.display()),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        content_only(inventory(&format!("docker-archive:{}", back.display()))),
        want,
        "skopeo docker-archive"
    );
}

#[test]
fn example_image_is_reproducible() {
    // testdata/images/make-example-image.sh rebuilds the committed archive byte for byte.
    require("tar");
    require("sha256sum");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("example.tar");
    let r = Command::new("bash")
        .arg(repo().join("testdata/images/make-example-image.sh"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let built = std::fs::read(&out).unwrap();
    let committed = std::fs::read(example()).unwrap();
    assert!(
        built == committed,
        "testdata/images/example.tar differs from what testdata/images/make-example-image.sh builds; rerun it"
    );
    assert!(committed.len() < 1024 * 1024, "{} bytes", committed.len());
}

/// `host --check` honours `.gpulint.toml` switches, severity overrides and `fail-on`, and
/// `--fail-on` on the command line beats the config's.
#[test]
fn host_check_follows_the_configuration() {
    let d = tempfile::tempdir().unwrap();
    let root = "testdata/host/variants/api-mismatch";
    let with = |toml: &str, extra: &[&str]| {
        let cfg = d.path().join("gpulint.toml");
        std::fs::write(&cfg, toml).unwrap();
        let cfg = cfg.to_string_lossy().into_owned();
        let mut a = vec!["host", "--root", root, "--check", "--config", &cfg];
        a.extend_from_slice(extra);
        gl(&a)
    };
    let plain = with("", &[]);
    expect(&plain, 1);
    assert!(plain.stdout.contains("[error] GL204"), "{plain:?}");

    // Only GL204 is a problem on this capture; eight checks could not run (info), which never
    // fail the run, not even with --fail-on info.
    let off = with("[rules]\nGL204 = \"off\"\n", &["--fail-on", "info"]);
    assert!(!off.stdout.contains("GL204"), "{off:?}");
    assert!(off.stdout.contains("[could not check]"), "{off:?}");
    expect(&off, 0);

    let warn = with("[rules]\nGL204 = \"warning\"\n", &[]);
    assert!(warn.stdout.contains("[warning] GL204"), "{warn:?}");
    expect(&warn, 0);
    let strict = with("fail-on = \"warning\"\n[rules]\nGL204 = \"warning\"\n", &[]);
    assert!(strict.stdout.contains("[warning] GL204"), "{strict:?}");
    expect(&strict, 1);
    let flag = with(
        "fail-on = \"warning\"\n[rules]\nGL204 = \"warning\"\n",
        &["--fail-on", "error"],
    );
    expect(&flag, 0);

    let sarif = with("[rules]\nGL204 = \"off\"\n", &["--format", "sarif"]);
    crate::formats::assert_valid_sarif(&sarif.json());
    let results = sarif.json()["runs"][0]["results"].clone();
    assert!(
        results
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["ruleId"] != "GL204"),
        "{results:#}"
    );
}

// ---------- targets: host profiles and fleets ----------

#[test]
fn host_profile_round_trips_into_image() {
    let d = tempfile::tempdir().unwrap();
    let r = gl(&["host", "--root", "testdata/host/h200", "--format", "json"]);
    expect(&r, 0);
    let v = r.json();
    assert_eq!(v["driver"], "580.159.04", "{v:#}");
    assert_eq!(v["gpus"][0]["name"], "NVIDIA H200", "{v:#}");
    assert_eq!(v["gpus"][0]["cc"], "9.0", "{v:#}");
    let profile = d.path().join("host.json");
    std::fs::write(&profile, &r.stdout).unwrap();
    let p = profile.to_string_lossy().into_owned();

    let r = gl(&["image", &example(), "--host", &p, "--format", "json"]);
    expect(&r, 1);
    let v = r.json();
    let t = &v["details"]["targets"][0];
    assert_eq!(t["driver"], "580.159.04", "{v:#}");
    assert!(
        t["gpus"][0]["name"].as_str().unwrap().contains("H200"),
        "{v:#}"
    );
    assert_eq!(t["gpus"][0]["cc"], "9.0", "{v:#}");
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["GL001"], "sm_75 only on an H200: {v:#}");

    // The same as naming the GPU and driver by hand.
    let by_flags = gl(&[
        "image",
        &example(),
        "--gpu",
        "NVIDIA H200",
        "--driver",
        "580.159.04",
        "--format",
        "json",
    ]);
    expect(&by_flags, 1);
    assert_eq!(
        by_flags.json()["findings"].as_array().unwrap().len(),
        rules.len()
    );

    // --host excludes --gpu; a broken profile is an input error.
    expect(&gl(&["image", &example(), "--host", &p, "--gpu", "T4"]), 2);
    std::fs::write(&profile, "{\"kind\": \"something else\"}").unwrap();
    expect(&gl(&["image", &example(), "--host", &p]), 2);
}

#[test]
fn fleet_gives_a_verdict_per_pool() {
    let d = tempfile::tempdir().unwrap();
    let fleet = d.path().join("fleet.toml");
    std::fs::write(
        &fleet,
        r#"
[[pool]]
name = "inference-t4"
driver = "535.104.05"
gpus = [{ model = "T4", count = 4 }]

[[pool]]
name = "train-h100"
driver = "550.54.15"
gpus = [{ model = "H100", count = 8 }]
platform = "linux/amd64"
"#,
    )
    .unwrap();
    let f = fleet.to_string_lossy().into_owned();
    let r = gl(&["image", &example(), "--fleet", &f]);
    expect(&r, 1);
    let t4 = r.stdout.find("target inference-t4").expect("t4 section");
    let h100 = r.stdout.find("target train-h100").expect("h100 section");
    let (first, second) = if t4 < h100 {
        (&r.stdout[t4..h100], &r.stdout[h100..])
    } else {
        (&r.stdout[t4..], &r.stdout[h100..t4])
    };
    assert!(first.contains("no findings"), "t4 pool is clean: {r:?}");
    assert!(second.contains("GL001"), "h100 pool breaks: {r:?}");

    let r = gl(&["image", &example(), "--fleet", &f, "--format", "json"]);
    expect(&r, 1);
    let v = r.json();
    assert_eq!(
        v["targets"],
        serde_json::json!(["inference-t4", "train-h100"])
    );
    let per_pool: Vec<(&str, &str)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["target"].as_str().unwrap(), f["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(per_pool, [("train-h100", "GL001")], "{v:#}");

    // A fleet where every pool can run it.
    std::fs::write(
        &fleet,
        "[[pool]]\nname = \"a\"\ndriver = \"535.104.05\"\ngpus = [\"T4\"]\n\n\
         [[pool]]\nname = \"b\"\ndriver = \"550.54.15\"\ngpus = [{ model = \"Tesla T4\" }]\n",
    )
    .unwrap();
    expect(&gl(&["image", &example(), "--fleet", &f]), 0);
    // Malformed fleet files are input errors.
    std::fs::write(&fleet, "[[pool]]\nname = \"x\"\ngpus = [\"Z9000\"]\n").unwrap();
    expect(&gl(&["image", &example(), "--fleet", &f]), 2);
    std::fs::write(&fleet, "").unwrap();
    expect(&gl(&["image", &example(), "--fleet", &f]), 2);
}

// ---------- colour ----------

fn has_escape(s: &str) -> bool {
    s.contains('\u{1b}')
}

#[test]
fn no_escape_codes_when_piped_or_no_color() {
    let e = example();
    let args = ["image", &e, "--gpu", "H100", "--driver", "535.104.05"];
    // Piped (not a TTY).
    let r = gl(&args);
    expect(&r, 1);
    assert!(!has_escape(&r.stdout) && !has_escape(&r.stderr), "{r:?}");
    let home = tempfile::tempdir().unwrap();
    let mut c = cmd(home.path());
    c.args(args).env("NO_COLOR", "1");
    let r = output(c);
    assert!(!has_escape(&r.stdout) && !has_escape(&r.stderr), "{r:?}");

    // On a terminal (util-linux `script` gives one): colour unless NO_COLOR is set.
    require("script");
    let on_tty = |no_color: bool| {
        let home = tempfile::tempdir().unwrap();
        let line = format!(
            "{} image {} --gpu H100 --driver 535.104.05",
            env!("CARGO_BIN_EXE_gpulint"),
            e
        );
        let mut c2 = Command::new("script");
        c2.args(["-qec", &line, "/dev/null"])
            .current_dir(repo())
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("CI", "true")
            .env("TERM", "xterm");
        if no_color {
            c2.env("NO_COLOR", "1");
        } else {
            c2.env_remove("NO_COLOR");
        }
        output(c2)
    };
    let plain = on_tty(true);
    assert!(plain.stdout.contains("GL001"), "{plain:?}");
    assert!(!has_escape(&plain.stdout), "NO_COLOR on a TTY: {plain:?}");
    let coloured = on_tty(false);
    assert!(coloured.stdout.contains("GL001"), "{coloured:?}");
    assert!(
        has_escape(&coloured.stdout),
        "a TTY without NO_COLOR gets colour (so the check above means something): {coloured:?}"
    );
}

// ---------- configuration ----------

#[test]
fn config_file_drives_image_rules_targets_and_fail_on() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("gpulint.toml");
    let img = example();
    let run = |text: &str, extra: &[&str]| {
        std::fs::write(&cfg, text).unwrap();
        let mut args = vec![
            "image",
            img.as_str(),
            "--config",
            cfg.to_str().unwrap(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        gl(&args)
    };
    // Targets from the config: the H100 lacks the extension's code.
    let r = run(
        "[[target]]\ngpu = [\"H100\"]\ndriver = \"535.104.05\"\n",
        &[],
    );
    expect(&r, 1);
    assert!(r.stdout.contains("\"GL001\""), "{}", r.stdout);
    // The rule switched off.
    let r = run(
        "[[target]]\ngpu = [\"H100\"]\ndriver = \"535.104.05\"\n[rules]\nGL001 = \"off\"\n",
        &[],
    );
    expect(&r, 0);
    assert!(!r.stdout.contains("\"GL001\""));
    // Downgraded to a warning, then made fatal again by fail-on.
    let t = "fail-on = \"warning\"\n[[target]]\ngpu = [\"H100\"]\ndriver = \"535.104.05\"\n[rules]\nGL001 = \"warning\"\n";
    let r = run(t, &[]);
    expect(&r, 1);
    let r = run(t, &["--fail-on", "error"]);
    expect(&r, 0);
    // A bad config is a located input error.
    let r = run("[rules]\nGL001 = \"loud\"\n", &[]);
    expect(&r, 2);
    assert!(r.stderr.contains("gpulint.toml:2"), "{}", r.stderr);
}
