//! Borrowing an engine's bitmask (a numpy array, or a torch CPU tensor through
//! `Tensor.numpy()`, which shares its memory) as `&mut [u32]` rows, without a copy.
//!
//! Every check (type, device, dtype, layout, shape, row index) runs before anything is
//! written, so a bad bitmask raises `BitmaskError` and leaves the array as it was.

use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors::BitmaskError;

/// A bitmask borrowed for writing: `rows × words` int32, C-contiguous.
pub struct BorrowedBitmask<'py> {
    array: PyReadwriteArrayDyn<'py, i32>,
    /// 1 for a 1-D bitmask.
    pub rows: usize,
    /// Words per row.
    pub words: usize,
}

impl<'py> BorrowedBitmask<'py> {
    /// Borrows `obj` as a bitmask of rows of `words` words (1-D: one row; 2-D: `(rows, words)`).
    pub fn new(obj: &Bound<'py, PyAny>, words: usize) -> PyResult<Self> {
        let array = as_ndarray(obj)?;
        let dtype = array.dtype();
        if !dtype.is_equiv_to(&numpy::dtype::<i32>(obj.py())) {
            return Err(BitmaskError::new_err(format!("the bitmask must have dtype int32, not {}", dtype.str()?)));
        }
        let shape = array.shape().to_vec();
        let rows = match shape.as_slice() {
            [w] if *w == words => 1,
            [r, w] if *w == words => *r,
            _ => {
                return Err(BitmaskError::new_err(format!(
                    "the bitmask has shape {shape:?}; expected (batch_size, {words}) or ({words},) for this vocabulary"
                )))
            }
        };
        if !array.is_c_contiguous() {
            return Err(BitmaskError::new_err(
                "the bitmask is not contiguous (use .contiguous() / np.ascontiguousarray)",
            ));
        }
        let typed = array.cast::<PyArrayDyn<i32>>().map_err(|e| BitmaskError::new_err(e.to_string()))?;
        let array =
            typed.try_readwrite().map_err(|e| BitmaskError::new_err(format!("the bitmask cannot be written: {e}")))?;
        Ok(BorrowedBitmask { array, rows, words })
    }

    /// All rows, as one slice of words.
    pub fn words_mut(&mut self) -> PyResult<&mut [u32]> {
        let slice = self.array.as_slice_mut().map_err(|e| BitmaskError::new_err(e.to_string()))?;
        // SAFETY: i32 and u32 have the same size and alignment and every bit pattern is valid
        // for both; the slice is borrowed mutably for as long as the returned one.
        Ok(unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast::<u32>(), slice.len()) })
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

/// `obj` as a numpy array: itself, or a torch tensor's `numpy()` view (CPU only; a view of the
/// same memory, about 1 µs, the cost of taking a tensor).
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
