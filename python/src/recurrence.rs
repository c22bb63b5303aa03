//! Linear recurrences `h[t] = a[t] · h[t-1] + b[t]` for the package: on the
//! CPU the library's `scan_core::recurrence::linear_recurrence` over host
//! bytes, on the GPU `GpuRecurrence` over another library's device arrays,
//! both from the same description (`Batch`): a batch's shape and layout,
//! the transition's kind, the direction and whether a readout replaces the
//! states.

use crate::gpu::{self, Borrowed};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use scan_core::real::Real;
use scan_core::recurrence::{
    linear_recurrence, Recurrence, RecurrenceShape, TimeLayout, Transition,
};
use scan_runtime::cudarc::driver::{CudaStream, DeviceRepr};
use scan_runtime::{DeviceReal, DeviceRecurrence, DeviceTransition, GpuRecurrence, ScanError};
use std::sync::{Arc, OnceLock};

/// A batch's description, as the Python half reads it from the arrays'
/// shapes.
struct Batch {
    shape: RecurrenceShape,
    /// `"scalar"`, `"diagonal"` or `"matrix"`.
    kind: String,
    reverse: bool,
}

impl Batch {
    fn new(
        sequences: usize,
        steps: usize,
        state: usize,
        time_major: bool,
        kind: &str,
        reverse: bool,
    ) -> PyResult<Self> {
        if !matches!(kind, "scalar" | "diagonal" | "matrix") {
            return Err(PyValueError::new_err(format!(
                "a transition of kind {kind:?}: scalar, diagonal or matrix"
            )));
        }
        let layout = if time_major {
            TimeLayout::TimeMajor
        } else {
            TimeLayout::SequenceMajor
        };
        Ok(Batch {
            shape: RecurrenceShape {
                sequences,
                steps,
                state,
                layout,
            },
            kind: kind.to_string(),
            reverse,
        })
    }

    fn transition<'a, T>(&self, a: &'a [T]) -> Transition<'a, T> {
        match self.kind.as_str() {
            "scalar" => Transition::Scalar(a),
            "diagonal" => Transition::Diagonal(a),
            _ => Transition::Matrix(a),
        }
    }

    fn device_transition<'a, T>(
        &self,
        a: &'a dyn scan_runtime::cudarc::driver::DevicePtr<T>,
    ) -> DeviceTransition<'a, T> {
        match self.kind.as_str() {
            "scalar" => DeviceTransition::Scalar(a),
            "diagonal" => DeviceTransition::Diagonal(a),
            _ => DeviceTransition::Matrix(a),
        }
    }
}

/// The batch on the host in `T`.
fn on_host<T: Real + Default>(
    batch: &Batch,
    a: &[u8],
    b: &[u8],
    initial: Option<&[u8]>,
    readout: Option<&[u8]>,
) -> PyResult<Vec<u8>> {
    let (a, b) = (crate::numbers_of::<T>(a)?, crate::numbers_of::<T>(b)?);
    let initial = initial.map(crate::numbers_of::<T>).transpose()?;
    let readout = readout.map(crate::numbers_of::<T>).transpose()?;
    let mut r = Recurrence::new(batch.shape, batch.transition(&a), &b);
    if let Some(h0) = &initial {
        r = r.initial(h0);
    }
    if batch.reverse {
        r = r.reverse();
    }
    if let Some(c) = &readout {
        r = r.readout(c);
    }
    let mut out = vec![T::ZERO; r.output_len()];
    linear_recurrence(&r, &mut out).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(crate::bytes_of(&out))
}

/// Runs a batch of linear recurrences on the CPU over host bytes of
/// `real` (`"f32"` or `"f64"`): `sequences` of `steps` steps over a state
/// of `state` values, time-major or sequence-major, the transitions `a`
/// of `kind`, the inputs `b`, from `initial` (or zeros), forward or in
/// `reverse`, writing the states or the `readout`'s dot products; returns
/// the output's bytes.
#[pyfunction]
#[pyo3(signature = (real, sequences, steps, state, time_major, kind, a, b, initial=None, readout=None, reverse=false))]
#[allow(clippy::too_many_arguments)]
pub fn recurrence_bytes<'py>(
    py: Python<'py>,
    real: &str,
    sequences: usize,
    steps: usize,
    state: usize,
    time_major: bool,
    kind: &str,
    a: &[u8],
    b: &[u8],
    initial: Option<&[u8]>,
    readout: Option<&[u8]>,
    reverse: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let batch = Batch::new(sequences, steps, state, time_major, kind, reverse)?;
    let out = py.detach(|| match real {
        "f32" => on_host::<f32>(&batch, a, b, initial, readout),
        "f64" => on_host::<f64>(&batch, a, b, initial, readout),
        other => Err(PyTypeError::new_err(format!(
            "recurrences of {other}: f32 or f64"
        ))),
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Device addresses of a batch's arrays and their lengths in values.
struct Addresses {
    a: (u64, usize),
    b: (u64, usize),
    initial: Option<(u64, usize)>,
    readout: Option<(u64, usize)>,
    out: (u64, usize),
}

/// The batch on the GPU in `T`, over the caller's arrays.
fn on_device<T: DeviceReal + DeviceRepr>(
    rec: &mut GpuRecurrence,
    stream: &Arc<CudaStream>,
    batch: &Batch,
    at: &Addresses,
) -> Result<(), ScanError> {
    // SAFETY (each borrowed array): the caller's arrays on this device, of
    // the lengths given, valid on `stream` for the call.
    let a = unsafe { Borrowed::<T>::new(stream, at.a.0, at.a.1) };
    let b = unsafe { Borrowed::<T>::new(stream, at.b.0, at.b.1) };
    let initial = at
        .initial
        .map(|(p, n)| unsafe { Borrowed::<T>::new(stream, p, n) });
    let readout = at
        .readout
        .map(|(p, n)| unsafe { Borrowed::<T>::new(stream, p, n) });
    let mut out = unsafe { Borrowed::<T>::new(stream, at.out.0, at.out.1) };
    let mut r = DeviceRecurrence::new(batch.shape, batch.device_transition(a.get()), b.get());
    if let Some(h0) = &initial {
        r = r.initial(h0.get());
    }
    if batch.reverse {
        r = r.reverse();
    }
    if let Some(c) = &readout {
        r = r.readout(c.get());
    }
    rec.run(stream, &r, out.slice())
}

/// [`recurrence_bytes`] on the GPU of `device`, enqueued on the `CUstream`
/// handle `stream`, over device arrays given as `(address, values)`; the
/// output goes to `out`.
#[pyfunction]
#[pyo3(signature = (device, stream, real, sequences, steps, state, time_major, kind, a, b, out, initial=None, readout=None, reverse=false))]
#[allow(clippy::too_many_arguments)]
pub fn gpu_recurrence(
    py: Python<'_>,
    device: usize,
    stream: usize,
    real: &str,
    sequences: usize,
    steps: usize,
    state: usize,
    time_major: bool,
    kind: &str,
    a: (u64, usize),
    b: (u64, usize),
    out: (u64, usize),
    initial: Option<(u64, usize)>,
    readout: Option<(u64, usize)>,
    reverse: bool,
) -> PyResult<()> {
    let batch = Batch::new(sequences, steps, state, time_major, kind, reverse)?;
    let at = Addresses {
        a,
        b,
        initial,
        readout,
        out,
    };
    static RECURRENCES: OnceLock<gpu::PerDevice<GpuRecurrence>> = OnceLock::new();
    let registry = RECURRENCES.get_or_init(Default::default);
    let run =
        |stream: &Arc<CudaStream>, rec: &mut GpuRecurrence| -> PyResult<Result<(), ScanError>> {
            Ok(match real {
                "f32" => on_device::<f32>(rec, stream, &batch, &at),
                "f64" => on_device::<f64>(rec, stream, &batch, &at),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "recurrences of {other}: f32 or f64"
                    )))
                }
            })
        };
    gpu::on_device(py, device, stream, registry, GpuRecurrence::new, run)
}
