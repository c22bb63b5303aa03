//! Runtime behaviour that needs no GPU: the disk cache around real NVRTC
//! compiles (hits, corrupt entries, two processes at once), a missing NVRTC
//! as a typed error, and the CPU fallback.
//!
//! Tests that compile need libnvrtc (scripts/test provides it and sets
//! SCAN_REQUIRE_NVRTC=1; without it they skip with one line).
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::ops::*;
use gpu_scan::kernels_gen::Arch;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{cache::DiskCache, jit, ScanError};
use std::path::PathBuf;
use std::process::Command;

fn nvrtc_or_skip(test: &str) -> bool {
    let present = jit::nvrtc_present();
    let required = std::env::var_os("SCAN_REQUIRE_NVRTC").is_some_and(|v| v == "1");
    assert!(
        present || !required,
        "SCAN_REQUIRE_NVRTC=1 but libnvrtc could not be loaded"
    );
    if !present {
        println!("{test}: skipped (libnvrtc not found)");
    }
    present
}

fn fresh_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn compile_sum(disk: &DiskCache) -> Result<jit::Compiled, ScanError> {
    jit::compile(
        SumU32::NAME,
        &gpu_scan::scan_runtime::program_source::<SumU32>(&[
            gpu_scan::kernels_gen::abi::KernelAbi::plain(
                gpu_scan::kernels_gen::Kernel::ScanTilesInclusive,
            ),
        ]),
        gpu_scan::kernels_gen::nvrtc_options(Arch::SM_90),
        Arch::SM_90,
        0,
        disk,
    )
}

fn only_entry(dir: &PathBuf) -> PathBuf {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "expected one cache entry in {}: {entries:?}",
        dir.display()
    );
    entries[0].clone()
}

#[test]
fn second_compile_comes_from_disk_and_a_corrupt_entry_is_rebuilt() {
    if !nvrtc_or_skip("disk cache") {
        return;
    }
    let dir = fresh_dir("rebuild");
    let disk = DiskCache::at(&dir);
    let first = compile_sum(&disk).unwrap();
    assert!(!first.from_disk);
    let second = compile_sum(&disk).unwrap();
    assert!(
        second.from_disk,
        "the second compile must be a disk-cache hit"
    );
    assert_eq!(first.image, second.image);

    // Truncate the entry as a crash mid-write (without the rename) would not,
    // but a full disk or a bad copy might.
    let entry = only_entry(&dir);
    let bytes = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
    let rebuilt = compile_sum(&disk).unwrap();
    assert!(!rebuilt.from_disk, "a truncated entry must not be used");
    assert_eq!(rebuilt.image, first.image);
    assert!(
        compile_sum(&disk).unwrap().from_disk,
        "the rebuilt entry is cached again"
    );

    // Same length, one byte changed: caught by the checksum, not by size.
    let mut bytes = std::fs::read(&entry).unwrap();
    let at = bytes.len() - 10;
    bytes[at] = bytes[at].wrapping_add(1);
    std::fs::write(&entry, &bytes).unwrap();
    let rebuilt = compile_sum(&disk).unwrap();
    assert!(!rebuilt.from_disk);
    assert_eq!(
        rebuilt.image, first.image,
        "a corrupt entry never yields a wrong program"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cubin_for_the_exact_architecture_is_compiled_and_cached() {
    if !nvrtc_or_skip("cubin") {
        return;
    }
    let dir = fresh_dir("cubin");
    let disk = DiskCache::at(&dir);
    let source = gpu_scan::scan_runtime::program_source::<SumU32>(&[
        gpu_scan::kernels_gen::abi::KernelAbi::plain(
            gpu_scan::kernels_gen::Kernel::PipelinedInclusive,
        ),
    ]);
    let compile = || {
        jit::compile(
            SumU32::NAME,
            &source,
            gpu_scan::kernels_gen::nvrtc_cubin_options(Arch::SM_90),
            Arch::SM_90,
            0,
            &disk,
        )
        .unwrap()
    };
    let first = compile();
    let jit::Image::Cubin(bytes) = &first.image else {
        panic!("sm_90 options must give a CUBIN");
    };
    assert_eq!(&bytes[..4], b"\x7fELF", "a CUBIN is an ELF image");
    assert!(!first.from_disk);
    let second = compile();
    assert!(second.from_disk);
    assert_eq!(second.image, first.image);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Worker for the concurrency test: compiles into the cache named by
/// GPU_SCAN_WORKER_CACHE. Run only by `two_processes_fill_the_cache_at_once`.
#[test]
#[ignore = "worker process of two_processes_fill_the_cache_at_once"]
fn cache_fill_worker() {
    let dir = std::env::var_os("GPU_SCAN_WORKER_CACHE")
        .expect("run by two_processes_fill_the_cache_at_once");
    let disk = DiskCache::at(PathBuf::from(dir));
    for _ in 0..3 {
        compile_sum(&disk).expect("worker compile");
    }
}

#[test]
fn two_processes_fill_the_cache_at_once() {
    if !nvrtc_or_skip("concurrent cache") {
        return;
    }
    let dir = fresh_dir("concurrent");
    let spawn = || {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "cache_fill_worker",
                "--test-threads=1",
            ])
            .env("GPU_SCAN_WORKER_CACHE", &dir)
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success(), "first worker failed");
    assert!(b.wait().unwrap().success(), "second worker failed");
    only_entry(&dir);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );
    let hit = compile_sum(&DiskCache::at(&dir)).unwrap();
    assert!(hit.from_disk, "the entry both processes wrote is valid");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Worker for the missing-NVRTC test: exits 0 on the typed error, 3 when an
/// NVRTC is installed system-wide (the simulation is then impossible).
#[test]
#[ignore = "worker process of missing_nvrtc_is_a_typed_error"]
fn missing_nvrtc_worker() {
    if jit::nvrtc_present() {
        std::process::exit(3);
    }
    let err = compile_sum(&DiskCache::disabled())
        .err()
        .expect("compiling without NVRTC must fail");
    assert!(matches!(err, ScanError::NoNvrtc { .. }), "{err:?}");
    println!("typed error: {err}");
}

#[test]
fn missing_nvrtc_is_a_typed_error() {
    // Simulate a machine without NVRTC: an empty library path.
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "missing_nvrtc_worker",
            "--nocapture",
        ])
        .env("LD_LIBRARY_PATH", "")
        .env_remove("GPU_SCAN_NVRTC")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => assert!(
            stdout.contains("typed error: no usable NVRTC (libnvrtc.so.13: "),
            "{stdout}"
        ),
        Some(3) => println!("missing NVRTC: skipped (an NVRTC is installed system-wide)"),
        other => panic!(
            "worker failed ({other:?}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn without_a_gpu_the_cpu_backend_answers_and_an_explicit_gpu_request_is_a_typed_error() {
    if gpu_scan::scan_runtime::driver_present() {
        println!("no-GPU fallback: skipped (a CUDA driver is present)");
        return;
    }
    match Scanner::<AffineU32>::gpu() {
        Err(ScanError::GpuUnavailable(why)) => {
            assert!(matches!(*why, ScanError::NoDriver), "{why:?}")
        }
        Err(other) => panic!("expected GpuUnavailable, got {other:?}"),
        Ok(_) => panic!("a GPU scanner without a driver"),
    }
    let mut scanner = Scanner::<AffineU32>::new();
    assert_eq!(scanner.backend(), BackendKind::Cpu);
    match scanner.fallback_reason() {
        Some(ScanError::GpuUnavailable(why)) => {
            assert!(matches!(**why, ScanError::NoDriver), "{why:?}")
        }
        other => panic!("expected the reason for the CPU, got {other:?}"),
    }
    assert!(Scanner::<AffineU32>::cpu().fallback_reason().is_none());
    let input: Vec<_> = (0..100_000u32)
        .map(|i| AffineU32 {
            a: i | 1,
            b: i.wrapping_mul(2654435761),
        })
        .collect();
    assert_eq!(
        scanner.inclusive(&input).unwrap(),
        cpu::inclusive_vec::<AffineU32>(&input)
    );
    let init = AffineU32 { a: 3, b: 4 };
    assert_eq!(
        scanner.exclusive_with_init(&input, init).unwrap(),
        cpu::exclusive_with_init_vec::<AffineU32>(&input, init)
    );
}

#[test]
#[ignore = "worker process of the_cpu_fallback_prints_nothing"]
fn cpu_fallback_worker() {
    let mut scanner = Scanner::<AffineU32>::new();
    let _ = scanner.inclusive(&[AffineU32 { a: 1, b: 2 }]);
    let _ = Scanner::<AffineU32>::new();
    println!("backend: {:?}", scanner.backend());
}

#[test]
fn the_cpu_fallback_prints_nothing() {
    // A library never writes to the user's stderr by itself: the reason is
    // in Scanner::fallback_reason (and in `tracing`, for a subscriber).
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "cpu_fallback_worker", "--nocapture"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("gpu-scan"), "stderr: {stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("backend: "),
        "{out:?}"
    );
}

/// Worker for the NVRTC-choice tests: compiles the `u32` sum through the
/// disk cache in `SCAN_WORKER_CACHE` with the NVRTC this process chose
/// (`GPU_SCAN_NVRTC` may name one), and prints which and whether the image
/// came from the cache; or prints the typed error.
#[test]
#[ignore = "worker process of the NVRTC-choice tests"]
fn nvrtc_choice_worker() {
    let disk = DiskCache::at(PathBuf::from(
        std::env::var_os("SCAN_WORKER_CACHE").unwrap(),
    ));
    match compile_sum(&disk) {
        Ok(compiled) => {
            let nvrtc = gpu_scan::scan_runtime::nvrtc().unwrap();
            println!(
                "nvrtc {} from {} from_disk={}",
                nvrtc.version(),
                nvrtc.library(),
                compiled.from_disk
            );
        }
        Err(e) => println!("typed error: {e}"),
    }
}

fn run_choice_worker(cache: &std::path::Path, nvrtc: Option<&std::ffi::OsStr>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "nvrtc_choice_worker", "--nocapture"])
        .env("SCAN_WORKER_CACHE", cache)
        .env_remove("GPU_SCAN_NVRTC");
    if let Some(path) = nvrtc {
        cmd.env("GPU_SCAN_NVRTC", path);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "worker failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `GPU_SCAN_NVRTC` picks the NVRTC (here CUDA 12.9's, which
/// `scripts/cuda-tools` installs and names in `SCAN_NVRTC12`), and the disk
/// cache keeps each NVRTC's images apart: NVRTC 13's entry is not handed
/// out for 12.9, nor the other way round.
#[test]
fn an_nvrtc_named_in_the_environment_compiles_and_is_cached_apart() {
    if !nvrtc_or_skip("NVRTC choice") {
        return;
    }
    let Some(cu12) = std::env::var_os("SCAN_NVRTC12") else {
        assert!(
            std::env::var_os("SCAN_REQUIRE_NVRTC").is_none_or(|v| v != "1"),
            "SCAN_REQUIRE_NVRTC=1 but SCAN_NVRTC12 names no NVRTC 12 (scripts/cuda-tools sets it)"
        );
        println!("NVRTC choice: skipped (SCAN_NVRTC12 unset)");
        return;
    };
    let dir = fresh_dir("nvrtc-choice");
    let line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("nvrtc "))
            .map(str::to_string)
    };
    let first12 = run_choice_worker(&dir, Some(&cu12));
    assert!(
        line(&first12)
            .is_some_and(|l| l.starts_with("nvrtc 12.") && l.ends_with("from_disk=false")),
        "{first12}"
    );
    // The default choice (NVRTC 13 here; on a CUDA 12 machine perhaps this
    // same 12.9, which then finds its own entry) does not take 12.9's image.
    let default = run_choice_worker(&dir, None);
    let version = |out: &str| line(out).and_then(|l| l.split(' ').nth(1).map(str::to_string));
    let expected = if version(&default) == version(&first12) {
        "from_disk=true"
    } else {
        "from_disk=false"
    };
    assert!(
        line(&default).is_some_and(|l| l.ends_with(expected)),
        "{default}"
    );
    let again12 = run_choice_worker(&dir, Some(&cu12));
    assert!(
        line(&again12).is_some_and(|l| l.starts_with("nvrtc 12.") && l.ends_with("from_disk=true")),
        "{again12}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An NVRTC named in `GPU_SCAN_NVRTC` that cannot be loaded is a typed
/// error naming it; the runtime does not fall back to another one.
#[test]
fn a_missing_nvrtc_named_in_the_environment_is_a_typed_error() {
    let dir = fresh_dir("nvrtc-missing");
    let bogus = std::ffi::OsStr::new("/nonexistent/libnvrtc.so.12");
    let out = run_choice_worker(&dir, Some(bogus));
    assert!(
        out.contains("typed error: no usable NVRTC (/nonexistent/libnvrtc.so.12: "),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
