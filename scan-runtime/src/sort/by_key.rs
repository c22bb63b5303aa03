//! Records sorted by a `#[sort_key]` on the GPU (issue 48, item 2), as the
//! CPU's `sort_by_key` sorts them: the records' positions sorted by each
//! key component's share of the bits (`scan_core::sort::component_shares`,
//! the least significant component first, each sort stable), then the
//! records gathered once in that order. A component's bits are read from
//! the records in the order so far (`ByKeyKernel::Extract`), so the
//! records are never moved before the gather, whatever their size.

use super::{one_per_key, GpuSort};
use crate::built_stage::DynSortKey;
use crate::dynamic::{check_aligned, check_whole, BuiltElement};
use crate::error::{Result, ScanError};
use crate::kernels::build_module;
use crate::operator::OperatorKey;
use crate::workspace::stream_key;
use cudarc::driver::{
    CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut, PushKernelArg,
};
use kernels_gen::radix_sort::{sort_by_key_program, ByKeyKernel};
use scan_core::sort::{component_shares, CompositeKey, SortKey, SortOrder, SortSpec};
use std::any::TypeId;
use std::ops::Range;
use std::sync::Arc;

/// A loaded by-key program: its module, a component's extract kernel each,
/// the gather and the iota.
pub(super) type ByKeyProgram = (
    Arc<CudaModule>,
    Vec<CudaFunction>,
    CudaFunction,
    CudaFunction,
);

/// The by-key scratch's regions for `n` records of `record_size` bytes: the
/// positions (unless the caller's indices hold them), a component's bits,
/// and a gathered copy of the records (for `sort_by_key`).
fn by_key_regions(n: usize, record_size: usize) -> [usize; 3] {
    [8 * n, 8 * n, record_size * n]
}

/// The call that reserves the by-key scratch.
const RESERVE_BY_KEY: &str = "GpuSort::reserve_by_key";

/// The spec of one component's sort: `share` of its bits, in `order`.
fn component_spec(order: SortOrder, share: Range<u32>) -> SortSpec {
    match order {
        SortOrder::Ascending => SortSpec::ascending(),
        SortOrder::Descending => SortSpec::descending(),
    }
    .bits(share)
}

/// A sort key as the by-key sort reads it: its kernels' memory-cache key,
/// its policy's name and CUDA (the record's declaration with it), its
/// components' widths, and its record's size.
struct ByKey<'a> {
    key: OperatorKey,
    name: &'static str,
    source: &'a str,
    widths: &'a [u32],
    record_size: usize,
}

impl ByKey<'static> {
    fn of<S: SortKey>() -> Self {
        ByKey {
            key: OperatorKey::Type(TypeId::of::<S>()),
            name: S::NAME,
            source: S::CUDA_SOURCE,
            widths: <S::Key as CompositeKey>::WIDTHS,
            record_size: std::mem::size_of::<S::Record>(),
        }
    }
}

impl<'a> ByKey<'a> {
    fn built(key: &'a DynSortKey) -> Self {
        ByKey {
            key: key.key(),
            name: key.name(),
            source: key.cuda_source(),
            widths: key.widths(),
            record_size: key.record_size(),
        }
    }
}

impl GpuSort {
    /// Sorts `records` in place by the key `S` computes from each (a
    /// `#[sort_key]`), as `spec` says: lexicographically by the key's
    /// components, most significant first (descending: each descending),
    /// ties in input order, bit for bit as the CPU's
    /// [`sort_by_key`](scan_core::sort::sort_by_key). A bit range counts
    /// from the last component's lowest bit; outside the key it fails
    /// with [`ScanError::Sort`] before anything is enqueued.
    pub fn sort_by_key<S: SortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        records: &mut impl DevicePtrMut<S::Record>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = records.len();
        let at = self.addresses.for_stream(stream)?;
        let (records_ptr, _records_guard) = records.device_ptr_mut(&at);
        self.by_key(&ByKey::of::<S>(), stream, n, records_ptr, None, spec)
    }

    /// Writes to `indices` the permutation that sorts `records` by the key
    /// `S` computes from each ([`GpuSort::sort_by_key`]'s order): position
    /// i of the sorted records holds `records[indices[i]]`; `records` are
    /// read, not moved.
    pub fn argsort_by_key<S: SortKey>(
        &mut self,
        stream: &Arc<CudaStream>,
        records: &impl DevicePtr<S::Record>,
        indices: &mut impl DevicePtrMut<u64>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = records.len();
        one_per_key(n, indices.len())?;
        let at = self.addresses.for_stream(stream)?;
        let (records_ptr, _records_guard) = records.device_ptr(&at);
        let (indices_ptr, _indices_guard) = indices.device_ptr_mut(&at);
        self.by_key(
            &ByKey::of::<S>(),
            stream,
            n,
            records_ptr,
            Some(indices_ptr),
            spec,
        )
    }

    /// [`GpuSort::sort_by_key`] by a key built at run time, of records in
    /// a buffer of bytes ([`BuiltLayout::elements_mut`](crate::BuiltLayout::elements_mut)
    /// of the key, or [`RawElements`](crate::RawElements)).
    pub fn sort_by_key_built(
        &mut self,
        stream: &Arc<CudaStream>,
        key: &DynSortKey,
        records: &mut impl DevicePtrMut<BuiltElement>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = records.len();
        check_whole(key, n, &[("the records", records.num_bytes())])?;
        let at = self.addresses.for_stream(stream)?;
        let (records_ptr, _records_guard) = records.device_ptr_mut(&at);
        check_aligned(&[(
            "the records",
            records_ptr,
            n * key.record_size(),
            key.record_size(),
            key.record_align(),
        )])?;
        self.by_key(&ByKey::built(key), stream, n, records_ptr, None, spec)
    }

    /// [`GpuSort::argsort_by_key`] by a key built at run time.
    pub fn argsort_by_key_built(
        &mut self,
        stream: &Arc<CudaStream>,
        key: &DynSortKey,
        records: &impl DevicePtr<BuiltElement>,
        indices: &mut impl DevicePtrMut<u64>,
        spec: &SortSpec,
    ) -> Result<()> {
        let n = records.len();
        check_whole(key, n, &[("the records", records.num_bytes())])?;
        one_per_key(n, indices.len())?;
        let at = self.addresses.for_stream(stream)?;
        let (records_ptr, _records_guard) = records.device_ptr(&at);
        check_aligned(&[(
            "the records",
            records_ptr,
            n * key.record_size(),
            key.record_size(),
            key.record_align(),
        )])?;
        let (indices_ptr, _indices_guard) = indices.device_ptr_mut(&at);
        self.by_key(
            &ByKey::built(key),
            stream,
            n,
            records_ptr,
            Some(indices_ptr),
            spec,
        )
    }

    /// Reserves `stream`'s scratch for [`GpuSort::sort_by_key`] and
    /// [`GpuSort::argsort_by_key`] of up to `n` records by `S` (and loads
    /// their programs), so that they can be captured in a CUDA graph, as
    /// [`GpuSort::reserve`] does for keys.
    pub fn reserve_by_key<S: SortKey>(&mut self, stream: &Arc<CudaStream>, n: usize) -> Result<()> {
        self.reserve_keyed(&ByKey::of::<S>(), stream, n)
    }

    /// [`GpuSort::reserve_by_key`] for a key built at run time.
    pub fn reserve_by_key_built(
        &mut self,
        stream: &Arc<CudaStream>,
        key: &DynSortKey,
        n: usize,
    ) -> Result<()> {
        self.reserve_keyed(&ByKey::built(key), stream, n)
    }

    fn reserve_keyed(&mut self, key: &ByKey<'_>, stream: &Arc<CudaStream>, n: usize) -> Result<()> {
        self.by_key_program(key)?;
        self.by_key_scratch
            .entry(stream_key(stream))
            .or_default()
            .regions(stream, by_key_regions(n, key.record_size), RESERVE_BY_KEY)?;
        for &width in key.widths {
            self.reserve_component(stream, width, n)?;
        }
        Ok(())
    }

    /// The sort of [`GpuSort::sort_by_key`] (`indices` `None`) or
    /// [`GpuSort::argsort_by_key`] of `n` records at `records`.
    fn by_key(
        &mut self,
        key: &ByKey<'_>,
        stream: &Arc<CudaStream>,
        n: usize,
        records: u64,
        indices: Option<u64>,
        spec: &SortSpec,
    ) -> Result<()> {
        let widths = key.widths;
        let range = spec
            .range_of(widths.iter().sum())
            .map_err(ScanError::Sort)?;
        let shares = component_shares(widths, range);
        if n == 0 || (indices.is_none() && (n < 2 || shares.is_empty())) {
            return Ok(());
        }
        // Everything loaded and reserved before anything is enqueued.
        let (_, extract, gather, iota) = self.by_key_program(key)?;
        for &(c, _) in &shares {
            self.reserve_component(stream, widths[c], n)?;
        }
        // An argsort gathers no records.
        let record_size = if indices.is_some() {
            0
        } else {
            key.record_size
        };
        let [scratch_order, bits, gathered] = self
            .by_key_scratch
            .entry(stream_key(stream))
            .or_default()
            .regions(stream, by_key_regions(n, record_size), RESERVE_BY_KEY)?;
        let order = indices.unwrap_or(scratch_order);
        let n64 = n as u64;
        let grid = super::grid_stride(n, self.multiprocessors);
        let mut builder = stream.launch_builder(&iota);
        builder.arg(&order).arg(&n64);
        // SAFETY: the kernel writes `n` u64 to the positions, which hold `n`
        // (the caller's indices, checked to hold one per record, or scratch).
        unsafe { builder.launch(grid) }?;
        for (c, share) in shares {
            let mut builder = stream.launch_builder(&extract[c]);
            builder.arg(&records).arg(&order).arg(&bits).arg(&n64);
            // SAFETY: the kernel reads the `n` positions (each below `n`) and
            // the records at them, and writes `n` bits of component c's width
            // to scratch, which holds `n` of the widest.
            unsafe { builder.launch(grid) }?;
            let spec = component_spec(spec.order, share);
            self.sort_component(stream, widths[c], &spec, n, bits, order)?;
        }
        if indices.is_none() {
            let mut builder = stream.launch_builder(&gather);
            builder.arg(&records).arg(&order).arg(&gathered).arg(&n64);
            // SAFETY: the kernel reads the records at `n` positions below `n`
            // and writes `n` records to scratch reserved for them.
            unsafe { builder.launch(grid) }?;
            // SAFETY: both hold `n` records; ordered on the stream.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    records,
                    gathered,
                    n * record_size,
                    stream.cu_stream(),
                )
            }?;
        }
        Ok(())
    }

    /// Sorts `n` component bits of `width` at `bits` (unsigned integers of
    /// that width) with the `u64` positions at `order`, as `spec` says.
    fn sort_component(
        &mut self,
        stream: &Arc<CudaStream>,
        width: u32,
        spec: &SortSpec,
        n: usize,
        bits: u64,
        order: u64,
    ) -> Result<()> {
        match width {
            8 => self.sort_with_positions::<u8>(stream, spec, n, bits, order),
            16 => self.sort_with_positions::<u16>(stream, spec, n, bits, order),
            32 => self.sort_with_positions::<u32>(stream, spec, n, bits, order),
            _ => self.sort_with_positions::<u64>(stream, spec, n, bits, order),
        }
    }

    /// Reserves the radix sort's scratch (and program) for `n` component
    /// bits of `width` carrying positions.
    fn reserve_component(&mut self, stream: &Arc<CudaStream>, width: u32, n: usize) -> Result<()> {
        match width {
            8 => self.reserve_with_positions::<u8>(stream, n),
            16 => self.reserve_with_positions::<u16>(stream, n),
            32 => self.reserve_with_positions::<u32>(stream, n),
            _ => self.reserve_with_positions::<u64>(stream, n),
        }
    }

    /// The by-key program of `key`, compiled (or read from the disk cache)
    /// and loaded the first time.
    fn by_key_program(&mut self, key: &ByKey<'_>) -> Result<ByKeyProgram> {
        if let Some(program) = self.by_key_programs.get(&key.key) {
            return Ok(program.clone());
        }
        let widths = key.widths;
        // The key's source holds the record's declaration too.
        let source = sort_by_key_program(key.name, key.source, widths);
        let (module, stats) =
            build_module(&self.ctx, &self.disk, self.target, "sort_by_key", &source)?;
        let load = |kernel: ByKeyKernel| module.load_function(&kernel.symbol(key.name));
        let extract = (0..widths.len())
            .map(|c| load(ByKeyKernel::Extract(c)))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let program = (
            module.clone(),
            extract,
            load(ByKeyKernel::Gather)?,
            load(ByKeyKernel::Iota)?,
        );
        self.stats = self.stats.then(stats);
        self.by_key_programs.insert(key.key, program.clone());
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_sort_keeps_the_order_and_takes_its_share() {
        let spec = component_spec(SortOrder::Descending, 3..9);
        assert_eq!(spec.order, SortOrder::Descending);
        assert_eq!(spec.range_of(16).unwrap(), 3..9);
        assert_eq!(
            component_spec(SortOrder::Ascending, 0..8).order,
            SortOrder::Ascending
        );
    }
}
