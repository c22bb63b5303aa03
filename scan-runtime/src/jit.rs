//! Compiling generated programs with NVRTC, with the disk cache in front.

use crate::cache::{CacheKey, DiskCache};
use crate::error::{Result, ScanError};
use cudarc::nvrtc;
use kernels_gen::Arch;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether libnvrtc can be loaded (checked before any cudarc call that
/// would panic without it).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to load the shared library.
    unsafe { nvrtc::sys::is_culib_present() }
}

/// NVRTC's version, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    if !nvrtc_present() {
        return Err(ScanError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; nvrtcVersion writes two ints.
    let status = unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if status != nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(ScanError::NoNvrtc);
    }
    Ok(*VERSION.get_or_init(|| (major, minor)))
}

/// What a compile produced: PTX text, and whether it came from the disk cache.
pub struct Compiled {
    /// PTX for the target architecture.
    pub ptx: String,
    /// True when read from the disk cache.
    pub from_disk: bool,
}

/// Compiles `source` for `arch` with NVRTC `options` (from
/// [`kernels_gen::nvrtc_options`] or [`kernels_gen::segmented_nvrtc_options`]),
/// through the disk cache. `driver_version` is part of the cache key (0 when
/// compiling without a driver).
pub fn compile(
    op: &'static str,
    source: &str,
    options: Vec<String>,
    arch: Arch,
    driver_version: i32,
    disk: &DiskCache,
) -> Result<Compiled> {
    let version = nvrtc_version()?;
    let key = CacheKey::new(source, &options, arch, version, driver_version);
    if let Some(ptx) = disk.load(&key) {
        return Ok(Compiled {
            ptx,
            from_disk: true,
        });
    }
    let opts = nvrtc::CompileOptions {
        options,
        name: Some(format!("{op}.cu")),
        ..Default::default()
    };
    let ptx = match nvrtc::compile_ptx_with_opts(source, opts) {
        Ok(ptx) => ptx.to_src(),
        Err(e) => {
            let log = match &e {
                nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            };
            return Err(ScanError::Compile {
                op,
                log,
                source_path: write_failed_source(op, source),
            });
        }
    };
    disk.store(&key, &ptx);
    Ok(Compiled {
        ptx,
        from_disk: false,
    })
}

/// Writes a source NVRTC rejected where the user can read it.
fn write_failed_source(op: &str, source: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("gpu-scan-{op}-{}.cu", std::process::id()));
    // Best effort: the error still carries NVRTC's log if this fails.
    let _ = std::fs::write(&path, source);
    path
}
