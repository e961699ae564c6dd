//! Matching a GPU name to a [`GpuModel`].
//!
//! Names are normalized first: lowercase, every run of non-alphanumeric characters becomes one
//! space ("Tesla V100-SXM2-16GB" → "tesla v100 sxm2 16gb"). Then:
//! 1. an alias equal to the query wins;
//! 2. otherwise the alias whose tokens appear as a contiguous run of the query's tokens wins,
//!    the longest such alias first ("NVIDIA H100 PCIe" → "h100 pcie" beats "h100"). Matching
//!    whole tokens keeps "A10" out of "A100" and "L4" out of "L40S".
//!
//! Compute-capability strings ("sm_90", "9.0") match no product alias and answer `None`.

use super::GpuModel;

pub(crate) fn normalize(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn contains_tokens(hay: &[&str], needle: &[&str]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

pub(crate) fn find<'a>(gpus: &'a [GpuModel], query: &str) -> Option<&'a GpuModel> {
    let q = normalize(query);
    if q.is_empty() {
        return None;
    }
    let names = |g: &'a GpuModel| std::iter::once(&g.name).chain(g.aliases.iter());
    if let Some(g) = gpus.iter().find(|g| names(g).any(|a| normalize(a) == q)) {
        return Some(g);
    }
    let q_tokens: Vec<&str> = q.split(' ').collect();
    let mut best: Option<(usize, usize, &GpuModel)> = None;
    for g in gpus {
        for a in names(g) {
            let n = normalize(a);
            let tokens: Vec<&str> = n.split(' ').collect();
            if contains_tokens(&q_tokens, &tokens) {
                let key = (tokens.len(), n.len());
                if best.is_none_or(|(t, l, _)| key > (t, l)) {
                    best = Some((key.0, key.1, g));
                }
            }
        }
    }
    best.map(|(_, _, g)| g)
}
