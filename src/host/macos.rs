//! The macOS leaf of the host probe: `sysctlbyname` for the bytes of a named system value,
//! `proc_pidinfo(PROC_PIDTASKINFO)` for this process's resident size, and
//! `pthread_set_qos_class_self_np` for the measuring thread's QoS class. Thin on purpose: what
//! the bytes and return codes mean is parsed by the portable, tested functions of
//! [`crate::host`].
//!
//! Compiled on macOS only, against `libc`'s Darwin items; `.ci/run` type-checks and lints it
//! for aarch64-apple-darwin.

use std::ffi::{c_int, c_void, CString};

use libc::{
    proc_pidinfo, proc_taskinfo, pthread_set_qos_class_self_np, qos_class_t, sysctlbyname, PROC_PIDTASKINFO,
};

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

/// Ask for QoS class user-interactive (relative priority 0) on the calling thread; the call's
/// return value: 0, or an errno value (`EPERM`, `EINVAL`).
pub fn set_qos_user_interactive() -> c_int {
    // SAFETY: takes two plain values and changes only the calling thread's scheduling class.
    unsafe { pthread_set_qos_class_self_np(qos_class_t::QOS_CLASS_USER_INTERACTIVE, 0) }
}
