//! Kernel parameter blocks of 64-bit words (the recurrences' and the
//! sparse products'): one `#[repr(C)]` Rust struct passed by value, its
//! CUDA twin printed from the same field list with its size asserted.

use std::fmt::Write;

/// The CUDA declaration of a block named `name` whose fields are `fields`,
/// each an `unsigned long long`, in order, so that field `i` sits at byte
/// `8 · i` as in a `#[repr(C)]` struct of `u64`s (NVRTC has no `offsetof`:
/// the size is asserted, and each block's unit test checks the Rust
/// offsets).
pub fn declaration(name: &str, fields: &[&str]) -> String {
    let mut out = format!("struct {name} {{\n");
    for field in fields {
        let _ = writeln!(out, "  unsigned long long {field};");
    }
    out.push_str("};\n");
    let _ = writeln!(
        out,
        "static_assert(sizeof({name}) == {}, \"{name} size\");",
        8 * fields.len()
    );
    out
}
