//! Build facts that frameworks write into Python modules: `torch/version.py`
//! (`__version__ = '2.11.0+cu130'`, `cuda = '13.0'`, `git_version`, `hip`), the same for
//! torchvision/torchaudio, `jaxlib/version.py`, `cupy/_version.py`, onnxruntime's
//! `capi/build_and_package_info.py` (`cuda_version = '12.2'`) and tensorflow's
//! `python/platform/build_info.py` (`'cuda_version': '12.3'` in a dict), paddle's
//! `paddle/version/__init__.py` (`cuda_version = '11.8'`, `cudnn_version = '8.6.0'`) and cupy's
//! `cupy/.data/_wheel.json` (`{"cuda": "12.x", …}`, module `cupy_wheel`). Only literal strings
//! are read: nothing is evaluated, a computed value is simply absent.

use super::{glob_set, text, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleVersion {
    /// The top-level package: "torch", "torchvision", "jaxlib", "onnxruntime", "tensorflow", …
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The CUDA version the build targets ("13.0"); None for CPU/ROCm builds or when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_version: Option<String>,
}

/// A string literal at the start of `s` (`'x'` or `"x"`), or `None` for anything else.
fn string_literal(s: &str) -> Option<String> {
    let s = s.trim_start();
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = s.get(1..)?;
    let end = rest.find(q)?;
    Some(rest[..end].to_string())
}

/// `name = 'v'` or `name: Optional[str] = 'v'` at the start of a line. `Some(None)` when the
/// name is assigned something other than a string literal (None, a call, …).
fn assignment(s: &str, name: &str) -> Option<Option<String>> {
    for line in s.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest = rest.trim_start();
        let rhs = if let Some(r) = rest.strip_prefix('=') {
            r
        } else if let Some(r) = rest.strip_prefix(':') {
            // An annotation: skip to the `=` (annotations hold no `=`).
            match r.split_once('=') {
                Some((_, v)) => v,
                None => continue,
            }
        } else {
            continue;
        };
        if rhs.starts_with('=') {
            continue; // `==` comparison, not an assignment
        }
        return Some(string_literal(rhs));
    }
    None
}

/// `'key': 'v'` (or double quotes) anywhere, as in tensorflow's build_info dict, or the pair
/// `('key', 'v')` of the `collections.OrderedDict([...])` TensorFlow 2.21 writes instead.
fn dict_entry(s: &str, key: &str) -> Option<String> {
    for q in ['\'', '"'] {
        let needle = format!("{q}{key}{q}");
        let mut from = 0;
        while let Some(i) = s.get(from..).and_then(|t| t.find(&needle)) {
            let after = &s[from + i + needle.len()..];
            let after = after.trim_start();
            if let Some(v) = after.strip_prefix(':').or_else(|| after.strip_prefix(',')) {
                if let Some(lit) = string_literal(v) {
                    return Some(lit);
                }
            }
            from += i + needle.len();
        }
    }
    None
}

fn first_assigned(s: &str, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| assignment(s, n).flatten())
}

/// Parse a version module of `module`.
pub fn parse_module_version(module: &str, data: &[u8]) -> ModuleVersion {
    let s = text(data);
    let mut m = ModuleVersion {
        module: module.to_string(),
        version: first_assigned(&s, &["__version__", "_version", "version"]),
        cuda: first_assigned(&s, &["cuda", "cuda_version", "_cuda_version"]),
        cudnn: first_assigned(&s, &["cudnn_version", "cudnn"]),
        hip: first_assigned(&s, &["hip"]),
        git_version: first_assigned(&s, &["git_version"]),
    };
    if m.cuda.is_none() {
        m.cuda = dict_entry(&s, "cuda_version");
    }
    if m.cudnn.is_none() {
        m.cudnn = dict_entry(&s, "cudnn_version");
    }
    m
}

/// cupy's `cupy/.data/_wheel.json`: the CUDA the wheel was built for (`"cuda": "12.x"`). Its
/// `cudnn`/`nccl` entries name libraries cupy can preload, not ones it needs: not read.
pub fn parse_cupy_wheel_json(data: &[u8]) -> Result<ModuleVersion, String> {
    let v: serde_json::Value =
        serde_json::from_slice(data).map_err(|e| format!("not JSON: {e}"))?;
    Ok(ModuleVersion {
        module: CUPY_WHEEL.to_string(),
        cuda: v.get("cuda").and_then(|c| c.as_str()).map(str::to_string),
        ..Default::default()
    })
}

/// The module name cupy's `_wheel.json` facts carry (apart from `cupy/_version.py`'s).
pub const CUPY_WHEEL: &str = "cupy_wheel";

/// Pattern and the module it describes.
const MODULES: &[(&str, &str)] = &[
    ("**/torch/version.py", "torch"),
    ("**/torchvision/version.py", "torchvision"),
    ("**/torchaudio/version.py", "torchaudio"),
    ("**/jaxlib/version.py", "jaxlib"),
    ("**/cupy/_version.py", "cupy"),
    ("**/xformers/version.py", "xformers"),
    ("**/vllm/_version.py", "vllm"),
    (
        "**/onnxruntime/capi/build_and_package_info.py",
        "onnxruntime",
    ),
    ("**/tensorflow/python/platform/build_info.py", "tensorflow"),
    ("**/paddle/version/__init__.py", "paddle"),
    ("**/cupy/.data/_wheel.json", CUPY_WHEEL),
];

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "module-version",
    version: 2,
    globs: &[
        "**/torch/version.py",
        "**/torchvision/version.py",
        "**/torchaudio/version.py",
        "**/jaxlib/version.py",
        "**/cupy/_version.py",
        "**/xformers/version.py",
        "**/vllm/_version.py",
        "**/onnxruntime/capi/build_and_package_info.py",
        "**/tensorflow/python/platform/build_info.py",
        "**/paddle/version/__init__.py",
        "**/cupy/.data/_wheel.json",
    ],
    max_bytes: 256 << 10,
    head_only: false,
    accept: None,
    parse: |path, data| {
        // The module a path belongs to: the one whose pattern it matches (MODULES order).
        static SETS: std::sync::OnceLock<Vec<globset::GlobSet>> = std::sync::OnceLock::new();
        let sets = SETS.get_or_init(|| MODULES.iter().map(|(p, _)| glob_set(&[p])).collect());
        let Some(i) = sets.iter().position(|s| s.is_match(path.as_str())) else {
            return Ok(vec![]);
        };
        let module = MODULES[i].1;
        let m = if module == CUPY_WHEEL {
            parse_cupy_wheel_json(data)?
        } else {
            parse_module_version(module, data)
        };
        Ok(vec![Fact::ModuleVersion(m)])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    const TORCH: &str = include_str!("../../testdata/python/torch-2.11.0+cu130.version.py");

    #[test]
    fn real_torch_version_py() {
        let m = parse_module_version("torch", TORCH.as_bytes());
        assert_eq!(m.version.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(m.cuda.as_deref(), Some("13.0"));
        assert_eq!(
            m.git_version.as_deref(),
            Some("70d99e998b4955e0049d13a98d77ae1b14db1f45")
        );
        assert_eq!(m.hip, None);
    }

    #[test]
    fn cpu_and_rocm_builds() {
        let m = parse_module_version(
            "torch",
            b"__version__ = '2.4.0+rocm6.1'\ndebug = False\ncuda: Optional[str] = None\nhip: Optional[str] = '6.1.40091-a8dbc0c19'\n",
        );
        assert_eq!(m.cuda, None);
        assert_eq!(m.hip.as_deref(), Some("6.1.40091-a8dbc0c19"));
    }

    #[test]
    fn torchvision_computes_cuda_so_only_the_local_version_remains() {
        let m = parse_module_version(
            "torchvision",
            b"__version__ = '0.21.0+cu124'\ngit_version = 'abc'\nfrom torchvision.extension import _check_cuda_version\nif _check_cuda_version() > 0:\n    cuda = _check_cuda_version()\n",
        );
        assert_eq!(m.version.as_deref(), Some("0.21.0+cu124"));
        assert_eq!(m.cuda, None);
    }

    #[test]
    fn onnxruntime_and_tensorflow_build_info() {
        let o = parse_module_version(
            "onnxruntime",
            b"package_name = 'onnxruntime-gpu'\n__version__ = '1.20.1'\ncuda_version = '12.2'\ncudnn_version = '9.1'\n",
        );
        assert_eq!(o.version.as_deref(), Some("1.20.1"));
        assert_eq!(o.cuda.as_deref(), Some("12.2"));
        assert_eq!(o.cudnn.as_deref(), Some("9.1"));
        let t = parse_module_version(
            "tensorflow",
            b"# auto-generated\nbuild_info = {'cpu_compiler': '/usr/bin/clang', 'cuda_compute_capabilities': ['sm_60', 'compute_90'], 'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n",
        );
        assert_eq!(t.cuda.as_deref(), Some("12.3"));
        assert_eq!(t.cudnn.as_deref(), Some("8"));
        // tensorflow 2.21.0's PyPI wheel (cut): pairs in an OrderedDict.
        let t = parse_module_version(
            "tensorflow",
            b"build_info = collections.OrderedDict([('cpu_compiler', 'clang'), ('cuda_compute_capabilities', ['sm_60', 'compute_90']), ('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True)])\n",
        );
        assert_eq!(t.cuda.as_deref(), Some("12.5.1"));
        assert_eq!(t.cudnn.as_deref(), Some("9"));
    }

    /// The texts of paddlepaddle-gpu 2.6.2's and cupy-cuda12x 14.2.0's PyPI wheels (cut).
    #[test]
    fn paddle_version_and_cupy_wheel_json() {
        let p = parse_module_version(
            "paddle",
            b"# THIS FILE IS GENERATED FROM PADDLEPADDLE SETUP.PY\n#\nfull_version     = '2.6.2'\nmajor            = '2'\ncuda_version     = '11.8'\ncudnn_version    = '8.6.0'\nxpu_version      = 'False'\n\ndef cuda():\n    return cuda_version\n",
        );
        assert_eq!(p.cuda.as_deref(), Some("11.8"));
        assert_eq!(p.cudnn.as_deref(), Some("8.6.0"));
        let c = parse_cupy_wheel_json(
            br#"{"cuda": "12.x", "packaging": "pip", "nccl": {"version": "2.25.1"}}"#,
        )
        .unwrap();
        assert_eq!(c.module, CUPY_WHEEL);
        assert_eq!(c.cuda.as_deref(), Some("12.x"));
        assert_eq!(c.cudnn, None);
        assert!(parse_cupy_wheel_json(b"{\"cuda\": ").is_err());
        // Through the detector: the path picks the parser.
        let facts = (DETECTOR.parse)(
            &crate::detect::testutil::p("x/site-packages/cupy/.data/_wheel.json"),
            br#"{"cuda": "11.x"}"#,
        )
        .unwrap();
        assert!(
            matches!(&facts[..], [Fact::ModuleVersion(m)] if m.cuda.as_deref() == Some("11.x"))
        );
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "opt/torch/.venv/lib/python3.12/site-packages/torch/version.py",
                "usr/local/lib/python3.10/dist-packages/torchvision/version.py",
                "x/site-packages/onnxruntime/capi/build_and_package_info.py",
                "x/site-packages/tensorflow/python/platform/build_info.py",
                "x/site-packages/paddle/version/__init__.py",
                "x/site-packages/cupy/.data/_wheel.json",
            ],
            &[
                "x/site-packages/paddle/version.py",
                "x/site-packages/torch/_version.py",
                "x/site-packages/torch/utils/version.py.bak",
            ],
        );
    }
}
