//! Apple SMC codec (docs/formats.md §1): the 80-byte `SMCParamStruct`, FourCC keys and
//! types, value decoding, result and `IOReturn` codes, and the `PSTR` sensor over any
//! [`SmcTransport`].
//!
//! Everything here is portable and tested with hand-built byte buffers. The only
//! platform-specific piece is a transport that passes the 80-byte input to
//! `IOConnectCallStructMethod(conn, SMC_SELECTOR, &in, 80, &out, &80)` on an `IOServiceOpen`ed
//! `AppleSMCKeysEndpoint` connection and maps its `kern_return_t` with [`check_kern_return`];
//! that leaf lives in a macOS-only file outside this module.
//!
//! Byte order: the struct's own integers (`key`, `data_size`, `data_type`, `data32`, ...) are
//! native-endian C fields, and every Mac this runs on is little-endian, so they are encoded
//! little-endian here. The payload in `bytes` uses the SMC's per-type order: integers and
//! fixed-point are big-endian, `flt ` is little-endian on Apple Silicon.

use super::{ProgramProvenance, Reading, Sensor, SensorError, SensorInfo, SensorKind};
use std::fmt;

/// Size of `SMCParamStruct`; any other size makes IOKit return `kIOReturnBadArgument`.
pub const PARAM_SIZE: usize = 80;
/// `IOConnectCallStructMethod` selector (`kSMCHandleYPCEvent`).
pub const SMC_SELECTOR: u32 = 2;
/// IOKit service class to match.
pub const SMC_SERVICE_CLASS: &str = "AppleSMC";
/// [`SMC_SERVICE_CLASS`] as a C string, for `IOServiceMatching`.
pub const SMC_SERVICE_CLASS_C: &std::ffi::CStr = c"AppleSMC";
/// Registry name of the service to open on Apple Silicon (several services match the class).
pub const SMC_KEYS_ENDPOINT: &str = "AppleSMCKeysEndpoint";
/// [`SMC_KEYS_ENDPOINT`] as a C string, for `IOServiceNameMatching`.
pub const SMC_KEYS_ENDPOINT_C: &std::ffi::CStr = c"AppleSMCKeysEndpoint";
/// Length of an IOKit `io_name_t` buffer (`IORegistryEntryGetName` writes at most this many
/// bytes, its NUL included).
pub const IO_NAME_LEN: usize = 128;
/// Length of the payload `bytes` field.
pub const PAYLOAD_LEN: usize = 32;

/// Byte offset of `key: u32`.
pub const OFF_KEY: usize = 0;
/// Byte offset of `vers` (6 bytes).
pub const OFF_VERS: usize = 4;
/// Byte offset of `p_limit` (16 bytes).
pub const OFF_P_LIMIT: usize = 12;
/// Byte offset of `key_info.data_size: u32`.
pub const OFF_DATA_SIZE: usize = 28;
/// Byte offset of `key_info.data_type: u32`.
pub const OFF_DATA_TYPE: usize = 32;
/// Byte offset of `key_info.data_attributes: u8`.
pub const OFF_DATA_ATTRIBUTES: usize = 36;
/// Byte offset of `result: u8` (SMC status of the call).
pub const OFF_RESULT: usize = 40;
/// Byte offset of `status: u8`.
pub const OFF_STATUS: usize = 41;
/// Byte offset of `data8: u8` (the sub-command).
pub const OFF_DATA8: usize = 42;
/// Byte offset of `data32: u32` (key index for [`Command::KeyFromIndex`]).
pub const OFF_DATA32: usize = 44;
/// Byte offset of `bytes: [u8; 32]`.
pub const OFF_BYTES: usize = 48;

/// A four-character code: 4 ASCII bytes packed most significant first (`PSTR` = 0x50535452).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FourCc(pub u32);

impl FourCc {
    /// Pack 4 bytes, the first becoming the most significant.
    pub const fn from_bytes(b: [u8; 4]) -> Self {
        FourCc(u32::from_be_bytes(b))
    }

    /// The 4 bytes, most significant first.
    pub const fn to_bytes(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }

    /// Parse exactly 4 printable ASCII characters (spaces count: `"flt "`).
    pub fn parse(s: &str) -> Result<Self, SmcError> {
        let b = s.as_bytes();
        if b.len() != 4 || !b.iter().all(|c| (0x20..0x7f).contains(c)) {
            return Err(SmcError::BadFourCc { input: s.to_string() });
        }
        Ok(FourCc::from_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl fmt::Display for FourCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.to_bytes() {
            if (0x20..0x7f).contains(&b) {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for FourCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FourCc(\"{self}\" = {:#010x})", self.0)
    }
}

/// Key `PSTR`: total system power in watts (`flt `).
pub const KEY_PSTR: FourCc = FourCc::from_bytes(*b"PSTR");
/// Key `#KEY`: number of keys (`ui32`).
pub const KEY_COUNT: FourCc = FourCc::from_bytes(*b"#KEY");
/// Type `flt `: IEEE-754 f32, little-endian on Apple Silicon.
pub const TYPE_FLT: FourCc = FourCc::from_bytes(*b"flt ");

/// Sub-command in `data8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Command {
    /// `kSMCReadKey`: read a key's bytes (needs `key_info.data_size`).
    ReadBytes = 5,
    /// `kSMCWriteKey`: needs root; never used by this tool.
    WriteBytes = 6,
    /// `kSMCGetKeyFromIndex`: the key at index `data32`.
    KeyFromIndex = 8,
    /// `kSMCGetKeyInfo`: size, type and attributes of a key.
    KeyInfo = 9,
}

/// Size, type and attributes of a key (the struct's `key_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInfo {
    /// Payload length in bytes (≤ 32).
    pub data_size: u32,
    /// Payload type, e.g. `flt `, `ui32`, `fp88`.
    pub data_type: FourCc,
    /// Attribute bits, kept as given.
    pub data_attributes: u8,
}

/// `vers` sub-struct (unused by reads; decoded for completeness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vers {
    /// Major.
    pub major: u8,
    /// Minor.
    pub minor: u8,
    /// Build.
    pub build: u8,
    /// Reserved.
    pub reserved: u8,
    /// Release.
    pub release: u16,
}

/// `p_limit` sub-struct (unused by reads; decoded for completeness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PLimit {
    /// Version.
    pub version: u16,
    /// Length.
    pub length: u16,
    /// CPU power limit.
    pub cpu_plimit: u32,
    /// GPU power limit.
    pub gpu_plimit: u32,
    /// Memory power limit.
    pub mem_plimit: u32,
}

/// The whole 80-byte `SMCParamStruct`, field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmcParam {
    /// Key.
    pub key: FourCc,
    /// `vers`.
    pub vers: Vers,
    /// `p_limit`.
    pub p_limit: PLimit,
    /// `key_info`.
    pub key_info: KeyInfo,
    /// SMC result code of the call (0 = success, see [`SmcResult`]).
    pub result: u8,
    /// Status byte.
    pub status: u8,
    /// Sub-command ([`Command`]).
    pub data8: u8,
    /// Index for [`Command::KeyFromIndex`].
    pub data32: u32,
    /// Payload.
    pub bytes: [u8; PAYLOAD_LEN],
}

impl Default for SmcParam {
    fn default() -> Self {
        SmcParam {
            key: FourCc(0),
            vers: Vers::default(),
            p_limit: PLimit::default(),
            key_info: KeyInfo { data_size: 0, data_type: FourCc(0), data_attributes: 0 },
            result: 0,
            status: 0,
            data8: 0,
            data32: 0,
            bytes: [0; PAYLOAD_LEN],
        }
    }
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl SmcParam {
    /// Encode as the C struct's bytes (padding zeroed).
    pub fn encode(&self) -> [u8; PARAM_SIZE] {
        let mut b = [0u8; PARAM_SIZE];
        b[OFF_KEY..OFF_KEY + 4].copy_from_slice(&self.key.0.to_le_bytes());
        b[OFF_VERS] = self.vers.major;
        b[OFF_VERS + 1] = self.vers.minor;
        b[OFF_VERS + 2] = self.vers.build;
        b[OFF_VERS + 3] = self.vers.reserved;
        b[OFF_VERS + 4..OFF_VERS + 6].copy_from_slice(&self.vers.release.to_le_bytes());
        b[OFF_P_LIMIT..OFF_P_LIMIT + 2].copy_from_slice(&self.p_limit.version.to_le_bytes());
        b[OFF_P_LIMIT + 2..OFF_P_LIMIT + 4].copy_from_slice(&self.p_limit.length.to_le_bytes());
        b[OFF_P_LIMIT + 4..OFF_P_LIMIT + 8].copy_from_slice(&self.p_limit.cpu_plimit.to_le_bytes());
        b[OFF_P_LIMIT + 8..OFF_P_LIMIT + 12].copy_from_slice(&self.p_limit.gpu_plimit.to_le_bytes());
        b[OFF_P_LIMIT + 12..OFF_P_LIMIT + 16].copy_from_slice(&self.p_limit.mem_plimit.to_le_bytes());
        b[OFF_DATA_SIZE..OFF_DATA_SIZE + 4].copy_from_slice(&self.key_info.data_size.to_le_bytes());
        b[OFF_DATA_TYPE..OFF_DATA_TYPE + 4].copy_from_slice(&self.key_info.data_type.0.to_le_bytes());
        b[OFF_DATA_ATTRIBUTES] = self.key_info.data_attributes;
        b[OFF_RESULT] = self.result;
        b[OFF_STATUS] = self.status;
        b[OFF_DATA8] = self.data8;
        b[OFF_DATA32..OFF_DATA32 + 4].copy_from_slice(&self.data32.to_le_bytes());
        b[OFF_BYTES..OFF_BYTES + PAYLOAD_LEN].copy_from_slice(&self.bytes);
        b
    }

    /// Decode the C struct's bytes; the buffer must be exactly [`PARAM_SIZE`] long.
    pub fn decode(b: &[u8]) -> Result<Self, SmcError> {
        if b.len() != PARAM_SIZE {
            return Err(SmcError::BufferSize { expected: PARAM_SIZE, got: b.len() });
        }
        let mut bytes = [0u8; PAYLOAD_LEN];
        bytes.copy_from_slice(&b[OFF_BYTES..OFF_BYTES + PAYLOAD_LEN]);
        Ok(SmcParam {
            key: FourCc(u32_at(b, OFF_KEY)),
            vers: Vers {
                major: b[OFF_VERS],
                minor: b[OFF_VERS + 1],
                build: b[OFF_VERS + 2],
                reserved: b[OFF_VERS + 3],
                release: u16_at(b, OFF_VERS + 4),
            },
            p_limit: PLimit {
                version: u16_at(b, OFF_P_LIMIT),
                length: u16_at(b, OFF_P_LIMIT + 2),
                cpu_plimit: u32_at(b, OFF_P_LIMIT + 4),
                gpu_plimit: u32_at(b, OFF_P_LIMIT + 8),
                mem_plimit: u32_at(b, OFF_P_LIMIT + 12),
            },
            key_info: KeyInfo {
                data_size: u32_at(b, OFF_DATA_SIZE),
                data_type: FourCc(u32_at(b, OFF_DATA_TYPE)),
                data_attributes: b[OFF_DATA_ATTRIBUTES],
            },
            result: b[OFF_RESULT],
            status: b[OFF_STATUS],
            data8: b[OFF_DATA8],
            data32: u32_at(b, OFF_DATA32),
            bytes,
        })
    }
}

/// Input struct for step 1 of a read: ask for a key's size and type.
pub fn key_info_request(key: FourCc) -> [u8; PARAM_SIZE] {
    SmcParam { key, data8: Command::KeyInfo as u8, ..SmcParam::default() }.encode()
}

/// Input struct for step 2 of a read: ask for a key's bytes, given its [`KeyInfo`].
pub fn read_bytes_request(key: FourCc, info: &KeyInfo) -> Result<[u8; PARAM_SIZE], SmcError> {
    check_size(key, info)?;
    Ok(SmcParam { key, key_info: *info, data8: Command::ReadBytes as u8, ..SmcParam::default() }.encode())
}

/// Input struct asking for the key at `index` (0 ≤ index < `#KEY`).
pub fn key_from_index_request(index: u32) -> [u8; PARAM_SIZE] {
    SmcParam { data8: Command::KeyFromIndex as u8, data32: index, ..SmcParam::default() }.encode()
}

fn check_size(key: FourCc, info: &KeyInfo) -> Result<(), SmcError> {
    if info.data_size as usize > PAYLOAD_LEN {
        return Err(SmcError::DataTooLarge { key, data_size: info.data_size });
    }
    Ok(())
}

fn decode_reply(key: FourCc, out: &[u8]) -> Result<SmcParam, SmcError> {
    let p = SmcParam::decode(out)?;
    if p.result != 0 {
        return Err(SmcError::Result { key, code: p.result, meaning: SmcResult::meaning(p.result) });
    }
    Ok(p)
}

/// Decode the output of a [`key_info_request`].
pub fn parse_key_info_reply(key: FourCc, out: &[u8]) -> Result<KeyInfo, SmcError> {
    let info = decode_reply(key, out)?.key_info;
    check_size(key, &info)?;
    Ok(info)
}

/// Decode the output of a [`read_bytes_request`]: the first `info.data_size` payload bytes.
pub fn parse_read_bytes_reply(key: FourCc, info: &KeyInfo, out: &[u8]) -> Result<Vec<u8>, SmcError> {
    check_size(key, info)?;
    let p = decode_reply(key, out)?;
    Ok(p.bytes[..info.data_size as usize].to_vec())
}

/// Decode the output of a [`key_from_index_request`]: the key's name.
pub fn parse_key_from_index_reply(index: u32, out: &[u8]) -> Result<FourCc, SmcError> {
    Ok(decode_reply(FourCc::from_bytes(*b"#idx"), out)
        .map_err(|e| match e {
            SmcError::Result { code, meaning, .. } => SmcError::IndexResult { index, code, meaning },
            other => other,
        })?
        .key)
}

/// SMC `result` codes (docs/formats.md §1.1).
pub struct SmcResult;

impl SmcResult {
    /// Success.
    pub const SUCCESS: u8 = 0x00;
    /// Generic error.
    pub const ERROR: u8 = 0x01;
    /// The key does not exist on this machine.
    pub const KEY_NOT_FOUND: u8 = 0x84;

    /// What a result code means.
    pub fn meaning(code: u8) -> &'static str {
        match code {
            0x00 => "success",
            0x01 => "error",
            0x80 => "communication collision",
            0x81 => "spurious data",
            0x82 => "bad command",
            0x83 => "bad parameter",
            0x84 => "key not found",
            0x85 => "key not readable",
            0x86 => "key not writable",
            0x87 => "key size mismatch",
            0x88 => "framing error",
            0x89 => "bad argument",
            0xB7 => "timeout",
            0xB8 => "key index out of range",
            _ => "unknown SMC result code",
        }
    }
}

/// Check a `kern_return_t` from `IOServiceOpen` / `IOConnectCallStructMethod`.
pub fn check_kern_return(call: &'static str, kr: i32) -> Result<(), SmcError> {
    if kr == 0 {
        return Ok(());
    }
    Err(SmcError::KernReturn { call, code: kr as u32, meaning: io_return_meaning(kr) })
}

/// What an `IOReturn` code means, with the usual cause where there is one.
pub fn io_return_meaning(kr: i32) -> &'static str {
    match kr as u32 {
        0 => "success",
        0xE000_02BC => "kIOReturnError (general error)",
        0xE000_02BD => "kIOReturnNoMemory",
        0xE000_02BE => "kIOReturnNoResources",
        0xE000_02C0 => "kIOReturnNoDevice (no SMC service)",
        0xE000_02C1 => "kIOReturnNotPrivileged (SMC writes need root; this tool only reads)",
        0xE000_02C2 => "kIOReturnBadArgument (the struct must be exactly 80 bytes)",
        0xE000_02C7 => "kIOReturnUnsupported",
        0xE000_02C9 => "kIOReturnInternalError",
        0xE000_02CA => "kIOReturnIOError",
        0xE000_02CD => "kIOReturnNotOpen (connection closed)",
        0xE000_02D5 => "kIOReturnBusy",
        0xE000_02D6 => "kIOReturnTimeout",
        0xE000_02E2 => "kIOReturnNotPermitted (sandbox or entitlement)",
        0xE000_02F0 => "kIOReturnNotFound",
        _ => "unknown kern_return_t",
    }
}

/// How the leaf found the keys endpoint: by registry name (`IOServiceNameMatching`), or, when
/// that matched nothing, among the services of class `AppleSMC` (macmon's way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointFound {
    /// `IOServiceNameMatching("AppleSMCKeysEndpoint")` matched it.
    ByName,
    /// `IOServiceMatching("AppleSMC")` listed it, picked by its registry name.
    ByClass,
}

impl EndpointFound {
    /// The sensor's device text: the endpoint and, when it was not found by name, how.
    pub fn device(self) -> &'static str {
        match self {
            EndpointFound::ByName => SMC_KEYS_ENDPOINT,
            EndpointFound::ByClass => "AppleSMCKeysEndpoint (found among the AppleSMC class's services)",
        }
    }
}

/// The registry name in an `io_name_t` buffer filled by `IORegistryEntryGetName`: the bytes
/// before the first NUL (all of them if there is none), as UTF-8 with bad bytes replaced;
/// `None` when empty.
pub fn registry_name(buf: &[u8]) -> Option<String> {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    (end > 0).then(|| String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Which of the services matching class `AppleSMC` to open: the first whose registry name is
/// exactly [`SMC_KEYS_ENDPOINT`] (`None` where a name could not be read). `None` when no
/// candidate has that name; the caller releases every service but the chosen one.
pub fn pick_keys_endpoint<S: AsRef<str>>(names: &[Option<S>]) -> Option<usize> {
    names.iter().position(|n| n.as_ref().is_some_and(|n| n.as_ref() == SMC_KEYS_ENDPOINT))
}

/// Why a Mac has no `AppleSMCKeysEndpoint` service, as far as this process can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEndpointCause {
    /// macOS says it runs under a hypervisor (`kern.hv_vmm_present` = 1): its virtual SMC
    /// exposes no keys endpoint and no PSTR. GitHub's macOS runners are such VMs.
    VirtualMachine,
    /// An x86_64 build outside a VM: an Intel Mac, whose SMC has no keys endpoint.
    IntelMac,
    /// Neither fact is known: one of the two above, most likely.
    Unknown,
}

impl NoEndpointCause {
    /// The likely cause from the build's architecture (`std::env::consts::ARCH`) and whether
    /// macOS reports a hypervisor (`kern.hv_vmm_present`; `None` where unreadable). A VM wins
    /// over the architecture: an Intel VM's virtual SMC has no endpoint either.
    pub fn infer(arch: &str, virtual_machine: Option<bool>) -> Self {
        match (virtual_machine, arch) {
            (Some(true), _) => NoEndpointCause::VirtualMachine,
            (_, "x86_64") => NoEndpointCause::IntelMac,
            _ => NoEndpointCause::Unknown,
        }
    }

    /// The cause in words and what to use instead.
    pub fn advice(self) -> &'static str {
        match self {
            NoEndpointCause::VirtualMachine => {
                "this macOS runs in a virtual machine (kern.hv_vmm_present = 1; GitHub's macOS runners are VMs), \
                 whose virtual SMC exposes no PSTR; measure energy on a physical Apple silicon Mac, or use \
                 --sensor exec:CMD with an external meter"
            }
            NoEndpointCause::IntelMac => {
                "this is an Intel Mac, whose SMC has no keys endpoint (PSTR is read on Apple silicon only); \
                 use --sensor exec:CMD with an external meter (wall power), or a script around \
                 `sudo powermetrics --samplers cpu_power` that prints its package watts one per line \
                 (the CPU package only, not the whole system)"
            }
            NoEndpointCause::Unknown => {
                "likely a virtual machine (its virtual SMC exposes no PSTR; GitHub's macOS runners are VMs) \
                 or an Intel Mac (its SMC has no keys endpoint); use --sensor exec:CMD with an external meter \
                 (on an Intel Mac, a script around `sudo powermetrics --samplers cpu_power` gives the CPU \
                 package's power, not the whole system's)"
            }
        }
    }
}

/// The services of class `AppleSMC` the fallback saw, for an error message.
fn describe_class_matches(names: &[String]) -> String {
    if names.is_empty() {
        format!("no service of class {SMC_SERVICE_CLASS} either")
    } else {
        format!("class {SMC_SERVICE_CLASS} matched {} instead", names.join(", "))
    }
}

/// Why the `pstr` sensor could not be opened, for [`SensorError::Unavailable`]: a missing
/// endpoint carries its own cause and advice; any other failure gets the generic advice.
pub fn open_failure_reason(e: &SmcError) -> String {
    match e {
        SmcError::NoKeysEndpoint { .. } => e.to_string(),
        other => format!(
            "cannot open the SMC ({SMC_KEYS_ENDPOINT}): {other}; use --sensor exec:CMD with an external meter"
        ),
    }
}

/// An SMC call or decode failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SmcError {
    /// Neither name matching nor the `AppleSMC` class's services gave `AppleSMCKeysEndpoint`.
    #[error(
        "no {SMC_KEYS_ENDPOINT} service (name matching found none; {}): {}",
        describe_class_matches(class_matches),
        cause.advice()
    )]
    NoKeysEndpoint {
        /// Registry names of the services of class `AppleSMC` (`?` where unreadable).
        class_matches: Vec<String>,
        /// The likely cause.
        cause: NoEndpointCause,
    },
    /// A struct buffer of the wrong length.
    #[error("bad SMC buffer size: expected {expected} bytes, got {got}")]
    BufferSize {
        /// Required length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// Not 4 printable ASCII characters.
    #[error("bad SMC four-character code {input:?}: need exactly 4 printable ASCII characters, e.g. \"PSTR\" or \"flt \"")]
    BadFourCc {
        /// The text given.
        input: String,
    },
    /// The SMC answered with a nonzero `result`.
    #[error("SMC result {code:#04x} ({meaning}) for key {key}")]
    Result {
        /// Key asked for.
        key: FourCc,
        /// The `result` byte.
        code: u8,
        /// Its meaning.
        meaning: &'static str,
    },
    /// The SMC answered a key-by-index request with a nonzero `result`.
    #[error("SMC result {code:#04x} ({meaning}) for key index {index}")]
    IndexResult {
        /// Index asked for.
        index: u32,
        /// The `result` byte.
        code: u8,
        /// Its meaning.
        meaning: &'static str,
    },
    /// IOKit returned an error.
    #[error("IOKit {call} failed: {code:#010x} {meaning}")]
    KernReturn {
        /// The IOKit function.
        call: &'static str,
        /// The `kern_return_t`, as unsigned hex.
        code: u32,
        /// Its meaning.
        meaning: &'static str,
    },
    /// `data_size` larger than the 32-byte payload.
    #[error("SMC key {key} reports data_size {data_size}, more than the 32-byte payload")]
    DataTooLarge {
        /// Key.
        key: FourCc,
        /// Reported size.
        data_size: u32,
    },
    /// A value's length does not fit its type.
    #[error("SMC value of type {data_type} must be {expected} bytes, got {got}")]
    SizeMismatch {
        /// Type.
        data_type: FourCc,
        /// Required length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A key has a different type or size than the reader requires.
    #[error("SMC key {key} has type {data_type} and size {data_size}; expected type {expected_type} and size {expected_size}")]
    WrongType {
        /// Key.
        key: FourCc,
        /// Reported type.
        data_type: FourCc,
        /// Reported size.
        data_size: u32,
        /// Required type.
        expected_type: FourCc,
        /// Required size.
        expected_size: u32,
    },
    /// A `flag` byte other than 0 or 1.
    #[error("SMC flag value {value:#04x} is neither 0 nor 1")]
    BadFlag {
        /// The byte.
        value: u8,
    },
}

/// A decoded SMC value.
#[derive(Debug, Clone, PartialEq)]
pub enum SmcValue {
    /// `flt `.
    Float(f32),
    /// `ui8 `, `ui16`, `ui32`, `ui64`.
    Unsigned(u64),
    /// `si8 `, `si16`, `si32`, `si64`.
    Signed(i64),
    /// `fpXY` (unsigned) or `spXY` (signed) fixed point.
    Fixed(f64),
    /// `flag`.
    Flag(bool),
    /// `ch8*`: ASCII with trailing NULs removed.
    Text(String),
    /// `hex_`, `{jst` and any type without a known decoding: raw bytes.
    Bytes(Vec<u8>),
}

fn need(data_type: FourCc, bytes: &[u8], expected: usize) -> Result<(), SmcError> {
    if bytes.len() != expected {
        return Err(SmcError::SizeMismatch { data_type, expected, got: bytes.len() });
    }
    Ok(())
}

fn hex_digit(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

/// Decode `bytes` (exactly `data_size` long) according to `data_type`.
pub fn decode_value(data_type: FourCc, bytes: &[u8]) -> Result<SmcValue, SmcError> {
    let t = data_type.to_bytes();
    match &t {
        b"flt " => {
            need(data_type, bytes, 4)?;
            Ok(SmcValue::Float(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
        }
        b"ui8 " | b"ui16" | b"ui32" | b"ui64" => {
            let n = match &t {
                b"ui8 " => 1,
                b"ui16" => 2,
                b"ui32" => 4,
                _ => 8,
            };
            need(data_type, bytes, n)?;
            Ok(SmcValue::Unsigned(bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))))
        }
        b"si8 " | b"si16" | b"si32" | b"si64" => {
            let n = match &t {
                b"si8 " => 1,
                b"si16" => 2,
                b"si32" => 4,
                _ => 8,
            };
            need(data_type, bytes, n)?;
            let u = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            let shift = 64 - 8 * n as u32;
            Ok(SmcValue::Signed(((u << shift) as i64) >> shift))
        }
        b"flag" => {
            need(data_type, bytes, 1)?;
            match bytes[0] {
                0 => Ok(SmcValue::Flag(false)),
                1 => Ok(SmcValue::Flag(true)),
                value => Err(SmcError::BadFlag { value }),
            }
        }
        b"ch8*" => {
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            Ok(SmcValue::Text(String::from_utf8_lossy(&bytes[..end]).into_owned()))
        }
        [b'f', b'p', i, f] | [b's', b'p', i, f] => {
            let signed = t[0] == b's';
            match (hex_digit(*i), hex_digit(*f)) {
                (Some(int_bits), Some(frac_bits)) if int_bits + frac_bits == if signed { 15 } else { 16 } => {
                    need(data_type, bytes, 2)?;
                    let raw = [bytes[0], bytes[1]];
                    let scale = f64::from(1u32 << frac_bits);
                    let v = if signed {
                        f64::from(i16::from_be_bytes(raw)) / scale
                    } else {
                        f64::from(u16::from_be_bytes(raw)) / scale
                    };
                    Ok(SmcValue::Fixed(v))
                }
                _ => Ok(SmcValue::Bytes(bytes.to_vec())),
            }
        }
        _ => Ok(SmcValue::Bytes(bytes.to_vec())),
    }
}

/// Decode `PSTR`: refuses anything but type `flt ` with size 4 (as macmon does), then reads a
/// little-endian f32 in watts. The value is returned as read: plausibility is judged by the
/// energy rules, and a byte-swapped value is never "repaired" by guessing.
pub fn decode_pstr_watts(info: &KeyInfo, bytes: &[u8]) -> Result<f32, SmcError> {
    if info.data_type != TYPE_FLT || info.data_size != 4 {
        return Err(SmcError::WrongType {
            key: KEY_PSTR,
            data_type: info.data_type,
            data_size: info.data_size,
            expected_type: TYPE_FLT,
            expected_size: 4,
        });
    }
    need(TYPE_FLT, bytes, 4)?;
    Ok(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// One round-trip to the SMC: send an 80-byte input struct, get the 80-byte output struct.
///
/// The macOS leaf implements this over `IOConnectCallStructMethod(conn, SMC_SELECTOR, ...)`,
/// mapping its `kern_return_t` with [`check_kern_return`]. Tests implement it in memory.
pub trait SmcTransport: Send {
    /// Perform the call.
    fn call(&mut self, input: &[u8; PARAM_SIZE]) -> Result<[u8; PARAM_SIZE], SmcError>;
}

/// Read one key: key info (cached by the caller if wanted), then the bytes.
pub fn read_key<T: SmcTransport + ?Sized>(
    transport: &mut T,
    key: FourCc,
    cached: Option<KeyInfo>,
) -> Result<(KeyInfo, Vec<u8>), SmcError> {
    let info = match cached {
        Some(i) => i,
        None => parse_key_info_reply(key, &transport.call(&key_info_request(key))?)?,
    };
    let out = transport.call(&read_bytes_request(key, &info)?)?;
    let bytes = parse_read_bytes_reply(key, &info, &out)?;
    Ok((info, bytes))
}

/// The `pstr` sensor: reads `PSTR` (watts) over one read-only SMC connection.
///
/// Never reads IOReport, never writes, needs no privileges. Channel `system`.
pub struct PstrSensor<T: SmcTransport> {
    transport: T,
    key_info: KeyInfo,
    info: SensorInfo,
}

impl<T: SmcTransport> PstrSensor<T> {
    /// Check that `PSTR` exists with type `flt ` and size 4 over `transport`, then build the
    /// sensor. `device` describes the connection, e.g. `AppleSMCKeysEndpoint`.
    pub fn open(mut transport: T, device: &str) -> Result<Self, SensorError> {
        let out = transport.call(&key_info_request(KEY_PSTR)).map_err(|e| SensorError::Unavailable {
            sensor: "pstr".into(),
            reason: format!("cannot ask the SMC for key PSTR: {e}"),
        })?;
        let key_info = parse_key_info_reply(KEY_PSTR, &out).map_err(|e| match e {
            SmcError::Result { code: 0x84, .. } => SensorError::Unavailable {
                sensor: "pstr".into(),
                reason:
                    "this Mac's SMC has no PSTR key (total system power); use exec:CMD with an external meter"
                        .into(),
            },
            other => SensorError::Unavailable { sensor: "pstr".into(), reason: other.to_string() },
        })?;
        if key_info.data_type != TYPE_FLT || key_info.data_size != 4 {
            return Err(SensorError::Unavailable {
                sensor: "pstr".into(),
                reason: format!(
                    "SMC key PSTR has type {} and size {}, not flt with 4 bytes; refusing to guess its encoding",
                    key_info.data_type, key_info.data_size
                ),
            });
        }
        Ok(PstrSensor {
            transport,
            key_info,
            info: SensorInfo {
                kind: SensorKind::Pstr,
                spec: "pstr".into(),
                source: "smc-pstr".into(),
                device: format!("{device} key PSTR (flt, watts)"),
                live: true,
                program: None,
                notes: vec![
                    "PSTR is the SMC's total-system power estimate; its refresh period and averaging are not public".into(),
                ],
            },
        })
    }
}

impl<T: SmcTransport> PstrSensor<T> {
    /// Record the reader's provenance (source file hash and version) in the sensor info.
    pub fn with_provenance(mut self, provenance: ProgramProvenance) -> Self {
        self.info.program = Some(provenance);
        self
    }
}

/// Provenance of the in-process IOKit reader: the repository path and lowercase-hex sha256 of
/// its source file, and the crate version it was built as. `command` says what it does.
pub fn reader_provenance(source_path: &str, source: &[u8], version: &str) -> ProgramProvenance {
    use sha2::{Digest, Sha256};
    ProgramProvenance {
        command: format!(
            "in-process IOKit reader: {SMC_KEYS_ENDPOINT} (by name, else among class {SMC_SERVICE_CLASS}), IOConnectCallStructMethod selector {SMC_SELECTOR}, key info then bytes of PSTR, read-only"
        ),
        executable: Some(std::path::PathBuf::from(source_path)),
        sha256: Some(hex(&Sha256::digest(source))),
        version: Some(format!("laya-bench {version}")),
        missing_reasons: Vec::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl<T: SmcTransport> Sensor for PstrSensor<T> {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        let (info, bytes) = read_key(&mut self.transport, KEY_PSTR, Some(self.key_info))
            .map_err(|e| SensorError::ReadFailed { sensor: "pstr".into(), detail: e.to_string() })?;
        let watts = decode_pstr_watts(&info, &bytes).map_err(|e| SensorError::Malformed {
            sensor: "pstr".into(),
            detail: e.to_string(),
            raw: hex(&bytes),
        })?;
        let mut r = Reading::power_w("system", f64::from(watts));
        r.raw = Some(format!("PSTR flt {}", hex(&bytes)));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The C layout from docs/formats.md §1.2, to pin the byte offsets used above.
    #[repr(C)]
    struct CVers {
        major: u8,
        minor: u8,
        build: u8,
        reserved: u8,
        release: u16,
    }
    #[repr(C)]
    struct CPLimit {
        version: u16,
        length: u16,
        cpu: u32,
        gpu: u32,
        mem: u32,
    }
    #[repr(C)]
    struct CKeyInfo {
        data_size: u32,
        data_type: u32,
        data_attributes: u8,
    }
    #[repr(C)]
    struct CKeyData {
        key: u32,
        vers: CVers,
        p_limit: CPLimit,
        key_info: CKeyInfo,
        result: u8,
        status: u8,
        data8: u8,
        data32: u32,
        bytes: [u8; 32],
    }

    #[test]
    fn byte_offsets_match_the_c_struct_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<CKeyData>(), PARAM_SIZE);
        assert_eq!(size_of::<CKeyInfo>(), 12);
        assert_eq!(offset_of!(CKeyData, key), OFF_KEY);
        assert_eq!(offset_of!(CKeyData, vers), OFF_VERS);
        assert_eq!(offset_of!(CKeyData, p_limit), OFF_P_LIMIT);
        assert_eq!(offset_of!(CKeyData, key_info), OFF_DATA_SIZE);
        assert_eq!(offset_of!(CKeyData, key_info) + offset_of!(CKeyInfo, data_type), OFF_DATA_TYPE);
        assert_eq!(
            offset_of!(CKeyData, key_info) + offset_of!(CKeyInfo, data_attributes),
            OFF_DATA_ATTRIBUTES
        );
        assert_eq!(offset_of!(CKeyData, result), OFF_RESULT);
        assert_eq!(offset_of!(CKeyData, status), OFF_STATUS);
        assert_eq!(offset_of!(CKeyData, data8), OFF_DATA8);
        assert_eq!(offset_of!(CKeyData, data32), OFF_DATA32);
        assert_eq!(offset_of!(CKeyData, bytes), OFF_BYTES);
        // Keep the unused fields "read" for the compiler.
        let _ = |c: CKeyData| {
            (
                c.vers.major,
                c.vers.minor,
                c.vers.build,
                c.vers.reserved,
                c.vers.release,
                c.p_limit.version,
                c.p_limit.length,
                c.p_limit.cpu,
                c.p_limit.gpu,
                c.p_limit.mem,
                c.key_info.data_size,
                c.key_info.data_type,
                c.key_info.data_attributes,
                c.key,
                c.result,
                c.status,
                c.data8,
                c.data32,
                c.bytes,
            )
        };
    }

    #[test]
    fn fourcc_packs_most_significant_first() {
        assert_eq!(KEY_PSTR.0, 0x5053_5452);
        assert_eq!(TYPE_FLT.0, 0x666C_7420);
        assert_eq!(TYPE_FLT.0, 1_718_383_648);
        assert_eq!(KEY_COUNT.0, 0x234B_4559);
        assert_eq!(FourCc::parse("PSTR"), Ok(KEY_PSTR));
        assert_eq!(FourCc::parse("flt "), Ok(TYPE_FLT));
        assert_eq!(TYPE_FLT.to_string(), "flt ");
        assert_eq!(FourCc(0x4142_0043).to_string(), "AB\\x00C");
        for bad in ["flt", "PSTRX", "", "ab\u{e9}"] {
            assert!(matches!(FourCc::parse(bad), Err(SmcError::BadFourCc { .. })), "{bad:?}");
        }
    }

    #[test]
    fn key_info_request_bytes() {
        let b = key_info_request(KEY_PSTR);
        let mut want = [0u8; 80];
        // "PSTR" as a native (little-endian) u32: R T S P.
        want[0..4].copy_from_slice(&[0x52, 0x54, 0x53, 0x50]);
        want[42] = 9;
        assert_eq!(b, want);
    }

    #[test]
    fn read_bytes_request_carries_size_and_type() {
        let info = KeyInfo { data_size: 4, data_type: TYPE_FLT, data_attributes: 0xD0 };
        let b = read_bytes_request(KEY_PSTR, &info).unwrap();
        let mut want = [0u8; 80];
        want[0..4].copy_from_slice(&[0x52, 0x54, 0x53, 0x50]);
        want[28..32].copy_from_slice(&[4, 0, 0, 0]);
        // "flt " as a native u32: ' ' t l f.
        want[32..36].copy_from_slice(&[0x20, 0x74, 0x6C, 0x66]);
        want[36] = 0xD0;
        want[42] = 5;
        assert_eq!(b, want);
        let too_big = KeyInfo { data_size: 33, ..info };
        assert!(matches!(
            read_bytes_request(KEY_PSTR, &too_big),
            Err(SmcError::DataTooLarge { data_size: 33, .. })
        ));
    }

    #[test]
    fn key_from_index_request_bytes() {
        let b = key_from_index_request(0x0102_0304);
        let mut want = [0u8; 80];
        want[42] = 8;
        want[44..48].copy_from_slice(&[4, 3, 2, 1]);
        assert_eq!(b, want);
    }

    #[test]
    fn encode_decode_round_trip_every_field() {
        let p = SmcParam {
            key: FourCc::from_bytes(*b"TC0P"),
            vers: Vers { major: 1, minor: 2, build: 3, reserved: 4, release: 0x0506 },
            p_limit: PLimit { version: 7, length: 8, cpu_plimit: 9, gpu_plimit: 10, mem_plimit: 11 },
            key_info: KeyInfo {
                data_size: 2,
                data_type: FourCc::from_bytes(*b"sp78"),
                data_attributes: 0x80,
            },
            result: 0,
            status: 12,
            data8: 5,
            data32: 13,
            bytes: std::array::from_fn(|i| i as u8),
        };
        let b = p.encode();
        assert_eq!(b[10], 0, "padding after vers");
        assert_eq!(b[11], 0, "padding after vers");
        assert_eq!(&b[37..40], &[0, 0, 0], "padding inside key_info");
        assert_eq!(b[43], 0, "padding before data32");
        assert_eq!(SmcParam::decode(&b), Ok(p));
    }

    #[test]
    fn decode_rejects_wrong_buffer_sizes() {
        assert_eq!(SmcParam::decode(&[0u8; 79]), Err(SmcError::BufferSize { expected: 80, got: 79 }));
        assert!(SmcParam::decode(&[0u8; 81]).is_err());
    }

    fn reply(result: u8, info: Option<KeyInfo>, payload: &[u8]) -> [u8; 80] {
        let mut b = [0u8; 80];
        if let Some(i) = info {
            b[28..32].copy_from_slice(&i.data_size.to_le_bytes());
            b[32..36].copy_from_slice(&i.data_type.0.to_le_bytes());
            b[36] = i.data_attributes;
        }
        b[40] = result;
        b[48..48 + payload.len()].copy_from_slice(payload);
        b
    }

    #[test]
    fn key_info_reply_decodes_and_nonzero_result_is_an_error() {
        let info = KeyInfo { data_size: 4, data_type: TYPE_FLT, data_attributes: 0x80 };
        assert_eq!(parse_key_info_reply(KEY_PSTR, &reply(0, Some(info), &[])), Ok(info));
        let e = parse_key_info_reply(KEY_PSTR, &reply(0x84, None, &[])).unwrap_err();
        assert_eq!(e, SmcError::Result { key: KEY_PSTR, code: 0x84, meaning: "key not found" });
        assert_eq!(e.to_string(), "SMC result 0x84 (key not found) for key PSTR");
        let e = parse_key_info_reply(KEY_PSTR, &reply(0x85, None, &[])).unwrap_err();
        assert!(e.to_string().contains("key not readable"));
    }

    #[test]
    fn read_bytes_reply_returns_exactly_data_size_bytes() {
        let info = KeyInfo { data_size: 4, data_type: TYPE_FLT, data_attributes: 0 };
        let watts = 30.75f32.to_le_bytes();
        let mut payload = watts.to_vec();
        payload.extend_from_slice(&[0xAA; 4]); // trailing junk beyond data_size is ignored
        let b = reply(0, None, &payload);
        assert_eq!(parse_read_bytes_reply(KEY_PSTR, &info, &b), Ok(watts.to_vec()));
        assert!(matches!(
            parse_read_bytes_reply(KEY_PSTR, &info, &reply(0xB7, None, &[])),
            Err(SmcError::Result { code: 0xB7, .. })
        ));
    }

    #[test]
    fn key_from_index_reply_gives_the_key_name() {
        let mut b = reply(0, None, &[]);
        b[0..4].copy_from_slice(&KEY_PSTR.0.to_le_bytes());
        assert_eq!(parse_key_from_index_reply(3, &b), Ok(KEY_PSTR));
        assert!(matches!(
            parse_key_from_index_reply(99_999, &reply(0xB8, None, &[])),
            Err(SmcError::IndexResult { index: 99_999, code: 0xB8, meaning: "key index out of range" })
        ));
    }

    #[test]
    fn result_code_meanings() {
        let cases = [
            (0x00, "success"),
            (0x01, "error"),
            (0x80, "communication collision"),
            (0x81, "spurious data"),
            (0x82, "bad command"),
            (0x83, "bad parameter"),
            (0x84, "key not found"),
            (0x85, "key not readable"),
            (0x86, "key not writable"),
            (0x87, "key size mismatch"),
            (0x88, "framing error"),
            (0x89, "bad argument"),
            (0xB7, "timeout"),
            (0xB8, "key index out of range"),
            (0x42, "unknown SMC result code"),
        ];
        for (code, m) in cases {
            assert_eq!(SmcResult::meaning(code), m, "{code:#x}");
        }
        assert_eq!(SmcResult::KEY_NOT_FOUND, 132);
    }

    #[test]
    fn kern_return_codes_map_to_errors() {
        assert_eq!(check_kern_return("IOServiceOpen", 0), Ok(()));
        let e = check_kern_return("IOConnectCallStructMethod", 0xE000_02C2u32 as i32).unwrap_err();
        assert_eq!(
            e.to_string(),
            "IOKit IOConnectCallStructMethod failed: 0xe00002c2 kIOReturnBadArgument (the struct must be exactly 80 bytes)"
        );
        for (code, needle) in [
            (0xE000_02BCu32, "kIOReturnError"),
            (0xE000_02C0, "NoDevice"),
            (0xE000_02C1, "NotPrivileged"),
            (0xE000_02C7, "Unsupported"),
            (0xE000_02C9, "InternalError"),
            (0xE000_02CD, "NotOpen"),
            (0xE000_02D5, "Busy"),
            (0xE000_02D6, "Timeout"),
            (0xE000_02E2, "NotPermitted"),
            (0xE000_02F0, "NotFound"),
            (0x1000_0003, "unknown"),
        ] {
            assert!(io_return_meaning(code as i32).contains(needle), "{code:#x}");
        }
    }

    fn t(s: &str) -> FourCc {
        FourCc::parse(s).unwrap()
    }

    #[test]
    fn decodes_every_listed_data_type() {
        // flt: little-endian f32.
        assert_eq!(decode_value(t("flt "), &[0x00, 0x00, 0xF6, 0x41]), Ok(SmcValue::Float(30.75)));
        // Unsigned big-endian.
        assert_eq!(decode_value(t("ui8 "), &[0xFE]), Ok(SmcValue::Unsigned(254)));
        assert_eq!(decode_value(t("ui16"), &[0x01, 0x02]), Ok(SmcValue::Unsigned(258)));
        assert_eq!(decode_value(t("ui32"), &[0x00, 0x00, 0x04, 0xD2]), Ok(SmcValue::Unsigned(1234)));
        assert_eq!(decode_value(t("ui64"), &[0, 0, 0, 1, 0, 0, 0, 0]), Ok(SmcValue::Unsigned(1 << 32)));
        // Signed big-endian.
        assert_eq!(decode_value(t("si8 "), &[0xFF]), Ok(SmcValue::Signed(-1)));
        assert_eq!(decode_value(t("si16"), &[0xFF, 0xFE]), Ok(SmcValue::Signed(-2)));
        assert_eq!(decode_value(t("si32"), &[0x80, 0, 0, 0]), Ok(SmcValue::Signed(i64::from(i32::MIN))));
        // sp78: i16 BE / 256.
        assert_eq!(decode_value(t("sp78"), &[0xFF, 0x80]), Ok(SmcValue::Fixed(-0.5)));
        assert_eq!(decode_value(t("sp78"), &[0x2A, 0x40]), Ok(SmcValue::Fixed(42.25)));
        // fpXY: u16 BE / 2^Y for every listed variant.
        let raw = [0x1E, 0x80]; // 7808
        for (ty, div) in [
            ("fp1f", 32768.0),
            ("fp2e", 16384.0),
            ("fp4c", 4096.0),
            ("fp5b", 2048.0),
            ("fp6a", 1024.0),
            ("fp79", 512.0),
            ("fp88", 256.0),
            ("fpa6", 64.0),
            ("fpc4", 16.0),
            ("fpe2", 4.0),
        ] {
            assert_eq!(decode_value(t(ty), &raw), Ok(SmcValue::Fixed(7808.0 / div)), "{ty}");
        }
        assert_eq!(decode_value(t("fp88"), &raw), Ok(SmcValue::Fixed(30.5)));
        // fpe2 equals macmon's (b0 << 6) | (b1 >> 2) on whole values.
        assert_eq!(
            decode_value(t("fpe2"), &[0x01, 0x90]),
            Ok(SmcValue::Fixed(f64::from((0x01u32 << 6) | (0x90 >> 2))))
        );
        // flag, text, opaque.
        assert_eq!(decode_value(t("flag"), &[1]), Ok(SmcValue::Flag(true)));
        assert_eq!(decode_value(t("flag"), &[0]), Ok(SmcValue::Flag(false)));
        assert_eq!(decode_value(t("flag"), &[2]), Err(SmcError::BadFlag { value: 2 }));
        assert_eq!(decode_value(t("ch8*"), b"M3\0\0"), Ok(SmcValue::Text("M3".into())));
        assert_eq!(decode_value(t("hex_"), &[0xDE, 0xAD]), Ok(SmcValue::Bytes(vec![0xDE, 0xAD])));
        assert_eq!(decode_value(t("{jst"), &[1, 2, 3]), Ok(SmcValue::Bytes(vec![1, 2, 3])));
        // fp with digits that do not add up is not guessed at.
        assert_eq!(decode_value(t("fp99"), &[1, 2]), Ok(SmcValue::Bytes(vec![1, 2])));
    }

    #[test]
    fn wrong_lengths_are_errors_not_guesses() {
        assert_eq!(
            decode_value(t("flt "), &[0, 0, 0]),
            Err(SmcError::SizeMismatch { data_type: TYPE_FLT, expected: 4, got: 3 })
        );
        assert!(decode_value(t("ui16"), &[1]).is_err());
        assert!(decode_value(t("sp78"), &[1, 2, 3]).is_err());
        assert!(decode_value(t("flag"), &[]).is_err());
    }

    #[test]
    fn pstr_decodes_little_endian_watts_and_refuses_other_types() {
        let info = KeyInfo { data_size: 4, data_type: TYPE_FLT, data_attributes: 0 };
        assert_eq!(decode_pstr_watts(&info, &74.47f32.to_le_bytes()), Ok(74.47));
        // Big-endian bytes are not silently swapped back: they decode to a tiny value that the
        // energy rules reject.
        let be = decode_pstr_watts(&info, &30.75f32.to_be_bytes()).unwrap();
        assert!(be.abs() < 1e-30, "{be}");
        let wrong = KeyInfo { data_type: t("ui32"), ..info };
        assert!(matches!(decode_pstr_watts(&wrong, &[0, 0, 0, 1]), Err(SmcError::WrongType { .. })));
        let short = KeyInfo { data_size: 2, ..info };
        assert!(decode_pstr_watts(&short, &[0, 0]).is_err());
    }

    /// An in-memory SMC answering the two-step read protocol.
    struct FakeSmc {
        keys: HashMap<FourCc, (KeyInfo, Vec<u8>)>,
        calls: Vec<u8>,
        fail_reads_with: Option<SmcError>,
    }

    impl SmcTransport for FakeSmc {
        fn call(&mut self, input: &[u8; PARAM_SIZE]) -> Result<[u8; PARAM_SIZE], SmcError> {
            let p = SmcParam::decode(input)?;
            self.calls.push(p.data8);
            let mut out = SmcParam::default();
            match (p.data8, self.keys.get(&p.key)) {
                (9, Some((info, _))) => out.key_info = *info,
                (5, Some((info, bytes))) => {
                    if let Some(e) = &self.fail_reads_with {
                        return Err(e.clone());
                    }
                    // The SMC answers "size mismatch" when the request's data_size is wrong.
                    if p.key_info.data_size != info.data_size {
                        out.result = 0x87;
                    } else {
                        out.bytes[..bytes.len()].copy_from_slice(bytes);
                    }
                }
                (_, None) => out.result = 0x84,
                _ => out.result = 0x82,
            }
            Ok(out.encode())
        }
    }

    fn fake(pstr: Option<(KeyInfo, Vec<u8>)>) -> FakeSmc {
        let mut keys = HashMap::new();
        if let Some(v) = pstr {
            keys.insert(KEY_PSTR, v);
        }
        FakeSmc { keys, calls: vec![], fail_reads_with: None }
    }

    fn flt4() -> KeyInfo {
        KeyInfo { data_size: 4, data_type: TYPE_FLT, data_attributes: 0x80 }
    }

    #[test]
    fn pstr_sensor_reads_watts_with_key_info_cached() {
        let smc = fake(Some((flt4(), 61.39f32.to_le_bytes().to_vec())));
        let mut s = PstrSensor::open(smc, "AppleSMCKeysEndpoint").unwrap();
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(f64::from(61.39f32)));
        assert_eq!(r.channels[0].channel, "system");
        assert_eq!(r.raw.as_deref(), Some("PSTR flt 5c8f7542"));
        s.read().unwrap();
        // One key-info call at open, then one read-bytes call per read.
        assert_eq!(s.transport.calls, vec![9, 5, 5]);
        assert_eq!(s.info().source, "smc-pstr");
        assert!(s.info().live);
    }

    #[test]
    fn pstr_sensor_missing_key_is_unavailable_with_advice() {
        let e = PstrSensor::open(fake(None), "AppleSMCKeysEndpoint").err().unwrap();
        assert!(matches!(e, SensorError::Unavailable { .. }));
        assert!(e.to_string().contains("no PSTR key"), "{e}");
        assert!(e.to_string().contains("exec:CMD"), "{e}");
    }

    #[test]
    fn pstr_sensor_refuses_a_non_float_key() {
        let info = KeyInfo { data_size: 2, data_type: t("fp88"), data_attributes: 0 };
        let e = PstrSensor::open(fake(Some((info, vec![0, 1]))), "x").err().unwrap();
        assert!(e.to_string().contains("type fp88 and size 2"), "{e}");
    }

    #[test]
    fn pstr_read_failure_is_a_fault_not_a_value() {
        let mut smc = fake(Some((flt4(), 10f32.to_le_bytes().to_vec())));
        smc.fail_reads_with = Some(SmcError::KernReturn {
            call: "IOConnectCallStructMethod",
            code: 0xE000_02D6,
            meaning: io_return_meaning(0xE000_02D6u32 as i32),
        });
        let mut s = PstrSensor::open(smc, "x").unwrap();
        let e = s.read().unwrap_err();
        assert!(!e.is_fatal());
        assert!(e.to_string().contains("kIOReturnTimeout"), "{e}");
    }

    #[test]
    fn read_key_without_cache_does_both_round_trips() {
        let mut smc = fake(Some((flt4(), 5f32.to_le_bytes().to_vec())));
        let (info, bytes) = read_key(&mut smc, KEY_PSTR, None).unwrap();
        assert_eq!(info, flt4());
        assert_eq!(bytes, 5f32.to_le_bytes().to_vec());
        assert_eq!(smc.calls, vec![9, 5]);
        // A wrong cached size is answered with "key size mismatch".
        let wrong = KeyInfo { data_size: 2, ..flt4() };
        assert!(matches!(
            read_key(&mut smc, KEY_PSTR, Some(wrong)),
            Err(SmcError::Result { code: 0x87, .. })
        ));
    }

    #[test]
    fn reader_provenance_hashes_the_source_and_names_the_version() {
        let p = reader_provenance("src/power/smc_iokit.rs", b"abc", "1.2.3");
        // sha256("abc") from FIPS 180-2, appendix B.1.
        assert_eq!(
            p.sha256.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(p.version.as_deref(), Some("laya-bench 1.2.3"));
        assert_eq!(p.executable, Some(std::path::PathBuf::from("src/power/smc_iokit.rs")));
        assert!(
            p.command.contains("AppleSMCKeysEndpoint") && p.command.contains("selector 2"),
            "{}",
            p.command
        );
        assert!(p.missing_reasons.is_empty());
        let other = reader_provenance("src/power/smc_iokit.rs", b"abd", "1.2.3");
        assert_ne!(other.sha256, p.sha256);
    }

    #[test]
    fn pstr_sensor_carries_the_reader_provenance() {
        let smc = fake(Some((flt4(), 7f32.to_le_bytes().to_vec())));
        let s = PstrSensor::open(smc, "x").unwrap();
        assert_eq!(s.info().program, None);
        let s = s.with_provenance(reader_provenance("f.rs", b"", "0.1.0"));
        let prog = s.info().program.clone().expect("provenance recorded");
        assert_eq!(
            prog.sha256.as_deref(),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
    }

    #[test]
    fn the_endpoint_c_string_matches_the_name() {
        assert_eq!(SMC_KEYS_ENDPOINT_C.to_str(), Ok(SMC_KEYS_ENDPOINT));
        assert_eq!(SMC_SERVICE_CLASS_C.to_str(), Ok(SMC_SERVICE_CLASS));
    }

    #[test]
    fn registry_names_stop_at_the_first_nul() {
        let mut buf = [0u8; IO_NAME_LEN];
        buf[..20].copy_from_slice(b"AppleSMCKeysEndpoint");
        assert_eq!(registry_name(&buf).as_deref(), Some("AppleSMCKeysEndpoint"));
        assert_eq!(registry_name(b"SMC\0junk").as_deref(), Some("SMC"));
        // No NUL at all: the whole buffer.
        assert_eq!(registry_name(b"AppleSMC").as_deref(), Some("AppleSMC"));
        assert_eq!(registry_name(&[0u8; IO_NAME_LEN]), None);
        assert_eq!(registry_name(b""), None);
        assert_eq!(registry_name(b"a\xffb\0").as_deref(), Some("a\u{fffd}b"));
    }

    #[test]
    fn the_keys_endpoint_is_picked_by_exact_name() {
        // The class's services on Apple silicon, in a made-up iteration order.
        let names = [Some("AppleSMC"), None, Some("AppleSMCKeysEndpoint"), Some("AppleSMCKeysEndpoint")];
        assert_eq!(pick_keys_endpoint(&names), Some(2));
        assert_eq!(pick_keys_endpoint(&[Some("AppleSMCKeysEndpoint".to_string())]), Some(0));
        // An Intel Mac's SMC, a prefix, a different case: none of them.
        assert_eq!(
            pick_keys_endpoint(&[Some("SMC"), Some("AppleSMCKeys"), Some("applesmckeysendpoint")]),
            None
        );
        assert_eq!(pick_keys_endpoint::<&str>(&[]), None);
        assert_eq!(pick_keys_endpoint::<&str>(&[None, None]), None);
    }

    #[test]
    fn a_missing_endpoint_names_its_likely_cause_and_the_alternative() {
        assert_eq!(NoEndpointCause::infer("aarch64", Some(true)), NoEndpointCause::VirtualMachine);
        assert_eq!(NoEndpointCause::infer("x86_64", Some(true)), NoEndpointCause::VirtualMachine);
        assert_eq!(NoEndpointCause::infer("x86_64", Some(false)), NoEndpointCause::IntelMac);
        assert_eq!(NoEndpointCause::infer("x86_64", None), NoEndpointCause::IntelMac);
        assert_eq!(NoEndpointCause::infer("aarch64", Some(false)), NoEndpointCause::Unknown);
        assert_eq!(NoEndpointCause::infer("aarch64", None), NoEndpointCause::Unknown);

        let vm = SmcError::NoKeysEndpoint { class_matches: vec![], cause: NoEndpointCause::VirtualMachine };
        let text = vm.to_string();
        assert!(text.starts_with("no AppleSMCKeysEndpoint service (name matching found none; no service of class AppleSMC either): this macOS runs in a virtual machine"), "{text}");
        assert!(text.contains("exposes no PSTR") && text.contains("--sensor exec:CMD"), "{text}");
        assert!(!text.contains("an Apple silicon Mac is needed"), "{text}");

        let intel = SmcError::NoKeysEndpoint {
            class_matches: vec!["SMC".into(), "?".into()],
            cause: NoEndpointCause::IntelMac,
        };
        let text = intel.to_string();
        assert!(text.contains("(name matching found none; class AppleSMC matched SMC, ? instead)"), "{text}");
        assert!(
            text.contains("Intel Mac") && text.contains("powermetrics") && text.contains("exec:CMD"),
            "{text}"
        );

        let unknown = SmcError::NoKeysEndpoint { class_matches: vec![], cause: NoEndpointCause::Unknown };
        let text = unknown.to_string();
        assert!(text.contains("virtual machine") && text.contains("Intel Mac"), "{text}");
        assert!(text.contains("exec:CMD"), "{text}");
    }

    #[test]
    fn open_failures_say_what_to_use_once() {
        let missing = SmcError::NoKeysEndpoint { class_matches: vec![], cause: NoEndpointCause::Unknown };
        let reason = open_failure_reason(&missing);
        assert_eq!(reason, missing.to_string());
        assert_eq!(reason.matches("exec:CMD").count(), 1, "{reason}");
        let refused = SmcError::KernReturn {
            call: "IOServiceOpen",
            code: 0xE000_02E2,
            meaning: io_return_meaning(0xE000_02E2u32 as i32),
        };
        assert_eq!(
            open_failure_reason(&refused),
            "cannot open the SMC (AppleSMCKeysEndpoint): IOKit IOServiceOpen failed: 0xe00002e2 \
             kIOReturnNotPermitted (sandbox or entitlement); use --sensor exec:CMD with an external meter"
        );
    }

    #[test]
    fn the_device_text_says_how_the_endpoint_was_found() {
        assert_eq!(EndpointFound::ByName.device(), "AppleSMCKeysEndpoint");
        assert!(EndpointFound::ByClass.device().starts_with("AppleSMCKeysEndpoint (found among"));
    }
}
