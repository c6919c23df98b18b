//! What every exported row carries so that it stands alone ([`RowContext`]): the model, the
//! arm's engine, the machine, the tool and the run's date, taken from the raw record's header.
//! Rows of the `speed`, `energy` and `summary` CSVs of different runs and machines concatenate
//! into one table (header once) and still say what each measured; the Markdown tables carry
//! the short part that tells rows apart and a one-line paragraph with the rest
//! (docs/formats.md, "Self-describing exports").

use serde::{Deserialize, Serialize};

use super::format::csv_field;
use crate::record::Header;

/// The CSV columns of the context, in their fixed order (after the arm name).
pub const CSV_COLUMNS: &str = "model_spec,weights_sha256_12,backend_spec,precision,threads,requests_per_call,cpu_model,gpu,os,arch,tool_version,git_commit,started_utc,boundary";

/// What `speed` times for an arm whose host path is ours: a request in, its result out.
pub const HOST_PATH_BOUNDARY: &str = "host path: request → result";

/// What `speed` times for a reference runtime's arm (`ref:…`): its own predict, in its worker.
pub const REFERENCE_BOUNDARY: &str = "runtime: predict(state, questions) in its worker";

/// The run's context: the model, machine, tool and date every row of its exports carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowContext {
    /// The model spec as given (`builtin:tiny`, `synthetic:english`, a folder).
    pub model_spec: String,
    /// Requests answered by one call (`--batch N`, 1 without it).
    pub requests_per_call: usize,
    /// The CPU's model string, where the OS said it.
    pub cpu_model: Option<String>,
    /// The OS as the header names it (`linux`, `macos`).
    pub os: String,
    /// The machine's architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// The version of the laya-bench that wrote the record.
    pub tool_version: String,
    /// Its git commit (`unknown` for a build outside a checkout).
    pub git_commit: String,
    /// When the run started, UTC ISO 8601 (`2026-12-06T12:00:00Z`) of the header's
    /// `started_unix_s`.
    pub started_utc: String,
    /// Per arm, in the header's order.
    pub arms: Vec<ArmContext>,
}

/// One arm's part of the context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmContext {
    /// The arm's name.
    pub name: String,
    /// The first 12 hex digits of the sha256 of the weights the arm loaded.
    pub weights_sha256_12: String,
    /// The backend spec (`portable:f32`, `mock:…`).
    pub backend_spec: String,
    /// Weight precision (`f32`, `f16`, `w8`).
    pub precision: String,
    /// Threads the engine computes with: the arm's recorded thread count (a `--threads` sweep),
    /// else where its recorded device says (`cpu (2 threads, …)`).
    pub threads: Option<usize>,
    /// Requests answered by one call of this arm (its value in a `--batch` sweep, else the
    /// run's `--batch`).
    #[serde(default)]
    pub requests_per_call: usize,
    /// The arm's recorded device where it runs on a GPU (MLX on Metal, Core ML with the GPU
    /// allowed, a reference runtime on CUDA); `None` on the CPU.
    pub gpu: Option<String>,
    /// What the arm's figures measure: `speed` the timed boundary ([`HOST_PATH_BOUNDARY`],
    /// [`REFERENCE_BOUNDARY`]), `energy` the power boundary (`gpu-board`, `whole-system`, …).
    pub boundary: String,
}

impl RowContext {
    /// The context of the run whose raw header is `header`.
    pub fn of(header: &Header) -> Self {
        let energy = header.kind == "energy";
        let power = header.power_boundary().name();
        let arms = header
            .arms
            .iter()
            .map(|a| ArmContext {
                name: a.name.clone(),
                weights_sha256_12: a.fingerprint.chars().take(12).collect(),
                backend_spec: a.spec.clone(),
                precision: a.precision.clone(),
                threads: a.threads.or_else(|| threads_of(&a.device)),
                requests_per_call: header.requests_per_call(&a.name),
                gpu: gpu_of(&a.device),
                boundary: if energy {
                    power.clone()
                } else if a.spec.starts_with("ref:") {
                    REFERENCE_BOUNDARY.into()
                } else {
                    HOST_PATH_BOUNDARY.into()
                },
            })
            .collect();
        Self {
            model_spec: header.model.spec.clone(),
            requests_per_call: header.plan.batch.max(1),
            cpu_model: header.host.cpu_model.clone(),
            os: header.host.os.clone(),
            arch: header.host.arch.clone(),
            tool_version: header.tool.version.clone(),
            git_commit: header.tool.git_revision.clone(),
            started_utc: crate::time::iso_utc(header.started_unix_s.floor() as i64),
            arms,
        }
    }

    /// The arm named `name` (a default one, every field empty, for a name the header did not
    /// list: a report read back from JSON written before the context existed).
    pub fn arm(&self, name: &str) -> ArmContext {
        self.arms.iter().find(|a| a.name == name).cloned().unwrap_or_default()
    }

    /// The context cells of one CSV row of arm `name`, in [`CSV_COLUMNS`]'s order, each
    /// followed by a comma (empty cells where a value is unknown).
    pub fn csv_cells(&self, name: &str) -> String {
        let a = self.arm(name);
        let cells = [
            csv_field(&self.model_spec),
            a.weights_sha256_12,
            csv_field(&a.backend_spec),
            csv_field(&a.precision),
            a.threads.map(|t| t.to_string()).unwrap_or_default(),
            a.requests_per_call.max(1).to_string(),
            csv_field(self.cpu_model.as_deref().unwrap_or("")),
            csv_field(a.gpu.as_deref().unwrap_or("")),
            csv_field(&self.os),
            csv_field(&self.arch),
            csv_field(&self.tool_version),
            csv_field(&self.git_commit),
            csv_field(&self.started_utc),
            csv_field(&a.boundary),
        ];
        cells.iter().map(|c| format!("{c},")).collect()
    }

    /// The Markdown cells that tell rows of different runs apart, for a table with the
    /// columns [`MARKDOWN_COLUMNS`]: model (with its weights' sha256 prefix), precision,
    /// requests per call, threads, and where it ran (the GPU, else the CPU model).
    pub fn markdown_cells(&self, name: &str) -> [String; 5] {
        let a = self.arm(name);
        let model = match a.weights_sha256_12.as_str() {
            "" => format!("`{}`", self.model_spec),
            sha => format!("`{}` {sha}", self.model_spec),
        };
        let ran_on = a.gpu.clone().or_else(|| self.cpu_model.clone()).unwrap_or_else(|| "–".into());
        [
            model,
            if a.precision.is_empty() { "–".into() } else { a.precision.clone() },
            a.requests_per_call.max(1).to_string(),
            a.threads.map(|t| t.to_string()).unwrap_or_else(|| "–".into()),
            ran_on.replace('|', "\\|"),
        ]
    }

    /// The one-line paragraph above a Markdown table: the OS, the tool and its commit, the
    /// run's date and what the figures measure (`boundary`: the table's, or each arm's when
    /// they differ).
    pub fn markdown_line(&self) -> String {
        let mut boundaries: Vec<&str> = Vec::new();
        for a in &self.arms {
            if !boundaries.contains(&a.boundary.as_str()) {
                boundaries.push(&a.boundary);
            }
        }
        format!(
            "Context: {} {}, laya-bench {} (commit {}), started {}, boundary {}.\n\n",
            self.os,
            self.arch,
            self.tool_version,
            self.git_commit,
            self.started_utc,
            if boundaries.is_empty() { "unknown".into() } else { boundaries.join(" / ") }
        )
    }
}

/// The Markdown header cells of [`RowContext::markdown_cells`], each followed by ` | `.
pub const MARKDOWN_COLUMNS: &str = "Model | Precision | Batch | Threads | CPU/GPU | ";

/// The alignment cells of [`MARKDOWN_COLUMNS`].
pub const MARKDOWN_ALIGN: &str = ":---|:---|---:|---:|:---|";

/// The threads in a recorded device description (`cpu (2 threads, avx2 kernels: …)`), where it
/// names them.
fn threads_of(device: &str) -> Option<usize> {
    let at = device.find(" threads")?;
    let digits: String = device[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// The recorded device where it is a GPU: MLX on Metal (`gpu (Metal, …)`), Core ML with the
/// GPU allowed, a reference runtime on CUDA or MPS; `None` for a CPU (`cpu (…)`, MLX's CPU
/// fallback) or no device (a scripted arm).
fn gpu_of(device: &str) -> Option<String> {
    let lower = device.to_ascii_lowercase();
    let on_gpu = !lower.starts_with("cpu")
        && !lower.starts_with("none")
        && ["gpu", "cuda", "mps"].iter().any(|w| lower.contains(w));
    on_gpu.then(|| device.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw header as a file holds it, written by hand.
    fn header(kind: &str, extra: serde_json::Value) -> Header {
        let mut h = serde_json::json!({
            "schema_version": 2, "kind": kind,
            "tool": {"name": "laya-bench", "version": "0.9.1", "git_revision": "abc1234"},
            "command_line": ["laya-bench", kind], "started_unix_s": 1_796_558_400.75,
            "clock": "monotonic ns since started_unix_s",
            "host": {"hostname": null, "os": "linux", "arch": "x86_64",
                     "cpu_model": "AMD EPYC 7B13, 64-Core", "logical_cpus": 2, "memory_bytes": null},
            "model": {"spec": "synthetic:english"},
            "arms": [
                {"name": "f32", "spec": "portable:f32", "backend": "portable", "precision": "f32",
                 "device": "cpu (2 threads, avx2 kernels: avx2+fma)",
                 "fingerprint": "0123456789abcdef0123", "batch": 1, "length": 96, "max_options": 32},
                {"name": "gpu", "spec": "mlx:f16", "backend": "mlx", "precision": "f16",
                 "device": "gpu (Metal, MLX 0.25 default device)",
                 "fingerprint": "fedcba9876543210fedc", "batch": 1, "length": 96, "max_options": 32},
                {"name": "hf", "spec": "ref:laya:cpu", "backend": "torch 2.4", "precision": "f32",
                 "device": "Python 3.11 worker (python3); torch 2.4",
                 "fingerprint": "aa", "batch": 1, "length": 96, "max_options": 32}
            ],
            "workload": {"name": "invoice", "requests": 1, "tokens_per_row": [[91]],
                         "target_tokens": 91, "length": 96},
            "plan": {"cycles": 1, "block_seconds": null, "block_calls": 2, "warmup_calls": 1,
                     "order": ["f32", "gpu", "hf"]}
        });
        let (serde_json::Value::Object(h), serde_json::Value::Object(extra)) = (&mut h, extra) else {
            unreachable!("both are objects")
        };
        h.extend(extra);
        serde_json::from_value(serde_json::Value::Object(std::mem::take(h))).unwrap()
    }

    #[test]
    fn a_speed_header_gives_every_column() {
        let c = RowContext::of(&header("speed", serde_json::json!({})));
        assert_eq!(c.model_spec, "synthetic:english");
        assert_eq!(c.started_utc, "2026-12-06T12:00:00Z");
        assert_eq!((c.os.as_str(), c.arch.as_str()), ("linux", "x86_64"));
        assert_eq!((c.tool_version.as_str(), c.git_commit.as_str()), ("0.9.1", "abc1234"));
        assert_eq!(c.requests_per_call, 1);
        let f32 = c.arm("f32");
        assert_eq!(f32.weights_sha256_12, "0123456789ab");
        assert_eq!((f32.threads, f32.gpu.as_deref()), (Some(2), None));
        assert_eq!(f32.boundary, HOST_PATH_BOUNDARY);
        let gpu = c.arm("gpu");
        assert_eq!((gpu.threads, gpu.gpu.as_deref()), (None, Some("gpu (Metal, MLX 0.25 default device)")));
        let hf = c.arm("hf");
        assert_eq!((hf.weights_sha256_12.as_str(), hf.boundary.as_str()), ("aa", REFERENCE_BOUNDARY));
        assert_eq!(hf.gpu, None);
        // one cell per column, quoted where a value has a comma
        let cells = c.csv_cells("f32");
        assert_eq!(
            cells,
            "synthetic:english,0123456789ab,portable:f32,f32,2,1,\"AMD EPYC 7B13, 64-Core\",,linux,x86_64,0.9.1,abc1234,2026-12-06T12:00:00Z,host path: request → result,"
        );
        assert_eq!(CSV_COLUMNS.split(',').count(), 14);
        // an arm the header does not list has empty cells, never a guess
        assert_eq!(c.csv_cells("other"), "synthetic:english,,,,,1,\"AMD EPYC 7B13, 64-Core\",,linux,x86_64,0.9.1,abc1234,2026-12-06T12:00:00Z,,");
    }

    #[test]
    fn an_energy_header_gives_its_power_boundary_and_batch() {
        let h = header(
            "energy",
            serde_json::json!({"power_boundary": "gpu-board", "plan": {"cycles": 1, "block_seconds": 1.0,
                "block_calls": null, "warmup_calls": 1, "order": ["f32"], "batch": 4}}),
        );
        let c = RowContext::of(&h);
        assert!(c.arms.iter().all(|a| a.boundary == "gpu-board"), "{c:?}");
        assert_eq!(c.requests_per_call, 4);
        assert_eq!(
            c.markdown_cells("f32"),
            [
                "`synthetic:english` 0123456789ab".to_string(),
                "f32".into(),
                "4".into(),
                "2".into(),
                "AMD EPYC 7B13, 64-Core".into()
            ]
        );
        assert_eq!(c.markdown_cells("gpu")[4], "gpu (Metal, MLX 0.25 default device)");
        assert_eq!(
            c.markdown_line(),
            "Context: linux x86_64, laya-bench 0.9.1 (commit abc1234), started 2026-12-06T12:00:00Z, boundary gpu-board.\n\n"
        );
    }

    #[test]
    fn threads_and_gpus_are_read_only_where_the_device_names_them() {
        assert_eq!(threads_of("cpu (16 threads, avx512 kernels: x)"), Some(16));
        assert_eq!(threads_of("cpu (MLX 0.25 Metal build; default device)"), None);
        assert_eq!(gpu_of("cpu (MLX 0.25 Metal build; Metal unusable: no GPU)"), None);
        assert_eq!(gpu_of("none (scripted outputs, not a measurement)"), None);
        assert!(gpu_of("Python 3.11 worker (python3); torch 2.4; options {\"device\":\"cuda:0\"}").is_some());
    }
}
