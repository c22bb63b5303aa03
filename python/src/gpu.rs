//! The package's GPU path: an operator's text built into a
//! `scan_runtime::DynOperator` (the generator `#[scan_op]` uses, the same
//! kernels and caches) and scanned by a `DynScanner` on the device buffers
//! of another library (a PyTorch tensor's, a CuPy array's: addresses from
//! their `__cuda_array_interface__`) on that library's stream.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use scan_core::{Direction, ScanKind, ScanSpec};
use scan_runtime::cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use scan_runtime::{
    DeviceOffsets, DeviceSegments, DynOperator, DynScanner, RawElements, ScanError,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The contexts of the devices used so far: CUDA's primary context of
/// each (the one PyTorch and CuPy use), cudarc's event tracking off: the
/// buffers are the caller's, ordered by the caller's streams.
pub fn context(device: usize) -> Result<Arc<CudaContext>, ScanError> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<CudaContext>>>> = OnceLock::new();
    let mut contexts = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(ctx) = contexts.get(&device) {
        ctx.bind_to_thread()?;
        return Ok(ctx.clone());
    }
    let ctx = scan_runtime::open_device(device)?;
    // SAFETY: no buffer or stream of this context has been made yet; the
    // package never shares one between streams without the caller's order.
    unsafe { ctx.disable_event_tracking() };
    contexts.insert(device, ctx.clone());
    Ok(ctx)
}

/// The package's own stream of `device` (for frameworks that expose none:
/// JAX), made on first use and kept for the process.
pub fn own_stream(device: usize) -> Result<Arc<CudaStream>, ScanError> {
    static STREAMS: OnceLock<Mutex<HashMap<usize, Arc<CudaStream>>>> = OnceLock::new();
    let ctx = context(device)?;
    let mut streams = STREAMS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(s) = streams.get(&device) {
        return Ok(s.clone());
    }
    let stream = ctx.new_stream()?;
    streams.insert(device, stream.clone());
    Ok(stream)
}

/// Why scans cannot run on device 0 here, or `None` where they can.
pub fn unavailable_reason() -> Option<String> {
    context(0).err().map(|e| e.to_string())
}

/// A device buffer of another library, seen as a cudarc buffer for the
/// length of a call and never freed by it.
pub struct Borrowed<T>(Option<CudaSlice<T>>);

impl<T> Borrowed<T> {
    /// # Safety
    /// `address` holds `len` elements of `T` in `stream`'s context, valid
    /// while the work enqueued with it runs.
    pub unsafe fn new(stream: &Arc<CudaStream>, address: u64, len: usize) -> Self {
        // SAFETY: the caller's contract; leaked on drop, never freed.
        Borrowed(Some(unsafe { stream.upgrade_device_ptr(address, len) }))
    }

    pub fn slice(&mut self) -> &mut CudaSlice<T> {
        self.0.as_mut().expect("held until dropped")
    }

    pub fn get(&self) -> &CudaSlice<T> {
        self.0.as_ref().expect("held until dropped")
    }
}

impl<T> Drop for Borrowed<T> {
    fn drop(&mut self) {
        if let Some(slice) = self.0.take() {
            slice.leak(); // the owner frees it
        }
    }
}

/// Where a scan's segments come from, as device addresses.
#[derive(Clone, Copy)]
pub enum Shape {
    /// No segments.
    Flat,
    /// Rows of this many elements.
    Rows(usize),
    /// A row-major matrix of rows this long, scanned down its columns.
    Columns(usize),
    /// Byte flags at this address.
    Heads(u64),
    /// A row-major matrix of rows this long, scanned in two dimensions.
    SummedArea(usize),
    /// Offsets: address, count, width in bytes (4 or 8).
    Offsets(u64, usize, usize),
    /// Keys: address, width in bytes (1, 2, 4, 8), compared bit for bit.
    Keys(u64, usize),
}

/// Where a scan's totals go.
#[derive(Clone, Copy)]
pub enum Totals {
    /// Nowhere.
    None,
    /// One slot of elements of this many at this address (a carry-out
    /// where there are no segments or the flags' or keys' last).
    Slots(u64, usize),
    /// As many slots as segments may be, and the count's `u64` slot
    /// (flags and keys on the device: counted there).
    Counted(u64, usize, u64),
}

/// One scan on the GPU of the `n` elements at `input` into `output` (the
/// same address in place), on the caller's `stream` (a `CUstream`
/// handle) of `device`.
pub struct Request {
    pub device: usize,
    pub stream: usize,
    pub input: u64,
    pub output: u64,
    pub n: usize,
    pub inclusive: bool,
    pub reverse: bool,
    pub init: Option<Vec<u8>>,
    pub shape: Shape,
    pub totals: Totals,
}

/// A built operator's scanners, one a device, made on first use.
#[derive(Default)]
pub struct Scanners {
    built: OnceLock<Result<DynOperator, String>>,
    by_device: Mutex<HashMap<usize, DynScanner>>,
}

impl Scanners {
    /// Runs `r` for the operator of `text` and `structs`.
    pub fn scan(
        &self,
        text: &str,
        structs: &[String],
        commutative: bool,
        r: Request,
    ) -> PyResult<()> {
        let op = self.operator(text, structs, commutative)?;
        let ctx = context(r.device).map_err(runtime_error)?;
        let mut scanners = self.by_device.lock().unwrap_or_else(|p| p.into_inner());
        let scanner = match scanners.entry(r.device) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(DynScanner::new(&ctx, op).map_err(runtime_error)?)
            }
        };
        run(scanner, op, &ctx, r).map_err(python_error)
    }
}

impl Scanners {
    /// The operator of `text` and `structs`, built on first use.
    pub fn operator(
        &self,
        text: &str,
        structs: &[String],
        commutative: bool,
    ) -> PyResult<&DynOperator> {
        self.built
            .get_or_init(|| {
                let structs: Vec<&str> = structs.iter().map(String::as_str).collect();
                DynOperator::from_text(text, &structs)
                    .map(|op| op.commutative(commutative))
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| PyValueError::new_err(e.clone()))
    }

    /// Waits for the background compiles of this operator's kernels on
    /// every device it has scanned on (`GpuScanner::wait_for_background_compiles`).
    pub fn wait_for_background_compiles(&self) {
        let scanners = self.by_device.lock().unwrap_or_else(|p| p.into_inner());
        for scanner in scanners.values() {
            scanner.wait_for_background_compiles();
        }
    }
}

/// One object of the library's a device (a `GpuSelect`, a `GpuSort`, …),
/// made on first use and kept for the process.
pub type PerDevice<S> = Mutex<HashMap<usize, S>>;

/// Runs `run` with `registry`'s object of `device` (made by `make` on
/// first use) on the caller's stream (a `CUstream` handle of that
/// device), without the GIL; the library's errors become Python's: a
/// driver's or a compile's a `RuntimeError`, the rest (the caller's
/// arguments) a `ValueError`.
pub fn on_device<S: Send>(
    py: Python<'_>,
    device: usize,
    stream: usize,
    registry: &PerDevice<S>,
    make: impl FnOnce(&Arc<CudaContext>) -> Result<S, ScanError> + Send,
    run: impl FnOnce(&Arc<CudaStream>, &mut S) -> PyResult<Result<(), ScanError>> + Send,
) -> PyResult<()> {
    py.detach(|| {
        let ctx = context(device).map_err(runtime_error)?;
        // SAFETY: the caller's stream of this device, alive for the call.
        let stream = unsafe { ctx.wrap_borrowed_stream(stream as _) };
        let mut all = registry.lock().unwrap_or_else(|p| p.into_inner());
        let object = match all.entry(device) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(make(&ctx).map_err(runtime_error)?)
            }
        };
        run(&stream, object)?.map_err(python_error)
    })
}

/// A library error as Python's: a driver's or a compile's a
/// `RuntimeError`, the rest a `ValueError`.
pub fn python_error(e: ScanError) -> PyErr {
    match e {
        ScanError::Driver(_) | ScanError::Compile { .. } => runtime_error(e),
        e => PyValueError::new_err(e.to_string()),
    }
}

fn runtime_error(e: ScanError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn run(
    scanner: &mut DynScanner,
    op: &DynOperator,
    ctx: &Arc<CudaContext>,
    r: Request,
) -> Result<(), ScanError> {
    // SAFETY: the caller's stream of this device's primary context, alive
    // for the call (the package passes the framework's current stream).
    let stream = unsafe { ctx.wrap_borrowed_stream(r.stream as _) };
    let size = op.element_size();
    let init = r.init.as_deref().map(|b| op.element(b)).transpose()?;
    let kind = match (r.inclusive, init) {
        (true, None) => ScanKind::Inclusive,
        (false, None) => ScanKind::Exclusive,
        (true, Some(v)) => ScanKind::InclusiveWithInit(v),
        (false, Some(v)) => ScanKind::ExclusiveWithInit(v),
    };
    let direction = if r.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let spec = ScanSpec::from(kind).with_direction(direction);
    // SAFETY (the raw buffers below): the package passes the addresses and
    // lengths of arrays its caller holds on this device for the call.
    let input = unsafe { RawElements::new(op, r.input, r.n * size, &stream) }?;
    let mut output = unsafe { RawElements::new(op, r.output, r.n * size, &stream) }?;
    let in_place = r.input == r.output;
    let mut slot = match r.totals {
        Totals::None => None,
        Totals::Slots(address, len) | Totals::Counted(address, len, _) => {
            Some(unsafe { RawElements::new(op, address, len * size, &stream) }?)
        }
    };
    let mut count = match r.totals {
        Totals::Counted(_, _, address) => {
            Some(unsafe { Borrowed::<u64>::new(&stream, address, 1) })
        }
        _ => None,
    };
    // Segment buffers borrowed for the call.
    let mut heads = None;
    let mut offsets32 = None;
    let mut offsets64 = None;
    let mut keys = KeyBuffers::default();
    let segments: Option<DeviceSegments<'_>> = match r.shape {
        Shape::Flat | Shape::Columns(_) | Shape::SummedArea(_) => None,
        Shape::Rows(row_length) => Some(DeviceSegments::rows(row_length)),
        Shape::Heads(address) => {
            let h = heads.insert(unsafe { Borrowed::<u8>::new(&stream, address, r.n) });
            Some(DeviceSegments::from(&*h.slice()))
        }
        Shape::Offsets(address, len, 4) => {
            let o = offsets32.insert(unsafe { Borrowed::<u32>::new(&stream, address, len) });
            let checked = DeviceOffsets::check(&stream, o.slice().as_view(), r.n)?;
            Some(DeviceSegments::from(checked))
        }
        Shape::Offsets(address, len, 8) => {
            let o = offsets64.insert(unsafe { Borrowed::<u64>::new(&stream, address, len) });
            let checked = DeviceOffsets::check(&stream, o.slice().as_view(), r.n)?;
            Some(DeviceSegments::from(checked))
        }
        Shape::Offsets(_, _, width) => {
            return Err(ScanError::InvalidOperator(format!(
                "offsets of {width} bytes: 4 or 8"
            )))
        }
        Shape::Keys(address, width) => Some(keys.segments(&stream, address, r.n, width)?),
    };
    macro_rules! go {
        ($spec:expr) => {
            if in_place {
                scanner.scan_in_place(&stream, $spec, &mut output)
            } else {
                scanner.scan(&stream, $spec, &input, &mut output)
            }
        };
    }
    match (r.shape, segments, slot.as_mut(), count.as_mut()) {
        (Shape::Columns(row_length), _, None, _) => go!(spec.columns(row_length)),
        (Shape::SummedArea(row_length), _, None, _) => go!(spec.summed_area(row_length)),
        (Shape::Columns(_) | Shape::SummedArea(_), _, Some(_), _) => Err(ScanError::MatrixCarryOut),
        (_, None, None, _) => go!(spec),
        (_, None, Some(slot), _) => go!(spec.carry_out(slot)),
        (_, Some(s), None, _) => go!(spec.segments(s)),
        (_, Some(s), Some(slot), Some(count)) => {
            go!(spec.segments(s).counted_segment_totals(slot, count.slice()))
        }
        (Shape::Rows(_) | Shape::Offsets(..), Some(s), Some(slot), None) => {
            go!(spec.segments(s).segment_totals(slot))
        }
        (_, Some(s), Some(slot), None) => go!(spec.segments(s).carry_out(slot)),
    }
}

/// Keys of each width, borrowed for a call.
#[derive(Default)]
struct KeyBuffers {
    k8: Option<Borrowed<u8>>,
    k16: Option<Borrowed<u16>>,
    k32: Option<Borrowed<u32>>,
    k64: Option<Borrowed<u64>>,
}

impl KeyBuffers {
    fn segments<'s>(
        &'s mut self,
        stream: &Arc<CudaStream>,
        address: u64,
        n: usize,
        width: usize,
    ) -> Result<DeviceSegments<'s>, ScanError> {
        fn keys<'s, K: scan_core::segmented::SegmentKey + DeviceRepr>(
            slot: &'s mut Option<Borrowed<K>>,
            stream: &Arc<CudaStream>,
            address: u64,
            n: usize,
        ) -> DeviceSegments<'s> {
            // SAFETY: the caller's keys, `n` of `K`'s width, for the call.
            let b = slot.insert(unsafe { Borrowed::new(stream, address, n) });
            DeviceSegments::keys(&*b.slice())
        }
        Ok(match width {
            1 => keys(&mut self.k8, stream, address, n),
            2 => keys(&mut self.k16, stream, address, n),
            4 => keys(&mut self.k32, stream, address, n),
            8 => keys(&mut self.k64, stream, address, n),
            w => {
                return Err(ScanError::InvalidOperator(format!(
                    "keys of {w} bytes: 1, 2, 4 or 8"
                )))
            }
        })
    }
}
