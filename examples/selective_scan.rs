//! A Mamba-style selective scan written as your own CUDA kernel, with the
//! block scan of an operator defined in Rust (`gpu_scan::DeviceApi`).
//!
//! `cargo run --release --example selective_scan`
//!
//! For each channel `d` and state `n`, a linear recurrence over time `t`:
//!
//! ```text
//! h[n](t) = exp(Δ(t)·A[n]) · h[n](t−1) + Δ(t)·B(t)[n]·x(t),   h[n](−1) = 0
//! y(t)    = Σ_n C(t)[n] · h[n](t)
//! ```
//!
//! Each step is an affine map `h ↦ a·h + b`; composing maps is associative
//! (not commutative), so the recurrence is an inclusive scan of maps, and
//! `h(t)` is the `b` of the composed map (applied to `h(−1) = 0`). The
//! kernel gives one block to each channel and walks the sequence in chunks
//! of 512 steps, keeping each state's running map from chunk to chunk
//! (`BlockScan::inclusive_chunk`). The result is checked against a
//! sequential recurrence on the CPU in `f64`. Without a GPU, the example
//! says so and runs the CPU side alone.

use gpu_scan::cudarc::driver::{LaunchConfig, PushKernelArg};
use gpu_scan::prelude::*;
use gpu_scan::DeviceApi;
use rayon::prelude::*;
use std::time::Instant;

/// The affine map h ↦ a·h + b; `x ∘ y` applies x, then y.
#[scan_op(identity = Affine { a: 1.0, b: 0.0 },
          op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Affine {
    a: f32,
    b: f32,
}

/// States per channel (Mamba's N).
const STATES: usize = 16;
/// Threads per block and steps per thread in a chunk.
const THREADS: u32 = 128;
const ITEMS: usize = 4;

/// The kernel (`selective_scan.cu`), after the operator's device API. `Op`
/// is the operator's policy; `Op::T` is `Affine`, with the Rust struct's
/// layout.
const KERNEL: &str = include_str!("selective_scan.cu");

/// Your program: the operator's device API, its policy named `Op`, the
/// kernel's sizes, and the kernel. (`tests/device_api.rs` compiles it for
/// every architecture.)
pub(crate) fn program(api: &DeviceApi) -> String {
    format!(
        "{}\ntypedef {} Op;\nconstexpr int THREADS = {THREADS}, ITEMS = {ITEMS}, STATES = {STATES};\n{KERNEL}",
        api.source(),
        api.policy()
    )
}

/// splitmix64, for reproducible inputs.
fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Inputs {
    channels: usize,
    length: usize,
    x: Vec<f32>,
    delta: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

/// The recurrence run sequentially in `f64` from the same `f32` inputs,
/// and for each output the error an `f32` evaluation in any grouping may
/// make.
///
/// Tolerance: `h(t) = Σ_k π(k, t)·b_k` with `π(k, t)` the product of the
/// `a`s after step `k` (each in (0, 1]). In `f32`, each `a` carries up to 2
/// ulps from `expf`, 1.6 from rounding its argument `Δ·A` (|Δ·A| ≤ 1.6) and
/// 1 from its product, so `π(k, t)` is off by at most `5(t − k)·u`
/// relatively (u = 2^-24); each term then goes through at most
/// `R = ITEMS + 2·log2(THREADS) + chunks + 4` roundings of the scan's
/// combines and `b`'s two products, whatever the grouping. So
/// `|err h(t)| ≤ u·(5·S(t) + R·M(t))`, `M(t) = Σ_k π(k, t)|b_k|` and
/// `S(t) = Σ_k π(k, t)|b_k|(t − k)`, computed here by their own recurrences
/// (`M(t) = a_t M(t−1) + |b_t|`, `S(t) = a_t (S(t−1) + M(t−1))`). `y(t)` adds
/// `|C|` times that over the states and `(STATES + 1)·u·Σ|C·h|` for its
/// sum. The check allows twice the bound.
fn reference(inputs: &Inputs) -> (Vec<f64>, Vec<f64>) {
    let (length, chunks) = (
        inputs.length,
        inputs.length.div_ceil(THREADS as usize * ITEMS),
    );
    let u = f64::powi(2.0, -24);
    let roundings = (ITEMS + 2 * THREADS.ilog2() as usize + chunks + 4) as f64;
    let per_channel: Vec<(Vec<f64>, Vec<f64>)> = (0..inputs.channels)
        .into_par_iter()
        .map(|d| {
            let mut y = vec![0.0f64; length];
            let mut bound = vec![0.0f64; length];
            for n in 0..STATES {
                let a_n = inputs.a[d * STATES + n] as f64;
                let (mut h, mut m, mut s) = (0.0f64, 0.0f64, 0.0f64);
                for t in 0..length {
                    let dt = inputs.delta[d * length + t] as f64;
                    let a = (dt * a_n).exp();
                    let b = dt * inputs.b[t * STATES + n] as f64 * inputs.x[d * length + t] as f64;
                    h = a * h + b;
                    s = a * (s + m);
                    m = a * m + b.abs();
                    let c = inputs.c[t * STATES + n] as f64;
                    y[t] += c * h;
                    bound[t] += c.abs() * (u * (5.0 * s + roundings * m))
                        + (STATES as f64 + 1.0) * u * (c * h).abs();
                }
            }
            (y, bound)
        })
        .collect();
    let mut y = Vec::with_capacity(inputs.channels * length);
    let mut bound = Vec::with_capacity(inputs.channels * length);
    for (yd, bd) in per_channel {
        y.extend(yd);
        bound.extend(bd);
    }
    (y, bound)
}

fn main() {
    let (channels, length) = (384usize, 5000usize); // 5000: not a whole number of chunks
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x005e_1ec7_u64);
    println!("selective scan: {channels} channels × {length} steps × {STATES} states, seed {seed}");
    let mut next = rng(seed);
    let mut uniform = |lo: f64, hi: f64| (lo + (hi - lo) * next()) as f32;
    let inputs = Inputs {
        channels,
        length,
        x: (0..channels * length).map(|_| uniform(-1.0, 1.0)).collect(),
        // Δ after Mamba's softplus, and A = −(1..=N) scaled per channel:
        // decays from e^-1.6 per step to 0.999 per step.
        delta: (0..channels * length)
            .map(|_| uniform(0.001, 0.1))
            .collect(),
        a: (0..channels * STATES)
            .map(|i| -((i % STATES) as f32 + 1.0) * uniform(0.5, 1.0))
            .collect(),
        b: (0..length * STATES).map(|_| uniform(-1.0, 1.0)).collect(),
        c: (0..length * STATES).map(|_| uniform(-1.0, 1.0)).collect(),
    };
    let start = Instant::now();
    let (want, bound) = reference(&inputs);
    println!(
        "CPU reference (f64, {} threads): {:.1} ms",
        rayon::current_num_threads(),
        start.elapsed().as_secs_f64() * 1e3
    );

    let ctx = match gpu_scan::scan_runtime::open_device(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            assert!(
                std::env::var_os("GPU_REQUIRED").is_none_or(|v| v != "1"),
                "GPU_REQUIRED=1 but no GPU is usable: {e}"
            );
            println!("no usable GPU ({e}): the CPU reference above is all this example runs");
            return;
        }
    };
    let source = program(&DeviceApi::of::<Affine>());
    let arch = gpu_scan::scan_runtime::target_arch(&ctx).expect("architecture");
    let start = Instant::now();
    let ptx = DeviceApi::compile(&source, arch, &[]).expect("NVRTC");
    let module = ctx.load_module(ptx).expect("load");
    let kernel = module.load_function("selective_scan").expect("kernel");
    println!(
        "compiled for {} in {:.0} ms",
        arch.compute_name(),
        start.elapsed().as_secs_f64() * 1e3
    );

    let stream = ctx.default_stream();
    let upload = |v: &[f32]| stream.clone_htod(v).expect("upload");
    let (x, delta, a, b, c) = (
        upload(&inputs.x),
        upload(&inputs.delta),
        upload(&inputs.a),
        upload(&inputs.b),
        upload(&inputs.c),
    );
    let mut y = stream.alloc_zeros::<f32>(channels * length).expect("alloc");
    let config = LaunchConfig {
        grid_dim: (channels as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let length_arg = length as u32;
    let mut seconds = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let mut launch = stream.launch_builder(&kernel);
        launch
            .arg(&x)
            .arg(&delta)
            .arg(&a)
            .arg(&b)
            .arg(&c)
            .arg(&mut y)
            .arg(&length_arg);
        // SAFETY: selective_scan(x, delta, A, B, C, y, length): x, delta and
        // y hold channels × length floats, A channels × STATES, B and C
        // length × STATES; one block of THREADS threads per channel, as the
        // kernel's BlockScan<Op, THREADS> expects.
        unsafe { launch.launch(config) }.expect("launch");
        stream.synchronize().expect("synchronize");
        seconds = seconds.min(start.elapsed().as_secs_f64());
    }
    let got = stream.clone_dtoh(&y).expect("download");
    let mut worst = 0.0f64;
    let mut failures = 0;
    for i in 0..got.len() {
        let error = (got[i] as f64 - want[i]).abs();
        worst = worst.max(error / bound[i].max(f64::MIN_POSITIVE));
        if error > 2.0 * bound[i] {
            if failures < 5 {
                println!(
                    "channel {} step {}: GPU {} CPU {} (bound {:.3e})",
                    i / length,
                    i % length,
                    got[i],
                    want[i],
                    bound[i]
                );
            }
            failures += 1;
        }
    }
    println!(
        "GPU ({}): {:.3} ms (best of 5, with launch); {} outputs, largest error {:.2} of its bound",
        ctx.name().expect("device name"),
        seconds * 1e3,
        got.len(),
        worst
    );
    assert_eq!(
        failures, 0,
        "{failures} outputs differ from the CPU reference beyond the bound"
    );
    println!("checked against the CPU: every output within its bound");
}
