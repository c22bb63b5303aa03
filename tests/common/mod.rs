pub mod gpu;
pub mod host_cuda;
pub mod nvrtc;
pub mod ops;
pub mod segments;
