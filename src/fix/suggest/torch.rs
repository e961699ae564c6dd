//! Official torch builds that run on a pool: every release line and CUDA variant of
//! `torch.toml` whose architecture list (measured from the wheel or cited from the release's
//! build script) covers every GPU of the pool, and whose CUDA runs on every known driver of
//! the pool (`cuda_driver.toml`). Ranked nearest to what is installed: the same release line
//! first, then the nearest line (newer before older at equal distance), then the CUDA variant
//! nearest the installed (or base image's) CUDA. A build without an architecture row, or a
//! driver requirement without a row, is never suggested.

use super::basis_of;
use crate::arch::{ArchTarget, CodeKind, ComputeCapability};
use crate::fix::{Applicability, Change, Fix, FixBasis, FixKind};
use crate::gpu_target::Target;
use crate::matrix::torch::{TorchRelease, TorchVariant};
use crate::matrix::{Basis, Facts, Sourced};
use crate::version::{CudaVersion, DriverVersion};

/// The index that serves one CUDA variant of torch (`…/whl/cu128`).
pub const INDEX_BASE: &str = "https://download.pytorch.org/whl/";

/// What a suggested build must run on.
#[derive(Debug, Clone, Default)]
pub struct Pool<'a> {
    /// Every compute capability of the pool's GPUs, ascending, each once.
    pub ccs: Vec<ComputeCapability>,
    /// The known drivers of the pool's nodes (an unknown driver constrains nothing, and the
    /// suggestion says which driver it needs).
    pub drivers: Vec<&'a DriverVersion>,
}

impl<'a> Pool<'a> {
    /// Every GPU and driver of `targets`: a build suggested for a fleet runs on all of it.
    pub fn of(targets: &'a [Target]) -> Pool<'a> {
        let mut ccs: Vec<ComputeCapability> =
            targets.iter().flat_map(|t| t.capabilities()).collect();
        ccs.sort();
        ccs.dedup();
        let mut drivers: Vec<&DriverVersion> =
            targets.iter().filter_map(|t| t.driver.as_ref()).collect();
        drivers.sort();
        drivers.dedup();
        Pool { ccs, drivers }
    }
}

/// What is installed now: suggestions nearest to it come first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Installed<'a> {
    /// The torch version (`2.6.0`, `2.6.0+cu124`); `None`: unpinned, i.e. the newest release.
    pub version: Option<&'a str>,
    /// The CUDA of the installed build, or of the base image the build should agree with.
    pub cuda: Option<CudaVersion>,
}

/// One official torch build that runs on every GPU and known driver of a pool.
#[derive(Debug, Clone)]
pub struct TorchBuild<'a> {
    pub release: &'a TorchRelease,
    pub variant: &'a TorchVariant,
    /// The full version to install (`2.7.0`).
    pub version: String,
    /// The driver this build's CUDA needs on the pool (minor-version compatibility floor, or
    /// the release's own minimum where the pool reaches a GPU only through PTX JIT), with its
    /// row and whether it is the minor-version floor.
    pub driver_needed: Option<(Sourced<DriverVersion>, bool)>,
    facts: &'a Facts,
    ccs: Vec<ComputeCapability>,
    jit: bool,
    drivers_known: bool,
}

/// Leading numeric parts of a version's public part: `2.6.0+cu124` → [2, 6, 0].
fn numeric(v: &str) -> Vec<u32> {
    let public = v.trim().split('+').next().unwrap_or("");
    public
        .split('.')
        .map_while(|p| p.parse::<u32>().ok())
        .collect()
}

fn targets_text(ts: &[ArchTarget]) -> String {
    ts.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the build's code runs on every capability: `None` without an architecture row;
/// `Some((false, _))` when a capability is missed; `Some((true, jit))` otherwise, `jit` when
/// some capability is reached only through PTX.
fn coverage(v: &TorchVariant, ccs: &[ComputeCapability]) -> Option<(bool, bool)> {
    let archs = v.archs.as_ref()?;
    let mut jit = false;
    for &cc in ccs {
        if archs.sass.iter().any(|a| a.runs_on(cc)) {
            continue;
        }
        if archs
            .ptx
            .iter()
            .any(|a| a.kind == CodeKind::Ptx && a.runs_on(cc))
        {
            jit = true;
            continue;
        }
        return Some((false, jit));
    }
    Some((true, jit))
}

/// The driver a torch build of `cuda` needs, with its row: the major's minor-version
/// compatibility floor (torch bundles its CUDA runtime; `true`), or the release's own minimum
/// when a GPU runs only through PTX JIT (the driver must know that PTX ISA) or the major has
/// no floor. `None` when no row says.
fn driver_needed(
    facts: &Facts,
    cuda: CudaVersion,
    jit: bool,
) -> Option<(Sourced<DriverVersion>, bool)> {
    if !jit && cuda.major >= 11 {
        if let Some(f) = facts.minor_compat_floor(cuda.major) {
            return Some((f, true));
        }
    }
    Some((facts.cuda_min_driver(cuda)?, false))
}

/// How far apart two CUDA releases are, majors first.
fn cuda_distance(a: CudaVersion, b: CudaVersion) -> (u32, u32) {
    (a.major.abs_diff(b.major), a.minor.abs_diff(b.minor))
}

/// How near a build is to the installed one, nearest least: another release line, how many
/// lines away, older than installed, how far its CUDA is, then the newer CUDA.
type Rank = (
    bool,
    usize,
    bool,
    (u32, u32),
    std::cmp::Reverse<CudaVersion>,
);

/// Every official build that runs on `pool`, nearest to `installed` first.
pub fn builds_for<'a>(facts: &'a Facts, pool: &Pool, installed: Installed) -> Vec<TorchBuild<'a>> {
    let releases = facts.torch_releases();
    let installed_line = installed
        .version
        .and_then(|v| facts.torch_release(v))
        .map(|r| r.value.version.clone());
    let installed_index = match installed.version {
        Some(_) => installed_line
            .as_deref()
            .and_then(|l| releases.iter().position(|r| r.version == l)),
        // Unpinned: pip takes the newest release.
        None => releases.len().checked_sub(1),
    };
    let mut ranked: Vec<(Rank, TorchBuild)> = Vec::new();
    for (ri, r) in releases.iter().enumerate() {
        for v in &r.variants {
            let (covers, jit) = match coverage(v, &pool.ccs) {
                Some(c) => c,
                // Nothing to cover: any build qualifies on architectures.
                None if pool.ccs.is_empty() => (true, false),
                None => continue,
            };
            // A suggestion rests on measured or cited rows only: an architecture list read
            // off a build-script snapshot near the release (inferred) is not enough to say
            // the build covers a GPU.
            // With no GPU to cover, the list is not what the suggestion rests on.
            let inferred = v.basis == Some(Basis::Inferred)
                || (!pool.ccs.is_empty()
                    && v.archs.as_ref().is_some_and(|a| a.basis == Basis::Inferred));
            if !covers || inferred {
                continue;
            }
            let needed = driver_needed(facts, v.cuda, jit);
            match &needed {
                Some((d, _)) if pool.drivers.iter().any(|have| **have < d.value) => continue,
                Some(_) => {}
                // What this CUDA needs is unknown: not a suggestion for a pool with drivers.
                None if !pool.drivers.is_empty() => continue,
                None => {}
            }
            let same_line = installed_line.as_deref() == Some(r.version.as_str());
            let version = match installed.version {
                Some(iv) if same_line && numeric(iv).len() >= 3 => {
                    iv.trim().split('+').next().unwrap_or(iv).to_string()
                }
                _ => format!("{}.0", r.version),
            };
            let near_cuda = installed
                .cuda
                .or_else(|| r.pypi_default_variant().map(|d| d.cuda))
                .unwrap_or(v.cuda);
            let distance = match installed_index {
                Some(i) => i.abs_diff(ri),
                None => releases.len() - ri,
            };
            let older = installed_index.is_some_and(|i| ri < i);
            let key = (
                !same_line,
                distance,
                older,
                cuda_distance(v.cuda, near_cuda),
                std::cmp::Reverse(v.cuda),
            );
            ranked.push((
                key,
                TorchBuild {
                    release: r,
                    variant: v,
                    version,
                    driver_needed: needed,
                    facts,
                    ccs: pool.ccs.clone(),
                    jit,
                    drivers_known: !pool.drivers.is_empty(),
                },
            ));
        }
    }
    ranked.sort_by_key(|(rank, _)| *rank);
    ranked.into_iter().map(|(_, b)| b).collect()
}

/// The newest build that runs on `pool` (the newest release line, then its newest CUDA):
/// "the newest variant of the framework that runs on the current driver".
pub fn newest_for<'a>(facts: &'a Facts, pool: &Pool) -> Option<TorchBuild<'a>> {
    let releases = facts.torch_releases();
    builds_for(facts, pool, Installed::default())
        .into_iter()
        .max_by_key(|b| {
            (
                releases.iter().position(|r| r.version == b.release.version),
                b.variant.cuda,
            )
        })
}

impl TorchBuild<'_> {
    /// The index URL that serves this build.
    pub fn index_url(&self) -> String {
        format!("{INDEX_BASE}{}", self.variant.tag)
    }

    /// Companion releases pinned to this version: (package, version), with their rows.
    fn companions(&self) -> Vec<Sourced<(&'static str, String)>> {
        self.facts.torch_companions_of(&self.version)
    }

    /// The exact install line: torch and its companions, from the variant's index.
    pub fn install_line(&self) -> String {
        let mut pkgs = vec![format!("torch=={}", self.version)];
        pkgs.extend(
            self.companions()
                .iter()
                .map(|c| format!("{}=={}", c.value.0, c.value.1)),
        );
        format!(
            "pip install {} --index-url {}",
            pkgs.join(" "),
            self.index_url()
        )
    }

    /// Why it runs there, from its rows.
    pub fn rationale(&self) -> String {
        let mut s = format!(
            "torch {} {} build (CUDA {})",
            self.version,
            self.variant.tag,
            self.variant.cuda.major_minor()
        );
        if let Some(a) = &self.variant.archs {
            let ccs: Vec<String> = self.ccs.iter().map(|c| c.to_string()).collect();
            if !ccs.is_empty() {
                s.push_str(&format!(
                    " ships SASS [{}] and PTX [{}], which run on compute capability {}{}",
                    targets_text(&a.sass),
                    targets_text(&a.ptx),
                    ccs.join(", "),
                    if self.jit {
                        " (some only through PTX JIT)"
                    } else {
                        ""
                    }
                ));
            }
        }
        match (&self.driver_needed, self.drivers_known) {
            (Some((d, _)), true) => s.push_str(&format!(
                "; it needs driver >= {}, which the pool has",
                d.value
            )),
            (Some((d, _)), false) => s.push_str(&format!(
                "; it needs driver >= {} (the pool's driver is unknown)",
                d.value
            )),
            (None, _) => {}
        }
        s
    }

    /// The rows the build rests on: the variant, its architecture list, the driver row, the
    /// companion pins.
    pub fn basis(&self) -> Vec<FixBasis> {
        let (r, v) = (self.release, self.variant);
        let mut basis = vec![FixBasis {
            table: "torch".into(),
            row: format!("variant {} {}", r.version, v.tag),
            source: v.source.clone(),
        }];
        if let Some(a) = &v.archs {
            basis.push(FixBasis {
                table: "torch".into(),
                row: format!(
                    "arch {} {}: SASS [{}], PTX [{}]",
                    r.version,
                    v.tag,
                    targets_text(&a.sass),
                    targets_text(&a.ptx)
                ),
                source: a.source.clone(),
            });
        }
        if let Some((d, minor_compat)) = &self.driver_needed {
            let row = if *minor_compat {
                format!("minor_compat {}.x: Linux >= {}", v.cuda.major, d.value)
            } else {
                format!("CUDA {}: Linux >= {}", v.cuda.major_minor(), d.value)
            };
            basis.push(basis_of("cuda_driver", row, d));
        }
        for c in self.companions() {
            let row = format!("{} {} pins torch=={}", c.value.0, c.value.1, self.version);
            basis.push(basis_of("torch_companions", row, &c));
        }
        basis
    }

    /// As a fix: advice (changing the installed build is not an edit gpulint makes here).
    pub fn fix(&self) -> Fix {
        Fix {
            kind: FixKind::Package,
            change: Some(Change::TorchBuild {
                version: self.version.clone(),
                variant: self.variant.tag.clone(),
                cuda: self.variant.cuda,
                index_url: self.index_url(),
            }),
            replacement: self.install_line(),
            rationale: self.rationale(),
            basis: self.basis(),
            edits: Vec::new(),
            applicability: Applicability::Manual,
        }
    }
}

/// [`builds_for`] once per distinct install: a Dockerfile may install the same torch
/// thousands of times (a generated RUN, a long heredoc), and each answer is the same.
pub struct BuildsCache<'a> {
    facts: &'a Facts,
    pool: Pool<'a>,
    seen: std::collections::BTreeMap<(Option<String>, Option<CudaVersion>), Vec<TorchBuild<'a>>>,
}

impl<'a> BuildsCache<'a> {
    pub fn new(facts: &'a Facts, pool: Pool<'a>) -> Self {
        BuildsCache {
            facts,
            pool,
            seen: std::collections::BTreeMap::new(),
        }
    }

    /// The builds for `installed` on the cache's pool.
    pub fn get(&mut self, installed: Installed) -> &[TorchBuild<'a>] {
        let key = (installed.version.map(str::to_string), installed.cuda);
        let (facts, pool) = (self.facts, &self.pool);
        self.seen
            .entry(key)
            .or_insert_with(|| builds_for(facts, pool, installed))
    }
}

/// The help line for a list of builds: the first, and the next different release line.
pub fn help_for(builds: &[TorchBuild]) -> Option<String> {
    let first = builds.first()?;
    let other = builds
        .iter()
        .find(|b| b.release.version != first.release.version);
    Some(match other {
        Some(o) => format!(
            "{} (or torch {} {})",
            first.install_line(),
            o.version,
            o.variant.tag
        ),
        None => first.install_line(),
    })
}

/// The fixes for a list of builds: the nearest build of each of the first `n` release lines.
pub fn fixes_for(builds: &[TorchBuild], n: usize) -> Vec<Fix> {
    let mut lines: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for b in builds {
        if lines.len() == n {
            break;
        }
        if !lines.contains(&b.release.version.as_str()) {
            lines.push(&b.release.version);
            out.push(b.fix());
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::gpu_target::TargetGpu;

    fn facts() -> Facts {
        Facts::embedded().unwrap()
    }

    /// A target named `pool` with these GPUs (known names) and driver.
    pub(in crate::fix::suggest) fn target(
        facts: &Facts,
        gpus: &[&str],
        driver: Option<&str>,
    ) -> Target {
        Target {
            name: "pool".into(),
            driver: driver.map(|d| d.parse().unwrap()),
            driver_cuda: None,
            gpus: gpus
                .iter()
                .map(|g| TargetGpu {
                    name: g.to_string(),
                    cc: Some(facts.gpu(g).expect("known GPU").value.cc),
                    datacenter: None,
                    uuid: None,
                    mig_mode: None,
                    count: None,
                })
                .collect(),
            platform: None,
        }
    }

    /// The truth a suggestion is checked against: the table's own rows, read again.
    fn runs_there(facts: &Facts, b: &TorchBuild, t: &Target) {
        let r = facts.torch_release(&b.version).unwrap().value;
        let v = r
            .variant(&b.variant.tag)
            .expect("the suggested variant exists");
        let a = v.archs.as_ref().expect("its architecture list is known");
        for cc in t.capabilities() {
            assert!(
                a.sass.iter().chain(&a.ptx).any(|x| x.runs_on(cc)),
                "{} {} misses {cc}",
                b.version,
                v.tag
            );
        }
        if let Some(d) = &t.driver {
            // CUDA 11 and later: the major's minor-version compatibility floor; before 11
            // (1.10's cu102), the release's own minimum driver.
            let floor = facts
                .minor_compat_floor(v.cuda.major)
                .filter(|_| v.cuda.major >= 11)
                .or_else(|| facts.cuda_min_driver(v.cuda))
                .unwrap()
                .value;
            assert!(*d >= floor, "{} {} needs {floor}", b.version, v.tag);
        }
    }

    #[test]
    fn torch_2_6_on_an_rtx_5090_pool_gets_a_build_that_runs_there() {
        let f = facts();
        let t = target(&f, &["RTX 5090"], Some("575.51.03"));
        let pool = Pool::of(std::slice::from_ref(&t));
        let builds = builds_for(
            &f,
            &pool,
            Installed {
                version: Some("2.6.0"),
                cuda: Some(CudaVersion::new(12, 4)),
            },
        );
        let first = builds.first().expect("a build runs on Blackwell");
        // 2.6 has no build with sm_120: the nearest line that has one is 2.7, with cu128.
        assert_eq!(first.version, "2.7.0");
        assert_eq!(first.variant.tag, "cu128");
        for b in &builds {
            runs_there(&f, b, &t);
            assert_ne!(b.release.version, "2.6", "2.6 ships no Blackwell code");
        }
        let line = first.install_line();
        assert!(
            line.starts_with("pip install torch==2.7.0 torchvision==")
                && line.ends_with("--index-url https://download.pytorch.org/whl/cu128"),
            "{line}"
        );
        let fix = first.fix();
        assert!(fix
            .basis
            .iter()
            .any(|b| b.table == "torch" && b.row.starts_with("arch 2.7 cu128")));
        assert!(fix.basis.iter().any(|b| b.table == "cuda_driver"));
    }

    #[test]
    fn the_same_release_line_comes_first_when_one_of_its_variants_runs() {
        // torch 2.11's PyPI build (cu130) has no sm_70; its cu126 build has.
        let f = facts();
        let t = target(&f, &["V100"], Some("580.65.06"));
        let pool = Pool::of(std::slice::from_ref(&t));
        let builds = builds_for(
            &f,
            &pool,
            Installed {
                version: Some("2.11.0"),
                cuda: Some(CudaVersion::new(13, 0)),
            },
        );
        let first = builds.first().unwrap();
        assert_eq!(first.release.version, "2.11");
        assert_eq!(first.version, "2.11.0");
        for b in &builds {
            runs_there(&f, b, &t);
        }
    }

    #[test]
    fn an_old_driver_rules_out_builds_whose_cuda_it_cannot_run() {
        // A 470 driver runs CUDA 11.x (minor-version compatibility from 450.80.02), not 12.x.
        let f = facts();
        let t = target(&f, &["A100"], Some("470.82.01"));
        let pool = Pool::of(std::slice::from_ref(&t));
        let builds = builds_for(&f, &pool, Installed::default());
        assert!(!builds.is_empty());
        for b in &builds {
            assert_eq!(b.variant.cuda.major, 11, "{} {}", b.version, b.variant.tag);
            runs_there(&f, b, &t);
        }
        let newest = newest_for(&f, &pool).unwrap();
        assert!(builds
            .iter()
            .all(|b| numeric(&b.version) <= numeric(&newest.version)));
    }

    #[test]
    fn a_pool_nothing_runs_on_gets_no_suggestion() {
        // Compute capability 3.0 (Kepler GK104): no torch build gpulint knows ships code for it.
        let f = facts();
        let mut t = target(&f, &["A100"], None);
        t.gpus[0].cc = Some(ComputeCapability::new(3, 0));
        let pool = Pool::of(std::slice::from_ref(&t));
        assert!(builds_for(&f, &pool, Installed::default()).is_empty());
    }
}
