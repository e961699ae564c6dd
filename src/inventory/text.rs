//! The human-readable form of an [`Inventory`].

use super::*;
use std::fmt::Write;

fn provider_title(p: LibraryProvider) -> &'static str {
    match p {
        LibraryProvider::System => "system",
        LibraryProvider::PipWheel => "pip wheels",
        LibraryProvider::Conda => "conda",
        LibraryProvider::Bundled => "bundled in frameworks",
        LibraryProvider::Stub => "stubs (link-time only, never loaded)",
        LibraryProvider::ForwardCompat => "forward-compat package",
        LibraryProvider::Other => "other locations",
    }
}

/// A value taken from the image (a name, a version, an env value), made inert: no control
/// character or newline in it reaches the terminal raw, so none can forge a report line.
fn e<T: std::fmt::Display>(x: T) -> String {
    crate::vocab::escape::field(&x.to_string()).into_owned()
}

fn join<T: std::fmt::Display>(v: &[T]) -> String {
    v.iter().map(e).collect::<Vec<_>>().join(" ")
}

/// A readable summary: image, toolkits, libraries by provider, driver files, GPU Python
/// packages, binaries with their device code.
pub fn render_text(inv: &Inventory) -> String {
    let mut s = String::new();
    let img = &inv.image;
    let _ = writeln!(s, "Image: {}", e(&img.reference));
    if let Some(d) = &img.digest {
        let _ = writeln!(s, "  digest:   {}", e(d));
    }
    if let Some(p) = &img.platform {
        let _ = writeln!(s, "  platform: {}", e(p));
    }
    let _ = writeln!(s, "  layers:   {}", img.layers.len());
    let _ = writeln!(
        s,
        "  glibc:    {}",
        e(img.glibc.as_deref().unwrap_or("unknown"))
    );
    for py in &img.python {
        let _ = writeln!(s, "  python:   {} ({})", e(&py.version), e(&py.path));
    }
    for (k, v) in &img.env {
        if k == "NVIDIA_REQUIRE_CUDA" && v.len() > 100 {
            let _ = writeln!(
                s,
                "  env:      {}={}…",
                e(k),
                e(&v[..v.floor_char_boundary(100)])
            );
        } else {
            let _ = writeln!(s, "  env:      {}={}", e(k), e(v));
        }
    }

    let _ = writeln!(s, "\nCUDA toolkits:");
    if inv.cuda_toolkits.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for t in &inv.cuda_toolkits {
        let _ = writeln!(
            s,
            "  {} {}{}{}",
            e(&t.path),
            e(t.version
                .map_or_else(|| "(version unknown)".to_string(), |v| v.to_string())),
            match &t.version_from {
                // Version files are the usual source; say so only for the others.
                Some(f) if t.version.is_some() && !f.starts_with("version.") => {
                    format!(" (from {})", e(f))
                }
                _ => String::new(),
            },
            if t.default { "  [/usr/local/cuda]" } else { "" }
        );
    }

    let _ = writeln!(s, "\nCUDA libraries:");
    if inv.cuda_libraries.is_empty() {
        let _ = writeln!(s, "  none");
    }
    let mut providers: Vec<LibraryProvider> =
        inv.cuda_libraries.iter().map(|l| l.provider).collect();
    providers.sort();
    providers.dedup();
    for p in providers {
        let _ = writeln!(s, "  {}:", provider_title(p));
        for l in inv.cuda_libraries.iter().filter(|l| l.provider == p) {
            let _ = write!(
                s,
                "    {:<30} {:<14} {}",
                e(l.family.name()),
                e(l.version_text().unwrap_or("?")),
                e(&l.path)
            );
            if let Some(pkg) = &l.package {
                let _ = write!(s, "  ({})", e(pkg));
            }
            s.push('\n');
        }
    }

    let _ = writeln!(s, "\nDriver libraries baked into the image:");
    if inv.driver_libraries.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for d in &inv.driver_libraries {
        let _ = writeln!(
            s,
            "  {:<26} {:<14} {}",
            e(&d.name),
            e(d.version.as_ref().map_or("?", |v| v.as_str())),
            e(&d.path)
        );
    }

    let _ = writeln!(s, "\nGPU Python packages:");
    let gpu: Vec<&PythonPackage> = inv
        .python_packages
        .iter()
        .filter(|p| p.cuda.is_some() || p.cuda_need.is_some())
        .collect();
    if gpu.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for p in &gpu {
        let _ = writeln!(
            s,
            "  {:<28} {:<14} CUDA {:<6} {}",
            e(&p.name),
            e(&p.version),
            e(p.cuda.map(|v| v.to_string()).unwrap_or_default()),
            e(&p.location)
        );
        if let Some(n) = &p.cuda_need {
            needs_line(&mut s, n);
        }
    }
    let _ = writeln!(
        s,
        "  ({} Python distributions in all)",
        inv.python_packages.len()
    );

    if !inv.conda_packages.is_empty() {
        let _ = writeln!(s, "\nConda packages: {}", inv.conda_packages.len());
    }
    if !inv.os_packages.is_empty() {
        let _ = writeln!(s, "\nOS packages (CUDA/NVIDIA):");
        for p in &inv.os_packages {
            let _ = writeln!(s, "  {} {} ({})", e(&p.name), e(&p.version), e(&p.manager));
        }
    }

    let _ = writeln!(s, "\nBinaries with GPU code:");
    let dev: Vec<&Binary> = inv
        .binaries
        .iter()
        .filter(|b| b.has_device_code || !b.loose_sass.is_empty() || !b.loose_ptx.is_empty())
        .collect();
    if dev.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for b in &dev {
        let _ = writeln!(s, "  {}", e(&b.path));
        let _ = writeln!(s, "      sass: {}", join(&b.sass));
        if !b.ptx.is_empty() {
            let isa: Vec<String> = b
                .ptx
                .iter()
                .map(|t| match b.ptx_isa.get(&t.to_string()) {
                    Some(v) => format!("{t} (ISA {})", e(v)),
                    None => t.to_string(),
                })
                .collect();
            let _ = writeln!(s, "      ptx:  {}", isa.join(" "));
        }
        if !b.compression.is_empty() {
            let _ = writeln!(s, "      compressed: {}", e(b.compression.join(", ")));
        }
        if !b.loose_sass.is_empty() {
            let _ = writeln!(s, "      loose cubins: {}", join(&b.loose_sass));
        }
        if !b.loose_ptx.is_empty() {
            let _ = writeln!(s, "      loose PTX: {}", join(&b.loose_ptx));
        }
        if b.has_kernels == Some(false) {
            let _ = writeln!(
                s,
                "      kernels: none (never launched; not judged by GL001)"
            );
        }
        for w in &b.warnings {
            let _ = writeln!(s, "      warning: {}", e(w));
        }
    }
    let linking = inv.binaries.len() - dev.len();
    if linking > 0 {
        let _ = writeln!(
            s,
            "  (+ {linking} more ELF files link CUDA libraries without device code of their own)"
        );
    }
    if !inv.ptx_files.is_empty() {
        let _ = writeln!(s, "\nPTX files (loaded by their programs; not judged):");
        for p in &inv.ptx_files {
            let _ = writeln!(s, "  {} {} (ISA {})", e(&p.path), p.target, e(&p.isa));
        }
    }
    if !inv.device_code_files.is_empty() {
        let _ = writeln!(
            s,
            "\nStandalone device code (per package; loaded by it, GL015):"
        );
        for g in &inv.device_code_files {
            let who = match (&g.package, &g.version) {
                (Some(p), Some(v)) => format!("{} {}", e(p), e(v)),
                (Some(p), None) => e(p),
                _ => e(&g.location),
            };
            let targets = |t: &[crate::arch::ArchTarget]| {
                t.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                s,
                "  {who}: {} cubins [{}], {} PTX files [{}]",
                g.cubins,
                targets(&g.sass),
                g.ptx_files,
                targets(&g.ptx)
            );
        }
    }
    if !inv.triton_ptxas.is_empty() {
        let _ = writeln!(s, "\ntriton's ptxas (GL014):");
        for t in &inv.triton_ptxas {
            let release = match (&t.release, &t.version) {
                (Some(_), Some(v)) => format!("CUDA {}", e(v)),
                (Some(r), None) => format!("CUDA {r}"),
                _ => format!("unknown ({})", e(t.unread.as_deref().unwrap_or("not read"))),
            };
            let _ = writeln!(s, "  {} {release}", e(&t.path));
        }
    }
    if !inv.loader.ld_so_conf.is_empty() {
        let _ = writeln!(s, "\nld.so.conf: {}", e(inv.loader.ld_so_conf.join(":")));
    }
    if inv.partial {
        let _ = writeln!(
            s,
            "\nPARTIAL: {} while reading the image:",
            crate::vocab::count(inv.errors.len(), "problem", "problems")
        );
        for e in &inv.errors {
            let _ = writeln!(
                s,
                "  [{}] {}",
                e.kind,
                crate::vocab::escape::field(&e.to_string())
            );
        }
    }
    s
}

/// `needs: CUDA 12.6, cuDNN 9 (dist_name spconv-cu126)`: what a package needs by its own
/// evidence and the piece that decided the CUDA (else the cuDNN), then any conflict.
fn needs_line(s: &mut String, n: &super::cuda_need::CudaNeed) {
    let mut what = Vec::new();
    if let Some(c) = n.cuda {
        let at_least = if n.cuda_lower_bound { ">=" } else { "" };
        what.push(format!("CUDA {at_least}{c}"));
    }
    if let Some(d) = n.cudnn {
        what.push(format!("cuDNN {d}"));
    }
    let by = n
        .evidence
        .iter()
        .find(|ev| {
            (n.cuda.is_some() && ev.cuda == n.cuda && Some(ev.kind) == n.cuda_from)
                || (n.cuda.is_none() && ev.cudnn == n.cudnn)
        })
        .map(|ev| format!(" ({} {})", kind_name(ev.kind), e(&ev.source)))
        .unwrap_or_default();
    if what.is_empty() {
        // Only alternatives (extras naming different majors): say what was read.
        let _ = writeln!(
            s,
            "      needs: undecided ({} pieces of evidence)",
            n.evidence.len()
        );
    } else {
        let _ = writeln!(s, "      needs: {}{by}", what.join(", "));
    }
    if let Some(c) = &n.conflict {
        let _ = writeln!(s, "      conflict: {}", e(c));
    }
}

fn kind_name(k: super::cuda_need::EvidenceKind) -> &'static str {
    use super::cuda_need::EvidenceKind::*;
    match k {
        DistName => "dist name",
        LocalVersion => "local version",
        RequiresDist => "Requires-Dist",
        RequiresTorch => "Requires-Dist torch",
        DtNeeded => "DT_NEEDED",
        VersionModule => "version module",
        StaticCudart => "static cudart",
        PtxIsa => "PTX ISA",
    }
}

#[cfg(test)]
mod tests {
    use super::super::cuda_need::{decide, from_name_and_version, from_needed, from_requires};
    use super::*;

    #[test]
    fn needs_line_names_the_deciding_evidence_and_any_conflict() {
        let mut ev = from_name_and_version("spconv-cu126", "2.3.8");
        ev.push(from_needed("spconv/core_cc.so", "libcudart.so.11.0").unwrap());
        let mut s = String::new();
        needs_line(&mut s, &decide(ev).unwrap());
        assert_eq!(
            s,
            "      needs: CUDA 12.6 (dist name spconv-cu126)\n      conflict: CUDA 12.6 \
             disagrees with: spconv/core_cc.so: libcudart.so.11.0 says 11\n"
        );
        // Extras naming different majors: nothing decided, and it says so.
        let ev = from_requires(&[
            "jax-cuda12-plugin; extra == 'cuda12'".to_string(),
            "jax-cuda13-plugin; extra == 'cuda13'".to_string(),
        ]);
        let mut s = String::new();
        needs_line(&mut s, &decide(ev).unwrap());
        assert_eq!(s, "      needs: undecided (2 pieces of evidence)\n");
    }
}
