//! GL211: several CUDA toolkits, and the loader or PATH picking another one than
//! /usr/local/cuda.

use super::{first_line, CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse;
use crate::host::parse::versions::toolkit_release;
use crate::host::query::ld_so_conf_dirs;
use crate::host::reader::{normalize, resolve_link, HostCommand, HostReader};
use crate::loader::SearchFrom;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::CudaVersion;

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

/// An installed toolkit: dir, version (version.json / version.txt / the dir name).
#[derive(Debug, Clone)]
pub(crate) struct Toolkit {
    pub dir: String,
    pub version: Option<String>,
    /// `version`, typed.
    pub cuda: Option<CudaVersion>,
    pub evidence: Evidence,
}

pub(crate) fn toolkits(r: &dyn HostReader) -> Vec<Toolkit> {
    let mut out = Vec::new();
    for (name, _) in r.list_dir("/usr/local").unwrap_or_default() {
        let Some(v) = name.strip_prefix("cuda-") else {
            continue;
        };
        let dir = format!("/usr/local/{name}");
        // cuda-13 -> /etc/alternatives/cuda-13 style aliases are not installs.
        if r.read_link(&dir).is_some() {
            continue;
        }
        let (version, ev) = if let Some(j) = r
            .read_string(&format!("{dir}/version.json"))
            .as_deref()
            .and_then(parse::parse_cuda_version_json)
        {
            (
                Some(j.clone()),
                Evidence::file(format!("{dir}/version.json"), format!("cuda {j}")),
            )
        } else if let Some(t) = r
            .read_string(&format!("{dir}/version.txt"))
            .as_deref()
            .and_then(parse::parse_cuda_version_txt)
        {
            (
                Some(t.clone()),
                Evidence::file(format!("{dir}/version.txt"), t),
            )
        } else if v.split('.').all(|p| p.parse::<u32>().is_ok()) {
            (
                Some(v.to_string()),
                Evidence::file(&dir, "installed (version from the directory name)"),
            )
        } else {
            (None, Evidence::file(&dir, "installed, version unknown"))
        };
        out.push(Toolkit {
            dir,
            version,
            cuda: None,
            evidence: ev,
        });
    }
    distribution_toolkits(r, &mut out);
    // Typed once, where the version is read, for the checks that compare releases.
    for t in &mut out {
        t.cuda = t.version.as_deref().and_then(toolkit_release);
    }
    out
}

/// Toolkits distributions install without a version file, the same way the image inventory
/// finds them: Debian/Ubuntu's `nvidia-cuda-toolkit` in /usr/lib/nvidia-cuda-toolkit
/// (versioned by its nvcc's banner), and directories the dpkg database names
/// (`nvidia-cuda-toolkit`, `cuda-toolkit-X-Y`) whose version the tree did not give.
fn distribution_toolkits(r: &dyn HostReader, out: &mut Vec<Toolkit>) {
    use crate::detect::cuda_toolkit::{packaged_toolkits, scan_nvcc_banner};
    const DEBIAN_DIR: &str = "/usr/lib/nvidia-cuda-toolkit";
    // nvcc 13.5 is 35 MB with its banner near 30 MB: read it streamed, never whole.
    const NVCC_MAX_BYTES: u64 = 64 << 20;
    if r.list_dir(DEBIAN_DIR).is_some() {
        let nvcc = format!("{DEBIAN_DIR}/bin/nvcc");
        // Opened without following a final link and without blocking on a FIFO, through the
        // tree-resolved path, like the fatbin scanner's reads; its size is the scan's bound.
        let banner = crate::io_util::open_regular(&r.local_path(&nvcc), u64::MAX)
            .ok()
            .and_then(|f| scan_nvcc_banner(f, NVCC_MAX_BYTES));
        let (version, evidence) = match banner {
            Some(v) => (
                Some(v.version.clone()),
                Evidence::file(&nvcc, format!("Cuda compilation tools {}", v.version)),
            ),
            None => (
                None,
                Evidence::file(DEBIAN_DIR, "installed, version unknown"),
            ),
        };
        out.push(Toolkit {
            dir: DEBIAN_DIR.to_string(),
            version,
            cuda: None,
            evidence,
        });
    }
    let Some(status) = r.read("/var/lib/dpkg/status").ok().flatten() else {
        return;
    };
    let status = crate::detect::dpkg::parse_status(&status);
    for p in packaged_toolkits(&status) {
        let dir = format!("/{}", p.dir);
        match out.iter_mut().find(|t| t.dir == dir) {
            Some(t) if t.version.is_some() => {}
            Some(t) => {
                t.version = Some(p.version.clone());
                t.evidence = Evidence::file(&dir, &p.from);
            }
            // The package is installed but its directory is gone (removed by hand): nothing
            // there to load or run.
            None if !r.exists(&dir) => {}
            None => out.push(Toolkit {
                dir: dir.clone(),
                version: Some(p.version.clone()),
                cuda: None,
                evidence: Evidence::file(&dir, &p.from),
            }),
        }
    }
}

pub(crate) fn nvcc_version(r: &dyn HostReader) -> Option<String> {
    parse::parse_nvcc_version(r.run(HostCommand::NvccVersion).ok_stdout()?)
}

/// `nvcc --version`'s release as printed, and typed.
pub(crate) fn nvcc_release(r: &dyn HostReader) -> Option<(String, Option<CudaVersion>)> {
    let n = nvcc_version(r)?;
    let cuda = toolkit_release(&n);
    Some((n, cuda))
}

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
