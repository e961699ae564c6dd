//! GL004 driver-libs-in-image: user-space driver libraries baked into the image.

use super::context::ImageContext;
use crate::finding::{Finding, Location, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL004"),
    name: "driver-libs-in-image",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "NVIDIA driver libraries (libcuda, libnvidia-ml, …) are baked into the image",
    doc: RuleDoc {
        what: "The image contains user-space driver libraries such as libcuda.so.1 or \
            libnvidia-ml.so.1 outside `stubs/` and the cuda-compat directory.",
        why:
            "The driver's user-space half must match the host's kernel module exactly. The NVIDIA \
            Container Toolkit injects the host's libraries at start; copies in the image can \
            shadow them (depending on the loader path order), giving `CUDA driver version is \
            insufficient`, `Failed to initialize NVML: Driver/library version mismatch` or NVML \
            `Unknown Error`. They usually come from installing `nvidia-driver-*`, \
            `libnvidia-compute-*` or `cuda` (the meta-package pulls in the driver) in a \
            Dockerfile.",
        example: "`RUN apt-get install -y cuda` (the meta-package pulls in `cuda-drivers`) leaves \
            /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 in the image; against a node with \
            driver 570.133.20: `driver library /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 \
            (550.54.15) is baked into the image; the target runs driver 570.133.20`.",
        fix: "Do not install driver packages in images; install `cuda-toolkit-X-Y` / \
            `cuda-libraries` instead of `cuda`, or delete the files. For link-time needs use \
            `lib64/stubs/libcuda.so`.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/index.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
        ],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let target_driver = ctx.target.and_then(|t| t.driver.clone());
    for lib in &ctx.inventory.driver_libraries {
        let version = lib.version.as_ref();
        let mut sev = Severity::Error;
        // The library is the finding's location: the message does not name it again.
        let mut msg = format!(
            "a driver library ({}) is baked into the image",
            lib.version
                .as_ref()
                .map_or("version unknown", |v| v.as_str())
        );
        if let (Some(v), Some(d)) = (&version, &target_driver) {
            if *v == d {
                // Same version as the host: harmless today, breaks at the next driver update.
                sev = Severity::Warning;
                msg.push_str(&format!("; it matches the target driver {d} now but breaks when the node's driver changes"));
            } else {
                msg.push_str(&format!("; the target runs driver {d}"));
            }
        }
        let mut f = META
            .finding(msg)
            .with_severity(sev)
            .with_location(Location::in_image(ctx.layer_digest(lib.layer), lib.path.clone()))
            .with_help("remove driver packages (nvidia-driver-*, libnvidia-compute-*, the `cuda` meta-package) from the image; the NVIDIA Container Toolkit injects the host's driver libraries");
        if let Some(t) = ctx.target {
            f = f.with_target(t.name.clone());
        }
        out.push(f);
    }
}
