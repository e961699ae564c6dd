//! GL241: torchvision / torchaudio on the host built for another torch release or CUDA than
//! the torch next to them: the image rule GL008's judgement, on host site-packages and conda
//! environments.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::python::{find_companions, find_torch_everywhere};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL241"),
    name: "host-torch-companion-mismatch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "torchvision/torchaudio on the host were built for another torch or CUDA than the torch next to them",
    doc: RuleDoc {
        what: "For each torch install on the host (the interpreters on PATH or given with \
            `--python`, and every conda environment), reads the torchvision and torchaudio next \
            to it (`<pkg>/version.py`, else the dist-info name) and judges them as GL008 does an \
            image: the torch release each companion release pairs with \
            (matrices/torch_companions.toml, from the companions' own wheel metadata), and the \
            CUDA variant of its `+cuXYZ` local version against torch's own CUDA \
            (torch/version.py).",
        why: "The companions' C++/CUDA extensions link one exact torch release and CUDA variant; \
            a mismatch fails at import (`undefined symbol`, `operator torchvision::nms does not \
            exist`) or at the first kernel. On a host this happens when one package is upgraded \
            alone, or torchvision comes from PyPI's default index and torch from another.",
        example: "torch 2.11.0+cu130 with torchvision 0.25.0+cu128 in /opt/torch/.venv: \
            `torchvision 0.25.0+cu128 pairs with torch 2.10, but torch 2.11.0+cu130 is installed`.",
        fix: "Install the companion release that pairs with the installed torch from the same \
            index, e.g. `pip install torchvision==0.26.0 --index-url \
            https://download.pytorch.org/whl/cu130`.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix",
            "https://pytorch.org/get-started/previous-versions/",
        ],
    },
};

fn major_minor(v: &str) -> String {
    let base = v.split('+').next().unwrap_or(v);
    base.split('.').take(2).collect::<Vec<_>>().join(".")
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let installs = find_torch_everywhere(cx.reader, &cx.options.pythons);
    let mut judged = 0;
    for t in &installs {
        let companions = find_companions(cx.reader, &t.site_packages);
        if companions.is_empty() {
            continue;
        }
        judged += 1;
        let label = format!("torch {} ({})", t.version, t.site_packages);
        let torch_mm = major_minor(&t.version);
        let mut evidence = t.evidence.clone();
        let mut problems = Vec::new();
        let mut fixes = Vec::new();
        for c in &companions {
            evidence.push(c.evidence.clone());
            if let Some(pair) = cx.facts.torch_companion(&c.name, &c.version) {
                let expected = major_minor(&pair.value);
                evidence.push(Evidence::note(format!(
                    "{} {} pairs with torch {} ({})",
                    c.name, c.version, pair.value, pair.source
                )));
                if expected != torch_mm {
                    problems.push(format!(
                        "{} {} pairs with torch {expected}, but torch {} is installed",
                        c.name, c.version, t.version
                    ));
                    fixes.push(format!(
                        "install the {} release that pairs with torch {torch_mm}",
                        c.name
                    ));
                    continue;
                }
            }
            if let (Some(a), Some(b)) = (c.cuda, t.cuda_version) {
                if !a.same_release(&b) {
                    problems.push(format!(
                        "{} {} is built for CUDA {} but torch {} is built for CUDA {}",
                        c.name,
                        c.version,
                        a.major_minor(),
                        t.version,
                        b.major_minor()
                    ));
                    fixes.push(format!(
                        "install {} from the same index as torch (https://download.pytorch.org/whl/{})",
                        c.name,
                        b.cu_tag()
                    ));
                }
            }
        }
        if problems.is_empty() {
            out.push(
                CheckResult::ok(
                    &META,
                    format!(
                        "{label}: {} match it",
                        companions
                            .iter()
                            .map(|c| format!("{} {}", c.name, c.version))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .evidence(evidence),
            );
        } else {
            let mut fix = fixes.join("; ");
            if let Some(first) = fix.get(..1) {
                fix = format!("{}{}", first.to_uppercase(), &fix[1..]);
            }
            out.push(
                CheckResult::problem(&META, format!("{label}: {}", problems.join("; ")))
                    .evidence(evidence)
                    .fix(format!("{fix}.")),
            );
        }
    }
    if judged == 0 {
        out.push(CheckResult::ok(
            &META,
            if installs.is_empty() {
                "no torch install found".to_string()
            } else {
                "no torchvision or torchaudio next to a torch install".to_string()
            },
        ));
    }
}
