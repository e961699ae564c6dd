//! Drivers that fix a driver verdict: the exact minimum driver (and its branch) for a CUDA
//! release (`cuda_driver.toml`) or for a GPU (`cuda_arch.toml` × `cuda_driver.toml`), and
//! whether NVIDIA's forward-compatibility package (`cuda-compat-X-Y`, `forward_compat.toml`)
//! lets the current driver run it instead: only on datacenter GPUs and supported branches.

use super::basis_of;
use crate::fix::{Applicability, Change, Fix, FixBasis, FixKind};
use crate::gpu_target::Target;
use crate::matrix::{Facts, ForwardCompat};
use crate::version::CudaVersion;

/// What the software needs of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// To run this CUDA release's runtime: minor-version compatibility suffices.
    Runtime(CudaVersion),
    /// To be this CUDA release or newer by itself: NVIDIA_REQUIRE_CUDA, PTX JIT of its ISA.
    Native(CudaVersion),
}

/// The driver upgrade that satisfies `need` on `target`, then (when it helps) the
/// forward-compatibility package that lets the current driver run it. Empty when no row
/// gives the minimum driver.
pub fn fixes_for_cuda(facts: &Facts, need: Need, target: &Target) -> Vec<Fix> {
    let (cuda, native) = match need {
        Need::Runtime(c) => (c, false),
        Need::Native(c) => (c, true),
    };
    let mut out = Vec::new();
    let Some(min) = facts.cuda_min_driver(cuda) else {
        return out;
    };
    let mut basis = vec![basis_of(
        "cuda_driver",
        format!("CUDA {}: Linux >= {}", cuda.major_minor(), min.value),
        &min,
    )];
    let floor = (!native && cuda.major >= 11)
        .then(|| facts.minor_compat_floor(cuda.major))
        .flatten()
        .filter(|f| f.value < min.value);
    let (needed, rationale) = match &floor {
        Some(f) => {
            basis.push(basis_of(
                "cuda_driver",
                format!("minor_compat {}.x: Linux >= {}", cuda.major, f.value),
                f,
            ));
            (
                &f.value,
                format!(
                    "CUDA {c} runs on driver >= {f} under minor-version compatibility (its own minimum is {m}, needed for PTX JIT of CUDA {c} code)",
                    c = cuda.major_minor(),
                    f = f.value,
                    m = min.value
                ),
            )
        }
        None => (
            &min.value,
            format!(
                "CUDA {} needs driver >= {} (R{}){}",
                cuda.major_minor(),
                min.value,
                min.value.branch(),
                if native {
                    " by itself: minor-version compatibility does not count here"
                } else {
                    ""
                }
            ),
        ),
    };
    out.push(Fix {
        kind: FixKind::Driver,
        change: Some(Change::Driver {
            min: needed.clone(),
            branch: needed.branch(),
        }),
        replacement: format!("driver >= {needed} (branch R{} or newer)", needed.branch()),
        rationale,
        basis,
        edits: Vec::new(),
        applicability: Applicability::Manual,
    });
    match compat_fix(facts, cuda, target) {
        Some(compat) => out.push(compat),
        None => {
            if let (Some(first), Some(why)) = (
                out.first_mut(),
                why_compat_does_not_help(facts, cuda, target),
            ) {
                first.rationale.push_str(&format!("; {why}"));
            }
        }
    }
    out
}

/// The cuda-compat package that lets the target's current driver run `cuda`, when NVIDIA's
/// table says it does on that branch and every GPU of the target is a datacenter part. A
/// driver that runs `cuda` under minor-version compatibility reads as "not needed" here even
/// where a native need (PTX JIT) would want the package: no suggestion then, rather than one
/// the facts do not show.
fn compat_fix(facts: &Facts, cuda: CudaVersion, target: &Target) -> Option<Fix> {
    let driver = target.driver.as_ref()?;
    let all_datacenter =
        !target.gpus.is_empty() && target.gpus.iter().all(|g| g.datacenter == Some(true));
    let fc = facts.forward_compat(driver, &cuda);
    if fc.value != ForwardCompat::Supported || !all_datacenter {
        return None;
    }
    let package = format!("cuda-compat-{}-{}", cuda.major, cuda.minor);
    Some(Fix {
        kind: FixKind::Driver,
        change: Some(Change::CudaCompat {
            package: package.clone(),
            cuda,
        }),
        replacement: format!("install {package} in the image (keeps driver {driver})"),
        rationale: format!(
            "NVIDIA's forward-compatibility table marks {package} compatible with the R{} branch, and the target's GPUs are datacenter parts",
            driver.branch()
        ),
        basis: vec![basis_of(
            "forward_compat",
            format!("{package} on R{}: compatible", driver.branch()),
            &fc,
        )],
        edits: Vec::new(),
        applicability: Applicability::Manual,
    })
}

/// Why cuda-compat does not help on `target` for `cuda` (for help lines), when it does not.
pub fn why_compat_does_not_help(
    facts: &Facts,
    cuda: CudaVersion,
    target: &Target,
) -> Option<String> {
    let driver = target.driver.as_ref()?;
    if target.gpus.iter().any(|g| g.datacenter == Some(false)) {
        return Some("cuda-compat does not help: it works only on datacenter GPUs".into());
    }
    match facts.forward_compat(driver, &cuda).value {
        ForwardCompat::Unsupported { reason } | ForwardCompat::Unlisted { reason } => {
            Some(format!("cuda-compat does not help: {reason}"))
        }
        _ => None,
    }
}

/// The driver that can drive a GPU of compute capability `sm` (its first CUDA release's
/// minimum driver). A forward-compatibility package cannot stand in: it replaces the
/// user-mode CUDA driver only, and the kernel module must know the GPU.
pub fn fix_for_gpu(facts: &Facts, sm: u32) -> Option<Fix> {
    let floor = facts.gpu_driver_floor(sm)?;
    let mut basis: Vec<FixBasis> = vec![basis_of(
        "cuda_arch",
        format!("CUDA {}: first to list sm_{sm}", floor.value.first_release),
        &floor,
    )];
    if let Some(min) = facts.cuda_min_driver(floor.value.first_release) {
        basis.push(basis_of(
            "cuda_driver",
            format!(
                "CUDA {}: Linux >= {}",
                floor.value.first_release.major_minor(),
                min.value
            ),
            &min,
        ));
    }
    Some(Fix {
        kind: FixKind::Driver,
        change: Some(Change::Driver {
            min: floor.value.driver.clone(),
            branch: floor.value.driver.branch(),
        }),
        replacement: format!(
            "driver >= {} (branch R{} or newer)",
            floor.value.driver,
            floor.value.driver.branch()
        ),
        rationale: format!(
            "CUDA {} is the first release that lists sm_{sm}, and its minimum Linux driver is {}; cuda-compat cannot help (it replaces only the user-mode driver; the kernel module must know the GPU)",
            floor.value.first_release, floor.value.driver
        ),
        basis,
        edits: Vec::new(),
        applicability: Applicability::Manual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_target::TargetGpu;
    use crate::version::DriverVersion;

    fn target(cc: (u32, u32), datacenter: bool, driver: &str) -> Target {
        Target {
            name: "t".into(),
            driver: Some(driver.parse().unwrap()),
            driver_cuda: None,
            gpus: vec![TargetGpu {
                name: "gpu".into(),
                cc: Some(crate::arch::ComputeCapability::new(cc.0, cc.1)),
                datacenter: Some(datacenter),
                uuid: None,
                mig_mode: None,
                count: None,
            }],
            platform: None,
        }
    }

    fn driver_of(fix: &Fix) -> DriverVersion {
        let v = fix
            .replacement
            .strip_prefix("driver >= ")
            .and_then(|r| r.split(' ').next())
            .unwrap();
        v.parse().unwrap()
    }

    #[test]
    fn the_suggested_driver_satisfies_the_tables() {
        let f = Facts::embedded().unwrap();
        let t = target((9, 0), true, "470.82.01");
        for (major, minor) in [(11, 8), (12, 4), (12, 8), (13, 0)] {
            let cuda = CudaVersion::new(major, minor);
            // Native: the release's own minimum, and nothing lower.
            let fixes = fixes_for_cuda(&f, Need::Native(cuda), &t);
            let d = driver_of(&fixes[0]);
            assert_eq!(d, f.cuda_min_driver(cuda).unwrap().value, "{cuda}");
            assert!(f.driver_cuda(&d).unwrap().value.at_least >= CudaVersion::new(major, minor));
            // Runtime: the minor-version floor runs it.
            let fixes = fixes_for_cuda(&f, Need::Runtime(cuda), &t);
            let d = driver_of(&fixes[0]);
            assert!(d <= f.cuda_min_driver(cuda).unwrap().value);
            assert!(d >= f.minor_compat_floor(major).unwrap().value);
        }
    }

    #[test]
    fn cuda_compat_is_offered_only_where_the_table_says_it_works() {
        let f = Facts::embedded().unwrap();
        let cuda = CudaVersion::new(13, 0);
        // cuda-compat-13-0 is marked compatible with R570 (forward_compat.toml).
        let dc = target((9, 0), true, "570.124.06");
        let fixes = fixes_for_cuda(&f, Need::Runtime(cuda), &dc);
        assert_eq!(fixes.len(), 2, "{fixes:#?}");
        assert!(fixes[1].replacement.contains("cuda-compat-13-0"));
        assert_eq!(
            f.forward_compat(dc.driver.as_ref().unwrap(), &cuda).value,
            ForwardCompat::Supported
        );
        // Not on a GeForce card, and not on a branch the table does not list.
        let geforce = target((8, 9), false, "570.124.06");
        assert_eq!(fixes_for_cuda(&f, Need::Runtime(cuda), &geforce).len(), 1);
        assert!(why_compat_does_not_help(&f, cuda, &geforce).is_some());
        let eol = target((9, 0), true, "525.60.13");
        assert_eq!(fixes_for_cuda(&f, Need::Runtime(cuda), &eol).len(), 1);
    }

    #[test]
    fn a_gpu_needs_the_driver_of_the_first_release_that_lists_it() {
        let f = Facts::embedded().unwrap();
        let fix = fix_for_gpu(&f, 120).unwrap();
        let d = driver_of(&fix);
        let floor = f.gpu_driver_floor(120).unwrap().value;
        assert_eq!(d, floor.driver);
        assert_eq!(
            f.cuda_min_driver(floor.first_release).unwrap().value,
            floor.driver
        );
    }
}
