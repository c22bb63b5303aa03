//! Head flags built on the GPU from segment offsets or keys
//! ([`HeadFlagBuilder`]).

use crate::cache::DiskCache;
use crate::capture::AddressStream;
use crate::error::Result;
use crate::head_flags::OwnedDeviceHeadFlags;
use crate::kernels::{build_module, compile_target};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use kernels_gen::segment_starts::{
    find_starts_symbol, starts_chunks, starts_status_words, HeadsIn, STARTS_BLOCK_THREADS,
    STORE_COUNT_SYMBOL,
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
    functions: HashMap<String, CudaFunction>,
}

fn flag_programs() -> &'static Mutex<HashMap<usize, Arc<FlagProgram>>> {
    static PROGRAMS: OnceLock<Mutex<HashMap<usize, Arc<FlagProgram>>>> = OnceLock::new();
    PROGRAMS.get_or_init(Default::default)
}

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
        let source = kernels_gen::SEGMENT_FLAGS_SOURCE;
        let (module, _) = build_module(ctx, disk, target, "segment_flags", source)?;
        let mut functions = HashMap::new();
        for format in FlagFormat::ALL {
            let symbols = [32, 64]
                .map(|b| kernels_gen::heads_from_offsets_symbol(b, format))
                .into_iter()
                .chain([8, 16, 32, 64].map(|b| kernels_gen::heads_from_keys_symbol(b, format)));
            let checks = [32, 64].map(kernels_gen::check_offsets_symbol);
            let indexes = [(32, 32), (32, 64), (64, 32), (64, 64)]
                .map(|(offset, entry)| kernels_gen::index_offsets_symbol(offset, entry));
            let starts = HeadsIn::ALL
                .map(find_starts_symbol)
                .into_iter()
                .chain([STORE_COUNT_SYMBOL.to_string()]);
            for symbol in symbols.chain(checks).chain(indexes).chain(starts) {
                let f = module.load_function(&symbol)?;
                functions.insert(symbol, f);
            }
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

    fn function(&self, symbol: &str) -> &CudaFunction {
        &self.program.functions[symbol]
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
        let symbol =
            kernels_gen::heads_from_offsets_symbol(8 * std::mem::size_of::<O>() as u32, format);
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (out_ptr, _s2) = out.device_ptr_mut(stream);
        let (count64, n64) = (count as u64, n as u64);
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch
            .arg(&offsets_ptr)
            .arg(&count64)
            .arg(&out_ptr)
            .arg(&n64);
        // SAFETY: (const uN* offsets, u64 count, flags*, u64 n); `out` holds the units of
        // n elements (checked), offsets are read for r < count and written only below n.
        unsafe { launch.launch(builder_grid(count)) }?;
        Ok(())
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
        let symbol = kernels_gen::check_offsets_symbol(8 * std::mem::size_of::<O>() as u32);
        {
            let (offsets_ptr, _s1) = offsets.device_ptr(stream);
            let (bad_ptr, _s2) = first_bad.device_ptr_mut(stream);
            let (count64, n64) = (count as u64, n as u64);
            let mut launch = stream.launch_builder(self.function(&symbol));
            launch
                .arg(&offsets_ptr)
                .arg(&count64)
                .arg(&n64)
                .arg(&bad_ptr);
            // SAFETY: (const uN* offsets, u64 count, u64 n, u64* first_bad); offsets are
            // read for r < count, and first_bad is one u64 of ours.
            unsafe { launch.launch(builder_grid(count)) }?;
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
    /// ([`kernels_gen::index_offsets_symbol`]) in `E` entries (`u32` or
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
        let symbol = kernels_gen::index_offsets_symbol(
            8 * std::mem::size_of::<O>() as u32,
            8 * std::mem::size_of::<E>() as u32,
        );
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (index_ptr, _s2) = index.device_ptr_mut(stream);
        let (count, n64, shift) = (
            offsets.len() as u64,
            n as u64,
            kernels_gen::OFFSETS_INDEX_SHIFT as u64,
        );
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch
            .arg(&offsets_ptr)
            .arg(&count)
            .arg(&n64)
            .arg(&shift)
            .arg(&index_ptr);
        // SAFETY: (const uN* offsets, u64 count, u64 n, u64 shift, uM* index); offsets
        // are read below count, and the index has offsets_index_len(n) entries of E, the
        // kernel's grid-stride bound and entry type (the symbol names both widths).
        unsafe { launch.launch(builder_grid(entries)) }?;
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
        let symbol =
            kernels_gen::heads_from_keys_symbol(8 * std::mem::size_of::<K>() as u32, format);
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _s1) = keys.device_ptr(&at);
        let (out_ptr, _s2) = out.device_ptr_mut(&at);
        let n64 = n as u64;
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch.arg(&keys_ptr).arg(&out_ptr).arg(&n64);
        // SAFETY: (const uN* keys, flags*, u64 n); SegmentKey guarantees a plain N-bit
        // value; `out` holds the units of n elements (checked).
        unsafe { launch.launch(builder_grid(format.units(n).max(1) * 32)) }?;
        Ok(())
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
        let n64 = n as u64;
        let mut launch = stream.launch_builder(self.function(&find_starts_symbol(source)));
        launch
            .arg(&address)
            .arg(&n64)
            .arg(&scratch.status)
            .arg(&scratch.starts)
            .arg(&scratch.capacity)
            .arg(&count);
        let grid = LaunchConfig {
            grid_dim: (starts_chunks(n) as u32, 1, 1),
            block_dim: (STARTS_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const void* heads, u64 n, u64* status, u64* starts, u64 capacity,
        // u64* count); `heads` holds the flags or keys of n elements (checked by the
        // caller, of the kernel's format or width), status its starts_status_words(n)
        // zeroed words, starts capacity + 1 words (written only at ranks <= capacity),
        // count one u64; one block per chunk (the chunks of n < 2^43 elements fit the
        // grid, checked by the caller's length limits).
        unsafe { launch.launch(grid) }?;
        Ok(())
    }

    /// Enqueues the store of `value` at `slot` (one `u64`): a count the
    /// host knows, written in stream order.
    pub(crate) fn store_count(
        &self,
        stream: &Arc<CudaStream>,
        slot: u64,
        value: u64,
    ) -> Result<()> {
        let mut launch = stream.launch_builder(self.function(STORE_COUNT_SYMBOL));
        launch.arg(&slot).arg(&value);
        // SAFETY: (u64* slot, u64 value); `slot` is one u64 of the caller's (its
        // length checked), written by one thread.
        unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }?;
        Ok(())
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
