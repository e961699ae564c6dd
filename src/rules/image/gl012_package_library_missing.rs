//! GL012 package-library-missing: a Python package needs a CUDA library (`libcudart.so.11.0`,
//! `libcudnn.so.8`) that the dynamic loader would not find in the image.

use super::context::ImageContext;
use super::loader::{resolve, search_order};
use crate::finding::{Finding, Location, Severity};
use crate::inventory::cuda_need::{CudaEvidence, EvidenceKind};
use crate::inventory::libs::parse_so_name;
use crate::inventory::{Binary, CudaLibrary, Inventory, LibraryProvider, PythonPackage};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL012"),
    name: "package-library-missing",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "A Python package needs a CUDA or cuDNN library the image does not provide",
    doc: RuleDoc {
        what: "A Python package's own files NEED a CUDA runtime, cuBLAS, NVRTC, nvJitLink or \
            cuDNN library of one major version (its DT_NEEDED entries, recorded in the \
            inventory's `cuda_need` evidence: onnxruntime-gpu 1.18.1's PyPI wheel NEEDs \
            `libcudnn.so.8` and `libcudart.so.11.0`), and the dynamic loader, searching the way \
            ld.so does for that file (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, ld.so.conf, the \
            default directories), finds no library of that name in the image. For \
            onnxruntime-gpu the cuDNN major comes from ONNX Runtime's own requirements table \
            (matrices/onnxruntime.toml) when its files do not name one.",
        why: "A library's soname carries its major version: a file that NEEDs `libcudnn.so.8` \
            does not load `libcudnn.so.9`. Importing the package (or creating its CUDA execution \
            provider) fails with `libcudnn.so.8: cannot open shared object file: No such file or \
            directory`; onnxruntime falls back to the CPU with only a log line. One finding per \
            package names every such library and the majors the image does have: the fix is \
            usually another build of the package, not a path. GL006 reports the same names per \
            binary, and a library in the image but off a file's search path (that is a loader \
            question, not a missing requirement). Nothing is said when the requirement is \
            unknown.",
        example: "onnxruntime-gpu 1.18.1 from PyPI (CUDA 11.8, cuDNN 8) installed into an image \
            with torch 2.5 (CUDA 12, cuDNN 9): `onnxruntime-gpu 1.18.1 needs libcudnn.so.8 \
            (onnxruntime/capi/libonnxruntime_providers_cuda.so NEEDs it): the image has no \
            library of that name (it has libcudnn.so.9 at …)`.",
        fix: "Install a build of the package for the image's CUDA and cuDNN (onnxruntime-gpu 1.19 \
            or later is built for CUDA 12 and cuDNN 9), or install the libraries it needs \
            (`pip install nvidia-cudnn-cu11==8.*`) where its loader finds them.",
        sources: &[
            "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
            "https://docs.nvidia.com/deeplearning/cudnn/latest/reference/support-matrix.html",
        ],
    },
};

/// Loadable CUDA libraries of the image that a NEEDED `name` means: the file, its soname or
/// one of its link aliases has that name. Link-time stubs never load at run time.
pub(super) fn libraries_named<'a>(inv: &'a Inventory, name: &str) -> Vec<&'a CudaLibrary> {
    inv.cuda_libraries
        .iter()
        .filter(|l| l.provider != LibraryProvider::Stub)
        .filter(|l| {
            l.path.file_name() == name
                || l.soname.as_deref() == Some(name)
                || l.aliases.iter().any(|a| a.file_name() == name)
        })
        .collect()
}

/// The image's libraries of the same stem under another name (`libcudnn.so.9` for a missing
/// `libcudnn.so.8`), for the message: "it has libcudnn.so.9 at …".
pub(super) fn other_versions(inv: &Inventory, name: &str) -> Vec<String> {
    let Some(want) = parse_so_name(name) else {
        return Vec::new();
    };
    let mut out: Vec<String> = inv
        .cuda_libraries
        .iter()
        .filter(|l| l.provider != LibraryProvider::Stub)
        .filter_map(|l| {
            let so = l
                .soname
                .clone()
                .unwrap_or_else(|| l.path.file_name().into());
            let parsed = parse_so_name(&so)?;
            (parsed.stem == want.stem && so != name).then(|| format!("{so} at {}", l.path))
        })
        .collect();
    out.sort();
    out.dedup();
    out.truncate(3);
    out
}

/// `(file relative to the site-packages directory, NEEDED name)` of a DT_NEEDED piece.
fn needed_of(e: &CudaEvidence) -> Option<(&str, &str)> {
    (e.kind == EvidenceKind::DtNeeded)
        .then(|| e.source.rsplit_once(": "))
        .flatten()
}

fn binary_at<'a>(inv: &'a Inventory, p: &PythonPackage, rel: &str) -> Option<&'a Binary> {
    let path = format!("{}/{rel}", p.location.as_str().trim_end_matches('/'));
    inv.binaries.iter().find(|b| b.path.as_str() == path)
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let inv = ctx.inventory;
    for p in &inv.python_packages {
        if let Some(f) = super::onnxruntime_need::check_table(ctx, p) {
            out.push(f);
        }
        let Some(need) = &p.cuda_need else { continue };
        if need.cuda.is_none() && need.cudnn.is_none() {
            continue;
        }
        // (file, NEEDED name) the loader finds in no directory and no library in the image
        // provides; one finding per package.
        let mut missing: Vec<(&Binary, &str, &str)> = Vec::new();
        for e in &need.evidence {
            let Some((rel, name)) = needed_of(e) else {
                continue;
            };
            // Evidence about a file the inventory did not read says nothing about loading.
            let Some(b) = binary_at(inv, p, rel) else {
                continue;
            };
            if provided_nowhere(inv, b, name) {
                missing.push((b, rel, name));
            }
        }
        let Some((first, _, _)) = missing.first() else {
            continue;
        };
        let names: Vec<&str> = missing.iter().map(|m| m.2).collect();
        let mut files: Vec<&str> = missing.iter().map(|m| m.1).collect();
        files.dedup();
        let mut others: Vec<String> = names.iter().flat_map(|n| other_versions(inv, n)).collect();
        others.sort();
        others.dedup();
        let has = if others.is_empty() {
            String::new()
        } else {
            format!(" (it has {})", others.join(", "))
        };
        out.push(
            META.finding(format!(
                "{} {} needs {} ({} NEEDs {}): no library in the image provides {}{has}; loading fails with `{}: cannot open shared object file`",
                p.name,
                p.version,
                names.join(", "),
                files.join(", "),
                if names.len() == 1 { "it" } else { "them" },
                if names.len() == 1 { "it" } else { "them" },
                names[0],
            ))
            .with_location(ctx.binary_location(first))
            .with_help(format!(
                "install a {} build for the CUDA and cuDNN the image has, or install what it needs ({})",
                p.name,
                names.join(", ")
            )),
        );
    }
}

/// Whether the loader finds `name` for `b` nowhere and no library of the image has that name.
/// A library in the image but off the file's search path is GL006's finding (or none, for a
/// Python extension a preloading module serves); a file the inventory does not know as a
/// CUDA library cannot be placed, so no verdict.
fn provided_nowhere(inv: &Inventory, b: &Binary, name: &str) -> bool {
    resolve(inv, &search_order(inv, b), name).is_none()
        && libraries_named(inv, name).is_empty()
        && !inv.binaries.iter().any(|o| o.path.file_name() == name)
}

/// Where a package-level finding points: the package's site-packages directory.
pub(super) fn package_location(ctx: &ImageContext, p: &PythonPackage) -> Location {
    Location::in_image(ctx.layer_digest(p.layer), p.location.clone())
}

#[cfg(test)]
mod tests {
    use crate::detect::Fact;
    use crate::finding::{Finding, Severity};
    use crate::inventory::tests::dist_tree;
    use crate::inventory::{build, ImageMeta, Inventory};
    use crate::rules::check_image;
    use crate::rules::image::testutil::matrix;

    const SITE: &str = "usr/lib/python3/dist-packages";
    const ORT_SO: &str = "onnxruntime/capi/libonnxruntime_providers_cuda.so";

    fn gl012(inv: &Inventory) -> Vec<Finding> {
        check_image(inv, &matrix(), &[])
            .into_iter()
            .filter(|f| f.rule == "GL012")
            .collect()
    }

    /// torch's CUDA 12 / cuDNN 9 wheels: the libraries every case below has.
    const CUDNN9: (&str, &str, &[(&str, &[&str])]) = (
        "nvidia_cudnn_cu12-9.1.0.70.dist-info",
        "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n",
        &[("nvidia/cudnn/lib/libcudnn.so.9", &[])],
    );

    /// Issue 28's classic: onnxruntime-gpu 1.18.1 from PyPI NEEDs CUDA 11's runtime and cuDNN
    /// 8 (its real DT_NEEDED), in an image whose only cuDNN is torch's cuDNN 9 wheel: one
    /// error for the package, naming each library and the cuDNN the image has.
    #[test]
    fn a_needed_cudnn_major_the_image_lacks_is_an_error() {
        let tree = dist_tree(&[
            (
                "onnxruntime_gpu-1.18.1.dist-info",
                "Name: onnxruntime-gpu\nVersion: 1.18.1\n",
                &[(ORT_SO, &["libcudnn.so.8", "libcudart.so.11.0", "libc.so.6"])],
            ),
            CUDNN9,
        ]);
        let inv = build(&ImageMeta::default(), &tree, Vec::new());
        let f = gl012(&inv);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].message,
            format!(
                "onnxruntime-gpu 1.18.1 needs libcudnn.so.8, libcudart.so.11.0 ({ORT_SO} NEEDs them): no library in the image provides them (it has libcudnn.so.9 at /{SITE}/nvidia/cudnn/lib/libcudnn.so.9); loading fails with `libcudnn.so.8: cannot open shared object file`"
            )
        );
        let at = f[0].location.as_ref().and_then(|l| l.path.clone());
        assert_eq!(at.as_deref(), Some(format!("/{SITE}/{ORT_SO}").as_str()));
    }

    /// The soname in the image is no missing requirement, on the file's RUNPATH or off it
    /// (off it is GL006's loader question; a Python extension is served by preloading).
    #[test]
    fn a_library_the_image_has_is_not_missing() {
        let ort19 = (
            "onnxruntime_gpu-1.19.2.dist-info",
            "Name: onnxruntime-gpu\nVersion: 1.19.2\n",
            &[(ORT_SO, &["libcudnn.so.9"][..])][..],
        );
        let mut tree = dist_tree(&[ort19, CUDNN9]);
        let inv = build(&ImageMeta::default(), &tree, Vec::new());
        assert!(gl012(&inv).is_empty(), "{:?}", gl012(&inv));
        let node = tree
            .nodes
            .get_mut(&crate::vocab::ImagePath::new(&format!("{SITE}/{ORT_SO}")).unwrap())
            .unwrap();
        for fact in &mut node.facts {
            if let Fact::Elf(e) = fact {
                e.runpath = vec!["$ORIGIN/../../nvidia/cudnn/lib".into()];
            }
        }
        let inv = build(&ImageMeta::default(), &tree, Vec::new());
        assert!(gl012(&inv).is_empty(), "{:?}", gl012(&inv));
        // Without the cuDNN 9 wheel it is missing again.
        let tree = dist_tree(&[ort19]);
        let f = gl012(&build(&ImageMeta::default(), &tree, Vec::new()));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("needs libcudnn.so.9 ("),
            "{}",
            f[0].message
        );
    }

    /// No file of the package read: ONNX Runtime's table decides when it can. 1.16 has only a
    /// CUDA 11.8 / cuDNN 8 build; 1.18.1 has builds for CUDA 11.8 (cuDNN 8) and 12 (cuDNN 9),
    /// so without its CUDA major it is unknown; 1.20 has no row: unknown, never "ok" or an
    /// error.
    #[test]
    fn onnxruntime_table_decides_only_what_it_knows() {
        let meta = |v: &str| format!("Name: onnxruntime-gpu\nVersion: {v}\n");
        let one = |v: &str| {
            let m = meta(v);
            let tree = dist_tree(&[("onnxruntime_gpu.dist-info", m.as_str(), &[]), CUDNN9]);
            gl012(&build(&ImageMeta::default(), &tree, Vec::new()))
        };
        let f = one("1.16.3");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message.starts_with(
                "onnxruntime-gpu 1.16.3 needs cuDNN 8 (ONNX Runtime's requirements table: 1.16 for CUDA 11.8 is built with cuDNN 8.x): the image has no libcudnn.so.8 (it has libcudnn.so.9 at"
            ),
            "{}",
            f[0].message
        );
        assert!(one("1.18.1").is_empty());
        assert!(one("1.20.0").is_empty());
        // With its CUDA major known (a Requires-Dist on a CUDA 12 wheel), 1.18.1 is cuDNN 9.
        let tree = dist_tree(&[
            (
                "onnxruntime_gpu-1.18.1.dist-info",
                "Name: onnxruntime-gpu\nVersion: 1.18.1\nRequires-Dist: nvidia-cuda-runtime-cu12\n",
                &[],
            ),
            CUDNN9,
        ]);
        assert!(gl012(&build(&ImageMeta::default(), &tree, Vec::new())).is_empty());
        let tree = dist_tree(&[(
            "onnxruntime_gpu-1.18.1.dist-info",
            "Name: onnxruntime-gpu\nVersion: 1.18.1\nRequires-Dist: nvidia-cuda-runtime-cu12\n",
            &[],
        )]);
        let f = gl012(&build(&ImageMeta::default(), &tree, Vec::new()));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("needs cuDNN 9"), "{}", f[0].message);
    }

    #[test]
    fn table_rows_pick_the_most_specific_release() {
        let m = matrix();
        let b = |v: &str, c: Option<u32>| m.onnxruntime_build(v, c).map(|b| b.value.cudnn);
        assert_eq!(b("1.18.1", Some(12)), Some(9));
        assert_eq!(b("1.18.0", Some(12)), Some(8));
        assert_eq!(b("1.18.1", Some(11)), Some(8));
        assert_eq!(b("1.18.1", None), None);
        assert_eq!(b("1.19.2", Some(12)), Some(9));
        assert_eq!(b("1.16.3", None), Some(8));
        assert_eq!(b("1.16.3", Some(12)), None);
        assert_eq!(b("1.1.0", None), None);
        assert_eq!(b("1.180.0", None), None);
    }
}
