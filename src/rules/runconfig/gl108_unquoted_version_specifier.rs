//! GL108: `pip install x>=1` unquoted: the shell turns `>` into a redirect.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::pkg::unquoted_specifiers;
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL108"),
    name: "unquoted-version-specifier",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "An unquoted `>` / `<` version specifier in pip/conda install is a shell redirect",
    doc: RuleDoc {
        what: "`pip install numba>=0.57.1` without quotes.",
        why:
            "The shell reads `>=0.57.1` as \"redirect stdout to the file `=0.57.1`\": pip installs \
            numba unconstrained (whatever is newest, possibly needing another torch/CUDA), the \
            build succeeds, and a stray file appears. With `<` the build fails on a missing file.",
        example: "`RUN pip install torch>=2.1 numba>=0.57.1`.",
        fix: "Quote the requirement: `pip install 'numba>=0.57.1'`.",
        sources: &[
            "https://www.gnu.org/software/bash/manual/html_node/Redirections.html",
            "https://pip.pypa.io/en/stable/reference/requirement-specifiers/",
        ],
    },
};

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    for st in bf.built_stages() {
        for c in &st.cmds {
            for (pkg, spec, pos) in unquoted_specifiers(c) {
                out.push(
                    META.finding(format!(
                        "`{pkg}{spec}` is not quoted: the shell redirects to a file named `{}` and installs `{pkg}` without the constraint",
                        spec.trim_start_matches(['>', '<'])
                    ))
                    .with_location(loc(&bf.file, pos))
                    .with_help(format!("quote it: '{pkg}{spec}'")),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::dockerfile;

    #[test]
    fn redirect() {
        let f = dockerfile("FROM python:3\nRUN pip install numba>=0.57.1 'scipy>=1' && \\\n  pip install torch<2.2\n", "GL108", vec![]);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert_eq!(f[0].location.as_ref().unwrap().column, Some(22));
        assert_eq!(f[1].location.as_ref().unwrap().line, Some(3));
    }
}
