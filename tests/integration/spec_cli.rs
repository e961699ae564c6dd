//! The spec commands end to end. `--scan-images`: compose / Kubernetes files naming a local OCI
//! image that holds a real CUDA library built only for sm_75; the image checks run on it against
//! an A100 (from `--gpu`, or from a `nvidia.com/gpu.product` nodeSelector) and report GL001.
//! `--matrices`: overrides reach the spec rules.

use crate::common::*;
use std::path::Path;
use std::process::Command;

const SO: &str = "testdata/fatbin/cuda-binaries/v02_sm75_only/libv02_sm75_only.so";

/// An OCI layout with the sm_75-only library under /opt/app.
pub(crate) fn sm75_image(dir: &Path) -> String {
    let so = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(SO)).unwrap();
    let img = TestImage {
        layers: vec![(
            layer_tar(&[
                E::Dir("opt/"),
                E::Dir("opt/app/"),
                E::File("opt/app/libv02_sm75_only.so", so),
            ]),
            Comp::Gzip,
        )],
        cfg: Cfg::default(),
    };
    let layout = dir.join("layout");
    write_oci_layout(&layout, &img, "v1");
    format!("oci:{}:v1", layout.display())
}

/// Run gpulint hermetically (no user config, no layer cache) in `dir`.
fn gpulint(dir: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .args(["--format", "json", "--no-cache", "-q"])
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"));
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn findings(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["findings"].as_array().cloned().unwrap_or_default()
}

fn with_rule(v: &serde_json::Value, rule: &str) -> Vec<serde_json::Value> {
    findings(v)
        .into_iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

#[test]
fn compose_image_scanned_against_gpu_flag() {
    let d = tempfile::tempdir().unwrap();
    let image = sm75_image(d.path());
    std::fs::write(
        d.path().join("compose.yaml"),
        format!(
            "services:\n  train:\n    image: {image}\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n  built:\n    build: .\n    image: oci:/nonexistent/layout:v1\n"
        ),
    )
    .unwrap();

    // Without --scan-images: only the file's own rules.
    let (_, v, _) = gpulint(d.path(), &["compose", "--gpu", "A100"]);
    assert!(with_rule(&v, "GL001").is_empty(), "{v:#}");

    let (code, v, err) = gpulint(d.path(), &["compose", "--gpu", "A100", "--scan-images"]);
    let gl001 = with_rule(&v, "GL001");
    assert!(!gl001.is_empty(), "no GL001: {v:#}\n{err}");
    let f = &gl001[0];
    assert_eq!(f["location"]["file"], "compose.yaml");
    assert_eq!(f["location"]["line"], 3, "the image: line");
    assert_eq!(f["location"]["path"], "/opt/app/libv02_sm75_only.so");
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains(&image), "{msg}");
    assert_eq!(code, 1, "GL001 is an error");
    // The `build:` service names what its build produces: not scanned.
    assert!(with_rule(&v, "GL000").is_empty(), "{v:#}");

    // A T4 (sm_75) runs it.
    let (_, v, _) = gpulint(d.path(), &["compose", "--gpu", "T4", "--scan-images"]);
    assert!(with_rule(&v, "GL001").is_empty(), "{v:#}");
}

#[test]
fn k8s_node_selector_is_the_target() {
    let d = tempfile::tempdir().unwrap();
    let image = sm75_image(d.path());
    std::fs::write(
        d.path().join("pod.yaml"),
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\nspec:\n  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n  containers:\n    - name: main\n      image: {image}\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n"
        ),
    )
    .unwrap();
    let (code, v, err) = gpulint(d.path(), &["k8s", "pod.yaml", "--scan-images"]);
    let gl001 = with_rule(&v, "GL001");
    assert!(!gl001.is_empty(), "no GL001: {v:#}\n{err}");
    assert!(
        gl001[0]["target"].as_str().unwrap().contains("A100"),
        "{:#}",
        gl001[0]
    );
    assert_eq!(gl001[0]["location"]["file"], "pod.yaml");
    assert_eq!(code, 1);
}

/// An image `--scan-images` cannot read is a verdict missing: GL000 error and exit 2 (as
/// `explain GL000` says), a warning only when `--allow-partial` asks for best effort.
#[test]
fn unreadable_image_fails_closed_unless_allow_partial() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope");
    std::fs::write(
        d.path().join("pod.yaml"),
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n    - name: main\n      image: oci:{}:v1\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n",
            missing.display()
        ),
    )
    .unwrap();
    for (extra, severity, exit) in [(None, "error", 2), (Some("--allow-partial"), "warning", 0)] {
        let mut args = vec!["k8s", "pod.yaml", "--gpu", "A100", "--scan-images"];
        args.extend(extra);
        let (code, v, err) = gpulint(d.path(), &args);
        assert_eq!(code, exit, "{args:?}: {v:#}\n{err}");
        let w = with_rule(&v, "GL000");
        assert_eq!(w.len(), 1, "{v:#}");
        assert_eq!(w[0]["severity"], severity);
        assert!(w[0]["message"]
            .as_str()
            .unwrap()
            .contains(&missing.display().to_string()));
    }
}

#[test]
fn matrices_overrides_reach_spec_rules() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("Dockerfile"),
        "FROM nvcr.io/nvidia/pytorch:99.12-py3\nRUN pip install torch==2.3.0+cu118 --index-url https://download.pytorch.org/whl/cu118\n",
    )
    .unwrap();
    // The built-in NGC matrix does not hold 99.12 (no such release): base CUDA unknown, nothing to compare.
    let (_, v, _) = gpulint(d.path(), &["dockerfile"]);
    assert!(with_rule(&v, "GL101").is_empty(), "{v:#}");
    let m = d.path().join("m");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(
        m.join("ngc_pytorch.toml"),
        "[[container]]\ntag = \"99.12\"\ncuda = \"12.9.1\"\nsource = \"https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-25-06.html\"\n",
    )
    .unwrap();
    let (code, v, err) = gpulint(d.path(), &["dockerfile", "--matrices", "m"]);
    let f = with_rule(&v, "GL101");
    assert_eq!(f.len(), 1, "{v:#}\n{err}");
    assert!(
        f[0]["message"].as_str().unwrap().contains("12.9"),
        "{:#}",
        f[0]
    );
    // An older torch CUDA major on a newer base runs (drivers are backward compatible):
    // reported, but not an error.
    assert_ne!(f[0]["severity"], "error", "{:#}", f[0]);
    assert_eq!(code, 0);
}
