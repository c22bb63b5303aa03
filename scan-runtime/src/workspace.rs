//! Scratch memory of the scans: one [`Workspace`] per stream a scanner
//! launches on, so that scans on two streams never share tile state.
//!
//! Every scratch buffer's device address is taken once, when it is
//! allocated; launches pass that address and are ordered by their stream
//! alone. Scratch therefore never waits on, or records, cudarc events: a
//! scan can be captured in a CUDA graph (an event recorded outside a capture
//! cannot be waited on inside it), provided the workspace was reserved
//! before the capture began.

use crate::error::{Result, ScanError};
use cudarc::driver::sys::CUstreamCaptureStatus;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
use kernels_gen::launch_state::LaunchState;
use std::sync::Arc;

/// The `CUstream` handle of the per-thread default stream
/// (`CudaContext::per_thread_stream`): one handle that names another
/// stream on every thread.
const PER_THREAD_STREAM: usize = 0x2;

/// The key of a stream's workspace: its `CUstream` handle, and for the
/// per-thread default stream the thread too, so that a scanner moved
/// between threads never gives two streams that may run at once one
/// workspace (their scans would share tile state).
pub(crate) fn stream_key(stream: &CudaStream) -> usize {
    key_of_handle(stream.cu_stream() as usize)
}

fn key_of_handle(handle: usize) -> usize {
    match handle {
        PER_THREAD_STREAM => per_thread_key(),
        _ => handle,
    }
}

/// This thread's key for its per-thread default stream: `2 | (k << 3)` for
/// a number `k` of its own, which no stream handle (an 8-byte aligned
/// pointer, or 0 or 1 for the legacy default stream) equals.
fn per_thread_key() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local! {
        static KEY: usize = PER_THREAD_STREAM | (NEXT.fetch_add(1, Ordering::Relaxed) << 3);
    }
    KEY.with(|k| *k)
}

/// A zeroed device allocation and its address.
pub(crate) struct Scratch<T> {
    _slice: CudaSlice<T>,
    len: usize,
    /// The device address, taken at allocation.
    pub(crate) ptr: u64,
}

impl<T: DeviceRepr + ValidAsZeroBits> Scratch<T> {
    pub(crate) fn zeroed(stream: &Arc<CudaStream>, len: usize) -> Result<Self> {
        let slice = stream.alloc_zeros::<T>(len.max(1))?;
        Ok(Self::new(stream, slice))
    }
}

impl<T> Scratch<T> {
    fn new(stream: &Arc<CudaStream>, slice: CudaSlice<T>) -> Self {
        let ptr = {
            let (ptr, _record) = slice.device_ptr(stream);
            ptr
        };
        let len = slice.len();
        Scratch {
            _slice: slice,
            len,
            ptr,
        }
    }
}

/// The single-pass scans' scratch for up to `tiles` tiles: a status entry
/// of [`kernels_gen::tile_status_stride`] bytes a tile
/// ([`kernels_gen::tile_status_bytes`] used: the status word with the
/// value; where each chunk lies: [`kernels_gen::status_chunk_offset`]),
/// `tiles` a whole number of groups ([`kernels_gen::status_capacity`]), column aggregates and inclusive prefixes (32 per tile once a
/// column scan ran: [`Workspace::reserve_columns`]; one slot otherwise), and
/// the launch state ([`LaunchState`]) that every launch takes its tiles and
/// epoch from.
pub(crate) struct SinglePassScratch {
    tiles: usize,
    status: Scratch<u8>,
    /// Aggregate and prefix slots (of the workspace's element size).
    value_slots: usize,
    aggregates: Scratch<u8>,
    prefixes: Scratch<u8>,
    launch: Scratch<u64>,
}

/// Device addresses of the single-pass scratch, in the order every
/// single-pass kernel takes them after its data pointers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SinglePassArgs {
    pub(crate) status: u64,
    pub(crate) aggregates: u64,
    pub(crate) prefixes: u64,
    pub(crate) launch: u64,
}

/// One stream's scratch, for elements of one size (the operator's; the
/// buffers are bytes, so that an operator built at run time, whose element
/// is no Rust type, has the same scratch).
pub(crate) struct Workspace {
    /// Bytes of an element.
    element_size: usize,
    /// Reduce-then-scan: one element per tile (tile totals, then prefixes).
    tile_totals: Option<Scratch<u8>>,
    /// Segmented reduce-then-scan: one byte per tile ("a segment starts here").
    tile_flags: Option<Scratch<u8>>,
    single_pass: Option<SinglePassScratch>,
    /// Two-dimensional scans in tiles: their totals and carries.
    area: Option<Scratch<u8>>,
    /// Per-segment totals over head flags or keys: the chunks' ranks and
    /// the segments' starts.
    starts: Option<Scratch<u64>>,
}

/// Where each region of `sizes` bytes starts in one scratch buffer, every
/// one at a multiple of 256 bytes (the allocator's alignment, so that any
/// element type's loads are aligned whatever the others' sizes), and the
/// bytes of the whole.
pub(crate) fn aligned_regions<const N: usize>(sizes: [usize; N]) -> ([u64; N], usize) {
    let mut starts = [0u64; N];
    let mut end = 0usize;
    for (start, size) in starts.iter_mut().zip(sizes) {
        *start = end as u64;
        end += size.div_ceil(256) * 256;
    }
    (starts, end)
}

/// One stream's scratch buffer of an application (sorts by a key,
/// segmented sorts, recurrences, sparse products): regions cut by
/// [`aligned_regions`], growing, never shrinking.
#[derive(Default)]
pub(crate) struct RegionScratch {
    buffer: Option<(Scratch<u8>, usize)>,
}

impl RegionScratch {
    /// The addresses of regions of `sizes` bytes, growing the buffer
    /// outside a capture (during one, [`ScanError::WorkspaceDuringCapture`]
    /// naming `reserve`, the call that reserves it ahead). Regions of no
    /// bytes at all need no buffer: their addresses are 0.
    pub(crate) fn regions<const N: usize>(
        &mut self,
        stream: &Arc<CudaStream>,
        sizes: [usize; N],
        reserve: &'static str,
    ) -> Result<[u64; N]> {
        let (starts, bytes) = aligned_regions(sizes);
        if bytes == 0 {
            return Ok([0; N]);
        }
        if self.buffer.as_ref().is_none_or(|b| b.1 < bytes) {
            refuse_during_capture(stream, bytes).map_err(|e| e.reserved_by(reserve))?;
            self.buffer = Some((Scratch::zeroed(stream, bytes)?, bytes));
        }
        let base = self.buffer.as_ref().map_or(0, |b| b.0.ptr);
        Ok(starts.map(|start| base + start))
    }
}

/// Fails when `stream` is being captured into a graph: an allocation there
/// would belong to the graph. Called only before allocating.
pub(crate) fn refuse_during_capture(stream: &CudaStream, bytes: usize) -> Result<()> {
    match stream.capture_status()? {
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(()),
        _ => Err(ScanError::WorkspaceDuringCapture {
            bytes,
            reserve: "GpuScanner::reserve",
        }),
    }
}

impl Workspace {
    /// An empty workspace for elements of `element_size` bytes.
    pub(crate) fn new(element_size: usize) -> Self {
        Workspace {
            element_size,
            tile_totals: None,
            tile_flags: None,
            single_pass: None,
            area: None,
            starts: None,
        }
    }

    /// Makes the reduce-then-scan scratch cover `tiles` tiles (`with_flags`:
    /// the segmented tile flags too). Returns how many buffers it allocated.
    pub(crate) fn reserve_tile_totals(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
        with_flags: bool,
    ) -> Result<usize> {
        let mut allocated = 0;
        if tiles <= 1 {
            return Ok(0);
        }
        let bytes = tiles * self.element_size;
        if self.tile_totals.as_ref().is_none_or(|w| w.len < bytes) {
            refuse_during_capture(stream, bytes)?;
            self.tile_totals = Some(Scratch::zeroed(stream, bytes)?);
            allocated += 1;
        }
        if with_flags && self.tile_flags.as_ref().is_none_or(|f| f.len < tiles) {
            refuse_during_capture(stream, tiles)?;
            self.tile_flags = Some(Scratch::zeroed(stream, tiles)?);
            allocated += 1;
        }
        Ok(allocated)
    }

    /// Makes the single-pass scratch cover `tiles` tiles. Returns how many
    /// workspaces it allocated (0 or 1).
    pub(crate) fn reserve_single_pass(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
    ) -> Result<usize> {
        self.reserve_status(stream, tiles, 1)
    }

    /// Makes the single-pass scratch cover a column scan of `tiles` tiles:
    /// a status entry per tile, and [`kernels_gen::COLUMNS_PER_TILE`]
    /// aggregates and prefixes per tile whatever the element's size.
    /// Returns how many workspaces it allocated (0 or 1).
    pub(crate) fn reserve_columns(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
    ) -> Result<usize> {
        self.reserve_status(stream, tiles, tiles * kernels_gen::COLUMNS_PER_TILE)
    }

    /// Makes the single-pass scratch hold `tiles` status entries and
    /// `value_slots` aggregates and prefixes, keeping what it held before
    /// when it grows (a column scan and a plain one on one stream then
    /// alternate without reallocating).
    fn reserve_status(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
        value_slots: usize,
    ) -> Result<usize> {
        let stride = kernels_gen::tile_status_stride(self.element_size);
        self.reserve_status_strided(stream, tiles, value_slots, stride)
    }

    /// Makes the single-pass scratch hold `tiles` status entries of
    /// `stride` bytes (a kernel whose tiles publish something else than
    /// the element: the compaction kernels' counts and pairs; a workspace takes one
    /// stride all its life) and `value_slots` aggregates and prefixes.
    /// Returns how many workspaces it allocated (0 or 1).
    pub(crate) fn reserve_status_strided(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
        value_slots: usize,
        stride: usize,
    ) -> Result<usize> {
        // Whole groups of entries (kernels_gen::status_chunk_offset).
        let tiles = kernels_gen::status_capacity(tiles);
        let (tiles, value_slots) = match &self.single_pass {
            Some(s) if s.tiles >= tiles && s.value_slots >= value_slots => return Ok(0),
            Some(s) => (tiles.max(s.tiles), value_slots.max(s.value_slots)),
            None => (tiles, value_slots),
        };
        let value_bytes = value_slots * self.element_size;
        let bytes = tiles * stride + 2 * value_bytes + std::mem::size_of::<LaunchState>();
        refuse_during_capture(stream, bytes)?;
        let launch = stream.clone_htod(&LaunchState::fresh(tiles as u64).to_words())?;
        // Fresh, zeroed status words belong to no epoch.
        self.single_pass = Some(SinglePassScratch {
            tiles,
            status: Scratch::zeroed(stream, tiles * stride)?,
            value_slots,
            aggregates: Scratch::zeroed(stream, value_bytes)?,
            prefixes: Scratch::zeroed(stream, value_bytes)?,
            launch: Scratch::new(stream, launch),
        });
        Ok(1)
    }

    /// The single-pass scratch's addresses (reserved before).
    pub(crate) fn single_pass_args(&self) -> SinglePassArgs {
        let s = self
            .single_pass
            .as_ref()
            .expect("reserved before the launch");
        SinglePassArgs {
            status: s.status.ptr,
            aggregates: s.aggregates.ptr,
            prefixes: s.prefixes.ptr,
            launch: s.launch.ptr,
        }
    }

    /// Reads the launch state back (synchronising `stream`); `None` before
    /// the first single pass on this stream.
    pub(crate) fn read_launch_state(&self, stream: &CudaStream) -> Result<Option<LaunchState>> {
        let Some(s) = self.single_pass.as_ref() else {
            return Ok(None);
        };
        let mut words = [0u64; 2];
        // SAFETY: the launch state is 2 words at this address, written only by
        // launches on `stream`, after which this copy is ordered; synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut words, s.launch.ptr, stream.cu_stream())
        }?;
        stream.synchronize()?;
        Ok(Some(LaunchState::from_words(words)))
    }

    /// Overwrites the launch state's epoch (synchronising `stream`).
    pub(crate) fn write_launch_epoch(&self, stream: &CudaStream, epoch: u32) -> Result<()> {
        let s = self.single_pass.as_ref().expect("reserved before");
        let word = [(epoch as u64) << 32];
        // SAFETY: word 0 of the launch state (counter, epoch: 0 between launches)
        // is at this address; ordered on `stream` after every earlier launch;
        // synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(s.launch.ptr, &word, stream.cu_stream())
        }?;
        stream.synchronize()?;
        Ok(())
    }

    /// Makes the scratch of two-dimensional scans in tiles hold `len`
    /// elements. Returns how many buffers it allocated (0 or 1).
    pub(crate) fn reserve_area(&mut self, stream: &Arc<CudaStream>, len: usize) -> Result<usize> {
        let bytes = len * self.element_size;
        if self.area.as_ref().is_some_and(|a| a.len >= bytes) {
            return Ok(0);
        }
        refuse_during_capture(stream, bytes)?;
        self.area = Some(Scratch::zeroed(stream, bytes)?);
        Ok(1)
    }

    /// Makes the segment starts' scratch hold `words` words. Returns how
    /// many buffers it allocated (0 or 1).
    pub(crate) fn reserve_starts(
        &mut self,
        stream: &Arc<CudaStream>,
        words: usize,
    ) -> Result<usize> {
        if self.starts.as_ref().is_some_and(|s| s.len >= words) {
            return Ok(0);
        }
        refuse_during_capture(stream, words * 8)?;
        self.starts = Some(Scratch::zeroed(stream, words)?);
        Ok(1)
    }

    /// The address of the segment starts' scratch (reserved before).
    pub(crate) fn starts(&self) -> u64 {
        self.starts.as_ref().expect("reserved before").ptr
    }

    /// The address of the two-dimensional scans' scratch (reserved before).
    pub(crate) fn area(&self) -> u64 {
        self.area.as_ref().expect("reserved before").ptr
    }

    /// The tile totals' address (reserved before).
    pub(crate) fn tile_totals(&self) -> u64 {
        self.tile_totals.as_ref().expect("reserved before").ptr
    }

    /// The tile flags' address (reserved before).
    pub(crate) fn tile_flags(&self) -> u64 {
        self.tile_flags.as_ref().expect("reserved before").ptr
    }
}

/// Bytes of single-pass scratch for `tiles` tiles of elements of
/// `element_size` bytes (status entries, one aggregate and one prefix slot,
/// the launch state).
pub(crate) fn single_pass_bytes(element_size: usize, tiles: usize) -> usize {
    tiles * kernels_gen::tile_status_stride(element_size)
        + 2 * element_size
        + std::mem::size_of::<LaunchState>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_thread_stream_has_a_workspace_on_every_thread() {
        let here = key_of_handle(PER_THREAD_STREAM);
        assert_eq!(
            here,
            key_of_handle(PER_THREAD_STREAM),
            "the same on one thread"
        );
        let there = std::thread::spawn(|| key_of_handle(PER_THREAD_STREAM))
            .join()
            .unwrap();
        assert_ne!(here, there);
        for key in [here, there] {
            assert_eq!(key & 7, PER_THREAD_STREAM, "no aligned handle equals it");
        }
        // Other handles are their own keys: the legacy stream (0, 1), and
        // streams of their own.
        for handle in [0, 1, 0x7f00_1234_5670] {
            assert_eq!(key_of_handle(handle), handle);
        }
    }

    #[test]
    fn scratch_regions_start_aligned_whatever_the_sizes_before_them() {
        // One-byte keys of an odd count before four-byte values: the
        // values' region must still start aligned.
        let (starts, bytes) = aligned_regions([8 * 5, 8 * 5, 5, 4 * 5]);
        assert_eq!(starts, [0, 256, 512, 768]);
        assert_eq!(bytes, 1024);
        let (starts, bytes) = aligned_regions([0, 256, 257]);
        assert_eq!(starts, [0, 0, 256]);
        assert_eq!(bytes, 768);
    }
}
