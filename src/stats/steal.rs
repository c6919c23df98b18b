//! CPU time the hypervisor gave to other guests ("steal"), as a Linux guest's kernel counts it
//! in the first line of `/proc/stat`.
//!
//! On a virtual machine, a vCPU can be descheduled by the host while our threads are ready to
//! run. Wall-clock times then grow by the stolen share while nothing in the process shows why.
//! A benchmark on a VM whose neighbours are busy measures the neighbours too: on the project's
//! 2-vCPU development VMs steal ranged from 0 to 35 % of the CPU time within one hour, and the
//! same binary's FMA peak measured 127–261 GFLOP/s over that hour (not all of it steal: a busy
//! neighbour on the same physical core is invisible to the guest). Every timed figure is therefore
//! paired with the steal over the same interval, so a reader can tell a slow engine from a busy
//! host.
//!
//! The counters are in `USER_HZ` ticks (1/100 s on Linux), summed over every CPU of the
//! machine. Where the OS has no such counter (macOS, a kernel without steal accounting, a
//! sandbox without `/proc`) every figure is `None`, never 0.

use serde::{Deserialize, Serialize};

/// The share of CPU time stolen from which reports warn.
pub const STEAL_WARN_FRACTION: f64 = 0.02;

/// Cumulative CPU-time counters of the whole machine, `USER_HZ` ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    /// Ticks stolen by the hypervisor (the 8th value of the `cpu` line).
    pub steal: u64,
    /// Ticks of every kind: user, nice, system, idle, iowait, irq, softirq and steal (guest
    /// time is already inside user and nice, so it is not added again).
    pub total: u64,
}

/// The steal over one interval: the difference of two [`CpuTicks`] readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StealTicks {
    /// Ticks stolen in the interval, all CPUs.
    pub steal_ticks: u64,
    /// Ticks of every kind in the interval, all CPUs.
    pub cpu_ticks: u64,
}

impl StealTicks {
    /// Stolen share of the interval's CPU time; `None` for an interval without a tick.
    pub fn fraction(&self) -> Option<f64> {
        (self.cpu_ticks > 0).then(|| self.steal_ticks as f64 / self.cpu_ticks as f64)
    }

    /// The sum of several intervals (`None` if any is unknown, there are none, or a total
    /// passes u64, which no real counter reaches).
    pub fn sum(parts: impl IntoIterator<Item = Option<StealTicks>>) -> Option<StealTicks> {
        let mut acc: Option<StealTicks> = None;
        for p in parts {
            let p = p?;
            let a = acc.get_or_insert(StealTicks { steal_ticks: 0, cpu_ticks: 0 });
            a.steal_ticks = a.steal_ticks.checked_add(p.steal_ticks)?;
            a.cpu_ticks = a.cpu_ticks.checked_add(p.cpu_ticks)?;
        }
        acc
    }
}

impl CpuTicks {
    /// Read the counters now (`None` where the OS does not keep them).
    pub fn read() -> Option<CpuTicks> {
        #[cfg(target_os = "linux")]
        {
            parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// The interval from `self` to `later`; `None` if a counter went backwards (a different
    /// machine, or a wrapped counter).
    pub fn until(&self, later: &CpuTicks) -> Option<StealTicks> {
        Some(StealTicks {
            steal_ticks: later.steal.checked_sub(self.steal)?,
            cpu_ticks: later.total.checked_sub(self.total)?,
        })
    }
}

/// The aggregate `cpu` line of `/proc/stat`. Kernels before 2.6.11 have no steal column: `None`
/// then, as for any line that does not parse.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    if v.len() < 8 {
        return None;
    }
    Some(CpuTicks { steal: v[7], total: v[..8].iter().sum() })
}

/// Measures the steal over an interval: [`StealWatch::start`], then [`StealWatch::stop`].
#[derive(Debug, Clone, Copy)]
pub struct StealWatch(Option<CpuTicks>);

impl StealWatch {
    /// Read the counters at the start of the interval.
    pub fn start() -> Self {
        Self(CpuTicks::read())
    }

    /// The steal since [`StealWatch::start`] (`None` where the OS keeps no counters).
    pub fn stop(&self) -> Option<StealTicks> {
        self.0?.until(&CpuTicks::read()?)
    }
}

/// One line for a human: `steal 14.3 % of the CPU time (4182 of 29177 ticks)`, or a note that
/// it is unknown.
pub fn describe(s: Option<StealTicks>) -> String {
    match s.and_then(|s| s.fraction().map(|f| (s, f))) {
        Some((s, f)) => {
            format!("steal {:.1} % of the CPU time ({} of {} ticks)", 100.0 * f, s.steal_ticks, s.cpu_ticks)
        }
        None => "steal unknown (no /proc/stat counters here)".into(),
    }
}

/// A warning when the stolen share reaches [`STEAL_WARN_FRACTION`]; `what` names the interval.
pub fn warning(what: &str, s: Option<StealTicks>) -> Option<String> {
    let f = s?.fraction()?;
    (f >= STEAL_WARN_FRACTION).then(|| {
        format!(
            "the hypervisor gave {:.1} % of this machine's CPU time to other guests during {what} (steal); \
             its times include that wait: rerun on a quiet or dedicated machine before quoting them",
            100.0 * f
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The first lines of a real /proc/stat from a 2-vCPU KVM guest.
    const STAT: &str = "cpu  135668 0 8335 1205771 337 0 299 24409 0 0\n\
                        cpu0 67000 0 4100 603000 170 0 150 12200 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn reads_the_aggregate_line() {
        let t = parse_proc_stat(STAT).unwrap();
        assert_eq!(t.steal, 24409);
        // 135668 + 0 + 8335 + 1205771 + 337 + 0 + 299 + 24409
        assert_eq!(t.total, 1_374_819);
    }

    #[test]
    fn refuses_lines_without_steal_or_garbage() {
        assert_eq!(parse_proc_stat("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 2 x 4 5 6 7 8\n"), None);
        assert_eq!(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_proc_stat(""), None);
    }

    #[test]
    fn interval_fraction_and_sum() {
        let a = CpuTicks { steal: 49_649, total: 1_650_263 };
        let b = CpuTicks { steal: 53_831, total: 1_679_440 };
        let s = a.until(&b).unwrap();
        assert_eq!(s, StealTicks { steal_ticks: 4182, cpu_ticks: 29_177 });
        // 4182 / 29177 = 0.1433320766...
        assert!((s.fraction().unwrap() - 0.143_332_077).abs() < 1e-9);
        assert_eq!(b.until(&a), None);
        assert_eq!(StealTicks { steal_ticks: 0, cpu_ticks: 0 }.fraction(), None);
        let two = StealTicks::sum([Some(s), Some(StealTicks { steal_ticks: 18, cpu_ticks: 823 })]);
        assert_eq!(two, Some(StealTicks { steal_ticks: 4200, cpu_ticks: 30_000 }));
        let max = StealTicks { steal_ticks: u64::MAX, cpu_ticks: u64::MAX };
        assert_eq!(StealTicks::sum([Some(max), Some(s)]), None, "a total past u64 is unknown, not wrapped");
        assert_eq!(StealTicks::sum([Some(s), None]), None);
        assert_eq!(StealTicks::sum([]), None);
    }

    #[test]
    fn warns_from_two_percent_and_never_on_unknown() {
        let at = |steal, cpu| Some(StealTicks { steal_ticks: steal, cpu_ticks: cpu });
        assert!(warning("arm a", at(19, 1000)).is_none());
        let w = warning("arm a", at(20, 1000)).unwrap();
        assert!(w.contains("2.0 %") && w.contains("arm a"), "{w}");
        assert!(warning("x", None).is_none());
        assert!(warning("x", at(0, 0)).is_none());
        assert_eq!(describe(at(4182, 29177)), "steal 14.3 % of the CPU time (4182 of 29177 ticks)");
        assert!(describe(None).contains("unknown"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_counts_forward() {
        // /proc/stat exists in every Linux test environment this project runs in.
        let w = StealWatch::start();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        let s = w.stop().expect("counters on Linux");
        assert!(s.steal_ticks <= s.cpu_ticks);
    }
}
