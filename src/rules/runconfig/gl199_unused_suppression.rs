//! GL199: a suppression (inline pragma or config `[[ignore]]`) that matched nothing.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL199"),
    name: "unused-suppression",
    default_severity: Severity::Warning,
    other_severities: &[],
    summary: "A `# gpulint ignore=` pragma or [[ignore]] entry suppresses nothing",
    doc: RuleDoc {
        what: "An inline `# gpulint ignore=GLxxx` / `ignore-file=` pragma, or a `[[ignore]]` entry \
            in .gpulint.toml, did not match any finding. A pragma is judged whenever its file is \
            checked; a `[[ignore]]` entry only when the run could have used it: one with `paths` \
            when a checked file lies under them, any entry when `gpulint lint` walked the \
            config's whole directory (from it or a parent). A run over some files only \
            (pre-commit's changed files, `gpulint dockerfile a/Dockerfile`) cannot tell whether \
            an entry meant for other files is stale, so it does not report it. Codes in \
            `ignore = [\"GL118\"]` switch rules off and are never reported, as ruff reports \
            unused `noqa` comments (RUF100) but not its configuration's ignores.",
        why: "Stale suppressions hide future problems on lines that were since fixed or moved, and \
            a misspelled code silently suppresses nothing.",
        example: "`# gpulint ignore=GL110` above a `docker run` line that now has `--gpus all`.",
        fix: "Delete the pragma, or correct its code; a pragma covers the next statement (a whole \
            Dockerfile instruction, a shell command with its continuation lines, a YAML key's \
            block).",
        sources: &[
            "https://github.com/gpulint/gpulint/blob/main/docs/rules/README.md#turning-a-rule-off-or-suppressing-a-finding",
            "https://docs.astral.sh/ruff/rules/unused-noqa/",
        ],
    },
};
