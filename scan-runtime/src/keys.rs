//! Segments given by one key per element in device memory (a scan by
//! key): the kernels compare each element's key with the one before it in
//! the tile, so no flags are built, read or written.

use crate::launch::KeysArg;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr, SyncOnDrop};
use scan_core::segmented::{KeysLengthMismatch, SegmentKey};

/// One key per element in device memory, of any [`SegmentKey`] type
/// (`u8` to `u64`, `i8` to `i64`): element `i` starts a segment where its
/// key differs, bit for bit, from element `i - 1`'s, and element 0 always
/// starts one. Segments are runs of equal consecutive keys, as in CUB's
/// `DeviceScan::InclusiveScanByKey`; keys need not be sorted, and equal
/// keys apart are different segments.
///
/// Nothing is checked or built on the device: a scan by key reads the
/// keys in each tile beside the elements (one key more per thread), so it
/// may be captured in a CUDA graph.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{open_device, DeviceKeys, GpuScanner};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// // Keys 7 7 2 2 2 7: segments [1 2] [3 4 5] [6].
/// let values = stream.clone_htod(&[1u32, 2, 3, 4, 5, 6])?;
/// let keys = stream.clone_htod(&[7i32, 7, 2, 2, 2, 7])?;
/// let mut out = stream.alloc_zeros::<u32>(6)?;
/// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
/// scanner.scan(&stream, ScanSpec::inclusive().segments(DeviceKeys::new(&keys)), &values, &mut out)?;
/// assert_eq!(stream.clone_dtoh(&out)?, [1, 3, 3, 7, 12, 6]);
/// # Ok::<(), ScanError>(())
/// ```
#[derive(Debug)]
pub struct DeviceKeys<'a> {
    bytes: CudaView<'a, u8>,
    width: usize,
}

impl<'a> DeviceKeys<'a> {
    /// The keys of a slice or view (`&CudaSlice<K>`, `CudaView<K>`).
    pub fn new<K: SegmentKey + DeviceRepr>(keys: impl Into<KeyView<'a, K>>) -> Self {
        let view = keys.into().0;
        let width = std::mem::size_of::<K>();
        // SAFETY: a SegmentKey is plain data without padding, so its bytes
        // are valid `u8`s; the new view covers exactly the keys' bytes and
        // borrows them for as long.
        let bytes =
            unsafe { view.transmute::<u8>(view.len() * width) }.expect("a view's bytes fit in it");
        DeviceKeys { bytes, width }
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() == 0
    }

    /// The size of one key in bytes: 1, 2, 4 or 8.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Refuses keys that are not one per element of `n`.
    pub(crate) fn check_len(&self, n: usize) -> Result<(), KeysLengthMismatch> {
        KeysLengthMismatch::check(self.len(), n)
    }

    /// The kernels' `scan_keys` argument, and the guard that orders the
    /// keys' use on `stream` after their writes.
    pub(crate) fn arg<'s>(&'s self, stream: &'s CudaStream) -> (KeysArg, SyncOnDrop<'s>) {
        let (address, sync) = self.bytes.device_ptr(stream);
        debug_assert_eq!(
            address % self.width as u64,
            0,
            "SegmentKey promises alignment"
        );
        let arg = KeysArg {
            address,
            width: self.width as u64,
        };
        (arg, sync)
    }
}

/// Another handle on the same keys.
impl Clone for DeviceKeys<'_> {
    fn clone(&self) -> Self {
        DeviceKeys {
            bytes: self.bytes.slice(..),
            width: self.width,
        }
    }
}

/// A view of keys, from a `&CudaSlice<K>` or a `CudaView<K>` (the argument
/// of [`DeviceKeys::new`]).
#[derive(Debug)]
pub struct KeyView<'a, K>(CudaView<'a, K>);

impl<'a, K> From<&'a CudaSlice<K>> for KeyView<'a, K> {
    fn from(keys: &'a CudaSlice<K>) -> Self {
        KeyView(keys.as_view())
    }
}

impl<'a, K> From<CudaView<'a, K>> for KeyView<'a, K> {
    fn from(keys: CudaView<'a, K>) -> Self {
        KeyView(keys)
    }
}

impl<'a, K> From<&CudaView<'a, K>> for KeyView<'a, K> {
    fn from(keys: &CudaView<'a, K>) -> Self {
        KeyView(keys.slice(..))
    }
}
