//! Sparse matrix–vector products `y = A · x` of CSR matrices for the
//! package: the library's `csr_matvec` on the CPU over host bytes, and
//! `GpuSpmv` (a segmented scan over the entries, load-balanced by tiles of
//! entries, not rows) on the GPU over another library's device arrays.

use crate::gpu::{self, Borrowed};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::real::Real;
use scan_core::segmented::SegmentOffset;
use scan_core::spmv::{csr_matvec, Csr};
use scan_runtime::cudarc::driver::{CudaStream, DeviceRepr};
use scan_runtime::{DeviceOffset, DeviceReal, GpuSpmv, ScanError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Values of `T` from little-endian bytes.
fn values<T: Copy>(bytes: &[u8]) -> PyResult<Vec<T>> {
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 {
        return Err(PyValueError::new_err(format!(
            "{} bytes are not whole values of {size}",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(size)
        // SAFETY: `size` bytes of a plain number type.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect())
}

fn bytes_of<T: Copy>(xs: &[T]) -> Vec<u8> {
    // SAFETY: plain numbers, without padding.
    unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<u8>(), std::mem::size_of_val(xs)) }
        .to_vec()
}

fn product<T: Real, O: SegmentOffset + Copy>(
    cols: usize,
    row_ptr: &[u8],
    col_idx: &[u8],
    vals: &[u8],
    x: &[u8],
) -> PyResult<Vec<u8>> {
    let (row_ptr, col_idx) = (values::<O>(row_ptr)?, values::<u32>(col_idx)?);
    let (vals, x) = (values::<T>(vals)?, values::<T>(x)?);
    let m = Csr {
        cols,
        row_ptr: &row_ptr,
        col_idx: &col_idx,
        values: &vals,
    };
    let mut y = vec![T::ZERO; m.rows()];
    csr_matvec(&m, &x, &mut y).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(bytes_of(&y))
}

/// `y = A · x` on the CPU of the CSR matrix of `cols` columns given by its
/// row pointers (`width` bytes each, 4 or 8), column indices (`u32`) and
/// values, and `x`, all host bytes of `real` (`"f32"` or `"f64"`); returns
/// `y`'s bytes.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn spmv_bytes<'py>(
    py: Python<'py>,
    real: &str,
    width: usize,
    cols: usize,
    row_ptr: &[u8],
    col_idx: &[u8],
    vals: &[u8],
    x: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let y = py.detach(|| match (real, width) {
        ("f32", 4) => product::<f32, u32>(cols, row_ptr, col_idx, vals, x),
        ("f32", 8) => product::<f32, u64>(cols, row_ptr, col_idx, vals, x),
        ("f64", 4) => product::<f64, u32>(cols, row_ptr, col_idx, vals, x),
        ("f64", 8) => product::<f64, u64>(cols, row_ptr, col_idx, vals, x),
        _ => Err(PyTypeError::new_err(format!(
            "values of {real} and row pointers of {width} bytes: f32 or f64, and 4 or 8"
        ))),
    })?;
    Ok(PyBytes::new(py, &y))
}

fn products() -> &'static Mutex<HashMap<usize, GpuSpmv>> {
    static PRODUCTS: OnceLock<Mutex<HashMap<usize, GpuSpmv>>> = OnceLock::new();
    PRODUCTS.get_or_init(Default::default)
}

/// Device addresses and lengths (in elements) of a product's arrays.
struct Arrays {
    row_ptr: (u64, usize),
    col_idx: (u64, usize),
    vals: (u64, usize),
    x: (u64, usize),
    y: (u64, usize),
}

fn on_device<T: DeviceReal + DeviceRepr, O: DeviceOffset + SegmentOffset + DeviceRepr>(
    spmv: &mut GpuSpmv,
    stream: &Arc<CudaStream>,
    cols: usize,
    a: &Arrays,
) -> Result<(), ScanError> {
    // SAFETY (each borrowed array): the caller's arrays on this device, of
    // the lengths given, valid on `stream` for the call.
    let row_ptr = unsafe { Borrowed::<O>::new(stream, a.row_ptr.0, a.row_ptr.1) };
    let col_idx = unsafe { Borrowed::<u32>::new(stream, a.col_idx.0, a.col_idx.1) };
    let vals = unsafe { Borrowed::<T>::new(stream, a.vals.0, a.vals.1) };
    let x = unsafe { Borrowed::<T>::new(stream, a.x.0, a.x.1) };
    let mut y = unsafe { Borrowed::<T>::new(stream, a.y.0, a.y.1) };
    let m = spmv.check(
        stream,
        cols,
        row_ptr.get().as_view(),
        col_idx.get().as_view(),
        vals.get().as_view(),
    )?;
    spmv.matvec(stream, &m, x.get(), y.slice())
}

/// [`spmv_bytes`] on the GPU of `device`, enqueued on the `CUstream`
/// handle `stream`, over device arrays given as `(address, elements)`;
/// `y` is written. The matrix is checked on the device first (the call
/// waits for the verdict).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn gpu_spmv(
    py: Python<'_>,
    device: usize,
    stream: usize,
    real: &str,
    width: usize,
    cols: usize,
    row_ptr: (u64, usize),
    col_idx: (u64, usize),
    vals: (u64, usize),
    x: (u64, usize),
    y: (u64, usize),
) -> PyResult<()> {
    let arrays = Arrays {
        row_ptr,
        col_idx,
        vals,
        x,
        y,
    };
    py.detach(|| {
        let ctx = gpu::context(device).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        // SAFETY: the caller's stream of this device, alive for the call.
        let stream = unsafe { ctx.wrap_borrowed_stream(stream as _) };
        let mut all = products().lock().unwrap_or_else(|p| p.into_inner());
        let spmv = match all.entry(device) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(GpuSpmv::new(&ctx).map_err(|e| PyRuntimeError::new_err(e.to_string()))?)
            }
        };
        let result = match (real, width) {
            ("f32", 4) => on_device::<f32, u32>(spmv, &stream, cols, &arrays),
            ("f32", 8) => on_device::<f32, u64>(spmv, &stream, cols, &arrays),
            ("f64", 4) => on_device::<f64, u32>(spmv, &stream, cols, &arrays),
            ("f64", 8) => on_device::<f64, u64>(spmv, &stream, cols, &arrays),
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "values of {real} and row pointers of {width} bytes: f32 or f64, and 4 or 8"
                )))
            }
        };
        result.map_err(|e| match e {
            ScanError::Driver(_) | ScanError::Compile { .. } => {
                PyRuntimeError::new_err(e.to_string())
            }
            e => PyValueError::new_err(e.to_string()),
        })
    })
}
