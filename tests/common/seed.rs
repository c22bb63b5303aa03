//! Seeds of the randomised tests: from an environment variable, to replay a
//! run, or from the clock.
#![allow(dead_code)] // unused where the GPU tests are left out

/// The value of the variable `var` (which must then be a `u64`), or the
/// clock's nanoseconds.
pub fn from_env_or_clock(var: &str) -> u64 {
    match std::env::var(var) {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("{var} must be a u64 seed, not {s:?}")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970")
            .as_nanos() as u64,
    }
}
