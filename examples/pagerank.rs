//! PageRank by power iteration on a random power-law graph: each step is a
//! sparse matrix–vector product `r ← d · P · r + (1 − d) / n` on the GPU
//! (`GpuSpmv`), checked against the CPU's `csr_matvec` at every step;
//! without a usable GPU, the CPU alone.
//!
//! `cargo run --release --example pagerank`
//!
//! The graph: `PAGES` pages, page `p` linked from a power-law number of
//! others (a few pages are linked from thousands, a fifth from none). `P`
//! is the column-stochastic link matrix stored by rows: row `p` holds
//! `1 / out_degree(q)` for each page `q` linking to `p`. Pages without
//! outgoing links keep their rank to themselves, so that the ranks keep
//! summing to 1.

use gpu_scan::spmv::{csr_matvec, Csr};

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::bits;

const PAGES: usize = 1 << 20;
const DAMPING: f32 = 0.85;
const STEPS: usize = 30;

fn main() {
    // The splitmix64 stream from a seed.
    let mut state = 0x9a9e_4a4c_u64;
    let mut next = move || {
        let z = bits(state);
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z
    };
    // Each page's incoming links: a Pareto of index 1.3 less 2, at most 2^14.
    let mut links: Vec<Vec<u32>> = (0..PAGES)
        .map(|_| {
            let u = ((next() >> 11) as f64 / (1u64 << 53) as f64).max(f64::EPSILON);
            let count = ((2.0 / u.powf(1.0 / 1.3)) as usize)
                .saturating_sub(2)
                .min(1 << 14);
            (0..count).map(|_| (next() % PAGES as u64) as u32).collect()
        })
        .collect();
    let mut out_degree = vec![0u32; PAGES];
    for sources in &links {
        for &q in sources {
            out_degree[q as usize] += 1;
        }
    }
    // A page without outgoing links links to itself.
    for (p, sources) in links.iter_mut().enumerate() {
        if out_degree[p] == 0 {
            sources.push(p as u32);
            out_degree[p] = 1;
        }
    }
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for sources in &links {
        for &q in sources {
            col_idx.push(q);
            values.push(1.0 / out_degree[q as usize] as f32);
        }
        row_ptr.push(col_idx.len() as u32);
    }
    println!("{PAGES} pages, {} links", col_idx.len());
    let m = Csr {
        cols: PAGES,
        row_ptr: &row_ptr,
        col_idx: &col_idx,
        values: &values,
    };
    match gpu_scan::scan_runtime::open_device(0) {
        Ok(ctx) => on_the_gpu(&ctx, &m),
        Err(e) => {
            println!("no usable GPU ({e}): the CPU backend alone");
            let ranks = power_iteration(|r, y| csr_matvec(&m, r, y).unwrap());
            report(&ranks);
        }
    }
}

/// `STEPS` steps of `r ← d · P · r + (1 − d) / n` from the uniform ranks,
/// with `product(r, y)` writing `P · r` to `y`.
fn power_iteration(mut product: impl FnMut(&[f32], &mut [f32])) -> Vec<f32> {
    let mut ranks = vec![1.0 / PAGES as f32; PAGES];
    let mut linked = vec![0.0f32; PAGES];
    for _ in 0..STEPS {
        product(&ranks, &mut linked);
        for (r, l) in ranks.iter_mut().zip(&linked) {
            *r = DAMPING * l + (1.0 - DAMPING) / PAGES as f32;
        }
    }
    ranks
}

fn report(ranks: &[f32]) {
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by(|&a, &b| ranks[b].total_cmp(&ranks[a]));
    let total: f64 = ranks.iter().map(|&r| r as f64).sum();
    println!(
        "after {STEPS} steps the ranks sum to {total:.6}; the top pages: {:?}",
        order[..5]
            .iter()
            .map(|&p| (p, ranks[p]))
            .collect::<Vec<_>>()
    );
}

/// The same iteration with each product on the GPU, its result compared
/// with the CPU's product of the same ranks at every step.
fn on_the_gpu(ctx: &std::sync::Arc<gpu_scan::cudarc::driver::CudaContext>, m: &Csr<'_, f32>) {
    let stream = ctx.new_stream().unwrap();
    let row_ptr = stream.clone_htod(m.row_ptr).unwrap();
    let col_idx = stream.clone_htod(m.col_idx).unwrap();
    let values = stream.clone_htod(m.values).unwrap();
    let mut spmv = gpu_scan::GpuSpmv::new(ctx).unwrap();
    // Checked and split into tiles once; every product after waits for
    // nothing.
    let checked = spmv
        .check(
            &stream,
            m.cols,
            row_ptr.as_view(),
            col_idx.as_view(),
            values.as_view(),
        )
        .unwrap();
    let mut x = stream.alloc_zeros::<f32>(PAGES).unwrap();
    let mut y = stream.alloc_zeros::<f32>(PAGES).unwrap();
    let mut want = vec![0.0f32; PAGES];
    // The largest difference from the CPU, as a share of the bound: a row
    // of k products of positive terms, summed in any order, is within
    // γ_k = k·u / (1 − k·u) of its exact sum relatively (u = 2^-24), so the
    // GPU's tree and the CPU's left-to-right sum differ by at most 2·γ_k.
    let mut worst = 0.0f64;
    let ranks = power_iteration(|r, linked| {
        stream.memcpy_htod(r, &mut x).unwrap();
        spmv.matvec(&stream, &checked, &x, &mut y).unwrap();
        stream.memcpy_dtoh(&y, linked).unwrap();
        csr_matvec(m, r, &mut want).unwrap();
        for (p, (g, c)) in linked.iter().zip(&want).enumerate() {
            let k = (m.row_ptr[p + 1] - m.row_ptr[p]) as f64;
            let u = f64::from(f32::EPSILON) / 2.0;
            let bound = 2.0 * k * u / (1.0 - k * u) * f64::from(*c) + f64::from(f32::MIN_POSITIVE);
            worst = worst.max(f64::from((g - c).abs()) / bound);
        }
    });
    assert!(
        worst <= 1.0,
        "a GPU product is {worst:.2}× the bound away from the CPU's"
    );
    report(&ranks);
    println!(
        "{STEPS} products on the GPU matched the CPU's (the largest difference {worst:.3} of its bound)"
    );
}
