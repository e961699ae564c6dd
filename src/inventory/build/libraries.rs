//! CUDA and driver libraries: every shared object with its version and provider (system, pip
//! wheel, conda, bundled, stub, compat), soname links and the directories they live in.

use super::*;

/// Package names whose version is the version of the libraries they ship (not a framework
/// that happens to bundle them).
pub(super) fn is_library_package(name: &str) -> bool {
    name.starts_with("nvidia-")
        || name.starts_with("cuda-")
        || name.starts_with("libcu")
        || name.starts_with("libnv")
        || name.starts_with("libnccl")
        || name.starts_with("cudnn")
        || name.starts_with("nccl")
        || name.starts_with("cutensor")
        || name == "cudatoolkit"
}

pub(super) fn elf_of(node: &Node) -> Option<&ElfFacts> {
    node.facts.iter().find_map(|f| match f {
        Fact::Elf(e) => Some(e),
        _ => None,
    })
}

/// Symlinks beside a library that point at it: `libcudart.so.12 → libcudart.so.12.1.105`.
/// The one with the shortest version suffix is the soname ldconfig made the link for.
pub(super) struct SonameLinks {
    pub(super) by_target: BTreeMap<ImagePath, Vec<String>>,
}

impl SonameLinks {
    pub(super) fn new(tree: &FileTree) -> Self {
        let mut by_target: BTreeMap<ImagePath, Vec<String>> = BTreeMap::new();
        for (p, n) in &tree.nodes {
            if !matches!(n.kind, NodeKind::Symlink { .. }) {
                continue;
            }
            let name = p.file_name();
            if libs::parse_so_name(name).is_none_or(|so| so.suffix.is_none()) {
                continue;
            }
            if let Some((target, _)) = tree.resolve(p) {
                if target.parent() == p.parent() {
                    by_target.entry(target).or_default().push(name.to_string());
                }
            }
        }
        SonameLinks { by_target }
    }

    pub(super) fn soname(&self, file: &ImagePath) -> Option<String> {
        self.by_target
            .get(file)?
            .iter()
            .filter_map(|n| Some((libs::parse_so_name(n)?.suffix_parts(), n)))
            .min()
            .map(|(_, n)| n.clone())
    }
}

pub(super) fn libraries(
    tree: &FileTree,
    pip: &PipIndex<'_>,
    conda: &CondaIndex<'_>,
) -> (Vec<CudaLibrary>, Vec<DriverLibrary>) {
    let links = SonameLinks::new(tree);
    let mut cuda = Vec::new();
    let mut driver: Vec<(DriverLibrary, Option<SoName>)> = Vec::new();
    for f in files(tree) {
        let file = f.path.file_name();
        let Some(so) = libs::parse_so_name(file) else {
            continue;
        };
        let Some(kind) = libs::classify_stem(&so) else {
            continue;
        };
        let comps: Vec<&str> = f.path.components().collect();
        let provider = libs::provider_from_path(&comps, conda.in_prefix(f.path));
        let mut driver_name = None;
        let in_stub_or_compat = matches!(
            provider,
            LibraryProvider::Stub | LibraryProvider::ForwardCompat
        );
        let family = match kind {
            LibKind::Cuda(fam) => fam,
            LibKind::Driver(name) if !in_stub_or_compat => {
                driver.push((
                    DriverLibrary {
                        path: f.path.clone(),
                        name,
                        version: libs::file_name_version(&so).and_then(|v| v.parse().ok()),
                        provider,
                        layer: Some(f.layer),
                    },
                    Some(so),
                ));
                continue;
            }
            // libcuda.so in stubs/, compat/libcuda.so.X: CUDA-side, named without `lib`.
            LibKind::Driver(name) => {
                let family = name.strip_prefix("lib").unwrap_or(&name).to_string();
                driver_name = Some(name);
                family
            }
        };
        let mut provider = provider;
        let mut package = None;
        let mut owner_version = None;
        if let Some(d) = pip.owner_of(f.path, &family) {
            package = Some(d.name.clone());
            if d.name.starts_with("nvidia-") {
                provider = LibraryProvider::PipWheel;
                owner_version = Some(d.meta.version.clone());
            } else if provider == LibraryProvider::PipWheel {
                provider = LibraryProvider::Bundled;
            }
        } else if let Some(m) = conda.owner_of(f.path) {
            package = Some(m.name.clone());
            if is_library_package(&m.name) {
                owner_version = Some(m.version.clone());
            }
        }
        let family = LibFamily::from_name(&family);
        let read = |text: String| LibVersion::read(&family, text);
        // A runtime's file name names only its soname (`libcudart-<hash>.so.11.0` bundled by
        // torch is CUDA 11.7): its code says which release it is.
        let code_version = elf_of(f.node)
            .and_then(|e| e.cudart_version)
            .map(|v| LibVersion::runtime(CudaVersion::from_runtime_number(v)));
        let version = if libs::has_full_version(&so) {
            so.suffix.clone().map(read)
        } else {
            owner_version
                .map(read)
                .or(code_version)
                .or_else(|| libs::file_name_version(&so).map(read))
        };
        let soname = elf_of(f.node)
            .and_then(|e| e.soname.clone())
            .or_else(|| links.soname(f.path))
            .or_else(|| match &driver_name {
                Some(n) if libs::has_full_version(&so) => libs::driver_soname(n),
                _ => libs::derived_soname(file, &so),
            });
        cuda.push(CudaLibrary {
            path: f.path.clone(),
            family,
            soname,
            version,
            provider,
            aliases: Vec::new(),
            package,
            layer: Some(f.layer),
        });
    }
    fill_aliases(tree, &mut cuda);
    // A driver file named only by its soname (a copied `libcuda.so.1`): the driver files
    // beside it share one version.
    let mut dir_versions: BTreeMap<ImagePath, DriverVersion> = BTreeMap::new();
    for (d, so) in &driver {
        if let (Some(v), Some(so)) = (&d.version, so) {
            if libs::has_full_version(so) {
                if let Some(dir) = d.path.parent() {
                    dir_versions.entry(dir).or_insert_with(|| v.clone());
                }
            }
        }
    }
    let mut driver: Vec<DriverLibrary> = driver
        .into_iter()
        .map(|(mut d, so)| {
            let full = so.as_ref().is_some_and(libs::has_full_version);
            if !full {
                if let Some(v) = d.path.parent().and_then(|dir| dir_versions.get(&dir)) {
                    d.version = Some(v.clone());
                }
            }
            d
        })
        .collect();
    cuda.sort_by(|a: &CudaLibrary, b| a.path.cmp(&b.path));
    driver.sort_by(|a, b| a.path.cmp(&b.path));
    (cuda, driver)
}

/// Every link in the image that ends at a CUDA library, so the loader emulation can match
/// NEEDED names (usually soname symlinks) against them.
pub(super) fn fill_aliases(tree: &FileTree, cuda: &mut [CudaLibrary]) {
    let mut by_real: BTreeMap<ImagePath, Vec<ImagePath>> = BTreeMap::new();
    for (p, n) in &tree.nodes {
        if matches!(n.kind, NodeKind::Symlink { .. } | NodeKind::Hardlink { .. }) {
            if let Some((real, node)) = tree.resolve(p) {
                if matches!(node.kind, NodeKind::File { .. }) {
                    by_real.entry(real).or_default().push(p.clone());
                }
            }
        }
    }
    for lib in cuda {
        if let Some(a) = by_real.remove(&lib.path) {
            lib.aliases = a;
        }
    }
}

/// Directory symlinks (`usr/local/cuda` → `usr/local/cuda-12.1`), resolved, for the loader.
pub(crate) fn dir_links(tree: &FileTree) -> BTreeMap<String, String> {
    tree.nodes
        .iter()
        .filter(|(_, n)| matches!(n.kind, NodeKind::Symlink { .. }))
        .filter_map(|(p, _)| {
            let real = tree.resolve_dir(p)?;
            Some((p.as_str().to_string(), real.as_str().to_string()))
        })
        .collect()
}
