//! Sets of `u32` values (code points, token ids) as sorted, disjoint, non-adjacent inclusive
//! ranges: the canonical form and the complement, shared by character classes, token sets and
//! the sentinel encoding of token ids.

/// `ranges` clamped to `..=max`, with empty ranges dropped, sorted, and overlapping or adjacent
/// ranges merged.
pub fn canonical(mut ranges: Vec<(u32, u32)>, max: u32) -> Vec<(u32, u32)> {
    for r in ranges.iter_mut() {
        r.1 = r.1.min(max);
    }
    ranges.retain(|&(lo, hi)| lo <= hi);
    // Front-ends mostly hand in sorted ranges (a key trie builds thousands of classes).
    if !ranges.is_sorted() {
        ranges.sort_unstable();
    }
    // Merge overlapping and adjacent ranges in place.
    let mut kept = 0;
    for i in 0..ranges.len() {
        let (lo, hi) = ranges[i];
        if kept > 0 && lo <= ranges[kept - 1].1.saturating_add(1) {
            ranges[kept - 1].1 = ranges[kept - 1].1.max(hi);
        } else {
            ranges[kept] = (lo, hi);
            kept += 1;
        }
    }
    ranges.truncate(kept);
    ranges
}

/// The values `0..=max` outside the canonical `ranges`.
pub fn complement(ranges: &[(u32, u32)], max: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(lo, hi) in ranges {
        if lo > max {
            break;
        }
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi.saturating_add(1);
    }
    if next <= max {
        out.push((next, max));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_and_complement() {
        assert_eq!(canonical(vec![(5, 9), (0, 2), (3, 3), (8, 20), (7, 1)], 15), vec![(0, 3), (5, 15)]);
        assert_eq!(complement(&[(0, 3), (5, 15)], 20), vec![(4, 4), (16, 20)]);
        assert_eq!(complement(&[], 3), vec![(0, 3)]);
        assert_eq!(complement(&[(0, 3)], 3), vec![]);
        assert_eq!(complement(&[(2, 2), (9, 12)], 5), vec![(0, 1), (3, 5)]);
    }

    proptest::proptest! {
        /// Sorted or not, overlapping or adjacent: the canonical form covers the same values
        /// (clipped to `max`) with sorted, disjoint, non-adjacent ranges.
        #[test]
        fn canonical_covers_the_same_values(
            ranges in proptest::collection::vec((0u32..40, 0u32..40), 0..8),
            sorted in proptest::bool::ANY,
            max in 0u32..45,
        ) {
            let mut ranges = ranges;
            if sorted {
                ranges.sort_unstable();
            }
            let want: std::collections::BTreeSet<u32> =
                ranges.iter().flat_map(|&(lo, hi)| lo..=hi.min(max)).collect();
            let got = canonical(ranges, max);
            let covered: std::collections::BTreeSet<u32> = got.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
            proptest::prop_assert_eq!(covered, want);
            for w in got.windows(2) {
                proptest::prop_assert!(w[0].1.saturating_add(1) < w[1].0, "{:?}", got);
            }
            proptest::prop_assert!(got.iter().all(|&(lo, hi)| lo <= hi));
        }
    }
}
