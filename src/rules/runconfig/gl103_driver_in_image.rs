//! GL103: NVIDIA driver packages or libcuda baked into the image.

use crate::finding::{Finding, Severity};
use crate::inventory::names::{
    is_cuda_metapackage_with_driver, is_driver_library_file, is_driver_package,
};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::pkg::Install;
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL103"),
    name: "driver-in-image",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "Driver packages or a libcuda.so are installed into the image",
    doc: RuleDoc {
        what: "The Dockerfile installs driver packages (nvidia-driver-*, libnvidia-compute-*, \
            cuda-drivers, nvidia-utils-*, and the `cuda` / `cuda-X-Y` meta-packages that pull \
            cuda-drivers), runs a driver runfile (`NVIDIA-Linux-*.run`, a CUDA runfile with \
            `--driver`), copies a libcuda.so / libnvidia-*.so into the image, \
            links the link-time stub libcuda.so to libcuda.so.1, or puts the stubs directory into \
            ld.so.conf.",
        why: "The user-space driver must match the host's kernel module exactly; the NVIDIA \
            Container Toolkit injects the host's copy at start. A copy in the image shadows or \
            conflicts with it (`Failed to initialize NVML: Driver/library version mismatch`), and \
            a stub libcuda.so.1 on the loader path makes CUDA fail with driver errors instead of \
            using the real driver.",
        example: "`RUN apt-get install -y nvidia-driver-535`; `ln -s …/stubs/libcuda.so …/libcuda.so.1`.",
        fix: "Remove the driver from the image and run it with `--gpus` / the device plugin; link \
            against stubs only at build time (`LIBRARY_PATH`, not `LD_LIBRARY_PATH` or \
            ld.so.conf).",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#meta-packages",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#runfile-advanced",
        ],
    },
};

/// A runfile that installs the driver, when the command executes it: NVIDIA's driver
/// installer (`NVIDIA-Linux-x86_64-535.104.05.run`), or the CUDA runfile
/// (`cuda_12.4.0_550.54.14_linux.run`) given `--driver`.
fn runs_driver_runfile(words: &[&str]) -> Option<String> {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let first = words.first().map(|w| base(w))?;
    let file = if matches!(first.as_str(), "sh" | "bash") {
        words
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-'))
            .map(|w| base(w))?
    } else {
        first
    };
    if !file.ends_with(".run") {
        return None;
    }
    if file.starts_with("NVIDIA-Linux-") {
        return Some(file);
    }
    if file.starts_with("cuda_") && words.contains(&"--driver") {
        return Some(file);
    }
    None
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    let final_chain = super::final_chain(bf);
    for st in bf.built_stages() {
        // The stub libcuda.so serves linking in a throw-away builder stage; only the
        // stages the final image is built on ship their loader setup.
        let builder = !final_chain.contains(&st.index);
        for i in &st.installs {
            if let Install::Os(o) = i {
                for crate::runconfig::pkg::OsPkg { name: n, pos, .. } in &o.pkgs {
                    if is_cuda_metapackage_with_driver(n) {
                        out.push(
                            META.finding(format!("`{n}` is NVIDIA's meta-package for the CUDA toolkit *and driver*: it pulls cuda-drivers (the user-space driver) into the image, which must come from the host at run time"))
                                .with_location(loc(&bf.file, *pos))
                                .with_help("install `cuda-toolkit-X-Y` (or only the libraries you need, e.g. cuda-libraries-X-Y) instead"),
                        );
                    } else if is_driver_package(n) {
                        out.push(
                            META.finding(format!("`{n}` installs the NVIDIA user-space driver into the image; it must come from the host at run time"))
                                .with_location(loc(&bf.file, *pos))
                                .with_help("remove it; the NVIDIA Container Toolkit mounts the host's driver libraries (--gpus / device plugin)"),
                        );
                    }
                }
            }
        }
        for c in &st.copies {
            if c.from.is_none() {
                if let Some(src) = c.srcs.iter().find(|s| is_driver_library_file(s)) {
                    out.push(
                        META.finding(format!("{} copies driver library `{src}` into the image", c.cmd))
                            .with_location(loc(&bf.file, c.pos))
                            .with_help("do not ship libcuda / libnvidia-ml; the host's copies are injected at run time"),
                    );
                }
            }
        }
        for c in &st.cmds {
            let name = c.name();
            let words: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
            if name == "ln" || name == "cp" {
                if let Some(dst) = words.last() {
                    let b = dst.rsplit('/').next().unwrap_or(dst);
                    let from_stub = words.iter().any(|w| w.contains("stubs"));
                    if builder && from_stub {
                        continue;
                    }
                    if words.len() >= 3
                        && (b == "libcuda.so.1"
                            || dst.ends_with('/')
                                && words.iter().any(|w| w.ends_with("libcuda.so.1")))
                    {
                        out.push(
                            META.finding(format!("`{}` creates libcuda.so.1 in the image{}", words.join(" "), if words.iter().any(|w| w.contains("stubs")) { " from the link-time stub" } else { "" }))
                                .with_location(loc(&bf.file, c.pos))
                                .with_help("the real libcuda.so.1 is injected from the host; link against stubs with LIBRARY_PATH at build time only"),
                        );
                    }
                }
            }
            if let Some(file) = runs_driver_runfile(&words) {
                out.push(
                    META.finding(format!("`{file}` installs the NVIDIA driver into the image by hand; it must come from the host at run time"))
                        .with_location(loc(&bf.file, c.pos))
                        .with_help("drop the driver install (run the CUDA runfile with --toolkit only); the NVIDIA Container Toolkit mounts the host's driver libraries"),
                );
            }
            // echo /usr/local/cuda/lib64/stubs > /etc/ld.so.conf.d/…
            if name == "echo" || name == "printf" {
                let to_ldconf = c.redirects.iter().any(|r| {
                    r.target
                        .as_ref()
                        .map(|t| t.text.contains("ld.so.conf"))
                        .unwrap_or(false)
                });
                if to_ldconf && !builder && words.iter().any(|w| w.contains("/stubs")) {
                    out.push(
                        META.finding("the CUDA stubs directory is added to the dynamic loader's search path (ld.so.conf): the stub libcuda.so can be loaded instead of the real driver")
                            .with_location(loc(&bf.file, c.pos))
                            .with_help("use the stubs only when linking (LIBRARY_PATH or -L), never in ld.so.conf"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::dockerfile;

    #[test]
    fn packages_links_and_ldconf() {
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN apt-get update && apt-get install -y --no-install-recommends nvidia-driver-535 libnvidia-compute-535 curl\nRUN ln -s /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so.1 \\\n && echo \"/usr/local/cuda/lib64/stubs\" > /etc/ld.so.conf.d/z-cuda-stubs.conf\nCOPY libcuda.so.535.104.05 /usr/lib/x86_64-linux-gnu/\n";
        let f = dockerfile(t, "GL103", vec![]);
        let lines: Vec<_> = f
            .iter()
            .map(|f| f.location.as_ref().unwrap().line.unwrap())
            .collect();
        assert_eq!(lines, vec![2, 2, 5, 3, 4], "{f:?}");
        // The stub link in a throw-away builder stage only serves the build.
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nRUN ln -s /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so.1 && make\nFROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=build /src/app /app\n";
        assert!(dockerfile(t, "GL103", vec![]).is_empty());
        // ...but in the final stage it ships.
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nRUN make\nFROM build\nRUN ln -s /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so.1\n";
        assert_eq!(dockerfile(t, "GL103", vec![]).len(), 1);
        // Meta-packages with the driver, and driver runfiles; not the toolkit-only forms.
        let t = "FROM ubuntu:22.04\nRUN apt-get install -y cuda-12-4 cuda-toolkit-12-4 cuda-libraries-12-4 cuda-cudart-12-4\nRUN yum install -y cuda\nRUN wget https://x/NVIDIA-Linux-x86_64-535.104.05.run && sh NVIDIA-Linux-x86_64-535.104.05.run -s --no-kernel-module\nRUN sh cuda_12.4.0_550.54.14_linux.run --silent --toolkit\nRUN ./cuda_12.4.0_550.54.14_linux.run --silent --driver --toolkit\n";
        let f = dockerfile(t, "GL103", vec![]);
        let got: Vec<_> = f
            .iter()
            .map(|f| {
                (
                    f.location.as_ref().unwrap().line.unwrap(),
                    f.message.split('`').nth(1).unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (2, "cuda-12-4".to_string()),
                (3, "cuda".to_string()),
                (4, "NVIDIA-Linux-x86_64-535.104.05.run".to_string()),
                (6, "cuda_12.4.0_550.54.14_linux.run".to_string()),
            ],
            "{f:?}"
        );
        assert!(dockerfile(
            "FROM ubuntu\nRUN apt-get install -y nvidia-container-toolkit-base python3\n",
            "GL103",
            vec![]
        )
        .is_empty());
    }
}
