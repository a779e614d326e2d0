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
//!
//! A large cache can be split into *shards* ([`BoundedCache::by_weight_in_shards`]): a key's
//! shard is fixed by its hash, and each shard keeps its own recency order within an equal share
//! of the budget. A hash map grows by doubling its table and moving every key at once; the mask
//! pool's map, at 100k–200k entries, paused one decoding step for 5–9 ms each time it grew
//! (session 25, `docs/benchmarks.md`). A shard moves only its own keys. With keys spread
//! evenly, evicting the least recently used key of a shard is close to evicting the least
//! recently used key of the whole cache.

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
    shards: Box<[Shard<K, V>]>,
    weigh: fn(&V) -> usize,
    /// The counters but `len` and `weight`, which the shards hold.
    stats: CacheStats,
}

/// One shard of a [`BoundedCache`]: its values, each with the weight it was charged on
/// insertion, and its share of the budget.
struct Shard<K, V> {
    map: LruCache<K, (V, usize)>,
    weight: usize,
    budget: usize,
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
        Self::by_weight_in_shards(budget, weigh, 1)
    }

    /// As [`BoundedCache::by_weight`], split into `shards` shards (at least one) of an equal
    /// share of the budget each (see the module docs): a value heavier than a share is not
    /// stored.
    pub fn by_weight_in_shards(budget: usize, weigh: fn(&V) -> usize, shards: usize) -> Self {
        let n = shards.max(1);
        let shards = (0..n)
            .map(|i| Shard { map: LruCache::unbounded(), weight: 0, budget: budget / n + usize::from(i < budget % n) })
            .collect();
        BoundedCache { shards, weigh, stats: CacheStats { budget, ..CacheStats::default() } }
    }

    /// The number of the shard of `key`.
    fn shard_of(&self, key: &K) -> usize {
        match self.shards.len() {
            1 => 0,
            n => (crate::util::hash::fast_hash(key) % n as u64) as usize,
        }
    }

    /// The shard of `key`.
    fn shard(&mut self, key: &K) -> &mut Shard<K, V> {
        let i = self.shard_of(key);
        &mut self.shards[i]
    }

    /// The value under `key`, now the most recently used; counted as a hit or a miss.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        let (i, stats) = (self.shard_of(key), &mut self.stats);
        let found = self.shards[i].map.get(key);
        if found.is_some() {
            stats.hits += 1;
        } else {
            stats.misses += 1;
        }
        found.map(|(v, _)| v)
    }

    /// The value under `key`, now the most recently used, without counting the lookup (for a
    /// second-level lookup the caller counts itself).
    pub fn get_uncounted(&mut self, key: &K) -> Option<&V> {
        self.shard(key).map.get(key).map(|(v, _)| v)
    }

    /// Stores `value` under `key` as the most recently used value, then evicts the least
    /// recently used ones of its shard until the shard's weight is within its share of the
    /// budget. A value heavier than that share is not stored. Returns the values let go (the
    /// one replaced, the evicted ones, or `value` itself when not stored): drop them after
    /// releasing any lock.
    #[must_use = "the released values should be dropped outside the cache's lock"]
    pub fn insert(&mut self, key: K, value: V) -> Vec<V> {
        let weight = (self.weigh)(&value);
        let shard = self.shard(&key);
        if weight > shard.budget {
            return vec![value];
        }
        let mut released = Vec::new();
        if let Some((old, old_weight)) = shard.map.put(key, (value, weight)) {
            shard.weight -= old_weight;
            released.push(old);
        }
        shard.weight += weight;
        let mut evictions = 0;
        while shard.weight > shard.budget {
            let Some((_, (old, old_weight))) = shard.map.pop_lru() else { break };
            shard.weight -= old_weight;
            evictions += 1;
            released.push(old);
        }
        self.stats.inserts += 1;
        self.stats.evictions += evictions;
        released
    }

    /// Drops every value (counters are kept).
    pub fn clear(&mut self) {
        for shard in self.shards.iter_mut() {
            shard.map.clear();
            shard.weight = 0;
        }
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        let len = self.shards.iter().map(|s| s.map.len()).sum();
        let weight = self.shards.iter().map(|s| s.weight).sum();
        CacheStats { len, weight, ..self.stats }
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

    /// Shards split the budget: every shard stays within its share, the whole within the
    /// budget, and the counters add up over the shards.
    #[test]
    fn shards_keep_their_share_of_the_budget() {
        let mut c: BoundedCache<u32, Vec<u8>> = BoundedCache::by_weight_in_shards(100, Vec::len, 4);
        assert_eq!(c.shards.iter().map(|s| s.budget).collect::<Vec<_>>(), vec![25; 4]);
        assert_eq!(c.insert(0, vec![0; 26]), vec![vec![0; 26]], "heavier than a share");
        let mut released = 0;
        for k in 0..200u32 {
            released += c.insert(k, vec![0; 1 + k as usize % 7]).len();
            assert!(c
                .shards
                .iter()
                .all(|s| s.weight <= s.budget && s.weight == s.map.iter().map(|(_, v)| v.1).sum::<usize>()));
        }
        let s = c.stats();
        assert!(s.weight <= 100 && s.len >= 20, "{s:?}");
        assert_eq!((s.inserts, s.evictions as usize, s.len), (200, released, 200 - released));
        assert!(c.shards.iter().all(|s| !s.map.is_empty()), "keys spread over every shard");
        // The latest key inserted is kept.
        assert_eq!(c.get(&199).map(Vec::len), Some(1 + 199 % 7));
        c.clear();
        assert_eq!((c.stats().len, c.stats().weight), (0, 0));
    }

    #[test]
    fn a_zero_budget_stores_nothing() {
        let mut c = BoundedCache::by_count(0);
        assert_eq!(c.insert(1, 1), vec![1]);
        assert_eq!(c.stats().len, 0);
    }
}
