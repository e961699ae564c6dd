//! GL005 forward-compat-unsupported: the image needs the cuda-compat package on a target where
//! forward compatibility cannot work.

use super::context::ImageContext;
use super::gl002_driver_too_old::{driver_verdict, DriverVerdict};
use crate::finding::{Finding, Location, Severity};
use crate::matrix::{inferred_note, Basis, ForwardCompat};
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
    // The compat package's libcuda runs at least its release's CUDA, also when that driver is
    // newer than every row gpulint states (an open upper bound only hides what more it runs).
    let Some(compat_cuda) = ctx.facts.driver_cuda(&compat_ver).map(|c| c.value.at_least) else {
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
        let fc = ctx.facts.forward_compat(driver, &rt.version);
        // A verdict from a cell the table we read did not show stays below an error.
        let inferred = fc.basis == Basis::Inferred;
        let note = if inferred {
            inferred_note(
                META.code.as_str(),
                &format!(
                    "cuda-compat-{}-{} on R{}",
                    rt.version.major,
                    rt.version.minor,
                    driver.branch()
                ),
            )
        } else {
            String::new()
        };
        let mut inferred_problems = Vec::new();
        match fc.value {
            ForwardCompat::Supported | ForwardCompat::NotNeeded => {}
            ForwardCompat::Unsupported { reason } if inferred => inferred_problems.push(reason),
            ForwardCompat::Unsupported { reason } => problems.push(reason),
            ForwardCompat::Unlisted { reason } => unknown.push(reason),
            ForwardCompat::Unknown => unknown.push(format!("driver branch {}", driver.branch())),
        }
        let base = format!(
            "{} needs a newer driver than {driver}; the image's cuda-compat package (libcuda {compat_ver}, CUDA {compat_cuda}) would bridge it",
            rt.what
        );
        if !inferred_problems.is_empty() && problems.is_empty() {
            out.push(
                META.finding(format!(
                    "{base}, but forward compatibility likely cannot work here: {}{note}",
                    inferred_problems.join("; ")
                ))
                .with_severity(Severity::Warning)
                .with_target(target.name.clone())
                .with_location(loc)
                .with_help(
                    "upgrade the node driver to one that natively supports this CUDA release",
                ),
            );
        } else if !problems.is_empty() {
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
                    "{base}; NVIDIA does not, or no longer, document forward compatibility here: {}{note}",
                    unknown.join(", ")
                ))
                .with_severity(Severity::Warning)
                .with_target(target.name.clone())
                .with_location(loc),
            );
        } else {
            out.push(
                META.finding(format!(
                    "{base}; forward compatibility is supported on this target{note}"
                ))
                .with_severity(Severity::Info)
                .with_target(target.name.clone())
                .with_location(loc),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::inventory::{Inventory, LibraryProvider};
    use crate::rules::check_image;
    use crate::rules::image::testutil::*;

    /// A CUDA 13.5 runtime with the cuda-compat-13-5 package (libcuda 620.70.06).
    fn cuda_13_5_with_compat() -> Inventory {
        let mut inv = Inventory::default();
        inv.cuda_libraries.push(lib(
            "usr/local/cuda-13.5/lib64/libcudart.so.13.5.37",
            "cudart",
            "13.5.37",
            LibraryProvider::System,
        ));
        inv.cuda_libraries.push(lib(
            "usr/local/cuda-13.5/compat/libcuda.so.620.70.06",
            "cuda",
            "620.70.06",
            LibraryProvider::ForwardCompat,
        ));
        inv
    }

    #[test]
    fn cuda_compat_13_5_is_judged_by_the_inferred_row_and_says_so() {
        let m = matrix();
        let inv = cuda_13_5_with_compat();
        // R535 reached end of life before 13.5: not a target; the row is inferred.
        let f = check_image(&inv, &m, &[target(&m, "A100", "535.104.05")]);
        let gl005: Vec<_> = f.iter().filter(|f| f.rule == "GL005").collect();
        assert_eq!(gl005.len(), 1, "{f:#?}");
        assert_eq!(gl005[0].severity, Severity::Warning);
        let msg = &gl005[0].message;
        assert!(
            msg.contains("Long Term Support Branch, end of life June 2026"),
            "{msg}"
        );
        assert!(msg.contains("rests on an inferred row"), "{msg}");
        assert!(msg.contains("gpulint explain GL005"), "{msg}");
        // The compat package covers the runtime, so GL002 leaves the verdict to GL005.
        assert!(!f.iter().any(|f| f.rule == "GL002"), "{f:#?}");
    }

    #[test]
    fn gl002_says_when_its_requirement_is_inferred() {
        let m = matrix();
        let mut inv = cuda_13_5_with_compat();
        inv.cuda_libraries.pop();
        let f = check_image(&inv, &m, &[target(&m, "A100", "570.124.06")]);
        let gl002: Vec<_> = f.iter().filter(|f| f.rule == "GL002").collect();
        assert_eq!(gl002.len(), 1, "{f:#?}");
        // An error through the cited minor-version floor (580); the 620 beside it is inferred.
        assert_eq!(gl002[0].severity, Severity::Error);
        let msg = &gl002[0].message;
        assert!(
            msg.contains(">= 620 (>= 580 under minor-version compatibility)"),
            "{msg}"
        );
        assert!(msg.contains("rests on an inferred row"), "{msg}");
    }

    #[test]
    fn an_inferred_row_does_not_turn_an_unknown_requirement_into_an_error() {
        let m = matrix();
        let mut inv = Inventory::default();
        inv.image
            .env
            .insert("NVIDIA_REQUIRE_CUDA".into(), "cuda>=13.6".into());
        // 620.x is R620, known only by inference to run 13.5: whether it runs 13.6 is unknown.
        let f = check_image(&inv, &m, &[target(&m, "H100", "620.70.06")]);
        let gl010: Vec<_> = f.iter().filter(|f| f.rule == "GL010").collect();
        assert_eq!(gl010.len(), 1, "{f:#?}");
        assert_ne!(gl010[0].severity, Severity::Error, "{:?}", gl010[0]);
        assert!(gl010[0].message.contains("unknown"), "{}", gl010[0].message);
    }
}
