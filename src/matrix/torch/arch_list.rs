//! The `TORCH_CUDA_ARCH_LIST` of a build script (`[[build_script]]` rows of torch.toml), as
//! SASS and PTX targets.

use crate::arch::ArchTarget;
use anyhow::{ensure, Context, Result};

/// A build script's `TORCH_CUDA_ARCH_LIST` (`5.0;6.0;3.7;9.0+PTX`) → (SASS, PTX), each sorted:
/// `X.Y` is `sm_XY`, `X.Y+PTX` adds `compute_XY`. Named lists (`Ampere`) and arch-specific
/// entries (`9.0a`) are refused: no default build uses them.
pub(super) fn parse_arch_list(
    what: &str,
    list: &str,
) -> Result<(Vec<ArchTarget>, Vec<ArchTarget>)> {
    let mut sass: Vec<ArchTarget> = Vec::new();
    let mut ptx: Vec<ArchTarget> = Vec::new();
    for entry in list.split(';').map(str::trim) {
        let (cc, with_ptx) = match entry.strip_suffix("+PTX") {
            Some(cc) => (cc, true),
            None => (entry, false),
        };
        let (major, minor) = cc
            .split_once('.')
            .filter(|(a, b)| {
                !a.is_empty()
                    && b.len() == 1
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
            .with_context(|| format!("{what}: {entry:?} is not X.Y or X.Y+PTX"))?;
        let sm: ArchTarget = format!("sm_{major}{minor}")
            .parse()
            .map_err(|e: String| anyhow::anyhow!("{what}: {e}"))?;
        ensure!(!sass.contains(&sm), "{what}: {entry:?} listed twice");
        sass.push(sm);
        if with_ptx {
            let p: ArchTarget = format!("compute_{major}{minor}")
                .parse()
                .map_err(|e: String| anyhow::anyhow!("{what}: {e}"))?;
            ptx.push(p);
        }
    }
    sass.sort_by_key(|t| t.sm);
    ptx.sort_by_key(|t| t.sm);
    Ok((sass, ptx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(list: &[&str]) -> Vec<ArchTarget> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn arch_lists_from_build_scripts() {
        let (sass, ptx) = parse_arch_list("t", "5.0;6.0;3.7;9.0+PTX").unwrap();
        assert_eq!(sass, targets(&["sm_37", "sm_50", "sm_60", "sm_90"]));
        assert_eq!(ptx, targets(&["compute_90"]));
        let (sass, _) = parse_arch_list("t", "7.5;10.0;12.0").unwrap();
        assert_eq!(sass, targets(&["sm_75", "sm_100", "sm_120"]));
        for bad in ["", "Ampere", "9.0a", "9", "8.0;8.0", "8.0;;9.0", "10.00"] {
            assert!(parse_arch_list("t", bad).is_err(), "{bad:?}");
        }
    }
}
