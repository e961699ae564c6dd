//! GL000 unreadable-input: part of the input could not be read, so the verdict is partial.
//! No check of its own: the scan reports it (an unreadable layer or file, an image a config
//! names that could not be pulled, a host file `host --check` found but could not read), so
//! it has a code, a name and docs like every other rule.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

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
