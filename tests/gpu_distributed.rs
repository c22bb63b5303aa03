//! `GpuScanner::reduce` and scans across GPUs over NCCL
//! (`gpu_scan::distributed::GpuRank`), against the CPU backend.
//!
//! The reduction: sums, `u32` affine maps and "keep the right one" (exact,
//! non-commutative) and `f32` affine maps, over lengths 0, 1, 31, 32, 33,
//! a deterministic tile ± 1, many tiles ± 1 and a long one, compared bit
//! for bit with the CPU's fold (the exact operators) and with the carry-out
//! of a deterministic scan of the same input (every operator: the same
//! chain); a slot of another length is refused and left as it was.
//!
//! The distributed scans: every group of the machine's GPUs (1, 2, … of
//! them), one thread a rank, in both of NCCL's ways of making a group
//! (`GpuRank::for_devices`, and `GpuRank::new` with one `NcclId` as
//! separate processes do), over uneven shards with empty ones,
//! inclusive, exclusive and from an initial value, forward and reverse,
//! the whole scan and the deferred form, against the CPU's scan of the
//! concatenated shards (outputs poisoned first); a rank with wrong lengths
//! fails every rank and no rank writes; ranks that disagree on the spec
//! fail alike. Fresh random inputs (seed printed; GPU_SUITE_SEED replays).
//! The same over ranks sharing one GPU (`GpuRank::on_one_device`, 1 to 5
//! ranks, no NCCL), and segmented scans across ranks by flags, offsets into
//! each shard and keys (one segment across every rank, sparse and dense
//! heads), against the CPU's one-rank segmented scan, with per-segment
//! totals over whole segments however many ranks they span (exact slots
//! by offsets, counted ones by flags and keys), with rows refused.
//! Without a GPU it prints one line and passes; without NCCL the reduction
//! runs and the distributed part says it was skipped (NCCL_REQUIRED=1 makes
//! that a failure, as the device runs set it).
#![cfg(feature = "gpu")]

mod common;
use common::gpu::*;
use common::ops::*;
use common::segments::totals_across_shards;
use gpu_scan::cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use gpu_scan::distributed::{nccl_library, GpuRank, NcclId, RankError, RankPrefix};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{DeviceOffsets, DeviceSegments};
use gpu_scan::segmented::{self, HeadFlags};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// The deterministic tile of `Op`.
fn tile<Op: ScanOp>() -> usize {
    gpu_scan::scan_runtime::layout::<Op>().deterministic_tile_items()
}

fn reduce_lengths<Op: ScanOp>() -> Vec<usize> {
    let t = tile::<Op>();
    vec![
        0,
        1,
        31,
        32,
        33,
        t - 1,
        t,
        t + 1,
        37 * t - 1,
        37 * t + 1,
        (1 << 21) + 7,
    ]
}

/// The CPU's fold of `input` (the identity for none).
fn fold<Op: ScanOp>(input: &[Op::Element]) -> Op::Element {
    input.iter().copied().fold(Op::IDENTITY, Op::combine)
}

fn check_reduce<Op: Case>(ctx: &Arc<CudaContext>, exact: bool, seed: u64) -> Vec<String> {
    let stream = ctx.new_stream().unwrap();
    let mut scanner = GpuScanner::<Op>::new(ctx).unwrap();
    let mut deterministic = GpuScanner::<Op>::new(ctx).unwrap();
    deterministic.set_tuning(deterministic.tuning().with_deterministic(true));
    let mut failures = Vec::new();
    for n in reduce_lengths::<Op>() {
        let host = random_input::<Op>(n, seed ^ n as u64);
        let input = stream.clone_htod(&host).unwrap();
        let mut total: CudaSlice<Op::Element> = unsafe { stream.alloc(1) }.unwrap();
        poison(&stream, &mut total);
        scanner.reduce(&stream, &input, &mut total).unwrap();
        let got = stream.clone_dtoh(&total).unwrap()[0];
        let want = fold::<Op>(&host);
        if (exact && got != want) || (!exact && !Op::close(&got, &want)) {
            failures.push(format!(
                "{} reduce n={n}: gpu {got:?} cpu {want:?}",
                Op::NAME
            ));
        }
        // A deterministic scan's carry-out: the same chain, the same bits.
        let mut out = stream.alloc_zeros::<Op::Element>(n).unwrap();
        let mut carry = stream.alloc_zeros::<Op::Element>(1).unwrap();
        let spec = ScanSpec::inclusive().carry_out(&mut carry);
        deterministic.scan(&stream, spec, &input, &mut out).unwrap();
        let chained = stream.clone_dtoh(&carry).unwrap()[0];
        // Exact operators compare as values (an element with padding, as
        // `Latest`'s bool before its u64, has bytes no kernel defines);
        // floats bit for bit.
        let same = match exact {
            true => got == chained,
            false => same_bits(&got, &chained),
        };
        if !same {
            failures.push(format!(
                "{} reduce n={n}: {got:?}, the deterministic scan's carry-out {chained:?}",
                Op::NAME
            ));
        }
    }
    // A slot of two elements: refused, both untouched.
    let input = stream.clone_htod(&random_input::<Op>(100, seed)).unwrap();
    let mut two: CudaSlice<Op::Element> = unsafe { stream.alloc(2) }.unwrap();
    poison(&stream, &mut two);
    let got = scanner.reduce(&stream, &input, &mut two);
    if !matches!(got, Err(ScanError::CarryOutLength { len: 2 })) || !still_poisoned(&stream, &two) {
        failures.push(format!("{}: a two-element slot gave {got:?}", Op::NAME));
    }
    failures
}

/// Whether two elements have the same bytes (for elements without
/// padding).
fn same_bits<T: Copy>(a: &T, b: &T) -> bool {
    // SAFETY: both are device elements downloaded whole (plain data with
    // every byte written by the same kernel code or the same copy).
    let bytes = |x: &T| unsafe {
        std::slice::from_raw_parts((x as *const T).cast::<u8>(), std::mem::size_of::<T>()).to_vec()
    };
    bytes(a) == bytes(b)
}

#[test]
fn reduce_folds_in_order_with_the_deterministic_chain() {
    let Some(ctx) = open_gpu("gpu_distributed") else {
        return;
    };
    let _gpu = gpu_shared();
    let seed = suite_seed();
    println!("gpu_distributed: reduce, seed {seed}");
    let mut failures = Vec::new();
    failures.extend(check_reduce::<SumU32>(&ctx, true, seed));
    failures.extend(check_reduce::<AffineU32>(&ctx, true, seed));
    failures.extend(check_reduce::<Latest>(&ctx, true, seed));
    failures.extend(check_reduce::<Affine>(&ctx, false, seed));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every device of the machine, or `None` where NCCL is missing (a
/// failure with NCCL_REQUIRED=1).
fn devices_with_nccl(ctx: &Arc<CudaContext>) -> Option<Vec<Arc<CudaContext>>> {
    match nccl_library() {
        Ok((library, version)) => println!("gpu_distributed: NCCL {version} ({library})"),
        Err(e) => {
            assert!(
                std::env::var_os("NCCL_REQUIRED").is_none_or(|v| v != "1"),
                "NCCL_REQUIRED=1 but {e}"
            );
            println!("gpu_distributed: distributed scans skipped: {e}");
            return None;
        }
    }
    let count = CudaContext::device_count().unwrap() as usize;
    let mut ctxs = vec![ctx.clone()];
    ctxs.extend((1..count).map(|i| CudaContext::new(i).unwrap()));
    Some(ctxs)
}

/// Shard lengths for `ranks` ranks: uneven, with empty shards and shards
/// across tile boundaries.
fn shards<Op: ScanOp>(ranks: usize, pattern: usize) -> Vec<usize> {
    let t = tile::<Op>();
    let menu = [0, 1, 33, t + 1, 0, 5 * t - 1, 100_003, 2];
    (0..ranks)
        .map(|r| menu[(r * 3 + pattern) % menu.len()])
        .collect()
}

/// The specs every group runs.
fn specs<E: Copy>(init: E) -> Vec<(&'static str, ScanSpec<E>)> {
    let forward = [
        ("inclusive", ScanSpec::inclusive()),
        ("exclusive", ScanSpec::exclusive()),
        ("exclusive from init", ScanSpec::exclusive_with_init(init)),
        (
            "inclusive from init",
            ScanSpec::from(ScanKind::InclusiveWithInit(init)),
        ),
    ];
    let mut all = Vec::new();
    for (name, spec) in forward {
        all.push((name, spec));
        all.push((leak(format!("{name}, reverse")), spec.reverse()));
    }
    all
}

/// One rank's outcome: its output, its prefix.
type Outcome<E> = Result<(Vec<E>, RankPrefix<E>), RankError>;

/// Runs `call` on every rank of `group`, a thread each, with its shard.
fn on_every_rank<Op: Case, T: Sync, R: Send>(
    group: &mut [GpuRank],
    inputs: &[T],
    call: impl Fn(&mut GpuRank, &mut GpuScanner<Op>, &Arc<CudaStream>, &T) -> R + Sync,
) -> Vec<R> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = group
            .iter_mut()
            .zip(inputs)
            .map(|(rank, input)| {
                let call = &call;
                s.spawn(move || {
                    let ctx = rank.context().clone();
                    let stream = ctx.new_stream().unwrap();
                    // A second stream alive in the context (cudarc's
                    // multi-stream event tracking), as users have.
                    let _other = ctx.new_stream().unwrap();
                    let mut scanner = GpuScanner::<Op>::new(&ctx).unwrap();
                    call(rank, &mut scanner, &stream, input)
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

fn check_group<Op: Case>(group: &mut [GpuRank], init: Op::Element, seed: u64) -> Vec<String> {
    let ranks = group.len();
    let mut failures = Vec::new();
    for pattern in 0..3 {
        let lengths = shards::<Op>(ranks, pattern);
        let inputs: Vec<Vec<Op::Element>> = lengths
            .iter()
            .enumerate()
            .map(|(r, &n)| random_input::<Op>(n, seed ^ (r as u64 * 7919 + pattern as u64)))
            .collect();
        let whole: Vec<Op::Element> = inputs.concat();
        for (name, spec) in specs(init) {
            for deferred in [false, true] {
                let outcomes: Vec<Outcome<Op::Element>> =
                    on_every_rank::<Op, _, _>(group, &inputs, |rank, scanner, stream, input| {
                        let d = stream.clone_htod(input)?;
                        let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(input.len()) }?;
                        poison(stream, &mut out);
                        let prefix = match deferred {
                            false => rank.scan(scanner, stream, spec, &d, &mut out)?,
                            true => rank.scan_deferred(scanner, stream, spec, &d, &mut out)?,
                        };
                        Ok((stream.clone_dtoh(&out)?, prefix))
                    });
                let mut want = vec![Op::IDENTITY; whole.len()];
                let mut carry = Op::IDENTITY;
                cpu::scan::<Op>(spec.carry_out(&mut carry), &whole, &mut want).unwrap();
                let what = format!(
                    "{} {ranks} ranks {lengths:?} {name}{}",
                    Op::NAME,
                    if deferred { " deferred" } else { "" }
                );
                let mut start = 0;
                for (r, outcome) in outcomes.into_iter().enumerate() {
                    let n = lengths[r];
                    let want = &want[start..start + n];
                    start += n;
                    let (mut got, prefix) = match outcome {
                        Ok(o) => o,
                        Err(e) => {
                            failures.push(format!("{what}: rank {r}: {e}"));
                            continue;
                        }
                    };
                    if deferred {
                        prefix.apply::<Op>(&mut got);
                    }
                    compare::<Op>(&format!("{what}: rank {r}"), n, &got, want, &mut failures);
                    if !Op::close(&prefix.total, &carry) {
                        failures.push(format!(
                            "{what}: rank {r}: total {:?}, cpu {carry:?}",
                            prefix.total
                        ));
                    }
                }
            }
        }
    }
    failures.extend(check_refusals::<Op>(group, seed));
    failures
}

/// A rank with an output of another length fails every rank, and no rank
/// writes; ranks that disagree on the spec all fail with `Mismatch`.
fn check_refusals<Op: Case>(group: &mut [GpuRank], seed: u64) -> Vec<String> {
    let ranks = group.len();
    let mut failures = Vec::new();
    let inputs: Vec<Vec<Op::Element>> = (0..ranks)
        .map(|r| random_input::<Op>(1000 + r, seed))
        .collect();
    let bad = ranks - 1;
    let outcomes = on_every_rank::<Op, _, _>(group, &inputs, |rank, scanner, stream, input| {
        let d = stream.clone_htod(input).unwrap();
        let len = input.len() + usize::from(rank.rank() == bad);
        let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(len) }.unwrap();
        poison(stream, &mut out);
        let got = rank.scan(scanner, stream, ScanSpec::inclusive(), &d, &mut out);
        (got.map(|_| ()), still_poisoned(stream, &out))
    });
    for (r, (got, untouched)) in outcomes.into_iter().enumerate() {
        let refused = match r == bad {
            true => matches!(got, Err(RankError::Scan(ScanError::LengthMismatch { .. }))),
            false => matches!(got, Err(RankError::OtherRank { rank }) if rank == bad),
        };
        if !refused || !untouched {
            failures.push(format!("{} lengths wrong on rank {bad}: rank {r} gave {got:?}, output untouched: {untouched}", Op::NAME));
        }
    }
    if ranks > 1 {
        let outcomes = on_every_rank::<Op, _, _>(group, &inputs, |rank, scanner, stream, input| {
            let d = stream.clone_htod(input).unwrap();
            let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(input.len()) }.unwrap();
            poison(stream, &mut out);
            let spec = match rank.rank() {
                0 => ScanSpec::exclusive(),
                _ => ScanSpec::inclusive(),
            };
            let got = rank.scan(scanner, stream, spec, &d, &mut out);
            (got.map(|_| ()), still_poisoned(stream, &out))
        });
        for (r, (got, untouched)) in outcomes.into_iter().enumerate() {
            let want = if r == 0 { 1 } else { 0 };
            if !matches!(got, Err(RankError::Mismatch { rank }) if rank == want) || !untouched {
                failures.push(format!(
                    "{} specs differ: rank {r} gave {got:?}, output untouched: {untouched}",
                    Op::NAME
                ));
            }
        }
    }
    failures
}

#[test]
fn scans_across_every_group_of_gpus() {
    let Some(ctx) = open_gpu("gpu_distributed") else {
        return;
    };
    let _gpu = gpu_shared();
    let Some(devices) = devices_with_nccl(&ctx) else {
        return;
    };
    let seed = suite_seed();
    println!("gpu_distributed: {} GPUs, seed {seed}", devices.len());
    let mut failures = Vec::new();
    for ranks in 1..=devices.len() {
        let ctxs = &devices[..ranks];
        // One process driving every GPU of the group.
        let mut group = GpuRank::for_devices(ctxs).unwrap();
        failures.extend(check_group::<SumU32>(&mut group, 5, seed));
        failures.extend(check_group::<AffineU32>(
            &mut group,
            AffineU32 { a: 3, b: 7 },
            seed,
        ));
        failures.extend(check_segmented_group::<AffineU32>(
            &mut group,
            AffineU32 { a: 3, b: 7 },
            seed,
        ));
        drop(group);
        // As processes make one: an id, then each rank joining with it.
        let id = NcclId::new().unwrap();
        let id = NcclId::from_bytes(id.to_bytes());
        let mut group: Vec<GpuRank> = std::thread::scope(|s| {
            let joins: Vec<_> = ctxs
                .iter()
                .enumerate()
                .map(|(r, c)| s.spawn(move || GpuRank::new(c, r, ranks, &id).unwrap()))
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        failures.extend(check_group::<Latest>(
            &mut group,
            Latest {
                valid: true,
                value: 9,
            },
            seed,
        ));
        println!("gpu_distributed: {ranks} ranks checked");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A shard of a segmented scan: its input and its segments in its own
/// terms, on the host (each rank's thread uploads them).
struct SegmentedCase<E> {
    input: Vec<E>,
    segments: ShardSegments,
}

enum ShardSegments {
    Flags(Vec<u8>),
    /// Offsets into the shard (no 0 where the segment before runs on).
    Offsets(Vec<u32>),
    Keys(Vec<u32>),
}

/// One rank's outcome of a segmented scan: its output, the carry-out.
type SegmentedOutcome<E> = Result<(Vec<E>, E), RankError>;

/// Segmented scans across the ranks of `group`, by flags, offsets into
/// each shard and keys, against the CPU's one-rank segmented scan of the
/// concatenated shards: segments inside shards, ending at a shard's edge,
/// spanning several shards (one segment across all, heads 0.05% and 20%
/// of the elements), every kind and both directions, outputs poisoned.
fn check_segmented_group<Op: Case>(
    group: &mut [GpuRank],
    init: Op::Element,
    seed: u64,
) -> Vec<String> {
    let ranks = group.len();
    let mut failures = Vec::new();
    let mut rng = Rng64::seed_from_u64(seed ^ 0x5e6e_17ed);
    for pattern in 0..2 {
        let lengths = shards::<Op>(ranks, pattern);
        let n: usize = lengths.iter().sum();
        let whole = random_input::<Op>(n, seed ^ (pattern as u64 + 101));
        for density in [0.0, 0.0005, 0.2] {
            let flags: Vec<u8> = (0..n).map(|_| u8::from(rng.random_bool(density))).collect();
            // The same segments as keys: each element's segment number.
            let mut id = 0u32;
            let keys: Vec<u32> = flags
                .iter()
                .map(|&f| {
                    id += u32::from(f);
                    id
                })
                .collect();
            for source in ["flags", "offsets", "keys"] {
                let mut cases = Vec::new();
                let mut at = 0;
                for &len in &lengths {
                    let range = at..at + len;
                    at += len;
                    cases.push(SegmentedCase {
                        input: whole[range.clone()].to_vec(),
                        segments: match source {
                            "flags" => ShardSegments::Flags(flags[range].to_vec()),
                            "offsets" => ShardSegments::Offsets(
                                range
                                    .clone()
                                    .filter(|&i| flags[i] != 0)
                                    .map(|i| (i - range.start) as u32)
                                    .chain([len as u32])
                                    .collect(),
                            ),
                            _ => ShardSegments::Keys(keys[range].to_vec()),
                        },
                    });
                }
                for (name, spec) in specs(init) {
                    let outcomes: Vec<SegmentedOutcome<Op::Element>> =
                        on_every_rank::<Op, _, _>(group, &cases, |rank, scanner, stream, case| {
                            let len = case.input.len();
                            let d = stream.clone_htod(&case.input)?;
                            let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(len) }?;
                            poison(stream, &mut out);
                            let place = match &case.segments {
                                ShardSegments::Flags(f) => {
                                    let f = stream.clone_htod(f)?;
                                    rank.scan_segmented(scanner, stream, spec, &f, &d, &mut out)?
                                }
                                ShardSegments::Offsets(o) => {
                                    let o = stream.clone_htod(o)?;
                                    let o = DeviceOffsets::check(stream, o.as_view(), len)?;
                                    rank.scan_segmented(scanner, stream, spec, &o, &d, &mut out)?
                                }
                                ShardSegments::Keys(k) => {
                                    let k = stream.clone_htod(k)?;
                                    let k = DeviceSegments::keys(&k);
                                    rank.scan_segmented(scanner, stream, spec, k, &d, &mut out)?
                                }
                            };
                            Ok((stream.clone_dtoh(&out)?, place.total))
                        });
                    let mut want = vec![Op::IDENTITY; n];
                    let mut carry = Op::IDENTITY;
                    segmented::par_scan::<Op>(
                        spec.carry_out(&mut carry),
                        HeadFlags::Bytes(&flags),
                        &whole,
                        &mut want,
                    )
                    .unwrap();
                    let what = format!(
                        "{} {ranks} ranks {lengths:?} by {source}, heads {density}, {name}",
                        Op::NAME
                    );
                    let mut start = 0;
                    for (r, outcome) in outcomes.into_iter().enumerate() {
                        let len = lengths[r];
                        let want = &want[start..start + len];
                        start += len;
                        match outcome {
                            Ok((got, total)) => {
                                compare::<Op>(
                                    &format!("{what}: rank {r}"),
                                    len,
                                    &got,
                                    want,
                                    &mut failures,
                                );
                                if !Op::close(&total, &carry) {
                                    failures.push(format!(
                                        "{what}: rank {r}: carry-out {total:?}, cpu {carry:?}"
                                    ));
                                }
                            }
                            Err(e) => failures.push(format!("{what}: rank {r}: {e}")),
                        }
                    }
                    if pattern == 0 {
                        let totals = check_totals::<Op>(group, spec, &flags, &whole, &cases);
                        failures.extend(totals.into_iter().map(|f| format!("{what}: {f}")));
                    }
                    if pattern == 0 && source == "flags" {
                        // A one-element carry-out slot gets the whole one.
                        let slots: Vec<Result<Op::Element, RankError>> = on_every_rank::<Op, _, _>(
                            group,
                            &cases,
                            |rank, scanner, stream, case| {
                                let d = stream.clone_htod(&case.input)?;
                                let mut out =
                                    stream.alloc_zeros::<Op::Element>(case.input.len())?;
                                let mut slot: CudaSlice<Op::Element> = unsafe { stream.alloc(1) }?;
                                poison(stream, &mut slot);
                                let ShardSegments::Flags(f) = &case.segments else {
                                    unreachable!("cases by flags")
                                };
                                let f = stream.clone_htod(f)?;
                                let spec = spec.carry_out(&mut slot);
                                rank.scan_segmented(scanner, stream, spec, &f, &d, &mut out)?;
                                Ok(stream.clone_dtoh(&slot)?[0])
                            },
                        );
                        for (r, got) in slots.into_iter().enumerate() {
                            match got {
                                Ok(got) if Op::close(&got, &carry) => {}
                                got => failures.push(format!(
                                    "{what}: rank {r}: carry-out slot {got:?}, cpu {carry:?}"
                                )),
                            }
                        }
                    }
                }
            }
        }
    }
    // Rows cannot span ranks: refused on every rank, nothing written.
    let inputs: Vec<Vec<Op::Element>> = (0..ranks)
        .map(|r| random_input::<Op>(64, seed ^ r as u64))
        .collect();
    let outcomes = on_every_rank::<Op, _, _>(group, &inputs, |rank, scanner, stream, input| {
        let d = stream.clone_htod(input).unwrap();
        let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(input.len()) }.unwrap();
        poison(stream, &mut out);
        let rows = DeviceSegments::rows(16);
        let got = rank.scan_segmented(scanner, stream, ScanSpec::inclusive(), rows, &d, &mut out);
        (got.map(|_| ()), still_poisoned(stream, &out))
    });
    for (r, (got, untouched)) in outcomes.into_iter().enumerate() {
        let refused = match r {
            0 => matches!(got, Err(RankError::RowsAcrossRanks)),
            _ => matches!(
                got,
                Err(RankError::RowsAcrossRanks | RankError::OtherRank { rank: 0 })
            ),
        };
        if !refused || !untouched {
            failures.push(format!("{} rows across {ranks} ranks: rank {r} gave {got:?}, output untouched: {untouched}", Op::NAME));
        }
    }
    failures
}

/// One rank's per-segment totals call: what its slot holds (up to the
/// count), its output, the carry-out it returned.
type TotalsOutcome<E> = Result<(Vec<E>, Vec<E>, E), RankError>;

/// Per-segment totals across the ranks of `group`: each rank's slot (by
/// offsets one total a window, exact; by flags and keys a counted slot as
/// long as the shard) holds one total for each segment of its shard alone,
/// each the whole segment's total in the concatenated sequence (the CPU's
/// one-rank per-segment totals), however many ranks it spans; the outputs
/// and carry-out as without totals.
fn check_totals<Op: Case>(
    group: &mut [GpuRank],
    spec: ScanSpec<Op::Element>,
    flags: &[u8],
    whole: &[Op::Element],
    cases: &[SegmentedCase<Op::Element>],
) -> Vec<String> {
    let n = whole.len();
    let (mut scanned, mut carry) = (vec![Op::IDENTITY; n], Op::IDENTITY);
    let with_carry = spec.carry_out(&mut carry);
    segmented::par_scan::<Op>(with_carry, HeadFlags::Bytes(flags), whole, &mut scanned).unwrap();
    let ranges: Vec<_> = cases
        .iter()
        .map(|case| {
            let len = case.input.len();
            match &case.segments {
                ShardSegments::Flags(f) => {
                    segmented::segment_ranges(HeadFlags::Bytes(f).into(), len)
                }
                ShardSegments::Offsets(o) => {
                    segmented::segment_ranges(segmented::Segments::offsets(&o[..]), len)
                }
                ShardSegments::Keys(k) => {
                    segmented::segment_ranges(segmented::Segments::keys(&k[..]), len)
                }
            }
        })
        .collect();
    let lengths: Vec<usize> = cases.iter().map(|c| c.input.len()).collect();
    let wants = totals_across_shards::<Op>(spec, flags, whole, &ranges, &lengths);
    let outcomes: Vec<TotalsOutcome<Op::Element>> =
        on_every_rank::<Op, _, _>(group, cases, |rank, scanner, stream, case| {
            let len = case.input.len();
            let d = stream.clone_htod(&case.input)?;
            let mut out: CudaSlice<Op::Element> = unsafe { stream.alloc(len) }?;
            match &case.segments {
                ShardSegments::Offsets(o) => {
                    let windows = o.len() - 1;
                    let o = stream.clone_htod(o)?;
                    let o = DeviceOffsets::check(stream, o.as_view(), len)?;
                    let mut totals: CudaSlice<Op::Element> = unsafe { stream.alloc(windows) }?;
                    poison(stream, &mut totals);
                    let spec = spec.segment_totals(&mut totals);
                    let place = rank.scan_segmented(scanner, stream, spec, &o, &d, &mut out)?;
                    Ok((
                        stream.clone_dtoh(&totals)?,
                        stream.clone_dtoh(&out)?,
                        place.total,
                    ))
                }
                segments => {
                    let mut totals: CudaSlice<Op::Element> = unsafe { stream.alloc(len.max(1)) }?;
                    poison(stream, &mut totals);
                    let mut count = stream.alloc_zeros::<u64>(1)?;
                    let spec = spec.counted_segment_totals(&mut totals, &mut count);
                    let place = match segments {
                        ShardSegments::Flags(f) => {
                            let f = stream.clone_htod(f)?;
                            rank.scan_segmented(scanner, stream, spec, &f, &d, &mut out)?
                        }
                        ShardSegments::Keys(k) => {
                            let k = stream.clone_htod(k)?;
                            let k = DeviceSegments::keys(&k);
                            rank.scan_segmented(scanner, stream, spec, k, &d, &mut out)?
                        }
                        ShardSegments::Offsets(_) => unreachable!(),
                    };
                    let count = stream.clone_dtoh(&count)?[0] as usize;
                    let mut totals = stream.clone_dtoh(&totals)?;
                    totals.truncate(count);
                    Ok((totals, stream.clone_dtoh(&out)?, place.total))
                }
            }
        });
    let mut failures = Vec::new();
    let mut start = 0;
    for (r, ((outcome, case), want)) in outcomes.into_iter().zip(cases).zip(&wants).enumerate() {
        let len = case.input.len();
        let want_out = &scanned[start..start + len];
        start += len;
        match outcome {
            Ok((got, out, total)) => {
                compare::<Op>(
                    &format!("rank {r} with totals"),
                    len,
                    &out,
                    want_out,
                    &mut failures,
                );
                if !Op::close(&total, &carry) {
                    failures.push(format!(
                        "rank {r} with totals: carry-out {total:?}, cpu {carry:?}"
                    ));
                }
                let first_wrong = got.iter().zip(want).position(|(g, w)| !Op::close(g, w));
                if got.len() != want.len() {
                    failures.push(format!(
                        "rank {r}: {} totals, cpu {}",
                        got.len(),
                        want.len()
                    ));
                } else if let Some(i) = first_wrong {
                    failures.push(format!(
                        "rank {r}: total {i} of {}: {:?}, cpu {:?}",
                        want.len(),
                        got[i],
                        want[i]
                    ));
                }
            }
            Err(e) => failures.push(format!("rank {r} with totals: {e}")),
        }
    }
    failures
}

/// Ranks sharing one GPU that exchange through host memory
/// (`GpuRank::on_one_device`): the algorithm and its kernels over 1 to 5
/// ranks on a machine of one GPU, without NCCL, plain and segmented.
#[test]
fn ranks_on_one_gpu_scan_as_one() {
    let Some(ctx) = open_gpu("gpu_distributed") else {
        return;
    };
    let _gpu = gpu_shared();
    let seed = suite_seed();
    println!("gpu_distributed: ranks on one GPU, seed {seed}");
    let mut failures = Vec::new();
    for ranks in [1, 2, 3, 5] {
        let mut group = GpuRank::on_one_device(&ctx, ranks).unwrap();
        failures.extend(check_group::<AffineU32>(
            &mut group,
            AffineU32 { a: 3, b: 7 },
            seed,
        ));
        failures.extend(check_segmented_group::<AffineU32>(
            &mut group,
            AffineU32 { a: 3, b: 7 },
            seed,
        ));
        failures.extend(check_segmented_group::<Latest>(
            &mut group,
            Latest {
                valid: true,
                value: 9,
            },
            seed,
        ));
        failures.extend(check_segmented_group::<SumU32>(&mut group, 5, seed));
        println!("gpu_distributed: {ranks} ranks on one GPU checked");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(matches!(
        GpuRank::on_one_device(&ctx, 0),
        Err(RankError::BadRank { .. })
    ));
}

#[test]
fn a_rank_outside_its_group_is_refused() {
    let Some(ctx) = open_gpu("gpu_distributed") else {
        return;
    };
    // Refused before NCCL is loaded or asked to make anything.
    let id = NcclId::from_bytes([0; 128]);
    assert!(matches!(
        GpuRank::new(&ctx, 2, 2, &id),
        Err(RankError::BadRank { rank: 2, ranks: 2 })
    ));
    assert!(matches!(
        GpuRank::for_devices(&[]),
        Err(RankError::BadRank { .. })
    ));
}
