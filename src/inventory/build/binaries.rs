//! Binaries with GPU code: ELF files that carry fatbins or link CUDA libraries, with their
//! SASS/PTX targets and what they need from the loader.

use super::*;

pub(super) fn links_cuda(needed: &str) -> bool {
    libs::parse_so_name(needed)
        .and_then(|so| libs::classify_stem(&so))
        .is_some()
}

/// The device code and CUDA links of one ELF, as the inventory records it; None when the file
/// has no device code and links no CUDA library. Also used by `host --check` (GL215) on files
/// read from the host's disk.
pub(crate) fn binary_from_elf(
    path: ImagePath,
    layer: Option<usize>,
    e: &ElfFacts,
) -> Option<Binary> {
    use crate::arch::CodeKind;
    let loadable = e.loadable_sections();
    let entries: Vec<&crate::detect::elf::FatbinEntry> = loadable
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.entries.iter())
        .collect();
    // Fatbins in ordinary data sections (`.data`, `.ldata`, `.rodata`): the library hands
    // them to cuModuleLoadData itself (cuFFT, cuRAND do). Strictly validated by the reader.
    let embedded: Vec<&crate::detect::elf::FatbinEntry> = e
        .fatbin
        .iter()
        .flat_map(|fb| fb.sections.iter())
        .filter(|s| !crate::detect::elf::is_fatbin_section_name(&s.name))
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.entries.iter())
        .collect();
    let has_device_code = !entries.is_empty() || !embedded.is_empty();
    // The CUDA runtime linked into the binary itself (nvcc's default `-cudart static`); a
    // libcudart file without a DT_SONAME is still a CUDA library, not a binary carrying one.
    let static_cuda_runtime: Option<CudaVersion> = e
        .static_cudart_version
        .filter(|_| !path.file_name().starts_with("libcudart"))
        .map(CudaVersion::from_runtime_number);
    if !has_device_code
        && !e.needed.iter().any(|n| links_cuda(n))
        && static_cuda_runtime.is_none()
        && e.loose_cubins.is_empty()
        && e.loose_ptx.is_empty()
    {
        return None;
    }
    let mut ptx_isa: BTreeMap<String, (u16, u16)> = BTreeMap::new();
    let mut compression = BTreeSet::new();
    for entry in entries.iter().chain(embedded.iter()) {
        if entry.target.kind == CodeKind::Ptx {
            // Several entries for one target: the oldest ISA is the one any driver that
            // can JIT the target at all will accept.
            let v = ptx_isa
                .entry(entry.target.to_string())
                .or_insert(entry.code_version);
            if entry.code_version < *v {
                *v = entry.code_version;
            }
        }
        if let Some(c) = &entry.compression {
            compression.insert(c.clone());
        }
    }
    let targets = |list: &[&crate::detect::elf::FatbinEntry], kind: CodeKind| {
        let mut v: Vec<crate::arch::ArchTarget> = list
            .iter()
            .filter(|e| e.target.kind == kind)
            .map(|e| e.target)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    Some(Binary {
        path,
        layer,
        machine: e.machine.to_string(),
        needed: e.needed.clone(),
        runpath: e.runpath.clone(),
        rpath: e.rpath.clone(),
        sass: e.sass(),
        ptx: e.ptx(),
        embedded_sass: targets(&embedded, CodeKind::Sass),
        embedded_ptx: targets(&embedded, CodeKind::Ptx),
        loose_sass: dedup_targets(e.loose_cubins.iter().map(|c| c.target)),
        loose_ptx: dedup_targets(e.loose_ptx.iter().map(|p| p.header.target)),
        ptx_isa: ptx_isa
            .into_iter()
            .map(|(k, (a, b))| (k, format!("{a}.{b}")))
            .collect(),
        compression: compression.into_iter().collect(),
        has_device_code,
        has_kernels: e.has_kernels.filter(|_| has_device_code),
        static_cuda_runtime,
        warnings: e.warnings.clone(),
    })
}

fn dedup_targets(
    targets: impl Iterator<Item = crate::arch::ArchTarget>,
) -> Vec<crate::arch::ArchTarget> {
    let mut v: Vec<crate::arch::ArchTarget> = targets.collect();
    v.sort();
    v.dedup();
    v
}

pub(super) fn binaries(tree: &FileTree) -> Vec<Binary> {
    let mut out = Vec::new();
    for f in files(tree) {
        let Some(e) = elf_of(f.node) else { continue };
        if let Some(b) = binary_from_elf(f.path.clone(), Some(f.layer), e) {
            out.push(b);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Standalone `*.ptx` files whose module header was read.
pub(super) fn ptx_files(tree: &FileTree) -> Vec<PtxFile> {
    let mut out: Vec<PtxFile> = files(tree)
        .into_iter()
        .filter_map(|f| {
            let h = f.node.facts.iter().find_map(|x| match x {
                Fact::PtxFile(h) => Some(h),
                _ => None,
            })?;
            Some(PtxFile {
                path: f.path.clone(),
                layer: f.layer,
                target: h.target,
                isa: format!("{}.{}", h.isa.0, h.isa.1),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Standalone cubin and PTX files, one row per owning package (or, without one, per
/// site-packages module directory or per directory).
pub(super) fn device_code_files(tree: &FileTree, pip: &PipIndex<'_>) -> Vec<DeviceCodeFiles> {
    let mut groups: BTreeMap<(Option<String>, ImagePath), DeviceCodeFiles> = BTreeMap::new();
    for f in files(tree) {
        let (cubin, ptx) = f.node.facts.iter().fold((None, None), |acc, x| match x {
            Fact::Elf(e) => (e.cubin.or(acc.0), acc.1),
            Fact::PtxFile(h) => (acc.0, Some(h.target)),
            _ => acc,
        });
        if cubin.is_none() && ptx.is_none() {
            continue;
        }
        let owner = pip.owner_of(f.path, "");
        let location = match owner {
            Some(d) => d.site.clone(),
            None => unowned_group(f.path),
        };
        let key = (owner.map(|d| d.name.clone()), location.clone());
        let g = groups.entry(key).or_insert_with(|| DeviceCodeFiles {
            package: owner.map(|d| d.name.clone()),
            version: owner.map(|d| d.meta.version.clone()),
            location,
            cubins: 0,
            sass: Vec::new(),
            ptx_files: 0,
            ptx: Vec::new(),
            example: f.path.clone(),
            layer: f.layer,
        });
        if let Some(t) = cubin {
            g.cubins += 1;
            if !g.sass.contains(&t) {
                g.sass.push(t);
            }
        }
        if let Some(t) = ptx {
            g.ptx_files += 1;
            if !g.ptx.contains(&t) {
                g.ptx.push(t);
            }
        }
    }
    groups
        .into_values()
        .map(|mut g| {
            g.sass.sort();
            g.ptx.sort();
            g
        })
        .collect()
}

/// Where unowned device-code files are counted: `<site-packages>/<module>` inside a
/// site-packages directory, else the file's directory.
fn unowned_group(path: &ImagePath) -> ImagePath {
    let comps: Vec<&str> = path.components().collect();
    let site = comps
        .iter()
        .position(|c| *c == "site-packages" || *c == "dist-packages");
    if let Some(i) = site.filter(|i| i + 2 < comps.len()) {
        if let Ok(p) = ImagePath::new(&comps[..i + 2].join("/")) {
            return p;
        }
    }
    path.parent().unwrap_or_else(|| path.clone())
}

/// triton's bundled assemblers and the release of each.
pub(super) fn triton_ptxas(tree: &FileTree) -> Vec<TritonPtxas> {
    let mut out: Vec<TritonPtxas> = files(tree)
        .into_iter()
        .filter_map(|f| {
            let t = f.node.facts.iter().find_map(|x| match x {
                Fact::NvidiaTool(t) => Some(t),
                _ => None,
            })?;
            Some(TritonPtxas {
                path: f.path.clone(),
                layer: f.layer,
                tool: t.tool.clone(),
                release: t.release.as_deref().and_then(|r| r.parse().ok()),
                version: t.version.clone(),
                unread: t.unread.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}
