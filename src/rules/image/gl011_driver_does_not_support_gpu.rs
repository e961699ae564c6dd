//! GL011 driver-does-not-support-gpu: the target's driver is older than the first driver that
//! knows the GPU, so nothing CUDA runs on it at all, whatever the image carries.

use super::context::ImageContext;
use crate::finding::{Finding, Severity};
use crate::matrix::{inferred_note, Basis, Segment};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL011"),
    name: "driver-does-not-support-gpu",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "The target's driver is older than the first driver that supports its GPU",
    doc: RuleDoc {
        what: "The node's NVIDIA driver predates the GPU. A B200 or RTX 5090 (Blackwell, compute \
            capability 10.0 / 12.0) with driver 550.54.15: the driver does not bind to the \
            device, `nvidia-smi` does not list it and every CUDA call fails with \
            `cudaErrorNoDevice` or `CUDA_ERROR_NOT_SUPPORTED`, whatever the image contains.",
        why: "NVIDIA adds support for a GPU architecture in a CUDA release; that release's minimum \
            driver (CUDA Toolkit release notes, table 3) is the first driver branch that drives \
            GPUs of that architecture. gpulint takes the first CUDA release whose nvcc targets \
            the GPU's `sm_XY` (cuda_arch.toml) and that release's minimum Linux driver \
            (cuda_driver.toml). Where a CUDA release between the last one without the \
            architecture and the first one with it has no row, the floor is uncertain between \
            their drivers: a driver in that gap is reported as unknown rather than as an error. \
            Finer than the architecture, for Blackwell and later GPUs (only the open kernel \
            modules drive them), where NVIDIA's PCI device-ID tables (open-gpu-kernel-modules \
            README, every release) first list a model later than its architecture's floor, a \
            driver below that first release is a warning (an RTX 5090 needs 570.86.16, not \
            sm_120's 570.26). A verdict resting on an inferred row (the A800's compute \
            capability) says so and is a warning. Jetson boards are skipped (their driver ships with JetPack/L4T and is numbered \
            differently).",
        example: "A GeForce RTX 5090 (compute capability 12.0) node with driver 550.54.15: `driver \
            550.54.15 does not support NVIDIA GeForce RTX 5090 (compute capability 12.0): the \
            first CUDA release that supports compute capability 12.0 (sm_120) is CUDA 12.8, whose \
            minimum Linux driver is 570.26`.",
        fix: "Install a driver at or above the floor named in the message (the production branch of \
            the same or a newer release), or schedule the workload on GPUs the driver supports.",
        sources: &[
            "https://docs.nvidia.com/cuda/archive/12.8.0/cuda-toolkit-release-notes/index.html",
            "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html#cuda-driver",
            "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/README.md#compatible-gpus",
            "https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/",
        ],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let Some(driver) = &target.driver else { return };
    for gpu in &target.gpus {
        let Some(cc) = gpu.cc else { continue };
        if ctx
            .facts
            .gpu(&gpu.name)
            .is_some_and(|m| m.value.segment == Segment::Jetson)
        {
            continue;
        }
        let Some(floor) = ctx.facts.gpu_driver_floor(cc.sm()).map(|f| f.value) else {
            out.push(
                META.finding(format!(
                    "whether driver {driver} supports {} (compute capability {cc}) is unknown: no known CUDA release targets sm_{}",
                    gpu.name,
                    cc.sm()
                ))
                .with_target(target.name.clone())
                .with_help("check NVIDIA's driver release notes for the first driver supporting this GPU"),
            );
            continue;
        };
        if *driver >= floor.driver {
            // Finer than the architecture: the first driver NVIDIA's PCI ID tables list the
            // model in (an RTX 5090 needs more than sm_120's 570.26).
            let first = ctx
                .facts
                .gpu(&gpu.name)
                .and_then(|m| ctx.facts.gpu_first_listed(m.value));
            if let Some(first) = first.filter(|f| *driver < f.value) {
                out.push(
                    META.finding(format!(
                        "driver {driver} likely does not support {} (compute capability {cc}): NVIDIA's open kernel modules list it from driver {} on, though compute capability {cc} alone needs only {}",
                        gpu.name, first.value, floor.driver
                    ))
                    .with_severity(Severity::Warning)
                    .with_target(target.name.clone())
                    .with_help(format!(
                        "install driver >= {}; source: {}",
                        first.value, first.source
                    )),
                );
            }
            continue;
        }
        let reason = format!(
            "the first CUDA release that supports compute capability {cc} (sm_{}) is CUDA {}, whose minimum Linux driver is {}",
            cc.sm(),
            floor.first_release,
            floor.driver
        );
        // Rows the verdict rests on that no document states: the GPU's compute capability,
        // the first release's driver. Such a verdict says so and stays below an error.
        let mut inferred = Vec::new();
        if let Some(m) = ctx
            .facts
            .gpu(&gpu.name)
            .filter(|m| m.basis == Basis::Inferred)
        {
            inferred.push(format!(
                "{} -> compute capability {}",
                m.value.name, m.value.cc
            ));
        }
        if ctx
            .facts
            .cuda_min_driver(floor.first_release)
            .is_some_and(|r| r.basis == Basis::Inferred)
        {
            inferred.push(format!(
                "CUDA {} -> driver {}",
                floor.first_release, floor.driver
            ));
        }
        let note = if inferred.is_empty() {
            String::new()
        } else {
            inferred_note(META.code.as_str(), &inferred.join(", "))
        };
        let surely = floor
            .surely_unsupported_below
            .as_ref()
            .is_some_and(|below| driver < below);
        let finding = if surely && inferred.is_empty() {
            META.finding(format!(
                "driver {driver} does not support {} (compute capability {cc}): {reason}",
                gpu.name
            ))
        } else if surely {
            META.finding(format!(
                "driver {driver} likely does not support {} (compute capability {cc}): {reason}{note}",
                gpu.name
            ))
            .with_severity(Severity::Warning)
        } else {
            META.finding(format!(
                "whether driver {driver} supports {} (compute capability {cc}) is unknown: {reason}, and the CUDA releases between have no architecture row{note}",
                gpu.name
            ))
            .with_severity(Severity::Warning)
        };
        let mut finding = finding.with_target(target.name.clone()).with_help(format!(
            "install driver >= {} (R{} or newer); source: {}",
            floor.driver,
            floor.driver.branch(),
            floor.source
        ));
        if let Some(fix) = crate::fix::suggest::driver::fix_for_gpu(ctx.facts, cc.sm()) {
            finding = finding.with_fix(fix);
        }
        out.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::gpu_target::cli::targets_from_flags;
    use crate::inventory::Inventory;
    use crate::matrix::Facts;
    use crate::rules::check_image;

    fn gl011(gpu: &str, driver: &str) -> Vec<(Severity, String, Option<String>)> {
        let m = Facts::embedded().unwrap();
        let t = targets_from_flags(m.matrix(), &[gpu.into()], Some(driver), None).unwrap();
        check_image(&Inventory::default(), &m, &t)
            .into_iter()
            .filter(|f| f.rule == "GL011")
            .map(|f| (f.severity, f.message, f.help))
            .collect()
    }

    #[test]
    fn blackwell_on_a_550_driver_is_an_error_naming_the_driver_to_install() {
        for gpu in ["B200", "RTX 5090"] {
            let f = gl011(gpu, "550.54.15");
            assert_eq!(f.len(), 1, "{gpu}: {f:#?}");
            assert_eq!(f[0].0, Severity::Error);
            assert!(f[0].1.contains("CUDA 12.8"), "{}", f[0].1);
            let help = f[0].2.as_deref().unwrap_or_default();
            assert!(help.contains("570.26"), "{help}");
        }
        assert!(gl011("B200", "570.124.06").is_empty());
        assert!(gl011("RTX 5090", "575.51.03").is_empty());
    }

    #[test]
    fn a_model_listed_after_its_architecture_needs_its_own_first_driver() {
        // sm_120 came with CUDA 12.8 (570.26), but NVIDIA's open kernel modules list the
        // RTX 5090 (PCI 2B85) only from 570.86.16 on.
        let f = gl011("RTX 5090", "570.86.10");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].0, Severity::Warning);
        assert!(f[0].1.contains("570.86.16"), "{}", f[0].1);
        assert!(f[0]
            .2
            .as_deref()
            .unwrap_or_default()
            .contains("blob/570.86.16/"));
        assert!(gl011("RTX 5090", "570.86.16").is_empty());
        // Before Blackwell the proprietary driver drove GPUs the open README lists only later
        // (the T4 from 575.51.02 on): the architecture's floor alone decides.
        assert!(gl011("T4", "535.104.05").is_empty());
        assert!(gl011("H20", "535.43.20").is_empty());
        assert!(gl011("A100", "450.80.02").is_empty());
    }

    #[test]
    fn a_verdict_on_an_inferred_gpu_row_says_so_and_is_no_error() {
        // The A800's compute capability (8.0) is inferred from its PCI block: sm_80 arrived
        // with CUDA 11.0, so 440.33 predates it, but only by that inference.
        let f = gl011("NVIDIA A800 80GB PCIe", "440.33");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].0, Severity::Warning, "{}", f[0].1);
        assert!(f[0].1.contains("rests on an inferred row"), "{}", f[0].1);
        assert!(
            f[0].1.contains("NVIDIA A800 -> compute capability 8.0"),
            "{}",
            f[0].1
        );
    }

    #[test]
    fn hopper_on_535_is_clean_and_on_515_is_not() {
        assert!(gl011("H100", "535.104.05").is_empty());
        // sm_90 arrived with CUDA 11.8 (driver 520.61.05); the 11.7 row (measured from its
        // ptxas) is known not to target it, so this is certain: an error.
        let f = gl011("H100", "515.65.01");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].0, Severity::Error, "{}", f[0].1);
        assert!(f[0].1.contains("CUDA 11.8"), "{}", f[0].1);
    }
}
