//! The CUDA device: whether a driver is there, opening a device, and the
//! architecture programs are compiled for on it.

use crate::error::{Result, ScanError};
use crate::toolkit;
use cudarc::driver::CudaContext;
use kernels_gen::Arch;
use std::sync::Arc;

/// Whether the CUDA driver library can be loaded: probed once per process
/// (a probe loads and unloads the library, about a millisecond).
pub fn driver_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to load the shared library.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// Opens device `ordinal`, with a typed error (never a panic) when there is
/// no driver, no NVRTC or no such device.
pub fn open_device(ordinal: usize) -> Result<Arc<CudaContext>> {
    if !driver_present() {
        return Err(ScanError::NoDriver);
    }
    // An NVRTC this driver can use, or why there is none.
    toolkit::nvrtc()?;
    cudarc::driver::result::init()?;
    let count = cudarc::driver::result::device::get_count()?;
    if count <= 0 || ordinal >= count as usize {
        return Err(ScanError::NoDevice);
    }
    Ok(CudaContext::new(ordinal)?)
}

/// The architecture to generate for on `ctx`'s device.
pub fn device_arch(ctx: &CudaContext) -> Result<Arch> {
    let (major, minor) = ctx.compute_capability()?;
    let arch = Arch {
        major: major as u32,
        minor: minor as u32,
    };
    if arch < Arch::MIN_SUPPORTED {
        return Err(ScanError::UnsupportedDevice {
            device: ctx.name()?,
            major,
            minor,
        });
    }
    Ok(arch)
}

/// The environment variable that overrides the architecture programs are
/// compiled for (`sm_80`, `compute_80`, `80` or `8.0`).
pub const TARGET_ARCH_ENV: &str = "GPU_SCAN_TARGET_ARCH";

/// The architecture programs are compiled for on `ctx`'s device: the
/// device's own, or an older one named by [`TARGET_ARCH_ENV`]
/// (`GPU_SCAN_TARGET_ARCH=compute_80`). An older target makes NVRTC emit
/// that architecture's PTX, which the driver compiles for the device: the
/// program then uses only what that architecture has (no pipelined single
/// pass before sm_90), as it would on such a GPU. This is how the GPU tests
/// exercise the code paths of older GPUs on a newer one.
///
/// A target newer than the device, older than [`Arch::MIN_SUPPORTED`], or
/// not an architecture is [`ScanError::BadTargetArch`].
pub fn target_arch(ctx: &CudaContext) -> Result<Arch> {
    let device = device_arch(ctx)?;
    let Some(text) = std::env::var_os(TARGET_ARCH_ENV) else {
        return Ok(device);
    };
    let text = text.to_string_lossy().into_owned();
    match Arch::parse(&text) {
        Some(arch) if arch >= Arch::MIN_SUPPORTED && arch <= device => Ok(arch),
        _ => Err(ScanError::BadTargetArch {
            value: text,
            device: device.sm_name(),
        }),
    }
}

/// The streaming multiprocessors of `ctx`'s device (at least 1), which
/// the plans size their grids by.
pub(crate) fn multiprocessors(ctx: &CudaContext) -> Result<usize> {
    let sms = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    Ok(sms.max(1) as usize)
}

pub(crate) fn driver_version() -> i32 {
    let mut v = 0;
    // SAFETY: the driver is loaded (a context exists); writes one int.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    v
}
