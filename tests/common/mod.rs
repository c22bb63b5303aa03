pub mod gpu;
pub mod ops;
pub mod segments;
