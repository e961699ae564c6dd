//! GL107: TORCH_CUDA_ARCH_LIST / -gencode / CMAKE_CUDA_ARCHITECTURES without code for the
//! target GPUs, or left empty for a build without a GPU.

use crate::arch::{ArchTarget, ArchVariant, CodeKind};
use crate::finding::{Finding, Location, Severity};
use crate::fix::suggest::arch_list;
use crate::matrix::Facts;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::compile::{
    builds_python_extension, gencode_targets, ggml_cuda_option, may_compile, nvcc_flag_words,
};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::image::ImageKind;
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL107"),
    name: "arch-list-misses-target",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning, Severity::Info],
    summary: "The CUDA architecture list compiled into the image has no code for a target GPU",
    doc: RuleDoc {
        what:
            "TORCH_CUDA_ARCH_LIST, nvcc `-gencode` / `-arch` flags or CMAKE_CUDA_ARCHITECTURES in \
            the Dockerfile list no SASS that runs on a target GPU and no PTX old enough to JIT \
            for it (error); names an architecture the base image's nvcc cannot compile, so the \
            build fails (error); reaches a target only through PTX JIT (info); or \
            TORCH_CUDA_ARCH_LIST is declared (ARG) without a value or set to an empty one \
            (warning). An ARG counts only in a stage whose commands may compile; build arguments \
            (compose `build.args`, `docker build --build-arg`, bake `args`) are judged too. \
            Targets spelled from an ARG (`code=sm_${CUDA_COMPUTE_CAP}`) are reported at the ARG \
            whose default chooses them.",
        why:
            "Kernels compiled during `docker build` see no GPU, so the list decides which GPUs can \
            run them. A missing architecture gives `no kernel image is available for execution on \
            the device` at run time. SASS runs only within its major (8.0 runs on 8.6/8.9, not \
            9.0); PTX (`+PTX`) JITs forward. An empty TORCH_CUDA_ARCH_LIST during a GPU-less \
            build falls back to torch's defaults for the toolkit, which may not be what you \
            deploy on.",
        example: "`ENV TORCH_CUDA_ARCH_LIST=\"7.0;7.5;8.0;8.6\"` deployed on H100 (9.0).",
        fix: "Add the target architectures (`9.0`), or end the list with `+PTX`. The computed \
            fix is the list that covers every target; in a Dockerfile, `--fix` writes it into \
            each place that writes the same `TORCH_CUDA_ARCH_LIST` value, keeping the old \
            list's other entries (safe when the base image's nvcc compiles every entry).",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py",
            "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list",
            "https://cmake.org/cmake/help/latest/variable/CMAKE_CUDA_ARCHITECTURES.html",
        ],
    },
};

/// Parse an arch list; None when it cannot be judged (`all`, `native`, unresolved) or an entry
/// is not understood (see [`parse_arch_list_parts`]).
pub fn parse_arch_list(v: &str, facts: &Facts) -> Option<Vec<ArchTarget>> {
    match parse_arch_list_parts(v, facts)? {
        (l, unknown) if unknown.is_empty() && !l.is_empty() => Some(l),
        _ => None,
    }
}

/// Parse an arch list into the targets understood and the entries not understood (a named
/// architecture we have no row for, such as `Ampere+Tegra`): those are unknown, never dropped.
/// None when the list cannot be judged at all (`all`, `native`, unresolved `$VAR`).
pub fn parse_arch_list_parts(v: &str, facts: &Facts) -> Option<(Vec<ArchTarget>, Vec<String>)> {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for raw in v.split([';', ' ', ',']).filter(|s| !s.trim().is_empty()) {
        let e = raw.trim().trim_matches(['"', '\'']);
        if e.contains('$')
            || matches!(
                e.to_ascii_lowercase().as_str(),
                "all" | "all-major" | "native"
            )
        {
            return None;
        }
        if let Some(named) = facts.arch_list_named(e) {
            let (l, u) = parse_arch_list_parts(&named.value, facts)?;
            out.extend(l);
            unknown.extend(u);
            continue;
        }
        match parse_entry(e) {
            Some(l) => out.extend(l),
            None => unknown.push(e.to_string()),
        }
    }
    Some((out, unknown))
}

/// One numeric entry: `8.6`, `8.6+PTX`, CMake's `80`, `80-real`, `80-virtual`, `90a`.
fn parse_entry(e: &str) -> Option<Vec<ArchTarget>> {
    let (core, ptx) = match e.strip_suffix("+PTX").or_else(|| e.strip_suffix("+ptx")) {
        Some(c) => (c, true),
        None => (e, false),
    };
    let (core, real, virt) = match (core.strip_suffix("-real"), core.strip_suffix("-virtual")) {
        (Some(c), _) => (c, true, false),
        (_, Some(c)) => (c, false, true),
        _ => (core, true, !core.contains('.')),
    };
    let variant = if core.ends_with('a') {
        ArchVariant::ArchSpecific
    } else if core.ends_with('f') {
        ArchVariant::FamilySpecific
    } else {
        ArchVariant::Generic
    };
    let cc: crate::arch::ComputeCapability = core.trim_end_matches(['a', 'f']).parse().ok()?;
    let mut out = Vec::new();
    if real {
        out.push(ArchTarget::new(CodeKind::Sass, cc.sm(), variant));
    }
    if ptx || virt {
        out.push(ArchTarget::new(CodeKind::Ptx, cc.sm(), variant));
    }
    Some(out)
}

/// An arch list with entries gpulint does not understand, whose understood entries miss a
/// target GPU: whether the unknown entries cover it is unknown, which fails like a miss.
fn unknown_entries_finding(
    what: &str,
    known: &[ArchTarget],
    unknown: &[String],
    cx: &SpecContext,
    at: Location,
) -> Option<Finding> {
    if unknown.is_empty() {
        return None;
    }
    let missed: Vec<String> = cx
        .targets
        .iter()
        .flat_map(|t| t.capabilities())
        .filter(|cc| !known.iter().any(|a| a.runs_on(*cc)))
        .map(|cc| cc.to_string())
        .collect();
    if missed.is_empty() {
        return None;
    }
    Some(
        META.finding(format!(
            "`{what}`: whether it builds code for compute capability {} is unknown: gpulint does not know the architecture name(s) {}",
            missed.join(", "),
            unknown.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ")
        ))
        .with_location(at)
        .with_help("name the compute capabilities numerically (e.g. 8.7 for Orin, 11.0 for Thor)"),
    )
}

/// One arch list of a group, and where it is.
type Member<'a> = (&'a [ArchTarget], Pos);

/// A compose service's arch-list build arguments, where its Dockerfile could not be read
/// (when it is, the Dockerfile is analyzed with them): the list is passed to the build, so
/// what it leaves out is left out of the image's kernels.
/// Every compute capability of every target, ascending, each once.
fn fleet_capabilities(cx: &SpecContext) -> Vec<crate::arch::ComputeCapability> {
    let mut v: Vec<_> = cx.targets.iter().flat_map(|t| t.capabilities()).collect();
    v.sort();
    v.dedup();
    v
}

fn build_arg_lists(specs: &[crate::runconfig::runspec::RunSpec], cx: &SpecContext) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in specs.iter().filter(|r| r.built_gpu_image.is_none()) {
        for (k, v, p) in &r.build_args {
            if !matches!(
                k.as_str(),
                "TORCH_CUDA_ARCH_LIST" | "CMAKE_CUDA_ARCHITECTURES" | "CUDA_ARCHITECTURES"
            ) {
                continue;
            }
            let Some(l) = parse_arch_list(v, cx.facts) else {
                continue;
            };
            let missed: std::collections::BTreeSet<String> = cx
                .targets
                .iter()
                .flat_map(|t| t.capabilities())
                .filter(|cc| !l.iter().any(|a| a.runs_on(*cc)))
                .map(|cc| cc.to_string())
                .collect();
            if missed.is_empty() {
                continue;
            }
            let missed: Vec<String> = missed.into_iter().collect();
            let mut f = META
                .finding(format!(
                    "build arg `{k}={v}` of service `{}` builds no code that runs on compute \
                     capability {}: kernels compiled with it fail there with 'no kernel image \
                     is available for execution on the device'",
                    r.name,
                    missed.join(", ")
                ))
                .with_location(loc(&r.file, *p))
                .with_help(format!(
                    "add {} to the list, or end it with +PTX",
                    missed.join(", ")
                ));
            if let Some(fix) = arch_list::fix_for(
                cx.facts,
                &fleet_capabilities(cx),
                None,
                arch_list::Syntax::of(k),
            ) {
                f = f.with_fix(fix);
            }
            out.push(f);
        }
    }
    out
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    out.extend(findings(&cx.subject, cx));
}

fn findings(s: &Subject, cx: &SpecContext) -> Vec<Finding> {
    let bf = match s {
        Subject::Dockerfile(bf) => bf,
        Subject::Runs(specs) => return build_arg_lists(specs, cx),
        Subject::Script(_) => return Vec::new(),
    };
    // (what, list, where, the instruction it belongs to)
    let mut lists: Vec<(String, Vec<ArchTarget>, Pos, Pos)> = Vec::new();
    // (instruction, `NAME=value`, where): the build ARG an instruction's targets come from.
    let mut origins: Vec<(Pos, String, Pos)> = Vec::new();
    let mut out = Vec::new();
    for st in bf.built_stages() {
        let first_list = lists.len();
        // An ARG reaches only this stage's commands (an ENV also the image and its users):
        // where none of them compiles, the list builds nothing.
        let stage_compiles = st.cmds.iter().any(may_compile);
        for e in &st.envs {
            if !matches!(
                e.name.as_str(),
                "TORCH_CUDA_ARCH_LIST" | "CMAKE_CUDA_ARCHITECTURES" | "CUDA_ARCHITECTURES"
            ) || (e.is_arg && !stage_compiles)
            {
                continue;
            }
            match &e.value {
                None if e.is_arg && e.name == "TORCH_CUDA_ARCH_LIST" => {
                    let set_later = st
                        .envs
                        .iter()
                        .any(|x| x.name == e.name && x.value.is_some());
                    if !set_later {
                        out.push(
                            META.finding("ARG TORCH_CUDA_ARCH_LIST has no default: unless --build-arg sets it, extensions built here (no GPU visible during docker build) get torch's fallback architectures")
                                .with_severity(Severity::Warning)
                                .with_location(loc(&bf.file, e.pos))
                                .with_help("give it a default that covers your GPUs, e.g. ARG TORCH_CUDA_ARCH_LIST=\"8.0;8.6;8.9;9.0+PTX\""),
                        );
                    }
                }
                // torch's cpp_extension reads the list with `if not _arch_list:`, so an empty
                // value (`ENV TORCH_CUDA_ARCH_LIST=${CUDA_ARCH}` with `ARG CUDA_ARCH=""`) is unset.
                Some(v)
                    if !e.unresolved
                        && e.name == "TORCH_CUDA_ARCH_LIST"
                        && stage_compiles
                        && v.trim().trim_matches(['"', '\'']).trim().is_empty() =>
                {
                    out.push(
                        META.finding(format!("{} TORCH_CUDA_ARCH_LIST is set to an empty value, which torch treats as unset: unless --build-arg fills it, extensions built here (no GPU visible during docker build) get torch's fallback architectures", if e.is_arg { "ARG" } else { "ENV" }))
                            .with_severity(Severity::Warning)
                            .with_location(loc(&bf.file, e.pos))
                            .with_help("give it a value that covers your GPUs, e.g. \"8.0;8.6;8.9;9.0+PTX\""),
                    );
                }
                Some(v) if !e.unresolved => {
                    let what = format!("{}={v}", e.name);
                    if let Some((l, u)) = parse_arch_list_parts(v, cx.facts) {
                        match unknown_entries_finding(&what, &l, &u, cx, loc(&bf.file, e.pos)) {
                            Some(f) => out.push(f),
                            None if u.is_empty() && !l.is_empty() => {
                                lists.push((what, l, e.pos, e.pos))
                            }
                            None => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for c in &st.cmds {
            for (k, v) in &c.assigns {
                if k == "TORCH_CUDA_ARCH_LIST" {
                    let what = format!("{k}={v}");
                    if let Some((l, u)) = parse_arch_list_parts(v, cx.facts) {
                        match unknown_entries_finding(&what, &l, &u, cx, loc(&bf.file, c.pos)) {
                            Some(f) => out.push(f),
                            None if u.is_empty() && !l.is_empty() => {
                                lists.push((what, l, c.pos, c.pos))
                            }
                            None => {}
                        }
                    }
                }
            }
            for w in &c.words {
                if let Some(v) = w.text.strip_prefix("-DCMAKE_CUDA_ARCHITECTURES=") {
                    if let Some(l) = parse_arch_list(v, cx.facts) {
                        lists.push((w.text.clone(), l, w.pos, w.pos));
                    }
                }
            }
            let g = gencode_targets(&nvcc_flag_words(c));
            if !g.is_empty() {
                lists.push(("-gencode flags".into(), g, c.pos, c.run));
                // Targets spelled from a build ARG (`code=sm_${CUDA_COMPUTE_CAP}`): the ARG's
                // default chooses what the image gets, so that is where it is reported.
                let arg = st
                    .envs
                    .iter()
                    .filter(|e| e.is_arg && e.value.is_some())
                    .find(|e| {
                        c.words.iter().any(|w| {
                            w.raw.contains("code=")
                                && crate::runconfig::build::refers_to(&w.raw, &e.name)
                        })
                    });
                if let (Some(e), false) = (arg, origins.iter().any(|o| o.0 == c.run)) {
                    let v = e.value.clone().unwrap_or_default();
                    origins.push((c.run, format!("{}={v}", e.name), e.pos));
                }
            }
        }
        if let Some(cuda) = st.info.cuda {
            for (what, l, pos, _) in &lists[first_list..] {
                let f =
                    unsupported_by_nvcc(what, l, cuda, st.info.inferred, cx, loc(&bf.file, *pos));
                // An ENV inherited by several built stages is judged once.
                if let Some(f) = f.filter(|f| {
                    !out.iter()
                        .any(|o: &Finding| o.location == f.location && o.message == f.message)
                }) {
                    out.push(f);
                }
            }
        }
    }
    out.extend(builds_without_a_list(bf, cx));
    // Several built stages may share one instruction (inherited ENV): judge it once.
    let mut seen = std::collections::BTreeSet::new();
    lists.retain(|(what, _, pos, _)| seen.insert((what.clone(), pos.line, pos.col)));
    // One finding per instruction: all `-gencode` commands of one RUN (e.g. the branches of
    // an `if` on a build arg, one per GPU generation) together, naming every target GPU one
    // of them misses; not one finding per command and GPU.
    let mut groups: Vec<(String, Pos, Vec<Member>)> = Vec::new();
    // (what the list says and what it misses, the finding): merged by `once_per_list`.
    let mut judged: Vec<(String, Finding)> = Vec::new();
    for (what, l, pos, group) in &lists {
        match groups
            .iter_mut()
            .find(|(w, g, _)| w == what && g.line == group.line && g.col == group.col)
        {
            Some((_, _, v)) => v.push((l, *pos)),
            None => groups.push((what.clone(), *group, vec![(l, *pos)])),
        }
    }
    for (what, group, members) in &groups {
        let misses = |l: &[ArchTarget], cc| !l.iter().any(|a| a.runs_on(cc));
        let offending: Vec<&Member> = members
            .iter()
            .filter(|(l, _)| {
                cx.targets
                    .iter()
                    .flat_map(|t| t.capabilities())
                    .any(|cc| misses(l, cc))
            })
            .collect();
        let Some((_, first)) = offending.first() else {
            continue;
        };
        let mut missed: Vec<(String, String)> = Vec::new(); // (target, "GPU (compute capability X)")
        let mut ccs: Vec<crate::arch::ComputeCapability> = Vec::new();
        for t in cx.targets {
            for cc in t.capabilities() {
                if !offending.iter().any(|(l, _)| misses(l, cc)) {
                    continue;
                }
                ccs.push(cc);
                let gpu = t
                    .gpus
                    .iter()
                    .find(|g| g.cc == Some(cc))
                    .map(|g| g.name.clone())
                    .unwrap_or_default();
                let gpu = if cx.targets.len() > 1 && !gpu.is_empty() && gpu != t.name {
                    format!("{gpu} ({}, compute capability {cc})", t.name)
                } else {
                    format!("{gpu} (compute capability {cc})")
                };
                if !missed.iter().any(|(tn, g)| *tn == t.name && *g == gpu) {
                    missed.push((t.name.clone(), gpu));
                }
            }
        }
        ccs.sort();
        ccs.dedup();
        let ccs: Vec<String> = ccs.iter().map(|c| c.to_string()).collect();
        let gpus: Vec<&str> = missed.iter().map(|(_, g)| g.as_str()).collect();
        let origin = origins.iter().find(|o| o.0 == *group);
        let (at, from) = match origin {
            Some((_, arg, p)) => (*p, format!(" (targets from `ARG {arg}`)")),
            None => (*first, String::new()),
        };
        let subject = if offending.len() > 1 {
            let lines: Vec<String> = offending.iter().map(|(_, p)| p.line.to_string()).collect();
            format!(
                "`{what}`{from} in {} commands of this instruction (lines {}): at least one of them builds",
                offending.len(),
                lines.join(", ")
            )
        } else {
            format!("`{what}`{from} builds")
        };
        let mut f = META
            .finding(format!(
                "{subject} no code that runs on {}: {} kernels fail with 'no kernel image is available'",
                gpus.join(", "),
                if offending.len() > 1 { "such" } else { "its" }
            ))
            .with_location(loc(&bf.file, at));
        // The list that covers the whole fleet, checked against the oldest nvcc a stage of
        // this file builds with (the base image's CUDA).
        let fleet = fleet_capabilities(cx);
        let nvcc = bf.stages.iter().filter_map(|s| s.info.cuda).min();
        f = match arch_list::fix_for(cx.facts, &fleet, nvcc, arch_list::Syntax::of(what)) {
            Some(fix) => f
                .with_help(format!(
                    "add {} to the list, or end it with +PTX for forward compatibility; a list that covers every target: {}",
                    ccs.join(", "),
                    fix.replacement
                ))
                .with_fix(fix),
            None => f.with_help(format!(
                "add {} to the list, or end it with +PTX for forward compatibility",
                ccs.join(", ")
            )),
        };
        let mut targets: Vec<&str> = missed.iter().map(|(t, _)| t.as_str()).collect();
        targets.dedup();
        if let [one] = targets.as_slice() {
            f = f.with_target(one.to_string());
        }
        judged.push((format!("{what}\0{}", gpus.join(", ")), f));
    }
    for (what, group, members) in &groups {
        let ptx_only: Vec<String> = cx
            .targets
            .iter()
            .flat_map(|t| t.capabilities())
            .filter(|cc| {
                members
                    .iter()
                    .all(|(l, _)| l.iter().any(|a| a.runs_on(*cc)))
                    && members
                        .iter()
                        .any(|(l, _)| !l.iter().any(|a| a.kind != CodeKind::Ptx && a.runs_on(*cc)))
            })
            .map(|cc| cc.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if ptx_only.is_empty() {
            continue;
        }
        judged.push((
            format!("{what}\0{}", ptx_only.join(", ")),
            META.finding(format!(
                "`{what}` has no SASS for compute capability {}: kernels reach it only through \
                 PTX JIT of an older architecture (each process JIT-compiles them on first use, \
                 minutes for large extensions, and newer architecture features go unused)",
                ptx_only.join(", ")
            ))
            .with_severity(Severity::Info)
            .with_location(loc(
                &bf.file,
                members.first().map(|m| m.1).unwrap_or(*group),
            ))
            .with_help(format!("add {} to the list", ptx_only.join(", "))),
        ));
    }
    out.extend(once_per_list(judged));
    out
}

/// One list value written at several places (`TORCH_CUDA_ARCH_LIST="8.0;8.6+PTX"` prefixed to
/// each extension's build in its own stage) that misses the same GPUs is one cause: one
/// finding at its first place, naming the other lines, not one finding per copy.
fn once_per_list(judged: Vec<(String, Finding)>) -> Vec<Finding> {
    let mut out: Vec<(String, Finding, Vec<u32>)> = Vec::new();
    for (key, f) in judged {
        let line = f.location.as_ref().and_then(|l| l.line);
        match out
            .iter_mut()
            .find(|(k, o, _)| *k == key && o.severity == f.severity)
        {
            Some((_, _, more)) => more.extend(line),
            None => out.push((key, f, Vec::new())),
        }
    }
    out.into_iter()
        .map(|(_, mut f, more)| {
            if !more.is_empty() {
                let lines: Vec<String> = more.iter().map(u32::to_string).collect();
                let word = if lines.len() == 1 { "line" } else { "lines" };
                f.message.push_str(&format!(
                    " (the same list also on {word} {})",
                    lines.join(", ")
                ));
            }
            f
        })
        .collect()
}

/// CUDA code compiled during `docker build` with no architecture list at all: a GPU-less
/// builder then compiles for the project's or the toolkit's defaults, not for the GPUs it is
/// deployed on. Two spellings are judged: ggml's CUDA backend switched on with no
/// CMAKE_CUDA_ARCHITECTURES (nor CUDAARCHS), and a Python CUDA extension forced to build
/// (`FORCE_CUDA=1`, apex's `--cuda_ext`) with TORCH_CUDA_ARCH_LIST unset.
fn builds_without_a_list(
    bf: &crate::runconfig::build::BuildFacts,
    cx: &SpecContext,
) -> Vec<Finding> {
    let wanted: Vec<String> = {
        let mut v: Vec<_> = cx.targets.iter().flat_map(|t| t.capabilities()).collect();
        v.sort();
        v.dedup();
        v.iter()
            .map(|c| format!("{}{}", c.major, c.minor))
            .collect()
    };
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    // Only on bases known not to set an architecture list themselves (NGC's PyTorch sets
    // TORCH_CUDA_ARCH_LIST, other images may): NVIDIA's CUDA images and pytorch/pytorch.
    for st in bf.built_stages().filter(|s| {
        !s.image_unresolved && matches!(s.info.kind, ImageKind::NvidiaCuda | ImageKind::PyTorch)
    }) {
        for c in &st.cmds {
            let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
            let declared =
                |name: &str| c.assigns.iter().any(|(k, _)| k == name) || c.vars.contains_key(name);
            let mentioned = |name: &str| {
                declared(name)
                    || words.iter().any(|w| w.contains(name))
                    || c.assigns.iter().any(|(_, v)| v.contains(name))
                    || c.var("CMAKE_ARGS").is_some_and(|v| v.contains(name))
            };
            // ggml: the option in the command line, a CMAKE_ARGS prefix or the environment.
            let ggml = c
                .words
                .iter()
                .find_map(|w| ggml_cuda_option(&w.text).map(|o| (o, w.pos)))
                .or_else(|| {
                    let v = c.var("CMAKE_ARGS")?;
                    ggml_cuda_option(&v).map(|o| (format!("CMAKE_ARGS={o}"), c.pos))
                });
            if let Some((what, pos)) = ggml.filter(|_| {
                may_compile(c) && !mentioned("CMAKE_CUDA_ARCHITECTURES") && !declared("CUDAARCHS")
            }) {
                if seen.insert((pos.line, pos.col)) {
                    out.push(
                        META.finding(format!(
                            "`{what}` builds ggml's CUDA kernels with no CMAKE_CUDA_ARCHITECTURES: \
                             no GPU is visible during docker build, so the architectures are \
                             ggml's built-in defaults (or `native`, which fails without a GPU), \
                             not a list chosen for the GPUs it runs on"
                        ))
                        .with_severity(Severity::Warning)
                        .with_location(loc(&bf.file, pos))
                        .with_help(format!(
                            "add -DCMAKE_CUDA_ARCHITECTURES=\"{}\"",
                            if wanted.is_empty() {
                                "75;80;86;89;90".to_string()
                            } else {
                                wanted.join(";")
                            }
                        )),
                    );
                }
                continue;
            }
            // A Python CUDA extension forced to build without a GPU.
            let forced = c.var("FORCE_CUDA").is_some_and(|v| v.trim() == "1")
                || words.iter().any(|w| w.contains("--cuda_ext"));
            if forced
                && builds_python_extension(&words)
                && !declared("TORCH_CUDA_ARCH_LIST")
                && seen.insert((c.pos.line, c.pos.col))
            {
                let cmd: Vec<&str> = words.iter().take(4).copied().collect();
                out.push(
                    META.finding(format!(
                        "`{}` builds a CUDA extension with TORCH_CUDA_ARCH_LIST unset: no GPU is \
                         visible during docker build, so it gets the fallback architectures of \
                         torch (or of its setup.py), not a list chosen for the GPUs it runs on",
                        cmd.join(" ")
                    ))
                    .with_severity(Severity::Warning)
                    .with_location(loc(&bf.file, c.pos))
                    .with_help(format!(
                        "set ENV TORCH_CUDA_ARCH_LIST=\"{}\" before it",
                        if wanted.is_empty() {
                            "7.5;8.0;8.6;8.9;9.0+PTX".to_string()
                        } else {
                            let mut l: Vec<String> = wanted
                                .iter()
                                .map(|w| format!("{}.{}", &w[..w.len() - 1], &w[w.len() - 1..]))
                                .collect();
                            if let Some(last) = l.last_mut() {
                                last.push_str("+PTX");
                            }
                            l.join(";")
                        }
                    )),
                );
            }
        }
    }
    out
}

/// Entries of an arch list that the stage's nvcc (its base image's CUDA release) cannot
/// compile: the build fails (`nvcc fatal : Unsupported gpu architecture 'compute_90'`; torch's
/// cpp_extension refuses the entry first). Unknown when `cuda_arch.toml` has no row.
fn unsupported_by_nvcc(
    what: &str,
    l: &[ArchTarget],
    cuda: crate::version::CudaVersion,
    inferred: bool,
    cx: &SpecContext,
    at: Location,
) -> Option<Finding> {
    let mut bad: Vec<String> = Vec::new();
    let mut source = String::new();
    for a in l {
        if let Some(s) = cx.facts.nvcc_supports(&cuda, a) {
            if !s.value {
                let n = format!("sm_{}", a.sm);
                if !bad.contains(&n) {
                    bad.push(n);
                }
                source = s.source;
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    let from = if inferred {
        " (from the base image's name)"
    } else {
        ""
    };
    Some(
        META.finding(format!(
            "`{what}` asks for {} but the base image's CUDA {}{from} cannot compile for it: \
             building the extensions fails (`nvcc fatal : Unsupported gpu architecture`) \
             (source: {source})",
            bad.join(", "),
            cuda.major_minor()
        ))
        .with_severity(if inferred {
            Severity::Warning
        } else {
            Severity::Error
        })
        .with_location(at)
        .with_help("drop those architectures, or build on a base image whose CUDA supports them"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Facts;
    use crate::runconfig::testutil::{dockerfile, target};

    #[test]
    fn lists_parse() {
        let f = Facts::embedded().unwrap();
        let l = parse_arch_list("7.0 7.5 8.0;8.6+PTX", &f).unwrap();
        assert_eq!(l.len(), 5);
        assert!(parse_arch_list("Ampere", &f)
            .unwrap()
            .iter()
            .any(|a| a.kind == CodeKind::Ptx));
        assert!(parse_arch_list("all", &f).is_none());
        assert_eq!(parse_arch_list("80-real;90", &f).unwrap().len(), 3);
    }

    #[test]
    fn torch_architecture_names_are_known() {
        // detectron2's list: every name is one of torch's named_arches.
        let f = Facts::embedded().unwrap();
        let v = "Kepler;Kepler+Tesla;Maxwell;Maxwell+Tegra;Pascal;Volta;Turing";
        let (l, u) = parse_arch_list_parts(v, &f).unwrap();
        assert!(u.is_empty(), "{u:?}");
        assert!(l.iter().any(|a| a.kind == CodeKind::Ptx));
        let t = format!("FROM nvidia/cuda:11.1.1-cudnn8-devel-ubuntu18.04\nENV TORCH_CUDA_ARCH_LIST=\"{v}\"\nRUN pip install -e repo\n");
        let out = dockerfile(&t, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("PTX JIT"), "{}", out[0].message);
    }

    #[test]
    fn misses_hopper() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST=\"7.0;7.5;8.0;8.6\"\nRUN nvcc -gencode arch=compute_90,code=sm_90 k.cu\n";
        let f = dockerfile(t, "GL107", vec![target("h100", &["9.0", "8.0"], None)]);
        let mut lines: Vec<_> = f
            .iter()
            .map(|f| f.location.as_ref().unwrap().line.unwrap())
            .collect();
        lines.sort();
        assert_eq!(lines, vec![2, 3], "{f:?}");
        assert!(f[0].message.contains("9.0") && !f[0].message.contains("8.0 ("));
        let ptx = "FROM x\nENV TORCH_CUDA_ARCH_LIST=\"8.0 8.6+PTX\"\n";
        // +PTX reaches 9.0 through JIT: no error, one info naming what is JIT-only.
        let f = dockerfile(ptx, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("compute capability 9.0"), "{f:?}");
        let full = "FROM x\nENV TORCH_CUDA_ARCH_LIST=\"8.0 9.0+PTX\"\n";
        assert!(dockerfile(full, "GL107", vec![target("h100", &["9.0"], None)]).is_empty());
    }

    /// Named architectures gpulint has no row for are unknown, never dropped: a list whose
    /// understood entries miss the target is "unknown" (failing), one that covers it is fine.
    #[test]
    fn unknown_named_arches_are_unknown_not_dropped() {
        let f = Facts::embedded().unwrap();
        let (l, u) = parse_arch_list_parts("8.0;Ampere+Tegra;Blackwell+Tegra", &f).unwrap();
        assert_eq!(u, ["Ampere+Tegra", "Blackwell+Tegra"]);
        assert_eq!(l.len(), 1);
        assert!(parse_arch_list("8.0;Ampere+Tegra", &f).is_none());
        let t = "FROM x\nENV TORCH_CUDA_ARCH_LIST=\"8.0;Ampere+Tegra\"\n";
        let out = dockerfile(t, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("unknown") && out[0].message.contains("Ampere+Tegra"));
        assert_eq!(out[0].severity, Severity::Error);
        // 8.0 SASS runs on 8.6: the unknown entry cannot matter there.
        assert!(dockerfile(t, "GL107", vec![target("a10", &["8.6"], None)]).is_empty());
    }

    /// One stage per GPU generation against a mixed fleet: one finding per stage, naming
    /// every GPU it misses, not one per stage and GPU.
    #[test]
    fn per_architecture_stages_collapse() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS base\n\
FROM base AS a100\nRUN nvcc -gencode arch=compute_80,code=sm_80 k.cu\n\
FROM base AS h100\nRUN nvcc -gencode arch=compute_90,code=sm_90 k.cu\n\
FROM base\nCOPY --from=a100 /k /a\nCOPY --from=h100 /k /h\n";
        let fleet = vec![
            target("t4", &["7.5"], None),
            target("a100", &["8.0"], None),
            target("h100", &["9.0"], None),
        ];
        let f = dockerfile(t, "GL107", fleet);
        assert_eq!(f.len(), 2, "{f:#?}");
        let a = f
            .iter()
            .find(|x| x.location.as_ref().unwrap().line == Some(3))
            .unwrap();
        assert!(
            a.message.contains("7.5") && a.message.contains("9.0"),
            "{}",
            a.message
        );
        assert!(!a.message.contains("8.0,"), "{}", a.message);
        assert_eq!(a.target, None, "several targets");
        // One target: the finding carries it.
        let f = dockerfile(t, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].target.as_deref(), Some("h100"));
    }

    /// One list copied into each extension's build (a stage per kernel) that misses the same
    /// GPUs is one finding naming every copy; a list with another value stays its own.
    #[test]
    fn one_list_repeated_across_stages_is_one_finding() {
        let build = |k: u32, list: &str| {
            format!(
                "FROM base AS k{k}\nRUN TORCH_CUDA_ARCH_LIST=\"{list}\" python setup.py build\n"
            )
        };
        let t = format!(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS base\n{}{}{}{}FROM base\n{}",
            build(1, "8.0;8.6+PTX"),
            build(2, "8.0;8.6+PTX"),
            build(3, "8.0;8.6+PTX"),
            build(4, "7.0;7.5"),
            (1..=4)
                .map(|k| format!("COPY --from=k{k} /src/build /k{k}\n"))
                .collect::<String>()
        );
        let fleet = || vec![target("t4", &["7.5"], None), target("h100", &["9.0"], None)];
        let f = dockerfile(&t, "GL107", fleet());
        let errors: Vec<_> = f.iter().filter(|f| f.severity == Severity::Error).collect();
        assert_eq!(errors.len(), 2, "{f:#?}");
        let copied = errors
            .iter()
            .find(|f| f.message.contains("8.0;8.6+PTX"))
            .unwrap();
        assert_eq!(copied.location.as_ref().unwrap().line, Some(3));
        assert!(
            copied
                .message
                .contains("(the same list also on lines 5, 7)"),
            "{}",
            copied.message
        );
        // 7.0;7.5 misses 9.0 only, a cause of its own, at its own line.
        let other = errors
            .iter()
            .find(|f| f.message.contains("7.0;7.5"))
            .unwrap();
        assert_eq!(other.location.as_ref().unwrap().line, Some(9));
        assert!(!other.message.contains("same list"), "{}", other.message);
        // The JIT-only note for 9.0 is said once for the copied list too.
        let info: Vec<_> = f.iter().filter(|f| f.severity == Severity::Info).collect();
        assert_eq!(info.len(), 1, "{info:#?}");
        assert!(
            info[0].message.contains("also on lines 5, 7"),
            "{}",
            info[0].message
        );
    }

    /// `if`/`elif` branches of one RUN, one per GPU generation: one finding for the RUN.
    #[test]
    fn targets_spelled_from_a_build_arg_are_reported_at_the_arg() {
        // One image per compute capability, chosen by the ARG's default: the default builds
        // for 8.x only, which is what the ARG line says and where it is changed.
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nARG CAP=80\nRUN true\n\
RUN if [ $CAP -lt 90 ]; then nvprune --generate-code code=sm_${CAP} a.a -o a.a; \\\n\
    else nvprune --generate-code code=sm_90 a.a -o a.a; fi\n";
        let fleet = || vec![target("fleet", &["7.5", "8.0", "9.0"], None)];
        let f = dockerfile(t, "GL107", fleet());
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(
            f[0].message.contains("(targets from `ARG CAP=80`)"),
            "{}",
            f[0].message
        );
        // Literal targets stay on their command.
        let f = dockerfile(&t.replace("sm_${CAP}", "sm_80"), "GL107", fleet());
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
    }

    #[test]
    fn branches_of_one_run_collapse() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nARG CAP=80\n\
RUN if [ $CAP -eq 80 ]; then nvcc -gencode arch=compute_80,code=sm_80 k.cu; \\\n\
    elif [ $CAP -eq 90 ]; then nvcc -gencode arch=compute_90,code=sm_90 k.cu; \\\n\
    else exit 1; fi\n";
        let f = dockerfile(
            t,
            "GL107",
            vec![target("fleet", &["7.5", "8.0", "9.0"], None)],
        );
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].message.contains("2 commands"), "{}", f[0].message);
        assert!(
            f[0].message.contains("7.5") && f[0].message.contains("9.0"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
    }

    #[test]
    fn architectures_the_base_nvcc_cannot_build_fail_the_build() {
        // nvcc 11.1 knows sm_35..sm_86 (cuda_arch.toml): 9.0 fails the build.
        let t =
            "FROM nvidia/cuda:11.1.1-devel-ubuntu20.04\nENV TORCH_CUDA_ARCH_LIST=\"7.0 8.0 9.0\"\n";
        let f = dockerfile(t, "GL107", vec![target("a100", &["8.0"], None)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message.contains("sm_90") && f[0].message.contains("CUDA 11.1"),
            "{f:?}"
        );
        // The same list on CUDA 12.4 builds.
        let ok = t.replace("11.1.1", "12.4.1");
        assert!(dockerfile(&ok, "GL107", vec![target("a100", &["8.0"], None)]).is_empty());
    }

    #[test]
    fn an_arg_in_a_stage_that_compiles_nothing_builds_nothing() {
        // The runtime stage of a wheel-building Dockerfile: its ARG reaches only apt, user
        // setup and the install of the builder's wheels.
        let rt = "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nARG TORCH_CUDA_ARCH_LIST=\"3.5;7.0;8.0\"\nRUN apt update && apt install -y python3 pip && pip3 install --upgrade pip wheel setuptools && useradd app\nRUN umask 0002 && pip3 install --no-index ./*.whl && rm -r /w\n";
        assert!(dockerfile(rt, "GL107", vec![]).is_empty());
        // The same ARG where something is built from source is judged.
        for build in [
            "pip3 install flash-attn",
            "pip install -r requirements.txt",
            "make",
            "./build.sh",
        ] {
            let t = format!("{rt}RUN {build}\n");
            assert!(!dockerfile(&t, "GL107", vec![]).is_empty(), "{build}");
        }
        // An ENV stays in the image (later builds read it), so it is judged anyway.
        let env = rt.replace("ARG TORCH", "ENV TORCH");
        assert!(!dockerfile(&env, "GL107", vec![]).is_empty());
        // An ARG without a default in such a stage is not reported either.
        let bare = rt.replace(
            "ARG TORCH_CUDA_ARCH_LIST=\"3.5;7.0;8.0\"",
            "ARG TORCH_CUDA_ARCH_LIST",
        );
        assert!(dockerfile(&bare, "GL107", vec![]).is_empty());
    }

    #[test]
    fn compose_build_args_are_arch_lists_too() {
        use crate::runconfig::testutil::runs;
        let c = "services:\n  web:\n    build:\n      context: .\n      args:\n        APP_UID: 1000\n        TORCH_CUDA_ARCH_LIST: ${TORCH_CUDA_ARCH_LIST:-7.5}\n";
        let f = runs("compose", c, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(7));
        assert!(f[0].message.contains("9.0"), "{}", f[0].message);
        let ptx = c.replace(":-7.5}", ":-7.5+PTX}");
        assert!(runs(
            "compose",
            &ptx,
            "GL107",
            vec![target("h100", &["9.0"], None)]
        )
        .is_empty());
        let list = "services:\n  web:\n    build:\n      context: .\n      args:\n        - TORCH_CUDA_ARCH_LIST=8.0\n";
        assert_eq!(
            runs(
                "compose",
                list,
                "GL107",
                vec![target("h100", &["9.0"], None)]
            )
            .len(),
            1
        );
    }

    #[test]
    fn an_empty_list_is_unset() {
        // mmcv's dev image: the ENV takes an ARG whose default is empty.
        let t = "FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel\nARG CUDA_ARCH=\"\"\nENV TORCH_CUDA_ARCH_LIST=${CUDA_ARCH}\nRUN pip install -e .\n";
        let f = dockerfile(t, "GL107", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(f[0].message.contains("empty value"), "{}", f[0].message);
        // Nothing compiles here: nothing to build with it.
        let t = t.replace("RUN pip install -e .", "RUN apt-get update");
        assert!(dockerfile(&t, "GL107", vec![]).is_empty());
        // Given a value, it is judged as a list.
        let given = "FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel\nARG CUDA_ARCH=\"8.0;9.0\"\nENV TORCH_CUDA_ARCH_LIST=${CUDA_ARCH}\nRUN pip install -e .\n";
        assert!(dockerfile(given, "GL107", vec![target("h100", &["9.0"], None)]).is_empty());
    }

    #[test]
    fn empty_arg() {
        let f = dockerfile(
            "FROM x\nARG TORCH_CUDA_ARCH_LIST\nRUN pip install .\n",
            "GL107",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    /// ggml's CUDA backend built on a GPU-less builder with no CMAKE_CUDA_ARCHITECTURES, in a
    /// CMAKE_ARGS prefix, on a cmake line or from the environment; any architecture setting
    /// (on the line, in CMAKE_ARGS, CUDAARCHS) answers it.
    #[test]
    fn ggml_cuda_without_architectures() {
        let base = "FROM nvidia/cuda:12.5.0-devel-ubuntu22.04\n";
        let f = dockerfile(
            &format!("{base}RUN CMAKE_ARGS=\"-DGGML_CUDA=on\" pip install llama-cpp-python\n"),
            "GL107",
            vec![target("l4", &["8.9"], None)],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(
            f[0].help.as_deref().unwrap().contains("\"89\""),
            "{:?}",
            f[0].help
        );
        let f = dockerfile(
            &format!("{base}ENV CMAKE_ARGS=-DLLAMA_CUBLAS=ON\nRUN apt-get update\nRUN pip install llama-cpp-python==0.2.90\n"),
            "GL107",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        let f = dockerfile(
            &format!("{base}RUN cmake -B build -DGGML_CUDA=ON && cmake --build build -j\n"),
            "GL107",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        for fine in [
            "RUN cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=\"75;80;89;90\"\n",
            "RUN CMAKE_ARGS=\"-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90\" pip install llama-cpp-python\n",
            "ENV CUDAARCHS=\"80;90\"\nRUN cmake -B build -DGGML_CUDA=ON\n",
            "RUN cmake -B build -DGGML_CUDA=OFF\n",
        ] {
            let f = dockerfile(&format!("{base}{fine}"), "GL107", vec![target("h100", &["9.0"], None)]);
            assert!(f.is_empty(), "{fine}: {f:?}");
        }
    }

    /// A Python CUDA extension forced to build (FORCE_CUDA=1, apex's --cuda_ext) with
    /// TORCH_CUDA_ARCH_LIST unset is reported at the command; a list (judged as a list) or a
    /// build that is not forced is not.
    #[test]
    fn forced_cuda_extension_without_a_list() {
        let base = "FROM pytorch/pytorch:2.1.0-cuda12.1-cudnn8-devel\n";
        let t = format!("{base}ENV FORCE_CUDA=\"1\"\nRUN git clone https://example.com/ops.git \\\n && cd ops \\\n && python setup.py build develop\n");
        let f = dockerfile(&t, "GL107", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(5));
        assert!(
            f[0].message.contains("TORCH_CUDA_ARCH_LIST unset"),
            "{}",
            f[0].message
        );
        let apex = format!(
            "{base}RUN pip install -v --no-cache-dir --global-option=\"--cuda_ext\" ./apex\n"
        );
        assert_eq!(dockerfile(&apex, "GL107", vec![]).len(), 1);
        let listed = t.replace(
            "ENV FORCE_CUDA",
            "ENV TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\"\nENV FORCE_CUDA",
        );
        assert!(dockerfile(&listed, "GL107", vec![target("h100", &["9.0"], None)]).is_empty());
        let unforced = format!("{base}RUN python setup.py install\n");
        assert!(dockerfile(&unforced, "GL107", vec![]).is_empty());
    }

    /// `-gencode` lists handed to make or CMake inside a variable are judged like nvcc's own.
    #[test]
    fn gencode_inside_a_make_variable() {
        let t = "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN make -j CUDA_ARCH=\"-gencode arch=compute_60,code=sm_60 -gencode arch=compute_70,code=sm_70\"\n";
        let f = dockerfile(t, "GL107", vec![target("h100", &["9.0"], None)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        let t = "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN NVCC_FLAGS=\"-gencode arch=compute_90,code=sm_90\" make\n";
        assert!(dockerfile(t, "GL107", vec![target("h100", &["9.0"], None)]).is_empty());
        let t = "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN NVCC_FLAGS=\"-gencode arch=compute_70,code=sm_70\" make\n";
        assert_eq!(
            dockerfile(t, "GL107", vec![target("h100", &["9.0"], None)]).len(),
            1
        );
    }
}
