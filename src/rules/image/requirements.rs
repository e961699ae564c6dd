//! With no target: what the image needs — minimum driver (exact and under minor-version
//! compatibility) and the compute capabilities each CUDA binary can run on.

use super::context::{own_code, runnable_targets, ImageContext};
use crate::arch::ComputeCapability;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct RuntimeRequirement {
    pub what: String,
    pub cuda: String,
    /// Minimum Linux driver for this CUDA release, or "unknown".
    pub min_driver: String,
    /// Minimum driver under minor-version compatibility (same CUDA major), or "unknown"/"none".
    pub min_driver_minor_compat: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BinaryRequirement {
    pub path: String,
    pub sass: Vec<String>,
    pub ptx: Vec<String>,
    /// Known compute capabilities with SASS for them.
    pub native_on: Vec<String>,
    /// Known compute capabilities reachable only through PTX JIT.
    pub jit_only_on: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Requirements {
    pub cuda_runtimes: Vec<RuntimeRequirement>,
    /// The highest per-runtime minimum (the image needs all its runtimes to work).
    pub min_driver: String,
    pub min_driver_minor_compat: String,
    /// Compute capabilities (of GPUs gpulint knows) on which every CUDA binary has code.
    pub runs_on: Vec<String>,
    /// Of those, the ones that need PTX JIT for at least one binary.
    pub needs_jit_on: Vec<String>,
    pub binaries: Vec<BinaryRequirement>,
}

fn dedup_names<'a>(it: impl Iterator<Item = &'a crate::arch::ArchTarget>) -> Vec<String> {
    let mut v: Vec<crate::arch::ArchTarget> = it.copied().collect();
    v.sort();
    v.dedup();
    v.iter().map(|t| t.to_string()).collect()
}

pub fn compute(ctx: &ImageContext) -> Requirements {
    let m = ctx.facts;
    let mut rts = Vec::new();
    let mut max_exact: Option<crate::version::DriverVersion> = None;
    let mut max_floor: Option<crate::version::DriverVersion> = None;
    let mut exact_unknown = false;
    let mut floor_unknown = false;
    for rt in ctx.cuda_runtimes() {
        let exact = m.cuda_min_driver(rt.version).map(|d| d.value);
        let floor = if rt.version.major >= 11 {
            m.minor_compat_floor(rt.version.major).map(|x| x.value)
        } else {
            None
        };
        match &exact {
            Some(e) => {
                if max_exact.as_ref().is_none_or(|x| e > x) {
                    max_exact = Some(e.clone());
                }
            }
            None => exact_unknown = true,
        }
        // Without minor-version compatibility (CUDA 10.x) the exact minimum applies.
        let eff_floor = floor.clone().or_else(|| {
            if rt.version.major < 11 {
                exact.clone()
            } else {
                None
            }
        });
        match &eff_floor {
            Some(f) => {
                if max_floor.as_ref().is_none_or(|x| f > x) {
                    max_floor = Some(f.clone());
                }
            }
            None => floor_unknown = true,
        }
        rts.push(RuntimeRequirement {
            what: rt.what.clone(),
            cuda: rt.version.to_string(),
            min_driver: exact
                .map(|d| d.to_string())
                .unwrap_or_else(|| "unknown".into()),
            min_driver_minor_compat: match (floor, rt.version.major < 11) {
                (Some(f), _) => f.to_string(),
                (None, true) => "none (no minor-version compatibility before CUDA 11)".into(),
                (None, false) => "unknown".into(),
            },
        });
    }
    let show = |v: Option<crate::version::DriverVersion>, unknown: bool| match (v, unknown) {
        (_, true) => "unknown".to_string(),
        (Some(v), false) => v.to_string(),
        (None, false) => "none".to_string(),
    };
    let ccs: Vec<ComputeCapability> = m.known_capabilities();
    let dev: Vec<_> = ctx
        .inventory
        .binaries
        .iter()
        // A binary whose device code defines no kernel never launches one (GL001 skips it too).
        .filter(|b| b.has_device_code && b.has_loadable_code() && b.has_kernels != Some(false))
        .collect();
    // Per binary and capability: (has native code or is a supported vendor library, has PTX
    // that JITs there). Both the per-binary lists and the image-wide summary read this.
    let verdicts: Vec<Vec<(bool, bool)>> = dev
        .iter()
        .map(|b| {
            ccs.iter()
                .map(|cc| {
                    let (s, p) = runnable_targets(b, *cc);
                    let vendor_ok = super::context::vendor_library_supports(ctx, b, *cc)
                        .is_some_and(|(ok, _)| ok);
                    (!s.is_empty() || vendor_ok, !p.is_empty())
                })
                .collect()
        })
        .collect();
    let mut binaries = Vec::new();
    for (b, per_cc) in dev.iter().zip(&verdicts) {
        let mut native = Vec::new();
        let mut jit = Vec::new();
        for (cc, (n, j)) in ccs.iter().zip(per_cc) {
            if *n {
                native.push(cc.to_string());
            } else if *j {
                jit.push(cc.to_string());
            }
        }
        let (own_sass, own_ptx) = own_code(b);
        binaries.push(BinaryRequirement {
            path: b.path.to_string(),
            sass: dedup_names(own_sass.iter()),
            ptx: dedup_names(own_ptx.iter()),
            native_on: native,
            jit_only_on: jit,
        });
    }
    let mut runs_on = Vec::new();
    let mut needs_jit_on = Vec::new();
    if !dev.is_empty() {
        for (i, cc) in ccs.iter().enumerate() {
            if verdicts.iter().all(|v| v[i].0 || v[i].1) {
                runs_on.push(cc.to_string());
                if verdicts.iter().any(|v| !v[i].0) {
                    needs_jit_on.push(cc.to_string());
                }
            }
        }
    }
    Requirements {
        cuda_runtimes: rts,
        min_driver: show(max_exact, exact_unknown),
        min_driver_minor_compat: show(max_floor, floor_unknown),
        runs_on,
        needs_jit_on,
        binaries,
    }
}

impl Requirements {
    /// Text lines for the report preamble.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![String::new(), "requirements".to_string()];
        if self.cuda_runtimes.is_empty() {
            v.push("  CUDA runtime: none found".into());
        }
        for r in &self.cuda_runtimes {
            v.push(format!(
                "  {} — driver >= {} (>= {} under minor-version compatibility)",
                r.what, r.min_driver, r.min_driver_minor_compat
            ));
        }
        if !self.cuda_runtimes.is_empty() {
            v.push(format!(
                "  minimum driver: {} (exact), {} (minor-version compatibility)",
                self.min_driver, self.min_driver_minor_compat
            ));
        }
        if self.binaries.is_empty() {
            v.push("  GPU code: none found".into());
        } else {
            v.push(format!(
                "  runs on compute capability: {}",
                if self.runs_on.is_empty() {
                    "none of the known GPUs".into()
                } else {
                    self.runs_on.join(", ")
                }
            ));
            if !self.needs_jit_on.is_empty() {
                v.push(format!(
                    "  (through PTX JIT on: {})",
                    self.needs_jit_on.join(", ")
                ));
            }
            for b in &self.binaries {
                v.push(format!(
                    "  {}: SASS [{}] PTX [{}]",
                    b.path,
                    b.sass.join(", "),
                    b.ptx.join(", ")
                ));
            }
        }
        v
    }
}
