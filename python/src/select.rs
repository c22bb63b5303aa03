//! Compactions for the package: select and partition by a predicate, and
//! unique and run-length encoding by an equality, written in Python and
//! read from their text (`kernels_gen::ir_text::print_stage`) into a
//! `scan_runtime::DynStage`: on the CPU the library's functions
//! (`scan_core::select::*_with`) run its function, checked and compiled for
//! the host; on the GPU `GpuSelect` runs the kernels of its twin's CUDA on
//! another library's device arrays.

use crate::gpu::{self, Borrowed};
use kernels_gen::eval::{StageValues, Value};
use kernels_gen::ir_text;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::select::{self, Rejected};
use scan_runtime::cudarc::driver::CudaStream;
use scan_runtime::{DynStage, GpuSelect, RawElements, ScanError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A predicate or an equality from its IR text.
#[pyclass(frozen, module = "gpu_scan._native")]
pub struct Stage {
    stage: DynStage,
    text: String,
}

#[pymethods]
impl Stage {
    /// Reads and checks `text`; a `ValueError` carries the message and the
    /// line of the statement it was found in (or `None`).
    #[new]
    fn new(py: Python<'_>, text: &str) -> PyResult<Self> {
        let fail = |message: String, line: Option<u32>| {
            let line: Py<PyAny> = match line {
                Some(l) => l
                    .into_pyobject(py)
                    .map_or_else(|never| match never {}, |l| l.into_any().unbind()),
                None => py.None(),
            };
            PyValueError::new_err((message, line))
        };
        let (desc, lines) =
            ir_text::parse_stage_with_lines(text).map_err(|e| fail(e.to_string(), None))?;
        if let Err(e) = StageValues::new(&desc) {
            let line = e.statement.and_then(|k| lines.get(k).copied().flatten());
            return Err(fail(e.to_string(), line));
        }
        let stage = DynStage::from_text(text).map_err(|e| fail(e.to_string(), None))?;
        Ok(Stage {
            stage,
            text: text.to_string(),
        })
    }

    /// The stage's IR text.
    #[getter]
    fn ir(&self) -> &str {
        &self.text
    }

    /// The element type's Rust name.
    #[getter]
    fn element(&self) -> &'static str {
        self.stage.element().rust_name()
    }

    /// The stage's CUDA policy, as the macros write its Rust twin's.
    fn cuda_source(&self) -> &'static str {
        self.stage.cuda_source()
    }

    /// The function of one element (a predicate) or two (an equality).
    #[pyo3(signature = (a, b=None))]
    fn __call__(&self, a: &Bound<'_, PyAny>, b: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let p = self.stage.element();
        let a = crate::value_of(a, p)?;
        let args: Vec<Value> = match b {
            Some(b) => vec![a, crate::value_of(b, p)?],
            None => vec![a],
        };
        let arity = match self.stage.kind() {
            kernels_gen::stage::StageKind::Equality => 2,
            _ => 1,
        };
        if args.len() != arity {
            return Err(PyValueError::new_err(format!(
                "this stage takes {arity} element(s)"
            )));
        }
        Ok(self.stage.host().apply(&args) == Value::Bool(true))
    }

    /// `data`'s elements (bytes) the predicate keeps, in order, and their
    /// number.
    fn select_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let (out, count) = self.on_host(py, data, |elements, keep, out| {
            select::select_if_with(elements, out, keep)
        })?;
        Ok((PyBytes::new(py, &out[..count * self.size()]), count))
    }

    /// `data`'s elements the predicate keeps, in order, then the others (in
    /// order, or reversed as CUB writes them), and the number kept.
    fn partition_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        in_order: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let rejected = if in_order {
            Rejected::InOrder
        } else {
            Rejected::Reversed
        };
        let (out, count) = self.on_host(py, data, |elements, keep, out| {
            select::partition_if_with(elements, out, rejected, keep)
        })?;
        Ok((PyBytes::new(py, &out), count))
    }

    /// The first element of each run of neighbours the equality calls
    /// equal, in order.
    fn unique_bytes<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let (out, count) = self.on_host_pairs(py, data, |elements, equal, out| {
            select::unique_with(elements, out, equal)
        })?;
        Ok(PyBytes::new(py, &out[..count * self.size()]))
    }

    /// Each run's first element and its length (`u64`s), in order.
    fn run_length_encode_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let n = data.len() / self.size().max(1);
        let mut lengths = vec![0u64; n];
        let (out, runs) = self.on_host_pairs(py, data, |elements, equal, out| {
            select::run_length_encode_with(elements, out, &mut lengths, equal)
        })?;
        let lengths: Vec<u8> = lengths[..runs]
            .iter()
            .flat_map(|l| l.to_le_bytes())
            .collect();
        Ok((
            PyBytes::new(py, &out[..runs * self.size()]),
            PyBytes::new(py, &lengths),
        ))
    }

    /// A compaction on the GPU of the `n` elements at device address
    /// `input` on `device`, enqueued on the `CUstream` handle `stream`:
    /// `kernel` is `"select"`, `"partition"` (`in_order` says how the
    /// rejected follow), `"unique"` or `"run_length_encode"` (with
    /// `lengths`, the address of `n` `u64`s); the elements go to
    /// `output` (`n` of them), their count to the `u64` at `count`. The
    /// arrays are the caller's, valid on that stream.
    #[pyo3(signature = (device, stream, kernel, input, n, output, count, lengths=None, in_order=true))]
    #[allow(clippy::too_many_arguments)]
    fn gpu_compact(
        &self,
        py: Python<'_>,
        device: usize,
        stream: usize,
        kernel: &str,
        input: u64,
        n: usize,
        output: u64,
        count: u64,
        lengths: Option<u64>,
        in_order: bool,
    ) -> PyResult<()> {
        let stage = &self.stage;
        let bytes = n * stage.element_size();
        let run = |stream: &Arc<CudaStream>, select: &mut GpuSelect| -> Result<(), ScanError> {
            // SAFETY (the raw buffers): the caller's arrays on this device,
            // `n` elements each (the lengths `n` u64s, the count one), valid
            // on `stream` for the call.
            let input = unsafe { RawElements::new(stage, input, bytes, stream) }?;
            let mut output = unsafe { RawElements::new(stage, output, bytes, stream) }?;
            let mut count = unsafe { Borrowed::<u64>::new(stream, count, 1) };
            match (kernel, lengths) {
                ("select", None) => {
                    select.select_if_built(stream, stage, &input, &mut output, count.slice())
                }
                ("partition", None) => {
                    let rejected = if in_order {
                        Rejected::InOrder
                    } else {
                        Rejected::Reversed
                    };
                    select.partition_if_built(
                        stream,
                        stage,
                        &input,
                        &mut output,
                        rejected,
                        count.slice(),
                    )
                }
                ("unique", None) => {
                    select.unique_built(stream, stage, &input, &mut output, count.slice())
                }
                ("run_length_encode", Some(lengths)) => {
                    let mut lengths = unsafe { Borrowed::<u64>::new(stream, lengths, n) };
                    select.run_length_encode_built(
                        stream,
                        stage,
                        &input,
                        &mut output,
                        lengths.slice(),
                        count.slice(),
                    )
                }
                (other, _) => Err(ScanError::InvalidOperator(format!(
                    "no compaction `{other}` with these outputs"
                ))),
            }
        };
        on_device(py, device, stream, run)
    }
}

impl Stage {
    fn size(&self) -> usize {
        self.stage.element_size()
    }

    /// Runs `f` over `data`'s elements (as unsigned integers of the
    /// element's width) with the predicate, into an output as long.
    fn on_host<F>(&self, py: Python<'_>, data: &[u8], f: F) -> PyResult<(Vec<u8>, usize)>
    where
        F: Fn(
                &[u64],
                &(dyn Fn(u64) -> bool + Sync),
                &mut [u64],
            ) -> Result<usize, select::SelectLengthError>
            + Send,
    {
        let (p, host) = (self.stage.element(), self.stage.host());
        let elements = self.decode(data)?;
        py.detach(move || {
            let keep = |bits: u64| host.apply(&[Value::from_bits(p, bits)]) == Value::Bool(true);
            let mut out = elements.clone();
            let count = f(&elements, &keep, &mut out).map_err(length_error)?;
            Ok((self.encode(&out), count))
        })
    }

    /// [`Stage::on_host`] with the equality.
    fn on_host_pairs<F>(&self, py: Python<'_>, data: &[u8], f: F) -> PyResult<(Vec<u8>, usize)>
    where
        F: FnOnce(
                &[u64],
                &(dyn Fn(u64, u64) -> bool + Sync),
                &mut [u64],
            ) -> Result<usize, select::SelectLengthError>
            + Send,
    {
        let (p, host) = (self.stage.element(), self.stage.host());
        let elements = self.decode(data)?;
        py.detach(move || {
            let equal = |a: u64, b: u64| {
                host.apply(&[Value::from_bits(p, a), Value::from_bits(p, b)]) == Value::Bool(true)
            };
            let mut out = elements.clone();
            let count = f(&elements, &equal, &mut out).map_err(length_error)?;
            Ok((self.encode(&out), count))
        })
    }

    /// The elements of `data` as their bits.
    fn decode(&self, data: &[u8]) -> PyResult<Vec<u64>> {
        let size = self.size();
        if data.len() % size != 0 {
            return Err(PyValueError::new_err(format!(
                "{} bytes are not whole elements of {size}",
                data.len()
            )));
        }
        Ok(data
            .chunks_exact(size)
            .map(|c| {
                let mut bits = [0u8; 8];
                bits[..size].copy_from_slice(c);
                u64::from_le_bytes(bits)
            })
            .collect())
    }

    /// Elements from their bits.
    fn encode(&self, elements: &[u64]) -> Vec<u8> {
        let size = self.size();
        elements
            .iter()
            .flat_map(|e| e.to_le_bytes().into_iter().take(size))
            .collect()
    }
}

/// Reduce-by-key on the GPU: for each run of the `n` keys at `keys` that
/// `equality` calls equal, its first key to `keys_out` and the combination
/// by `op` of its values (the `n` at `values`) to `values_out`, and the
/// number of runs to the `u64` at `count`, enqueued on the `CUstream`
/// handle `stream` of `device`. The arrays are the caller's, valid on that
/// stream.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn gpu_reduce_by_key(
    py: Python<'_>,
    equality: &Stage,
    op: &crate::Operator,
    device: usize,
    stream: usize,
    keys: u64,
    values: u64,
    n: usize,
    keys_out: u64,
    values_out: u64,
    count: u64,
) -> PyResult<()> {
    let stage = &equality.stage;
    let op = op.dyn_operator()?;
    let run = |stream: &Arc<CudaStream>, select: &mut GpuSelect| -> Result<(), ScanError> {
        let (key_bytes, value_bytes) = (n * stage.element_size(), n * op.element_size());
        // SAFETY (the raw buffers): the caller's arrays on this device, `n`
        // keys and values each and one u64, valid on `stream` for the call.
        let keys = unsafe { RawElements::new(stage, keys, key_bytes, stream) }?;
        let values = unsafe { RawElements::new(op, values, value_bytes, stream) }?;
        let mut keys_out = unsafe { RawElements::new(stage, keys_out, key_bytes, stream) }?;
        let mut values_out = unsafe { RawElements::new(op, values_out, value_bytes, stream) }?;
        let mut count = unsafe { Borrowed::<u64>::new(stream, count, 1) };
        select.reduce_by_key_built(
            stream,
            stage,
            op,
            &keys,
            &values,
            &mut keys_out,
            &mut values_out,
            count.slice(),
        )
    };
    on_device(py, device, stream, run)
}

/// Runs `run` with the device's `GpuSelect` on the caller's stream.
fn on_device(
    py: Python<'_>,
    device: usize,
    stream: usize,
    run: impl FnOnce(&Arc<CudaStream>, &mut GpuSelect) -> Result<(), ScanError> + Send,
) -> PyResult<()> {
    py.detach(|| {
        let ctx = gpu::context(device).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        // SAFETY: the caller's stream of this device, alive for the call.
        let stream = unsafe { ctx.wrap_borrowed_stream(stream as _) };
        let mut selects = selects().lock().unwrap_or_else(|p| p.into_inner());
        let select = match selects.entry(device) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(GpuSelect::new(&ctx).map_err(|e| PyRuntimeError::new_err(e.to_string()))?)
            }
        };
        run(&stream, select).map_err(|e| match e {
            ScanError::Driver(_) | ScanError::Compile { .. } => {
                PyRuntimeError::new_err(e.to_string())
            }
            e => PyValueError::new_err(e.to_string()),
        })
    })
}

fn length_error(e: select::SelectLengthError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn selects() -> &'static Mutex<HashMap<usize, GpuSelect>> {
    static SELECTS: OnceLock<Mutex<HashMap<usize, GpuSelect>>> = OnceLock::new();
    SELECTS.get_or_init(Default::default)
}
