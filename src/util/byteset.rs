//! [`ByteSet`]: a set of bytes as 256 bits.

/// A set of bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    /// The empty set.
    pub const EMPTY: ByteSet = ByteSet([0; 4]);
    /// Every byte.
    pub const FULL: ByteSet = ByteSet([u64::MAX; 4]);

    /// Adds `lo..=hi`.
    pub fn insert_range(&mut self, lo: u8, hi: u8) {
        if lo > hi {
            return;
        }
        // Word by word: bits lo..=hi of the 256, as masks over each 64-bit word they touch.
        let (lo, hi) = (lo as usize, hi as usize);
        for w in lo / 64..=hi / 64 {
            let from = if w == lo / 64 { lo % 64 } else { 0 };
            let to = if w == hi / 64 { hi % 64 } else { 63 };
            let width = to - from + 1;
            let mask = if width == 64 { u64::MAX } else { ((1u64 << width) - 1) << from };
            self.0[w] |= mask;
        }
    }
    /// Adds one byte.
    #[inline]
    pub fn insert(&mut self, b: u8) {
        self.0[(b >> 6) as usize] |= 1 << (b & 63);
    }
    /// Whether `b` is in the set.
    #[inline]
    pub fn contains(&self, b: u8) -> bool {
        self.0[(b >> 6) as usize] >> (b & 63) & 1 == 1
    }
    /// Adds every byte of `other`; returns whether the set grew.
    pub fn union_with(&mut self, other: &ByteSet) -> bool {
        let before = self.0;
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        self.0 != before
    }
    /// How many bytes are in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }
    /// Whether the two sets share a byte.
    #[inline]
    pub fn intersects(&self, other: &ByteSet) -> bool {
        self.0.iter().zip(other.0).any(|(a, b)| a & b != 0)
    }
    /// The 256 bits as four little-endian words (for stable hashing).
    pub fn words(&self) -> [u64; 4] {
        self.0
    }
    /// The smallest byte of the set.
    pub fn first(&self) -> Option<u8> {
        self.0.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| (i as u32 * 64 + w.trailing_zeros()) as u8)
    }
}

impl std::fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ByteSet({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSet;

    /// The word-mask range insertion equals inserting byte by byte, for every range.
    #[test]
    fn insert_range_equals_byte_by_byte() {
        for lo in 0..=255u8 {
            for hi in lo..=255u8 {
                let mut fast = ByteSet::EMPTY;
                fast.insert_range(lo, hi);
                let mut slow = ByteSet::EMPTY;
                (lo..=hi).for_each(|b| slow.insert(b));
                assert!(fast == slow, "{lo}..={hi}");
            }
        }
        let mut none = ByteSet::EMPTY;
        none.insert_range(9, 3);
        assert!(none.is_empty());
    }
}
