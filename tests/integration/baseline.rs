//! `--write-baseline` / `--baseline`: adopting gpulint on a repository with old findings, as
//! a CI job or a pre-commit hook runs it.

use crate::formats::{repo, run_in};
use serde_json::Value;

const UNQUOTED: &str = "RUN pip install numba>=0.57.1\n";
const FROM: &str = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n";

fn findings(stdout: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["location"]["file"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_baseline_hides_old_findings_and_fails_on_new_ones() {
    let r = tempfile::tempdir().unwrap();
    let d = r.path();
    std::fs::create_dir(d.join("app")).unwrap();
    std::fs::write(d.join("Dockerfile"), format!("{FROM}{UNQUOTED}")).unwrap();
    std::fs::write(d.join("app/Dockerfile"), format!("{FROM}{UNQUOTED}")).unwrap();

    // Today's findings recorded: the run succeeds and says so.
    let o = run_in(d, &["lint", "--write-baseline", "baseline.json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stderr
            .contains("recorded 2 findings in the baseline baseline.json"),
        "{o:?}"
    );
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("baseline.json")).unwrap()).unwrap();
    assert_eq!(b["version"], 1);
    let e = &b["entries"][0];
    assert_eq!(
        (e["code"].as_str(), e["path"].as_str()),
        (Some("GL108"), Some("Dockerfile"))
    );
    assert_eq!(e["fingerprint"].as_str().unwrap().len(), 32);

    // Clean against the baseline, also after the line moved; the SARIF fingerprint is the
    // baseline's.
    std::fs::write(d.join("Dockerfile"), format!("{FROM}\n\n{UNQUOTED}")).unwrap();
    let o = run_in(
        d,
        &["lint", "--baseline", "baseline.json", "--format", "json"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(findings(&o.stdout), vec![]);
    let o = run_in(d, &["lint", "--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&o.stdout).unwrap();
    let fps: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["partialFingerprints"]["gpulint/v1"].as_str().unwrap())
        .collect();
    for entry in b["entries"].as_array().unwrap() {
        assert!(
            fps.contains(&entry["fingerprint"].as_str().unwrap()),
            "{fps:?}"
        );
    }

    // A new copy of the same problem is new: one entry hides one finding.
    std::fs::write(d.join("Dockerfile"), format!("{FROM}{UNQUOTED}{UNQUOTED}")).unwrap();
    let o = run_in(
        d,
        &["lint", "--baseline", "baseline.json", "--format", "json"],
    );
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(
        findings(&o.stdout),
        vec![("GL108".into(), "Dockerfile".into())]
    );

    // Fixed in app/: its entry is stale (GL198, a warning: the job passes at --fail-on error).
    std::fs::write(d.join("Dockerfile"), format!("{FROM}{UNQUOTED}")).unwrap();
    std::fs::write(
        d.join("app/Dockerfile"),
        format!("{FROM}RUN pip install 'numba>=0.57.1'\n"),
    )
    .unwrap();
    let o = run_in(
        d,
        &["lint", "--baseline", "baseline.json", "--format", "concise"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.contains("baseline.json:")
            && o.stdout.contains("GL198")
            && o.stdout.contains("GL108 in app/Dockerfile"),
        "{o:?}"
    );
    let o = run_in(
        d,
        &[
            "lint",
            "--baseline",
            "baseline.json",
            "--fail-on",
            "warning",
            "-q",
        ],
    );
    assert_eq!(o.code, 1, "{o:?}");

    // A hook over the changed files only: the other files' entries are not stale.
    let o = run_in(
        d,
        &[
            "dockerfile",
            "Dockerfile",
            "--baseline",
            "baseline.json",
            "--format",
            "json",
        ],
    );
    assert_eq!((o.code, findings(&o.stdout)), (0, vec![]), "{o:?}");

    // A missing or foreign baseline is an input error, not an empty baseline.
    let o = run_in(d, &["lint", "--baseline", "nope.json"]);
    assert_eq!(o.code, 2, "{o:?}");
    let o = run_in(d, &["lint", "--baseline", "Dockerfile"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("not a gpulint baseline"), "{o:?}");
}

#[test]
fn an_image_baseline_records_the_image_findings() {
    let d = tempfile::tempdir().unwrap();
    let b = d.path().join("b.json");
    let b = b.to_str().unwrap();
    let example = repo().join("testdata/images/example.tar");
    let example = example.to_str().unwrap();
    let args = |extra: &[&'static str]| {
        let mut v = vec!["image", example, "--gpu", "H100", "--driver", "535.104.05"];
        v.extend_from_slice(extra);
        v
    };
    let mut w = args(&["--write-baseline"]);
    w.push(b);
    let o = run_in(&repo(), &w);
    assert_eq!(o.code, 0, "{o:?}");
    let mut r = args(&["--format", "json", "--baseline"]);
    r.push(b);
    let o = run_in(&repo(), &r);
    assert_eq!((o.code, findings(&o.stdout)), (0, vec![]), "{o:?}");
    let entry: Value = serde_json::from_str(&std::fs::read_to_string(b).unwrap()).unwrap();
    assert_eq!(
        entry["entries"][0]["target"],
        "H100 (NVIDIA H100 SXM) / driver 535.104.05"
    );
    // Against a T4 only, the H100 entry was not checked: not stale.
    let mut r = vec!["image", example, "--gpu", "T4", "--driver", "535.104.05"];
    r.extend_from_slice(&["--format", "json", "--baseline", b]);
    let o = run_in(&repo(), &r);
    assert_eq!((o.code, findings(&o.stdout)), (0, vec![]), "{o:?}");
}
