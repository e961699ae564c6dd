//! The GL1xx rules: Dockerfiles, compose files, Kubernetes manifests and run lines, read as
//! facts by `crate::spec`. Each check sees a [`Subject`] and the [`RuleCtx`] (targets, matrix
//! facts) and returns findings located in the file. GL100 (the file does not parse) and GL199
//! (a suppression matched nothing) have no check: the spec reader and `crate::suppress` report
//! them. The table that lists them is `super::RULES`.

pub mod gl100_invalid_spec_file;
pub mod gl101_torch_cuda_vs_base;
pub mod gl102_torch_cuda_variant_unpinned;
pub mod gl103_driver_in_image;
pub mod gl104_cuda_toolkit_over_base;
pub mod gl105_conda_cuda_with_pip_torch;
pub mod gl106_ld_library_path_cuda_override;
pub mod gl107_arch_list_misses_target;
pub mod gl108_unquoted_version_specifier;
pub mod gl109_eol_cuda_base;
pub mod gl110_gpu_not_requested;
pub mod gl111_host_cuda_mounted;
pub mod gl112_host_driver_libs_mounted;
pub mod gl113_partial_nvidia_devices;
pub mod gl114_default_shm_with_pytorch;
pub mod gl115_visible_devices_all_bypasses_plugin;
pub mod gl116_deprecated_nvidia_runtime;
pub mod gl117_cuda_visible_devices_unavailable;
pub mod gl118_image_tag_unpinned;
pub mod gl119_torch_build_misses_target;
pub mod gl199_unused_suppression;

use crate::finding::Finding;
use crate::spec::build::BuildFacts;
use crate::spec::{RuleCtx, Subject};

/// Indices of the stages the final image is built on (the last built stage and its
/// parents): what they set reaches the running container. Other stages are throw-away
/// builders whose files reach the image only through an explicit `COPY --from`.
pub(crate) fn final_chain(bf: &BuildFacts) -> Vec<usize> {
    bf.built_stages()
        .last()
        .map(|f| bf.chain(f.index).iter().map(|s| s.index).collect())
        .unwrap_or_default()
}

/// A Dockerfile / run-configuration check: one subject (a build or the run specs of a file)
/// in, findings out.
pub type SpecCheck = fn(&Subject, &RuleCtx) -> Vec<Finding>;
