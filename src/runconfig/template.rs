//! Files that are templates (Helm/Go `{{ .Values.image }}`, Jinja `{{ SRC_IMAGE }}`,
//! `{% if … %}`) rather than what is deployed or built: their values are filled in by a
//! renderer, so neither their syntax errors nor what their unrendered values seem to say are
//! findings. The commands report such a file once, with how to render it.

use super::dockerfile::{Dockerfile, Pos};

/// Where a template action starts on `line` (0-based column), if it holds one: `{%`, or `{{`
/// (not GitHub Actions' `${{`) opening a Helm action: Helm's objects (`.Values.x`,
/// `.Release.Name`), a trimmed `{{-`, a control word or a call of one of Helm's functions.
/// Other `{{.Name}}` placeholders are data some controller fills in at run time (KServe's
/// ServingRuntime arguments), not a template of the file.
fn action_col(line: &str, any_braces: bool) -> Option<usize> {
    const WORDS: &[&str] = &[
        ".Values",
        ".Release",
        ".Chart",
        ".Capabilities",
        ".Files",
        ".Template",
        "$.",
        "if ",
        "else",
        "end",
        "range ",
        "with ",
        "define ",
        "template ",
        "include ",
        "block ",
        "toYaml ",
        "tpl ",
        "default ",
        "required ",
        "printf ",
        "quote ",
        "nindent ",
        "indent ",
        "/*",
    ];
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(p) = line[from..].find(['{']).map(|p| p + from) {
        from = p + 1;
        let next = b.get(p + 1).copied();
        if next == Some(b'%') {
            return Some(p);
        }
        if next != Some(b'{') || (p > 0 && b[p - 1] == b'$') {
            continue;
        }
        let trimmed = line[p + 2..].starts_with('-');
        let inner = line[p + 2..].trim_start_matches('-').trim_start();
        if any_braces || trimmed || WORDS.iter().any(|w| inner.starts_with(w)) {
            return Some(p);
        }
        from = p + 2;
    }
    None
}

/// The first template action of a YAML manifest or compose file. With `parses == false` (the
/// YAML as written is invalid) any `{{` counts, so a Jinja template is one too; a file that
/// parses needs a Go template action, so Argo's `{{inputs.parameters.x}}` strings stay data.
pub fn yaml_action(text: &str, parses: bool) -> Option<Pos> {
    text.lines().enumerate().find_map(|(i, l)| {
        if l.trim_start().starts_with('#') {
            return None;
        }
        action_col(l, !parses).map(|c| Pos {
            line: i as u32 + 1,
            col: c as u32 + 1,
        })
    })
}

/// The first template action in a Dockerfile's FROM lines (`FROM {{ SRC_IMAGE }}`): an image
/// reference never holds braces, so such a file is a template for a Dockerfile.
pub fn dockerfile_action(df: &Dockerfile) -> Option<Pos> {
    df.instructions
        .iter()
        .filter(|i| i.cmd == "FROM")
        .find_map(|i| i.rest.find("{{").map(|off| i.pos_in_rest(off)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_and_jinja_actions_are_found() {
        let helm = "kind: Deployment\nspec:\n  replicas: {{ .Values.replicas }}\n";
        assert_eq!(yaml_action(helm, false), Some(Pos { line: 3, col: 13 }));
        // Quoted, the manifest parses; the action is still a template's.
        let quoted = "kind: Pod\nspec:\n  containers:\n  - image: \"{{ .Values.image }}\"\n";
        assert_eq!(yaml_action(quoted, true).map(|p| p.line), Some(4));
        let control = "{{- if .Values.gpu }}\nkind: Pod\n{{- end }}\n";
        assert_eq!(yaml_action(control, true).map(|p| p.line), Some(1));
        // Jinja: only a template when the YAML does not parse as written.
        let jinja = "kind: Pod\nspec:\n  nodeName: {{ node }}\n";
        assert_eq!(yaml_action(jinja, false).map(|p| p.line), Some(3));
        assert_eq!(yaml_action(jinja, true), None);
        assert_eq!(
            yaml_action("a: 1\n{% if x %}\nb: 2\n{% endif %}\n", true).map(|p| p.line),
            Some(2)
        );
    }

    #[test]
    fn data_that_looks_like_templates_is_not() {
        // Argo parameters, GitHub Actions expressions, comments, docker --format strings.
        for t in [
            "args: [\"{{inputs.parameters.message}}\"]\n",
            "run: echo ${{ github.sha }}\n",
            "# {{ .Values.image }} is set by the chart\nkind: Pod\n",
            "command: [\"docker\", \"ps\", \"--format\", \"{{json .}}\"]\n",
            "args:\n- --served-model-name={{.Name}}\n",
        ] {
            assert_eq!(yaml_action(t, true), None, "{t}");
        }
    }

    #[test]
    fn dockerfile_from_a_template_variable() {
        let df = super::super::dockerfile::parse("FROM {{ SRC_IMAGE }}\nUSER 0\n");
        assert_eq!(dockerfile_action(&df), Some(Pos { line: 1, col: 6 }));
        let df = super::super::dockerfile::parse(
            "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nRUN docker inspect --format '{{.Id}}' x\n",
        );
        assert_eq!(dockerfile_action(&df), None);
    }
}
