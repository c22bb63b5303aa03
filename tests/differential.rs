//! Differential tests of the translation: each operator of the family in
//! `tests/common/differential_ops.rs` (every construct and numeric method
//! the crate documents) has its translated `combine` and `identity()`
//! compared with the Rust ones, pair by pair, on random pairs drawn mostly
//! from edge values (0, ±1, MIN, MAX, NaN, ±inf, −0.0, subnormals, shift
//! amounts 0..=2×width):
//!
//! * on the host, compiled by the system C++ compiler with the prelude
//!   (`common::host_cuda`): bit for bit, on every CI machine;
//! * with NVRTC, compiled for the oldest, the Hopper and the newest
//!   architecture (`GpuScanner::combine_pairs`' kernel);
//! * on the GPU, through `GpuScanner::combine_pairs` (outputs poisoned,
//!   guard band checked) and a one-element exclusive scan for the
//!   identity: bit for bit, transcendental functions within 4 ulps
//!   (`Transcendental`'s tolerance says why).
//!
//! The seed is printed; `DIFFERENTIAL_SEED` replays a run.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
#[path = "common/differential.rs"]
mod differential;
#[path = "common/differential_ops.rs"]
mod differential_ops;

use common::{host_cuda, nvrtc};
use differential::*;
use differential_ops::*;
use gpu_scan::kernels_gen::{self, abi::KernelAbi, Arch};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{layout, program_source};
use rand::SeedableRng;

/// Pairs per operator on the host and on the device.
const PAIRS: usize = 20_000;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("DIFFERENTIAL_SEED");
    println!("differential seed: {seed} (DIFFERENTIAL_SEED={seed} replays it)");
    seed
}

/// Every operator of the family, as a list of calls of `$f::<Op>`.
macro_rules! for_each_op {
    ($f:ident $(, $arg:expr)*) => {
        vec![
            $f::<Ints>($($arg),*),
            $f::<IntMethods>($($arg),*),
            $f::<Floats>($($arg),*),
            $f::<Transcendental>($($arg),*),
            $f::<Casts>($($arg),*),
            $f::<Control>($($arg),*),
            $f::<KeepLargerOdd>($($arg),*),
        ]
    };
}

const OPS_SOURCE: &str = include_str!("common/differential_ops.rs");

/// The constructs of the documented subset, as they are spelled in the
/// family's source.
const CONSTRUCTS: &[(&str, &str)] = &[
    ("typed let", "let big: u64 = 1 << 40;"),
    ("typed let that wraps", "let half: u8 = (200 + 100) / 2;"),
    ("untyped let used at a wider type", "let step = 1 << 36;"),
    ("shadowing", "let k = k * 5 + 1;"),
    ("negative range pattern", "-128..=-100 =>"),
    ("negative literal pattern", "-1 =>"),
    ("or-pattern", "0 | 1 | 2 =>"),
    ("exclusive range pattern", "3..10 =>"),
    ("range to a constant", "100..=i8::MAX =>"),
    ("wildcard", "_ =>"),
    ("if / else if / else", "} else if "),
    ("block with bindings", "{ let t ="),
    ("struct update", "..x.inner"),
    ("nested struct update", "..Control { v, ..y }"),
    ("array literal", "m: ["),
    ("array index", "x.m[0]"),
    ("Self literal", "Self {"),
    ("op = fn", "op = fn "),
    ("std::cmp path", "std::cmp::max("),
    ("primitive path call", "f32::max("),
    ("integer constants", "u32::BITS"),
    ("float constants", "f32::MIN_POSITIVE"),
    ("NaN constant", "f64::NAN"),
    ("unary minus", "-(x.b * y.b)"),
    ("bitwise not", "!x.c"),
    ("shift past the width", "(y.g << 64)"),
    ("signed shift amount", "(x.c >> y.b)"),
    ("float remainder", "x.b % y.b"),
    ("float to int casts", "(x.g as u8)"),
    ("bool to int casts", "(x.i as u8)"),
    ("int to float casts", "(x.e as f32)"),
    ("chained casts", "(x.h as u64 as i16)"),
    ("logical operators", "x.flag && !y.flag"),
    ("comparison as a value", "((x.c < y.c) as u32)"),
    ("typed literal identity", "identity = -1i16"),
];

#[test]
fn every_method_and_construct_has_a_case() {
    let documented = doc_words(include_str!("../src/lib.rs"));
    let mut missing = Vec::new();
    for m in kernels_gen::ir::METHODS {
        let used = OPS_SOURCE.contains(&format!(".{}(", m.rust))
            || OPS_SOURCE.contains(&format!("::{}(", m.rust));
        if !used {
            missing.push(format!(
                "method `{}` has no differential case in tests/common/differential_ops.rs",
                m.rust
            ));
        }
        if !documented.iter().any(|w| w == m.rust) {
            missing.push(format!(
                "method `{}` is not in the crate documentation's list",
                m.rust
            ));
        }
    }
    for (what, text) in CONSTRUCTS {
        if !OPS_SOURCE.contains(text) {
            missing.push(format!("construct `{what}` ({text}) has no case"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The words of the crate documentation, with `wrapping_{add,sub}`
/// expanded to `wrapping_add wrapping_sub`.
fn doc_words(docs: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in docs.split(|c: char| c.is_whitespace() || c == '`') {
        match token.split_once("_{") {
            Some((stem, rest)) => {
                let list = rest.split('}').next().unwrap_or_default();
                words.extend(list.split(',').map(|s| format!("{stem}_{s}")));
            }
            None => words.extend(
                token
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map(str::to_string),
            ),
        }
    }
    words
}

/// The host program of `Op`: its layout and part, and a `main` that
/// applies `combine` to pairs read from stdin.
fn host_program<Op: ScanOp>() -> host_cuda::HostProgram {
    let policy = format!("{}::{}", kernels_gen::POLICY_NAMESPACE, Op::NAME);
    let body = format!(
        "{}{}{}",
        layout::<Op>().cuda_declaration(Op::NAME),
        Op::CUDA_SOURCE,
        host_cuda::combine_pairs_main(&policy)
    );
    host_cuda::build(&format!("differential_{}", Op::NAME), &body)
}

fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: the elements are plain #[repr(C)] data; the bytes are only
    // copied to the host program, which reads them back as the same type.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

fn elements_of<T: Copy>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    assert_eq!(bytes.len() % size, 0, "a partial element");
    bytes
        .chunks_exact(size)
        // SAFETY: each chunk holds the bytes of one `T` written by the host
        // program (every field's bit pattern is valid: integers, floats,
        // and C++ bools, which are 0 or 1).
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect()
}

/// `Op` on the host: (pairs, disagreements, the first few).
fn host_case<Op: Differential>(seed: u64) -> (&'static str, usize, usize, Vec<String>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ fnv(Op::NAME));
    let (x, y) = random_pairs::<Op>(PAIRS, &mut rng);
    let program = host_program::<Op>();
    let mut input = (PAIRS as u64).to_le_bytes().to_vec();
    for i in 0..PAIRS {
        input.extend_from_slice(bytes_of(&x[i..=i]));
        input.extend_from_slice(bytes_of(&y[i..=i]));
    }
    let out: Vec<Op::Element> = elements_of(&program.run(&input));
    assert_eq!(out.len(), PAIRS + 1, "{}: pairs and the identity", Op::NAME);
    let (mut bad, mut first) = compare_pairs::<Op>(&x, &y, &out[..PAIRS], Op::HOST_TOLERANCE);
    if let Some(d) = Op::first_difference(&out[PAIRS], &Op::IDENTITY, Tolerance::Exact) {
        bad += 1;
        first.push(format!("{} identity: {d}", Op::NAME));
    }
    (Op::NAME, PAIRS, bad, first)
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn report(rows: &[(&'static str, usize, usize, Vec<String>)], where_: &str) {
    println!(
        "\n{:<16} {:>8} {:>13}  ({where_})",
        "operator", "pairs", "disagreements"
    );
    for (name, pairs, bad, _) in rows {
        println!("{name:<16} {pairs:>8} {bad:>13}");
    }
    let failures: Vec<&String> = rows.iter().flat_map(|r| &r.3).collect();
    assert!(
        failures.is_empty(),
        "{where_}: the translation disagrees with Rust:\n{}",
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn host_translation_matches_rust_bit_for_bit() {
    if !host_cuda::available("differential") {
        return;
    }
    let seed = seed();
    let rows = for_each_op!(host_case, seed);
    report(&rows, "host C++");
}

fn nvrtc_case<Op: ScanOp>(arch: Arch) -> Vec<String> {
    let mut failures = Vec::new();
    let abi = KernelAbi::CombinePairs;
    let source = program_source::<Op>(&[abi]);
    let label = format!("differential:{}:{}", Op::NAME, arch.sm_name());
    if let Some(ptx) = nvrtc::compile_program(
        &label,
        &source,
        kernels_gen::nvrtc_options(arch),
        &[abi.symbol(Op::NAME)],
        &mut failures,
    ) {
        nvrtc::assemble(&label, arch, &ptx, &mut Vec::new(), &mut failures);
    }
    failures
}

#[test]
fn nvrtc_compiles_the_family() {
    if !nvrtc::tools_available() {
        return;
    }
    let archs = [Arch::MIN_SUPPORTED, Arch::SM_90, Arch::SM_120];
    let failures: Vec<String> = archs
        .into_iter()
        .flat_map(|arch| for_each_op!(nvrtc_case, arch).into_iter().flatten())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `Op` on the GPU: `combine_pairs` on lengths that end mid-block, at a
/// block, past it and over many blocks, with a poisoned guard band after
/// the output; the identity from a one-element exclusive scan.
fn gpu_case<Op: Differential>(
    ctx: &std::sync::Arc<gpu_scan::scan_runtime::cudarc::driver::CudaContext>,
    seed: u64,
) -> (&'static str, usize, usize, Vec<String>)
where
    Op::Element: gpu_scan::scan_runtime::cudarc::driver::DeviceRepr
        + gpu_scan::scan_runtime::cudarc::driver::ValidAsZeroBits,
{
    const GUARD: usize = 64;
    let stream = ctx.default_stream();
    let mut scanner = GpuScanner::<Op>::new(ctx).expect("scanner");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ fnv(Op::NAME));
    let (mut pairs, mut bad, mut first) = (0, 0, Vec::new());
    for n in [1, 31, 32, 33, 255, 256, 257, 1000, PAIRS, 3 * PAIRS + 7] {
        let (x, y) = random_pairs::<Op>(n, &mut rng);
        let dx = stream.clone_htod(&x).expect("copy");
        let dy = stream.clone_htod(&y).expect("copy");
        let mut out = stream.alloc_zeros::<Op::Element>(n + GUARD).expect("alloc");
        common::gpu::poison(&stream, &mut out);
        scanner
            .combine_pairs(&stream, &dx, &dy, &mut out.slice_mut(0..n))
            .expect("combine_pairs");
        let got = stream.clone_dtoh(&out).expect("copy back");
        let (b, f) = compare_pairs::<Op>(&x, &y, &got[..n], Op::DEVICE_TOLERANCE);
        bad += b;
        first.extend(f);
        if !bytes_of(&got[n..]).iter().all(|&b| b == 0xA5) {
            bad += 1;
            first.push(format!("{} n={n}: the guard band was written", Op::NAME));
        }
        pairs += n;
        // In place: data = combine(data, y).
        let mut data = stream.clone_htod(&x).expect("copy");
        scanner
            .combine_pairs_in_place(&stream, &mut data, &dy)
            .expect("in place");
        let got = stream.clone_dtoh(&data).expect("copy back");
        let (b, f) = compare_pairs::<Op>(&x, &y, &got, Op::DEVICE_TOLERANCE);
        bad += b;
        first.extend(f.into_iter().map(|s| format!("in place: {s}")));
    }
    // A length mismatch is an error that leaves the output as it was.
    let (x, y) = random_pairs::<Op>(8, &mut rng);
    let dx = stream.clone_htod(&x).expect("copy");
    let dy = stream.clone_htod(&y[..7]).expect("copy");
    let mut out = stream.alloc_zeros::<Op::Element>(8).expect("alloc");
    common::gpu::poison(&stream, &mut out);
    let err = scanner.combine_pairs(&stream, &dx, &dy, &mut out);
    let untouched = bytes_of(&stream.clone_dtoh(&out).expect("copy back"))
        .iter()
        .all(|&b| b == 0xA5);
    if !matches!(err, Err(ScanError::LengthMismatch { .. })) || !untouched {
        bad += 1;
        first.push(format!(
            "{}: lengths 8/7/8 gave {err:?}, output untouched: {untouched}",
            Op::NAME
        ));
    }
    // The identity the kernels seed with: a one-element exclusive scan.
    let one = stream.clone_htod(&x[..1]).expect("copy");
    let mut e = stream.alloc_zeros::<Op::Element>(1).expect("alloc");
    scanner.exclusive(&stream, &one, &mut e).expect("exclusive");
    let identity = stream.clone_dtoh(&e).expect("copy back")[0];
    if let Some(d) = Op::first_difference(&identity, &Op::IDENTITY, Tolerance::Exact) {
        bad += 1;
        first.push(format!("{} identity: {d}", Op::NAME));
    }
    (Op::NAME, pairs, bad, first)
}

#[test]
fn gpu_translation_matches_rust() {
    let Some(ctx) = common::gpu::open_gpu("differential") else {
        return;
    };
    let seed = seed();
    let rows = for_each_op!(gpu_case, &ctx, seed);
    report(&rows, "GPU");
}
