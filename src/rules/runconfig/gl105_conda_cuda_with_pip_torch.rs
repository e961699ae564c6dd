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
                .find(|p| conda_cuda(&p.name))
                .map(|p| (p.name.clone(), p.spec.clone())),
            _ => None,
        })
    });
    for st in bf.built_stages() {
        let conda = conda_in_chain.get(st.index).cloned().flatten();
        let Some((cname, cver)) = conda else { continue };
        for i in &st.installs {
            if let Install::Pip(p) = i {
                for r in p.reqs.iter().filter(|r| pip_cuda(&r.name)) {
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
    out.extend(conda_after_pip(bf, &bf.file));
}

/// A conda package that is (or brings) a CUDA toolkit or runtime: `cudatoolkit`,
/// `pytorch-cuda`, `pytorch`, and the NVIDIA channel's split components (`cuda-nvcc`,
/// `cuda-cudart`, `cuda-toolkit`, …).
fn conda_cuda(name: &str) -> bool {
    matches!(
        name,
        "cudatoolkit" | "pytorch-cuda" | "pytorch" | "cudnn" | "nccl"
    ) || name.starts_with("cuda-") && name != "cuda-python"
}

/// A pip package that brings CUDA libraries: torch, NVIDIA's `nvidia-*-cu12` wheels.
fn pip_cuda(name: &str) -> bool {
    name == "torch"
        || name.starts_with("nvidia-")
            && (name.contains("-cu1")
                || name.starts_with("nvidia-cud")
                || name.starts_with("nvidia-cub"))
}

/// The other order: conda adds CUDA to an environment where pip already installed CUDA
/// wheels (in this stage or one it builds on). Reported at the conda package; a stage whose
/// chain had conda CUDA before its pip install is reported by the pip side already.
pub(crate) fn conda_after_pip(
    bf: &crate::runconfig::build::BuildFacts,
    file: &str,
) -> Vec<Finding> {
    // The first pip CUDA package of each stage or, failing that, of its nearest ancestor
    // with one: once for all stages (a chain walk per stage is quadratic in a long chain).
    let pip_in_chain = bf.nearest_in_chain(|s| {
        s.installs.iter().find_map(|i| match i {
            Install::Pip(p) => p
                .reqs
                .iter()
                .find(|r| pip_cuda(&r.name))
                .map(|r| format!("{}{}", r.name, r.spec)),
            _ => None,
        })
    });
    let mut out = Vec::new();
    for st in bf.built_stages() {
        // pip CUDA in an ancestor stage, none in this one (that the pip side reports).
        let pip_here = st.installs.iter().any(|i| match i {
            Install::Pip(p) => p.reqs.iter().any(|r| pip_cuda(&r.name)),
            _ => false,
        });
        let Some(pip) = st
            .parent
            .and_then(|p| pip_in_chain.get(p).cloned().flatten())
            .filter(|_| !pip_here)
        else {
            continue;
        };
        for i in &st.installs {
            let Install::Conda(c) = i else { continue };
            let Some(pkg) = c.pkgs.iter().find(|p| conda_cuda(&p.name)) else {
                continue;
            };
            out.push(
                META.finding(format!(
                    "conda installs `{}{}` into an environment where pip installed `{pip}`: two CUDA stacks overwrite each other",
                    pkg.name,
                    if pkg.spec.is_empty() { String::new() } else { format!("={}", pkg.spec.trim_start_matches('=')) }
                ))
                .with_location(loc(file, pkg.pos))
                .with_help("install torch and its CUDA libraries with one package manager"),
            );
        }
    }
    out
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

    /// conda CUDA (the NVIDIA channel's split `cuda-nvcc` too) after pip's CUDA wheels is the
    /// same mix, reported at the conda package; conda first is reported once, at pip.
    #[test]
    fn pip_then_conda() {
        let t = "FROM jupyter/base-notebook\nRUN pip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu128\nRUN mamba install -c nvidia cuda-nvcc=12.9.86 -y\n";
        let f = dockerfile(t, "GL105", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(f[0].message.contains("cuda-nvcc"), "{}", f[0].message);
        // Across stages: conda in the stage built on the one pip filled.
        let t = "FROM jupyter/base-notebook AS py\nRUN pip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu128\nFROM py\nRUN mamba install -c nvidia cuda-nvcc=12.9.86 -y\n";
        let f = dockerfile(t, "GL105", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        let t = "FROM continuumio/miniconda3\nRUN conda install -y cuda-nvcc=12.4 -c nvidia\nRUN pip install nvidia-cudnn-cu12==9.1.0.70\n";
        let f = dockerfile(t, "GL105", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(dockerfile("FROM continuumio/miniconda3\nRUN pip install nvidia-ml-py\nRUN conda install -y cuda-python\n", "GL105", vec![]).is_empty());
    }
}
