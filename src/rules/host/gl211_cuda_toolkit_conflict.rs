//! GL211: several CUDA toolkits, and the loader or PATH picking another one than
//! /usr/local/cuda.

use super::{first_line, CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse;
use crate::host::query::ld_so_conf_dirs;
use crate::host::reader::{normalize, resolve_link, HostCommand};
use crate::host::toolkits::{nvcc_version, toolkits};
use crate::loader::SearchFrom;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL211"),
    name: "cuda-toolkit-conflict",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "The loader path or nvcc on PATH belongs to another CUDA toolkit than /usr/local/cuda",
    doc: RuleDoc {
        what: "Lists the CUDA toolkits under /usr/local (cuda-X.Y, version.json), where \
            /usr/local/cuda points, what `nvcc --version` says, and the CUDA library directories \
            in LD_LIBRARY_PATH and /etc/ld.so.conf(.d) in the loader's order.",
        why:
            "When LD_LIBRARY_PATH or an ld.so.conf.d entry puts cuda-11.8/lib64 before the toolkit \
            /usr/local/cuda points to, programs built against one toolkit load another's \
            libcudart / libcublas: \"undefined symbol\", \"CUDA driver version is insufficient\", \
            or silently older code. An nvcc from a different toolkit than the libraries builds \
            for the wrong CUDA.",
        example: "A workstation with /usr/local/cuda -> cuda-12.4 and \
            `/etc/ld.so.conf.d/cuda-11-8.conf` left by an old install: \
            `/etc/ld.so.conf.d/cuda-11-8.conf puts /usr/local/cuda-11.8/lib64 (CUDA 11.8) first, \
            but /usr/local/cuda is CUDA 12.4`.",
        fix:
            "Point /usr/local/cuda at the toolkit you mean (`update-alternatives --config cuda`), \
            drop stale entries from LD_LIBRARY_PATH and /etc/ld.so.conf.d (then `sudo ldconfig`), \
            and put /usr/local/cuda/bin first on PATH.",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
        ],
    },
};

fn same(a: &str, b: &str) -> bool {
    let mm = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    mm(a) == mm(b)
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let tks = toolkits(r);
    let mut evidence: Vec<Evidence> = tks.iter().map(|t| t.evidence.clone()).collect();
    let default_dir = r
        .read_link("/usr/local/cuda")
        .map(|_| resolve_link(r, "/usr/local/cuda"));
    let default_ver = default_dir.as_ref().and_then(|d| {
        evidence.push(Evidence::file("/usr/local/cuda", format!("-> {d}")));
        tks.iter()
            .find(|t| &t.dir == d)
            .and_then(|t| t.version.clone())
            .or_else(|| parse::cuda_dir_version(d).filter(|v| v != "default"))
    });
    let nvcc = nvcc_version(r);
    if let Some(n) = &nvcc {
        evidence.push(Evidence::command(
            HostCommand::NvccVersion.display(),
            first_line(
                r.run(HostCommand::NvccVersion)
                    .ok_stdout()
                    .unwrap_or_default()
                    .lines()
                    .find(|l| l.contains("release"))
                    .unwrap_or_default(),
            ),
        ));
        let _ = n;
    }
    if tks.is_empty() && nvcc.is_none() {
        out.push(
            CheckResult::ok(
                &META,
                "no CUDA toolkit installed (not needed to run containers or pip wheels)",
            )
            .evidence(evidence),
        );
        return;
    }
    let mut problems = Vec::new();
    if let (Some(n), Some(d)) = (&nvcc, &default_ver) {
        if !same(n, d) {
            problems.push(format!(
                "nvcc on PATH is CUDA {n} but /usr/local/cuda is {d}"
            ));
        }
    }
    // The loader's order for a program (no DT_RPATH/DT_RUNPATH of its own): LD_LIBRARY_PATH,
    // then ld.so.conf; each directory named with where it came from.
    let conf = ld_so_conf_dirs(r);
    let conf_dirs: Vec<String> = conf.iter().map(|(d, _)| d.clone()).collect();
    // Each with how it is named and whether that is a file (an ld.so.conf file, or the
    // environment's LD_LIBRARY_PATH).
    let order: Vec<(String, String, bool)> =
        crate::loader::search_order(&cx.loader.request("/", &[], &conf_dirs))
            .into_iter()
            .filter_map(|d| match d.from {
                SearchFrom::LdLibraryPath => Some((d.dir, d.from.to_string(), false)),
                SearchFrom::LdSoConf => {
                    let file = conf.iter().find(|(c, _)| normalize(c) == d.dir)?;
                    Some((d.dir, file.1.clone(), true))
                }
                _ => None,
            })
            .collect();
    let cuda_dirs: Vec<(String, String, bool, String)> = order
        .iter()
        .filter(|(d, _, _)| !d.contains("/compat") && !d.contains("/stubs"))
        .filter_map(|(d, src, is_file)| {
            let v = parse::cuda_dir_version(d)?;
            let v = if v == "default" {
                default_ver.clone()?
            } else {
                v
            };
            Some((d.clone(), src.clone(), *is_file, v))
        })
        .collect();
    for (d, src, is_file, v) in &cuda_dirs {
        evidence.push(if *is_file {
            Evidence::file(src, format!("{d} (CUDA {v})"))
        } else {
            Evidence::note(format!("{src}: {d} (CUDA {v})"))
        });
    }
    let reference = default_ver.clone().or_else(|| nvcc.clone());
    if let (Some((d, src, _, v)), Some(want)) = (cuda_dirs.first(), &reference) {
        if !same(v, want) {
            problems.push(format!(
                "{src} puts {d} (CUDA {v}) first, but /usr/local/cuda is CUDA {want}"
            ));
        }
    }
    if default_dir.is_none() && tks.len() > 1 {
        problems.push(format!(
            "{} toolkits installed and no /usr/local/cuda link",
            tks.len()
        ));
    }
    if !problems.is_empty() {
        out.push(CheckResult::problem(&META, problems.join("; "))
            .evidence(evidence)
            .fix("Point /usr/local/cuda at the intended toolkit, remove stale CUDA dirs from LD_LIBRARY_PATH and /etc/ld.so.conf.d (then `sudo ldconfig`), and put /usr/local/cuda/bin first on PATH."));
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!(
                "CUDA toolkit(s) {}{}",
                tks.iter()
                    .filter_map(|t| t.version.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                default_ver
                    .map(|d| format!("; /usr/local/cuda is {d}"))
                    .unwrap_or_default()
            ),
        )
        .evidence(evidence),
    );
}
