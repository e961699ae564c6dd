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
