//! `maskforge._core`: the Rust extension module of the `maskforge` Python package.
//!
//! Each class wraps one type of the library 1:1 with XGrammar's Python names and keyword
//! arguments (`python/maskforge/__init__.py` re-exports them and adds the pure-Python bitmask
//! helpers). Conventions kept by every module:
//!
//! * long work (compiles, mask fills, batch calls) runs without the GIL
//!   ([`errors::detached`]);
//! * every Rust error becomes an exception of the `maskforge.MaskforgeError` (`ValueError`)
//!   hierarchy with the Rust message, and no panic unwinds into Python;
//! * arguments are checked before anything is written (a bad bitmask is left untouched).

mod bitmask;
mod compiler;
mod errors;
mod matcher;
mod tokenizer;
mod torch_tensor;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<tokenizer::VocabType>()?;
    m.add_class::<tokenizer::TokenizerInfo>()?;
    m.add_class::<compiler::GrammarCompiler>()?;
    m.add_class::<compiler::CompiledGrammar>()?;
    m.add_class::<matcher::GrammarMatcher>()?;
    m.add_class::<matcher::BatchGrammarMatcher>()?;
    m.add_function(wrap_pyfunction!(protocol_names, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// The names of the tool-calling protocols `GrammarCompiler.compile_protocol` knows.
#[pyfunction]
fn protocol_names() -> Vec<String> {
    maskforge::protocol_names().into_iter().map(|s| s.to_string()).collect()
}
