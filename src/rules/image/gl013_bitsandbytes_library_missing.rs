//! GL013 bitsandbytes-library-missing: the `libbitsandbytes_cuda{XYZ}.so` bitsandbytes will
//! load for torch's CUDA (or `BNB_CUDA_VERSION`) is not in the package.

use super::bitsandbytes::{packaged_list, selections, Choice, SOURCE};
use super::context::ImageContext;
use crate::finding::{Finding, Location, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL013"),
    name: "bitsandbytes-library-missing",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "bitsandbytes has no native library for the CUDA it will ask for",
    doc: RuleDoc {
        what: "bitsandbytes loads one of the `libbitsandbytes_cuda{XYZ}.so` files it ships, \
            chosen at import by `cextension.py`: the one named by `BNB_CUDA_VERSION` when that is \
            set (no fallback), else the one for torch's CUDA (`torch.version.cuda` 12.4 → \
            `libbitsandbytes_cuda124.so`). Current releases fall back to the nearest packaged \
            version of the same CUDA major (the highest below, else the lowest above) and never \
            to another major; older releases load the exact name or nothing. The file chosen \
            must exist; the files not chosen are never loaded, so GL001 reports them as info \
            only, and judges the chosen one's fatbin against the target GPU as any library.",
        why: "Without its native library bitsandbytes imports, but every 8-bit/4-bit operation \
            fails (`RuntimeError: ... CUDA Setup failed` or a missing `libbitsandbytes_cuda124.so`). \
            The choice is known only where torch's CUDA is (or `BNB_CUDA_VERSION` is set in the \
            image); otherwise nothing is said.",
        example: "bitsandbytes shipping cuda118…cuda123 next to torch 2.4.0+cu124: `bitsandbytes \
            0.43.1 asks for libbitsandbytes_cuda124.so (torch 2.4.0+cu124 is built for CUDA \
            12.4), which it does not ship`: a warning (releases with the same-major fallback load \
            libbitsandbytes_cuda123.so); next to torch cu130, an error.",
        fix: "Install a bitsandbytes release that ships a library for torch's CUDA, or set \
            `BNB_CUDA_VERSION` to a version it ships (of the same CUDA major as torch).",
        sources: &[SOURCE, "https://huggingface.co/docs/bitsandbytes/main/en/installation"],
    },
};

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    for s in selections(ctx.inventory) {
        let p = s.package;
        let at = Location::in_image(ctx.layer_digest(p.layer), p.location.clone());
        let head = format!(
            "{} {} asks for {} ({}), which it does not ship (it has {})",
            p.name,
            p.version,
            s.wanted,
            s.why,
            packaged_list(&s)
        );
        match &s.choice {
            Choice::Exact(_) => {}
            Choice::SameMajor(fallback) => out.push(
                META.finding(format!(
                    "{head}: releases whose cextension.py falls back within a CUDA major load {} instead; older releases fail",
                    fallback.file_name()
                ))
                .with_severity(Severity::Warning)
                .with_location(at)
                .with_help(format!(
                    "set BNB_CUDA_VERSION to the version of {} or install a bitsandbytes release that ships {}",
                    fallback.file_name(),
                    s.wanted
                )),
            ),
            Choice::Missing => out.push(
                META.finding(format!(
                    "{head}: no release loads a library of another CUDA major, so every quantized operation fails"
                ))
                .with_location(at)
                .with_help(format!(
                    "install a bitsandbytes release that ships {} (or one for torch's CUDA major)",
                    s.wanted
                )),
            ),
        }
    }
}
