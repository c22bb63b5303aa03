//! Device memory the package allocates itself and hands to a framework
//! that has no arrays the package can allocate through (JAX): a
//! `DeviceBuffer` on the package's own stream of a device, read by the GPU
//! path through its `__cuda_array_interface__` and given away through
//! DLPack (`__dlpack__`, a `"dltensor"` capsule whose deleter frees the
//! memory), so that `jax.dlpack.from_dlpack(buffer)` owns it without a
//! copy.

use crate::gpu;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

/// DLPack's `DLDevice`.
#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor`.
#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// DLPack's `DLManagedTensor` (the unversioned capsule, `"dltensor"`).
#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `kDLCUDA`.
const DL_CUDA: i32 = 2;
/// The capsule's name until a consumer takes it (then `"used_dltensor"`).
const CAPSULE: &CStr = c"dltensor";

/// What a given-away tensor owns: the memory and its shape.
struct Owned {
    _memory: CudaSlice<u8>,
    shape: Vec<i64>,
}

/// Frees a given-away tensor (DLPack's deleter: the consumer calls it).
unsafe extern "C" fn delete_tensor(tensor: *mut DLManagedTensor) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: made by `DeviceBuffer::__dlpack__` from two boxes, deleted
    // once (by the consumer, or by the capsule no consumer took).
    unsafe {
        let tensor = Box::from_raw(tensor);
        drop(Box::from_raw(tensor.manager_ctx as *mut Owned));
    }
}

/// The capsule's destructor: deletes the tensor where no consumer took it
/// (a consumer renames the capsule `"used_dltensor"`).
unsafe extern "C" fn drop_capsule(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: CPython calls this with the capsule; its pointer is the
    // tensor made by `__dlpack__` while the name is still "dltensor".
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, CAPSULE.as_ptr()) == 1 {
            let tensor = pyo3::ffi::PyCapsule_GetPointer(capsule, CAPSULE.as_ptr());
            delete_tensor(tensor as *mut DLManagedTensor);
        } else {
            pyo3::ffi::PyErr_Clear();
        }
    }
}

/// The DLPack type of an array-interface type string (`"<f4"`, `"|u1"`).
fn dl_dtype(typestr: &str) -> PyResult<(DLDataType, usize)> {
    let size: usize = typestr
        .get(2..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| PyValueError::new_err(format!("type string {typestr:?}")))?;
    let code = match typestr.as_bytes().get(1) {
        Some(b'i') => 0,
        Some(b'u') => 1,
        Some(b'f') => 2,
        Some(b'b') => 6,
        _ => return Err(PyValueError::new_err(format!("type string {typestr:?}"))),
    };
    let dtype = DLDataType {
        code,
        bits: (8 * size) as u8,
        lanes: 1,
    };
    Ok((dtype, size))
}

/// Device memory of the package's own, on its stream of `device`, shaped
/// as an array of `typestr` elements.
#[pyclass(module = "gpu_scan._native")]
pub struct DeviceBuffer {
    memory: Option<CudaSlice<u8>>,
    device: usize,
    shape: Vec<i64>,
    typestr: String,
    stream: Arc<CudaStream>,
}

impl DeviceBuffer {
    fn memory(&self) -> PyResult<&CudaSlice<u8>> {
        self.memory
            .as_ref()
            .ok_or_else(|| PyBufferError::new_err("this buffer was given away through DLPack"))
    }
}

#[pymethods]
impl DeviceBuffer {
    /// Zeroed memory for an array of `shape` of `typestr` elements on
    /// `device`, or holding `data` (its bytes, C order) where given.
    #[new]
    #[pyo3(signature = (device, shape, typestr, data=None))]
    fn new(device: usize, shape: Vec<i64>, typestr: &str, data: Option<&[u8]>) -> PyResult<Self> {
        let (_, size) = dl_dtype(typestr)?;
        if shape.iter().any(|&d| d < 0) {
            return Err(PyValueError::new_err(format!("shape {shape:?}")));
        }
        let bytes = shape.iter().product::<i64>() as usize * size;
        let stream = gpu::own_stream(device).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let memory = match data {
            Some(data) if data.len() != bytes => {
                return Err(PyValueError::new_err(format!(
                    "{} bytes for an array of {bytes}",
                    data.len()
                )))
            }
            Some(data) => stream.clone_htod(data),
            None => stream.alloc_zeros::<u8>(bytes.max(1)),
        }
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(DeviceBuffer {
            memory: Some(memory),
            device,
            shape,
            typestr: typestr.to_string(),
            stream,
        })
    }

    /// The `CUstream` handle of the package's stream of this device, on
    /// which the buffer is written.
    #[getter]
    fn stream(&self) -> usize {
        self.stream.cu_stream() as usize
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The array interface (version 3) of the memory.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (address, _sync) = self.memory()?.device_ptr(&self.stream);
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", &self.typestr)?;
        d.set_item("data", (address, false))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        Ok(d)
    }

    /// The memory's bytes (waits for the stream).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let host = self
            .stream
            .clone_dtoh(self.memory()?)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let bytes = self.shape.iter().product::<i64>() as usize * dl_dtype(&self.typestr)?.1;
        Ok(PyBytes::new(py, &host[..bytes]))
    }

    /// DLPack's device: CUDA, this buffer's device.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DL_CUDA, self.device as i32)
    }

    /// Gives the memory away as a DLPack capsule (once), after the work
    /// enqueued on the package's stream (it waits for the stream: the
    /// consumer's stream then sees the data).
    #[pyo3(signature = (**_kwargs))]
    fn __dlpack__<'py>(
        &mut self,
        py: Python<'py>,
        _kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (dtype, _) = dl_dtype(&self.typestr)?;
        self.memory()?;
        self.stream
            .synchronize()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let memory = self.memory.take().expect("checked above");
        let (address, _) = memory.device_ptr(&self.stream);
        let mut owned = Box::new(Owned {
            _memory: memory,
            shape: self.shape.clone(),
        });
        let tensor = Box::new(DLManagedTensor {
            dl_tensor: DLTensor {
                data: address as *mut c_void,
                device: DLDevice {
                    device_type: DL_CUDA,
                    device_id: self.device as i32,
                },
                ndim: self.shape.len() as i32,
                dtype,
                shape: owned.shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: Box::into_raw(owned) as *mut c_void,
            deleter: Some(delete_tensor),
        });
        let tensor = Box::into_raw(tensor);
        // SAFETY: a new capsule owning `tensor` until a consumer renames it
        // (then the consumer calls the deleter) or it is collected (then
        // `drop_capsule` does).
        let capsule = unsafe {
            pyo3::ffi::PyCapsule_New(tensor as *mut c_void, CAPSULE.as_ptr(), Some(drop_capsule))
        };
        if capsule.is_null() {
            // SAFETY: no capsule owns it.
            unsafe { delete_tensor(tensor) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference, just made.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
    }
}

/// The name of a capsule a consumer took.
const USED_CAPSULE: &CStr = c"used_dltensor";

/// `kDLCPU`, `kDLCUDAHost`, `kDLCUDAManaged`: memory a host or a CUDA
/// kernel can address besides `kDLCUDA`.
const DL_CPU: i32 = 1;

/// A tensor another library gave through DLPack (a `"dltensor"` capsule
/// from its `__dlpack__`), held until this view is dropped (then its
/// deleter runs) and described as an array interface, so that the GPU
/// path reads it as it reads a PyTorch tensor or a CuPy array.
#[pyclass(module = "gpu_scan._native", unsendable)]
pub struct DlpackView {
    tensor: *mut DLManagedTensor,
}

impl Drop for DlpackView {
    fn drop(&mut self) {
        // SAFETY: the tensor this view took from its capsule (renamed
        // "used_dltensor", so the capsule no longer deletes it): deleted
        // once, here, with the GIL held (pyclass values drop under it), as
        // a producer's deleter may touch Python objects.
        unsafe {
            if let Some(deleter) = (*self.tensor).deleter {
                deleter(self.tensor);
            }
        }
    }
}

impl DlpackView {
    fn tensor(&self) -> &DLTensor {
        // SAFETY: valid until the deleter runs, in drop.
        unsafe { &(*self.tensor).dl_tensor }
    }
}

/// An array-interface type string of a DLPack type.
fn typestr_of(dtype: &DLDataType) -> PyResult<String> {
    let kind = match dtype.code {
        0 => 'i',
        1 => 'u',
        2 => 'f',
        6 => 'b',
        code => {
            return Err(PyValueError::new_err(format!(
                "DLPack type code {code}: integers, floats and bools are taken"
            )))
        }
    };
    if dtype.lanes != 1 || dtype.bits % 8 != 0 || dtype.bits == 0 {
        return Err(PyValueError::new_err(format!(
            "DLPack type of {} bits in {} lanes: one lane of whole bytes",
            dtype.bits, dtype.lanes
        )));
    }
    let bytes = dtype.bits / 8;
    let order = if bytes == 1 { '|' } else { '<' };
    Ok(format!("{order}{kind}{bytes}"))
}

#[pymethods]
impl DlpackView {
    /// Takes the tensor of `capsule` (a `"dltensor"` capsule, which is
    /// renamed `"used_dltensor"`, as DLPack's consumers do).
    #[new]
    fn new(capsule: &Bound<'_, PyAny>) -> PyResult<Self> {
        let ptr = capsule.as_ptr();
        // SAFETY: `ptr` is a live object; the capsule API checks its type
        // and name.
        unsafe {
            if pyo3::ffi::PyCapsule_IsValid(ptr, CAPSULE.as_ptr()) != 1 {
                return Err(PyValueError::new_err(
                    "not an unused \"dltensor\" capsule (from an array's __dlpack__())",
                ));
            }
            let tensor =
                pyo3::ffi::PyCapsule_GetPointer(ptr, CAPSULE.as_ptr()) as *mut DLManagedTensor;
            if tensor.is_null() || pyo3::ffi::PyCapsule_SetName(ptr, USED_CAPSULE.as_ptr()) != 0 {
                return Err(PyErr::fetch(capsule.py()));
            }
            Ok(DlpackView { tensor })
        }
    }

    /// DLPack's device of the tensor: `(device_type, device_id)`.
    #[getter]
    fn device(&self) -> (i32, i32) {
        let d = &self.tensor().device;
        (d.device_type, d.device_id)
    }

    /// The tensor as an array interface (version 3): shape, type string,
    /// address (its data and byte offset), strides in bytes (`None` where
    /// DLPack gives none: C order).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.tensor();
        let typestr = typestr_of(&t.dtype)?;
        let itemsize = i64::from(t.dtype.bits / 8);
        let ndim = usize::try_from(t.ndim).map_err(|_| PyValueError::new_err("negative ndim"))?;
        // SAFETY: DLPack's shape and strides hold `ndim` entries each
        // (strides may be null) for as long as the tensor lives.
        let shape: Vec<i64> = if ndim == 0 {
            Vec::new()
        } else {
            unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
        };
        let strides: Option<Vec<i64>> = (!t.strides.is_null() && ndim > 0).then(|| {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(t.strides, ndim) }
                .iter()
                .map(|s| s * itemsize)
                .collect()
        });
        let address = (t.data as u64).wrapping_add(t.byte_offset);
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &shape)?)?;
        d.set_item("typestr", typestr)?;
        d.set_item("data", (address, false))?;
        match strides {
            Some(s) => d.set_item("strides", PyTuple::new(py, &s)?)?,
            None => d.set_item("strides", py.None())?,
        }
        d.set_item("version", 3)?;
        Ok(d)
    }

    /// Whether the tensor is in host memory (`kDLCPU`).
    #[getter]
    fn on_host(&self) -> bool {
        self.tensor().device.device_type == DL_CPU
    }
}
