//! GL009 platform-mismatch: the image's os/arch differs from the target's.

use super::context::ImageContext;
use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL009"),
    name: "platform-mismatch",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "The image's OS/architecture does not match the target's",
    doc: RuleDoc {
        what:
            "The image was built for another CPU architecture or OS than the target nodes (e.g. a \
            linux/arm64 image on x86-64 H100 nodes, or an amd64 image on GH200 / Jetson arm64 \
            nodes).",
        why:
            "Containers run the image's binaries natively; without emulation they fail with `exec \
            format error`, and CUDA is never emulated.",
        example:
            "An image built on an Apple-silicon laptop without `--platform`, checked against an \
            H100 x86-64 node: `image is linux/arm64 but h100 is linux/amd64`.",
        fix: "Build or pull the image for the target platform (`docker buildx build --platform \
            linux/amd64,linux/arm64`, or `--platform` when pulling a multi-platform image).",
        sources: &[
            "https://docs.docker.com/build/building/multi-platform/",
            "https://github.com/opencontainers/image-spec/blob/main/image-index.md",
        ],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let Some(target) = ctx.target else { return };
    let (Some(tp), Some(ip)) = (&target.platform, &ctx.inventory.image.platform) else {
        return;
    };
    if tp.os != ip.os || tp.architecture != ip.architecture {
        out.push(
            META.finding(format!("image is {ip} but the target is {tp}"))
                .with_target(target.name.clone())
                .with_help(format!("build or pull the image for {tp}")),
        );
    }
}
