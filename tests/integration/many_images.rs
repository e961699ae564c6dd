//! Issue 31, many images per run: `gpulint image A B …`, `--images-from`, `--shard`,
//! `report merge`, the layers a run's images share read once, and the sweep manifests in
//! examples/sweep linted by gpulint itself.

use crate::common::*;
use crate::formats::{repo, run_in, run_in_env};
use serde_json::Value;
use std::path::Path;

/// `n` docker-archives under `dir`, `app0.tar`…: the same two base layers (the real CUDA
/// fixture library, built for sm_80/sm_90 with PTX 9.0, and a Python tree) and one layer of
/// their own each.
pub fn sibling_images(dir: &Path, n: usize) -> Vec<String> {
    let base = layer_tar(&[
        E::Dir("usr/"),
        E::Dir("usr/lib/"),
        E::Exec("usr/lib/libkern.so", elf_bytes()),
    ]);
    let python = layer_tar(&[
        E::Dir("opt/"),
        E::Dir("opt/app/"),
        file("opt/app/requirements.txt", "numpy==1.26.4\n"),
    ]);
    (0..n)
        .map(|i| {
            let own = layer_tar(&[E::File(
                "opt/app/main.py",
                format!("print({i})\n").into_bytes(),
            )]);
            let img = TestImage {
                layers: vec![
                    (base.clone(), Comp::Plain),
                    (python.clone(), Comp::Plain),
                    (own, Comp::Plain),
                ],
                cfg: Cfg::default(),
            };
            let p = dir.join(format!("app{i}.tar"));
            write_docker_archive(&p, &[(vec![], &img)]);
            path_str(&p)
        })
        .collect()
}

/// A docker-archive with no GPU code at all, under `dir`.
pub fn plain_image(dir: &Path) -> String {
    let img = TestImage {
        layers: vec![(
            layer_tar(&[E::Dir("app/"), file("app/main.py", "print('hi')\n")]),
            Comp::Plain,
        )],
        cfg: Cfg {
            env: vec!["PATH=/usr/local/bin:/usr/bin:/bin"],
            entrypoint: vec![],
            labels: vec![],
            ..Cfg::default()
        },
    };
    let p = dir.join("plain.tar");
    write_docker_archive(&p, &[(vec![], &img)]);
    path_str(&p)
}

fn json(out: &crate::formats::Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// One image's verdicts: (reference, verdict, [(target, verdict)]).
type Verdicts = (String, String, Vec<(String, String)>);

/// The verdict per image and per target.
fn verdicts(v: &Value) -> Vec<Verdicts> {
    v["details"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["reference"].as_str().unwrap().to_string(),
                i["verdict"].as_str().unwrap().to_string(),
                i["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| {
                        (
                            c["target"].as_str().unwrap().to_string(),
                            c["verdict"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

const FLEET: &str = "examples/policy/fleet.toml";

#[test]
fn one_report_with_a_verdict_per_image_and_pool_and_the_worst_exit_code() {
    let d = tmp();
    let plain = plain_image(d.path());
    let fleet = repo().join(FLEET);
    // The same run in each format.
    let run_as = |format: &str| {
        run_in(
            &repo(),
            &[
                "image",
                "testdata/images/example.tar",
                &plain,
                "--fleet",
                &path_str(&fleet),
                "--format",
                format,
            ],
        )
    };
    let r = run_as("json");
    // The example image fails the H100 pool: the run fails, though the other image passes.
    assert_eq!(r.code, 1, "{r:?}");
    let v = json(&r);
    crate::formats::assert_valid_report(&v);
    let pools = |a: &str, b: &str| {
        vec![
            ("inference-t4".to_string(), a.to_string()),
            ("train-h100".to_string(), b.to_string()),
        ]
    };
    assert_eq!(
        verdicts(&v),
        vec![
            (plain.clone(), "ok".into(), pools("ok", "ok")),
            (
                "testdata/images/example.tar".into(),
                "error".into(),
                pools("ok", "error")
            ),
        ]
    );
    // Every finding names its image.
    let f = &v["findings"].as_array().unwrap()[0];
    assert_eq!(
        (
            f["image"].as_str(),
            f["rule"].as_str(),
            f["target"].as_str()
        ),
        (
            Some("testdata/images/example.tar"),
            Some("GL001"),
            Some("train-h100")
        )
    );

    // Text: each image's findings, then the matrix image × pool.
    let r = run_as("text");
    assert_eq!(r.code, 1, "{r:?}");
    let table: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("image "))
        .filter(|l| l.contains("  "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        table.contains(&vec!["testdata/images/example.tar", "error", "ok", "error"]),
        "{}",
        r.stdout
    );

    // SARIF: one run, each result located in its image, valid against the schema.
    let r = run_as("sarif");
    assert_eq!(r.code, 1, "{r:?}");
    let sarif = json(&r);
    crate::formats::assert_valid_sarif(&sarif);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif}");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "testdata/images/example.tar"
    );
    assert_eq!(
        sarif["runs"][0]["properties"]["images"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// The compute capabilities of a torch-syntax architecture list (`7.5;9.0+PTX`).
fn list_ccs(list: &str) -> Vec<String> {
    list.split(';')
        .map(|e| e.trim_end_matches("+PTX").to_string())
        .collect()
}

#[test]
fn a_failing_fleet_report_closes_with_what_would_make_it_work() {
    let d = tmp();
    let plain = plain_image(d.path());
    let fleet = path_str(&repo().join(FLEET));
    let args = |format: &str| {
        run_in(
            &repo(),
            &[
                "image",
                "testdata/images/example.tar",
                &plain,
                "--fleet",
                &fleet,
                "--format",
                format,
            ],
        )
    };
    let r = args("json");
    assert_eq!(r.code, 1, "{r:?}");
    let v = json(&r);
    crate::formats::assert_valid_report(&v);
    let remedies = &v["details"]["remedies"];
    // Only the H100 pool fails, and only the example image (its extension has SASS sm_75).
    let pools = remedies["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1, "{remedies}");
    assert_eq!(pools[0]["pool"], "train-h100");
    assert_eq!(
        pools[0]["images"],
        serde_json::json!(["testdata/images/example.tar"])
    );
    let pool_fix = &pools[0]["fix"];
    assert_eq!(pool_fix["kind"], "arch-list");
    assert!(list_ccs(pool_fix["replacement"].as_str().unwrap()).contains(&"9.0".to_string()));
    // The image line: one list covering the GPUs of both pools (T4 7.5, H100 9.0), so the
    // rebuild does not trade the T4 pool for the H100 one.
    let images = remedies["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{remedies}");
    assert_eq!(images[0]["image"], "testdata/images/example.tar");
    let list = list_ccs(images[0]["fix"]["replacement"].as_str().unwrap());
    for cc in ["7.5", "9.0"] {
        assert!(list.contains(&cc.to_string()), "{list:?}");
    }
    assert!(images[0]["summary"]
        .as_str()
        .unwrap()
        .ends_with("runs on all 2 pools"));

    let r = args("text");
    let block: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| *l != "What would make it work")
        .collect();
    assert_eq!(block.len(), 3, "{}", r.stdout);
    assert!(block[1].starts_with("  to make every failing image run on train-h100 (1 image): "));
    assert!(block[2].starts_with("  to make testdata/images/example.tar run on every pool: "));

    // Nothing fails: no block, no `remedies`.
    let clean = run_in(
        &repo(),
        &[
            "image", &plain, &plain, "--fleet", &fleet, "--format", "json",
        ],
    );
    assert_eq!(clean.code, 0, "{clean:?}");
    assert!(json(&clean)["details"].get("remedies").is_none());
}

#[test]
fn a_single_image_fleet_report_closes_with_the_same_remedies() {
    let d = tmp();
    let plain = plain_image(d.path());
    let fleet = path_str(&repo().join(FLEET));
    let one = |image: &str, format: &str| {
        run_in(
            &repo(),
            &["image", image, "--fleet", &fleet, "--format", format],
        )
    };
    let r = one("testdata/images/example.tar", "json");
    assert_eq!(r.code, 1, "{r:?}");
    let v = json(&r);
    crate::formats::assert_valid_report(&v);
    let remedies = &v["details"]["remedies"];
    // What the run over many images says of this image, computed the same way.
    let many = run_in(
        &repo(),
        &[
            "image",
            "testdata/images/example.tar",
            &plain,
            "--fleet",
            &fleet,
            "--format",
            "json",
        ],
    );
    assert_eq!(*remedies, json(&many)["details"]["remedies"], "{r:?}");
    let pools = remedies["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1, "{remedies}");
    assert_eq!(pools[0]["pool"], "train-h100");
    assert_eq!(pools[0]["fix"]["change"]["type"], "arch-list");
    let image_fix = &remedies["images"][0]["fix"];
    assert_eq!(image_fix["change"]["syntax"], "torch");
    let list = list_ccs(image_fix["change"]["list"].as_str().unwrap());
    for cc in ["7.5", "9.0"] {
        assert!(list.contains(&cc.to_string()), "{list:?}");
    }

    // Text: the block before the counts, speaking of "it".
    let r = one("testdata/images/example.tar", "text");
    let block: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| *l != "What would make it work")
        .collect();
    assert!(block.len() >= 3, "{}", r.stdout);
    assert!(
        block[1].starts_with("  to make it run on train-h100: rebuild the CUDA code for "),
        "{}",
        r.stdout
    );
    assert!(
        block[2].starts_with("  to make it run on every pool: rebuild its CUDA code for "),
        "{}",
        r.stdout
    );
    // SARIF: in the run's property bag.
    let r = one("testdata/images/example.tar", "sarif");
    let sarif: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(sarif["runs"][0]["properties"]["remedies"], *remedies);

    // Nothing fails: no block, no `remedies`.
    let clean = one(&plain, "json");
    assert_eq!(clean.code, 0, "{clean:?}");
    assert!(json(&clean)["details"].get("remedies").is_none());
    assert!(!one(&plain, "text")
        .stdout
        .contains("What would make it work"));
}

#[test]
fn an_unreadable_image_is_gl000_for_it_and_the_others_are_still_judged() {
    let d = tmp();
    let plain = plain_image(d.path());
    let missing = path_str(&d.path().join("missing.tar"));
    let fleet = path_str(&repo().join(FLEET));
    let args = |extra: &[&str]| {
        let mut a = vec![
            "image",
            "testdata/images/example.tar",
            missing.as_str(),
            plain.as_str(),
            "--fleet",
            fleet.as_str(),
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run_in(&repo(), &a)
    };
    let r = run(&[]);
    // Fail closed: no verdict for one image is exit 2, the report still written.
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("missing.tar"), "{}", r.stderr);
    let v = json(&r);
    let got = verdicts(&v);
    assert_eq!(got.len(), 3, "{got:?}");
    let missing_row = got.iter().find(|(r, ..)| *r == missing).unwrap();
    assert_eq!(missing_row.1, "unknown");
    assert!(
        missing_row.2.iter().all(|(_, c)| c == "unknown"),
        "never ok"
    );
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "GL000" && f["image"] == missing.as_str()));
    let plain_row = got.iter().find(|(r, ..)| *r == plain).unwrap();
    assert_eq!(plain_row.1, "ok", "the rest are scanned");
    // Best effort: the exit code is the findings' (the example image fails a pool).
    assert_eq!(run(&["--allow-partial"]).code, 1);
    assert_eq!(run(&["--allow-partial", "--fail-on", "none"]).code, 0);
}

#[test]
fn layers_the_images_share_are_read_once_per_run() {
    let d = tmp();
    let images = sibling_images(d.path(), 6);
    let mut args = vec![
        "image",
        "--no-cache",
        "--no-local-host",
        "--jobs",
        "3",
        "--stats",
        "--format",
        "json",
    ];
    args.extend(images.iter().map(String::as_str));
    let r = run_in(d.path(), &args);
    assert_eq!(r.code, 0, "{r:?}");
    let stats = r
        .stderr
        .lines()
        .find(|l| l.starts_with("images "))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    // 2 base layers once, 6 own layers: 8 walks for 18 layers, even with no disk cache and
    // 3 images at a time.
    assert!(
        stats.contains("images 6  layers: walked 8, from the cache 0, shared in the run 10"),
        "{stats}"
    );
    assert_eq!(verdicts(&json(&r)).len(), 6);
}

#[test]
fn shard_count_one_and_n_give_the_same_merged_report() {
    let d = tmp();
    let mut list = sibling_images(d.path(), 5);
    // The same image twice (two references, one digest), a repeat, an unreadable one.
    list.push(format!("docker-archive:{}", list[0]));
    list.push(list[1].clone());
    list.push(path_str(&d.path().join("missing.tar")));
    list.push(
        repo()
            .join("testdata/images/example.tar")
            .display()
            .to_string(),
    );
    let list_file = d.path().join("images.txt");
    std::fs::write(&list_file, format!("# the sweep\n\n{}\n", list.join("\n"))).unwrap();
    let fleet = path_str(&repo().join(FLEET));
    let shard_report = |shard: &str, out: &str| {
        let out = path_str(&d.path().join(out));
        let r = run_in(
            d.path(),
            &[
                "image",
                "--images-from",
                &path_str(&list_file),
                "--shard",
                shard,
                "--fleet",
                &fleet,
                "--allow-partial",
                "--fail-on",
                "none",
                "--format",
                "json",
                "-o",
                &out,
            ],
        );
        assert_eq!(r.code, 0, "{shard}: {r:?}");
        out
    };
    let merge = |parts: &[String], format: &str| {
        let mut a = vec!["report", "merge", "--format", format];
        a.extend(parts.iter().map(String::as_str));
        run_in(d.path(), &a)
    };
    let one = shard_report("0/1", "one.json");
    let merged_one = merge(std::slice::from_ref(&one), "json");
    // Exit 2: an image without a verdict (fail closed), the merged report written anyway.
    assert_eq!(merged_one.code, 2, "{merged_one:?}");
    // A single run's report merges to itself.
    assert_eq!(merged_one.stdout, std::fs::read_to_string(&one).unwrap());
    for n in [2, 3, 4] {
        let parts: Vec<String> = (0..n)
            .map(|i| shard_report(&format!("{i}/{n}"), &format!("s{i}-of-{n}.json")))
            .collect();
        let merged = merge(&parts, "json");
        assert_eq!(merged.code, 2, "{merged:?}");
        assert_eq!(merged.stdout, merged_one.stdout, "{n} shards");
        // Another format from the same merge: the same SARIF as from the single run.
        assert_eq!(
            merge(&parts, "sarif").stdout,
            merge(std::slice::from_ref(&one), "sarif").stdout
        );
    }
    let v: Value = serde_json::from_str(&merged_one.stdout).unwrap();
    crate::formats::assert_valid_report(&v);
    let images = v["details"]["images"].as_array().unwrap();
    // 5 siblings + example + missing; app0 once, with its other reference as an alias.
    assert_eq!(images.len(), 7, "{v}");
    let app0 = images
        .iter()
        .find(|i| i["reference"] == list[0].as_str())
        .unwrap();
    assert_eq!(app0["aliases"], serde_json::json!([list[5]]));
    // A share's list index comes from JOB_COMPLETION_INDEX with --shard-count.
    let r = run_in_env(
        d.path(),
        &[
            "image",
            "--images-from",
            &path_str(&list_file),
            "--shard-count",
            "3",
            "--fleet",
            &fleet,
            "--allow-partial",
            "--fail-on",
            "none",
            "--format",
            "json",
        ],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let explicit = std::fs::read_to_string(shard_report("1/3", "again.json")).unwrap();
    assert_eq!(r.stdout, explicit);
    let r = run_in(
        d.path(),
        &[
            "image",
            "--images-from",
            &path_str(&list_file),
            "--shard-count",
            "3",
        ],
    );
    assert_eq!(r.code, 2, "no JOB_COMPLETION_INDEX: {r:?}");
    // Shares of runs against other fleets do not merge.
    let other = d.path().join("fleet.toml");
    std::fs::write(
        &other,
        "[[pool]]\nname = \"x\"\ndriver = \"550.54.15\"\ngpus = [\"T4\"]\n",
    )
    .unwrap();
    let r = run_in(
        d.path(),
        &[
            "image",
            &list[0],
            &list[1],
            "--fleet",
            &path_str(&other),
            "--fail-on",
            "none",
            "--format",
            "json",
            "-o",
            "x.json",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let r = merge(&[one, "x.json".into()], "json");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("other targets"), "{}", r.stderr);
}

/// The Indexed Job and merge step in examples/sweep: clean under gpulint's own
/// configuration rules, and their shard count, arguments and files agree.
#[test]
fn the_sweep_manifests_lint_clean_and_agree() {
    let r = run_in(
        &repo(),
        &[
            "k8s",
            "examples/sweep/sweep-job.yaml",
            "examples/sweep/merge-job.yaml",
            "--no-local-host",
            "--fail-on",
            "info",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("0 errors, 0 warnings, 0 info"),
        "{}",
        r.stdout
    );
    let docs = |f: &str| -> Vec<yaml_serde::Value> {
        let text = std::fs::read_to_string(repo().join(f)).unwrap();
        yaml_serde::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    };
    let sweep = docs("examples/sweep/sweep-job.yaml");
    let job = sweep.iter().find(|d| d["kind"] == "Job").unwrap();
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let n = job["spec"]["completions"].as_u64().unwrap();
    let args: Vec<&str> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.contains(&format!("--shard-count={n}").as_str()),
        "{args:?}"
    );
    assert!(
        args.contains(&"--output-file=/reports/shard-$(JOB_COMPLETION_INDEX).json"),
        "{args:?}"
    );
    let merge = docs("examples/sweep/merge-job.yaml");
    let margs: Vec<&str> = merge[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let shards: Vec<String> = (0..n).map(|i| format!("/reports/shard-{i}.json")).collect();
    for s in &shards {
        assert!(margs.contains(&s.as_str()), "merge reads {s}: {margs:?}");
    }
    // The list the ConfigMap is made from parses as --images-from reads it.
    let list = std::fs::read_to_string(repo().join("examples/sweep/images.txt")).unwrap();
    let refs = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert!(refs >= 2, "{list}");

    // The manifests' own arguments, run here: the volumes become directories, the pod's
    // JOB_COMPLETION_INDEX each index in turn, the images local archives; the merged report is
    // the report of one run over the whole list.
    let d = tmp();
    let images = sibling_images(d.path(), 5);
    std::fs::write(d.path().join("images.txt"), images.join("\n")).unwrap();
    std::fs::copy(repo().join(FLEET), d.path().join("fleet.toml")).unwrap();
    std::fs::create_dir(d.path().join("reports")).unwrap();
    let here = |a: &str| {
        a.replace("/sweep/", &format!("{}/", d.path().display()))
            .replace("/cache", &path_str(&d.path().join("cache")))
            .replace("/reports/", &format!("{}/reports/", d.path().display()))
    };
    let key = (
        "GPULINT_CACHE_KEY",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    );
    for i in 0..n {
        let a: Vec<String> = args
            .iter()
            .map(|a| here(&a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string())))
            .collect();
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let index = i.to_string();
        let r = run_in_env(d.path(), &a, &[key, ("JOB_COMPLETION_INDEX", &index)]);
        assert_eq!(r.code, 0, "share {i}: {r:?}");
    }
    let a: Vec<String> = margs.iter().map(|a| here(a)).collect();
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let merged = run_in(d.path(), &a);
    assert_eq!(merged.code, 1, "the siblings fail the T4 pool: {merged:?}");
    let mut whole = vec!["image", "--fleet", "fleet.toml", "--format", "json"];
    whole.extend(images.iter().map(String::as_str));
    let r = run_in(d.path(), &whole);
    assert_eq!(
        std::fs::read_to_string(d.path().join("reports/sweep.json")).unwrap(),
        r.stdout
    );
}
