//! Token identity as bytes: the *sentinel* of a token id.
//!
//! The engine is byte-level, but some grammar elements name a token by id (`Token(200005)`, a
//! special token such as gpt-oss's `<|channel|>`, which has no text). Every token id gets a
//! byte string no text can produce: the byte `0xFF` (never part of valid UTF-8, and grammar
//! text is UTF-8) followed by the id in four base-64 digits, most significant first, each
//! written as `0x80 | digit` (a UTF-8 continuation byte). Four digits cover `2^24` ids, the
//! largest vocabulary a [`crate::tokenizer`] accepts.
//!
//! A set of ids (id ranges) becomes a union of byte-range sequences, as a code-point range
//! becomes UTF-8 sequences ([`super::utf8`]): [`sentinel_sequences`]. The automata read these
//! like any bytes; the matcher feeds a token's sentinel when the grammar can read `0xFF`.

/// The first byte of every sentinel.
pub const SENTINEL_LEAD: u8 = 0xFF;
/// The length of a sentinel in bytes.
pub const SENTINEL_LEN: usize = 5;
/// The number of digits after the lead byte.
pub const SENTINEL_DIGITS: usize = SENTINEL_LEN - 1;
/// The largest id a sentinel can encode (`2^24 - 1`).
pub const MAX_SENTINEL_ID: u32 = (1 << 24) - 1;

/// The sentinel of `id`.
///
/// # Panics
/// When `id > MAX_SENTINEL_ID` (vocabularies are limited to `2^24` ids).
///
/// ```
/// use maskforge::util::sentinel::sentinel;
/// assert_eq!(sentinel(65), [0xFF, 0x80, 0x80, 0x81, 0x81]);
/// ```
pub fn sentinel(id: u32) -> [u8; SENTINEL_LEN] {
    assert!(id <= MAX_SENTINEL_ID, "token id {id} does not fit in a sentinel");
    [
        SENTINEL_LEAD,
        0x80 | (id >> 18) as u8,
        0x80 | ((id >> 12) & 63) as u8,
        0x80 | ((id >> 6) & 63) as u8,
        0x80 | (id & 63) as u8,
    ]
}

/// One digit sequence: digit `k` (after the lead byte) lies in `ranges[k]`, as bytes.
pub type DigitSequence = [(u8, u8); SENTINEL_DIGITS];

/// The digit sequences (without the lead byte) whose union encodes exactly the ids `lo..=hi`
/// (clamped to [`MAX_SENTINEL_ID`]).
///
/// ```
/// use maskforge::util::sentinel::sentinel_sequences;
/// // 0..=64: the ids 0..=63 share their first three digits, 64 is one more sequence.
/// let seqs = sentinel_sequences(0, 64);
/// assert_eq!(seqs.len(), 2);
/// assert_eq!(seqs[0], [(0x80, 0x80), (0x80, 0x80), (0x80, 0x80), (0x80, 0xBF)]);
/// ```
pub fn sentinel_sequences(lo: u32, hi: u32) -> Vec<DigitSequence> {
    let hi = hi.min(MAX_SENTINEL_ID);
    let mut out = Vec::new();
    if lo <= hi {
        let mut prefix = [(0u8, 0u8); SENTINEL_DIGITS];
        split(lo, hi, 0, &mut prefix, &mut out);
    }
    out
}

/// Splits `lo..=hi` (both below `64^(DIGITS - k)`) at digit `k`; `prefix[..k]` is fixed.
fn split(lo: u32, hi: u32, k: usize, prefix: &mut DigitSequence, out: &mut Vec<DigitSequence>) {
    let rest = (SENTINEL_DIGITS - k - 1) as u32;
    let unit = 1u32 << (6 * rest);
    let (top_lo, top_hi) = (lo / unit, hi / unit);
    let (low_lo, low_hi) = (lo % unit, hi % unit);
    let digit = |d: u32| 0x80 | d as u8;
    if rest == 0 {
        prefix[k] = (digit(lo), digit(hi));
        out.push(*prefix);
        return;
    }
    if top_lo == top_hi {
        prefix[k] = (digit(top_lo), digit(top_lo));
        split(low_lo, low_hi, k + 1, prefix, out);
        return;
    }
    let mut first = top_lo;
    if low_lo != 0 {
        prefix[k] = (digit(top_lo), digit(top_lo));
        split(low_lo, unit - 1, k + 1, prefix, out);
        first += 1;
    }
    let last_partial = low_hi != unit - 1;
    let last = if last_partial { top_hi - 1 } else { top_hi };
    if first <= last {
        prefix[k] = (digit(first), digit(last));
        for p in prefix.iter_mut().skip(k + 1) {
            *p = (0x80, 0xBF);
        }
        out.push(*prefix);
    }
    if last_partial {
        prefix[k] = (digit(top_hi), digit(top_hi));
        split(0, low_hi, k + 1, prefix, out);
    }
}

/// The ids `0..=MAX_SENTINEL_ID` outside the sorted, disjoint `ranges`.
pub fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    super::ranges::complement(ranges, MAX_SENTINEL_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> u32 {
        bytes.iter().fold(0, |acc, &b| (acc << 6) | (b & 63) as u32)
    }

    fn matches(seqs: &[DigitSequence], id: u32) -> bool {
        let s = sentinel(id);
        seqs.iter().any(|q| q.iter().zip(&s[1..]).all(|(&(lo, hi), &b)| lo <= b && b <= hi))
    }

    #[test]
    fn encoding_round_trips_and_is_not_text() {
        for id in [0, 1, 63, 64, 4095, 4096, 200_005, MAX_SENTINEL_ID] {
            let s = sentinel(id);
            assert_eq!(decode(&s[1..]), id);
            assert!(std::str::from_utf8(&s).is_err());
        }
    }

    #[test]
    fn sequences_cover_exactly_the_range() {
        let cases = [(0, 0), (0, 63), (5, 70), (63, 64), (100, 5000), (4095, 262_144), (1000, MAX_SENTINEL_ID)];
        for (lo, hi) in cases {
            let seqs = sentinel_sequences(lo, hi);
            let probe = [lo.saturating_sub(1), lo, lo + 1, hi - hi.min(1), hi, hi + 1, (lo + hi) / 2, 64, 4096];
            for id in probe {
                if id <= MAX_SENTINEL_ID {
                    assert_eq!(matches(&seqs, id), lo <= id && id <= hi, "{lo}..={hi} at {id}");
                }
            }
        }
        // Exhaustively on a small window.
        let seqs = sentinel_sequences(70, 4200);
        for id in 0..9000 {
            assert_eq!(matches(&seqs, id), (70..=4200).contains(&id));
        }
    }

    #[test]
    fn complement_of_ranges() {
        assert_eq!(complement(&[(0, 4), (10, 10)]), vec![(5, 9), (11, MAX_SENTINEL_ID)]);
        assert_eq!(complement(&[]), vec![(0, MAX_SENTINEL_ID)]);
        assert_eq!(complement(&[(0, u32::MAX)]), vec![]);
    }
}
