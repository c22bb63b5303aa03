//! First use on the GPU: a scan compiles only the kernel it needs, as a
//! CUBIN for the device, kept in the disk cache; a cache entry the driver
//! refuses to load (checksum intact, image broken) is deleted and rebuilt,
//! and so is one that must not reach the driver at all (a CUBIN cut short,
//! of another architecture, random bytes, an empty file, a directory)
//! instead of failing every later process. A scan whose preferred kernel is
//! not compiled yet runs on an interim kernel (small tiles) while the
//! preferred one compiles in the background, then takes it; with background
//! compiles off it waits for it. A process that ends while a background
//! compile runs exits cleanly, the compile finished and cached (dropping
//! the scanner waits for it). Each step runs in a fresh child
//! process (this binary's ignored worker test), so that nothing comes from
//! the in-memory cache.
//!
//! Where NVRTC has quick builds (`kernels_gen::QUICK_BUILD_OPTION`, NVRTC
//! 12.8 on), the kernel a first scan compiles in the foreground is a quick
//! build of it, and its optimized build compiles in the background too:
//! the scans on quick builds are checked against the CPU like the others.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::open_gpu;
use common::ops::*;
use gpu_scan::kernels_gen::abi::KernelAbi;
use gpu_scan::kernels_gen::Kernel;
use gpu_scan::scan_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use gpu_scan::scan_runtime::cudarc::driver::CudaContext;
use gpu_scan::scan_runtime::{GpuScanner, ProgramOrigin};
use gpu_scan::ScanOp;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const CACHE_ENV: &str = "GPU_FIRST_USE_CACHE";

/// The worker's input length (default 1000: one tile).
const LENGTH_ENV: &str = "GPU_FIRST_USE_LENGTH";
/// How the worker goes on after its first scan ([`Mode`]).
const MODE_ENV: &str = "GPU_FIRST_USE_MODE";

/// What a worker does around its first scan.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Background compiles on; after the first scan, wait for them and
    /// scan again.
    Background,
    /// Background compiles off: the first scan waits for every kernel it
    /// prefers (`Tuning::background_compile`).
    Wait,
    /// Background compiles on; the process ends right after the first
    /// scan, its background compile still running.
    Exit,
    /// Background compiles on, on a `ctx.new_stream()` stream with a
    /// second one alive (cudarc's event tracking): right after the first
    /// scan, without a wait or `reserve`, the same scan is captured in a
    /// graph (global and thread-local modes) and each graph replayed on
    /// fresh inputs, outputs poisoned.
    Capture,
}

/// Worker: one scanner, an inclusive `u32` sum of `GPU_FIRST_USE_LENGTH`
/// elements checked against the CPU; prints how its kernels were obtained
/// and which it holds, then (unless its mode is `Exit`) waits for
/// background compiles, scans again (checked), and prints the kernels it
/// holds then.
#[test]
#[ignore = "worker process of the first-use tests"]
fn first_use_worker() {
    let Some(ctx) = open_gpu("first_use_worker") else {
        return;
    };
    std::env::var_os(CACHE_ENV).expect("run by the first-use test");
    let n: usize = std::env::var(LENGTH_ENV).map_or(1000, |v| v.parse().unwrap());
    let mode = std::env::var(MODE_ENV).expect("run by the first-use test");
    let (stream, _other) = if mode == "Capture" {
        (ctx.new_stream().unwrap(), Some(ctx.new_stream().unwrap()))
    } else {
        (ctx.default_stream(), None)
    };
    let host: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let expected = gpu_scan::cpu::inclusive_vec::<SumU32>(&host);
    let mut input = stream.clone_htod(&host).unwrap();
    let mut output = stream.alloc_zeros::<u32>(host.len()).unwrap();
    let disk = gpu_scan::scan_runtime::DiskCache::at(std::env::var_os(CACHE_ENV).unwrap());
    let mut scanner = GpuScanner::<SumU32>::with_disk_cache(&ctx, &disk).unwrap();
    if mode == "Wait" {
        scanner.set_tuning(scanner.tuning().with_background_compile(false));
    }
    scanner.inclusive(&stream, &input, &mut output).unwrap();
    assert!(
        stream.clone_dtoh(&output).unwrap() == expected,
        "the first scan"
    );
    let stats = scanner.program_stats();
    let first = scanner.kernel_symbols_for_tests().join(",");
    if mode == "Capture" {
        for capture in [
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        ] {
            stream.begin_capture(capture).unwrap();
            let captured = scanner.inclusive(&stream, &input, &mut output);
            let ended = stream.end_capture(CUgraphInstantiate_flags(0));
            let graph = match (captured, ended) {
                (Ok(()), Ok(Some(graph))) => graph,
                (captured, ended) => panic!(
                    "{capture:?}: capture failed: scan {captured:?}, end_capture {:?}",
                    ended.map(|g| g.is_some())
                ),
            };
            for replay in 0..3u32 {
                let fresh: Vec<u32> = (0..n as u32)
                    .map(|i| (i ^ (replay << 20)).wrapping_mul(0x9e37_79b9) ^ capture as u32)
                    .collect();
                stream.memcpy_htod(&fresh, &mut input).unwrap();
                stream
                    .memcpy_htod(&vec![0xdead_beef_u32; n], &mut output)
                    .unwrap();
                graph.launch().unwrap();
                assert!(
                    stream.clone_dtoh(&output).unwrap()
                        == gpu_scan::cpu::inclusive_vec::<SumU32>(&fresh),
                    "{capture:?} replay {replay}"
                );
            }
        }
        ctx.check_err().unwrap();
    }
    if mode == "Exit" || mode == "Capture" {
        // Ends the process at once: the scanner's drop waits for the
        // background compile its first scan started.
        println!(
            "first-use: origin={:?} kernels={} first={first} settled=-",
            stats.origin, stats.kernels_loaded
        );
        return;
    }
    scanner.wait_for_background_compiles();
    stream.memset_zeros(&mut output).unwrap();
    scanner.inclusive(&stream, &input, &mut output).unwrap();
    assert!(
        stream.clone_dtoh(&output).unwrap() == expected,
        "the scan after the wait"
    );
    println!(
        "first-use: origin={:?} kernels={} first={first} settled={}",
        stats.origin,
        stats.kernels_loaded,
        scanner.kernel_symbols_for_tests().join(",")
    );
}

/// What a worker reported.
#[derive(Debug, PartialEq)]
struct Report {
    origin: ProgramOrigin,
    /// Kernels its first scan compiled or read from disk.
    kernels: usize,
    /// The kernels the scanner held after its first scan.
    first: Vec<String>,
    /// ... and after waiting for background compiles and scanning again.
    settled: Vec<String>,
}

fn run_worker_with(cache: &Path, length: usize, mode: Mode) -> Report {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "first_use_worker", "--ignored", "--nocapture"])
        .env(CACHE_ENV, cache)
        .env(LENGTH_ENV, length.to_string())
        .env(MODE_ENV, format!("{mode:?}"))
        .env("GPU_REQUIRED", "1");
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "worker failed:\n{text}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("first-use: "))
        .unwrap_or_else(|| panic!("no report in:\n{text}"));
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    let origin = match field("origin") {
        "Compiled" => ProgramOrigin::Compiled,
        "DiskCache" => ProgramOrigin::DiskCache,
        "Memory" => ProgramOrigin::Memory,
        other => panic!("bad report {other:?}"),
    };
    let list = |v: &str| v.split(',').map(String::from).collect();
    Report {
        origin,
        kernels: field("kernels").parse().expect("a kernel count"),
        first: list(field("first")),
        settled: list(field("settled")),
    }
}

/// A worker scanning one tile with background compiles off, so that its
/// one kernel is built optimized and is the cache's one entry.
fn run_worker(cache: &Path) -> (ProgramOrigin, usize) {
    let report = run_worker_with(cache, 1000, Mode::Wait);
    (report.origin, report.kernels)
}

/// Whether this process's NVRTC makes quick builds (the runtime's test:
/// NVRTC 12.8 or newer, `GPU_SCAN_QUICK_BUILDS` unset or `auto`).
fn quick_builds_here() -> bool {
    let auto = std::env::var(gpu_scan::scan_runtime::QUICK_BUILDS_ENV)
        .map_or(true, |v| matches!(v.trim(), "" | "auto"));
    let nvrtc = gpu_scan::scan_runtime::nvrtc().unwrap().version();
    auto && (nvrtc.major, nvrtc.minor) >= (12, 8)
}

/// How a worker lists `symbol` when it holds it as a quick build (where
/// there are quick builds), and the disk entries it costs: the quick build
/// and the optimized one compiled behind it.
fn interim(symbol: &str) -> (String, usize) {
    if quick_builds_here() {
        (format!("{symbol}~quick"), 2)
    } else {
        (symbol.to_string(), 1)
    }
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn first_use_compiles_one_kernel_and_rebuilds_a_refused_entry() {
    if open_gpu("gpu_first_use").is_none() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("first-use-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // A fresh cache: the one kernel a single-tile scan needs, compiled.
    assert_eq!(run_worker(&dir), (ProgramOrigin::Compiled, 1));
    let cached = entries(&dir);
    assert_eq!(
        cached.len(),
        1,
        "one cache entry for one kernel: {cached:?}"
    );
    let image = std::fs::read(&cached[0]).unwrap();
    let payload = &image[image.iter().position(|&b| b == b'\n').unwrap() + 1..];
    assert_eq!(&payload[..4], b"\x7fELF", "the cached image is a CUBIN");

    // The next process reads it from disk.
    assert_eq!(run_worker(&dir), (ProgramOrigin::DiskCache, 1));

    // An entry whose checksum is right but whose image the driver refuses:
    // deleted and rebuilt, and the scan still right (the worker checks).
    let garbage = b"not an image the driver can load".repeat(8);
    let mut entry = format!("gpu-scan-image v2 {:x}\n", Sha256::digest(&garbage)).into_bytes();
    entry.extend_from_slice(&garbage);
    std::fs::write(&cached[0], &entry).unwrap();
    assert_eq!(run_worker(&dir), (ProgramOrigin::Compiled, 1));
    assert_ne!(
        std::fs::read(&cached[0]).unwrap(),
        entry,
        "the refused entry was replaced"
    );
    assert_eq!(run_worker(&dir), (ProgramOrigin::DiskCache, 1));

    // Entries the driver must never see (a CUBIN cut short crashed the
    // process that loaded it, and every later one): each is deleted before
    // loading and rebuilt, in a fresh process that scans right.
    let whole = payload.to_vec();
    let target = gpu_scan::scan_runtime::target_arch(&open_gpu("gpu_first_use").unwrap()).unwrap();
    let other_arch: &[u8] = if target == gpu_scan::Arch::SM_80 {
        include_bytes!("../scan-runtime/tests/fixtures/k_sm_90.cubin")
    } else {
        include_bytes!("../scan-runtime/tests/fixtures/k_sm_80.cubin")
    };
    let random: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
        .collect();
    let with_checksum = |image: &[u8]| {
        let mut entry = format!("gpu-scan-image v2 {:x}\n", Sha256::digest(image)).into_bytes();
        entry.extend_from_slice(image);
        entry
    };
    for (what, entry) in [
        (
            "a CUBIN cut in half",
            Some(with_checksum(&whole[..whole.len() / 2])),
        ),
        (
            "a CUBIN one byte short",
            Some(with_checksum(&whole[..whole.len() - 1])),
        ),
        (
            "a CUBIN of another architecture",
            Some(with_checksum(other_arch)),
        ),
        ("random bytes", Some(with_checksum(&random))),
        ("an empty file", Some(Vec::new())),
        ("a directory", None),
    ] {
        match &entry {
            Some(bytes) => std::fs::write(&cached[0], bytes).unwrap(),
            None => {
                std::fs::remove_file(&cached[0]).unwrap();
                std::fs::create_dir_all(cached[0].join("inside")).unwrap();
            }
        }
        assert_eq!(
            run_worker(&dir),
            (ProgramOrigin::Compiled, 1),
            "{what}: rebuilt"
        );
        let rebuilt = std::fs::read(&cached[0]).unwrap_or_default();
        let payload = &rebuilt[rebuilt.iter().position(|&b| b == b'\n').unwrap_or(0)..];
        assert!(
            rebuilt.len() == image.len() && payload[1..].starts_with(b"\x7fELF"),
            "{what}: the entry holds a whole CUBIN again"
        );
        assert_eq!(run_worker(&dir), (ProgramOrigin::DiskCache, 1), "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A one-tile scan in a fresh process with background compiles on (the
/// default): its kernel runs as a quick build (checked), the optimized one
/// compiles behind it and is what the scan after the wait takes (checked);
/// the next process reads the optimized build from disk at once.
#[test]
fn a_first_scan_runs_on_a_quick_build_while_the_optimized_one_compiles() {
    if open_gpu("gpu_first_use quick").is_none() {
        return;
    }
    let tiles = symbol(Kernel::ScanTilesInclusive);
    let (first, entries_cold) = interim(&tiles);
    let dir = fresh_dir("quick");
    let cold = run_worker_with(&dir, 1000, Mode::Background);
    assert_eq!(
        (cold.origin, cold.kernels),
        (ProgramOrigin::Compiled, 1),
        "{cold:?}"
    );
    assert_eq!(cold.first, vec![first.clone()], "{cold:?}");
    assert_eq!(cold.settled, vec![tiles.clone()], "{cold:?}");
    assert_eq!(entries(&dir).len(), entries_cold, "{cold:?}");
    let warm = run_worker_with(&dir, 1000, Mode::Background);
    assert_eq!(
        (warm.origin, warm.kernels),
        (ProgramOrigin::DiskCache, 1),
        "{warm:?}"
    );
    assert_eq!(warm.first, vec![tiles.clone()], "{warm:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The symbol of plain kernel `kernel` of the worker's operator.
fn symbol(kernel: Kernel) -> String {
    KernelAbi::plain(kernel).symbol(<SumU32 as ScanOp>::NAME)
}

/// The length past the pipelined pass's 2 MiB (16 MiB) that the first-use
/// tests scan to meet the kernel long inputs prefer.
const LONG: usize = (1 << 22) + 5;

/// The kernel a scan of [`LONG`] elements prefers on this device: the
/// pipelined pass where the program has bulk copies, else the look-back
/// pass in full tiles.
fn preferred_long_kernel(ctx: &Arc<CudaContext>) -> String {
    let pipelined_here = gpu_scan::scan_runtime::target_arch(ctx)
        .unwrap()
        .has_bulk_copies();
    symbol(if pipelined_here {
        Kernel::PipelinedInclusive
    } else {
        Kernel::SinglePassInclusive
    })
}

/// A fresh cache directory of this process, named `name`.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("first-use-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_cold_kernel_compiles_in_the_background_behind_an_interim_one() {
    let Some(ctx) = open_gpu("gpu_first_use background") else {
        return;
    };
    // Lengths that prefer the pipelined pass (16 MiB) where the device has
    // it, and one that prefers the look-back pass in full tiles (past the
    // small-tile limit, under the pipelined pass's 2 MiB).
    let mid = (1usize << 17) + 3;
    let (small, interim_entries) = interim(&symbol(Kernel::SinglePassSmallInclusive));
    for (n, preferred) in [
        (LONG, preferred_long_kernel(&ctx)),
        (mid, symbol(Kernel::SinglePassInclusive)),
    ] {
        // An empty cache: the first scan runs on the small tiles' kernel and
        // compiles only that one in the foreground (a quick build where
        // there are); the preferred kernel is loaded after the wait and
        // taken by the next scan (both checked against the CPU by the
        // worker); all land in the disk cache.
        let dir = fresh_dir(&format!("background-{n}"));
        let cold = run_worker_with(&dir, n, Mode::Background);
        assert_eq!(
            (cold.origin, cold.kernels),
            (ProgramOrigin::Compiled, 1),
            "n={n}: {cold:?}"
        );
        assert_eq!(cold.first, vec![small.clone()], "n={n}: {cold:?}");
        let mut both = vec![small.clone(), preferred.clone()];
        both.sort();
        assert_eq!(cold.settled, both, "n={n}: {cold:?}");
        assert_eq!(
            entries(&dir).len(),
            interim_entries + 1,
            "n={n}: every build cached"
        );

        // The next process finds the preferred kernel on disk and takes it
        // at once.
        let warm = run_worker_with(&dir, n, Mode::Background);
        assert_eq!(
            (warm.origin, warm.kernels),
            (ProgramOrigin::DiskCache, 1),
            "n={n}: {warm:?}"
        );
        assert_eq!(warm.first, vec![preferred.clone()], "n={n}: {warm:?}");
        assert_eq!(warm.settled, vec![preferred.clone()], "n={n}: {warm:?}");

        // Background compiles off: the first scan waits for the preferred
        // kernel, and compiles nothing else.
        let waited_dir = fresh_dir(&format!("waited-{n}"));
        let waited = run_worker_with(&waited_dir, n, Mode::Wait);
        assert_eq!(
            (waited.origin, waited.kernels),
            (ProgramOrigin::Compiled, 1),
            "n={n}: {waited:?}"
        );
        assert_eq!(waited.first, vec![preferred.clone()], "n={n}: {waited:?}");
        assert_eq!(entries(&waited_dir).len(), 1, "n={n}");
        for d in [dir, waited_dir] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A program that ends while a background compile runs (its only scan
/// done, the scanner dropped as `main` returns) exits with success, and the
/// compile it started finished first: the preferred kernel is in the disk
/// cache for the next process. Without the wait on drop, such a process
/// could end with NVRTC still running on the compile thread and leave
/// only the interim kernel cached (the quickstart example, which ends so,
/// reported a failing exit status on an H200; it passes since).
#[test]
fn a_process_that_ends_during_a_background_compile_exits_cleanly() {
    let Some(ctx) = open_gpu("gpu_first_use exit") else {
        return;
    };
    let dir = fresh_dir("exit");
    let report = run_worker_with(&dir, LONG, Mode::Exit);
    let (small, interim_entries) = interim(&symbol(Kernel::SinglePassSmallInclusive));
    assert_eq!(report.first, vec![small], "{report:?}");
    assert_eq!(
        entries(&dir).len(),
        interim_entries + 1,
        "the interim kernel's builds and the preferred one ({}) cached",
        preferred_long_kernel(&ctx)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A scan captured in a graph right after a first scan that ran on a
/// quick or interim build, its preferred kernel still compiling behind it,
/// without `reserve`, on a `ctx.new_stream()` stream beside another (what a
/// user does who scans once and then captures): the capture succeeds in
/// both capture modes and every replay on fresh inputs is right (checked
/// by the worker); lengths of one tile (a quick build) and of the
/// pipelined pass (the interim small tiles).
#[test]
fn a_graph_captured_right_after_a_quick_built_scan_replays_right() {
    if open_gpu("gpu_first_use capture").is_none() {
        return;
    }
    for n in [1000, LONG] {
        let dir = fresh_dir(&format!("capture-{n}"));
        let report = run_worker_with(&dir, n, Mode::Capture);
        assert_eq!(report.origin, ProgramOrigin::Compiled, "n={n}: {report:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
