pub mod gpu;
pub mod nvrtc;
pub mod ops;
pub mod segments;
