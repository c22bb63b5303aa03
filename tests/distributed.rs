//! Scans across ranks (`gpu_scan::distributed`) on the CPU backend with
//! simulated ranks (threads of this process): for 1 to 8 ranks holding
//! random contiguous shards (uneven, empty ones among them, all empty),
//! every kind, both directions, with the carry-out, the concatenation of
//! the ranks' outputs is the one-rank scan of the concatenation of their
//! inputs, bit for bit, for non-commutative exact operators (affine maps
//! over wrapping `u32`, "keep the right one") and `u32` sums; the deferred
//! form's local scans with their prefixes applied are the same; a rank
//! with a wrong output length makes every rank fail, typed, and nothing is
//! written (but the deferred form's own local scans); segmented scans by
//! flags, offsets into each shard and keys, segments spanning shards,
//! against the one-rank segmented scan, with per-segment totals (each
//! rank's segments with the whole segment's total, however many ranks it
//! spans; counted slots; a slot of a wrong length refused everywhere);
//! rows refused. `DISTRIBUTED_SEED` replays a run.

mod common;
use common::ops::{random_latest, AffineU32, Latest};
use common::segments::totals_across_shards;
use common::specs::all_specs;
use gpu_scan::distributed::{
    scan, scan_deferred, scan_segmented, Collective, DistributedError, RankPrefix, SimulatedRank,
    SimulatedRanks,
};
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::segmented::{self, HeadFlags, SegmentedError, Segments};
use gpu_scan::LengthMismatch;
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("DISTRIBUTED_SEED");
    println!("distributed: seed {seed} (DISTRIBUTED_SEED={seed} replays)");
    seed
}

/// Runs `f` on every rank of a group of `shards.len()`, one thread a rank,
/// with its shard and an output the length `out_len` gives (poisoned with
/// `poison`); returns each rank's output and result.
fn on_ranks<E: Copy + Send + Sync, R: Send>(
    shards: &[Vec<E>],
    out_len: impl Fn(usize, usize) -> usize + Sync,
    poison: E,
    f: impl Fn(&SimulatedRank, &[E], &mut [E]) -> R + Sync,
) -> Vec<(Vec<E>, R)> {
    let ranks = SimulatedRanks::new(shards.len());
    std::thread::scope(|s| {
        let jobs: Vec<_> = ranks
            .into_iter()
            .zip(shards)
            .map(|(rank, shard)| {
                let (f, out_len) = (&f, &out_len);
                s.spawn(move || {
                    let mut out = vec![poison; out_len(rank.rank(), shard.len())];
                    let r = f(&rank, shard, &mut out);
                    (out, r)
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

/// `n` elements cut into `ranks` contiguous shards at random, some empty.
fn shards_of<E: Copy>(rng: &mut Rng64, input: &[E], ranks: usize) -> Vec<Vec<E>> {
    let mut cuts: Vec<usize> = (0..ranks - 1)
        .map(|_| match rng.random_range(0..4) {
            0 => 0,
            1 => input.len(),
            _ => rng.random_range(0..=input.len()),
        })
        .collect();
    cuts.sort();
    let mut shards = Vec::new();
    let mut at = 0;
    for cut in cuts.into_iter().chain([input.len()]) {
        shards.push(input[at..cut].to_vec());
        at = cut;
    }
    shards
}

/// Every spec of `make`'s element over random inputs and splits: the ranks
/// together scan as one rank does, and so do the deferred form's.
fn check_op<Op: ScanOp<Element: std::fmt::Debug + PartialEq>>(
    rng: &mut Rng64,
    init: Op::Element,
    poison: Op::Element,
    make: impl Fn(&mut Rng64) -> Op::Element,
) {
    let mut cases = 0;
    for n in [0usize, 1, 2, 31, 1000, 20_011, 70_003] {
        let input: Vec<Op::Element> = (0..n).map(|_| make(rng)).collect();
        for ranks in [1usize, 2, 3, 5, 8] {
            let shards = shards_of(rng, &input, ranks);
            assert_eq!(shards.iter().map(Vec::len).sum::<usize>(), n);
            for spec in all_specs(init) {
                let (mut want, mut want_carry) = (vec![poison; n], poison);
                cpu::scan::<Op>(spec.carry_out(&mut want_carry), &input, &mut want).unwrap();
                let results = on_ranks(
                    &shards,
                    |_, len| len,
                    poison,
                    |rank, shard, out| {
                        let mut carry = poison;
                        scan::<Op, _>(rank, spec.carry_out(&mut carry), shard, out).map(|()| carry)
                    },
                );
                let got: Vec<Op::Element> = results.iter().flat_map(|(o, _)| o.clone()).collect();
                assert_eq!(
                    got,
                    want,
                    "{} n = {n}, {ranks} ranks {:?}, {spec:?}",
                    Op::NAME,
                    shards.iter().map(Vec::len).collect::<Vec<_>>()
                );
                for (_, carry) in &results {
                    assert_eq!(
                        carry.as_ref().unwrap(),
                        &want_carry,
                        "{} carry-out, {spec:?}",
                        Op::NAME
                    );
                }
                // The deferred form: local scans, then their prefixes.
                let deferred = on_ranks(
                    &shards,
                    |_, len| len,
                    poison,
                    |rank, shard, out| {
                        let prefix = scan_deferred::<Op, _>(rank, spec, shard, out).unwrap();
                        prefix.apply::<Op>(out);
                        prefix
                    },
                );
                let got: Vec<Op::Element> = deferred.iter().flat_map(|(o, _)| o.clone()).collect();
                assert_eq!(
                    got,
                    want,
                    "{} deferred, n = {n}, {ranks} ranks, {spec:?}",
                    Op::NAME
                );
                let prefixes: Vec<RankPrefix<Op::Element>> =
                    deferred.iter().map(|(_, p)| *p).collect();
                assert!(prefixes
                    .iter()
                    .all(|p| p.total == want_carry && p.direction == spec.direction));
                cases += 1;
            }
        }
    }
    println!(
        "distributed: {} over {cases} splits and specs, as one rank",
        Op::NAME
    );
}

#[test]
fn ranks_scan_as_one() {
    let mut rng = Rng64::seed_from_u64(seed());
    check_op::<AffineU32>(
        &mut rng,
        AffineU32 { a: 3, b: 7 },
        AffineU32 {
            a: 0xdead,
            b: 0xbeef,
        },
        |r| AffineU32 {
            a: r.random(),
            b: r.random(),
        },
    );
    check_op::<Latest>(
        &mut rng,
        Latest {
            valid: true,
            value: 9,
        },
        Latest {
            valid: true,
            value: u64::MAX,
        },
        // Mostly invalid (the identity: the operator's laws hold for
        // those), so that a valid one's value carries across ranks.
        |r| random_latest(r, 0.02),
    );
    check_op::<Sum<u32>>(&mut rng, 5, 0xdead_beef, |r| r.random());
}

/// A shard's segments, owned: what each rank's thread gets.
enum ShardSegments {
    Flags(Vec<u8>),
    Offsets(Vec<u32>),
    Keys(Vec<u16>),
}

impl ShardSegments {
    fn as_segments(&self) -> Segments<'_> {
        match self {
            ShardSegments::Flags(f) => HeadFlags::Bytes(f).into(),
            ShardSegments::Offsets(o) => Segments::offsets(&o[..]),
            ShardSegments::Keys(k) => Segments::keys(&k[..]),
        }
    }
}

/// Segments across ranks, by head flags, offsets into each shard (a shard
/// without an offset of 0 continues the segment before it) and keys (a
/// segment runs on while the keys are equal): the ranks' outputs and carry-out
/// are the one-rank segmented scan's, for segments inside a shard, ending
/// at a shard's edge, spanning several shards (and empty ones), both ways,
/// every kind (the initial value seeding every segment).
fn check_segmented<Op: ScanOp<Element: std::fmt::Debug + PartialEq>>(
    rng: &mut Rng64,
    init: Op::Element,
    poison: Op::Element,
    make: impl Fn(&mut Rng64) -> Op::Element,
) {
    let mut cases = 0;
    for n in [0usize, 1, 2, 31, 1000, 20_011] {
        let input: Vec<Op::Element> = (0..n).map(|_| make(rng)).collect();
        // Sparse heads (segments across shards), dense ones, none.
        for density in [0.0, 0.001, 0.05, 0.5] {
            let flags: Vec<u8> = (0..n).map(|_| u8::from(rng.random_bool(density))).collect();
            // The same segments as keys: each element's segment number
            // (u16, so that keys wrap: neighbours still differ).
            let mut id = 0u16;
            let keys: Vec<u16> = flags
                .iter()
                .map(|&f| {
                    id = id.wrapping_add(u16::from(f));
                    id
                })
                .collect();
            for (ranks, source) in [1usize, 2, 3, 6]
                .into_iter()
                .flat_map(|r| ["flags", "offsets", "keys"].map(move |s| (r, s)))
            {
                let shards = shards_of(rng, &input, ranks);
                // Each shard's segments in its own terms.
                let mut shard_segments = Vec::new();
                let mut at = 0;
                for s in &shards {
                    let range = at..at + s.len();
                    at += s.len();
                    shard_segments.push(match source {
                        "flags" => ShardSegments::Flags(flags[range].to_vec()),
                        "offsets" => ShardSegments::Offsets(
                            range
                                .clone()
                                .filter(|&i| flags[i] != 0)
                                .map(|i| (i - range.start) as u32)
                                .collect(),
                        ),
                        _ => ShardSegments::Keys(keys[range].to_vec()),
                    });
                }
                for spec in all_specs(init) {
                    let (mut want, mut want_carry) = (vec![poison; n], poison);
                    segmented::par_scan::<Op>(
                        spec.carry_out(&mut want_carry),
                        HeadFlags::Bytes(&flags),
                        &input,
                        &mut want,
                    )
                    .unwrap();
                    let group = SimulatedRanks::new(ranks);
                    let results: Vec<(Vec<Op::Element>, Op::Element)> = std::thread::scope(|s| {
                        let jobs: Vec<_> = group
                            .into_iter()
                            .zip(shards.iter().zip(&shard_segments))
                            .map(|(rank, (shard, segments))| {
                                s.spawn(move || {
                                    let (mut out, mut carry) = (vec![poison; shard.len()], poison);
                                    scan_segmented::<Op, _>(
                                        &rank,
                                        spec.carry_out(&mut carry),
                                        segments.as_segments(),
                                        shard,
                                        &mut out,
                                    )
                                    .unwrap();
                                    (out, carry)
                                })
                            })
                            .collect();
                        jobs.into_iter().map(|j| j.join().unwrap()).collect()
                    });
                    let got: Vec<Op::Element> =
                        results.iter().flat_map(|(o, _)| o.clone()).collect();
                    let lens: Vec<usize> = shards.iter().map(Vec::len).collect();
                    assert_eq!(
                        got,
                        want,
                        "{} segmented by {source}, n = {n}, heads {density}, shards {lens:?}, {spec:?}",
                        Op::NAME
                    );
                    for (_, carry) in &results {
                        assert_eq!(
                            carry,
                            &want_carry,
                            "{} segmented carry-out, {spec:?}",
                            Op::NAME
                        );
                    }
                    check_totals::<Op>(
                        spec,
                        &flags,
                        &input,
                        &shards,
                        &shard_segments,
                        poison,
                        &format!(
                            "{} totals by {source}, n = {n}, heads {density}, {spec:?}",
                            Op::NAME
                        ),
                    );
                    cases += 1;
                }
            }
        }
    }
    println!(
        "distributed: {} segmented over {cases} splits and specs, as one rank",
        Op::NAME
    );
}

/// A rank's totals call: its result, its slot, its count, whether its
/// output is untouched.
type TotalsOutcome<E> = (Result<(), DistributedError>, Vec<E>, usize, bool);

/// Per-segment totals across ranks: each rank's slot holds one total for
/// each segment of its shard alone (`segment_ranges` of its own segments),
/// each the total of the whole segment it belongs to in the concatenated
/// sequence (the one-rank scan's per-segment totals), however many ranks
/// that segment spans; an empty offsets window has the seed. Then the same
/// with a counted slot one too short (the count right, the last total not
/// written) and a plain slot one too long (refused on every rank, nothing
/// written anywhere).
fn check_totals<Op: ScanOp<Element: std::fmt::Debug + PartialEq>>(
    spec: ScanSpec<Op::Element>,
    flags: &[u8],
    input: &[Op::Element],
    shards: &[Vec<Op::Element>],
    shard_segments: &[ShardSegments],
    poison: Op::Element,
    what: &str,
) {
    let ranges: Vec<_> = shards
        .iter()
        .zip(shard_segments)
        .map(|(shard, segments)| segmented::segment_ranges(segments.as_segments(), shard.len()))
        .collect();
    let lengths: Vec<usize> = shards.iter().map(Vec::len).collect();
    let wants = totals_across_shards::<Op>(spec, flags, input, &ranges, &lengths);
    let ranks = shards.len();
    for shape in ["exact", "counted, one short", "one too long"] {
        let results: Vec<TotalsOutcome<Op::Element>> = std::thread::scope(|s| {
            let jobs: Vec<_> = SimulatedRanks::new(ranks)
                .into_iter()
                .zip(shards.iter().zip(shard_segments.iter().zip(&wants)))
                .map(|(rank, (shard, (segments, want)))| {
                    s.spawn(move || {
                        let mut out = vec![poison; shard.len()];
                        let len = match shape {
                            "exact" => want.len(),
                            "counted, one short" => want.len().saturating_sub(1),
                            _ => want.len() + 1,
                        };
                        let mut totals = vec![poison; len];
                        let mut count = usize::MAX;
                        let got = match shape {
                            "counted, one short" => scan_segmented::<Op, _>(
                                &rank,
                                spec.counted_segment_totals(&mut totals[..], &mut count),
                                segments.as_segments(),
                                shard,
                                &mut out,
                            ),
                            _ => scan_segmented::<Op, _>(
                                &rank,
                                spec.segment_totals(&mut totals[..]),
                                segments.as_segments(),
                                shard,
                                &mut out,
                            ),
                        };
                        let untouched = out.iter().all(|x| *x == poison);
                        (got, totals, count, untouched)
                    })
                })
                .collect();
            jobs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        for (r, ((got, totals, count, untouched), want)) in
            results.into_iter().zip(&wants).enumerate()
        {
            match shape {
                "exact" => {
                    assert!(got.is_ok(), "{what}: rank {r}: {got:?}");
                    assert_eq!(&totals, want, "{what}: rank {r}");
                }
                "counted, one short" => {
                    assert!(got.is_ok(), "{what}: rank {r}: {got:?}");
                    assert_eq!(count, want.len(), "{what}: rank {r}'s count");
                    assert_eq!(
                        totals[..],
                        want[..totals.len()],
                        "{what}: rank {r}, counted"
                    );
                }
                _ => {
                    // Refused here (the slot) or because another rank's was.
                    let refused = matches!(
                        got,
                        Err(DistributedError::Segmented(SegmentedError::Totals(_)))
                            | Err(DistributedError::OtherRank { .. })
                    );
                    assert!(refused, "{what}: rank {r}, a slot too long: {got:?}");
                    assert!(
                        untouched && totals.iter().all(|x| *x == poison),
                        "{what}: rank {r} wrote after a refusal"
                    );
                }
            }
        }
    }
}

#[test]
fn segments_span_ranks() {
    let mut rng = Rng64::seed_from_u64(seed());
    check_segmented::<AffineU32>(
        &mut rng,
        AffineU32 { a: 3, b: 7 },
        AffineU32 {
            a: 0xdead,
            b: 0xbeef,
        },
        |r| AffineU32 {
            a: r.random(),
            b: r.random(),
        },
    );
    check_segmented::<Sum<u32>>(&mut rng, 5, 0xdead_beef, |r| r.random());
}

/// The second rank's output is one too short: it says so and writes
/// nothing, every other rank says which rank could not scan; the full
/// scan writes nothing on any rank (the deferred form's local scans, which
/// do not wait for the exchange, have written theirs).
#[test]
fn a_wrong_length_on_one_rank_fails_every_rank_and_writes_nothing() {
    let mut rng = Rng64::seed_from_u64(seed());
    let input: Vec<u32> = (0..1000).map(|_| rng.random()).collect();
    let shards = vec![input[..400].to_vec(), input[400..].to_vec(), vec![]];
    let poison = 0xdead_beefu32;
    let short = |rank: usize, len: usize| if rank == 1 { len - 1 } else { len };
    for deferred in [false, true] {
        let results = on_ranks(&shards, short, poison, |rank, shard, out| {
            if deferred {
                scan_deferred::<Sum<u32>, _>(rank, ScanSpec::inclusive(), shard, out).map(|_| ())
            } else {
                scan::<Sum<u32>, _>(rank, ScanSpec::inclusive(), shard, out)
            }
        });
        for (rank, (out, result)) in results.iter().enumerate() {
            if rank == 1 || !deferred {
                assert!(out.iter().all(|&x| x == poison), "rank {rank} wrote");
            }
            let expected = if rank == 1 {
                DistributedError::Length(LengthMismatch {
                    input: 600,
                    output: 599,
                })
            } else {
                DistributedError::OtherRank { rank: 1 }
            };
            assert_eq!(result.as_ref().unwrap_err(), &expected, "rank {rank}");
        }
    }
}

/// A rank's flags one short of its shard: a typed error there, the rank's
/// index everywhere else, nothing written.
#[test]
fn wrong_flags_on_one_rank_fail_every_rank() {
    let shards = [vec![1u32; 10], vec![2u32; 10]];
    let flags = [vec![0u8; 10], vec![1u8; 9]];
    let poison = 7u32;
    let group = SimulatedRanks::new(2);
    let results: Vec<(Vec<u32>, Result<(), DistributedError>)> = std::thread::scope(|s| {
        let jobs: Vec<_> = group
            .into_iter()
            .zip(shards.iter().zip(&flags))
            .map(|(rank, (shard, flags))| {
                s.spawn(move || {
                    let mut out = vec![poison; shard.len()];
                    let r = scan_segmented::<Sum<u32>, _>(
                        &rank,
                        ScanSpec::inclusive(),
                        HeadFlags::Bytes(flags),
                        shard,
                        &mut out,
                    );
                    (out, r)
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert_eq!(results[0].1, Err(DistributedError::OtherRank { rank: 1 }));
    assert!(
        matches!(
            results[1].1,
            Err(DistributedError::Segmented(SegmentedError::Flags(_)))
        ),
        "{:?}",
        results[1].1
    );
    assert!(results
        .iter()
        .all(|(out, _)| out.iter().all(|&x| x == poison)));
}

/// A group runs many exchanges one after another (each call one), and
/// its ranks know their places.
#[test]
fn ranks_exchange_again_and_again() {
    let ranks = SimulatedRanks::new(4);
    let sums: Vec<Vec<u64>> = std::thread::scope(|s| {
        let jobs: Vec<_> = ranks
            .into_iter()
            .map(|rank| {
                s.spawn(move || {
                    assert_eq!(rank.ranks(), 4);
                    (0..200u64)
                        .map(|round| {
                            let all = rank.all_gather(round * 10 + rank.rank() as u64).unwrap();
                            assert_eq!(all, (0..4).map(|r| round * 10 + r).collect::<Vec<_>>());
                            all.iter().sum()
                        })
                        .collect()
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert!(sums.windows(2).all(|w| w[0] == w[1]));
}

/// Rows cannot span ranks (a row's place depends on the shards before
/// it): every rank says so, and nothing is written.
#[test]
fn rows_are_refused_across_ranks() {
    let shards = vec![vec![1u32; 8], vec![2u32; 8]];
    let poison = 7u32;
    let results = on_ranks(
        &shards,
        |_, len| len,
        poison,
        |rank, shard, out| {
            scan_segmented::<Sum<u32>, _>(
                rank,
                ScanSpec::inclusive(),
                Segments::rows(4),
                shard,
                out,
            )
        },
    );
    for (out, result) in &results {
        assert_eq!(result, &Err(DistributedError::RowsAcrossRanks));
        assert!(out.iter().all(|&x| x == poison));
    }
}
