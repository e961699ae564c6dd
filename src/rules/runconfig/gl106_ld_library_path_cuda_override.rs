//! GL106: LD_LIBRARY_PATH pointing at CUDA stubs, forward-compat libs, another CUDA, or
//! replacing the base image's driver paths.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::image::ImageKind;
use crate::runconfig::{loc, SpecContext, Subject};
use crate::version::CudaVersion;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL106"),
    name: "ld-library-path-cuda-override",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Error, Severity::Info],
    summary: "LD_LIBRARY_PATH points at CUDA stubs, compat libraries, another CUDA, or drops the driver path",
    doc: RuleDoc {
        what: "LD_LIBRARY_PATH (ENV, a RUN export or `$(…)`, a run configuration's environment, \
            or a script's `export`: an entrypoint, an in-container step) contains `…/stubs`, \
            `…/compat`, a `/usr/local/cuda-X.Y` other than the image's CUDA, host-mounted \
            library dirs, or replaces the nvidia/cuda base image's value without keeping it; in \
            other images that work with CUDA, an ENV that sets it without appending (info) — \
            unless it lists only pip wheels' own library directories (`…/site-packages/torch/lib`, \
            `…/nvidia/*/lib`) on a base without CUDA, where there is no other copy to win over.",
        why: "LD_LIBRARY_PATH wins over the loader cache. The stub libcuda.so is for linking only \
            and fails at run time; compat/libcuda (forward compatibility) works only on \
            datacenter GPUs and fails with CUDA error 804 elsewhere; another CUDA's directory \
            mixes runtimes; nvidia/cuda sets /usr/local/nvidia/lib64 where older runtimes inject \
            the driver.",
        example: "`ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH`.",
        fix: "Keep stubs out of LD_LIBRARY_PATH (use LIBRARY_PATH for linking), let the container \
            toolkit handle driver and compat libraries, and append to the inherited value.",
        sources: &[
            "https://man7.org/linux/man-pages/man8/ld.so.8.html",
            "https://github.com/GoogleCloudPlatform/container-engine-accelerators/tree/master/cmd/nvidia_gpu",
            "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html#use-the-right-cuda-forward-compatibility-package",
        ],
    },
};

/// Problems with one LD_LIBRARY_PATH value.
fn problems(
    value: &str,
    base: Option<CudaVersion>,
    nvidia_base: bool,
    host_targets: &[String],
) -> Vec<(Severity, String)> {
    let mut out = Vec::new();
    for e in value.split(':').filter(|e| !e.is_empty()) {
        let e_t = e.trim_end_matches('/');
        if e_t.ends_with("/stubs") || e_t.contains("/stubs/") {
            out.push((Severity::Error, format!("`{e}` holds the link-time stub libcuda.so, which fails at run time if it shadows the real driver")));
        } else if e_t.contains("/compat") {
            out.push((Severity::Warning, format!("`{e}` puts the forward-compatibility libcuda first: it works only on datacenter GPUs with a supported driver branch (CUDA error 804 elsewhere)")));
        } else if e_t.starts_with("/usr/local/cuda-") {
            let release = crate::runconfig::runspec::ld_entry_cuda_release(e_t);
            if let (Some(v), Some(b)) = (release, base) {
                if !v.same_release(&b) {
                    out.push((
                        Severity::Warning,
                        format!(
                            "`{e}` is CUDA {} but the image has CUDA {}",
                            v.major_minor(),
                            b.major_minor()
                        ),
                    ));
                }
            }
        } else if host_targets.iter().any(|t| {
            e_t == t.trim_end_matches('/')
                || e_t.starts_with(&format!("{}/", t.trim_end_matches('/')))
        }) {
            out.push((Severity::Warning, format!("`{e}` is a host-mounted directory: the container loads the host's libraries first")));
        }
    }
    // Keeping the inherited value means naming it (`$LD_LIBRARY_PATH`, `${LD_LIBRARY_PATH}`);
    // other variables (`$HOME/.local/lib`) do not bring it back.
    if nvidia_base
        && !value.contains("/usr/local/nvidia/lib64")
        && !value.contains("LD_LIBRARY_PATH")
        && !value.is_empty()
    {
        out.push((Severity::Info, "replaces the base image's LD_LIBRARY_PATH (/usr/local/nvidia/lib:/usr/local/nvidia/lib64) instead of appending to it".into()));
    }
    out
}

/// An ENV that drops the inherited LD_LIBRARY_PATH, in an image that works with CUDA (the
/// image's CUDA, or the value names CUDA/driver directories). The nvidia/cuda bases' own
/// value is judged in [`problems`].
fn replaces_inherited(value: &str, cuda_image: bool) -> bool {
    let l = value.to_ascii_lowercase();
    !value.is_empty()
        && !value.contains("LD_LIBRARY_PATH")
        && (cuda_image || ["cuda", "nvidia", "tegra"].iter().any(|k| l.contains(k)))
}

/// Every directory is a Python wheel's library directory (`…/site-packages/torch/lib`,
/// `…/site-packages/nvidia/cublas/lib`): the copies the wheels' own RUNPATHs name, in the
/// order PyTorch's wheel build lists them. On a base not known to carry CUDA there is no
/// system copy for them to compete with, and what the wheels load does not change.
fn wheel_dirs_only(value: &str) -> bool {
    value
        .split(':')
        .filter(|d| !d.is_empty())
        .all(|d| d.contains("/site-packages/") || d.contains("/dist-packages/"))
}

/// The ENV instruction at `pos` names `$LD_LIBRARY_PATH` in its value (as written: an unset
/// inherited value expands to nothing).
fn names_inherited(bf: &crate::runconfig::build::BuildFacts, pos: Pos) -> bool {
    bf.df
        .instructions
        .iter()
        .find(|i| i.cmd == "ENV" && i.start_line <= pos.line && pos.line <= i.end_line)
        .is_some_and(|i| i.rest.matches("LD_LIBRARY_PATH").count() > 1)
}

/// The stage a Dockerfile line belongs to: the last one whose FROM is at or above it.
fn stage_at(
    bf: &crate::runconfig::build::BuildFacts,
    line: u32,
) -> Option<&crate::runconfig::build::Stage> {
    bf.stages.iter().rev().find(|s| s.image_pos.line <= line)
}

/// The text inside each outermost `$( … )` of a shell command line.
fn command_substitutions(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && b[i + 1] == b'(' && b.get(i + 2) != Some(&b'(') {
            let start = i + 2;
            let mut depth = 1;
            let mut j = start;
            while j < b.len() && depth > 0 {
                match b[j] {
                    b'(' => depth += 1,
                    b')' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            if depth == 0 {
                out.push(&text[start..j - 1]);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn push(out: &mut Vec<Finding>, file: &str, pos: Pos, ps: Vec<(Severity, String)>) {
    for (sev, m) in ps {
        out.push(
            META.finding(format!("LD_LIBRARY_PATH: {m}"))
                .with_severity(sev)
                .with_location(loc(file, pos))
                .with_help("remove the entry (link against stubs with LIBRARY_PATH), or append with :${LD_LIBRARY_PATH}"),
        );
    }
}

/// LD_LIBRARY_PATH set by a script (an entrypoint, a "run in the container" step), judged
/// with the directories its own `docker run` lines mount from the host.
fn script_findings(
    file: &str,
    text: &str,
    runs: &[crate::runconfig::runspec::RunSpec],
) -> Vec<Finding> {
    let targets: Vec<String> = runs
        .iter()
        .flat_map(|r| r.mounts.iter().map(|m| m.container.clone()))
        .collect();
    let mut out = Vec::new();
    for (v, p) in crate::runconfig::runspec::script_ld_library_paths(text) {
        push(
            &mut out,
            file,
            p,
            problems(&v, None, false, &host_lib_targets(&targets)),
        );
    }
    out
}

/// Host-mounted directories, less `/usr/local/nvidia/lib{,64}`, where the driver is meant to
/// be mounted from the host (GKE: the device plugin mounts the host driver dir there;
/// nvidia-docker 1; the nvidia/cuda images put it on LD_LIBRARY_PATH for that).
fn host_lib_targets(containers: &[String]) -> Vec<String> {
    containers
        .iter()
        .filter(|c| {
            !matches!(
                c.trim_end_matches('/'),
                "/usr/local/nvidia" | "/usr/local/nvidia/lib" | "/usr/local/nvidia/lib64"
            )
        })
        .cloned()
        .collect()
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    match s {
        Subject::Dockerfile(bf) => {
            // Stages the final image is built on: their ENV reaches the running container.
            // Other stages are throw-away builders, where stubs on LD_LIBRARY_PATH only serve
            // the build (linking, import checks without a GPU).
            let final_chain = super::final_chain(bf);
            // The final image works with CUDA: a GPU base, or CUDA named in what it runs or sets.
            let cuda_image = bf
                .stages
                .iter()
                .filter(|s| final_chain.contains(&s.index))
                .any(|s| {
                    s.info.is_gpu()
                        || s.envs.iter().any(|e| e.name.contains("CUDA"))
                        || s.cmds.iter().any(|c| {
                            c.words
                                .iter()
                                .any(|w| w.text.to_ascii_lowercase().contains("cuda"))
                        })
                });
            for st in bf.built_stages() {
                let nvidia = st.info.kind == crate::runconfig::image::ImageKind::NvidiaCuda;
                let builder = !final_chain.contains(&st.index);
                for e in st
                    .envs
                    .iter()
                    .filter(|e| e.name == "LD_LIBRARY_PATH" && !e.is_arg)
                {
                    if let Some(v) = &e.value {
                        let mut p = problems(v, st.info.cuda, nvidia, &[]);
                        let wheels_on_plain_base =
                            st.info.kind == ImageKind::Other && wheel_dirs_only(v);
                        if builder {
                            p.retain(|(_, m)| !m.contains("stub libcuda.so"));
                        } else if !nvidia
                            && replaces_inherited(v, cuda_image)
                            && !names_inherited(bf, e.pos)
                            && !wheels_on_plain_base
                        {
                            p.push((Severity::Info, "set, not appended to: a value the base image set is dropped, and these directories win over every library's own RUNPATH, so which copy of the CUDA libraries loads (the system's or the one a wheel ships) depends on this list".into()));
                        }
                        push(out, &bf.file, e.pos, p);
                    }
                }
                for c in &st.cmds {
                    // Only what the command adds: the inherited value is judged where it was set.
                    let inherited = match c.vars.get("LD_LIBRARY_PATH") {
                        Some(crate::runconfig::shell::Var::Set(v)) if !v.is_empty() => {
                            Some(v.clone())
                        }
                        _ => None,
                    };
                    let own = |v: &str| match &inherited {
                        Some(i) => v.replace(i.as_str(), ""),
                        None => v.to_string(),
                    };
                    let mut vals: Vec<(String, Pos)> = c
                        .assigns
                        .iter()
                        .filter(|a| a.0 == "LD_LIBRARY_PATH")
                        .map(|a| (own(&a.1), c.pos))
                        .collect();
                    if c.name() == "export" {
                        for w in &c.words[1..] {
                            if let Some(v) = w.text.strip_prefix("LD_LIBRARY_PATH=") {
                                vals.push((own(v), w.pos));
                            }
                        }
                    }
                    for (v, p) in vals {
                        // Set for one build step (a prefix or an export inside a RUN): no
                        // driver is there during `docker build`, and linking against the stub
                        // is what stubs are for; the running container never sees it.
                        let mut found = problems(&v, st.info.cuda, false, &[]);
                        found.retain(|(_, m)| !m.contains("stub libcuda.so"));
                        push(out, &bf.file, p, found);
                    }
                }
            }
            // `X=$(export LD_LIBRARY_PATH=… && python -c …)`: set inside a command
            // substitution, which the command list above keeps as one unknown value.
            for i in bf.df.instructions.iter().filter(|i| i.cmd == "RUN") {
                let Some(st) = stage_at(bf, i.start_line).filter(|s| s.built) else {
                    continue;
                };
                for inner in command_substitutions(&i.rest) {
                    for (v, _) in crate::runconfig::runspec::script_ld_library_paths(inner) {
                        let pos = Pos {
                            line: i.start_line,
                            col: 1,
                        };
                        push(out, &bf.file, pos, problems(&v, st.info.cuda, false, &[]));
                    }
                }
            }
        }
        // A Markdown document's `export` lines are examples, not a script that runs.
        Subject::Script(script) if script.markdown => {}
        Subject::Script(script) => {
            out.extend(script_findings(script.file, script.text, script.runs));
        }
        Subject::Runs(specs) => {
            for r in specs.iter() {
                // A host mount at the driver's intended path is the driver, as intended.
                let targets = host_lib_targets(
                    &r.mounts
                        .iter()
                        .map(|m| m.container.clone())
                        .collect::<Vec<_>>(),
                );
                for (k, v, p) in &r.env {
                    if k == "LD_LIBRARY_PATH" {
                        push(out, &r.file, *p, problems(v, None, false, &targets));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, runs};

    #[test]
    fn set_inside_a_command_substitution() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN MSG=$(export LD_LIBRARY_PATH=${LD_LIBRARY_PATH}:${CUDA_HOME}/compat/lib.real && \\\n  python -c 'import x') || echo \"$MSG\"\n";
        let f = dockerfile(t, "GL106", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(f[0].message.contains("compat"), "{}", f[0].message);
        assert_eq!(
            super::command_substitutions("a $(b $(c)) $((1+2)) $(d"),
            vec!["b $(c)"]
        );
    }

    #[test]
    fn a_script_setting_it() {
        let sh = "docker run --gpus all -v /usr/cuda_files:/usr/cuda_files img bash\n# in the container\nexport LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/cuda_files/\n";
        let runs = crate::runconfig::runspec::scan_script("start.sh", sh, false);
        let f = super::script_findings("start.sh", sh, &runs);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(f[0].message.contains("host-mounted"), "{}", f[0].message);
        let entry = "if [ \"$D\" -lt 12090 ]; then\n  export LD_LIBRARY_PATH=\"/usr/local/cuda/compat:${LD_LIBRARY_PATH}\"\nfi\nexec app\n";
        let f = super::script_findings("entrypoint.sh", entry, &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("forward-compatibility"));
        let fine = "export LD_LIBRARY_PATH=/opt/app/lib:$LD_LIBRARY_PATH\n";
        assert!(super::script_findings("x.sh", fine, &[]).is_empty());
    }

    #[test]
    fn a_cuda_image_replacing_the_inherited_value() {
        // A base we do not know (a local build) and an image that builds with CUDA.
        let t = "FROM detectron2:v0\nRUN cmake .. -DWITH_CUDA=on && make\nENV LD_LIBRARY_PATH=$HOME/.local/lib\n";
        let f = dockerfile(t, "GL106", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        // CUDA installed on an OS base, the value naming it.
        let os = "FROM opensuse/tumbleweed\nENV LD_LIBRARY_PATH=\"/usr/lib64:/usr/local/cuda-12.6/lib64\"\n";
        assert_eq!(dockerfile(os, "GL106", vec![]).len(), 1);
        // Appending keeps it; an image without CUDA is not ours to judge.
        let kept = os.replace("lib64\"", "lib64:${LD_LIBRARY_PATH}\"");
        assert!(dockerfile(&kept, "GL106", vec![]).is_empty());
        let plain = "FROM debian:12\nRUN make install\nENV LD_LIBRARY_PATH=/opt/app/lib\n";
        assert!(dockerfile(plain, "GL106", vec![]).is_empty());
        // Only the wheels' own library directories, on a base without CUDA (PyTorch's
        // build_cuda.sh RPATH order): nothing to compete with; not on a CUDA base.
        let wheels = "FROM opensuse/leap:15.6\nRUN pip install torch --index-url https://download.pytorch.org/whl/cu118\nENV LD_LIBRARY_PATH=\"/usr/local/lib64/python3.11/site-packages/torch/lib:/usr/local/lib/python3.11/site-packages/nvidia/cublas/lib\"\n";
        assert!(dockerfile(wheels, "GL106", vec![]).is_empty());
        let mixed = wheels.replace("cublas/lib\"", "cublas/lib:/usr/local/cuda/lib64\"");
        assert_eq!(dockerfile(&mixed, "GL106", vec![]).len(), 1);
        // A throw-away builder stage is not the image.
        let builder = format!("{}FROM debian:12\nCOPY --from=0 /x /x\n", t);
        assert!(dockerfile(&builder, "GL106", vec![]).is_empty());
    }

    #[test]
    fn stubs_compat_and_other_cuda() {
        let t = "FROM nvidia/cuda:12.8.1-runtime-ubuntu22.04\nENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:/usr/local/cuda-12.4/lib64:$LD_LIBRARY_PATH\nRUN LD_LIBRARY_PATH=/usr/local/cuda/compat/lib.real:$LD_LIBRARY_PATH python -c 'import torch'\nENV LD_LIBRARY_PATH=/opt/lib\n";
        let f = dockerfile(t, "GL106", vec![]);
        let s: Vec<_> = f
            .iter()
            .map(|f| (f.severity, f.location.as_ref().unwrap().line.unwrap()))
            .collect();
        assert_eq!(
            s,
            vec![
                (Severity::Error, 2),
                (Severity::Warning, 2),
                (Severity::Info, 4),
                (Severity::Warning, 3)
            ],
            "{f:?}"
        );
    }

    #[test]
    fn host_mounted_dirs_in_compose() {
        let c = "services:\n  a:\n    image: x\n    volumes:\n      - /usr/cuda_files:/usr/cuda_files\n    environment:\n      - LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/cuda_files/\n";
        let f = runs("compose", c, "GL106", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(7));
        // The driver mounted where it is meant to be (GKE: hostPath → /usr/local/nvidia/lib64).
        let c = "services:\n  a:\n    image: x\n    volumes:\n      - /home/kubernetes/bin/nvidia/lib64:/usr/local/nvidia/lib64\n    environment:\n      - LD_LIBRARY_PATH=/usr/local/nvidia/lib64\n";
        assert!(runs("compose", c, "GL106", vec![]).is_empty());
    }

    #[test]
    fn another_variable_does_not_keep_the_inherited_value() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV LD_LIBRARY_PATH=$HOME/.local/lib\n";
        let f = dockerfile(t, "GL106", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("replaces the base image's"), "{f:?}");
        let kept = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV LD_LIBRARY_PATH=$HOME/.local/lib:${LD_LIBRARY_PATH}\n";
        assert!(dockerfile(kept, "GL106", vec![]).is_empty());
    }

    #[test]
    fn stubs_for_one_build_step_are_fine() {
        let base = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n";
        for run in [
            "RUN LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:${LD_LIBRARY_PATH} bazel build //x\n",
            "RUN export LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH && make\n",
        ] {
            let f = dockerfile(&format!("{base}{run}"), "GL106", vec![]);
            assert!(f.is_empty(), "{run}: {f:?}");
        }
        // In the image's environment it reaches every process of the container.
        let env = "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH\n";
        let f = dockerfile(&format!("{base}{env}"), "GL106", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        // Other problems of a step's value are still said (forward-compat libcuda first).
        let compat = "RUN LD_LIBRARY_PATH=/usr/local/cuda/compat:$LD_LIBRARY_PATH python -c 'import torch'\n";
        assert_eq!(
            dockerfile(&format!("{base}{compat}"), "GL106", vec![]).len(),
            1
        );
    }

    #[test]
    fn stubs_in_a_throw_away_builder_stage_are_fine() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH\nRUN make\nFROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=build /a /a\n";
        assert!(dockerfile(t, "GL106", vec![]).is_empty());
        // The same ENV in a stage the final image is built on still counts.
        let t = t.replace("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04", "FROM build");
        assert_eq!(dockerfile(&t, "GL106", vec![]).len(), 1);
    }
}
