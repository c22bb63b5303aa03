//! Compile-time behaviour of `#[scan_op]`: every construct outside the
//! supported subset is an error on the offending tokens (tests/ui/fail, with
//! the expected messages in `.stderr` files), and every supported construct
//! compiles and computes what Rust says (tests/ui/pass, run as programs).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
