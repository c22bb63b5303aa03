//! The library under load and faults (issue 46, item 4), each part checked
//! against the CPU and summed up in one table at the end:
//!
//! - `small`: 10^6 scans of 2^10 to 2^16 elements on one scanner, then on 8
//!   threads with a scanner and a stream each: host and device memory after
//!   a warm-up and at the end (no growth allowed), and the host time of one
//!   call beside that of launching an empty kernel;
//! - `threads`: 16 threads building scanners at once, two for each of 8
//!   operators, with a cold disk cache: no deadlock (a watchdog), every
//!   kernel compiled once (the kernels the scanners report compiling equal
//!   the disk cache's entries);
//! - `oom`: a scan with the device filled first: a typed error, the output
//!   untouched, no device memory lost; after the memory is freed, the next
//!   scan is right;
//! - `poisoned`: in a child process, a scan on a context that the caller's
//!   kernel broke with an illegal address: typed errors, no hang, no panic;
//! - `huge`: 2^33 + 17 `u8` and 2^32 + 5 `u32` elements, plain and in rows,
//!   against the CPU.
//!
//! `STRESS_ONLY=small,oom` runs some parts; `STRESS_CALLS` sets the small
//! scans' count (10^6); `STRESS_SEED` replays the inputs. A failed check
//! panics with what differed.
//!
//!     cargo run --release --example scan_stress

#[path = "../tests/common/seed.rs"]
mod seed;

use gpu_scan::ops::{Max, Min, Sum};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{
    result, CudaContext, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use gpu_scan::scan_runtime::{open_device, target_arch, DeviceApi, ProgramOrigin};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

type Rng64 = rand::rngs::StdRng;

/// One line of the closing table.
struct Row {
    part: &'static str,
    figure: String,
    verdict: &'static str,
}

fn wanted(part: &str) -> bool {
    std::env::var("STRESS_ONLY").map_or(true, |v| v.split(',').any(|p| p == part))
}

/// Resident host memory in MiB (Linux: /proc/self/statm, in pages).
fn host_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1 << 20) as f64
}

/// Device memory in use on the current context's device, in MiB.
fn device_mib(ctx: &Arc<CudaContext>) -> f64 {
    ctx.bind_to_thread().unwrap();
    let (free, total) = result::mem_get_info().unwrap();
    (total - free) as f64 / (1 << 20) as f64
}

/// Random `u32` values below 2^20 (sums of 2^16 of them do not wrap, so
/// a mismatch is a mismatch, not two wraps).
fn random_u32(rng: &mut Rng64, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.random_range(0..1 << 20)).collect()
}

/// Scans the first `n` elements of `d_in` into `d_out` (a user's views of
/// their own buffers).
fn scan_prefix(
    scanner: &mut GpuScanner<Sum<u32>>,
    stream: &Arc<CudaStream>,
    d_in: &CudaSlice<u32>,
    d_out: &mut CudaSlice<u32>,
    n: usize,
) {
    scanner
        .scan(
            stream,
            ScanKind::Inclusive,
            &d_in.slice(..n),
            &mut d_out.slice_mut(..n),
        )
        .unwrap();
}

/// The microseconds of one host call of `f`, over `calls` calls after a
/// sync, the stream synchronised at the end (so queued work is not left
/// out of a steady state).
fn per_call_us(stream: &Arc<CudaStream>, calls: usize, mut f: impl FnMut(usize)) -> f64 {
    stream.synchronize().unwrap();
    let start = Instant::now();
    for i in 0..calls {
        f(i);
    }
    let host = start.elapsed();
    stream.synchronize().unwrap();
    host.as_secs_f64() * 1e6 / calls as f64
}

fn small(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    let calls: usize = std::env::var("STRESS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let lengths: Vec<usize> = (10..=16).map(|k| 1 << k).collect();
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let input = random_u32(&mut rng, 1 << 16);
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out: CudaSlice<u32> = stream.alloc_zeros(1 << 16).unwrap();
    let mut scanner = GpuScanner::<Sum<u32>>::new(ctx).unwrap();
    let mut scan = |i: usize| {
        let n = lengths[i % lengths.len()];
        scan_prefix(&mut scanner, &stream, &d_in, &mut d_out, n);
    };
    // Warm-up: every length's kernels compiled and every workspace grown.
    let warm = (calls / 100).max(lengths.len() * 10);
    per_call_us(&stream, warm, &mut scan);
    let (host0, dev0) = (host_mib(), device_mib(ctx));
    let us = per_call_us(&stream, calls, &mut scan);
    let (host1, dev1) = (host_mib(), device_mib(ctx));
    // The last call's output against the CPU.
    let n = lengths[(calls - 1) % lengths.len()];
    let got = stream.clone_dtoh(&d_out.slice(..n)).unwrap();
    assert_eq!(
        got,
        cpu::inclusive_vec::<Sum<u32>>(&input[..n]),
        "small scans: the last one"
    );

    // The empty kernel, launched the same way (one launch a call).
    let arch = target_arch(ctx).unwrap();
    let ptx = DeviceApi::compile("extern \"C\" __global__ void stress_empty() {}", arch, &[])
        .expect("NVRTC");
    let module = ctx.load_module(ptx).unwrap();
    let empty = module.load_function("stress_empty").unwrap();
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let launch_us = per_call_us(&stream, calls.min(200_000), |_| {
        // SAFETY: the kernel takes no arguments and touches no memory.
        unsafe { stream.launch_builder(&empty).launch(config) }.unwrap();
    });
    let grew = |a: f64, b: f64| b - a > 1.0;
    let ok = !grew(host0, host1) && !grew(dev0, dev1);
    rows.push(Row {
        part: "small: one scanner",
        figure: format!(
            "{calls} scans of 2^10..2^16: {us:.2} us a call (empty launch {launch_us:.2} us, +{:.2}); host {host0:.0} -> {host1:.0} MiB, device {dev0:.0} -> {dev1:.0} MiB",
            us - launch_us
        ),
        verdict: if !ok {
            "FAIL (memory grew)"
        } else if us <= launch_us + 1.0 {
            "pass"
        } else {
            "pass (over launch + 1 us)"
        },
    });
    assert!(ok, "small scans: memory grew");

    // 8 threads, a scanner and a stream each.
    let threads = 8;
    let per_thread = calls / threads;
    let barrier = Barrier::new(threads);
    let (input, lengths) = (&input, &lengths);
    let (before_host, before_dev) = (host_mib(), device_mib(ctx));
    let start = Instant::now();
    let mut after = (0.0, 0.0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let stream = ctx.new_stream().unwrap();
                    let d_in = stream.clone_htod(input).unwrap();
                    let mut d_out: CudaSlice<u32> = stream.alloc_zeros(1 << 16).unwrap();
                    let mut scanner = GpuScanner::<Sum<u32>>::new(ctx).unwrap();
                    barrier.wait();
                    for i in 0..per_thread {
                        let n = lengths[(i + t) % lengths.len()];
                        scan_prefix(&mut scanner, &stream, &d_in, &mut d_out, n);
                    }
                    let n = lengths[(per_thread - 1 + t) % lengths.len()];
                    let got = stream.clone_dtoh(&d_out.slice(..n)).unwrap();
                    assert_eq!(
                        got,
                        cpu::inclusive_vec::<Sum<u32>>(&input[..n]),
                        "thread {t}"
                    );
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        after = (host_mib(), device_mib(ctx));
    });
    let seconds = start.elapsed().as_secs_f64();
    rows.push(Row {
        part: "small: 8 threads",
        figure: format!(
            "{} scans in {seconds:.2} s ({:.2} us a scan, all threads); host {before_host:.0} -> {:.0} MiB, device {before_dev:.0} -> {:.0} MiB while running",
            per_thread * threads,
            seconds * 1e6 / (per_thread * threads) as f64,
            after.0,
            after.1
        ),
        verdict: "pass",
    });
}

/// Scans 2^20 + 7 random elements with `Op` on a new scanner and checks
/// them against the CPU; the kernels the scanner loaded, and whether it
/// compiled them.
fn build_and_check<Op: ScanOp>(
    ctx: &Arc<CudaContext>,
    seed: u64,
    random: fn(&mut Rng64) -> Op::Element,
) -> (usize, bool)
where
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + std::fmt::Debug,
{
    let mut rng = Rng64::seed_from_u64(seed);
    let input: Vec<Op::Element> = (0..(1 << 20) + 7).map(|_| random(&mut rng)).collect();
    let stream = ctx.new_stream().unwrap();
    let mut scanner = GpuScanner::<Op>::new(ctx).unwrap();
    let d = stream.clone_htod(&input).unwrap();
    let mut out = stream.alloc_zeros::<Op::Element>(input.len()).unwrap();
    scanner
        .scan(&stream, ScanKind::Inclusive, &d, &mut out)
        .unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    assert!(
        got == cpu::inclusive_vec::<Op>(&input),
        "{}: GPU differs from the CPU",
        Op::NAME
    );
    let stats = scanner.program_stats();
    (
        stats.kernels_loaded,
        stats.origin == ProgramOrigin::Compiled,
    )
}

fn threads(ctx: &Arc<CudaContext>, seed: u64, cache: &std::path::Path, rows: &mut Vec<Row>) {
    type Job = fn(&Arc<CudaContext>, u64) -> (usize, bool);
    // Eight operators with integer results (compared bit for bit), two
    // threads each.
    let jobs: [Job; 8] = [
        |c, s| build_and_check::<Sum<u32>>(c, s, |r| r.random_range(0..1 << 12)),
        |c, s| build_and_check::<Sum<u64>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Sum<i16>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Max<u8>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Min<i32>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Max<i64>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Min<u16>>(c, s, |r| r.random()),
        |c, s| build_and_check::<Sum<u8>>(c, s, |r| r.random()),
    ];
    let barrier = Barrier::new(16);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..16 {
            let (barrier, done_tx, job) = (&barrier, done_tx.clone(), jobs[t / 2]);
            s.spawn(move || {
                barrier.wait();
                done_tx.send(job(ctx, seed + t as u64)).unwrap();
            });
        }
        drop(done_tx);
        // The watchdog: 16 results within five minutes, or a deadlock.
        let mut results = Vec::new();
        while results.len() < 16 {
            match done_rx.recv_timeout(Duration::from_secs(300)) {
                Ok(r) => results.push(r),
                Err(e) => {
                    eprintln!(
                        "threads: {} of 16 scanners done after 300 s ({e}): a deadlock",
                        results.len()
                    );
                    std::process::exit(2);
                }
            }
        }
        let loaded: usize = results.iter().map(|r| r.0).sum();
        let entries = std::fs::read_dir(cache)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "bin"))
                })
                .count()
            })
            .unwrap_or(0);
        let once = loaded == entries;
        rows.push(Row {
            part: "threads: 16 scanners",
            figure: format!(
                "8 operators x 2 threads, cold disk cache: {:.1} s; kernels loaded {loaded}, disk cache entries {entries}",
                start.elapsed().as_secs_f64()
            ),
            verdict: if once { "pass" } else { "FAIL (a kernel compiled twice)" },
        });
        assert!(
            once,
            "threads: {loaded} kernels compiled or read for {entries} cache entries"
        );
    });
}

fn oom(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let n = (1 << 26) + 3;
    let input = random_u32(&mut rng, n);
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out = stream.clone_htod(&vec![0xdead_beefu32; n]).unwrap();
    stream.synchronize().unwrap();
    let base = device_mib(ctx);
    // Fill the device: 1 GiB pieces, then smaller ones down to 4 KiB,
    // until none fits.
    let mut hog: Vec<CudaSlice<u8>> = Vec::new();
    for piece in [1usize << 30, 1 << 24, 1 << 20, 1 << 16, 1 << 12] {
        while let Ok(b) = unsafe { stream.alloc::<u8>(piece) } {
            hog.push(b);
        }
    }
    stream.synchronize().unwrap();
    // A new scanner: its workspace cannot be allocated.
    let mut scanner = GpuScanner::<Sum<u32>>::new(ctx).unwrap();
    let err = scanner.scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out);
    let untouched = stream
        .clone_dtoh(&d_out)
        .map(|v| v.iter().all(|&x| x == 0xdead_beef));
    let typed = matches!(err, Err(ScanError::Driver(_)));
    let message = match &err {
        Err(e) => e.to_string(),
        Ok(()) => "no error".into(),
    };
    drop(hog);
    stream.synchronize().unwrap();
    let freed = device_mib(ctx);
    scanner
        .scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out)
        .unwrap();
    let right = stream.clone_dtoh(&d_out).unwrap() == cpu::inclusive_vec::<Sum<u32>>(&input);
    let after = device_mib(ctx);
    // A scan that fit (an error but all ok is a pass too: the device had room).
    let ok = (typed && untouched.as_ref().is_ok_and(|&u| u) || err.is_ok())
        && right
        && freed <= base + 1.0;
    rows.push(Row {
        part: "oom: device filled",
        figure: format!(
            "scan of 2^26+3 u32: {message}; output untouched {untouched:?}; device {base:.0} MiB before, {freed:.0} after freeing, {after:.0} after the next scan, which is right: {right}"
        ),
        verdict: if ok && err.is_err() { "pass" } else if ok { "pass (no error: it fit)" } else { "FAIL" },
    });
    assert!(ok, "oom: {message}");
}

/// The child's part of `poisoned`: breaks the context, then scans.
fn poisoned_child() {
    let ctx = open_device(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let arch = target_arch(&ctx).unwrap();
    let source =
        "extern \"C\" __global__ void stress_wild(unsigned int *p) { p[threadIdx.x] = 1; }";
    let module = ctx
        .load_module(DeviceApi::compile(source, arch, &[]).unwrap())
        .unwrap();
    let wild = module.load_function("stress_wild").unwrap();
    let mut scanner = GpuScanner::<Sum<u32>>::new(&ctx).unwrap();
    let d = stream.clone_htod(&vec![1u32; 1 << 20]).unwrap();
    let mut out = stream.alloc_zeros::<u32>(1 << 20).unwrap();
    // The scan's kernels loaded before the fault, as in a long-running
    // program.
    scanner
        .scan(&stream, ScanKind::Inclusive, &d, &mut out)
        .unwrap();
    stream.synchronize().unwrap();
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let bad: u64 = 8; // an address nothing is mapped at
                      // SAFETY: none: the kernel writes through a wild pointer on purpose,
                      // in a process of its own.
    let launched = unsafe { stream.launch_builder(&wild).arg(&bad).launch(config) };
    let synced = stream.synchronize();
    let first = scanner.scan(&stream, ScanKind::Inclusive, &d, &mut out);
    let second = GpuScanner::<Sum<u32>>::new(&ctx)
        .and_then(|mut s| s.scan(&stream, ScanKind::Exclusive, &d, &mut out));
    println!(
        "poisoned: launch {:?}; sync {}; scan {}; new scanner's scan {}",
        launched.map(|_| ()),
        synced.map_or_else(|e| e.to_string(), |_| "ok".into()),
        first
            .as_ref()
            .map_or_else(|e| e.to_string(), |_| "ok".into()),
        second
            .as_ref()
            .map_or_else(|e| e.to_string(), |_| "ok".into()),
    );
    // Errors (of the one error type), not a panic and not a wrong answer
    // that looks right.
    std::process::exit(if first.is_err() && second.is_err() {
        0
    } else {
        1
    });
}

fn poisoned(rows: &mut Vec<Row>) {
    let start = Instant::now();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env("STRESS_POISONED_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // No hang: the child has a minute.
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut said = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    let said = said
        .lines()
        .find(|l| l.starts_with("poisoned:"))
        .unwrap_or("")
        .to_string();
    let ok = status.is_some_and(|s| s.success());
    rows.push(Row {
        part: "poisoned context",
        figure: format!(
            "{said} ({:?}, {:.1} s)",
            status.map(|s| s.code()),
            start.elapsed().as_secs_f64()
        ),
        verdict: if ok { "pass" } else { "FAIL" },
    });
}

/// `n` random elements of `random`, filled on all cores.
fn par_random<T: Send + Default + Clone>(
    n: usize,
    seed: u64,
    random: fn(&mut Rng64) -> T,
) -> Vec<T> {
    let mut v = vec![T::default(); n];
    v.par_chunks_mut(1 << 24)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng =
                Rng64::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            chunk.iter_mut().for_each(|x| *x = random(&mut rng));
        });
    v
}

/// `Sum<T>` over `n` elements, plain and in rows of `row` elements, on the
/// GPU against the CPU (integers: bit for bit).
fn huge_case<T>(
    ctx: &Arc<CudaContext>,
    n: usize,
    row: usize,
    seed: u64,
    random: fn(&mut Rng64) -> T,
) -> (String, bool)
where
    T: Send + Sync + Default + Copy + PartialEq + DeviceRepr + ValidAsZeroBits,
    Sum<T>: ScanOp<Element = T>,
{
    let start = Instant::now();
    let stream = ctx.new_stream().unwrap();
    let input = par_random(n, seed, random);
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out: CudaSlice<T> = stream.alloc_zeros(n).unwrap();
    let mut scanner = GpuScanner::<Sum<T>>::new(ctx).unwrap();
    let mut want = vec![T::default(); n];
    let mut checks = Vec::new();
    // Plain.
    scanner
        .scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out)
        .unwrap();
    cpu::par_scan::<Sum<T>>(ScanKind::Inclusive, &input, &mut want).unwrap();
    checks.push(("plain", stream.clone_dtoh(&d_out).unwrap() == want));
    // Rows (segmented): each row its own scan on the CPU.
    scanner
        .scan(&stream, ScanSpec::inclusive().rows(row), &d_in, &mut d_out)
        .unwrap();
    want.par_chunks_mut(row)
        .zip(input.par_chunks(row))
        .for_each(|(w, x)| cpu::scan::<Sum<T>>(ScanKind::Inclusive, x, w).unwrap());
    checks.push(("rows", stream.clone_dtoh(&d_out).unwrap() == want));
    let ok = checks.iter().all(|c| c.1);
    (
        format!(
            "{}; {:.0} s",
            checks
                .iter()
                .map(|(k, r)| format!("{k} {}", if *r { "right" } else { "WRONG" }))
                .collect::<Vec<_>>()
                .join(", "),
            start.elapsed().as_secs_f64()
        ),
        ok,
    )
}

fn huge(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    // Rows of 2^31 + 11 elements: a row past 2^31, and the last one short.
    let (text, ok) = huge_case::<u8>(ctx, (1 << 33) + 17, (1 << 31) + 11, seed, |r| r.random());
    rows.push(Row {
        part: "huge: 2^33+17 u8",
        figure: text,
        verdict: if ok { "pass" } else { "FAIL" },
    });
    let (text, ok) = huge_case::<u32>(ctx, (1 << 32) + 5, (1 << 30) + 3, seed + 1, |r| r.random());
    rows.push(Row {
        part: "huge: 2^32+5 u32",
        figure: text,
        verdict: if ok { "pass" } else { "FAIL" },
    });
}

fn main() {
    if std::env::var_os("STRESS_POISONED_CHILD").is_some() {
        poisoned_child();
        return;
    }
    // A cold disk cache of our own, before any scanner reads the variable.
    let cache = std::env::temp_dir().join(format!("scan-stress-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    std::env::set_var("GPU_SCAN_CACHE_DIR", &cache);
    let seed = seed::from_env_or_clock("STRESS_SEED");
    let ctx = open_device(0).expect("a GPU");
    println!(
        "scan_stress on {}, seed {seed} (STRESS_SEED replays)",
        ctx.name().unwrap()
    );
    let mut rows = Vec::new();
    // Threads first: the disk cache is cold only before anything compiles.
    if wanted("threads") {
        threads(&ctx, seed, &cache, &mut rows);
    }
    if wanted("small") {
        small(&ctx, seed, &mut rows);
    }
    if wanted("oom") {
        oom(&ctx, seed, &mut rows);
    }
    if wanted("poisoned") {
        poisoned(&mut rows);
    }
    if wanted("huge") {
        huge(&ctx, seed, &mut rows);
    }
    println!("scan_stress summary");
    for r in &rows {
        println!("{:<22} {:<26} {}", r.part, r.verdict, r.figure);
    }
    let _ = std::fs::remove_dir_all(&cache);
}
