//! GL005 forward-compat-unsupported: the image needs the cuda-compat package on a target where
//! forward compatibility cannot work.

use super::context::ImageContext;
use super::gl002_driver_too_old::{driver_verdict, DriverVerdict};
use crate::finding::{Finding, Location, Severity};
use crate::matrix::ForwardCompat;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL005"),
    name: "forward-compat-unsupported",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "The image relies on the cuda-compat package where forward compatibility cannot work",
    doc: RuleDoc {
        what: "The image's CUDA runtime is newer than the target's driver supports (even under \
            minor-version compatibility), and the image carries the cuda-compat (forward \
            compatibility) package to bridge the gap, but the target cannot use it.",
        why: "Forward compatibility (running a newer CUDA on an older driver through the compat \
            libcuda) is supported only on datacenter GPUs (and select NGC-Ready RTX SKUs) and \
            only on specific driver branches (CUDA Compatibility guide, forward compatibility \
            support matrix). On GeForce/consumer GPUs it fails with `forward compatibility was \
            attempted on non supported HW` (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, error 804).",
        example: "An image built on `nvidia/cuda:13.0.0-runtime-ubuntu24.04` with `cuda-compat-13-0`, \
            run on a GeForce RTX 4090 whose driver 570.133.20 supports CUDA 12.8: `CUDA runtime \
            13.0 (/usr/local/cuda-13.0/lib64/libcudart.so.13.0.48) needs a newer driver than \
            570.133.20; the image's cuda-compat package (libcuda 580.65.06, CUDA 13.0) would \
            bridge it, but forward compatibility cannot work here: NVIDIA GeForce RTX 4090 is not \
            a datacenter GPU`.",
        fix: "Upgrade the node driver to one that natively supports the image's CUDA, or move the \
            workload to a supported datacenter GPU and driver branch.",
        sources: &[
            "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html#use-the-right-cuda-forward-compatibility-package",
        ],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let Some(driver) = &target.driver else { return };
    let Some((compat_ver, compat_path)) = ctx.forward_compat_driver() else {
        return;
    };
    let Some(compat_cuda) = ctx.facts.max_cuda_for_driver(&compat_ver).map(|c| c.value) else {
        return;
    };
    for rt in ctx.cuda_runtimes() {
        if !matches!(
            driver_verdict(ctx.facts, &rt, driver),
            DriverVerdict::TooOld { .. }
        ) {
            continue;
        }
        if (compat_cuda.major, compat_cuda.minor) < (rt.version.major, rt.version.minor) {
            continue; // compat does not cover it: GL002 reports
        }
        let loc = Location::in_image(None, compat_path.clone());
        let mut problems = Vec::new();
        let mut unknown = Vec::new();
        for g in &target.gpus {
            match g.datacenter {
                Some(false) => problems.push(format!("{} is not a datacenter GPU", g.name)),
                None => unknown.push(g.name.clone()),
                Some(true) => {}
            }
        }
        match ctx.facts.forward_compat(driver, &rt.version).value {
            ForwardCompat::Supported | ForwardCompat::NotNeeded => {}
            ForwardCompat::Unsupported { reason } => problems.push(reason),
            ForwardCompat::Unlisted { reason } => unknown.push(reason),
            ForwardCompat::Unknown => unknown.push(format!("driver branch {}", driver.branch())),
        }
        let base = format!(
            "{} needs a newer driver than {driver}; the image's cuda-compat package (libcuda {compat_ver}, CUDA {compat_cuda}) would bridge it",
            rt.what
        );
        if !problems.is_empty() {
            out.push(
                META.finding(format!(
                    "{base}, but forward compatibility cannot work here: {}",
                    problems.join("; ")
                ))
                .with_target(target.name.clone())
                .with_location(loc)
                .with_help(
                    "upgrade the node driver to one that natively supports this CUDA release",
                ),
            );
        } else if !unknown.is_empty() {
            out.push(
                META.finding(format!(
                    "{base}; NVIDIA does not, or no longer, document forward compatibility here: {}",
                    unknown.join(", ")
                ))
                .with_severity(Severity::Warning)
                .with_target(target.name.clone())
                .with_location(loc),
            );
        } else {
            out.push(
                META.finding(format!(
                    "{base}; forward compatibility is supported on this target"
                ))
                .with_severity(Severity::Info)
                .with_target(target.name.clone())
                .with_location(loc),
            );
        }
    }
}
