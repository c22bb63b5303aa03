//! Quickstart: define an operator once, scan 2^24 elements, check the result.
//!
//! `cargo run --release --example quickstart`
//!
//! The operator composes affine maps v ↦ a·v + b over wrapping `u32`
//! arithmetic: associative, not commutative, and exact, so the parallel
//! result can be compared bit for bit with the sequential one.

use gpu_scan::prelude::*;
use std::time::Instant;

/// An affine map v ↦ a·v + b (mod 2^32); `x ∘ y` applies x, then y.
#[scan_op(identity = Affine { a: 1, b: 0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Affine {
    a: u32,
    b: u32,
}

fn main() {
    let n = 1usize << 24;
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5ca1_ab1e_u64);
    println!("n = {n}, seed = {seed}");
    let mut state = seed;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let input: Vec<Affine> = (0..n)
        .map(|_| Affine {
            a: next() as u32 | 1,
            b: next() as u32,
        })
        .collect();

    let expected = cpu::par_inclusive_vec::<Affine>(&input);
    let bytes = 2 * n * std::mem::size_of::<Affine>();
    let mut scanner = Scanner::<Affine>::new(); // the GPU when usable, else the CPU
    let (backend, seconds, result) = match scanner.gpu_scanner() {
        Some((gpu, stream)) => {
            let name = format!("GPU ({})", stream.context().name().expect("device name"));
            let d_input = stream.clone_htod(&input).expect("upload");
            let mut d_output = stream.alloc_zeros::<Affine>(n).expect("allocate");
            gpu.inclusive(stream, &d_input, &mut d_output)
                .expect("warm-up scan");
            stream.synchronize().expect("synchronize");
            let start = Instant::now();
            gpu.inclusive(stream, &d_input, &mut d_output)
                .expect("scan");
            stream.synchronize().expect("synchronize");
            let seconds = start.elapsed().as_secs_f64();
            (
                name,
                seconds,
                stream.clone_dtoh(&d_output).expect("download"),
            )
        }
        None => {
            let start = Instant::now();
            let result = scanner.inclusive(&input).expect("CPU scan");
            (
                format!("CPU ({} threads)", rayon_threads()),
                start.elapsed().as_secs_f64(),
                result,
            )
        }
    };
    assert!(result == expected, "the scan differs from the CPU oracle");
    println!(
        "backend: {backend}, inclusive scan of {n} elements: {:.3} ms, {:.1} M elements/s, {:.1} GB/s; result checked",
        seconds * 1e3,
        n as f64 / seconds / 1e6,
        bytes as f64 / seconds / 1e9
    );
    println!("last element: {:?}", result[n - 1]);
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
