//! `GrammarCompiler` and `CompiledGrammar`: the compile side of XGrammar's API.

use std::sync::RwLock;

use maskforge::{CompilerConfig, JsonSchemaOptions, ProtocolOptions, ToolChoice};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};
use serde_json::Value;

use crate::errors::{detached, to_py, MaskforgeError, ProtocolError, SchemaError};
use crate::tokenizer::TokenizerInfo;

/// A grammar compiled for one tokenizer: immutable, shared by any number of matchers and
/// threads.
#[pyclass(module = "maskforge", frozen, from_py_object)]
#[derive(Clone)]
pub struct CompiledGrammar {
    pub(crate) inner: maskforge::CompiledGrammar,
}

#[pymethods]
impl CompiledGrammar {
    /// Bytes held by the grammar (automata, token-mask cache), shared caches excluded.
    #[getter]
    fn memory_size_bytes(&self) -> usize {
        self.inner.memory_usage()
    }

    /// The parsing path the grammar's matchers run: `"earley"` or `"pda"` (see the `parser`
    /// option of `GrammarCompiler`).
    #[getter]
    fn parser(&self) -> &'static str {
        self.inner.parser().name()
    }

    /// The tokenizer the grammar was compiled for.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        TokenizerInfo::wrap(self.inner.vocabulary().clone())
    }

    /// The grammar as EBNF text (XGrammar's dialect).
    #[getter]
    fn grammar(&self) -> String {
        self.inner.grammar().to_string()
    }

    /// For a JSON Schema (or a structural tag or protocol holding schemas): every keyword not
    /// enforced exactly, as `{"keyword", "pointer", "detail"}` dicts; empty when the grammar is
    /// exact; `None` for other grammars.
    #[getter]
    fn json_schema_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(report) = self.inner.json_schema_report() else { return Ok(None) };
        let items = report
            .relaxations
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("keyword", &r.keyword)?;
                d.set_item("pointer", &r.pointer)?;
                d.set_item("detail", &r.detail)?;
                Ok(d)
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Some(PyList::new(py, items)?))
    }

    /// The grammar in maskforge's saved format: its automata and the token-mask cache entries
    /// built so far, with a checksum and the tokenizer's fingerprint. Load it with
    /// `CompiledGrammar.deserialize(data, tokenizer_info)`; it is much faster than compiling.
    fn serialize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner.clone();
        let bytes = detached(py, move || Ok(inner.serialize()))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A grammar saved by `serialize`, for the same tokenizer. A truncated, corrupted,
    /// wrong-version or wrong-tokenizer input raises `MaskforgeError` (nothing is returned).
    #[staticmethod]
    fn deserialize(py: Python<'_>, data: &[u8], tokenizer_info: &TokenizerInfo) -> PyResult<CompiledGrammar> {
        let vocab = tokenizer_info.vocab.clone();
        let data = data.to_vec();
        detached(py, move || {
            maskforge::CompiledGrammar::deserialize(&data, &vocab).map_err(|e| to_py(maskforge::Error::from(e)))
        })
        .map(|inner| CompiledGrammar { inner })
    }

    fn __repr__(&self) -> String {
        format!("CompiledGrammar(memory_size_bytes={})", self.inner.memory_usage())
    }
}

/// Compiles grammars for one tokenizer; keeps the caches that make repeated and similar
/// requests cheap. Thread-safe: compiles release the GIL and may run from several threads.
#[pyclass(module = "maskforge", frozen)]
pub struct GrammarCompiler {
    inner: SharedCompiler,
}

#[pymethods]
impl GrammarCompiler {
    /// `max_threads` is accepted for compatibility (a compile runs on the calling thread;
    /// compile from several threads for parallelism). `cache_enabled=False` turns off the
    /// whole-grammar cache; `cache_limit_bytes >= 0` bounds the cross-grammar mask pool.
    /// `parser` picks the parsing path of the compiled grammars: `"auto"` (the pushdown
    /// automaton where it serves the grammar, else Earley), `"earley"`, or `"pda"` (a grammar
    /// the PDA cannot serve is then a `GrammarError`); `CompiledGrammar.parser` says which ran.
    /// For untrusted input: `compile_timeout` (seconds, default none) and `max_compile_bytes`
    /// (default the library's, 256 MiB) bound every compile of this compiler; over either, the
    /// compile raises `CompileInterruptedError` and nothing of it is cached.
    #[new]
    #[pyo3(signature = (tokenizer_info, *, max_threads = 8, cache_enabled = true, cache_limit_bytes = -1, parser = "auto", compile_timeout = None, max_compile_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tokenizer_info: &TokenizerInfo,
        max_threads: i64,
        cache_enabled: bool,
        cache_limit_bytes: i64,
        parser: &str,
        compile_timeout: Option<f64>,
        max_compile_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let _ = max_threads;
        let parser: maskforge::Parser = parser
            .parse()
            .map_err(|e: maskforge::UnknownParser| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        let mut config = CompilerConfig::default().parser(parser);
        if !cache_enabled {
            config = config.grammar_cache_len(0);
        }
        if cache_limit_bytes >= 0 {
            config = config.pool_bytes(cache_limit_bytes as usize);
        }
        if let Some(seconds) = compile_timeout {
            let limit = std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "compile_timeout must be a number of seconds >= 0, not {seconds}"
                ))
            })?;
            config = config.compile_timeout(limit);
        }
        if let Some(bytes) = max_compile_bytes {
            config = config.max_compile_bytes(bytes);
        }
        let compiler = maskforge::GrammarCompiler::new(tokenizer_info.vocab.clone(), config);
        Ok(GrammarCompiler { inner: SharedCompiler::new(compiler) })
    }

    /// Compiles a JSON Schema given as text, a dict, or a pydantic model class.
    #[pyo3(signature = (schema, *, any_whitespace = true, indent = None, separators = None, strict_mode = true, max_whitespace_cnt = None, strict_keywords = false))]
    #[allow(clippy::too_many_arguments)]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        any_whitespace: bool,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        strict_mode: bool,
        max_whitespace_cnt: Option<u32>,
        strict_keywords: bool,
    ) -> PyResult<CompiledGrammar> {
        let text = schema_text(schema)?;
        let options = JsonSchemaOptions {
            any_whitespace,
            indent,
            separators,
            strict_mode,
            max_whitespace_cnt,
            strict_keywords,
            ..JsonSchemaOptions::default()
        };
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_json_schema_str(&text, &options).map_err(to_py)))
    }

    /// Compiles an EBNF grammar (XGrammar's dialect) starting at `root_rule_name`.
    #[pyo3(signature = (ebnf_string, *, root_rule_name = "root"))]
    fn compile_grammar(&self, py: Python<'_>, ebnf_string: &str, root_rule_name: &str) -> PyResult<CompiledGrammar> {
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_grammar_with_root(ebnf_string, root_rule_name).map_err(to_py)))
    }

    /// Compiles an ECMA-262 regex that the whole output must match.
    fn compile_regex(&self, py: Python<'_>, regex: &str) -> PyResult<CompiledGrammar> {
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_regex(regex).map_err(to_py)))
    }

    /// The grammar of any JSON value.
    fn compile_builtin_json_grammar(&self, py: Python<'_>) -> PyResult<CompiledGrammar> {
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_builtin_json_grammar().map_err(to_py)))
    }

    /// Compiles a structural tag (XGrammar's `{"type": "structural_tag", "format": ...}`),
    /// given as text or a dict.
    fn compile_structural_tag(&self, py: Python<'_>, structural_tag: &Bound<'_, PyAny>) -> PyResult<CompiledGrammar> {
        let text = json_text(structural_tag, "structural_tag")?;
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_structural_tag_str(&text).map_err(to_py)))
    }

    /// Compiles the tool-calling format of model protocol `name` (`"qwen"`, `"llama"`,
    /// `"harmony"`, ...) for OpenAI-shaped `tools` (a list, or its JSON text) and `tool_choice`
    /// (`"auto"`, `"none"`, `"required"`, a function name, or OpenAI's dict form).
    #[pyo3(signature = (name, tools, tool_choice = None, *, reasoning = false, parallel_tool_calls = true))]
    fn compile_protocol(
        &self,
        py: Python<'_>,
        name: &str,
        tools: &Bound<'_, PyAny>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        reasoning: bool,
        parallel_tool_calls: bool,
    ) -> PyResult<CompiledGrammar> {
        let tools: Vec<Value> = match parse_json(&json_text(tools, "tools")?, "tools", ProtocolError::new_err)? {
            Value::Array(items) => items,
            _ => return Err(ProtocolError::new_err("tools must be a list of tools")),
        };
        let choice = match tool_choice {
            None => ToolChoice::Auto,
            Some(c) => {
                let v = match c.cast::<PyString>() {
                    Ok(s) => Value::String(s.to_cow()?.into_owned()),
                    Err(_) => parse_json(&json_text(c, "tool_choice")?, "tool_choice", ProtocolError::new_err)?,
                };
                ToolChoice::from_json(&v).map_err(|e| to_py(e.into()))?
            }
        };
        let options = ProtocolOptions { reasoning, parallel_tool_calls };
        let compiler = self.inner.get();
        compiled(detached(py, || compiler.compile_protocol(name, &tools, &choice, &options).map_err(to_py)))
    }

    /// Drops every cached grammar, rule automaton and pooled mask.
    fn clear_cache(&self) {
        self.inner.clear();
    }

    /// Bytes held by the cross-grammar mask pool.
    fn get_cache_size_bytes(&self) -> usize {
        self.inner.get().pool_stats().bytes
    }

    /// The tokenizer of this compiler.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        TokenizerInfo::wrap(self.inner.get().vocabulary().clone())
    }
}

fn compiled(result: PyResult<maskforge::CompiledGrammar>) -> PyResult<CompiledGrammar> {
    result.map(|inner| CompiledGrammar { inner })
}

/// A JSON Schema argument as text: a `str` as is, a dict through `json.dumps`, a pydantic
/// model class through its `model_json_schema()`.
fn schema_text(schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if schema.is_instance_of::<PyType>() {
        if !schema.hasattr("model_json_schema")? {
            return Err(SchemaError::new_err("a schema class must be a pydantic model (with model_json_schema())"));
        }
        return json_text(&schema.call_method0("model_json_schema")?, "schema");
    }
    json_text(schema, "schema")
}

/// A JSON argument as text: a `str` as is, anything else through `json.dumps`.
fn json_text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_cow()?.to_string());
    }
    let json = value.py().import("json")?;
    match json.call_method1("dumps", (value,)) {
        Ok(text) => Ok(text.extract()?),
        Err(e) => Err(MaskforgeError::new_err(format!("{what} is not JSON-serializable: {e}"))),
    }
}

fn parse_json(text: &str, what: &str, err: fn(String) -> PyErr) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| err(format!("{what} is not valid JSON: {e}")))
}

/// The compiler behind a lock, so that `clear_cache` can replace it by a fresh one with the
/// same vocabulary and configuration while other threads keep the clone they compile with.
struct SharedCompiler(RwLock<maskforge::GrammarCompiler>);

impl SharedCompiler {
    fn new(compiler: maskforge::GrammarCompiler) -> Self {
        SharedCompiler(RwLock::new(compiler))
    }

    /// A clone (cheap: clones share the caches).
    fn get(&self) -> maskforge::GrammarCompiler {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn clear(&self) {
        let mut guard = self.0.write().unwrap_or_else(|e| e.into_inner());
        *guard = maskforge::GrammarCompiler::new(guard.vocabulary().clone(), guard.config().clone());
    }
}
