//! GL100: a Dockerfile, compose file or manifest that does not parse.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL100"),
    name: "invalid-spec-file",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "A Dockerfile, compose file or Kubernetes manifest does not parse",
    doc: RuleDoc {
        what:
            "The file has a syntax error that BuildKit, docker compose or kubectl would reject: an \
            unterminated heredoc, an unknown instruction, an instruction before the first FROM, \
            an invalid parser directive, broken YAML.",
        why: "The build or deployment fails before any GPU question arises, and gpulint cannot \
            check what it cannot read (the rest of the file is still checked where possible).",
        example: "`RUN <<EOF` without a closing `EOF` line.",
        fix: "Correct the syntax at the reported line.",
        sources: &[
            "https://docs.docker.com/reference/dockerfile/",
            "https://docs.docker.com/reference/compose-file/",
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/",
        ],
    },
};

#[cfg(test)]
mod tests {
    use crate::commands::runconfig::{analyze_dockerfile, CommandContext};
    use crate::runconfig::build::BuildOptions;

    #[test]
    fn located_parse_errors() {
        let ctx = CommandContext::new(
            vec![],
            Default::default(),
            crate::matrix::Matrix::embedded().unwrap(),
        )
        .unwrap();
        let f = analyze_dockerfile(
            "Dockerfile",
            "FROM x\nRUN <<EOF\necho\n",
            &BuildOptions::default(),
            &ctx,
        );
        let e: Vec<_> = f.iter().filter(|f| f.rule == "GL100").collect();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].location.as_ref().unwrap().line, Some(2));
    }
}
