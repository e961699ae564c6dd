//! The GL0xx rules: a squashed image [`Inventory`](crate::inventory::Inventory) judged against
//! a [`Target`](crate::gpu_target::Target) with [`Facts`](crate::matrix::Facts). Each check
//! sees an [`ImageContext`] and pushes findings located inside the image (layer + path).
//! [`Scope`] says whether a check runs once per target or once per image. GL000 (part of the
//! input could not be read) has no check: the scan reports it. Shared helpers: [`context`]
//! (what the checks ask of the inventory), [`loader`] (the dynamic loader's search order) and
//! [`requirements`] (what the image needs of a host, shown without targets).

pub mod bitsandbytes;
pub mod context;
pub mod gl000_unreadable_input;
pub mod gl001_no_kernel_image;
pub mod gl002_driver_too_old;
pub mod gl003_ptx_jit_needs_newer_driver;
pub mod gl004_driver_libs_in_image;
pub mod gl005_forward_compat_unsupported;
pub mod gl006_conflicting_cuda_runtimes;
pub mod gl007_wheel_tag_mismatch;
pub mod gl008_torch_companion_mismatch;
pub mod gl009_platform_mismatch;
pub mod gl010_require_cuda_unsatisfied;
pub mod gl011_driver_does_not_support_gpu;
pub mod gl012_package_library_missing;
pub mod gl013_bitsandbytes_library_missing;
pub mod gl014_triton_ptxas_too_old;
pub mod gl015_standalone_device_code;
pub mod gl016_cuda_wheel_requirement_unmet;
pub mod loader;
mod onnxruntime_need;
pub mod reachability;
pub mod requirements;
#[cfg(test)]
mod tests_image;
#[cfg(test)]
mod tests_packages;
#[cfg(test)]
mod testutil;

use crate::finding::Finding;
pub use context::ImageContext;

/// An image check: pushes its findings for the context's inventory (and target, if any).
pub type ImageCheck = fn(&ImageContext, &mut Vec<Finding>);

/// Whether an image rule is judged per target or once per image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    PerTarget,
    Image,
}
