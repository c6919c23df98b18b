//! The command edge of `hub:` checkpoints: the hub settings read from the environment, a
//! download progress bar on stderr (hidden when stderr is not a terminal), and [`model_spec`],
//! where a command's `hub:` model spec becomes its snapshot folder.

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::hub::{FileProgress, Hub, HubConfig, Progress};
use crate::laya::bundle::ModelSpec;

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

impl Progress for Bars {
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

/// The process's hub: its settings read from the environment (HF_ENDPOINT, HF_HOME /
/// HF_HUB_CACHE, HF_HUB_OFFLINE, HF_TOKEN, LAYA_BENCH_HUB_STALL_S) and the progress bar.
pub(crate) fn from_env() -> Hub {
    let cwd = std::env::current_dir().unwrap_or_default();
    let config = HubConfig::from_env(|k| std::env::var(k).ok(), &cwd);
    Hub::new(config, Arc::new(Bars))
}

/// A model spec as the libraries take it: a `hub:NAME[@REVISION]` spec resolved to its
/// verified snapshot folder by `hub` ([`Hub::resolve_spec`], downloading it once with the
/// progress bar), every other spec parsed without I/O ([`ModelSpec::parse`]).
pub(crate) fn model_spec(text: &str, hub: &Hub) -> anyhow::Result<ModelSpec> {
    match text.strip_prefix("hub:") {
        Some(rest) => Ok(ModelSpec::Dir(hub.resolve_spec(rest)?)),
        None => Ok(ModelSpec::parse(text)?),
    }
}
