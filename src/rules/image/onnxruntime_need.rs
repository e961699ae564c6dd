//! GL012's second source: ONNX Runtime's requirements table (matrices/onnxruntime.toml) for an
//! onnxruntime-gpu whose own files do not say which cuDNN it loads.

use super::context::ImageContext;
use super::gl012_package_library_missing::{
    libraries_named, other_versions, package_location, META,
};
use crate::finding::Finding;
use crate::inventory::PythonPackage;

/// The finding for an onnxruntime-gpu whose cuDNN comes from the table and is not in the
/// image; None when its files name the cuDNN (the DT_NEEDED check decides), the table has no
/// answer (unknown release, or builds for two CUDA majors and the CUDA major unknown), or the
/// image has that cuDNN.
pub(super) fn check_table(ctx: &ImageContext, p: &PythonPackage) -> Option<Finding> {
    if p.name != "onnxruntime-gpu" {
        return None;
    }
    let need = p.cuda_need.as_ref();
    if need.is_some_and(|n| n.cudnn.is_some()) {
        return None;
    }
    let cuda_major = need.and_then(|n| n.cuda).map(|t| t.major);
    let build = ctx.facts.onnxruntime_build(&p.version, cuda_major)?;
    let want = format!("libcudnn.so.{}", build.value.cudnn);
    if !libraries_named(ctx.inventory, &want).is_empty() {
        return None;
    }
    let others = other_versions(ctx.inventory, &want);
    let has = if others.is_empty() {
        String::new()
    } else {
        format!(" (it has {})", others.join(", "))
    };
    Some(
        META.finding(format!(
            "{} {} needs cuDNN {} (ONNX Runtime's requirements table: {} for CUDA {} is built with cuDNN {}.x): the image has no {want}{has}",
            p.name, p.version, build.value.cudnn, build.value.ort, build.value.cuda, build.value.cudnn
        ))
        .with_location(package_location(ctx, p))
        .with_help(format!(
            "install cuDNN {} where the loader finds it, or an onnxruntime-gpu build for the image's cuDNN ({})",
            build.value.cudnn, build.source
        )),
    )
}
