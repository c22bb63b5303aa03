//! Radix sort on the GPU (issue 48): least significant digit first, eight
//! bits a pass, one pass over the keys per digit
//! (`kernels_gen::radix_sort`), in place on the caller's buffers, ordered
//! as the CPU's sort ([`scan_core::sort`]) orders them, which is its
//! oracle.
//!
//! A sort is planned first ([`plan`], pure: which kernels, which buffer
//! each pass reads and writes, the copies back) and the plan executed on
//! the stream. Scratch (the second buffers, the digit counts, the
//! look-back status) is kept per stream, as the scanners keep theirs.

mod by_key;
mod segmented;

use crate::capture::AddressStream;
use crate::error::{Result, ScanError};
use crate::kernels::{build_module, compile_target, ProgramStats};
use crate::workspace::{refuse_during_capture, stream_key, RegionScratch, Scratch};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};
use kernels_gen::radix_sort::{
    sort_program, RadixKind, SortKernel, SortKeyType, SortShape, SortValueType, SORT_BLOCK_THREADS,
    SORT_DIGITS, SORT_HISTOGRAM_KEYS, SORT_MOST_PASSES,
};
use kernels_gen::Arch;
use scan_core::sort::{RadixKey, SortError, SortSpec};
use scan_core::ScanElement;
use std::any::TypeId;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// A key the GPU sorts: the integers of 8 to 64 bits and `f32`, `f64`.
pub trait DeviceSortKey: RadixKey + ScanElement + private::Sealed {
    /// How its program sees it.
    const KEY: SortKeyType;
}

mod private {
    pub trait Sealed {}
}

macro_rules! device_sort_keys {
    ($($t:ty => $kind:ident),*) => {$(
        impl private::Sealed for $t {}
        impl DeviceSortKey for $t {
            const KEY: SortKeyType = SortKeyType {
                cuda_type: <$t as ScanElement>::CUDA_TYPE,
                kind: RadixKind::$kind,
                size: std::mem::size_of::<$t>(),
            };
        }
    )*};
}
device_sort_keys!(
    u8 => Unsigned, u16 => Unsigned, u32 => Unsigned, u64 => Unsigned,
    i8 => Signed, i16 => Signed, i32 => Signed, i64 => Signed,
    f32 => Float, f64 => Float
);

/// What a sort carries along with its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carried {
    /// Nothing: the keys alone.
    Nothing,
    /// The caller's values, one per key.
    Values,
    /// The keys' input positions (`u64`), written first: an argsort, whose
    /// keys are read, not moved.
    Indices,
}

/// A buffer of keys a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyBuffer {
    /// The caller's keys (read-only in an argsort).
    Caller,
    /// Scratch: the first second buffer.
    First,
    /// Scratch: the other (an argsort, which never writes the caller's).
    Second,
}

/// The `u64` positions (indices) a sort carries: an argsort's, and those
/// of the sorts by key and by segment.
const POSITION: SortValueType = SortValueType {
    cuda_type: "unsigned long long",
    declarations: "",
    size: 8,
};

/// A buffer of values (or indices) a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueBuffer {
    /// The caller's values (or indices).
    Caller,
    /// Scratch.
    Scratch,
}

/// One step of a sort on the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SortStep {
    /// `out[i] = i` into the caller's indices.
    Iota,
    /// The digit counts zeroed, then every pass's counted from one read of
    /// the caller's keys, then scanned into the digits' starts.
    Count,
    /// One pass over bits `shift..shift + width`: its look-back zeroed,
    /// then every key (and value) from one buffer to the other.
    Pass {
        /// Its index (which digit starts it takes).
        pass: usize,
        /// Its lowest bit.
        shift: u32,
        /// Its bits (8, or fewer for the last).
        width: u32,
        /// Where its keys are read and written.
        keys: (KeyBuffer, KeyBuffer),
        /// Where its values are read and written, where it carries any.
        values: Option<(ValueBuffer, ValueBuffer)>,
    },
    /// The sorted values from scratch to the caller's buffer.
    CopyValues,
    /// The sorted keys from scratch to the caller's buffer.
    CopyKeys,
}

/// A sort's steps and the scratch they need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SortPlan {
    /// In order.
    pub(crate) steps: Vec<SortStep>,
    /// The onesweep tile shape.
    pub(crate) shape: SortShape,
    /// Onesweep tiles a pass.
    pub(crate) tiles: usize,
    /// Second buffers of `n` keys: 0, 1 or 2.
    pub(crate) key_buffers: usize,
    /// Whether a second buffer of `n` values is needed.
    pub(crate) value_buffer: bool,
}

/// The plan of a sort of `n` keys over bits `bits` in tiles of `shape`,
/// carrying `carried`: an argsort's indices written
/// first; with no bits to compare or fewer than two keys, nothing moves;
/// else counts, then a pass per eight bits ping-ponging between the
/// caller's buffers and scratch (an argsort between two scratch buffers of
/// keys, its first pass reading the caller's), then, after an odd number of
/// passes, the sorted keys (and values) copied back.
pub(crate) fn plan(n: usize, bits: Range<u32>, carried: Carried, shape: SortShape) -> SortPlan {
    let mut steps = Vec::new();
    if carried == Carried::Indices && n > 0 {
        steps.push(SortStep::Iota);
    }
    let width = bits.end.saturating_sub(bits.start);
    let passes = width.div_ceil(8) as usize;
    if n < 2 || passes == 0 {
        return SortPlan {
            steps,
            shape,
            tiles: 0,
            key_buffers: 0,
            value_buffer: false,
        };
    }
    steps.push(SortStep::Count);
    let argsort = carried == Carried::Indices;
    for pass in 0..passes {
        let keys = if argsort {
            let from = match pass {
                0 => KeyBuffer::Caller,
                p if p % 2 == 1 => KeyBuffer::First,
                _ => KeyBuffer::Second,
            };
            let to = if pass % 2 == 0 {
                KeyBuffer::First
            } else {
                KeyBuffer::Second
            };
            (from, to)
        } else if pass % 2 == 0 {
            (KeyBuffer::Caller, KeyBuffer::First)
        } else {
            (KeyBuffer::First, KeyBuffer::Caller)
        };
        let values = (carried != Carried::Nothing).then_some(if pass % 2 == 0 {
            (ValueBuffer::Caller, ValueBuffer::Scratch)
        } else {
            (ValueBuffer::Scratch, ValueBuffer::Caller)
        });
        let shift = bits.start + 8 * pass as u32;
        steps.push(SortStep::Pass {
            pass,
            shift,
            width: (bits.end - shift).min(8),
            keys,
            values,
        });
    }
    if passes % 2 == 1 {
        if carried != Carried::Nothing {
            steps.push(SortStep::CopyValues);
        }
        if !argsort {
            steps.push(SortStep::CopyKeys);
        }
    }
    SortPlan {
        steps,
        shape,
        tiles: n.div_ceil(shape.tile_items()),
        key_buffers: if argsort { passes.min(2) } else { 1 },
        value_buffer: carried != Carried::Nothing,
    }
}

/// Offsets in a stream's control words: every pass's 256 digit counts (then
/// starts), the pass's tile counter, then its look-back status (256 words a
/// tile).
const COUNTS_WORDS: usize = SORT_MOST_PASSES * SORT_DIGITS;
const COUNTER_WORD: usize = COUNTS_WORDS;
const STATUS_WORD: usize = COUNTER_WORD + 1;

/// One stream's sort scratch; each part grows, never shrinks.
#[derive(Default)]
struct SortScratch {
    /// Control words for `tiles` tiles ([`STATUS_WORD`]).
    control: Option<(Scratch<u64>, usize)>,
    /// Two second buffers of keys one after the other, and the bytes of
    /// each.
    keys: Option<(Scratch<u8>, usize)>,
    /// The second buffer of values, and its bytes.
    values: Option<(Scratch<u8>, usize)>,
}

impl SortScratch {
    /// Makes the scratch cover `plan` over `n` keys of `key_size` bytes
    /// and values of `value_size`; returns the addresses of the control
    /// words, the second key buffers and the value buffer.
    fn reserve(
        &mut self,
        stream: &Arc<CudaStream>,
        plan: &SortPlan,
        n: usize,
        key_size: usize,
        value_size: usize,
    ) -> Result<(u64, [u64; 2], u64)> {
        let control_words = STATUS_WORD + plan.tiles * SORT_DIGITS;
        let key_bytes = n * key_size;
        let value_bytes = if plan.value_buffer { n * value_size } else { 0 };
        let grow_control = self.control.as_ref().is_none_or(|c| c.1 < control_words);
        let grow_keys = plan.key_buffers > 0 && self.keys.as_ref().is_none_or(|k| k.1 < key_bytes);
        let grow_values = value_bytes > 0 && self.values.as_ref().is_none_or(|v| v.1 < value_bytes);
        let bytes = grow_control as usize * control_words * 8
            + grow_keys as usize * 2 * key_bytes
            + grow_values as usize * value_bytes;
        if bytes > 0 {
            refuse_during_capture(stream, bytes).map_err(|e| e.reserved_by("GpuSort::reserve"))?;
        }
        if grow_control {
            self.control = Some((Scratch::zeroed(stream, control_words)?, control_words));
        }
        if grow_keys {
            // Room for two, so that an argsort after a sort needs no more.
            self.keys = Some((Scratch::zeroed(stream, 2 * key_bytes)?, key_bytes));
        }
        if grow_values {
            self.values = Some((Scratch::zeroed(stream, value_bytes)?, value_bytes));
        }
        let control = self.control.as_ref().map_or(0, |c| c.0.ptr);
        let keys = self
            .keys
            .as_ref()
            .map_or([0, 0], |k| [k.0.ptr, k.0.ptr + key_bytes as u64]);
        let values = self.values.as_ref().map_or(0, |v| v.0.ptr);
        Ok((control, keys, values))
    }
}

/// A loaded sort program and its kernels (in [`SortKernel::ALL`]'s order).
type Program = (Arc<CudaModule>, [CudaFunction; 4]);

/// Radix sort on one context: keys of any [`DeviceSortKey`] type alone, or
/// carrying values of any [`ScanElement`] type, or the permutation that
/// sorts them (argsort), in the order a [`SortSpec`] gives (ascending or
/// descending, stable, over a range of bits), each program compiled the
/// first time it is needed (through the disk cache) and kept.
///
/// ```no_run
/// use gpu_scan::scan_runtime::{open_device, GpuSort};
/// use gpu_scan::sort::SortSpec;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.new_stream()?;
/// let mut keys = stream.clone_htod(&[3.5f32, -1.0, 2.0])?;
/// let mut sort = GpuSort::new(&ctx)?;
/// sort.sort_keys(&stream, &mut keys, &SortSpec::ascending())?;
/// assert_eq!(stream.clone_dtoh(&keys)?, [-1.0, 2.0, 3.5]);
/// # Ok::<(), gpu_scan::scan_runtime::ScanError>(())
/// ```
pub struct GpuSort {
    ctx: Arc<CudaContext>,
    target: (Arch, bool),
    disk: crate::cache::DiskCache,
    /// Loaded programs, by key type, carried type and tile shape.
    programs: HashMap<(TypeId, Option<TypeId>, SortShape), Program>,
    /// The tile shape set for tuning ([`GpuSort::set_shape`]).
    shape: Option<SortShape>,
    /// Loaded programs of records by a sort key, by the key's type.
    by_key_programs: HashMap<crate::operator::OperatorKey, by_key::ByKeyProgram>,
    /// Per stream, the scratch of sorts by a key.
    by_key_scratch: HashMap<usize, RegionScratch>,
    /// Loaded segmented-sort programs, by key type and carried type.
    segmented_programs: HashMap<(TypeId, Option<TypeId>), segmented::SegmentedProgram>,
    /// Per stream, the scratch of segmented sorts.
    segmented_scratch: HashMap<usize, RegionScratch>,
    scratch: HashMap<usize, SortScratch>,
    stats: ProgramStats,
    addresses: AddressStream,
    multiprocessors: usize,
}

/// What one sort moves: the caller's buffers' addresses and the sizes of
/// their elements.
struct Buffers {
    keys: u64,
    values: u64,
    key_size: usize,
    value_size: usize,
}

impl GpuSort {
    /// Sorting on `ctx`, with the disk cache the environment selects.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &crate::cache::DiskCache::from_env())
    }

    /// Sorting on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &crate::cache::DiskCache) -> Result<Self> {
        Ok(GpuSort {
            ctx: ctx.clone(),
            target: compile_target(ctx)?,
            disk: disk.clone(),
            programs: HashMap::new(),
            shape: None,
            by_key_programs: HashMap::new(),
            by_key_scratch: HashMap::new(),
            segmented_programs: HashMap::new(),
            segmented_scratch: HashMap::new(),
            scratch: HashMap::new(),
            stats: ProgramStats::NONE,
            addresses: AddressStream::default(),
            multiprocessors: crate::device::multiprocessors(ctx)?,
        })
    }

    /// How the programs used so far were obtained, summed.
    pub fn program_stats(&self) -> ProgramStats {
        self.stats
    }

    /// Reserves `stream`'s scratch for any sort of up to `n` keys of type
    /// `K` (alone, with values of type `V`, or an argsort), so that later
    /// sorts on it allocate nothing: call it before capturing the stream
    /// into a CUDA graph, where an allocation would belong to the graph (a
    /// sort that needs more then fails with
    /// [`ScanError::WorkspaceDuringCapture`]). The sort's program is loaded
    /// here too.
    pub fn reserve<K: DeviceSortKey, V: ScanElement>(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<()> {
        let value_size = std::mem::size_of::<V>().max(8);
        let shape = self.shape_for::<K>(value_size)?;
        // An argsort needs both key buffers; values the widest of V and u64.
        let widest = plan(n.max(2), 0..K::BITS, Carried::Indices, shape);
        self.scratch
            .entry(stream_key(stream))
            .or_default()
            .reserve(stream, &widest, n, K::KEY.size, value_size)?;
        self.functions::<K, ()>(None, self.shape_for::<K>(0)?)?;
        let value = SortValueType {
            cuda_type: V::CUDA_TYPE,
            declarations: V::CUDA_DECL,
            size: std::mem::size_of::<V>(),
        };
        self.functions::<K, V>(Some(&value), self.shape_for::<K>(value.size)?)?;
        self.functions::<K, u64>(Some(&POSITION), self.shape_for::<K>(8)?)?;
        Ok(())
    }

    /// Sorts `keys` in place as `spec` says. A bit range outside the key
    /// fails with [`ScanError::Sort`] before anything is enqueued.
    pub fn sort_keys<K: DeviceSortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &mut impl DevicePtrMut<K>,
        spec: &SortSpec,
    ) -> Result<()> {
        let bits = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let n = keys.len();
        let shape = self.shape_for::<K>(0)?;
        let plan = plan(n, bits, Carried::Nothing, shape);
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _keys_guard) = keys.device_ptr_mut(&at);
        let buffers = Buffers {
            keys: keys_ptr,
            values: 0,
            key_size: K::KEY.size,
            value_size: 0,
        };
        self.execute::<K, ()>(stream, &plan, spec, n, buffers, None)
    }

    /// Sorts `keys` in place and moves `values` with them (one per key).
    pub fn sort_pairs<K: DeviceSortKey, V: ScanElement>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &mut impl DevicePtrMut<K>,
        values: &mut impl DevicePtrMut<V>,
        spec: &SortSpec,
    ) -> Result<()> {
        let bits = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let n = keys.len();
        one_per_key(n, values.len())?;
        let shape = self.shape_for::<K>(std::mem::size_of::<V>())?;
        let plan = plan(n, bits, Carried::Values, shape);
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _keys_guard) = keys.device_ptr_mut(&at);
        let (values_ptr, _values_guard) = values.device_ptr_mut(&at);
        let buffers = Buffers {
            keys: keys_ptr,
            values: values_ptr,
            key_size: K::KEY.size,
            value_size: std::mem::size_of::<V>(),
        };
        let value = SortValueType {
            cuda_type: V::CUDA_TYPE,
            declarations: V::CUDA_DECL,
            size: std::mem::size_of::<V>(),
        };
        self.execute::<K, V>(stream, &plan, spec, n, buffers, Some(value))
    }

    /// Writes to `indices` the permutation that sorts `keys` as `spec`
    /// says (position i of the sorted keys holds `keys[indices[i]]`);
    /// `keys` are read, not moved.
    pub fn argsort<K: DeviceSortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &impl DevicePtr<K>,
        indices: &mut impl DevicePtrMut<u64>,
        spec: &SortSpec,
    ) -> Result<()> {
        let bits = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let n = keys.len();
        one_per_key(n, indices.len())?;
        let shape = self.shape_for::<K>(8)?;
        let plan = plan(n, bits, Carried::Indices, shape);
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _keys_guard) = keys.device_ptr(&at);
        let (indices_ptr, _indices_guard) = indices.device_ptr_mut(&at);
        let buffers = Buffers {
            keys: keys_ptr,
            values: indices_ptr,
            key_size: K::KEY.size,
            value_size: 8,
        };
        self.execute::<K, u64>(stream, &plan, spec, n, buffers, Some(POSITION))
    }

    /// Sets the onesweep tile shape of every later sort (`None`: the
    /// default for the key, [`SortShape::default_for`]), for tuning; a
    /// sort it cannot hold fails with [`ScanError::SortShape`].
    pub fn set_shape(&mut self, shape: Option<SortShape>) {
        self.shape = shape;
    }

    /// The onesweep tile shape for keys `K` carrying values of
    /// `value_size` bytes (0: none): the one set, or the default.
    pub fn shape_for<K: DeviceSortKey>(&self, value_size: usize) -> Result<SortShape> {
        let shape =
            self.shape
                .unwrap_or(SortShape::default_for(&K::KEY, value_size, self.target.0));
        shape
            .check(K::KEY.size, value_size)
            .map_err(|detail| ScanError::SortShape { detail })?;
        Ok(shape)
    }

    /// Runs `plan` on `stream`: its program loaded and its scratch reserved
    /// before anything is enqueued (an error leaves the buffers untouched).
    fn execute<K: DeviceSortKey, V: 'static>(
        &mut self,
        stream: &Arc<CudaStream>,
        plan: &SortPlan,
        spec: &SortSpec,
        n: usize,
        buffers: Buffers,
        value: Option<SortValueType>,
    ) -> Result<()> {
        if plan.steps.is_empty() {
            return Ok(());
        }
        let shape = plan.shape;
        if plan.tiles > i32::MAX as usize {
            return Err(ScanError::TooLong {
                len: n,
                max: i32::MAX as usize * shape.tile_items(),
            });
        }
        let functions = self.functions::<K, V>(value.as_ref(), shape)?;
        let (control, key_scratch, value_scratch) = self
            .scratch
            .entry(stream_key(stream))
            .or_default()
            .reserve(stream, plan, n, buffers.key_size, buffers.value_size)?;
        let bits = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let descending = i32::from(spec.order == scan_core::sort::SortOrder::Descending);
        let (begin_bit, end_bit) = (bits.start, bits.end);
        let n64 = n as u64;
        let key_at = |buffer: KeyBuffer| match buffer {
            KeyBuffer::Caller => buffers.keys,
            KeyBuffer::First => key_scratch[0],
            KeyBuffer::Second => key_scratch[1],
        };
        let value_at = |buffer: ValueBuffer| match buffer {
            ValueBuffer::Caller => buffers.values,
            ValueBuffer::Scratch => value_scratch,
        };
        let [histograms, offsets, onesweep, iota] = functions;
        let cu = stream.cu_stream();
        for step in &plan.steps {
            match step {
                SortStep::Iota => {
                    let mut builder = stream.launch_builder(&iota);
                    builder.arg(&buffers.values).arg(&n64);
                    // SAFETY: the kernel writes `n` u64 to the caller's
                    // indices, which hold `n`, valid while their guard lives.
                    unsafe { builder.launch(grid_stride(n, self.multiprocessors)) }?;
                }
                SortStep::Count => {
                    // SAFETY: the control words hold the counts (reserved
                    // above); the memset is ordered on the stream.
                    unsafe {
                        cudarc::driver::result::memset_d8_async(control, 0, COUNTS_WORDS * 8, cu)
                    }?;
                    let mut builder = stream.launch_builder(&histograms);
                    builder
                        .arg(&buffers.keys)
                        .arg(&n64)
                        .arg(&begin_bit)
                        .arg(&end_bit)
                        .arg(&descending)
                        .arg(&control);
                    // Eight blocks a multiprocessor at most (28 registers and
                    // 8 KiB of shared memory allow them).
                    let grid = grid_over(n, SORT_HISTOGRAM_KEYS, 8, self.multiprocessors);
                    // SAFETY: the kernel reads the caller's `n` keys and adds
                    // to the passes' counts, inside the control words.
                    unsafe { builder.launch(grid) }?;
                    let passes = (end_bit - begin_bit).div_ceil(8);
                    let mut builder = stream.launch_builder(&offsets);
                    builder.arg(&control);
                    // SAFETY: block p scans pass p's 256 counts in place.
                    unsafe {
                        builder.launch(LaunchConfig {
                            grid_dim: (passes, 1, 1),
                            block_dim: (SORT_DIGITS as u32, 1, 1),
                            shared_mem_bytes: 0,
                        })
                    }?;
                }
                SortStep::Pass {
                    pass,
                    shift,
                    width,
                    keys,
                    values,
                } => {
                    let counter = control + COUNTER_WORD as u64 * 8;
                    let status = control + STATUS_WORD as u64 * 8;
                    let look_back = (1 + plan.tiles * SORT_DIGITS) * 8;
                    // SAFETY: the counter and `tiles` tiles' status words lie
                    // in the control words (reserved above).
                    unsafe { cudarc::driver::result::memset_d8_async(counter, 0, look_back, cu) }?;
                    let (keys_in, keys_out) = (key_at(keys.0), key_at(keys.1));
                    let (values_in, values_out) =
                        values.map_or((0, 0), |(from, to)| (value_at(from), value_at(to)));
                    let starts = control + (pass * SORT_DIGITS * 8) as u64;
                    let mut builder = stream.launch_builder(&onesweep);
                    builder
                        .arg(&keys_in)
                        .arg(&keys_out)
                        .arg(&values_in)
                        .arg(&values_out)
                        .arg(&n64)
                        .arg(shift)
                        .arg(width)
                        .arg(&descending)
                        .arg(&starts)
                        .arg(&status)
                        .arg(&counter);
                    // SAFETY: the kernel reads `n` keys (and values) from one
                    // buffer and writes each to one place among the `n` of
                    // the other (the plan never reads and writes one
                    // buffer in a pass); the caller's hold `n`, scratch was
                    // reserved for `n`; the status covers `tiles` tiles.
                    unsafe {
                        builder.launch(LaunchConfig {
                            grid_dim: (plan.tiles as u32, 1, 1),
                            block_dim: (shape.threads as u32, 1, 1),
                            shared_mem_bytes: 0,
                        })
                    }?;
                }
                SortStep::CopyValues => {
                    // SAFETY: both buffers hold `n` values; ordered on the stream.
                    unsafe {
                        cudarc::driver::result::memcpy_dtod_async(
                            buffers.values,
                            value_scratch,
                            n * buffers.value_size,
                            cu,
                        )
                    }?;
                }
                SortStep::CopyKeys => {
                    // SAFETY: both buffers hold `n` keys; ordered on the stream.
                    unsafe {
                        cudarc::driver::result::memcpy_dtod_async(
                            buffers.keys,
                            key_scratch[0],
                            n * buffers.key_size,
                            cu,
                        )
                    }?;
                }
            }
        }
        Ok(())
    }

    /// Reserves `stream`'s radix-sort scratch (and loads the program) for
    /// up to `n` keys `K` with `u64` positions ([`GpuSort::sort_with_positions`]).
    fn reserve_with_positions<K: DeviceSortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<()> {
        let shape = self.shape_for::<K>(8)?;
        let widest = plan(n.max(2), 0..K::BITS, Carried::Values, shape);
        self.scratch
            .entry(stream_key(stream))
            .or_default()
            .reserve(stream, &widest, n, K::KEY.size, 8)?;
        self.functions::<K, u64>(Some(&POSITION), shape).map(|_| ())
    }

    /// Sorts `n` keys `K` at `keys` (scratch of the sorts by key and by
    /// segment) with the `u64` positions at `order`, as `spec` says.
    fn sort_with_positions<K: DeviceSortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: &SortSpec,
        n: usize,
        keys: u64,
        order: u64,
    ) -> Result<()> {
        let range = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let shape = self.shape_for::<K>(8)?;
        let plan = plan(n, range, Carried::Values, shape);
        let buffers = Buffers {
            keys,
            values: order,
            key_size: K::KEY.size,
            value_size: 8,
        };
        self.execute::<K, u64>(stream, &plan, spec, n, buffers, Some(POSITION))
    }

    /// The four kernels of keys `K` carrying `value` (of type `V`),
    /// compiled (or read from the disk cache) and loaded the first time.
    fn functions<K: DeviceSortKey, V: 'static>(
        &mut self,
        value: Option<&SortValueType>,
        shape: SortShape,
    ) -> Result<[CudaFunction; 4]> {
        let key = (TypeId::of::<K>(), value.map(|_| TypeId::of::<V>()), shape);
        if let Some((_, functions)) = self.programs.get(&key) {
            return Ok(functions.clone());
        }
        let source = sort_program(&K::KEY, value, shape);
        let (module, stats) =
            build_module(&self.ctx, &self.disk, self.target, "radix_sort", &source)?;
        let load = |kernel: SortKernel| module.load_function(&kernel.symbol(&K::KEY, value));
        let functions = [
            load(SortKernel::Histograms)?,
            load(SortKernel::Offsets)?,
            load(SortKernel::Onesweep)?,
            load(SortKernel::Iota)?,
        ];
        self.stats = self.stats.then(stats);
        self.programs.insert(key, (module, functions.clone()));
        Ok(functions)
    }
}

/// One value (or index) per key, or the CPU backend's error.
fn one_per_key(keys: usize, values: usize) -> Result<()> {
    if keys == values {
        Ok(())
    } else {
        Err(ScanError::Sort(SortError::Values { keys, values }))
    }
}

/// A grid-stride launch of [`SORT_BLOCK_THREADS`]-thread blocks over `n`
/// items, `per_thread` a thread in flight: `blocks_per_sm` blocks a
/// multiprocessor at most.
fn grid_over(
    n: usize,
    per_thread: usize,
    blocks_per_sm: usize,
    multiprocessors: usize,
) -> LaunchConfig {
    let blocks = n
        .div_ceil(SORT_BLOCK_THREADS * per_thread)
        .clamp(1, blocks_per_sm * multiprocessors);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (SORT_BLOCK_THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The element-wise kernels' grid (iota, extract, gather, segment
/// numbers): four blocks a multiprocessor at most.
fn grid_stride(n: usize, multiprocessors: usize) -> LaunchConfig {
    grid_over(n, 1, 4, multiprocessors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiles of 4,096 keys.
    const SHAPE: SortShape = SortShape {
        threads: 256,
        items: 16,
        min_blocks: 3,
        rank: kernels_gen::radix_sort::SortRank::Ballots,
    };

    fn passes(plan: &SortPlan) -> Vec<(u32, u32, (KeyBuffer, KeyBuffer))> {
        plan.steps
            .iter()
            .filter_map(|s| match s {
                SortStep::Pass {
                    shift, width, keys, ..
                } => Some((*shift, *width, *keys)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_even_number_of_passes_ends_in_the_callers_buffers() {
        use KeyBuffer::*;
        let p = plan(10_000, 0..32, Carried::Values, SHAPE);
        assert_eq!(
            passes(&p),
            [
                (0, 8, (Caller, First)),
                (8, 8, (First, Caller)),
                (16, 8, (Caller, First)),
                (24, 8, (First, Caller))
            ]
        );
        assert_eq!(p.steps.first(), Some(&SortStep::Count));
        assert!(matches!(p.steps.last(), Some(SortStep::Pass { .. })));
        assert_eq!((p.tiles, p.key_buffers, p.value_buffer), (3, 1, true));
    }

    #[test]
    fn an_odd_number_of_passes_copies_back_and_the_last_is_narrower() {
        let p = plan(5, 3..20, Carried::Values, SHAPE);
        assert_eq!(
            passes(&p).iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(3, 8), (11, 8), (19, 1)]
        );
        assert_eq!(
            &p.steps[p.steps.len() - 2..],
            [SortStep::CopyValues, SortStep::CopyKeys]
        );
        let keys_only = plan(5, 0..8, Carried::Nothing, SHAPE);
        assert_eq!(keys_only.steps.last(), Some(&SortStep::CopyKeys));
        assert!(!keys_only.value_buffer);
    }

    #[test]
    fn an_argsort_never_writes_the_callers_keys() {
        for bits in [0..8, 0..16, 0..24, 0..64] {
            let p = plan(100, bits.clone(), Carried::Indices, SHAPE);
            assert_eq!(p.steps[0], SortStep::Iota);
            let passes = passes(&p);
            assert!(
                passes.iter().all(|s| s.2 .1 != KeyBuffer::Caller),
                "{bits:?}"
            );
            assert!(passes.iter().skip(1).all(|s| s.2 .0 != KeyBuffer::Caller));
            assert!(passes.iter().all(|s| s.2 .0 != s.2 .1));
            assert!(!p.steps.contains(&SortStep::CopyKeys));
            assert_eq!(
                p.steps.contains(&SortStep::CopyValues),
                passes.len() % 2 == 1
            );
            assert_eq!(p.key_buffers, passes.len().min(2));
        }
    }

    #[test]
    fn nothing_moves_without_bits_or_without_two_keys() {
        for (n, bits) in [(1, 0..32), (100, 5..5)] {
            assert!(plan(n, bits.clone(), Carried::Values, SHAPE)
                .steps
                .is_empty());
            assert_eq!(
                plan(n, bits, Carried::Indices, SHAPE).steps,
                [SortStep::Iota]
            );
        }
        assert!(plan(0, 0..32, Carried::Indices, SHAPE).steps.is_empty());
    }

    #[test]
    fn sort_keys_name_their_cuda_types() {
        assert_eq!(<i8 as DeviceSortKey>::KEY.cuda_type, "signed char");
        assert_eq!(<f64 as DeviceSortKey>::KEY.kind, RadixKind::Float);
        assert_eq!(<u16 as DeviceSortKey>::KEY.size, 2);
    }
}
