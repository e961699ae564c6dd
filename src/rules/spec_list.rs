//! The GL1xx rules (Dockerfiles and run configurations): metadata for [`super::all`] and the
//! check functions `spec` runs. Kept apart from `mod.rs` so the two rule families merge
//! without conflicts.

#[path = "gl100_invalid_spec_file.rs"]
pub mod gl100_invalid_spec_file;
#[path = "gl101_torch_cuda_vs_base.rs"]
pub mod gl101_torch_cuda_vs_base;
#[path = "gl102_torch_cuda_variant_unpinned.rs"]
pub mod gl102_torch_cuda_variant_unpinned;
#[path = "gl103_driver_in_image.rs"]
pub mod gl103_driver_in_image;
#[path = "gl104_cuda_toolkit_over_base.rs"]
pub mod gl104_cuda_toolkit_over_base;
#[path = "gl105_conda_cuda_with_pip_torch.rs"]
pub mod gl105_conda_cuda_with_pip_torch;
#[path = "gl106_ld_library_path_cuda_override.rs"]
pub mod gl106_ld_library_path_cuda_override;
#[path = "gl107_arch_list_misses_target.rs"]
pub mod gl107_arch_list_misses_target;
#[path = "gl108_unquoted_version_specifier.rs"]
pub mod gl108_unquoted_version_specifier;
#[path = "gl109_eol_cuda_base.rs"]
pub mod gl109_eol_cuda_base;
#[path = "gl110_gpu_not_requested.rs"]
pub mod gl110_gpu_not_requested;
#[path = "gl111_host_cuda_mounted.rs"]
pub mod gl111_host_cuda_mounted;
#[path = "gl112_host_driver_libs_mounted.rs"]
pub mod gl112_host_driver_libs_mounted;
#[path = "gl113_partial_nvidia_devices.rs"]
pub mod gl113_partial_nvidia_devices;
#[path = "gl114_default_shm_with_pytorch.rs"]
pub mod gl114_default_shm_with_pytorch;
#[path = "gl115_visible_devices_all_bypasses_plugin.rs"]
pub mod gl115_visible_devices_all_bypasses_plugin;
#[path = "gl116_deprecated_nvidia_runtime.rs"]
pub mod gl116_deprecated_nvidia_runtime;
#[path = "gl117_cuda_visible_devices_unavailable.rs"]
pub mod gl117_cuda_visible_devices_unavailable;
#[path = "gl118_image_tag_unpinned.rs"]
pub mod gl118_image_tag_unpinned;
#[path = "gl199_unused_suppression.rs"]
pub mod gl199_unused_suppression;

use super::RuleMeta;
use crate::finding::Finding;
use crate::spec::{RuleCtx, Subject};

pub type Check = fn(&Subject, &RuleCtx) -> Vec<Finding>;

/// Every GL1xx rule with a check, by code.
pub fn spec_checks() -> Vec<(&'static RuleMeta, Check)> {
    vec![
        (
            &gl101_torch_cuda_vs_base::META,
            gl101_torch_cuda_vs_base::check as Check,
        ),
        (
            &gl102_torch_cuda_variant_unpinned::META,
            gl102_torch_cuda_variant_unpinned::check,
        ),
        (&gl103_driver_in_image::META, gl103_driver_in_image::check),
        (
            &gl104_cuda_toolkit_over_base::META,
            gl104_cuda_toolkit_over_base::check,
        ),
        (
            &gl105_conda_cuda_with_pip_torch::META,
            gl105_conda_cuda_with_pip_torch::check,
        ),
        (
            &gl106_ld_library_path_cuda_override::META,
            gl106_ld_library_path_cuda_override::check,
        ),
        (
            &gl107_arch_list_misses_target::META,
            gl107_arch_list_misses_target::check,
        ),
        (
            &gl108_unquoted_version_specifier::META,
            gl108_unquoted_version_specifier::check,
        ),
        (&gl109_eol_cuda_base::META, gl109_eol_cuda_base::check),
        (
            &gl110_gpu_not_requested::META,
            gl110_gpu_not_requested::check,
        ),
        (
            &gl111_host_cuda_mounted::META,
            gl111_host_cuda_mounted::check,
        ),
        (
            &gl112_host_driver_libs_mounted::META,
            gl112_host_driver_libs_mounted::check,
        ),
        (
            &gl113_partial_nvidia_devices::META,
            gl113_partial_nvidia_devices::check,
        ),
        (
            &gl114_default_shm_with_pytorch::META,
            gl114_default_shm_with_pytorch::check,
        ),
        (
            &gl115_visible_devices_all_bypasses_plugin::META,
            gl115_visible_devices_all_bypasses_plugin::check,
        ),
        (
            &gl116_deprecated_nvidia_runtime::META,
            gl116_deprecated_nvidia_runtime::check,
        ),
        (
            &gl117_cuda_visible_devices_unavailable::META,
            gl117_cuda_visible_devices_unavailable::check,
        ),
        (
            &gl118_image_tag_unpinned::META,
            gl118_image_tag_unpinned::check,
        ),
    ]
}

/// Metadata of every GL1xx rule (including GL100 and GL199, which have no check of their own).
pub fn spec_rules() -> Vec<&'static RuleMeta> {
    let mut v: Vec<&'static RuleMeta> = vec![
        &gl100_invalid_spec_file::META,
        &gl199_unused_suppression::META,
    ];
    v.extend(spec_checks().into_iter().map(|(m, _)| m));
    v
}
