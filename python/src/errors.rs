//! The Python exception hierarchy and the conversion of every Rust error into it.
//!
//! All of them derive from `maskforge.MaskforgeError`, itself a `ValueError`: what a serving
//! engine catches for a bad request (bad grammar, schema, token id, bitmask) without catching
//! its own bugs. The message is the Rust error's, unchanged.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(maskforge, MaskforgeError, PyValueError, "Base class of every error maskforge raises.");
create_exception!(maskforge, GrammarError, MaskforgeError, "A malformed EBNF grammar or an ill-formed grammar.");
create_exception!(maskforge, SchemaError, MaskforgeError, "A malformed, unsatisfiable or too large JSON Schema.");
create_exception!(maskforge, RegexError, MaskforgeError, "A malformed regex or one a grammar cannot enforce.");
create_exception!(maskforge, StructuralTagError, MaskforgeError, "A malformed structural tag.");
create_exception!(maskforge, ProtocolError, MaskforgeError, "An unknown protocol, malformed tools or tool_choice.");
create_exception!(maskforge, TokenizerError, MaskforgeError, "A tokenizer that cannot be loaded or built.");
create_exception!(
    maskforge,
    MatcherError,
    MaskforgeError,
    "A matcher call with bad arguments (token id, rollback) or over its bounds (max_step_items, max_state_bytes)."
);
create_exception!(
    maskforge,
    BitmaskError,
    MaskforgeError,
    "A bitmask or logits array of the wrong dtype, shape or layout."
);
create_exception!(
    maskforge,
    CompileInterruptedError,
    MaskforgeError,
    "A compile stopped by its deadline or byte budget (GrammarCompiler's compile_timeout, max_compile_bytes)."
);
create_exception!(
    maskforge,
    InternalError,
    MaskforgeError,
    "A bug in maskforge (a Rust panic, caught at the boundary)."
);

/// Registers the exception classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MaskforgeError", py.get_type::<MaskforgeError>())?;
    m.add("GrammarError", py.get_type::<GrammarError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("RegexError", py.get_type::<RegexError>())?;
    m.add("StructuralTagError", py.get_type::<StructuralTagError>())?;
    m.add("ProtocolError", py.get_type::<ProtocolError>())?;
    m.add("TokenizerError", py.get_type::<TokenizerError>())?;
    m.add("MatcherError", py.get_type::<MatcherError>())?;
    m.add("BitmaskError", py.get_type::<BitmaskError>())?;
    m.add("CompileInterruptedError", py.get_type::<CompileInterruptedError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}

/// The Python exception for a library error: its class says which front-end or layer failed.
pub fn to_py(err: maskforge::Error) -> PyErr {
    use maskforge::Error as E;
    let msg = err.to_string();
    match err {
        // A grammar the pushdown automaton cannot serve (`parser="pda"`) is a grammar problem.
        E::Grammar(_) | E::Ebnf(_) | E::Pda(_) => GrammarError::new_err(msg),
        E::Schema(_) => SchemaError::new_err(msg),
        E::Regex(_) => RegexError::new_err(msg),
        E::StructuralTag(_) => StructuralTagError::new_err(msg),
        E::Protocol(_) => ProtocolError::new_err(msg),
        E::Vocab(_) | E::PoolVocabulary { .. } => TokenizerError::new_err(msg),
        E::Matcher(_) => MatcherError::new_err(msg),
        E::Interrupted(_) => CompileInterruptedError::new_err(msg),
        _ => MaskforgeError::new_err(msg),
    }
}

/// A tokenizer error as a Python exception.
pub fn vocab_err(err: maskforge::VocabError) -> PyErr {
    TokenizerError::new_err(err.to_string())
}

/// A matcher error as a Python exception.
pub fn matcher_err(err: maskforge::MatcherError) -> PyErr {
    MatcherError::new_err(err.to_string())
}

/// Runs `work` without the GIL (compiles, fills and batch work take microseconds to seconds
/// and must not stop the engine's other Python threads), turning a panic into
/// [`InternalError`] so that none unwinds into Python.
pub fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> PyResult<T> + Send,
{
    py.detach(|| catch_unwind(AssertUnwindSafe(work))).unwrap_or_else(|panic| Err(panic_err(panic)))
}

/// As [`detached`], holding the GIL (for calls too short to pay for releasing it).
pub fn guarded<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| Err(panic_err(panic)))
}

fn panic_err(panic: Box<dyn Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    InternalError::new_err(format!("internal error (please report): {what}"))
}
