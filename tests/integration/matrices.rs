//! `--matrices DIR` reaches every reader of the compatibility data: the Dockerfile rules'
//! image facts (`cuda-images.toml`) and `gpulint host`.

use std::path::Path;
use std::process::Command;

fn gpulint(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .current_dir(dir)
        .args(args)
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn cuda_images_facts_come_from_the_matrix_overrides() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("empty.toml"), "").unwrap();
    std::fs::write(
        d.path().join("Dockerfile"),
        "FROM nvidia/cuda:10.2-cudnn7-runtime-ubuntu18.04\nCMD [\"python3\", \"app.py\"]\n",
    )
    .unwrap();
    let base = [
        "dockerfile",
        "Dockerfile",
        "--no-local-host",
        "--format",
        "concise",
    ];
    let (_, out) = gpulint(d.path(), &[&base[..], &["--config", "empty.toml"]].concat());
    assert!(
        out.contains("GL109"),
        "built-in tables: CUDA 10.2 is EOL\n{out}"
    );
    // An override of cuda-images.toml that knows no EOL series and no EOL OS.
    let m = d.path().join("m");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(
        m.join("cuda-images.toml"),
        "cuda_eol = []\nos_eol = []\nrequired_device = []\narch_name = []\nno_latest_tag = []\n",
    )
    .unwrap();
    let (_, out) = gpulint(
        d.path(),
        &[&base[..], &["--config", "empty.toml", "--matrices", "m"]].concat(),
    );
    assert!(!out.contains("GL109"), "the override must answer\n{out}");
}

#[test]
fn host_reads_the_matrix_overrides() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("gpus.toml"), "this is not toml [").unwrap();
    let root = repo.join("testdata/host/h200");
    let (code, out) = gpulint(
        repo,
        &[
            "host",
            "--root",
            root.to_str().unwrap(),
            "--matrices",
            d.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "a broken override is an input error\n{out}");
    assert!(out.contains("gpus.toml"), "{out}");
    let (code, out) = gpulint(repo, &["host", "--root", root.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
}
