//! Borrowing an engine's bitmask (a numpy array, or a torch CPU tensor) as `&mut [u32]` rows,
//! without a copy. A `torch.Tensor` is read directly (`torch_tensor`); a subclass of it goes
//! through `Tensor.numpy()`, a view of the same memory.
//!
//! Every check (type, device, dtype, layout, shape, row index) runs before anything is
//! written, so a bad bitmask raises `BitmaskError` and leaves the array as it was.

use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors::BitmaskError;
use crate::torch_tensor::{borrow_exact_tensor, not_contiguous, TensorWords};

/// A bitmask borrowed for writing: `rows × words` int32, C-contiguous.
pub struct BorrowedBitmask<'py> {
    memory: Memory<'py>,
    /// 1 for a 1-D bitmask.
    pub rows: usize,
    /// Words per row.
    pub words: usize,
}

/// Where the words are.
enum Memory<'py> {
    Numpy(PyReadwriteArrayDyn<'py, i32>),
    Torch(TensorWords<'py>),
}

impl<'py> BorrowedBitmask<'py> {
    /// Borrows `obj` as a bitmask of rows of `words` words (1-D: one row; 2-D: `(rows, words)`).
    pub fn new(obj: &Bound<'py, PyAny>, words: usize) -> PyResult<Self> {
        if let Some(tensor) = borrow_exact_tensor(obj)? {
            let rows = rows_of(&tensor.shape, words)?;
            return Ok(BorrowedBitmask { memory: Memory::Torch(tensor), rows, words });
        }
        let array = as_ndarray(obj)?;
        let dtype = array.dtype();
        if !dtype.is_equiv_to(&numpy::dtype::<i32>(obj.py())) {
            return Err(BitmaskError::new_err(format!("the bitmask must have dtype int32, not {}", dtype.str()?)));
        }
        let rows = rows_of(array.shape(), words)?;
        if !array.is_c_contiguous() {
            return Err(not_contiguous());
        }
        let typed = array.cast::<PyArrayDyn<i32>>().map_err(|e| BitmaskError::new_err(e.to_string()))?;
        let array =
            typed.try_readwrite().map_err(|e| BitmaskError::new_err(format!("the bitmask cannot be written: {e}")))?;
        Ok(BorrowedBitmask { memory: Memory::Numpy(array), rows, words })
    }

    /// All rows, as one slice of words.
    pub fn words_mut(&mut self) -> PyResult<&mut [u32]> {
        match &mut self.memory {
            Memory::Torch(tensor) => Ok(tensor.words_mut()),
            Memory::Numpy(array) => {
                let slice = array.as_slice_mut().map_err(|e| BitmaskError::new_err(e.to_string()))?;
                // SAFETY: i32 and u32 have the same size and alignment and every bit pattern is
                // valid for both; the slice is borrowed mutably for as long as the returned one.
                Ok(unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast::<u32>(), slice.len()) })
            }
        }
    }

    /// Row `index`.
    pub fn row_mut(&mut self, index: usize) -> PyResult<&mut [u32]> {
        let (rows, words) = (self.rows, self.words);
        if index >= rows {
            return Err(BitmaskError::new_err(format!("index {index} is out of range for a bitmask of {rows} rows")));
        }
        Ok(&mut self.words_mut()?[index * words..(index + 1) * words])
    }
}

/// The number of rows of a bitmask of `shape`: `(words,)` is one row, `(rows, words)` is `rows`.
fn rows_of(shape: &[usize], words: usize) -> PyResult<usize> {
    match shape {
        [w] if *w == words => Ok(1),
        [r, w] if *w == words => Ok(*r),
        _ => Err(BitmaskError::new_err(format!(
            "the bitmask has shape {shape:?}; expected (batch_size, {words}) or ({words},) for this vocabulary"
        ))),
    }
}

/// `obj` as a numpy array: itself, or the `numpy()` view of a tensor that is not exactly a
/// `torch.Tensor` (CPU only; a view of the same memory, about 1 µs).
fn as_ndarray<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        return Ok(array.clone());
    }
    // Duck-typed: whatever has `numpy()` (a torch tensor) is asked for its view.
    match obj.call_method0("numpy") {
        Ok(view) => view.cast_into::<PyUntypedArray>().map_err(|e| BitmaskError::new_err(e.to_string())),
        Err(e) if obj.hasattr("data_ptr")? => {
            Err(BitmaskError::new_err(format!("the bitmask must be a CPU tensor or a numpy array: {e}")))
        }
        Err(_) => Err(BitmaskError::new_err(format!(
            "the bitmask must be a numpy array or a torch tensor, not {}",
            obj.get_type().name()?
        ))),
    }
}
