//! Head flags built on the GPU from segment offsets or keys
//! ([`HeadFlagBuilder`]).

use crate::cache::DiskCache;
use crate::capture::AddressStream;
use crate::error::Result;
use crate::head_flags::OwnedDeviceHeadFlags;
use crate::kernels::{build_module, compile_target};
use crate::launch::{launch_flags, Heads, KernelArg, KeysArg, NoElement};
use crate::segments::DeviceSegments;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DeviceRepr, LaunchConfig, ValidAsZeroBits,
};
use kernels_gen::segment_flags::{segment_flags_program, FlagsKernel};
use kernels_gen::segment_starts::{
    starts_chunks, starts_status_words, HeadsIn, STARTS_BLOCK_THREADS, STARTS_CHUNK_ITEMS,
};
use kernels_gen::FlagFormat;
use scan_core::segmented::{FlagsLengthMismatch, InvalidOffsets, SegmentKey, SegmentOffset};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Builds segment head flags on the GPU from segment offsets (CSR row
/// pointers) or from keys.
///
/// ```no_run
/// use gpu_scan::scan_runtime::{open_device, HeadFlagBuilder};
/// use gpu_scan::segmented::FlagFormat;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// let builder = HeadFlagBuilder::new(&ctx)?;
/// // Row pointers of a 3-row matrix with an empty middle row, 5 non-zeros.
/// let row_ptr = stream.clone_htod(&[0u32, 2, 2, 5])?;
/// let heads = builder.from_offsets(&stream, &row_ptr, 5, FlagFormat::Bits)?;
/// # Ok::<(), gpu_scan::prelude::ScanError>(())
/// ```
pub struct HeadFlagBuilder {
    program: Arc<FlagProgram>,
    /// Where buffers' addresses are taken while a stream is captured.
    addresses: AddressStream,
}

struct FlagProgram {
    _module: Arc<CudaModule>,
    functions: HashMap<FlagsKernel, CudaFunction>,
}

fn flag_programs() -> &'static Mutex<HashMap<usize, Arc<FlagProgram>>> {
    static PROGRAMS: OnceLock<Mutex<HashMap<usize, Arc<FlagProgram>>>> = OnceLock::new();
    PROGRAMS.get_or_init(Default::default)
}

/// Elements a thread of [`FlagsKernel::FindEdges`] reads at a time
/// (`SCAN_STARTS_RUN`).
const STARTS_RUN_ITEMS: usize = STARTS_CHUNK_ITEMS / STARTS_BLOCK_THREADS as usize;

/// Threads per block of the flag builders, and the most blocks they launch
/// (their grid-stride loops cover any length).
const BUILDER_THREADS: u32 = 256;
const BUILDER_MAX_BLOCKS: usize = 8192;

impl HeadFlagBuilder {
    /// Compiles (or finds in the memory or disk cache) the builder program
    /// for `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &DiskCache::from_env())
    }

    /// As [`HeadFlagBuilder::new`], with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &DiskCache) -> Result<Self> {
        let key = ctx.cu_ctx() as usize;
        if let Some(p) = flag_programs().lock().expect("poisoned").get(&key) {
            return Ok(HeadFlagBuilder {
                program: p.clone(),
                addresses: AddressStream::default(),
            });
        }
        let target = compile_target(ctx)?;
        let source = segment_flags_program();
        let (module, _) = build_module(ctx, disk, target, "segment_flags", &source)?;
        let mut functions = HashMap::new();
        for kernel in FlagsKernel::all() {
            functions.insert(kernel, module.load_function(&kernel.symbol())?);
        }
        let program = Arc::new(FlagProgram {
            _module: module,
            functions,
        });
        flag_programs()
            .lock()
            .expect("poisoned")
            .insert(key, program.clone());
        Ok(HeadFlagBuilder {
            program,
            addresses: AddressStream::default(),
        })
    }

    /// Enqueues `kernel` with `args`, checked against its parameters.
    ///
    /// # Safety
    /// The pointers in `args` must be valid for what `kernel` does with
    /// them, and `config` its launch shape.
    unsafe fn launch(
        &self,
        stream: &CudaStream,
        kernel: FlagsKernel,
        args: &[KernelArg<NoElement>],
        config: LaunchConfig,
    ) -> Result<()> {
        let function = &self.program.functions[&kernel];
        // SAFETY: the caller's contract.
        unsafe { launch_flags(stream, function, kernel, args, config) }
    }

    /// New flags for `n` elements where element `offsets[r]` starts a
    /// segment. Offsets must not decrease and must be at most `n`: an offset
    /// equal to `n` (the closing entry of a row-pointer array, trailing empty
    /// segments) starts nothing, repeated offsets (empty segments) mark one
    /// head, and element 0 is always a head. Other offsets are a
    /// [`ScanError::InvalidOffsets`](crate::ScanError::InvalidOffsets).
    ///
    /// The offsets are checked on the device first, and the verdict read
    /// back: the call waits for `stream`.
    pub fn from_offsets<O, P>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
        format: FlagFormat,
    ) -> Result<OwnedDeviceHeadFlags>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
    {
        Ok(match format {
            FlagFormat::Bytes => {
                let mut out = stream.alloc_zeros::<u8>(n)?;
                self.offsets_into(stream, offsets, n, &mut out)?;
                OwnedDeviceHeadFlags::Bytes(out)
            }
            FlagFormat::Bits => {
                let mut out = stream.alloc_zeros::<u32>(format.units(n))?;
                self.offsets_into(stream, offsets, n, &mut out)?;
                OwnedDeviceHeadFlags::Bits { words: out, len: n }
            }
        })
    }

    /// New flags where element `i` starts a segment when `keys[i]` differs
    /// (bit for bit) from `keys[i - 1]`.
    pub fn from_keys<K, P>(
        &self,
        stream: &Arc<CudaStream>,
        keys: &P,
        format: FlagFormat,
    ) -> Result<OwnedDeviceHeadFlags>
    where
        K: SegmentKey + DeviceRepr,
        P: DevicePtr<K>,
    {
        let n = keys.len();
        Ok(match format {
            FlagFormat::Bytes => {
                // SAFETY: every byte is written by the kernel before it is read.
                let mut out = unsafe { stream.alloc::<u8>(n) }?;
                self.keys_into(stream, keys, &mut out)?;
                OwnedDeviceHeadFlags::Bytes(out)
            }
            FlagFormat::Bits => {
                // SAFETY: every word is written by the kernel before it is read.
                let mut out = unsafe { stream.alloc::<u32>(format.units(n)) }?;
                self.keys_into(stream, keys, &mut out)?;
                OwnedDeviceHeadFlags::Bits { words: out, len: n }
            }
        })
    }

    /// Writes flags from offsets into your buffer: `u8`s for
    /// [`FlagFormat::Bytes`] (`n` of them), `u32`s for [`FlagFormat::Bits`]
    /// (`ceil(n / 32)`); the buffer's type selects the format. The offsets
    /// are checked first (see [`HeadFlagBuilder::from_offsets`]), and the
    /// buffer is left untouched when they or its size are wrong; else it is
    /// cleared, then written.
    pub fn offsets_into<O, P, W, D>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
        out: &mut D,
    ) -> Result<()>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
        W: FlagWord,
        D: DevicePtrMut<W>,
    {
        let format = W::FORMAT;
        FlagsLengthMismatch::check(format, n, n, out.len())?;
        self.check_offsets(stream, offsets, n)?;
        if n == 0 {
            return Ok(());
        }
        stream.memset_zeros(out)?;
        // With no offsets the kernel still marks element 0.
        let count = offsets.len();
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (out_ptr, _s2) = out.device_ptr_mut(stream);
        let (kernel, args) =
            args::heads_from_offsets(bits::<O>(), format, offsets_ptr, count, out_ptr, n);
        // SAFETY: `out` holds the units of n elements (checked), offsets are
        // read for r < count and written only below n.
        unsafe { self.launch(stream, kernel, &args, builder_grid(count)) }
    }

    /// The first reason `offsets` are not row pointers of `n` elements, found
    /// on the device: the smallest index breaking a rule, then its offset
    /// (and the one before) read back.
    pub(crate) fn check_offsets<O, P>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
    ) -> Result<()>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
    {
        let count = offsets.len();
        if count == 0 {
            return Ok(());
        }
        let mut first_bad = stream.clone_htod(&[u64::MAX])?;
        {
            let (offsets_ptr, _s1) = offsets.device_ptr(stream);
            let (bad_ptr, _s2) = first_bad.device_ptr_mut(stream);
            let (kernel, args) = args::check_offsets(bits::<O>(), offsets_ptr, count, n, bad_ptr);
            // SAFETY: offsets are read for r < count, and first_bad is one
            // u64 of ours.
            unsafe { self.launch(stream, kernel, &args, builder_grid(count)) }?;
        }
        let index = stream.clone_dtoh(&first_bad)?[0];
        if index == u64::MAX {
            return Ok(());
        }
        let index = index as usize;
        // The offset there and the one before it, as the kernel saw them.
        let start = index.saturating_sub(1);
        let width = std::mem::size_of::<O>();
        let mut raw = vec![0u8; width * (index + 1 - start)];
        let (base, _s) = offsets.device_ptr(stream);
        // SAFETY: offsets `start..=index` (< count) of the caller's buffer,
        // `raw.len()` bytes; the stream is synchronised before `raw` is read.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut raw,
                base + (start * width) as u64,
                stream.cu_stream(),
            )
        }?;
        stream.synchronize()?;
        let pair: Vec<u64> = raw
            .chunks(width)
            .map(|c| {
                let mut v = [0u8; 8];
                v[..width].copy_from_slice(c);
                u64::from_le_bytes(v)
            })
            .collect();
        let value = pair[index - start];
        Err(if value > n as u64 {
            InvalidOffsets::OutOfRange {
                index,
                value,
                len: n,
            }
        } else {
            InvalidOffsets::Decreasing {
                index,
                value,
                previous: pair[0],
            }
        }
        .into())
    }

    /// The index of checked `offsets` of `n` elements
    /// ([`FlagsKernel::IndexOffsets`]) in `E` entries (`u32` or
    /// `u64`, wide enough for the offsets' count), enqueued on `stream`.
    pub(crate) fn index_offsets<O, P, E>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
    ) -> Result<CudaSlice<E>>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
        E: DeviceRepr,
    {
        let entries = kernels_gen::offsets_index_len(n);
        // SAFETY: every entry is written by the kernel below before any read.
        let mut index = unsafe { stream.alloc::<E>(entries) }?;
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (index_ptr, _s2) = index.device_ptr_mut(stream);
        let (kernel, args) = args::index_offsets(
            (bits::<O>(), bits::<E>()),
            offsets_ptr,
            offsets.len(),
            n,
            index_ptr,
        );
        // SAFETY: offsets are read below count, and the index has
        // offsets_index_len(n) entries of E, the kernel's grid-stride bound
        // and entry type (checked: its parameter's width).
        unsafe { self.launch(stream, kernel, &args, builder_grid(entries)) }?;
        drop((_s1, _s2));
        Ok(index)
    }

    /// Writes flags from keys into your buffer (see
    /// [`HeadFlagBuilder::offsets_into`] for its type and size).
    pub fn keys_into<K, P, W, D>(
        &self,
        stream: &Arc<CudaStream>,
        keys: &P,
        out: &mut D,
    ) -> Result<()>
    where
        K: SegmentKey + DeviceRepr,
        P: DevicePtr<K>,
        W: FlagWord,
        D: DevicePtrMut<W>,
    {
        let n = keys.len();
        let format = W::FORMAT;
        FlagsLengthMismatch::check(format, n, n, out.len())?;
        if n == 0 {
            return Ok(());
        }
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _s1) = keys.device_ptr(&at);
        let (out_ptr, _s2) = out.device_ptr_mut(&at);
        let (kernel, args) = args::heads_from_keys(bits::<K>(), format, keys_ptr, out_ptr, n);
        let grid = builder_grid(format.units(n).max(1) * 32);
        // SAFETY: SegmentKey guarantees a plain N-bit value; `out` holds the
        // units of n elements (checked).
        unsafe { self.launch(stream, kernel, &args, grid) }
    }
}

/// Device addresses of the segment starts' scratch
/// ([`HeadFlagBuilder::segment_starts`]).
pub(crate) struct StartsScratch {
    /// [`starts_status_words`]`(n)` words: the chunks' status and ticket.
    pub(crate) status: u64,
    /// `capacity + 1` words: the starts.
    pub(crate) starts: u64,
    /// How many segments the starts may hold (the totals slot's length).
    pub(crate) capacity: u64,
}

impl HeadFlagBuilder {
    /// Enqueues the search for the segments' starts of `n` elements
    /// (`n > 0`) whose heads come from `heads` (the flags' or keys'
    /// address): `starts[r]` for `r <= capacity` the first element of
    /// segment `r` (`n` past the last segment), and the number of segments
    /// at `count` (a `u64`), all in stream order, nothing read back
    /// (`segment_starts.rs` in kernels-gen): the status zeroed, then one
    /// pass over the heads.
    pub(crate) fn segment_starts(
        &self,
        stream: &Arc<CudaStream>,
        heads: (HeadsIn, u64),
        n: usize,
        scratch: &StartsScratch,
        count: u64,
    ) -> Result<()> {
        let (source, address) = heads;
        // SAFETY: the status words are ours (the workspace's starts scratch,
        // reserved for n), ordered on `stream`.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                scratch.status,
                0,
                8 * starts_status_words(n),
                stream.cu_stream(),
            )
        }?;
        let (kernel, args) = args::find_starts(source, address, n, scratch, count);
        let grid = LaunchConfig {
            grid_dim: (starts_chunks(n) as u32, 1, 1),
            block_dim: (STARTS_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `heads` holds the flags or keys of n elements (checked by
        // the caller, of the kernel's format or width), status its
        // starts_status_words(n) zeroed words, starts capacity + 1 words
        // (written only at ranks <= capacity), count one u64; one block per
        // chunk (the chunks of n < 2^43 elements fit the grid, checked by
        // the caller's length limits).
        unsafe { self.launch(stream, kernel, &args, grid) }
    }

    /// Enqueues the search for the edges of a shard of `n > 0` elements
    /// cut by `segments` ([`FlagsKernel::FindEdges`]): four `u64` words at
    /// `edges`, which the caller has set to `[u64::MAX, 0, 0, 0]` in stream
    /// order, receive the first and last element after element 0 that
    /// start a segment and the shard's ends. Rows have no edges to find
    /// (refused by the caller).
    pub(crate) fn shard_edges(
        &self,
        stream: &Arc<CudaStream>,
        segments: &DeviceSegments<'_>,
        n: usize,
        edges: u64,
    ) -> Result<()> {
        let (heads, _syncs) = segments.heads_arg(stream);
        let (kernel, args, threads) = match (heads, segments.heads_in()) {
            (Heads::Offsets(offsets), _) => {
                let count = offsets.count as usize;
                let bits = 8 * offsets.width as u32;
                let (kernel, args) = args::offset_edges(bits, offsets.address, count, n, edges);
                (kernel, args.to_vec(), count)
            }
            (Heads::Flags(address) | Heads::Keys(KeysArg { address, .. }), Some(source)) => {
                let (kernel, args) = args::find_edges(source, address, n, edges);
                (kernel, args.to_vec(), n.div_ceil(STARTS_RUN_ITEMS))
            }
            _ => unreachable!("rows are refused before a shard's edges are searched"),
        };
        // SAFETY: the segments hold the flags, keys or offsets of `n`
        // elements (checked by the caller, of the kernel's format or
        // width); `edges` is four u64 words of the caller's; the kernels
        // walk their input with grid-stride loops.
        unsafe { self.launch(stream, kernel, &args, builder_grid(threads)) }
    }

    /// Enqueues the store of `value` at `slot` (one `u64`): a count the
    /// host knows, written in stream order.
    pub(crate) fn store_count(
        &self,
        stream: &Arc<CudaStream>,
        slot: u64,
        value: u64,
    ) -> Result<()> {
        let (kernel, args) = args::store_count(slot, value);
        let grid = LaunchConfig::for_num_elems(1);
        // SAFETY: `slot` is one u64 of the caller's (its length checked),
        // written by one thread.
        unsafe { self.launch(stream, kernel, &args, grid) }
    }
}

/// The storage unit of a flag format: `u8` for bytes, `u32` for bits.
pub trait FlagWord: DeviceRepr + ValidAsZeroBits + sealed::Sealed {
    /// The format this unit stores.
    const FORMAT: FlagFormat;
}

impl FlagWord for u8 {
    const FORMAT: FlagFormat = FlagFormat::Bytes;
}

impl FlagWord for u32 {
    const FORMAT: FlagFormat = FlagFormat::Bits;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u32 {}
}

/// The width in bits of `T`.
const fn bits<T>() -> u32 {
    8 * std::mem::size_of::<T>() as u32
}

/// Each kernel's arguments from the addresses and sizes it takes (checked
/// against [`FlagsKernel::params`] at every launch, and here by a test
/// without a GPU).
mod args {
    use super::StartsScratch;
    use crate::launch::{flags_count, flags_ptr, KernelArg, NoElement};
    use kernels_gen::abi::ParamType::{HeadFlags, UnsignedIn, UnsignedOut};
    use kernels_gen::segment_flags::FlagsKernel;
    use kernels_gen::segment_starts::HeadsIn;
    use kernels_gen::FlagFormat;

    type Args<const N: usize> = (FlagsKernel, [KernelArg<NoElement>; N]);

    /// A flag builder's output: `flags` (bytes) or `words` (bits).
    fn flags_out(format: FlagFormat, address: u64) -> KernelArg<NoElement> {
        match format {
            FlagFormat::Bytes => flags_ptr("flags", UnsignedOut(8), address),
            FlagFormat::Bits => flags_ptr("words", UnsignedOut(32), address),
        }
    }

    pub(super) fn heads_from_offsets(
        offset_bits: u32,
        format: FlagFormat,
        offsets: u64,
        count: usize,
        out: u64,
        n: usize,
    ) -> Args<4> {
        let kernel = FlagsKernel::HeadsFromOffsets {
            offset_bits,
            format,
        };
        let args = [
            flags_ptr("offsets", UnsignedIn(offset_bits), offsets),
            flags_count("count", count as u64),
            flags_out(format, out),
            flags_count("n", n as u64),
        ];
        (kernel, args)
    }

    pub(super) fn check_offsets(
        offset_bits: u32,
        offsets: u64,
        count: usize,
        n: usize,
        first_bad: u64,
    ) -> Args<4> {
        let args = [
            flags_ptr("offsets", UnsignedIn(offset_bits), offsets),
            flags_count("count", count as u64),
            flags_count("n", n as u64),
            flags_ptr("first_bad", UnsignedOut(64), first_bad),
        ];
        (FlagsKernel::CheckOffsets { offset_bits }, args)
    }

    pub(super) fn index_offsets(
        (offset_bits, entry_bits): (u32, u32),
        offsets: u64,
        count: usize,
        n: usize,
        index: u64,
    ) -> Args<5> {
        let kernel = FlagsKernel::IndexOffsets {
            offset_bits,
            entry_bits,
        };
        let args = [
            flags_ptr("offsets", UnsignedIn(offset_bits), offsets),
            flags_count("count", count as u64),
            flags_count("n", n as u64),
            flags_count("shift", kernels_gen::OFFSETS_INDEX_SHIFT as u64),
            flags_ptr("index", UnsignedOut(entry_bits), index),
        ];
        (kernel, args)
    }

    pub(super) fn heads_from_keys(
        key_bits: u32,
        format: FlagFormat,
        keys: u64,
        out: u64,
        n: usize,
    ) -> Args<3> {
        let args = [
            flags_ptr("keys", UnsignedIn(key_bits), keys),
            flags_out(format, out),
            flags_count("n", n as u64),
        ];
        (FlagsKernel::HeadsFromKeys { key_bits, format }, args)
    }

    pub(super) fn find_starts(
        source: HeadsIn,
        heads: u64,
        n: usize,
        scratch: &StartsScratch,
        count: u64,
    ) -> Args<6> {
        let args = [
            flags_ptr("heads", HeadFlags, heads),
            flags_count("n", n as u64),
            flags_ptr("status", UnsignedOut(64), scratch.status),
            flags_ptr("starts", UnsignedOut(64), scratch.starts),
            flags_count("capacity", scratch.capacity),
            flags_ptr("count", UnsignedOut(64), count),
        ];
        (FlagsKernel::FindStarts(source), args)
    }

    pub(super) fn find_edges(source: HeadsIn, heads: u64, n: usize, edges: u64) -> Args<3> {
        let args = [
            flags_ptr("heads", HeadFlags, heads),
            flags_count("n", n as u64),
            flags_ptr("edges", UnsignedOut(64), edges),
        ];
        (FlagsKernel::FindEdges(source), args)
    }

    pub(super) fn offset_edges(
        offset_bits: u32,
        offsets: u64,
        count: usize,
        n: usize,
        edges: u64,
    ) -> Args<4> {
        let args = [
            flags_ptr("offsets", UnsignedIn(offset_bits), offsets),
            flags_count("count", count as u64),
            flags_count("n", n as u64),
            flags_ptr("edges", UnsignedOut(64), edges),
        ];
        (FlagsKernel::OffsetEdges { offset_bits }, args)
    }

    pub(super) fn store_count(slot: u64, value: u64) -> Args<2> {
        let args = [
            flags_ptr("slot", UnsignedOut(64), slot),
            flags_count("value", value),
        ];
        (FlagsKernel::StoreCount, args)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::launch::check_flags_args;

        /// The arguments the builders make for `kernel`, from distinct
        /// addresses and sizes.
        fn built(kernel: FlagsKernel) -> Vec<KernelArg<NoElement>> {
            let scratch = StartsScratch {
                status: 5,
                starts: 6,
                capacity: 7,
            };
            match kernel {
                FlagsKernel::HeadsFromOffsets {
                    offset_bits,
                    format,
                } => heads_from_offsets(offset_bits, format, 1, 2, 3, 4)
                    .1
                    .to_vec(),
                FlagsKernel::CheckOffsets { offset_bits } => {
                    check_offsets(offset_bits, 1, 2, 3, 4).1.to_vec()
                }
                FlagsKernel::IndexOffsets {
                    offset_bits,
                    entry_bits,
                } => index_offsets((offset_bits, entry_bits), 1, 2, 3, 4)
                    .1
                    .to_vec(),
                FlagsKernel::HeadsFromKeys { key_bits, format } => {
                    heads_from_keys(key_bits, format, 1, 2, 3).1.to_vec()
                }
                FlagsKernel::FindStarts(source) => {
                    find_starts(source, 1, 2, &scratch, 8).1.to_vec()
                }
                FlagsKernel::StoreCount => store_count(1, 2).1.to_vec(),
                FlagsKernel::FindEdges(source) => find_edges(source, 1, 2, 3).1.to_vec(),
                FlagsKernel::OffsetEdges { offset_bits } => {
                    offset_edges(offset_bits, 1, 2, 3, 4).1.to_vec()
                }
            }
        }

        #[test]
        fn every_flag_builder_matches_its_parameters() {
            for kernel in FlagsKernel::all() {
                check_flags_args(kernel, &built(kernel)).unwrap_or_else(|e| panic!("{e}"));
            }
        }

        #[test]
        fn a_wrong_width_or_order_is_refused() {
            let (kernel, mut args) = index_offsets((32, 64), 1, 2, 3, 4);
            check_flags_args(kernel, &args).unwrap();
            let wide = FlagsKernel::IndexOffsets {
                offset_bits: 32,
                entry_bits: 32,
            };
            let err = check_flags_args(wide, &args).unwrap_err().to_string();
            assert!(err.contains("scan_index_offsets32_32"), "{err}");
            args.swap(1, 2);
            assert!(check_flags_args(kernel, &args).is_err());
        }
    }
}

fn builder_grid(threads: usize) -> LaunchConfig {
    let blocks = threads
        .div_ceil(BUILDER_THREADS as usize)
        .clamp(1, BUILDER_MAX_BLOCKS);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BUILDER_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
