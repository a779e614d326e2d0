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
    ranges.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
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
}
