//! First use on the GPU: a scan compiles only the kernel it needs, as a
//! CUBIN for the device, kept in the disk cache; a cache entry the driver
//! refuses to load (checksum intact, image broken) is deleted and rebuilt
//! instead of failing every later process. Each step runs in a fresh child
//! process (this binary's ignored worker test), so that nothing comes from
//! the in-memory cache.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::open_gpu;
use common::ops::*;
use gpu_scan::scan_runtime::{GpuScanner, ProgramOrigin};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const CACHE_ENV: &str = "GPU_FIRST_USE_CACHE";

/// Worker: one scanner, one single-tile inclusive `u32` sum, checked
/// against the CPU; prints how its kernels were obtained.
#[test]
#[ignore = "worker process of first_use_compiles_one_kernel_and_rebuilds_a_refused_entry"]
fn first_use_worker() {
    let Some(ctx) = open_gpu("first_use_worker") else {
        return;
    };
    std::env::var_os(CACHE_ENV).expect("run by the first-use test");
    let stream = ctx.default_stream();
    let host: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let input = stream.clone_htod(&host).unwrap();
    let mut output = stream.alloc_zeros::<u32>(host.len()).unwrap();
    let disk = gpu_scan::scan_runtime::DiskCache::at(std::env::var_os(CACHE_ENV).unwrap());
    let mut scanner = GpuScanner::<SumU32>::with_disk_cache(&ctx, &disk).unwrap();
    scanner.inclusive(&stream, &input, &mut output).unwrap();
    let got = stream.clone_dtoh(&output).unwrap();
    assert_eq!(got, gpu_scan::cpu::inclusive_vec::<SumU32>(&host));
    let stats = scanner.program_stats();
    println!(
        "first-use: origin={:?} kernels={}",
        stats.origin, stats.kernels_loaded
    );
}

fn run_worker(cache: &Path) -> (ProgramOrigin, usize) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "first_use_worker", "--ignored", "--nocapture"])
        .env(CACHE_ENV, cache)
        .env("GPU_REQUIRED", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "worker failed:\n{text}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("first-use: "))
        .unwrap_or_else(|| panic!("no report in:\n{text}"));
    let origin = match line.split_whitespace().next() {
        Some("origin=Compiled") => ProgramOrigin::Compiled,
        Some("origin=DiskCache") => ProgramOrigin::DiskCache,
        Some("origin=Memory") => ProgramOrigin::Memory,
        other => panic!("bad report {other:?}"),
    };
    let kernels = line
        .split("kernels=")
        .nth(1)
        .and_then(|k| k.trim().parse().ok())
        .expect("a kernel count");
    (origin, kernels)
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
    let _ = std::fs::remove_dir_all(&dir);
}
