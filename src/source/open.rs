//! The one way from a reference to an image: [`open_image`] parses the reference
//! ([`parse_reference`] → [`Transport`]) and hands it to the transport's module: `archive`
//! (tar files read in place: docker-archive, and the store behind oci-archive), `oci_layout`
//! (OCI image layouts and indexes), `dir`, `daemon` (Docker or podman) and `registry`. A bare
//! name that is not a path goes to the local daemon first, then the registry, as Trivy does.

use super::error::{live_error_kind, LiveError, LiveErrorKind, SourceError};
use super::options::SourceOptions;
use super::reference::{parse_reference, Transport};
use super::{archive, daemon, dir, oci_layout, registry, Image, Platform};
use std::path::Path;

/// Open the image `reference` names. `platform` picks from multi-platform indexes (default:
/// [`Platform::host`]); when given explicitly, a single-platform image of another platform is
/// an error too. `opts` says how daemons and registries are reached.
pub fn open_image(
    reference: &str,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    match parse_reference(reference) {
        Ok(Transport::Auto { path }) if !path.exists() && looks_like_image_name(reference) => {
            open_bare_name(reference, platform, opts)
        }
        Err(SourceError::UnknownTransport { foreign: false, .. })
            if looks_like_image_name(reference) =>
        {
            open_bare_name(reference, platform, opts)
        }
        Ok(t) => open_transport(t, platform, opts),
        Err(e) => Err(e.into()),
    }
}

/// Open an already parsed reference. New transports add an arm here.
pub fn open_transport(
    transport: Transport,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    let local = match transport {
        Transport::DockerDaemon { reference } => {
            return daemon::open_daemon(&reference, platform, opts)
        }
        Transport::Registry { reference } => {
            return registry::open_registry(&reference, platform, opts)
        }
        Transport::DockerArchive { path, selector } => {
            archive::TarArchive::open(&path).and_then(|ar| {
                archive::open_docker_archive(std::sync::Arc::new(ar), selector.as_ref(), platform)
            })
        }
        Transport::Oci { path, selector } => {
            oci_layout::open_layout_dir(&path, selector.as_ref(), platform)
        }
        Transport::OciArchive { path, selector } => {
            archive::TarArchive::open(&path).and_then(|ar| {
                oci_layout::open_layout_archive(
                    std::sync::Arc::new(ar),
                    selector.as_ref(),
                    platform,
                )
            })
        }
        Transport::Dir { path } => dir::open_dir(&path, platform),
        Transport::Auto { path } => open_auto(&path, platform),
    };
    Ok(local?)
}

/// Whether a reference that is not a path could be an image name (`ubuntu`,
/// `pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime`, `localhost:5000/x@sha256:…`).
fn looks_like_image_name(r: &str) -> bool {
    let archive_like = [".tar", ".tar.gz", ".tgz", ".tar.zst"]
        .iter()
        .any(|e| r.ends_with(e));
    !archive_like && crate::vocab::Reference::parse(r).is_ok()
}

/// A bare `NAME[:TAG]`: the local daemon when one has it, else the registry.
fn open_bare_name(
    name: &str,
    platform: Option<&Platform>,
    opts: &SourceOptions,
) -> anyhow::Result<Image> {
    let daemon_err = match daemon::open_daemon(name, platform, opts) {
        Ok(img) => return Ok(img),
        Err(e) => match live_error_kind(&e) {
            Some(LiveErrorKind::NoDaemon) | Some(LiveErrorKind::NotFound) => e,
            _ => return Err(e),
        },
    };
    registry::open_registry(name, platform, opts).map_err(|reg_err| {
        let kind = live_error_kind(&reg_err).unwrap_or(LiveErrorKind::Protocol);
        anyhow::Error::new(LiveError::new(
            kind,
            format!(
                "{name}: not from a daemon ({daemon_err:#}); not from a registry ({reg_err:#})"
            ),
        ))
    })
}

/// What a directory must hold to be taken for a root filesystem (or a virtualenv) when given
/// as a bare path.
const ROOTFS_MARKERS: &[&str] = &[
    "usr",
    "etc",
    "lib",
    "lib64",
    "bin",
    "sbin",
    "opt",
    "pyvenv.cfg",
];

/// A bare path: a directory with `oci-layout` is an OCI layout, any other directory a root
/// filesystem; a tar with `manifest.json` is a docker-archive, one with `oci-layout` an
/// oci-archive.
fn open_auto(path: &Path, platform: Option<&Platform>) -> Result<Image, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| SourceError::io(path, e))?;
    if meta.is_dir() {
        if path.join("oci-layout").is_file() {
            return oci_layout::open_layout_dir(path, None, platform);
        }
        // Guessing "root filesystem" for any directory would judge an empty or unrelated one
        // as an image with nothing in it ("ok"). `dir:PATH` still takes any directory.
        if !ROOTFS_MARKERS.iter().any(|m| path.join(m).exists()) {
            return Err(SourceError::NotAnImage {
                path: path.to_path_buf(),
                reason: format!(
                    "a directory that is neither an OCI layout (no oci-layout file) nor a root \
                     filesystem (none of {}); use dir:PATH to scan it anyway",
                    ROOTFS_MARKERS.join(", ")
                ),
            });
        }
        return dir::open_dir(path, platform);
    }
    let ar = std::sync::Arc::new(archive::TarArchive::open(path)?);
    if ar.contains("manifest.json") {
        archive::open_docker_archive(ar, None, platform)
    } else if ar.contains("oci-layout") || ar.contains("index.json") {
        oci_layout::open_layout_archive(ar, None, platform)
    } else {
        Err(SourceError::NotAnImage {
            path: path.to_path_buf(),
            reason: "a tar archive with neither manifest.json (docker-archive) nor \
                     oci-layout (oci-archive)"
                .into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Daemon and registry references are opened by their own modules from the one
    /// dispatcher, not refused as an unsupported transport.
    #[test]
    fn daemon_and_registry_transports_reach_their_modules() {
        let d = tempfile::tempdir().unwrap();
        let opts = SourceOptions {
            docker_host: Some(format!("unix://{}", d.path().join("absent.sock").display())),
            ..SourceOptions::default()
        };
        let daemon = Transport::DockerDaemon {
            reference: "x:1".into(),
        };
        let e = open_transport(daemon, None, &opts).unwrap_err();
        assert_eq!(live_error_kind(&e), Some(LiveErrorKind::NoDaemon), "{e:#}");
        // A malformed registry name fails in the registry's own parser, before any request.
        let registry = Transport::Registry {
            reference: "Upper/Case:1".into(),
        };
        let e = open_transport(registry, None, &opts).unwrap_err();
        assert_eq!(
            live_error_kind(&e),
            Some(LiveErrorKind::BadReference),
            "{e:#}"
        );
        assert!(e.downcast_ref::<SourceError>().is_none(), "{e:#}");
    }

    #[test]
    fn image_names_vs_unknown_transports() {
        for ok in [
            "ubuntu",
            "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
            "localhost:5000/x@sha256:0123456789abcdef0123456789abcdef",
            "127.0.0.1:5000/live/oci:v1",
            "nvcr.io/nvidia/pytorch:24.01-py3",
        ] {
            assert!(looks_like_image_name(ok), "{ok}");
        }
        for bad in [
            "foo:/x",
            "bogus-transport:/x/y",
            "bogus:a/b",
            "a/b:c/d",
            "x.tar",
            ":x",
        ] {
            assert!(!looks_like_image_name(bad), "{bad}");
        }
    }
}
