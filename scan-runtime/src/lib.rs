//! The GPU side of `gpu-scan`: NVRTC compilation with memory and disk
//! caches, launches on the caller's stream, and the CPU fallback.
//!
//! * [`GpuScanner`]: scans `CudaSlice`/`CudaView` buffers on your
//!   `Arc<CudaStream>`, asynchronously, reusing its scratch memory.
//! * [`Scanner`]: host slices in, `Vec` out, on the GPU when usable and on
//!   the CPU otherwise.
//! * segmented scans: [`GpuScanner::scan`] with a spec over segments
//!   ([`ScanSpec::segments`](scan_core::ScanSpec::segments)):
//!   [`DeviceHeadFlags`], flags built by [`HeadFlagBuilder`], rows of a
//!   fixed length, segment offsets ([`DeviceOffsets`]) or keys
//!   ([`DeviceKeys`]).
//! * [`DeviceApi`]: the operator's warp and block scans as CUDA source, for
//!   kernels you write and compile yourself.
//! * [`DiskCache`]: where compiled programs are kept between processes.
//!
//! Every failure is a [`ScanError`]; a missing `libcuda` or `libnvrtc` is
//! detected before cudarc would panic.

/// Items public with the `internals` feature (for this workspace's tests
/// and tools) and crate-private without it.
macro_rules! internal {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        #[cfg(feature = "internals")]
        $(#[$attr])* pub $($item)*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        $(#[$attr])* pub(crate) $($item)*
    };
}

mod backend;
mod background;
mod built_stage;
pub mod cache;
mod capture;
mod carry;
mod columns;
mod device;
mod device_api;
pub mod distributed;
mod dynamic;
mod entry;
mod error;
mod execute;
mod fast_hash;
mod flag_builder;
mod gpu;
mod head_flags;
mod image_check;
internal! {
    /// NVRTC compilation and its caches, for the test suites and tools: not
    /// part of the API.
    #[doc(hidden)]
    pub mod jit;
}
mod kernels;
mod keys;
mod launch;
mod laws;
mod nccl;
mod offsets;
mod operator;
mod path;
mod plan;
mod policy;
mod real;
mod recurrence;
mod reduce;
mod segment_totals;
mod segmented;
mod segments;
mod select;
mod sort;
mod spmv;
mod staged;
mod summed_area;
mod toolkit;
mod tuning;
mod verbs;
mod workspace;

pub use backend::{BackendKind, Scanner};
pub use built_stage::{DynSortKey, DynStage};
pub use cache::{CacheEnvError, DiskCache};
pub use carry::{CarrySlots, DeviceCarryOut};
pub use cudarc;
pub use device::{device_arch, driver_present, open_device, target_arch, TARGET_ARCH_ENV};
pub use device_api::DeviceApi;
pub use dynamic::{
    BuiltElement, BuiltLayout, DynOperator, DynScanner, Elements, ElementsMut, RawElements,
};
pub use error::{Result, ScanError};
pub use flag_builder::{FlagWord, HeadFlagBuilder};
pub use gpu::GpuScanner;
pub use head_flags::{DeviceHeadFlags, OwnedDeviceHeadFlags};
internal! {
    #[doc(hidden)]
    pub use kernels::{layout, program_source};
}
pub use kernels::{ProgramOrigin, ProgramStats, QUICK_BUILDS_ENV};
pub use kernels_gen::spmv::{SpmvPlan, SpmvShape};
pub use kernels_gen::{Arch, FlagFormat, SegmentedStrategy};
pub use keys::{DeviceKeys, KeyView};
pub use offsets::{DeviceOffset, DeviceOffsets};
pub use path::ScanPath;
pub use real::{DeviceArray, DeviceReal};
pub use recurrence::{DeviceRecurrence, DeviceTransition, GpuRecurrence};
pub use segments::{DeviceSegments, DeviceSegmentsSpec};
pub use select::GpuSelect;
pub use sort::{DeviceSortKey, GpuSort};
pub use spmv::{DeviceCsr, GpuSpmv};
pub use staged::ScanStages;
pub use toolkit::{nvrtc, CudaVersion, Fit, Nvrtc, NVRTC_ENV};
pub use tuning::Tuning;
