//! The ELF tables a scan reads: program headers, section headers, the dynamic section.

use super::{
    rd, Dynamic, Phdr, Shdr, DT_NEEDED, DT_NULL, DT_RPATH, DT_RUNPATH, DT_SONAME, DT_STRSZ,
    DT_STRTAB,
};

pub(super) fn parse_phdr(p: &[u8], is64: bool) -> Phdr {
    if is64 {
        Phdr {
            p_type: rd(p, 0, 4) as u32,
            offset: rd(p, 8, 8),
            vaddr: rd(p, 16, 8),
            filesz: rd(p, 32, 8),
        }
    } else {
        Phdr {
            p_type: rd(p, 0, 4) as u32,
            offset: rd(p, 4, 4),
            vaddr: rd(p, 8, 4),
            filesz: rd(p, 16, 4),
        }
    }
}

pub(super) fn parse_shdr(s: &[u8], is64: bool) -> Shdr {
    if is64 {
        Shdr {
            name: rd(s, 0, 4) as u32,
            sh_type: rd(s, 4, 4) as u32,
            flags: rd(s, 8, 8),
            offset: rd(s, 24, 8),
            size: rd(s, 32, 8),
            link: rd(s, 40, 4) as u32,
        }
    } else {
        Shdr {
            name: rd(s, 0, 4) as u32,
            sh_type: rd(s, 4, 4) as u32,
            flags: rd(s, 8, 4),
            offset: rd(s, 16, 4),
            size: rd(s, 20, 4),
            link: rd(s, 24, 4) as u32,
        }
    }
}

pub(super) fn parse_dynamic(b: &[u8], is64: bool) -> Dynamic {
    let w = if is64 { 8 } else { 4 };
    let mut d = Dynamic::default();
    let mut strtab_vaddr = None;
    for e in b.chunks_exact(2 * w) {
        let tag = rd(e, 0, w);
        let val = rd(e, w, w);
        match tag {
            DT_NULL => break,
            DT_NEEDED => d.needed.push(val),
            DT_SONAME => d.soname = Some(val),
            DT_RPATH => d.rpath.push(val),
            DT_RUNPATH => d.runpath.push(val),
            DT_STRTAB => strtab_vaddr = Some(val),
            DT_STRSZ => d.strsz = val,
            _ => {}
        }
    }
    // A virtual address: mapped to a file offset by the caller (needs the program headers).
    d.strtab_off = strtab_vaddr;
    d
}
