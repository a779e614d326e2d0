//! A torch CPU tensor's memory, read from the tensor itself (`data_ptr()`, `dtype`, `is_cpu`,
//! `shape`, `is_contiguous()`) instead of through `Tensor.numpy()`: making that view cost
//! about 0.9 µs per call, more than the rest of the Python overhead of a fill (numpy bitmask:
//! 0.3 µs; torch through this module: 0.6 µs; `docs/benchmarks.md`, session 8).
//!
//! Only tensors whose type is exactly `torch.Tensor` take this path: a subclass may override
//! any of these methods, so it goes through `numpy()`, whose answer numpy checks. torch is
//! never imported here; its types are looked up in `sys.modules` once a program has imported
//! it (a tensor cannot exist before that).
//!
//! # The pointer
//!
//! [`TensorWords`] holds a strong reference to the tensor, so the tensor and its storage live
//! at least as long as the words are borrowed. By torch's layout rules a strided, contiguous
//! int32 tensor of `n` elements owns the `4n` bytes at `data_ptr()`. The words are written
//! while the GIL is released (as for numpy arrays): the caller must not resize, `set_` or free
//! the tensor's storage from another thread during the call, the same contract as for any
//! torch operation writing into a tensor.

use std::ptr::NonNull;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use crate::errors::BitmaskError;

/// The torch objects the checks compare with, looked up once.
struct TorchTypes {
    tensor: Py<PyType>,
    int32: Py<PyAny>,
}

static TORCH: PyOnceLock<TorchTypes> = PyOnceLock::new();

/// torch's types if the program has imported torch, else `None` (torch is optional).
fn torch_types(py: Python<'_>) -> PyResult<Option<&'static TorchTypes>> {
    if let Some(types) = TORCH.get(py) {
        return Ok(Some(types));
    }
    let modules = py.import(intern!(py, "sys"))?.getattr(intern!(py, "modules"))?;
    let Ok(torch) = modules.get_item(intern!(py, "torch")) else { return Ok(None) };
    let types = TorchTypes {
        tensor: torch.getattr(intern!(py, "Tensor"))?.cast_into::<PyType>()?.unbind(),
        int32: torch.getattr(intern!(py, "int32"))?.unbind(),
    };
    Ok(Some(TORCH.get_or_init(py, || types)))
}

/// The words of a checked tensor (int32, CPU, C-contiguous), borrowed for writing.
pub struct TensorWords<'py> {
    /// Keeps the tensor, hence its storage, alive while `words` is borrowed.
    _tensor: Bound<'py, PyAny>,
    words: NonNull<u32>,
    len: usize,
    /// The tensor's shape.
    pub shape: Vec<usize>,
}

impl TensorWords<'_> {
    /// All the tensor's elements, as `u32` words.
    pub fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: `words` points at the `len` int32 elements of a contiguous CPU tensor that
        // `_tensor` keeps alive (see the module documentation for the storage contract), it is
        // non-null and 4-byte aligned (checked in `borrow_exact_tensor`, dangling when empty),
        // and i32 and u32 share size, alignment and every bit pattern. `&mut self` makes this
        // the only borrow of the words.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_ptr(), self.len) }
    }
}

/// `Some(words)` if `obj` is exactly a `torch.Tensor` that passes every check (int32, CPU,
/// C-contiguous, aligned); an error for a tensor that fails one; `None` for anything else
/// (numpy arrays, subclasses of `torch.Tensor`), which the caller handles its own way.
pub fn borrow_exact_tensor<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<TensorWords<'py>>> {
    let py = obj.py();
    let Some(torch) = torch_types(py)? else { return Ok(None) };
    if !obj.get_type().is(torch.tensor.bind(py)) {
        return Ok(None);
    }
    let dtype = obj.getattr(intern!(py, "dtype"))?;
    if !dtype.is(torch.int32.bind(py)) {
        return Err(BitmaskError::new_err(format!("the bitmask must have dtype int32, not {dtype}")));
    }
    if !obj.getattr(intern!(py, "is_cpu"))?.is_truthy()? {
        let device = obj.getattr(intern!(py, "device"))?;
        return Err(BitmaskError::new_err(format!(
            "the bitmask must be a CPU tensor or a numpy array, not a tensor on {device}"
        )));
    }
    let shape = tensor_shape(obj)?;
    // Raises for layouts without strides (sparse tensors): a BitmaskError, nothing written.
    let contiguous = obj.call_method0(intern!(py, "is_contiguous")).map_err(as_bitmask_err)?;
    if !contiguous.is_truthy()? {
        return Err(not_contiguous());
    }
    let len = shape.iter().product::<usize>();
    let address = obj.call_method0(intern!(py, "data_ptr")).map_err(as_bitmask_err)?.extract::<usize>()?;
    let words = if len == 0 {
        NonNull::dangling()
    } else {
        match NonNull::new(address as *mut u32) {
            Some(p) if address % std::mem::align_of::<u32>() == 0 => p,
            _ => return Err(BitmaskError::new_err(format!("the bitmask's data at {address:#x} is not int32-aligned"))),
        }
    };
    Ok(Some(TensorWords { _tensor: obj.clone(), words, len, shape }))
}

/// The tensor's `shape` (a `torch.Size`, a tuple subclass) as sizes.
fn tensor_shape(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let size = obj.getattr(intern!(obj.py(), "shape"))?;
    let size = size.cast::<PyTuple>().map_err(|e| BitmaskError::new_err(e.to_string()))?;
    size.iter().map(|d| d.extract::<usize>()).collect()
}

/// The error for a bitmask whose rows are not packed one after another.
pub fn not_contiguous() -> PyErr {
    BitmaskError::new_err("the bitmask is not contiguous (use .contiguous() / np.ascontiguousarray)")
}

/// A torch error about the bitmask (no strides, no storage) as a [`BitmaskError`].
fn as_bitmask_err(err: PyErr) -> PyErr {
    BitmaskError::new_err(format!("the bitmask cannot be written: {err}"))
}
