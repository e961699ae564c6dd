//! GL006 conflicting-cuda-runtimes: the loader picks another copy of a CUDA library than the
//! one the binary ships with, or none at all.

use super::context::ImageContext;
use super::loader::{resolve, search_order};
use crate::finding::{Finding, Severity};
use crate::inventory::LibraryProvider;
use crate::loader::SearchDir;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::vocab::ImagePath;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL006"),
    name: "conflicting-cuda-runtimes",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "The dynamic loader resolves a CUDA/cuDNN dependency to another library than the one shipped, or to none",
    doc: RuleDoc {
        what: "A binary needs a CUDA library (libcudart, libcublas, libcudnn, libnccl, …). Following \
            the loader's real order (DT_RPATH when there is no DT_RUNPATH, the image's \
            LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.conf(.d), default directories), it would load \
            a different copy than the one its own RPATH/RUNPATH points at (e.g. a system CUDA \
            12.1 cuBLAS instead of the pip wheel's 12.4 one), or find none.",
        why: "Two CUDA stacks in one image are common (an nvidia/cuda base plus pip `nvidia-*` \
            wheels). `LD_LIBRARY_PATH` beats DT_RUNPATH, so a base image's \
            `LD_LIBRARY_PATH=/usr/local/cuda/lib64` silently swaps the libraries a wheel was \
            built and tested with: symbol errors (`undefined symbol: cublasLt…`), \
            `CUBLAS_STATUS_NOT_INITIALIZED`, cuDNN version mismatch errors, or subtle slowdowns. \
            A library found nowhere fails with `cannot open shared object file`.",
        example: "Torchvision installed with `pip install --no-deps torchvision` next to a torch whose \
            CUDA runtime wheel is missing: `/usr/lib/python3.12/site-packages/torchvision/_C.so \
            needs libcudart.so.13, which the loader finds nowhere in the image (searched 7 \
            directories)`. Or an `nvidia/cuda:12.1.1` base whose \
            `LD_LIBRARY_PATH=/usr/local/cuda/lib64` makes a pip torch's extension load the system \
            cuBLAS 12.1 instead of the wheel's 12.4 copy.",
        fix: "Remove the conflicting directory from LD_LIBRARY_PATH (or put the wheel's directory \
            first), uninstall the duplicate CUDA stack, or install matching versions.",
        sources: &[
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
            "https://man7.org/linux/man-pages/man8/ldconfig.8.html",
        ],
    },
};

// The finding's location is the binary: messages do not name it again.
pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let inv = ctx.inventory;
    let own_libs: std::collections::BTreeSet<&ImagePath> =
        inv.cuda_libraries.iter().map(|l| &l.path).collect();
    for b in &inv.binaries {
        // CUDA libraries load each other by soname once the first is in the process; judge
        // the consumers (frameworks, extensions, executables), not the CUDA stack itself.
        if own_libs.contains(&b.path) {
            continue;
        }
        let order = search_order(inv, b);
        let own: Vec<SearchDir> = order.iter().filter(|d| d.from.is_own()).cloned().collect();
        for needed in b
            .needed
            .iter()
            .filter(|n| crate::inventory::libs::is_cuda_runtime_lib(n))
        {
            let actual = resolve(inv, &order, needed);
            let shipped = resolve(inv, &own, needed);
            let loc = ctx.binary_location(b);
            match (&actual, &shipped) {
                (None, _) => {
                    let elsewhere = inv.cuda_libraries.iter().find(|l| {
                        l.path.file_name() == needed.as_str()
                            || l.aliases.iter().any(|a| a.file_name() == needed.as_str())
                    });
                    let py_ext = b
                        .path
                        .components()
                        .any(|c| c == "site-packages" || c == "dist-packages");
                    match elsewhere {
                        // Python frameworks preload their CUDA libraries (torch loads
                        // nvidia/*/lib by path; cupy through cuda-pathfinder); the loader then
                        // matches the extension's NEEDED by soname. Verified on a real torch
                        // + cupy venv on an H200.
                        Some(_) if py_ext => {}
                        Some(l) => out.push(
                            META.finding(format!(
                                "needs {needed}; the image has it at {} but not on the loader's search path, so it loads only if something preloads it",
                                l.path
                            ))
                            .with_severity(Severity::Warning)
                            .with_location(loc)
                            .with_help(format!(
                                "add {} to LD_LIBRARY_PATH, /etc/ld.so.conf.d or the binary's RUNPATH",
                                l.path.parent().unwrap_or_default()
                            )),
                        ),
                        None => out.push(
                            META.finding(format!(
                                "needs {needed}, which the loader finds nowhere in the image (searched {})",
                                crate::vocab::count(order.len(), "directory", "directories")
                            ))
                            .with_location(loc)
                            .with_help(format!("install the package that provides {needed} or add its directory to the binary's RUNPATH")),
                        ),
                    }
                }
                (Some((a, via)), Some((s, _))) if a.path != s.path => {
                    let differ = a.version_text() != s.version_text();
                    let sev = if differ {
                        Severity::Error
                    } else {
                        Severity::Warning
                    };
                    out.push(
                        META.finding(format!(
                            "ships with {} ({}) but the loader picks {} ({}) from {} {}",
                            s.path,
                            s.version_text().unwrap_or("version unknown"),
                            a.path,
                            a.version_text().unwrap_or("version unknown"),
                            via.from,
                            via.dir,
                        ))
                        .with_severity(sev)
                        .with_location(loc)
                        .with_help(format!(
                            "remove {} from {} or install one CUDA stack",
                            via.dir, via.from
                        )),
                    );
                }
                (Some((a, _)), None) if a.provider == LibraryProvider::Stub => out.push(
                    META.finding(format!(
                        "resolves {needed} to the link-time stub {}, which cannot run",
                        a.path
                    ))
                    .with_location(loc)
                    .with_help("remove lib64/stubs from LD_LIBRARY_PATH / ld.so.conf"),
                ),
                _ => {}
            }
        }
    }
}
