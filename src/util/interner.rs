//! Interning of short slices (state sets, edge signatures) without one allocation per slice.
//!
//! Automaton passes number sets of states and per-state signatures: "have I seen this slice
//! before, and under which id?". A `HashMap<Vec<T>, u32>` answers that with a fresh `Vec` per
//! key, and in the passes of [`crate::fsm`] that made malloc/free the largest cost. Here every
//! distinct slice is copied once into one arena and addressed by `(start, end)`; lookups hash
//! the caller's borrowed slice and compare against the arena, so a lookup that finds an existing
//! id allocates nothing, and [`SliceInterner::clear`] keeps every buffer for the next use.

/// An element of an interned slice: how it feeds the hash.
pub trait InternKey: Copy + Eq {
    /// A 64-bit summary of the element (equal elements give equal words; collisions only cost
    /// a comparison).
    fn word(&self) -> u64;
}

impl InternKey for u32 {
    #[inline]
    fn word(&self) -> u64 {
        *self as u64
    }
}

const EMPTY: u32 = u32::MAX;

/// Distinct slices of `T`, numbered `0, 1, …` in order of first insertion.
#[derive(Clone, Debug)]
pub struct SliceInterner<T> {
    /// Every distinct slice, concatenated.
    arena: Vec<T>,
    /// Per id, its slice's end in `arena` (its start is the previous id's end).
    ends: Vec<u32>,
    /// Per id, the full hash of its slice (compared before the slice, and reused when growing).
    hashes: Vec<u64>,
    /// Open addressing with linear probing: ids, or `EMPTY`. The length is a power of two and
    /// at least twice the number of ids.
    table: Vec<u32>,
}

impl<T> Default for SliceInterner<T> {
    fn default() -> Self {
        SliceInterner { arena: Vec::new(), ends: Vec::new(), hashes: Vec::new(), table: vec![EMPTY; 16] }
    }
}

impl<T: InternKey> SliceInterner<T> {
    /// An empty interner.
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of distinct slices.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The slice numbered `id`.
    #[inline]
    pub fn get(&self, id: u32) -> &[T] {
        let start = if id == 0 { 0 } else { self.ends[id as usize - 1] as usize };
        &self.arena[start..self.ends[id as usize] as usize]
    }

    /// Forgets every slice, keeping the memory. Costs O(slices interned), not O(table): an
    /// interner cleared between many small uses (per block in minimization) must not pay for
    /// the largest use each time.
    pub fn clear(&mut self) {
        let mask = self.table.len() - 1;
        if self.ends.len() * 4 < self.table.len() {
            for (id, &h) in self.hashes.iter().enumerate() {
                let mut i = slot(h, mask);
                while self.table[i] != id as u32 {
                    i = (i + 1) & mask;
                }
                self.table[i] = EMPTY;
            }
        } else {
            self.table.fill(EMPTY);
        }
        self.arena.clear();
        self.ends.clear();
        self.hashes.clear();
    }

    /// The id of `key`, and whether it is new (then it was copied into the arena).
    ///
    /// # Panics
    /// When the arena would exceed `u32::MAX` elements (automata are bounded far below that).
    pub fn intern(&mut self, key: &[T]) -> (u32, bool) {
        let h = hash(key);
        let mask = self.table.len() - 1;
        let mut i = slot(h, mask);
        loop {
            let id = self.table[i];
            if id == EMPTY {
                break;
            }
            if self.hashes[id as usize] == h && self.get(id) == key {
                return (id, false);
            }
            i = (i + 1) & mask;
        }
        let id = self.ends.len() as u32;
        self.arena.extend_from_slice(key);
        self.ends.push(u32::try_from(self.arena.len()).expect("interned slices fit u32 offsets"));
        self.hashes.push(h);
        self.table[i] = id;
        if self.ends.len() * 2 > self.table.len() {
            self.grow();
        }
        (id, true)
    }

    /// Doubles the table and re-inserts every id by its stored hash.
    fn grow(&mut self) {
        let len = self.table.len() * 2;
        self.table.clear();
        self.table.resize(len, EMPTY);
        let mask = len - 1;
        for (id, &h) in self.hashes.iter().enumerate() {
            let mut i = slot(h, mask);
            while self.table[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.table[i] = id as u32;
        }
    }
}

/// FxHash-style folding (fast on the few words a signature has), then a finalizer so that the
/// low bits used as the table index depend on every word.
#[inline]
fn hash<T: InternKey>(key: &[T]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = key.len() as u64;
    for x in key {
        h = (h.rotate_left(5) ^ x.word()).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

#[inline]
fn slot(h: u64, mask: usize) -> usize {
    h as usize & mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Ids agree with a `HashMap<Vec<u32>, u32>` numbering in insertion order, across
        /// growth and `clear` (after large and small uses).
        #[test]
        fn numbers_like_a_map(keys in prop::collection::vec(prop::collection::vec(0u32..6, 0..5), 0..400)) {
            let mut interner = SliceInterner::new();
            // Each round uses a quarter of the keys of the previous one, so `clear` runs both
            // on a full table and on a mostly empty one.
            for round in 0..4 {
                interner.clear();
                let mut map: std::collections::HashMap<Vec<u32>, u32> = Default::default();
                for k in &keys[..keys.len() >> (2 * round)] {
                    let next = map.len() as u32;
                    let want = *map.entry(k.clone()).or_insert(next);
                    let (id, new) = interner.intern(k);
                    prop_assert_eq!(id, want);
                    prop_assert_eq!(new, want == next);
                    prop_assert_eq!(interner.get(id), &k[..]);
                }
                prop_assert_eq!(interner.len(), map.len());
            }
        }
    }
}
