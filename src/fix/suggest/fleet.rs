//! The closing lines of a fleet report: per pool, the one change that makes every failing
//! image run there, read off the failing findings' own fixes; per image, the one change that
//! makes it run on every pool, computed from the tables over all pools together. `None`
//! when no single change does it: never a template.

use super::arch_list::{self, ArchList, Syntax};
use super::torch::{builds_for, Installed, Pool};
use crate::fix::{Applicability, Change, Fix, FixKind};
use crate::gpu_target::Target;
use crate::matrix::Facts;
use crate::version::{CudaVersion, DriverVersion};

/// The driver a driver-upgrade fix asks for; `None` for any other fix (cuda-compat too: it
/// keeps the driver).
pub fn driver_floor(fix: &Fix) -> Option<DriverVersion> {
    match &fix.change {
        Some(Change::Driver { min, .. }) => Some(min.clone()),
        _ => None,
    }
}

/// Whether a fix installs another torch build (what [`super::torch::TorchBuild::fix`] makes).
fn is_torch_build(fix: &Fix) -> bool {
    matches!(fix.change, Some(Change::TorchBuild { .. }))
}

/// The one change that removes every failing finding, given each finding's fixes: when each
/// finding lists a driver upgrade, the highest of their lowest floors (a driver at or above
/// it satisfies each); else a fix every finding lists; else `None`.
pub fn common_fix(failing: &[&[Fix]]) -> Option<Fix> {
    if failing.is_empty() {
        return None;
    }
    // Each finding is satisfied by the lowest driver it accepts.
    let floors: Option<Vec<(DriverVersion, &Fix)>> = failing
        .iter()
        .map(|fixes| {
            fixes
                .iter()
                .filter_map(|f| driver_floor(f).map(|d| (d, f)))
                .min_by(|a, b| a.0.cmp(&b.0))
        })
        .collect();
    if let Some(floors) = floors {
        let (top, top_fix) = floors.iter().max_by(|a, b| a.0.cmp(&b.0))?;
        let mut basis = Vec::new();
        for b in floors.iter().flat_map(|(_, f)| &f.basis) {
            if !basis.contains(b) {
                basis.push(b.clone());
            }
        }
        return Some(Fix {
            kind: FixKind::Driver,
            change: top_fix.change.clone(),
            replacement: top_fix.replacement.clone(),
            rationale: format!(
                "driver {top} is at or above what each of the {} failing findings needs; the highest: {}",
                floors.len(),
                top_fix.rationale
            ),
            basis,
            edits: Vec::new(),
            applicability: Applicability::Manual,
        });
    }
    failing[0]
        .iter()
        .find(|c| {
            failing[1..]
                .iter()
                .all(|fixes| fixes.iter().any(|f| same_change(f, c)))
        })
        .cloned()
}

/// Whether two fixes make the same change: their structured changes when both have one,
/// else their wording.
fn same_change(a: &Fix, b: &Fix) -> bool {
    match (&a.change, &b.change) {
        (Some(x), Some(y)) => x == y,
        _ => a.replacement == b.replacement,
    }
}

/// The one change that makes an image run on every target, with its one-line summary. When
/// each failing finding is one a torch build fixes (it lists one) and the image has torch:
/// the build nearest the installed one whose rows cover every GPU and driver of all targets.
/// When each lists an architecture list (code built in the image): the list covering every
/// GPU of all targets, in the findings' syntax, if the image's nvcc compiles all of it.
/// Otherwise the driver every failing finding accepts ([`common_fix`]). `None` when neither
/// exists.
pub fn image_fix(
    facts: &Facts,
    targets: &[Target],
    torch: Option<Installed>,
    nvcc: Option<CudaVersion>,
    failing: &[&[Fix]],
) -> Option<(String, Fix)> {
    if failing.is_empty() {
        return None;
    }
    let pools = crate::vocab::count(targets.len(), "pool", "pools");
    if let Some(installed) = torch.filter(|_| failing.iter().all(|f| f.iter().any(is_torch_build)))
    {
        let b = builds_for(facts, &Pool::of(targets), installed)
            .into_iter()
            .next()?;
        let summary = format!(
            "torch {}+{} runs on all {pools}: {}",
            b.version,
            b.variant.tag,
            b.install_line()
        );
        return Some((summary, b.fix()));
    }
    if failing
        .iter()
        .all(|f| f.iter().any(|x| syntax_of_list(x).is_some()))
    {
        return arch_list_for_all(facts, targets, nvcc, failing, &pools);
    }
    // A failing finding's other fixes were computed for its own target and may break a pool
    // that passes now; a higher driver breaks none.
    let fix = common_fix(failing).filter(|f| driver_floor(f).is_some())?;
    let summary = format!("{} (on all {pools})", fix.replacement);
    Some((summary, fix))
}

/// The architecture list covering every GPU of `targets`, in the syntax of the failing
/// findings' lists; `None` when they use different syntaxes or `nvcc` cannot build it.
fn arch_list_for_all(
    facts: &Facts,
    targets: &[Target],
    nvcc: Option<CudaVersion>,
    failing: &[&[Fix]],
    pools: &str,
) -> Option<(String, Fix)> {
    let syntaxes: Vec<Syntax> = failing
        .iter()
        .filter_map(|f| f.iter().find_map(syntax_of_list))
        .collect();
    let syntax = *syntaxes.first()?;
    if syntaxes.iter().any(|s| *s != syntax) {
        return None;
    }
    let ccs = Pool::of(targets).ccs;
    let list = ArchList::covering(&ccs)?;
    if let Some(cuda) = nvcc {
        // A list the image's nvcc cannot compile is no change it can make.
        let builds_all = list
            .targets()
            .iter()
            .all(|t| facts.nvcc_supports(&cuda, t).is_some_and(|s| s.value));
        if !builds_all {
            return None;
        }
    }
    let fix = arch_list::fix_for(facts, &ccs, nvcc, syntax)?;
    let summary = format!(
        "rebuild its CUDA code for {}: runs on all {pools}",
        fix.replacement
    );
    Some((summary, fix))
}

/// The syntax an architecture-list fix is written in; `None` for other fixes.
fn syntax_of_list(fix: &Fix) -> Option<Syntax> {
    match &fix.change {
        Some(Change::ArchList { syntax, .. }) => Some(*syntax),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::suggest::driver::{fixes_for_cuda, Need};

    /// The torch tests' target, named after its pool.
    fn target(facts: &Facts, name: &str, gpus: &[&str], driver: &str) -> Target {
        Target {
            name: name.into(),
            ..crate::fix::suggest::torch::tests::target(facts, gpus, Some(driver))
        }
    }

    fn torch_fixes(facts: &Facts, t: &Target, installed: Installed) -> Vec<Fix> {
        let builds = builds_for(facts, &Pool::of(std::slice::from_ref(t)), installed);
        super::super::torch::fixes_for(&builds, 3)
    }

    #[test]
    fn the_image_line_names_a_build_whose_rows_cover_every_pool() {
        let f = Facts::embedded().unwrap();
        let targets = vec![
            target(&f, "t4", &["T4"], "580.65.06"),
            target(&f, "a100", &["A100"], "580.65.06"),
            target(&f, "h100", &["H100"], "580.65.06"),
            target(&f, "rtx5090", &["RTX 5090"], "580.65.06"),
        ];
        let installed = Installed {
            version: Some("2.6.0"),
            cuda: Some(CudaVersion::new(12, 4)),
        };
        // torch 2.6 fails only the Blackwell pool; its finding lists torch builds.
        let failing = [torch_fixes(&f, &targets[3], installed)];
        assert!(!failing[0].is_empty());
        let refs: Vec<&[Fix]> = failing.iter().map(|v| v.as_slice()).collect();
        let (summary, fix) = image_fix(&f, &targets, Some(installed), None, &refs).unwrap();
        assert!(summary.contains("runs on all 4 pools"), "{summary}");
        // The truth: the named build's rows, read again, cover every GPU and driver of
        // every pool.
        let Some(Change::TorchBuild {
            version, variant, ..
        }) = &fix.change
        else {
            panic!("not a torch build: {fix:?}")
        };
        let (version, tag) = (version.as_str(), variant.as_str());
        assert!(fix
            .replacement
            .starts_with(&format!("pip install torch=={version} ")));
        assert!(fix.replacement.ends_with(&format!("/whl/{tag}")));
        assert!(
            summary.starts_with(&format!("torch {version}+{tag} ")),
            "{summary}"
        );
        let v = f
            .torch_release(version)
            .unwrap()
            .value
            .variant(tag)
            .unwrap();
        let a = v.archs.as_ref().unwrap();
        let floor = f.minor_compat_floor(v.cuda.major).unwrap().value;
        for t in &targets {
            for cc in t.capabilities() {
                assert!(
                    a.sass.iter().chain(&a.ptx).any(|x| x.runs_on(cc)),
                    "{version} {tag} misses {cc} of {}",
                    t.name
                );
            }
            assert!(*t.driver.as_ref().unwrap() >= floor);
        }
    }

    #[test]
    fn no_image_line_when_no_build_covers_every_pool() {
        let f = Facts::embedded().unwrap();
        // Kepler GK104 (3.0) and Blackwell (12.0): no build gpulint knows covers both.
        let mut kepler = target(&f, "kepler", &["A100"], "580.65.06");
        kepler.gpus[0].cc = Some(crate::arch::ComputeCapability::new(3, 0));
        let blackwell = target(&f, "rtx5090", &["RTX 5090"], "580.65.06");
        let installed = Installed {
            version: Some("2.6.0"),
            cuda: Some(CudaVersion::new(12, 4)),
        };
        let failing = [torch_fixes(&f, &blackwell, installed)];
        assert!(!failing[0].is_empty(), "a build runs on Blackwell alone");
        let refs: Vec<&[Fix]> = failing.iter().map(|v| v.as_slice()).collect();
        assert!(image_fix(&f, &[kepler, blackwell], Some(installed), None, &refs).is_none());
    }

    #[test]
    fn the_pool_line_names_a_driver_every_failing_image_accepts() {
        let f = Facts::embedded().unwrap();
        let t = target(&f, "h100", &["H100"], "470.82.01");
        // Two images on one pool, needing CUDA 12.4 natively and 13.0's runtime.
        let needs = [
            Need::Native(CudaVersion::new(12, 4)),
            Need::Runtime(CudaVersion::new(13, 0)),
        ];
        let failing: Vec<Vec<Fix>> = needs.iter().map(|n| fixes_for_cuda(&f, *n, &t)).collect();
        let refs: Vec<&[Fix]> = failing.iter().map(|v| v.as_slice()).collect();
        let fix = common_fix(&refs).unwrap();
        let d = driver_floor(&fix).expect("a driver upgrade");
        // The truth, from the tables: each need's own minimum (natively) or its major's
        // minor-version floor (runtime).
        let native = f.cuda_min_driver(CudaVersion::new(12, 4)).unwrap().value;
        let runtime = f.minor_compat_floor(13).unwrap().value;
        assert!(d >= native && d >= runtime, "{d}");
        assert!(
            d == native || d == runtime,
            "the lowest that satisfies both: {d}"
        );
        // A finding with no driver fix and nothing in common: no single change.
        // (a torch build of the same H100 pool, had its driver been current).
        let newer = target(&f, "h100", &["H100"], "580.65.06");
        let other = torch_fixes(
            &f,
            &newer,
            Installed {
                version: Some("2.6.0"),
                cuda: None,
            },
        );
        assert!(!other.is_empty());
        let mut mixed = refs.clone();
        mixed.push(other.as_slice());
        assert!(common_fix(&mixed).is_none());
    }
}
