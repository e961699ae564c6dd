//! GL198: an entry of the `--baseline` file that matches no finding any more.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL198"),
    name: "stale-baseline-entry",
    default_severity: Severity::Warning,
    other_severities: &[],
    summary: "A --baseline entry matches no finding any more",
    doc: RuleDoc {
        what: "The baseline file given with `--baseline FILE` records a finding (by its \
            fingerprint: rule, target, file or image, message) that this run, over the same files \
            and rules, no longer reports.",
        why: "The problem was fixed, or its message changed. A stale entry would silently hide \
            the same problem if it came back, and a baseline that only grows stops telling how \
            much old debt is left.",
        example: "`gpulint lint --baseline .gpulint-baseline.json` after the unquoted \
            `pip install numba>=0.57.1` recorded in the baseline was quoted.",
        fix: "Remove the entry from the baseline file, or rewrite the file with \
            `gpulint lint --write-baseline FILE` (which records the findings of today only).",
        sources: &[
            "https://github.com/gpulint/gpulint/blob/main/README.md#adopting-gpulint-on-an-existing-repository",
            "https://detekt.dev/docs/introduction/baseline/",
        ],
    },
};
