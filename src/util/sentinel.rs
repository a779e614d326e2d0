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
//! becomes UTF-8 sequences ([`super::utf8`]): [`Sentinel::sequences`]. The automata read these
//! like any bytes; the matcher feeds a token's sentinel when the grammar can read `0xFF`.
//!
//! Everything about the encoding goes through [`Sentinel`], so that no path can forget that
//! the lead byte is not text.

use super::id::TokenId;

/// The sentinel of one token id, and the one place that knows the encoding: every reader of
/// token bytes asks it whether bytes are text ([`Sentinel::is_text`], [`Sentinel::text_len`]),
/// and every writer of automata gets the lead byte and the digit ranges from it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Sentinel([u8; Sentinel::LEN]);

impl Sentinel {
    /// The first byte of every sentinel (never part of UTF-8 text).
    pub const LEAD: u8 = 0xFF;
    /// The length of a sentinel in bytes.
    pub const LEN: usize = 5;
    /// The number of digits after the lead byte.
    pub const DIGITS: usize = Self::LEN - 1;
    /// The largest id a sentinel can encode (`2^24 - 1`).
    pub const MAX_ID: u32 = (1 << 24) - 1;

    /// The sentinel of `id`.
    ///
    /// # Panics
    /// When `id > Sentinel::MAX_ID` (vocabularies are limited to `2^24` ids).
    pub fn encode(id: TokenId) -> Self {
        let id = id.as_u32();
        assert!(id <= Self::MAX_ID, "token id {id} does not fit in a sentinel");
        Sentinel([
            Self::LEAD,
            0x80 | (id >> 18) as u8,
            0x80 | ((id >> 12) & 63) as u8,
            0x80 | ((id >> 6) & 63) as u8,
            0x80 | (id & 63) as u8,
        ])
    }

    /// The id whose sentinel `bytes` starts with, if it starts with one (the inverse of
    /// [`Sentinel::encode`], for the tests of the encoding).
    #[cfg(test)]
    pub fn decode(bytes: &[u8]) -> Option<TokenId> {
        let (&lead, digits) = bytes.split_first()?;
        let digits = digits.get(..Self::DIGITS)?;
        if lead != Self::LEAD || !digits.iter().all(|&d| d & 0xC0 == 0x80) {
            return None;
        }
        Some(TokenId::from_u32(digits.iter().fold(0, |acc, &d| (acc << 6) | (d & 63) as u32)))
    }

    /// Whether `id` has a sentinel.
    #[inline]
    pub fn fits(id: u32) -> bool {
        id <= Self::MAX_ID
    }

    /// The five bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8; Self::LEN] {
        &self.0
    }

    /// The digit bytes after the lead byte.
    #[inline]
    pub fn digits(&self) -> &[u8] {
        &self.0[1..]
    }

    /// Whether `b` is the lead byte.
    #[inline]
    pub fn is_lead(b: u8) -> bool {
        b == Self::LEAD
    }

    /// Whether `bytes` starts with the lead byte (where a sentinel would start).
    #[cfg(test)]
    pub fn starts_sentinel(bytes: &[u8]) -> bool {
        bytes.first() == Some(&Self::LEAD)
    }

    /// Whether `bytes` can be text: it holds no lead byte, so no part of it is read as a token
    /// id. Token bytes and literals that fail this are never matched as text.
    #[inline]
    pub fn is_text(bytes: &[u8]) -> bool {
        !bytes.contains(&Self::LEAD)
    }

    /// The length of the text prefix of `bytes`: up to its first lead byte.
    #[inline]
    pub fn text_len(bytes: &[u8]) -> usize {
        bytes.iter().position(|&b| b == Self::LEAD).unwrap_or(bytes.len())
    }

    /// Whether the 256-bit byte set `set` (bit `b % 64` of word `b / 64`) holds the lead byte:
    /// whether something that reads it may read a token by id.
    #[inline]
    pub fn lead_in(set: &[u64; 4]) -> bool {
        set[usize::from(Self::LEAD >> 6)] >> (Self::LEAD & 63) & 1 == 1
    }

    /// The digit sequences (without the lead byte) whose union encodes exactly the ids
    /// `lo..=hi` (clamped to [`Sentinel::MAX_ID`]).
    pub fn sequences(lo: u32, hi: u32) -> Vec<DigitSequence> {
        let hi = hi.min(Self::MAX_ID);
        let mut out = Vec::new();
        if lo <= hi {
            let mut prefix = [(0u8, 0u8); Self::DIGITS];
            split(lo, hi, 0, &mut prefix, &mut out);
        }
        out
    }

    /// The ids `0..=Sentinel::MAX_ID` outside the sorted, disjoint `ranges`.
    pub fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
        super::ranges::complement(ranges, Self::MAX_ID)
    }
}

impl AsRef<[u8]> for Sentinel {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// One digit sequence: digit `k` (after the lead byte) lies in `ranges[k]`, as bytes.
pub type DigitSequence = [(u8, u8); Sentinel::DIGITS];

/// Splits `lo..=hi` (both below `64^(DIGITS - k)`) at digit `k`; `prefix[..k]` is fixed.
fn split(lo: u32, hi: u32, k: usize, prefix: &mut DigitSequence, out: &mut Vec<DigitSequence>) {
    let rest = (Sentinel::DIGITS - k - 1) as u32;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(seqs: &[DigitSequence], id: u32) -> bool {
        let s = Sentinel::encode(TokenId::from_u32(id));
        seqs.iter().any(|q| q.iter().zip(s.digits()).all(|(&(lo, hi), &b)| lo <= b && b <= hi))
    }

    #[test]
    fn encoding_is_lead_then_four_digits() {
        assert_eq!(Sentinel::encode(TokenId::from_u32(65)).as_bytes(), &[0xFF, 0x80, 0x80, 0x81, 0x81]);
        assert_eq!(Sentinel::encode(TokenId::from_u32(Sentinel::MAX_ID)).as_bytes(), &[0xFF, 0xBF, 0xBF, 0xBF, 0xBF]);
    }

    #[test]
    fn encoding_round_trips_and_is_not_text() {
        for id in [0, 1, 63, 64, 4095, 4096, 200_005, Sentinel::MAX_ID] {
            let s = Sentinel::encode(TokenId::from_u32(id));
            assert_eq!(Sentinel::decode(s.as_bytes()), Some(TokenId::from_u32(id)));
            assert!(std::str::from_utf8(s.as_bytes()).is_err());
            assert!(!Sentinel::is_text(s.as_bytes()) && Sentinel::starts_sentinel(s.as_bytes()));
        }
    }

    #[test]
    fn decode_rejects_what_is_not_a_sentinel() {
        assert_eq!(Sentinel::decode(b"abcde"), None);
        assert_eq!(Sentinel::decode(&[0xFF, 0x80, 0x80]), None, "too short");
        assert_eq!(Sentinel::decode(&[0xFF, 0x80, 0x80, 0x41, 0x80]), None, "not a digit byte");
        assert_eq!(Sentinel::decode(&[0xFF, 0x80, 0x80, 0x80, 0x81, b'x']), Some(TokenId::new(1)), "a prefix");
    }

    #[test]
    fn text_checks_find_the_lead_byte() {
        assert!(Sentinel::is_text(b"plain") && Sentinel::is_lead(0xFF) && !Sentinel::is_lead(0xFE));
        assert_eq!(Sentinel::text_len(b"ab\xFFc"), 2);
        assert_eq!(Sentinel::text_len(b"abc"), 3);
        assert!(!Sentinel::starts_sentinel(b"") && !Sentinel::starts_sentinel(b"a\xFF"));
        let mut set = [0u64; 4];
        assert!(!Sentinel::lead_in(&set));
        set[3] = 1 << 63;
        assert!(Sentinel::lead_in(&set));
        assert!(Sentinel::fits(Sentinel::MAX_ID) && !Sentinel::fits(Sentinel::MAX_ID + 1));
    }

    #[test]
    fn sequences_of_a_small_range() {
        // 0..=64: the ids 0..=63 share their first three digits, 64 is one more sequence.
        let seqs = Sentinel::sequences(0, 64);
        assert_eq!(seqs.len(), 2);
        assert_eq!(seqs[0], [(0x80, 0x80), (0x80, 0x80), (0x80, 0x80), (0x80, 0xBF)]);
    }

    #[test]
    fn sequences_cover_exactly_the_range() {
        let max = Sentinel::MAX_ID;
        let cases = [(0, 0), (0, 63), (5, 70), (63, 64), (100, 5000), (4095, 262_144), (1000, max)];
        for (lo, hi) in cases {
            let seqs = Sentinel::sequences(lo, hi);
            let probe = [lo.saturating_sub(1), lo, lo + 1, hi - hi.min(1), hi, hi + 1, (lo + hi) / 2, 64, 4096];
            for id in probe {
                if id <= max {
                    assert_eq!(matches(&seqs, id), lo <= id && id <= hi, "{lo}..={hi} at {id}");
                }
            }
        }
        // Exhaustively on a small window.
        let seqs = Sentinel::sequences(70, 4200);
        for id in 0..9000 {
            assert_eq!(matches(&seqs, id), (70..=4200).contains(&id));
        }
    }

    #[test]
    fn complement_of_ranges() {
        let max = Sentinel::MAX_ID;
        assert_eq!(Sentinel::complement(&[(0, 4), (10, 10)]), vec![(5, 9), (11, max)]);
        assert_eq!(Sentinel::complement(&[]), vec![(0, max)]);
        assert_eq!(Sentinel::complement(&[(0, u32::MAX)]), vec![]);
    }
}
