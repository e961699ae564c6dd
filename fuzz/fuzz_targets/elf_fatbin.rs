//! The ELF reader (sections, dynamic table, notes, cudart version) and the fatbin reader
//! (`.nv_fatbin` containers, compressed entries), on the same bytes: as a whole file, as a
//! stream (the streaming fatbin scanner), and as a bare fatbin section.
#![no_main]
use gpulint::detect::elf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(facts) = elf::scan_elf_bytes(data) {
        let _ = (
            facts.sass(),
            facts.ptx(),
            facts.lto(),
            facts.loadable_sections(),
        );
    }
    let _ = elf::scan_elf(std::io::Cursor::new(data), data.len() as u64);
    if let Ok(c) = elf::scan_fatbin_bytes(data) {
        let _ = elf::deep_check(data, &c);
    }
});
