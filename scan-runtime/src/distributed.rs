//! Scans across GPUs over NCCL (issue 49): one [`GpuRank`] a GPU, each
//! holding a contiguous shard of one sequence in rank order, of any length
//! (0 included), in one process driving several GPUs (a thread a rank,
//! [`GpuRank::for_devices`]) or in one process a GPU, on one host or many
//! ([`GpuRank::new`] with an [`NcclId`] the caller hands every process).
//!
//! The algorithm is the CPU backend's ([`scan_core::distributed`]): each
//! rank folds its shard to its total on the device
//! ([`GpuScanner::reduce`], one read), one NCCL all-gather shares every
//! rank's total, whether its call is valid, and which operator and spec it
//! scans with, and each rank scans its shard seeded with the combination
//! of the totals before it in scan order ([`rank_prefix`], combined in rank
//! order, so any associative operator). Each input element is read twice,
//! each output written once. [`GpuRank::scan_deferred`] scans the shard
//! alone and returns its [`RankPrefix`], for producers that apply the
//! prefix themselves: the traffic of a one-GPU scan and the exchange.
//!
//! Segmented scans ([`GpuRank::scan_segmented`]) by flags, offsets into
//! each shard or keys, with segments that span ranks: each rank scans its
//! shard by its own segments, one search kernel finds where its heads lie
//! and how its ends meet its neighbours', the exchange shares that with the
//! partial of the segment open at its end, and each rank rescans only the
//! elements a segment from before runs over ([`segmented_place`], shared
//! with the CPU backend).
//!
//! [`GpuRank::on_one_device`] makes ranks that share one GPU and exchange
//! through host memory: the same algorithm and kernels without NCCL or
//! several GPUs (what the tests run on a machine of one GPU).
//!
//! Every rank makes the same calls in the same order, as NCCL requires. A
//! rank whose call is wrong still joins the exchange, so every rank returns
//! an error ([`RankError::OtherRank`] on the others) and none waits for
//! ever; a rank called with another operator or spec is
//! [`RankError::Mismatch`] on every rank. The exchange waits for the
//! gathered totals on the host (one small copy), so a distributed scan
//! cannot be captured in a CUDA graph.

use crate::carry::DeviceCarryOut;
use crate::error::ScanError;
use crate::flag_builder::HeadFlagBuilder;
use crate::gpu::GpuScanner;
use crate::nccl::{nccl, Nccl, RawComm, RawId};
use crate::segments::DeviceSegments;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    DeviceSlice, DriverError, SyncOnDrop, ValidAsZeroBits,
};
use scan_core::distributed::{
    rank_prefix, seeded_partial, segment_edge_totals, segmented_place, shard_alone, Collective,
    RankPrefix, SegmentedPlace, SegmentedShard, ShardEdges, SimulatedRank, SimulatedRanks,
};
use scan_core::spec::{IntoScanSpec, NoCarryOut, NoSegments};
use scan_core::{Direction, ScanKind, ScanOp, ScanSpec};
use std::ffi::{c_int, c_void};
use std::hash::Hasher;
use std::sync::Arc;

pub use crate::nccl::{NcclError, NCCL_ENV};

/// A distributed scan that could not run on this rank.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RankError {
    /// This rank's scan could not run (lengths, compiling, launching): on
    /// a length, before anything was written on any rank.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// A CUDA call failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// NCCL is missing or one of its calls failed.
    #[error(transparent)]
    Nccl(#[from] NcclError),
    /// Another rank's call was wrong: no rank's whole scan wrote anything
    /// (the deferred form's local scans had written theirs).
    #[error("rank {rank} of the group could not scan its shard")]
    OtherRank {
        /// The first such rank.
        rank: usize,
    },
    /// Another rank scans with another operator, element size or spec
    /// (kind, direction, initial value or not, deferred or not): written
    /// as for [`RankError::OtherRank`].
    #[error("rank {rank} of the group called with another operator or spec than this rank: every rank makes the same call")]
    Mismatch {
        /// The first such rank.
        rank: usize,
    },
    /// A rank index outside the group, or a group of no rank.
    #[error("rank {rank} of a group of {ranks}: ranks are 0 to the group's size - 1")]
    BadRank {
        /// The rank asked for.
        rank: usize,
        /// The group's size.
        ranks: usize,
    },
    /// The stream belongs to another device than the rank's.
    #[error("the stream is on device {stream} but this rank's communicator on device {rank}")]
    WrongDevice {
        /// The stream's device ordinal.
        stream: usize,
        /// The rank's.
        rank: usize,
    },
    /// Segments by rows across ranks: a row's place depends on the shards
    /// before it; give each shard's row starts as offsets (nothing was
    /// written on any rank).
    #[error("segments by rows cannot span ranks: give each shard's row starts as offsets")]
    RowsAcrossRanks,
    /// The host exchange of ranks on one device failed (a rank's thread
    /// panicked).
    #[error("the exchange between ranks on one device failed: {0}")]
    Host(String),
    /// The operator's element is aligned beyond what the exchange's record
    /// holds.
    #[error("an element aligned to {align} bytes: the exchange holds elements aligned to at most {TOTAL_OFFSET}")]
    Alignment {
        /// The element's alignment.
        align: usize,
    },
}

/// A `Result` with [`RankError`].
pub type Result<T, E = RankError> = std::result::Result<T, E>;

/// The NCCL library this process uses (the name it was loaded by) and its
/// version code (`ncclGetVersion`: 22703 for 2.27.3), loading it on first
/// use ([`NCCL_ENV`] names it, else `libnccl.so.2`, then `libnccl.so`).
pub fn nccl_library() -> Result<(String, i32), NcclError> {
    let nccl = nccl()?;
    Ok((nccl.name.clone(), nccl.version()?))
}

/// The NCCL unique id of a group: made once ([`NcclId::new`], by one
/// process) and handed to every rank's [`GpuRank::new`], as 128 bytes
/// ([`NcclId::to_bytes`], [`NcclId::from_bytes`]) through whatever the
/// processes share (a file, MPI, a launcher's environment).
#[derive(Clone, Copy)]
pub struct NcclId(RawId);

impl NcclId {
    /// A new id (`ncclGetUniqueId`: it also opens the bootstrap socket the
    /// ranks first meet at, on this host).
    pub fn new() -> Result<NcclId> {
        Ok(NcclId(nccl()?.unique_id()?))
    }

    /// The id's 128 bytes.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal.map(|c| c as u8)
    }

    /// The id from its bytes ([`NcclId::to_bytes`]).
    pub fn from_bytes(bytes: [u8; 128]) -> NcclId {
        NcclId(RawId {
            internal: bytes.map(|b| b as _),
        })
    }
}

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NcclId(..)")
    }
}

/// Bytes of a rank's record before its total ([`Header`] and padding):
/// the total's offset, so elements aligned to up to this many bytes.
const TOTAL_OFFSET: usize = 64;
/// Bytes of a rank's record: the header, then three elements in the bytes
/// of the widest element, the same for every operator (a plain scan's
/// total; a segmented scan's open segment's partial, its shard's fold and,
/// with per-segment totals, its first piece's fold).
const RECORD: usize = TOTAL_OFFSET + 3 * kernels_gen::MAX_ELEMENT_SIZE;
/// Where a record's second element lies.
const FOLD_OFFSET: usize = TOTAL_OFFSET + kernels_gen::MAX_ELEMENT_SIZE;
/// Where a segmented record with per-segment totals has its first piece's
/// fold ([`SegmentedShard::lead`]).
const LEAD_OFFSET: usize = FOLD_OFFSET + kernels_gen::MAX_ELEMENT_SIZE;
/// Where a segmented scan's record holds its shard's edges (four `u64`s,
/// `FlagsKernel::FindEdges`) and then its length (one `u64`).
const EDGES_OFFSET: usize = HEADER;
const LENGTH_OFFSET: usize = EDGES_OFFSET + 32;
const _: () = assert!(
    LENGTH_OFFSET + 8 <= TOTAL_OFFSET,
    "the edges come before the total"
);

/// One rank of a group of GPUs that scan one sequence together: an NCCL
/// communicator on one device (or a place among ranks sharing one device,
/// [`GpuRank::on_one_device`]), and the buffers of its exchange.
pub struct GpuRank {
    exchange: Exchange,
    ctx: Arc<CudaContext>,
    rank: usize,
}

/// A rank's link to the others and the exchange's device buffers,
/// allocated when the rank is made (so that a call never fails to allocate
/// them after the other ranks have gone on to the exchange).
struct Exchange {
    link: Link,
    ranks: usize,
    /// This rank's record.
    record: CudaSlice<u8>,
}

/// How the records travel.
enum Link {
    /// An NCCL all-gather on the device, into `gathered` (every rank's
    /// record, in rank order).
    Nccl {
        nccl: &'static Nccl,
        comm: RawComm,
        gathered: CudaSlice<u8>,
    },
    /// Ranks on one device, as threads: each record copied to the host and
    /// gathered there.
    Host(SimulatedRank),
}

// SAFETY: the communicator is used by one thread at a time (every method
// that touches it takes `&mut self`, and `GpuRank` is not `Sync`); NCCL
// allows a communicator to move between threads.
unsafe impl Send for GpuRank {}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Link::Nccl { nccl, comm, .. } = &self.link {
            // SAFETY: the communicator came from this library and is not
            // used again; every exchange waited for its all-gather, so
            // nothing is in flight to abort. An error here has no one to
            // go to.
            let _ = unsafe { nccl.abort(*comm) };
        }
    }
}

impl std::fmt::Debug for GpuRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRank")
            .field("rank", &self.rank)
            .field("ranks", &self.exchange.ranks)
            .field("device", &self.ctx.ordinal())
            .finish()
    }
}

/// The exchange's buffers for a group of `ranks`, on `ctx`'s device.
fn exchange_buffers(
    ctx: &Arc<CudaContext>,
    ranks: usize,
) -> Result<(CudaSlice<u8>, CudaSlice<u8>)> {
    let stream = ctx.default_stream();
    Ok((
        stream.alloc_zeros::<u8>(RECORD)?,
        stream.alloc_zeros::<u8>(RECORD * ranks)?,
    ))
}

impl GpuRank {
    /// Rank `rank` of a group of `ranks` on `ctx`'s device, one process a
    /// rank: every process calls it with the same `id` (made by one of
    /// them), and it returns once every rank has joined.
    pub fn new(ctx: &Arc<CudaContext>, rank: usize, ranks: usize, id: &NcclId) -> Result<GpuRank> {
        if rank >= ranks {
            return Err(RankError::BadRank { rank, ranks });
        }
        let nccl = nccl()?;
        let (record, gathered) = exchange_buffers(ctx, ranks)?;
        ctx.bind_to_thread()?;
        let comm = nccl.init_rank(ranks as c_int, id.0, rank as c_int)?;
        Ok(GpuRank {
            exchange: Exchange {
                link: Link::Nccl {
                    nccl,
                    comm,
                    gathered,
                },
                ranks,
                record,
            },
            ctx: ctx.clone(),
            rank,
        })
    }

    /// A group of one rank a device of `ctxs`, in order, driven by one
    /// process: hand each to its own thread (every rank's calls wait for
    /// the others').
    pub fn for_devices(ctxs: &[Arc<CudaContext>]) -> Result<Vec<GpuRank>> {
        let ranks = ctxs.len();
        if ranks == 0 {
            return Err(RankError::BadRank { rank: 0, ranks: 0 });
        }
        let nccl = nccl()?;
        let buffers = ctxs
            .iter()
            .map(|ctx| exchange_buffers(ctx, ranks))
            .collect::<Result<Vec<_>>>()?;
        let devices: Vec<c_int> = ctxs.iter().map(|c| c.ordinal() as c_int).collect();
        let comms = nccl.init_all(&devices)?;
        Ok(comms
            .into_iter()
            .zip(ctxs.iter().zip(buffers))
            .enumerate()
            .map(|(rank, (comm, (ctx, (record, gathered))))| GpuRank {
                exchange: Exchange {
                    link: Link::Nccl {
                        nccl,
                        comm,
                        gathered,
                    },
                    ranks,
                    record,
                },
                ctx: ctx.clone(),
                rank,
            })
            .collect())
    }

    /// A group of `ranks` ranks on `ctx`'s one device, driven by one
    /// process, that exchange their records through host memory instead
    /// of NCCL: the same algorithm, kernels and checks as a group of GPUs,
    /// without several GPUs or NCCL (what the tests run where the machine
    /// has one GPU). Hand each rank to its own thread.
    pub fn on_one_device(ctx: &Arc<CudaContext>, ranks: usize) -> Result<Vec<GpuRank>> {
        if ranks == 0 {
            return Err(RankError::BadRank { rank: 0, ranks: 0 });
        }
        SimulatedRanks::new(ranks)
            .into_iter()
            .enumerate()
            .map(|(rank, link)| {
                Ok(GpuRank {
                    exchange: Exchange {
                        link: Link::Host(link),
                        ranks,
                        record: ctx.default_stream().alloc_zeros::<u8>(RECORD)?,
                    },
                    ctx: ctx.clone(),
                    rank,
                })
            })
            .collect()
    }

    /// This rank's index, `0..ranks()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the group has.
    pub fn ranks(&self) -> usize {
        self.exchange.ranks
    }

    /// The device context of this rank.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// This rank's share of `spec`, a scan of the whole sequence whose shard
    /// here is `input`, into `output` (of the same length), on `stream` (of
    /// this rank's device) with `scanner` (of the same device). Every rank
    /// calls it with the same operator and spec. Returns where the shard
    /// lies in the whole: its prefix and the whole sequence's carry-out.
    ///
    /// On an error here or on another rank before the exchange (lengths,
    /// the stream's device, compiling) nothing is written on any rank.
    pub fn scan<Op, I, O>(
        &mut self,
        scanner: &mut GpuScanner<Op>,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry = NoCarryOut, Segments = NoSegments>,
        input: &I,
        output: &mut O,
    ) -> Result<RankPrefix<Op::Element>>
    where
        Op: ScanOp,
        Op::Element: DeviceRepr + ValidAsZeroBits,
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        let spec = spec.into_spec();
        let lengths = checked_lengths::<Op>(input.len(), output.len());
        let place = self.share::<Op>(stream, &spec, false, lengths, |slot| {
            Ok(scanner.reduce(stream, input, slot)?)
        })?;
        scanner.scan(
            stream,
            place.shard_spec(spec.kind.is_inclusive()),
            input,
            output,
        )?;
        Ok(place)
    }

    /// The deferred form: this rank's shard scanned alone (`spec`'s kind
    /// without its initial value) into `output`, and where it lies in the
    /// whole, for a producer that applies the prefix itself. The local scan
    /// does not wait for the other ranks, only the one-record exchange
    /// does. A length wrong here is found before anything is written;
    /// another rank's is found by the exchange, after this rank's local
    /// scan has written `output` ([`RankError::OtherRank`]).
    pub fn scan_deferred<Op, I, O>(
        &mut self,
        scanner: &mut GpuScanner<Op>,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry = NoCarryOut, Segments = NoSegments>,
        input: &I,
        output: &mut O,
    ) -> Result<RankPrefix<Op::Element>>
    where
        Op: ScanOp,
        Op::Element: DeviceRepr + ValidAsZeroBits,
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        let spec = spec.into_spec();
        let lengths = checked_lengths::<Op>(input.len(), output.len());
        // The shard alone; its carry-out is its total.
        let alone = shard_alone(&spec);
        self.share::<Op>(stream, &spec, true, lengths, |slot| {
            Ok(scanner.scan(stream, alone.carry_out(slot), input, output)?)
        })
    }

    /// This rank's share of a segmented scan of the whole sequence, its
    /// shard's segments given by `segments` in the shard's own terms: head
    /// flags (element 0's flag says whether a segment starts there or the
    /// one open at the end of the shard before runs on), offsets into the
    /// shard (a shard whose offsets do not hold 0 continues the segment
    /// open before it), or keys (a segment runs on across ranks while the
    /// keys are equal); as [`scan_core::distributed::scan_segmented`] on
    /// the CPU. A segment may span any number of ranks; rows cannot
    /// ([`RankError::RowsAcrossRanks`]). `spec`'s initial value seeds every
    /// segment. Returns where the shard lies in the whole, the whole
    /// sequence's carry-out (its last segment's partial) included, which a
    /// carry-out slot in `spec` receives too.
    ///
    /// Per-segment totals in `spec` ([`ScanSpec::segment_totals`] over
    /// offsets, [`ScanSpec::counted_segment_totals`] over any source) get
    /// one total for each segment of the shard alone, each the total of
    /// the whole segment whatever ranks it spans, as on the CPU backend;
    /// every rank asks for them or none does. They cost one more read of
    /// the shard's first and last pieces (of the whole shard where no head
    /// lies after its element 0) and a few small copies, and the call waits
    /// for its stream before it returns.
    ///
    /// Each rank scans its shard by its own segments first (writing
    /// `output`; its carry-out, the partial of the segment open at its end,
    /// goes into the exchange), finds its edges (one pass over its flags,
    /// offsets or keys), shares them, and then scans again only the
    /// elements that the segment open before it runs over, behind that
    /// segment's partial: each input element is read once, or twice where
    /// a segment crosses into the shard, and each output written once, or
    /// twice there. A length or segments wrong here are refused before
    /// anything is written on any rank; another rank's error is found by
    /// the exchange, after this rank's first scan has written `output`
    /// (and, with per-segment totals, the local totals and count)
    /// ([`RankError::OtherRank`]).
    pub fn scan_segmented<'s, Op, C, I, O>(
        &mut self,
        scanner: &mut GpuScanner<Op>,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry = C, Segments = NoSegments>,
        segments: impl Into<DeviceSegments<'s>>,
        input: &I,
        output: &mut O,
    ) -> Result<SegmentedPlace<Op::Element>>
    where
        Op: ScanOp,
        Op::Element: DeviceRepr + ValidAsZeroBits,
        C: DeviceCarryOut<Op::Element>,
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        let spec = spec.into_spec();
        let segments = segments.into();
        let (seed, direction) = (spec.kind.init(), spec.direction);
        let bare = ScanSpec::from(spec.kind).with_direction(direction);
        let mut carry = spec.carry_out;
        // Where the carry-out or the totals go, taken now: the local scan
        // takes the slot.
        let slot = Slot::of(&mut carry, stream);
        let totals = slot.totals.is_some();
        let offsets = match &segments {
            DeviceSegments::Offsets(offsets) => Some(offsets.count()),
            _ => None,
        };
        let (on, here) = self.exchange_stream(stream);
        let call = Call::segmented(&bare, &segments, totals);
        let record = &mut self.exchange.record;
        let mut edges = None;
        let local = here
            .and(checked_lengths::<Op>(input.len(), output.len()))
            .and_then(|n| {
                if let DeviceSegments::Rows { .. } = segments {
                    return Err(RankError::RowsAcrossRanks);
                }
                segments.check_len(n)?;
                if !totals {
                    // A one-element carry-out (the scan checks a totals
                    // slot against its segments).
                    carry.check()?;
                }
                if n == 0 {
                    if totals {
                        // Checks the slot, and stores a count of 0.
                        let local = bare.segments(segments).carry_out(carry);
                        scanner.scan(stream, local, input, output)?;
                    }
                    return Ok(false);
                }
                let mut local = LocalSegmented {
                    scanner,
                    stream,
                    spec: &bare,
                    input,
                    record,
                };
                edges = Some(match totals {
                    false => local.scan(segments, output)?,
                    true => local.scan_with_totals(segments, carry, output)?,
                });
                Ok(true)
            });
        let header = Header::of::<Op>(call, &local);
        let gathered = self.exchange.gather(&on, &header)?;
        local?;
        let seeded = |v| seeded_partial::<Op>(seed, direction, v);
        let shards = decode_segmented::<Op::Element>(
            &gathered,
            &header,
            seed.is_some(),
            totals.then_some(&seeded),
        )?;
        let place = segmented_place::<Op>(&shards, self.rank, seed, direction);
        if let Some(carry_in) = place.carry_in {
            let kind = match spec.kind.is_inclusive() {
                true => ScanKind::InclusiveWithInit(carry_in),
                false => ScanKind::ExclusiveWithInit(carry_in),
            };
            // The place's continued elements lie in this rank's shard.
            let range = place.continued.clone();
            let continued_in = Part::of(input, input.len(), range.clone());
            let len = output.len();
            let mut continued_out = Part::of(output, len, range);
            scanner.scan(
                stream,
                ScanSpec::from(kind).with_direction(direction),
                &continued_in,
                &mut continued_out,
            )?;
        }
        match (slot.totals, edges) {
            (Some(totals), Some(edges)) => {
                let ends = segment_edge_totals::<Op>(&shards, self.rank, seed, direction)
                    .expect("every shard's first piece is in the exchange");
                totals.put_ends(stream, edges, offsets, ends)?;
                // As documented: the totals are final when the call returns.
                stream.synchronize()?;
            }
            (Some(_), None) => stream.synchronize()?,
            (None, _) if slot.carry != 0 => put_element(stream, slot.carry, 0, place.total)?,
            (None, _) => {}
        }
        Ok(place)
    }

    /// Both forms' exchange: where this rank's call is valid (`stream` on
    /// its device, `lengths` the shard's length) and its shard not empty,
    /// `total` writes the shard's total into the record; then the records
    /// are shared and this rank's place among the totals returned.
    fn share<Op: ScanOp>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: &ScanSpec<Op::Element>,
        deferred: bool,
        lengths: Result<usize>,
        total: impl FnOnce(&mut CudaViewMut<'_, Op::Element>) -> Result<()>,
    ) -> Result<RankPrefix<Op::Element>>
    where
        Op::Element: DeviceRepr,
    {
        let (on, here) = self.exchange_stream(stream);
        let record = &mut self.exchange.record;
        let local = here.and(lengths).and_then(|n| {
            if n == 0 {
                return Ok(false);
            }
            with_slot(record, TOTAL_OFFSET, total)?;
            Ok(true)
        });
        let totals = self
            .exchange
            .run::<Op>(&on, Call::of(spec, deferred), local)?;
        Ok(rank_prefix::<Op>(
            &totals,
            self.rank,
            spec.kind.init(),
            spec.direction,
        ))
    }

    /// The stream the exchange runs on: `stream` where it is on this rank's
    /// device, else (the call being wrong, but every rank waiting for this
    /// one's record) the device's default stream, with the error.
    fn exchange_stream(&self, stream: &Arc<CudaStream>) -> (Arc<CudaStream>, Result<()>) {
        let (on, mine) = (stream.context().ordinal(), self.ctx.ordinal());
        match on == mine {
            true => (stream.clone(), Ok(())),
            false => (
                self.ctx.default_stream(),
                Err(RankError::WrongDevice {
                    stream: on,
                    rank: mine,
                }),
            ),
        }
    }
}

impl Exchange {
    /// Shares this rank's record (its header, and its total where `local`
    /// says the record holds one) on `stream` and returns every rank's
    /// total in rank order, once every rank's call is found valid and
    /// alike; this rank's own error first.
    fn run<Op: ScanOp>(
        &mut self,
        stream: &Arc<CudaStream>,
        call: Call,
        local: Result<bool>,
    ) -> Result<Vec<Option<Op::Element>>>
    where
        Op::Element: DeviceRepr,
    {
        let header = Header::of::<Op>(call, &local);
        let gathered = self.gather(stream, &header)?;
        local?;
        decode::<Op::Element>(&gathered, &header)
    }

    /// Writes this rank's `header` into its record and returns every
    /// rank's record, in rank order, once every rank has sent its own.
    fn gather(&mut self, stream: &Arc<CudaStream>, header: &Header) -> Result<Vec<u8>> {
        stream.memcpy_htod(&header.encode(), &mut self.record.slice_mut(..HEADER))?;
        match &mut self.link {
            Link::Nccl {
                nccl,
                comm,
                gathered,
            } => {
                {
                    let (send, _send) = self.record.device_ptr(stream);
                    let (receive, _receive) = gathered.device_ptr_mut(stream);
                    // SAFETY: `record` holds RECORD bytes and `gathered`
                    // RECORD a rank, both on the communicator's device,
                    // which is `stream`'s (`GpuRank::exchange_stream`),
                    // ordered on `stream` by the guards.
                    unsafe {
                        nccl.all_gather(
                            send,
                            receive,
                            RECORD,
                            *comm,
                            stream.cu_stream() as *mut c_void,
                        )
                    }?;
                }
                // Waits for the all-gather (and so for every rank's call).
                Ok(stream.clone_dtoh(gathered)?)
            }
            Link::Host(link) => {
                let mut record = [0u8; RECORD];
                stream.memcpy_dtoh(&self.record, &mut record)?;
                stream.synchronize()?;
                let all = link.all_gather(record).map_err(|e| RankError::Host(e.0))?;
                Ok(all.concat())
            }
        }
    }
}

/// `n`, where input and output have `n` elements each and the scans take
/// that many.
fn checked_lengths<Op: ScanOp>(input: usize, output: usize) -> Result<usize>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    if input != output {
        return Err(ScanError::LengthMismatch { input, output }.into());
    }
    crate::gpu::check_length(&crate::operator::OperatorProgram::of::<Op>(), input)?;
    Ok(input)
}

/// A segmented scan's local work on a nonempty shard that passed its
/// checks: its edges into the record (the words set first, then one
/// search), then its scan by its own segments and the folds the exchange
/// takes.
struct LocalSegmented<'a, Op: ScanOp, I> {
    scanner: &'a mut GpuScanner<Op>,
    stream: &'a Arc<CudaStream>,
    /// The kind and direction, without a carry-out.
    spec: &'a ScanSpec<Op::Element>,
    input: &'a I,
    record: &'a mut CudaSlice<u8>,
}

/// What the edges search found in a shard ([`FlagsKernel::FindEdges`]):
/// the first and last heads after element 0, and the two words after them
/// (element 0's mark or keys; over offsets, the offsets equal to 0 and
/// those below the shard's length).
///
/// [`FlagsKernel::FindEdges`]: kernels_gen::segment_flags::FlagsKernel::FindEdges
#[derive(Clone, Copy, Debug)]
struct Edges {
    first_head: Option<usize>,
    last_head: Option<usize>,
    words: [u64; 2],
}

impl<Op, I> LocalSegmented<'_, Op, I>
where
    Op: ScanOp,
    Op::Element: DeviceRepr + ValidAsZeroBits,
    I: DevicePtr<Op::Element>,
{
    /// Sets the record's edge words and length, and enqueues the search.
    fn find_edges(&mut self, segments: &DeviceSegments<'_>) -> Result<()> {
        let (n, stream) = (self.input.len(), self.stream);
        let mut words = [0u8; 40];
        words[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        words[32..].copy_from_slice(&(n as u64).to_le_bytes());
        stream.memcpy_htod(
            &words,
            &mut self.record.slice_mut(EDGES_OFFSET..LENGTH_OFFSET + 8),
        )?;
        let (base, _record) = self.record.device_ptr(stream);
        let builder = HeadFlagBuilder::new(stream.context())?;
        builder
            .shard_edges(stream, segments, n, base + EDGES_OFFSET as u64)
            .map_err(RankError::from)
    }

    /// The edges the search wrote (waits for it).
    fn read_edges(&self) -> Result<Edges> {
        let bytes = self
            .stream
            .clone_dtoh(&self.record.slice(EDGES_OFFSET..EDGES_OFFSET + 32))?;
        let word = |k: usize| u64::from_le_bytes(bytes[8 * k..8 * k + 8].try_into().unwrap());
        Ok(Edges {
            first_head: (word(0) != u64::MAX).then_some(word(0) as usize),
            last_head: (word(1) != 0).then_some(word(1) as usize),
            words: [word(2), word(3)],
        })
    }

    /// The fold of `range` of the shard into the record at `at`.
    fn fold_into(&mut self, range: std::ops::Range<usize>, at: usize) -> Result<()> {
        let (scanner, stream) = (&mut *self.scanner, self.stream);
        let piece = Part::of(self.input, self.input.len(), range);
        with_slot(self.record, at, |slot| {
            Ok(scanner.reduce(stream, &piece, slot)?)
        })
    }

    /// Without totals: the scan with its carry-out (the open segment's
    /// partial) into the record, and the shard's fold where it has an
    /// initial value and no head after element 0.
    fn scan<O: DevicePtrMut<Op::Element>>(
        &mut self,
        segments: DeviceSegments<'_>,
        output: &mut O,
    ) -> Result<Edges> {
        self.find_edges(&segments)?;
        let (scanner, stream, input, spec) =
            (&mut *self.scanner, self.stream, self.input, self.spec);
        with_slot(self.record, TOTAL_OFFSET, |slot| {
            let local = spec.segments(segments).carry_out(slot);
            Ok(scanner.scan(stream, local, input, output)?)
        })?;
        // Read back only where the exchange needs them before it.
        if spec.kind.init().is_none() {
            return Ok(Edges {
                first_head: None,
                last_head: None,
                words: [0; 2],
            });
        }
        let edges = self.read_edges()?;
        if edges.first_head.is_none() {
            self.fold_into(0..self.input.len(), FOLD_OFFSET)?;
        }
        Ok(edges)
    }

    /// With per-segment totals: the scan writes the local totals into the
    /// caller's slot, and the record gets the shard's pieces without the
    /// initial value (the host seeds them after the exchange): the last
    /// piece in scan order, the first, or the whole fold where no head
    /// lies after element 0.
    fn scan_with_totals<C, O>(
        &mut self,
        segments: DeviceSegments<'_>,
        carry: C,
        output: &mut O,
    ) -> Result<Edges>
    where
        C: DeviceCarryOut<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.find_edges(&segments)?;
        let edges = self.read_edges()?;
        let local = self.spec.segments(segments).carry_out(carry);
        self.scanner.scan(self.stream, local, self.input, output)?;
        let n = self.input.len();
        match (edges.first_head, edges.last_head) {
            (Some(first), Some(last)) => {
                let (lead, tail) = match self.spec.direction {
                    Direction::Forward => (0..first, last..n),
                    Direction::Reverse => (last..n, 0..first),
                };
                self.fold_into(lead, LEAD_OFFSET)?;
                self.fold_into(tail, TOTAL_OFFSET)?;
            }
            _ => self.fold_into(0..n, FOLD_OFFSET)?,
        }
        Ok(edges)
    }
}

/// Where a segmented call's carry-out or per-segment totals go, as device
/// addresses taken before the local scan takes the slot.
struct Slot {
    /// A one-element carry-out's address (0 for none).
    carry: u64,
    totals: Option<TotalsSlot>,
}

/// A per-segment totals slot: its address, length, and the count's
/// address where the slot is counted.
struct TotalsSlot {
    address: u64,
    len: usize,
    count: Option<u64>,
}

impl Slot {
    fn of<E, C: DeviceCarryOut<E>>(carry: &mut C, stream: &CudaStream) -> Slot {
        let (len, counted) = (carry.totals_len(), carry.counts_segments());
        let slots = carry.slots(stream);
        match len {
            None => Slot {
                carry: slots.carry,
                totals: None,
            },
            Some(len) => Slot {
                carry: 0,
                totals: Some(TotalsSlot {
                    address: slots.carry,
                    len,
                    count: counted.then_some(slots.count),
                }),
            },
        }
    }
}

impl TotalsSlot {
    /// Puts `ends`, the totals of the whole segments that hold the shard's
    /// first and last elements, in place of the local totals of those
    /// segments: the first and the last of the shard's segments over flags
    /// or keys (their count read back from the counted slot), the windows
    /// that hold element 0 and the last element over offsets (`offsets`
    /// of them; from the counts the edges search found).
    fn put_ends<E: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        edges: Edges,
        offsets: Option<usize>,
        (first, last): (E, E),
    ) -> Result<()> {
        let (holds_first, holds_last) = match (offsets, self.count) {
            (Some(count), _) => {
                let [zeros, below] = edges.words.map(|w| w as usize);
                end_windows(count, zeros, below)
            }
            (None, Some(count)) => {
                let mut segments = [0u64];
                stream.context().bind_to_thread()?;
                // SAFETY: the count slot is one u64 of the caller's (checked
                // by the local scan), written in stream order before this
                // read, which the synchronize completes.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut segments,
                        count,
                        stream.cu_stream(),
                    )
                }?;
                stream.synchronize()?;
                (Some(0), (segments[0] as usize).checked_sub(1))
            }
            // Flags and keys without a count: refused by the local scan.
            (None, None) => (None, None),
        };
        for (index, value) in [(holds_first, first), (holds_last, last)] {
            if let Some(index) = index.filter(|&i| i < self.len) {
                put_element(stream, self.address, index, value)?;
            }
        }
        Ok(())
    }
}

/// The windows of `count` checked offsets of a shard that hold its first
/// and last elements, from how many offsets are 0 (`zeros`) and below the
/// shard's length (`below`): window `zeros - 1` starts at 0 and ends at the
/// first nonzero offset; window `below - 1` ends at the first offset equal
/// to the length. `None` where no window holds the element (no offset is
/// 0; no offset closes the shard), or the shard is empty.
fn end_windows(count: usize, zeros: usize, below: usize) -> (Option<usize>, Option<usize>) {
    (
        (zeros >= 1 && zeros < count).then(|| zeros - 1),
        (below >= 1 && below < count).then(|| below - 1),
    )
}

/// Writes `value` at element `index` of the device buffer at `address`
/// and waits for the copy (the value lives on this frame).
fn put_element<E: DeviceRepr>(
    stream: &Arc<CudaStream>,
    address: u64,
    index: usize,
    value: E,
) -> Result<()> {
    let at = address + (index * std::mem::size_of::<E>()) as u64;
    stream.context().bind_to_thread()?;
    // SAFETY: `address` is a slot of the caller's of more than `index`
    // elements (checked by the callers), the copy ordered on `stream` after
    // the scans that wrote it and waited for before `value` goes.
    unsafe {
        cudarc::driver::result::memcpy_htod_async(
            at,
            std::slice::from_ref(&value),
            stream.cu_stream(),
        )
    }?;
    stream.synchronize()?;
    Ok(())
}

/// `f` of an element's place in a record (at `at`: `TOTAL_OFFSET`,
/// `FOLD_OFFSET` or `LEAD_OFFSET`), as a one-element view of `E`.
fn with_slot<E, R>(
    record: &mut CudaSlice<u8>,
    at: usize,
    f: impl FnOnce(&mut CudaViewMut<'_, E>) -> Result<R>,
) -> Result<R> {
    let align = std::mem::align_of::<E>();
    if align > TOTAL_OFFSET {
        return Err(RankError::Alignment { align });
    }
    let size = std::mem::size_of::<E>();
    let mut bytes = record.slice_mut(at..at + size);
    // SAFETY: `size` bytes at an offset that is a multiple of E's alignment
    // (allocations are 256-byte aligned); only a kernel writes an E there,
    // and the host reads it back only from a record whose header says so.
    let mut slot = unsafe { bytes.transmute_mut::<E>(1) }.ok_or(RankError::Alignment { align })?;
    f(&mut slot)
}

/// What a call is, as every rank must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Call(u16);

impl Call {
    fn of<E: Copy, C, S>(spec: &ScanSpec<E, C, S>, deferred: bool) -> Call {
        let bit = |b: bool, at: u16| u16::from(b) << at;
        Call(
            bit(spec.kind.is_inclusive(), 0)
                | bit(spec.direction == Direction::Reverse, 1)
                | bit(spec.kind.init().is_some(), 2)
                | bit(deferred, 3),
        )
    }

    /// A segmented call: its segments' source (flags, offsets, keys), the
    /// keys' width in bytes, and whether it asks for per-segment totals.
    fn segmented<E: Copy, C, S>(
        spec: &ScanSpec<E, C, S>,
        segments: &DeviceSegments<'_>,
        totals: bool,
    ) -> Call {
        let (source, width) = match segments {
            DeviceSegments::Flags(_) => (1, 0),
            DeviceSegments::Offsets(_) => (2, 0),
            DeviceSegments::Keys(keys) => (3, keys.width() as u16),
            _ => (0, 0),
        };
        Call(Call::of(spec, false).0 | (source << 4) | (u16::from(totals) << 6) | (width << 8))
    }
}

/// Bytes of a record's header.
const HEADER: usize = 16;
const _: () = assert!(HEADER <= TOTAL_OFFSET, "the header comes before the total");

/// A rank's record's header: whether its call is valid and its record
/// holds a total, and what it scans (the call, the element's size, the
/// operator), which every rank checks against its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    valid: bool,
    has_total: bool,
    call: Call,
    element_size: u32,
    operator: u64,
}

impl Header {
    /// This rank's header for `call`, whose local work gave `local`
    /// (whether the record holds a total).
    fn of<Op: ScanOp>(call: Call, local: &Result<bool>) -> Header {
        Header {
            valid: local.is_ok(),
            has_total: matches!(local, Ok(true)),
            call,
            element_size: std::mem::size_of::<Op::Element>() as u32,
            operator: operator_fingerprint::<Op>(),
        }
    }

    fn encode(&self) -> [u8; HEADER] {
        let mut bytes = [0; HEADER];
        bytes[0] = u8::from(self.valid);
        bytes[1] = u8::from(self.has_total);
        bytes[2..4].copy_from_slice(&self.call.0.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.element_size.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.operator.to_le_bytes());
        bytes
    }

    fn decode(bytes: &[u8]) -> Header {
        Header {
            valid: bytes[0] != 0,
            has_total: bytes[1] != 0,
            call: Call(u16::from_le_bytes([bytes[2], bytes[3]])),
            element_size: u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
            operator: u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
        }
    }

    /// Whether another rank's header describes the same call.
    fn alike(&self, other: &Header) -> bool {
        (self.call, self.element_size, self.operator)
            == (other.call, other.element_size, other.operator)
    }
}

/// The operator's name (which carries a hash of its definition) as a
/// number every rank of the same build computes alike.
fn operator_fingerprint<Op: ScanOp>() -> u64 {
    let mut h = crate::fast_hash::FxHasher::default();
    h.write(Op::NAME.as_bytes());
    h.write_usize(std::mem::size_of::<Op::Element>());
    h.finish()
}

/// Every rank's total from the gathered records (`RECORD` bytes a rank, in
/// rank order), checked against this rank's header `mine`: the first rank
/// that called otherwise is [`RankError::Mismatch`], the first whose call
/// is invalid [`RankError::OtherRank`].
fn decode<E: Copy>(gathered: &[u8], mine: &Header) -> Result<Vec<Option<E>>> {
    let headers: Vec<Header> = gathered.chunks_exact(RECORD).map(Header::decode).collect();
    if let Some(rank) = headers.iter().position(|h| !h.alike(mine)) {
        return Err(RankError::Mismatch { rank });
    }
    if let Some(rank) = headers.iter().position(|h| !h.valid) {
        return Err(RankError::OtherRank { rank });
    }
    Ok(gathered
        .chunks_exact(RECORD)
        .zip(&headers)
        .map(|(record, header)| {
            header
                .has_total
                .then(|| read_element::<E>(record, TOTAL_OFFSET))
        })
        .collect())
}

/// Every rank's shard of a segmented scan from the gathered records
/// (checked as [`decode`] checks them): its length, edges, open segment's
/// partial and fold; `None` for an empty shard. `seeded` says whether the
/// scan has an initial value (else the fold is the partial, where no head
/// lies in the shard). With per-segment totals the records hold the pieces
/// without the initial value, and the first piece's fold: `pieces` puts
/// the initial value in front of the last piece.
fn decode_segmented<E: Copy>(
    gathered: &[u8],
    mine: &Header,
    seeded: bool,
    pieces: Option<&dyn Fn(E) -> E>,
) -> Result<Vec<Option<SegmentedShard<E>>>> {
    let totals = decode::<E>(gathered, mine)?;
    let keyed = mine.call.0 >> 4 & 3 == 3;
    Ok(gathered
        .chunks_exact(RECORD)
        .zip(totals)
        .map(|(record, tail)| {
            let tail = tail?;
            let word = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().unwrap());
            let edge = |k: usize| word(EDGES_OFFSET + 8 * k);
            let (first, last) = (edge(0), edge(1));
            let first_head = (first != u64::MAX).then_some(first as usize);
            let (tail, fold, lead) = match (pieces, first_head) {
                // With totals the record holds the pieces without the
                // initial value: `seed` puts it in front.
                (Some(seed), Some(_)) => (
                    seed(tail),
                    tail,
                    Some(read_element::<E>(record, LEAD_OFFSET)),
                ),
                (Some(seed), None) => {
                    let fold = read_element::<E>(record, FOLD_OFFSET);
                    (seed(fold), fold, Some(fold))
                }
                (None, None) if seeded => (tail, read_element::<E>(record, FOLD_OFFSET), None),
                (None, _) => (tail, tail, None),
            };
            Some(SegmentedShard {
                len: word(LENGTH_OFFSET) as usize,
                edges: match keyed {
                    true => ShardEdges::Keyed {
                        first: edge(2),
                        last: edge(3),
                    },
                    false => ShardEdges::Marked {
                        first_is_head: edge(2) != 0,
                    },
                },
                first_head,
                last_head: (last != 0).then_some(last as usize),
                tail,
                fold,
                lead,
            })
        })
        .collect())
}

/// The element a kernel of the operator wrote at `at` in a host copy of a
/// record.
fn read_element<E: Copy>(record: &[u8], at: usize) -> E {
    let bytes = &record[at..at + std::mem::size_of::<E>()];
    // SAFETY: the record's header says a kernel of the same operator (same
    // name, element size, build) wrote an E there; read unaligned from the
    // host copy.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<E>()) }
}

/// Elements `range` of a device buffer (`&P` to read, `&mut P` to write),
/// as a buffer of its own for a scan: the GPU rank takes any buffer, and
/// cudarc slices only its own types.
struct Part<B, T> {
    whole: B,
    range: std::ops::Range<usize>,
    _element: std::marker::PhantomData<T>,
}

impl<B, T> Part<B, T> {
    /// `range` of `whole`, which must lie within it (`len`).
    fn of(whole: B, len: usize, range: std::ops::Range<usize>) -> Self {
        assert!(range.start <= range.end && range.end <= len);
        Part {
            whole,
            range,
            _element: std::marker::PhantomData,
        }
    }

    fn offset(&self) -> u64 {
        (self.range.start * std::mem::size_of::<T>()) as u64
    }
}

impl<T, P: ?Sized + DeviceSlice<T>> DeviceSlice<T> for Part<&P, T> {
    fn len(&self) -> usize {
        self.range.len()
    }

    fn stream(&self) -> &Arc<CudaStream> {
        self.whole.stream()
    }
}

impl<T, P: ?Sized + DeviceSlice<T>> DeviceSlice<T> for Part<&mut P, T> {
    fn len(&self) -> usize {
        self.range.len()
    }

    fn stream(&self) -> &Arc<CudaStream> {
        self.whole.stream()
    }
}

impl<T, P: ?Sized + DevicePtr<T>> DevicePtr<T> for Part<&P, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        let (base, sync) = self.whole.device_ptr(stream);
        (base + self.offset(), sync)
    }
}

impl<T, P: ?Sized + DevicePtrMut<T>> DevicePtrMut<T> for Part<&mut P, T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        let offset = self.offset();
        let (base, sync) = self.whole.device_ptr_mut(stream);
        (base + offset, sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(valid: bool, has_total: bool) -> Header {
        Header {
            valid,
            has_total,
            call: Call(0b101),
            element_size: 8,
            operator: 0x0123_4567_89ab_cdef,
        }
    }

    /// Records as the all-gather leaves them: `(header, total)` a rank.
    fn records(ranks: &[(Header, u64)]) -> Vec<u8> {
        let mut bytes = vec![0xa5; RECORD * ranks.len()];
        for (record, (h, total)) in bytes.chunks_exact_mut(RECORD).zip(ranks) {
            record[..HEADER].copy_from_slice(&h.encode());
            record[TOTAL_OFFSET..TOTAL_OFFSET + 8].copy_from_slice(&total.to_ne_bytes());
        }
        bytes
    }

    #[test]
    fn a_header_reads_back_as_written() {
        for h in [
            header(true, true),
            header(true, false),
            header(false, false),
        ] {
            assert_eq!(Header::decode(&h.encode()), h);
        }
    }

    #[test]
    fn totals_come_back_in_rank_order_and_empty_shards_as_none() {
        let mine = header(true, true);
        let gathered = records(&[(mine, 7), (header(true, false), 99), (mine, u64::MAX)]);
        let totals = decode::<u64>(&gathered, &mine).unwrap();
        assert_eq!(totals, [Some(7), None, Some(u64::MAX)]);
    }

    #[test]
    fn an_invalid_rank_fails_every_rank() {
        let mine = header(true, true);
        let gathered = records(&[(mine, 1), (mine, 2), (header(false, false), 0)]);
        assert!(matches!(
            decode::<u64>(&gathered, &mine),
            Err(RankError::OtherRank { rank: 2 })
        ));
    }

    #[test]
    fn another_call_is_a_mismatch_before_anything_else() {
        let mine = header(true, true);
        for other in [
            Header {
                call: Call(0b001),
                ..mine
            },
            Header {
                element_size: 16,
                ..mine
            },
            Header {
                operator: 1,
                ..mine
            },
        ] {
            // An invalid rank after it: the mismatch is reported first.
            let gathered = records(&[(mine, 1), (other, 2), (header(false, false), 0)]);
            assert!(matches!(
                decode::<u64>(&gathered, &mine),
                Err(RankError::Mismatch { rank: 1 })
            ));
        }
    }

    #[test]
    fn the_call_says_kind_direction_init_and_form() {
        let inclusive = ScanSpec::<u32>::inclusive();
        let reverse = ScanSpec::<u32>::exclusive_with_init(5).reverse();
        assert_eq!(Call::of(&inclusive, false), Call(0b0001));
        assert_eq!(Call::of(&inclusive, true), Call(0b1001));
        assert_eq!(Call::of(&reverse, false), Call(0b0110));
    }

    /// `end_windows` names the windows that `segment_ranges` gives the
    /// shard's first and last elements, for offsets with repeated zeros,
    /// empty windows, no zero, no closing length, and empty shards.
    #[test]
    fn the_end_windows_are_those_that_hold_the_ends() {
        use scan_core::segmented::{segment_ranges, Segments};
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for _ in 0..20_000 {
            let n = next(12) as u32;
            let count = next(7) as usize;
            let mut offsets: Vec<u32> = (0..count).map(|_| next(u64::from(n) + 1) as u32).collect();
            offsets.sort_unstable();
            let ranges = segment_ranges(Segments::offsets(&offsets[..]), n as usize);
            let holds = |at: u32| {
                ranges
                    .iter()
                    .position(|r| !r.is_empty() && r.start as u32 <= at && at < r.end as u32)
            };
            let want = match n {
                0 => (None, None),
                _ => (holds(0), holds(n - 1)),
            };
            // Only a window starting at 0 holds element 0, and only one
            // ending at n the last element.
            let want = (
                want.0.filter(|&i| ranges[i].start == 0),
                want.1.filter(|&i| ranges[i].end == n as usize),
            );
            let zeros = offsets.iter().filter(|&&o| o == 0).count();
            let below = offsets.iter().filter(|&&o| o < n).count();
            let got = match n {
                0 => (None, None),
                _ => end_windows(count, zeros, below),
            };
            assert_eq!(got, want, "offsets {offsets:?} of {n}");
        }
    }

    /// A segmented record: the header, the edges words, the length, the
    /// open segment's partial and the fold.
    fn segmented_record(
        header: &Header,
        edges: [u64; 4],
        len: u64,
        tail: u64,
        fold: u64,
    ) -> Vec<u8> {
        let mut record = vec![0xa5; RECORD];
        record[..HEADER].copy_from_slice(&header.encode());
        for (k, word) in edges.iter().enumerate() {
            let at = EDGES_OFFSET + 8 * k;
            record[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
        record[LENGTH_OFFSET..LENGTH_OFFSET + 8].copy_from_slice(&len.to_le_bytes());
        record[TOTAL_OFFSET..TOTAL_OFFSET + 8].copy_from_slice(&tail.to_ne_bytes());
        record[FOLD_OFFSET..FOLD_OFFSET + 8].copy_from_slice(&fold.to_ne_bytes());
        record
    }

    #[test]
    fn segmented_records_read_back_as_shards() {
        let flags = Header {
            call: Call(0b0001 | 1 << 4),
            ..header(true, true)
        };
        let empty = Header {
            has_total: false,
            ..flags
        };
        let gathered = [
            // Heads at 3 and 40, element 0 marked.
            segmented_record(&flags, [3, 40, 1, 0], 50, 7, 99),
            // No head after element 0, element 0 unmarked.
            segmented_record(&flags, [u64::MAX, 0, 0, 0], 9, 11, 12),
            segmented_record(&empty, [u64::MAX, 0, 0, 0], 0, 0, 0),
        ]
        .concat();
        for seeded in [false, true] {
            let shards = decode_segmented::<u64>(&gathered, &flags, seeded, None).unwrap();
            let first = shards[0].unwrap();
            assert_eq!(
                (first.len, first.first_head, first.last_head),
                (50, Some(3), Some(40))
            );
            assert_eq!(
                first.edges,
                ShardEdges::Marked {
                    first_is_head: true
                }
            );
            // A shard with a head never passes its fold on: the partial.
            assert_eq!((first.tail, first.fold), (7, 7));
            let second = shards[1].unwrap();
            assert_eq!((second.first_head, second.last_head), (None, None));
            assert_eq!(
                second.edges,
                ShardEdges::Marked {
                    first_is_head: false
                }
            );
            // Its fold without the initial value, where there is one.
            assert_eq!(
                (second.tail, second.fold),
                (11, if seeded { 12 } else { 11 })
            );
            assert_eq!(shards[2], None);
        }
        // With per-segment totals: the pieces without the initial value,
        // seeded here, and the first piece's fold.
        let seed = |v: u64| v + 1000;
        let gathered = [
            {
                let mut r = segmented_record(&flags, [3, 40, 1, 0], 50, 7, 99);
                r[LEAD_OFFSET..LEAD_OFFSET + 8].copy_from_slice(&5u64.to_ne_bytes());
                r
            },
            segmented_record(&flags, [u64::MAX, 0, 0, 0], 9, 0xbad, 12),
        ]
        .concat();
        let shards = decode_segmented::<u64>(&gathered, &flags, true, Some(&seed)).unwrap();
        let (first, second) = (shards[0].unwrap(), shards[1].unwrap());
        assert_eq!((first.tail, first.lead), (1007, Some(5)));
        assert_eq!(
            (second.tail, second.fold, second.lead),
            (1012, 12, Some(12))
        );
        // By keys, the words are the keys at both ends.
        let keys = Header {
            call: Call(0b0001 | 3 << 4 | 4 << 8),
            ..header(true, true)
        };
        let gathered = segmented_record(&keys, [u64::MAX, 0, 0xdead, 0xbeef], 4, 1, 1);
        let shard = decode_segmented::<u64>(&gathered, &keys, false, None).unwrap()[0].unwrap();
        assert_eq!(
            shard.edges,
            ShardEdges::Keyed {
                first: 0xdead,
                last: 0xbeef
            }
        );
    }
}
