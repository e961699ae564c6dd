//! Progress bars on stderr: bytes downloaded (rate, ETA) and layers scanned. Shown only when
//! stderr is a terminal, not with `--quiet`, and not in CI (`CI` set to anything but
//! `false`/`0`), so stdout (JSON, SARIF) and logs stay clean. A hidden [`Progress`] costs
//! nothing, so sources and the scan loop update it unconditionally.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

#[derive(Clone)]
pub struct Progress {
    download: ProgressBar,
    scan: ProgressBar,
    visible: bool,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::hidden()
    }
}

/// Whether bars should be drawn: the rules above, given `--quiet`.
pub fn should_show(quiet: bool) -> bool {
    let ci = std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false);
    !quiet && !ci && std::io::stderr().is_terminal()
}

impl Progress {
    pub fn hidden() -> Progress {
        Progress {
            download: ProgressBar::hidden(),
            scan: ProgressBar::hidden(),
            visible: false,
        }
    }

    /// Visible bars when [`should_show`] says so, else hidden.
    pub fn auto(quiet: bool) -> Progress {
        if should_show(quiet) {
            Progress::visible()
        } else {
            Progress::hidden()
        }
    }

    fn visible() -> Progress {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let download = multi.add(ProgressBar::new(0));
        download.set_style(
            ProgressStyle::with_template(
                "download {bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let scan = multi.add(ProgressBar::new(0));
        scan.set_style(
            ProgressStyle::with_template("scan     {bar:30} {pos}/{len} layers {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            download,
            scan,
            visible: true,
        }
    }

    pub fn is_visible(&self) -> bool {
        self.visible
    }

    /// Bytes still to download (layers not in the cache).
    pub fn add_download_total(&self, bytes: u64) {
        self.download.inc_length(bytes);
    }

    pub fn downloaded(&self, bytes: u64) {
        self.download.inc(bytes);
    }

    pub fn set_layers(&self, n: u64) {
        self.scan.set_length(n);
    }

    pub fn layer_done(&self, name: &str) {
        self.scan.set_message(short(name));
        self.scan.inc(1);
    }

    pub fn finish(&self) {
        self.download.finish_and_clear();
        self.scan.finish_and_clear();
    }
}

fn short(name: &str) -> String {
    let n = name.strip_prefix("sha256:").unwrap_or(name);
    n.chars().take(12).collect()
}
