//! `gpulint host --root DIR` on a captured tree with a FIFO where a file belongs: the CLI
//! finishes (a FIFO opened for reading would block forever), and says what it could not read.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary, killing it (and failing) if it has not finished in a minute.
fn gpulint_bounded(args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gpulint {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn copy_tree(src: &Path, dst: &Path) {
    for e in walkdir::WalkDir::new(src).min_depth(1) {
        let e = e.unwrap();
        let to = dst.join(e.path().strip_prefix(src).unwrap());
        if e.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &to).unwrap();
        } else if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// A copy of the H200 capture (no problems, no warnings) under `d`.
fn h200_tree(d: &tempfile::TempDir) -> std::path::PathBuf {
    let root = d.path().join("host");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/host/h200"),
        &root,
    );
    root
}

#[test]
fn host_check_with_a_fifo_finishes_and_names_it() {
    let d = tmp();
    let root = h200_tree(&d);
    let version = root.join("proc/driver/nvidia/version");
    std::fs::remove_file(&version).unwrap();
    run(Command::new("mkfifo").arg(&version));
    let r = path_str(&root);

    let (code, out, err) = gpulint_bounded(&["host", "--check", "--root", &r]);
    assert_eq!(code, 2, "unreadable evidence fails closed: {out}{err}");
    assert!(
        out.contains("[could not check]")
            && out.contains("/proc/driver/nvidia/version is there but could not be read"),
        "{out}"
    );

    // The profile alone warns instead of passing the file off as absent.
    let (code, out, err) = gpulint_bounded(&["host", "--root", &r, "--format", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("/proc/driver/nvidia/version: could not be read"),
        "{err}"
    );
}

/// Fail closed: a file that is there but cannot be read (a FIFO, one past the 16 MiB bound)
/// makes `host --check` exit 2 with the report still written in every format, naming the
/// file; `--allow-partial` makes those checks warnings judged by `--fail-on`. An absent
/// file is evidence, not incomplete input: the run's exit code does not change.
#[test]
fn host_check_fails_closed_on_unreadable_evidence_unless_allow_partial() {
    let d = tmp();
    let clean = h200_tree(&d);
    let (code, out, err) = gpulint_bounded(&["host", "--check", "--root", &path_str(&clean)]);
    assert_eq!(code, 0, "the capture is clean: {out}{err}");
    let (code, _, err) = gpulint_bounded(&[
        "host",
        "--check",
        "--root",
        &path_str(&clean),
        "--fail-on",
        "warning",
    ]);
    assert_eq!(code, 0, "the capture has no warnings: {err}");

    for (file, how) in [
        ("/proc/driver/nvidia/version", "fifo"),
        ("/.gpulint-host/commands/nvidia-smi-q.xml", "big"),
    ] {
        let d = tmp();
        let root = h200_tree(&d);
        let local = root.join(file.trim_start_matches('/'));
        std::fs::remove_file(&local).unwrap();
        if how == "fifo" {
            run(Command::new("mkfifo").arg(&local));
        } else {
            // Sparse: past the bound without writing 16 MiB.
            std::fs::File::create(&local)
                .unwrap()
                .set_len((16 << 20) + 1)
                .unwrap();
        }
        let r = path_str(&root);

        let (code, out, err) = gpulint_bounded(&["host", "--check", "--root", &r]);
        assert_eq!(code, 2, "{file} ({how}): {out}{err}");
        assert!(
            out.contains("[could not check]") && out.contains(&format!("{file} is there")),
            "{out}"
        );
        assert!(
            out.contains("[error] GL000 unreadable-input: part of the host could not be read")
                && out.contains(&format!("read, the result is partial: {file}: ")),
            "{out}"
        );
        assert!(
            err.contains(file) && err.contains("--allow-partial"),
            "{file}: {err}"
        );

        for format in [
            "json",
            "sarif",
            "junit",
            "gitlab",
            "github",
            "checkstyle",
            "concise",
            "text",
        ] {
            let report = d.path().join(format!("report.{format}"));
            let (code, out, err) = gpulint_bounded(&[
                "host",
                "--check",
                "--root",
                &r,
                "--format",
                format,
                "-o",
                &path_str(&report),
            ]);
            assert_eq!(code, 2, "{file} {format}: {out}{err}");
            let written = std::fs::read_to_string(&report)
                .unwrap_or_else(|e| panic!("{format}: no report written: {e}"));
            assert!(
                written.contains(file.trim_start_matches('/')),
                "{format} does not name {file}: {written}"
            );
        }
        let (_, out, _) = gpulint_bounded(&["host", "--check", "--root", &r, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["details"]["partial"], true, "{out}");
        assert!(
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["rule"] == "GL000"
                    && f["severity"] == "error"
                    && f["location"]["file"] == file),
            "{out}"
        );

        // Best effort: exit 0 at the default --fail-on, the unreadable ones are warnings.
        let (code, out, err) =
            gpulint_bounded(&["host", "--check", "--root", &r, "--allow-partial"]);
        assert_eq!(code, 0, "{file}: {out}{err}");
        assert!(out.contains(&format!("{file} is there")), "{out}");
        assert!(out.contains("[warning] GL000 unreadable-input"), "{out}");
        assert!(!err.contains("error"), "{err}");
        let (code, out, err) = gpulint_bounded(&[
            "host",
            "--check",
            "--root",
            &r,
            "--allow-partial",
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let unread: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "GL000")
            .collect();
        assert!(
            !unread.is_empty() && unread.iter().all(|f| f["severity"] == "warning"),
            "{out}"
        );
        assert_eq!(v["details"]["partial"], true, "{out}");
        let (code, out, err) = gpulint_bounded(&[
            "host",
            "--check",
            "--root",
            &r,
            "--allow-partial",
            "--fail-on",
            "warning",
        ]);
        assert_eq!(code, 1, "--fail-on judges the warnings: {out}{err}");
    }

    // Absent, not unreadable: the same files simply missing keep today's verdicts.
    let d = tmp();
    let root = h200_tree(&d);
    for file in [
        "proc/driver/nvidia/version",
        ".gpulint-host/commands/nvidia-smi-q.xml",
    ] {
        std::fs::remove_file(root.join(file)).unwrap();
    }
    let (code, out, err) = gpulint_bounded(&["host", "--check", "--root", &path_str(&root)]);
    assert_eq!(
        code, 0,
        "absent evidence is not incomplete input: {out}{err}"
    );
    assert!(!out.contains("is there but could not be read"), "{out}");
    assert!(!out.contains("GL000"), "{out}");
}
