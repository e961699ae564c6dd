//! From parsed instructions to build facts, stage by stage, the way BuildKit evaluates them:
//! global ARGs (before the first FROM) expand FROM lines, `--build-arg` overrides defaults, a
//! stage re-declares a global ARG to see it, ENV and ARG values expand later instructions,
//! `FROM <stage>` inherits the stage's image facts and environment, `--target` picks the
//! stages that get built. RUN commands are read as shell with the stage's variables.

use super::dockerfile::{self, split_args, Dockerfile, Instruction, Pos, PosMap};
use super::expand::ExpansionBudget;
use super::image::{image_info, ImageInfo, ImageKind, ImageRef};
use super::pkg::{self, Install, LCmd};
use super::shell::{self, expand_word, Var, Vars};
use crate::matrix::Facts;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Environment the known base images set (from their published Dockerfiles:
/// <https://gitlab.com/nvidia/container-images/cuda/-/tree/master/dist>).
fn base_env(info: &ImageInfo) -> Vars {
    let mut v = Vars::new();
    if info.kind == ImageKind::NvidiaCuda {
        if let Some(c) = info.cuda {
            v.insert(
                "CUDA_VERSION".into(),
                Var::Set(format!("{}.{}.{}", c.major, c.minor, c.patch)),
            );
            v.insert(
                "NVIDIA_REQUIRE_CUDA".into(),
                Var::Set(format!("cuda>={}", c.major_minor())),
            );
        }
        v.insert("NVIDIA_VISIBLE_DEVICES".into(), Var::Set("all".into()));
        v.insert(
            "LD_LIBRARY_PATH".into(),
            Var::Set("/usr/local/nvidia/lib:/usr/local/nvidia/lib64".into()),
        );
        v.insert(
            "PATH".into(),
            Var::Set("/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
        );
    } else if info.kind != ImageKind::Other {
        for k in [
            "LD_LIBRARY_PATH",
            "PATH",
            "CUDA_VERSION",
            "NVIDIA_REQUIRE_CUDA",
            "CUDA_HOME",
        ] {
            v.insert(k.into(), Var::Unknown);
        }
    } else {
        v.insert(
            "PATH".into(),
            Var::Set("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
        );
    }
    v
}

/// `ENV a=b c=d` / `ENV a b c` / `ARG a=b c`: `(name, raw value, offset in rest)`.
fn kv_words(
    ins: &Instruction,
    escape: char,
    legacy_ok: bool,
) -> Vec<(String, Option<String>, usize)> {
    let words = split_args(&ins.rest, escape);
    let mut out = Vec::new();
    if words.is_empty() {
        return out;
    }
    if legacy_ok && !words[0].text.contains('=') {
        // Legacy `ENV key value with spaces`.
        let key = words[0].text.clone();
        let rest_off = words.get(1).map(|w| w.offset).unwrap_or(ins.rest.len());
        out.push((key, Some(ins.rest[rest_off..].to_string()), words[0].offset));
        return out;
    }
    for w in words {
        match w.text.split_once('=') {
            Some((k, v)) => out.push((k.to_string(), Some(v.to_string()), w.offset)),
            None => out.push((w.text.clone(), None, w.offset)),
        }
    }
    out
}

fn heredoc_map(first_line: u32, content: &str) -> PosMap {
    let mut m = PosMap::default();
    let mut off = 0;
    for (k, l) in content.split('\n').enumerate() {
        m.push(off, first_line + k as u32, 1);
        off += l.len() + 1;
    }
    m
}

/// [`expand_word`]; past an expansion limit, the word as written (unresolved) and an error
/// at `pos`.
fn expand_checked(
    word: &str,
    vars: &Vars,
    escape: char,
    pos: Pos,
    errors: &mut Vec<SpecError>,
) -> (String, bool) {
    match shell::try_expand_word(word, vars, escape) {
        Ok(r) => r,
        Err(l) => {
            errors.push(SpecError {
                pos,
                message: l.to_string(),
            });
            (word.to_string(), true)
        }
    }
}

/// `expanded` (from [`expand_checked`] of `word`) charged to the Dockerfile's expansion
/// budget (shared with its RUN scripts: one value is bounded, but a chain `ENV V2=${V1}x`,
/// `ENV V3=${V2}x`, … grows with the square of the file's length); past it, the word as
/// written (unresolved), with one error where the budget ran out.
fn within_values_budget(
    expanded: (String, bool),
    word: &str,
    budget: &mut ExpansionBudget,
    pos: Pos,
    errors: &mut Vec<SpecError>,
) -> (String, bool) {
    if expanded.1 {
        return expanded;
    }
    if let Err(l) = budget.charge(expanded.0.len()) {
        if budget.should_report(l) {
            errors.push(SpecError {
                pos,
                message: l.to_string(),
            });
        }
        return (word.to_string(), true);
    }
    expanded
}

pub fn analyze(file: &str, text: &str, opts: &BuildOptions, facts: &Facts) -> BuildFacts {
    analyze_parsed(file, dockerfile::parse(text), opts, facts)
}

/// [`analyze`] of an already parsed Dockerfile (a command parses each file once).
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
    let escape = df.escape;
    let mut global = Vars::new();
    // Global ARG defaults and where they are written, every definition (for
    // [`Stage::image_args`]).
    let mut global_defaults: Vec<(String, String, Pos)> = Vec::new();
    let mut stages: Vec<Stage> = Vec::new();
    let mut cur: Option<Stage> = None;
    let mut stage_vars = Vars::new();
    // What the values and RUN words of this Dockerfile may expand to, together.
    let mut budget = ExpansionBudget::per_file();
    let ctx = opts.context.clone();

    // Stage name → index of the last stage with that name (what `FROM <name>` refers to):
    // one lookup per FROM, not a scan of every earlier stage.
    let mut stage_names: std::collections::HashMap<String, usize> = Default::default();
    let finish = |cur: &mut Option<Stage>,
                  vars: &Vars,
                  stages: &mut Vec<Stage>,
                  names: &mut std::collections::HashMap<String, usize>| {
        if let Some(mut s) = cur.take() {
            s.vars = vars.clone();
            if let Some(n) = &s.name {
                names.insert(n.clone(), s.index);
            }
            stages.push(s);
        }
    };

    // Lines of a merge conflict's `<<<<<<<` … `>>>>>>>` span being reported.
    let mut conflict_until = 0u32;
    for (i, ins) in df.instructions.iter().enumerate() {
        if !dockerfile::KNOWN.contains(&ins.cmd.as_str()) {
            // A committed merge conflict is one problem, not one per marker: reported once at
            // its `<<<<<<<` with the lines of its markers (Git writes exactly seven).
            let marker = |c: &str| ["<<<<<<<", "|||||||", "=======", ">>>>>>>"].contains(&c);
            if marker(&ins.cmd) {
                if ins.pos().line <= conflict_until {
                    continue;
                }
                let rest = &df.instructions[i + 1..];
                let end = rest
                    .iter()
                    .take_while(|x| x.cmd != "<<<<<<<")
                    .filter(|x| marker(&x.cmd))
                    .map(|x| x.pos().line)
                    .collect::<Vec<_>>();
                conflict_until = end.last().copied().unwrap_or(ins.pos().line);
                let lines: Vec<String> = std::iter::once(ins.pos().line)
                    .chain(end)
                    .map(|l| l.to_string())
                    .collect();
                errors.push(SpecError {
                    pos: ins.pos(),
                    message: format!(
                        "unresolved merge conflict (markers on lines {}): `{}` is not an \
                         instruction, so the image does not build from this version",
                        lines.join(", "),
                        ins.cmd
                    ),
                });
                continue;
            }
            errors.push(SpecError {
                pos: ins.pos(),
                message: format!("unknown instruction: {}", ins.cmd),
            });
            continue;
        }
        match ins.cmd.as_str() {
            "FROM" => {
                finish(&mut cur, &stage_vars, &mut stages, &mut stage_names);
                let words = split_args(&ins.rest, escape);
                let Some(img_w) = words.first() else {
                    errors.push(SpecError {
                        pos: ins.pos(),
                        message: "FROM requires an image".into(),
                    });
                    continue;
                };
                let (image, unresolved) =
                    expand_checked(&img_w.text, &global, escape, ins.pos(), &mut errors);
                let name = match (words.get(1), words.get(2)) {
                    (Some(a), Some(n)) if a.text.eq_ignore_ascii_case("as") => {
                        Some(n.text.to_ascii_lowercase())
                    }
                    (Some(_), _) => {
                        errors.push(SpecError {
                            pos: ins.pos(),
                            message: "FROM requires either one or three arguments".into(),
                        });
                        None
                    }
                    _ => None,
                };
                let parent = stage_names.get(&image.to_ascii_lowercase()).copied();
                let (root_ref, info, vars) = match parent {
                    Some(p) => {
                        let ps = &stages[p];
                        (ps.root_ref.clone(), ps.info.clone(), ps.vars.clone())
                    }
                    None => {
                        let r = if unresolved {
                            None
                        } else {
                            ImageRef::parse(&image)
                        };
                        let info = r
                            .as_ref()
                            .map(|r| image_info(r, facts))
                            .unwrap_or_else(ImageInfo::unknown);
                        let v = base_env(&info);
                        (r, info, v)
                    }
                };
                stage_vars = vars;
                // The ARGs the reference names, and those their defaults name in turn
                // (`ARG BASE=nvidia/cuda:${CUDA}-devel` … `FROM ${BASE}`).
                let mut image_args: Vec<(String, String, Pos)> = Vec::new();
                let mut texts = vec![img_w.text.clone()];
                while let Some(t) = texts.pop() {
                    for a in &global_defaults {
                        // Every definition of a name: a redefinition may build on the
                        // earlier value (`ARG B=${B:-ubuntu}`).
                        if refers_to(&t, &a.0) && !image_args.iter().any(|x| x.2 == a.2) {
                            texts.push(a.1.clone());
                            image_args.push(a.clone());
                        }
                    }
                }
                cur = Some(Stage {
                    image_args,
                    index: stages.len(),
                    name,
                    image,
                    image_pos: ins.pos_in_rest(img_w.offset),
                    image_unresolved: unresolved,
                    parent,
                    root_ref,
                    info,
                    envs: Vec::new(),
                    cmds: Vec::new(),
                    installs: Vec::new(),
                    copies: Vec::new(),
                    vars: Vars::new(),
                    built: false,
                });
            }
            "ARG" => {
                for (name, default, off) in kv_words(ins, escape, false) {
                    let scope = if cur.is_some() { &stage_vars } else { &global };
                    let val = if let Some(v) = opts.build_args.get(&name) {
                        Some((v.clone(), false))
                    } else if let Some(d) = &default {
                        let pos = ins.pos_in_rest(off);
                        let e = expand_checked(d, scope, escape, pos, &mut errors);
                        Some(within_values_budget(e, d, &mut budget, pos, &mut errors))
                    } else if cur.is_some() {
                        // Re-declared global ARG: takes the global value.
                        match global.get(&name) {
                            Some(Var::Set(v)) => Some((v.clone(), false)),
                            _ => None,
                        }
                    } else {
                        None
                    };
                    let var = match &val {
                        Some((v, false)) => Var::Set(v.clone()),
                        _ => Var::Unknown,
                    };
                    if let Some(s) = cur.as_mut() {
                        stage_vars.insert(name.clone(), var);
                        s.envs.push(EnvSet {
                            name,
                            unresolved: val.as_ref().map(|v| v.1).unwrap_or(false),
                            value: val.map(|v| v.0),
                            pos: ins.pos_in_rest(off),
                            is_arg: true,
                        });
                    } else {
                        if let (Some(raw), false) = (&default, opts.build_args.contains_key(&name))
                        {
                            global_defaults.push((name.clone(), raw.clone(), ins.pos_in_rest(off)));
                        }
                        global.insert(name, var);
                    }
                }
            }
            _ if cur.is_none() => {
                errors.push(SpecError {
                    pos: ins.pos(),
                    message: format!(
                        "{} before the first FROM (only ARG may come first)",
                        ins.cmd
                    ),
                });
            }
            "ENV" => {
                let kvs = kv_words(ins, escape, true);
                let before = stage_vars.clone();
                for (name, value, off) in kvs {
                    let word = value.as_deref().unwrap_or("");
                    let pos = ins.pos_in_rest(off);
                    let e = expand_checked(word, &before, escape, pos, &mut errors);
                    let (v, u) = within_values_budget(e, word, &mut budget, pos, &mut errors);
                    stage_vars.insert(
                        name.clone(),
                        if u { Var::Unknown } else { Var::Set(v.clone()) },
                    );
                    if let Some(s) = cur.as_mut() {
                        s.envs.push(EnvSet {
                            name,
                            value: Some(v),
                            pos: ins.pos_in_rest(off),
                            is_arg: false,
                            unresolved: u,
                        });
                    }
                }
            }
            "RUN" => {
                let Some(s) = cur.as_mut() else { continue };
                let mut scripts: Vec<(String, PosMap, bool)> = Vec::new();
                if let Some(argv) = &ins.json {
                    if argv.len() >= 3
                        && matches!(argv[0].rsplit('/').next(), Some("sh" | "bash"))
                        && argv[1] == "-c"
                    {
                        let mut m = PosMap::default();
                        let p = ins.pos();
                        m.push(0, p.line, p.col);
                        scripts.push((argv[2].clone(), m, true));
                    } else {
                        let quoted: Vec<String> = argv
                            .iter()
                            .map(|a| format!("'{}'", a.replace('\'', "")))
                            .collect();
                        let mut m = PosMap::default();
                        let p = ins.pos();
                        m.push(0, p.line, p.col);
                        scripts.push((quoted.join(" "), m, true));
                    }
                } else {
                    let rest_map = RestMap(ins);
                    scripts.push((ins.rest.clone(), rest_map.to_posmap(), true));
                    // `RUN <<EOF` / `RUN bash <<EOF`: the bodies are the scripts (the line
                    // is read once, whatever the number of heredocs).
                    let runs_shell = !ins.heredocs.is_empty() && {
                        let mut v2 = stage_vars.clone();
                        let (head, _) =
                            shell::try_parse_script_within(&ins.rest, &mut v2, &mut budget);
                        head.iter().all(|c| {
                            c.words.is_empty()
                                || matches!(
                                    c.words[0].text.rsplit('/').next(),
                                    Some("sh" | "bash" | "ash" | "dash" | "zsh")
                                )
                        })
                    };
                    for h in &ins.heredocs {
                        if runs_shell {
                            scripts.push((
                                h.content.clone(),
                                heredoc_map(h.first_line, &h.content),
                                h.expand,
                            ));
                        }
                    }
                }
                let read = |p: &str| read_context_file(ctx.as_deref(), &s.copies, p);
                for (text, map, _expand) in scripts {
                    let mut vars = stage_vars.clone();
                    let (cmds, limit) =
                        shell::try_parse_script_within(&text, &mut vars, &mut budget);
                    // The Dockerfile-wide budget is reported once, where it ran out.
                    let limit = limit.filter(|l| budget.should_report(*l));
                    if let Some(l) = limit {
                        errors.push(SpecError {
                            pos: ins.pos(),
                            message: format!("RUN: {l}"),
                        });
                    }
                    let mut vars2 = stage_vars.clone();
                    for c in cmds {
                        let mut l = LCmd::from_shell_owned(c, &vars2, &|o| map.pos(o));
                        l.run = ins.pos();
                        // Track assignments and exports for later commands of the same RUN.
                        if l.words.is_empty() {
                            for (k, v) in &l.assigns {
                                vars2.insert(k.clone(), Var::Set(v.clone()));
                            }
                        } else if l.words[0].text == "export" {
                            for w in &l.words[1..] {
                                if let Some((k, v)) = w.text.split_once('=') {
                                    vars2.insert(k.to_string(), Var::Set(v.to_string()));
                                }
                            }
                        }
                        s.installs.extend(pkg::installs(&l, &read));
                        s.cmds.push(l);
                    }
                }
            }
            "COPY" | "ADD" => {
                let Some(s) = cur.as_mut() else { continue };
                let words: Vec<String> = match &ins.json {
                    Some(a) => a.clone(),
                    None => split_args(&ins.rest, escape)
                        .iter()
                        .map(|w| {
                            expand_checked(&w.text, &stage_vars, escape, ins.pos(), &mut errors).0
                        })
                        .collect(),
                };
                if words.len() >= 2 {
                    let (srcs, dest) = words.split_at(words.len() - 1);
                    s.copies.push(CopyIns {
                        cmd: ins.cmd.clone(),
                        from: ins
                            .flag("from")
                            .map(|f| expand_word(f, &stage_vars, escape).0),
                        srcs: srcs.to_vec(),
                        dest: dest[0].clone(),
                        pos: ins.pos(),
                    });
                }
            }
            _ => {}
        }
    }
    finish(&mut cur, &stage_vars, &mut stages, &mut stage_names);

    // Which stages get built.
    let target_idx = match &opts.target {
        Some(t) => match stages
            .iter()
            .position(|s| s.name.as_deref() == Some(&t.to_ascii_lowercase()))
        {
            Some(i) => Some(i),
            None => {
                errors.push(SpecError {
                    pos: Pos { line: 1, col: 1 },
                    message: format!("target stage {t:?} could not be found"),
                });
                None
            }
        },
        None => None,
    };
    match target_idx {
        None => stages.iter_mut().for_each(|s| s.built = true),
        Some(t) => {
            let mut todo = vec![t];
            while let Some(i) = todo.pop() {
                if stages[i].built {
                    continue;
                }
                stages[i].built = true;
                if let Some(p) = stages[i].parent {
                    todo.push(p);
                }
                for c in stages[i].copies.clone() {
                    if let Some(f) = &c.from {
                        let f = f.to_ascii_lowercase();
                        if let Some(j) = stages.iter().position(|s| {
                            s.name.as_deref() == Some(f.as_str()) || s.index.to_string() == f
                        }) {
                            if j < i {
                                todo.push(j);
                            }
                        }
                    }
                }
            }
        }
    }
    BuildFacts {
        file: file.to_string(),
        df,
        stages,
        errors,
    }
}

struct RestMap<'a>(&'a Instruction);
impl RestMap<'_> {
    fn to_posmap(&self) -> PosMap {
        // Sample the instruction map at every byte of `rest` where a segment starts; cheap
        // because rest is one joined line.
        let ins = self.0;
        let mut m = PosMap::default();
        let mut last: Option<Pos> = None;
        for (i, _) in ins.rest.char_indices() {
            let p = ins.pos_in_rest(i);
            let contiguous = match last {
                Some(l) => l.line == p.line && l.col + 1 == p.col,
                None => false,
            };
            if !contiguous {
                m.push(i, p.line, p.col);
            }
            last = Some(p);
        }
        if last.is_none() {
            let p = ins.pos_in_rest(0);
            m.push(0, p.line, p.col);
        }
        m
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
    use crate::spec::expand::MAX_FILE;

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
        use crate::spec::expand::MAX_WORDS;
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
