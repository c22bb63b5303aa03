pub mod ops;
pub mod segments;
