//! Rules judge typed data: versions are read once, where the evidence is read (the inventory,
//! the run-configuration and host readers), never parsed back out of strings by a rule. This
//! scans the rules' own source (tests left out) for the ways a version string gets parsed.

use std::path::{Path, PathBuf};

/// Calls that read a version or a CUDA tag out of text.
const PARSERS: &[&str] = &[
    "from_cu_tag(",
    "CudaTag::",
    "from_runtime_number(",
    "format_cudart_version",
    "LibVersion::read(",
    "CudaVersion::from_str",
    "DriverVersion::from_str",
    "::<CudaVersion>",
    "::<DriverVersion>",
];

/// Version types a `.parse()` may be inferred to produce (`let v: CudaVersion = s.parse()…`).
const VERSION_TYPES: &[&str] = &["CudaVersion", "DriverVersion"];

fn rule_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rule_sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a source file without its test module and comments.
fn code_of(src: &str) -> String {
    let body = src.split("#[cfg(test)]").next().unwrap_or("");
    body.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `code` parses a version string: each offending statement, trimmed.
fn version_parses(code: &str) -> Vec<String> {
    code.split([';', '{', '}'])
        .filter(|stmt| {
            PARSERS.iter().any(|p| stmt.contains(p))
                || (stmt.contains(".parse()") && VERSION_TYPES.iter().any(|t| stmt.contains(t)))
        })
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_scan_sees_each_way_of_parsing_a_version() {
    for bad in [
        "let v = CudaVersion::from_cu_tag(&t);",
        "let v = s.parse::<CudaVersion>().ok();",
        "let want: DriverVersion = c.value.parse().ok()?;",
        "if let Some(t) = CudaTag::parse(seg) { }",
        "let v = crate::detect::elf::format_cudart_version(n);",
    ] {
        assert_eq!(version_parses(bad).len(), 1, "{bad}");
    }
    for fine in [
        "let cc: ComputeCapability = s.parse().ok()?;",
        "let v = lib.version.as_ref().and_then(LibVersion::cuda_release);",
        "// CudaVersion::from_cu_tag in a comment",
    ] {
        assert!(version_parses(&code_of(fine)).is_empty(), "{fine}");
    }
}

#[test]
fn no_rule_parses_a_version_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
    let mut files = Vec::new();
    rule_sources(&root, &mut files);
    files.sort();
    assert!(files.len() > 40, "rules not found under {}", root.display());
    let mut offenders = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = f.file_name().unwrap().to_string_lossy();
        if name.starts_with("test") || name.contains("tests") || rel == "no_string_versions.rs" {
            continue;
        }
        let hits = version_parses(&code_of(&std::fs::read_to_string(f).unwrap()));
        if !hits.is_empty() {
            offenders.push(format!("{rel}: {}", hits.join(" | ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "rules parse version strings; read them typed from the inventory / readers instead:\n{}",
        offenders.join("\n")
    );
}
