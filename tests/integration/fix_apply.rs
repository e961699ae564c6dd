//! `--fix`, `--diff` and `--unsafe-fixes` through the binary: what is written, what is
//! printed, what remains, and that every fix that is an edit removes its finding.

use std::path::Path;
use std::process::Command;

const RTX_5090: [&str; 4] = ["--gpu", "RTX 5090", "--driver", "575.51.03"];

/// Run gpulint hermetically (no user config, no local host) in `dir`: exit code, stdout, stderr.
fn gpulint(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .arg("--no-local-host")
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The findings of a JSON report.
fn findings(stdout: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    v["findings"].as_array().cloned().unwrap_or_default()
}

fn rules(stdout: &str) -> Vec<String> {
    findings(stdout)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .collect()
}

const TORCH_2_6: &str = "# a training image\nFROM python:3.12\nRUN pip install torch==2.6.0\nCMD [\"python\", \"train.py\"]\n";

/// The lines in which two texts differ.
fn changed_lines(a: &str, b: &str) -> Vec<usize> {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(a.len(), b.len(), "{a:?} {b:?}");
    (0..a.len())
        .filter(|&i| a[i] != b[i])
        .map(|i| i + 1)
        .collect()
}

#[test]
fn fix_with_unsafe_fixes_moves_torch_2_6_to_a_build_for_the_rtx_5090() {
    let d = tempfile::tempdir().unwrap();
    let df = d.path().join("Dockerfile");
    std::fs::write(&df, TORCH_2_6).unwrap();
    let mut args = vec!["dockerfile", "Dockerfile", "--format", "json", "--fix"];
    args.extend(RTX_5090);
    // Another torch release is an unsafe fix: not applied without --unsafe-fixes.
    let (code, out, err) = gpulint(d.path(), &args);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(std::fs::read_to_string(&df).unwrap(), TORCH_2_6);
    assert!(rules(&out).contains(&"GL119".to_string()), "{out}");
    assert!(err.contains("applied 0 fixes"), "{err}");
    args.push("--unsafe-fixes");
    let (code, out, err) = gpulint(d.path(), &args);
    let fixed = std::fs::read_to_string(&df).unwrap();
    // What remains is reported, and nothing of GL119 / GL102 remains.
    assert_eq!(code, 0, "{out}\n{err}\n{fixed}");
    let left = rules(&out);
    assert!(
        !left.iter().any(|r| r == "GL119" || r == "GL102"),
        "{left:?}"
    );
    assert!(err.contains("applied 2 fixes to 1 file"), "{err}");
    assert_eq!(changed_lines(TORCH_2_6, &fixed), vec![3], "{fixed}");
    assert!(
        fixed.contains(
            "RUN pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128\n"
        ),
        "{fixed}"
    );
    // Nothing else was written beside it (the temporary file is renamed over it).
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("Dockerfile")],
        "{names:?}"
    );
}

#[test]
fn diff_prints_the_hunk_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let df = d.path().join("Dockerfile");
    std::fs::write(&df, TORCH_2_6).unwrap();
    let mut args = vec!["dockerfile", "Dockerfile", "--diff", "--unsafe-fixes"];
    args.extend(RTX_5090);
    let (code, out, err) = gpulint(d.path(), &args);
    assert_eq!(std::fs::read_to_string(&df).unwrap(), TORCH_2_6);
    // The file still has its findings: the exit code says so.
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(
        out,
        "--- a/Dockerfile\n+++ b/Dockerfile\n@@ -1,4 +1,4 @@\n # a training image\n FROM python:3.12\n-RUN pip install torch==2.6.0\n+RUN pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128\n CMD [\"python\", \"train.py\"]\n"
    );
    assert!(err.contains("2 fixes would be applied"), "{err}");
    // Without --unsafe-fixes there is nothing safe to show.
    let mut safe_only = vec!["dockerfile", "Dockerfile", "--diff"];
    safe_only.extend(RTX_5090);
    let (_, out, _) = gpulint(d.path(), &safe_only);
    assert_eq!(out, "");
}

#[test]
fn diff_names_an_absolute_path_outside_the_working_directory_without_a_doubled_slash() {
    let d = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let df = elsewhere.path().join("Dockerfile");
    std::fs::write(&df, TORCH_2_6).unwrap();
    let abs = df.to_str().unwrap();
    let mut args = vec!["dockerfile", abs, "--diff", "--unsafe-fixes"];
    args.extend(RTX_5090);
    let (_, out, err) = gpulint(d.path(), &args);
    let name = abs.trim_start_matches('/');
    assert!(
        out.starts_with(&format!("--- a/{name}\n+++ b/{name}\n@@ ")),
        "{out}\n{err}"
    );
    assert!(!out.contains("a//"), "{out}");
}

#[test]
fn a_safe_fix_pins_the_variant_of_the_base_image_and_removes_gl102() {
    let d = tempfile::tempdir().unwrap();
    let df = d.path().join("Dockerfile");
    let text = "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\n# keep this comment\nRUN pip install torch==2.7.0\n";
    std::fs::write(&df, text).unwrap();
    let args = [
        "dockerfile",
        "Dockerfile",
        "--format",
        "json",
        "--gpu",
        "H100",
        "--driver",
        "575.51.03",
    ];
    let (_, out, _) = gpulint(d.path(), &args);
    assert!(rules(&out).contains(&"GL102".to_string()), "{out}");
    let mut fix = args.to_vec();
    fix.push("--fix");
    let (code, out, err) = gpulint(d.path(), &fix);
    let fixed = std::fs::read_to_string(&df).unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!rules(&out).contains(&"GL102".to_string()), "{out}");
    assert_eq!(changed_lines(text, &fixed), vec![3]);
    assert!(fixed.ends_with(
        "RUN pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu126\n"
    ));
}

#[test]
fn the_base_image_fix_edits_the_arg_default_to_a_listed_tag_of_torchs_cuda() {
    let d = tempfile::tempdir().unwrap();
    let df = d.path().join("Dockerfile");
    // torch 2.8.0 has no CUDA 11 build: the base is what can agree with it.
    let text = "ARG CUDA_VERSION=11.8.0\nFROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04\nRUN pip install torch==2.8.0+cu128\n";
    std::fs::write(&df, text).unwrap();
    let args = [
        "dockerfile",
        "Dockerfile",
        "--format",
        "json",
        "--gpu",
        "H100",
        "--driver",
        "575.51.03",
    ];
    let (code, out, _) = gpulint(d.path(), &args);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    crate::formats::assert_valid_report(&v);
    let gl101 = findings(&out)
        .into_iter()
        .find(|f| f["rule"] == "GL101")
        .expect("GL101");
    let fix = gl101["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "base-image")
        .cloned()
        .expect("a base-image fix");
    assert_eq!(fix["change"]["type"], "base-image");
    assert_eq!(fix["change"]["from"], "11.8.0-runtime-ubuntu22.04");
    let to = fix["change"]["to"].as_str().unwrap();
    assert!(
        to.starts_with("12.8.") && to.ends_with("-runtime-ubuntu22.04"),
        "{to}"
    );
    assert_eq!(
        fix["change"]["cuda"].as_str().unwrap(),
        to.split('-').next().unwrap()
    );
    assert_eq!(fix["applicability"], "unsafe");
    // Applied (unsafe), the ARG default changes and GL101 is gone.
    let mut apply = args.to_vec();
    apply.extend(["--fix", "--unsafe-fixes"]);
    let (code, out, err) = gpulint(d.path(), &apply);
    let fixed = std::fs::read_to_string(&df).unwrap();
    assert_eq!(code, 0, "{out}\n{err}\n{fixed}");
    assert_eq!(changed_lines(text, &fixed), vec![1], "{fixed}");
    assert!(
        fixed.starts_with(&format!(
            "ARG CUDA_VERSION={}\n",
            to.split('-').next().unwrap()
        )),
        "{fixed}"
    );
    assert!(!rules(&out).contains(&"GL101".to_string()), "{out}");
}

#[test]
fn a_symlinked_dockerfile_is_not_rewritten() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real.Dockerfile");
    std::fs::write(&real, TORCH_2_6).unwrap();
    std::os::unix::fs::symlink("real.Dockerfile", d.path().join("Dockerfile")).unwrap();
    let mut args = vec!["dockerfile", "Dockerfile", "--fix", "--unsafe-fixes"];
    args.extend(RTX_5090);
    let (code, out, err) = gpulint(d.path(), &args);
    // Asked to fix and could not: fail closed, the target untouched.
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), TORCH_2_6);
    assert!(d.path().join("Dockerfile").is_symlink());
}

#[test]
fn unsafe_fixes_alone_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("Dockerfile"), TORCH_2_6).unwrap();
    let (code, _, err) = gpulint(d.path(), &["dockerfile", "--unsafe-fixes"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = gpulint(d.path(), &["dockerfile", "--fix", "--diff"]);
    assert_eq!(code, 2, "{err}");
}

/// Apply the JSON edits of one fix to `text` (last to first).
fn apply_json_edits(text: &str, edits: &[serde_json::Value]) -> String {
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                e["start"].as_u64().unwrap() as usize,
                e["end"].as_u64().unwrap() as usize,
                e["new_text"].as_str().unwrap(),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (start, end, new) in edits {
        out.replace_range(start..end, new);
    }
    out
}

/// "A fix that does not remove its finding is a test failure": every fix that carries edits,
/// safe or unsafe, applied alone to its Dockerfile, leaves no finding of its rule on its line.
#[test]
fn every_edit_removes_its_finding() {
    let dockerfiles = [
        TORCH_2_6,
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.7.0\n",
        "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN pip install torch==2.7.0 torchvision==0.22.0\n",
        "FROM python:3.12\nRUN pip install --no-cache-dir torch==2.6.0 \\\n    torchvision==0.21.0 torchaudio==2.6.0 && python -c 'import torch'\n",
        "FROM python:3.11-slim\nRUN apt-get update && uv pip install --system torch==2.5.1\n",
        "FROM python:3.12\nRUN pip3 install numpy torch==2.7.0\n",
        "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.4.1\n",
    ];
    let targets: [&[&str]; 3] = [
        &RTX_5090,
        &["--gpu", "H100", "--driver", "535.104.05"],
        &["--gpu", "T4", "--gpu", "A100", "--driver", "550.54.15"],
    ];
    let d = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (n, text) in dockerfiles.iter().enumerate() {
        for target in targets {
            let name = format!("Dockerfile.{n}");
            std::fs::write(d.path().join(&name), text).unwrap();
            let mut args = vec!["dockerfile", name.as_str(), "--format", "json"];
            args.extend(target);
            let (_, out, _) = gpulint(d.path(), &args);
            for f in findings(&out) {
                let line = &f["location"]["line"];
                for fix in f["fixes"].as_array().into_iter().flatten() {
                    let Some(edits) = fix["edits"].as_array().filter(|e| !e.is_empty()) else {
                        continue;
                    };
                    let edited = apply_json_edits(text, edits);
                    std::fs::write(d.path().join(&name), &edited).unwrap();
                    let (_, again, _) = gpulint(d.path(), &args);
                    let still: Vec<_> = findings(&again)
                        .into_iter()
                        .filter(|g| g["rule"] == f["rule"] && &g["location"]["line"] == line)
                        .collect();
                    assert!(
                        still.is_empty(),
                        "{} {target:?}: the fix {} leaves {still:?} in\n{edited}",
                        f["rule"],
                        fix["replacement"]
                    );
                    checked += 1;
                }
            }
        }
    }
    // Fixes of GL101, GL102 and GL119 were among them.
    assert!(checked >= 10, "{checked}");
}
