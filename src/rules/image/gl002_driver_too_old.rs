//! GL002 driver-too-old: the image's CUDA runtime needs a newer driver than the target has.

use super::context::{ImageContext, RuntimeUse};
use crate::finding::{Finding, Severity};
use crate::fix::suggest::{driver, torch};
use crate::matrix::{inferred_note, Basis, Facts};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::DriverVersion;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL002"),
    name: "driver-too-old",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "The CUDA runtime in the image needs a newer driver than the target's",
    doc: RuleDoc {
        what: "The image loads a CUDA runtime (libcudart, or the CUDA a framework such as PyTorch \
            was built for) that needs a newer NVIDIA driver than the target runs, even under \
            minor-version compatibility. CUDA initialisation fails with `CUDA driver version is \
            insufficient for CUDA runtime version` (cudaErrorInsufficientDriver) or torch reports \
            `torch.cuda.is_available() == False` with a driver warning.",
        why: "Each CUDA toolkit release states a minimum driver (CUDA Toolkit release notes, table \
            3). Since CUDA 11, a runtime also works on an older driver of the same CUDA major if \
            the driver is at least that major's minor-version-compatibility floor (e.g. >= \
            525.60.13 for 12.x), with limits (no JIT of newer PTX, see GL003). Minor-version \
            compatibility never crosses a CUDA major: a 12.x driver cannot run a 13.x runtime. \
            The cuda-compat (forward compatibility) package can lift the limit on datacenter GPUs \
            only (see GL005).",
        example: "Torch 2.11.0 built for CUDA 13.0 on a node with driver 570.133.20 (CUDA 12.8).",
        fix: "Upgrade the node's driver to at least the stated version, or install the framework \
            build for an older CUDA (e.g. the cu126 / cu128 PyTorch wheel from \
            download.pytorch.org).",
        sources: &[
            "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html#cuda-driver",
            "https://docs.nvidia.com/deploy/cuda-compatibility/",
        ],
    },
};

/// How a runtime fares on a driver.
pub enum DriverVerdict {
    /// driver >= the release's documented minimum.
    Native,
    /// Below the release minimum but at or above the major's minor-version floor.
    MinorCompat { floor: DriverVersion },
    /// Below both.
    TooOld {
        required: Option<DriverVersion>,
        floor: Option<DriverVersion>,
    },
    /// The matrix has no row for this runtime.
    Unknown,
}

pub fn driver_verdict(facts: &Facts, rt: &RuntimeUse, driver: &DriverVersion) -> DriverVerdict {
    let required = facts.cuda_min_driver(rt.version).map(|d| d.value);
    // Minor-version compatibility exists from CUDA 11 on.
    let floor = if rt.version.major >= 11 {
        facts.minor_compat_floor(rt.version.major).map(|f| f.value)
    } else {
        None
    };
    match (&required, &floor) {
        (Some(req), _) if driver >= req => DriverVerdict::Native,
        (_, Some(f)) if driver >= f => DriverVerdict::MinorCompat { floor: f.clone() },
        (None, None) => DriverVerdict::Unknown,
        _ => DriverVerdict::TooOld { required, floor },
    }
}

pub fn describe_requirement(
    required: &Option<DriverVersion>,
    floor: &Option<DriverVersion>,
) -> String {
    match (required, floor) {
        (Some(r), Some(f)) => format!(">= {r} (>= {f} under minor-version compatibility)"),
        (Some(r), None) => format!(">= {r}"),
        (None, Some(f)) => format!(">= {f} (minor-version compatibility floor)"),
        (None, None) => "unknown".into(),
    }
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let Some(driver) = &target.driver else { return };
    let compat = ctx.forward_compat_driver();
    for rt in ctx.cuda_runtimes() {
        match driver_verdict(ctx.facts, &rt, driver) {
            DriverVerdict::TooOld { required, floor } => {
                // With a cuda-compat package that covers this runtime, GL005 decides.
                if let Some((cv, _)) = &compat {
                    if ctx
                        .facts
                        .driver_cuda(cv)
                        .map(|c| c.value.at_least)
                        .is_some_and(|c| (c.major, c.minor) >= (rt.version.major, rt.version.minor))
                    {
                        continue;
                    }
                }
                let mut fixes =
                    driver::fixes_for_cuda(ctx.facts, driver::Need::Runtime(rt.version), target);
                // The newest build of the installed torch that runs on this driver and GPUs.
                let torch_build = ctx
                    .inventory
                    .python_packages
                    .iter()
                    .any(|p| p.name == "torch")
                    .then(|| {
                        torch::newest_for(ctx.facts, &torch::Pool::of(std::slice::from_ref(target)))
                    })
                    .flatten();
                let upgrade = match (fixes.first(), &required) {
                    (Some(fx), _) => format!("upgrade the driver to {}", fx.replacement),
                    (None, Some(r)) => format!("upgrade the driver to >= {r}"),
                    (None, None) => "upgrade the driver".into(),
                };
                let instead = match &torch_build {
                    Some(b) => format!(
                        "or install the newest torch build that runs on driver {driver}: {}",
                        b.install_line()
                    ),
                    None => "or use a build of the software for an older CUDA".into(),
                };
                if let Some(b) = &torch_build {
                    fixes.push(b.fix());
                }
                let note = match ctx.facts.cuda_min_driver(rt.version) {
                    Some(r) if r.basis == Basis::Inferred => inferred_note(
                        META.code.as_str(),
                        &format!(
                            "CUDA {}.{} -> driver {}",
                            rt.version.major, rt.version.minor, r.value
                        ),
                    ),
                    _ => String::new(),
                };
                let mut f = META
                    .finding(format!(
                        "{} needs driver {}; the target's driver is {driver}{note}",
                        rt.brief,
                        describe_requirement(&required, &floor),
                    ))
                    .with_target(target.name.clone())
                    .with_help(format!("{upgrade}, {instead}"));
                for fix in fixes {
                    f = f.with_fix(fix);
                }
                if let Some(l) = rt.location.clone() {
                    f = f.with_location(l);
                }
                out.push(f);
            }
            DriverVerdict::Unknown => {
                let mut f = META
                    .finding(format!(
                        "{}: the minimum driver for CUDA {} is unknown to gpulint's matrices; cannot judge driver {driver}",
                        rt.brief, rt.version
                    ))
                    .with_severity(Severity::Info)
                    .with_target(target.name.clone());
                if let Some(l) = rt.location.clone() {
                    f = f.with_location(l);
                }
                out.push(f);
            }
            DriverVerdict::Native | DriverVerdict::MinorCompat { .. } => {}
        }
    }
}
