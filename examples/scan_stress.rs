//! The library under load and faults (issue 46, item 4), each part checked
//! against the CPU and summed up in one table at the end:
//!
//! - `small`: 10^6 scans of 2^10 to 2^16 elements on one scanner, then on 8
//!   threads with a scanner and a stream each: host and device memory after
//!   a warm-up and at the end (no growth allowed), and the host time of one
//!   call beside that of launching an empty kernel;
//! - `untracked`: the same small scans on buffers made while the context's
//!   event tracking is off (`CudaContext::disable_event_tracking`, the
//!   user synchronizing streams): the library's own host time a call beside
//!   an empty launch, with nothing of cudarc's tracking in either;
//! - `threads`: 16 threads building scanners at once, two for each of 8
//!   operators, with a cold disk cache: no deadlock (a watchdog), every
//!   kernel compiled once (NVRTC's compiles, counted by the runtime, equal
//!   the disk cache's entries);
//! - `oom`: a scan with the device filled first: a typed error, the output
//!   untouched, no device memory lost; after the memory is freed, the next
//!   scan is right;
//! - `poisoned`: in a child process, a scan on a context that the caller's
//!   kernel broke with an illegal address: typed errors, no hang, no panic;
//! - `huge`: 2^33 + 17 `u8` and 2^32 + 5 `u32` elements, plain and in
//!   segments by offsets (one past 2^31 elements, the last short), against
//!   the CPU.
//!
//! `STRESS_ONLY=small,oom` runs some parts; `STRESS_CALLS` sets the small
//! scans' count (10^6); `STRESS_SEED` replays the inputs. A wrong result
//! panics with what differed; a failed figure is a `FAIL` row and exit
//! code 1.
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
use gpu_scan::scan_runtime::{jit, open_device, target_arch, DeviceApi, DeviceOffsets};
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

/// Microseconds a call of `f` over `calls` calls from an idle stream: the
/// host's (what the calling thread spends enqueueing), and the wall clock's
/// up to the stream's end (the GPU's work included).
fn per_call_us(stream: &Arc<CudaStream>, calls: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    stream.synchronize().unwrap();
    let start = Instant::now();
    for i in 0..calls {
        f(i);
    }
    let host = start.elapsed();
    stream.synchronize().unwrap();
    let wall = start.elapsed();
    let us = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
    (us(host), us(wall))
}

/// A scanner whose kernels compile when a scan first needs them, the scan
/// waiting (no background compiles: a warm-up leaves nothing compiling).
fn stress_scanner<Op: ScanOp>(ctx: &Arc<CudaContext>) -> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = GpuScanner::<Op>::new(ctx).unwrap();
    scanner.set_tuning(scanner.tuning().with_background_compile(false));
    scanner
}

/// What [`small_scans`] measured (microseconds a call, MiB).
struct SmallScans {
    calls: usize,
    lengths: Vec<usize>,
    input: Vec<u32>,
    us: f64,
    wall_us: f64,
    launch_us: f64,
    buffers_us: f64,
    host: (f64, f64),
    device: (f64, f64),
}

/// `calls` scans of 2^10 to 2^16 random `u32` in turn on one scanner and a
/// new stream, after a warm-up (every length's kernels compiled, every
/// workspace grown), the last one checked against the CPU, then the empty
/// launches ([`empty_launches_us`]) on the same stream and buffers; host
/// and device memory before and after the timed calls.
fn small_scans(ctx: &Arc<CudaContext>, rng: &mut Rng64, calls: usize) -> SmallScans {
    let lengths: Vec<usize> = (10..=16).map(|k| 1 << k).collect();
    let calls = calls.max(lengths.len() * 8);
    let stream = ctx.new_stream().unwrap();
    let input = random_u32(rng, 1 << 16);
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out: CudaSlice<u32> = stream.alloc_zeros(1 << 16).unwrap();
    let mut scanner = stress_scanner::<Sum<u32>>(ctx);
    let mut scan = |i: usize| {
        let n = lengths[i % lengths.len()];
        scan_prefix(&mut scanner, &stream, &d_in, &mut d_out, n);
    };
    per_call_us(&stream, (calls / 100).max(lengths.len() * 10), &mut scan);
    let (host0, dev0) = (host_mib(), device_mib(ctx));
    let (us, wall_us) = per_call_us(&stream, calls, &mut scan);
    let (host1, dev1) = (host_mib(), device_mib(ctx));
    let n = lengths[(calls - 1) % lengths.len()];
    let got = stream.clone_dtoh(&d_out.slice(..n)).unwrap();
    assert_eq!(
        got,
        cpu::inclusive_vec::<Sum<u32>>(&input[..n]),
        "small scans: the last one"
    );
    let (launch_us, buffers_us) = empty_launches_us(ctx, &stream, &d_in, &mut d_out, calls);
    stream.synchronize().unwrap();
    SmallScans {
        calls,
        lengths,
        input,
        us,
        wall_us,
        launch_us,
        buffers_us,
        host: (host0, host1),
        device: (dev0, dev1),
    }
}

/// The number of small scans a part makes (`STRESS_CALLS`, 10^6).
fn stress_calls() -> usize {
    std::env::var("STRESS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn small(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    let SmallScans {
        calls,
        lengths,
        input,
        us,
        wall_us,
        launch_us,
        buffers_us,
        host: (host0, host1),
        device: (dev0, dev1),
    } = small_scans(ctx, &mut Rng64::seed_from_u64(seed), stress_calls());
    let grew = |a: f64, b: f64| b - a > 1.0;
    let ok = !grew(host0, host1) && !grew(dev0, dev1);
    rows.push(Row {
        part: "small: one scanner",
        figure: format!(
            "{calls} scans of 2^10..2^16: {us:.2} us of host time a call (empty launch {launch_us:.2} us, +{:.2}; with the two buffers {buffers_us:.2} us, +{:.2}), {wall_us:.2} us a call to the stream's end; host {host0:.0} -> {host1:.0} MiB, device {dev0:.0} -> {dev1:.0} MiB",
            us - launch_us,
            us - buffers_us
        ),
        verdict: if !ok {
            "FAIL (memory grew)"
        } else if us <= launch_us + 1.0 {
            "pass"
        } else {
            "pass (over launch + 1 us)"
        },
    });

    // 8 threads, a scanner and a stream each, twice: the second round must
    // end with the memory the first ended with (each round's streams,
    // buffers and scanners freed).
    let threads = 8;
    let per_thread = calls / threads;
    let (input, lengths) = (&input, &lengths);
    let round = || {
        let barrier = Barrier::new(threads);
        let start = Instant::now();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        let stream = ctx.new_stream().unwrap();
                        let d_in = stream.clone_htod(input).unwrap();
                        let mut d_out: CudaSlice<u32> = stream.alloc_zeros(1 << 16).unwrap();
                        let mut scanner = stress_scanner::<Sum<u32>>(ctx);
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
        });
        (start.elapsed().as_secs_f64(), host_mib(), device_mib(ctx))
    };
    let (_, host_a, dev_a) = round();
    let (seconds, host_b, dev_b) = round();
    let ok = !grew(host_a, host_b) && !grew(dev_a, dev_b);
    rows.push(Row {
        part: "small: 8 threads",
        figure: format!(
            "{} scans in {seconds:.2} s ({:.2} us a scan, all threads); after each of two rounds: host {host_a:.0} -> {host_b:.0} MiB, device {dev_a:.0} -> {dev_b:.0} MiB",
            per_thread * threads,
            seconds * 1e6 / (per_thread * threads) as f64,
        ),
        verdict: if ok { "pass" } else { "FAIL (memory grew)" },
    });
}

/// The small scans of [`small`] on a stream and buffers made while the
/// context's event tracking is off, beside the empty kernel launched the
/// same way: what the library itself adds to a launch, with none of
/// cudarc's per-buffer events (each use of a tracked buffer waits on its
/// last write and records an event, about 0.4 us a driver call) on either
/// side. Tracking is switched back on before returning.
fn untracked(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    let mut rng = Rng64::seed_from_u64(seed ^ 0x0074_7261_636b_6564);
    // SAFETY: small_scans uses its buffers on its one stream and frees
    // them after that stream's synchronize; tracking is restored after.
    unsafe { ctx.disable_event_tracking() };
    let SmallScans {
        calls,
        us,
        launch_us,
        buffers_us,
        ..
    } = small_scans(ctx, &mut rng, stress_calls().min(200_000));
    // SAFETY: the buffers made untracked are freed; later ones are tracked
    // again, as cudarc's default.
    unsafe { ctx.enable_event_tracking() };
    rows.push(Row {
        part: "small: untracked",
        figure: format!(
            "{calls} scans of 2^10..2^16, buffers without events: {us:.2} us of host time a call (empty launch {launch_us:.2} us, +{:.2}; with the two buffers {buffers_us:.2} us, +{:.2})",
            us - launch_us,
            us - buffers_us
        ),
        verdict: if us <= launch_us + 1.0 {
            "pass"
        } else {
            "pass (over launch + 1 us)"
        },
    });
}

/// Host microseconds a call of an empty kernel launched as cudarc launches
/// one, over `calls` calls (at most 200,000) on `stream`: with no
/// arguments, and given `d_in` and `d_out` as a scan is.
fn empty_launches_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    d_in: &CudaSlice<u32>,
    d_out: &mut CudaSlice<u32>,
    calls: usize,
) -> (f64, f64) {
    let arch = target_arch(ctx).unwrap();
    let ptx = DeviceApi::compile(
        "extern \"C\" __global__ void stress_empty() {}\n\
         extern \"C\" __global__ void stress_empty_two(const unsigned* a, unsigned* b) {}",
        arch,
        &[],
    )
    .expect("NVRTC");
    let module = ctx.load_module(ptx).unwrap();
    let empty = module.load_function("stress_empty").unwrap();
    let empty_two = module.load_function("stress_empty_two").unwrap();
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let (launch_us, _) = per_call_us(stream, calls.min(200_000), |_| {
        // SAFETY: the kernel takes no arguments and touches no memory.
        unsafe { stream.launch_builder(&empty).launch(config) }.unwrap();
    });
    // As cudarc passes the scan's buffers: with its event tracking on (in a
    // context with several streams), each buffer's use waits for its last
    // write and records an event (what any kernel of the user's pays).
    let (buffers_us, _) = per_call_us(stream, calls.min(200_000), |_| {
        let mut launch = stream.launch_builder(&empty_two);
        launch.arg(d_in).arg(&mut *d_out);
        // SAFETY: the kernel reads and writes nothing.
        unsafe { launch.launch(config) }.unwrap();
    });
    (launch_us, buffers_us)
}

/// Scans 2^20 + 7 random elements with `Op` on a new scanner (compiling
/// what it needs, or waiting for another thread's compile of it) and
/// checks them against the CPU.
fn build_and_check<Op: ScanOp>(
    ctx: &Arc<CudaContext>,
    seed: u64,
    random: fn(&mut Rng64) -> Op::Element,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + std::fmt::Debug,
{
    let mut rng = Rng64::seed_from_u64(seed);
    let input: Vec<Op::Element> = (0..(1 << 20) + 7).map(|_| random(&mut rng)).collect();
    let stream = ctx.new_stream().unwrap();
    let mut scanner = stress_scanner::<Op>(ctx);
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
}

fn threads(ctx: &Arc<CudaContext>, seed: u64, cache: &std::path::Path, rows: &mut Vec<Row>) {
    type Job = fn(&Arc<CudaContext>, u64);
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
    let compiles_before = jit::compiles();
    let barrier = Barrier::new(16);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(300);
    std::thread::scope(|s| {
        for t in 0..16 {
            let (barrier, done_tx, job) = (&barrier, done_tx.clone(), jobs[t / 2]);
            s.spawn(move || {
                barrier.wait();
                job(ctx, seed + t as u64);
                done_tx.send(t).unwrap();
            });
        }
        drop(done_tx);
        // The watchdog: all 16 within five minutes, or a deadlock. A
        // thread that panicked (a wrong scan) ends the channel early.
        let mut done = 0;
        while done < 16 {
            let left = deadline.saturating_duration_since(Instant::now());
            match done_rx.recv_timeout(left) {
                Ok(_) => done += 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    eprintln!("threads: {done} of 16 scanners done after 300 s: a deadlock");
                    std::process::exit(2);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    // Every compile stores one disk cache entry, under its program's key: a
    // kernel compiled twice is two compiles for one entry.
    let compiles = jit::compiles() - compiles_before;
    let entries = std::fs::read_dir(cache)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "bin"))
            })
            .count() as u64
        })
        .unwrap_or(0);
    let once = compiles == entries && compiles > 0;
    rows.push(Row {
        part: "threads: 16 scanners",
        figure: format!(
            "8 operators x 2 threads, cold disk cache: {:.1} s; NVRTC compiles {compiles}, disk cache entries {entries}",
            start.elapsed().as_secs_f64()
        ),
        verdict: if once { "pass" } else { "FAIL (a kernel compiled twice, or none)" },
    });
}

fn oom(ctx: &Arc<CudaContext>, seed: u64, rows: &mut Vec<Row>) {
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let n = (1 << 26) + 3;
    let input = random_u32(&mut rng, n);
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out = stream.clone_htod(&vec![0xdead_beefu32; n]).unwrap();
    // The kernels loaded first (module loads need device memory too): the
    // scan below fails, if it does, for its own workspace.
    let mut warm = stress_scanner::<Sum<u32>>(ctx);
    let mut scratch = stream.alloc_zeros::<u32>(n).unwrap();
    warm.scan(&stream, ScanKind::Inclusive, &d_in, &mut scratch)
        .unwrap();
    drop((warm, scratch));
    stream.synchronize().unwrap();
    let base = device_mib(ctx);
    // Fill the device: 1 GiB pieces, then smaller ones down to 256 bytes,
    // until none fits.
    let mut hog: Vec<CudaSlice<u8>> = Vec::new();
    for piece in [1usize << 30, 1 << 24, 1 << 20, 1 << 16, 1 << 12, 1 << 8] {
        // SAFETY: bytes never read; any bit pattern is a valid u8.
        while let Ok(b) = unsafe { stream.alloc::<u8>(piece) } {
            hog.push(b);
        }
    }
    stream.synchronize().unwrap();
    // A new scanner: its workspace has to be allocated.
    let mut scanner = stress_scanner::<Sum<u32>>(ctx);
    let err = scanner.scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out);
    drop(hog);
    stream.synchronize().unwrap();
    let untouched = stream
        .clone_dtoh(&d_out)
        .map(|v| v.iter().all(|&x| x == 0xdead_beef));
    let message = match &err {
        Err(e) => e.to_string(),
        Ok(()) => "no error".into(),
    };
    let freed = device_mib(ctx);
    scanner
        .scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out)
        .unwrap();
    let right = stream.clone_dtoh(&d_out).unwrap() == cpu::inclusive_vec::<Sum<u32>>(&input);
    let after = device_mib(ctx);
    // An error must have left the output as it was; a scan that fit (the
    // allocator had room after all) tested nothing, and says so.
    let failed_cleanly = err.is_err() && untouched.as_ref().is_ok_and(|&u| u);
    let ok = (failed_cleanly || err.is_ok()) && right && freed <= base + 1.0;
    rows.push(Row {
        part: "oom: device filled",
        figure: format!(
            "scan of 2^26+3 u32: {message}; output untouched {untouched:?}; device {base:.0} MiB before, {freed:.0} after freeing, {after:.0} after the next scan, which is right: {right}"
        ),
        verdict: if !ok {
            "FAIL"
        } else if err.is_err() {
            "pass"
        } else {
            "untested (the scan fit)"
        },
    });
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
    let mut scanner = stress_scanner::<Sum<u32>>(&ctx);
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
            let _ = child.kill();
            let _ = child.wait();
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

/// `Sum<T>` over `n` elements, plain and in segments of `row` elements
/// (by offsets, the last one short), on the GPU against the CPU (integers:
/// bit for bit).
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
    let mut scanner = stress_scanner::<Sum<T>>(ctx);
    let mut want = vec![T::default(); n];
    let mut checks = Vec::new();
    // Plain.
    scanner
        .scan(&stream, ScanKind::Inclusive, &d_in, &mut d_out)
        .unwrap();
    cpu::par_scan::<Sum<T>>(ScanKind::Inclusive, &input, &mut want).unwrap();
    checks.push(("plain", stream.clone_dtoh(&d_out).unwrap() == want));
    // Segments by u64 offsets 0, row, 2·row, …, n: each its own scan on
    // the CPU.
    let offsets: Vec<u64> = (0..n.div_ceil(row))
        .map(|k| (k * row) as u64)
        .chain([n as u64])
        .collect();
    let d_offsets = stream.clone_htod(&offsets).unwrap();
    let segments = DeviceOffsets::check(&stream, d_offsets.as_view(), n).unwrap();
    scanner
        .scan(
            &stream,
            ScanSpec::inclusive().segments(&segments),
            &d_in,
            &mut d_out,
        )
        .unwrap();
    want.par_chunks_mut(row)
        .zip(input.par_chunks(row))
        .for_each(|(w, x)| cpu::scan::<Sum<T>>(ScanKind::Inclusive, x, w).unwrap());
    checks.push(("segmented", stream.clone_dtoh(&d_out).unwrap() == want));
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
    // Segments of 2^31 + 11 elements: one past 2^31, and the last one short.
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
    if wanted("untracked") {
        untracked(&ctx, seed, &mut rows);
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
    if rows.iter().any(|r| r.verdict.starts_with("FAIL")) {
        std::process::exit(1);
    }
}
