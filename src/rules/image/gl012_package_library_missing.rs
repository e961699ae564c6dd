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
    other_severities: &[Severity::Warning],
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
            directory`; onnxruntime falls back to the CPU with only a log line. A library that is \
            in the image but outside the file's search path is a warning: it loads only when \
            another module loaded a library of that soname first (importing torch loads its \
            nvidia wheels' libraries), so the outcome depends on import order. Nothing is said \
            when the requirement is unknown.",
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
        for e in &need.evidence {
            let Some((rel, name)) = needed_of(e) else {
                continue;
            };
            // Evidence about a file the inventory did not read says nothing about loading.
            let Some(b) = binary_at(inv, p, rel) else {
                continue;
            };
            if let Some(f) = judge_needed(ctx, p, b, rel, name) {
                out.push(f);
            }
        }
    }
}

/// The finding for one NEEDED name of one file, when the loader would not find it.
fn judge_needed(
    ctx: &ImageContext,
    p: &PythonPackage,
    b: &Binary,
    rel: &str,
    name: &str,
) -> Option<Finding> {
    let inv = ctx.inventory;
    if resolve(inv, &search_order(inv, b), name).is_some() {
        return None;
    }
    let elsewhere = libraries_named(inv, name);
    // A file of that name the inventory does not know as a CUDA library: the model cannot
    // place it, so no verdict.
    if elsewhere.is_empty()
        && inv
            .binaries
            .iter()
            .any(|o| o.path.file_name() == name && o.path != b.path)
    {
        return None;
    }
    let head = format!("{} {} needs {name} ({rel} NEEDs it)", p.name, p.version);
    let f = if let Some(lib) = elsewhere.first() {
        META.finding(format!(
            "{head}: the image has it at {}, which is not on that file's search path (RUNPATH, LD_LIBRARY_PATH, ld.so.conf, the default directories); it loads only if another module loaded a library of that name first",
            lib.path
        ))
        .with_severity(Severity::Warning)
        .with_help(format!(
            "add {} to LD_LIBRARY_PATH, or import the module that loads it (torch loads its nvidia wheels' libraries) before {}",
            lib.path.parent().map(|d| d.to_string()).unwrap_or_default(),
            p.name
        ))
    } else {
        let others = other_versions(inv, name);
        let has = if others.is_empty() {
            String::new()
        } else {
            format!(" (it has {})", others.join(", "))
        };
        META.finding(format!(
            "{head}: the image has no library of that name{has}; loading fails with `{name}: cannot open shared object file`"
        ))
        .with_help(format!(
            "install a {} build for the CUDA and cuDNN the image has, or install {name} where the loader finds it",
            p.name
        ))
    };
    Some(f.with_location(ctx.binary_location(b)))
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
    /// 8 (its real DT_NEEDED), in an image whose only cuDNN is torch's cuDNN 9 wheel.
    #[test]
    fn a_needed_cudnn_major_the_image_lacks_is_an_error() {
        let tree = dist_tree(&[
            (
                "onnxruntime_gpu-1.18.1.dist-info",
                "Name: onnxruntime-gpu\nVersion: 1.18.1\n",
                &[(
                    ORT_SO,
                    &["libcublasLt.so.11", "libcudnn.so.8", "libcudart.so.11.0"],
                )],
            ),
            CUDNN9,
        ]);
        let inv = build(&ImageMeta::default(), &tree, Vec::new());
        let f = gl012(&inv);
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 3, "{msgs:#?}");
        assert!(f.iter().all(|f| f.severity == Severity::Error), "{f:?}");
        let cudnn = f
            .iter()
            .find(|f| f.message.contains("needs libcudnn.so.8"))
            .unwrap();
        assert_eq!(
            cudnn.message,
            format!(
                "onnxruntime-gpu 1.18.1 needs libcudnn.so.8 ({ORT_SO} NEEDs it): the image has no library of that name (it has libcudnn.so.9 at /{SITE}/nvidia/cudnn/lib/libcudnn.so.9); loading fails with `libcudnn.so.8: cannot open shared object file`"
            )
        );
        let at = cudnn.location.as_ref().and_then(|l| l.path.clone());
        assert_eq!(at.as_deref(), Some(format!("/{SITE}/{ORT_SO}").as_str()));
        assert!(msgs.iter().any(|m| m.contains("needs libcudart.so.11.0")));
    }

    /// The same soname in the image: on the file's RUNPATH it loads (nothing said); elsewhere
    /// it loads only if another module loaded it first (a warning naming where it is).
    #[test]
    fn a_library_off_the_search_path_is_a_warning_and_on_it_is_fine() {
        let ort19 = (
            "onnxruntime_gpu-1.19.2.dist-info",
            "Name: onnxruntime-gpu\nVersion: 1.19.2\n",
            &[(ORT_SO, &["libcudnn.so.9"][..])][..],
        );
        let mut tree = dist_tree(&[ort19, CUDNN9]);
        let inv = build(&ImageMeta::default(), &tree, Vec::new());
        let f = gl012(&inv);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains(&format!(
                "the image has it at /{SITE}/nvidia/cudnn/lib/libcudnn.so.9, which is not on that file's search path"
            )),
            "{}",
            f[0].message
        );
        // A RUNPATH that reaches the wheel's directory: the loader finds it.
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
