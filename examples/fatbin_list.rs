//! Lists the device code of ELF files / bare fatbins the way `cuobjdump --list-elf/--list-ptx`
//! would see it. Used by `ci/fatbin-oracle.sh`.
//!
//! Usage: `fatbin_list [--json] [--deep] FILE...` prints, per file,
//! `file: PATH`, `sass: sm_80 sm_90a ...`, `ptx: compute_90 ...`, `lto: ...` and
//! `warning: ...` lines (or the full facts as JSON with `--json`). `--deep` also decompresses
//! every SASS/PTX payload and prints `deep: ok` or one `deep-problem: ...` line per mismatch
//! between a header and its payload.

use gpulint::arch::ArchTarget;
use gpulint::detect::elf::{
    deep_check, is_elf, scan_elf, scan_fatbin_bytes_detailed, FatbinContainer,
};
use std::fs::File;
use std::io::{BufReader, Read};

fn join(v: &[ArchTarget]) -> String {
    v.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let mut json = false;
    let mut deep = false;
    let mut rc = 0;
    for arg in std::env::args().skip(1) {
        if arg == "--json" {
            json = true;
            continue;
        }
        if arg == "--deep" {
            deep = true;
            continue;
        }
        if let Err(e) = list(&arg, json, deep) {
            eprintln!("{arg}: {e}");
            rc = 1;
        }
    }
    std::process::exit(rc);
}

fn list(path: &str, json: bool, deep: bool) -> Result<(), String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut r = BufReader::new(f);
    let mut head = [0u8; 4];
    r.read_exact(&mut head).map_err(|e| e.to_string())?;
    println!("file: {path}");
    if is_elf(&head) {
        let facts = scan_elf(head.chain(r), size).map_err(|e| e.to_string())?;
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())?
            );
        }
        println!("sass: {}", join(&facts.sass()));
        println!("ptx: {}", join(&facts.ptx()));
        println!("lto: {}", join(&facts.lto()));
        for w in &facts.warnings {
            println!("warning: {w}");
        }
        if deep {
            let data = std::fs::read(path).map_err(|e| e.to_string())?;
            let cs: Vec<FatbinContainer> = facts
                .loadable_sections()
                .into_iter()
                .flat_map(|s| s.containers.iter().cloned())
                .collect();
            print_deep(&data, &cs);
        }
    } else {
        let mut data = head.to_vec();
        r.read_to_end(&mut data).map_err(|e| e.to_string())?;
        let (cs, warnings) = scan_fatbin_bytes_detailed(&data).map_err(|e| e.to_string())?;
        let mut all: Vec<_> = cs.iter().flat_map(|c| c.entries.iter()).collect();
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&cs).map_err(|e| e.to_string())?
            );
        }
        all.sort_by_key(|e| e.target);
        let pick = |k| {
            let mut v: Vec<ArchTarget> = all
                .iter()
                .filter(|e| e.target.kind == k)
                .map(|e| e.target)
                .collect();
            v.dedup();
            v
        };
        use gpulint::arch::CodeKind;
        println!("sass: {}", join(&pick(CodeKind::Sass)));
        println!("ptx: {}", join(&pick(CodeKind::Ptx)));
        println!("lto: {}", join(&pick(CodeKind::Lto)));
        for w in &warnings {
            println!("warning: {w}");
        }
        if deep {
            print_deep(&data, &cs);
        }
    }
    Ok(())
}

fn print_deep(data: &[u8], cs: &[FatbinContainer]) {
    let problems = deep_check(data, cs);
    if problems.is_empty() {
        println!("deep: ok");
    }
    for p in problems {
        println!("deep-problem: {p}");
    }
}
