//! Whether a binary is reached by DT_NEEDED or only loaded on demand. A library that nothing
//! in the image NEEDs and that is one of the known on-demand kinds (profiler/tool libraries,
//! cupy's optional modules) fails only when someone deliberately loads it, so the rules that
//! judge binaries can say so at a lower severity (issue 28's rule, applied in issue 34).
//! A shared library in a directory named for one GPU architecture (triton's
//! `backends/nvidia/lib/cupti-blackwell/`) is a variant its package selects at run time for
//! that architecture; when nothing NEEDs it, a GPU older than that architecture never loads it.
//!
//! Entries are every binary that is not itself an on-demand kind or such a variant
//! (executables, Python extensions, ordinary libraries); the others are reached when a reached
//! binary NEEDs them, transitively. NEEDED names resolve through the loader model when the
//! name is a CUDA library the inventory knows, else by file name / soname match within the
//! image.

use super::loader::{resolve, search_order};
use crate::arch::ComputeCapability;
use crate::inventory::{Binary, Inventory};
use crate::matrix::Facts;

/// Library file-name prefixes loaded only on demand, with why. CUPTI and its companions
/// (libcheckpoint, nvperf, pcsamplingutil) are loaded by profilers and tracing tools (NVIDIA
/// CUPTI docs: "CUPTI ... used by profiling and tracing tools"); libaccinj is nvprof's
/// injection library, loaded through CUDA_INJECTION64_PATH.
const ON_DEMAND_FILE_PREFIXES: &[(&str, &str)] = &[
    ("libcupti", "by profilers and tracing tools (CUPTI)"),
    ("libcheckpoint", "by profilers and tracing tools (CUPTI)"),
    ("libnvperf_host", "by profilers and tracing tools (CUPTI)"),
    ("libnvperf_target", "by profilers and tracing tools (CUPTI)"),
    (
        "libpcsamplingutil",
        "by profilers and tracing tools (CUPTI)",
    ),
    ("libaccinj", "by nvprof as its injection library"),
];

/// Directories whose libraries are loaded on demand, with why: compute-sanitizer injects its
/// own libraries into the program it runs; cupy imports its cuDNN/NCCL/cuTENSOR/cuSPARSELt
/// bindings lazily, only when the program uses those libraries.
const ON_DEMAND_DIRS: &[(&str, &[&str], &str)] = &[
    ("compute-sanitizer", &[], "by compute-sanitizer"),
    (
        "cupy_backends/cuda/libs",
        &["cudnn", "nccl", "cutensor", "cusparselt"],
        "by cupy when the program uses that library",
    ),
    (
        "cupy/cuda",
        &["cudnn", "nccl", "cutensor", "cusparselt"],
        "by cupy when the program uses that library",
    ),
];

/// Why `b` is loaded only on demand, when its kind says so (regardless of who NEEDs it).
pub fn on_demand_kind(b: &Binary) -> Option<&'static str> {
    let name = b.path.file_name();
    if let Some((_, why)) = ON_DEMAND_FILE_PREFIXES
        .iter()
        .find(|(p, _)| name.starts_with(p))
    {
        return Some(why);
    }
    let path = format!("/{}", b.path.as_str());
    ON_DEMAND_DIRS.iter().find_map(|(dir, modules, why)| {
        let in_dir = path.contains(&format!("/{dir}/"));
        let module_ok = modules.is_empty() || modules.iter().any(|m| name.starts_with(m));
        (in_dir && module_ok).then_some(*why)
    })
}

/// The names a NEEDED entry can use to load `target`: its file name, and the soname and link
/// aliases of the library the inventory knows at its path (libcupti.so.11.8 →
/// libcupti.so.2022.3.0). The loader finds files by name, so no other name reaches it.
fn names_of(inv: &Inventory, target: &Binary) -> Vec<String> {
    let mut names = vec![target.path.file_name().to_string()];
    for l in inv.cuda_libraries.iter().filter(|l| l.path == target.path) {
        names.extend(l.soname.clone());
        names.extend(l.aliases.iter().map(|a| a.file_name().to_string()));
    }
    names
}

/// Whether the NEEDED name `needed` of `needer` loads `target` (known by `names`): the
/// loader's answer when it resolves the name to a library the inventory knows, else the
/// name match alone (a NEEDer we cannot place keeps the library reached: fail closed).
fn needs(
    inv: &Inventory,
    needer: &Binary,
    needed: &str,
    target: &Binary,
    names: &[String],
) -> bool {
    if !names.iter().any(|n| n == needed) {
        return false;
    }
    match resolve(inv, &search_order(inv, needer), needed) {
        Some((lib, _)) => lib.path == target.path,
        None => true,
    }
}

/// A directory its package selects at run time for GPUs of one architecture (and newer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchVariantDir {
    /// The directory's own name: `cupti-blackwell`.
    pub dir: String,
    /// The architecture as the matrices name it: `Blackwell`.
    pub arch: String,
    /// The oldest compute capability of that architecture: a GPU below it never selects it.
    pub first_cc: ComputeCapability,
}

/// Why a binary that nothing reached NEEDs is loaded only on demand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OnDemand {
    /// Its kind is loaded on demand ("by profilers and tracing tools (CUPTI)").
    pub kind: Option<&'static str>,
    /// It sits in a directory selected at run time for one architecture.
    pub arch_variant: Option<ArchVariantDir>,
    /// It is one of a package's alternatives that the package does not choose in this image
    /// (bitsandbytes' `libbitsandbytes_cuda118.so` next to torch cu124): why.
    pub not_selected: Option<String>,
}

/// Whether `name` is a Python extension module (`_C.cpython-312-x86_64-linux-gnu.so`,
/// `x.abi3.so`): Python imports it by module name, whatever directory it sits in.
fn is_python_extension(name: &str) -> bool {
    name.contains(".cpython-") || name.ends_with(".abi3.so")
}

/// The architecture-named directory a shared library sits in, when one of the directory's
/// words (split at anything not a letter) is an architecture's name in the matrices
/// (`cupti-blackwell`). Only the directory the file is in counts: a package selects among
/// sibling directories, and an ancestor's name (`/opt/hopper-app/`) says nothing about
/// selection. Executables and Python extensions are never run-time variants: they are run
/// or imported by name.
pub fn arch_variant_dir(facts: &Facts, b: &Binary) -> Option<ArchVariantDir> {
    let name = b.path.file_name();
    if !name.contains(".so") || is_python_extension(name) {
        return None;
    }
    let parent = b.path.parent()?;
    let dir = parent.file_name();
    dir.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 3)
        .find_map(|w| {
            let cc = facts.arch_first_cc(w)?.value;
            let arch = facts.matrix().arch_name(cc)?.to_string();
            Some(ArchVariantDir {
                dir: dir.to_string(),
                arch,
                first_cc: cc,
            })
        })
}

/// For each binary of `inv.binaries` (same order): `Some(why)` when it is loaded only on demand
/// and no reached binary NEEDs it; None when it is reached (an entry, or NEEDed by one).
pub fn unreached_on_demand(inv: &Inventory, facts: &Facts) -> Vec<Option<OnDemand>> {
    let bnb = super::bitsandbytes::selections(inv);
    let kinds: Vec<Option<OnDemand>> = inv
        .binaries
        .iter()
        .map(|b| {
            let od = OnDemand {
                kind: on_demand_kind(b),
                arch_variant: arch_variant_dir(facts, b),
                not_selected: super::bitsandbytes::not_selected(&bnb, b),
            };
            (od.kind.is_some() || od.arch_variant.is_some() || od.not_selected.is_some())
                .then_some(od)
        })
        .collect();
    let mut reached: Vec<bool> = kinds.iter().map(Option::is_none).collect();
    // Bounded fixpoint: each round reaches at least one more binary or stops.
    loop {
        let mut changed = false;
        for (i, target) in inv.binaries.iter().enumerate() {
            if reached[i] {
                continue;
            }
            let names = names_of(inv, target);
            let is_needed = inv.binaries.iter().enumerate().any(|(j, needer)| {
                j != i
                    && reached[j]
                    && needer
                        .needed
                        .iter()
                        .any(|n| needs(inv, needer, n, target, &names))
            });
            if is_needed {
                reached[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    kinds
        .into_iter()
        .zip(reached)
        .map(|(k, r)| if r { None } else { k })
        .collect()
}
