//! Sparse matrix–vector products `y = A · x` of CSR matrices for the
//! package: the library's `csr_matvec` on the CPU over host bytes, and
//! `GpuSpmv` (a segmented scan over the entries, load-balanced by tiles of
//! entries, not rows) on the GPU over another library's device arrays.

use crate::gpu::{self, Borrowed};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::real::Real;
use scan_core::segmented::SegmentOffset;
use scan_core::spmv::{csr_matvec, Csr};
use scan_runtime::cudarc::driver::{CudaStream, DeviceRepr};
use scan_runtime::{DeviceOffset, DeviceReal, GpuSpmv, ScanError};
use std::sync::{Arc, OnceLock};

fn product<T: Real, O: SegmentOffset + Copy>(
    cols: usize,
    row_ptr: &[u8],
    col_idx: &[u8],
    vals: &[u8],
    x: &[u8],
) -> PyResult<Vec<u8>> {
    let (row_ptr, col_idx) = (
        crate::numbers_of::<O>(row_ptr)?,
        crate::numbers_of::<u32>(col_idx)?,
    );
    let (vals, x) = (crate::numbers_of::<T>(vals)?, crate::numbers_of::<T>(x)?);
    let m = Csr {
        cols,
        row_ptr: &row_ptr,
        col_idx: &col_idx,
        values: &vals,
    };
    let mut y = vec![T::ZERO; m.rows()];
    csr_matvec(&m, &x, &mut y).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(crate::bytes_of(&y))
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
    static PRODUCTS: OnceLock<gpu::PerDevice<GpuSpmv>> = OnceLock::new();
    let registry = PRODUCTS.get_or_init(Default::default);
    let run = |stream: &Arc<CudaStream>, spmv: &mut GpuSpmv| -> PyResult<Result<(), ScanError>> {
        Ok(match (real, width) {
            ("f32", 4) => on_device::<f32, u32>(spmv, stream, cols, &arrays),
            ("f32", 8) => on_device::<f32, u64>(spmv, stream, cols, &arrays),
            ("f64", 4) => on_device::<f64, u32>(spmv, stream, cols, &arrays),
            ("f64", 8) => on_device::<f64, u64>(spmv, stream, cols, &arrays),
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "values of {real} and row pointers of {width} bytes: f32 or f64, and 4 or 8"
                )))
            }
        })
    };
    gpu::on_device(py, device, stream, registry, GpuSpmv::new, run)
}
