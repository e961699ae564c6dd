//! GL010 require-cuda-unsatisfied: the image's NVIDIA_REQUIRE_CUDA makes the NVIDIA container
//! runtime refuse to start it on the target.

use super::context::ImageContext;
use crate::finding::{Finding, Severity};
use crate::fix::suggest::driver;
use crate::gpu_target::Target;
use crate::inventory::require::{Clause, Constraint, Required};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::CudaVersion;
use std::cmp::Ordering;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL010"),
    name: "require-cuda-unsatisfied",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "NVIDIA_REQUIRE_CUDA in the image is not satisfied by the target's driver/GPU",
    doc: RuleDoc {
        what: "The image config sets `NVIDIA_REQUIRE_CUDA` (all nvidia/cuda images do, e.g. \
            `cuda>=12.1 brand=tesla,driver>=470,driver<471 …`). The NVIDIA Container Toolkit \
            evaluates it before starting the container and refuses with `nvidia-container-cli: \
            requirement error: unsatisfied condition: cuda>=12.1, please update your driver to a \
            newer version, or use an earlier cuda container`.",
        why: "Space-separated constraints are alternatives (OR), comma-separated ones must all hold \
            (AND). `cuda` is compared with the CUDA version the host driver supports, `driver` \
            with the driver version, `arch` with the GPU's compute capability, `brand` with the \
            GPU brand (libnvidia-container, NVIDIA_REQUIRE_* documentation). \
            `NVIDIA_DISABLE_REQUIRE=true` disables the check.",
        example: "`nvidia/cuda:12.8.1-runtime-ubuntu22.04` (NVIDIA_REQUIRE_CUDA=\"cuda>=12.8 …\") on a \
            node with driver 535.183.01: `NVIDIA_REQUIRE_CUDA=\"cuda>=12.8 …\" is not satisfied \
            on t4-node (driver 535.183.01, CUDA 12.2): the container runtime refuses to start the \
            container (unsatisfied: cuda>=12.8)`.",
        fix: "Run on a node whose driver supports the image's CUDA, or use an image for an older \
            CUDA; set NVIDIA_DISABLE_REQUIRE=true only if you rely on forward/minor-version \
            compatibility on purpose.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
        ],
    },
};

fn cmp_ok(ord: Ordering, op: &str) -> bool {
    match op {
        ">=" => ord != Ordering::Less,
        "<=" => ord != Ordering::Greater,
        ">" => ord == Ordering::Greater,
        "<" => ord == Ordering::Less,
        "!=" => ord != Ordering::Equal,
        _ => ord == Ordering::Equal,
    }
}

/// Tri-state: Some(true/false), None = unknown.
fn eval(c: &Constraint, t: &Target, driver_cuda: Option<CudaVersion>) -> Option<bool> {
    match (c.key.as_str(), &c.value) {
        ("cuda", Required::Cuda(want)) => {
            let have = driver_cuda?;
            // Compare at major.minor: the driver reports e.g. 12.2.
            let have = CudaVersion::new(have.major, have.minor);
            Some(cmp_ok(have.cmp(want), &c.op))
        }
        ("driver", Required::Driver(want)) => {
            let have = t.driver.as_ref()?;
            Some(cmp_ok(have.cmp(want), &c.op))
        }
        ("arch", Required::Arch(want)) => {
            let ccs: Vec<_> = t.gpus.iter().map(|g| g.cc).collect();
            if ccs.is_empty() || ccs.iter().any(|c| c.is_none()) {
                return None;
            }
            Some(ccs.iter().flatten().all(|cc| cmp_ok(cc.cmp(want), &c.op)))
        }
        // The brand of a GPU is not in the target profile: unknown, unless another
        // constraint of the same clause already decides. A value its key's numbering does
        // not read is unknown too.
        _ => None,
    }
}

/// Brands libnvidia-container reports for current GPUs. nvidia/cuda images list a clause per
/// brand for each supported driver branch; when every one of these is allowed for the
/// target's driver, the GPU's brand cannot matter.
const COMMON_BRANDS: &[&str] = &[
    "tesla",
    "nvidia",
    "geforce",
    "quadro",
    "nvidiartx",
    "unknown",
];

/// Evaluate the whole expression: OR over space-separated clauses, AND within a clause.
pub fn evaluate(
    clauses: &[Clause],
    t: &Target,
    driver_cuda: Option<CudaVersion>,
) -> (Option<bool>, Vec<String>) {
    let mut any_unknown = false;
    let mut failed = Vec::new();
    // Brands whose clause holds apart from the brand itself.
    let mut brands_ok: Vec<String> = Vec::new();
    for clause in clauses {
        let cs = &clause.constraints;
        let brand = cs
            .iter()
            .find(|c| c.key == "brand" && c.op == "=")
            .and_then(|c| match &c.value {
                Required::Text(b) => Some(b.to_ascii_lowercase()),
                _ => None,
            });
        if let Some(b) = &brand {
            let rest_true = cs
                .iter()
                .filter(|c| c.key != "brand")
                .all(|c| eval(c, t, driver_cuda) == Some(true));
            if rest_true {
                brands_ok.push(b.clone());
            }
        }
        let mut clause_val = Some(true);
        for c in cs {
            match eval(c, t, driver_cuda) {
                Some(false) => {
                    clause_val = Some(false);
                    break;
                }
                None => clause_val = None,
                Some(true) => {}
            }
        }
        match clause_val {
            Some(true) => return (Some(true), vec![]),
            None => any_unknown = true,
            Some(false) => failed.push(clause.text.clone()),
        }
    }
    if COMMON_BRANDS
        .iter()
        .all(|b| brands_ok.iter().any(|x| x == b))
    {
        return (Some(true), vec![]);
    }
    if any_unknown {
        (None, failed)
    } else {
        (Some(false), failed)
    }
}

// The finding carries the target (every format shows it): messages say "the target".
/// The CUDA release a `cuda>=12.4` clause asks for.
fn required_cuda(clause: &str) -> Option<crate::version::CudaVersion> {
    let rest = &clause[clause.find("cuda>=")? + 6..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let image = &ctx.inventory.image;
    let env = &image.env;
    let Some((expr, clauses)) = image.require_cuda() else {
        return;
    };
    if env
        .get("NVIDIA_DISABLE_REQUIRE")
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
    {
        return;
    }
    if target.driver.is_none() {
        return;
    }
    let bound = ctx.driver_cuda_bound();
    let driver_cuda = bound.map(|d| d.at_least);
    match evaluate(&clauses, target, driver_cuda) {
        // A driver newer than every row supports at least the newest known release: a
        // requirement that fails at that lower bound may still hold, so it is unknown.
        (Some(false), failed) if bound.is_some_and(|d| d.open) => out.push(
            META.finding(format!(
                "NVIDIA_REQUIRE_CUDA=\"{expr}\": whether the target satisfies it is unknown: driver {} is of a branch newer than every branch a document ties to a CUDA release, so it supports CUDA {} (unsatisfied at that lower bound: {})",
                target.driver.as_ref().map(|d| d.to_string()).unwrap_or_default(),
                bound.map(|d| d.to_string()).unwrap_or_default(),
                failed.first().cloned().unwrap_or_default()
            ))
            .with_severity(Severity::Warning)
            .with_target(target.name.clone()),
        ),
        (Some(false), failed) => {
            // The container toolkit compares the driver's own CUDA version: minor-version
            // compatibility does not count, so the release's own minimum is what satisfies it.
            let fixes = failed
                .first()
                .and_then(|c| required_cuda(c))
                .map(|c| driver::fixes_for_cuda(ctx.facts, driver::Need::Native(c), target))
                .unwrap_or_default();
            let mut f = META
                .finding(format!(
                    "NVIDIA_REQUIRE_CUDA=\"{expr}\" is not satisfied by the target's driver {} (CUDA {}): the container runtime refuses to start the container (unsatisfied: {})",
                    target.driver.as_ref().map(|d| d.to_string()).unwrap_or_else(|| "unknown".into()),
                    driver_cuda.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into()),
                    failed.first().cloned().unwrap_or_default()
                ))
                .with_target(target.name.clone())
                .with_help(match fixes.first() {
                    Some(fix) => format!(
                        "upgrade the node driver to {}, or use an image built for an older CUDA",
                        fix.replacement
                    ),
                    None => "upgrade the node driver, or use an image built for an older CUDA".into(),
                });
            for fix in fixes {
                f = f.with_fix(fix);
            }
            out.push(f)
        }
        (None, _) => out.push(
            META.finding(format!(
                "NVIDIA_REQUIRE_CUDA=\"{expr}\": whether {} satisfies it is unknown (GPU brand or CUDA version of the driver unknown)",
                target.name
            ))
            .with_severity(Severity::Info)
            .with_target(target.name.clone()),
        ),
        (Some(true), _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::ComputeCapability;
    use crate::gpu_target::TargetGpu;
    use crate::inventory::require::require_cuda_clauses;

    fn target(driver: &str) -> Target {
        Target {
            name: "t".into(),
            driver: Some(driver.parse().unwrap()),
            driver_cuda: None,
            gpus: vec![TargetGpu {
                name: "H100".into(),
                cc: Some(ComputeCapability::new(9, 0)),
                datacenter: Some(true),
                uuid: None,
                mig_mode: None,
                count: None,
            }],
            platform: None,
        }
    }

    #[test]
    fn or_of_and_clauses() {
        let e = "cuda>=12.1 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=525,driver<526";
        // CUDA 12.2 driver: first clause holds.
        assert_eq!(
            evaluate(
                &require_cuda_clauses(e),
                &target("535.104.05"),
                Some(CudaVersion::new(12, 2))
            )
            .0,
            Some(true)
        );
        // 11.4 driver of branch 470: cuda fails, brand unknown with driver in range → unknown.
        assert_eq!(
            evaluate(
                &require_cuda_clauses(e),
                &target("470.82.01"),
                Some(CudaVersion::new(11, 4))
            )
            .0,
            None
        );
        // 11.4 driver of branch 450: everything fails.
        assert_eq!(
            evaluate(
                &require_cuda_clauses(e),
                &target("450.80.02"),
                Some(CudaVersion::new(11, 0))
            )
            .0,
            Some(false)
        );
    }

    #[test]
    fn every_brand_listed_for_the_branch_means_brand_does_not_matter() {
        // The shape of nvidia/cuda:12.4.1 images' NVIDIA_REQUIRE_CUDA (two branches shown).
        let mut e = String::from("cuda>=12.4");
        for branch in [470u32, 535] {
            for b in [
                "tesla",
                "unknown",
                "nvidia",
                "nvidiartx",
                "vapps",
                "vpc",
                "vcs",
                "vws",
                "cloudgaming",
                "quadro",
                "quadrortx",
                "titan",
                "titanrtx",
                "geforce",
                "geforcertx",
            ] {
                e.push_str(&format!(
                    " brand={b},driver>={branch},driver<{}",
                    branch + 1
                ));
            }
        }
        // A 535 driver supports CUDA 12.2 only, but the 535 clauses cover every brand.
        assert_eq!(
            evaluate(
                &require_cuda_clauses(&e),
                &target("535.104.05"),
                Some(CudaVersion::new(12, 2))
            )
            .0,
            Some(true)
        );
        // A 545 driver (CUDA 12.3) matches neither cuda>=12.4 nor a listed branch.
        assert_eq!(
            evaluate(
                &require_cuda_clauses(&e),
                &target("545.23.08"),
                Some(CudaVersion::new(12, 3))
            )
            .0,
            Some(false)
        );
        // Only some brands listed for 470: the brand decides, unknown.
        let partial = "cuda>=12.4 brand=tesla,driver>=470,driver<471";
        assert_eq!(
            evaluate(
                &require_cuda_clauses(partial),
                &target("470.82.01"),
                Some(CudaVersion::new(11, 4))
            )
            .0,
            None
        );
    }
}
