//! The native half of the `gpu_scan` Python package (issue 50): an
//! operator read from the IR text the Python half translates a function
//! into (`kernels_gen::ir_text`), checked as rustc would check it and
//! evaluated on the host (`kernels_gen::eval`), its CUDA written by the
//! generator `#[scan_op]` uses, and the CPU backend's scan loop
//! (`scan_core::cpu::scan_with`) over arrays of its element.

use kernels_gen::eval::{OpPlace, OpValues, Value};
use kernels_gen::ir::{ElementType, OpDesc, Prim};
use kernels_gen::{ir_text, GenParams};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes};
use scan_core::segmented::{segment_ranges, HeadFlags, InvalidOffsets, Segments};
use scan_core::{Direction, ScanKind};

/// An operator over a primitive element, from its IR text.
#[pyclass(frozen, module = "gpu_scan._native")]
struct Operator {
    desc: OpDesc,
    params: GenParams,
    element: Prim,
}

impl Operator {
    /// The checked operator, ready to evaluate (cheap: the checks run on
    /// the body's few nodes).
    fn values(&self) -> OpValues<'_> {
        OpValues::new(&self.desc).expect("checked when the operator was made")
    }

    /// A Python value as a value of the element type.
    fn value_of(&self, value: &Bound<'_, PyAny>) -> PyResult<Value> {
        let p = self.element;
        if p == Prim::Bool {
            if !value.is_instance_of::<PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "a bool expected for this operator's element, not {}",
                    value.get_type().name()?
                )));
            }
            return Ok(Value::Bool(value.extract()?));
        }
        if p.is_float() {
            let x: f64 = value.extract()?;
            return Ok(if p == Prim::F32 {
                Value::F32(x as f32)
            } else {
                Value::F64(x)
            });
        }
        if value.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(
                "an integer expected for this operator's element, not a bool",
            ));
        }
        let x: i128 = value.extract()?;
        let bits = 8 * p.size() as u32;
        let (lo, hi) = if p.is_signed_integer() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if x < lo || x > hi {
            return Err(PyOverflowError::new_err(format!(
                "{x} is out of range of {} ({lo} to {hi})",
                p.rust_name()
            )));
        }
        Ok(Value::from_bits(p, x as u64))
    }
}

/// A value as a Python int, float or bool.
fn to_python<'py>(py: Python<'py>, value: Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::U8(x) => x.into_pyobject(py)?.into_any(),
        Value::U16(x) => x.into_pyobject(py)?.into_any(),
        Value::U32(x) => x.into_pyobject(py)?.into_any(),
        Value::U64(x) => x.into_pyobject(py)?.into_any(),
        Value::I8(x) => x.into_pyobject(py)?.into_any(),
        Value::I16(x) => x.into_pyobject(py)?.into_any(),
        Value::I32(x) => x.into_pyobject(py)?.into_any(),
        Value::I64(x) => x.into_pyobject(py)?.into_any(),
        Value::F32(x) => (x as f64).into_pyobject(py)?.into_any(),
        Value::F64(x) => x.into_pyobject(py)?.into_any(),
        Value::Bool(x) => PyBool::new(py, x).to_owned().into_any(),
    })
}

#[pymethods]
impl Operator {
    /// Reads and checks an operator's text; `ValueError(message, where)`
    /// says what is wrong (a malformed text, a type rustc would reject, a
    /// struct element) and where: the line the text gives for the
    /// statement (`(at LINE …)`), `"identity"`, or `None`.
    #[new]
    fn new(py: Python<'_>, text: &str) -> PyResult<Self> {
        let (desc, params, lines) = ir_text::parse_with_lines(text)
            .map_err(|e| PyValueError::new_err((e.to_string(), py.None())))?;
        let ElementType::Prim(element) = desc.element else {
            return Err(PyValueError::new_err((
                "struct elements are not supported by the Python binding yet",
                py.None(),
            )));
        };
        if let Err(e) = OpValues::new(&desc) {
            let place = match e.place {
                OpPlace::Statement(k) => match lines.get(k).copied().flatten() {
                    Some(line) => line.into_pyobject(py)?.into_any().unbind(),
                    None => py.None(),
                },
                OpPlace::Identity => "identity".into_pyobject(py)?.into_any().unbind(),
                OpPlace::Element | OpPlace::Operands => py.None(),
            };
            return Err(PyValueError::new_err((e.to_string(), place)));
        }
        kernels_gen::operator_source(&desc, &params)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Operator {
            desc,
            params,
            element,
        })
    }

    /// The operator's name: the prefix of its CUDA symbols.
    #[getter]
    fn name(&self) -> &str {
        &self.desc.name
    }

    /// The element type's Rust name (`"f32"`, `"u64"`, `"bool"`, …).
    #[getter]
    fn element(&self) -> &'static str {
        self.element.rust_name()
    }

    /// The operator's IR text as the generator reads it (the lines the
    /// translation gave it left out): what `#[scan_op]` records of the
    /// same operator written in Rust (`ScanOp::OPERATOR_IR`).
    #[getter]
    fn ir(&self) -> String {
        ir_text::print(&self.desc, &self.params)
    }

    /// The identity's value.
    #[getter]
    fn identity<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, self.values().identity())
    }

    /// `x ∘ y`, `x` the earlier element, evaluated with Rust's arithmetic
    /// of the element type (integers wrap).
    fn combine<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (x, y) = (self.value_of(x)?, self.value_of(y)?);
        to_python(py, self.values().combine(x, y).value)
    }

    /// The operator's part of its CUDA program, as `#[scan_op]` writes it
    /// (the policy and the kernel wrappers; `kernels_gen::program` puts the
    /// library in front).
    fn cuda_source(&self) -> PyResult<String> {
        kernels_gen::operator_source(&self.desc, &self.params)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Scans `data` (the little-endian bytes of elements) on the CPU:
    /// inclusive or exclusive, from `init` (`None`: nothing in front),
    /// forward or in reverse, each segment on its own (from `init` each,
    /// as `scan_core::segmented` scans them). Segments are rows of
    /// `row_length` elements (`ScanSpec::rows`), or start at the elements
    /// whose byte of `heads` is not 0, or at `offsets` (CSR row pointers,
    /// checked as the library checks them); element 0 always starts one;
    /// none given, the whole is one. Returns the output's bytes and the
    /// totals' (each segment's carry-out: a row's, a head's segment's, an
    /// offset window's, empty windows' `init` or the identity; the whole's
    /// where no segments are given), as `segment_ranges` lists them.
    #[pyo3(signature = (data, inclusive, reverse, init=None, row_length=None, heads=None, offsets=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        inclusive: bool,
        reverse: bool,
        init: Option<&Bound<'py, PyAny>>,
        row_length: Option<usize>,
        heads: Option<Vec<u8>>,
        offsets: Option<Vec<u64>>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let size = self.element.size();
        if data.len() % size != 0 {
            return Err(PyValueError::new_err(format!(
                "{} bytes are not a whole number of {}-byte elements",
                data.len(),
                size
            )));
        }
        let n = data.len() / size;
        let segments = match (row_length, heads.as_deref(), offsets.as_deref()) {
            (None, None, None) => None,
            (Some(row_length), None, None) => {
                if row_length == 0 || n % row_length != 0 {
                    return Err(PyValueError::new_err(format!(
                        "rows of {row_length} elements do not divide {n} elements"
                    )));
                }
                Some(Segments::rows(row_length))
            }
            (None, Some(heads), None) => {
                if heads.len() != n {
                    return Err(PyValueError::new_err(format!(
                        "{} head flags for {n} elements",
                        heads.len()
                    )));
                }
                Some(Segments::Flags(HeadFlags::Bytes(heads)))
            }
            (None, None, Some(offsets)) => {
                InvalidOffsets::check(offsets, n)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                Some(Segments::offsets(offsets))
            }
            _ => return Err(PyValueError::new_err("one kind of segments at a time")),
        };
        // The runs each scanned on its own: from each head to the next.
        let is_head = |i: usize| i == 0 || segments.as_ref().is_some_and(|s| s.is_head(i));
        let starts: Vec<usize> = (0..n).filter(|&i| is_head(i)).collect();
        let init = init.map(|v| self.value_of(v)).transpose()?;
        let kind = match (inclusive, init) {
            (true, None) => ScanKind::Inclusive,
            (false, None) => ScanKind::Exclusive,
            (true, Some(v)) => ScanKind::InclusiveWithInit(v),
            (false, Some(v)) => ScanKind::ExclusiveWithInit(v),
        };
        let p = self.element;
        let mut values: Vec<Value> = data
            .chunks_exact(size)
            .map(|chunk| {
                let mut bits = [0u8; 8];
                bits[..size].copy_from_slice(chunk);
                Value::from_bits(p, u64::from_le_bytes(bits))
            })
            .collect();
        let op = self.values();
        let direction = if reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        let empty = init.unwrap_or(op.identity());
        let totals: Vec<Value> = py.detach(|| {
            let ends = starts.iter().skip(1).copied().chain([n]);
            let carries: Vec<(usize, Value)> = starts
                .iter()
                .zip(ends)
                .map(|(&start, end)| {
                    let carry = scan_core::cpu::scan_with(
                        op.identity(),
                        |x, y| op.combine(x, y).value,
                        kind,
                        direction,
                        &mut values[start..end],
                    );
                    (start, carry)
                })
                .collect();
            match &segments {
                None => vec![carries.first().map_or(empty, |c| c.1)],
                Some(segments) => segment_ranges(*segments, n)
                    .into_iter()
                    .map(|range| {
                        if range.is_empty() {
                            empty
                        } else {
                            // A non-empty segment starts at a head and ends
                            // at the next (segment_ranges' windows too).
                            let k = carries.partition_point(|c| c.0 < range.start);
                            carries[k].1
                        }
                    })
                    .collect(),
            }
        });
        let bytes = |values: &[Value]| {
            let mut out = Vec::with_capacity(values.len() * size);
            for v in values {
                out.extend_from_slice(&v.to_bits().to_le_bytes()[..size]);
            }
            out
        };
        Ok((
            PyBytes::new(py, &bytes(&values)),
            PyBytes::new(py, &bytes(&totals)),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<gpu_scan operator {} over {}>",
            self.desc.name,
            self.element.rust_name()
        )
    }
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Operator>()?;
    Ok(())
}
