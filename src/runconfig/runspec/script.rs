//! Container starts and other commands in shell scripts and Markdown shell blocks:
//! the script read as shell (variables, field splitting), each command located in the file.

use super::*;

/// Byte offset → line/column over a whole text.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        LineIndex { starts }
    }
    pub fn pos(&self, off: usize) -> Pos {
        let l = match self.starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        Pos {
            line: l as u32 + 1,
            col: (off - self.starts[l]) as u32 + 1,
        }
    }
}

/// Keep only the shell in a Markdown file: fenced blocks that are shell (or untyped), with
/// prompts (`$ `, `# `-less) blanked, everything else turned into empty lines so offsets and
/// lines stay those of the original file.
pub fn markdown_shell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    let mut shell_block = false;
    let mut fence = "";
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let nl = &line[body.len()..];
        let t = body.trim_start();
        if !in_block && (t.starts_with("```") || t.starts_with("~~~")) {
            in_block = true;
            fence = if t.starts_with("```") { "```" } else { "~~~" };
            let lang = t.trim_start_matches(['`', '~']).trim().to_ascii_lowercase();
            let lang = lang.split([' ', '{', ',']).next().unwrap_or("");
            shell_block = matches!(
                lang,
                "" | "bash"
                    | "sh"
                    | "shell"
                    | "console"
                    | "zsh"
                    | "shell-session"
                    | "terminal"
                    | "text"
                    | "cmd"
                    | "powershell"
                    | "ps1"
                    | "bat"
            );
            out.push_str(&" ".repeat(body.len()));
            out.push_str(nl);
            continue;
        }
        if in_block && t.starts_with(fence) {
            in_block = false;
            out.push_str(&" ".repeat(body.len()));
            out.push_str(nl);
            continue;
        }
        if in_block && shell_block {
            // `$ docker run …`: blank the prompt.
            let lead = body.len() - t.len();
            if let Some(r) = t.strip_prefix("$ ").or_else(|| {
                t.strip_prefix("# ")
                    .filter(|r| r.starts_with("docker") || r.starts_with("podman"))
            }) {
                out.push_str(&" ".repeat(lead + 2));
                out.push_str(r);
            } else {
                out.push_str(body);
            }
        } else {
            out.push_str(&" ".repeat(body.chars().count().min(body.len())));
        }
        out.push_str(nl);
    }
    out
}

/// Every container start in a shell script (or the shell of a Markdown file).
/// The shell text of a script or of a Markdown file's shell blocks, with Windows batch /
/// PowerShell continuations made POSIX.
pub(super) fn script_source(file: &str, text: &str, markdown: bool) -> String {
    let mut src = if markdown {
        markdown_shell(text)
    } else {
        text.to_string()
    };
    if file.ends_with(".bat") || file.ends_with(".cmd") || file.ends_with(".ps1") {
        // cmd.exe `^` / PowerShell backtick continuations.
        src = src
            .replace("^\r\n", "\\\r\n")
            .replace("^\n", "\\\n")
            .replace("`\n", "\\\n")
            .replace("`\r\n", "\\\r\n");
    }
    src
}

/// Every simple command of a script (or a Markdown file's shell blocks): argv and position.
pub fn script_commands(file: &str, text: &str, markdown: bool) -> Vec<(Vec<PWord>, Pos)> {
    let src = script_source(file, text, markdown);
    let idx = LineIndex::new(&src);
    let mut vars = Vars::new();
    for name in referenced_vars(&src) {
        vars.insert(name, Var::Unknown);
    }
    shell::parse_script(&src, &mut vars)
        .into_iter()
        .map(field_split)
        .map(|c| {
            let words = c
                .words
                .iter()
                .map(|w| PWord {
                    text: w.text.clone(),
                    pos: idx.pos(w.offset),
                })
                .collect();
            (words, idx.pos(c.offset))
        })
        .collect()
}

pub fn scan_script(file: &str, text: &str, markdown: bool) -> Vec<RunSpec> {
    scan_script_checked(file, text, markdown).0
}

/// [`scan_script`], and where the script's variable expansion went past a bound (its words
/// there stay as written).
pub fn scan_script_checked(
    file: &str,
    text: &str,
    markdown: bool,
) -> (Vec<RunSpec>, Option<SpecError>) {
    let src = script_source(file, text, markdown);
    if !src.contains("docker") && !src.contains("podman") {
        return (Vec::new(), None);
    }
    let idx = LineIndex::new(&src);
    // Variables the script uses but we cannot know stay as written.
    let mut vars = Vars::new();
    for name in referenced_vars(&src) {
        vars.insert(name, Var::Unknown);
    }
    let (cmds, limit) = shell::try_parse_script_located(&src, &mut vars);
    let error = limit.map(|(l, at)| SpecError {
        pos: idx.pos(at),
        message: l.to_string(),
    });
    let cmds: Vec<shell::Command> = cmds.into_iter().map(field_split).collect();
    let mut out = Vec::new();
    let mut built: Vec<String> = Vec::new();
    for c in &cmds {
        let argv: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
        built.extend(built_tags(&argv));
    }
    for c in cmds {
        let argv: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
        if let Some((engine, start)) = run_invocation(&argv) {
            let words: Vec<PWord> = c.words[start..]
                .iter()
                .map(|w| PWord {
                    text: w.text.clone(),
                    pos: idx.pos(w.offset),
                })
                .collect();
            let mut rs = parse_docker_run(
                file,
                &engine,
                idx.pos(c.words[0].offset.min(c.offset.max(c.words[0].offset))),
                &words,
            );
            rs.pos = idx.pos(c.words[0].offset);
            // The script builds this image itself: its tag names a local build.
            rs.build = rs
                .image_text()
                .is_some_and(|i| built.iter().any(|b| b == i));
            // An image named through a variable (`IMAGE=repo:tag` … `docker run $IMAGE`) is
            // written, and fixed, where the variable is set.
            if let Some(w) = c.words[start..]
                .iter()
                .find(|w| Some(w.text.as_str()) == rs.image_text() && w.raw.contains('$'))
            {
                if let Some(at) = lone_variable(&w.raw)
                    .and_then(|name| assignment_offset(&src, name, c.words[0].offset))
                {
                    rs.image_pos = idx.pos(at);
                }
            }
            out.push(rs);
        }
    }
    (out, error)
}

/// `LD_LIBRARY_PATH` values a script sets for what it runs (`export LD_LIBRARY_PATH=…`,
/// `LD_LIBRARY_PATH=… cmd`): an entrypoint or a "run this in the container" script. The
/// inherited value stays as written (`$LD_LIBRARY_PATH`).
pub fn script_ld_library_paths(text: &str) -> Vec<(String, Pos)> {
    if !text.contains("LD_LIBRARY_PATH") {
        return Vec::new();
    }
    let idx = LineIndex::new(text);
    let mut vars = Vars::new();
    for name in referenced_vars(text) {
        vars.insert(name, Var::Unknown);
    }
    let mut out = Vec::new();
    for c in shell::parse_script(text, &mut vars) {
        for (k, v) in &c.assigns {
            if k == "LD_LIBRARY_PATH" {
                out.push((v.clone(), idx.pos(c.offset)));
            }
        }
        if c.words.first().is_some_and(|w| w.text == "export") {
            for w in &c.words[1..] {
                if let Some(v) = w.text.strip_prefix("LD_LIBRARY_PATH=") {
                    out.push((v.to_string(), idx.pos(w.offset)));
                }
            }
        }
    }
    out
}

/// The CUDA release of an `LD_LIBRARY_PATH` entry in a versioned toolkit directory:
/// `/usr/local/cuda-12.4/lib64` → 12.4. None for other entries and unreadable versions.
pub fn ld_entry_cuda_release(entry: &str) -> Option<crate::version::CudaVersion> {
    let rest = entry.strip_prefix("/usr/local/cuda-")?;
    let ver: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    ver.parse().ok()
}

/// The variable a word consists of (`$IMAGE`, `${IMAGE}`, `"$IMAGE"`), if that is all it is.
pub(super) fn lone_variable(raw: &str) -> Option<&str> {
    let r = raw.trim_matches('"');
    let name = r
        .strip_prefix("${")
        .and_then(|x| x.strip_suffix('}'))
        .or_else(|| r.strip_prefix('$'))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// Byte offset of the last `NAME=` assignment (`export NAME=`, `local NAME=`) starting a line
/// before `before`.
pub(super) fn assignment_offset(src: &str, name: &str, before: usize) -> Option<usize> {
    let mut at = None;
    let mut off = 0;
    for line in src.split_inclusive('\n') {
        if off >= before {
            break;
        }
        let t = line.trim_start();
        let lead = line.len() - t.len();
        let (t, kw) = ["export ", "local ", "readonly ", "declare "]
            .iter()
            .find_map(|k| t.strip_prefix(k).map(|r| (r, k.len())))
            .unwrap_or((t, 0));
        if t.strip_prefix(name).is_some_and(|r| r.starts_with('=')) {
            at = Some(off + lead + kw);
        }
        off += line.len();
    }
    at
}

/// An unquoted expansion we know the value of (`$(cmd)` output is unknown: kept whole).
pub(super) fn splits(w: &shell::Word) -> bool {
    !w.quoted && !w.unresolved && w.raw.contains('$') && w.text.contains(char::is_whitespace)
}

/// Field splitting: an unquoted expansion (`$RUNCMD` holding `docker run --gpus all`) becomes
/// one word per field, as the shell runs it. The fields keep the expansion's offset.
pub(super) fn field_split(mut c: shell::Command) -> shell::Command {
    if !c.words.iter().any(splits) {
        return c;
    }
    c.words = c
        .words
        .into_iter()
        .flat_map(|w| {
            if !splits(&w) {
                return vec![w];
            }
            w.text
                .split_whitespace()
                .map(|f| shell::Word {
                    text: f.to_string(),
                    ..w.clone()
                })
                .collect()
        })
        .collect();
    c
}
