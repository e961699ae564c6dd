//! GL003 ptx-jit-needs-newer-driver: the GPU can only be served by JIT-compiling PTX, and the
//! driver is too old for that PTX.

use super::context::{list, ptx_isa_of, runnable_targets, ImageContext};
use crate::finding::{Finding, Severity};
use crate::fix::suggest::driver;
use crate::matrix::PtxNeed;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL003"),
    name: "ptx-jit-needs-newer-driver",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary:
        "A binary runs on the target only through PTX JIT, and the driver cannot compile that PTX",
    doc: RuleDoc {
        what: "A binary has no SASS for the target GPU, so the driver must JIT-compile its PTX; but \
            the PTX was emitted by a newer toolkit (its PTX ISA version) than the driver \
            understands. The launch fails with `the provided PTX was compiled with an unsupported \
            toolchain` (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), typically when the image relies on \
            minor-version compatibility (an older driver of the same CUDA major) and carries PTX \
            from a newer toolkit.",
        why: "A driver can JIT PTX up to the PTX ISA version of the CUDA release it supports (PTX \
            ISA release notes map ISA versions to CUDA releases). Minor-version compatibility \
            explicitly excludes JIT of newer PTX (CUDA Compatibility guide).",
        example: "A CUDA extension built by CUDA 12.8's nvcc with only `-gencode \
            arch=compute_80,code=compute_80` (PTX, no SASS), run on an H100 whose driver \
            535.183.01 supports CUDA 12.2: `/usr/lib/libkernels.so runs on NVIDIA H100 (compute \
            capability 9.0) only through PTX JIT, but compute_80 is PTX ISA 8.7 (CUDA 12.8); the \
            driver supports CUDA 12.2`.",
        fix: "Ship SASS for the target GPU (so no JIT is needed), or upgrade the driver to one that \
            supports the CUDA release that produced the PTX.",
        sources: &[
            "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#release-notes-ptx-release-history",
            "https://docs.nvidia.com/deploy/cuda-compatibility/",
        ],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let Some(driver_cuda) = ctx.driver_cuda_bound() else {
        return;
    };
    for gpu in &target.gpus {
        let Some(cc) = gpu.cc else { continue };
        for b in ctx.inventory.binaries.iter().filter(|b| b.has_device_code) {
            let (sass, ptx) = runnable_targets(b, cc);
            if !sass.is_empty() || ptx.is_empty() {
                continue;
            }
            if super::context::vendor_library_supports(ctx, b, cc).is_some_and(|(ok, _)| ok) {
                continue;
            }
            let mut usable = Vec::new();
            let mut too_new = Vec::new();
            let mut beyond_known = Vec::new();
            let mut open_unknown = Vec::new();
            let mut unknown = Vec::new();
            for t in &ptx {
                let Some(isa) = ptx_isa_of(b, t) else {
                    unknown.push(*t);
                    continue;
                };
                match ctx.facts.ptx_isa_need(isa).map(|n| n.value) {
                    Some(PtxNeed::Known(needs)) if needs <= driver_cuda.at_least => usable.push(*t),
                    // A driver newer than every row may support `needs`: unknown, not an error.
                    Some(PtxNeed::Known(needs)) if driver_cuda.open => {
                        open_unknown.push((*t, isa, needs))
                    }
                    Some(PtxNeed::Known(needs)) => too_new.push((*t, isa, needs)),
                    Some(PtxNeed::NewerThanKnown {
                        newest_isa,
                        newest_cuda,
                    }) => beyond_known.push((*t, isa, newest_isa, newest_cuda)),
                    None => unknown.push(*t),
                }
            }
            if !usable.is_empty() {
                continue;
            }
            // The location is the binary: messages do not name it again.
            let loc = ctx.binary_location(b);
            if !too_new.is_empty() {
                let detail: Vec<String> = too_new
                    .iter()
                    .map(|(t, isa, needs)| {
                        format!("{t} is PTX ISA {}.{} (CUDA {needs})", isa.0, isa.1)
                    })
                    .collect();
                // The newest ISA the binary ships decides what the driver must JIT.
                let needs = too_new.iter().map(|x| x.2).max();
                let fixes = needs
                    .map(|c| driver::fixes_for_cuda(ctx.facts, driver::Need::Native(c), target))
                    .unwrap_or_default();
                let upgrade = match fixes.first() {
                    Some(f) => format!("upgrade the driver to {}", f.replacement),
                    None => format!(
                        "upgrade the driver to one supporting CUDA {}",
                        too_new
                            .iter()
                            .map(|x| x.2)
                            .min()
                            .map(|v| v.to_string())
                            .unwrap_or_default()
                    ),
                };
                let mut f = META
                    .finding(format!(
                        "runs on {} (compute capability {cc}) only through PTX JIT, but {}; the driver supports CUDA {driver_cuda}",
                        gpu.name,
                        detail.join(", ")
                    ))
                    .with_target(target.name.clone())
                    .with_location(loc)
                    .with_help(format!("add SASS for sm_{} to the build, or {upgrade}", cc.sm()));
                for fix in fixes {
                    f = f.with_fix(fix);
                }
                out.push(f);
                continue;
            }
            if let Some((t, isa, needs)) = open_unknown.first() {
                out.push(
                    META.finding(format!(
                        "runs on {} (compute capability {cc}) only through PTX JIT; {t} is PTX ISA {}.{} (CUDA {needs}), and the driver supports CUDA {driver_cuda}: whether it supports CUDA {needs} is unknown",
                        gpu.name, isa.0, isa.1
                    ))
                    .with_target(target.name.clone())
                    .with_location(loc)
                    .with_help(format!(
                        "add SASS for sm_{} to the build, or use a driver known to support CUDA {needs}",
                        cc.sm()
                    )),
                );
                continue;
            }
            if let Some((t, isa, newest_isa, newest_cuda)) = beyond_known.first() {
                // An ISA above every known one comes from a CUDA newer than every release we
                // know. A driver whose CUDA is known exactly (at most the newest release)
                // cannot JIT it; a driver newer than every row might: that is unknown, and
                // unknown fails the gate like the error it may be.
                let why = format!(
                    "{t} is PTX ISA {}.{}, newer than the newest known PTX ISA {}.{} (CUDA {newest_cuda}), so it was produced by a CUDA release newer than {newest_cuda}",
                    isa.0, isa.1, newest_isa.0, newest_isa.1
                );
                let msg = if driver_cuda.open {
                    format!(
                        "runs on {} (compute capability {cc}) only through PTX JIT; {why}; the driver supports CUDA {driver_cuda}: whether it can JIT this PTX is unknown",
                        gpu.name
                    )
                } else {
                    format!(
                        "runs on {} (compute capability {cc}) only through PTX JIT; {why}, and the driver supports only CUDA {driver_cuda}: it cannot JIT this PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
                        gpu.name
                    )
                };
                out.push(
                    META.finding(msg)
                        .with_target(target.name.clone())
                        .with_location(loc)
                        .with_help(format!(
                            "add SASS for sm_{} to the build, or install the driver of the CUDA release that built this binary (newer than {newest_cuda})",
                            cc.sm()
                        )),
                );
                continue;
            }
            out.push(
                META.finding(format!(
                    "runs on {} only through PTX JIT of [{}] whose PTX ISA version is unknown: cannot tell whether the driver (CUDA {driver_cuda}) can compile it",
                    gpu.name, list(&unknown)
                ))
                .with_severity(Severity::Info)
                .with_target(target.name.clone())
                .with_location(loc),
            );
        }
    }
}
