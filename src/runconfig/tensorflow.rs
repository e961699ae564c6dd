//! Which TensorFlow release a pip install pins (`tensorflow-gpu==1.12.0`, `tensorflow==2.4.1`,
//! a `tensorflow_gpu-1.8.0-…whl`), and whether that package has GPU support at all.

use super::build::Stage;
use super::dockerfile::Pos;
use super::pkg::Install;

#[derive(Debug, Clone, PartialEq)]
pub struct TfInstall {
    pub pos: Pos,
    /// As written: `tensorflow-gpu==1.12.0`.
    pub text: String,
    pub major: u32,
    pub minor: u32,
    /// A CPU-only package: `tensorflow-cpu`, or `tensorflow` before 2.1, when GPU support was
    /// the separate `tensorflow-gpu` package.
    pub cpu_only: bool,
}

/// TensorFlow installs of one stage with a pinned release (`==X.Y[.Z]` or a wheel file); an
/// unpinned one resolves at build time, so nothing is said of its CUDA.
pub fn stage_tensorflow(st: &Stage) -> Vec<TfInstall> {
    let mut out = Vec::new();
    for i in &st.installs {
        let Install::Pip(p) = i else { continue };
        for r in p.reqs.iter().filter(|r| !r.unresolved) {
            if !matches!(
                r.name.as_str(),
                "tensorflow" | "tensorflow-gpu" | "tensorflow-cpu"
            ) {
                continue;
            }
            let Some(v) = r.pinned.as_deref() else {
                continue;
            };
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
                continue;
            };
            out.push(TfInstall {
                pos: r.pos,
                text: if r.spec.is_empty() {
                    format!("{}=={v}", r.name)
                } else {
                    format!("{}{}", r.name, r.spec)
                },
                major,
                minor,
                // The TensorFlow 2.1 release notes: "The tensorflow pip package now includes
                // GPU support by default (same as tensorflow-gpu)".
                cpu_only: r.name == "tensorflow-cpu"
                    || (r.name == "tensorflow" && (major, minor) < (2, 1)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Facts;
    use crate::runconfig::build::{analyze, BuildOptions};

    fn tf_of(run: &str) -> Vec<TfInstall> {
        let facts = Facts::embedded().unwrap();
        let bf = analyze(
            "Dockerfile",
            &format!("FROM ubuntu:22.04\n{run}\n"),
            &BuildOptions::default(),
            &facts,
        );
        bf.built_stages().flat_map(stage_tensorflow).collect()
    }

    #[test]
    fn pinned_releases_and_their_packages() {
        let t = tf_of("RUN pip install tensorflow-gpu==1.12.0 'tensorflow==1.15.5' tensorflow_cpu==2.4.0 tensorflow==2.4.1 tensorflow keras==2.3.1");
        let got: Vec<_> = t
            .iter()
            .map(|t| (t.text.as_str(), t.major, t.minor, t.cpu_only))
            .collect();
        assert_eq!(
            got,
            [
                ("tensorflow-gpu==1.12.0", 1, 12, false),
                ("tensorflow==1.15.5", 1, 15, true),
                ("tensorflow-cpu==2.4.0", 2, 4, true),
                ("tensorflow==2.4.1", 2, 4, false),
            ]
        );
        let w = tf_of("RUN pip install https://storage.googleapis.com/tensorflow/linux/gpu/tensorflow_gpu-1.8.0-cp36-cp36m-linux_x86_64.whl");
        assert_eq!(
            (w[0].major, w[0].minor, w[0].cpu_only),
            (1, 8, false),
            "{w:?}"
        );
        assert!(tf_of("RUN pip install tensorflow-gpu==${TF}").is_empty());
    }
}
