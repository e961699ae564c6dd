//! GL001 no-kernel-image: a CUDA binary has no code the target GPU can run.

use super::context::{dedup_targets, list, own_code, runnable_targets, ImageContext};
use crate::arch::ComputeCapability;
use crate::finding::{Finding, Severity};
use crate::fix::suggest::arch_list;
use crate::fix::suggest::torch::{builds_for, fixes_for, help_for, Installed, Pool};
use crate::gpu_target::Target;
use crate::inventory::{Binary, PythonPackage};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL001"),
    name: "no-kernel-image",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning, Severity::Info],
    summary: "A CUDA binary has no SASS or PTX that can run on the target GPU",
    doc: RuleDoc {
        what:
            "A shared library or executable in the image carries GPU code (a fatbin) but none of \
            it can run on the target GPU's compute capability. At the first kernel launch CUDA \
            fails with `no kernel image is available for execution on the device` \
            (cudaErrorNoKernelImageForDevice).",
        why:
            "The driver loads SASS `sm_XY` only on devices of the same major capability with minor \
            >= Y; `sm_XYa` only on exactly X.Y; `sm_XYf` within the family (same major, minor >= \
            Y). Failing that, it JIT-compiles PTX `compute_XY` for any device with capability >= \
            X.Y (not `a`/`f` PTX outside their device/family). LTO-IR is never loaded directly. \
            The check is per binary: one extension module without code for the GPU is enough to \
            break the image. A library that nothing in the image NEEDs and that is loaded only \
            on demand (CUPTI, libcheckpoint, nvperf, compute-sanitizer's and nvprof's injection \
            libraries, cupy's optional cuDNN/NCCL/cuTENSOR modules) is reported as a warning: \
            it fails only when a profiler or the program loads it. A shared library that \
            nothing NEEDs, in a directory named for a GPU architecture (triton's \
            `backends/nvidia/lib/cupti-blackwell/`, which triton selects for Blackwell and \
            newer GPUs), is a variant its package selects at run time: on a GPU older than that \
            architecture it is never loaded and the finding is info. So is a \
            `libbitsandbytes_cuda{XYZ}.so` that bitsandbytes does not choose for torch's CUDA \
            (see GL013). (CUDA C++ Programming Guide, Binary and PTX compatibility.)",
        example: "A library built with `-gencode arch=compute_75,code=sm_75` only, run on an H100 \
            (9.0): sm_75 SASS does not run across majors and there is no PTX to JIT.",
        fix:
            "Rebuild with SASS for the target (`-gencode arch=compute_90,code=sm_90`) or with PTX \
            for the highest architecture you build (`code=compute_90`), or install a wheel built \
            for it (e.g. a newer PyTorch CUDA variant whose arch list includes the GPU).",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-capability",
            "https://developer.nvidia.com/cuda-gpus",
            "https://github.com/triton-lang/triton/blob/main/python/triton/knobs.py",
        ],
    },
};

/// The SASS that runs on compute capability `cc`: its major version, minor at most its own
/// (`sm_90` alone for 9.0, `sm_80 to sm_86` for 8.6).
fn sass_that_runs(cc: crate::arch::ComputeCapability) -> String {
    if cc.minor == 0 {
        format!("SASS sm_{}", cc.sm())
    } else {
        format!("SASS sm_{}0 to sm_{}", cc.major, cc.sm())
    }
}

/// A GPU with its compute capability, once (`--gpu sm_90` names it "compute capability 9.0").
fn gpu_with_cc(name: &str, cc: crate::arch::ComputeCapability) -> String {
    let cc_text = format!("compute capability {cc}");
    if name.contains(&cc_text) {
        name.to_string()
    } else {
        format!("{name} ({cc_text})")
    }
}

/// The installed torch-family package (torch, torchvision, torchaudio) a binary belongs to:
/// its `site-packages/<package>/` directory holds it.
fn torch_package<'a>(ctx: &'a ImageContext, b: &Binary) -> Option<&'a PythonPackage> {
    let path = b.path.to_string();
    ctx.inventory.python_packages.iter().find(|p| {
        ["torch", "torchvision", "torchaudio"].contains(&p.name.as_str())
            && path.starts_with(&format!(
                "{}/{}/",
                p.location.to_string().trim_end_matches('/'),
                p.name
            ))
    })
}

/// The change that gives `b` code for `cc`: for torch's own libraries, an official torch
/// build whose architecture list covers every GPU of the target and runs on its driver
/// (nearest the installed one first); for anything else built here, the architecture list
/// that covers the target's GPUs, checked against the image's nvcc.
fn with_suggestions(
    ctx: &ImageContext,
    target: &Target,
    b: &Binary,
    cc: ComputeCapability,
    f: Finding,
) -> Finding {
    if let Some(pkg) = torch_package(ctx, b) {
        let torch = ctx
            .inventory
            .python_packages
            .iter()
            .find(|p| p.name == "torch" && p.location == pkg.location);
        let builds = builds_for(
            ctx.facts,
            &Pool::of(std::slice::from_ref(target)),
            Installed {
                version: torch.map(|t| t.version.as_str()),
                cuda: torch.and_then(|t| t.cuda),
            },
        );
        if let Some(help) = help_for(&builds) {
            let mut f = f.with_help(format!(
                "install a torch build that runs on every GPU of the target: {help}"
            ));
            for fix in fixes_for(&builds, 3) {
                f = f.with_fix(fix);
            }
            return f;
        }
    }
    let nvcc = ctx
        .inventory
        .cuda_toolkits
        .iter()
        .find(|t| t.default)
        .or(ctx.inventory.cuda_toolkits.first())
        .and_then(|t| t.version);
    let f = f.with_help(format!(
        "rebuild with -gencode arch=compute_{0},code=sm_{0} (or add PTX, code=compute_XY for XY <= {0}), or install a build that targets compute capability {cc}",
        cc.sm()
    ));
    // An extension next to an installed torch is built with torch's cpp_extension, which
    // reads TORCH_CUDA_ARCH_LIST; anything else with nvcc's -gencode.
    let path = b.path.to_string();
    let beside_torch = ctx.inventory.python_packages.iter().any(|p| {
        p.name == "torch"
            && path.starts_with(&format!(
                "{}/",
                p.location.to_string().trim_end_matches('/')
            ))
    });
    let syntax = if beside_torch {
        arch_list::Syntax::Torch
    } else {
        arch_list::Syntax::Gencode
    };
    match arch_list::fix_for(ctx.facts, &target.capabilities(), nvcc, syntax) {
        Some(fix) => f.with_fix(fix),
        None => f,
    }
}

// The finding's location is the binary: messages do not name it again.
pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let tname = target.name.clone();
    let unreached = super::reachability::unreached_on_demand(ctx.inventory, ctx.facts);
    // A library loaded only on demand fails only when something loads it: a warning, with
    // why; one its package selects only for a newer architecture is never loaded on this
    // GPU: info, with why.
    let judge = |i: usize, cc: ComputeCapability, f: Finding| match &unreached[i] {
        Some(od) => {
            if let Some(why) = &od.not_selected {
                let message = format!(
                    "{}; never loaded: {why}, and nothing in the image NEEDs it",
                    f.message
                );
                return Finding { message, ..f }.with_severity(Severity::Info);
            }
            if let Some(v) = od.arch_variant.as_ref().filter(|v| cc < v.first_cc) {
                let message = format!(
                    "{}; not loaded on this GPU: its package selects {}/ at run time for {} GPUs (compute capability {} and newer) and nothing in the image NEEDs it",
                    f.message, v.dir, v.arch, v.first_cc
                );
                return Finding { message, ..f }.with_severity(Severity::Info);
            }
            match od.kind {
                Some(why) => {
                    let message = format!(
                        "{}; loaded only on demand {why} and nothing in the image NEEDs it",
                        f.message
                    );
                    Finding { message, ..f }.with_severity(Severity::Warning)
                }
                None => f,
            }
        }
        None => f,
    };
    for gpu in &target.gpus {
        let Some(cc) = gpu.cc else { continue };
        for (i, b) in ctx.inventory.binaries.iter().enumerate() {
            if !b.has_device_code {
                continue;
            }
            if !b.has_loadable_code() {
                continue; // only LTO-IR or unreadable: nothing the runtime would load
            }
            if b.has_kernels == Some(false) {
                // Its cubins and PTX were read and define no kernel: nothing is ever
                // launched from it, whatever its CUDA release supports.
                continue;
            }
            let (sass, ptx) = runnable_targets(b, cc);
            if sass.is_empty() && ptx.is_empty() {
                match super::context::vendor_library_supports(ctx, b, cc) {
                    Some((true, _)) => continue,
                    Some((false, release)) => {
                        out.push(judge(
                            i,
                            cc,
                            META.finding(format!(
                                "NVIDIA CUDA {} library: CUDA {} does not support {}",
                                release.major_minor(),
                                release.major_minor(),
                                gpu_with_cc(&gpu.name, cc)
                            ))
                            .with_target(tname.clone())
                            .with_location(ctx.binary_location(b))
                            .with_help(format!("use a CUDA release that supports compute capability {cc} (and a framework build for it)")),
                        ));
                        continue;
                    }
                    None => {}
                }
                let (own_sass, own_ptx) = own_code(b);
                // Self-loaded fatbins left out of the judgement (see `own_code`): say so.
                let mut embedded = b.embedded_sass.clone();
                embedded.extend(&b.embedded_ptx);
                let embedded = dedup_targets(embedded);
                let left_out = !embedded.is_empty()
                    && own_sass == dedup_targets(b.sass.clone())
                    && own_ptx == dedup_targets(b.ptx.clone());
                let statically_linked = if left_out {
                    format!(" (the self-loaded fatbins of a statically linked library, [{}], do not run its own kernels)", list(&embedded))
                } else {
                    String::new()
                };
                let f = META
                    .finding(format!(
                        "no kernel image for {}: it has SASS [{}] and PTX [{}]{statically_linked}; the GPU needs {} or PTX compute_XY with XY <= {}",
                        gpu_with_cc(&gpu.name, cc),
                        list(&own_sass),
                        list(&own_ptx),
                        sass_that_runs(cc),
                        cc.sm(),
                    ))
                    .with_target(tname.clone())
                    .with_location(ctx.binary_location(b));
                out.push(judge(i, cc, with_suggestions(ctx, target, b, cc, f)));
            }
        }
    }
}
