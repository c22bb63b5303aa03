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
