//! The command edge of `hub:` checkpoints: the hub settings read from the environment and a
//! download progress bar on stderr (hidden when stderr is not a terminal).

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::hub::{self, FileProgress, HubConfig, Observer};

struct Bars;

struct Bar(ProgressBar);

impl FileProgress for Bar {
    fn advance(&mut self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&mut self) {
        self.0.finish_and_clear();
    }
}

impl Observer for Bars {
    fn file_started(&self, file: &str, bytes: u64) -> Box<dyn FileProgress> {
        let bar = ProgressBar::with_draw_target(Some(bytes), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(format!("downloading {file}"));
        Box::new(Bar(bar))
    }

    fn notice(&self, text: &str) {
        eprintln!("note: {text}");
    }
}

/// Install the hub settings (HF_ENDPOINT, HF_HOME / HF_HUB_CACHE, HF_HUB_OFFLINE, HF_TOKEN,
/// LAYA_BENCH_HUB_STALL_S) and the progress bar for this process.
pub(crate) fn install() {
    let cwd = std::env::current_dir().unwrap_or_default();
    let config = HubConfig::from_env(|k| std::env::var(k).ok(), &cwd);
    hub::install(config, Arc::new(Bars));
}
