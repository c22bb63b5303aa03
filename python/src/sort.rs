//! Sorting for the package: the library's radix sort of primitive keys,
//! on the CPU (`scan_core::sort`) for host bytes and on the GPU
//! (`GpuSort`) for another library's device arrays; keys alone, or the
//! permutation that sorts them (an argsort, stable).

use crate::gpu::{self, Borrowed};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::sort::{SortOrder, SortSpec};
use scan_runtime::{GpuSort, ScanError};
use std::sync::OnceLock;

fn spec(descending: bool) -> SortSpec {
    let mut spec = SortSpec::ascending();
    if descending {
        spec.order = SortOrder::Descending;
    }
    spec
}

/// Calls `$body` with `$k` the key type of `$typestr` (an array-interface
/// type string), or returns a `TypeError`.
macro_rules! with_key {
    ($typestr:expr, $k:ident => $body:expr) => {
        match $typestr {
            "|u1" => {
                type $k = u8;
                $body
            }
            "<u2" => {
                type $k = u16;
                $body
            }
            "<u4" => {
                type $k = u32;
                $body
            }
            "<u8" => {
                type $k = u64;
                $body
            }
            "|i1" => {
                type $k = i8;
                $body
            }
            "<i2" => {
                type $k = i16;
                $body
            }
            "<i4" => {
                type $k = i32;
                $body
            }
            "<i8" => {
                type $k = i64;
                $body
            }
            "<f4" => {
                type $k = f32;
                $body
            }
            "<f8" => {
                type $k = f64;
                $body
            }
            other => Err(PyTypeError::new_err(format!(
                "keys of {other}: integers of 8 to 64 bits, f32 or f64"
            ))),
        }
    };
}

/// Sorts the keys in `data` (bytes of `typestr` keys) on the CPU, or with
/// `indices` returns the permutation that sorts them (`u64`s).
#[pyfunction]
#[pyo3(signature = (data, typestr, descending=false, indices=false, offsets=None))]
pub fn sort_bytes<'py>(
    py: Python<'py>,
    data: &[u8],
    typestr: &str,
    descending: bool,
    indices: bool,
    offsets: Option<Vec<u64>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let fail = |e: scan_core::sort::SortError| PyValueError::new_err(e.to_string());
    let out: Vec<u8> = with_key!(typestr, K => {
        let mut keys = crate::numbers_of::<K>(data)?;
        py.detach(|| {
            if let Some(offsets) = &offsets {
                // Each segment on its own (keys outside every segment stay).
                let mut order: Vec<u64> = (0..keys.len() as u64).collect();
                scan_core::sort::segmented_sort_pairs(&mut keys, &mut order, offsets, spec(descending))
                    .map_err(fail)?;
                return Ok(if indices { crate::bytes_of(&order) } else { crate::bytes_of(&keys) });
            }
            if indices {
                let order = scan_core::sort::argsort(&keys, spec(descending)).map_err(fail)?;
                let order: Vec<u64> = order.into_iter().map(|i| i as u64).collect();
                Ok(crate::bytes_of(&order))
            } else {
                scan_core::sort::sort_keys(&mut keys, spec(descending)).map_err(fail)?;
                Ok(crate::bytes_of(&keys))
            }
        })
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Sorts the `n` keys of `typestr` at device address `keys` in place on
/// `device`, enqueued on the `CUstream` handle `stream`; with `indices`
/// (the address of `n` `u64`s) writes there the permutation that sorts
/// them instead and leaves the keys alone. The arrays are the caller's,
/// valid on that stream.
///
/// With `offsets` (`(address, count, width)`: `count` offsets of 4 or 8
/// bytes on the device), each segment is sorted on its own, and `indices`
/// (then holding `0..n` on entry) move with the keys, which are sorted in
/// place (pass a copy to keep them).
#[pyfunction]
#[pyo3(signature = (device, stream, keys, n, typestr, descending=false, indices=None, offsets=None))]
#[allow(clippy::too_many_arguments)]
pub fn gpu_sort(
    py: Python<'_>,
    device: usize,
    stream: usize,
    keys: u64,
    n: usize,
    typestr: &str,
    descending: bool,
    indices: Option<u64>,
    offsets: Option<(u64, usize, usize)>,
) -> PyResult<()> {
    let run = |stream: &std::sync::Arc<scan_runtime::cudarc::driver::CudaStream>,
               sorter: &mut GpuSort|
     -> PyResult<Result<(), ScanError>> {
        with_key!(typestr, K => {
            // SAFETY: the caller's keys (and indices), `n` of them on this
            // device, valid on `stream` for the sort.
            let mut keys = unsafe { Borrowed::<K>::new(stream, keys, n) };
            if let Some((address, count, width)) = offsets {
                return Ok(segmented(stream, sorter, keys.slice(), indices, n, address, count, width, descending));
            }
            Ok(match indices {
                Some(address) => {
                    let mut order = unsafe { Borrowed::<u64>::new(stream, address, n) };
                    sorter.argsort(stream, keys.slice(), order.slice(), &spec(descending))
                }
                None => sorter.sort_keys(stream, keys.slice(), &spec(descending)),
            })
        })
    };
    with_sorter(py, device, stream, run)
}

/// A sort key of records written in Python, from its IR text
/// (`kernels_gen::ir_text::print_sort_key`): on the CPU each record's key
/// computed by its checked functions and the records ordered by
/// `scan_core::sort::argsort_by_components`; on the GPU `GpuSort`'s by-key
/// sort of its twin's CUDA.
#[pyclass(frozen, module = "gpu_scan._native")]
pub struct SortKeyFn {
    key: scan_runtime::DynSortKey,
    text: String,
}

#[pymethods]
impl SortKeyFn {
    /// Reads and checks `text` (and `structs`, the record's declarations);
    /// a `ValueError` carries the message and the line of the statement it
    /// was found in (or `None`).
    #[new]
    #[pyo3(signature = (text, structs=Vec::new()))]
    fn new(py: Python<'_>, text: &str, structs: Vec<String>) -> PyResult<Self> {
        use kernels_gen::eval::StageValues;
        use kernels_gen::ir::ElementType;
        let fail = |message: String, line: Option<u32>| crate::refusal(py, message, line);
        let (desc, lines) = kernels_gen::ir_text::parse_sort_key_with_lines(text)
            .map_err(|e| fail(e.to_string(), None))?;
        if let ElementType::Prim(_) = desc.record {
            for (c, lines) in lines.iter().enumerate() {
                let stage = desc.component_stage(c);
                if let Err(e) = StageValues::new(&stage) {
                    let line = e.statement.and_then(|k| lines.get(k).copied().flatten());
                    return Err(fail(format!("component {c}: {e}"), line));
                }
            }
        }
        let structs: Vec<&str> = structs.iter().map(String::as_str).collect();
        let key = scan_runtime::DynSortKey::from_text(text, &structs)
            .map_err(|e| fail(e.to_string(), None))?;
        Ok(SortKeyFn {
            key,
            text: text.to_string(),
        })
    }

    /// The key's IR text.
    #[getter]
    fn ir(&self) -> &str {
        &self.text
    }

    /// The record's size in bytes.
    #[getter]
    fn element_size(&self) -> usize {
        self.key.record_size()
    }

    /// The key's CUDA policy, as `#[sort_key]` writes its Rust twin's.
    fn cuda_source(&self) -> &'static str {
        self.key.cuda_source()
    }

    /// The key of the record in `record` (its bytes): each component's
    /// value, most significant first.
    fn key_of<'py>(
        &self,
        py: Python<'py>,
        record: &[u8],
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        if record.len() != self.key.record_size() {
            return Err(PyValueError::new_err(format!(
                "{} bytes for a record of {}",
                record.len(),
                self.key.record_size()
            )));
        }
        let values = self.key.key_of(record);
        let items = values
            .into_iter()
            .map(|v| crate::to_python(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        pyo3::types::PyTuple::new(py, items)
    }

    /// The stable permutation (`u64`s) that sorts the records in `data`
    /// (their bytes) by this key, descending or not.
    fn argsort_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        descending: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let size = self.key.record_size();
        if data.len() % size != 0 {
            return Err(PyValueError::new_err(format!(
                "{} bytes are not whole records of {size}",
                data.len()
            )));
        }
        let key = &self.key;
        let order = py.detach(|| {
            let bits: Vec<Vec<u64>> = data
                .chunks_exact(size)
                .map(|r| key.ordered_bits(r))
                .collect();
            scan_core::sort::argsort_by_components(
                key.widths(),
                bits.len(),
                |k, i| bits[k][i],
                &spec(descending),
            )
        });
        let order: Vec<u64> = order
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_iter()
            .map(|i| i as u64)
            .collect();
        Ok(PyBytes::new(py, &crate::bytes_of(&order)))
    }

    /// Sorts the `n` records at device address `records` in place on
    /// `device`, enqueued on the `CUstream` handle `stream`; with
    /// `indices` (the address of `n` `u64`s) writes there the permutation
    /// instead and leaves the records alone. The arrays are the caller's,
    /// valid on that stream.
    #[pyo3(signature = (device, stream, records, n, descending=false, indices=None))]
    #[allow(clippy::too_many_arguments)]
    fn gpu_sort(
        &self,
        py: Python<'_>,
        device: usize,
        stream: usize,
        records: u64,
        n: usize,
        descending: bool,
        indices: Option<u64>,
    ) -> PyResult<()> {
        let key = &self.key;
        let bytes = n * key.record_size();
        let run = |stream: &std::sync::Arc<scan_runtime::cudarc::driver::CudaStream>,
                   sorter: &mut GpuSort|
         -> PyResult<Result<(), ScanError>> {
            // SAFETY: the caller's records (and indices), `n` of them on
            // this device, valid on `stream` for the sort.
            let mut records =
                match unsafe { scan_runtime::RawElements::new(key, records, bytes, stream) } {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                };
            Ok(match indices {
                Some(address) => {
                    let mut order = unsafe { Borrowed::<u64>::new(stream, address, n) };
                    sorter.argsort_by_key_built(
                        stream,
                        key,
                        &records,
                        order.slice(),
                        &spec(descending),
                    )
                }
                None => sorter.sort_by_key_built(stream, key, &mut records, &spec(descending)),
            })
        };
        with_sorter(py, device, stream, run)
    }
}

/// The segmented sort of [`gpu_sort`]: the keys (and the indices, where
/// given) sorted in place within each segment the `count` offsets of
/// `width` bytes at `address` cut.
#[allow(clippy::too_many_arguments)]
fn segmented<K: scan_runtime::DeviceSortKey>(
    stream: &std::sync::Arc<scan_runtime::cudarc::driver::CudaStream>,
    sorter: &mut GpuSort,
    keys: &mut scan_runtime::cudarc::driver::CudaSlice<K>,
    indices: Option<u64>,
    n: usize,
    address: u64,
    count: usize,
    width: usize,
    descending: bool,
) -> Result<(), ScanError> {
    fn with_offsets<K: scan_runtime::DeviceSortKey, O: scan_runtime::DeviceOffset>(
        stream: &std::sync::Arc<scan_runtime::cudarc::driver::CudaStream>,
        sorter: &mut GpuSort,
        keys: &mut scan_runtime::cudarc::driver::CudaSlice<K>,
        indices: Option<u64>,
        n: usize,
        address: u64,
        count: usize,
        descending: bool,
    ) -> Result<(), ScanError> {
        // SAFETY: the caller's offsets (and indices) on this device, valid
        // on `stream` for the sort.
        let offsets = unsafe { Borrowed::<O>::new(stream, address, count) };
        let checked = scan_runtime::DeviceOffsets::check(stream, offsets.get().as_view(), n)?;
        match indices {
            Some(at) => {
                let mut order = unsafe { Borrowed::<u64>::new(stream, at, n) };
                sorter.segmented_sort_pairs(
                    stream,
                    keys,
                    order.slice(),
                    &checked,
                    &spec(descending),
                )
            }
            None => sorter.segmented_sort_keys(stream, keys, &checked, &spec(descending)),
        }
    }
    match width {
        4 => with_offsets::<K, u32>(stream, sorter, keys, indices, n, address, count, descending),
        8 => with_offsets::<K, u64>(stream, sorter, keys, indices, n, address, count, descending),
        w => Err(ScanError::InvalidOperator(format!(
            "offsets of {w} bytes: 4 or 8"
        ))),
    }
}

/// Runs `run` with the device's `GpuSort` on the caller's stream.
fn with_sorter(
    py: Python<'_>,
    device: usize,
    stream: usize,
    run: impl FnOnce(
            &std::sync::Arc<scan_runtime::cudarc::driver::CudaStream>,
            &mut GpuSort,
        ) -> PyResult<Result<(), ScanError>>
        + Send,
) -> PyResult<()> {
    static SORTERS: OnceLock<gpu::PerDevice<GpuSort>> = OnceLock::new();
    let registry = SORTERS.get_or_init(Default::default);
    gpu::on_device(py, device, stream, registry, GpuSort::new, run)
}
