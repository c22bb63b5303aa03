//! The GPU side of `gpu-scan`: NVRTC compilation, caches and launches
//! through `cudarc`.
//!
//! This crate currently re-exports the `cudarc` it is built against (the
//! facade's `#[scan_op]` implements `cudarc::driver::DeviceRepr` for element
//! structs through it); JIT compilation and launches build on it.

pub use cudarc;
