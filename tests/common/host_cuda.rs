//! Running generated operator code on the host: the prelude and an
//! operator's policy compiled by the system C++ compiler, with the few CUDA
//! built-ins they use defined for the CPU.
//!
//! The prelude gives translated operators Rust's semantics through C++
//! overloads; compiled for x86-64 with `-ffp-contract=off`, its float
//! arithmetic is the same IEEE arithmetic Rust's is, so a host run of the
//! translation must agree with the Rust `combine` bit for bit, except for
//! transcendental functions (glibc's and Rust's own `libm` differ by an
//! ulp here and there) and NaN payloads. That checks
//! the translation (literal typing, casts, shifts, overflow, `match`) on
//! every CI machine, without a GPU; the device tests then check the GPU's
//! own arithmetic against the same oracle.
//!
//! Needs `c++` (or `$CXX`). Without one the tests that use it skip with a
//! line, unless `SCAN_REQUIRE_HOST_CXX=1` (set by `scripts/test`), under
//! which its absence is a failure.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The CUDA built-ins the prelude uses, for the host. Device-only ones
/// (shuffles, fences, shared-memory addresses) are stubs: operator policies
/// never call them.
pub const HOST_SHIM: &str = r#"// Host definitions of the CUDA built-ins gpu-scan's prelude uses.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#define __device__
#define __host__
#define __global__
#define __shared__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
// CUDA's fmin/fmax return the other operand when one is any NaN; glibc's
// return NaN for a signaling one (IEEE 754-2008 minNum), which neither
// CUDA nor Rust does.
static inline float scan_host_fminf(float a, float b) { return a != a ? b : b != b ? a : fminf(a, b); }
static inline float scan_host_fmaxf(float a, float b) { return a != a ? b : b != b ? a : fmaxf(a, b); }
static inline double scan_host_fmin(double a, double b) { return a != a ? b : b != b ? a : fmin(a, b); }
static inline double scan_host_fmax(double a, double b) { return a != a ? b : b != b ? a : fmax(a, b); }
#define fminf scan_host_fminf
#define fmaxf scan_host_fmaxf
#define fmin scan_host_fmin
#define fmax scan_host_fmax
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
static inline double __longlong_as_double(long long v) { double f; memcpy(&f, &v, 8); return f; }
static inline int __float_as_int(float v) { int i; memcpy(&i, &v, 4); return i; }
static inline long long __double_as_longlong(double v) { long long i; memcpy(&i, &v, 8); return i; }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz((unsigned)v); }
static inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll((unsigned long long)v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned __shfl_sync(unsigned, unsigned v, int) { abort(); return v; }
static inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned) { abort(); return v; }
static inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned) { abort(); return v; }
static inline void __threadfence() { abort(); }
static inline size_t __cvta_generic_to_shared(const void*) { abort(); return 0; }
"#;

/// The C++ compiler: `$CXX`, else `c++`.
fn compiler() -> PathBuf {
    std::env::var_os("CXX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("c++"))
}

/// Whether a C++ compiler runs; with `SCAN_REQUIRE_HOST_CXX=1` its absence
/// panics. `test` names the caller in the skip line.
pub fn available(test: &str) -> bool {
    let ok = Command::new(compiler())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("SCAN_REQUIRE_HOST_CXX").is_none_or(|v| v != "1"),
            "{test}: SCAN_REQUIRE_HOST_CXX=1 but {} does not run",
            compiler().display()
        );
        println!("{test}: skipped (no C++ compiler; set CXX)");
    }
    ok
}

/// A compiled host program.
pub struct HostProgram {
    exe: PathBuf,
}

/// The program text for the host: [`HOST_SHIM`], the launch state's
/// declaration and the prelude (as a device program has them), then
/// `body` (operator parts and a `main`).
pub fn host_source(body: &str) -> String {
    let mut s = String::from(HOST_SHIM);
    s.push_str(&gpu_scan::kernels_gen::launch_state::launch_state_declaration());
    s.push_str(gpu_scan::kernels_gen::PRELUDE);
    s.push_str(body);
    s
}

/// Compiles [`host_source`]`(body)` as `label` (the source and the binary
/// are kept under the target's tmp directory); panics with the compiler's
/// log on an error.
pub fn build(label: &str, body: &str) -> HostProgram {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("host_cuda");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{label}.cpp"));
    let exe = dir.join(label);
    std::fs::write(&src, host_source(body)).unwrap();
    let out = Command::new(compiler())
        .args([
            "-std=c++17",
            "-O1",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-w",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler().display()));
    assert!(
        out.status.success(),
        "{label}: the host compile of {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    HostProgram { exe }
}

impl HostProgram {
    /// Runs the program with `input` on stdin; returns its stdout. Panics
    /// if it fails.
    pub fn run(&self, input: &[u8]) -> Vec<u8> {
        let mut child = Command::new(&self.exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.exe.display()));
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("wait");
        writer.join().expect("writer").expect("write stdin");
        assert!(
            out.status.success(),
            "{} failed: {}",
            self.exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Where the binary is.
    pub fn path(&self) -> &Path {
        &self.exe
    }
}

/// A host `main` that reads `count` (a little-endian u64) then `count`
/// pairs of `T` from stdin and writes `combine(x, y)` for each pair, then
/// `identity()`, to stdout; `policy` is the operator's policy
/// (`gpu_scan_ops::name`).
pub fn combine_pairs_main(policy: &str) -> String {
    format!(
        r#"
int main() {{
  typedef {policy}::T T;
  unsigned long long n = 0;
  if (fread(&n, 8, 1, stdin) != 1) return 2;
  T* x = (T*)malloc(sizeof(T) * (n ? n : 1));
  T* y = (T*)malloc(sizeof(T) * (n ? n : 1));
  for (unsigned long long i = 0; i < n; ++i) {{
    if (fread(&x[i], sizeof(T), 1, stdin) != 1 || fread(&y[i], sizeof(T), 1, stdin) != 1) return 3;
  }}
  for (unsigned long long i = 0; i < n; ++i) {{
    const T r = {policy}::combine(x[i], y[i]);
    fwrite(&r, sizeof(T), 1, stdout);
  }}
  const T e = {policy}::identity();
  fwrite(&e, sizeof(T), 1, stdout);
  return 0;
}}
"#
    )
}
