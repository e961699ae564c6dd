//! The image's own facts: its config (environment, entrypoint, labels) and platform, and the
//! glibc release its libc carries.

use super::*;

pub(super) const ENV_KEYS: &[&str] = &[
    "CUDA_VERSION",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH",
    "PATH",
    // bitsandbytes' choice of native library (GL013).
    "BNB_CUDA_VERSION",
    // triton's choice of assembler (GL014).
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
];

pub(super) fn image_info(image: &ImageMeta, tree: &FileTree) -> ImageInfo {
    let mut env = BTreeMap::new();
    for kv in &image.config.env {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let keep = ENV_KEYS.contains(&k)
            || k.starts_with("NVIDIA_")
            || k.starts_with("CUDA_")
            || k.starts_with("NV_");
        if keep {
            // Later entries win, as in Docker.
            env.insert(k.to_string(), v.to_string());
        }
    }
    ImageInfo {
        reference: image.reference.clone(),
        digest: image.digest.clone(),
        platform: image.platform.clone(),
        env,
        entrypoint: image.config.entrypoint.clone(),
        cmd: image.config.cmd.clone(),
        labels: image.config.labels.clone(),
        layers: image.layers.clone(),
        glibc: glibc(tree),
        python: python_interpreters(tree),
    }
}

pub(super) fn glibc(tree: &FileTree) -> Option<String> {
    let from_content = facts(tree, |f| match f {
        Fact::Glibc(g) => Some(g),
        _ => None,
    })
    .map(|(_, _, g)| g.version.clone())
    .next();
    from_content.or_else(|| {
        tree.nodes.keys().find_map(|p| {
            let dir = p.parent()?;
            let d = dir.as_str();
            let std_dir = matches!(d, "lib" | "lib64" | "usr/lib" | "usr/lib64")
                || ((d.starts_with("lib/") || d.starts_with("usr/lib/"))
                    && d.ends_with("-linux-gnu"));
            if std_dir {
                crate::detect::glibc::version_from_file_name(p.file_name())
            } else {
                None
            }
        })
    })
}
