//! The single passes' launch state lives on the device (launch.cuh): these
//! tests check what that makes possible and what it promises, against the
//! CPU backend on fresh random inputs (seed printed; GPU_SUITE_SEED
//! replays), with outputs poisoned before every run.
//!
//! * `graph_capture_replays_on_changing_inputs`: scans captured in a CUDA
//!   graph (cudarc's `begin_capture`/`end_capture`, event tracking left at
//!   its default) replay correctly many times on new inputs, through every
//!   path, interleaved with ordinary scans on the same stream and
//!   workspace; growing the workspace during a capture is a typed error
//!   that leaves the output alone.
//! * `segmented_scans_by_keys_and_offsets_replay_in_a_graph`: the same for
//!   segmented scans by keys (new keys at every replay) and by offsets,
//!   each writing a carry-out slot that is checked at every replay, and the
//!   scan by keys again with counted per-key totals (their number changes
//!   from replay to replay and is found on the device).
//! * `two_streams_run_concurrently`: two scanners on two streams, and one
//!   scanner alternating between them (one workspace per stream), with no
//!   synchronisation between the scans.
//! * `one_scanner_on_two_threads_per_thread_streams`: one scanner behind a
//!   mutex, two threads scanning on their per-thread default streams (one
//!   `CUstream` handle, two streams), their scans overlapping.
//! * `launch_state_resets_and_the_epoch_wraps`: after every launch the state
//!   is back to counter 0 with the next epoch; across the epoch's wrap-around
//!   the sweep has cleared every stale status entry, so a scan whose epoch
//!   equals that of an old, longer scan over other data is still right.
//!
//! `AffineU32` is not commutative and exact: results compare bit for bit.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{DeviceKeys, DeviceOffsets, ScanPath};
use gpu_scan::segmented::{self, Segments};
use std::sync::Arc;

const PATHS: [ScanPath; 3] = [
    ScanPath::Pipelined,
    ScanPath::SinglePass,
    ScanPath::ReduceThenScan,
];

fn expected<Op: Case>(kind: ScanKind<Op::Element>, input: &[Op::Element]) -> Vec<Op::Element> {
    let mut out = input.to_vec();
    cpu::par_scan_in_place::<Op>(kind, &mut out);
    out
}

fn check<Op: Case>(
    what: &str,
    stream: &Arc<CudaStream>,
    out: &CudaSlice<Op::Element>,
    want: &[Op::Element],
    failures: &mut Vec<String>,
) {
    let got = stream.clone_dtoh(out).unwrap();
    compare::<Op>(what, want.len(), &got, want, failures);
}

#[test]
fn graph_capture_replays_on_changing_inputs() {
    let Some(ctx) = open_gpu("graph_capture_replays_on_changing_inputs") else {
        return;
    };
    let seed = suite_seed();
    println!("graph_capture_replays_on_changing_inputs: seed {seed}");
    // A non-null stream that leaves the context out of cudarc's multi-stream
    // mode: buffers then carry no events, as in a one-stream application.
    let stream = ctx.per_thread_stream();
    let mut failures = Vec::new();
    let init = 0x9e37_79b9u32;
    for path in PATHS {
        for n in [40_000usize, (1 << 22) + 17] {
            let mut scanner = GpuScanner::<AffineU32>::new(&ctx).unwrap();
            scanner.set_tuning(scanner.tuning().with_path(path));
            let mut input = stream.alloc_zeros::<AffineU32>(n).unwrap();
            let mut inclusive = stream.alloc_zeros::<AffineU32>(n).unwrap();
            let mut exclusive = stream.alloc_zeros::<AffineU32>(n).unwrap();

            // Growing the workspace inside a capture is refused, and the output is untouched.
            poison(&stream, &mut inclusive);
            let before = stream.clone_dtoh(&inclusive).unwrap();
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .unwrap();
            let refused = scanner.inclusive(&stream, &input, &mut inclusive);
            let _ = stream.end_capture(CUgraphInstantiate_flags(0));
            if !matches!(refused, Err(ScanError::WorkspaceDuringCapture { .. })) {
                failures.push(format!(
                    "{path:?} n={n}: capture without reserve gave {refused:?}"
                ));
            }
            if stream.clone_dtoh(&inclusive).unwrap() != before {
                failures.push(format!("{path:?} n={n}: the refused scan wrote its output"));
            }

            // Reserve, then capture two scans (the second takes its launch
            // state from the first, inside the graph).
            scanner.reserve(&stream, ScanKind::Inclusive, n).unwrap();
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .unwrap();
            scanner.inclusive(&stream, &input, &mut inclusive).unwrap();
            scanner
                .exclusive_with_init(&stream, &input, &mut exclusive, AffineU32 { a: init, b: 1 })
                .unwrap();
            let graph = stream
                .end_capture(CUgraphInstantiate_flags(0))
                .unwrap()
                .expect("a graph");
            for replay in 0..12u64 {
                let data = random_input::<AffineU32>(n, seed ^ replay ^ (n as u64) << 8);
                stream.memcpy_htod(&data, &mut input).unwrap();
                poison(&stream, &mut inclusive);
                poison(&stream, &mut exclusive);
                graph.launch().unwrap();
                let what = format!("{path:?} n={n} replay {replay}");
                check::<AffineU32>(
                    &format!("{what} inclusive"),
                    &stream,
                    &inclusive,
                    &expected::<AffineU32>(ScanKind::Inclusive, &data),
                    &mut failures,
                );
                check::<AffineU32>(
                    &format!("{what} exclusive+init"),
                    &stream,
                    &exclusive,
                    &expected::<AffineU32>(
                        ScanKind::ExclusiveWithInit(AffineU32 { a: init, b: 1 }),
                        &data,
                    ),
                    &mut failures,
                );
                // An ordinary scan between replays shares the workspace and its state.
                if replay % 3 == 2 {
                    poison(&stream, &mut exclusive);
                    scanner.exclusive(&stream, &input, &mut exclusive).unwrap();
                    check::<AffineU32>(
                        &format!("{what} ordinary exclusive"),
                        &stream,
                        &exclusive,
                        &expected::<AffineU32>(ScanKind::Exclusive, &data),
                        &mut failures,
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    println!(
        "graph_capture_replays_on_changing_inputs: 3 paths x 2 lengths x 12 replays match the CPU"
    );
}

/// Segmented scans by keys and by offsets captured in a graph replay on
/// changing values and keys (the keys are read where they lie at each
/// replay; the offsets were checked before the capture), through every path,
/// in both directions.
#[test]
fn segmented_scans_by_keys_and_offsets_replay_in_a_graph() {
    let Some(ctx) = open_gpu("segmented_scans_by_keys_and_offsets_replay_in_a_graph") else {
        return;
    };
    let seed = suite_seed();
    println!("segmented_scans_by_keys_and_offsets_replay_in_a_graph: seed {seed}");
    let stream = ctx.per_thread_stream();
    let mut failures = Vec::new();
    let n = (1usize << 21) + 5;
    let row_ptr: Vec<u32> = (0..n as u32).step_by(777).collect();
    let d_row_ptr = stream.clone_htod(&row_ptr).unwrap();
    let offsets = DeviceOffsets::check(&stream, d_row_ptr.as_view(), n).unwrap();
    for path in PATHS {
        let mut scanner = GpuScanner::<AffineU32>::new(&ctx).unwrap();
        scanner.set_tuning(scanner.tuning().with_path(path));
        // Per-key totals for up to half the elements' runs: more at the
        // first replay (every element a run), whose count still shows.
        let capacity = n / 2 + 7;
        let mut input = stream.alloc_zeros::<AffineU32>(n).unwrap();
        let mut keys = stream.alloc_zeros::<u16>(n).unwrap();
        let mut key_totals = stream.alloc_zeros::<AffineU32>(capacity).unwrap();
        let mut key_count = stream.alloc_zeros::<u64>(1).unwrap();
        let counted = ScanSpec::inclusive()
            .segments(DeviceKeys::new(&keys))
            .counted_segment_totals(&mut key_totals, &mut key_count);
        scanner.reserve(&stream, counted, n).unwrap();
        let mut by_keys_counted = stream.alloc_zeros::<AffineU32>(n).unwrap();
        let mut by_keys = stream.alloc_zeros::<AffineU32>(n).unwrap();
        let mut by_offsets = stream.alloc_zeros::<AffineU32>(n).unwrap();
        // Carry-outs: the last segment's partial of each scan.
        let mut carries = stream.alloc_zeros::<AffineU32>(2).unwrap();
        let reverse = ScanSpec::exclusive().reverse();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        scanner
            .scan(
                &stream,
                ScanSpec::inclusive()
                    .carry_out(&mut carries.slice_mut(0..1))
                    .segments(DeviceKeys::new(&keys)),
                &input,
                &mut by_keys,
            )
            .unwrap();
        // The same scan by key again, with each run's total and their
        // count, found on the device at every replay.
        scanner
            .scan(
                &stream,
                ScanSpec::inclusive()
                    .segments(DeviceKeys::new(&keys))
                    .counted_segment_totals(&mut key_totals, &mut key_count),
                &input,
                &mut by_keys_counted,
            )
            .unwrap();
        scanner
            .scan(
                &stream,
                reverse
                    .carry_out(&mut carries.slice_mut(1..2))
                    .segments(&offsets),
                &input,
                &mut by_offsets,
            )
            .unwrap();
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("a graph");
        for replay in 0..6u64 {
            let replay_seed = seed ^ replay ^ (path as u64) << 40;
            let data = random_input::<AffineU32>(n, replay_seed);
            // Runs of random length up to 2 × replay + 1 (every element its
            // own segment at replay 0).
            let mut rng = <Rng64 as rand::SeedableRng>::seed_from_u64(replay_seed);
            let host_keys: Vec<u16> = {
                let mut key = 0u16;
                (0..n)
                    .map(|_| {
                        if rand::Rng::random_range(&mut rng, 0..=2 * replay) == 0 {
                            key = key.wrapping_add(1);
                        }
                        key
                    })
                    .collect()
            };
            stream.memcpy_htod(&data, &mut input).unwrap();
            stream.memcpy_htod(&host_keys, &mut keys).unwrap();
            poison(&stream, &mut by_keys);
            poison(&stream, &mut by_keys_counted);
            poison(&stream, &mut key_totals);
            poison(&stream, &mut key_count);
            poison(&stream, &mut by_offsets);
            poison(&stream, &mut carries);
            graph.launch().unwrap();
            let mut want = vec![AffineU32::IDENTITY; n];
            let mut want_carries = [AffineU32::IDENTITY; 2];
            segmented::par_scan::<AffineU32>(
                ScanSpec::inclusive().carry_out(&mut want_carries[0]),
                Segments::keys(&host_keys),
                &data,
                &mut want,
            )
            .unwrap();
            check::<AffineU32>(
                &format!("{path:?} replay {replay} by keys"),
                &stream,
                &by_keys,
                &want,
                &mut failures,
            );
            check::<AffineU32>(
                &format!("{path:?} replay {replay} by keys, with counted totals"),
                &stream,
                &by_keys_counted,
                &want,
                &mut failures,
            );
            let runs = 1 + (1..n).filter(|&i| host_keys[i] != host_keys[i - 1]).count();
            let mut want_totals = vec![AffineU32::IDENTITY; runs];
            segmented::par_scan::<AffineU32>(
                ScanSpec::inclusive().segment_totals(&mut want_totals[..]),
                Segments::keys(&host_keys),
                &data,
                &mut vec![AffineU32::IDENTITY; n],
            )
            .unwrap();
            let written = runs.min(capacity);
            let got_count = stream.clone_dtoh(&key_count).unwrap()[0];
            if got_count != runs as u64 {
                failures.push(format!(
                    "{path:?} replay {replay}: {got_count} runs counted, {runs} in the keys"
                ));
            }
            let got_totals = stream.clone_dtoh(&key_totals).unwrap();
            if got_totals[..written] != want_totals[..written] || !poisoned(&got_totals[written..])
            {
                failures.push(format!(
                    "{path:?} replay {replay}: the first {written} of {runs} run totals differ, or a slot past them was written"
                ));
            }
            segmented::par_scan::<AffineU32>(
                reverse.carry_out(&mut want_carries[1]),
                Segments::offsets(&row_ptr[..]),
                &data,
                &mut want,
            )
            .unwrap();
            check::<AffineU32>(
                &format!("{path:?} replay {replay} by offsets, reverse exclusive"),
                &stream,
                &by_offsets,
                &want,
                &mut failures,
            );
            check::<AffineU32>(
                &format!("{path:?} replay {replay} carry-outs (keys, offsets)"),
                &stream,
                &carries,
                &want_carries,
                &mut failures,
            );
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    println!(
        "segmented_scans_by_keys_and_offsets_replay_in_a_graph: 3 paths x 6 replays match the CPU, carry-outs and counted totals included"
    );
}

#[test]
fn two_streams_run_concurrently() {
    let Some(ctx) = open_gpu("two_streams_run_concurrently") else {
        return;
    };
    let seed = suite_seed();
    println!("two_streams_run_concurrently: seed {seed}");
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    let mut failures = Vec::new();
    for path in PATHS {
        let n = (1 << 23) + 5;
        let inputs: Vec<Vec<AffineU32>> = (0..2u64)
            .map(|s| random_input::<AffineU32>(n, seed ^ ((s + 1) * 0x51)))
            .collect();
        let device_inputs: Vec<_> = (0..2)
            .map(|s| streams[s].clone_htod(&inputs[s]).unwrap())
            .collect();
        let mut outputs: Vec<_> = (0..4)
            .map(|i| streams[i % 2].alloc_zeros::<AffineU32>(n).unwrap())
            .collect();
        for (i, out) in outputs.iter_mut().enumerate() {
            poison(&streams[i % 2], out);
        }
        // Two scanners, one per stream, and a shared one used on both.
        let mut own: Vec<GpuScanner<AffineU32>> =
            (0..2).map(|_| GpuScanner::new(&ctx).unwrap()).collect();
        let mut shared = GpuScanner::<AffineU32>::new(&ctx).unwrap();
        shared.set_tuning(shared.tuning().with_path(path));
        for scanner in &mut own {
            scanner.set_tuning(scanner.tuning().with_path(path));
        }
        let (first, rest) = outputs.split_at_mut(2);
        for round in 0..3 {
            for s in 0..2 {
                own[s]
                    .inclusive(&streams[s], &device_inputs[s], &mut first[s])
                    .unwrap();
                shared
                    .exclusive(&streams[s], &device_inputs[s], &mut rest[s])
                    .unwrap();
            }
            let _ = round;
        }
        for s in 0..2 {
            let what = format!("{path:?} stream {s}");
            check::<AffineU32>(
                &format!("{what} own scanner inclusive"),
                &streams[s],
                &first[s],
                &expected::<AffineU32>(ScanKind::Inclusive, &inputs[s]),
                &mut failures,
            );
            check::<AffineU32>(
                &format!("{what} shared scanner exclusive"),
                &streams[s],
                &rest[s],
                &expected::<AffineU32>(ScanKind::Exclusive, &inputs[s]),
                &mut failures,
            );
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    println!("two_streams_run_concurrently: 3 paths, own and shared scanners match the CPU");
}

/// One scanner shared by two threads through a mutex, each scanning on its
/// per-thread default stream (`ctx.per_thread_stream()`: one handle, a
/// stream of each thread's own, which may run at once): each thread's scans
/// take a workspace of their own, so none reads the other's tile state.
#[test]
fn one_scanner_on_two_threads_per_thread_streams() {
    let Some(ctx) = open_gpu("one_scanner_on_two_threads_per_thread_streams") else {
        return;
    };
    let seed = suite_seed();
    println!("one_scanner_on_two_threads_per_thread_streams: seed {seed}");
    let n = (1 << 23) + 5;
    let mut failures = Vec::new();
    for path in PATHS {
        let mut scanner = GpuScanner::<AffineU32>::new(&ctx).unwrap();
        scanner.set_tuning(scanner.tuning().with_path(path));
        let shared = std::sync::Mutex::new(scanner);
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Vec<String>> = std::thread::scope(|s| {
            let jobs: Vec<_> = (0..2u64)
                .map(|t| {
                    let (ctx, shared, barrier) = (&ctx, &shared, &barrier);
                    s.spawn(move || {
                        let stream = ctx.per_thread_stream();
                        let input = random_input::<AffineU32>(n, seed ^ ((t + 1) * 0x77));
                        let d = stream.clone_htod(&input).unwrap();
                        let mut out = stream.alloc_zeros::<AffineU32>(n).unwrap();
                        poison(&stream, &mut out);
                        stream.synchronize().unwrap();
                        barrier.wait();
                        // Rounds without waiting for the GPU: the two
                        // threads' scans overlap on the device.
                        for _ in 0..4 {
                            shared
                                .lock()
                                .unwrap()
                                .inclusive(&stream, &d, &mut out)
                                .unwrap();
                        }
                        let mut failures = Vec::new();
                        check::<AffineU32>(
                            &format!("{path:?} thread {t}"),
                            &stream,
                            &out,
                            &expected::<AffineU32>(ScanKind::Inclusive, &input),
                            &mut failures,
                        );
                        failures
                    })
                })
                .collect();
            jobs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        failures.extend(results.into_iter().flatten());
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    println!("one_scanner_on_two_threads_per_thread_streams: 3 paths match the CPU");
}

#[test]
fn launch_state_resets_and_the_epoch_wraps() {
    let Some(ctx) = open_gpu("launch_state_resets_and_the_epoch_wraps") else {
        return;
    };
    let seed = suite_seed();
    println!("launch_state_resets_and_the_epoch_wraps: seed {seed}");
    let stream = ctx.new_stream().unwrap();
    let max_epoch = gpu_scan::kernels_gen::launch_state::MAX_EPOCH;
    let mut failures = Vec::new();
    for path in [ScanPath::Pipelined, ScanPath::SinglePass] {
        let mut scanner = GpuScanner::<AffineU32>::new(&ctx).unwrap();
        scanner.set_tuning(scanner.tuning().with_path(path).with_small_tile_limit(0));
        let long = 4096 * 600 + 3;
        let short = scanner.tile_items() + 1;
        let run = |scanner: &mut GpuScanner<AffineU32>,
                   n: usize,
                   salt: u64,
                   failures: &mut Vec<String>| {
            let data = random_input::<AffineU32>(n, seed ^ salt);
            let input = stream.clone_htod(&data).unwrap();
            let mut out = stream.alloc_zeros::<AffineU32>(n).unwrap();
            poison(&stream, &mut out);
            scanner.inclusive(&stream, &input, &mut out).unwrap();
            check::<AffineU32>(
                &format!("{path:?} n={n} salt {salt}"),
                &stream,
                &out,
                &expected::<AffineU32>(ScanKind::Inclusive, &data),
                failures,
            );
        };
        // A long scan at epoch 1 leaves status entries tagged 1 everywhere.
        run(&mut scanner, long, 1, &mut failures);
        let state = scanner
            .launch_state_for_tests(&stream)
            .unwrap()
            .expect("state");
        if state.counter != 0 || state.epoch != 2 {
            failures.push(format!("{path:?}: after one launch {state:?}"));
        }
        let capacity = state.capacity;
        // Short scans (each sweeping its epoch's window) clear the entries
        // the long one left, while the epoch runs up to its maximum and
        // wraps to 1 again.
        let per_launch = gpu_scan::kernels_gen::launch_state::SWEEP_ENTRIES as u64;
        let sweeps = capacity.div_ceil(per_launch);
        scanner
            .set_launch_epoch_for_tests(&stream, max_epoch + 1 - sweeps as u32)
            .unwrap();
        for i in 0..sweeps {
            run(&mut scanner, short, 100 + i, &mut failures);
        }
        let state = scanner
            .launch_state_for_tests(&stream)
            .unwrap()
            .expect("state");
        if state.counter != 0 || state.epoch != 1 {
            failures.push(format!("{path:?}: after the wrap {state:?}"));
        }
        // Epoch 1 again, over other data: no stale entry of the first scan
        // may pass for this one's.
        run(&mut scanner, long, 2, &mut failures);
        let state = scanner
            .launch_state_for_tests(&stream)
            .unwrap()
            .expect("state");
        if state.counter != 0 || state.epoch != 2 {
            failures.push(format!(
                "{path:?}: after the wrap and a long scan {state:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    println!("launch_state_resets_and_the_epoch_wraps: state reset after every launch; correct across the wrap");
}
