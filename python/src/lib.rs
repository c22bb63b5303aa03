//! The native half of the `gpu_scan` Python package (issue 50): an
//! operator read from the IR text the Python half translates a function
//! into (`kernels_gen::ir_text`), checked as rustc would check it and
//! evaluated on the host (`kernels_gen::eval`), its CUDA written by the
//! generator `#[scan_op]` uses, and the CPU backend's scan loop
//! (`scan_core::cpu::scan_with`) over arrays of its element.

use kernels_gen::eval::{OpPlace, OpValues, StructValues, Value};
use kernels_gen::ir::{ElementType, OpDesc, Prim, StructDesc};
use kernels_gen::lower::{lower_op, Leaf, Lowered, Structs};
use kernels_gen::{ir_text, GenParams};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes};
use rayon::prelude::*;
use scan_core::segmented::{segment_ranges, HeadFlags, InvalidOffsets, Segments};
use scan_core::{Direction, ScanKind};

mod dlpack;
mod gpu;
mod recurrence;
mod select;
mod sort;
mod spmv;

/// An operator's element: a primitive, or a struct lowered to its leaves.
enum Element {
    Prim(Prim),
    Struct {
        lowered: Lowered,
        /// Its declaration and its nested structs', nested ones first.
        declarations: Vec<StructDesc>,
        size: usize,
    },
}

/// An operator from its IR text (and its structs' declarations).
#[pyclass(frozen, module = "gpu_scan._native")]
struct Operator {
    desc: OpDesc,
    params: GenParams,
    element: Element,
    /// The texts it was read from (the GPU path builds them).
    text: String,
    structs: Vec<String>,
    /// Declared commutative (checked by the Python half on samples).
    commutative: bool,
    /// Its scanners on the GPU, made on first use.
    gpu: gpu::Scanners,
}

/// Elements as little-endian bytes: `size` bytes each, `leaves` at their
/// offsets (padding written as zero).
/// The value of `leaf` in an element's bytes.
fn read_leaf(element: &[u8], leaf: &Leaf) -> Value {
    let mut bits = [0u8; 8];
    let width = leaf.prim.size();
    bits[..width].copy_from_slice(&element[leaf.offset..leaf.offset + width]);
    Value::from_bits(leaf.prim, u64::from_le_bytes(bits))
}

/// Writes `v` as `leaf` of an element's bytes.
fn write_leaf(element: &mut [u8], leaf: &Leaf, v: Value) {
    let width = leaf.prim.size();
    element[leaf.offset..leaf.offset + width].copy_from_slice(&v.to_bits().to_le_bytes()[..width]);
}

/// Struct elements from their bytes: `size` bytes each, `leaves` at their
/// offsets.
fn decode(data: &[u8], size: usize, leaves: &[Leaf]) -> Vec<Vec<Value>> {
    data.chunks_exact(size)
        .map(|element| leaves.iter().map(|leaf| read_leaf(element, leaf)).collect())
        .collect()
}

/// Elements as bytes, `size` each (padding zero), each written by `write`.
fn encode<T>(elements: &[T], size: usize, write: impl Fn(&mut [u8], &T)) -> Vec<u8> {
    let mut out = vec![0u8; elements.len() * size];
    for (element, bytes) in elements.iter().zip(out.chunks_exact_mut(size)) {
        write(bytes, element);
    }
    out
}

/// [`encode`] of struct elements.
fn encode_leaves(elements: &[Vec<Value>], size: usize, leaves: &[Leaf]) -> Vec<u8> {
    encode(elements, size, |bytes, element| {
        for (leaf, v) in leaves.iter().zip(element) {
            write_leaf(bytes, leaf, *v);
        }
    })
}

impl Operator {
    /// The operator built for the GPU (`DynOperator`), on first use.
    fn dyn_operator(&self) -> PyResult<&scan_runtime::DynOperator> {
        self.gpu
            .operator(&self.text, &self.structs, self.commutative)
    }

    /// The checked operator over a primitive, ready to evaluate (cheap:
    /// the checks run on the body's few nodes).
    fn values(&self) -> PyResult<OpValues<'_>> {
        match self.element {
            Element::Prim(_) => {
                Ok(OpValues::new(&self.desc).expect("checked when the operator was made"))
            }
            Element::Struct { .. } => Err(PyTypeError::new_err(
                "this operator's element is a struct: pass bytes",
            )),
        }
    }

    /// The element's primitive type (an error for a struct).
    fn prim(&self) -> PyResult<Prim> {
        match self.element {
            Element::Prim(p) => Ok(p),
            Element::Struct { .. } => Err(PyTypeError::new_err(
                "this operator's element is a struct: pass bytes",
            )),
        }
    }

    /// The checked operator over a struct, with its leaves and size.
    fn struct_values(&self) -> Option<(StructValues<'_>, &[Leaf], usize)> {
        match &self.element {
            Element::Prim(_) => None,
            Element::Struct { lowered, size, .. } => Some((
                StructValues::new(lowered).expect("checked when the operator was made"),
                &lowered.leaves,
                *size,
            )),
        }
    }

    /// A Python value as a value of the element type.
    fn value_of(&self, value: &Bound<'_, PyAny>) -> PyResult<Value> {
        value_of(value, self.prim()?)
    }
}

/// A Python value as a value of `p` (range-checked for integers).
fn value_of(value: &Bound<'_, PyAny>, p: Prim) -> PyResult<Value> {
    {
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

/// Values of a plain number type from their little-endian bytes.
fn numbers_of<T: Copy>(bytes: &[u8]) -> PyResult<Vec<T>> {
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 {
        return Err(PyValueError::new_err(format!(
            "{} bytes are not whole values of {size} bytes",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(size)
        // SAFETY: `size` bytes of a plain number type (integers and floats:
        // every bit pattern is a value), read unaligned.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect())
}

/// The bytes of plain numbers (no padding).
fn bytes_of<T: Copy>(xs: &[T]) -> Vec<u8> {
    // SAFETY: integers and floats: every byte initialized, no padding.
    unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<u8>(), std::mem::size_of_val(xs)) }
        .to_vec()
}

/// A text's refusal: a `ValueError` of the message and the line of the
/// statement it was found in (or `None`), which the Python half turns into
/// an `OperatorError` naming the file and line.
fn refusal(py: Python<'_>, message: String, line: Option<u32>) -> PyErr {
    let line: Py<PyAny> = match line {
        Some(l) => l
            .into_pyobject(py)
            .map_or_else(|never| match never {}, |l| l.into_any().unbind()),
        None => py.None(),
    };
    PyValueError::new_err((message, line))
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
    /// Reads and checks an operator's text, its struct element's and
    /// nested structs' declarations in `structs` (`ir_text::print_struct`,
    /// each under its own name); `ValueError(message, where)` says what is
    /// wrong (a malformed text, a type rustc would reject) and where: the
    /// line the text gives for the statement (`(at LINE …)`), `"identity"`,
    /// or `None`.
    #[new]
    #[pyo3(signature = (text, structs=Vec::new(), commutative=false))]
    fn new(py: Python<'_>, text: &str, structs: Vec<String>, commutative: bool) -> PyResult<Self> {
        let fail = |message: String| PyValueError::new_err((message, py.None()));
        let (desc, params, lines) =
            ir_text::parse_with_lines(text).map_err(|e| fail(e.to_string()))?;
        let element = match &desc.element {
            ElementType::Prim(p) => {
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
                Element::Prim(*p)
            }
            ElementType::Struct(name) => {
                let mut by_name = Structs::default();
                let mut declarations = Vec::new();
                for text in &structs {
                    let desc = ir_text::parse_struct(text).map_err(|e| fail(e.to_string()))?;
                    by_name.insert(desc.name.clone(), desc.clone());
                    declarations.push(desc);
                }
                let size = by_name.size(name).map_err(fail)?;
                // A refusal of the lowered operator, at the statement (and
                // so the Python line) that causes it.
                let refuse = |message: String| -> PyResult<PyErr> {
                    let line = kernels_gen::lower::refused_statement(&desc, &by_name)
                        .and_then(|k| lines.get(k).copied().flatten());
                    Ok(match line {
                        Some(line) => PyValueError::new_err((
                            message,
                            line.into_pyobject(py)?.into_any().unbind(),
                        )),
                        None if message.contains("identity") => PyValueError::new_err((
                            message,
                            "identity".into_pyobject(py)?.into_any().unbind(),
                        )),
                        None => fail(message),
                    })
                };
                let lowered = match lower_op(&desc, &by_name) {
                    Ok(l) => l,
                    Err(e) => return Err(refuse(e)?),
                };
                if let Err(e) = StructValues::new(&lowered) {
                    return Err(refuse(format!("operator `{}`: {e}", desc.name))?);
                }
                Element::Struct {
                    lowered,
                    declarations,
                    size,
                }
            }
        };
        kernels_gen::operator_source(&desc, &params).map_err(|e| fail(e.to_string()))?;
        Ok(Operator {
            desc,
            params,
            element,
            text: text.to_string(),
            structs,
            commutative,
            gpu: gpu::Scanners::default(),
        })
    }

    /// The operator's name: the prefix of its CUDA symbols.
    #[getter]
    fn name(&self) -> &str {
        &self.desc.name
    }

    /// The element type's Rust name (`"f32"`, `"u64"`, `"bool"`, …), or
    /// `"struct"`.
    #[getter]
    fn element(&self) -> &'static str {
        match self.element {
            Element::Prim(p) => p.rust_name(),
            Element::Struct { .. } => "struct",
        }
    }

    /// The element's size in bytes (`repr(C)` for a struct).
    #[getter]
    fn element_size(&self) -> usize {
        match &self.element {
            Element::Prim(p) => p.size(),
            Element::Struct { size, .. } => *size,
        }
    }

    /// The operator's IR text as the generator reads it (the lines the
    /// translation gave it left out): what `#[scan_op]` records of the
    /// same operator written in Rust (`ScanOp::OPERATOR_IR`).
    #[getter]
    fn ir(&self) -> String {
        ir_text::print(&self.desc, &self.params)
    }

    /// The identity's value (a struct's as its bytes).
    #[getter]
    fn identity<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.struct_values() {
            None => to_python(py, self.values()?.identity()),
            Some((values, leaves, size)) => {
                Ok(PyBytes::new(py, &encode_leaves(&[values.identity()], size, leaves)).into_any())
            }
        }
    }

    /// `x ∘ y`, `x` the earlier element, evaluated with Rust's arithmetic
    /// of the element type (integers wrap).
    fn combine<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.struct_values() {
            None => {
                let (x, y) = (self.value_of(x)?, self.value_of(y)?);
                to_python(py, self.values()?.combine(x, y).value)
            }
            Some((values, leaves, size)) => {
                let (x, y): (Vec<u8>, Vec<u8>) = (x.extract()?, y.extract()?);
                if x.len() != size || y.len() != size {
                    return Err(PyValueError::new_err(format!(
                        "two elements of {size} bytes expected"
                    )));
                }
                let (x, y) = (decode(&x, size, leaves), decode(&y, size, leaves));
                let z = values.combine(&x[0], &y[0]);
                Ok(PyBytes::new(py, &encode_leaves(&[z], size, leaves)).into_any())
            }
        }
    }

    /// The operator's part of its CUDA program, as `#[scan_op]` writes it
    /// (the policy and the kernel wrappers; `kernels_gen::program` puts the
    /// library in front).
    fn cuda_source(&self) -> PyResult<String> {
        let mut out = String::new();
        if let Element::Struct { declarations, .. } = &self.element {
            for desc in declarations {
                out.push_str(&kernels_gen::struct_declaration(desc));
            }
        }
        out.push_str(
            &kernels_gen::operator_source(&self.desc, &self.params)
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
        );
        Ok(out)
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
        let size = self.element_size();
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
        let direction = if reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        match self.struct_values() {
            None => {
                let p = self.prim()?;
                // One leaf, the whole element: no vector an element.
                let leaf = Leaf {
                    path: String::new(),
                    prim: p,
                    offset: 0,
                };
                let mut values: Vec<Value> = data
                    .chunks_exact(size)
                    .map(|element| read_leaf(element, &leaf))
                    .collect();
                let init = init.map(|v| self.value_of(v)).transpose()?;
                let op = self.values()?.compiled();
                let totals = py.detach(|| {
                    scan_segments(
                        &mut values,
                        segments,
                        op.identity(),
                        |x, y| op.combine(x, y),
                        kind_of(inclusive, init),
                        direction,
                    )
                });
                let write = |bytes: &mut [u8], v: &Value| write_leaf(bytes, &leaf, *v);
                Ok((
                    PyBytes::new(py, &encode(&values, size, write)),
                    PyBytes::new(py, &encode(&totals, size, write)),
                ))
            }
            Some((op, leaves, size)) => {
                let mut values = decode(data, size, leaves);
                let init = match init {
                    Some(v) => {
                        let bytes: Vec<u8> = v.extract()?;
                        if bytes.len() != size {
                            return Err(PyValueError::new_err(format!(
                                "an initial element of {size} bytes expected"
                            )));
                        }
                        Some(decode(&bytes, size, leaves).remove(0))
                    }
                    None => None,
                };
                let op = op.compiled();
                let totals = py.detach(|| {
                    scan_segments(
                        &mut values,
                        segments,
                        op.identity(),
                        |x: Vec<Value>, y: Vec<Value>| op.combine(&x, &y),
                        kind_of(inclusive, init),
                        direction,
                    )
                });
                Ok((
                    PyBytes::new(py, &encode_leaves(&values, size, leaves)),
                    PyBytes::new(py, &encode_leaves(&totals, size, leaves)),
                ))
            }
        }
    }

    /// Scans the `n` elements at device address `input` into `output`
    /// (the same address in place) on device `device`, enqueued on the
    /// `CUstream` handle `stream`: inclusive or exclusive, from `init` (an
    /// element's bytes), forward or in reverse; over rows of `row_length`
    /// elements, down the columns of a row-major matrix of rows of
    /// `columns` elements, or over segments by byte `heads`, `offsets`
    /// (address, count, width 4 or 8) or `keys` (address, width), or in two
    /// dimensions over rows of `summed_area` elements; the
    /// totals (address, slots) each segment's, or the one carry-out, or
    /// with `count` (the address of a `u64`) counted on the device. The
    /// arrays are the caller's, valid on that stream.
    #[pyo3(signature = (device, stream, input, output, n, inclusive, reverse, init=None, row_length=None, columns=None, heads=None, offsets=None, keys=None, totals=None, count=None, summed_area=None))]
    #[allow(clippy::too_many_arguments)]
    fn gpu_scan(
        &self,
        py: Python<'_>,
        device: usize,
        stream: usize,
        input: u64,
        output: u64,
        n: usize,
        inclusive: bool,
        reverse: bool,
        init: Option<Vec<u8>>,
        row_length: Option<usize>,
        columns: Option<usize>,
        heads: Option<u64>,
        offsets: Option<(u64, usize, usize)>,
        keys: Option<(u64, usize)>,
        totals: Option<(u64, usize)>,
        count: Option<u64>,
        summed_area: Option<usize>,
    ) -> PyResult<()> {
        let shape = match (row_length, columns, heads, offsets, keys) {
            (None, None, None, None, None) => match summed_area {
                Some(r) => gpu::Shape::SummedArea(r),
                None => gpu::Shape::Flat,
            },
            _ if summed_area.is_some() => {
                return Err(PyValueError::new_err("one shape of scan at a time"))
            }
            (Some(r), None, None, None, None) => gpu::Shape::Rows(r),
            (None, Some(c), None, None, None) => gpu::Shape::Columns(c),
            (None, None, Some(h), None, None) => gpu::Shape::Heads(h),
            (None, None, None, Some((a, len, w)), None) => gpu::Shape::Offsets(a, len, w),
            (None, None, None, None, Some((a, w))) => gpu::Shape::Keys(a, w),
            _ => return Err(PyValueError::new_err("one shape of scan at a time")),
        };
        let totals = match (totals, count) {
            (None, None) => gpu::Totals::None,
            (Some((a, len)), None) => gpu::Totals::Slots(a, len),
            (Some((a, len)), Some(c)) => gpu::Totals::Counted(a, len, c),
            (None, Some(_)) => return Err(PyValueError::new_err("a count without totals")),
        };
        let request = gpu::Request {
            device,
            stream,
            input,
            output,
            n,
            inclusive,
            reverse,
            init,
            shape,
            totals,
        };
        py.detach(|| {
            self.gpu
                .scan(&self.text, &self.structs, self.commutative, request)
        })
    }

    /// Waits until the optimized kernels this operator's GPU scans started
    /// compiling in the background are loaded (its first scans run on
    /// quick builds meanwhile): call it before capturing its scans in a
    /// CUDA graph, or before timing them.
    fn wait_for_background_compiles(&self, py: Python<'_>) {
        py.detach(|| self.gpu.wait_for_background_compiles())
    }

    fn __repr__(&self) -> String {
        format!(
            "<gpu_scan operator {} over {}>",
            self.desc.name,
            self.element()
        )
    }
}

/// The scan's kind from `inclusive` and `init`.
fn kind_of<E>(inclusive: bool, init: Option<E>) -> ScanKind<E> {
    match (inclusive, init) {
        (true, None) => ScanKind::Inclusive,
        (false, None) => ScanKind::Exclusive,
        (true, Some(v)) => ScanKind::InclusiveWithInit(v),
        (false, Some(v)) => ScanKind::ExclusiveWithInit(v),
    }
}

/// Scans `values` in place, each segment on its own (none: the whole),
/// and returns the totals: each segment's carry-out, as `segment_ranges`
/// lists the segments (an empty one's the initial value or the
/// identity), or the whole's.
fn scan_segments<E: Clone + Send + Sync>(
    values: &mut [E],
    segments: Option<Segments<'_>>,
    identity: E,
    combine: impl Fn(E, E) -> E + Sync,
    kind: ScanKind<E>,
    direction: Direction,
) -> Vec<E> {
    let n = values.len();
    let init = match &kind {
        ScanKind::InclusiveWithInit(v) | ScanKind::ExclusiveWithInit(v) => Some(v.clone()),
        _ => None,
    };
    let empty = init.unwrap_or_else(|| identity.clone());
    let Some(segments) = segments else {
        // One run (its carry-out `init` or the identity when it is empty):
        // the parallel scan, which combines each element twice (chunk
        // totals, then a seeded rescan), where enough cores pay for that;
        // on two cores it was no faster than the loop.
        return vec![if rayon::current_num_threads() >= 4 {
            scan_core::cpu::par_scan_with(identity, &combine, kind, direction, values)
        } else {
            scan_core::cpu::scan_with(identity, &combine, kind, direction, values)
        }];
    };
    // The runs each scanned on its own, in parallel: from each head to the
    // next.
    let is_head = |i: usize| i == 0 || segments.is_head(i);
    let starts: Vec<usize> = (0..n).filter(|&i| is_head(i)).collect();
    let mut runs: Vec<(usize, &mut [E])> = Vec::with_capacity(starts.len());
    let mut rest = &mut values[..];
    let mut at = 0;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(n);
        let (run, tail) = std::mem::take(&mut rest).split_at_mut(end - at);
        debug_assert_eq!(at, start);
        runs.push((start, run));
        rest = tail;
        at = end;
    }
    let carries: Vec<(usize, E)> = runs
        .into_par_iter()
        .map(|(start, run)| {
            let carry =
                scan_core::cpu::scan_with(identity.clone(), &combine, kind.clone(), direction, run);
            (start, carry)
        })
        .collect();
    segment_ranges(segments, n)
        .into_iter()
        .map(|range| {
            if range.is_empty() {
                empty.clone()
            } else {
                // A non-empty segment starts at a head and ends at the next
                // (segment_ranges' windows too).
                let k = carries.partition_point(|c| c.0 < range.start);
                carries[k].1.clone()
            }
        })
        .collect()
}

/// Why scans cannot run on a GPU here (no driver, no NVRTC, no device),
/// or `None` where they can.
#[pyfunction]
fn gpu_unavailable_reason() -> Option<String> {
    gpu::unavailable_reason()
}

/// The `CUstream` handle of the package's own stream of `device` (for
/// frameworks that expose no stream: JAX).
#[pyfunction]
fn own_stream(device: usize) -> PyResult<usize> {
    gpu::own_stream(device)
        .map(|s| s.cu_stream() as usize)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Operator>()?;
    m.add_class::<dlpack::DeviceBuffer>()?;
    m.add_class::<dlpack::DlpackView>()?;
    m.add_class::<select::Stage>()?;
    m.add_class::<sort::SortKeyFn>()?;
    m.add_function(wrap_pyfunction!(select::gpu_reduce_by_key, m)?)?;
    m.add_function(wrap_pyfunction!(recurrence::recurrence_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(recurrence::gpu_recurrence, m)?)?;
    m.add_function(wrap_pyfunction!(spmv::spmv_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(spmv::gpu_spmv, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(own_stream, m)?)?;
    m.add_function(wrap_pyfunction!(sort::sort_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(sort::gpu_sort, m)?)?;
    Ok(())
}
