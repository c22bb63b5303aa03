//! Scans captured in CUDA graphs the way users write code: streams from
//! `ctx.new_stream()` with cudarc's default event tracking (a second
//! stream alive in the context, so cudarc tracks every buffer with events),
//! buffers the test allocates on the capturing stream, the workspace
//! reserved, then ordinary scans, then the same scans captured in
//! `THREAD_LOCAL` and in `GLOBAL` mode and replayed 12 times on fresh
//! inputs, outputs poisoned before each replay, against the CPU backend
//! (seed printed; `GPU_SUITE_SEED` replays).
//!
//! One graph holds every kind of scan: plain (inclusive; reverse exclusive
//! with an initial value and a carry-out), by byte and by bit head flags,
//! by rows with per-row totals, by offsets with a carry-out, and by keys
//! with counted per-key totals, on each of the three paths. `AffineU32` is
//! not commutative and exact: results compare bit for bit.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{
    DeviceHeadFlags, DeviceKeys, DeviceOffsets, DeviceSegments, ScanPath,
};
use gpu_scan::segmented::{self, HeadFlags, Segments};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const PATHS: [ScanPath; 3] = [
    ScanPath::Pipelined,
    ScanPath::SinglePass,
    ScanPath::ReduceThenScan,
];
/// `GLOBAL` first: the strictest mode meets the scanner's first capture.
const MODES: [CUstreamCaptureMode; 2] = [
    CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
    CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
];
const REPLAYS: u64 = 12;
/// Past the pipelined pass's 2 MiB, many tiles of every path, not a
/// multiple of any tile; a multiple of the row length.
const N: usize = ROW * 161_331;
const ROW: usize = 13;
/// Scans in the graph, each into its own output.
const SCANS: usize = 7;

/// One replay's inputs (host copies).
struct Inputs {
    data: Vec<AffineU32>,
    flags: Vec<u8>,
    bit_flags: Vec<bool>,
    keys: Vec<u16>,
}

fn inputs(seed: u64) -> Inputs {
    let data = random_input::<AffineU32>(N, seed);
    let mut rng = Rng64::seed_from_u64(seed ^ 0x5eed);
    // Segments of random length: mean 40 for the byte flags, 300 for the
    // bits, and key runs from 1 to about 2 · (seed % 7) + 1.
    let flags: Vec<u8> = (0..N).map(|_| rng.random_bool(1.0 / 40.0) as u8).collect();
    let bit_flags: Vec<bool> = (0..N).map(|_| rng.random_bool(1.0 / 300.0)).collect();
    let spread = 2 * (seed % 7);
    let mut key = 0u16;
    let keys = (0..N)
        .map(|_| {
            if rng.random_range(0..=spread) == 0 {
                key = key.wrapping_add(1);
            }
            key
        })
        .collect();
    Inputs {
        data,
        flags,
        bit_flags,
        keys,
    }
}

fn pack_bits(flags: &[bool]) -> Vec<u32> {
    let mut words = vec![0u32; flags.len().div_ceil(32)];
    for (i, _) in flags.iter().enumerate().filter(|(_, &f)| f) {
        words[i / 32] |= 1 << (i % 32);
    }
    words
}

/// The device buffers, all allocated on the capturing stream.
struct Buffers {
    data: CudaSlice<AffineU32>,
    flags: CudaSlice<u8>,
    bits: CudaSlice<u32>,
    keys: CudaSlice<u16>,
    outs: Vec<CudaSlice<AffineU32>>,
    /// Carry-outs of the plain reverse scan and of the scan by offsets.
    carries: CudaSlice<AffineU32>,
    row_totals: CudaSlice<AffineU32>,
    key_totals: CudaSlice<AffineU32>,
    key_count: CudaSlice<u64>,
}

/// Room for the per-key totals: every element its own key at worst.
const KEY_CAPACITY: usize = N;

fn offsets() -> Vec<u32> {
    // Segments of 1 to 1,000 elements, a few empty ones among them.
    let mut at = 0u32;
    let mut out = vec![0];
    let mut step = 1u32;
    while (at as usize) < N {
        step = (step * 37 + 11) % 1000;
        at = (at + step).min(N as u32);
        out.push(at);
    }
    out
}

const INIT: AffineU32 = AffineU32 {
    a: 0x9e37_79b9,
    b: 1,
};

/// Enqueues the graph's scans (ordinary or captured).
fn enqueue(
    scanner: &mut GpuScanner<AffineU32>,
    stream: &Arc<CudaStream>,
    b: &mut Buffers,
    offsets: &DeviceOffsets<'_>,
) -> Result<(), ScanError> {
    let [o0, o1, o2, o3, o4, o5, o6] = &mut b.outs[..] else {
        unreachable!("{SCANS} outputs")
    };
    scanner.scan(stream, ScanSpec::inclusive(), &b.data, o0)?;
    scanner.scan(
        stream,
        ScanSpec::exclusive_with_init(INIT)
            .reverse()
            .carry_out(&mut b.carries.slice_mut(0..1)),
        &b.data,
        o1,
    )?;
    scanner.scan(
        stream,
        ScanSpec::inclusive().segments(DeviceSegments::Flags(DeviceHeadFlags::from(&b.flags))),
        &b.data,
        o2,
    )?;
    scanner.scan(
        stream,
        ScanSpec::exclusive()
            .reverse()
            .segments(DeviceSegments::Flags(DeviceHeadFlags::bits(
                b.bits.as_view(),
                N,
            ))),
        &b.data,
        o3,
    )?;
    scanner.scan(
        stream,
        ScanSpec::inclusive()
            .segments(DeviceSegments::rows(ROW))
            .segment_totals(&mut b.row_totals),
        &b.data,
        o4,
    )?;
    scanner.scan(
        stream,
        ScanSpec::exclusive_with_init(INIT)
            .segments(offsets)
            .carry_out(&mut b.carries.slice_mut(1..2)),
        &b.data,
        o5,
    )?;
    scanner.scan(
        stream,
        ScanSpec::inclusive()
            .segments(DeviceKeys::new(&b.keys))
            .counted_segment_totals(&mut b.key_totals, &mut b.key_count),
        &b.data,
        o6,
    )?;
    Ok(())
}

/// Uploads a replay's inputs and poisons every output.
fn upload(stream: &Arc<CudaStream>, b: &mut Buffers, inputs: &Inputs) {
    stream.memcpy_htod(&inputs.data, &mut b.data).unwrap();
    stream.memcpy_htod(&inputs.flags, &mut b.flags).unwrap();
    stream
        .memcpy_htod(&pack_bits(&inputs.bit_flags), &mut b.bits)
        .unwrap();
    stream.memcpy_htod(&inputs.keys, &mut b.keys).unwrap();
    for out in &mut b.outs {
        poison(stream, out);
    }
    poison(stream, &mut b.carries);
    poison(stream, &mut b.row_totals);
    poison(stream, &mut b.key_totals);
    poison(stream, &mut b.key_count);
}

/// Compares every output with the CPU backend's.
fn check_all(
    what: &str,
    stream: &Arc<CudaStream>,
    b: &Buffers,
    inputs: &Inputs,
    offsets: &[u32],
    failures: &mut Vec<String>,
) {
    let data = &inputs.data;
    macro_rules! scan {
        ($spec:expr, None $(,)?) => {{
            let mut out = vec![AffineU32::IDENTITY; N];
            cpu::par_scan::<AffineU32>($spec, data, &mut out).unwrap();
            out
        }};
        ($spec:expr, Some($segments:expr) $(,)?) => {{
            let mut out = vec![AffineU32::IDENTITY; N];
            segmented::par_scan::<AffineU32>($spec, $segments, data, &mut out).unwrap();
            out
        }};
    }
    let mut want_carries = [AffineU32::IDENTITY; 2];
    let mut want_rows = vec![AffineU32::IDENTITY; N / ROW];
    let runs = 1
        + (1..N)
            .filter(|&i| inputs.keys[i] != inputs.keys[i - 1])
            .count();
    let mut want_keys = vec![AffineU32::IDENTITY; runs];
    let want = [
        scan!(ScanSpec::inclusive(), None),
        scan!(
            ScanSpec::exclusive_with_init(INIT)
                .reverse()
                .carry_out(&mut want_carries[0]),
            None,
        ),
        scan!(
            ScanSpec::inclusive(),
            Some(Segments::Flags(HeadFlags::Bytes(&inputs.flags))),
        ),
        scan!(
            ScanSpec::exclusive().reverse(),
            Some(Segments::Flags(HeadFlags::bits(
                &pack_bits(&inputs.bit_flags),
                N,
            ))),
        ),
        scan!(
            ScanSpec::inclusive().segment_totals(&mut want_rows[..]),
            Some(Segments::rows(ROW)),
        ),
        scan!(
            ScanSpec::exclusive_with_init(INIT).carry_out(&mut want_carries[1]),
            Some(Segments::offsets(offsets)),
        ),
        scan!(
            ScanSpec::inclusive().segment_totals(&mut want_keys[..]),
            Some(Segments::keys(&inputs.keys)),
        ),
    ];
    let names = [
        "plain inclusive",
        "plain reverse exclusive+init, carry-out",
        "byte flags inclusive",
        "bit flags reverse exclusive",
        "rows inclusive, row totals",
        "offsets exclusive+init, carry-out",
        "keys inclusive, counted totals",
    ];
    for ((out, want), name) in b.outs.iter().zip(&want).zip(names) {
        let got = stream.clone_dtoh(out).unwrap();
        compare::<AffineU32>(&format!("{what}: {name}"), N, &got, want, failures);
    }
    let got = stream.clone_dtoh(&b.carries).unwrap();
    compare::<AffineU32>(
        &format!("{what}: carry-outs"),
        2,
        &got,
        &want_carries,
        failures,
    );
    let got = stream.clone_dtoh(&b.row_totals).unwrap();
    compare::<AffineU32>(
        &format!("{what}: row totals"),
        N / ROW,
        &got,
        &want_rows,
        failures,
    );
    let count = stream.clone_dtoh(&b.key_count).unwrap()[0];
    if count != runs as u64 {
        failures.push(format!(
            "{what}: {count} key runs counted, {runs} in the keys"
        ));
    }
    let got = stream.clone_dtoh(&b.key_totals).unwrap();
    compare::<AffineU32>(
        &format!("{what}: key totals"),
        runs,
        &got[..runs],
        &want_keys,
        failures,
    );
    if !poisoned(&got[runs..]) {
        failures.push(format!(
            "{what}: a key-total slot past the {runs} runs was written"
        ));
    }
}

#[test]
fn every_scan_replays_in_a_graph_under_cudarcs_event_tracking() {
    let Some(ctx) = open_gpu("every_scan_replays_in_a_graph_under_cudarcs_event_tracking") else {
        return;
    };
    let seed = suite_seed();
    println!("every_scan_replays_in_a_graph_under_cudarcs_event_tracking: seed {seed}");
    // Two streams of the user's: the context is in cudarc's multi-stream
    // mode, so every buffer below records and waits on events.
    let stream = ctx.new_stream().unwrap();
    let other = ctx.new_stream().unwrap();
    assert!(ctx.is_managing_stream_synchronization());
    let host_offsets = offsets();
    let d_offsets = stream.clone_htod(&host_offsets).unwrap();
    let offsets = DeviceOffsets::check(&stream, d_offsets.as_view(), N).unwrap();
    let mut failures = Vec::new();
    let mut graphs = 0;
    for path in PATHS {
        let mut scanner = GpuScanner::<AffineU32>::new(&ctx).unwrap();
        scanner.set_tuning(scanner.tuning().with_path(path));
        scanner.reserve(&stream, ScanKind::Inclusive, N).unwrap();
        let mut b = Buffers {
            data: stream.alloc_zeros(N).unwrap(),
            flags: stream.alloc_zeros(N).unwrap(),
            bits: stream.alloc_zeros(N.div_ceil(32)).unwrap(),
            keys: stream.alloc_zeros(N).unwrap(),
            outs: (0..SCANS).map(|_| stream.alloc_zeros(N).unwrap()).collect(),
            carries: stream.alloc_zeros(2).unwrap(),
            row_totals: stream.alloc_zeros(N / ROW).unwrap(),
            key_totals: stream.alloc_zeros(KEY_CAPACITY).unwrap(),
            key_count: stream.alloc_zeros(1).unwrap(),
        };
        let counted = ScanSpec::inclusive()
            .segments(DeviceKeys::new(&b.keys))
            .counted_segment_totals(&mut b.key_totals, &mut b.key_count);
        scanner.reserve(&stream, counted, N).unwrap();
        // Ordinary scans first, on this stream, and one on the other.
        let first = inputs(seed ^ (path as u64) << 32);
        upload(&stream, &mut b, &first);
        if let Err(e) = enqueue(&mut scanner, &stream, &mut b, &offsets) {
            failures.push(format!("{path:?} ordinary scans: {e}"));
            continue;
        }
        check_all(
            &format!("{path:?} ordinary"),
            &stream,
            &b,
            &first,
            &host_offsets,
            &mut failures,
        );
        let mut on_other = other.alloc_zeros::<AffineU32>(N).unwrap();
        scanner
            .scan(&other, ScanSpec::inclusive(), &b.data, &mut on_other)
            .unwrap();
        let want = {
            let mut w = vec![AffineU32::IDENTITY; N];
            cpu::par_scan::<AffineU32>(ScanSpec::inclusive(), &first.data, &mut w).unwrap();
            w
        };
        let got = other.clone_dtoh(&on_other).unwrap();
        compare::<AffineU32>(
            &format!("{path:?} on the other stream"),
            N,
            &got,
            &want,
            &mut failures,
        );

        for mode in MODES {
            let what = format!("{path:?} {mode:?}");
            stream.begin_capture(mode).unwrap();
            let captured = enqueue(&mut scanner, &stream, &mut b, &offsets);
            let ended = stream.end_capture(CUgraphInstantiate_flags(0));
            let graph = match (captured, ended) {
                (Ok(()), Ok(Some(graph))) => graph,
                (captured, ended) => {
                    failures.push(format!(
                        "{what}: capture failed: scans {captured:?}, end_capture {:?}",
                        ended.map(|g| g.is_some())
                    ));
                    // A failed capture may leave an error in the context.
                    let _ = ctx.check_err();
                    continue;
                }
            };
            graphs += 1;
            for replay in 0..REPLAYS {
                let inputs = inputs(seed ^ replay ^ (path as u64) << 32 ^ (mode as u64) << 40);
                upload(&stream, &mut b, &inputs);
                graph.launch().unwrap();
                check_all(
                    &format!("{what} replay {replay}"),
                    &stream,
                    &b,
                    &inputs,
                    &host_offsets,
                    &mut failures,
                );
            }
        }
    }
    ctx.check_err().unwrap();
    assert!(
        failures.is_empty(),
        "seed {seed}: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "every_scan_replays_in_a_graph_under_cudarcs_event_tracking: {graphs} graphs (3 paths x 2 modes) x {REPLAYS} replays x {SCANS} scans match the CPU"
    );
}
