//! Suggestions computed from the tables ([`Facts`]) and the targets, one file per kind of
//! change: a torch build ([`torch`]), a driver ([`driver`]), an architecture list
//! ([`arch_list`]), a base image tag ([`base_image`]). Each returns only changes the tables
//! say work: a build, driver, list or tag that no row supports is never suggested, and when
//! nothing qualifies the answer is empty (or advice that says why) rather than a template.

pub mod arch_list;
pub mod arch_list_edit;
pub mod base_image;
pub mod dockerfile_edit;
pub mod driver;
pub mod fleet;
pub mod torch;

use super::FixBasis;
use crate::matrix::{Basis, Sourced};

/// A [`FixBasis`] for the row behind `answer`; a row that no document or measurement backs
/// says so in its name, so a reader can weigh the suggestion.
pub(crate) fn basis_of<T>(table: &str, row: impl Into<String>, answer: &Sourced<T>) -> FixBasis {
    let row = row.into();
    FixBasis {
        table: table.to_string(),
        row: if answer.basis == Basis::Inferred {
            format!("{row} (inferred)")
        } else {
            row
        },
        source: answer.source.clone(),
    }
}

/// How gpulint computes the suggestions of a rule, for `gpulint explain`; `None` for rules
/// whose help is fixed text.
pub fn how_computed(code: &str) -> Option<String> {
    const TORCH: &str = "the torch release lines and CUDA variants of torch.toml whose \
        architecture row (measured from the wheel, or cited from the release's build script) \
        has SASS or PTX for every GPU of every target, and whose CUDA runs on every known \
        target driver (the major's minor-version compatibility floor from cuda_driver.toml; \
        the release's own minimum where a GPU is reached only through PTX JIT). Ranked nearest \
        to what is installed: the same release line first, then the nearest line (newer \
        before older), then the CUDA variant nearest the installed or base image's CUDA. The \
        install line names the release's torchvision and torchaudio from \
        torch_companions.toml. A variant without an architecture row, or a CUDA without a \
        driver row, is never suggested.";
    const DRIVER: &str = "the exact minimum Linux driver and its branch from cuda_driver.toml \
        (the minor-version compatibility floor where that suffices), and a cuda-compat-X-Y \
        package only where forward_compat.toml marks it compatible with the target's driver \
        branch and every GPU of the target is a datacenter part.";
    const ARCH: &str = "SASS for each GPU family of the targets (the lowest compute capability \
        of each major, which runs on the others of that major) and SASS and PTX for the newest \
        GPU, in the list's own syntax (TORCH_CUDA_ARCH_LIST, -gencode, \
        CMAKE_CUDA_ARCHITECTURES), checked against what the base image's nvcc compiles \
        (cuda_arch.toml).";
    const BASE: &str = "the base image tag that agrees with torch: for an nvidia/cuda base \
        (Docker Hub or nvcr.io), the tag of torch's CUDA release (of its build's variant, or \
        of PyPI's default build of the pinned release) with the current tag's kind \
        (runtime, devel, cudnn-runtime, …; a cuDNN kind may become the listed cuDNN kind of \
        the same flavour) and OS, among the tags NVIDIA's supported-tags list names \
        (cuda_image_tag rows of cuda-images.toml), not of an end-of-life CUDA, and whose \
        minimum driver (cuda_driver.toml; the image advertises NVIDIA_REQUIRE_CUDA=cuda>=X.Y, \
        so minor-version compatibility does not count) every target with a known driver \
        has. It is an unsafe edit of the FROM line, or of the ARG default the FROM expands. \
        For another repository, a kind or OS the list does not hold, or when no listed tag \
        qualifies, no tag is named and the fix says why.";
    let text = match code {
        "GL001" => format!(
            "For a library of torch, torchvision or torchaudio: {TORCH} For other binaries: {ARCH}"
        ),
        "GL002" => format!(
            "The driver: {DRIVER} When the image has torch, also the newest torch build that \
             runs on the current driver and GPUs."
        ),
        "GL003" | "GL010" => format!("The driver: {DRIVER}"),
        "GL011" => "The driver of the first CUDA release whose nvcc lists the GPU's sm_XY \
            (cuda_arch.toml and cuda_driver.toml); cuda-compat cannot stand in for it."
            .to_string(),
        "GL101" => format!(
            "First, a build of the installed torch release that exists for the base image's \
             CUDA and runs on every target (the smaller change); else {TORCH} Then {BASE}"
        ),
        "GL102" => format!(
            "A build of the installed torch release that exists for the base image's CUDA and \
             runs on every target, smallest change first; else {TORCH} (No base image is \
             suggested: a base on PyPI's CUDA would leave the variant unpinned, which is the \
             finding; where PyPI's build and the base disagree across a major, GL101 names \
             the base image tag.)"
        ),
        "GL105" => format!(
            "A build of the installed torch release that exists for conda's CUDA and runs on \
             every target, installed by pip alone; else {TORCH} (No base image is suggested: \
             the finding is two package managers' CUDA in one environment, which a base \
             image does not change.)"
        ),
        "GL107" => format!("The architecture list: {ARCH}"),
        "GL119" => format!("The torch builds: {TORCH}"),
        _ => return None,
    };
    Some(text)
}
