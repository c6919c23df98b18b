//! Mirror of the IOKit, CoreFoundation and libc items `src/power/smc_iokit.rs` uses.
//!
//! Sources (read in the cargo registry):
//! - `objc2-io-kit 0.3.2`: `src/generated/mod.rs` (types, `IOServiceNameMatching`,
//!   `IOServiceOpen`, `IOServiceClose`, `IOObjectRelease`, `IOConnectCallStructMethod`),
//!   `src/consumes_argument.rs` (`IOServiceGetMatchingService`), `src/lib.rs` (`task_port_t`).
//! - `objc2-core-foundation 0.3.2`: `src/retained.rs` (`CFRetained`, its `Deref`, `Drop` and
//!   `From<&T>`), `src/generated/CFDictionary.rs` (`CFDictionary`, `CFMutableDictionary`
//!   whose superclass is `CFDictionary`).
//! - `libc 0.2.191`: `src/unix/bsd/apple/mod.rs` (`mach_port_t`, `kern_return_t`,
//!   `mach_task_self`, which reads the `mach_task_self_` static).

use std::ffi::{c_char, c_void};
use std::ops::Deref;
use std::ptr::NonNull;

/// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub type mach_port_t = u32` (via `__darwin_mach_port_t`).
pub type mach_port_t = u32;
/// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `pub type kern_return_t = c_int`.
pub type kern_return_t = i32;
/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `pub type io_object_t = libc::mach_port_t`.
pub type io_object_t = mach_port_t;
/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `pub type io_connect_t = io_object_t`.
pub type io_connect_t = io_object_t;
/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `pub type io_service_t = io_object_t`.
pub type io_service_t = io_object_t;
/// objc2-io-kit 0.3.2 `src/lib.rs`: `pub(crate) type task_port_t = libc::task_t` (a `mach_port_t`).
pub type task_port_t = mach_port_t;

/// objc2-core-foundation 0.3.2 `src/generated/CFDictionary.rs`: opaque `CFDictionary`.
#[repr(C)]
pub struct CFDictionary {
    _opaque: [u8; 0],
}

/// objc2-core-foundation 0.3.2 `src/generated/CFDictionary.rs`: `CFMutableDictionary: CFDictionary`.
#[repr(C)]
pub struct CFMutableDictionary {
    _opaque: [u8; 0],
}

impl AsRef<CFDictionary> for CFMutableDictionary {
    fn as_ref(&self) -> &CFDictionary {
        // SAFETY: mirrors the superclass cast of the real crate: a CFMutableDictionary is a
        // CFDictionary (both opaque, zero-sized in this mirror).
        unsafe { &*(self as *const CFMutableDictionary as *const CFDictionary) }
    }
}

extern "C-unwind" {
    fn CFRetain(cf: *const c_void) -> *const c_void;
    fn CFRelease(cf: *const c_void);
}

/// objc2-core-foundation 0.3.2 `src/retained.rs`: an owned +1 reference to a CF object
/// (`#[repr(transparent)]` over a `NonNull`, as there).
#[repr(transparent)]
pub struct CFRetained<T> {
    ptr: NonNull<T>,
}

impl<T> CFRetained<T> {
    /// objc2-core-foundation 0.3.2 `src/retained.rs`: `CFRetained::into_raw`.
    pub fn into_raw(this: Self) -> NonNull<T> {
        let ptr = this.ptr;
        std::mem::forget(this);
        ptr
    }
}

impl<T> Deref for CFRetained<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the pointer is a live CF object for as long as this reference is held.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Drop for CFRetained<T> {
    fn drop(&mut self) {
        // SAFETY: this value owns one reference, released exactly once here.
        unsafe { CFRelease(self.ptr.as_ptr() as *const c_void) }
    }
}

impl<T: AsRef<U>, U> From<&T> for CFRetained<U> {
    fn from(obj: &T) -> Self {
        let u: &U = obj.as_ref();
        // SAFETY: `u` is a live CF object; the retain is balanced by this value's Drop.
        unsafe { CFRetain(u as *const U as *const c_void) };
        CFRetained { ptr: NonNull::from(u) }
    }
}

extern "C-unwind" {
    #[link_name = "IOServiceNameMatching"]
    fn IOServiceNameMatching_raw(name: *const c_char) -> Option<NonNull<CFMutableDictionary>>;
    #[link_name = "IOServiceGetMatchingService"]
    fn IOServiceGetMatchingService_raw(main_port: mach_port_t, matching: *mut CFDictionary) -> io_service_t;
    #[link_name = "IOServiceClose"]
    fn IOServiceClose_raw(connect: io_connect_t) -> kern_return_t;
    #[link_name = "IOObjectRelease"]
    fn IOObjectRelease_raw(object: io_object_t) -> kern_return_t;
    static mach_task_self_: mach_port_t;
}

/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `unsafe fn IOServiceNameMatching`.
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
pub unsafe extern "C-unwind" fn IOServiceNameMatching(
    name: *const c_char,
) -> Option<CFRetained<CFMutableDictionary>> {
    // SAFETY: forwarded from the caller.
    unsafe { IOServiceNameMatching_raw(name) }.map(|ptr| CFRetained { ptr })
}

/// objc2-io-kit 0.3.2 `src/consumes_argument.rs`: `unsafe fn IOServiceGetMatchingService`
/// (consumes one reference of `matching`).
///
/// # Safety
/// `main_port` must be a valid main port or 0.
pub unsafe extern "C-unwind" fn IOServiceGetMatchingService(
    main_port: mach_port_t,
    matching: Option<CFRetained<CFDictionary>>,
) -> io_service_t {
    let raw = matching.map_or(std::ptr::null_mut(), |m| CFRetained::into_raw(m).as_ptr());
    // SAFETY: forwarded from the caller; the reference in `raw` is consumed by IOKit.
    unsafe { IOServiceGetMatchingService_raw(main_port, raw) }
}

extern "C-unwind" {
    /// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `pub fn IOServiceOpen` (in an unsafe
    /// extern block, feature `libc`).
    pub fn IOServiceOpen(
        service: io_service_t,
        owning_task: task_port_t,
        r#type: u32,
        connect: *mut io_connect_t,
    ) -> kern_return_t;

    /// objc2-io-kit 0.3.2 `src/generated/mod.rs`: `pub fn IOConnectCallStructMethod` (in an
    /// unsafe extern block, feature `libc`).
    pub fn IOConnectCallStructMethod(
        connection: mach_port_t,
        selector: u32,
        input_struct: *const c_void,
        input_struct_cnt: usize,
        output_struct: *mut c_void,
        output_struct_cnt: *mut usize,
    ) -> kern_return_t;
}

/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: safe `extern "C-unwind" fn IOServiceClose`.
pub extern "C-unwind" fn IOServiceClose(connect: io_connect_t) -> kern_return_t {
    // SAFETY: IOKit accepts any handle value and reports an invalid one as an error code.
    unsafe { IOServiceClose_raw(connect) }
}

/// objc2-io-kit 0.3.2 `src/generated/mod.rs`: safe `extern "C-unwind" fn IOObjectRelease`.
pub extern "C-unwind" fn IOObjectRelease(object: io_object_t) -> kern_return_t {
    // SAFETY: IOKit accepts any handle value and reports an invalid one as an error code.
    unsafe { IOObjectRelease_raw(object) }
}

/// libc 0.2.191 `src/unix/bsd/apple/mod.rs`: `unsafe fn mach_task_self()` (deprecated there
/// in favour of the `mach2` crate; it reads the `mach_task_self_` static).
///
/// # Safety
/// Reads a static the system initializes before `main`.
pub unsafe fn mach_task_self() -> mach_port_t {
    // SAFETY: forwarded from the caller.
    unsafe { mach_task_self_ }
}
