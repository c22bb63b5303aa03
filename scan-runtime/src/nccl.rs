//! NCCL, loaded at run time as NVRTC is ([`crate::toolkit`]): the handful
//! of calls the distributed scan makes. Loaded by hand rather than through
//! cudarc's `nccl` module, whose loader looks for `libnccl.so` and
//! `libnccl.so.<CUDA major>` only and panics when neither is there: NCCL
//! ships as `libnccl.so.2` (its package, PyTorch's and PyPI's
//! `nvidia-nccl-cu12` wheel), and a missing library is a typed error here.

use crate::toolkit::with_cause;
use std::ffi::{c_char, c_int, c_void, CStr, OsString};
use std::sync::OnceLock;

/// The environment variable naming the NCCL library to load (a path or a
/// name the loader searches for), before `libnccl.so.2` and `libnccl.so`.
pub const NCCL_ENV: &str = "GPU_SCAN_NCCL";

/// `ncclComm_t`.
pub(crate) type RawComm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawId {
    pub(crate) internal: [c_char; 128],
}

/// `ncclUint8` of `ncclDataType_t`.
pub(crate) const NCCL_UINT8: c_int = 1;

/// The entry points, resolved once.
pub(crate) struct Nccl {
    _library: libloading::Library,
    /// Which library was loaded.
    pub(crate) name: String,
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_unique_id: unsafe extern "C" fn(*mut RawId) -> c_int,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawId, c_int) -> c_int,
    comm_init_all: unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> c_int,
    comm_abort: unsafe extern "C" fn(RawComm) -> c_int,
    all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        RawComm,
        *mut c_void,
    ) -> c_int,
    group_start: unsafe extern "C" fn() -> c_int,
    group_end: unsafe extern "C" fn() -> c_int,
    get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
}

/// A failed NCCL call, or no NCCL to call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// No NCCL library could be loaded.
    #[error("NCCL could not be loaded (tried {tried}): install NCCL (libnccl.so.2, for example PyPI's nvidia-nccl-cu12) or name it in {NCCL_ENV}")]
    Missing {
        /// The names tried, each with the loader's message.
        tried: String,
    },
    /// A call returned an error.
    #[error("{call} failed: NCCL error {code} ({message})")]
    Call {
        /// The NCCL function.
        call: &'static str,
        /// Its `ncclResult_t`.
        code: i32,
        /// NCCL's description of the code.
        message: String,
    },
}

impl Nccl {
    fn load(name: &OsString) -> Result<Nccl, String> {
        // SAFETY: loading NCCL runs its initialisers, which have no
        // preconditions.
        let library = unsafe { libloading::Library::new(name) }.map_err(|e| with_cause(&e))?;
        /// One symbol, copied out of the library (which `Nccl` keeps).
        ///
        /// # Safety
        /// `T` is the C signature of `symbol` in NCCL 2.
        unsafe fn get<T: Copy>(library: &libloading::Library, symbol: &str) -> Result<T, String> {
            // SAFETY: the caller names the symbol's signature.
            unsafe { library.get::<T>(symbol.as_bytes()) }
                .map(|s| *s)
                .map_err(|e| with_cause(&e))
        }
        // SAFETY: each type is the function's signature in nccl.h (NCCL 2).
        unsafe {
            Ok(Nccl {
                get_version: get(&library, "ncclGetVersion")?,
                get_unique_id: get(&library, "ncclGetUniqueId")?,
                comm_init_rank: get(&library, "ncclCommInitRank")?,
                comm_init_all: get(&library, "ncclCommInitAll")?,
                comm_abort: get(&library, "ncclCommAbort")?,
                all_gather: get(&library, "ncclAllGather")?,
                group_start: get(&library, "ncclGroupStart")?,
                group_end: get(&library, "ncclGroupEnd")?,
                get_error_string: get(&library, "ncclGetErrorString")?,
                name: name.to_string_lossy().into_owned(),
                _library: library,
            })
        }
    }

    /// `Ok` for `ncclSuccess`, else the call's error.
    fn check(&self, call: &'static str, code: c_int) -> Result<(), NcclError> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for every code.
        let message = unsafe { (self.get_error_string)(code) };
        let message = match message.is_null() {
            true => String::from("no description"),
            // SAFETY: a non-null result is a NUL-terminated static string.
            false => unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned(),
        };
        Err(NcclError::Call {
            call,
            code,
            message,
        })
    }

    /// NCCL's version (`ncclGetVersion`: 22703 for 2.27.3).
    pub(crate) fn version(&self) -> Result<i32, NcclError> {
        let mut version = 0;
        // SAFETY: writes one int.
        self.check("ncclGetVersion", unsafe {
            (self.get_version)(&mut version)
        })?;
        Ok(version)
    }

    /// A new unique id (`ncclGetUniqueId`).
    pub(crate) fn unique_id(&self) -> Result<RawId, NcclError> {
        let mut id = RawId { internal: [0; 128] };
        // SAFETY: writes the 128-byte id.
        self.check("ncclGetUniqueId", unsafe { (self.get_unique_id)(&mut id) })?;
        Ok(id)
    }

    /// `ncclCommInitRank`: rank `rank` of `ranks` on the current device.
    pub(crate) fn init_rank(
        &self,
        ranks: c_int,
        id: RawId,
        rank: c_int,
    ) -> Result<RawComm, NcclError> {
        let mut comm: RawComm = std::ptr::null_mut();
        // SAFETY: writes one communicator handle; the id is passed by value.
        let code = unsafe { (self.comm_init_rank)(&mut comm, ranks, id, rank) };
        self.check("ncclCommInitRank", code)?;
        Ok(comm)
    }

    /// `ncclCommInitAll`: one communicator a device of `devices`, in order.
    pub(crate) fn init_all(&self, devices: &[c_int]) -> Result<Vec<RawComm>, NcclError> {
        let mut comms: Vec<RawComm> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: writes one handle per device into `comms`, which holds
        // that many.
        let code = unsafe {
            (self.comm_init_all)(comms.as_mut_ptr(), devices.len() as c_int, devices.as_ptr())
        };
        self.check("ncclCommInitAll", code)?;
        Ok(comms)
    }

    /// `ncclCommAbort`: frees the communicator here, with no barrier
    /// among its ranks (`ncclCommDestroy` may wait for the other ranks of
    /// this process, which one thread dropping a whole group in turn would
    /// never let come), and aborts what it still has in flight.
    ///
    /// # Safety
    /// `comm` came from this library and is not used again.
    pub(crate) unsafe fn abort(&self, comm: RawComm) -> Result<(), NcclError> {
        // SAFETY: the caller's contract.
        self.check("ncclCommAbort", unsafe { (self.comm_abort)(comm) })
    }

    /// `ncclAllGather` of `bytes` bytes a rank from `send` into `receive`
    /// on `stream`, inside a group (one call, as NCCL groups a thread's
    /// calls).
    ///
    /// # Safety
    /// `send` holds `bytes` bytes and `receive` the communicator's ranks
    /// times as many, both device memory of the communicator's device,
    /// usable on `stream` (a `CUstream` of that device).
    pub(crate) unsafe fn all_gather(
        &self,
        send: u64,
        receive: u64,
        bytes: usize,
        comm: RawComm,
        stream: *mut c_void,
    ) -> Result<(), NcclError> {
        // SAFETY: no preconditions.
        self.check("ncclGroupStart", unsafe { (self.group_start)() })?;
        // SAFETY: the caller's contract.
        let gathered = unsafe {
            (self.all_gather)(
                send as *const c_void,
                receive as *mut c_void,
                bytes,
                NCCL_UINT8,
                comm,
                stream,
            )
        };
        // SAFETY: closes the group opened above, whatever the call gave.
        let ended = unsafe { (self.group_end)() };
        self.check("ncclAllGather", gathered)?;
        self.check("ncclGroupEnd", ended)
    }
}

/// The names tried, in order: [`NCCL_ENV`], then NCCL 2's library names.
fn library_names() -> Vec<OsString> {
    let mut names = Vec::new();
    if let Some(name) = std::env::var_os(NCCL_ENV).filter(|n| !n.is_empty()) {
        names.push(name);
    }
    names.extend(["libnccl.so.2", "libnccl.so"].map(OsString::from));
    names
}

/// NCCL, loaded on first use (the first name of [`library_names`] that
/// loads and has every entry point).
pub(crate) fn nccl() -> Result<&'static Nccl, NcclError> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(|| {
        let mut tried = Vec::new();
        for name in library_names() {
            match Nccl::load(&name) {
                Ok(nccl) => return Ok(nccl),
                Err(e) => tried.push(format!("{}: {e}", name.to_string_lossy())),
            }
        }
        Err(tried.join("; "))
    })
    .as_ref()
    .map_err(|tried| NcclError::Missing {
        tried: tried.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_the_library_first() {
        // Read only: the variable as this process has it (tests do not set
        // it, so that they do not race).
        let names = library_names();
        let n = names.len();
        assert_eq!(
            names[n - 2..],
            ["libnccl.so.2", "libnccl.so"].map(OsString::from)
        );
        match std::env::var_os(NCCL_ENV).filter(|n| !n.is_empty()) {
            Some(name) => assert_eq!(names[0], name),
            None => assert_eq!(n, 2),
        }
    }

    #[test]
    fn a_missing_library_is_an_error_that_says_what_was_tried() {
        // This machine may have NCCL; where it does not, the error lists
        // every name (and where it does, the library answers its version).
        match nccl() {
            Ok(nccl) => assert!(nccl.version().unwrap() >= 20000, "NCCL 2"),
            Err(NcclError::Missing { tried }) => {
                for name in library_names() {
                    assert!(tried.contains(&*name.to_string_lossy()), "{tried}");
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
}
