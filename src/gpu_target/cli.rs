//! Targets from the command line (`--gpu`, `--driver`) and from fleet files.

use super::{Target, TargetGpu};
use crate::arch::ComputeCapability;
use crate::matrix::Matrix;
use crate::source::Platform;
use crate::version::DriverVersion;
use anyhow::{bail, Context};
use serde::Deserialize;
use std::path::Path;

/// Resolve a GPU given as an nvidia-smi name ("NVIDIA H100 80GB HBM3"), a short name
/// ("H100"), `sm_90` or `9.0`. Unknown names are an error: a typo must not pass silently.
pub fn resolve_gpu(matrix: &Matrix, s: &str) -> anyhow::Result<TargetGpu> {
    let t = s.trim();
    let looks_like_cc = t.starts_with("sm_")
        || t.starts_with("compute_")
        || (t.contains('.') && t.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if looks_like_cc {
        let cc: ComputeCapability = t.parse().map_err(anyhow::Error::msg)?;
        return Ok(TargetGpu {
            name: format!("compute capability {cc}"),
            cc: Some(cc),
            datacenter: None,
            uuid: None,
            mig_mode: None,
            count: None,
        });
    }
    match matrix.gpu(t) {
        Some(m) => Ok(TargetGpu {
            name: if m.name.eq_ignore_ascii_case(t) {
                m.name.clone()
            } else {
                format!("{} ({})", t, m.name)
            },
            cc: Some(m.cc),
            datacenter: m.forward_compat_eligible(),
            uuid: None,
            mig_mode: None,
            count: None,
        }),
        None => {
            let names = matrix.gpus().iter().flat_map(|g| {
                std::iter::once(g.name.as_str()).chain(g.aliases.iter().map(String::as_str))
            });
            let hint = crate::selection::did_you_mean(t, names)
                .map(|n| format!(" (did you mean {n:?}?)"))
                .unwrap_or_default();
            bail!(
                "unknown GPU {t:?}{hint}: not in gpulint's GPU matrix (`gpulint gpus` lists them); give its compute capability instead (e.g. --gpu sm_90 or --gpu 9.0)"
            )
        }
    }
}

/// One target per `--gpu` (all sharing `--driver`), or one driver-only target.
pub fn targets_from_flags(
    matrix: &Matrix,
    gpus: &[String],
    driver: Option<&str>,
    platform: Option<&Platform>,
) -> anyhow::Result<Vec<Target>> {
    let driver: Option<DriverVersion> = match driver {
        Some(d) => Some(d.parse().map_err(anyhow::Error::msg)?),
        None => None,
    };
    let dname = driver.as_ref().map(|d| format!("driver {d}"));
    if gpus.is_empty() {
        return Ok(match dname {
            Some(n) => vec![Target {
                name: n,
                driver,
                driver_cuda: None,
                gpus: vec![],
                platform: platform.cloned(),
            }],
            None => vec![],
        });
    }
    let mut out = Vec::new();
    for g in gpus {
        let gpu = resolve_gpu(matrix, g)?;
        let name = match &dname {
            Some(d) => format!("{} / {d}", gpu.name),
            None => gpu.name.clone(),
        };
        out.push(Target {
            name,
            driver: driver.clone(),
            driver_cuda: None,
            gpus: vec![gpu],
            platform: platform.cloned(),
        });
    }
    Ok(out)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FleetFile {
    #[serde(default)]
    pool: Vec<PoolSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolSpec {
    name: String,
    driver: Option<String>,
    #[serde(default)]
    gpus: Vec<GpuSpec>,
    platform: Option<String>,
    /// The nodes of the pool (written by `gpulint fleet --write-fleet`): a record of where
    /// the pool came from; the checks do not need them.
    #[serde(default)]
    #[allow(dead_code)]
    nodes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum GpuSpec {
    Name(String),
    Counted { model: String, count: Option<u32> },
}

/// Parse a fleet file: named node pools with a driver and GPU models.
///
/// ```toml
/// [[pool]]
/// name = "train-a100"
/// driver = "535.104.05"
/// gpus = [{ model = "A100", count = 8 }]
/// platform = "linux/amd64"
/// nodes = ["gpu-a1", "gpu-a2"]   # optional
/// ```
pub fn fleet_from_file(matrix: &Matrix, path: &Path) -> anyhow::Result<Vec<Target>> {
    let text = crate::io_util::read_regular_string(path, crate::io_util::MAX_CONFIG_FILE)
        .with_context(|| format!("reading fleet file {}", path.display()))?;
    fleet_from_str(matrix, &text).with_context(|| format!("in fleet file {}", path.display()))
}

pub fn fleet_from_str(matrix: &Matrix, text: &str) -> anyhow::Result<Vec<Target>> {
    // The file named may be anything (a config can point at a token, `--fleet` at the
    // environment): TOML errors quote the offending line and serde's quote values, so only
    // where it fails is said, never what is there.
    let f: FleetFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}: ")
        });
        anyhow::anyhow!(
            "{}not a fleet file (expected [[pool]] tables with name, driver, gpus and platform)",
            at.unwrap_or_default()
        )
    })?;
    if f.pool.is_empty() {
        bail!("no [[pool]] entries");
    }
    let mut out = Vec::new();
    for p in f.pool {
        let driver = match &p.driver {
            Some(d) => Some(
                d.parse::<DriverVersion>()
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("pool {:?}", p.name))?,
            ),
            None => None,
        };
        let mut gpus = Vec::new();
        for g in &p.gpus {
            let (model, count) = match g {
                GpuSpec::Name(n) => (n.as_str(), None),
                GpuSpec::Counted { model, count } => (model.as_str(), *count),
            };
            let mut gpu =
                resolve_gpu(matrix, model).with_context(|| format!("pool {:?}", p.name))?;
            gpu.count = count;
            gpus.push(gpu);
        }
        let platform = match &p.platform {
            Some(s) => Some(s.parse::<Platform>().map_err(anyhow::Error::msg)?),
            None => None,
        };
        out.push(Target {
            name: p.name,
            driver,
            driver_cuda: None,
            gpus,
            platform,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_resolve_by_name_short_name_and_capability() {
        let m = Matrix::embedded().unwrap();
        assert_eq!(
            resolve_gpu(&m, "NVIDIA H100 80GB HBM3").unwrap().cc,
            Some(ComputeCapability::new(9, 0))
        );
        assert_eq!(
            resolve_gpu(&m, "T4").unwrap().cc,
            Some(ComputeCapability::new(7, 5))
        );
        assert_eq!(
            resolve_gpu(&m, "sm_86").unwrap().cc,
            Some(ComputeCapability::new(8, 6))
        );
        assert_eq!(
            resolve_gpu(&m, "12.0").unwrap().cc,
            Some(ComputeCapability::new(12, 0))
        );
        assert!(resolve_gpu(&m, "H1OO-typo").is_err());
        let e = resolve_gpu(&m, "H10O").unwrap_err().to_string();
        assert!(e.contains("did you mean \"H100\"?"), "{e}");
        let e = resolve_gpu(&m, "Quadro XYZ-9").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "no far-fetched guess: {e}");
    }

    #[test]
    fn first_cuda_per_capability_only_where_the_tables_tell() {
        let m = Matrix::embedded().unwrap();
        let first = |sm| m.first_cuda_for_sm(sm).map(|c| (c.major, c.minor));
        // sm_80 arrived with CUDA 11.0, which directly follows listed 10.2.
        assert_eq!(first(80), Some((11, 0)));
        assert_eq!(first(120), Some((12, 8)));
        // sm_90 is first listed in 11.8, and the 11.7 row (measured) does not target it.
        assert_eq!(first(90), Some((11, 8)));
        // sm_75 is already in the oldest listed release: its first release is older.
        assert_eq!(m.first_cuda_for_sm(75), None);
        assert_eq!(m.first_cuda_for_sm(999), None);
    }

    #[test]
    fn fleet_file_pools() {
        let m = Matrix::embedded().unwrap();
        let t = fleet_from_str(
            &m,
            r#"
[[pool]]
name = "inference-t4"
driver = "470.82.01"
gpus = ["T4"]

[[pool]]
name = "train-h100"
driver = "550.54.15"
gpus = [{ model = "H100", count = 8 }]
platform = "linux/amd64"
"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].gpus[0].count, Some(8));
        assert_eq!(t[0].driver.as_ref().unwrap().to_string(), "470.82.01");
        assert!(fleet_from_str(&m, "[[pool]]\nname='x'\nbogus=1\n").is_err());
    }

    /// A file that is not a fleet file (a token, the environment) is refused without its
    /// content in the message: TOML's own errors quote the line, serde's the value.
    #[test]
    fn fleet_errors_never_echo_the_file() {
        let m = Matrix::embedded().unwrap();
        for secret in [
            "ghp_SECRETSECRET\n",
            "TOKEN=SECRETSECRET\n",
            "pool = \"SECRETSECRET\"\n",
            "https://u:SECRETSECRET@github.com\n",
            "x = 1\nSECRETSECRET = 2\n",
        ] {
            let e = format!("{:#}", fleet_from_str(&m, secret).unwrap_err());
            assert!(!e.contains("SECRET"), "{secret:?} echoed: {e}");
            assert!(e.contains("not a fleet file"), "{e}");
        }
        let e = format!(
            "{:#}",
            fleet_from_str(&m, "[[pool]]\nname = 1\n").unwrap_err()
        );
        assert!(e.contains("line 2, column 8"), "{e}");
    }
}
