//! Edits of `docker run` lines in shell scripts: the script is read into commands again (the
//! same reader the rules' specs came from), the command is found by its first word's place,
//! and each word an edit touches must stand in the text exactly as read (unquoted, not from a
//! variable); otherwise there is no edit.

use super::yaml::Splice;
use crate::fix::plan::{At, PlannedEdit};
use crate::runconfig::runspec::{run_invocation, script_commands, PWord};

/// The commands of a script, read once per file.
pub(super) struct Script<'a> {
    text: &'a str,
    starts: Vec<usize>,
    commands: Vec<Vec<PWord>>,
    /// Each command by its first word's line and column.
    by_place: std::collections::HashMap<(u32, u32), usize>,
}

impl<'a> Script<'a> {
    /// `markdown`: the commands are those of the file's shell code blocks, at their places in
    /// the file.
    pub(super) fn new(file: &str, text: &'a str, markdown: bool) -> Script<'a> {
        let commands: Vec<Vec<PWord>> = script_commands(file, text, markdown)
            .into_iter()
            .map(|(words, _)| words)
            .collect();
        let mut by_place = std::collections::HashMap::new();
        for (i, w) in commands.iter().enumerate() {
            if let Some(f) = w.first() {
                by_place.entry((f.pos.line, f.pos.col)).or_insert(i);
            }
        }
        Script {
            text,
            starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
            commands,
            by_place,
        }
    }

    /// The byte offset of a word, when the text there reads as the word.
    fn offset(&self, w: &PWord) -> Option<usize> {
        let start = *self.starts.get(w.pos.line.checked_sub(1)? as usize)?;
        let at = start + w.pos.col.checked_sub(1)? as usize;
        self.text
            .get(at..)?
            .starts_with(w.text.as_str())
            .then_some(at)
    }

    /// The words of the container start whose first word is at `command`, and where its
    /// options begin (after `run`).
    fn run(&self, command: At) -> Option<(&[PWord], usize)> {
        let words = self
            .commands
            .get(*self.by_place.get(&(command.line, command.col))?)?;
        let argv: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let (_, start) = run_invocation(&argv)?;
        Some((words, start))
    }

    /// The splice inserting ` flags` after the `run` word of the command at `command`.
    fn after_run(&self, words: &[PWord], start: usize, flags: &str) -> Option<Splice> {
        let run = &words[start.checked_sub(1)?];
        let at = self.offset(run)? + run.text.len();
        Some((at, at, format!(" {flags}")))
    }

    /// The splices one planned edit makes.
    pub(super) fn edits(&self, e: &PlannedEdit) -> Option<Vec<Splice>> {
        match e {
            PlannedEdit::RunFlags { command, flags } => {
                let (words, start) = self.run(*command)?;
                Some(vec![self.after_run(words, start, flags)?])
            }
            PlannedEdit::RunRuntime { command, with } => {
                let (words, start) = self.run(*command)?;
                let i = words[start..]
                    .iter()
                    .position(|w| w.text == "--runtime=nvidia" || w.text == "--runtime")?
                    + start;
                let first = &words[i];
                let from = self.offset(first)?;
                let to = if first.text == "--runtime" {
                    let value = words.get(i + 1).filter(|v| v.text == "nvidia")?;
                    self.offset(value)? + value.text.len()
                } else {
                    from + first.text.len()
                };
                if with.is_empty() {
                    // The option and the blanks after it go (before it when it ends the line).
                    let rest = &self.text[to..];
                    let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
                    if blanks > 0 && !rest[blanks..].starts_with(['\n', '\r', '\\']) {
                        return Some(vec![(from, to + blanks, String::new())]);
                    }
                    let before = self.text[..from].trim_end_matches([' ', '\t']).len();
                    return Some(vec![(before, to, String::new())]);
                }
                Some(vec![(from, to, with.clone())])
            }
            PlannedEdit::NvidiaDocker { command, flags } => {
                let (words, start) = self.run(*command)?;
                let engine = words[..start]
                    .iter()
                    .find(|w| w.text.rsplit('/').next() == Some("nvidia-docker"))?;
                let at = self.offset(engine)? + engine.text.len() - "nvidia-docker".len();
                let mut out = vec![(at, at + "nvidia-docker".len(), "docker".to_string())];
                if !flags.is_empty() {
                    out.push(self.after_run(words, start, flags)?);
                }
                Some(out)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(text: &str, e: PlannedEdit) -> Option<String> {
        let s = Script::new("run.sh", text, false);
        let mut splices = s.edits(&e)?;
        splices.sort_by_key(|x| std::cmp::Reverse(x.0));
        let mut out = text.to_string();
        for (a, b, t) in splices {
            out.replace_range(a..b, &t);
        }
        Some(out)
    }

    const AT1: At = At { line: 1, col: 1 };

    #[test]
    fn flags_follow_run_and_the_runtime_option_is_replaced_in_both_spellings() {
        let t = "docker run --rm img python t.py\n";
        let flags = PlannedEdit::RunFlags {
            command: AT1,
            flags: "--gpus all".into(),
        };
        assert_eq!(
            edited(t, flags).unwrap(),
            "docker run --gpus all --rm img python t.py\n"
        );
        for (t, want) in [
            (
                "docker run --runtime=nvidia -it img\n",
                "docker run --gpus all -it img\n",
            ),
            (
                "sudo docker run --runtime nvidia \\\n  -it img\n",
                "sudo docker run --gpus all \\\n  -it img\n",
            ),
        ] {
            let e = PlannedEdit::RunRuntime {
                command: AT1,
                with: "--gpus all".into(),
            };
            assert_eq!(edited(t, e).unwrap(), want);
        }
        // Dropped where a GPU request is already there.
        let drop = |t: &str| {
            edited(
                t,
                PlannedEdit::RunRuntime {
                    command: AT1,
                    with: String::new(),
                },
            )
        };
        assert_eq!(
            drop("docker run --gpus all --runtime=nvidia img\n").unwrap(),
            "docker run --gpus all img\n"
        );
        assert_eq!(
            drop("docker run --gpus all \\\n  --runtime=nvidia \\\n  img\n").unwrap(),
            "docker run --gpus all \\\n \\\n  img\n"
        );
    }

    #[test]
    fn the_wrapper_becomes_docker_and_words_not_in_the_text_get_no_edit() {
        let e = PlannedEdit::NvidiaDocker {
            command: AT1,
            flags: "--gpus all".into(),
        };
        assert_eq!(
            edited("nvidia-docker run -it img\n", e.clone()).unwrap(),
            "docker run --gpus all -it img\n"
        );
        // The run word comes from a variable: nothing in the text to edit.
        let t = "CMD=\"docker run --rm\"\n$CMD img\n";
        let flags = PlannedEdit::RunFlags {
            command: At { line: 2, col: 1 },
            flags: "--gpus all".into(),
        };
        assert_eq!(edited(t, flags), None);
        // No command starts there.
        assert_eq!(
            edited(
                "echo hi\n",
                PlannedEdit::RunFlags {
                    command: AT1,
                    flags: "--gpus all".into()
                }
            ),
            None
        );
    }
}
