//! GL000 unreadable-input: part of the input could not be read, so the verdict is partial.
//! No check of its own: the scan reports it (an unreadable layer or file, an image a config
//! names that could not be pulled, a host file `host --check` found but could not read), so
//! it has a code, a name and docs like every other rule.

use crate::finding::{Finding, Location, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::walk::ScanIssue;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL000"),
    name: "unreadable-input",
    default_severity: Severity::Error,
    // A warning under --allow-partial (reported by the image and spec readers and the host
    // doctor).
    other_severities: &[Severity::Warning],
    summary: "Part of the input could not be read; the result is partial",
    doc: RuleDoc {
        what:
            "A layer, a file inside the image, an image that a compose file or manifest names, or \
            a host file that `host --check` found but could not read (no permission, a FIFO or \
            device where a file belongs, past 16 MiB) could not be read (corrupt or truncated \
            archive, unsupported compression, a file over the size limit, an unreachable \
            registry). A host file that is simply absent is evidence, not GL000.",
        why:
            "The rules only see what was read. A CUDA library or a wheel in the unread part is not \
            checked, so the absence of other findings does not mean the image is fine. gpulint \
            therefore fails closed: the finding is an error and the run exits 2.",
        example:
            "A `docker save` archive cut short during a copy: `part of the image could not be \
            read (truncated), the result is partial: layer sha256:3f1c…: unexpected end of gzip \
            stream`.",
        fix:
            "Repair or re-export the image (`docker save` again, re-pull), check the reference and \
            credentials, or raise the limit that was hit; on a host, make the file readable by \
            the user gpulint runs as, or capture it again. `--allow-partial` asks for best \
            effort: GL000 is then a warning and the findings cover only what could be read \
            (on a host, the checks that needed the file say \"could not check\").",
        sources: &[
            "https://github.com/opencontainers/image-spec/blob/main/layer.md",
            "https://github.com/opencontainers/image-spec/blob/main/manifest.md",
        ],
    },
};

/// GL000's findings about images, built here only: `gpulint image` (the image named on the
/// command line) and `scan-images` (an image a run configuration names, placed at that line).
/// A part that could not be read is an error unless `--allow-partial` asked for best effort.
fn partial_severity(allow_partial: bool) -> Severity {
    if allow_partial {
        Severity::Warning
    } else {
        Severity::Error
    }
}

/// The image on the command line could not be opened, or holds no file: always an error.
pub fn image_unreadable(why: &str) -> Finding {
    META.finding(format!("the image could not be read: {why}"))
        .with_help(
            "Check the reference, the path and that the image is complete (re-export \
             or re-pull it); no check ran on it.",
        )
}

/// Part of the image on the command line could not be read, at the layer and in-image path
/// the issue names.
pub fn image_partly_unreadable(e: &ScanIssue, allow_partial: bool) -> Finding {
    let finding = META
        .finding(format!(
            "part of the image could not be read ({}), the result is partial: {e}",
            e.kind
        ))
        .with_severity(partial_severity(allow_partial))
        .with_help(if allow_partial {
            "Best effort (--allow-partial): findings cover only what could be read."
        } else {
            "Re-fetch or re-export the image; pass --allow-partial to judge what could be read."
        });
    if e.layer.is_some() || e.path.is_some() {
        finding.with_location(Location {
            layer: e.layer.clone(),
            path: e.path.clone(),
            ..Default::default()
        })
    } else {
        finding
    }
}

const NAMED_IMAGE_HELP: &str = "Check the reference and that the image is reachable (local \
    daemon, registry credentials, or an archive path); the image checks did not run on it.";

/// An image a run configuration names (at `at`) could not be scanned.
pub fn named_image_unreadable(
    image: &str,
    why: &str,
    at: Location,
    allow_partial: bool,
) -> Finding {
    META.finding(format!("image {image} could not be scanned: {why}"))
        .with_severity(partial_severity(allow_partial))
        .with_location(at)
        .with_help(NAMED_IMAGE_HELP)
}

/// Part of an image a run configuration names (at `at`) could not be read: located at that
/// line, with the layer and in-image path of the issue.
pub fn named_image_partly_unreadable(
    image: &str,
    e: &ScanIssue,
    at: &Location,
    allow_partial: bool,
) -> Finding {
    META.finding(format!(
        "image {image} could not be read completely ({}): {e}",
        e.kind
    ))
    .with_severity(partial_severity(allow_partial))
    .with_location(Location {
        layer: e.layer.clone(),
        path: e.path.clone(),
        ..at.clone()
    })
    .with_help(NAMED_IMAGE_HELP)
}
