pub mod ops;
