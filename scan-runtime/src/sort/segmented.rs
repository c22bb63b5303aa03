//! Segmented sort by offsets on the GPU (issue 48, item 3), as the CPU's
//! `segmented_sort_keys` / `segmented_sort_pairs` sort: each segment
//! `offsets[s]..offsets[s + 1]` sorted on its own, stably, the elements
//! before the first offset and from the last on left where they are.
//!
//! It is two stable radix sorts of the keys' positions, so that no
//! segment's length matters (power-law lengths load every block alike):
//! by the keys (over the spec's bits), then by each position's segment
//! number (`SegmentedKernel::SegmentOf32`, a binary search of the
//! offsets; as few bits as the offsets' count needs), which groups the
//! positions by segment with the keys' order kept inside each; then one
//! gather of the keys (and values) in that order.

use super::{DeviceSortKey, GpuSort, POSITION};
use crate::error::{Result, ScanError};
use crate::kernels::build_module;
use crate::offsets::DeviceOffsets;
use crate::workspace::stream_key;
use cudarc::driver::{CudaFunction, CudaModule, CudaStream, DevicePtrMut, PushKernelArg};
use kernels_gen::radix_sort::{segmented_sort_program, SegmentedKernel, SortValueType};
use scan_core::sort::{SortError, SortSpec};
use scan_core::ScanElement;
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

/// A loaded segmented-sort program: its module and its kernels by kind.
pub(super) type SegmentedProgram = (Arc<CudaModule>, HashMap<SegmentedKernel, CudaFunction>);

/// The bits a segment number takes for `count` offsets (numbers 0 to
/// `count`), and whether they need 64-bit words.
pub(super) fn segment_bits(count: usize) -> (u32, bool) {
    let bits = usize::BITS - count.leading_zeros();
    (bits.max(1), count > u32::MAX as usize)
}

/// The segmented sort's scratch regions for `n` keys of `key_size` bytes
/// and values of `value_size`: the positions, the segment numbers, the
/// keys' copy (the sorted copy, then the gathered keys) and the values'.
fn segmented_regions(n: usize, key_size: usize, value_size: usize) -> [usize; 4] {
    [8 * n, 8 * n, key_size * n, value_size * n]
}

/// The call that reserves the segmented sorts' scratch.
const RESERVE_SEGMENTED: &str = "GpuSort::reserve_segmented";

impl GpuSort {
    /// Sorts each segment of `keys` that `offsets` cut
    /// (`keys[offsets[s]..offsets[s + 1]]`) on its own, as `spec` says,
    /// stably; keys before the first offset or from the last on stay where
    /// they are (the CPU's
    /// [`segmented_sort_keys`](scan_core::sort::segmented_sort_keys), CUB's
    /// `DeviceSegmentedSort::StableSortKeys`). Offsets checked for another
    /// length, or a bit range outside the key, fail with
    /// [`ScanError::Sort`] before anything is enqueued.
    pub fn segmented_sort_keys<K: DeviceSortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &mut impl DevicePtrMut<K>,
        offsets: &DeviceOffsets<'_>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = keys.len();
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _keys_guard) = keys.device_ptr_mut(&at);
        self.segmented::<K, ()>(stream, n, keys_ptr, None, offsets, spec)
    }

    /// [`GpuSort::segmented_sort_keys`] moving `values` (one per key) with
    /// the keys.
    pub fn segmented_sort_pairs<K: DeviceSortKey, V: ScanElement>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &mut impl DevicePtrMut<K>,
        values: &mut impl DevicePtrMut<V>,
        offsets: &DeviceOffsets<'_>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = keys.len();
        super::one_per_key(n, values.len())?;
        let at = self.addresses.for_stream(stream)?;
        let (keys_ptr, _keys_guard) = keys.device_ptr_mut(&at);
        let (values_ptr, _values_guard) = values.device_ptr_mut(&at);
        let value = SortValueType {
            cuda_type: V::CUDA_TYPE,
            declarations: V::CUDA_DECL,
            size: std::mem::size_of::<V>(),
        };
        self.segmented::<K, V>(
            stream,
            n,
            keys_ptr,
            Some((values_ptr, value)),
            offsets,
            spec,
        )
    }

    /// Reserves `stream`'s scratch for segmented sorts of up to `n` keys
    /// `K` (alone or with values `V`) by up to `count` offsets, and loads
    /// their programs, so that they can be captured in a CUDA graph, as
    /// [`GpuSort::reserve`] does for whole sorts.
    pub fn reserve_segmented<K: DeviceSortKey, V: ScanElement>(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
        count: usize,
    ) -> Result<()> {
        let value = SortValueType {
            cuda_type: V::CUDA_TYPE,
            declarations: V::CUDA_DECL,
            size: std::mem::size_of::<V>(),
        };
        self.segmented_program::<K, ()>(None)?;
        self.segmented_program::<K, V>(Some(&value))?;
        self.segmented_scratch
            .entry(stream_key(stream))
            .or_default()
            .regions(
                stream,
                segmented_regions(n, K::KEY.size, value.size),
                RESERVE_SEGMENTED,
            )?;
        self.reserve_with_positions::<K>(stream, n)?;
        if segment_bits(count).1 {
            self.reserve_with_positions::<u64>(stream, n)
        } else {
            self.reserve_with_positions::<u32>(stream, n)
        }
    }

    /// The sort of [`GpuSort::segmented_sort_keys`] (`values` `None`) and
    /// [`GpuSort::segmented_sort_pairs`].
    fn segmented<K: DeviceSortKey, V: 'static>(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
        keys: u64,
        values: Option<(u64, SortValueType)>,
        offsets: &DeviceOffsets<'_>,
        spec: &SortSpec,
    ) -> Result<()> {
        offsets
            .check_len(n)
            .map_err(|e| ScanError::Sort(SortError::Offsets(e)))?;
        let bits = spec.range_of(K::BITS).map_err(ScanError::Sort)?;
        let count = offsets.count();
        if n < 2 || count < 2 || bits.is_empty() {
            return Ok(());
        }
        // Everything loaded and reserved before anything is enqueued.
        let value_type = values.map(|v| v.1);
        let program = self.segmented_program::<K, V>(value_type.as_ref())?;
        let (number_bits, wide) = segment_bits(count);
        self.reserve_with_positions::<K>(stream, n)?;
        if wide {
            self.reserve_with_positions::<u64>(stream, n)?;
        } else {
            self.reserve_with_positions::<u32>(stream, n)?;
        }
        // Every sort program has an iota (`SortKernel::ALL`'s last).
        let iota = self.functions::<K, u64>(Some(&POSITION), self.shape_for::<K>(8)?)?[3].clone();
        let value_size = value_type.map_or(0, |v| v.size);
        let [order, numbers, key_copy, value_copy] = self
            .segmented_scratch
            .entry(stream_key(stream))
            .or_default()
            .regions(
                stream,
                segmented_regions(n, K::KEY.size, value_size),
                RESERVE_SEGMENTED,
            )?;
        // The offsets' address taken on the capture-safe stream, as the
        // scanners take theirs (crate::capture).
        let at = self.addresses.for_stream(stream)?;
        let (arg, _offsets_guards) = offsets.arg(&at);
        let (offsets_ptr, width) = (arg.address, arg.width);
        let count64 = count as u64;
        let n64 = n as u64;
        let grid = super::grid_stride(n, self.multiprocessors);
        let cu = stream.cu_stream();

        // Positions, and the keys sorted with them in a copy.
        let mut builder = stream.launch_builder(&iota);
        builder.arg(&order).arg(&n64);
        // SAFETY: the kernel writes `n` u64 to scratch reserved for them.
        unsafe { builder.launch(grid) }?;
        // SAFETY: both hold `n` keys; ordered on the stream.
        unsafe { cudarc::driver::result::memcpy_dtod_async(key_copy, keys, n * K::KEY.size, cu) }?;
        self.sort_with_positions::<K>(stream, spec, n, key_copy, order)?;

        // Each position's segment number, and the positions sorted by it.
        let number_of = if wide {
            SegmentedKernel::SegmentOf64
        } else {
            SegmentedKernel::SegmentOf32
        };
        let mut builder = stream.launch_builder(&program.1[&number_of]);
        builder
            .arg(&order)
            .arg(&numbers)
            .arg(&n64)
            .arg(&offsets_ptr)
            .arg(&count64)
            .arg(&width);
        // SAFETY: the kernel reads `n` positions and `count` offsets of
        // `width` bytes (a checked view) and writes `n` numbers to scratch
        // that holds `n` u64.
        unsafe { builder.launch(grid) }?;
        let by_segment = SortSpec::ascending().bits(0..number_bits);
        if wide {
            self.sort_with_positions::<u64>(stream, &by_segment, n, numbers, order)?;
        } else {
            self.sort_with_positions::<u32>(stream, &by_segment, n, numbers, order)?;
        }

        // The keys (and values) gathered in that order, then back.
        let mut gathers = vec![(SegmentedKernel::GatherKeys, keys, key_copy, K::KEY.size)];
        if let Some((values_ptr, value)) = values {
            gathers.push((
                SegmentedKernel::GatherValues,
                values_ptr,
                value_copy,
                value.size,
            ));
        }
        for (kernel, buffer, copy, size) in gathers {
            let mut builder = stream.launch_builder(&program.1[&kernel]);
            builder
                .arg(&buffer)
                .arg(&order)
                .arg(&copy)
                .arg(&n64)
                .arg(&offsets_ptr)
                .arg(&count64)
                .arg(&width);
            // SAFETY: the kernel reads the caller's `n` elements at `n`
            // positions below `n` and writes `n` to scratch reserved for
            // them.
            unsafe { builder.launch(grid) }?;
            // SAFETY: both hold `n` elements; ordered on the stream.
            unsafe { cudarc::driver::result::memcpy_dtod_async(buffer, copy, n * size, cu) }?;
        }
        Ok(())
    }

    /// The segmented-sort program of keys `K` carrying `value` (of type
    /// `V`), compiled (or read from the disk cache) and loaded the first
    /// time.
    fn segmented_program<K: DeviceSortKey, V: 'static>(
        &mut self,
        value: Option<&SortValueType>,
    ) -> Result<SegmentedProgram> {
        let key = (TypeId::of::<K>(), value.map(|_| TypeId::of::<V>()));
        if let Some(program) = self.segmented_programs.get(&key) {
            return Ok(program.clone());
        }
        let source = segmented_sort_program(&K::KEY, value);
        let (module, stats) = build_module(
            &self.ctx,
            &self.disk,
            self.target,
            "segmented_sort",
            &source,
        )?;
        let mut kernels = HashMap::new();
        for &kernel in SegmentedKernel::all(value.is_some()) {
            kernels.insert(
                kernel,
                module.load_function(&kernel.symbol(&K::KEY, value))?,
            );
        }
        self.stats = self.stats.then(stats);
        let program = (module, kernels);
        self.segmented_programs.insert(key, program.clone());
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_numbers_take_the_bits_of_the_offsets_count() {
        // Numbers 0..=count.
        assert_eq!(segment_bits(1), (1, false));
        assert_eq!(segment_bits(2), (2, false));
        assert_eq!(segment_bits(255), (8, false));
        assert_eq!(segment_bits(256), (9, false));
        assert_eq!(segment_bits((1 << 20) + 1), (21, false));
        assert_eq!(segment_bits(u32::MAX as usize), (32, false));
        assert_eq!(segment_bits(u32::MAX as usize + 1), (33, true));
    }
}
