//! The whole-grammar cache of a [`super::GrammarCompiler`]: compiling the same input twice is a
//! lookup that returns the same [`CompiledGrammar`] (the same `Arc` inside, with the cache
//! entries its matchers have built so far).
//!
//! The key is a stable hash of the normalized input: a tag for the input kind, the source
//! (EBNF text and root; a schema's JSON value, hashed member by member in its key order —
//! property order is part of the grammar — without serializing it; a regex), the front-end
//! options as JSON, and the compiler options that change the product (automaton limits, cache
//! mode). Grammars given as IR are not cached
//! (there is no cheap canonical text for them). The cache is bounded by a number of grammars,
//! least recently used first out; errors are not cached.

use lru::LruCache;
use parking_lot::Mutex;

use crate::compiled::CompiledGrammar;
use crate::error::Error;
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
}

/// A bounded map from input hashes to compiled grammars.
pub(crate) struct GrammarCache {
    inner: Mutex<(LruCache<u64, CompiledGrammar>, GrammarCacheStats)>,
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
        let stats = GrammarCacheStats { capacity, ..GrammarCacheStats::default() };
        GrammarCache { inner: Mutex::new((LruCache::unbounded(), stats)) }
    }

    pub(crate) fn stats(&self) -> GrammarCacheStats {
        let inner = self.inner.lock();
        GrammarCacheStats { len: inner.0.len(), ..inner.1 }
    }

    /// Whether the cache is on (a capacity above 0).
    pub(crate) fn enabled(&self) -> bool {
        self.inner.lock().1.capacity > 0
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
        {
            let mut inner = self.inner.lock();
            if let Some(g) = inner.0.get(&key) {
                let g = g.clone();
                inner.1.hits += 1;
                return Ok(g);
            }
        }
        // Compiled outside the lock: other compiles proceed meanwhile.
        let g = compile()?;
        let mut evicted = Vec::new();
        {
            let mut inner = self.inner.lock();
            inner.1.misses += 1;
            evicted.extend(inner.0.put(key, g.clone()));
            while inner.0.len() > inner.1.capacity {
                evicted.extend(inner.0.pop_lru().map(|(_, old)| old));
            }
        }
        // Evicted grammars are dropped after the lock is released: freeing a large grammar's
        // expression tree takes a while, and other threads' lookups need not wait for it.
        drop(evicted);
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
