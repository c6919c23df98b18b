//! Who wrote a document and on which machine: the [`ToolInfo`] of this build and the
//! [`Provenance`] every report and raw header opens with (its schema version, the tool, the
//! host).

use serde::{Deserialize, Serialize};

use crate::host::HostInfo;

/// The tool that wrote a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `laya-bench`.
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Git revision at build time, or `unknown`.
    pub git_revision: String,
}

impl ToolInfo {
    /// This build.
    pub fn current() -> Self {
        Self {
            name: "laya-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: option_env!("LAYA_BENCH_GIT_REVISION").unwrap_or("unknown").into(),
        }
    }
}

/// The fields a document opens with: its schema version, the tool that wrote it and the
/// machine it describes.
///
/// Flattened (`#[serde(flatten)]`) into the reports whose JSON has these three keys side by
/// side in this order (`speed`, `doctor`), so their JSON is unchanged; the raw header and the
/// `energy` report keep their own fields (other keys sit between these) and fill them from
/// one of these constructors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Schema version of the document.
    pub schema_version: u32,
    /// Writer.
    pub tool: ToolInfo,
    /// Machine.
    pub host: HostInfo,
}

impl Provenance {
    /// A document this build writes now about this machine ([`HostInfo::detect`]).
    pub fn current(schema_version: u32) -> Self {
        Self { schema_version, tool: ToolInfo::current(), host: HostInfo::detect() }
    }

    /// A document derived from a record: the record's writer and machine under the
    /// document's own schema version.
    pub fn derived(schema_version: u32, tool: &ToolInfo, host: &HostInfo) -> Self {
        Self { schema_version, tool: tool.clone(), host: host.clone() }
    }
}

/// The fields a command's own report opens with when it names its kind, its start time and
/// its command line beside the tool and host (`snake rate` and `snake compare`): flattened, so
/// the JSON keeps these six keys first, in this order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportHead {
    /// Schema version of the report.
    pub schema_version: u32,
    /// What the report is (`snake-rate`).
    pub kind: String,
    /// ISO-8601 UTC time the run started.
    pub created_utc: String,
    /// The tool that wrote it.
    pub tool: ToolInfo,
    /// The machine.
    pub host: HostInfo,
    /// The command line (of the first session, for a resumed report).
    pub command_line: Vec<String>,
}

impl ReportHead {
    /// A report this build starts now on this machine, from this process's command line.
    pub fn current(schema_version: u32, kind: &str, created_utc: String) -> Self {
        Self {
            schema_version,
            kind: kind.to_string(),
            created_utc,
            tool: ToolInfo::current(),
            host: HostInfo::detect(),
            command_line: std::env::args().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Doc {
        #[serde(flatten)]
        provenance: Provenance,
        after: u8,
    }

    #[test]
    fn flattened_it_keeps_its_keys_in_place_and_in_order() {
        let host = HostInfo {
            hostname: None,
            os: "linux".into(),
            arch: "x86_64".into(),
            cpu_model: None,
            logical_cpus: 2,
            memory_bytes: Some(1024),
            cpu_levels: Default::default(),
        };
        let tool =
            ToolInfo { name: "laya-bench".into(), version: "0.1.0".into(), git_revision: "abc".into() };
        let doc = Doc { provenance: Provenance::derived(3, &tool, &host), after: 7 };
        let json = serde_json::to_string(&doc).unwrap();
        assert_eq!(
            json,
            r#"{"schema_version":3,"tool":{"name":"laya-bench","version":"0.1.0","git_revision":"abc"},"host":{"hostname":null,"os":"linux","arch":"x86_64","cpu_model":null,"logical_cpus":2,"memory_bytes":1024},"after":7}"#
        );
        let back: Doc = serde_json::from_str(&json).unwrap();
        assert_eq!(back.provenance, doc.provenance);
        assert_eq!(Provenance::current(1).tool, ToolInfo::current());
    }
}
