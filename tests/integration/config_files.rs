//! Configuration that follows the file (ruff's model) and configuration files that cannot
//! reach outside their repository: each input is checked with its nearest `.gpulint.toml`,
//! paths in a config are relative to its directory, a file a config names must lie in its
//! repository and is never quoted, an unreadable config is an error, rule names work wherever
//! codes do.

use crate::formats::{run_in, Out};
use serde_json::Value;
use std::path::Path;

/// GL103 (driver library copied in) on line 2, GL108 (unquoted `>=`) on line 3: both errors.
const TWO_ERRORS: &str = "FROM ubuntu:22.04\nCOPY libcuda.so.1 /usr/lib/x86_64-linux-gnu/\nRUN pip install numba>=0.57.1\n";

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// "RULE file" per finding of a JSON report.
fn found(r: &Out) -> Vec<String> {
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    let mut out: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["rule"].as_str().unwrap(),
                f["location"]["file"].as_str().unwrap_or("")
            )
        })
        .collect();
    out.sort();
    out
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// `repo/.gpulint.toml` ignoring GL103 applies to `repo/` only, not to `other/` named before
/// it on the same command line (the pre-commit case); a nested config wins for its subtree
/// and is not merged with the outer one.
#[test]
fn each_input_uses_its_nearest_config() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("other/Dockerfile"), TWO_ERRORS);
    write(&p.join("repo/svc/Dockerfile"), TWO_ERRORS);
    write(&p.join("repo/app/Dockerfile"), TWO_ERRORS);
    write(&p.join("repo/.gpulint.toml"), "ignore = [\"GL103\"]\n");
    write(&p.join("repo/app/.gpulint.toml"), "ignore = [\"GL108\"]\n");
    let expected = strs(&[
        "GL103 other/Dockerfile",
        "GL103 repo/app/Dockerfile",
        "GL108 other/Dockerfile",
        "GL108 repo/svc/Dockerfile",
    ]);
    let r = run_in(
        p,
        &[
            "dockerfile",
            "other/Dockerfile",
            "repo/svc/Dockerfile",
            "repo/app/Dockerfile",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(found(&r), expected, "{r:?}");
    // `lint` finds the files itself: each with its nearest config too.
    let r = run_in(p, &["lint", "other", "repo", "--format", "json"]);
    assert_eq!(found(&r), expected, "{r:?}");
    let r = run_in(p, &["lint", "--format", "json"]);
    assert_eq!(found(&r), expected, "{r:?}");
    // `--config FILE` stays one configuration for every input.
    let r = run_in(
        p,
        &[
            "lint",
            "other",
            "repo",
            "--config",
            "repo/.gpulint.toml",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        found(&r),
        strs(&[
            "GL108 other/Dockerfile",
            "GL108 repo/app/Dockerfile",
            "GL108 repo/svc/Dockerfile"
        ]),
        "{r:?}"
    );
}

/// `fail-on` is each file's own: a finding in a tree whose config says `fail-on = "none"`
/// does not fail the run, the same finding in another tree does; `--fail-on` decides for all.
#[test]
fn each_finding_is_judged_by_its_own_configs_fail_on() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("lenient/Dockerfile"), TWO_ERRORS);
    write(&p.join("lenient/.gpulint.toml"), "fail-on = \"none\"\n");
    write(&p.join("strict/Dockerfile"), "FROM ubuntu:22.04\n");
    let r = run_in(
        p,
        &["dockerfile", "strict/Dockerfile", "lenient/Dockerfile"],
    );
    assert_eq!(r.code, 0, "lenient's findings do not fail the run: {r:?}");
    assert!(r.stdout.contains("GL103"), "still reported: {r:?}");
    write(&p.join("strict/Dockerfile"), TWO_ERRORS);
    let r = run_in(
        p,
        &["dockerfile", "lenient/Dockerfile", "strict/Dockerfile"],
    );
    assert_eq!(r.code, 1, "strict's findings fail it: {r:?}");
    let r = run_in(p, &["lint", "--fail-on", "none"]);
    assert_eq!(r.code, 0, "{r:?}");
}

/// `[[ignore]] paths` and `ignore-paths` match relative to the directory of the config that
/// declares them, wherever gpulint runs from.
#[test]
fn config_paths_are_relative_to_the_config() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("repo/deploy/Dockerfile"), TWO_ERRORS);
    write(&p.join("repo/gen/Dockerfile"), TWO_ERRORS);
    write(
        &p.join("repo/.gpulint.toml"),
        "ignore-paths = [\"gen/**\"]\n[[ignore]]\nrule = \"GL103\"\npaths = [\"deploy/**\"]\nreason = \"checked\"\n",
    );
    let repo = p.join("repo");
    let expected_in = |prefix: &str| strs(&[&format!("GL108 {prefix}deploy/Dockerfile")]);
    // Reports name files relative to the repository root (here, with no git work tree, the
    // working directory): from repo/deploy the file is `Dockerfile`.
    for (cwd, args, shown) in [
        (&repo, vec!["lint"], "deploy/Dockerfile"),
        (&repo, vec!["lint", "."], "deploy/Dockerfile"),
        (&p.to_path_buf(), vec!["lint"], "repo/deploy/Dockerfile"),
        (
            &p.to_path_buf(),
            vec!["lint", "repo"],
            "repo/deploy/Dockerfile",
        ),
        (&p.join("repo/deploy"), vec!["lint", ".."], "Dockerfile"),
    ] {
        let mut a = args.clone();
        a.extend(["--format", "json"]);
        let r = run_in(cwd, &a);
        assert_eq!(
            found(&r),
            strs(&[&format!("GL108 {shown}")]),
            "{cwd:?} {args:?}: {r:?}"
        );
    }
    let r = run_in(
        p,
        &["dockerfile", "repo/deploy/Dockerfile", "--format", "json"],
    );
    assert_eq!(found(&r), expected_in("repo/"), "{r:?}");
}

/// A `fleet` outside the config's repository (absolute, `..`, or a link inside pointing
/// out) is an error at the key, and the file is not read: its content never reaches the log.
/// Inside the git work tree, above the config's own directory, it is fine.
#[test]
fn config_fleet_cannot_leave_the_repository() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let secret = "ghp_SECRETTOKEN1234\n";
    write(&p.join("token"), secret);
    write(&p.join("repo/Dockerfile"), "FROM ubuntu:22.04\n");
    let token = p.join("token").to_string_lossy().into_owned();
    #[cfg(unix)]
    std::os::unix::fs::symlink(p.join("token"), p.join("repo/link")).unwrap();
    for fleet in [token.as_str(), "../token", "link", "/proc/self/environ"] {
        write(
            &p.join("repo/.gpulint.toml"),
            &format!("fail-on = \"error\"\nfleet = {fleet:?}\n"),
        );
        let r = run_in(p, &["dockerfile", "repo/Dockerfile"]);
        assert_eq!(r.code, 2, "{fleet}: {r:?}");
        assert!(r.stderr.contains(".gpulint.toml:2:9"), "{fleet}: {r:?}");
        assert!(
            r.stderr.contains("outside the repository"),
            "{fleet}: {r:?}"
        );
        assert!(!r.stderr.contains("SECRETTOKEN"), "{fleet}: {r:?}");
    }
    // A file inside the repository that is not a fleet file: refused, never quoted.
    write(&p.join("repo/creds"), secret);
    write(&p.join("repo/.gpulint.toml"), "fleet = \"creds\"\n");
    let r = run_in(p, &["dockerfile", "repo/Dockerfile"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("not a fleet file"), "{r:?}");
    assert!(!r.stderr.contains("SECRETTOKEN"), "{r:?}");
    // `--fleet` is the user's own choice, unconfined, but still never quoted.
    let r = run_in(p, &["dockerfile", "repo/Dockerfile", "--fleet", &token]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(!r.stderr.contains("SECRETTOKEN"), "{r:?}");
    // Nor is a `--host` profile that is not one (serde quotes the values it rejects).
    write(&p.join("profile.json"), "\"ghp_SECRETTOKEN1234\"\n");
    let r = run_in(
        p,
        &["dockerfile", "repo/Dockerfile", "--host", "profile.json"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("not a host profile"), "{r:?}");
    assert!(!r.stderr.contains("SECRETTOKEN"), "{r:?}");
    // In a git work tree the whole tree is the repository.
    std::fs::create_dir_all(p.join("repo/.git")).unwrap();
    write(
        &p.join("repo/deploy/fleet.toml"),
        "[[pool]]\nname = \"pool-a\"\ndriver = \"535.104.05\"\ngpus = [\"T4\"]\n",
    );
    write(&p.join("repo/svc/Dockerfile"), "FROM ubuntu:22.04\n");
    write(
        &p.join("repo/svc/.gpulint.toml"),
        "fleet = \"../deploy/fleet.toml\"\n",
    );
    let r = run_in(
        p,
        &["dockerfile", "repo/svc/Dockerfile", "--format", "json"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["targets"], serde_json::json!(["pool-a"]), "{v:#}");
}

/// A `.gpulint.toml` that is there but cannot be read (a directory, a FIFO, a dangling
/// link) fails the run instead of being passed over for the defaults.
#[test]
fn an_unreadable_config_is_an_error_not_the_defaults() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("repo/Dockerfile"), TWO_ERRORS);
    // Would make the run pass, were it the one read.
    write(&p.join(".gpulint.toml"), "fail-on = \"none\"\n");
    let cfg = p.join("repo/.gpulint.toml");
    type Make<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Make)> = vec![
        ("directory", Box::new(|| std::fs::create_dir(&cfg).unwrap())),
        #[cfg(unix)]
        (
            "dangling link",
            Box::new(|| std::os::unix::fs::symlink(p.join("nowhere"), &cfg).unwrap()),
        ),
        #[cfg(unix)]
        (
            "FIFO",
            Box::new(|| {
                let ok = std::process::Command::new("mkfifo")
                    .arg(&cfg)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok);
            }),
        ),
    ];
    for (what, make) in cases {
        make();
        for args in [vec!["dockerfile", "repo/Dockerfile"], vec!["lint", "repo"]] {
            let r = run_in(p, &args);
            assert_eq!(r.code, 2, "{what} {args:?}: {r:?}");
            assert!(
                r.stderr.contains("repo/.gpulint.toml"),
                "{what} {args:?}: {r:?}"
            );
        }
        let _ = std::fs::remove_dir(&cfg);
        let _ = std::fs::remove_file(&cfg);
    }
}

/// Rule names work wherever codes do: `--select`, `--ignore`, config lists, `[rules]`,
/// `[[ignore]]`, pragmas; a misspelt one is echoed as written with the nearest name.
#[test]
fn rule_names_work_wherever_codes_do() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("Dockerfile"), TWO_ERRORS);
    let json = |extra: &[&str]| {
        let mut a = vec!["dockerfile", "--format", "json"];
        a.extend_from_slice(extra);
        run_in(p, &a)
    };
    let r = json(&["--select", "driver-in-image"]);
    assert_eq!(found(&r), strs(&["GL103 Dockerfile"]), "{r:?}");
    let r = json(&["--ignore", "unquoted-version-specifier"]);
    assert_eq!(found(&r), strs(&["GL103 Dockerfile"]), "{r:?}");
    for cfg in [
        "ignore = [\"driver-in-image\"]\n",
        "[rules]\ndriver-in-image = \"off\"\n",
        "[[ignore]]\nrule = \"driver-in-image\"\nreason = \"r\"\n",
        "select = [\"unquoted-version-specifier\"]\n",
    ] {
        write(&p.join(".gpulint.toml"), cfg);
        let r = json(&[]);
        assert_eq!(found(&r), strs(&["GL108 Dockerfile"]), "{cfg}: {r:?}");
    }
    std::fs::remove_file(p.join(".gpulint.toml")).unwrap();
    write(
        &p.join("Dockerfile"),
        "FROM ubuntu:22.04\n# gpulint ignore=driver-in-image vendored on purpose\nCOPY libcuda.so.1 /usr/lib/\n",
    );
    let r = json(&[]);
    assert_eq!(found(&r), Vec::<String>::new(), "pragma by name: {r:?}");

    let r = json(&["--select", "driver-in-imag"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("unknown rule \"driver-in-imag\" (did you mean driver-in-image?)"),
        "{r:?}"
    );
    write(
        &p.join(".gpulint.toml"),
        "[rules]\nDriver-In-Imag = \"off\"\n",
    );
    let r = json(&[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("\"Driver-In-Imag\""), "as written: {r:?}");
    let r = run_in(p, &["explain", "no-kernel-imag"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("did you mean no-kernel-image?"), "{r:?}");
}

/// `host --check` takes `--select`, `--extend-select` and `--ignore` (codes or names) like
/// every other checking command.
#[test]
fn host_check_takes_the_selection_flags() {
    let root = crate::formats::repo().join("testdata/host/variants/api-mismatch");
    let root = root.to_string_lossy().into_owned();
    let d = tempfile::tempdir().unwrap();
    let base = [
        "host",
        "--root",
        root.as_str(),
        "--check",
        "--format",
        "json",
    ];
    let run = |extra: &[&str]| run_in(d.path(), &[&base[..], extra].concat());
    let plain = run(&[]);
    assert_eq!(plain.code, 1, "{plain:?}");
    assert!(plain.stdout.contains("GL204"), "{plain:?}");
    for flags in [vec!["--ignore", "GL204"], vec!["--select", "GL201"]] {
        let r = run(&flags);
        assert_eq!(r.code, 0, "{flags:?}: {r:?}");
        assert!(!r.stdout.contains("\"GL204\""), "{flags:?}: {r:?}");
    }
    let r = run(&["--select", "GL2", "--ignore", "GL20x"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("unknown rule \"GL20x\""), "{r:?}");
}

/// `--show-settings FILE` names the configuration that applies and the rule set it makes;
/// the text summary names the configurations used and how many files were checked, and says
/// when there were none.
#[test]
fn show_settings_and_the_summary_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("a/Dockerfile"), TWO_ERRORS);
    write(&p.join("b/Dockerfile"), TWO_ERRORS);
    write(&p.join("b/c/Dockerfile"), TWO_ERRORS);
    write(
        &p.join("b/.gpulint.toml"),
        "fail-on = \"warning\"\n[rules]\nGL103 = \"off\"\nGL108 = \"warning\"\n",
    );
    let r = run_in(p, &["dockerfile", "--show-settings", "b/c/Dockerfile"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("configuration: b/.gpulint.toml"), "{r:?}");
    assert!(
        r.stdout.contains("fail-on: warning (configuration)"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("GL108  unquoted-version-specifier"),
        "{r:?}"
    );
    assert!(r.stdout.contains("warning (configured)"), "{r:?}");
    let disabled = r.stdout.lines().find(|l| l.starts_with("rules disabled:"));
    assert!(disabled.is_some_and(|l| l.contains("GL103")), "{r:?}");
    let r = run_in(p, &["lint", "--show-settings", "a/Dockerfile"]);
    assert!(r.stdout.contains("configuration: defaults"), "{r:?}");

    let r = run_in(p, &["lint"]);
    assert_eq!(r.code, 1, "{r:?}");
    let last = r.stdout.lines().last().unwrap_or_default();
    assert_eq!(
        last, "checked 3 files with defaults, b/.gpulint.toml: 2 errors, 2 warnings, 0 info",
        "{r:?}"
    );
    let r = run_in(p, &["lint", "-q"]);
    assert!(!r.stdout.contains("checked"), "-q: no summary: {r:?}");

    std::fs::create_dir_all(p.join("empty")).unwrap();
    write(&p.join("empty/notes.txt"), "nothing to lint\n");
    let r = run_in(p, &["lint", "empty"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("no files found"),
        "{r:?}"
    );
    let r = run_in(p, &["lint", "empty", "--format", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("no files found"), "{r:?}");
}

/// A config `[[ignore]]` that matched nothing is reported (GL199) only when this run could
/// have used it. Pre-commit passes only the changed files: an entry for `b/**` is not stale
/// because `a/Dockerfile` alone was checked, nor is one without `paths` (it may be meant for
/// any unchecked file). Checking a file under `b/`, or the whole repository, judges them.
#[test]
fn config_ignores_for_files_not_checked_are_not_unused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("a/Dockerfile"), "FROM ubuntu:22.04\n");
    write(&p.join("b/Dockerfile"), "FROM ubuntu:22.04\n");
    // Both entries are stale: b/Dockerfile no longer copies the driver in, nothing pins
    // unquoted. Line 2: the `b/**` entry, line 6: the one without paths.
    write(
        &p.join(".gpulint.toml"),
        "fail-on = \"warning\"\n[[ignore]]\nrule = \"GL103\"\npaths = [\"b/**\"]\nreason = \"b vendors the driver\"\n[[ignore]]\nrule = \"GL108\"\nreason = \"pinned elsewhere\"\n",
    );
    let unused_lines = |cwd: &Path, args: &[&str]| -> (i32, Vec<u64>) {
        let mut a = args.to_vec();
        a.extend(["--format", "json"]);
        let r = run_in(cwd, &a);
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        let mut lines: Vec<u64> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "GL199")
            .map(|f| f["location"]["line"].as_u64().unwrap())
            .collect();
        lines.sort();
        (r.code, lines)
    };
    for args in [
        vec!["dockerfile", "a/Dockerfile"],
        vec!["lint", "a/Dockerfile"],
        vec!["lint", "a"],
    ] {
        assert_eq!(unused_lines(p, &args), (0, vec![]), "{args:?}");
    }
    assert_eq!(
        unused_lines(p, &["dockerfile", "b/Dockerfile"]),
        (1, vec![2]),
        "a file under `b/` was checked: the `b/**` entry could have applied"
    );
    for (cwd, args) in [
        (p.to_path_buf(), vec!["lint", "."]),
        (p.to_path_buf(), vec!["lint"]),
        (p.join("a"), vec!["lint", ".."]),
    ] {
        assert_eq!(
            unused_lines(&cwd, &args),
            (1, vec![2, 6]),
            "{cwd:?} {args:?}"
        );
    }
}
