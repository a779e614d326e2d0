//! [`SmallSet`]: a set that stays a vector while small.
//!
//! The Earley parser deduplicates items per set, and most sets (especially out of context, in
//! the mask-cache walk) hold one to a few items. Hashing each insertion and clearing a hash
//! table per consumed byte (which touches its whole allocation) would dominate; a linear scan
//! of a handful of items is cheaper. Past a threshold the set switches to a hash set, so large
//! sets of ambiguous grammars stay linear overall.

use std::hash::Hash;

use super::hash::FastSet;

const SMALL: usize = 16;

/// A set of `Copy` values: a vector up to 16 elements, a hash set beyond.
#[derive(Clone, Debug)]
pub struct SmallSet<T> {
    small: Vec<T>,
    big: FastSet<T>,
    hashed: bool,
}

impl<T> Default for SmallSet<T> {
    fn default() -> Self {
        SmallSet { small: Vec::new(), big: FastSet::default(), hashed: false }
    }
}

impl<T: Copy + Eq + Hash> SmallSet<T> {
    /// Inserts `x`; returns whether it was new.
    #[inline]
    pub fn insert(&mut self, x: T) -> bool {
        if self.hashed {
            return self.big.insert(x);
        }
        if self.small.contains(&x) {
            return false;
        }
        self.small.push(x);
        if self.small.len() > SMALL {
            self.hashed = true;
            self.big.extend(self.small.iter().copied());
        }
        true
    }

    /// Removes every element (cheap when the set stayed small).
    #[inline]
    pub fn clear(&mut self) {
        self.small.clear();
        if self.hashed {
            self.big.clear();
            self.hashed = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large() {
        let mut s = SmallSet::default();
        for round in 0..2 {
            for i in 0..100u32 {
                assert!(s.insert(i), "round {round}");
                assert!(!s.insert(i / 2));
            }
            s.clear();
        }
    }
}
