//! GL007 wheel-tag-mismatch: an installed wheel's tags don't fit the image's Python, glibc or
//! CPU architecture.

use super::context::ImageContext;
use crate::finding::{Finding, Location, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::vocab::ImagePath;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL007"),
    name: "wheel-tag-mismatch",
    default_severity: Severity::Error,
    other_severities: &[],
    summary:
        "An installed wheel was built for another Python, glibc (manylinux) or CPU architecture",
    doc: RuleDoc {
        what:
            "A wheel's tags (from its WHEEL file, e.g. `cp311-cp311-manylinux_2_28_x86_64`) do not \
            fit the image it is installed in: another CPython version than the site-packages it \
            sits in, a manylinux level newer than the image's glibc, musllinux on a glibc image, \
            or another CPU architecture. Usually the result of copying a venv or site-packages \
            between images, or `pip install --platform/--target`.",
        why: "C extensions are ABI-specific (PEP 425, PEP 600). Importing fails with `undefined \
            symbol`, `GLIBC_2.28 not found` or `cannot open shared object file`.",
        example:
            "A venv built in a `python:3.12` stage and copied into a `python:3.11` runtime stage: \
            `numpy 2.1.3 (cp312-cp312-manylinux_2_17_x86_64): built for CPython 3.12 but \
            installed for Python 3.11`.",
        fix: "Install the package with the image's own pip, for the image's interpreter and \
            platform.",
        sources: &[
            "https://peps.python.org/pep-0425/",
            "https://peps.python.org/pep-0600/",
            "https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/",
        ],
    },
};

fn python_of_location(loc: &ImagePath) -> Option<(u32, u32)> {
    // .../lib/python3.12/site-packages
    let rest = loc.components().find_map(|c| c.strip_prefix("python3."))?;
    let minor: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((3, minor.parse().ok()?))
}

/// glibc level needed (None for musl/plain linux), CPU architecture, and whether it is musl.
type PlatformNeed = (Option<(u32, u32)>, String, bool);

/// What a platform tag (`manylinux_2_28_x86_64`) needs from the image.
fn platform_requirement(plat: &str) -> Option<PlatformNeed> {
    for (legacy, glibc) in [
        ("manylinux1_", (2, 5)),
        ("manylinux2010_", (2, 12)),
        ("manylinux2014_", (2, 17)),
    ] {
        if let Some(a) = plat.strip_prefix(legacy) {
            return Some((Some(glibc), a.to_string(), false));
        }
    }
    if let Some(rest) = plat.strip_prefix("manylinux_") {
        let mut it = rest.splitn(3, '_');
        let maj = it.next()?.parse().ok()?;
        let min = it.next()?.parse().ok()?;
        return Some((Some((maj, min)), it.next()?.to_string(), false));
    }
    if let Some(rest) = plat.strip_prefix("musllinux_") {
        let arch = rest.splitn(3, '_').nth(2)?.to_string();
        return Some((None, arch, true));
    }
    if let Some(a) = plat.strip_prefix("linux_") {
        return Some((None, a.to_string(), false));
    }
    None
}

fn arch_matches(wheel_arch: &str, image_arch: &str) -> bool {
    let norm = |a: &str| match a {
        "amd64" | "x86_64" => "x86_64".to_string(),
        "arm64" | "aarch64" => "aarch64".to_string(),
        "ppc64le" => "ppc64le".to_string(),
        "s390x" => "s390x".to_string(),
        o => o.to_string(),
    };
    norm(wheel_arch) == norm(image_arch)
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let inv = ctx.inventory;
    let glibc = inv.image.glibc_version();
    let image_arch = inv.image.platform.as_ref().map(|p| p.architecture.clone());
    for p in &inv.python_packages {
        if p.tags.is_empty() {
            continue;
        }
        let py = python_of_location(&p.location);
        let mut problems: Vec<String> = Vec::new();
        // A wheel is fine if ANY of its tags fits; collect why each one fails.
        let mut any_fits = false;
        for tag in &p.tags {
            let parts: Vec<&str> = tag.split('-').collect();
            let [pytag, abi, plat] = parts.as_slice() else {
                any_fits = true;
                continue;
            };
            let mut why = Vec::new();
            if let (Some((_, minor)), Some(v)) = (py, pytag.strip_prefix("cp3")) {
                if let Ok(wm) = v.parse::<u32>() {
                    let ok = if *abi == "abi3" {
                        wm <= minor
                    } else {
                        wm == minor
                    };
                    if !ok {
                        why.push(format!(
                            "built for CPython 3.{wm}{} but installed for Python 3.{minor}",
                            if *abi == "abi3" { "+" } else { "" }
                        ));
                    }
                }
            }
            if *plat != "any" {
                for pl in plat.split('.') {
                    if let Some((need, arch, musl)) = platform_requirement(pl) {
                        if let Some(ia) = &image_arch {
                            if !arch_matches(&arch, ia) {
                                why.push(format!("built for {arch} but the image is {ia}"));
                            }
                        }
                        if let (Some(n), Some(g)) = (need, glibc) {
                            if n > g {
                                why.push(format!(
                                    "needs glibc >= {}.{} ({pl}) but the image has glibc {}.{}",
                                    n.0, n.1, g.0, g.1
                                ));
                            }
                        }
                        if musl && glibc.is_some() {
                            why.push(format!("built for musl ({pl}) but the image uses glibc"));
                        }
                    }
                }
            }
            if why.is_empty() {
                any_fits = true;
                break;
            }
            problems.extend(why);
        }
        if !any_fits && !problems.is_empty() {
            problems.dedup();
            out.push(
                META.finding(format!(
                    "{} {} ({}): {}",
                    p.name,
                    p.version,
                    p.tags.join(", "),
                    problems.join("; ")
                ))
                .with_location(Location::in_image(
                    ctx.layer_digest(p.layer),
                    p.location.clone(),
                ))
                .with_help("reinstall the package with the image's own pip"),
            );
        }
    }
}
