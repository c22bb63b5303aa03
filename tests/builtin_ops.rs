//! The built-in operators (`gpu_scan::ops`): every one of them
//! * equals a hand-written Rust fold on the CPU (wrapping integer sums and
//!   products, min/max, bitwise and logical operators) on fresh random
//!   inputs (seed printed; BUILTIN_OPS_SEED replays), forward and in
//!   reverse, and keeps its identity and associativity laws on them;
//! * compiles with NVRTC 13.0 and ptxas for sm_75 and sm_90 without spills
//!   (its plain kernels; skipped without the tools, a failure under
//!   `SCAN_REQUIRE_NVRTC=1`);
//! * scans on the GPU like the CPU backend (skipped without a GPU, a failure
//!   under `GPU_REQUIRED=1`): integers and float min/max bit for bit; float
//!   sums of values in [0, 1) within 2·n·2^-p relative (any two summation
//!   orders of positive terms are within n·u of the exact sum, Higham), and
//!   float products of values in [0.999, 1.001] over at most 2^12 elements
//!   within 2·n·u relative as well.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::{open_gpu, poison};
use common::ledger::{self, compile_and_assemble};
use common::nvrtc::tools_available;
use gpu_scan::kernels_gen::abi::KernelAbi;
use gpu_scan::kernels_gen::{self, Arch, Kernel};
use gpu_scan::ops::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaContext, DeviceRepr, ValidAsZeroBits};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

type Rng64 = rand::rngs::StdRng;

/// How to draw, fold and compare one built-in operator's elements.
trait Builtin: ScanOp<Element: PartialEq + std::fmt::Debug + DeviceRepr + ValidAsZeroBits> {
    /// The operator by hand.
    fn reference(a: Self::Element, b: Self::Element) -> Self::Element;
    fn random(rng: &mut Rng64) -> Self::Element;
    /// Whether a GPU result `got` may stand for the CPU's `want` after
    /// combining `n` elements.
    fn close(got: Self::Element, want: Self::Element, _n: usize) -> bool {
        got == want
    }
    /// The longest input the GPU test gives it.
    const MAX_LEN: usize = (1 << 20) + 3;
}

macro_rules! exact {
    ($($op:ident<$t:ident> = |$a:ident, $b:ident| $body:expr;)*) => {$(
        impl Builtin for $op<$t> {
            fn reference($a: $t, $b: $t) -> $t { $body }
            fn random(rng: &mut Rng64) -> $t { rng.random() }
        }
    )*};
}

macro_rules! integers {
    ($($t:ident)*) => {$(
        exact! {
            Sum<$t> = |a, b| a.wrapping_add(b);
            Product<$t> = |a, b| a.wrapping_mul(b);
            Min<$t> = |a, b| std::cmp::min(a, b);
            Max<$t> = |a, b| std::cmp::max(a, b);
            BitAnd<$t> = |a, b| a & b;
            BitOr<$t> = |a, b| a | b;
            BitXor<$t> = |a, b| a ^ b;
        }
    )*};
}
integers!(u8 u16 u32 u64 i8 i16 i32 i64);
exact! {
    And<bool> = |a, b| a && b;
    Or<bool> = |a, b| a || b;
}

/// `2·n·u` relative with an absolute floor for results near zero.
fn rel_close(got: f64, want: f64, n: usize, unit: f64) -> bool {
    let tol = 2.0 * (n.max(1) as f64) * unit;
    (got - want).abs() <= tol * want.abs().max(1e-30)
}

macro_rules! floats {
    ($($t:ident)*) => {$(
        impl Builtin for Sum<$t> {
            fn reference(a: $t, b: $t) -> $t { a + b }
            fn random(rng: &mut Rng64) -> $t { rng.random_range(0.0..1.0) }
            fn close(got: $t, want: $t, n: usize) -> bool {
                rel_close(got as f64, want as f64, n, $t::EPSILON as f64 / 2.0)
            }
        }
        impl Builtin for Product<$t> {
            fn reference(a: $t, b: $t) -> $t { a * b }
            fn random(rng: &mut Rng64) -> $t { rng.random_range(0.999..1.001) }
            fn close(got: $t, want: $t, n: usize) -> bool {
                rel_close(got as f64, want as f64, n, $t::EPSILON as f64 / 2.0)
            }
            const MAX_LEN: usize = 1 << 12;
        }
        exact! {
            Min<$t> = |a, b| a.min(b);
            Max<$t> = |a, b| a.max(b);
        }
    )*};
}
floats!(f32 f64);

/// Applies `$m!(Op)` to every built-in operator.
macro_rules! every_builtin {
    ($m:ident) => {
        every_builtin!(@ints $m, u8 u16 u32 u64 i8 i16 i32 i64);
        $m!(Sum<f32>); $m!(Product<f32>); $m!(Min<f32>); $m!(Max<f32>);
        $m!(Sum<f64>); $m!(Product<f64>); $m!(Min<f64>); $m!(Max<f64>);
        $m!(And<bool>); $m!(Or<bool>);
    };
    (@ints $m:ident, $($t:ident)*) => {$(
        $m!(Sum<$t>); $m!(Product<$t>); $m!(Min<$t>); $m!(Max<$t>);
        $m!(BitAnd<$t>); $m!(BitOr<$t>); $m!(BitXor<$t>);
    )*};
}

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("BUILTIN_OPS_SEED");
    println!("builtin_ops: seed {seed} (BUILTIN_OPS_SEED={seed} replays)");
    seed
}

/// CPU: every kind in both directions against folds by hand.
fn check_cpu<Op: Builtin>(seed: u64, failures: &mut Vec<String>) {
    let mut rng = Rng64::seed_from_u64(seed ^ Op::NAME.len() as u64);
    for n in [0usize, 1, 2, 31, 100, 5000] {
        let input: Vec<Op::Element> = (0..n).map(|_| Op::random(&mut rng)).collect();
        let init = Op::random(&mut rng);
        let mut want = vec![Op::IDENTITY; n];
        // Forward inclusive: a running fold; reverse exclusive from init: a fold from the right.
        let mut acc: Option<Op::Element> = None;
        for i in 0..n {
            acc = Some(acc.map_or(input[i], |a| Op::reference(a, input[i])));
            want[i] = acc.unwrap();
        }
        let got = cpu::inclusive_vec::<Op>(&input);
        if !got.iter().zip(&want).all(|(g, w)| Op::close(*g, *w, n)) {
            failures.push(format!(
                "{}: inclusive differs from the fold at n={n}",
                Op::NAME
            ));
        }
        let mut acc = init;
        for i in (0..n).rev() {
            want[i] = acc;
            acc = Op::reference(input[i], acc);
        }
        let mut got = input.clone();
        cpu::scan_in_place::<Op>(ScanKind::ExclusiveWithInit(init).reverse(), &mut got);
        if !got.iter().zip(&want).all(|(g, w)| Op::close(*g, *w, n)) {
            failures.push(format!(
                "{}: reverse exclusive differs from the fold at n={n}",
                Op::NAME
            ));
        }
        if let Err(e) = check_laws::<Op>(&input) {
            failures.push(format!(
                "{}: a law fails on its own test data: {e:?}",
                Op::NAME
            ));
        }
    }
}

#[test]
fn builtin_operators_match_folds_by_hand_on_the_cpu() {
    let seed = seed();
    let mut failures = Vec::new();
    let mut count = 0;
    macro_rules! cpu_case {
        ($op:ty) => {
            check_cpu::<$op>(seed, &mut failures);
            count += 1;
        };
    }
    every_builtin!(cpu_case);
    assert_eq!(count, 8 * 7 + 2 * 4 + 2, "every built-in operator checked");
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
}

/// The names of the built-in operators' programs are distinct from each
/// other (their kernels and cache entries are).
#[test]
fn builtin_operators_have_distinct_names() {
    let mut names = Vec::new();
    macro_rules! name {
        ($op:ty) => {
            names.push(<$op as ScanOp>::NAME);
        };
    }
    every_builtin!(name);
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "{names:?}");
}

#[test]
fn builtin_operators_compile_for_sm_75_and_sm_90_without_spills() {
    if !tools_available() {
        return;
    }
    let kernels: Vec<KernelAbi> = [
        Kernel::SinglePassInclusive,
        Kernel::ScanTilesExclusive,
        Kernel::PipelinedInclusive,
    ]
    .into_iter()
    .flat_map(|k| {
        let abi = KernelAbi::plain(k);
        [abi, abi.in_direction(Direction::Reverse).unwrap()]
    })
    .collect();
    let mut programs: Vec<(String, String, Vec<String>)> = Vec::new();
    macro_rules! program {
        ($op:ty) => {
            programs.push((
                <$op as ScanOp>::NAME.to_string(),
                gpu_scan::scan_runtime::program_source::<$op>(&kernels),
                kernels
                    .iter()
                    .map(|k| k.symbol(<$op as ScanOp>::NAME))
                    .collect(),
            ));
        };
    }
    every_builtin!(program);
    use rayon::prelude::*;
    let results: Vec<(Vec<common::nvrtc::KernelReport>, Vec<String>)> = programs
        .par_iter()
        .flat_map(|p| [(p, Arch::SM_75), (p, Arch::SM_90)])
        .map(|((name, source, symbols), arch)| {
            let (mut reports, mut failures) = (Vec::new(), Vec::new());
            let label = format!("{name}:{}", arch.sm_name());
            let options = kernels_gen::nvrtc_options(arch);
            compile_and_assemble(
                &label,
                source,
                options,
                symbols,
                arch,
                &mut reports,
                &mut failures,
            );
            (reports, failures)
        })
        .collect();
    let mut failures = Vec::new();
    let mut entries = 0;
    for (reports, f) in results {
        failures.extend(f);
        for r in reports {
            entries += usize::from(!r.kernel.contains(" (called by "));
            if r.spill_bytes > 0 {
                failures.push(format!(
                    "{}: {} spills {} bytes",
                    r.program, r.kernel, r.spill_bytes
                ));
            }
        }
    }
    assert_eq!(entries, programs.len() * 2 * kernels.len(), "{failures:#?}");
    assert!(failures.is_empty(), "{failures:#?}");
    println!(
        "builtin_ops: {entries} kernels of {} operators compiled for sm_75 and sm_90, no spills",
        programs.len()
    );
    println!("builtin_ops: {}", ledger::summary());
}

/// GPU: inclusive and reverse exclusive-from-init scans at lengths around
/// the tiles, poisoned outputs, against the CPU backend.
fn check_gpu<Op: Builtin>(ctx: &Arc<CudaContext>, seed: u64, failures: &mut Vec<String>) {
    let stream = ctx.default_stream();
    let mut scanner = GpuScanner::<Op>::new(ctx).expect("scanner");
    let mut rng = Rng64::seed_from_u64(seed ^ Op::NAME.len() as u64 ^ 0x9e37);
    let t = Op::tile_items();
    for n in [0usize, 1, 33, t + 1, 3 * t - 1, Op::MAX_LEN] {
        let n = n.min(Op::MAX_LEN);
        let input: Vec<Op::Element> = (0..n).map(|_| Op::random(&mut rng)).collect();
        let init = Op::random(&mut rng);
        for spec in [
            ScanSpec::inclusive(),
            ScanKind::ExclusiveWithInit(init).reverse(),
        ] {
            let mut want = vec![Op::IDENTITY; n];
            cpu::scan::<Op>(spec, &input, &mut want).unwrap();
            let got = if n == 0 {
                Vec::new()
            } else {
                let src = stream.clone_htod(&input).unwrap();
                let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
                poison(&stream, &mut out);
                scanner.scan(&stream, spec, &src, &mut out).unwrap();
                stream.clone_dtoh(&out).unwrap()
            };
            if let Some(i) = (0..n).find(|&i| !Op::close(got[i], want[i], n)) {
                failures.push(format!(
                    "{} {spec:?} n={n}: element {i} is {:?}, the CPU's {:?}",
                    Op::NAME,
                    got[i],
                    want[i]
                ));
            }
        }
    }
}

#[test]
fn builtin_operators_scan_on_the_gpu_like_the_cpu() {
    let Some(ctx) = open_gpu("gpu builtin_ops") else {
        return;
    };
    let seed = seed();
    let mut failures = Vec::new();
    let mut count = 0;
    macro_rules! gpu_case {
        ($op:ty) => {
            check_gpu::<$op>(&ctx, seed, &mut failures);
            count += 1;
        };
    }
    every_builtin!(gpu_case);
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
    println!("builtin_ops: {count} built-in operators scan on the GPU like the CPU (seed {seed})");
}
