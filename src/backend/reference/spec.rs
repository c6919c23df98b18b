//! The `ref:` spec: `ref:KIND:ARGS…[:load-timeout=S][:call-timeout=S]`.

use std::path::Path;
use std::time::Duration;

use crate::error::Error;

/// Every runtime kind with its argument pattern (for messages and `doctor`).
pub const KINDS: &[(&str, &str)] = &[
    ("laya-mlx", "ref:laya-mlx:CKPT[:fp32|fp16]"),
    ("laya", "ref:laya:CKPT[:DEVICE][:fp32|fp16|bf16]"),
    ("laya-cuda", "ref:laya-cuda:CKPT[:DEVICE]"),
    ("laya-coreml", "ref:laya-coreml:BUNDLE[:UNITS]"),
    ("laya-coreml-ane", "ref:laya-coreml-ane:PACKAGE:SOURCE"),
    ("laya-apple", "ref:laya-apple:MODEL[:DEVICE[:fp16|fp32]]"),
    ("laya-mnn", "ref:laya-mnn:DIR[:THREADS]"),
    ("factory", "ref:factory:MODULE:CALLABLE[:ARG...]"),
];

/// Default wait for the runtime to load and warm.
pub const DEFAULT_LOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// Default wait for one answer.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A parsed `ref:` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefSpec {
    /// The runtime kind (`laya-mlx`, `factory`, ...).
    pub kind: String,
    /// Its arguments, in order (a checkpoint path may itself hold `:` when it is the only one).
    pub args: Vec<String>,
    /// How long the worker may take to load.
    pub load_timeout: Duration,
    /// How long one call may take.
    pub call_timeout: Duration,
}

fn seconds(key: &str, v: &str) -> Result<Duration, Error> {
    let max = crate::time::MAX_DURATION;
    match v.trim_end_matches('s').parse::<f64>() {
        // at most 7 days, like every duration the tool takes (1e20 s does not fit a Duration)
        Ok(x) if x.is_finite() && x > 0.0 && x <= max.as_secs_f64() => Ok(Duration::from_secs_f64(x)),
        Ok(x) if x.is_finite() && x > 0.0 => Err(Error::input(format!(
            "`{key}={v}`: longer than 7 days ({} s), the longest a timeout takes",
            max.as_secs()
        ))),
        _ => Err(Error::input(format!("`{key}={v}`: give a positive number of seconds, e.g. {key}=30"))),
    }
}

/// The precisions `ref:laya` can ask laya for (its autocast policy; docs/runtimes/laya.md).
pub const LAYA_PRECISIONS: [&str; 3] = ["fp32", "fp16", "bf16"];

/// PyTorch's device types (`torch.device` refuses any other), which `ref:laya`'s DEVICE
/// must name, alone or with an index (`cuda:1`).
pub const TORCH_DEVICES: [&str; 20] = [
    "cpu",
    "cuda",
    "mps",
    "xpu",
    "hip",
    "xla",
    "meta",
    "hpu",
    "ve",
    "ipu",
    "mtia",
    "lazy",
    "vulkan",
    "fpga",
    "maia",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "privateuseone",
];

/// `ref:laya`'s arguments from the parts after the kind: `[CKPT]`, `[CKPT, DEVICE]` or
/// `[CKPT, DEVICE, PRECISION]` (DEVICE empty where only a precision was given). A trailing
/// word is a device when it has no `/` or `.`, so a checkpoint path with `:` stays whole; one
/// that is no PyTorch device type ([`TORCH_DEVICES`]) is refused here, before a worker starts
/// (a typo such as `cdua` or `gpu` would otherwise fail only after Python and torch loaded).
fn laya_args(mut parts: Vec<&str>) -> Result<Vec<String>, Error> {
    let precision = match parts.last() {
        Some(w) if parts.len() > 1 && LAYA_PRECISIONS.contains(w) => parts.pop(),
        _ => None,
    };
    let mut device = None;
    if parts.len() > 1 {
        let word = parts[parts.len() - 1];
        let indexed = parts.len() > 2
            && !word.is_empty()
            && word.bytes().all(|b| b.is_ascii_digit())
            && TORCH_DEVICES.contains(&parts[parts.len() - 2]);
        if indexed {
            let n = parts.pop().unwrap_or_default();
            let name = parts.pop().unwrap_or_default();
            device = Some(format!("{name}:{n}"));
        } else if !word.is_empty() && !word.contains('/') && !word.contains('.') {
            if !TORCH_DEVICES.contains(&word) {
                let hint = match word {
                    "gpu" | "nvidia" | "cuda0" => " (an NVIDIA GPU is `cuda`, one of several `cuda:1`)",
                    "metal" | "apple" => " (Apple's GPU is `mps`)",
                    _ => "",
                };
                return Err(Error::input(format!(
                    "ref:laya: `{word}` is not a PyTorch device{hint}; DEVICE is one of cpu, cuda, cuda:N, mps, xpu (or another torch device type); a checkpoint path whose last `:` part has no `/` or `.` cannot be told from a device: link the folder under another name"
                )));
            }
            device = parts.pop().map(str::to_string);
        }
    }
    let mut args = vec![parts.join(":")];
    match (device, precision) {
        (d, Some(p)) => args.extend([d.unwrap_or_default(), p.to_string()]),
        (Some(d), None) => args.push(d),
        (None, None) => {}
    }
    Ok(args)
}

fn usage() -> String {
    let kinds: Vec<&str> = KINDS.iter().map(|(_, p)| *p).collect();
    format!("{} (options :load-timeout=S, :call-timeout=S)", kinds.join(", "))
}

impl RefSpec {
    /// Parse the text after `ref:`.
    pub fn parse(rest: &str) -> Result<Self, Error> {
        let mut parts: Vec<&str> = rest.split(':').collect();
        let kind = parts.remove(0);
        if !KINDS.iter().any(|(k, _)| *k == kind) {
            return Err(Error::input(format!("unknown reference runtime `{kind}`; one of: {}", usage())));
        }
        let (mut load_timeout, mut call_timeout) = (DEFAULT_LOAD_TIMEOUT, DEFAULT_CALL_TIMEOUT);
        while let Some(last) = parts.last() {
            match last.split_once('=') {
                Some(("load-timeout", v)) => load_timeout = seconds("load-timeout", v)?,
                Some(("call-timeout", v)) => call_timeout = seconds("call-timeout", v)?,
                _ => break,
            }
            parts.pop();
        }
        let args: Vec<String> = match kind {
            // A checkpoint, then a device (`cuda:1` is one), then a precision, each optional.
            "laya" => laya_args(parts)?,
            // One path, an optional trailing word: a path with `:` stays whole.
            "laya-mlx" | "laya-coreml" | "laya-mnn" if parts.len() > 1 => {
                let word = parts.pop().unwrap_or_default();
                let known = match kind {
                    "laya-mlx" => matches!(word, "fp32" | "fp16"),
                    "laya-coreml" => matches!(
                        word,
                        "cpu_ne" | "cpu_gpu" | "all" | "cpu" | "cpu_only" | "cpu_and_ne" | "cpu_and_gpu"
                    ),
                    "laya-mnn" => word.parse::<u32>().is_ok(),
                    _ => !word.contains('/') && !word.contains('.'),
                };
                if known {
                    vec![parts.join(":"), word.to_string()]
                } else if kind == "laya-mlx" {
                    return Err(Error::input(format!(
                        "ref:laya-mlx: the precision `{word}` is not fp32 or fp16"
                    )));
                } else {
                    parts.push(word);
                    vec![parts.join(":")]
                }
            }
            _ => parts.iter().map(|s| s.to_string()).collect(),
        };
        let needs = match kind {
            "factory" | "laya-coreml-ane" => 2,
            _ => 1,
        };
        if args.len() < needs || args.iter().take(needs).any(String::is_empty) {
            let pattern = KINDS.iter().find(|(k, _)| *k == kind).map(|(_, p)| *p).unwrap_or_default();
            return Err(Error::input(format!("write it as {pattern}")));
        }
        Ok(Self { kind: kind.to_string(), args, load_timeout, call_timeout })
    }

    /// The checkpoint folder it names, where its first argument is one.
    pub fn checkpoint(&self) -> Option<&str> {
        match self.kind.as_str() {
            "factory" => None,
            "laya-coreml-ane" => self.args.get(1).map(String::as_str),
            "laya-apple" if !Path::new(&self.args[0]).is_dir() => None,
            _ => self.args.first().map(String::as_str),
        }
    }

    /// The precision the spec asks for, as reports name it.
    pub fn precision(&self) -> &str {
        match (self.kind.as_str(), self.args.get(1).map(String::as_str)) {
            ("laya-mlx", Some(p)) => p,
            ("laya-mlx", None) => "fp32",
            ("laya-apple", _) => self.args.get(2).map(String::as_str).unwrap_or("fp16"),
            ("laya", _) => self.args.get(2).map(String::as_str).unwrap_or("runtime default"),
            _ => "runtime default",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_their_options() {
        let s = RefSpec::parse("laya-mlx:fixtures/tiny:fp16").unwrap();
        assert_eq!(
            (s.kind.as_str(), s.args.clone()),
            ("laya-mlx", vec!["fixtures/tiny".to_string(), "fp16".into()])
        );
        assert_eq!(s.precision(), "fp16");
        assert_eq!(s.checkpoint(), Some("fixtures/tiny"));
        assert_eq!(s.call_timeout, DEFAULT_CALL_TIMEOUT);
        let s = RefSpec::parse("laya-mlx:/m/a").unwrap();
        assert_eq!((s.args.clone(), s.precision()), (vec!["/m/a".to_string()], "fp32"));
        let s = RefSpec::parse("factory:fake.py:make:ok:3:call-timeout=0.5:load-timeout=2").unwrap();
        assert_eq!(s.args, ["fake.py", "make", "ok", "3"]);
        assert_eq!((s.call_timeout, s.load_timeout), (Duration::from_millis(500), Duration::from_secs(2)));
        assert_eq!(s.checkpoint(), None);
        let s = RefSpec::parse("laya-coreml:/b/x:cpu_ne").unwrap();
        assert_eq!(s.args, ["/b/x", "cpu_ne"]);
        assert_eq!(RefSpec::parse("laya:/c:cuda").unwrap().args, ["/c", "cuda"]);
        let s = RefSpec::parse("laya:/c:cuda:fp32").unwrap();
        assert_eq!(
            (s.args.clone(), s.precision()),
            (vec!["/c".into(), "cuda".into(), "fp32".to_string()], "fp32")
        );
        assert_eq!(RefSpec::parse("laya:/c:cuda:1:bf16").unwrap().args, ["/c", "cuda:1", "bf16"]);
        assert_eq!(RefSpec::parse("laya:/c:cuda:1").unwrap().args, ["/c", "cuda:1"]);
        assert_eq!(RefSpec::parse("laya:/c:mps").unwrap().args, ["/c", "mps"]);
        assert_eq!(RefSpec::parse("laya:/c:hip:2:bf16").unwrap().args, ["/c", "hip:2", "bf16"]);
        assert_eq!(RefSpec::parse("laya:/c:fp16").unwrap().args, ["/c", "", "fp16"]);
        assert_eq!(RefSpec::parse("laya:C:/ckpt").unwrap().args, ["C:/ckpt"]);
        assert_eq!(RefSpec::parse("laya:C:/ckpt:cpu:bf16").unwrap().args, ["C:/ckpt", "cpu", "bf16"]);
        assert_eq!(RefSpec::parse("laya:fp16").unwrap().args, ["fp16"]);
        assert_eq!(RefSpec::parse("laya:/c").unwrap().precision(), "runtime default");
        assert_eq!(RefSpec::parse("laya-mnn:/d:4").unwrap().args, ["/d", "4"]);
        assert_eq!(RefSpec::parse("laya-mnn:C:/d").unwrap().args, ["C:/d"]);
    }

    #[test]
    fn bad_specs_say_what_to_write() {
        for (bad, says) in [
            ("nope:x", "unknown reference runtime `nope`"),
            ("laya-mlx", "ref:laya-mlx:CKPT[:fp32|fp16]"),
            ("laya-mlx:/m:int4", "not fp32 or fp16"),
            ("factory:mod", "ref:factory:MODULE:CALLABLE"),
            ("laya-coreml-ane:/p", "PACKAGE:SOURCE"),
            ("factory:m:f:call-timeout=0", "positive number of seconds"),
            ("factory:m:f:call-timeout=1e20", "longer than 7 days (604800 s)"),
            ("factory:m:f:load-timeout=1e30", "longer than 7 days"),
            ("laya:/c:cdua", "`cdua` is not a PyTorch device; DEVICE is one of cpu, cuda, cuda:N"),
            ("laya:/c:gpu:fp16", "`gpu` is not a PyTorch device (an NVIDIA GPU is `cuda`"),
            ("laya:/c:cuda:x", "`x` is not a PyTorch device"),
            ("laya:ckpt:v2", "link the folder under another name"),
        ] {
            let e = RefSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
