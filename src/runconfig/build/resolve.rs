//! The resolving pass: the steps the syntax pass found ([`super::syntax`]) evaluated the way
//! BuildKit does, filling each [`Stage`] once: global ARGs expand FROM lines, `--build-arg`
//! overrides defaults, a stage re-declares a global ARG to see it, ENV and ARG values expand
//! later instructions, `FROM <stage>` inherits the stage's image facts and environment, a
//! base image's facts (and the environment it sets) come from the knowledge tables passed in,
//! RUN commands are read as shell with the stage's variables into commands and installs, and
//! `--target` picks the stages that get built.

use super::syntax::{Step, Syntax};
use super::*;

/// The state of the evaluation: the scopes, the stages so far and the open one.
struct Resolver<'a> {
    df: &'a Dockerfile,
    opts: &'a BuildOptions,
    facts: &'a Facts,
    errors: Vec<(usize, SpecError)>,
    global: Vars,
    /// Global ARG defaults and where they are written, every definition (for
    /// [`Stage::image_args`]).
    global_defaults: Vec<(String, String, Pos)>,
    stages: Vec<Stage>,
    cur: Option<Stage>,
    stage_vars: Vars,
    /// What the values and RUN words of this Dockerfile may expand to, together.
    budget: ExpansionBudget,
    /// Stage name → index of the last stage with that name (what `FROM <name>` refers to):
    /// one lookup per FROM, not a scan of every earlier stage.
    stage_names: HashMap<String, usize>,
}

/// Evaluate `syntax`'s steps over `df` into stages (which are built included), with the
/// syntax errors and those of evaluation in instruction order. `facts` answers what a base
/// image is.
pub(super) fn resolve(
    df: &Dockerfile,
    syntax: Syntax,
    opts: &BuildOptions,
    facts: &Facts,
) -> (Vec<Stage>, Vec<SpecError>) {
    let mut r = Resolver {
        df,
        opts,
        facts,
        errors: Vec::new(),
        global: Vars::new(),
        global_defaults: Vec::new(),
        stages: Vec::new(),
        cur: None,
        stage_vars: Vars::new(),
        budget: ExpansionBudget::per_file(),
        stage_names: HashMap::new(),
    };
    for (i, step) in syntax.steps {
        let ins = &df.instructions[i];
        match step {
            Step::From {
                image,
                offset,
                name,
            } => r.from(i, ins, &image, offset, name),
            Step::EndStage => r.finish_stage(),
            Step::Arg => r.arg(i, ins),
            Step::Env => r.env(i, ins),
            Step::Run => r.run(i, ins),
            Step::Copy => r.copy(i, ins),
        }
    }
    r.finish_stage();
    let mut errors = syntax.errors;
    errors.append(&mut r.errors);
    // Instruction order, as one pass over the file reports them (the sort is stable).
    errors.sort_by_key(|(i, _)| *i);
    let mut errors: Vec<SpecError> = errors.into_iter().map(|(_, e)| e).collect();
    let mut stages = r.stages;
    select_built(&mut stages, opts.target.as_deref(), &mut errors);
    (stages, errors)
}

impl Resolver<'_> {
    fn finish_stage(&mut self) {
        if let Some(mut s) = self.cur.take() {
            s.vars = self.stage_vars.clone();
            if let Some(n) = &s.name {
                self.stage_names.insert(n.clone(), s.index);
            }
            self.stages.push(s);
        }
    }

    /// `word` expanded with `vars` ([`expand_checked`]), an error recorded for instruction `i`.
    fn expand(&mut self, i: usize, word: &str, scope: Scope, pos: Pos) -> (String, bool) {
        let vars = match scope {
            Scope::Global => &self.global,
            Scope::Stage => &self.stage_vars,
        };
        let mut errs = Vec::new();
        let out = expand_checked(word, vars, self.df.escape, pos, &mut errs);
        self.errors.extend(errs.into_iter().map(|e| (i, e)));
        out
    }

    /// [`within_values_budget`], an error recorded for instruction `i`.
    fn charge(&mut self, i: usize, e: (String, bool), word: &str, pos: Pos) -> (String, bool) {
        let mut errs = Vec::new();
        let out = within_values_budget(e, word, &mut self.budget, pos, &mut errs);
        self.errors.extend(errs.into_iter().map(|e| (i, e)));
        out
    }

    fn from(
        &mut self,
        i: usize,
        ins: &Instruction,
        word: &str,
        offset: usize,
        name: Option<String>,
    ) {
        self.finish_stage();
        let (image, unresolved) = self.expand(i, word, Scope::Global, ins.pos());
        let parent = self.stage_names.get(&image.to_ascii_lowercase()).copied();
        let (root_ref, info, vars) = match parent {
            Some(p) => {
                let ps = &self.stages[p];
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
                    .map(|r| image_info(r, self.facts))
                    .unwrap_or_else(ImageInfo::unknown);
                let v = base_env(&info);
                (r, info, v)
            }
        };
        self.stage_vars = vars;
        // The ARGs the reference names, and those their defaults name in turn
        // (`ARG BASE=nvidia/cuda:${CUDA}-devel` … `FROM ${BASE}`).
        let mut image_args: Vec<(String, String, Pos)> = Vec::new();
        let mut texts = vec![word.to_string()];
        while let Some(t) = texts.pop() {
            for a in &self.global_defaults {
                // Every definition of a name: a redefinition may build on the
                // earlier value (`ARG B=${B:-ubuntu}`).
                if refers_to(&t, &a.0) && !image_args.iter().any(|x| x.2 == a.2) {
                    texts.push(a.1.clone());
                    image_args.push(a.clone());
                }
            }
        }
        self.cur = Some(Stage {
            image_args,
            index: self.stages.len(),
            name,
            image,
            image_pos: ins.pos_in_rest(offset),
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

    fn arg(&mut self, i: usize, ins: &Instruction) {
        for (name, default, off) in kv_words(ins, self.df.escape, false) {
            let scope = if self.cur.is_some() {
                Scope::Stage
            } else {
                Scope::Global
            };
            let val = if let Some(v) = self.opts.build_args.get(&name) {
                Some((v.clone(), false))
            } else if let Some(d) = &default {
                let pos = ins.pos_in_rest(off);
                let e = self.expand(i, d, scope, pos);
                Some(self.charge(i, e, d, pos))
            } else if self.cur.is_some() {
                // Re-declared global ARG: takes the global value.
                match self.global.get(&name) {
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
            if let Some(s) = self.cur.as_mut() {
                self.stage_vars.insert(name.clone(), var);
                s.envs.push(EnvSet {
                    name,
                    unresolved: val.as_ref().map(|v| v.1).unwrap_or(false),
                    value: val.map(|v| v.0),
                    pos: ins.pos_in_rest(off),
                    is_arg: true,
                });
            } else {
                if let (Some(raw), false) = (&default, self.opts.build_args.contains_key(&name)) {
                    self.global_defaults
                        .push((name.clone(), raw.clone(), ins.pos_in_rest(off)));
                }
                self.global.insert(name, var);
            }
        }
    }

    fn env(&mut self, i: usize, ins: &Instruction) {
        let kvs = kv_words(ins, self.df.escape, true);
        let before = self.stage_vars.clone();
        for (name, value, off) in kvs {
            let word = value.as_deref().unwrap_or("");
            let pos = ins.pos_in_rest(off);
            let mut errs = Vec::new();
            let e = expand_checked(word, &before, self.df.escape, pos, &mut errs);
            self.errors.extend(errs.into_iter().map(|e| (i, e)));
            let (v, u) = self.charge(i, e, word, pos);
            self.stage_vars.insert(
                name.clone(),
                if u { Var::Unknown } else { Var::Set(v.clone()) },
            );
            if let Some(s) = self.cur.as_mut() {
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

    fn run(&mut self, i: usize, ins: &Instruction) {
        let Some(s) = self.cur.as_mut() else { return };
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
                let mut v2 = self.stage_vars.clone();
                let (head, _) =
                    shell::try_parse_script_within(&ins.rest, &mut v2, &mut self.budget);
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
        let ctx = self.opts.context.as_deref();
        for (text, map, _expand) in scripts {
            let mut vars = self.stage_vars.clone();
            let (cmds, limit) = shell::try_parse_script_within(&text, &mut vars, &mut self.budget);
            // The Dockerfile-wide budget is reported once, where it ran out.
            let limit = limit.filter(|l| self.budget.should_report(*l));
            if let Some(l) = limit {
                self.errors.push((
                    i,
                    SpecError {
                        pos: ins.pos(),
                        message: format!("RUN: {l}"),
                    },
                ));
            }
            let mut vars2 = self.stage_vars.clone();
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
                let read = |p: &str| read_context_file(ctx, &s.copies, p);
                let found = pkg::installs(&l, &read);
                s.installs.extend(found);
                s.cmds.push(l);
            }
        }
    }

    fn copy(&mut self, i: usize, ins: &Instruction) {
        let escape = self.df.escape;
        let words: Vec<String> = match &ins.json {
            Some(a) => a.clone(),
            None => split_args(&ins.rest, escape)
                .iter()
                .map(|w| self.expand(i, &w.text, Scope::Stage, ins.pos()).0)
                .collect(),
        };
        let Some(s) = self.cur.as_mut() else { return };
        if words.len() >= 2 {
            let (srcs, dest) = words.split_at(words.len() - 1);
            s.copies.push(CopyIns {
                cmd: ins.cmd.clone(),
                from: ins
                    .flag("from")
                    .map(|f| expand_word(f, &self.stage_vars, escape).0),
                srcs: srcs.to_vec(),
                dest: dest[0].clone(),
                pos: ins.pos(),
            });
        }
    }
}

/// Which variables a word expands with.
#[derive(Clone, Copy)]
enum Scope {
    /// Before the first FROM (and in FROM lines): the global ARGs.
    Global,
    /// The open stage's ARG and ENV, over what its image sets.
    Stage,
}

/// Mark the stages `--target` builds (all without one): the target, its FROM ancestors and the
/// stages it copies from, transitively. An unknown target is an error.
fn select_built(stages: &mut [Stage], target: Option<&str>, errors: &mut Vec<SpecError>) {
    let target_idx = match target {
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
}

/// Environment the known base images set (from their published Dockerfiles:
/// <https://gitlab.com/nvidia/container-images/cuda/-/tree/master/dist>).
pub(super) fn base_env(info: &ImageInfo) -> Vars {
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
pub(super) fn kv_words(
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

pub(super) fn heredoc_map(first_line: u32, content: &str) -> PosMap {
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
pub(super) fn expand_checked(
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
pub(super) fn within_values_budget(
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
