//! Ctrl-C (SIGINT) and SIGTERM as a stop flag, so a run stops cleanly between calls and
//! records itself as incomplete instead of dying mid-write.
//!
//! Installed with `libc::sigaction` (libc is already a dependency, so no extra crate): the
//! handler only stores `true` into a static `AtomicBool`, which is async-signal-safe. The
//! handler is installed with `SA_RESETHAND`, so a second Ctrl-C gets the default action and
//! ends the process at once (the raw file then stays readable up to its last flushed record).

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// What the first signal prints: the run goes on to a clean stop, which may take a moment
/// (a call in flight, a model still loading).
const STOPPING: &[u8] =
    b"\nlaya-bench: stopping cleanly, keeping what was measured (a second signal ends it at once)\n";

extern "C" fn on_signal(_signal: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    // SAFETY: write(2) is async-signal-safe; the buffer is a static byte string. A failed or
    // short write only loses the notice.
    #[cfg(unix)]
    unsafe {
        libc::write(2, STOPPING.as_ptr().cast(), STOPPING.len());
    }
}

/// Install the handler for SIGINT and SIGTERM and return the flag it raises.
#[cfg(unix)]
pub(crate) fn install() -> std::io::Result<&'static AtomicBool> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` is a plain C struct for which all-zero bytes are a valid value;
        // every field that matters is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid, writable sigset_t owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is fully initialised and outlives the call; the handler only
        // performs an atomic store, which is async-signal-safe; a null old-action pointer is
        // allowed.
        let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(&STOP)
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
    crate::bench::speed::interrupted_reason(during, raised())
}
