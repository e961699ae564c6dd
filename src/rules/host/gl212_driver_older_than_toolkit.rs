//! GL212: the driver supports an older CUDA than an installed toolkit.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::HostCommand;
use crate::host::toolkits::{nvcc_release, toolkits};
use crate::matrix::{inferred_note, Basis};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::CudaVersion;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL212"),
    name: "driver-older-than-toolkit",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "An installed CUDA toolkit is newer than the CUDA version the driver supports",
    doc: RuleDoc {
        what: "Compares each installed toolkit (/usr/local/cuda-X.Y, `nvcc --version`) with the CUDA \
            version the driver supports (nvidia-smi \"CUDA Version\", or the driver matrix).",
        why: "A newer CUDA major than the driver's never works (\"CUDA driver version is \
            insufficient for CUDA runtime version\"). Within the same major, minor-version \
            compatibility lets most programs run, but PTX built by the newer toolkit cannot be \
            JIT-compiled (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and newer APIs fail.",
        example: "CUDA toolkit 12.8 installed from the runfile on a host whose driver 535.183.01 \
            supports CUDA 12.2: `CUDA toolkit 12.8 is newer than the driver's CUDA 12.2: runs \
            under minor-version compatibility, but PTX JIT and newer APIs fail (CUDA 12.8 needs \
            driver >= 570.26)`.",
        fix: "Upgrade the driver to one that supports the toolkit (see the toolkit release notes' \
            driver table), or use a toolkit no newer than the driver's CUDA version.",
        sources: &[
            "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html#cuda-driver",
            "https://docs.nvidia.com/deploy/cuda-compatibility/",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    // `out` may hold other checks' results: only this check's own count.
    let before = out.len();
    let r = cx.reader;
    // Every toolkit with a stated version counts as evidence, typed or not.
    let mut versions: Vec<(Option<CudaVersion>, Evidence)> = toolkits(r)
        .into_iter()
        .filter(|t| t.version.is_some())
        .map(|t| (t.cuda, t.evidence))
        .collect();
    if let Some((n, cuda)) = nvcc_release(r) {
        versions.push((
            cuda,
            Evidence::command(HostCommand::NvccVersion.display(), format!("release {n}")),
        ));
    }
    if versions.is_empty() {
        out.push(CheckResult::ok(&META, "no CUDA toolkit installed"));
        return;
    }
    let mut evidence: Vec<Evidence> = versions.iter().map(|(_, e)| e.clone()).collect();
    let Some(dc) = cx.driver_cuda() else {
        out.push(CheckResult::could_not(
            &META,
            "the CUDA version the driver supports is unknown (no nvidia-smi, and no driver matrix entry)",
        )
        .evidence(evidence));
        return;
    };
    let sup = dc.cuda;
    evidence.extend(dc.evidence.clone());
    evidence.push(Evidence::note(format!(
        "driver {}: supports CUDA {sup}",
        dc.driver
            .as_ref()
            .map(|d| d.to_string())
            .unwrap_or_else(|| "?".into())
    )));
    let mut seen = Vec::new();
    for (v, _) in &versions {
        let Some(cv) = *v else {
            continue;
        };
        let mm = CudaVersion::new(cv.major, cv.minor);
        if seen.contains(&mm) {
            continue;
        }
        seen.push(mm);
        if mm <= CudaVersion::new(sup.major, sup.minor) {
            continue;
        }
        let need = cx
            .facts
            .cuda_min_driver(mm)
            .map(|d| {
                let inferred = if d.basis == Basis::Inferred {
                    inferred_note("GL212", &format!("CUDA {mm} -> driver {}", d.value))
                } else {
                    String::new()
                };
                format!(" (CUDA {mm} needs driver >= {}{inferred})", d.value)
            })
            .unwrap_or_default();
        if cv.major > sup.major {
            out.push(
                CheckResult::problem(&META, format!("CUDA toolkit {mm} is a newer major than the driver's CUDA {sup}: its programs fail with \"CUDA driver version is insufficient\"{need}"))
                    .evidence(evidence.clone())
                    .fix("Upgrade the NVIDIA driver to one that supports this CUDA major, or use a toolkit of the driver's CUDA major."),
            );
        } else {
            out.push(
                CheckResult::problem(&META, format!("CUDA toolkit {mm} is newer than the driver's CUDA {sup}: runs under minor-version compatibility, but PTX JIT and newer APIs fail{need}"))
                    .severity(Severity::Warning)
                    .evidence(evidence.clone())
                    .fix("Upgrade the driver, or build with a toolkit no newer than the driver's CUDA version (and ship SASS for your GPUs)."),
            );
        }
    }
    if out.len() == before {
        out.push(
            CheckResult::ok(
                &META,
                format!("every installed toolkit is within the driver's CUDA {sup}"),
            )
            .evidence(evidence),
        );
    }
}
