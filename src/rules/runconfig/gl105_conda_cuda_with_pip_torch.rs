//! GL105: a conda CUDA runtime (cudatoolkit / pytorch-cuda / conda pytorch) next to a pip torch.

use crate::finding::{Finding, Severity};
use crate::fix::suggest::torch::{builds_for, Installed, Pool};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::pkg::Install;
use crate::runconfig::{loc, SpecContext, Subject};

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

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    // The conda CUDA package nearest along each stage's FROM chain, computed once for all
    // stages (walking the chain per stage is quadratic in a long chain).
    let conda_in_chain = bf.nearest_in_chain(|s| {
        s.installs.iter().find_map(|i| match i {
            Install::Conda(c) => c
                .pkgs
                .iter()
                .find(|p| {
                    matches!(
                        p.name.as_str(),
                        "cudatoolkit"
                            | "pytorch-cuda"
                            | "cuda-toolkit"
                            | "cuda-runtime"
                            | "pytorch"
                            | "cuda-version"
                    )
                })
                .map(|p| (p.name.clone(), p.spec.clone())),
            _ => None,
        })
    });
    for st in bf.built_stages() {
        let conda = conda_in_chain.get(st.index).cloned().flatten();
        let Some((cname, cver)) = conda else { continue };
        for i in &st.installs {
            if let Install::Pip(p) = i {
                for r in p.reqs.iter().filter(|r| {
                    r.name == "torch"
                        || r.name.starts_with("nvidia-cudnn")
                        || r.name.starts_with("nvidia-cublas")
                }) {
                    // One stack: pip's torch alone, the build of the same release nearest
                    // conda's CUDA that runs on every target.
                    let conda_cuda = cver
                        .trim_start_matches(['=', '>', '<', '~'])
                        .parse::<crate::version::CudaVersion>()
                        .ok()
                        .filter(|_| cname != "pytorch");
                    let builds = if r.name == "torch" {
                        builds_for(
                            cx.facts,
                            &Pool::of(cx.targets),
                            Installed {
                                version: r.pinned.as_deref(),
                                cuda: conda_cuda,
                            },
                        )
                    } else {
                        Vec::new()
                    };
                    let same_line = builds.first().filter(|b| {
                        r.pinned
                            .as_deref()
                            .and_then(|v| cx.facts.torch_release(v))
                            .is_some_and(|rel| rel.value.version == b.release.version)
                    });
                    let help = match same_line {
                        Some(b) => format!(
                            "install torch and its CUDA libraries with one package manager: drop conda's `{cname}` and {}",
                            b.install_line()
                        ),
                        None => "install torch and its CUDA libraries with one package manager".to_string(),
                    };
                    let mut f = META
                        .finding(format!(
                            "pip installs `{}{}` into an environment where conda installed `{cname}{}`: two CUDA stacks overwrite each other",
                            r.name,
                            r.spec,
                            if cver.is_empty() { String::new() } else { format!("={cver}") }
                        ))
                        .with_location(loc(&bf.file, r.pos))
                        .with_help(help);
                    if let Some(b) = same_line {
                        f = f.with_fix(b.fix());
                    }
                    out.push(f);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::dockerfile;

    #[test]
    fn conda_then_pip() {
        let t = "FROM continuumio/miniconda3\nRUN conda install -y pytorch=2.1.1 pytorch-cuda=12.1 -c pytorch -c nvidia\nRUN pip install torch==2.1.1\n";
        let f = dockerfile(t, "GL105", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(dockerfile("FROM continuumio/miniconda3\nRUN conda install -y numpy\nRUN pip install torch==2.1.1\n", "GL105", vec![]).is_empty());
    }

    /// Every rule on a Dockerfile whose stages each build on the previous one: the work along
    /// FROM chains (stages visited) grows linearly with the chain, not with its square.
    #[test]
    fn long_from_chains_are_walked_in_linear_work() {
        use crate::commands::runconfig::analyze_dockerfile;
        use crate::runconfig::build::{BuildOptions, CHAIN_STEPS};
        use crate::runconfig::testutil;
        let steps = |n: usize| {
            let mut t = String::from(
                "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04 AS s0\nRUN conda install -y pytorch-cuda=12.1 -c nvidia\n",
            );
            for i in 1..n {
                t += &format!(
                    "FROM s{} AS s{i}\nENV NVIDIA_REQUIRE_CUDA=cuda>=12.1\nRUN pip install torch==2.3.0+cu118\n",
                    i - 1
                );
            }
            let c = testutil::ctx(vec![]);
            CHAIN_STEPS.with(|s| s.set(0));
            let f = analyze_dockerfile("Dockerfile", &t, &BuildOptions::default(), &c);
            // The chain is really walked: every stage's pip torch meets the root's conda.
            assert_eq!(f.iter().filter(|f| f.rule == "GL105").count(), n - 1);
            CHAIN_STEPS.with(|s| s.get())
        };
        let (small, big) = (steps(100), steps(400));
        // Quadratic work would be ~16x; a handful of whole-chain walks is ~4x.
        assert!(big <= 5 * small, "{small} -> {big} chain steps");
        assert!(big <= 20 * 400, "{big} chain steps for 400 stages");
    }
}
