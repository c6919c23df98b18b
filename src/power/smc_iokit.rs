//! The macOS leaf of the `pstr` sensor: an [`SmcTransport`] over one read-only IOKit
//! connection to `AppleSMCKeysEndpoint` (power-and-trace.md §A.1, §A.3).
//!
//! Thin on purpose: open (`IOServiceNameMatching` + `IOServiceGetMatchingService` +
//! `IOServiceOpen` type 0), one `IOConnectCallStructMethod(selector 2)` per round-trip, close on
//! drop. Struct packing, the read-key-info-then-read-bytes protocol, decoding and error
//! meanings are the portable, tested code of [`super::smc`]. No IOReport, no writes.
//!
//! Compiled against `objc2-io-kit 0.3.2` on macOS and, with `--features apple-shim`, against
//! the mirror in `src/apple_shim/io_kit.rs` elsewhere (type-check only).

use std::ffi::c_void;

#[cfg(target_os = "macos")]
use objc2_core_foundation::{CFDictionary, CFRetained};
#[cfg(target_os = "macos")]
use objc2_io_kit::{
    io_connect_t, IOConnectCallStructMethod, IOObjectRelease, IOServiceClose, IOServiceGetMatchingService,
    IOServiceNameMatching, IOServiceOpen,
};

#[cfg(not(target_os = "macos"))]
use crate::apple_shim::io_kit::{
    io_connect_t, mach_task_self, CFDictionary, CFRetained, IOConnectCallStructMethod, IOObjectRelease,
    IOServiceClose, IOServiceGetMatchingService, IOServiceNameMatching, IOServiceOpen,
};

use super::smc::{check_kern_return, reader_provenance, PstrSensor, SmcError, SmcTransport};
use super::smc::{PARAM_SIZE, SMC_KEYS_ENDPOINT, SMC_KEYS_ENDPOINT_C, SMC_SELECTOR};
use super::{SensorError, SensorKind};

/// This file's own text, hashed into the sensor's provenance.
const SOURCE: &[u8] = include_bytes!("smc_iokit.rs");
/// Path of this file in the repository, for the provenance record.
const SOURCE_PATH: &str = "src/power/smc_iokit.rs";
/// `kIOMainPortDefault` is `MACH_PORT_NULL` (IOKitLib.h); 0 selects the default main port.
const MAIN_PORT_DEFAULT: u32 = 0;
/// `kIOReturnNoDevice`, reported when no `AppleSMCKeysEndpoint` service matches.
const IO_RETURN_NO_DEVICE: i32 = 0xE000_02C0_u32 as i32;

#[cfg(target_os = "macos")]
fn task_self() -> u32 {
    // SAFETY: reads the task port static libSystem initializes before `main`.
    #[allow(deprecated)]
    unsafe {
        libc::mach_task_self()
    }
}

#[cfg(not(target_os = "macos"))]
fn task_self() -> u32 {
    // SAFETY: as on macOS (this build only type-checks against the mirror).
    unsafe { mach_task_self() }
}

/// One open, read-only connection to the SMC keys endpoint; closed on drop.
pub struct IoKitSmc {
    conn: io_connect_t,
}

impl IoKitSmc {
    /// Find `AppleSMCKeysEndpoint` by registry name and open a type-0 user client on it.
    pub fn open() -> Result<Self, SmcError> {
        // SAFETY: a valid NUL-terminated static string.
        let matching = unsafe { IOServiceNameMatching(SMC_KEYS_ENDPOINT_C.as_ptr()) };
        // IOServiceGetMatchingService consumes one reference of the CFDictionary view.
        let matching: Option<CFRetained<CFDictionary>> = matching.as_deref().map(CFRetained::from);
        // SAFETY: port 0 is the default main port; the dictionary reference is consumed.
        let service = unsafe { IOServiceGetMatchingService(MAIN_PORT_DEFAULT, matching) };
        if service == 0 {
            return Err(SmcError::KernReturn {
                call: "IOServiceGetMatchingService",
                code: IO_RETURN_NO_DEVICE as u32,
                meaning: "no AppleSMCKeysEndpoint service (an Apple silicon Mac is needed)",
            });
        }
        let mut conn: io_connect_t = 0;
        // SAFETY: `service` is a live service handle and `conn` a valid out-pointer.
        let kr = unsafe { IOServiceOpen(service, task_self(), 0, &mut conn) };
        // The connection does not adopt the service reference (power-and-trace.md §A.1).
        IOObjectRelease(service);
        check_kern_return("IOServiceOpen", kr)?;
        Ok(IoKitSmc { conn })
    }
}

impl SmcTransport for IoKitSmc {
    fn call(&mut self, input: &[u8; PARAM_SIZE]) -> Result<[u8; PARAM_SIZE], SmcError> {
        let mut out = [0u8; PARAM_SIZE];
        let mut out_len: usize = PARAM_SIZE;
        // SAFETY: both buffers are exactly PARAM_SIZE bytes and live across the call;
        // `out_len` tells IOKit the output capacity.
        let kr = unsafe {
            IOConnectCallStructMethod(
                self.conn,
                SMC_SELECTOR,
                input.as_ptr() as *const c_void,
                PARAM_SIZE,
                out.as_mut_ptr() as *mut c_void,
                &mut out_len,
            )
        };
        check_kern_return("IOConnectCallStructMethod", kr)?;
        if out_len != PARAM_SIZE {
            return Err(SmcError::BufferSize { expected: PARAM_SIZE, got: out_len });
        }
        Ok(out)
    }
}

impl Drop for IoKitSmc {
    fn drop(&mut self) {
        IOServiceClose(self.conn);
    }
}

/// Open the `pstr` sensor on this Mac, with this file's hash and the crate version as its
/// provenance.
pub fn open_pstr() -> Result<PstrSensor<IoKitSmc>, SensorError> {
    let smc = IoKitSmc::open().map_err(|e| SensorError::Unavailable {
        sensor: SensorKind::Pstr.name().into(),
        reason: format!(
            "cannot open the SMC ({SMC_KEYS_ENDPOINT}): {e}; use exec:CMD with an external meter"
        ),
    })?;
    let sensor = PstrSensor::open(smc, SMC_KEYS_ENDPOINT)?;
    Ok(sensor.with_provenance(reader_provenance(SOURCE_PATH, SOURCE, env!("CARGO_PKG_VERSION"))))
}
