//! No silent gaps: what could not be read is in the report (GL000, every format) and in the
//! exit code (2), what did not run is "skipped", and JUnit fails exactly where the gate does.

use crate::formats::{assert_valid_sarif, parse_junit_simple, repo, run_in, Out};
use serde_json::Value;
use std::path::Path;

/// Formats whose report can be parsed for rule codes here.
const FORMATS: &[&str] = &[
    "json",
    "sarif",
    "gitlab",
    "junit",
    "checkstyle",
    "github",
    "concise",
];

/// The rule codes a report in `format` holds findings of (JUnit: failed or reported test
/// cases).
fn codes(format: &str, r: &Out) -> Vec<String> {
    let json = || -> Value {
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{format}: {e}: {r:?}"))
    };
    let mut out: Vec<String> = match format {
        "json" => {
            let v = json();
            crate::formats::assert_valid_report(&v);
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["rule"].as_str().unwrap().to_string())
                .collect()
        }
        "sarif" => {
            let v = json();
            assert_valid_sarif(&v);
            v["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["ruleId"].as_str().unwrap().to_string())
                .collect()
        }
        "gitlab" => json()
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["check_name"].as_str().unwrap().to_string())
            .collect(),
        "junit" => {
            parse_junit_simple(&r.stdout);
            // A test case with a failure: `name="GL000 …">` then `<failure`.
            let lines: Vec<&str> = r.stdout.lines().collect();
            lines
                .windows(2)
                .filter(|w| w[1].trim_start().starts_with("<failure"))
                .filter_map(|w| w[0].split(" name=\"").nth(1))
                .map(|n| n[..5].to_string())
                .collect()
        }
        "checkstyle" => r
            .stdout
            .split("source=\"gpulint.")
            .skip(1)
            .map(|s| s[..5].to_string())
            .collect(),
        "github" => r
            .stdout
            .split("title=")
            .skip(1)
            .map(|s| s[..5].to_string())
            .collect(),
        "concise" => r
            .stdout
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|s| s[..5].to_string())
            .collect(),
        other => panic!("{other}"),
    };
    out.sort();
    out.dedup();
    out
}

/// `testdata/images/example.tar` cut to `len` bytes, in `dir`.
fn truncated_example(dir: &Path, len: usize) -> String {
    let bytes = std::fs::read(repo().join("testdata/images/example.tar")).unwrap();
    let p = dir.join(format!("cut-{len}.tar"));
    std::fs::write(&p, &bytes[..len.min(bytes.len())]).unwrap();
    p.to_string_lossy().into_owned()
}

/// An image that cannot be opened (cut inside its first header, cut halfway, or an empty
/// root directory) exits 2 and still writes its report, with GL000 in it, in every format.
#[test]
fn an_unreadable_or_empty_image_writes_its_report_with_gl000() {
    let d = tempfile::tempdir().unwrap();
    let len = std::fs::metadata(repo().join("testdata/images/example.tar"))
        .unwrap()
        .len() as usize;
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let images = [
        truncated_example(d.path(), 100),
        truncated_example(d.path(), len / 2),
        format!("dir:{}", empty.display()),
    ];
    for image in &images {
        for format in FORMATS {
            let r = run_in(
                d.path(),
                &[
                    "image",
                    image,
                    "--no-local-host",
                    "--gpu",
                    "H100",
                    "--format",
                    format,
                ],
            );
            assert_eq!(r.code, 2, "{image} {format}: {r:?}");
            assert!(
                codes(format, &r).contains(&"GL000".to_string()),
                "{image} {format}: {r:?}"
            );
        }
    }
    // The empty root says why.
    let r = run_in(d.path(), &["image", &images[2], "--format", "json"]);
    assert!(r.stdout.contains("no file in it at all"), "{r:?}");
}

/// `gpulint dockerfile nope/Dockerfile svc/Dockerfile`: the missing input is a GL000 error at
/// its path in every format, the other is still linted, exit 2.
#[test]
fn a_missing_input_of_a_multi_input_run_is_in_every_format() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("svc")).unwrap();
    std::fs::write(
        d.path().join("svc/Dockerfile"),
        "FROM nvidia/cuda:11.3.1-runtime-ubuntu20.04\nRUN true\n",
    )
    .unwrap();
    for format in FORMATS {
        let r = run_in(
            d.path(),
            &[
                "dockerfile",
                "nope/Dockerfile",
                "svc/Dockerfile",
                "--format",
                format,
            ],
        );
        assert_eq!(r.code, 2, "{format}: {r:?}");
        let c = codes(format, &r);
        // GL109 (end-of-life CUDA) is a warning: JUnit reports it without a failure.
        let linted = if *format == "junit" {
            r.stdout.contains("GL109")
        } else {
            c.contains(&"GL109".to_string())
        };
        assert!(
            c.contains(&"GL000".to_string()) && linted,
            "{format}: {c:?} {r:?}"
        );
        assert!(r.stdout.contains("nope/Dockerfile"), "{format}: {r:?}");
    }
    // `compose` too (it used to stop at the missing file with no report).
    std::fs::write(
        d.path().join("svc/compose.yaml"),
        "services:\n  app:\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    runtime: nvidia\n",
    )
    .unwrap();
    let r = run_in(
        d.path(),
        &[
            "compose",
            "nope.yaml",
            "svc/compose.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        codes("json", &r),
        ["GL000", "GL116"].map(String::from).to_vec(),
        "{r:?}"
    );
}

/// `lint` on a Dockerfile over its size bound: named on the command line (as pre-commit
/// does), an input error (exit 2, GL000 error); found in the tree, a GL000 warning, counted.
#[test]
fn lint_never_skips_an_unreadable_dockerfile_silently() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("big.Dockerfile"),
        "# x\n".repeat((4 << 20) / 4 + 1),
    )
    .unwrap();
    let named = run_in(
        d.path(),
        &[
            "lint",
            "big.Dockerfile",
            "--format",
            "json",
            "--fail-on",
            "none",
        ],
    );
    assert_eq!(named.code, 2, "{named:?}");
    let v: Value = serde_json::from_str(&named.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["rule"], "GL000", "{v:#}");
    assert_eq!(f["severity"], "error", "{v:#}");
    assert_eq!(f["location"]["file"], "big.Dockerfile", "{v:#}");

    let found = run_in(d.path(), &["lint", ".", "--format", "json"]);
    assert_eq!(found.code, 0, "{found:?}");
    let v: Value = serde_json::from_str(&found.stdout).unwrap();
    assert_eq!(v["findings"][0]["rule"], "GL000", "{v:#}");
    assert_eq!(v["findings"][0]["severity"], "warning", "{v:#}");
    assert_eq!(v["summary"]["warning"], 1, "{v:#}");
}

/// A file named as a manifest that holds no object (a Helm values file) gets a note.
#[test]
fn a_manifest_with_no_object_is_not_passed_over_in_silence() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("values.yaml"), "replicas: 2\nimage: x\n").unwrap();
    let r = run_in(d.path(), &["k8s", "values.yaml"]);
    assert_eq!(r.code, 0, "{r:?}");
    let notes: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("values.yaml") && l.contains("no Kubernetes object"))
        .collect();
    assert_eq!(notes.len(), 1, "{r:?}");
}

/// `--scan-images` on an image that cannot be read: a GL000 error and exit 2, as `explain
/// GL000` and the README say; a warning under `--allow-partial`.
#[test]
fn scan_images_fails_closed_as_explain_says() {
    let d = tempfile::tempdir().unwrap();
    let image = truncated_example(d.path(), 100);
    std::fs::write(
        d.path().join("compose.yaml"),
        format!("services:\n  app:\n    image: docker-archive:{image}\n"),
    )
    .unwrap();
    let severity_of_gl000 = |r: &Out| -> String {
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        let f = v["findings"].as_array().unwrap();
        let g = f.iter().find(|f| f["rule"] == "GL000").expect("a GL000");
        g["severity"].as_str().unwrap().to_string()
    };
    let args = [
        "compose",
        "compose.yaml",
        "--scan-images",
        "--format",
        "json",
    ];
    let r = run_in(d.path(), &args);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(severity_of_gl000(&r), "error");
    let mut partial = args.to_vec();
    partial.extend(["--allow-partial", "--fail-on", "error"]);
    let r = run_in(d.path(), &partial);
    assert_eq!(severity_of_gl000(&r), "warning");
    assert_ne!(r.code, 2, "{r:?}");
    let explain = run_in(d.path(), &["explain", "GL000"]);
    assert!(explain.stdout.contains("exits 2"), "{explain:?}");
}

/// Host checks that do not apply (WSL2: the kernel-module checks; not in a container: GL216)
/// are "skipped" in text, JSON and JUnit, never "ok".
#[test]
fn host_checks_that_do_not_apply_are_skipped_not_ok() {
    let root = repo().join("testdata/host/variants/wsl2");
    let root = root.to_str().unwrap();
    let text = run_in(&repo(), &["host", "--check", "--root", root]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(text.stdout.contains("[skipped] GL201"), "{text:?}");
    assert!(text.stdout.contains("[skipped] GL216"), "{text:?}");
    assert!(!text.stdout.contains("[ok] GL201"), "{text:?}");
    assert!(
        text.stdout.contains(" skipped (not applicable)"),
        "{text:?}"
    );

    let json = run_in(
        &repo(),
        &["host", "--check", "--root", root, "--format", "json"],
    );
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    crate::formats::assert_valid_report(&v);
    let status = |code: &str| {
        v["details"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["rule"] == code)
            .map(|c| c["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("GL201").as_deref(), Some("skipped"), "{v:#}");
    assert_eq!(status("GL216").as_deref(), Some("skipped"), "{v:#}");

    let junit = run_in(
        &repo(),
        &["host", "--check", "--root", root, "--format", "junit"],
    );
    let (top, suites) = parse_junit_simple(&junit.stdout);
    let skipped: usize = suites.iter().map(|s| s.skipped).sum();
    assert!(skipped >= 2, "{}", junit.stdout);
    assert_eq!(top["skipped"].parse::<usize>().unwrap(), skipped);
}

/// JUnit fails a test case exactly when its rule has a finding at or above `--fail-on`: a
/// run of warnings passes the gate (exit 0) with no failed test case, and fails both at
/// `--fail-on warning`.
#[test]
fn junit_fails_exactly_at_fail_on() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("Dockerfile"),
        "FROM nvidia/cuda:11.3.1-runtime-ubuntu20.04\nRUN true\n",
    )
    .unwrap();
    for (fail_on, code, failed) in [("error", 0, false), ("warning", 1, true)] {
        let r = run_in(
            d.path(),
            &[
                "dockerfile",
                "Dockerfile",
                "--format",
                "junit",
                "--fail-on",
                fail_on,
            ],
        );
        assert_eq!(r.code, code, "{fail_on}: {r:?}");
        let (top, _) = parse_junit_simple(&r.stdout);
        let failures: usize = top["failures"].parse().unwrap();
        assert_eq!(failures > 0, failed, "{fail_on}: {}", r.stdout);
        // The warning is reported either way.
        assert!(r.stdout.contains("GL109"), "{}", r.stdout);
        if !failed {
            assert!(r.stdout.contains("<system-out>"), "{}", r.stdout);
        }
    }
}
