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

#[test]
fn host_check_with_a_fifo_finishes_and_names_it() {
    let d = tmp();
    let root = d.path().join("host");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/host/h200"),
        &root,
    );
    let version = root.join("proc/driver/nvidia/version");
    std::fs::remove_file(&version).unwrap();
    run(Command::new("mkfifo").arg(&version));
    let r = path_str(&root);

    let (code, out, err) = gpulint_bounded(&["host", "--check", "--root", &r]);
    assert_eq!(code, 0, "could not check never fails the run: {out}{err}");
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
