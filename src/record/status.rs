//! How a run ended, as the raw footer, the `speed` and `energy` reports and the summary's
//! reading of a footer name it.

use serde::{Deserialize, Serialize};

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every block and idle window ran and no rule rejected the samples.
    Complete,
    /// A rule rejected the samples (or the sensor stopped): no energy figure may be used.
    Rejected,
    /// Interrupted (Ctrl-C) before the plan was done.
    Incomplete,
    /// A call or the sampler failed.
    Failed,
}

impl RunStatus {
    /// The status word (`complete`, `rejected`, `incomplete`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Rejected => "rejected",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for RunStatus {
    /// The status word, as [`RunStatus::as_str`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::RunStatus;

    #[test]
    fn the_status_word_is_its_serialization() {
        for s in [RunStatus::Complete, RunStatus::Rejected, RunStatus::Incomplete, RunStatus::Failed] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<RunStatus>(&format!("\"{}\"", s.as_str())).unwrap(), s);
        }
        assert!(serde_json::from_str::<RunStatus>("\"done\"").is_err());
    }
}
