//! `--fix`, `--diff` and `--unsafe-fixes` through the binary: what is written, what is
//! printed, what remains, and that every fix that is an edit removes its finding.

use std::path::{Path, PathBuf};
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

/// `line` (1-based) of `old` after `edits` (JSON) made it new: moved by the lines edits above
/// it added or removed.
fn moved_line(old: &str, edits: &[serde_json::Value], line: u64) -> u64 {
    let start_of_line: usize = old
        .split_inclusive('\n')
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum();
    let mut delta: i64 = 0;
    for e in edits {
        let (s, end) = (
            e["start"].as_u64().unwrap() as usize,
            e["end"].as_u64().unwrap() as usize,
        );
        if s < start_of_line {
            delta += e["new_text"].as_str().unwrap().matches('\n').count() as i64
                - old[s..end].matches('\n').count() as i64;
        }
    }
    (line as i64 + delta) as u64
}

/// Copy the files of one rule-fixture folder (with any build context below it) into `to`.
fn copy_folder(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_folder(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The rule fixtures (`testdata/rules/GL1*/*`, see its README) with the command line each
/// is linted with, JSON report.
fn rule_fixtures() -> Vec<(PathBuf, Vec<String>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/rules");
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with("GL1"))
        .collect();
    dirs.sort();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_str().unwrap().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            let mut args: Vec<String> = super::rule_snapshots::command_for(&name)
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.push(name);
            args.extend(super::rule_snapshots::fixture_args(&text));
            args.extend(["--format", "json"].map(String::from));
            out.push((f, args));
        }
    }
    out
}

/// "A fix that does not remove its finding is a test failure", over every rule fixture: each
/// fix that carries edits (safe or unsafe), applied alone, leaves a file that still parses
/// (no GL100, no unreadable input) and no finding of its rule where it was; then `--fix`
/// (and `--fix --unsafe-fixes`) through the binary removes every finding whose fix of that
/// kind it applied, and the re-lint it reports parses.
#[test]
fn every_fixture_fix_removes_its_finding_and_leaves_the_file_parseable() {
    let mut checked = 0;
    let mut rules_fixed: std::collections::BTreeSet<String> = Default::default();
    for (fixture, args) in rule_fixtures() {
        let name = fixture.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&fixture).unwrap();
        let d = tempfile::tempdir().unwrap();
        copy_folder(fixture.parent().unwrap(), d.path());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, out, _) = gpulint(d.path(), &args);
        let before = findings(&out);
        let mut any = [false, false];
        for f in &before {
            let rule = f["rule"].as_str().unwrap();
            let line = f["location"]["line"].as_u64().unwrap_or(0);
            for fix in f["fixes"].as_array().into_iter().flatten() {
                let Some(edits) = fix["edits"].as_array().filter(|e| !e.is_empty()) else {
                    continue;
                };
                let safe = fix["applicability"] == "safe";
                assert!(safe || fix["applicability"] == "unsafe", "{name}: {fix}");
                any[usize::from(!safe)] = true;
                let edited = apply_json_edits(&text, edits);
                std::fs::write(d.path().join(&name), &edited).unwrap();
                let (code, again, err) = gpulint(d.path(), &args);
                let after = findings(&again);
                assert!(
                    code != 2 && !after.iter().any(|g| g["rule"] == "GL100"),
                    "{name}: the fix {} leaves a file that does not parse:\n{edited}\n{again}{err}",
                    fix["replacement"]
                );
                let at = moved_line(&text, edits, line);
                let still: Vec<_> = after
                    .iter()
                    .filter(|g| g["rule"] == rule && g["location"]["line"].as_u64() == Some(at))
                    .collect();
                assert!(
                    still.is_empty(),
                    "{name}: the {rule} fix {} leaves {still:?} in\n{edited}",
                    fix["replacement"]
                );
                rules_fixed.insert(rule.to_string());
                checked += 1;
                std::fs::write(d.path().join(&name), &text).unwrap();
            }
        }
        // The binary's own --fix: what it applies is gone from its re-lint.
        for (unsafe_too, has) in [(false, any[0]), (true, any[0] || any[1])] {
            if !has {
                continue;
            }
            std::fs::write(d.path().join(&name), &text).unwrap();
            let mut fix_args = args.clone();
            fix_args.push("--fix");
            if unsafe_too {
                fix_args.push("--unsafe-fixes");
            }
            let (code, out, err) = gpulint(d.path(), &fix_args);
            let fixed = std::fs::read_to_string(d.path().join(&name)).unwrap();
            assert_ne!(fixed, text, "{name}: --fix changed nothing\n{err}");
            assert!(err.contains("applied "), "{err}");
            let after = findings(&out);
            assert!(
                code != 2 && !after.iter().any(|g| g["rule"] == "GL100"),
                "{name}: --fix left a file that does not parse:\n{fixed}\n{out}{err}"
            );
            for f in &before {
                let allowed = f["fixes"].as_array().into_iter().flatten().any(|x| {
                    x["edits"].as_array().is_some_and(|e| !e.is_empty())
                        && (x["applicability"] == "safe"
                            || (unsafe_too && x["applicability"] == "unsafe"))
                });
                if !allowed {
                    continue;
                }
                let rule = &f["rule"];
                let left = after.iter().filter(|g| &g["rule"] == rule).count();
                let had = before.iter().filter(|g| &g["rule"] == rule).count();
                assert!(
                    left < had,
                    "{name}: --fix{} left every {rule} finding:\n{fixed}\n{out}",
                    if unsafe_too { " --unsafe-fixes" } else { "" }
                );
            }
        }
    }
    // The run-configuration rules and the Dockerfile torch fixes were all among them.
    for rule in ["GL102", "GL110", "GL114", "GL116", "GL119"] {
        assert!(
            rules_fixed.contains(rule),
            "no fixture fix of {rule}: {rules_fixed:?}"
        );
    }
    assert!(checked >= 10, "{checked}");
}

/// A compose file fixed in place: the shared-memory fix is safe, the GPU request is not;
/// comments, quoting and the other services are kept byte for byte.
#[test]
fn compose_fix_adds_shm_size_safely_and_the_gpu_request_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let text = "# training stack\nservices:\n  train:   # the trainer\n    image: \"nvcr.io/nvidia/pytorch:24.04-py3\"\n    command: torchrun --nproc-per-node 2 train.py\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n  eval:\n    image: nvcr.io/nvidia/pytorch:24.05-py3\n    command: python eval.py --device cuda\n    shm_size: 2gb\n";
    std::fs::write(d.path().join("compose.yaml"), text).unwrap();
    let args = ["compose", "-f", "compose.yaml", "--format", "json", "--fix"];
    let (_, out, err) = gpulint(d.path(), &args);
    let fixed = std::fs::read_to_string(d.path().join("compose.yaml")).unwrap();
    assert_eq!(
        fixed,
        text.replace(
            "              capabilities: [gpu]\n  eval:",
            "              capabilities: [gpu]\n    shm_size: 8gb\n  eval:"
        ),
        "{err}"
    );
    let left = rules(&out);
    assert!(!left.contains(&"GL114".to_string()), "{left:?}");
    // `eval` still has no GPU: its fix is unsafe.
    assert!(left.contains(&"GL110".to_string()), "{left:?}");
    let mut unsafe_args = args.to_vec();
    unsafe_args.push("--unsafe-fixes");
    let (code, out, err) = gpulint(d.path(), &unsafe_args);
    let fixed2 = std::fs::read_to_string(d.path().join("compose.yaml")).unwrap();
    assert!(!rules(&out).contains(&"GL110".to_string()), "{out}\n{err}");
    assert!(
        fixed2.ends_with("    shm_size: 2gb\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n"),
        "{fixed2}"
    );
    assert_eq!(code, 0, "{out}\n{err}");
}

/// `--diff` on a manifest and a script: the edits as a unified diff, nothing written.
#[test]
fn diff_shows_run_configuration_edits_of_manifests_and_scripts() {
    let d = tempfile::tempdir().unwrap();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nvcr.io/nvidia/pytorch:24.04-py3\n    resources:\n      requests:\n        nvidia.com/gpu: 1\n";
    std::fs::write(d.path().join("pod.yaml"), pod).unwrap();
    let (_, out, err) = gpulint(d.path(), &["k8s", "pod.yaml", "--diff"]);
    assert_eq!(
        out,
        "--- a/pod.yaml\n+++ b/pod.yaml\n@@ -9,3 +9,5 @@\n     resources:\n       requests:\n         nvidia.com/gpu: 1\n+      limits:\n+        nvidia.com/gpu: 1\n",
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("pod.yaml")).unwrap(),
        pod
    );
    let sh = "#!/bin/sh\nset -e\nnvidia-docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n";
    std::fs::write(d.path().join("run.sh"), sh).unwrap();
    let (_, out, _) = gpulint(d.path(), &["run", "--file", "run.sh", "--diff"]);
    assert_eq!(
        out,
        "--- a/run.sh\n+++ b/run.sh\n@@ -1,3 +1,3 @@\n #!/bin/sh\n set -e\n-nvidia-docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n+docker run --gpus all --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n"
    );
}

/// A README's `docker run` example is fixed in its code block; the prose (which quotes the
/// old flag, and has non-ASCII text that shifts byte offsets) is kept byte for byte.
#[test]
fn markdown_fix_edits_the_code_block_and_keeps_the_prose() {
    let d = tempfile::tempdir().unwrap();
    let md = "# Démarrage rapide\n\nLancez-le (l'ancien `--runtime=nvidia` marchait aussi) :\n\n```bash\ndocker run --runtime=nvidia --rm \\\n  nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n```\n\nFin — voilà.\n";
    std::fs::write(d.path().join("README.md"), md).unwrap();
    let (code, out, err) = gpulint(
        d.path(),
        &["run", "--file", "README.md", "--format", "json", "--fix"],
    );
    let fixed = std::fs::read_to_string(d.path().join("README.md")).unwrap();
    assert_eq!(
        fixed,
        md.replace(
            "```bash\ndocker run --runtime=nvidia --rm",
            "```bash\ndocker run --gpus all --rm"
        ),
        "{out}\n{err}"
    );
    assert!(err.contains("applied 1 fix to 1 file"), "{err}");
    assert!(!rules(&out).contains(&"GL116".to_string()), "{out}");
    assert_eq!(code, 0, "{out}\n{err}");
}
