//! [`SchemaFragmentCache`]: lowered sub-schemas shared across documents, so that the next
//! request carrying the same tool schema does not lower it again.
//!
//! Tool-calling requests are schemas like `{"anyOf": [tool₁, tool₂, ...]}` whose branches recur
//! from request to request in other combinations. A branch that holds no reference (`$ref`,
//! `$dynamicRef`, `$recursiveRef`) depends only on itself, the options and its nesting level,
//! so when it declares properties (a tool; smaller branches lower faster than they hash) it is
//! lowered once as a *fragment*: a small grammar of its own (its root rule matches
//! exactly the branch's values, without surrounding whitespace), with its relaxations
//! (pointers relative to the branch) and the nesting depth and sub-schema count it needed.
//! The document's lowering imports the fragment's rules under fresh ids and re-roots the
//! relaxation pointers, so the grammar accepts the same language and the report is the same
//! as when lowering inline. Anything unusual (an error, a limit the import would cross) falls
//! back to lowering inline, which reports it with the right pointer.
//!
//! Only branches near the top of a document (nesting depth at most 4, where a request's tools
//! sit) go through the cache, and branches inside a fragment are lowered inline: checking and
//! hashing a branch costs its size, so doing it at every level of a deeply nested schema would
//! cost size × depth.
//!
//! Fragments keep their own copies of shared rules (string tails, "any value"); the automaton
//! builder's rule cache ([`crate::fsm::RuleFsmCache`]) makes those copies cheap.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::{JsonSchemaOptions, Relaxation};
use crate::grammar::Grammar;
use crate::util::bounded_cache::BoundedCache;

/// One lowered sub-schema (see the [module docs](self)).
#[derive(Debug)]
pub(super) struct Fragment {
    /// Its grammar; the root rule matches the sub-schema's values.
    pub(super) grammar: Grammar,
    /// Relaxations, with pointers relative to the sub-schema (`#/properties/a`).
    pub(super) relaxations: Vec<Relaxation>,
    /// The deepest nesting of sub-schemas it walked, and how many it walked.
    pub(super) depth: usize,
    pub(super) schemas: usize,
}

/// Counters of a [`SchemaFragmentCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchemaFragmentStats {
    /// Sub-schemas served from the cache.
    pub hits: u64,
    /// Sub-schemas lowered (and kept).
    pub misses: u64,
    /// Fragments kept now.
    pub entries: usize,
}

/// Lowered sub-schemas keyed by their JSON, the options and the nesting level; LRU, bounded by
/// count. `Send + Sync`; a [`crate::GrammarCompiler`] owns one.
#[derive(Debug)]
pub struct SchemaFragmentCache {
    inner: Mutex<BoundedCache<u128, Slot>>,
}

/// A cached fragment; `None` remembers a branch that cannot be a fragment (it is lowered inline
/// every time, without trying again).
type Slot = Option<Arc<Fragment>>;

// A panic while the lock is held cannot leave a half-updated entry: entries are whole `Arc`s
// inserted by one `insert`, and the counters are advisory.
impl std::panic::RefUnwindSafe for SchemaFragmentCache {}
impl std::panic::UnwindSafe for SchemaFragmentCache {}

impl SchemaFragmentCache {
    /// A cache keeping at most `capacity` fragments (at least one).
    pub fn new(capacity: usize) -> Self {
        SchemaFragmentCache { inner: Mutex::new(BoundedCache::by_count(capacity.max(1))) }
    }

    /// The counters.
    pub fn stats(&self) -> SchemaFragmentStats {
        let s = self.inner.lock().stats();
        // Every lowering that ran was stored (a failed document lowering returns before).
        SchemaFragmentStats { hits: s.hits, misses: s.inserts, entries: s.len }
    }

    /// The fragment of `schema` at nesting `level`, from the cache or from `lower` (run
    /// without the lock); `None` when `lower` fails (the caller lowers inline), which is kept too.
    pub(super) fn get_or_lower(
        &self,
        schema: &Value,
        options: &JsonSchemaOptions,
        level: u32,
        lower: impl FnOnce() -> Option<Fragment>,
    ) -> Option<Arc<Fragment>> {
        let key = fragment_key(schema, options, &level.to_string());
        if let Some(f) = self.inner.lock().get(&key) {
            return f.clone();
        }
        let fragment = lower().map(Arc::new);
        // A lowering stopped by the compile's deadline says nothing about the branch.
        if crate::util::cancel::current().is_some_and(|w| w.tripped().is_some()) {
            return fragment;
        }
        let released = self.inner.lock().insert(key, fragment.clone());
        drop(released);
        fragment
    }

    /// The lowering of the whole document `schema` (a tool's parameters inside a structural
    /// tag), from the cache or lowered now; errors are not kept.
    ///
    /// # Errors
    /// As [`super::json_schema_to_grammar`].
    pub fn document(
        &self,
        schema: &Value,
        options: &JsonSchemaOptions,
    ) -> Result<(Grammar, super::JsonSchemaReport), super::SchemaError> {
        let key = fragment_key(schema, options, "document");
        // Documents are always stored as `Some` (errors are not kept).
        let hit = self.inner.lock().get(&key).cloned().flatten();
        let fragment = match hit {
            Some(f) => f,
            None => {
                let (grammar, report) = super::json_schema_to_grammar_cached(schema, options, self)?;
                let f = Arc::new(Fragment { grammar, relaxations: report.relaxations, depth: 0, schemas: 0 });
                let released = self.inner.lock().insert(key, Some(Arc::clone(&f)));
                drop(released);
                f
            }
        };
        let report = super::JsonSchemaReport { relaxations: fragment.relaxations.clone() };
        Ok((fragment.grammar.clone(), report))
    }
}

/// `kind` is the nesting level of a fragment, or `document`.
fn fragment_key(schema: &Value, options: &JsonSchemaOptions, kind: &str) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(format!("{options:?}|{kind}").as_bytes());
    crate::util::json::hash_json(schema, &mut h);
    h.digest128()
}

/// Whether a branch is worth a fragment: one with declared properties (a tool, an object
/// variant). Small branches (`{"type": "integer"}`, a string format) lower faster than they
/// hash, and each fragment brings its own copies of the shared string and value rules.
pub(super) fn is_worth_caching(schema: &Value) -> bool {
    schema.get("properties").is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty()))
}

/// Whether `schema` can be lowered on its own: it holds no reference (which would resolve
/// against the enclosing document). Iterative, so deep values cannot overflow the stack.
pub(super) fn is_self_contained(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if m.contains_key("$ref") || m.contains_key("$dynamicRef") || m.contains_key("$recursiveRef") {
                    return false;
                }
                stack.extend(m.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    true
}

/// `pointer` (relative to a fragment, `#...`) re-rooted at `base` (the fragment's pointer).
pub(super) fn reroot(pointer: &str, base: &str) -> String {
    format!("{base}{}", pointer.strip_prefix('#').unwrap_or(pointer))
}
