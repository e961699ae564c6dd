//! Whether a binary is reached by DT_NEEDED or only loaded on demand. A library that nothing
//! in the image NEEDs and that is one of the known on-demand kinds (profiler/tool libraries,
//! cupy's optional modules) fails only when someone deliberately loads it, so the rules that
//! judge binaries can say so at a lower severity (issue 28's rule, applied in issue 34).
//!
//! Entries are every binary that is not itself an on-demand kind (executables, Python
//! extensions, ordinary libraries); on-demand libraries are reached when a reached binary
//! NEEDs them, transitively. NEEDED names resolve through the loader model when the name is a
//! CUDA library the inventory knows, else by file name / soname match within the image.

use super::loader::{resolve, search_order};
use crate::inventory::{Binary, Inventory};

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

/// For each binary of `inv.binaries` (same order): `Some(why)` when it is loaded only on demand
/// and no reached binary NEEDs it; None when it is reached (an entry, or NEEDed by one).
pub fn unreached_on_demand(inv: &Inventory) -> Vec<Option<&'static str>> {
    let kinds: Vec<Option<&'static str>> = inv.binaries.iter().map(on_demand_kind).collect();
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
