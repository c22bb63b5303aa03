//! Compile-time string assembly.
//!
//! A program's CUDA source is the prelude, the element's declarations (known
//! only to the element's own `#[scan_op]`, through
//! [`ScanElement::CUDA_DECL`](crate::ScanElement)) and the operator's part.
//! These functions join them during constant evaluation, so the whole
//! source is a `&'static str` in the binary and nothing is assembled at run
//! time.

/// Total length of `parts`.
pub const fn concat_len(parts: &[&str]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < parts.len() {
        total += parts[i].len();
        i += 1;
    }
    total
}

/// The bytes of `parts`, joined; `N` must be [`concat_len`]`(parts)`.
pub const fn concat_bytes<const N: usize>(parts: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut i = 0;
    while i < parts.len() {
        let bytes = parts[i].as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            out[at] = bytes[j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(at == N, "concat_bytes: N differs from concat_len(parts)");
    out
}

/// `bytes` as a `str` (they were joined from `str`s, so this cannot fail).
pub const fn utf8(bytes: &'static [u8]) -> &'static str {
    match core::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("joined CUDA source is not UTF-8"),
    }
}

/// The 64-bit FNV-1a hash of `parts`, joined: it tells element structs'
/// CUDA names apart (`#[scan_op]` hashes the module path and the name).
pub const fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < parts.len() {
        let bytes = parts[i].as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            hash ^= bytes[j] as u64;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
            j += 1;
        }
        i += 1;
    }
    hash
}

/// `value` as 16 lower-case hexadecimal digits, most significant first.
///
/// ```
/// const DIGITS: [u8; 16] = scan_core::const_str::hex16(0x0123_4567_89ab_cdef);
/// assert_eq!(scan_core::const_str::utf8(&DIGITS), "0123456789abcdef");
/// ```
pub const fn hex16(value: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        let digit = ((value >> (60 - 4 * i)) & 0xf) as u8;
        out[i] = if digit < 10 {
            b'0' + digit
        } else {
            b'a' + digit - 10
        };
        i += 1;
    }
    out
}

/// `a == b`, usable in constants.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Joins string constants into one `&'static str` during constant evaluation.
///
/// ```
/// const A: &str = "warp ";
/// const JOINED: &str = scan_core::concat_const!(A, "scan");
/// assert_eq!(JOINED, "warp scan");
/// ```
#[macro_export]
macro_rules! concat_const {
    ($($part:expr),+ $(,)?) => {{
        const PARTS: &[&str] = &[$($part),+];
        const LEN: usize = $crate::const_str::concat_len(PARTS);
        const BYTES: [u8; LEN] = $crate::const_str::concat_bytes::<LEN>(PARTS);
        $crate::const_str::utf8(&BYTES)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_compares() {
        const S: &str = concat_const!("a", "", "bc");
        assert_eq!(S, "abc");
        assert!(str_eq("abc", S));
        assert!(!str_eq("abd", S));
        assert!(!str_eq("ab", S));
    }
}
