//! GL215: an installed torch cannot use this host's GPUs or driver.

use super::{CheckResult, HostContext};
use crate::arch::{ArchTarget, ComputeCapability};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::python::find_torch;
use crate::host::BinaryArchs;
use crate::matrix::{inferred_note, Basis};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::rules::image::context::{list, ptx_isa_of, runnable_targets};
use crate::version::CudaVersion;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL215"),
    name: "torch-host-mismatch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "An installed PyTorch has no kernels for this host's GPUs or needs a newer driver",
    doc: RuleDoc {
        what: "Finds the Python environments (`--python PATH`, else python3/python on PATH), reads \
            torch/version.py (version, CUDA) and the device-code architectures of \
            torch/lib/libtorch_cuda.so (fatbin SASS/PTX), without importing torch, and judges \
            them against this host's GPUs (compute capability) and driver (the CUDA version it \
            supports).",
        why: "A torch without SASS for the GPU's architecture (or PTX it can JIT) fails with \"no \
            kernel image is available for execution on the device\" (judged as the image rules \
            GL001/GL003 do: fatbins the library loads itself count, and PTX helps only when its \
            PTX ISA is not newer than the driver's CUDA); a torch built for a newer CUDA major \
            than the driver's fails with \"The NVIDIA driver on your system is too old\"; a \
            CPU-only build silently ignores the GPUs.",
        example: "`pip install torch` on a host whose driver 570.133.20 supports CUDA 12.8, when PyPI's \
            default torch 2.9.0 is built for CUDA 13.0: `torch 2.9.0 \
            (/usr/lib/python3/dist-packages): built for CUDA 13.0, a newer major than the \
            driver's CUDA 12.8: \"The NVIDIA driver on your system is too old\"`.",
        fix: "Install the torch variant for the host (the cuXYZ index matching the driver, e.g. \
            `pip install torch --index-url https://download.pytorch.org/whl/cu126`), or upgrade \
            the driver.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix",
            "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html#cuda-driver",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let installs = find_torch(r, &cx.options.pythons);
    if installs.is_empty() {
        out.push(CheckResult::ok(
            &META,
            "no torch found in the Python environments looked at",
        ));
        return;
    }
    for t in installs {
        let label = format!("torch {} ({})", t.version, t.site_packages);
        let mut ev = t.evidence.clone();
        let mut problems: Vec<(String, Severity)> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        let Some(cuda) = t.cuda.as_deref() else {
            let what = if t.hip.is_some() {
                "a ROCm build"
            } else {
                "a CPU-only build"
            };
            out.push(
                CheckResult::problem(&META, format!("{label} is {what}: it will not use the NVIDIA GPUs"))
                    .severity(Severity::Warning)
                    .evidence(ev)
                    .fix("Install a CUDA build of torch (e.g. from https://download.pytorch.org/whl/cu126)."),
            );
            continue;
        };
        // Driver vs torch's CUDA.
        let dc = cx.driver_cuda();
        let sup = dc.as_ref().map(|d| d.cuda);
        match (t.cuda_version, sup) {
            (Some(tc), Some(s)) => {
                ev.extend(dc.as_ref().and_then(|d| d.evidence.clone()));
                ev.push(Evidence::note(format!("driver supports CUDA {s}")));
                if tc.major > s.major {
                    // The wheel brings its own CUDA runtime: the driver alone is the cause,
                    // whatever toolkit is installed.
                    let driver = dc
                        .as_ref()
                        .and_then(|d| d.driver.as_ref())
                        .map(|d| format!("driver {d}"))
                        .unwrap_or_else(|| "the driver".into());
                    let need = cx
                        .facts
                        .cuda_min_driver(CudaVersion::new(tc.major, tc.minor))
                        .map(|d| {
                            let inferred = if d.basis == Basis::Inferred {
                                inferred_note(
                                    "GL215",
                                    &format!(
                                        "CUDA {}.{} -> driver {}",
                                        tc.major, tc.minor, d.value
                                    ),
                                )
                            } else {
                                String::new()
                            };
                            format!(
                                "; CUDA {}.{} needs driver >= {}{inferred}",
                                tc.major, tc.minor, d.value
                            )
                        })
                        .unwrap_or_default();
                    problems.push((format!("{driver} (CUDA {s}) is too old for torch's CUDA {tc}{need}: \"The NVIDIA driver on your system is too old\""), Severity::Error));
                } else if CudaVersion::new(tc.major, tc.minor) > CudaVersion::new(s.major, s.minor)
                {
                    problems.push((format!("built for CUDA {tc}, newer than the driver's CUDA {s}: runs only under minor-version compatibility (no PTX JIT)"), Severity::Warning));
                }
            }
            _ => unknown.push("the driver's CUDA version".into()),
        }
        // Architectures vs GPUs.
        match (&t.cuda_lib, cx.options.scanner) {
            (Some(lib), Some(scanner)) => match scanner.scan(&r.local_path(lib)) {
                Ok(Some(a)) => {
                    ev.push(Evidence::file(
                        lib,
                        format!(
                            "SASS {} PTX {}",
                            a.sass
                                .iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(" "),
                            a.ptx
                                .iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    ));
                    for g in &cx.profile.gpus {
                        let Some(cc) = g.cc else {
                            unknown.push(format!("the compute capability of {}", g.name));
                            continue;
                        };
                        // The image rules' semantics (GL001/GL003): what the runtime can
                        // load on this GPU, then whether the driver can JIT that PTX's ISA.
                        let (sass, ptx) = runnable_targets(&a, cc);
                        if sass.is_empty() && ptx.is_empty() {
                            problems.push((format!("no SASS or PTX for {} (compute capability {cc}): \"no kernel image is available for execution on the device\"", g.name), Severity::Error));
                        } else if sass.is_empty() {
                            problems.push(ptx_only(&a, &ptx, &g.name, cc, sup, cx));
                        }
                    }
                }
                Ok(None) => problems.push((format!("{lib} has no device code"), Severity::Error)),
                Err(e) => unknown.push(format!("the architectures of {lib} ({e})")),
            },
            (Some(lib), None) => unknown.push(format!(
                "the architectures of {lib} (fatbin reader not available)"
            )),
            (None, _) => problems.push((
                format!(
                    "{}/torch/lib/libtorch_cuda.so is missing although torch says CUDA {cuda}",
                    t.site_packages
                ),
                Severity::Error,
            )),
        }
        if !problems.is_empty() {
            out.push(
                CheckResult::problems(&META, &label, &problems)
                    .evidence(ev)
                    .fix("Install the torch variant for this host's driver and GPUs, or upgrade the driver."),
            );
        } else if !unknown.is_empty() {
            out.push(
                CheckResult::could_not(
                    &META,
                    format!("{label} (CUDA {cuda}): unknown {}", unknown.join(", ")),
                )
                .evidence(ev),
            );
        } else {
            out.push(
                CheckResult::ok(
                    &META,
                    format!("{label} (CUDA {cuda}) runs on this host's GPUs and driver"),
                )
                .evidence(ev),
            );
        }
    }
}

/// Only PTX runs on this GPU: a slow first start when the driver can JIT it (GL003's rule: the
/// PTX ISA must not be newer than the driver's CUDA; minor-version compatibility does not
/// cover JIT), "no kernel image" when it cannot.
fn ptx_only(
    a: &BinaryArchs,
    ptx: &[ArchTarget],
    gpu: &str,
    cc: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
    cx: &HostContext<'_>,
) -> (String, Severity) {
    let jit = (
        format!(
            "only PTX [{}] for {gpu} (compute capability {cc}): first use JIT-compiles for minutes",
            list(ptx)
        ),
        Severity::Warning,
    );
    let Some(dc) = driver_cuda else { return jit };
    let mut too_new = Vec::new();
    for t in ptx {
        match ptx_isa_of(a, t)
            .and_then(|isa| Some((isa, cx.facts.ptx_isa_need(isa)?.value.known()?)))
        {
            Some((isa, needs)) if needs > dc => {
                too_new.push(format!("{t} is PTX ISA {}.{} (CUDA {needs})", isa.0, isa.1))
            }
            // Usable, or unknown: JIT may work.
            _ => return jit,
        }
    }
    (
        format!(
            "only PTX for {gpu} (compute capability {cc}) and the driver (CUDA {dc}) cannot JIT it: {}",
            too_new.join(", ")
        ),
        Severity::Error,
    )
}
