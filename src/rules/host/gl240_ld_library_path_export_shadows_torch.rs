//! GL240: a shell startup file or a conda environment's activate.d script sets an
//! LD_LIBRARY_PATH under which an older CUDA library shadows the one torch's wheels bring:
//! GL219's loader judgement for the shells and environments still to come, naming the file
//! and line.

use super::gl219_cuda_libs_shadow_torch::{shadowing, shadowing_dirs, Shadowing};
use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::python::{env_python, find_torch, find_torch_everywhere};
use crate::host::query::{ld_so_conf_dirs, LoaderSetting};
use crate::host::shell_env::{ld_exports, LdExport};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL240"),
    name: "ld-library-path-export-shadows-torch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "A shell startup file or conda activate.d script sets an LD_LIBRARY_PATH that shadows torch's CUDA libraries",
    doc: RuleDoc {
        what: "Reads every line that assigns LD_LIBRARY_PATH in /etc/environment, \
            /etc/profile, /etc/profile.d/*.sh, /etc/bash.bashrc, the invoking user's shell rc \
            files ($HOME/.bashrc, .profile, .bash_profile, .zshrc, …) and the \
            etc/conda/activate.d/*.sh of each conda environment, with the value a fresh shell \
            gets ($LD_LIBRARY_PATH empty, $CONDA_PREFIX the environment, $HOME / ~ the home). \
            Under that value it makes GL219's judgement: for each CUDA build of torch (the \
            environment's own for an activate.d script, every one found otherwise), the loader \
            model says which copy of each CUDA soname its wheels bring is really loaded.",
        why: "GL219 judges the environment gpulint runs in; these files make the environment \
            of every later login shell, `conda activate` and job script. The guides' own \
            advice (`export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH` in \
            ~/.bashrc) or a conda package's activate.d hook puts an older libnvJitLink or \
            cuSPARSE before the wheels' DT_RUNPATH, and `import torch` fails with `undefined \
            symbol` in every new shell, while the shell that installed torch works.",
        example: "`/etc/profile.d/cuda.sh` line 2, `export \
            LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:$LD_LIBRARY_PATH`, with torch \
            2.6.0+cu124 from pip: its libnvJitLink.so.12 is CUDA 12.1, older than torch's CUDA \
            12.4.",
        fix: "Delete the line (or keep the directory out of LD_LIBRARY_PATH for Python: the \
            wheels bring their own CUDA libraries); in a conda environment, remove the \
            activate.d script or install CUDA packages at least as new as torch's CUDA.",
        sources: &[
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
            "https://docs.conda.io/projects/conda/en/latest/user-guide/tasks/manage-environments.html#macos-and-linux",
            "https://github.com/pytorch/pytorch/issues/111469",
        ],
    },
};

/// Who the file sets LD_LIBRARY_PATH for.
fn scope(e: &LdExport) -> String {
    match &e.conda_env {
        Some(env) => format!("`conda activate {env}`"),
        None if !e.file.starts_with("/etc/") => "this user's new shells".into(),
        None => "every new login shell".into(),
    }
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let exports: Vec<LdExport> = ld_exports(r)
        .into_iter()
        .filter(|e| !e.dirs.is_empty())
        .collect();
    if exports.is_empty() {
        out.push(CheckResult::ok(
            &META,
            "no shell startup file or conda activate.d script sets LD_LIBRARY_PATH to a directory",
        ));
        return;
    }
    let everywhere: Vec<_> = find_torch_everywhere(r, &cx.options.pythons)
        .into_iter()
        .filter(|t| t.cuda_version.is_some())
        .collect();
    let conf_dirs: Vec<String> = ld_so_conf_dirs(r).into_iter().map(|(d, _)| d).collect();
    let mut judged = 0;
    let mut found_problem = false;
    for e in &exports {
        let installs = match &e.conda_env {
            Some(env) => find_torch(r, &[env_python(r, env)])
                .into_iter()
                .filter(|t| t.cuda_version.is_some())
                .collect(),
            None => everywhere.clone(),
        };
        let value = e.dirs.join(":");
        let loader = LoaderSetting {
            ld_library_path: Some(value.clone()),
            machine: cx.loader.machine.clone(),
        };
        let dirs: Vec<&str> = e.dirs.iter().map(String::as_str).collect();
        for t in &installs {
            let Some(Shadowing {
                cuda,
                evidence: found,
                problems,
            }) = shadowing(r, &loader, t, &conf_dirs)
            else {
                continue;
            };
            judged += 1;
            if problems.is_empty() {
                continue;
            }
            found_problem = true;
            let mut evidence = vec![Evidence::file(
                &e.file,
                format!("line {}: {}", e.line_no, e.line),
            )];
            evidence.extend(found);
            let mut result = CheckResult::problem(
                &META,
                format!(
                    "{}:{} sets LD_LIBRARY_PATH={value} for {}: torch {} ({}): {}",
                    e.file,
                    e.line_no,
                    scope(e),
                    t.version,
                    t.site_packages,
                    problems.join("; ")
                ),
            )
            .evidence(evidence)
            .fix(format!(
                "Remove {} from the LD_LIBRARY_PATH that {} line {} sets (torch's pip wheels bring CUDA {cuda} libraries), or install CUDA libraries at least as new as {cuda} there.",
                shadowing_dirs(&dirs, &problems).join(", "),
                e.file,
                e.line_no
            ));
            if let Some(loc) = result.finding.location.as_mut() {
                loc.line = Some(e.line_no);
            }
            out.push(result);
        }
    }
    if found_problem {
        return;
    }
    out.push(CheckResult::ok(
        &META,
        if judged == 0 {
            format!(
                "{} set LD_LIBRARY_PATH; no CUDA build of torch they apply to",
                crate::vocab::count(exports.len(), "line", "lines")
            )
        } else {
            format!(
                "{} set LD_LIBRARY_PATH; none shadows a torch wheel's CUDA library",
                crate::vocab::count(exports.len(), "line", "lines")
            )
        },
    ));
}
