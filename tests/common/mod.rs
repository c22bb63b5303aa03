pub mod gpu;
pub mod host_cuda;
pub mod ir_gen;
pub mod ir_interp;
pub mod nvrtc;
pub mod ops;
pub mod seed;
pub mod segments;
