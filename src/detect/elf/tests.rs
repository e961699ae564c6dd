//! Tests against our own fixtures (testdata/fatbin, copied from shared/fixtures) whose
//! expected contents are the recorded `cuobjdump` outputs, plus synthetic and adversarial
//! inputs.

use super::*;
use crate::arch::{ArchTarget, CodeKind};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin")
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One entry as `cuobjdump -all` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    target: ArchTarget,
    code_version: (u16, u16),
    compressed: bool,
    in_group: bool,
}

/// Parses EXPECTED_cuobjdump.txt into file name → entries in order.
fn parse_expected(text: &str) -> Vec<(String, Vec<Listed>)> {
    let mut out: Vec<(String, Vec<Listed>)> = Vec::new();
    let mut kind: Option<CodeKind> = None;
    let mut group_indent: Option<usize> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("=== ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            out.push((name, Vec::new()));
            kind = None;
            group_indent = None;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        let entries = &mut out.last_mut().expect("entry before file header").1;
        if let Some(gi) = group_indent {
            if indent <= gi && t.starts_with("Fatbin ") {
                group_indent = None;
            }
        }
        match t {
            "Fatbin elf code:" => kind = Some(CodeKind::Sass),
            "Fatbin ptx code:" => kind = Some(CodeKind::Ptx),
            "Fatbin nvvm code:" => kind = Some(CodeKind::Lto),
            "Fatbin concatenated entry code:" => {
                kind = None;
                group_indent = Some(indent);
            }
            _ => {}
        }
        if let Some(a) = t.strip_prefix("arch = ") {
            let k = kind.expect("arch outside an entry");
            // cuobjdump prints every arch as sm_NN[a|f]; the kind comes from the block title.
            let mut target: ArchTarget = a.parse().unwrap();
            target.kind = k;
            entries.push(Listed {
                target,
                code_version: (0, 0),
                compressed: false,
                in_group: group_indent.is_some_and(|gi| indent > gi),
            });
        } else if let Some(v) = t.strip_prefix("code version = [") {
            let v = v.trim_end_matches(']');
            let (a, b) = v.split_once(',').unwrap();
            let cv = (a.parse().unwrap(), b.parse().unwrap());
            if kind.is_some() {
                if let Some(e) = entries.last_mut() {
                    e.code_version = cv;
                }
            }
        } else if t == "compressed" && kind.is_some() {
            if let Some(e) = entries.last_mut() {
                e.compressed = true;
            }
        }
        if t == "Fatbin concatenated entry code:" {
            kind = None;
        }
    }
    out
}

fn listed(entries: &[&FatbinEntry]) -> Vec<Listed> {
    entries
        .iter()
        .map(|e| Listed {
            target: e.target,
            code_version: e.code_version,
            // cuobjdump shows "compressed" on the group, not on its members.
            compressed: e.compression.is_some() && !e.in_group,
            in_group: e.in_group,
        })
        .collect()
}

fn all_entries(f: &ElfFacts) -> Vec<&FatbinEntry> {
    f.fatbin
        .iter()
        .flat_map(|s| s.sections.iter())
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.entries.iter())
        .collect()
}

#[test]
fn fatbin_format_fixtures_match_cuobjdump_all() {
    let dir = data_dir().join("fatbin-format");
    let expected =
        parse_expected(&std::fs::read_to_string(dir.join("EXPECTED_cuobjdump.txt")).unwrap());
    assert_eq!(expected.len(), 9, "fixture listing parsed");
    for (name, want) in expected {
        assert!(!want.is_empty(), "{name}: empty expectation");
        let data = read(&dir.join(&name));
        let got = if name.ends_with(".fatbin") {
            let (cs, warnings) = scan_fatbin_bytes_detailed(&data).unwrap();
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
            let es: Vec<&FatbinEntry> = cs.iter().flat_map(|c| c.entries.iter()).collect();
            listed(&es)
        } else {
            let f = scan_elf_bytes(&data).unwrap();
            assert!(f.warnings.is_empty(), "{name}: {:?}", f.warnings);
            listed(&all_entries(&f))
        };
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn fixture_sections_and_selection() {
    let dir = data_dir().join("fatbin-format");
    let rdc = scan_elf_bytes(&read(&dir.join("fx_rdc.so"))).unwrap();
    let fb = rdc.fatbin.as_ref().unwrap();
    assert_eq!(fb.sections.len(), 1);
    assert_eq!(fb.sections[0].name, "__nv_relfatbin");
    // No .nv_fatbin: the relocatable section is what gets listed.
    assert_eq!(
        rdc.sass().iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        ["sm_80", "sm_90", "sm_90a", "sm_120"]
    );
    let lto = scan_elf_bytes(&read(&dir.join("fx_lto.o"))).unwrap();
    assert_eq!(lto.elf_type, "rel");
    assert!(lto.sass().is_empty() && lto.ptx().is_empty());
    assert_eq!(lto.lto().len(), 2);

    let d = scan_elf_bytes(&read(&dir.join("fx_default.so"))).unwrap();
    assert_eq!(
        (d.class, d.machine.as_str(), d.elf_type.as_str()),
        (64, "x86_64", "dyn")
    );
    assert!(
        d.needed.iter().any(|n| n.starts_with("libc.so")),
        "{:?}",
        d.needed
    );
    let c = &d.fatbin.as_ref().unwrap().sections[0].containers[0];
    let hs: Vec<u64> = c.entries.iter().map(|e| e.header_size).collect();
    assert_eq!(hs, [64, 64, 64, 120, 80]);
    assert_eq!(c.entries[4].compression.as_deref(), Some("zstd"));
    let lz4 = scan_elf_bytes(&read(&dir.join("fx_lz4_all.so"))).unwrap();
    assert!(all_entries(&lz4)
        .iter()
        .all(|e| e.compression.as_deref() == Some("lz4")));
    // Bare cubins are ELF files without fatbins.
    let cubin = scan_elf_bytes(&read(&dir.join("cubin_ptxas13.5_sm90a.cubin"))).unwrap();
    assert_eq!(cubin.machine, "cuda");
    assert!(cubin.fatbin.is_none());
}

fn cuobjdump_set(path: &Path, kind: CodeKind) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut s = BTreeSet::new();
    for line in text.lines() {
        let Some((_, name)) = line.split_once(": ") else {
            continue;
        };
        if !(line.starts_with("ELF file") || line.starts_with("PTX file")) {
            continue;
        }
        let parts: Vec<&str> = name.trim().rsplit('.').collect();
        // name.N.sm_XY.cubin|ptx → parts[1] is the arch
        let arch = parts[1];
        let t = match kind {
            CodeKind::Ptx => arch.replacen("sm_", "compute_", 1),
            _ => arch.to_string(),
        };
        s.insert(t);
    }
    s
}

fn names(v: &[ArchTarget], kind: CodeKind) -> BTreeSet<String> {
    v.iter()
        .map(|t| {
            let s = t.to_string();
            // cuobjdump --list-elf drops the family 'f' suffix of ELF names.
            match (kind, s.strip_suffix('f')) {
                (CodeKind::Sass, Some(x)) => x.to_string(),
                _ => s,
            }
        })
        .collect()
}

#[test]
fn cuda_binaries_match_cuobjdump_lists() {
    let root = data_dir().join("cuda-binaries");
    let mut n = 0;
    for d in std::fs::read_dir(&root).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        let want_sass = cuobjdump_set(&d.join("cuobjdump_list_elf.txt"), CodeKind::Sass);
        let want_ptx = cuobjdump_set(&d.join("cuobjdump_list_ptx.txt"), CodeKind::Ptx);
        assert!(!(want_sass.is_empty() && want_ptx.is_empty()));
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
            let (sass, ptx) = match ext {
                "so" => {
                    let facts = scan_elf_bytes(&read(&f)).unwrap();
                    assert!(
                        facts.warnings.is_empty(),
                        "{}: {:?}",
                        f.display(),
                        facts.warnings
                    );
                    (facts.sass(), facts.ptx())
                }
                "fatbin" => {
                    let cs = scan_fatbin_bytes(&read(&f)).unwrap();
                    let es: Vec<ArchTarget> = cs
                        .iter()
                        .flat_map(|c| c.entries.iter())
                        .map(|e| e.target)
                        .collect();
                    let pick = |k| {
                        es.iter()
                            .copied()
                            .filter(|t| t.kind == k)
                            .collect::<Vec<_>>()
                    };
                    (pick(CodeKind::Sass), pick(CodeKind::Ptx))
                }
                _ => continue,
            };
            n += 1;
            assert_eq!(names(&sass, CodeKind::Sass), want_sass, "{}", f.display());
            assert_eq!(names(&ptx, CodeKind::Ptx), want_ptx, "{}", f.display());
        }
    }
    assert_eq!(n, 10, "5 .so + 5 .fatbin");
}

/// A reader that hands out at most `n` bytes per read.
struct Trickle<'a> {
    data: &'a [u8],
    n: usize,
}
impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.n.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

fn elf_fixtures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for sub in ["fatbin-format", "cuda-binaries"] {
        for e in walk(&data_dir().join(sub)) {
            let ok = std::fs::File::open(&e)
                .and_then(|mut f| {
                    let mut h = [0u8; 4];
                    f.read_exact(&mut h).map(|_| h)
                })
                .is_ok_and(|h| is_elf(&h));
            if ok {
                v.push(e);
            }
        }
    }
    v.sort();
    v
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn streaming_in_odd_chunks_equals_bytes() {
    let files = elf_fixtures();
    assert!(files.len() >= 10);
    for f in files {
        let data = read(&f);
        let want = scan_elf_bytes(&data).unwrap();
        for n in [7, 4093] {
            let got = scan_elf(Trickle { data: &data, n }, data.len() as u64).unwrap();
            assert_eq!(got, want, "{} in {n}-byte reads", f.display());
        }
        // Small head buffer: the dynamic section of the 1 MB libraries lies beyond it and must
        // be captured on the fly; the string table is still inside.
        let small = ScanOptions {
            head_max: 64 * 1024,
            tail_max: 4096,
        };
        let got = scan_elf_with(Trickle { data: &data, n: 7 }, data.len() as u64, &small).unwrap();
        // A statically linked runtime is named only in `.symtab`, which sits behind the code
        // near the end of the file: a stream keeps it only inside its head buffer.
        let mut want_small = want.clone();
        want_small.static_cudart_version = None;
        assert_eq!(got, want_small, "{} with small buffers", f.display());
    }
}

#[test]
fn missing_shstrtab_is_a_warning() {
    let data =
        read(&data_dir().join("cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so"));
    let opts = ScanOptions {
        head_max: 64 * 1024,
        tail_max: 0,
    };
    let f = scan_elf_with(&data[..], data.len() as u64, &opts).unwrap();
    assert!(
        f.warnings.iter().any(|w| w.contains("section name table")),
        "{:?}",
        f.warnings
    );
    // Containers are still reported, but not as loadable.
    assert!(f.fatbin.is_some());
    assert!(f.sass().is_empty());
}

#[test]
fn json_round_trip() {
    let data = read(&data_dir().join("fatbin-format/fx_concat.so"));
    let f = scan_elf_bytes(&data).unwrap();
    let j = serde_json::to_string(&f).unwrap();
    let back: ElfFacts = serde_json::from_str(&j).unwrap();
    assert_eq!(back, f);
    assert!(j.contains("\"sm_90a\""));
}

#[test]
fn not_elf_and_big_endian_are_errors() {
    assert!(matches!(scan_elf_bytes(b""), Err(ElfError::NotElf)));
    assert!(matches!(
        scan_elf_bytes(b"MZ\x90\x00 not an elf"),
        Err(ElfError::NotElf)
    ));
    assert!(matches!(
        scan_elf_bytes(b"\x7fEL"),
        Err(ElfError::Truncated(3))
    ));
    let mut be = read(&data_dir().join("fatbin-format/fx_default.so"));
    be[5] = 2;
    assert!(matches!(scan_elf_bytes(&be), Err(ElfError::BigEndian)));
    be[5] = 1;
    be[4] = 7;
    assert!(matches!(scan_elf_bytes(&be), Err(ElfError::BadClass(7))));
    assert!(matches!(
        scan_fatbin_bytes(b"\x7fELF"),
        Err(FatbinError::NotFatbin)
    ));
    assert!(!is_elf(b"\x7fEL"));
}

// ---------------------------------------------------------------------------------------
// Synthetic ELF files.

#[derive(Clone)]
struct Sec {
    name: &'static str,
    sh_type: u32,
    data: Vec<u8>,
    align: u64,
}

fn sec(name: &'static str, data: Vec<u8>, align: u64) -> Sec {
    Sec {
        name,
        sh_type: 1,
        data,
        align,
    }
}

/// SHF_ALLOC (2), SHF_WRITE (1) and SHF_EXECINSTR (4) as a linker sets them.
fn section_flags(name: &str) -> u64 {
    match name {
        ".text" => 2 | 4,
        ".data" | ".dynamic" | ".data.rel.ro" => 2 | 1,
        ".nv_fatbin" | ".dynstr" | ".rodata" | ".eh_frame" => 2,
        _ => 0,
    }
}

/// A relocatable little-endian ELF with the given sections (+ .shstrtab + section headers).
fn build_elf(is64: bool, secs: &[Sec]) -> Vec<u8> {
    build_elf_split(is64, secs, secs.len())
}

/// [`build_elf`] with the sections from index `before_shdrs` on placed after the section
/// header table (where cuSPARSELt keeps .dynstr and .dynamic). .dynamic links to .dynstr.
fn build_elf_split(is64: bool, secs: &[Sec], before_shdrs: usize) -> Vec<u8> {
    let ehsize = if is64 { 64 } else { 52 };
    // With a .dynamic section (64-bit only): PT_LOAD (identity-mapped) + PT_DYNAMIC after
    // the ELF header, and DT_STRTAB patched to point at .dynstr.
    let with_dyn = is64 && secs.iter().any(|s| s.name == ".dynamic");
    let mut out = vec![0u8; ehsize + if with_dyn { 2 * 56 } else { 0 }];
    let mut names = vec![0u8];
    // .shstrtab: every section's name, in order, then its own.
    let mut name_offs = Vec::new();
    for s in secs {
        name_offs.push(names.len());
        names.extend_from_slice(s.name.as_bytes());
        names.push(0);
    }
    let shstr_name = names.len();
    names.extend_from_slice(b".shstrtab\0");
    // (name, type, offset, size, align) per section, in section order.
    let mut placed = Vec::new();
    let place = |out: &mut Vec<u8>, i: usize, s: &Sec| {
        while !(out.len() as u64).is_multiple_of(s.align.max(1)) {
            out.push(0);
        }
        let at = out.len();
        out.extend_from_slice(&s.data);
        (name_offs[i], s.sh_type, at, s.data.len(), s.align)
    };
    for (i, s) in secs[..before_shdrs].iter().enumerate() {
        placed.push(place(&mut out, i, s));
    }
    let shstr_off = out.len();
    out.extend_from_slice(&names);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let shoff = out.len();
    let shentsize = if is64 { 64 } else { 40 };
    let shnum = secs.len() + 2;
    out.extend(std::iter::repeat_n(0u8, shnum * shentsize));
    for (i, s) in secs.iter().enumerate().skip(before_shdrs) {
        placed.push(place(&mut out, i, s));
    }
    placed.push((shstr_name, 3, shstr_off, names.len(), 1));
    let link_of = |i: usize| -> u32 {
        if secs.get(i).is_some_and(|s| s.name == ".dynamic") {
            secs.iter()
                .position(|s| s.name == ".dynstr")
                .map_or(0, |j| j as u32 + 1)
        } else {
            0
        }
    };
    for (i, &(n, t, off, size, align)) in placed.iter().enumerate() {
        let mut h = Vec::new();
        h.extend_from_slice(&(n as u32).to_le_bytes());
        h.extend_from_slice(&t.to_le_bytes());
        let flags = secs.get(i).map_or(0, |s| section_flags(s.name));
        if is64 {
            h.extend_from_slice(&flags.to_le_bytes());
            h.extend_from_slice(&0u64.to_le_bytes()); // addr
            h.extend_from_slice(&(off as u64).to_le_bytes());
            h.extend_from_slice(&(size as u64).to_le_bytes());
            h.extend_from_slice(&link_of(i).to_le_bytes());
            h.extend_from_slice(&[0u8; 4]); // info
            h.extend_from_slice(&align.to_le_bytes());
            h.extend_from_slice(&0u64.to_le_bytes());
        } else {
            h.extend_from_slice(&(flags as u32).to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes());
            h.extend_from_slice(&(off as u32).to_le_bytes());
            h.extend_from_slice(&(size as u32).to_le_bytes());
            h.extend_from_slice(&link_of(i).to_le_bytes());
            h.extend_from_slice(&[0u8; 4]);
            h.extend_from_slice(&(align as u32).to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes());
        }
        let at = shoff + (i + 1) * shentsize;
        out[at..at + shentsize].copy_from_slice(&h);
    }
    if with_dyn {
        let find = |n: &str| {
            let i = secs.iter().position(|s| s.name == n).unwrap();
            (placed[i].2, placed[i].3)
        };
        let (doff, dlen) = find(".dynamic");
        let (soff, _) = find(".dynstr");
        for e in (doff..doff + dlen).step_by(16) {
            if out[e..e + 8] == 5u64.to_le_bytes() {
                out[e + 8..e + 16].copy_from_slice(&(soff as u64).to_le_bytes());
            }
        }
        let total = out.len() as u64;
        let ph = |t: u32, off: u64, len: u64| {
            let mut h = Vec::new();
            h.extend_from_slice(&t.to_le_bytes());
            h.extend_from_slice(&4u32.to_le_bytes());
            for v in [off, off, off, len, len, 8] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            h
        };
        let mut phdrs = ph(1, 0, total);
        phdrs.extend(ph(2, doff as u64, dlen as u64));
        out[64..64 + 112].copy_from_slice(&phdrs);
        out[32..40].copy_from_slice(&64u64.to_le_bytes());
        out[54..56].copy_from_slice(&56u16.to_le_bytes());
        out[56..58].copy_from_slice(&2u16.to_le_bytes());
    }
    out[0..4].copy_from_slice(b"\x7fELF");
    out[4] = if is64 { 2 } else { 1 };
    out[5] = 1;
    out[6] = 1;
    out[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
    let machine: u16 = if is64 { 183 } else { 3 };
    out[18..20].copy_from_slice(&machine.to_le_bytes());
    if is64 {
        out[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
        out[52..54].copy_from_slice(&64u16.to_le_bytes());
        out[58..60].copy_from_slice(&(shentsize as u16).to_le_bytes());
        out[60..62].copy_from_slice(&(shnum as u16).to_le_bytes());
        out[62..64].copy_from_slice(&((shnum - 1) as u16).to_le_bytes());
    } else {
        out[32..36].copy_from_slice(&(shoff as u32).to_le_bytes());
        out[40..42].copy_from_slice(&52u16.to_le_bytes());
        out[46..48].copy_from_slice(&(shentsize as u16).to_le_bytes());
        out[48..50].copy_from_slice(&(shnum as u16).to_le_bytes());
        out[50..52].copy_from_slice(&((shnum - 1) as u16).to_le_bytes());
    }
    out
}

fn fixture_fatbin(name: &str) -> Vec<u8> {
    read(&data_dir().join("fatbin-format").join(name))
}

fn targets_of(cs: &[FatbinContainer]) -> BTreeSet<String> {
    cs.iter()
        .flat_map(|c| c.entries.iter())
        .map(|e| e.target.to_string())
        .collect()
}

#[test]
fn synthetic_32_and_64_bit_with_padding_and_data_fatbins() {
    let variants = fixture_fatbin("fx_variants.fatbin");
    let oldabi = fixture_fatbin("fx_oldabi.fatbin");
    let mix = fixture_fatbin("fx_concat_mix.fatbin");
    // .nv_fatbin: two containers, the second on a 256-byte boundary with zero fill.
    let mut nv = variants.clone();
    while !nv.len().is_multiple_of(256) {
        nv.push(0);
    }
    nv.extend_from_slice(&oldabi);
    // .data: a genuine fatbin (counted nowhere) and a random magic match with a huge size.
    let mut data = vec![0xAAu8; 24];
    data.extend_from_slice(&mix);
    data.extend_from_slice(&fatbin::FATBIN_MAGIC.to_le_bytes());
    data.extend_from_slice(&[1, 0, 16, 0]);
    data.extend_from_slice(&u64::MAX.to_le_bytes());
    data.extend_from_slice(&[0x55u8; 40]);
    // .text: a magic word followed by garbage.
    let mut text = vec![0x90u8; 64];
    text[16..20].copy_from_slice(&fatbin::FATBIN_MAGIC.to_le_bytes());
    for is64 in [true, false] {
        let elf = build_elf(
            is64,
            &[
                sec(".text", text.clone(), 16),
                sec(".nv_fatbin", nv.clone(), 256),
                sec(".data", data.clone(), 8),
            ],
        );
        let f = scan_elf_bytes(&elf).unwrap();
        assert_eq!(f.class, if is64 { 64 } else { 32 });
        assert_eq!(f.machine, if is64 { "aarch64" } else { "x86" });
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        let fb = f.fatbin.as_ref().unwrap();
        let names: Vec<&str> = fb.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".nv_fatbin", ".data"]);
        assert_eq!(fb.sections[0].containers.len(), 2);
        assert_eq!(fb.sections[1].containers.len(), 1);
        let mut want: BTreeSet<String> = targets_of(&scan_fatbin_bytes(&variants).unwrap());
        want.extend(targets_of(&scan_fatbin_bytes(&oldabi).unwrap()));
        let mut got: BTreeSet<String> = f.sass().iter().map(|t| t.to_string()).collect();
        got.extend(f.ptx().iter().map(|t| t.to_string()));
        assert_eq!(got, want);
        // The .data fatbin (sm_75, sm_86 only there) is reported but not loadable.
        assert!(!got.contains("sm_86"));
        assert_eq!(
            targets_of(&fb.sections[1].containers),
            targets_of(&scan_fatbin_bytes(&mix).unwrap())
        );
    }
}

/// A genuine container is reported from the data sections a library can load it from, by
/// both scans, and from none whose layout the toolchain defines (unwind tables, relocated
/// read-only data) or that hold code.
#[test]
fn containers_only_where_a_library_can_load_them() {
    let mix = fixture_fatbin("fx_concat_mix.fatbin");
    let mut in_data = vec![0u8; 8];
    in_data.extend_from_slice(&mix);
    let names = [".text", ".eh_frame", ".data.rel.ro", ".rodata", ".data"];
    let secs: Vec<Sec> = names.iter().map(|n| sec(n, in_data.clone(), 8)).collect();
    let elf = build_elf(true, &secs);
    let want = scan_elf_bytes(&elf).unwrap();
    let fb = want.fatbin.as_ref().unwrap();
    let found: Vec<&str> = fb.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found, [".rodata", ".data"]);
    for s in &fb.sections {
        assert_eq!(s.containers.len(), 1, "{}", s.name);
    }
    let got = scan_elf_at(
        &SeekReader::new(std::io::Cursor::new(&elf)),
        elf.len() as u64,
    )
    .unwrap();
    assert_eq!(got.facts, want);
}

/// A section name table farther before the section headers than a stream keeps: the stream
/// warns and cannot tell the fatbin sections (nothing loadable); the seekable scan reads the
/// table where it lies and reports what a stream that kept it does.
#[test]
fn seekable_scan_reads_a_far_section_name_table() {
    let p = data_dir().join("cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so");
    let data = read(&p);
    let far = ScanOptions {
        head_max: 4096,
        tail_max: 0,
    };
    let stream = scan_elf_with(&data[..], data.len() as u64, &far).unwrap();
    assert!(stream.sass().is_empty(), "{:?}", stream.sass());
    // The default head holds this whole small file, name table included.
    let want = scan_elf_with(&data[..], data.len() as u64, &ScanOptions::default()).unwrap();
    assert!(!want.sass().is_empty());
    let file = std::fs::File::open(&p).unwrap();
    let got = scan_elf_at_with(&file, data.len() as u64, &far).unwrap();
    assert_eq!(got.facts.fatbin, want.fatbin);
    assert_eq!(got.facts.sass(), want.sass());
    assert!(
        !got.facts
            .warnings
            .iter()
            .any(|w| w.contains("section name")),
        "{:?}",
        got.facts.warnings
    );
}

#[test]
fn nonzero_padding_and_lying_sizes_warn() {
    let variants = fixture_fatbin("fx_variants.fatbin");
    let oldabi = fixture_fatbin("fx_oldabi.fatbin");
    let mut nv = variants.clone();
    nv.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7]);
    nv.extend_from_slice(&oldabi);
    let elf = build_elf(true, &[sec(".nv_fatbin", nv.clone(), 8)]);
    let f = scan_elf_bytes(&elf).unwrap();
    assert!(
        f.warnings.iter().any(|w| w.contains("non-zero bytes")),
        "{:?}",
        f.warnings
    );
    assert_eq!(f.fatbin.as_ref().unwrap().sections[0].containers.len(), 2);

    // Second entry's payload size grows past the container.
    let mut bad = variants.clone();
    let e0 = 16;
    let h0 = u32::from_le_bytes(bad[e0 + 4..e0 + 8].try_into().unwrap()) as usize;
    let p0 = u64::from_le_bytes(bad[e0 + 8..e0 + 16].try_into().unwrap()) as usize;
    let e1 = e0 + h0 + p0;
    bad[e1 + 8..e1 + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let elf = build_elf(true, &[sec(".nv_fatbin", bad, 8)]);
    let f = scan_elf_bytes(&elf).unwrap();
    assert!(
        f.warnings
            .iter()
            .any(|w| w.starts_with("fatbin container at 0x")
                && w.contains("in .nv_fatbin")
                && w.contains("entry size exceeds container")),
        "{:?}",
        f.warnings
    );
    // The entry before the damage is still reported.
    assert_eq!(f.sass().len(), 1);

    // Unknown kind: reported, skipped, walk continues.
    let mut unk = variants.clone();
    unk[e1..e1 + 2].copy_from_slice(&0x40u16.to_le_bytes());
    let (cs, w) = scan_fatbin_bytes_detailed(&unk).unwrap();
    assert!(
        w.iter().any(|w| w.contains("unknown entry kind 0x40")),
        "{w:?}"
    );
    let n_all = scan_fatbin_bytes(&variants).unwrap()[0].entries.len();
    assert_eq!(cs[0].entries.len(), n_all - 1);
}

// ---------------------------------------------------------------------------------------
// Adversarial inputs: never panic, never hang, bounded results.

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn check_robust(data: &[u8]) {
    if let Ok(f) = scan_elf_bytes(data) {
        // Serializable and bounded.
        assert!(f.warnings.len() <= 1000);
        let _ = serde_json::to_string(&f).unwrap();
        let _ = (f.sass(), f.ptx());
    }
    let _ = scan_fatbin_bytes_detailed(data);
}

#[test]
fn truncated_fixtures_never_panic() {
    for f in elf_fixtures() {
        let data = read(&f);
        let full = scan_elf_bytes(&data).unwrap();
        let mut cuts: Vec<usize> = (1..20).map(|i| data.len() * i / 20).collect();
        cuts.extend([0, 1, 5, 6, 51, 52, 63, 64, 100]);
        // Cut inside every container and entry header.
        for e in all_entries(&full) {
            cuts.push(e.offset as usize + 10);
            cuts.push(e.offset as usize + e.header_size as usize + 3);
        }
        for cut in cuts {
            let cut = cut.min(data.len());
            check_robust(&data[..cut]);
            // Reader shorter than the announced size.
            if let Ok(r) = scan_elf(&data[..cut], data.len() as u64) {
                if cut >= 64 && cut < data.len() {
                    assert!(
                        r.warnings.iter().any(|w| w.contains("truncated")),
                        "{}",
                        f.display()
                    );
                }
            }
        }
    }
    // Bare fatbins too.
    for e in walk(&data_dir()) {
        if e.extension().is_some_and(|x| x == "fatbin") {
            let fb = read(&e);
            for i in 0..40 {
                let cut = fb.len() * i / 40;
                if let Ok((_, w)) = scan_fatbin_bytes_detailed(&fb[..cut]) {
                    assert!(cut < 16 || !w.is_empty(), "{} cut {cut}", e.display());
                }
            }
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let mut rng = Lcg(0x5eed);
    for f in elf_fixtures() {
        let data = read(&f);
        let full = scan_elf_bytes(&data).unwrap();
        // Target the interesting parts: ELF header, fatbin headers, and anywhere.
        let mut spots: Vec<usize> = (0..64).collect();
        for e in all_entries(&full) {
            spots.extend(e.offset as usize..e.offset as usize + e.header_size as usize);
        }
        for c in full
            .fatbin
            .iter()
            .flat_map(|s| s.sections.iter())
            .flat_map(|s| &s.containers)
        {
            spots.extend(c.offset as usize..c.offset as usize + 16);
        }
        for _ in 0..300 {
            let mut d = data.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = if rng.next().is_multiple_of(4) {
                    rng.next() as usize % d.len()
                } else {
                    spots[rng.next() as usize % spots.len()].min(d.len() - 1)
                };
                d[i] ^= 1 << (rng.next() % 8);
                if rng.next().is_multiple_of(3) {
                    d[i] = 0xFF;
                }
            }
            check_robust(&d);
        }
    }
}

#[test]
fn random_and_hostile_bytes() {
    let mut rng = Lcg(42);
    for len in [0usize, 3, 64, 200, 4096, 100_000] {
        let mut d: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        check_robust(&d);
        if len >= 64 {
            d[0..6].copy_from_slice(b"\x7fELF\x02\x01");
            check_robust(&d);
            d[4] = 1;
            check_robust(&d);
        }
    }
    // A file made only of container magics with maximal sizes.
    let mut d = build_elf(true, &[sec(".nv_fatbin", vec![0; 8], 8)]);
    let mut spam = Vec::new();
    for i in 0..200_000u64 {
        spam.extend_from_slice(&fatbin::FATBIN_MAGIC.to_le_bytes());
        spam.extend_from_slice(&[1, 0, 16, 0]);
        spam.extend_from_slice(&(u64::MAX - i).to_le_bytes());
    }
    d.extend_from_slice(&spam);
    check_robust(&d);
    let fb = scan_fatbin_bytes_detailed(&spam).unwrap();
    assert!(!fb.1.is_empty());
    // Header claims a giant program header table.
    let mut h = fixture_fatbin("fx_default.so");
    h[56..58].copy_from_slice(&u16::MAX.to_le_bytes());
    h[32..40].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    let f = scan_elf_bytes(&h).unwrap();
    assert!(!f.warnings.is_empty());
    // A section header table past the end of the file (too many entries, or too far): the
    // file was cut short or is corrupt, and what it holds is unknown — an error (GL000),
    // never an empty "no device code".
    let mut many = h.clone();
    many[60..62].copy_from_slice(&u16::MAX.to_le_bytes());
    assert!(matches!(scan_elf_bytes(&many), Err(ElfError::BeyondEnd(_))));
    h[40..48].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    assert!(matches!(scan_elf_bytes(&h), Err(ElfError::BeyondEnd(_))));
    let v01 = std::fs::read(
        data_dir().join("cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so"),
    )
    .unwrap();
    assert!(matches!(
        scan_elf_bytes(&v01[..v01.len() * 2 / 3]),
        Err(ElfError::BeyondEnd(_))
    ));
}

/// .dynamic followed directly by .dynstr far into the file (the layout patchelf produces, e.g.
/// nvidia-curand 10.4's libcurand.so.10): the strings are only known once .dynamic has been
/// read, and must be captured from the same read chunk.
#[test]
fn dynamic_before_dynstr_late_in_file() {
    let strs = b"\0libcudart.so.13\0libfoo.so\0$ORIGIN/../lib:/x\0libme.so.1\0".to_vec();
    let mut dynamic = Vec::new();
    for (tag, val) in [
        (1u64, 1u64),
        (1, 17),
        (29, 27),
        (14, 45),
        (5, 0),
        (10, strs.len() as u64),
        (0, 0),
    ] {
        dynamic.extend_from_slice(&tag.to_le_bytes());
        dynamic.extend_from_slice(&val.to_le_bytes());
    }
    let nv = fixture_fatbin("fx_variants.fatbin");
    let elf = build_elf(
        true,
        &[
            sec(".text", vec![0x90; 300_000], 16),
            sec(".nv_fatbin", nv, 8),
            Sec {
                name: ".dynamic",
                sh_type: 6,
                data: dynamic,
                align: 8,
            },
            Sec {
                name: ".dynstr",
                sh_type: 3,
                data: strs,
                align: 1,
            },
            // Keeps .dynstr out of the tail kept before the section headers.
            sec(".comment", vec![b'x'; 20_000], 1),
        ],
    );
    for opts in [
        ScanOptions::default(),
        ScanOptions {
            head_max: 4096,
            tail_max: 4096,
        },
    ] {
        for n in [7, 1 << 20] {
            let f = scan_elf_with(Trickle { data: &elf, n }, elf.len() as u64, &opts).unwrap();
            assert!(f.warnings.is_empty(), "{:?}", f.warnings);
            assert_eq!(f.needed, ["libcudart.so.13", "libfoo.so"]);
            assert_eq!(f.runpath, ["$ORIGIN/../lib", "/x"]);
            assert_eq!(f.soname.as_deref(), Some("libme.so.1"));
            assert_eq!(f.sass().len(), 5);
        }
    }
}

/// .dynamic and .dynstr sections of a library needing libcudart.so.13 and libfoo.so, with
/// a RUNPATH and a SONAME (DT_STRTAB is patched by `build_elf_split`).
fn dyn_sections() -> (Sec, Sec) {
    let strs = b"\0libcudart.so.13\0libfoo.so\0$ORIGIN/../lib:/x\0libme.so.1\0".to_vec();
    let mut dynamic = Vec::new();
    for (tag, val) in [
        (1u64, 1u64),
        (1, 17),
        (29, 27),
        (14, 45),
        (5, 0),
        (10, strs.len() as u64),
        (0, 0),
    ] {
        dynamic.extend_from_slice(&tag.to_le_bytes());
        dynamic.extend_from_slice(&val.to_le_bytes());
    }
    (
        Sec {
            name: ".dynamic",
            sh_type: 6,
            data: dynamic,
            align: 8,
        },
        Sec {
            name: ".dynstr",
            sh_type: 3,
            data: strs,
            align: 1,
        },
    )
}

fn assert_dyn_strings(elf: &[u8], opts: &ScanOptions) {
    for n in [7, 4093, 1 << 20] {
        let f = scan_elf_with(Trickle { data: elf, n }, elf.len() as u64, opts).unwrap();
        assert!(f.warnings.is_empty(), "chunk {n}: {:?}", f.warnings);
        assert_eq!(f.needed, ["libcudart.so.13", "libfoo.so"], "chunk {n}");
        assert_eq!(f.runpath, ["$ORIGIN/../lib", "/x"]);
        assert_eq!(f.soname.as_deref(), Some("libme.so.1"));
        assert_eq!(f.sass().len(), 5);
    }
}

const SMALL_HEAD: ScanOptions = ScanOptions {
    head_max: 4096,
    tail_max: 4096,
};

/// cuSPARSELt's layout (libcusparseLt.so.0 0.8.1: section headers at 0x14538cf8, then a
/// segment holding .dynstr at 0x1453a198 and .dynamic at 0x1453b4b0, 320 MiB past the
/// head): the section headers, read first, say where .dynstr is, so it is captured as it
/// passes even with a gap to .dynamic wider than anything kept in front of it.
#[test]
fn dynstr_beyond_head_named_by_section_headers() {
    let (dynamic, dynstr) = dyn_sections();
    let elf = build_elf_split(
        true,
        &[
            sec(".text", vec![0x90; 300_000], 16),
            sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
            dynstr,
            sec(".gap", vec![b'g'; 20_000], 1),
            dynamic,
        ],
        2,
    );
    assert_dyn_strings(&elf, &SMALL_HEAD);
    assert_dyn_strings(&elf, &ScanOptions::default());
}

/// .dynstr right before .dynamic, both past the head and far from the section headers (a
/// segment patchelf appended): the bytes in front of PT_DYNAMIC are kept as they pass.
#[test]
fn dynstr_just_before_dynamic_beyond_head() {
    let (dynamic, dynstr) = dyn_sections();
    let elf = build_elf(
        true,
        &[
            sec(".text", vec![0x90; 300_000], 16),
            sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
            dynstr,
            dynamic,
            sec(".comment", vec![b'x'; 20_000], 1),
        ],
    );
    assert_dyn_strings(&elf, &SMALL_HEAD);
}

/// Where nothing read before .dynamic locates .dynstr (past the head, far from both
/// .dynamic and the section headers), the strings are reported missing, never invented.
#[test]
fn dynstr_out_of_reach_is_a_warning() {
    let (dynamic, dynstr) = dyn_sections();
    let elf = build_elf(
        true,
        &[
            sec(".text", vec![0x90; 300_000], 16),
            sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
            dynstr,
            sec(".gap", vec![b'g'; 20_000], 1),
            dynamic,
            sec(".comment", vec![b'x'; 20_000], 1),
        ],
    );
    let f = scan_elf_with(&elf[..], elf.len() as u64, &SMALL_HEAD).unwrap();
    assert!(f.needed.is_empty(), "{:?}", f.needed);
    assert!(
        f.warnings.iter().any(|w| w.contains("was not retained")),
        "{:?}",
        f.warnings
    );
    // With the default head it is all there.
    assert_dyn_strings(&elf[..], &ScanOptions::default());
}

#[test]
fn patchelf_fixture_dynamic_strings() {
    // fx_default.so after `patchelf --set-rpath '$ORIGIN/../lib:/opt/cuda/lib64'
    // --set-soname libfx_patched.so`: .dynstr and .dynamic moved to the end of the file.
    let data = read(&data_dir().join("synthetic/fx_default_patchelf.so"));
    let f = scan_elf_bytes(&data).unwrap();
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(f.soname.as_deref(), Some("libfx_patched.so"));
    assert_eq!(f.runpath, ["$ORIGIN/../lib", "/opt/cuda/lib64"]);
    assert!(f.rpath.is_empty());
    assert_eq!(f.needed.len(), 3);
    let orig = scan_elf_bytes(&read(&data_dir().join("fatbin-format/fx_default.so"))).unwrap();
    assert_eq!(f.sass(), orig.sass());
    assert_eq!(f.ptx(), orig.ptx());
}

#[test]
fn deep_check_agrees_on_fixtures_and_catches_lies() {
    let mut checked = 0;
    for f in walk(&data_dir()) {
        let data = read(&f);
        let cs: Vec<FatbinContainer> = if is_elf(&data) {
            let facts = scan_elf_bytes(&data).unwrap();
            facts
                .fatbin
                .into_iter()
                .flat_map(|s| s.sections)
                .flat_map(|s| s.containers)
                .collect()
        } else if let Ok(cs) = scan_fatbin_bytes(&data) {
            cs
        } else {
            continue;
        };
        checked += cs.iter().map(|c| c.entries.len()).sum::<usize>();
        let problems = deep_check(&data, &cs);
        assert!(problems.is_empty(), "{}: {problems:?}", f.display());
    }
    assert!(checked > 50, "{checked}");

    // A header that lies about the arch (sm_90 → sm_89) is caught for cubins (plain, in
    // fx_default) and PTX (zstd, in fx_variants), and for concat members.
    for (name, kind) in [
        ("fx_default.so", CodeKind::Sass),
        ("fx_variants.fatbin", CodeKind::Ptx),
        ("fx_concat.so", CodeKind::Sass),
    ] {
        let mut data = fixture_fatbin(name);
        let cs = if is_elf(&data) {
            all_entries(&scan_elf_bytes(&data).unwrap())
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        } else {
            scan_fatbin_bytes(&data).unwrap()[0].entries.clone()
        };
        let e = cs
            .iter()
            .find(|e| {
                e.target.kind == kind && e.target.sm == 90 && e.in_group == (name == "fx_concat.so")
            })
            .unwrap();
        // The arch field of the (member) header.
        let at = if e.in_group {
            // Member headers follow the group's fixed header + 8-byte table header.
            let mut p = e.offset as usize + 64 + 8;
            loop {
                let arch = u32::from_le_bytes(data[p + 0x1c..p + 0x20].try_into().unwrap());
                let moff = u32::from_le_bytes(data[p + 4..p + 8].try_into().unwrap());
                if arch == 90 && u64::from(moff) == e.member_offset.unwrap() {
                    break p + 0x1c;
                }
                p += 64;
            }
        } else {
            e.offset as usize + 0x1c
        };
        data[at..at + 4].copy_from_slice(&89u32.to_le_bytes());
        let cs = if is_elf(&data) {
            scan_elf_bytes(&data)
                .unwrap()
                .fatbin
                .unwrap()
                .sections
                .into_iter()
                .flat_map(|s| s.containers)
                .collect()
        } else {
            scan_fatbin_bytes(&data).unwrap()
        };
        let problems = deep_check(&data, &cs);
        assert_eq!(problems.len(), 1, "{name}: {problems:?}");
        assert!(problems[0].contains("90"), "{problems:?}");
    }
}

fn gunzip(p: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The CUDA runtime's version is read from its code: torch 1.13.1's bundled
/// `libcudart-e409450e.so.11.0` (soname libcudart.so.11.0) is CUDA 11.7; NVIDIA's aarch64
/// 12.8.90 and x86_64 13.0.96 runtimes report 12.8 and 13.0 (testdata/cudart/README.md).
#[test]
fn cudart_version_from_real_runtimes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/cudart");
    for (file, soname, want) in [
        (
            "torch-1.13.1-libcudart-e409450e.so.11.0.skel.gz",
            "libcudart.so.11.0",
            11070,
        ),
        (
            "nvidia-cuda-runtime-cu12-12.8.90-aarch64-libcudart.so.12.skel.gz",
            "libcudart.so.12",
            12080,
        ),
        (
            "nvidia-cuda-runtime-13.0.96-x86_64-libcudart.so.13.skel.gz",
            "libcudart.so.13",
            13000,
        ),
    ] {
        let data = gunzip(&dir.join(file));
        for n in [4093, 1 << 20] {
            let f = scan_elf_with(
                Trickle { data: &data, n },
                data.len() as u64,
                &ScanOptions::default(),
            )
            .unwrap();
            assert_eq!(f.soname.as_deref(), Some(soname), "{file}");
            assert_eq!(f.cudart_version, Some(want), "{file}");
        }
        // The same file under another soname is not taken for a runtime.
        let f = scan_elf_bytes(&data).unwrap();
        let mut renamed = data.clone();
        let so = soname.as_bytes();
        let at = renamed
            .windows(so.len() + 1)
            .position(|w| w[..so.len()] == *so && w[so.len()] == 0)
            .unwrap();
        renamed[at..at + 9].copy_from_slice(b"libcudaXX");
        assert_eq!(f.cudart_version, Some(want));
        assert_eq!(scan_elf_bytes(&renamed).unwrap().cudart_version, None);
    }
    // Code that is not a runtime's: the x86 helper's constant altered to a non-version.
    let mut data = gunzip(&dir.join("torch-1.13.1-libcudart-e409450e.so.11.0.skel.gz"));
    let at = data
        .windows(6)
        .position(|w| w == [0xc7, 0x07, 0x3e, 0x2b, 0, 0])
        .unwrap();
    data[at + 2] = 0x3f; // 11071
    assert_eq!(scan_elf_bytes(&data).unwrap().cudart_version, None);
}

/// Every ELF file of the fixtures (`../shared/fixtures`) and of testdata (gzipped ones
/// unpacked), with its bytes.
fn every_elf_fixture() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [root.join("../shared/fixtures"), root.join("testdata")] {
        assert!(dir.is_dir(), "{} missing", dir.display());
        for p in walk(&dir) {
            if !p.symlink_metadata().unwrap().is_file() {
                continue;
            }
            let data = if p.extension().is_some_and(|e| e == "gz") {
                let mut out = Vec::new();
                let ok = flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap())
                    .read_to_end(&mut out)
                    .is_ok();
                if !ok {
                    continue;
                }
                out
            } else {
                read(&p)
            };
            if is_elf(&data) {
                out.push((p, data));
            }
        }
    }
    out.sort();
    out
}

/// The seekable scan reports exactly what the streaming scan reports, for every real and
/// synthetic ELF file we have, under default and tight memory bounds (which decide what a
/// stream still has when the dynamic section names it), and reads less of the files that
/// carry device code.
#[test]
fn seekable_scan_equals_streaming_scan_on_every_fixture() {
    let files = every_elf_fixture();
    assert!(files.len() >= 40, "{} ELF fixtures", files.len());
    let tight = ScanOptions {
        head_max: 4096,
        tail_max: 4096,
    };
    let (mut total, mut read_fatbin_files, mut total_fatbin_files) = (0u64, 0u64, 0u64);
    for (p, data) in &files {
        let size = data.len() as u64;
        for opts in [ScanOptions::default(), tight] {
            let want = scan_elf_with(&data[..], size, &opts).map_err(|e| e.to_string());
            let file = std::fs::File::open(p).unwrap();
            let got = if p.extension().is_some_and(|e| e == "gz") {
                scan_elf_at_with(&SeekReader::new(std::io::Cursor::new(data)), size, &opts)
            } else {
                scan_elf_at_with(&file, size, &opts)
            };
            let read = got.as_ref().map_or(0, |g| g.bytes_read);
            let got = got.map(|g| g.facts).map_err(|e| e.to_string());
            assert_eq!(got, want, "{} ({opts:?})", p.display());
            if let (Ok(want), true) = (&want, opts == ScanOptions::default()) {
                total += size;
                if want.fatbin.is_some() {
                    total_fatbin_files += size;
                    read_fatbin_files += read;
                }
            }
        }
        // A file shorter than its listed size is truncated the same way.
        let cut = &data[..data.len() * 2 / 3];
        let want = scan_elf(cut, size).map_err(|e| e.to_string());
        let got = scan_elf_at(&SeekReader::new(std::io::Cursor::new(cut)), size)
            .map(|g| g.facts)
            .map_err(|e| e.to_string());
        assert_eq!(got, want, "{} truncated", p.display());
    }
    assert!(total_fatbin_files > 0 && total > 0);
    assert!(
        read_fatbin_files * 2 < total_fatbin_files,
        "read {read_fatbin_files} of {total_fatbin_files} bytes of the files with device code"
    );
}

/// The hand-built layouts whose dynamic strings sit far from the head: the seekable scan
/// finds them where the stream does, and misses them where the stream misses them.
#[test]
fn seekable_scan_follows_the_stream_on_late_dynamic_strings() {
    let (dynamic, dynstr) = dyn_sections();
    let layouts = [
        build_elf_split(
            true,
            &[
                sec(".text", vec![0x90; 300_000], 16),
                sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
                dynstr.clone(),
                sec(".gap", vec![b'g'; 20_000], 1),
                dynamic.clone(),
            ],
            2,
        ),
        build_elf(
            true,
            &[
                sec(".text", vec![0x90; 300_000], 16),
                sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
                dynstr.clone(),
                sec(".gap", vec![b'g'; 20_000], 1),
                dynamic.clone(),
                sec(".comment", vec![b'x'; 20_000], 1),
            ],
        ),
        build_elf(
            false,
            &[
                sec(".data", fixture_fatbin("fx_variants.fatbin"), 8),
                dynstr,
                dynamic,
            ],
        ),
    ];
    for elf in &layouts {
        for opts in [ScanOptions::default(), SMALL_HEAD] {
            let want = scan_elf_with(&elf[..], elf.len() as u64, &opts).unwrap();
            let src = SeekReader::new(std::io::Cursor::new(elf));
            let got = scan_elf_at_with(&src, elf.len() as u64, &opts).unwrap();
            assert_eq!(got.facts, want, "{opts:?}");
            assert!(want.fatbin.is_some());
        }
    }
}

/// The kernel-count fixtures (`testdata/fatbin/kernels`, nvcc builds of a file with no
/// `__global__` function and of one with a kernel) with whether cuobjdump `-res-usage` lists
/// a function in each.
fn kernel_fixtures() -> Vec<(PathBuf, bool)> {
    let dir = data_dir().join("kernels");
    let listing = std::fs::read_to_string(dir.join("EXPECTED_cuobjdump.txt")).unwrap();
    let mut out = Vec::new();
    for block in listing.split("== cuobjdump -res-usage ").skip(1) {
        let (name, rest) = block.split_once('\n').unwrap();
        let res_usage = rest.split("== ").next().unwrap();
        out.push((dir.join(name.trim()), res_usage.contains(" Function ")));
    }
    assert_eq!(out.len(), 4, "{out:?}");
    out
}

/// Issue 34: a fatbin whose cubin (and PTX) defines no kernel is recorded as such, by the
/// streaming scan in any read size and by the seekable scan; the same build with one kernel
/// is not. Compressed payloads (zstd, `-compress-all`) are decoded to count.
#[test]
fn kernel_count_agrees_with_cuobjdump_res_usage() {
    let mut seen = BTreeSet::new();
    for (p, has_function) in kernel_fixtures() {
        let data = read(&p);
        let want = Some(has_function);
        let facts = scan_elf_bytes(&data).unwrap();
        assert!(facts.fatbin.is_some(), "{}", p.display());
        assert_eq!(facts.has_kernels, want, "{}", p.display());
        for n in [7, 4093] {
            let got = scan_elf(Trickle { data: &data, n }, data.len() as u64).unwrap();
            assert_eq!(got.has_kernels, want, "{} in {n}-byte reads", p.display());
        }
        let file = std::fs::File::open(&p).unwrap();
        let got = scan_elf_at(&file, data.len() as u64).unwrap();
        assert_eq!(got.facts.has_kernels, want, "{} seekable", p.display());
        seen.insert(has_function);
    }
    assert_eq!(seen.len(), 2, "fixtures with and without a kernel");
}

/// Every build of the one-kernel `k.cu` (plain, LZ4, zstd, concatenated groups, rdc, a/f
/// targets, v1 and v2 cubins) is found to have a kernel: counting never says "none" for code
/// that has one.
#[test]
fn every_k_cu_build_has_a_kernel() {
    let mut n = 0;
    for f in elf_fixtures() {
        let facts = scan_elf_bytes(&read(&f)).unwrap();
        if facts.sass().is_empty() && facts.ptx().is_empty() {
            continue; // LTO-IR only: nothing counted
        }
        assert_eq!(facts.has_kernels, Some(true), "{}", f.display());
        n += 1;
    }
    assert!(n >= 9, "{n} fixtures with SASS/PTX");
    for name in [
        "cubin_ptxas11.8_sm80.cubin",
        "cubin_ptxas12.9_sm90a.cubin",
        "cubin_ptxas13.5_sm100f.cubin",
    ] {
        let cubin = read(&data_dir().join("fatbin-format").join(name));
        assert_eq!(kernels::count_cubin_kernels(&cubin), Ok(1), "{name}");
    }
}

/// A payload cut off by the end of the file (or not an ELF) leaves the answer unknown, never
/// "no kernel".
#[test]
fn unreadable_payload_is_unknown() {
    let (p, _) = kernel_fixtures()
        .into_iter()
        .find(|(p, k)| !k && p.to_string_lossy().ends_with("libnokernel_sm80.so"))
        .unwrap();
    let data = read(&p);
    let facts = scan_elf_bytes(&data).unwrap();
    assert_eq!(facts.has_kernels, Some(false));
    let e = facts.judged_entries().next().unwrap().clone();
    // The cubin's ELF magic, overwritten: the payload no longer reads as a cubin.
    let mut broken = data.clone();
    broken[e.payload_offset as usize] = b'X';
    let got = scan_elf_bytes(&broken).unwrap();
    assert_eq!(got.has_kernels, None);
    let got = scan_elf_at(
        &SeekReader::new(std::io::Cursor::new(&broken)),
        broken.len() as u64,
    )
    .unwrap();
    assert_eq!(got.facts.has_kernels, None);
    assert!(kernels::count_cubin_kernels(b"not an elf").is_err());
    assert!(kernels::ptx_has_entry(b".visible .entry _Z3addPf(\n"));
    assert!(!kernels::ptx_has_entry(
        b".visible .func _Z3addPf(\n// .entry\0.entry x"
    ));
}

/// Issue 34: a cubin kept as a plain byte array in a data section (CUPTI, nvperf) is listed
/// as a loose cubin by both scans; one in code, or inside a fatbin container, is not.
#[test]
fn loose_cubins_in_data_sections() {
    let cubin = read(&data_dir().join("fatbin-format/cubin_ptxas11.8_sm80.cubin"));
    let mut padded = vec![0u8; 16];
    padded.extend_from_slice(&cubin);
    let elf = build_elf(
        true,
        &[
            sec(".text", padded.clone(), 16),
            sec(".nv_fatbin", fixture_fatbin("fx_variants.fatbin"), 8),
            sec(".rodata", padded.clone(), 16),
        ],
    );
    let want = scan_elf_bytes(&elf).unwrap();
    let loose: Vec<(String, String)> = want
        .loose_cubins
        .iter()
        .map(|c| (c.section.clone(), c.target.to_string()))
        .collect();
    assert_eq!(loose, [(".rodata".to_string(), "sm_80".to_string())]);
    let got = scan_elf_at(
        &SeekReader::new(std::io::Cursor::new(&elf)),
        elf.len() as u64,
    )
    .unwrap();
    assert_eq!(got.facts, want);
    for n in [7, 4093] {
        let got = scan_elf(Trickle { data: &elf, n }, elf.len() as u64).unwrap();
        assert_eq!(got, want, "{n}-byte reads");
    }
    // The real builds keep their cubins inside containers: nothing loose there.
    for f in elf_fixtures() {
        let facts = scan_elf_bytes(&read(&f)).unwrap();
        assert!(facts.loose_cubins.is_empty(), "{}", f.display());
    }
}

/// A fatbin container holding one uncompressed PTX entry with `text`.
fn ptx_fatbin(text: &[u8], sm: u32) -> Vec<u8> {
    let mut payload = text.to_vec();
    payload.resize(payload.len().div_ceil(8) * 8, 0);
    let mut e = vec![0u8; 64];
    e[0..2].copy_from_slice(&1u16.to_le_bytes()); // PTX
    e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    e[4..8].copy_from_slice(&64u32.to_le_bytes());
    e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    e[0x18..0x1A].copy_from_slice(&8u16.to_le_bytes()); // ISA 7.8
    e[0x1A..0x1C].copy_from_slice(&7u16.to_le_bytes());
    e[0x1C..0x20].copy_from_slice(&sm.to_le_bytes());
    e[0x28..0x30].copy_from_slice(&1u64.to_le_bytes()); // 64-bit
    let mut c = Vec::new();
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&((64 + payload.len()) as u64).to_le_bytes());
    c.extend_from_slice(&e);
    c.extend_from_slice(&payload);
    c
}

/// Issue 34: PTX text stored outside any fatbin (nvperf's compute_70, the raw PTX jax loads)
/// is listed as loose PTX by the stream and the seekable scan alike, wherever a chunk
/// boundary cuts its header (here the stream's 64 KiB boundary, at several odd offsets;
/// the seekable scan reads in other pieces, and finishes a header its search stopped in).
/// PTX in code, or inside a fatbin container (in `.nv_fatbin` or in `.rodata`), is not loose.
#[test]
fn loose_ptx_text_across_chunk_boundaries() {
    const HEAD: &[u8] = b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n";
    let loose = [HEAD, b".version 7.8\n.target sm_70\n.address_size 64\n"].concat();
    let in_code = b".version 7.0\n.target sm_75\n.address_size 64\n".to_vec();
    let contained = ptx_fatbin(
        b".version 7.8\n.target sm_80\n.visible .entry k()\n{\nret;\n}\n",
        80,
    );
    // Cut by the end of its section (8-aligned, where the seekable scan's search stops): the
    // rest of the header is read because the finder asks for it.
    let data_ptx = b"\x01\x02\x03\x04\x05\x06\x07.version 8.0\n.target sm_9".to_vec();
    assert_eq!(data_ptx.len() % 8, 0);
    let build = |pad: usize| {
        let mut rodata = contained.clone();
        rodata.resize(rodata.len() + pad + 5, 0x20);
        rodata.extend_from_slice(&loose);
        rodata.extend_from_slice(&[0; 11]);
        build_elf(
            true,
            &[
                sec(".text", in_code.clone(), 16),
                sec(".nv_fatbin", contained.clone(), 8),
                sec(".rodata", rodata, 8),
                sec(".data", data_ptx.clone(), 8),
                sec(".text", b"0a\n\x90\x90\x90".to_vec(), 1),
            ],
        )
    };
    let version_at = |elf: &[u8]| {
        let target = elf.windows(13).position(|w| w == b".target sm_70").unwrap();
        target - 13
    };
    let base = version_at(&build(0));
    for before_boundary in [3usize, 8, 20, 41] {
        let pad = stream::CHUNK - before_boundary - base;
        let elf = build(pad);
        let at = version_at(&elf) as u64;
        assert_eq!(at, (stream::CHUNK - before_boundary) as u64);
        let want = scan_elf_bytes(&elf).unwrap();
        let got: Vec<(String, u64, String, (u16, u16))> = want
            .loose_ptx
            .iter()
            .map(|p| {
                let t = p.header.target.to_string();
                (p.section.clone(), p.offset, t, p.header.isa)
            })
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], (".rodata".into(), at, "compute_70".into(), (7, 8)));
        assert_eq!(
            (got[1].0.as_str(), got[1].2.as_str(), got[1].3),
            (".data", "compute_90a", (8, 0))
        );
        assert!(want.loose_cubins.is_empty());
        let seek = scan_elf_at(
            &SeekReader::new(std::io::Cursor::new(&elf)),
            elf.len() as u64,
        )
        .unwrap();
        assert_eq!(
            seek.facts, want,
            "seekable, {before_boundary} bytes before the boundary"
        );
        for n in [7, 4093] {
            let got = scan_elf(Trickle { data: &elf, n }, elf.len() as u64).unwrap();
            assert_eq!(got, want, "{n}-byte reads");
        }
    }
    // The real builds keep their PTX inside containers: nothing loose there.
    for f in elf_fixtures() {
        let facts = scan_elf_bytes(&read(&f)).unwrap();
        assert!(facts.loose_ptx.is_empty(), "{}", f.display());
    }
}
