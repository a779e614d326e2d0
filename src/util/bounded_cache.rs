//! [`BoundedCache`]: the least-recently-used map under every cache of the engine (mask pool,
//! rule automata, whole grammars, schema fragments), bounded by a total *weight*: bytes, states,
//! or one per value.
//!
//! It is a plain map (no lock): each cache keeps it under its own mutex, looks up, releases the
//! lock, builds the missing value, and locks again to insert. [`BoundedCache::insert`] hands the
//! values it lets go (replaced, evicted, or too heavy to keep) back to the caller, so that they
//! are dropped after the lock is released: freeing a large value (a grammar) can take a while,
//! and other threads' lookups need not wait for it.
//!
//! The counters have one shape for every cache ([`CacheStats`]); each cache maps them onto
//! the fields of its public stats.

use std::hash::Hash;

use lru::LruCache;

/// The counters of a [`BoundedCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Counted lookups ([`BoundedCache::get`]) that found a value.
    pub hits: u64,
    /// Counted lookups that found none.
    pub misses: u64,
    /// Values stored (a value heavier than the whole budget is not).
    pub inserts: u64,
    /// Values dropped to stay within the budget.
    pub evictions: u64,
    /// Values stored now.
    pub len: usize,
    /// Their total weight.
    pub weight: usize,
    /// The largest total weight kept.
    pub budget: usize,
}

/// A map keeping its most recently used values within a weight budget (see the module docs).
pub struct BoundedCache<K, V> {
    /// Each value with the weight it was charged on insertion.
    map: LruCache<K, (V, usize)>,
    weigh: fn(&V) -> usize,
    stats: CacheStats,
}

impl<K: Hash + Eq, V> std::fmt::Debug for BoundedCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedCache").field("stats", &self.stats()).finish()
    }
}

impl<K: Hash + Eq, V> BoundedCache<K, V> {
    /// A cache keeping at most `capacity` values.
    pub fn by_count(capacity: usize) -> Self {
        Self::by_weight(capacity, |_| 1)
    }

    /// A cache keeping values of total weight at most `budget`, each weighing `weigh(value)`
    /// (computed once, on insertion).
    pub fn by_weight(budget: usize, weigh: fn(&V) -> usize) -> Self {
        BoundedCache { map: LruCache::unbounded(), weigh, stats: CacheStats { budget, ..CacheStats::default() } }
    }

    /// The value under `key`, now the most recently used; counted as a hit or a miss.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        let found = self.map.get(key);
        if found.is_some() {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        found.map(|(v, _)| v)
    }

    /// The value under `key`, now the most recently used, without counting the lookup (for a
    /// second-level lookup the caller counts itself).
    pub fn get_uncounted(&mut self, key: &K) -> Option<&V> {
        self.map.get(key).map(|(v, _)| v)
    }

    /// Stores `value` under `key` as the most recently used value, then evicts the least
    /// recently used ones until the total weight is within the budget. A value heavier than the
    /// whole budget is not stored. Returns the values let go (the one replaced, the evicted
    /// ones, or `value` itself when not stored): drop them after releasing any lock.
    #[must_use = "the released values should be dropped outside the cache's lock"]
    pub fn insert(&mut self, key: K, value: V) -> Vec<V> {
        let weight = (self.weigh)(&value);
        if weight > self.stats.budget {
            return vec![value];
        }
        let mut released = Vec::new();
        if let Some((old, old_weight)) = self.map.put(key, (value, weight)) {
            self.stats.weight -= old_weight;
            released.push(old);
        }
        self.stats.weight += weight;
        self.stats.inserts += 1;
        while self.stats.weight > self.stats.budget {
            let Some((_, (old, old_weight))) = self.map.pop_lru() else { break };
            self.stats.weight -= old_weight;
            self.stats.evictions += 1;
            released.push(old);
        }
        released
    }

    /// Drops every value (counters are kept).
    pub fn clear(&mut self) {
        self.map.clear();
        self.stats.weight = 0;
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats { len: self.map.len(), ..self.stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hits_and_misses_of_counted_lookups_only() {
        let mut c = BoundedCache::by_count(2);
        assert!(c.insert(1, "a").is_empty());
        assert_eq!(c.get(&1), Some(&"a"));
        assert_eq!(c.get(&2), None);
        assert_eq!(c.get_uncounted(&2), None);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.inserts, s.len, s.weight), (1, 1, 1, 1, 1));
    }

    #[test]
    fn evicts_least_recently_used_and_releases_them() {
        let mut c = BoundedCache::by_count(2);
        assert!(c.insert(1, 10).is_empty());
        assert!(c.insert(2, 20).is_empty());
        c.get_uncounted(&1); // 2 is now the least recently used
        assert_eq!(c.insert(3, 30), vec![20]);
        assert_eq!(c.insert(3, 31), vec![30], "a replaced value is released, not evicted");
        let s = c.stats();
        assert_eq!((s.len, s.weight, s.evictions, s.inserts), (2, 2, 1, 4));
        assert_eq!(c.get(&2), None);
    }

    #[test]
    fn weight_budget_rejects_values_heavier_than_the_whole_budget() {
        let mut c: BoundedCache<u32, Vec<u8>> = BoundedCache::by_weight(8, Vec::len);
        assert!(c.insert(1, vec![0; 5]).is_empty());
        assert_eq!(c.insert(2, vec![0; 9]), vec![vec![0; 9]]);
        assert_eq!(c.stats().len, 1);
        assert_eq!(c.insert(3, vec![0; 4]), vec![vec![0; 5]]);
        assert_eq!((c.stats().weight, c.stats().evictions), (4, 1));
        c.clear();
        assert_eq!((c.stats().len, c.stats().weight, c.stats().inserts), (0, 0, 2));
    }

    #[test]
    fn a_zero_budget_stores_nothing() {
        let mut c = BoundedCache::by_count(0);
        assert_eq!(c.insert(1, 1), vec![1]);
        assert_eq!(c.stats().len, 0);
    }
}
