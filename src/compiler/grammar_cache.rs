//! The whole-grammar cache of a [`super::GrammarCompiler`]: compiling the same input twice is a
//! lookup that returns the same [`CompiledGrammar`] (the same `Arc` inside, with the cache
//! entries its matchers have built so far).
//!
//! The key is a stable hash of the normalized input: a tag for the input kind, the source
//! (EBNF text and root; a schema's JSON value, hashed member by member in its key order —
//! property order is part of the grammar — without serializing it; a regex; a structural tag's
//! JSON value or text, which covers protocols, whose request is lowered to a tag), the front-end
//! options as JSON, and the compiler options that change the product (automaton limits, cache
//! mode). With a disk cache ([`super::disk_cache`]), a miss here looks for the grammar on disk
//! before compiling. Grammars given as IR are not cached
//! (there is no cheap canonical text for them). The cache is bounded by a number of grammars,
//! least recently used first out; errors are not cached.

use parking_lot::Mutex;

use crate::compiled::CompiledGrammar;
use crate::error::Error;
use crate::util::bounded_cache::BoundedCache;
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

/// Counters of the whole-grammar cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrammarCacheStats {
    /// Compiles answered from the cache.
    pub hits: u64,
    /// Compiles that ran (and were stored).
    pub misses: u64,
    /// Grammars stored now.
    pub len: usize,
    /// The capacity in grammars (0: caching off).
    pub capacity: usize,
    /// Compiles answered by loading a file of the disk cache ([`crate::CompilerConfig::disk_cache`]).
    pub disk_hits: u64,
    /// Compiles that found no file in the disk cache (then compiled and wrote one).
    pub disk_misses: u64,
    /// Disk cache files that did not load (removed and rebuilt) and writes that failed.
    pub disk_errors: u64,
}

/// A bounded map from input hashes to compiled grammars.
pub(crate) struct GrammarCache {
    /// Bounded by count; its capacity 0 turns caching off.
    inner: Mutex<BoundedCache<u64, CompiledGrammar>>,
}

impl std::fmt::Debug for GrammarCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarCache").field("stats", &self.stats()).finish()
    }
}

// As for the mask pool: the critical sections run no caller code (compiles run outside the
// lock), so the cache stays consistent across a caught panic.
impl std::panic::RefUnwindSafe for GrammarCache {}
impl std::panic::UnwindSafe for GrammarCache {}

impl GrammarCache {
    pub(crate) fn new(capacity: usize) -> Self {
        GrammarCache { inner: Mutex::new(BoundedCache::by_count(capacity)) }
    }

    pub(crate) fn stats(&self) -> GrammarCacheStats {
        let s = self.inner.lock().stats();
        // Every compile that ran was stored (errors return before).
        GrammarCacheStats { hits: s.hits, misses: s.inserts, len: s.len, capacity: s.budget, ..Default::default() }
    }

    /// Whether the cache is on (a capacity above 0).
    pub(crate) fn enabled(&self) -> bool {
        self.inner.lock().stats().budget > 0
    }

    /// The grammar stored under `key`, or the result of `compile`, stored.
    pub(crate) fn get_or_compile(
        &self,
        key: u64,
        compile: impl FnOnce() -> Result<CompiledGrammar, Error>,
    ) -> Result<CompiledGrammar, Error> {
        if !self.enabled() {
            return compile();
        }
        if let Some(g) = self.inner.lock().get(&key) {
            return Ok(g.clone());
        }
        // Compiled outside the lock: other compiles proceed meanwhile.
        let g = compile()?;
        let evicted = self.inner.lock().insert(key, g.clone());
        // Freeing a large grammar takes milliseconds: not this compile's, nor under the lock.
        if !evicted.is_empty() {
            crate::util::background_drop::drop_in_background(evicted);
        }
        Ok(g)
    }
}

/// A stable hash of input parts, each length-prefixed.
pub(crate) fn hash_parts(parts: &[&[u8]], json: Option<&Value>) -> u64 {
    let mut h = Xxh3::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    if let Some(v) = json {
        crate::util::json::hash_json(v, &mut h);
    }
    h.digest()
}
