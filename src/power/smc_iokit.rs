//! The macOS leaf of the `pstr` sensor: an [`SmcTransport`] over one read-only IOKit
//! connection to `AppleSMCKeysEndpoint` (docs/formats.md §1.1, §1.3).
//!
//! Thin on purpose: find the endpoint (`IOServiceNameMatching` + `IOServiceGetMatchingService`;
//! when that matches nothing, macmon's way: `IOServiceMatching("AppleSMC")` +
//! `IOServiceGetMatchingServices`, each service's `IORegistryEntryGetName`), open it
//! (`IOServiceOpen` type 0), one `IOConnectCallStructMethod(selector 2)` per round-trip, close on
//! drop. Which candidate to open, struct packing, the read-key-info-then-read-bytes protocol,
//! decoding and error meanings (a missing endpoint's likely cause included) are the portable,
//! tested code of [`super::smc`]. No IOReport, no writes.
//!
//! Compiled on macOS only, against `objc2-io-kit` 0.3.2; `.ci/run` type-checks and lints it for
//! aarch64-apple-darwin.

use std::ffi::{c_char, c_void};

use objc2_core_foundation::{CFDictionary, CFRetained};
use objc2_io_kit::{
    io_connect_t, io_iterator_t, io_service_t, IOConnectCallStructMethod, IOIteratorNext, IOObjectRelease,
    IORegistryEntryGetName, IOServiceClose, IOServiceGetMatchingService, IOServiceGetMatchingServices,
    IOServiceMatching, IOServiceNameMatching, IOServiceOpen,
};

use super::smc::{
    check_kern_return, open_failure_reason, pick_keys_endpoint, reader_provenance, registry_name,
};
use super::smc::{EndpointFound, NoEndpointCause, PstrSensor, SmcError, SmcTransport, IO_NAME_LEN};
use super::smc::{PARAM_SIZE, SMC_KEYS_ENDPOINT_C, SMC_SELECTOR, SMC_SERVICE_CLASS_C};
use super::{SensorError, SensorKind};

/// This file's own text, hashed into the sensor's provenance.
const SOURCE: &[u8] = include_bytes!("smc_iokit.rs");
/// Path of this file in the repository, for the provenance record.
const SOURCE_PATH: &str = "src/power/smc_iokit.rs";
/// `kIOMainPortDefault` is `MACH_PORT_NULL` (IOKitLib.h); 0 selects the default main port.
const MAIN_PORT_DEFAULT: u32 = 0;

fn task_self() -> u32 {
    // SAFETY: reads the task port static libSystem initializes before `main`.
    #[allow(deprecated)]
    unsafe {
        libc::mach_task_self()
    }
}

/// The service `IOServiceNameMatching("AppleSMCKeysEndpoint")` matches, or `None`.
fn endpoint_by_name() -> Option<io_service_t> {
    // SAFETY: a valid NUL-terminated static string.
    let matching = unsafe { IOServiceNameMatching(SMC_KEYS_ENDPOINT_C.as_ptr()) };
    // IOServiceGetMatchingService consumes one reference of the CFDictionary view.
    let matching: Option<CFRetained<CFDictionary>> = matching.as_deref().map(CFRetained::from);
    // SAFETY: port 0 is the default main port; the dictionary reference is consumed.
    let service = unsafe { IOServiceGetMatchingService(MAIN_PORT_DEFAULT, matching) };
    (service != 0).then_some(service)
}

/// macmon's way: every service of class `AppleSMC` with its registry name; the one
/// [`pick_keys_endpoint`] chooses is kept, every other one released. `Err` carries the names
/// seen when none is the endpoint.
fn endpoint_by_class() -> Result<Result<io_service_t, Vec<String>>, SmcError> {
    // SAFETY: a valid NUL-terminated static string.
    let matching = unsafe { IOServiceMatching(SMC_SERVICE_CLASS_C.as_ptr()) };
    let matching: Option<CFRetained<CFDictionary>> = matching.as_deref().map(CFRetained::from);
    let mut iterator: io_iterator_t = 0;
    // SAFETY: port 0 is the default main port; the dictionary reference is consumed and
    // `iterator` is a valid out-pointer.
    let kr = unsafe { IOServiceGetMatchingServices(MAIN_PORT_DEFAULT, matching, &mut iterator) };
    check_kern_return("IOServiceGetMatchingServices", kr)?;
    let mut services: Vec<(io_service_t, Option<String>)> = Vec::new();
    if iterator != 0 {
        loop {
            let service = IOIteratorNext(iterator);
            if service == 0 {
                break;
            }
            let mut name = [0 as c_char; IO_NAME_LEN];
            // SAFETY: `service` is a live registry entry and `name` an io_name_t buffer of
            // IO_NAME_LEN bytes that the call NUL-terminates.
            let kr = unsafe { IORegistryEntryGetName(service, &mut name) };
            let bytes = name.map(|c| c as u8);
            services.push((service, if kr == 0 { registry_name(&bytes) } else { None }));
        }
        IOObjectRelease(iterator);
    }
    let names: Vec<Option<String>> = services.iter().map(|(_, n)| n.clone()).collect();
    let chosen = pick_keys_endpoint(&names);
    let mut kept = None;
    for (i, (service, _)) in services.into_iter().enumerate() {
        if Some(i) == chosen {
            kept = Some(service);
        } else {
            IOObjectRelease(service);
        }
    }
    Ok(kept.ok_or_else(|| names.into_iter().map(|n| n.unwrap_or_else(|| "?".into())).collect()))
}

/// Whether macOS reports a hypervisor (`kern.hv_vmm_present`), `None` where unreadable.
fn virtual_machine() -> Option<bool> {
    crate::host::macos::sysctl("kern.hv_vmm_present")
        .as_deref()
        .and_then(crate::host::sysctl_u64)
        .map(|v| v != 0)
}

/// One open, read-only connection to the SMC keys endpoint; closed on drop.
pub struct IoKitSmc {
    conn: io_connect_t,
}

impl IoKitSmc {
    /// Find `AppleSMCKeysEndpoint` (by registry name, else among the `AppleSMC` class's
    /// services) and open a type-0 user client on it; says how it was found.
    pub fn open() -> Result<(Self, EndpointFound), SmcError> {
        let (service, found) = match endpoint_by_name() {
            Some(service) => (service, EndpointFound::ByName),
            None => match endpoint_by_class()? {
                Ok(service) => (service, EndpointFound::ByClass),
                Err(class_matches) => {
                    let cause = NoEndpointCause::infer(std::env::consts::ARCH, virtual_machine());
                    return Err(SmcError::NoKeysEndpoint { class_matches, cause });
                }
            },
        };
        let mut conn: io_connect_t = 0;
        // SAFETY: `service` is a live service handle and `conn` a valid out-pointer.
        let kr = unsafe { IOServiceOpen(service, task_self(), 0, &mut conn) };
        // The connection does not adopt the service reference (docs/formats.md §1.1).
        IOObjectRelease(service);
        check_kern_return("IOServiceOpen", kr)?;
        Ok((IoKitSmc { conn }, found))
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
    let (smc, found) = IoKitSmc::open().map_err(|e| SensorError::Unavailable {
        sensor: SensorKind::Pstr.name().into(),
        reason: open_failure_reason(&e),
    })?;
    let sensor = PstrSensor::open(smc, found.device())?;
    Ok(sensor.with_provenance(reader_provenance(SOURCE_PATH, SOURCE, env!("CARGO_PKG_VERSION"))))
}
