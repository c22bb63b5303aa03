//! Compactions for the package: select and partition by a predicate, and
//! unique and run-length encoding by an equality, written in Python and
//! read from their text (`kernels_gen::ir_text::print_stage`) into a
//! `scan_runtime::DynStage`: on the CPU the library's functions
//! (`scan_core::select::*_with`) run its function, checked and compiled for
//! the host; on the GPU `GpuSelect` runs the kernels of its twin's CUDA on
//! another library's device arrays.

use crate::gpu::{self, Borrowed};
use kernels_gen::eval::StageValues;
use kernels_gen::ir_text;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::select::{self, Rejected};
use scan_runtime::cudarc::driver::CudaStream;
use scan_runtime::{DynStage, GpuSelect, RawElements, ScanError};
use std::sync::{Arc, OnceLock};

/// A predicate or an equality from its IR text.
#[pyclass(frozen, module = "gpu_scan._native")]
pub struct Stage {
    stage: DynStage,
    text: String,
}

#[pymethods]
impl Stage {
    /// Reads and checks `text` (and `structs`, the declarations of its
    /// struct element and the structs that one nests); a `ValueError`
    /// carries the message and the line of the statement it was found in
    /// (or `None`: a struct element's errors name the stage).
    #[new]
    #[pyo3(signature = (text, structs=Vec::new()))]
    fn new(py: Python<'_>, text: &str, structs: Vec<String>) -> PyResult<Self> {
        let fail = |message: String, line: Option<u32>| crate::refusal(py, message, line);
        let (desc, lines) =
            ir_text::parse_stage_with_lines(text).map_err(|e| fail(e.to_string(), None))?;
        if let kernels_gen::ir::ElementType::Prim(_) = desc.input {
            if let Err(e) = StageValues::new(&desc) {
                let line = e.statement.and_then(|k| lines.get(k).copied().flatten());
                return Err(fail(e.to_string(), line));
            }
        }
        let structs: Vec<&str> = structs.iter().map(String::as_str).collect();
        let stage = DynStage::from_text(text, &structs).map_err(|e| fail(e.to_string(), None))?;
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

    /// The element type: a primitive's Rust name, or a struct's name.
    #[getter]
    fn element(&self) -> String {
        match self.stage.element() {
            kernels_gen::ir::ElementType::Prim(p) => p.rust_name().to_string(),
            kernels_gen::ir::ElementType::Struct(name) => name.clone(),
        }
    }

    /// The element's size in bytes.
    #[getter]
    fn element_size(&self) -> usize {
        self.stage.element_size()
    }

    /// The stage's CUDA policy, as the macros write its Rust twin's.
    fn cuda_source(&self) -> &'static str {
        self.stage.cuda_source()
    }

    /// The function of one element (a predicate) or two (an equality): a
    /// primitive's Python value, or a struct's bytes.
    #[pyo3(signature = (a, b=None))]
    fn __call__(&self, a: &Bound<'_, PyAny>, b: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let arity = match self.stage.kind() {
            kernels_gen::stage::StageKind::Equality => 2,
            _ => 1,
        };
        let args: Vec<&Bound<'_, PyAny>> = std::iter::once(a).chain(b).collect();
        if args.len() != arity {
            return Err(PyValueError::new_err(format!(
                "this stage takes {arity} element(s)"
            )));
        }
        let bytes: Vec<Vec<u8>> = match self.stage.element() {
            kernels_gen::ir::ElementType::Prim(p) => args
                .iter()
                .map(|v| {
                    let size = p.size();
                    crate::value_of(v, *p).map(|v| v.to_bits().to_le_bytes()[..size].to_vec())
                })
                .collect::<PyResult<_>>()?,
            kernels_gen::ir::ElementType::Struct(name) => args
                .iter()
                .map(|v| {
                    let b: Vec<u8> = v.extract()?;
                    if b.len() != self.size() {
                        return Err(PyValueError::new_err(format!(
                            "{} bytes for a `{name}` of {}",
                            b.len(),
                            self.size()
                        )));
                    }
                    Ok(b)
                })
                .collect::<PyResult<_>>()?,
        };
        Ok(match &bytes[..] {
            [a] => self.stage.keeps(a),
            [a, b] => self.stage.equal(a, b),
            _ => unreachable!("checked above"),
        })
    }

    /// `data`'s elements (bytes) the predicate keeps, in order, and their
    /// number.
    fn select_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let (out, count) = self.on_host(py, data, |elements, stage, element, out| {
            select::select_if_with(elements, out, |i| stage.keeps(element(i)))
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
        let (out, count) = self.on_host(py, data, |elements, stage, element, out| {
            select::partition_if_with(elements, out, rejected, |i| stage.keeps(element(i)))
        })?;
        Ok((PyBytes::new(py, &out), count))
    }

    /// The first element of each run of neighbours the equality calls
    /// equal, in order.
    fn unique_bytes<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let (out, count) = self.on_host(py, data, |elements, stage, element, out| {
            select::unique_with(elements, out, |a, b| stage.equal(element(a), element(b)))
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
        let (out, runs) = self.on_host(py, data, |elements, stage, element, out| {
            select::run_length_encode_with(elements, out, &mut lengths, |a, b| {
                stage.equal(element(a), element(b))
            })
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

    /// The elements the predicate keeps, then of the others those
    /// `second` keeps, then the rest, each part in order, and the first two
    /// parts' lengths.
    fn partition_three_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        second: &Stage,
    ) -> PyResult<(Bound<'py, PyBytes>, (usize, usize))> {
        let other = &second.stage;
        let mut parts = (0, 0);
        let (out, _) = self.on_host(py, data, |elements, stage, element, out| {
            parts = select::partition_three_with(
                elements,
                out,
                |i| stage.keeps(element(i)),
                |i| other.keeps(element(i)),
            )?;
            Ok(parts.0)
        })?;
        Ok((PyBytes::new(py, &out), parts))
    }

    /// The runs of two or more neighbours the equality calls equal: each
    /// one's offset and length (`u64`s), in order.
    fn non_trivial_runs_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let n = data.len() / self.size().max(1);
        let (mut offsets, mut lengths) = (vec![0u64; n], vec![0u64; n]);
        let mut runs = 0;
        self.on_host(py, data, |elements, stage, element, _| {
            runs = select::non_trivial_runs_with(elements, &mut offsets, &mut lengths, |a, b| {
                stage.equal(element(a), element(b))
            })?;
            Ok(runs)
        })?;
        let bytes = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        Ok((
            PyBytes::new(py, &bytes(&offsets[..runs])),
            PyBytes::new(py, &bytes(&lengths[..runs])),
        ))
    }

    /// A compaction on the GPU of the `n` elements at device address
    /// `input` on `device`, enqueued on the `CUstream` handle `stream`:
    /// `kernel` is `"select"`, `"partition"` (`in_order` says how the
    /// rejected follow; with `second`, the three-way partition, whose two
    /// counts go to the two `u64`s at `count`), `"unique"`,
    /// `"run_length_encode"` (with `lengths`, the address of `n` `u64`s)
    /// or `"non_trivial_runs"` (`output` the address of `n` `u64` offsets,
    /// with `lengths`); the elements go to `output` (`n` of them), their
    /// count to the `u64` at `count`. The arrays are the caller's, valid on
    /// that stream.
    #[pyo3(signature = (device, stream, kernel, input, n, output, count, lengths=None, in_order=true, second=None))]
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
        second: Option<PyRef<'_, Stage>>,
    ) -> PyResult<()> {
        let stage = &self.stage;
        let second = second.as_ref().map(|s| s.stage.clone());
        let bytes = n * stage.element_size();
        let run = |stream: &Arc<CudaStream>, select: &mut GpuSelect| -> Result<(), ScanError> {
            // SAFETY (the raw buffers): the caller's arrays on this device,
            // `n` elements each (the lengths and offsets `n` u64s, the
            // count one or two), valid on `stream` for the call.
            let input = unsafe { RawElements::new(stage, input, bytes, stream) }?;
            if kernel == "non_trivial_runs" {
                let (Some(lengths), None) = (lengths, &second) else {
                    return Err(ScanError::InvalidOperator(
                        "non-trivial runs write offsets and lengths".into(),
                    ));
                };
                let mut offsets = unsafe { Borrowed::<u64>::new(stream, output, n) };
                let mut lengths = unsafe { Borrowed::<u64>::new(stream, lengths, n) };
                let mut count = unsafe { Borrowed::<u64>::new(stream, count, 1) };
                return select.non_trivial_runs_built(
                    stream,
                    stage,
                    &input,
                    offsets.slice(),
                    lengths.slice(),
                    count.slice(),
                );
            }
            let mut output = unsafe { RawElements::new(stage, output, bytes, stream) }?;
            if let Some(second) = &second {
                if kernel != "partition" || lengths.is_some() {
                    return Err(ScanError::InvalidOperator(
                        "a second predicate partitions three ways".into(),
                    ));
                }
                let mut counts = unsafe { Borrowed::<u64>::new(stream, count, 2) };
                return select.partition_three_built(
                    stream,
                    stage,
                    second,
                    &input,
                    &mut output,
                    counts.slice(),
                );
            }
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

    /// Runs `f` over `data`'s elements, each given as its index (so that
    /// primitives and structs alike are `Copy` words), with the stage and
    /// the bytes of an index's element, into an output of indices as long;
    /// the output's elements gathered, and the count.
    fn on_host<'d, F>(&self, py: Python<'_>, data: &'d [u8], f: F) -> PyResult<(Vec<u8>, usize)>
    where
        F: FnOnce(
                &[u32],
                &DynStage,
                &(dyn Fn(u32) -> &'d [u8] + Sync),
                &mut [u32],
            ) -> Result<usize, select::SelectLengthError>
            + Send,
    {
        let (indices, size) = self.indices(data)?;
        let stage = &self.stage;
        py.detach(move || {
            let element = |i: u32| &data[i as usize * size..(i as usize + 1) * size];
            let mut out = indices.clone();
            let count = f(&indices, stage, &element, &mut out).map_err(length_error)?;
            Ok((gather(data, size, &out), count))
        })
    }

    /// The indices of `data`'s elements, and their size.
    fn indices(&self, data: &[u8]) -> PyResult<(Vec<u32>, usize)> {
        let size = self.size();
        if data.len() % size != 0 {
            return Err(PyValueError::new_err(format!(
                "{} bytes are not whole elements of {size}",
                data.len()
            )));
        }
        let n = data.len() / size;
        let n = u32::try_from(n).map_err(|_| {
            PyValueError::new_err(format!("{n} elements: the CPU path takes fewer than 2^32"))
        })?;
        Ok(((0..n).collect(), size))
    }
}

/// The elements at `indices`, their bytes in order.
fn gather(data: &[u8], size: usize, indices: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(indices.len() * size);
    for &i in indices {
        out.extend_from_slice(&data[i as usize * size..(i as usize + 1) * size]);
    }
    out
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
    static SELECTS: OnceLock<gpu::PerDevice<GpuSelect>> = OnceLock::new();
    let registry = SELECTS.get_or_init(Default::default);
    gpu::on_device(py, device, stream, registry, GpuSelect::new, |s, select| {
        Ok(run(s, select))
    })
}

fn length_error(e: select::SelectLengthError) -> PyErr {
    PyValueError::new_err(e.to_string())
}
