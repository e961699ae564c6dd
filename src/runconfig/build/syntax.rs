//! The syntax pass over a parsed Dockerfile: which instructions a build evaluates, in which
//! scope (before the first FROM or in a stage), and what does not parse (unknown instructions,
//! merge conflict markers, FROM without an image or with a wrong number of arguments, an
//! instruction other than ARG before the first FROM). No variables and no facts: values are
//! the resolver's job ([`super::resolve`]).

use super::*;

/// An instruction the resolver evaluates (by its index in [`Dockerfile::instructions`]).
pub(super) enum Step {
    /// `FROM <image> [AS <name>]`: a new stage. `image` is the reference word as written,
    /// `offset` where it starts in the instruction's `rest`.
    From {
        image: String,
        offset: usize,
        name: Option<String>,
    },
    /// A FROM without an image: the stage before it ends and none begins.
    EndStage,
    /// ARG: global before the first FROM, else the stage's.
    Arg,
    Env,
    Run,
    /// COPY or ADD.
    Copy,
}

/// What the syntax pass found: the steps to evaluate and the errors, each with the index of
/// its instruction.
pub(super) struct Syntax {
    pub(super) steps: Vec<(usize, Step)>,
    pub(super) errors: Vec<(usize, SpecError)>,
}

/// Read the instructions of `df` as BuildKit's parser does before evaluating any of them.
pub(super) fn read(df: &Dockerfile) -> Syntax {
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    // Whether a stage is open: ARG is global outside one, and nothing else may come there.
    let mut in_stage = false;
    // Lines of a merge conflict's `<<<<<<<` … `>>>>>>>` span being reported.
    let mut conflict_until = 0u32;
    let no_from = !df.instructions.iter().any(|x| x.cmd == "FROM");
    let mut fragment_said = false;
    for (i, ins) in df.instructions.iter().enumerate() {
        let error = |message: String| {
            (
                i,
                SpecError {
                    pos: ins.pos(),
                    message,
                },
            )
        };
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
                errors.push(error(format!(
                    "unresolved merge conflict (markers on lines {}): `{}` is not an \
                     instruction, so the image does not build from this version",
                    lines.join(", "),
                    ins.cmd
                )));
                continue;
            }
            errors.push(error(format!("unknown instruction: {}", ins.cmd)));
            continue;
        }
        let step = match ins.cmd.as_str() {
            "FROM" => {
                let words = split_args(&ins.rest, df.escape);
                let Some(img_w) = words.first() else {
                    errors.push(error("FROM requires an image".into()));
                    steps.push((i, Step::EndStage));
                    in_stage = false;
                    continue;
                };
                let name = match (words.get(1), words.get(2)) {
                    (Some(a), Some(n)) if a.text.eq_ignore_ascii_case("as") => {
                        Some(n.text.to_ascii_lowercase())
                    }
                    (Some(_), _) => {
                        errors.push(error("FROM requires either one or three arguments".into()));
                        None
                    }
                    _ => None,
                };
                in_stage = true;
                Step::From {
                    image: img_w.text.clone(),
                    offset: img_w.offset,
                    name,
                }
            }
            "ARG" => Step::Arg,
            _ if !in_stage && no_from => {
                // A file without any FROM is a fragment (of a Dockerfile assembled by
                // concatenation): one problem, said once at its first instruction.
                if !fragment_said {
                    fragment_said = true;
                    let n = df
                        .instructions
                        .iter()
                        .filter(|x| x.cmd != "ARG" && dockerfile::KNOWN.contains(&x.cmd.as_str()))
                        .count();
                    errors.push(error(format!(
                        "{} before any FROM, {} ({n} instructions outside any stage), which \
                         BuildKit rejects as it is",
                        ins.cmd,
                        super::FRAGMENT
                    )));
                }
                continue;
            }
            _ if !in_stage => {
                errors.push(error(format!(
                    "{} before the first FROM (only ARG may come first)",
                    ins.cmd
                )));
                continue;
            }
            "ENV" => Step::Env,
            "RUN" => Step::Run,
            "COPY" | "ADD" => Step::Copy,
            _ => continue,
        };
        steps.push((i, step));
    }
    Syntax { steps, errors }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The syntax pass sorts instructions into scopes and finds what does not parse from the
    /// text alone: after a FROM without an image no stage is open, so an ARG there is global
    /// and a RUN is an error; an unexpanded `${IMG}` is still a stage's image word.
    #[test]
    fn scopes_and_syntax_errors_come_from_the_text_alone() {
        let df = dockerfile::parse(
            "ARG A=1\nENV X=1\nFROM\nARG B\nRUN x\nFROM ${IMG} base\nFOO bar\nCOPY a b\nFROM img AS Final\n",
        );
        let read = read(&df);
        let steps: Vec<(usize, String)> = read
            .steps
            .iter()
            .map(|(i, s)| {
                let what = match s {
                    Step::From {
                        image,
                        offset,
                        name,
                    } => format!("FROM {image}@{offset} {name:?}"),
                    Step::EndStage => "end".into(),
                    Step::Arg => "ARG".into(),
                    Step::Env => "ENV".into(),
                    Step::Run => "RUN".into(),
                    Step::Copy => "COPY".into(),
                };
                (*i, what)
            })
            .collect();
        assert_eq!(
            steps,
            vec![
                (0, "ARG".to_string()),
                (2, "end".into()),
                (3, "ARG".into()),
                (5, "FROM ${IMG}@0 None".into()),
                (7, "COPY".into()),
                (8, "FROM img@0 Some(\"final\")".into()),
            ]
        );
        let errors: Vec<(usize, u32, &str)> = read
            .errors
            .iter()
            .map(|(i, e)| (*i, e.pos.line, e.message.as_str()))
            .collect();
        assert_eq!(
            errors,
            vec![
                (1, 2, "ENV before the first FROM (only ARG may come first)"),
                (2, 3, "FROM requires an image"),
                (4, 5, "RUN before the first FROM (only ARG may come first)"),
                (5, 6, "FROM requires either one or three arguments"),
                (6, 7, "unknown instruction: FOO"),
            ]
        );
    }

    /// A file with no FROM at all (a fragment of a concatenated Dockerfile) is one error at
    /// its first instruction, not one per instruction.
    #[test]
    fn a_fragment_without_from_is_one_error() {
        let df = dockerfile::parse("LABEL a=b\nRUN pip install x\nUSER 1000\nRUN true\n");
        let read = read(&df);
        assert_eq!(read.errors.len(), 1, "{:?}", read.errors);
        assert_eq!(read.errors[0].1.pos.line, 1);
        assert!(
            read.errors[0].1.message.contains("4 instructions"),
            "{}",
            read.errors[0].1.message
        );
    }
}
