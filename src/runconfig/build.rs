//! From parsed instructions to build facts, stage by stage, the way BuildKit evaluates them, in
//! two passes: [`syntax`] (which instructions are evaluated and in which scope; what does not
//! parse) and [`resolve`] (ARG/ENV, FROM and stages, base image facts, RUN commands and the
//! packages they install, `--target`), which fills each [`Stage`] once. The GL1xx rules
//! (`crate::rules::runconfig`) judge the result.

use super::dockerfile::{self, split_args, Dockerfile, Instruction, Pos, PosMap};
use super::expand::ExpansionBudget;
use super::image::{image_info, ImageInfo, ImageKind, ImageRef};
use super::pkg::{self, Install, LCmd};
use super::shell::{self, expand_word, Var, Vars};
use crate::matrix::Facts;
use crate::version::CudaVersion;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod resolve;
mod syntax;

#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    pub build_args: BTreeMap<String, String>,
    pub target: Option<String>,
    pub context: Option<PathBuf>,
}

/// An ENV or ARG assignment.
#[derive(Debug, Clone)]
pub struct EnvSet {
    pub name: String,
    /// None: ARG without a default (and no --build-arg).
    pub value: Option<String>,
    pub pos: Pos,
    pub is_arg: bool,
    pub unresolved: bool,
}

#[derive(Debug, Clone)]
pub struct CopyIns {
    pub cmd: String,
    pub from: Option<String>,
    pub srcs: Vec<String>,
    pub dest: String,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub struct Stage {
    pub index: usize,
    pub name: Option<String>,
    /// The FROM image after expansion (a stage name for `FROM builder`).
    pub image: String,
    pub image_pos: Pos,
    pub image_unresolved: bool,
    /// `FROM <earlier stage>`.
    pub parent: Option<usize>,
    /// The external image at the root of the parent chain.
    pub root_ref: Option<ImageRef>,
    /// Facts about the root image.
    pub info: ImageInfo,
    /// ENV and ARG of this stage, in order.
    pub envs: Vec<EnvSet>,
    pub cmds: Vec<LCmd>,
    pub installs: Vec<Install>,
    pub copies: Vec<CopyIns>,
    /// Variables at the end of the stage (inherited ENV included).
    pub vars: Vars,
    /// Built for the chosen target.
    pub built: bool,
    /// The global ARG defaults the FROM reference expands, directly or through another ARG
    /// (`FROM nvidia/cuda:${CUDA}-devel` with `ARG CUDA=11.3.1` above it): (name, default as
    /// written, where), which is where a version taken from the image is changed. ARGs given
    /// by `--build-arg` are not listed.
    pub image_args: Vec<(String, String, Pos)>,
}

impl Stage {
    /// CUDA releases a stage installs itself: versioned apt/yum packages (`cuda-toolkit-10-2`,
    /// `cuda-10-1`), CUDA libraries pinned to a build for one release (TensorFlow's
    /// `libcudnn7=7.6.5.32-1+cuda10.0`: they need that CUDA's runtime), conda
    /// (`cudatoolkit=10.1`, `pytorch-cuda=11.7`), the CUDA runfile
    /// (`cuda_10.2.89_440.33.01_linux.run`). (release, what, where)
    pub fn installed_cuda(&self) -> Vec<(CudaVersion, String, Pos)> {
        let st = self;
        use crate::runconfig::pkg::Install;
        let mut out = Vec::new();
        for i in &st.installs {
            match i {
                Install::Os(o) => {
                    for p in &o.pkgs {
                        let (n, pos) = (&p.name, &p.pos);
                        let n_l = n.to_ascii_lowercase();
                        if n_l.starts_with("cuda-") && !n_l.starts_with("cuda-compat") {
                            if let Some(v) = p.cuda {
                                out.push((v, n.clone(), *pos));
                            }
                        } else if let (Some(v), Some(ver)) = (p.built_for_cuda, &p.version) {
                            out.push((v, format!("{n}={ver}"), *pos));
                        }
                    }
                }
                Install::Conda(c) => {
                    for p in &c.pkgs {
                        let (n, spec, pos) = (&p.name, &p.spec, &p.pos);
                        if !matches!(
                            n.as_str(),
                            "cudatoolkit"
                                | "cuda-toolkit"
                                | "cuda-runtime"
                                | "cuda"
                                | "pytorch-cuda"
                        ) {
                            continue;
                        }
                        let v: String = spec
                            .trim_start_matches(['=', '<', '>', '~', ' '])
                            .chars()
                            .take_while(|c| c.is_ascii_digit() || *c == '.')
                            .collect();
                        let mut parts = v.split('.').filter(|p| !p.is_empty());
                        if let (Some(a), Some(b)) = (parts.next(), parts.next()) {
                            if let Ok(v) = format!("{a}.{b}").parse() {
                                out.push((v, format!("{n}={spec}"), *pos));
                            }
                        }
                    }
                }
                Install::Pip(_) => {}
            }
        }
        for c in &st.cmds {
            let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
            let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
            let Some(first) = words.first().map(|w| base(w)) else {
                continue;
            };
            let file = if matches!(first.as_str(), "sh" | "bash") {
                match words.iter().skip(1).find(|w| !w.starts_with('-')) {
                    Some(w) => base(w),
                    None => continue,
                }
            } else {
                first
            };
            if let Some(v) = file
                .strip_prefix("cuda_")
                .filter(|_| file.ends_with("_linux.run"))
                .and_then(|r| r.split('_').next())
            {
                let mm: Vec<&str> = v.split('.').take(2).collect();
                if let Ok(v) = mm.join(".").parse() {
                    out.push((v, file.clone(), c.pos));
                }
            }
        }
        out
    }
}

/// What the Dockerfile reader says of a file with no FROM at all (GL100 reports that fragment
/// at info, knowing the error by these words).
pub const FRAGMENT: &str = "and the file has no FROM: a fragment of a Dockerfile";

#[derive(Debug, Clone)]
pub struct SpecError {
    pub pos: Pos,
    pub message: String,
}

#[derive(Debug)]
pub struct BuildFacts {
    pub file: String,
    pub df: Dockerfile,
    pub stages: Vec<Stage>,
    pub errors: Vec<SpecError>,
}

impl BuildFacts {
    /// This stage and its FROM ancestors, nearest first.
    pub fn chain(&self, i: usize) -> Vec<&Stage> {
        // A parent is always an earlier stage, so the walk goes strictly down: no loop is
        // possible and no visited set is needed (a check per step made long chains cubic).
        let mut out = Vec::new();
        let mut cur = Some(i);
        while let Some(c) = cur {
            let Some(s) = self.stages.get(c) else { break };
            #[cfg(test)]
            count_chain_step();
            out.push(s);
            cur = s.parent.filter(|p| *p < c);
        }
        out
    }
    /// For every stage (by index), the first `own` value along its chain: this stage's, else
    /// its FROM ancestors' nearest first — what `chain(i).find_map(own)` gives, with `own`
    /// called once per stage instead of once per (stage, ancestor): linear in long chains.
    pub(crate) fn nearest_in_chain<'a, T: Clone>(
        &'a self,
        mut own: impl FnMut(&'a Stage) -> Option<T>,
    ) -> Vec<Option<T>> {
        let mut out: Vec<Option<T>> = Vec::with_capacity(self.stages.len());
        for (c, s) in self.stages.iter().enumerate() {
            #[cfg(test)]
            count_chain_step();
            let v = own(s).or_else(|| {
                s.parent
                    .filter(|p| *p < c)
                    .and_then(|p| out.get(p).cloned().flatten())
            });
            out.push(v);
        }
        out
    }
    pub fn built_stages(&self) -> impl Iterator<Item = &Stage> {
        self.stages.iter().filter(|s| s.built)
    }
    /// The effective value of an ENV variable at the end of stage `i` (None = never set).
    pub fn env_value(&self, i: usize, name: &str) -> Option<&EnvSet> {
        self.chain(i)
            .into_iter()
            .find_map(|s| s.envs.iter().rev().find(|e| e.name == name && !e.is_arg))
    }
}

#[cfg(test)]
thread_local! {
    /// Stages visited by `chain` and `nearest_in_chain` on this thread: the work the rules do
    /// along FROM chains, counted so a test can tell linear from quadratic without a clock.
    pub(crate) static CHAIN_STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn count_chain_step() {
    CHAIN_STEPS.with(|c| c.set(c.get() + 1));
}

pub fn analyze(file: &str, text: &str, opts: &BuildOptions, facts: &Facts) -> BuildFacts {
    analyze_parsed(file, dockerfile::parse(text), opts, facts)
}

/// [`analyze`] of an already parsed Dockerfile (a command parses each file once): the syntax
/// pass ([`syntax`]), then the resolving pass ([`resolve`]) that fills the stages once, with
/// what a base image is taken from `facts`. The rules judge the result.
pub fn analyze_parsed(
    file: &str,
    df: dockerfile::Dockerfile,
    opts: &BuildOptions,
    facts: &Facts,
) -> BuildFacts {
    let mut errors: Vec<SpecError> = df
        .errors
        .iter()
        .map(|e| SpecError {
            pos: Pos {
                line: e.line,
                col: e.col,
            },
            message: e.message.clone(),
        })
        .collect();
    let read = syntax::read(&df);
    let (stages, resolve_errors) = resolve::resolve(&df, read, opts, facts);
    errors.extend(resolve_errors);
    BuildFacts {
        file: file.to_string(),
        df,
        stages,
        errors,
    }
}

/// A file named in a RUN (`-r /tmp/requirements.txt`) as it is in the build context: through
/// the COPY that put it there, else by its path relative to the context (an absolute path
/// also by its name).
pub fn read_context_file(ctx: Option<&Path>, copies: &[CopyIns], path: &str) -> Option<String> {
    let ctx = ctx?;
    let mut cands: Vec<PathBuf> = Vec::new();
    for c in copies.iter().filter(|c| c.from.is_none()) {
        let dest = c.dest.trim_end_matches('/');
        for src in &c.srcs {
            if src.contains("://") {
                continue;
            }
            if path == dest || path == c.dest {
                cands.push(ctx.join(src));
            } else if let Some(rest) = path.strip_prefix(&format!("{dest}/")) {
                let base = Path::new(src);
                cands.push(ctx.join(base).join(rest));
                cands.push(ctx.join(rest));
            }
        }
    }
    cands.push(ctx.join(path.trim_start_matches('/')));
    // An absolute path in the image copied by a COPY we cannot match: by its name. A relative
    // one (`server/pyproject.toml`) names its own directory, not another file of that name.
    if let Some(b) = Path::new(path)
        .file_name()
        .filter(|_| path.starts_with('/'))
    {
        cands.push(ctx.join(b));
    }
    for c in cands {
        // Stay inside the context.
        if c.components().any(|x| x == std::path::Component::ParentDir) {
            continue;
        }
        // A regular file that stays inside the context once links are resolved.
        if !crate::io_util::inside(ctx, &c) {
            continue;
        }
        if let Ok(t) = crate::io_util::read_regular_string(&c, crate::io_util::MAX_CONFIG_FILE) {
            return Some(t);
        }
    }
    None
}

/// Whether `text` (as written) expands variable `name`: `$name` or `${name…}`.
pub(crate) fn refers_to(text: &str, name: &str) -> bool {
    text.match_indices('$').any(|(i, _)| {
        let rest = &text[i + 1..];
        let rest = rest.strip_prefix('{').unwrap_or(rest);
        rest.strip_prefix(name).is_some_and(|after| {
            !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Facts;
    use crate::runconfig::expand::MAX_FILE;

    fn an(text: &str, opts: BuildOptions) -> BuildFacts {
        analyze("Dockerfile", text, &opts, &Facts::embedded().unwrap())
    }

    #[test]
    fn args_before_from_and_build_args() {
        let t = "ARG CUDA=11.8.0\nARG OS\nFROM nvidia/cuda:${CUDA}-devel-ubuntu22.04 AS build\nARG CUDA\nRUN echo $CUDA\nFROM build\nENV A=${CUDA_VERSION%.*}\n";
        let b = an(t, BuildOptions::default());
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert_eq!(b.stages[0].image, "nvidia/cuda:11.8.0-devel-ubuntu22.04");
        assert_eq!(b.stages[0].info.cuda, Some("11.8.0".parse().unwrap()));
        assert_eq!(b.stages[1].parent, Some(0));
        assert_eq!(b.stages[1].envs[0].value.as_deref(), Some("11.8"));
        let mut o = BuildOptions::default();
        o.build_args.insert("CUDA".into(), "12.4.1".into());
        let b = an(t, o);
        assert_eq!(b.stages[0].info.cuda, Some("12.4.1".parse().unwrap()));
    }

    #[test]
    fn run_installs_have_positions() {
        let b = an(
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN apt-get update && \\\n    pip install \\\n      torch==2.3.0+cu121\n",
            BuildOptions::default(),
        );
        let Install::Pip(p) = &b.stages[0].installs[0] else {
            panic!()
        };
        assert_eq!(p.reqs[0].pos, Pos { line: 4, col: 7 });
    }

    #[test]
    fn heredoc_scripts_and_targets() {
        let b = an(
            "FROM python:3.11 AS a\nRUN <<EOF\nset -e\npip install torch\nEOF\nFROM ubuntu AS b\nFROM a AS c\n",
            BuildOptions {
                target: Some("c".into()),
                ..Default::default()
            },
        );
        let Install::Pip(p) = &b.stages[0].installs[0] else {
            panic!()
        };
        assert_eq!(p.reqs[0].pos.line, 4);
        let built: Vec<_> = b.stages.iter().map(|s| s.built).collect();
        assert_eq!(built, vec![true, false, true]);
    }

    #[test]
    fn a_local_project_installs_its_declared_requirements() {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, t: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w(
            "pyproject.toml",
            "[project]\nname = \"app\"\ndependencies = [\"numpy\", \"torch>=2.1 ; sys_platform == 'linux'\"]\n[project.optional-dependencies]\nexport = [\"onnx\"]\ndev = [\"pytest\"]\n",
        );
        w("server/setup.py", "from setuptools import setup\nsetup(name='s', install_requires=[\n  'vllm==0.6.3',  # serving\n  \"fastapi\",\n])\n");
        w("tools/pyproject.toml", "[project]\nname = \"t\"\ndynamic = [\"dependencies\"]\n[tool.setuptools.dynamic]\ndependencies = {file = [\"requirements.txt\"]}\n");
        w("tools/requirements.txt", "torchvision==0.19.0\n");
        let opts = BuildOptions {
            context: Some(d.path().to_path_buf()),
            ..Default::default()
        };
        let t = "FROM python:3.11\nCOPY . /app\nWORKDIR /app\nRUN pip install -e .[export]\nRUN pip install ./server ./tools\nRUN pip install --no-deps .\n";
        let b = an(t, opts);
        let names = |i: usize| -> Vec<String> {
            match &b.stages[0].installs[i] {
                Install::Pip(p) => p.reqs.iter().map(|r| r.name.clone()).collect(),
                _ => panic!(),
            }
        };
        assert_eq!(names(0), vec!["numpy", "torch", "onnx"]);
        let Install::Pip(p) = &b.stages[0].installs[0] else {
            panic!()
        };
        assert_eq!((p.reqs[1].spec.as_str(), p.reqs[1].pos.line), (">=2.1", 4));
        assert_eq!(names(1), vec!["vllm", "fastapi", "torchvision"]);
        // --no-deps installs the project alone.
        assert!(names(2).is_empty());
    }

    #[test]
    fn a_merge_conflict_is_one_error_naming_its_markers() {
        let t = "FROM ubuntu:22.04\n<<<<<<< HEAD\nRUN make a\n=======\nRUN make b\n>>>>>>> main\nRUN x\n<<<<<<< HEAD\nRUN c\n>>>>>>> main\nFROOM y\n";
        let b = an(t, BuildOptions::default());
        let m: Vec<(u32, &str)> = b
            .errors
            .iter()
            .map(|e| (e.pos.line, e.message.as_str()))
            .collect();
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0].0, 2);
        assert!(m[0].1.contains("lines 2, 4, 6)"), "{}", m[0].1);
        assert_eq!(m[1].0, 8);
        assert!(m[1].1.contains("lines 8, 10)"), "{}", m[1].1);
        assert_eq!(m[2], (11, "unknown instruction: FROOM"));
    }

    #[test]
    fn errors_are_located() {
        let b = an("RUN x\nFROM a b\nFOO bar\n", BuildOptions::default());
        let lines: Vec<_> = b.errors.iter().map(|e| e.pos.line).collect();
        assert_eq!(lines, vec![1, 2, 3]);
    }

    /// Every stage, RUN and command keeps the variables in scope; those copies share one
    /// structure instead of each holding its own (which made a long FROM chain with an ENV
    /// per stage quadratic in time and memory).
    #[test]
    fn copies_of_the_variables_in_scope_share_structure() {
        let mut t = String::from("FROM ubuntu:22.04 AS s0\n");
        for i in 1..200 {
            t += &format!(
                "FROM s{} AS s{i}\nENV V{i}=x{i}\nRUN echo a && echo b\n",
                i - 1
            );
        }
        let b = an(&t, BuildOptions::default());
        let last = b.stages.last().unwrap();
        assert_eq!(last.vars.get("V1"), Some(&Var::Set("x1".into())));
        assert_eq!(last.cmds.len(), 2);
        for c in &last.cmds {
            assert!(
                c.vars.ptr_eq(&last.vars),
                "a command's variables are a deep copy"
            );
        }
    }

    /// Values that each stay under the per-word limit but grow along a chain are bounded in
    /// total: the expanded bytes kept stop at the budget, and the rest stay as written.
    #[test]
    fn env_values_growing_along_a_chain_are_bounded_in_total() {
        let mut t = format!("FROM ubuntu:22.04\nENV V0={}\n", "a".repeat(128 << 10));
        for i in 1..400 {
            t += &format!("ENV V{i}=${{V{}}}b\n", i - 1);
        }
        let b = an(&t, BuildOptions::default());
        let kept: usize = b.stages[0]
            .envs
            .iter()
            .filter(|e| !e.unresolved)
            .map(|e| e.value.as_ref().map_or(0, String::len))
            .sum();
        assert!(kept <= MAX_FILE, "{kept} bytes of values kept");
        // Below the budget, values are expanded as before.
        assert_eq!(
            b.stages[0].envs[3].value.as_ref().unwrap().len(),
            (128 << 10) + 3
        );
        let over: Vec<_> = b
            .errors
            .iter()
            .filter(|e| e.message.contains("in all"))
            .collect();
        assert_eq!(over.len(), 1, "{:?}", b.errors);
        // 32 MiB / 128 KiB: V255 (line 257) is the first value past the budget.
        assert_eq!(over[0].pos.line, 257);
        assert!(b.stages[0].envs[300].unresolved);
    }

    /// A few bytes of RUN expanding to half a MiB each: the RUN scripts of one Dockerfile
    /// share one expansion budget with its values, reported once.
    #[test]
    fn run_expansion_is_bounded_per_dockerfile() {
        let mut t = String::from("FROM ubuntu:22.04\nENV V0=aaaaaaaaaaaaaaaa\n");
        for i in 1..16 {
            t += &format!("ENV V{i}=${{V{}}}${{V{}}}\n", i - 1, i - 1);
        }
        t += &"RUN echo $V15\n".repeat(100);
        let b = an(&t, BuildOptions::default());
        let expanded: usize = b.stages[0]
            .cmds
            .iter()
            .flat_map(|c| &c.words)
            .map(|w| w.text.len())
            .sum();
        assert!(expanded <= MAX_FILE, "{expanded}");
        assert_eq!(b.stages[0].cmds.len(), 100);
        let total: Vec<_> = b
            .errors
            .iter()
            .filter(|e| e.message.contains("in all"))
            .collect();
        assert_eq!(total.len(), 1, "{:?}", b.errors);
        // The values take 16 x 64 KiB - 16 bytes of the 32 MiB, each RUN `echo` (4 bytes)
        // and 512 KiB: the 62nd RUN (line 79) is the first past the budget.
        assert_eq!(total[0].pos.line, 79);
    }

    /// A RUN of more words than a file may yield (each costs ~200 bytes, two input bytes
    /// made one): the words kept stop at the bound, reported once.
    #[test]
    fn shell_words_are_bounded_per_dockerfile() {
        use crate::runconfig::expand::MAX_WORDS;
        let t = format!(
            "FROM ubuntu:22.04\nRUN echo{}\nRUN echo {}\n",
            " b".repeat(MAX_WORDS),
            "c"
        );
        let b = an(&t, BuildOptions::default());
        let words: usize = b.stages[0].cmds.iter().map(|c| c.words.len()).sum();
        assert!(words <= MAX_WORDS, "{words}");
        let over: Vec<_> = b
            .errors
            .iter()
            .filter(|e| e.message.contains("shell words"))
            .collect();
        assert_eq!(over.len(), 1, "{:?}", b.errors);
        assert_eq!(over[0].pos.line, 2);
    }
}
