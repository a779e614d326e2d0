//! `GrammarMatcher` (one per request) and `BatchGrammarMatcher` (one call per decoding step
//! for a whole batch).

use std::sync::OnceLock;

use maskforge::MatcherConfig;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::bitmask::BorrowedBitmask;
use crate::compiler::CompiledGrammar;
use crate::errors::{detached, guarded, matcher_err, MatcherError};

/// The state of one generation against a compiled grammar.
#[pyclass(module = "maskforge")]
pub struct GrammarMatcher {
    /// `None` only while a batch call holds the matcher (and its Python borrow).
    inner: Option<maskforge::GrammarMatcher>,
    max_rollback_tokens: i64,
    max_step_items: u64,
    max_state_bytes: usize,
}

impl GrammarMatcher {
    fn get(&self) -> &maskforge::GrammarMatcher {
        self.inner.as_ref().expect("a matcher is taken only during a batch call that borrows it")
    }

    fn get_mut(&mut self) -> &mut maskforge::GrammarMatcher {
        self.inner.as_mut().expect("a matcher is taken only during a batch call that borrows it")
    }

    fn vocab_size(&self) -> usize {
        self.get().grammar().vocabulary().vocab_size()
    }

    /// Words per bitmask row.
    fn mask_words(&self) -> usize {
        self.vocab_size().div_ceil(32)
    }

    /// A token id from Python, checked against the vocabulary.
    fn token_id(&self, id: i64) -> PyResult<u32> {
        let vocab_size = self.vocab_size();
        if id < 0 || id as u64 >= vocab_size as u64 {
            return Err(MatcherError::new_err(format!(
                "token id {id} is out of range for a vocabulary of {vocab_size} tokens"
            )));
        }
        Ok(id as u32)
    }

    fn token_ids(&self, ids: &[i64]) -> PyResult<Vec<u32>> {
        ids.iter().map(|&id| self.token_id(id)).collect()
    }
}

#[pymethods]
impl GrammarMatcher {
    /// A matcher at the start of `compiled_grammar`. `override_stop_tokens` replaces the
    /// tokenizer's stop tokens; `max_rollback_tokens=-1` means unlimited.
    ///
    /// Bounds for untrusted grammars and inputs (`None`: the library's default): a call
    /// (`accept_token`, `accept_string`, a mask fill) that makes the parser visit more than
    /// `max_step_items` items (default 100,000,000, a second or a few of one core), or a token
    /// that would make the matcher hold more than `max_state_bytes` bytes of parser state
    /// (default 128 MiB), raises `MatcherError` and leaves the matcher as it was.
    #[new]
    #[pyo3(signature = (
        compiled_grammar,
        *,
        override_stop_tokens = None,
        terminate_without_stop_token = false,
        max_rollback_tokens = -1,
        max_step_items = None,
        max_state_bytes = None,
    ))]
    fn new(
        compiled_grammar: &CompiledGrammar,
        override_stop_tokens: Option<Vec<u32>>,
        terminate_without_stop_token: bool,
        max_rollback_tokens: i64,
        max_step_items: Option<u64>,
        max_state_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let mut config = MatcherConfig::default().terminate_without_stop_token(terminate_without_stop_token);
        if let Some(ids) = override_stop_tokens {
            let vocab_size = compiled_grammar.inner.vocabulary().vocab_size();
            if let Some(bad) = ids.iter().find(|&&id| id as usize >= vocab_size) {
                return Err(MatcherError::new_err(format!(
                    "stop token id {bad} is out of range for a vocabulary of {vocab_size} tokens"
                )));
            }
            config = config.stop_tokens(ids);
        }
        if max_rollback_tokens >= 0 {
            config = config.max_rollback_tokens(max_rollback_tokens as usize);
        }
        let max_step_items = max_step_items.unwrap_or(maskforge::DEFAULT_MAX_STEP_ITEMS);
        let max_state_bytes = max_state_bytes.unwrap_or(maskforge::DEFAULT_MAX_STATE_BYTES);
        config = config.max_step_items(max_step_items).max_state_bytes(max_state_bytes);
        let inner = maskforge::GrammarMatcher::with_config(&compiled_grammar.inner, config);
        Ok(GrammarMatcher { inner: Some(inner), max_rollback_tokens, max_step_items, max_state_bytes })
    }

    /// Accepts one token; `False` (state unchanged) when the grammar does not allow it.
    /// Raises `MatcherError` for an id outside the vocabulary, or over `max_step_items` or
    /// `max_state_bytes` (state unchanged).
    #[pyo3(signature = (token_id, *, debug_print = false))]
    fn accept_token(&mut self, token_id: i64, debug_print: bool) -> PyResult<bool> {
        let _ = debug_print;
        let id = self.token_id(token_id)?;
        guarded(|| self.get_mut().try_accept_token(id).map_err(matcher_err))
    }

    /// Accepts a string (`str` or `bytes`) as one step; all or nothing. Raises `MatcherError`
    /// when reading it goes over `max_step_items` (split a very long string) or keeping it
    /// over `max_state_bytes`.
    #[pyo3(signature = (input_str, *, debug_print = false))]
    fn accept_string(&mut self, input_str: &Bound<'_, PyAny>, debug_print: bool) -> PyResult<bool> {
        let _ = debug_print;
        let bytes: Vec<u8> = if let Ok(s) = input_str.cast::<PyString>() {
            s.to_cow()?.as_bytes().to_vec()
        } else if let Ok(b) = input_str.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else {
            return Err(MatcherError::new_err("accept_string takes str or bytes"));
        };
        let m = self.get_mut();
        detached(input_str.py(), || m.try_accept_string(&bytes).map_err(matcher_err))
    }

    /// Writes the mask of allowed next tokens into row `index` of `bitmask` (int32, shape
    /// `(batch, ceil(vocab_size / 32))` or `(ceil(vocab_size / 32),)`, numpy or CPU torch).
    /// Returns whether the mask must be applied (some token is disallowed). Raises
    /// `MatcherError` (the row all zero) when the fill goes over `max_step_items`.
    #[pyo3(signature = (bitmask, index = 0, *, debug_print = false))]
    fn fill_next_token_bitmask(
        &mut self,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
        debug_print: bool,
    ) -> PyResult<bool> {
        let _ = debug_print;
        let mut borrowed = BorrowedBitmask::new(bitmask, self.mask_words())?;
        let row = borrowed.row_mut(index)?;
        let m = self.get_mut();
        let all_allowed = detached(bitmask.py(), || m.try_fill_next_token_bitmask(row).map_err(matcher_err))?;
        Ok(!all_allowed)
    }

    /// As `fill_next_token_bitmask`, with the exact (slow, cache-free) reference computation:
    /// every token's bytes run through the parser. For tests.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask_exact(&mut self, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<bool> {
        let mut borrowed = BorrowedBitmask::new(bitmask, self.mask_words())?;
        let row = borrowed.row_mut(index)?;
        let m = self.get_mut();
        let all_allowed = detached(bitmask.py(), || m.fill_next_token_bitmask_exact(row).map_err(matcher_err))?;
        Ok(!all_allowed)
    }

    /// The text every continuation must start with (jump-forward decoding); `""` if none.
    fn find_jump_forward_string(&mut self, py: Python<'_>) -> PyResult<String> {
        let m = self.get_mut();
        detached(py, || Ok(m.find_jump_forward_string()))
    }

    /// Undoes the last `num_tokens` accepted tokens (strings count as one).
    #[pyo3(signature = (num_tokens = 1))]
    fn rollback(&mut self, num_tokens: usize) -> PyResult<()> {
        guarded(|| self.get_mut().rollback(num_tokens).map_err(matcher_err))
    }

    /// Returns to the initial state.
    fn reset(&mut self) {
        self.get_mut().reset()
    }

    /// Whether a stop token was accepted (or the grammar ended, with
    /// `terminate_without_stop_token`).
    fn is_terminated(&self) -> bool {
        self.get().is_terminated()
    }

    /// Whether the output so far is a complete match.
    fn is_completed(&self) -> bool {
        self.get().is_completed()
    }

    /// Whether a stop token would be accepted now.
    fn can_terminate(&self) -> bool {
        self.get().can_terminate()
    }

    /// The stop tokens in effect.
    #[getter]
    fn stop_token_ids(&self) -> Vec<u32> {
        self.get().stop_token_ids().to_vec()
    }

    /// The rollback limit (-1: unlimited).
    #[getter]
    fn max_rollback_tokens(&self) -> i64 {
        self.max_rollback_tokens
    }

    /// The bound on parser item visits per call.
    #[getter]
    fn max_step_items(&self) -> u64 {
        self.max_step_items
    }

    /// The bound on the bytes of parser state the matcher holds.
    #[getter]
    fn max_state_bytes(&self) -> usize {
        self.max_state_bytes
    }

    /// The parser item visits the last call used (how close it came to `max_step_items`).
    #[getter]
    fn last_step_items(&self) -> u64 {
        self.get().last_step_items()
    }

    /// The bytes of parser state the matcher holds now (what `max_state_bytes` bounds).
    #[getter]
    fn state_bytes(&self) -> usize {
        self.get().state_bytes()
    }

    /// How many tokens (steps) were accepted.
    #[getter]
    fn num_accepted_tokens(&self) -> usize {
        self.get().num_accepted_tokens()
    }

    /// The compiled grammar.
    #[getter]
    fn compiled_grammar(&self) -> CompiledGrammar {
        CompiledGrammar { inner: self.get().grammar().clone() }
    }

    /// An independent copy in the same state (shares the compiled grammar).
    fn fork(&self) -> Self {
        GrammarMatcher {
            inner: Some(self.get().fork()),
            max_rollback_tokens: self.max_rollback_tokens,
            max_step_items: self.max_step_items,
            max_state_bytes: self.max_state_bytes,
        }
    }

    /// Accepts the longest accepted prefix of `token_ids`; returns its length.
    fn accept_tokens(&mut self, py: Python<'_>, token_ids: Vec<i64>) -> PyResult<usize> {
        let ids = self.token_ids(&token_ids)?;
        let m = self.get_mut();
        detached(py, || Ok(m.accept_tokens(&ids)))
    }

    /// The masks a verifier needs for a linear draft: row 0 now, row `i + 1` after
    /// `draft[..=i]`, stopping after the first rejected token. Returns the rows filled.
    /// The matcher is left as it was.
    fn fill_draft_bitmasks(&mut self, draft: Vec<i64>, bitmask: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = self.token_ids(&draft)?;
        let mut borrowed = BorrowedBitmask::new(bitmask, self.mask_words())?;
        let words = borrowed.words_mut()?;
        let m = self.get_mut();
        detached(bitmask.py(), || m.fill_draft_bitmasks(&ids, words).map_err(matcher_err))
    }

    /// The masks for a draft tree: node `i` holds `tokens[i]` below `parents[i]` (`None`: below
    /// the current state). Row 0 is the mask now, row `i + 1` after the path to node `i`.
    /// Returns, per node, whether its path is accepted. The matcher is left as it was.
    fn fill_draft_tree_bitmasks(
        &mut self,
        tokens: Vec<i64>,
        parents: Vec<Option<usize>>,
        bitmask: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<bool>> {
        let ids = self.token_ids(&tokens)?;
        let mut borrowed = BorrowedBitmask::new(bitmask, self.mask_words())?;
        let words = borrowed.words_mut()?;
        let m = self.get_mut();
        detached(bitmask.py(), || m.fill_draft_tree_bitmasks(&ids, &parents, words).map_err(matcher_err))
    }

    /// Seconds taken by `iterations` mask fills done in one Rust loop, into a buffer of its
    /// own, from the current state: the cost of the Rust call without Python around it (what
    /// `python/benches/overhead.py` subtracts). Not part of the API.
    fn _time_rust_fill(&mut self, py: Python<'_>, iterations: usize) -> PyResult<f64> {
        let mut buffer = vec![0u32; self.mask_words()];
        let m = self.get_mut();
        detached(py, || {
            let start = std::time::Instant::now();
            for _ in 0..iterations {
                m.try_fill_next_token_bitmask(&mut buffer).map_err(matcher_err)?;
            }
            Ok(start.elapsed().as_secs_f64())
        })
    }

    fn __repr__(&self) -> String {
        let m = self.get();
        format!("GrammarMatcher(num_accepted_tokens={}, terminated={})", m.num_accepted_tokens(), m.is_terminated())
    }
}

/// Fills and advances many matchers per call, in parallel on its own threads.
#[pyclass(module = "maskforge", frozen)]
pub struct BatchGrammarMatcher {
    inner: maskforge::BatchGrammarMatcher,
}

/// The runner behind the static batch-accept calls (XGrammar makes them static methods).
fn shared_runner() -> PyResult<&'static maskforge::BatchGrammarMatcher> {
    static RUNNER: OnceLock<maskforge::BatchGrammarMatcher> = OnceLock::new();
    if let Some(r) = RUNNER.get() {
        return Ok(r);
    }
    let runner = maskforge::BatchGrammarMatcher::new(0).map_err(matcher_err)?;
    Ok(RUNNER.get_or_init(|| runner))
}

#[pymethods]
impl BatchGrammarMatcher {
    /// `max_threads`: an int, or `"auto"` (one per core).
    #[new]
    #[pyo3(signature = (max_threads = None))]
    fn new(max_threads: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let threads = match max_threads {
            None => 0,
            Some(v) if v.extract::<String>().is_ok_and(|s| s == "auto") => 0,
            Some(v) => {
                v.extract::<usize>().map_err(|_| MatcherError::new_err("max_threads must be an int or \"auto\""))?
            }
        };
        Ok(BatchGrammarMatcher { inner: maskforge::BatchGrammarMatcher::new(threads).map_err(matcher_err)? })
    }

    /// The number of threads.
    #[getter]
    fn max_threads(&self) -> usize {
        self.inner.num_threads()
    }

    /// Fills matcher `i`'s mask into row `i` of `bitmask`, or row `indices[i]`.
    #[pyo3(signature = (matchers, bitmask, indices = None, *, debug_print = false))]
    fn batch_fill_next_token_bitmask(
        &self,
        matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        bitmask: &Bound<'_, PyAny>,
        indices: Option<Vec<usize>>,
        debug_print: bool,
    ) -> PyResult<()> {
        let _ = debug_print;
        let Some(first) = matchers.first() else { return Ok(()) };
        let mut borrowed = BorrowedBitmask::new(bitmask, first.mask_words())?;
        let words = borrowed.words_mut()?;
        with_taken(matchers, |taken| {
            detached(bitmask.py(), || {
                self.inner.batch_fill_next_token_bitmask(taken, words, indices.as_deref()).map_err(matcher_err)
            })
        })
    }

    /// Accepts `tokens[i]` into matcher `i`; returns each verdict.
    #[staticmethod]
    #[pyo3(signature = (matchers, tokens, *, debug_print = false))]
    fn batch_accept_token(
        py: Python<'_>,
        matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        tokens: Vec<i64>,
        debug_print: bool,
    ) -> PyResult<Vec<bool>> {
        let _ = debug_print;
        if matchers.len() != tokens.len() {
            return Err(MatcherError::new_err(format!(
                "{} matchers but {} tokens were given",
                matchers.len(),
                tokens.len()
            )));
        }
        let ids = matchers.iter().zip(&tokens).map(|(m, &t)| m.token_id(t)).collect::<PyResult<Vec<u32>>>()?;
        let runner = shared_runner()?;
        with_taken(matchers, |taken| detached(py, || runner.batch_accept_token(taken, &ids).map_err(matcher_err)))
    }

    /// Accepts `strings[i]` (`str` or `bytes`) into matcher `i`, each as one step.
    #[staticmethod]
    #[pyo3(signature = (matchers, strings, *, debug_print = false))]
    fn batch_accept_string(
        py: Python<'_>,
        matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
        strings: Vec<Bound<'_, PyAny>>,
        debug_print: bool,
    ) -> PyResult<Vec<bool>> {
        let _ = debug_print;
        let strings = strings
            .iter()
            .map(|s| match s.cast::<PyBytes>() {
                Ok(b) => Ok(b.as_bytes().to_vec()),
                Err(_) => Ok(s.extract::<String>()?.into_bytes()),
            })
            .collect::<PyResult<Vec<Vec<u8>>>>()?;
        let runner = shared_runner()?;
        with_taken(matchers, |taken| detached(py, || runner.batch_accept_string(taken, &strings).map_err(matcher_err)))
    }
}

/// Moves the matchers out of their Python objects into one slice for `work`, and back whatever
/// `work` returns. (Each is borrowed mutably, so the same matcher twice fails before this.)
fn with_taken<T>(
    mut matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
    work: impl FnOnce(&mut [maskforge::GrammarMatcher]) -> PyResult<T>,
) -> PyResult<T> {
    let mut taken: Vec<maskforge::GrammarMatcher> =
        matchers.iter_mut().map(|m| m.inner.take().expect("each matcher is borrowed once")).collect();
    let result = work(&mut taken);
    for (m, inner) in matchers.iter_mut().zip(taken) {
        m.inner = Some(inner);
    }
    result
}
