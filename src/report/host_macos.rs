//! The macOS leaf of the host probe: `sysctlbyname` for the bytes of a named system value and
//! `proc_pidinfo(PROC_PIDTASKINFO)` for this process's resident size. Thin on purpose: what
//! the bytes mean is parsed by the portable, tested functions of [`super::host`].
//!
//! Compiled against `libc` 0.2.191 (`src/unix/bsd/apple/mod.rs`) on macOS and, with
//! `--features apple-shim`, against the mirror in `src/apple_shim/darwin_libc.rs` elsewhere
//! (type-check only).

use std::ffi::{c_int, c_void, CString};

#[cfg(target_os = "macos")]
use libc::{proc_pidinfo, proc_taskinfo, sysctlbyname, PROC_PIDTASKINFO};

#[cfg(not(target_os = "macos"))]
use crate::apple_shim::darwin_libc::{proc_pidinfo, proc_taskinfo, sysctlbyname, PROC_PIDTASKINFO};

/// The bytes of the sysctl value `name` (`hw.memsize`, `machdep.cpu.brand_string`), or `None`
/// where the system has no such value or refuses it.
pub fn sysctl(name: &str) -> Option<Vec<u8>> {
    let name = CString::new(name).ok()?;
    let mut len: usize = 0;
    // SAFETY: a size query: `name` is NUL-terminated, there is no old buffer (null), so only
    // `len` is written, and no new value is set.
    let rc = unsafe { sysctlbyname(name.as_ptr(), std::ptr::null_mut(), &mut len, std::ptr::null_mut(), 0) };
    if rc != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` holds `len` writable bytes and `len` says so; the call writes at most that
    // many and stores the count it wrote in `len`; no new value is set.
    let rc = unsafe {
        sysctlbyname(name.as_ptr(), buf.as_mut_ptr().cast::<c_void>(), &mut len, std::ptr::null_mut(), 0)
    };
    if rc != 0 {
        return None;
    }
    buf.truncate(len);
    Some(buf)
}

/// Resident memory of this process, bytes (`pti_resident_size` of `PROC_PIDTASKINFO`).
pub fn resident_bytes() -> Option<u64> {
    let pid = c_int::try_from(std::process::id()).ok()?;
    let size = c_int::try_from(std::mem::size_of::<proc_taskinfo>()).ok()?;
    // SAFETY: proc_taskinfo is plain integers, so all-zero bytes are a valid value.
    let mut info: proc_taskinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a writable proc_taskinfo of `size` bytes; the call writes at most that
    // many and returns how many it wrote.
    let written =
        unsafe { proc_pidinfo(pid, PROC_PIDTASKINFO, 0, (&mut info as *mut proc_taskinfo).cast(), size) };
    (written == size).then_some(info.pti_resident_size)
}
