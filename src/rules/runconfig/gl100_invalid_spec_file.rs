//! GL100: a Dockerfile, compose file or manifest that does not parse.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::loc;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL100"),
    name: "invalid-spec-file",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "A Dockerfile, compose file or Kubernetes manifest does not parse",
    doc: RuleDoc {
        what:
            "The file has a syntax error that BuildKit, docker compose or kubectl would reject: an \
            unterminated heredoc, an unknown instruction, an instruction before the first FROM, \
            an invalid parser directive, broken YAML. A template (Helm/Go `{{ .Values.x }}`, \
            Jinja `{{ NAME }}`) is reported once at info instead, with how to render it: its \
            syntax and values are the renderer's input, not what is deployed. So is a Dockerfile \
            with no FROM at all: a fragment that a build script concatenates with others.",
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

/// A template (Helm, Jinja) is reported once, at info, with how to render it, and nothing else
/// in it is judged: its syntax errors and unrendered values are the renderer's input, not what
/// is built or deployed.
pub(crate) fn template_finding(file: &str, at: Pos, render: &str) -> Finding {
    META.finding(format!(
        "this file is a template (a template action starts at line {}): gpulint checks \
             the rendered file, not the template",
        at.line
    ))
    .with_severity(Severity::Info)
    .with_location(loc(file, at))
    .with_help(format!("render it and lint the output: {render}"))
}

/// A Dockerfile with instructions but no FROM anywhere is a fragment of one that a build
/// script assembles by concatenation (nobody builds a file without any FROM), so it is said
/// once at info with how to check it, as a template is; a missing FROM before other stages
/// stays an error.
pub(crate) fn fragment_finding(f: Finding) -> Finding {
    if !f.message.contains(crate::runconfig::build::FRAGMENT) {
        return f;
    }
    f.with_severity(Severity::Info).with_help(
        "concatenate it with the fragments it is assembled from (the one with the FROM first) \
         and lint the result; if it is meant to be built on its own, it needs a FROM",
    )
}

/// Compose files among `files` that are templates: each gets one [`template_finding`] in
/// place of its own findings (`out`, its parse errors among them); their names are returned
/// so their services are not judged either.
pub(crate) fn compose_templates(
    files: &[(String, std::path::PathBuf)],
    out: &mut Vec<Finding>,
    errors: &[(String, crate::runconfig::build::SpecError)],
) -> Vec<String> {
    files
        .iter()
        .filter_map(|(d, p)| {
            let text =
                crate::io_util::read_regular_string(p, crate::io_util::MAX_CONFIG_FILE).ok()?;
            let parses = !errors.iter().any(|(f, _)| f == d);
            let at = crate::runconfig::template::yaml_action(&text, parses)?;
            out.retain(|f| f.location.as_ref().and_then(|l| l.file.as_deref()) != Some(d));
            out.push(template_finding(
                d,
                at,
                "fill in the template, then `gpulint compose <rendered file>`",
            ));
            Some(d.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::commands::runconfig::{analyze_dockerfile, CommandContext};
    use crate::runconfig::build::BuildOptions;

    /// A file with no FROM anywhere is a fragment: one info saying how to check it; a RUN
    /// before the first FROM of a file that has one is still an error.
    #[test]
    fn a_fragment_is_said_at_info_a_missing_first_from_is_an_error() {
        let ctx = CommandContext::new(
            vec![],
            Default::default(),
            crate::matrix::Matrix::embedded().unwrap(),
        )
        .unwrap();
        let gl100 = |text: &str| -> Vec<crate::finding::Finding> {
            analyze_dockerfile("Dockerfile", text, &BuildOptions::default(), &ctx)
                .into_iter()
                .filter(|f| f.rule == "GL100")
                .collect()
        };
        let f = gl100("LABEL a=b\nRUN pip install x\nUSER 1000\n");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
        assert!(
            f[0].help.as_deref().unwrap_or("").contains("concatenate"),
            "{f:?}"
        );
        let f = gl100("RUN pip install x\nFROM ubuntu:22.04\n");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
    }

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

    /// A Helm template is one info finding saying so, not a GL100 error per `{{ }}` (nor
    /// findings about its unrendered values); a broken manifest that is no template still
    /// gets its errors.
    #[test]
    fn templates_are_said_once_at_info() {
        let ctx = CommandContext::new(
            vec![],
            Default::default(),
            crate::matrix::Matrix::embedded().unwrap(),
        )
        .unwrap();
        let helm = "kind: Deployment\napiVersion: apps/v1\nspec:\n  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n      - name: x\n        image: {{ .Values.image }}\n        resources:\n          limits:\n            nvidia.com/gpu: {{ .Values.gpus }}\n";
        let f = crate::commands::runconfig::k8s_findings("deploy.yaml", helm, &ctx);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule, "GL100");
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        assert!(f[0].help.as_deref().unwrap_or("").contains("helm template"));
        // Quoted actions parse as YAML, but the image named is still the template's.
        let quoted = "kind: Pod\napiVersion: v1\nspec:\n  containers:\n  - name: x\n    image: \"{{ .Values.image }}\"\n";
        let f = crate::commands::runconfig::k8s_findings("pod.yaml", quoted, &ctx);
        assert_eq!(
            f.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(),
            ["GL100"]
        );
        let broken = "kind: Pod\nspec: [\n";
        let f = crate::commands::runconfig::k8s_findings("pod.yaml", broken, &ctx);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
        let f = analyze_dockerfile(
            "Dockerfile",
            "FROM {{ SRC_IMAGE }}\nUSER 0\n",
            &BuildOptions::default(),
            &ctx,
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
    }
}
