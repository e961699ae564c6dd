//! `cuda-images.toml`: facts about CUDA container images and run configurations that only the
//! Dockerfile / run-configuration rules ask (through `crate::matrix::Facts`): end-of-life CUDA
//! series and base OSes, the device nodes a GPU needs, named TORCH_CUDA_ARCH_LIST entries,
//! repositories that publish no `latest`, the nvidia/cuda tags NVIDIA lists.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EolRow {
    pub(crate) series: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OsEolRow {
    pub(crate) os: String,
    pub(crate) eol: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceRow {
    pub(crate) path: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchNameRow {
    pub(crate) name: String,
    pub(crate) archs: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RepoRow {
    pub(crate) repo: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
/// A published image whose CUDA its tag does not spell (`k8s.gcr.io/cuda-vector-add:v0.1`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImageCudaRow {
    /// Registry and repository, as `ImageRef::full_repo` spells it.
    pub(crate) repo: String,
    pub(crate) tag: String,
    pub(crate) cuda: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
/// TensorFlow releases `from`..=`to` (one major) whose GPU builds use `cuda`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TensorflowCudaRow {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) cuda: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
/// nvidia/cuda tags NVIDIA lists for one CUDA release and OS: `{cuda}-{kind}-{os}` for each
/// of `kinds`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CudaImageTagRow {
    pub(crate) cuda: String,
    pub(crate) os: String,
    pub(crate) kinds: Vec<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImagesFile {
    pub(crate) cuda_eol: Vec<EolRow>,
    pub(crate) os_eol: Vec<OsEolRow>,
    pub(crate) required_device: Vec<DeviceRow>,
    pub(crate) arch_name: Vec<ArchNameRow>,
    pub(crate) no_latest_tag: Vec<RepoRow>,
    #[serde(default)]
    pub(crate) image_cuda: Vec<ImageCudaRow>,
    #[serde(default)]
    pub(crate) tensorflow_cuda: Vec<TensorflowCudaRow>,
    #[serde(default)]
    pub(crate) cuda_image_tag: Vec<CudaImageTagRow>,
}
