//! The end of a scan: what was kept and found, turned into [`ElfFacts`] (dynamic strings,
//! the runtime version, fatbin sections, loose cubins and PTX).

use super::*;

impl Scan<'_> {
    /// The section name table, when it was kept.
    pub(in crate::detect::elf) fn section_names(&self) -> Option<Vec<u8>> {
        self.shstr_want
            .and_then(|(o, l)| self.ret.get(o, l))
            .map(Cow::into_owned)
    }

    pub(in crate::detect::elf) fn finish(mut self) -> ElfFacts {
        let Some(h) = self.hdr.take() else {
            // parse_header succeeded before finish() is called
            return ElfFacts {
                class: 0,
                machine: String::new(),
                elf_type: String::new(),
                soname: None,
                needed: Vec::new(),
                rpath: Vec::new(),
                runpath: Vec::new(),
                cudart_version: None,
                static_cudart_version: None,
                fatbin: None,
                has_kernels: None,
                cubin: None,
                loose_cubins: Vec::new(),
                loose_ptx: Vec::new(),
                warnings: self.warnings,
            };
        };
        // Dynamic strings.
        let mut needed = Vec::new();
        let mut soname = None;
        let mut rpath = Vec::new();
        let mut runpath = Vec::new();
        if let Some(d) = self.dynamic.take() {
            if d.strtab_off.is_none() && !(d.needed.is_empty() && d.soname.is_none()) {
                let w = match self.strtab_vaddr {
                    Some(v) => format!("DT_STRTAB 0x{v:x} outside every PT_LOAD segment"),
                    None => "DT_STRTAB missing".into(),
                };
                self.warn(w);
            }
            for &o in &d.needed.clone() {
                if let Some(x) = self.string(&d, o) {
                    needed.push(x);
                }
            }
            if let Some(o) = d.soname {
                soname = self.string(&d, o);
            }
            let split = |v: String| -> Vec<String> {
                v.split(':')
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect()
            };
            for &o in &d.rpath.clone() {
                if let Some(x) = self.string(&d, o) {
                    rpath.extend(split(x));
                }
            }
            for &o in &d.runpath.clone() {
                if let Some(x) = self.string(&d, o) {
                    runpath.extend(split(x));
                }
            }
        }

        // A CUDA runtime's version, from its code (the soname only names the major).
        // A CUDA runtime exports cudaRuntimeGetVersion; a binary built with nvcc's default
        // `-cudart static` carries its own copy, named only in `.symtab` (absent once stripped).
        let (cudart_version, static_cudart_version) = match (&soname, &self.shdrs) {
            (Some(so), Some(shdrs)) if so.starts_with("libcudart") && h.is64 => {
                (self.cudart_version(h.machine, shdrs, SHT_DYNSYM), None)
            }
            (_, Some(shdrs)) if h.is64 => (None, self.cudart_version(h.machine, shdrs, SHT_SYMTAB)),
            _ => (None, None),
        };

        // Sections and fatbins.
        let mut warnings = std::mem::take(&mut self.fat.warnings);
        let mut sections: Vec<FatbinSection> = Vec::new();
        let shdrs = self.shdrs.take();
        let names = self.section_names();
        match (&shdrs, &names) {
            (Some(shdrs), Some(names)) => {
                for sh in shdrs {
                    if sh.sh_type == SHT_NOBITS || sh.size == 0 {
                        continue;
                    }
                    let name = cstr(names, sh.name as usize);
                    let lenient = is_fatbin_section_name(&name);
                    let searched =
                        may_hold_containers(sh, &name) && self.fat_candidate_in(sh.offset, sh.size);
                    if !(lenient || searched) {
                        continue;
                    }
                    let cs = resolve_section(
                        &self.fat,
                        &name,
                        sh.offset,
                        sh.size,
                        lenient,
                        &mut warnings,
                    );
                    if lenient || !cs.is_empty() {
                        sections.push(FatbinSection {
                            name,
                            offset: sh.offset,
                            size: sh.size,
                            containers: cs,
                        });
                    }
                }
            }
            _ => {
                if shdrs.is_some() {
                    warnings.push("section names unavailable".into());
                } else if h.shoff != 0 {
                    warnings.push("section headers unavailable".into());
                }
                // Without sections, report strictly valid containers anywhere.
                let cs = resolve_section(&self.fat, "?", 0, self.ret.pos, false, &mut warnings);
                if !cs.is_empty() {
                    warnings.push(
                        "fatbin containers found outside known sections; not counted as loadable"
                            .into(),
                    );
                    sections.push(FatbinSection {
                        name: "?".into(),
                        offset: 0,
                        size: self.ret.pos,
                        containers: cs,
                    });
                }
            }
        }
        sections.sort_by_key(|s| s.offset);
        let (loose_cubins, loose_ptx) = match (&shdrs, &names) {
            (Some(shdrs), Some(names)) => {
                let cubins = &self.fat.loose_cubins;
                let ptx = &self.fat.ptx.found;
                (
                    Self::outside_containers(shdrs, names, &sections, cubins, CUBIN_HEADER as u64)
                        .into_iter()
                        .map(|(section, offset, target)| LooseCubin {
                            section,
                            offset,
                            target,
                        })
                        .collect(),
                    Self::outside_containers(shdrs, names, &sections, ptx, 1)
                        .into_iter()
                        .map(|(section, offset, header)| LoosePtx {
                            section,
                            offset,
                            header,
                        })
                        .collect(),
                )
            }
            _ => (Vec::new(), Vec::new()),
        };
        for w in warnings {
            self.warn(w);
        }
        let mut facts = ElfFacts {
            class: if h.is64 { 64 } else { 32 },
            machine: machine_name(h.machine),
            elf_type: type_name(h.e_type),
            soname,
            needed,
            rpath,
            runpath,
            cudart_version,
            static_cudart_version,
            fatbin: if sections.is_empty() {
                None
            } else {
                Some(FatbinSummary { sections })
            },
            has_kernels: None,
            cubin: h.cubin,
            loose_cubins,
            loose_ptx,
            warnings: self.warnings,
        };
        if let (Some(p), Some(_)) = (&self.fat.stream_probe, &facts.fatbin) {
            facts.has_kernels = p.probe.verdict(facts.judged_entries());
        }
        facts
    }

    /// What `cudaRuntimeGetVersion` reports (see [`cudart`]), from the dynamic symbol table
    /// and the code it points at, when both were kept (a runtime is far smaller than the head).
    /// What `cudaRuntimeGetVersion`, found in the symbol table of type `table` (SHT_DYNSYM or
    /// SHT_SYMTAB), reports; None when the table, the symbol or its code was not kept.
    fn cudart_version(&self, machine: u16, shdrs: &[Shdr], table: u32) -> Option<u32> {
        let dynsym = shdrs.iter().find(|s| s.sh_type == table)?;
        let strtab = shdrs.get(dynsym.link as usize)?;
        if dynsym.size > MAX_DYNSYM_BYTES || strtab.size > MAX_DYNSTR_BYTES {
            return None;
        }
        let syms = self.ret.get(dynsym.offset, dynsym.size)?;
        let strs = self.ret.get(strtab.offset, strtab.size)?;
        let (syms, strs) = (&syms[..], &strs[..]);
        let (value, size) = syms.chunks_exact(24).find_map(|e| {
            let name = strs.get(rd(e, 0, 4) as usize..)?;
            let shndx = rd(e, 6, 2);
            (name.starts_with(b"cudaRuntimeGetVersion\0") && shndx != 0)
                .then(|| (rd(e, 8, 8), rd(e, 16, 8)))
        })?;
        cudart::runtime_version(machine, value, size, |vaddr, len| {
            let off = self.vaddr_offset(vaddr, len as u64)?;
            self.ret.get(off, len as u64)
        })
    }

    /// The file offset of `[vaddr, vaddr+len)` when one PT_LOAD segment maps all of it.
    fn vaddr_offset(&self, vaddr: u64, len: u64) -> Option<u64> {
        self.phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| {
                let (end, seg_end) = (vaddr.checked_add(len), p.vaddr.checked_add(p.filesz));
                p.vaddr <= vaddr && matches!((end, seg_end), (Some(e), Some(s)) if e <= s)
            })
            .map(|p| p.offset + (vaddr - p.vaddr))
    }

    /// The device code found loose (`found`: offset and what it is, sorted) in data
    /// sections (where containers may be), outside every reported container, as (section,
    /// offset, what); `len` bytes from its offset must lie in the section.
    fn outside_containers<T: Copy>(
        shdrs: &[Shdr],
        names: &[u8],
        sections: &[FatbinSection],
        found: &[(u64, T)],
        len: u64,
    ) -> Vec<(String, u64, T)> {
        let inside_container = |at: u64| {
            sections
                .iter()
                .flat_map(|s| s.containers.iter())
                .any(|c| c.offset <= at && at < c.offset.saturating_add(c.size))
        };
        let mut out = Vec::new();
        for sh in shdrs {
            if sh.sh_type == SHT_NOBITS || sh.size == 0 {
                continue;
            }
            let name = cstr(names, sh.name as usize);
            if !may_hold_containers(sh, &name) {
                continue;
            }
            let end = sh.offset.saturating_add(sh.size);
            let lo = found.partition_point(|c| c.0 < sh.offset);
            for &(at, what) in found[lo..].iter().take_while(|c| c.0 < end) {
                if at.saturating_add(len) <= end && !inside_container(at) {
                    out.push((name.clone(), at, what));
                }
            }
        }
        out.sort_by_key(|c| c.1);
        out
    }

    fn fat_candidate_in(&self, off: u64, size: u64) -> bool {
        let i = self.fat.done.partition_point(|c| c.start < off);
        self.fat
            .done
            .get(i)
            .is_some_and(|c| c.start < off.saturating_add(size))
    }
}

/// Sections whose content the compiler, linker or ABI defines: unwind tables and their
/// index, exception tables, the GOT, relocated read-only objects (a fatbin image holds no
/// pointers, so it never lands there), thread-local templates, and nvcc's own fatbin
/// wrappers and module ids (they point at the fatbins, never hold one).
const DEFINED_LAYOUT: &[&str] = &[
    ".eh_frame",
    ".eh_frame_hdr",
    ".gcc_except_table",
    ".got",
    ".got.plt",
    ".data.rel.ro",
    ".data.rel.ro.local",
    ".tdata",
    ".nvFatBinSegment",
    "__nv_module_id",
];

/// Where a library can keep a fatbin it hands to `cuModuleLoadData` itself: allocated,
/// non-executable data sections (`.data`, `.rodata`, `.ldata`, `.lrodata`, cuBLASLt's
/// `.cask_resource`), not those whose layout is defined by the toolchain. Containers are
/// reported only there and in the fatbin sections, by the streaming and the seekable scan
/// alike (the seekable one searches nothing else).
pub(in crate::detect::elf) fn may_hold_containers(sh: &Shdr, name: &str) -> bool {
    sh.sh_type == SHT_PROGBITS
        && sh.flags & SHF_ALLOC != 0
        && sh.flags & SHF_EXECINSTR == 0
        && !DEFINED_LAYOUT.contains(&name)
}

pub(in crate::detect::elf) fn cstr(b: &[u8], o: usize) -> String {
    let Some(s) = b.get(o..) else {
        return String::new();
    };
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}
