//! Scans across GPUs over NCCL (`gpu_scan::distributed::GpuRank`), both
//! ways a group is made, each result checked against the CPU backend, and
//! timed against one GPU scanning one shard.
//!
//! One process driving every GPU of the machine (a thread a rank):
//!
//! ```text
//! distributed_scan threads weak 28     # 2^28 elements a rank
//! distributed_scan threads strong 32   # 2^32 elements over all ranks
//! ```
//!
//! prints, for 1, 2, … ranks and two operators (a `u32` sum and an 8-byte
//! non-commutative `u32` affine map; strong scaling the sum only), the
//! whole scan's time and the
//! deferred form's beside one GPU's scan of one shard, and a copy of it.
//!
//! One process a GPU (on one host or several: `scripts/distributed-launch`
//! starts them on this one):
//!
//! ```text
//! distributed_scan rank R RANKS ID_FILE LOG2N
//! ```
//!
//! Rank 0 makes the group's NCCL id and writes it to `ID_FILE`; the others
//! wait for it there (a shared file system, or any way of passing 128
//! bytes). Every rank scans 2^LOG2N + its rank elements (uneven shards)
//! of one seeded sequence on GPU `R % GPUs`, and checks its part.
//! NCCL is loaded at run time: `GPU_SCAN_NCCL` names the library where it
//! is not `libnccl.so.2` on the loader's path.

use gpu_scan::cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use gpu_scan::distributed::{nccl_library, GpuRank, NcclId};
use gpu_scan::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/timing.rs"]
mod timing;
use timing::{median, time_ms};

#[path = "common/splitmix.rs"]
mod splitmix;

#[scan_op(element = u32, identity = 0, op = |a, b| a.wrapping_add(b))]
struct Sum;

/// `v ↦ a·v + b` over wrapping `u32`: 8 bytes, non-commutative, exact.
#[scan_op(identity = Affine { a: 1, b: 0 },
          op = |x, y| Affine { a: x.a.wrapping_mul(y.a), b: y.a.wrapping_mul(x.b).wrapping_add(y.b) })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Affine {
    a: u32,
    b: u32,
}

/// How an operator's elements are drawn from the sequence's seed.
trait Draw: ScanOp<Element: PartialEq + std::fmt::Debug + Send + Sync> {
    fn draw(seed: u64, i: u64) -> Self::Element;
}
impl Draw for Sum {
    fn draw(seed: u64, i: u64) -> u32 {
        splitmix::bits(seed ^ i) as u32
    }
}
impl Draw for Affine {
    fn draw(seed: u64, i: u64) -> Affine {
        let r = splitmix::bits(seed ^ i);
        Affine {
            a: (r as u32) | 1,
            b: (r >> 32) as u32,
        }
    }
}

/// Elements `start..start + n` of the sequence of `seed`.
fn shard<Op: Draw>(seed: u64, start: usize, n: usize) -> Vec<Op::Element> {
    use rayon::prelude::*;
    (start..start + n)
        .into_par_iter()
        .map(|i| Op::draw(seed, i as u64))
        .collect()
}

/// Rank `rank`'s part of the CPU's inclusive scan of the sequence whose
/// shards have `lengths`, compared with `got`: `None` if equal, else the
/// first index that differs.
fn check<Op: Draw>(
    seed: u64,
    lengths: &[usize],
    rank: usize,
    got: &[Op::Element],
) -> Option<usize> {
    let start: usize = lengths[..rank].iter().sum();
    let before = shard::<Op>(seed, 0, start);
    let prefix = before.into_iter().fold(Op::IDENTITY, Op::combine);
    let mine = shard::<Op>(seed, start, lengths[rank]);
    let mut want = vec![Op::IDENTITY; mine.len()];
    cpu::par_scan::<Op>(ScanKind::InclusiveWithInit(prefix), &mine, &mut want).unwrap();
    want.iter().zip(got).position(|(w, g)| w != g)
}

/// Median host milliseconds of `f` (which waits for its work) over 9
/// calls after 2 warm-ups.
fn host_ms(mut f: impl FnMut()) -> f32 {
    for _ in 0..2 {
        f();
    }
    median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f32() * 1e3
            })
            .collect(),
    )
}

/// One rank's timings: the whole scan and the deferred form (host time,
/// waited for), one GPU's scan of the same shard (host time, and CUDA
/// events), a device copy of the shard (events); and whether its output
/// was right.
struct RankTimes {
    scan: f32,
    deferred: f32,
    alone_host: f32,
    alone: f32,
    copy: f32,
    wrong: Option<usize>,
}

fn run_rank<Op: Draw>(
    rank: &mut GpuRank,
    stream: &Arc<CudaStream>,
    lengths: &[usize],
    seed: u64,
) -> RankTimes
where
    Op::Element: gpu_scan::cudarc::driver::DeviceRepr + gpu_scan::cudarc::driver::ValidAsZeroBits,
{
    let me = rank.rank();
    let n = lengths[me];
    let start: usize = lengths[..me].iter().sum();
    let input = stream.clone_htod(&shard::<Op>(seed, start, n)).unwrap();
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let mut scanner = GpuScanner::<Op>::new(stream.context()).unwrap();
    scanner.set_tuning(scanner.tuning().with_background_compile(false));
    scanner.reserve(stream, ScanKind::Inclusive, n).unwrap();
    rank.scan(
        &mut scanner,
        stream,
        ScanKind::Inclusive,
        &input,
        &mut output,
    )
    .unwrap();
    let wrong = check::<Op>(seed, lengths, me, &stream.clone_dtoh(&output).unwrap());
    let mut timed = |deferred: bool| {
        host_ms(|| {
            let call = match deferred {
                false => GpuRank::scan::<Op, _, _>,
                true => GpuRank::scan_deferred::<Op, _, _>,
            };
            call(
                rank,
                &mut scanner,
                stream,
                ScanSpec::inclusive(),
                &input,
                &mut output,
            )
            .unwrap();
            stream.synchronize().unwrap();
        })
    };
    let (scan, deferred) = (timed(false), timed(true));
    let alone_host = host_ms(|| {
        scanner
            .scan(stream, ScanKind::Inclusive, &input, &mut output)
            .unwrap();
        stream.synchronize().unwrap();
    });
    let alone = time_ms(stream, || {
        scanner
            .scan(stream, ScanKind::Inclusive, &input, &mut output)
            .unwrap()
    });
    let copy = time_ms(stream, || stream.memcpy_dtod(&input, &mut output).unwrap());
    RankTimes {
        scan,
        deferred,
        alone_host,
        alone,
        copy,
        wrong,
    }
}

/// Every group of the first 1, 2, … GPUs, one thread a rank.
fn threads(strong: bool, log2: u32) {
    let count = CudaContext::device_count().unwrap() as usize;
    let ctxs: Vec<Arc<CudaContext>> = (0..count).map(|i| CudaContext::new(i).unwrap()).collect();
    let (library, version) = nccl_library().expect("NCCL");
    println!(
        "NCCL {version} ({library}), {count} GPUs: {}",
        ctxs[0].name().unwrap()
    );
    println!(
        "{:<7} {:>5} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}  check",
        "op",
        "ranks",
        "per rank",
        "scan ms",
        "deferred",
        "1 GPU host",
        "1 GPU ev",
        "copy ev",
        "scan/1",
        "def/1"
    );
    let seed = 0x5eed_0049;
    for ranks in 1..=count {
        let total = 1usize << log2;
        let lengths: Vec<usize> = match strong {
            true => (0..ranks)
                .map(|r| total / ranks + usize::from(r < total % ranks))
                .collect(),
            false => vec![total; ranks],
        };
        // Strong scaling (the whole on one GPU too) with words only.
        let ops: &[&str] = match strong {
            true => &["sum u32"],
            false => &["sum u32", "affine"],
        };
        for &op in ops {
            let mut group = GpuRank::for_devices(&ctxs[..ranks]).unwrap();
            let times: Vec<RankTimes> = std::thread::scope(|s| {
                let jobs: Vec<_> = group
                    .iter_mut()
                    .map(|rank| {
                        let lengths = &lengths;
                        s.spawn(move || {
                            let stream = rank.context().new_stream().unwrap();
                            match op {
                                "sum u32" => run_rank::<Sum>(rank, &stream, lengths, seed),
                                _ => run_rank::<Affine>(rank, &stream, lengths, seed),
                            }
                        })
                    })
                    .collect();
                jobs.into_iter().map(|j| j.join().unwrap()).collect()
            });
            let t = &times[0];
            let wrong: Vec<String> = times
                .iter()
                .enumerate()
                .filter_map(|(r, t)| t.wrong.map(|i| format!("rank {r} at {i}")))
                .collect();
            println!(
                "{op:<7} {ranks:>5} {:>12} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>8.3} {:>8.3}  {}",
                lengths[0],
                t.scan,
                t.deferred,
                t.alone_host,
                t.alone,
                t.copy,
                t.scan / t.alone_host,
                t.deferred / t.alone_host,
                if wrong.is_empty() { "ok".to_string() } else { wrong.join(", ") }
            );
            assert!(wrong.is_empty(), "wrong results");
        }
    }
}

/// One rank of a group of processes.
fn process(rank: usize, ranks: usize, id_file: &str, log2: u32) {
    let id = match rank {
        0 => {
            let id = NcclId::new().expect("NCCL");
            let partial = format!("{id_file}.partial");
            std::fs::write(&partial, id.to_bytes()).unwrap();
            std::fs::rename(&partial, id_file).unwrap();
            id
        }
        _ => {
            let waited = Instant::now();
            loop {
                if let Ok(bytes) = std::fs::read(id_file) {
                    if let Ok(bytes) = <[u8; 128]>::try_from(bytes) {
                        break NcclId::from_bytes(bytes);
                    }
                }
                assert!(
                    waited.elapsed() < Duration::from_secs(120),
                    "no id in {id_file}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    // One GPU a rank of this host (ranks are numbered host by host).
    let devices = CudaContext::device_count().unwrap() as usize;
    let ctx = CudaContext::new(rank % devices).unwrap();
    let mut group_rank = GpuRank::new(&ctx, rank, ranks, &id).unwrap();
    let stream = ctx.new_stream().unwrap();
    let lengths: Vec<usize> = (0..ranks).map(|r| (1usize << log2) + r).collect();
    let seed = 0x5eed_0049;
    let sum = run_rank::<Sum>(&mut group_rank, &stream, &lengths, seed);
    let affine = run_rank::<Affine>(&mut group_rank, &stream, &lengths, seed);
    for (op, t) in [("sum u32", &sum), ("affine", &affine)] {
        println!(
            "rank {rank}/{ranks} {op}: {} elements, scan {:.3} ms, deferred {:.3} ms, one GPU {:.3} ms: {}",
            lengths[rank],
            t.scan,
            t.deferred,
            t.alone_host,
            match t.wrong {
                None => "ok".to_string(),
                Some(i) => format!("WRONG at {i}"),
            }
        );
        assert!(t.wrong.is_none());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match (arg(0), arg(1)) {
        (Some("threads"), Some(form @ ("weak" | "strong"))) => {
            threads(form == "strong", arg(2).map_or(26, |s| s.parse().unwrap()))
        }
        (Some("rank"), Some(r)) => process(
            r.parse().unwrap(),
            arg(2).expect("RANKS").parse().unwrap(),
            arg(3).expect("ID_FILE"),
            arg(4).map_or(24, |s| s.parse().unwrap()),
        ),
        _ => {
            eprintln!(
                "usage: distributed_scan threads weak|strong LOG2N | rank R RANKS ID_FILE LOG2N"
            );
            std::process::exit(2);
        }
    }
}
