//! Dockerfiles and run configurations → facts with file:line:col, the input of the GL1xx rules.
//!
//! Parsers: [`dockerfile`] (BuildKit-faithful syntax) → [`build`] (stages, ARG/ENV, RUN read
//! as shell by [`shell`], installs by [`pkg`], base images by [`image`]); [`runspec`]
//! (`docker run` lines in scripts and Markdown), [`compose`], [`k8s`] → [`runspec::RunSpec`].
//! Facts about CUDA, drivers and torch come through [`Facts`](crate::matrix::Facts). What the rules see is a
//! [`SpecContext`] holding a [`Subject`]; running the rules over files and reporting them is the
//! commands' job (`crate::commands::runconfig`, `crate::commands::lint`).

pub mod bake;
pub mod build;
pub mod compile;
pub mod compose;
pub mod dockerfile;
pub mod expand;
pub mod image;
pub mod k8s;
pub mod pkg;
pub mod runspec;
pub mod shell;
pub mod template;
pub mod tensorflow;
pub mod torch;
pub mod yamlloc;

use crate::finding::Location;
use crate::gpu_target::Target;
use crate::matrix::Facts;
use build::BuildFacts;
use dockerfile::Pos;
use runspec::RunSpec;

/// Input for the GL1xx checks.
pub enum Subject<'a> {
    Dockerfile(&'a BuildFacts),
    Runs(&'a [RunSpec]),
    /// A script's (or Markdown file's) own lines, besides the container starts in it, which
    /// are judged as [`Subject::Runs`].
    Script(&'a Script<'a>),
}

/// A shell script or Markdown document as a check sees it.
pub struct Script<'a> {
    /// As reports show it.
    pub file: &'a str,
    pub text: &'a str,
    /// Markdown: only its shell code blocks are commands.
    pub markdown: bool,
    /// The container starts found in it.
    pub runs: &'a [RunSpec],
}

/// What a check sees: its subject, the targets and the compatibility facts.
pub struct SpecContext<'a> {
    pub subject: Subject<'a>,
    pub targets: &'a [Target],
    pub facts: &'a Facts,
}

pub fn loc(file: &str, p: Pos) -> Location {
    Location::in_file(file, p.line.max(1), p.col.max(1))
}

/// Debug view of a Dockerfile parse (for `ci/corpus.sh`'s BuildKit comparison):
/// `[{"cmd", "start_line", "end_line", "json", "flags", "value"}]`.
pub fn dump_dockerfile_json(text: &str) -> serde_json::Value {
    let df = dockerfile::parse(text);
    let ins: Vec<serde_json::Value> = df
        .instructions
        .iter()
        .map(|i| {
            serde_json::json!({
                "cmd": i.cmd,
                "start_line": i.start_line,
                "end_line": i.end_line,
                "json": i.json.is_some(),
                "flags": i.flags.iter().map(|f| match &f.value {
                    Some(v) => format!("--{}={}", f.name, v),
                    None => format!("--{}", f.name),
                }).collect::<Vec<_>>(),
                "heredocs": i.heredocs.iter().map(|h| h.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "instructions": ins,
        "errors": df.errors,
        "directives": df.directives.iter().map(|d| (d.0.clone(), d.1.clone())).collect::<Vec<_>>(),
    })
}

/// Helpers for rule tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::commands::runconfig::{analyze_dockerfile, resolved, run_checks, CommandContext};
    use crate::config::Config;
    use crate::finding::Finding;
    use crate::gpu_target::TargetGpu;
    use build::BuildOptions;
    use std::path::Path;

    pub(crate) fn ctx(targets: Vec<Target>) -> CommandContext {
        CommandContext::new(
            targets,
            Config::default(),
            crate::matrix::Matrix::embedded().unwrap(),
        )
        .unwrap()
    }

    /// A target with GPUs given by compute capability (`"9.0"`), one each.
    pub(crate) fn target(name: &str, ccs: &[&str], driver: Option<&str>) -> Target {
        Target {
            name: name.into(),
            driver: driver.map(|d| d.parse().unwrap()),
            driver_cuda: None,
            gpus: ccs
                .iter()
                .map(|c| TargetGpu {
                    name: format!("sm {c}"),
                    cc: Some(c.parse().unwrap()),
                    datacenter: Some(true),
                    uuid: None,
                    mig_mode: None,
                    count: Some(1),
                })
                .collect(),
            platform: None,
        }
    }

    pub(crate) fn dockerfile(text: &str, rule: &str, targets: Vec<Target>) -> Vec<Finding> {
        let c = ctx(targets);
        analyze_dockerfile("Dockerfile", text, &BuildOptions::default(), &c)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }

    /// `kind`: "sh", "md", "compose", "k8s".
    pub(crate) fn runs(kind: &str, text: &str, rule: &str, targets: Vec<Target>) -> Vec<Finding> {
        crate::finding::merge_repeats(run_findings(kind, text, targets))
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }

    /// Every rule's findings on the run specs of `text`, before the post-pass.
    pub(crate) fn run_findings(kind: &str, text: &str, targets: Vec<Target>) -> Vec<Finding> {
        let c = ctx(targets);
        let specs = match kind {
            "sh" => runspec::scan_script("run.sh", text, false),
            "md" => runspec::scan_script("README.md", text, true),
            "k8s" => k8s::parse("pod.yaml", text).0,
            _ => {
                let vars = shell::Vars::new();
                let cf =
                    compose::parse_file("compose.yaml", Path::new("compose.yaml"), text, &vars)
                        .unwrap();
                compose::specs_from(&[cf], Path::new("."), &vars, &|_, _| None)
            }
        };
        run_checks(Subject::Runs(&resolved(specs, &c)), &c)
    }
}
