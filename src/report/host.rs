//! The machine a run measured ([`HostInfo`]) and the resident memory of this process
//! ([`current_rss_bytes`]), as the OS exposes them: Linux from `/proc`, macOS from
//! `sysctlbyname` and `proc_pidinfo` (the leaf [`super::host_macos`]). What the OS does not
//! say is `None`, never guessed. The parsing of what each source gives is portable and tested
//! here; the leaves only ask.

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
}

/// What the OS says about the machine; each fact `None` where it does not.
#[derive(Debug, Clone, Default, PartialEq)]
struct Facts {
    hostname: Option<String>,
    cpu_model: Option<String>,
    memory_bytes: Option<u64>,
    /// The OS's own count of logical CPUs (used only when the standard library has none).
    logical_cpus: Option<usize>,
}

impl HostInfo {
    /// Read what this OS exposes; missing facts are `None`, never guessed. Linux: `/proc`
    /// (`sys/kernel/hostname`, `cpuinfo`, `meminfo`); macOS: `sysctlbyname` (`kern.hostname`,
    /// `machdep.cpu.brand_string`, `hw.memsize`, `hw.ncpu`).
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
    }
}

#[cfg(target_os = "macos")]
fn probe() -> Facts {
    use super::host_macos::sysctl;
    Facts {
        hostname: sysctl("kern.hostname").as_deref().and_then(sysctl_string),
        cpu_model: sysctl("machdep.cpu.brand_string").as_deref().and_then(sysctl_string),
        memory_bytes: sysctl("hw.memsize").as_deref().and_then(sysctl_u64),
        logical_cpus: sysctl("hw.ncpu").as_deref().and_then(sysctl_u64).and_then(|n| usize::try_from(n).ok()),
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
    super::host_macos::resident_bytes()
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
