//! GL001 no-kernel-image: a CUDA binary has no code the target GPU can run.

use super::context::{list, runnable_targets, ImageContext};
use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL001"),
    name: "no-kernel-image",
    default_severity: Severity::Error,
    summary: "A CUDA binary has no SASS or PTX that can run on the target GPU",
    explanation: "\
What: a shared library or executable in the image carries GPU code (a fatbin) but none of it
can run on the target GPU's compute capability. At the first kernel launch CUDA fails with
`no kernel image is available for execution on the device` (cudaErrorNoKernelImageForDevice).

Why: the driver loads SASS `sm_XY` only on devices of the same major capability with minor >= Y;
`sm_XYa` only on exactly X.Y; `sm_XYf` within the family (same major, minor >= Y). Failing
that, it JIT-compiles PTX `compute_XY` for any device with capability >= X.Y (not `a`/`f`
PTX outside their device/family). LTO-IR is never loaded directly. The check is per binary:
one extension module without code for the GPU is enough to break the image.
(CUDA C++ Programming Guide, Binary and PTX compatibility.)

Example: a library built with `-gencode arch=compute_75,code=sm_75` only, run on an H100
(9.0): sm_75 SASS does not run across majors and there is no PTX to JIT.

Fix: rebuild with SASS for the target (`-gencode arch=compute_90,code=sm_90`) or with PTX for
the highest architecture you build (`code=compute_90`), or install a wheel built for it
(e.g. a newer PyTorch CUDA variant whose arch list includes the GPU).",
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let tname = target.name.clone();
    for gpu in &target.gpus {
        let Some(cc) = gpu.cc else { continue };
        for b in ctx.inventory.binaries.iter().filter(|b| b.has_device_code) {
            if !b.has_loadable_code() {
                continue; // only LTO-IR or unreadable: nothing the runtime would load
            }
            let (sass, ptx) = runnable_targets(b, cc);
            if sass.is_empty() && ptx.is_empty() {
                match super::context::vendor_library_supports(ctx, b, cc) {
                    Some((true, _)) => continue,
                    Some((false, release)) => {
                        out.push(
                            META.finding(format!(
                                "/{} is an NVIDIA CUDA {} library, and CUDA {} does not support {} (compute capability {cc})",
                                b.path.trim_start_matches('/'),
                                release.major_minor(),
                                release.major_minor(),
                                gpu.name
                            ))
                            .with_target(tname.clone())
                            .with_location(ctx.binary_location(b))
                            .with_help(format!("use a CUDA release that supports compute capability {cc} (and a framework build for it)")),
                        );
                        continue;
                    }
                    None => {}
                }
                out.push(
                    META.finding(format!(
                        "/{} has no kernel image for {} (compute capability {cc}): it has SASS [{}] and PTX [{}]; the GPU needs SASS sm_{}x with x <= {} or PTX compute_XY with XY <= {}",
                        b.path.trim_start_matches('/'),
                        gpu.name,
                        list(&[b.sass.clone(), b.embedded_sass.clone()].concat()),
                        list(&[b.ptx.clone(), b.embedded_ptx.clone()].concat()),
                        cc.major,
                        cc.minor,
                        cc.sm(),
                    ))
                    .with_target(tname.clone())
                    .with_location(ctx.binary_location(b))
                    .with_help(format!(
                        "rebuild with -gencode arch=compute_{0},code=sm_{0} (or add PTX, code=compute_XY for XY <= {0}), or install a build that targets compute capability {cc}",
                        cc.sm()
                    )),
                );
            }
        }
    }
}
