//! Hidden debug tool for `ci/corpus.sh` (not part of the CLI):
//!
//! - `spec_dump parse FILE…`: our Dockerfile parse as JSON (one object per file), to compare
//!   with BuildKit's parser.
//! - `spec_dump lint [--cc 7.5,8.0,…] KIND:FILE…`: findings as JSON lines, KIND one of
//!   dockerfile, compose, k8s, script, markdown (or `auto`).

use gpulint::commands::lint::{self, FileKind};
use gpulint::commands::runconfig::CommandContext;
use gpulint::runconfig;
use std::path::Path;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("parse") => {
            for f in &args[1..] {
                let text = String::from_utf8_lossy(&std::fs::read(f)?).into_owned();
                let mut v = runconfig::dump_dockerfile_json(&text);
                v["file"] = serde_json::Value::String(f.clone());
                println!("{}", serde_json::to_string(&v)?);
            }
        }
        Some("lint") => {
            let mut rest = &args[1..];
            let mut targets = Vec::new();
            if rest.first().map(String::as_str) == Some("--cc") {
                let ccs = rest.get(1).cloned().unwrap_or_default();
                targets.push(gpulint::gpu_target::Target {
                    name: format!("fleet {ccs}"),
                    driver: None,
                    driver_cuda: None,
                    gpus: ccs
                        .split(',')
                        .filter_map(|c| c.parse().ok())
                        .map(|cc: gpulint::arch::ComputeCapability| {
                            gpulint::gpu_target::TargetGpu {
                                name: format!("sm_{}", cc.sm()),
                                cc: Some(cc),
                                datacenter: None,
                                uuid: None,
                                mig_mode: None,
                                count: Some(1),
                            }
                        })
                        .collect(),
                    platform: None,
                });
                rest = &rest[2..];
            }
            let ctx = CommandContext::new(
                targets,
                Default::default(),
                gpulint::matrix::Matrix::embedded()?,
            )?;
            for a in rest {
                let (kind, file) = a.split_once(':').unwrap_or(("auto", a));
                let p = Path::new(file);
                let kind = match kind {
                    "dockerfile" => Some(FileKind::Dockerfile),
                    "compose" => Some(FileKind::Compose),
                    "k8s" => Some(FileKind::K8s),
                    "script" => Some(FileKind::Script),
                    "markdown" => Some(FileKind::Markdown),
                    _ => lint::classify(p, std::fs::read_to_string(p).ok().as_deref()),
                };
                let Some(kind) = kind else { continue };
                let found = lint::lint_file(p, file, kind, &ctx)?;
                // The CLI's post-pass (pragmas, config, repeats merged), as `gpulint lint` runs it.
                let text = gpulint::suppress::FileText {
                    display: file.to_string(),
                    text: std::fs::read_to_string(p).unwrap_or_default(),
                    statements: None,
                    original: None,
                };
                let locate = |shown: &str| ctx.cwd.join(shown);
                for f in
                    gpulint::suppress::apply(found, &[text], &[], &ctx.config, &ctx.cwd, &locate)
                {
                    println!("{}", serde_json::to_string(&f)?);
                }
            }
        }
        _ => anyhow::bail!("usage: spec_dump parse FILE… | spec_dump lint [--cc LIST] KIND:FILE…"),
    }
    Ok(())
}
