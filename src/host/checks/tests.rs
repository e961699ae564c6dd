//! Every check on the real H200 capture and on hand-made broken variants
//! (testdata/host/variants/*, overlaid on testdata/host/h200).

use super::testutil::{expect, run};
use super::{CheckOptions, CheckStatus};
use crate::arch::{ArchTarget, ComputeCapability};
use crate::finding::Severity;
use crate::host::knowledge::Knowledge;
use crate::host::python::{ArchScanner, BinaryArchs};
use std::path::Path;
use CheckStatus::{CouldNotCheck, Problem};

/// Test scanner: the libtorch_cuda.so placeholders in testdata hold the real capture's
/// `cuobjdump --list-elf` summary ("  444 sm_90" lines) instead of a binary.
struct SummaryScanner;
impl ArchScanner for SummaryScanner {
    fn scan(&self, p: &Path) -> Result<Option<BinaryArchs>, String> {
        let t = std::fs::read_to_string(p).map_err(|e| e.to_string())?;
        let mut a = BinaryArchs::default();
        for l in t.lines() {
            let Some(tok) = l.split_whitespace().last() else {
                continue;
            };
            if let Ok(x) = tok.parse::<ArchTarget>() {
                a.sass.push(x);
            }
        }
        Ok((!a.sass.is_empty()).then_some(a))
    }
}

/// Test knowledge: just the facts these fixtures need.
struct TestKnowledge;
impl Knowledge for TestKnowledge {
    fn gpu_cc(&self, name: &str) -> Option<ComputeCapability> {
        (name == "NVIDIA H200").then(|| ComputeCapability::new(9, 0))
    }
}

fn opts() -> CheckOptions<'static> {
    CheckOptions {
        knowledge: &TestKnowledge,
        pythons: Vec::new(),
        scanner: Some(&SummaryScanner),
    }
}

#[test]
fn real_h200_capture() {
    let r = run(&["h200"], &opts());
    println!("{}", super::render_checks_text(&r));
}
