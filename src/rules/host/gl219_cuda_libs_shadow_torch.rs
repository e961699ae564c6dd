//! GL219: an older CUDA library on LD_LIBRARY_PATH (a toolkit's lib64, a conda environment's
//! lib) shadows the one torch's pip wheels bring.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::versions::{cuda_dir_release, cuda_lib_file_release};
use crate::host::python::{find_torch, TorchInstall};
use crate::host::query::{ld_so_conf_dirs, LoaderSetting};
use crate::host::reader::{resolve_link, HostFs, HostReader};
use crate::inventory::libs::{classify_stem, parse_so_name, LibKind};
use crate::loader::{self, SearchDir, SearchFrom};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::CudaVersion;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL219"),
    name: "cuda-libs-shadow-torch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "An older CUDA library on LD_LIBRARY_PATH shadows the one torch's wheels bring",
    doc: RuleDoc {
        what: "For each CUDA build of torch, lists the CUDA libraries its wheels install \
            (site-packages/nvidia/*/lib, torch/lib) by soname, and looks for the same soname in \
            every LD_LIBRARY_PATH directory (a toolkit's lib64, a conda environment's lib). The \
            copy's CUDA version comes from its real file name (libnvJitLink.so.12.1.105) or its \
            toolkit directory (cuda-12.1). The loader model is the image rules' (ld.so(8)): \
            LD_LIBRARY_PATH is searched before the wheels' DT_RUNPATH.",
        why: "The wheels' libraries are found through DT_RUNPATH ($ORIGIN/../../nvidia/…/lib), \
            which the loader searches after LD_LIBRARY_PATH. A directory put there by the guides' \
            own advice (`export LD_LIBRARY_PATH=/usr/local/cuda/lib64`) or by `conda activate` \
            hands torch an older library of the same soname, and `import torch` fails with \
            `undefined symbol: __nvJitLinkAddData_12_4, version libnvJitLink.so.12` (cuSPARSE \
            from the cu124 wheels asking a CUDA 12.1 libnvJitLink for a 12.4 symbol).",
        example: "torch 2.6.0+cu124 with LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64: \
            `LD_LIBRARY_PATH puts /usr/local/cuda-12.1/lib64 first: its libnvJitLink.so.12 is \
            CUDA 12.1, older than torch's CUDA 12.4`.",
        fix:
            "Drop the directory from LD_LIBRARY_PATH for Python/torch (the wheels bring their own \
            CUDA libraries), or install a toolkit / conda CUDA packages at least as new as \
            torch's CUDA.",
        sources: &[
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
            "https://github.com/pytorch/pytorch/issues/111469",
        ],
    },
};

/// The CUDA library sonames (`libnvJitLink.so.12`) in a directory, with the file ld.so would
/// open.
fn cuda_sonames(r: &dyn HostReader, dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, _) in r.list_dir(dir).unwrap_or_default() {
        let Some(so) = parse_so_name(&name) else {
            continue;
        };
        // A soname has exactly one version component (libcublas.so.12).
        if so.suffix_parts() != 1 || !matches!(classify_stem(&so), Some(LibKind::Cuda(_))) {
            continue;
        }
        out.push((name.clone(), format!("{dir}/{name}")));
    }
    out
}

/// CUDA major.minor of a library file: its real file name, else its toolkit directory.
fn lib_cuda_version(r: &dyn HostReader, path: &str) -> Option<(CudaVersion, String)> {
    let real = resolve_link(r, path);
    let file = real.rsplit('/').next().unwrap_or_default();
    if let Some(v) = cuda_lib_file_release(file) {
        return Some((v, format!("file {real}")));
    }
    let v = cuda_dir_release(&real)?;
    Some((v, format!("toolkit directory of {real}")))
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let ld = cx.loader.ld_library_path.clone().unwrap_or_default();
    let dirs: Vec<&str> = ld.split(':').filter(|d| d.starts_with('/')).collect();
    let conf_dirs: Vec<String> = ld_so_conf_dirs(r).into_iter().map(|(d, _)| d).collect();
    let installs: Vec<_> = find_torch(r, &cx.options.pythons)
        .into_iter()
        .filter(|t| t.cuda.is_some())
        .collect();
    if installs.is_empty() {
        out.push(CheckResult::ok(&META, "no CUDA build of torch found"));
        return;
    }
    if dirs.is_empty() {
        out.push(CheckResult::ok(
            &META,
            "LD_LIBRARY_PATH is empty: torch loads its wheels' CUDA libraries",
        ));
        return;
    }
    for t in &installs {
        let Some(Shadowing {
            cuda: tc,
            evidence: found,
            problems,
        }) = shadowing(r, &cx.loader, t, &conf_dirs)
        else {
            continue;
        };
        let label = format!("torch {} ({})", t.version, t.site_packages);
        let mut evidence = vec![Evidence::env(format!("LD_LIBRARY_PATH={ld}"))];
        evidence.extend(found);
        if problems.is_empty() {
            out.push(
                CheckResult::ok(
                    &META,
                    format!(
                        "{label}: no older CUDA library on LD_LIBRARY_PATH shadows its wheels'"
                    ),
                )
                .evidence(evidence),
            );
        } else {
            out.push(
                CheckResult::problem(&META, format!("{label}: {}", problems.join("; ")))
                    .evidence(evidence)
                    .fix(format!(
                        "Remove {} from LD_LIBRARY_PATH when running torch (its pip wheels bring CUDA {tc} libraries), or install CUDA libraries at least as new as {tc} there.",
                        shadowing_dirs(&dirs, &problems).join(", ")
                    )),
            );
        }
    }
}

/// The LD_LIBRARY_PATH directories `problems` name (`puts DIR `), in LD_LIBRARY_PATH order.
pub(crate) fn shadowing_dirs<'a>(dirs: &[&'a str], problems: &[String]) -> Vec<&'a str> {
    dirs.iter()
        .filter(|d| problems.iter().any(|p| p.contains(&format!("puts {d} "))))
        .copied()
        .collect()
}

/// What a loader setting's LD_LIBRARY_PATH does to one CUDA build of torch: for each CUDA
/// soname its wheels bring, where the loader really finds it.
pub(crate) struct Shadowing {
    /// torch's CUDA `major.minor`.
    pub cuda: CudaVersion,
    /// Each copy found first on LD_LIBRARY_PATH, with its CUDA version.
    pub evidence: Vec<Evidence>,
    /// Each older copy that is loaded instead of the wheel's, as a message part.
    pub problems: Vec<String>,
}

/// [`Shadowing`] of torch install `t` under `loader` (its LD_LIBRARY_PATH and platform); None
/// when torch's CUDA version is unknown.
pub(crate) fn shadowing(
    r: &dyn HostReader,
    loader: &LoaderSetting,
    t: &TorchInstall,
    conf_dirs: &[String],
) -> Option<Shadowing> {
    let tc = t.cuda_version?;
    let tc = CudaVersion::new(tc.major, tc.minor);
    // The wheels' libraries: site-packages/nvidia/*/lib (and nvidia/cuXY/lib), torch/lib.
    let mut wheel_dirs = vec![format!("{}/torch/lib", t.site_packages)];
    let nv = format!("{}/nvidia", t.site_packages);
    for (pkg, _) in r.list_dir(&nv).unwrap_or_default() {
        wheel_dirs.push(format!("{nv}/{pkg}/lib"));
    }
    let mut wheel: Vec<(String, String)> =
        wheel_dirs.iter().flat_map(|d| cuda_sonames(r, d)).collect();
    let mut seen = std::collections::BTreeSet::new();
    wheel.retain(|(so, _)| seen.insert(so.clone()));
    // torch's libraries find the wheels' through DT_RUNPATH ($ORIGIN/../../nvidia/*/lib,
    // $ORIGIN); the loader model gives which copy each soname really resolves to.
    let torch_lib = format!("{}/torch/lib", t.site_packages);
    let runpath: Vec<String> = wheel_dirs.clone();
    let order = torch_search_order(loader, &torch_lib, &runpath, conf_dirs);
    let mut evidence = Vec::new();
    let mut problems = Vec::new();
    for (soname, wheel_path) in &wheel {
        let Some(found) = loader::find(&HostFs(r), &order, soname) else {
            continue;
        };
        if found.dir.from != SearchFrom::LdLibraryPath {
            continue;
        }
        let dir = found.dir.dir.as_str();
        let Some((v, how)) = lib_cuda_version(r, &found.named) else {
            evidence.push(Evidence::file(
                dir,
                format!("{soname}: CUDA version unknown"),
            ));
            continue;
        };
        evidence.push(Evidence::file(dir, format!("{soname} is CUDA {v} ({how})")));
        if v < tc {
            // The environment is the library directory's parent (`<env>/lib`).
            let env = parent(&parent(&found.real));
            let conda = r.exists(&format!("{env}/conda-meta"));
            let whose = if conda {
                "a conda environment's"
            } else {
                "a CUDA toolkit's"
            };
            let symbol = if soname.starts_with("libnvJitLink") {
                format!(
                    ": `undefined symbol: __nvJitLinkAddData_{}_{}, version {soname}`",
                    tc.major, tc.minor
                )
            } else {
                format!(": symbols that torch's CUDA {tc} libraries need may be missing (`undefined symbol` at import)")
            };
            problems.push(format!(
                "LD_LIBRARY_PATH puts {dir} ({whose}) first: its {soname} is CUDA {v}, older than torch's CUDA {tc} ({wheel_path}), and is loaded instead{symbol}"
            ));
        }
    }
    Some(Shadowing {
        cuda: tc,
        evidence,
        problems,
    })
}

/// Where torch's libraries (in `torch_lib`, with the wheels' directories as DT_RUNPATH) find a
/// soname under a loader setting of this host (its platform, whatever machine gpulint runs on).
pub(crate) fn torch_search_order(
    setting: &LoaderSetting,
    torch_lib: &str,
    runpath: &[String],
    ld_so_conf: &[String],
) -> Vec<SearchDir> {
    loader::search_order(&setting.request(torch_lib, runpath, ld_so_conf))
}

fn parent(p: &str) -> String {
    p.rsplit_once('/')
        .map(|(a, _)| a.to_string())
        .unwrap_or_default()
}
