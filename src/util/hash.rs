//! Hashers. In-memory maps use [`FastMap`]/[`FastSet`] (rustc-hash: fast, not DoS-resistant,
//! which is fine because keys are our own ids, never attacker-chosen strings). Keys that
//! must be identical across grammars, runs and machines (the cross-grammar cache key) use
//! [`StableHasher`], xxh3 over an explicit byte encoding.

/// A hash map with the fast in-memory hasher.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// A hash set with the fast in-memory hasher.
pub type FastSet<K> = rustc_hash::FxHashSet<K>;

/// The fast in-memory hash of `value`, its high bits folded into the low ones (rustc-hash's
/// low bits of a small integer key are poorly mixed): for picking one of a few shards.
pub fn fast_hash<T: std::hash::Hash + ?Sized>(value: &T) -> u64 {
    use std::hash::BuildHasher;
    let h = rustc_hash::FxBuildHasher.hash_one(value);
    h ^ (h >> 29) ^ (h >> 47)
}

/// A stable 64-bit hasher: the same sequence of writes gives the same value everywhere.
#[derive(Debug, Default, Clone)]
pub struct StableHasher {
    buf: Vec<u8>,
}

impl StableHasher {
    /// An empty hasher.
    pub fn new() -> Self {
        Self::default()
    }
    /// Feeds a `u64` (little endian).
    pub fn write_u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// The hash of everything fed so far.
    pub fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.buf)
    }
}
