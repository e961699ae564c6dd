//! GL015 standalone-device-code: whether the `.cubin` / `.ptx` files a package ships (and
//! picks from at run time) include code for the target GPU. Info only: which file a program
//! loads, and whether it needs one at all on this GPU, is the program's choice.

use super::context::{list, ImageContext};
use crate::arch::{ArchTarget, CodeKind};
use crate::finding::{Finding, Location, Severity};
use crate::inventory::DeviceCodeFiles;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL015"),
    name: "standalone-device-code",
    default_severity: Severity::Info,
    other_severities: &[],
    summary: "Whether a package's standalone cubin/PTX files include code for the GPU",
    doc: RuleDoc {
        what: "Some packages ship device code as separate files that they load themselves with \
            `cuModuleLoad`, choosing one per GPU: flashinfer-cubin's thousands of `.cubin` files, \
            the raw `.ptx` of jax and TensorFlow. The inventory lists them per package (counts \
            and targets: a cubin's SASS target from its ELF header's e_flags, a PTX file's \
            `.target`); for each package and target GPU this rule says, once, whether a cubin \
            runs on the GPU (same major, minor at most the GPU's; `a` variants only on their \
            own) or a PTX file can be JIT-compiled for it (`compute_XY` with XY at most the \
            GPU's).",
        why: "These files are outside every fatbin, so GL001 does not see them; a package \
            without a cubin for the GPU falls back to JIT-compiled kernels or fails, depending \
            on the package. Which file it loads is decided at run time, so this is information, \
            not a verdict.",
        example: "flashinfer-cubin with cubins for sm_90a and sm_100a on an L40S: \
            `flashinfer-cubin 0.4.1 ships 2 standalone cubins [sm_90a, sm_100a] and no PTX \
            files: none runs on NVIDIA L40S (compute capability 8.9)`.",
        fix: "Nothing to fix when the package has another way (JIT, a fallback kernel) for this \
            GPU; otherwise install a build of the package that ships code for it.",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
            "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html",
        ],
    },
};

fn describe(g: &DeviceCodeFiles) -> String {
    let who = match (&g.package, &g.version) {
        (Some(p), Some(v)) => format!("{p} {v}"),
        (Some(p), None) => p.clone(),
        _ => format!("{}", g.location),
    };
    let cubins = match g.cubins {
        0 => "no standalone cubins".to_string(),
        1 => format!("1 standalone cubin [{}]", list(&g.sass)),
        n => format!("{n} standalone cubins [{}]", list(&g.sass)),
    };
    let ptx = match g.ptx_files {
        0 => "no PTX files".to_string(),
        1 => format!("1 PTX file [{}]", list(&g.ptx)),
        n => format!("{n} PTX files [{}]", list(&g.ptx)),
    };
    format!("{who} ships {cubins} and {ptx}")
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    for g in &ctx.inventory.device_code_files {
        let at = Location::in_image(
            ctx.layer_digest(Some(g.layer)),
            match g.package {
                Some(_) => g.location.clone(),
                None => g.example.clone(),
            },
        );
        for gpu in &target.gpus {
            let Some(cc) = gpu.cc else { continue };
            let runs = |ts: &[ArchTarget], kind| -> Vec<ArchTarget> {
                ts.iter()
                    .filter(|t| t.kind == kind && t.runs_on(cc))
                    .copied()
                    .collect()
            };
            let sass = runs(&g.sass, CodeKind::Sass);
            let ptx = runs(&g.ptx, CodeKind::Ptx);
            let verdict = if !sass.is_empty() {
                format!("cubins for [{}] run on it", list(&sass))
            } else if !ptx.is_empty() {
                format!(
                    "no cubin runs on it; PTX [{}] can be JIT-compiled for it",
                    list(&ptx)
                )
            } else {
                "none runs on it".to_string()
            };
            out.push(
                META.finding(format!(
                    "{}: {} (compute capability {cc}): {verdict}",
                    describe(g),
                    gpu.name
                ))
                .with_target(target.name.clone())
                .with_location(at.clone()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Inventory;
    use crate::rules::image::testutil::{matrix, target, ImagePath};

    fn group(sass: &[&str], ptx: &[&str]) -> DeviceCodeFiles {
        DeviceCodeFiles {
            package: Some("flashinfer-cubin".into()),
            version: Some("0.4.1".into()),
            location: ImagePath::new("usr/lib/python3/site-packages").unwrap(),
            cubins: sass.len() * 3,
            sass: sass.iter().map(|s| s.parse().unwrap()).collect(),
            ptx_files: ptx.len(),
            ptx: ptx.iter().map(|s| s.parse().unwrap()).collect(),
            example: ImagePath::new("usr/lib/python3/site-packages/flashinfer_cubin/a.cubin")
                .unwrap(),
            layer: 0,
        }
    }

    fn run(g: DeviceCodeFiles, gpu: &str) -> Vec<Finding> {
        let m = matrix();
        let t = target(&m, gpu, "580.65.06");
        let inv = Inventory {
            device_code_files: vec![g],
            ..Default::default()
        };
        let mut out = Vec::new();
        check(
            &ImageContext {
                inventory: &inv,
                facts: &m,
                target: Some(&t),
            },
            &mut out,
        );
        out
    }

    #[test]
    fn one_info_per_package_saying_whether_the_gpu_is_covered() {
        let f = run(group(&["sm_90a", "sm_100a"], &[]), "H100");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.starts_with(
                "flashinfer-cubin 0.4.1 ships 6 standalone cubins [sm_90a, sm_100a] and no PTX files"
            ),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.ends_with("cubins for [sm_90a] run on it"),
            "{}",
            f[0].message
        );
        // An `a` cubin runs only on its own architecture; sm_80 runs on 8.6.
        let f = run(group(&["sm_90a", "sm_100a"], &[]), "L40S");
        assert!(
            f[0].message.ends_with("none runs on it"),
            "{}",
            f[0].message
        );
        let f = run(group(&["sm_80"], &[]), "A10");
        assert!(
            f[0].message.ends_with("cubins for [sm_80] run on it"),
            "{}",
            f[0].message
        );
        // PTX it can JIT.
        let f = run(group(&["sm_90a"], &["compute_80"]), "L40S");
        assert!(
            f[0].message
                .ends_with("no cubin runs on it; PTX [compute_80] can be JIT-compiled for it"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains("and 1 PTX file [compute_80]"),
            "{}",
            f[0].message
        );
    }
}
