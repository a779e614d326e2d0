//! Code-point ranges to UTF-8 byte-range sequences.
//!
//! A character class such as `[^"\\]` is a set of code points, but the automata below the
//! front-ends read bytes (tokens may split a code point). Each code-point range becomes a
//! few sequences of byte ranges, e.g. `U+0080..=U+07FF` becomes `[C2-DF][80-BF]`. Surrogates
//! (`U+D800..=U+DFFF`) have no UTF-8 encoding and are dropped.

/// One UTF-8 byte-range sequence: byte `k` of the encoding lies in `ranges[k]`.
pub type Utf8Sequence = Vec<(u8, u8)>;

const MAX_SCALAR: u32 = 0x10FFFF;

/// The byte-range sequences whose union encodes exactly the code points `lo..=hi`
/// (surrogates excluded).
pub fn utf8_sequences(lo: u32, hi: u32) -> Vec<Utf8Sequence> {
    let mut out = Vec::new();
    let hi = hi.min(MAX_SCALAR);
    if lo > hi {
        return out;
    }
    // Cut out the surrogate block first.
    if lo < 0xD800 && hi > 0xDFFF {
        split(lo, 0xD7FF, &mut out);
        split(0xE000, hi, &mut out);
    } else if (0xD800..=0xDFFF).contains(&lo) && (0xD800..=0xDFFF).contains(&hi) {
    } else if (0xD800..=0xDFFF).contains(&lo) {
        split(0xE000, hi, &mut out);
    } else if (0xD800..=0xDFFF).contains(&hi) {
        split(lo, 0xD7FF, &mut out);
    } else {
        split(lo, hi, &mut out);
    }
    out
}

fn encoded_len(c: u32) -> usize {
    match c {
        0..=0x7F => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    }
}

fn max_of_len(n: usize) -> u32 {
    [0x7F, 0x7FF, 0xFFFF, MAX_SCALAR][n - 1]
}

/// Encodes a scalar value (surrogates allowed here: only used on range ends already cut).
fn encode(c: u32, buf: &mut [u8; 4]) -> usize {
    let n = encoded_len(c);
    match n {
        1 => buf[0] = c as u8,
        2 => {
            buf[0] = 0xC0 | (c >> 6) as u8;
            buf[1] = 0x80 | (c & 0x3F) as u8;
        }
        3 => {
            buf[0] = 0xE0 | (c >> 12) as u8;
            buf[1] = 0x80 | ((c >> 6) & 0x3F) as u8;
            buf[2] = 0x80 | (c & 0x3F) as u8;
        }
        _ => {
            buf[0] = 0xF0 | (c >> 18) as u8;
            buf[1] = 0x80 | ((c >> 12) & 0x3F) as u8;
            buf[2] = 0x80 | ((c >> 6) & 0x3F) as u8;
            buf[3] = 0x80 | (c & 0x3F) as u8;
        }
    }
    n
}

fn split(lo: u32, hi: u32, out: &mut Vec<Utf8Sequence>) {
    // Equal encoded lengths first.
    let (nl, nh) = (encoded_len(lo), encoded_len(hi));
    if nl != nh {
        let m = max_of_len(nl);
        split(lo, m, out);
        split(m + 1, hi, out);
        return;
    }
    if nl == 1 {
        out.push(vec![(lo as u8, hi as u8)]);
        return;
    }
    // Make every continuation byte range full where the leading bytes differ.
    for i in 1..nl {
        let m = (1u32 << (6 * i)) - 1;
        if lo & !m != hi & !m {
            if lo & m != 0 {
                split(lo, lo | m, out);
                split((lo | m) + 1, hi, out);
                return;
            }
            if hi & m != m {
                split(lo, (hi & !m) - 1, out);
                split(hi & !m, hi, out);
                return;
            }
        }
    }
    let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
    encode(lo, &mut a);
    encode(hi, &mut b);
    out.push((0..nl).map(|k| (a[k], b[k])).collect());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(seqs: &[Utf8Sequence], bytes: &[u8]) -> bool {
        seqs.iter().any(|s| s.len() == bytes.len() && s.iter().zip(bytes).all(|(&(l, h), &b)| l <= b && b <= h))
    }

    #[test]
    fn exact_on_sampled_ranges() {
        let cases = [
            (0, 0x10FFFF),
            (0x41, 0x5A),
            (0x7F, 0x80),
            (0x7FF, 0x800),
            (0xD000, 0xE100),
            (0x10000, 0x10FFFF),
            (0x3A9, 0x4E2D),
            (0xFFFF, 0x10000),
        ];
        for (lo, hi) in cases {
            let seqs = utf8_sequences(lo, hi);
            for c in (0u32..0x11000).chain((0x11000..=0x10FFFF).step_by(97)) {
                let Some(ch) = char::from_u32(c) else { continue };
                let mut buf = [0u8; 4];
                let s = ch.encode_utf8(&mut buf);
                assert_eq!(matches(&seqs, s.as_bytes()), lo <= c && c <= hi, "c={c:#x} range={lo:#x}..{hi:#x}");
            }
        }
    }
}
