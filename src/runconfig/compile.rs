//! What a build command compiles CUDA code for, read from its words: whether it may compile
//! at all, the nvcc `-gencode` / `-arch` targets it names (also inside a make or CMake
//! variable), ggml's CUDA switch, a Python extension build. GL107 judges the result.

use super::pkg::LCmd;
use crate::arch::ArchTarget;

/// Whether a command may compile CUDA code (and so read the architecture list from its
/// environment). File, package-manager and user commands do not; pip installing only wheel
/// files or packaging tools does not; anything else (a script, make, pip from source) may.
pub fn may_compile(c: &LCmd) -> bool {
    const NO_BUILD: &[&str] = &[
        "apt",
        "apt-get",
        "yum",
        "dnf",
        "microdnf",
        "zypper",
        "apk",
        "rm",
        "mkdir",
        "chmod",
        "chown",
        "chgrp",
        "ln",
        "cp",
        "mv",
        "echo",
        "printf",
        "addgroup",
        "adduser",
        "useradd",
        "groupadd",
        "usermod",
        "umask",
        "cd",
        "true",
        "touch",
        "curl",
        "wget",
        "tar",
        "unzip",
        "git",
        "ls",
        "ldconfig",
        "locale-gen",
        "update-alternatives",
        "ssh-keygen",
    ];
    // Installing these builds nothing (pure Python or prebuilt binaries).
    const TOOLS: &[&str] = &["pip", "wheel", "setuptools", "packaging", "uv", "ninja"];
    // Options of pip/uv install that take a value.
    const VALUED: &[&str] = &[
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--cache-dir",
        "--python",
        "--upgrade-strategy",
    ];
    let name = c.name();
    if name.is_empty() || NO_BUILD.contains(&name) {
        return false;
    }
    let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
    let pip_at = match name {
        "pip" | "pip3" => Some(1),
        "uv" if words.get(1) == Some(&"pip") => Some(2),
        _ if name.starts_with("python") && words.get(1) == Some(&"-m") => {
            (words.get(2).is_some_and(|m| m.starts_with("pip"))).then_some(3)
        }
        _ => None,
    };
    let Some(at) = pip_at else {
        return true;
    };
    if words.get(at) != Some(&"install") {
        return !matches!(
            words.get(at),
            Some(&"uninstall") | Some(&"list") | Some(&"freeze")
        );
    }
    let mut args = words[at + 1..].iter();
    while let Some(a) = args.next() {
        if VALUED.contains(a) {
            args.next();
            continue;
        }
        if a.starts_with('-') {
            // -r / -e / -c name what is installed or built: unknown here.
            if matches!(*a, "-r" | "--requirement" | "-e" | "--editable") {
                return true;
            }
            continue;
        }
        let pkg = a
            .split(|ch: char| "=<>!~;[ ".contains(ch))
            .next()
            .unwrap_or(a)
            .to_ascii_lowercase();
        if !(a.ends_with(".whl") || TOOLS.contains(&pkg.as_str())) {
            return true;
        }
    }
    false
}

/// CMake options that turn on ggml's (llama.cpp, whisper.cpp, llama-cpp-python) CUDA backend.
const GGML_CUDA_OPTIONS: &[&str] = &["GGML_CUDA", "GGML_CUBLAS", "LLAMA_CUDA", "LLAMA_CUBLAS"];

/// `-DGGML_CUDA=on` (any of [`GGML_CUDA_OPTIONS`], switched on) in a word or a CMAKE_ARGS value.
pub fn ggml_cuda_option(text: &str) -> Option<String> {
    text.split_whitespace().find_map(|w| {
        let w = w.trim_matches(['"', '\'']);
        let (k, v) = w.strip_prefix("-D")?.split_once('=')?;
        let k = k.split(':').next().unwrap_or(k);
        (GGML_CUDA_OPTIONS.contains(&k)
            && matches!(v.to_ascii_lowercase().as_str(), "on" | "1" | "true" | "yes"))
        .then(|| w.to_string())
    })
}

/// Python commands that build the extension of the source tree they run in.
pub fn builds_python_extension(words: &[&str]) -> bool {
    let name = words.first().map(|w| w.rsplit('/').next().unwrap_or(w));
    let py = name.is_some_and(|n| n.starts_with("python"));
    let setup = py
        && words.get(1) == Some(&"setup.py")
        && words.get(2).is_some_and(|a| {
            matches!(
                *a,
                "build" | "build_ext" | "install" | "develop" | "bdist_wheel"
            )
        });
    setup || words.iter().any(|w| w.contains("--cuda_ext"))
}

/// The command's words with nvcc flags that travel inside another word split out: a make or
/// CMake variable (`make CUDA_ARCH="-gencode arch=compute_80,code=sm_80"`), a prefix
/// assignment (`NVCC_FLAGS="-gencode …" make`). Kept whole otherwise.
pub fn nvcc_flag_words(c: &LCmd) -> Vec<&str> {
    let carries = |t: &str| {
        t.contains(char::is_whitespace)
            && [
                "-gencode",
                "--generate-code",
                "-arch=",
                "--gpu-architecture=",
            ]
            .iter()
            .any(|f| t.contains(f))
    };
    let mut out = Vec::new();
    let inner = c
        .words
        .iter()
        .map(|w| w.text.as_str())
        .chain(c.assigns.iter().map(|(_, v)| v.as_str()));
    for (i, t) in inner.enumerate() {
        if !carries(t) {
            if i < c.words.len() {
                out.push(t);
            }
            continue;
        }
        for (j, piece) in t.split_whitespace().enumerate() {
            // `CUDA_ARCH=-gencode` → `-gencode`
            let piece = match piece.split_once('=') {
                Some((k, v)) if j == 0 && v.starts_with('-') && !k.starts_with('-') => v,
                _ => piece,
            };
            out.push(piece);
        }
    }
    out
}
/// The nvcc targets named by `-gencode` / `--generate-code` / `-arch` words:
/// `-gencode arch=compute_80,code=sm_80`, `-gencode=arch=…,code=[sm_80,compute_80]`, `-arch=sm_80`.
pub fn gencode_targets(words: &[&str]) -> Vec<ArchTarget> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let spec = if let Some(r) = w
            .strip_prefix("-gencode=")
            .or_else(|| w.strip_prefix("--generate-code="))
        {
            r.to_string()
        } else if *w == "-gencode" || *w == "--generate-code" {
            words.get(i + 1).map(|s| s.to_string()).unwrap_or_default()
        } else if let Some(r) = w
            .strip_prefix("-arch=")
            .or_else(|| w.strip_prefix("--gpu-architecture="))
        {
            format!("code={r}")
        } else {
            continue;
        };
        if let Some(code) = spec.split("code=").nth(1) {
            for c in code.trim_matches(['[', ']', '"', '\'']).split(',') {
                if let Ok(t) = c.trim_matches(['[', ']']).parse::<ArchTarget>() {
                    out.push(t);
                }
            }
        }
    }
    out
}
