//! GL014 triton-ptxas-too-old: the assembler triton runs to compile its kernels (its bundled
//! `ptxas`, or `ptxas-blackwell` for compute capability 10.0 and newer) comes from a CUDA
//! release that does not know the target GPU's architecture.

use super::context::ImageContext;
use crate::arch::{ArchTarget, ArchVariant, CodeKind, ComputeCapability};
use crate::finding::{Finding, Location, Severity};
use crate::inventory::TritonPtxas;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

/// triton's `knobs.py` (`env_nvidia_tool`: `TRITON_<TOOL>_PATH`, then the bundled file) and
/// its CUDA backend's `get_ptxas` (`ptxas-blackwell` for arch >= 100).
const KNOBS: &str = "https://github.com/triton-lang/triton/blob/main/python/triton/knobs.py";
const COMPILER: &str =
    "https://github.com/triton-lang/triton/blob/main/third_party/nvidia/backend/compiler.py";

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL014"),
    name: "triton-ptxas-too-old",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "triton's bundled ptxas is from a CUDA release that cannot compile for the GPU",
    doc: RuleDoc {
        what: "triton compiles every kernel at run time: it lowers Python to PTX and runs `ptxas \
            --gpu-name=sm_XY` (`sm_XYa` from compute capability 9.0) to get a cubin. The ptxas it \
            runs is `triton/backends/nvidia/bin/ptxas`, or, in releases that ship \
            `ptxas-blackwell` next to it, that one for compute capability 10.0 and newer \
            (`compiler.py` `get_ptxas`: `ptxas_blackwell if arch >= 100`). `TRITON_PTXAS_PATH` \
            (`TRITON_PTXAS_BLACKWELL_PATH` for the Blackwell one) names another ptxas, tried \
            first; the bundled file is the fallback (`knobs.py` `env_nvidia_tool`). gpulint reads \
            the CUDA release from the bundled file's `Cuda compilation tools, release X.Y` banner \
            (the line `ptxas --version` prints, which triton also parses) and looks the GPU's \
            `sm_XY` up in that release's row of `matrices/cuda_arch.toml`.",
        why: "A ptxas older than the GPU's architecture rejects it (`ptxas fatal: Value 'sm_120a' \
            is not defined for option 'gpu-name'`): torch.compile, vLLM, SGLang and every other \
            triton user fail at the first kernel although the image imports fine. A release \
            that cannot be read, a ptxas named by `TRITON_PTXAS_PATH` in the image config, or a \
            release the table does not list, is unknown: a warning, never passed.",
        example: "triton 3.0.0 (bundled ptxas CUDA 12.4) on an RTX 5090: `triton's ptxas is CUDA \
            12.4 (12.4.131), which does not know sm_120 (first in CUDA 12.8): triton fails to \
            compile any kernel for NVIDIA GeForce RTX 5090 (compute capability 12.0)`.",
        fix: "Install a triton release whose bundled ptxas knows the GPU (the one the installed \
            torch pins, when torch supports the GPU), or point `TRITON_PTXAS_PATH` \
            (`TRITON_PTXAS_BLACKWELL_PATH` where triton ships ptxas-blackwell) at the ptxas of a \
            CUDA toolkit that does.",
        sources: &[
            KNOBS,
            COMPILER,
            "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list",
        ],
    },
};

/// The assembler triton runs for `cc` in one triton install, with the variable that would
/// override it.
fn chosen<'a>(
    installs: &[&'a TritonPtxas],
    cc: ComputeCapability,
) -> Option<(&'a TritonPtxas, &'static str)> {
    let find = |tool: &str| installs.iter().copied().find(|t| t.tool == tool);
    match find("ptxas-blackwell") {
        Some(b) if cc.sm() >= 100 => Some((b, "TRITON_PTXAS_BLACKWELL_PATH")),
        _ => find("ptxas").map(|p| (p, "TRITON_PTXAS_PATH")),
    }
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let inv = ctx.inventory;
    // One triton install per `bin/` directory.
    let mut dirs: Vec<_> = inv
        .triton_ptxas
        .iter()
        .filter_map(|t| t.path.parent())
        .collect();
    dirs.dedup();
    for dir in dirs {
        let installs: Vec<&TritonPtxas> = inv
            .triton_ptxas
            .iter()
            .filter(|t| t.path.parent().as_ref() == Some(&dir))
            .collect();
        for cc in target.capabilities() {
            let Some((tool, var)) = chosen(&installs, cc) else {
                continue;
            };
            let gpus: Vec<&str> = target
                .gpus
                .iter()
                .filter(|g| g.cc == Some(cc))
                .map(|g| g.name.as_str())
                .collect();
            let gpu = format!("{} (compute capability {cc})", gpus.join(", "));
            let at = Location::in_image(ctx.layer_digest(Some(tool.layer)), tool.path.clone());
            let warn = |msg: String| {
                META.finding(msg)
                    .with_severity(Severity::Warning)
                    .with_target(target.name.clone())
                    .with_location(at.clone())
            };
            if let Some(over) = inv.image.env.get(var) {
                out.push(warn(format!(
                    "{var}={over} in the image config: triton runs that ptxas for {gpu} (the bundled {} only if it fails to run), whose CUDA release is not known here",
                    tool.tool
                )).with_help(format!("make sure {over} is the ptxas of a CUDA release that knows sm_{}", cc.sm())));
                continue;
            }
            let Some(release) = tool.release else {
                out.push(warn(format!(
                    "triton's {}: its CUDA release is unknown ({}), so whether it can compile kernels for {gpu} is unknown",
                    tool.tool,
                    tool.unread.as_deref().unwrap_or("not read")
                )));
                continue;
            };
            let version = tool
                .version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            let generic = ArchTarget::new(CodeKind::Sass, cc.sm(), ArchVariant::Generic);
            // triton asks for `sm_XYa` from compute capability 9.0 (`sm_arch_from_capability`).
            let asked = if cc.sm() >= 90 {
                ArchTarget::new(CodeKind::Sass, cc.sm(), ArchVariant::ArchSpecific)
            } else {
                generic
            };
            let knows = |t: &ArchTarget| ctx.facts.nvcc_supports(&release, t).map(|s| s.value);
            let (Some(knows_generic), Some(knows_asked)) = (knows(&generic), knows(&asked)) else {
                out.push(warn(format!(
                    "triton's {} is CUDA {release}{version}, a release whose architectures are not in the tables: whether it can compile kernels for {gpu} is unknown",
                    tool.tool
                )));
                continue;
            };
            if knows_generic && knows_asked {
                continue;
            }
            let missing = if knows_generic { asked } else { generic };
            let first = ctx
                .facts
                .matrix()
                .first_cuda_for_sm(cc.sm())
                .map(|c| format!(" (first in CUDA {c})"))
                .unwrap_or_default();
            out.push(
                META.finding(format!(
                    "triton's {} is CUDA {release}{version}, which does not know {missing}{first}: triton fails to compile any kernel for {gpu} (`ptxas fatal: Value '{asked}' is not defined for option 'gpu-name'`)",
                    tool.tool
                ))
                .with_target(target.name.clone())
                .with_location(at)
                .with_help(format!(
                    "install a triton release whose bundled ptxas knows {missing}, or set {var} to the ptxas of a CUDA toolkit that does"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Inventory;
    use crate::rules::image::testutil::{matrix, target, ImagePath};

    const BIN: &str = "opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/bin";

    fn tool(name: &str, release: Option<&str>) -> TritonPtxas {
        TritonPtxas {
            path: ImagePath::new(&format!("{BIN}/{name}")).unwrap(),
            layer: 0,
            tool: name.into(),
            release: release.map(|r| r.parse().unwrap()),
            version: release.map(|r| format!("{r}.99")),
            unread: release.is_none().then(|| "no banner".into()),
        }
    }

    fn run(tools: Vec<TritonPtxas>, gpu: &str, env: &[(&str, &str)]) -> Vec<Finding> {
        let m = matrix();
        let t = target(&m, gpu, "580.65.06");
        let mut inv = Inventory {
            triton_ptxas: tools,
            ..Default::default()
        };
        for (k, v) in env {
            inv.image.env.insert(k.to_string(), v.to_string());
        }
        let ctx = ImageContext {
            inventory: &inv,
            facts: &m,
            target: Some(&t),
        };
        let mut out = Vec::new();
        check(&ctx, &mut out);
        out
    }

    #[test]
    fn old_ptxas_on_a_newer_gpu_is_an_error_naming_the_first_release() {
        let f = run(vec![tool("ptxas", Some("12.4"))], "B200", &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message
                .contains("CUDA 12.4 (12.4.99), which does not know sm_100 (first in CUDA 12.8)"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("'sm_100a'"), "{}", f[0].message);
        // The same ptxas knows Hopper and Ampere: nothing to say.
        assert!(run(vec![tool("ptxas", Some("12.4"))], "H100", &[]).is_empty());
        assert!(run(vec![tool("ptxas", Some("12.4"))], "A100", &[]).is_empty());
        // CUDA 12.8 knows Blackwell.
        assert!(run(vec![tool("ptxas", Some("12.8"))], "B200", &[]).is_empty());
    }

    #[test]
    fn blackwell_gpus_use_ptxas_blackwell_where_it_is_shipped() {
        let both = || {
            vec![
                tool("ptxas", Some("12.4")),
                tool("ptxas-blackwell", Some("12.8")),
            ]
        };
        assert!(run(both(), "B200", &[]).is_empty());
        // For Hopper triton runs the plain one.
        let both_old = vec![
            tool("ptxas", Some("11.8")),
            tool("ptxas-blackwell", Some("12.8")),
        ];
        let f = run(both_old, "H100", &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        // 11.8 knows sm_90 but not sm_90a, which triton asks for.
        assert!(
            f[0].message.contains("does not know sm_90a"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("triton's ptxas "), "{}", f[0].message);
        let old_bw = vec![
            tool("ptxas", Some("12.8")),
            tool("ptxas-blackwell", Some("12.4")),
        ];
        let f = run(old_bw, "B200", &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("triton's ptxas-blackwell "),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains("TRITON_PTXAS_BLACKWELL_PATH")
                || f[0]
                    .help
                    .as_deref()
                    .unwrap_or("")
                    .contains("TRITON_PTXAS_BLACKWELL_PATH")
        );
    }

    #[test]
    fn unknown_is_a_warning_never_ok() {
        // No banner.
        let f = run(vec![tool("ptxas", None)], "A100", &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("release is unknown (no banner)"),
            "{}",
            f[0].message
        );
        // A release the tables do not list.
        let f = run(vec![tool("ptxas", Some("99.1"))], "A100", &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("not in the tables"),
            "{}",
            f[0].message
        );
        // Overridden in the image config: that ptxas is not read.
        let f = run(
            vec![tool("ptxas", Some("12.8"))],
            "B200",
            &[("TRITON_PTXAS_PATH", "/usr/local/cuda/bin/ptxas")],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message
                .starts_with("TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas"),
            "{}",
            f[0].message
        );
        // Without a target nothing is judged.
        let m = matrix();
        let inv = Inventory {
            triton_ptxas: vec![tool("ptxas", Some("12.4"))],
            ..Default::default()
        };
        let mut out = Vec::new();
        check(
            &ImageContext {
                inventory: &inv,
                facts: &m,
                target: None,
            },
            &mut out,
        );
        assert!(out.is_empty());
    }
}
