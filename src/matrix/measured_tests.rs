//! Every row that can be measured is measured. `matrices/compiler_wheels.toml` (generated from
//! PyPI by ci/compiler-wheels.py) lists each wheel that carries a CUDA release's own nvcc,
//! ptxas or NVRTC; for each such release the `cuda_arch.toml` row and the `ptx_isa.toml`
//! release row must be `basis = "measured"` and cite every one of its wheels by sha256. The
//! CUDA 13.0 arch row was transcribed from release notes although a 13.0 nvcc wheel existed,
//! and missed sm_88: nothing refused a transcribed row where a measurement was possible.
//! Rows that stay transcribed (no wheel) must agree with the measured ones around them.

use super::tests::is_sha256;
use super::{CUDA_ARCH, FILES, PTX_ISA};
use std::collections::{BTreeMap, BTreeSet};

const COMPILER_WHEELS: &str = include_str!("../../matrices/compiler_wheels.toml");

#[derive(Debug)]
struct Wheel {
    cuda: String,
    project: String,
    version: String,
    file: String,
    sha256: String,
    measured_by: String,
}

fn table(name: &str, key: &str) -> Vec<toml::Value> {
    let text = FILES.iter().find(|(n, _)| *n == name).unwrap().1;
    rows_of(text, key)
}

fn rows_of(text: &str, key: &str) -> Vec<toml::Value> {
    let v: toml::Value = toml::from_str(text).unwrap();
    v.get(key)
        .and_then(|a| a.as_array())
        .cloned()
        .unwrap_or_default()
}

fn s(t: &toml::Value, k: &str) -> String {
    t.get(k)
        .and_then(|x| x.as_str())
        .unwrap_or_default()
        .to_string()
}

fn nums(t: &toml::Value, k: &str) -> BTreeSet<i64> {
    t.get(k)
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_integer()).collect())
        .unwrap_or_default()
}

/// "12.10" → (12, 10), so releases sort numerically.
fn mm(v: &str) -> (u32, u32) {
    let mut p = v.split('.').map(|x| x.parse::<u32>().unwrap());
    (p.next().unwrap(), p.next().unwrap())
}

fn wheels() -> Vec<Wheel> {
    rows_of(COMPILER_WHEELS, "wheel")
        .iter()
        .map(|w| Wheel {
            cuda: s(w, "cuda"),
            project: s(w, "project"),
            version: s(w, "version"),
            file: s(w, "file"),
            sha256: s(w, "sha256"),
            measured_by: s(w, "measured_by"),
        })
        .collect()
}

fn by_release(wheels: &[Wheel]) -> BTreeMap<(u32, u32), Vec<&Wheel>> {
    let mut out: BTreeMap<(u32, u32), Vec<&Wheel>> = BTreeMap::new();
    for w in wheels {
        out.entry(mm(&w.cuda)).or_default().push(w);
    }
    out
}

/// The script that writes a `ptx_isa.toml` row from a wheel the arch script measures.
fn ptx_script(w: &Wheel) -> &str {
    match w.measured_by.as_str() {
        "ci/nvcc-arch-lists.py" => "ci/nvcc-ptx-isa.py",
        other => other,
    }
}

/// What is wrong with a row that must be measured from `wheels` by `script` (empty when
/// nothing is).
fn measured_row_problems(
    file: &str,
    label: &str,
    row: &toml::Value,
    wheels: &[&Wheel],
    script: fn(&Wheel) -> &str,
) -> Vec<String> {
    let mut out = Vec::new();
    if s(row, "basis") != "measured" {
        out.push(format!(
            "{file} {label}: basis {:?}, but PyPI has its compiler ({}): measure it",
            s(row, "basis"),
            wheels
                .iter()
                .map(|w| w.file.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let note = s(row, "note");
    for w in wheels {
        let cited = [" (sha256 ", ", sha256 "]
            .iter()
            .any(|sep| note.contains(&format!("{}{sep}{}", w.file, w.sha256)));
        if !cited {
            out.push(format!(
                "{file} {label}: the note does not cite {} (sha256 {})",
                w.file, w.sha256
            ));
        }
        if !note.starts_with(&format!("measured by {}", script(w))) {
            out.push(format!("{file} {label}: not measured by {}", script(w)));
        }
    }
    if !s(row, "source").starts_with("https://pypi.org/project/") {
        out.push(format!(
            "{file} {label}: source is not the wheel's PyPI page"
        ));
    }
    out
}

#[test]
fn the_wheel_list_is_well_formed() {
    let wheels = wheels();
    // A truncated list would excuse transcribed rows: 11.3 … 13.5 carry 39 wheels today.
    assert!(wheels.len() >= 39, "{} wheels", wheels.len());
    let mut seen = BTreeSet::new();
    for w in &wheels {
        assert!(is_sha256(&w.sha256), "{w:?}");
        assert!(
            w.file
                .starts_with(&format!("{}-{}-", w.project.replace('-', "_"), w.version))
                && w.file.ends_with(".whl"),
            "{w:?}"
        );
        // NVIDIA's own wheels are numbered by the release they belong to.
        if w.project.starts_with("nvidia-") {
            assert_eq!(mm(&w.version), mm(&w.cuda), "{w:?}");
        }
        assert!(seen.insert(w.file.clone()), "listed twice: {}", w.file);
    }
}

#[test]
fn every_release_with_a_compiler_wheel_has_a_measured_arch_row() {
    let rows = table(CUDA_ARCH, "release");
    let mut problems = Vec::new();
    for (release, ws) in by_release(&wheels()) {
        let label = format!("{}.{}", release.0, release.1);
        match rows.iter().find(|r| mm(&s(r, "cuda")) == release) {
            None => problems.push(format!("{CUDA_ARCH} {label}: no row")),
            Some(r) => problems.extend(measured_row_problems(CUDA_ARCH, &label, r, &ws, |w| {
                &w.measured_by
            })),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_release_with_a_compiler_wheel_has_a_measured_ptx_isa_row() {
    let rows = table(PTX_ISA, "release");
    let mut problems = Vec::new();
    for (release, ws) in by_release(&wheels()) {
        let label = format!("release {}.{}", release.0, release.1);
        match rows.iter().find(|r| mm(&s(r, "cuda")) == release) {
            None => problems.push(format!("{PTX_ISA} {label}: no row")),
            Some(r) => problems.extend(measured_row_problems(PTX_ISA, &label, r, &ws, ptx_script)),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A release's newest PTX ISA (measured) fixes which `[[isa]]` rows may name it: every ISA up
/// to it was introduced by that release or an older one, every newer ISA by a newer release.
/// The `[[isa]]` rows naming a measured release with its own ISA must be measured too.
#[test]
fn ptx_isa_rows_agree_with_the_measured_releases() {
    let isa_rows = table(PTX_ISA, "isa");
    let measured = table(PTX_ISA, "release");
    let mut problems = Vec::new();
    for m in &measured {
        let release = mm(&s(m, "cuda"));
        let newest = mm(&s(m, "newest_isa"));
        for r in &isa_rows {
            let (isa, by) = (mm(&s(r, "ptx")), mm(&s(r, "cuda")));
            if (isa <= newest) != (by <= release) {
                problems.push(format!(
                    "{PTX_ISA}: isa {} says CUDA {}, but CUDA {} measured accepts up to {}",
                    s(r, "ptx"),
                    s(r, "cuda"),
                    s(m, "cuda"),
                    s(m, "newest_isa")
                ));
            }
            if isa == newest && by == release && s(r, "basis") != "measured" {
                problems.push(format!(
                    "{PTX_ISA}: isa {} is transcribed; CUDA {} measured it",
                    s(r, "ptx"),
                    s(m, "cuda")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A row no wheel measures (cited from CMake's model: 11.2, 11.5) next to a measured one sits
/// between its neighbours: it has every target both have, and none that neither has. Rows
/// among documents only (10.x-11.1) are not held to it: a release may add a target its
/// neighbour lacks (12.9's sm_101f, gone in 13.0), which only a measurement can tell.
#[test]
fn unmeasured_arch_rows_agree_with_their_measured_neighbours() {
    let mut rows = table(CUDA_ARCH, "release");
    rows.sort_by_key(|r| mm(&s(r, "cuda")));
    let mut problems = Vec::new();
    let measured = |r: &toml::Value| s(r, "basis") == "measured";
    for w in rows.windows(3) {
        let (prev, row, next) = (&w[0], &w[1], &w[2]);
        if measured(row) || !(measured(prev) || measured(next)) {
            continue;
        }
        for key in ["sm", "arch_specific", "family_specific"] {
            let (a, r, b) = (nums(prev, key), nums(row, key), nums(next, key));
            let both: BTreeSet<i64> = a.intersection(&b).copied().collect();
            let either: BTreeSet<i64> = a.union(&b).copied().collect();
            if !both.is_subset(&r) || !r.is_subset(&either) {
                problems.push(format!(
                    "{CUDA_ARCH} {} {key} {r:?} is not between {} {a:?} and {} {b:?}",
                    s(row, "cuda"),
                    s(prev, "cuda"),
                    s(next, "cuda")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every row says how it is known, and a row that is not measured says why in its note.
#[test]
fn arch_and_ptx_rows_state_their_basis() {
    for (file, key) in [(CUDA_ARCH, "release"), (PTX_ISA, "release")] {
        for r in table(file, key) {
            let basis = s(&r, "basis");
            assert!(
                ["measured", "cited", "inferred"].contains(&basis.as_str()),
                "{file} {}: basis {basis:?}",
                s(&r, "cuda")
            );
        }
    }
}

/// An arch row measured with ptxas names the PTX ISA it assembled at; it must be the newest
/// ISA that release's ptxas accepts (its ptx_isa.toml release row). A formula ((X-4).Y) gave
/// 12.6 ISA 8.6, which its ptxas refuses, and so an empty target list.
#[test]
fn ptxas_measured_arch_rows_used_their_release_s_own_isa() {
    let ptx = table(PTX_ISA, "release");
    let mut checked = 0;
    for r in table(CUDA_ARCH, "release") {
        let note = s(&r, "note");
        let Some((_, tail)) = note.split_once("(PTX ISA ") else {
            continue;
        };
        let isa = tail.split(')').next().unwrap_or_default();
        let release = ptx.iter().find(|p| s(p, "cuda") == s(&r, "cuda"));
        assert_eq!(
            release.map(|p| s(p, "newest_isa")).as_deref(),
            Some(isa),
            "{CUDA_ARCH} {}",
            s(&r, "cuda")
        );
        assert!(!nums(&r, "sm").is_empty(), "{CUDA_ARCH} {}", s(&r, "cuda"));
        checked += 1;
    }
    // 11.7-12.9: the wheels carry ptxas only.
    assert!(checked >= 11, "{checked} rows");
}
