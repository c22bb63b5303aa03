//! Which NVRTC compiles the programs, checked against the driver, so that
//! one build runs with CUDA 13 or CUDA 12 (12.4 or newer).
//!
//! The library is chosen once per process: the one named by
//! [`NVRTC_ENV`] if set, else the newest CUDA major version found on the
//! loader's path (`libnvrtc.so.13`, then `libnvrtc.so.12`, then
//! `libnvrtc.so`). A candidate is refused when the driver could not load
//! what it makes ([`fit`]); when none is usable the reasons for each are in
//! [`ScanError::NoNvrtc`]. NVRTC is called through this module's own table
//! of its C functions, so the library chosen is the one that compiles
//! (cudarc's NVRTC bindings load the first library on their own list).

use crate::error::{Result, ScanError};
use cudarc::nvrtc::sys::nvrtcProgram;
use kernels_gen::Arch;
use std::ffi::{c_char, c_int, CString, OsStr, OsString};
use std::fmt;
use std::sync::OnceLock;

/// The environment variable naming the NVRTC library to use (a path, or a
/// name the loader finds: `libnvrtc.so.12`). It is still checked against
/// the driver.
pub const NVRTC_ENV: &str = "GPU_SCAN_NVRTC";

/// A CUDA version, as NVRTC and the driver report theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    /// Major version (12, 13).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl CudaVersion {
    /// The oldest NVRTC the generated programs compile with.
    pub const OLDEST_NVRTC: CudaVersion = CudaVersion {
        major: 12,
        minor: 4,
    };

    /// The version `cuDriverGetVersion` reports as `1000 * major + 10 *
    /// minor` (12040 is 12.4); `None` for 0 or less (no driver).
    pub fn from_driver(v: i32) -> Option<CudaVersion> {
        (v > 0).then_some(CudaVersion {
            major: v as u32 / 1000,
            minor: (v as u32 % 1000) / 10,
        })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What a driver can load of an NVRTC's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// CUBINs and PTX: NVRTC is no newer than the driver (or there is no
    /// driver, and nothing is loaded).
    Any,
    /// CUBINs only: NVRTC has the driver's major version but a newer minor
    /// one. CUDA's minor version compatibility covers machine code; PTX
    /// of a newer ISA the driver refuses to compile.
    CubinOnly,
}

/// Whether a driver of version `driver` (`None`: no driver) can load what
/// NVRTC `nvrtc` makes, or why not.
pub fn fit(nvrtc: CudaVersion, driver: Option<CudaVersion>) -> std::result::Result<Fit, String> {
    if nvrtc < CudaVersion::OLDEST_NVRTC {
        return Err(format!(
            "NVRTC {nvrtc} is older than {}, the oldest the generated programs compile with",
            CudaVersion::OLDEST_NVRTC
        ));
    }
    let Some(driver) = driver else {
        return Ok(Fit::Any);
    };
    if nvrtc <= driver {
        Ok(Fit::Any)
    } else if nvrtc.major == driver.major {
        Ok(Fit::CubinOnly)
    } else {
        Err(format!(
            "NVRTC {nvrtc} makes code the CUDA {driver} driver cannot load (a CUDA {}.x driver, or an NVRTC of \
             CUDA {}.x, is needed)",
            nvrtc.major, driver.major
        ))
    }
}

/// The NVRTC libraries to try, newest CUDA first, as the loader names them
/// on this platform.
pub fn library_names() -> Vec<OsString> {
    let names: &[&str] = if cfg!(windows) {
        &["nvrtc64_130_0.dll", "nvrtc64_120_0.dll"]
    } else {
        &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    };
    names.iter().map(OsString::from).collect()
}

/// Picks a candidate the driver can use: the first that fits fully
/// ([`Fit::Any`]), else the first that makes CUBINs it can load
/// ([`Fit::CubinOnly`]). `candidates` are the libraries tried, in order,
/// each with its version or why it could not be loaded; the answer is the
/// index and fit, or every candidate's refusal.
pub fn choose(
    candidates: &[(String, std::result::Result<CudaVersion, String>)],
    driver: Option<CudaVersion>,
) -> std::result::Result<(usize, Fit), Vec<String>> {
    let mut refusals = Vec::new();
    let mut cubin_only = None;
    for (i, (name, version)) in candidates.iter().enumerate() {
        match version.clone().and_then(|v| fit(v, driver)) {
            Ok(Fit::Any) => return Ok((i, Fit::Any)),
            Ok(Fit::CubinOnly) => {
                cubin_only.get_or_insert(i);
            }
            Err(why) => refusals.push(format!("{name}: {why}")),
        }
    }
    cubin_only.map(|i| (i, Fit::CubinOnly)).ok_or(refusals)
}

/// NVRTC's status code, read as the C `int` it is (a newer NVRTC may
/// return a code an older enum lacks); 0 is success.
type Status = c_int;
const SUCCESS: Status = 0;

/// A status as text: NVRTC's name for the codes of 12.4 to 13.0.
fn status_name(status: Status) -> String {
    const NAMES: [&str; 18] = [
        "NVRTC_SUCCESS",
        "NVRTC_ERROR_OUT_OF_MEMORY",
        "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        "NVRTC_ERROR_INVALID_INPUT",
        "NVRTC_ERROR_INVALID_PROGRAM",
        "NVRTC_ERROR_INVALID_OPTION",
        "NVRTC_ERROR_COMPILATION",
        "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
        "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
        "NVRTC_ERROR_INTERNAL_ERROR",
        "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
        "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
        "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED",
        "NVRTC_ERROR_PCH_CREATE",
        "NVRTC_ERROR_CANCELLED",
        "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
    ];
    usize::try_from(status)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("NVRTC status {status}"), |name| name.to_string())
}

type CreateProgram = unsafe extern "C" fn(
    *mut nvrtcProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> Status;
type CompileProgram = unsafe extern "C" fn(nvrtcProgram, c_int, *const *const c_char) -> Status;
type DestroyProgram = unsafe extern "C" fn(*mut nvrtcProgram) -> Status;
type SizeOf = unsafe extern "C" fn(nvrtcProgram, *mut usize) -> Status;
type BytesOf = unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> Status;

/// The C functions of NVRTC this crate calls.
struct Functions {
    create: CreateProgram,
    compile: CompileProgram,
    destroy: DestroyProgram,
    log_size: SizeOf,
    log: BytesOf,
    cubin_size: SizeOf,
    cubin: BytesOf,
    ptx_size: SizeOf,
    ptx: BytesOf,
}

/// What the runtime asks of the NVRTC in use when it picks a compile
/// target: a trait so that the choice is tested without a library.
pub(crate) trait NvrtcFacts {
    /// NVRTC's version.
    fn version(&self) -> CudaVersion;
    /// What the driver can load of its output.
    fn fit(&self) -> Fit;
    /// The real architectures it compiles for.
    fn archs(&self) -> &[Arch];
}

impl NvrtcFacts for Nvrtc {
    fn version(&self) -> CudaVersion {
        self.version
    }
    fn fit(&self) -> Fit {
        self.fit
    }
    fn archs(&self) -> &[Arch] {
        &self.archs
    }
}

/// A loaded NVRTC library.
pub struct Nvrtc {
    // The functions point into the library: it is kept loaded with them.
    functions: Functions,
    _library: libloading::Library,
    name: String,
    version: CudaVersion,
    fit: Fit,
    archs: Vec<Arch>,
}

impl Nvrtc {
    /// Loads the library `name` and reads its version and architectures.
    fn load(name: &OsStr) -> std::result::Result<Nvrtc, String> {
        // SAFETY: loading NVRTC runs no initialisation with requirements
        // on the caller; the library stays loaded for the process.
        let library = unsafe { libloading::Library::new(name) }.map_err(|e| with_cause(&e))?;
        // SAFETY: each symbol is NVRTC's function of that name, whose C
        // signature (NVRTC 12 and 13 alike) is the type it is read as.
        unsafe {
            /// # Safety
            /// `T` is the true type of `symbol`.
            unsafe fn get<T: Copy>(
                library: &libloading::Library,
                symbol: &str,
            ) -> std::result::Result<T, String> {
                // SAFETY: the caller names the symbol's true type.
                unsafe { library.get::<T>(symbol.as_bytes()) }
                    .map(|s| *s)
                    .map_err(|e| format!("no {symbol} in it ({})", with_cause(&e)))
            }
            let version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status =
                get(&library, "nvrtcVersion")?;
            let (mut major, mut minor) = (0, 0);
            if version(&mut major, &mut minor) != SUCCESS {
                return Err("nvrtcVersion failed".into());
            }
            let num_archs: unsafe extern "C" fn(*mut c_int) -> Status =
                get(&library, "nvrtcGetNumSupportedArchs")?;
            let archs_of: unsafe extern "C" fn(*mut c_int) -> Status =
                get(&library, "nvrtcGetSupportedArchs")?;
            let mut count = 0;
            if num_archs(&mut count) != SUCCESS || count <= 0 {
                return Err("nvrtcGetNumSupportedArchs failed".into());
            }
            let mut numbers = vec![0 as c_int; count as usize];
            if archs_of(numbers.as_mut_ptr()) != SUCCESS {
                return Err("nvrtcGetSupportedArchs failed".into());
            }
            let functions = Functions {
                create: get(&library, "nvrtcCreateProgram")?,
                compile: get(&library, "nvrtcCompileProgram")?,
                destroy: get(&library, "nvrtcDestroyProgram")?,
                log_size: get(&library, "nvrtcGetProgramLogSize")?,
                log: get(&library, "nvrtcGetProgramLog")?,
                cubin_size: get(&library, "nvrtcGetCUBINSize")?,
                cubin: get(&library, "nvrtcGetCUBIN")?,
                ptx_size: get(&library, "nvrtcGetPTXSize")?,
                ptx: get(&library, "nvrtcGetPTX")?,
            };
            Ok(Nvrtc {
                functions,
                _library: library,
                name: name.to_string_lossy().into_owned(),
                version: CudaVersion {
                    major: major.max(0) as u32,
                    minor: minor.max(0) as u32,
                },
                fit: Fit::Any,
                archs: supported_archs(&numbers),
            })
        }
    }

    /// The library as it was named when loaded.
    pub fn library(&self) -> &str {
        &self.name
    }

    /// NVRTC's version.
    pub fn version(&self) -> CudaVersion {
        self.version
    }

    /// What the driver can load of its output.
    pub fn fit(&self) -> Fit {
        self.fit
    }

    /// The real architectures it compiles for, from sm_75 up.
    pub fn archs(&self) -> &[Arch] {
        &self.archs
    }

    /// Compiles `source` (named `name` in NVRTC's messages) with
    /// `options`: the CUBIN's bytes, or the PTX's text without its NUL; or
    /// NVRTC's log.
    pub(crate) fn compile(
        &self,
        source: &str,
        name: &str,
        options: &[String],
        cubin: bool,
    ) -> std::result::Result<Vec<u8>, String> {
        let f = &self.functions;
        let src = CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
        let name = CString::new(name).map_err(|_| "the name holds a NUL byte".to_string())?;
        let options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| "an option holds a NUL byte".to_string())?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut program: nvrtcProgram = std::ptr::null_mut();
        // SAFETY: NUL-terminated source and name, no headers; NVRTC writes
        // the new program's handle.
        let status = unsafe {
            (f.create)(
                &mut program,
                src.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if status != SUCCESS {
            return Err(format!("nvrtcCreateProgram: {}", status_name(status)));
        }
        // Destroys the program however this function returns.
        struct Guard(nvrtcProgram, DestroyProgram);
        impl Drop for Guard {
            fn drop(&mut self) {
                // SAFETY: created above, destroyed once.
                let _ = unsafe { (self.1)(&mut self.0) };
            }
        }
        let guard = Guard(program, f.destroy);
        // SAFETY: a valid program; `option_ptrs` are NUL-terminated strings
        // that outlive the call.
        let status =
            unsafe { (f.compile)(guard.0, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        if status != SUCCESS {
            let log = self.bytes(guard.0, f.log_size, f.log).unwrap_or_default();
            let log = String::from_utf8_lossy(&log)
                .trim_end_matches('\0')
                .to_string();
            return Err(if log.is_empty() {
                status_name(status)
            } else {
                log
            });
        }
        if cubin {
            self.bytes(guard.0, f.cubin_size, f.cubin)
        } else {
            let mut ptx = self.bytes(guard.0, f.ptx_size, f.ptx)?;
            // NVRTC ends the PTX with a NUL: the text is what comes before.
            let end = ptx.iter().position(|&b| b == 0).unwrap_or(ptx.len());
            ptx.truncate(end);
            Ok(ptx)
        }
    }

    /// One of a compiled program's outputs: its size, then its bytes.
    fn bytes(
        &self,
        program: nvrtcProgram,
        size_of: SizeOf,
        bytes_of: BytesOf,
    ) -> std::result::Result<Vec<u8>, String> {
        let mut size = 0usize;
        // SAFETY: a compiled program; NVRTC writes the size.
        let status = unsafe { size_of(program, &mut size) };
        if status != SUCCESS {
            return Err(format!(
                "reading the output's size: {}",
                status_name(status)
            ));
        }
        if size <= 1 {
            // No image (a CUBIN asked of a program for a virtual
            // architecture), or PTX that is only its NUL.
            return Err("NVRTC returned an empty output".into());
        }
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds the `size` bytes NVRTC writes.
        let status = unsafe { bytes_of(program, bytes.as_mut_ptr().cast()) };
        if status != SUCCESS {
            return Err(format!("reading the output: {}", status_name(status)));
        }
        Ok(bytes)
    }
}

/// A libloading error with the loader's own message (`dlerror`'s:
/// "cannot open shared object file", "wrong ELF class"), which its
/// `Display` leaves out.
pub(crate) fn with_cause(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// The architectures of `nvrtcGetSupportedArchs` (75, 80, ... 120) from
/// sm_75 up.
fn supported_archs(numbers: &[c_int]) -> Vec<Arch> {
    numbers
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| Arch {
            major: n as u32 / 10,
            minor: n as u32 % 10,
        })
        .filter(|a| *a >= Arch::MIN_SUPPORTED)
        .collect()
}

/// The driver's version, when a driver is installed.
fn driver_version() -> Option<CudaVersion> {
    if !crate::device::driver_present() {
        return None;
    }
    let mut v = 0;
    // SAFETY: the driver library loads (probed above); cuDriverGetVersion
    // needs no cuInit and writes one int.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return None;
    }
    CudaVersion::from_driver(v)
}

/// The NVRTC this process compiles with, chosen on first use, or why none
/// is usable ([`ScanError::NoNvrtc`]).
pub fn nvrtc() -> Result<&'static Nvrtc> {
    static CHOSEN: OnceLock<std::result::Result<Nvrtc, String>> = OnceLock::new();
    CHOSEN
        .get_or_init(|| {
            let driver = driver_version();
            let (names, named) = match std::env::var_os(NVRTC_ENV) {
                Some(name) if !name.is_empty() => (vec![name], true),
                _ => (library_names(), false),
            };
            let mut loaded = Vec::new();
            let mut candidates = Vec::new();
            for name in &names {
                let lib = Nvrtc::load(name);
                candidates.push((
                    name.to_string_lossy().into_owned(),
                    lib.as_ref().map(|l| l.version).map_err(|e| e.clone()),
                ));
                loaded.push(lib.ok());
                // A library that fits fully is taken: load no more.
                if matches!(choose(&candidates, driver), Ok((_, Fit::Any))) {
                    break;
                }
            }
            match choose(&candidates, driver) {
                Ok((i, fit)) => {
                    let mut nvrtc = loaded[i].take().expect("a chosen library was loaded");
                    nvrtc.fit = fit;
                    Ok(nvrtc)
                }
                Err(refusals) if named => Err(format!(
                    "{}; {NVRTC_ENV} named it: unset it to search the library path",
                    refusals.join("; ")
                )),
                Err(refusals) => Err(refusals.join("; ")),
            }
        })
        .as_ref()
        .map_err(|reason| ScanError::NoNvrtc {
            reason: reason.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32) -> CudaVersion {
        CudaVersion { major, minor }
    }

    #[test]
    fn driver_versions_read_as_cuda_reports_them() {
        assert_eq!(CudaVersion::from_driver(12040), Some(v(12, 4)));
        assert_eq!(CudaVersion::from_driver(13000), Some(v(13, 0)));
        assert_eq!(CudaVersion::from_driver(12090), Some(v(12, 9)));
        assert_eq!(CudaVersion::from_driver(0), None);
        assert_eq!(v(12, 9).to_string(), "12.9");
    }

    #[test]
    fn what_a_driver_can_load() {
        // No driver: only compiling, anything from 12.4 up.
        assert_eq!(fit(v(13, 0), None), Ok(Fit::Any));
        assert_eq!(fit(v(12, 4), None), Ok(Fit::Any));
        assert!(fit(v(12, 3), None).unwrap_err().contains("older than 12.4"));
        // The same or an older CUDA: CUBINs and PTX.
        assert_eq!(fit(v(13, 0), Some(v(13, 0))), Ok(Fit::Any));
        assert_eq!(fit(v(12, 9), Some(v(13, 0))), Ok(Fit::Any));
        assert_eq!(fit(v(12, 4), Some(v(12, 8))), Ok(Fit::Any));
        // A newer minor version of the driver's major one: CUBINs only.
        assert_eq!(fit(v(12, 9), Some(v(12, 4))), Ok(Fit::CubinOnly));
        assert_eq!(fit(v(13, 1), Some(v(13, 0))), Ok(Fit::CubinOnly));
        // A newer major version: nothing.
        let why = fit(v(13, 0), Some(v(12, 8))).unwrap_err();
        assert!(why.contains("CUDA 12.8 driver cannot load"), "{why}");
    }

    #[test]
    fn the_newest_usable_library_is_chosen() {
        let found = |version| Ok(version);
        let missing = || Err("cannot open shared object file".to_string());
        let both = [
            ("libnvrtc.so.13".to_string(), found(v(13, 0))),
            ("libnvrtc.so.12".to_string(), found(v(12, 9))),
        ];
        // A CUDA 13 driver takes NVRTC 13; a CUDA 12 driver NVRTC 12.
        assert_eq!(choose(&both, Some(v(13, 0))), Ok((0, Fit::Any)));
        assert_eq!(choose(&both, Some(v(12, 4))), Ok((1, Fit::CubinOnly)));
        assert_eq!(choose(&both, Some(v(12, 9))), Ok((1, Fit::Any)));
        // Only NVRTC 13 on a CUDA 12 machine: refused, saying why.
        let only_13 = [
            ("libnvrtc.so.13".to_string(), found(v(13, 0))),
            ("libnvrtc.so.12".to_string(), missing()),
        ];
        let refusals = choose(&only_13, Some(v(12, 8))).unwrap_err();
        assert_eq!(refusals.len(), 2);
        assert!(
            refusals[0].starts_with("libnvrtc.so.13: NVRTC 13.0 makes code"),
            "{refusals:?}"
        );
        assert!(refusals[1].contains("cannot open"), "{refusals:?}");
        // A library that fits fully is preferred to one that makes CUBINs
        // only, wherever it comes in the list.
        let newer_first = [
            ("libnvrtc.so.12".to_string(), found(v(12, 9))),
            ("libnvrtc.so".to_string(), found(v(12, 4))),
        ];
        assert_eq!(choose(&newer_first, Some(v(12, 4))), Ok((1, Fit::Any)));
        assert_eq!(
            choose(&newer_first[..1], Some(v(12, 4))),
            Ok((0, Fit::CubinOnly))
        );
        // Too old an NVRTC is skipped for a newer one further on.
        let old_first = [
            ("libnvrtc.so".to_string(), found(v(12, 2))),
            ("libnvrtc.so.12".to_string(), found(v(12, 6))),
        ];
        assert_eq!(choose(&old_first, Some(v(12, 6))), Ok((1, Fit::Any)));
    }

    #[test]
    fn supported_architectures_start_at_sm_75() {
        let archs = supported_archs(&[50, 52, 70, 75, 80, 86, 90, 100, 120]);
        assert_eq!(archs.first(), Some(&Arch::SM_75));
        assert!(archs.contains(&Arch::SM_90) && archs.contains(&Arch::SM_120));
        assert_eq!(archs.len(), 6);
    }
}
