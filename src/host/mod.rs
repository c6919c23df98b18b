//! The machine a run measured ([`HostInfo`]) and the resident memory of this process
//! ([`current_rss_bytes`]), as the OS exposes them: Linux from `/proc`, macOS from
//! `sysctlbyname` and `proc_pidinfo` (the leaf `macos`). What the OS does not
//! say is `None`, never guessed. The parsing of what each source gives is portable and tested
//! here; the leaves only ask.

#[cfg(target_os = "macos")]
pub mod macos;

use serde::{Deserialize, Serialize};

/// The machine a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name, if readable.
    pub hostname: Option<String>,
    /// `linux`, `macos`, ...
    pub os: String,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    /// CPU model string, if readable.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to the process.
    pub logical_cpus: usize,
    /// Physical memory, if readable.
    pub memory_bytes: Option<u64>,
    /// macOS's CPU performance levels (performance and efficiency cores); every field absent
    /// where the OS does not say (always on Linux). Flattened: its fields are `host`'s own.
    #[serde(flatten)]
    pub cpu_levels: CpuLevels,
}

/// The CPU's performance levels as macOS reports them (`hw.nperflevels`, `hw.perflevelN.*`,
/// macOS 12 and later): level 0 is the fastest (the performance cores on Apple silicon), level
/// 1 the next (the efficiency cores). Each field is absent where the OS does not say; nothing
/// is derived from `logical_cpus` or the CPU's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuLevels {
    /// Performance levels (`hw.nperflevels`): 2 on Apple silicon, 1 where every core is alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_levels: Option<u32>,
    /// Name of level 0 (`hw.perflevel0.name`), e.g. `Performance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_level_name: Option<String>,
    /// Physical cores of level 0 (`hw.perflevel0.physicalcpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_cores: Option<u32>,
    /// Logical CPUs of level 0 (`hw.perflevel0.logicalcpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_logical_cpus: Option<u32>,
    /// Name of level 1 (`hw.perflevel1.name`), e.g. `Efficiency`; only with 2 levels or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_level_name: Option<String>,
    /// Physical cores of level 1 (`hw.perflevel1.physicalcpu`); only with 2 levels or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_cores: Option<u32>,
    /// Logical CPUs of level 1 (`hw.perflevel1.logicalcpu`); only with 2 levels or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_logical_cpus: Option<u32>,
}

impl CpuLevels {
    /// The levels from sysctl values, `read(name)` giving the bytes of one (`None` where the
    /// system has none). Level 1 is read only when `hw.nperflevels` says there are 2 levels or
    /// more; level 0 whenever the system has it.
    pub fn from_sysctl(read: &dyn Fn(&str) -> Option<Vec<u8>>) -> Self {
        let count = |name: &str| read(name).as_deref().and_then(sysctl_count);
        let text = |name: &str| read(name).as_deref().and_then(sysctl_string);
        let perf_levels = count("hw.nperflevels");
        let second = perf_levels.is_some_and(|n| n >= 2);
        CpuLevels {
            perf_levels,
            performance_level_name: text("hw.perflevel0.name"),
            performance_cores: count("hw.perflevel0.physicalcpu"),
            performance_logical_cpus: count("hw.perflevel0.logicalcpu"),
            efficiency_level_name: second.then(|| text("hw.perflevel1.name")).flatten(),
            efficiency_cores: second.then(|| count("hw.perflevel1.physicalcpu")).flatten(),
            efficiency_logical_cpus: second.then(|| count("hw.perflevel1.logicalcpu")).flatten(),
        }
    }
}

/// The portable engine's default worker count: the performance cores' logical CPUs where the
/// OS names them (macOS `hw.perflevel0.logicalcpu`), at most the CPUs available to the process;
/// otherwise every available CPU (`available`, 1 where unknown). A zero count is ignored.
pub fn default_worker_threads(available: Option<usize>, performance_logical_cpus: Option<u32>) -> usize {
    let available = available.unwrap_or(1).max(1);
    match performance_logical_cpus.and_then(|p| usize::try_from(p).ok()).filter(|&p| p > 0) {
        Some(p) => p.min(available),
        None => available,
    }
}

/// The logical CPUs of the performance cores (`hw.perflevel0.logicalcpu`) on macOS; `None`
/// elsewhere and where the OS does not say.
pub fn performance_logical_cpus() -> Option<u32> {
    #[cfg(target_os = "macos")]
    {
        macos::sysctl("hw.perflevel0.logicalcpu").as_deref().and_then(sysctl_count)
    }
    #[cfg(not(target_os = "macos"))]
    {
        None
    }
}

/// The QoS class the measuring thread asks macOS for, as the raw header names it.
pub const MEASURING_THREAD_QOS: &str = "user-interactive";

/// What became of the measuring thread's QoS (raw header, flattened: both fields are the
/// header's own). On macOS exactly one is present: the class that was set, or why it was not;
/// elsewhere (no QoS classes) both are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasuringThread {
    /// The QoS class set on the thread that runs the timed loop (`user-interactive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measuring_thread_qos: Option<String>,
    /// Why the QoS class could not be set (the thread kept the one it had).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measuring_thread_qos_error: Option<String>,
}

impl MeasuringThread {
    /// The record of `pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0)` returning
    /// `rc` (0, or an errno value).
    pub fn from_qos_return(rc: i32) -> Self {
        if rc == 0 {
            return MeasuringThread {
                measuring_thread_qos: Some(MEASURING_THREAD_QOS.into()),
                ..Self::default()
            };
        }
        let meaning = match rc {
            libc::EPERM => {
                "EPERM: this thread may not change its QoS class, e.g. after pthread_set_fixedpriority_self"
            }
            libc::EINVAL => "EINVAL: the QoS class or relative priority was refused",
            _ => "unexpected error number",
        };
        MeasuringThread {
            measuring_thread_qos: None,
            measuring_thread_qos_error: Some(format!(
                "pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0) returned {rc} ({meaning}); \
                 the measuring thread kept its QoS class, so macOS may run it on an efficiency core"
            )),
        }
    }
}

/// Ready the calling thread to run timed calls: on macOS, ask for QoS class user-interactive
/// (the class macOS favours most for the performance cores; a default-class thread may be
/// moved to an efficiency core) and say whether that was set; elsewhere nothing is changed and
/// nothing recorded. Call it on the thread that runs the timed loop; worker threads started
/// before it (the portable engine's pool) keep their own class.
pub fn prepare_measuring_thread() -> MeasuringThread {
    #[cfg(target_os = "macos")]
    {
        MeasuringThread::from_qos_return(macos::set_qos_user_interactive())
    }
    #[cfg(not(target_os = "macos"))]
    {
        MeasuringThread::default()
    }
}

/// What the OS says about the machine; each fact `None` where it does not.
#[derive(Debug, Clone, Default, PartialEq)]
struct Facts {
    hostname: Option<String>,
    cpu_model: Option<String>,
    memory_bytes: Option<u64>,
    /// The OS's own count of logical CPUs (used only when the standard library has none).
    logical_cpus: Option<usize>,
    cpu_levels: CpuLevels,
}

impl HostInfo {
    /// Read what this OS exposes; missing facts are `None`, never guessed. Linux: `/proc`
    /// (`sys/kernel/hostname`, `cpuinfo`, `meminfo`); macOS: `sysctlbyname` (`kern.hostname`,
    /// `machdep.cpu.brand_string`, `hw.memsize`, `hw.ncpu`, and the performance levels:
    /// `hw.nperflevels`, `hw.perflevel{0,1}.{name,physicalcpu,logicalcpu}`).
    pub fn detect() -> Self {
        let facts = probe();
        Self {
            hostname: facts.hostname,
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cpu_model: facts.cpu_model,
            logical_cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .ok()
                .or(facts.logical_cpus)
                .unwrap_or(1),
            memory_bytes: facts.memory_bytes,
            cpu_levels: facts.cpu_levels,
        }
    }
}

#[cfg(not(target_os = "macos"))]
fn probe() -> Facts {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    Facts {
        hostname: read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()),
        cpu_model: read("/proc/cpuinfo").as_deref().and_then(cpu_model_from_cpuinfo),
        memory_bytes: read("/proc/meminfo").as_deref().and_then(memory_from_meminfo),
        logical_cpus: None,
        cpu_levels: CpuLevels::default(),
    }
}

#[cfg(target_os = "macos")]
fn probe() -> Facts {
    use macos::sysctl;
    Facts {
        hostname: sysctl("kern.hostname").as_deref().and_then(sysctl_string),
        cpu_model: sysctl("machdep.cpu.brand_string").as_deref().and_then(sysctl_string),
        memory_bytes: sysctl("hw.memsize").as_deref().and_then(sysctl_u64),
        logical_cpus: sysctl("hw.ncpu").as_deref().and_then(sysctl_u64).and_then(|n| usize::try_from(n).ok()),
        cpu_levels: CpuLevels::from_sysctl(&sysctl),
    }
}

/// Resident memory of this process now, where the OS says: Linux `/proc/self/statm` (resident
/// pages × the page size), macOS `proc_pidinfo` (bytes).
#[cfg(not(target_os = "macos"))]
pub fn current_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    rss_from_statm(&statm, page_size()?)
}

/// Resident memory of this process now, where the OS says: Linux `/proc/self/statm` (resident
/// pages × the page size), macOS `proc_pidinfo` (bytes).
#[cfg(target_os = "macos")]
pub fn current_rss_bytes() -> Option<u64> {
    macos::resident_bytes()
}

/// The size of a memory page, bytes (`sysconf(_SC_PAGESIZE)`: 4 KiB on most x86-64 Linux,
/// 16 KiB on Apple silicon and some ARM Linux kernels, 64 KiB on others).
#[cfg(unix)]
pub fn page_size() -> Option<u64> {
    // SAFETY: sysconf takes a constant name and reads a system value; it touches no memory of
    // ours.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0)
}

/// The size of a memory page: unknown off Unix.
#[cfg(not(unix))]
pub fn page_size() -> Option<u64> {
    None
}

/// The value of field `key` (the whole name before the colon: `model` is not `model name`) of
/// the first CPU in `/proc/cpuinfo`.
fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
}

/// The `model name` of the first CPU in `/proc/cpuinfo`.
pub fn cpu_model_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    cpuinfo_field(cpuinfo, "model name")
}

/// The `model name` of the first CPU with its `cpu family` and `model` numbers where the file
/// has them (one marketing name covers several generations: AMD EPYC family 25 is Zen 3 at
/// model 1 and Zen 4 at model 17), e.g. `AMD EPYC (family 25 model 17)`.
pub fn cpu_identity_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    let name = cpu_model_from_cpuinfo(cpuinfo)?;
    Some(match (cpuinfo_field(cpuinfo, "cpu family"), cpuinfo_field(cpuinfo, "model")) {
        (Some(family), Some(model)) => format!("{name} (family {family} model {model})"),
        _ => name,
    })
}

/// `MemTotal` of `/proc/meminfo` (in kB there), bytes.
pub fn memory_from_meminfo(meminfo: &str) -> Option<u64> {
    meminfo_field(meminfo, "MemTotal:")
}

/// `MemAvailable` of `/proc/meminfo` (the kernel's estimate of what can be allocated without
/// swapping), bytes.
pub fn available_from_meminfo(meminfo: &str) -> Option<u64> {
    meminfo_field(meminfo, "MemAvailable:")
}

fn meminfo_field(meminfo: &str, key: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Memory a run can allocate now, bytes: Linux's `MemAvailable`; on macOS, which has no such
/// figure, the installed memory (`hw.memsize`), an upper bound. `None` where neither is read.
pub fn available_memory_bytes() -> Option<u64> {
    #[cfg(not(target_os = "macos"))]
    {
        std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(available_from_meminfo)
    }
    #[cfg(target_os = "macos")]
    {
        probe().memory_bytes
    }
}

/// Resident bytes from `/proc/self/statm` (its second field counts resident pages).
pub fn rss_from_statm(statm: &str, page_size: u64) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(page_size)
}

/// A string sysctl value (`machdep.cpu.brand_string`, `kern.hostname`): the bytes up to the
/// first NUL, trimmed; `None` when nothing is left.
pub fn sysctl_string(bytes: &[u8]) -> Option<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..end]).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// An integer sysctl value in native byte order: 8 bytes (`hw.memsize`, a `uint64_t`) or 4
/// (`hw.ncpu`, an `int`); `None` for any other length.
pub fn sysctl_u64(bytes: &[u8]) -> Option<u64> {
    match bytes.len() {
        8 => Some(u64::from_ne_bytes(bytes.try_into().ok()?)),
        4 => Some(u64::from(u32::from_ne_bytes(bytes.try_into().ok()?))),
        _ => None,
    }
}

/// A count from a sysctl integer: a little-endian `int32_t` (4 bytes: `hw.nperflevels`,
/// `hw.perflevel0.physicalcpu`) or `int64_t` (8 bytes); `None` for any other length, a negative
/// value or one above `u32::MAX`.
pub fn sysctl_count(bytes: &[u8]) -> Option<u32> {
    let value = match bytes.len() {
        4 => i64::from(i32::from_le_bytes(bytes.try_into().ok()?)),
        8 => i64::from_le_bytes(bytes.try_into().ok()?),
        _ => return None,
    };
    u32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model_from_cpuinfo(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) CPU @ 2.20GHz"));
        // ARM kernels may have no `model name` line.
        assert_eq!(cpu_model_from_cpuinfo("processor\t: 0\nBogoMIPS\t: 48.00\n"), None);
        // family and model where present (`model` is its own field, not `model name`)
        let amd = "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n";
        assert_eq!(cpu_identity_from_cpuinfo(amd).as_deref(), Some("AMD EPYC (family 25 model 17)"));
        assert_eq!(cpu_identity_from_cpuinfo(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) CPU @ 2.20GHz"));
        assert_eq!(cpu_identity_from_cpuinfo("processor\t: 0\nmodel\t: 1\n"), None);
        let meminfo = "MemTotal:       16316412 kB\nMemFree:         1234 kB\n";
        assert_eq!(memory_from_meminfo(meminfo), Some(16316412 * 1024));
        assert_eq!(memory_from_meminfo("MemFree: 1 kB\n"), None);
        assert_eq!(memory_from_meminfo("MemTotal: lots kB\n"), None);
        let full = "MemTotal:       16316412 kB\nMemFree:         1234 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(available_from_meminfo(full), Some(8_192_000_000));
        assert_eq!(available_from_meminfo(meminfo), None);
    }

    #[test]
    fn resident_pages_count_at_the_real_page_size() {
        let statm = "1234 567 89 10 0 300 0\n";
        assert_eq!(rss_from_statm(statm, 4096), Some(567 * 4096));
        assert_eq!(rss_from_statm(statm, 16384), Some(567 * 16384));
        assert_eq!(rss_from_statm("1234", 4096), None);
        assert_eq!(rss_from_statm("1 x", 4096), None);
        let page = page_size().expect("a Unix page size");
        assert!(page.is_power_of_two() && page >= 4096, "{page}");
    }

    #[test]
    fn sysctl_values_parse() {
        assert_eq!(sysctl_string(b"Apple M3 Max\0").as_deref(), Some("Apple M3 Max"));
        assert_eq!(sysctl_string(b"mac.local\0\0junk").as_deref(), Some("mac.local"));
        assert_eq!(sysctl_string(b" Apple M1 "), Some("Apple M1".to_string()));
        assert_eq!(sysctl_string(b"\0"), None);
        assert_eq!(sysctl_string(b""), None);
        let memsize: u64 = 68_719_476_736;
        assert_eq!(sysctl_u64(&memsize.to_ne_bytes()), Some(memsize));
        assert_eq!(sysctl_u64(&16i32.to_ne_bytes()), Some(16));
        assert_eq!(sysctl_u64(&[1, 2]), None);
    }

    #[test]
    fn sysctl_counts_are_little_endian_and_never_negative() {
        assert_eq!(sysctl_count(&[2, 0, 0, 0]), Some(2));
        assert_eq!(sysctl_count(&[0x0c, 0x01, 0, 0]), Some(268));
        assert_eq!(sysctl_count(&[12, 0, 0, 0, 0, 0, 0, 0]), Some(12));
        assert_eq!(sysctl_count(&[0xff, 0xff, 0xff, 0xff]), None); // -1
        assert_eq!(sysctl_count(&[0, 0, 0, 0, 1, 0, 0, 0]), None); // 2^32
        assert_eq!(sysctl_count(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), Some(u32::MAX));
        assert_eq!(sysctl_count(&[0, 0, 0, 0]), Some(0));
        assert_eq!(sysctl_count(&[1, 0]), None);
        assert_eq!(sysctl_count(&[]), None);
    }

    /// A sysctl table as an M3 Max answers (12 performance, 4 efficiency cores), by name.
    fn m3_max(name: &str) -> Option<Vec<u8>> {
        let int = |n: i32| Some(n.to_le_bytes().to_vec());
        match name {
            "hw.nperflevels" => int(2),
            "hw.perflevel0.name" => Some(b"Performance\0".to_vec()),
            "hw.perflevel0.physicalcpu" | "hw.perflevel0.logicalcpu" => int(12),
            "hw.perflevel1.name" => Some(b"Efficiency\0".to_vec()),
            "hw.perflevel1.physicalcpu" | "hw.perflevel1.logicalcpu" => int(4),
            _ => None,
        }
    }

    #[test]
    fn performance_levels_parse_from_sysctl_bytes() {
        let levels = CpuLevels::from_sysctl(&m3_max);
        assert_eq!(
            levels,
            CpuLevels {
                perf_levels: Some(2),
                performance_level_name: Some("Performance".into()),
                performance_cores: Some(12),
                performance_logical_cpus: Some(12),
                efficiency_level_name: Some("Efficiency".into()),
                efficiency_cores: Some(4),
                efficiency_logical_cpus: Some(4),
            }
        );
        // One level (every core alike): level 1 is not read, even where a value answers.
        let one = |name: &str| match name {
            "hw.nperflevels" => Some(1i32.to_le_bytes().to_vec()),
            other => m3_max(other),
        };
        let levels = CpuLevels::from_sysctl(&one);
        assert_eq!(levels.perf_levels, Some(1));
        assert_eq!(levels.performance_cores, Some(12));
        assert_eq!((levels.efficiency_cores, levels.efficiency_logical_cpus), (None, None));
        assert_eq!(levels.efficiency_level_name, None);
        // A system without the names (older macOS, Linux): everything absent, nothing guessed.
        assert_eq!(CpuLevels::from_sysctl(&|_| None), CpuLevels::default());
        // A garbled value is absent, not 0.
        let garbled = |name: &str| match name {
            "hw.perflevel0.physicalcpu" => Some(vec![1, 2, 3]),
            other => m3_max(other),
        };
        assert_eq!(CpuLevels::from_sysctl(&garbled).performance_cores, None);
    }

    #[test]
    fn host_json_gains_the_levels_only_where_known() {
        let mut host = HostInfo {
            hostname: None,
            os: "macos".into(),
            arch: "aarch64".into(),
            cpu_model: Some("Apple M3 Max".into()),
            logical_cpus: 16,
            memory_bytes: None,
            cpu_levels: CpuLevels::default(),
        };
        let json = serde_json::to_string(&host).unwrap();
        assert_eq!(
            json,
            r#"{"hostname":null,"os":"macos","arch":"aarch64","cpu_model":"Apple M3 Max","logical_cpus":16,"memory_bytes":null}"#
        );
        assert_eq!(serde_json::from_str::<HostInfo>(&json).unwrap(), host);
        host.cpu_levels = CpuLevels::from_sysctl(&m3_max);
        let json = serde_json::to_string(&host).unwrap();
        assert!(
            json.ends_with(r#""memory_bytes":null,"perf_levels":2,"performance_level_name":"Performance","performance_cores":12,"performance_logical_cpus":12,"efficiency_level_name":"Efficiency","efficiency_cores":4,"efficiency_logical_cpus":4}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<HostInfo>(&json).unwrap(), host);
    }

    #[test]
    fn the_worker_default_is_the_performance_cores_where_known() {
        // Linux and every OS that names no performance level: all available CPUs.
        assert_eq!(default_worker_threads(Some(16), None), 16);
        assert_eq!(default_worker_threads(None, None), 1);
        // An M3 Max: 12 performance cores of 16.
        assert_eq!(default_worker_threads(Some(16), Some(12)), 12);
        // Never more than the process may use (a VM, a CPU limit).
        assert_eq!(default_worker_threads(Some(3), Some(12)), 3);
        assert_eq!(default_worker_threads(None, Some(12)), 1);
        // A zero count is no count.
        assert_eq!(default_worker_threads(Some(8), Some(0)), 8);
        assert_eq!(performance_logical_cpus().is_some(), cfg!(target_os = "macos"));
    }

    #[test]
    fn the_measuring_thread_qos_is_recorded_or_its_error() {
        assert_eq!(
            MeasuringThread::from_qos_return(0),
            MeasuringThread {
                measuring_thread_qos: Some("user-interactive".into()),
                measuring_thread_qos_error: None
            }
        );
        let eperm = MeasuringThread::from_qos_return(1);
        assert_eq!(eperm.measuring_thread_qos, None);
        let text = eperm.measuring_thread_qos_error.unwrap();
        assert!(
            text.starts_with(
                "pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0) returned 1 (EPERM"
            ),
            "{text}"
        );
        assert!(text.contains("kept its QoS class"), "{text}");
        assert!(MeasuringThread::from_qos_return(22).measuring_thread_qos_error.unwrap().contains("EINVAL"));
        assert!(MeasuringThread::from_qos_return(99)
            .measuring_thread_qos_error
            .unwrap()
            .contains("returned 99"));
        // JSON: absent where nothing was set (Linux), one key otherwise.
        assert_eq!(serde_json::to_string(&MeasuringThread::default()).unwrap(), "{}");
        assert_eq!(
            serde_json::to_string(&MeasuringThread::from_qos_return(0)).unwrap(),
            r#"{"measuring_thread_qos":"user-interactive"}"#
        );
        // Off macOS nothing is changed or recorded.
        if !cfg!(target_os = "macos") {
            assert_eq!(prepare_measuring_thread(), MeasuringThread::default());
        }
    }

    #[test]
    fn this_machine_is_described() {
        let host = HostInfo::detect();
        assert_eq!(host.os, std::env::consts::OS);
        assert!(host.logical_cpus >= 1);
        if cfg!(target_os = "linux") {
            assert!(host.memory_bytes.is_some_and(|m| m > 0), "{host:?}");
            assert!(current_rss_bytes().is_some_and(|r| r > 0));
        }
    }
}
