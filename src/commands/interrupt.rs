//! Ctrl-C (SIGINT), SIGTERM and SIGHUP as a stop flag, so a run stops cleanly between calls
//! and records itself as incomplete instead of dying mid-write.
//!
//! Installed with `libc::sigaction` (libc is already a dependency, so no extra crate): the
//! handler only reads the monotonic clock and stores into static atomics, which is
//! async-signal-safe. The signals are counted in *presses*: signals within
//! [`SAME_PRESS_NS`] of the previous press are the same press (`timeout -s TERM` signals the
//! process and then its whole group, so the tool receives two SIGTERMs at once).
//! - The first press raises the stop flag: the run stops between calls and closes its record
//!   (footer, reports).
//! - The second raises the hurry flag as well: the run still writes its footer and reports and
//!   only skips what takes time (waiting for the sensor's reading after the end).
//! - The third ends the process at once with the signal's default action (for a call that
//!   never returns); the raw file then stays readable up to its last flushed record.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static HURRY: AtomicBool = AtomicBool::new(false);
/// Distinct presses so far.
static PRESSES: AtomicU32 = AtomicU32::new(0);
/// When the last signal arrived, monotonic ns (`i64::MIN` before the first).
static LAST_NS: AtomicI64 = AtomicI64::new(i64::MIN);

/// Signals closer together than this (1 s) are one press.
const SAME_PRESS_NS: i64 = 1_000_000_000;

/// What the first press prints: the run goes on to a clean stop, which may take a moment
/// (a call in flight, a model still loading).
const STOPPING: &[u8] = b"\nlaya-bench: stopping cleanly, keeping what was measured (a second Ctrl-C skips the waits, a third ends it at once)\n";
/// What the second press prints.
const HURRYING: &[u8] =
    b"\nlaya-bench: closing the record now, without waiting (a third Ctrl-C ends it at once, without a footer)\n";

/// Which press a signal at `now_ns` is, given the previous signal's time `last_ns` and the
/// presses counted so far: the same press within [`SAME_PRESS_NS`], else the next one.
fn press(presses: u32, last_ns: i64, now_ns: i64) -> u32 {
    if presses > 0 && now_ns.saturating_sub(last_ns) < SAME_PRESS_NS {
        presses
    } else {
        presses + 1
    }
}

/// The monotonic clock in ns (`clock_gettime` is async-signal-safe).
#[cfg(unix)]
fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec.saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec)
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    let now = monotonic_ns();
    let before = PRESSES.load(Ordering::SeqCst);
    let n = press(before, LAST_NS.swap(now, Ordering::SeqCst), now);
    PRESSES.store(n, Ordering::SeqCst);
    if n == before {
        return;
    }
    let notice = match n {
        1 => {
            STOP.store(true, Ordering::SeqCst);
            STOPPING
        }
        2 => {
            HURRY.store(true, Ordering::SeqCst);
            HURRYING
        }
        _ => {
            // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action of
            // SIGINT, SIGTERM and SIGHUP ends the process.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
            return;
        }
    };
    // SAFETY: write(2) is async-signal-safe; the buffer is a static byte string. A failed or
    // short write only loses the notice.
    unsafe {
        libc::write(2, notice.as_ptr().cast(), notice.len());
    }
}

/// Install the handler for SIGINT, SIGTERM and SIGHUP and return the stop flag it raises.
#[cfg(unix)]
pub(crate) fn install() -> std::io::Result<&'static AtomicBool> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `sigaction` is a plain C struct for which all-zero bytes are a valid value;
        // every field that matters is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid, writable sigset_t owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // Block the other two while the handler runs, so a burst is counted in order.
        for other in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: as above.
            unsafe { libc::sigaddset(&mut action.sa_mask, other) };
        }
        // SAFETY: `action` is fully initialised and outlives the call; the handler only reads
        // the monotonic clock, stores atomics and writes to stderr, all async-signal-safe; a
        // null old-action pointer is allowed.
        let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(&STOP)
}

/// The hurry flag, raised by the second press: a stopping run skips what takes time.
pub(crate) fn hurry() -> &'static AtomicBool {
    &HURRY
}

/// No signal handling on this OS; the flag is never raised.
#[cfg(not(unix))]
pub(crate) fn install() -> std::io::Result<&'static AtomicBool> {
    Ok(&STOP)
}

/// Whether the flag was raised by a signal.
pub(crate) fn raised() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Install the handler, or warn that Ctrl-C will end the run without a footer. Installed with
/// `sigaction` whatever the inherited disposition: a run started in the background, whose
/// shell set SIGINT to ignored, still stops cleanly on SIGINT and SIGTERM.
pub(crate) fn install_or_warn() -> Option<&'static AtomicBool> {
    match install() {
        Ok(flag) => Some(flag),
        Err(e) => {
            eprintln!(
                "warning: cannot install the Ctrl-C handler ({e}); Ctrl-C will end the run without a footer"
            );
            None
        }
    }
}

/// Why a run stopped by the flag is incomplete, for its footer and report.
pub(crate) fn reason(during: &str) -> String {
    crate::run::measure_speed::interrupted_reason(during, raised())
}

#[cfg(test)]
mod tests {
    use super::{press, SAME_PRESS_NS};

    #[test]
    fn signals_within_a_second_of_the_last_are_one_press() {
        // The first signal is press 1 whatever the clock reads.
        assert_eq!(press(0, i64::MIN, 5), 1);
        // `timeout -s TERM`: the process, then its group, 40 µs apart: still press 1.
        assert_eq!(press(1, 1_000_000, 1_040_000), 1);
        // A second Ctrl-C 1.5 s later is press 2, a third 3 s later press 3.
        assert_eq!(press(1, 0, 1_500_000_000), 2);
        assert_eq!(press(2, 1_500_000_000, 4_500_000_000), 3);
        // Exactly the window apart is a new press; one ns less is not.
        assert_eq!(press(1, 0, SAME_PRESS_NS), 2);
        assert_eq!(press(1, 0, SAME_PRESS_NS - 1), 1);
        // A held key repeating every 0.3 s stays one press: each is within 1 s of the last.
        let mut n = 0;
        let mut last = i64::MIN;
        for k in 0..10 {
            let now = k * 300_000_000;
            n = press(n, last, now);
            last = now;
        }
        assert_eq!(n, 1);
    }
}
