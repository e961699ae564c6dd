//! GL105: a conda CUDA runtime (cudatoolkit / pytorch-cuda / conda pytorch) next to a pip torch.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::spec::pkg::Install;
use crate::spec::{loc, RuleCtx, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL105"),
    name: "conda-cuda-with-pip-torch",
    default_severity: Severity::Warning,
    other_severities: &[],
    summary: "conda's CUDA (cudatoolkit / pytorch-cuda) and a pip-installed torch in one image",
    doc: RuleDoc {
        what: "The image installs CUDA or PyTorch with conda (cudatoolkit=, pytorch-cuda=, pytorch) \
            and also `pip install torch`.",
        why: "Pip's torch brings its own nvidia-*-cu12 wheels; conda's brings cudatoolkit / cuda-* \
            packages. Both land in one environment, overwrite each other's files, and which \
            libcudnn/libcublas gets loaded depends on RPATH versus conda's lib order — a classic \
            source of `undefined symbol` and `CUDNN_STATUS_NOT_INITIALIZED` errors.",
        example: "`conda install pytorch=2.1.1 pytorch-cuda=12.1 -c pytorch -c nvidia` then `pip \
            install torch==2.1.1`.",
        fix: "Install torch and its CUDA with one tool only.",
        sources: &[
            "https://docs.conda.io/projects/conda/en/latest/user-guide/tasks/manage-environments.html#using-pip-in-an-environment",
            "https://pytorch.org/get-started/previous-versions/",
        ],
    },
};

pub fn check(s: &Subject, _cx: &RuleCtx) -> Vec<Finding> {
    let Subject::Dockerfile(bf) = s else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for st in bf.built_stages() {
        let chain = bf.chain(st.index);
        let conda = chain
            .iter()
            .flat_map(|s| &s.installs)
            .find_map(|i| match i {
                Install::Conda(c) => c
                    .pkgs
                    .iter()
                    .find(|p| {
                        matches!(
                            p.0.as_str(),
                            "cudatoolkit"
                                | "pytorch-cuda"
                                | "cuda-toolkit"
                                | "cuda-runtime"
                                | "pytorch"
                                | "cuda-version"
                        )
                    })
                    .map(|p| (p.0.clone(), p.1.clone())),
                _ => None,
            });
        let Some((cname, cver)) = conda else { continue };
        for i in &st.installs {
            if let Install::Pip(p) = i {
                for r in p.reqs.iter().filter(|r| {
                    r.name == "torch"
                        || r.name.starts_with("nvidia-cudnn")
                        || r.name.starts_with("nvidia-cublas")
                }) {
                    out.push(
                        META.finding(format!(
                            "pip installs `{}{}` into an environment where conda installed `{cname}{}`: two CUDA stacks overwrite each other",
                            r.name,
                            r.spec,
                            if cver.is_empty() { String::new() } else { format!("={cver}") }
                        ))
                        .with_location(loc(&bf.file, r.pos))
                        .with_help("install torch and its CUDA libraries with one package manager"),
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::spec::testutil::dockerfile;

    #[test]
    fn conda_then_pip() {
        let t = "FROM continuumio/miniconda3\nRUN conda install -y pytorch=2.1.1 pytorch-cuda=12.1 -c pytorch -c nvidia\nRUN pip install torch==2.1.1\n";
        let f = dockerfile(t, "GL105", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(dockerfile("FROM continuumio/miniconda3\nRUN conda install -y numpy\nRUN pip install torch==2.1.1\n", "GL105", vec![]).is_empty());
    }
}
