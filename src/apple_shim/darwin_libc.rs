//! Mirror of the Darwin `libc` items `src/report/host_macos.rs` uses (the host probe).
//!
//! Source (read in the cargo registry): `libc 0.2.191`, `src/unix/bsd/apple/mod.rs`:
//! `sysctlbyname`, `proc_pidinfo` (in its `target_os = "macos"` block), `struct
//! proc_taskinfo` and `PROC_PIDTASKINFO`. These symbols exist only on Darwin; this build only
//! type-checks against them.

use std::ffi::{c_char, c_int, c_void};

/// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub const PROC_PIDTASKINFO: c_int = 4`.
pub const PROC_PIDTASKINFO: c_int = 4;

/// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub struct proc_taskinfo` (`sys/proc_info.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct proc_taskinfo {
    pub pti_virtual_size: u64,
    pub pti_resident_size: u64,
    pub pti_total_user: u64,
    pub pti_total_system: u64,
    pub pti_threads_user: u64,
    pub pti_threads_system: u64,
    pub pti_policy: i32,
    pub pti_faults: i32,
    pub pti_pageins: i32,
    pub pti_cow_faults: i32,
    pub pti_messages_sent: i32,
    pub pti_messages_received: i32,
    pub pti_syscalls_mach: i32,
    pub pti_syscalls_unix: i32,
    pub pti_csw: i32,
    pub pti_threadnum: i32,
    pub pti_numrunning: i32,
    pub pti_priority: i32,
}

extern "C" {
    /// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub fn sysctlbyname(name: *const c_char,
    /// oldp: *mut c_void, oldlenp: *mut size_t, newp: *mut c_void, newlen: size_t) -> c_int`.
    pub fn sysctlbyname(
        name: *const c_char,
        oldp: *mut c_void,
        oldlenp: *mut usize,
        newp: *mut c_void,
        newlen: usize,
    ) -> c_int;
    /// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub fn proc_pidinfo(pid: c_int, flavor:
    /// c_int, arg: u64, buffer: *mut c_void, buffersize: c_int) -> c_int`.
    pub fn proc_pidinfo(pid: c_int, flavor: c_int, arg: u64, buffer: *mut c_void, buffersize: c_int)
        -> c_int;
}
