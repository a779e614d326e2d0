//! Token strings ↔ token bytes, one function per [`VocabKind`].
//!
//! A `tokenizer.json` stores every token as a *string form*; the bytes the model emits when it
//! samples the token are obtained by undoing the tokenizer's encoding trick:
//!
//! * **byte-level** (GPT-2, Llama 3, Qwen, gpt-oss): every byte is stored as one character of
//!   the GPT-2 byte↔unicode table ([`byte_level_char`], [`byte_level_byte`]);
//! * **byte fallback** (SentencePiece BPE, Llama 2): `<0xNN>` stands for the single byte `NN`
//!   ([`parse_byte_fallback`]), and `▁` (U+2581, the *metaspace*) stands for a space;
//! * **raw**: the string form is the text.
//!
//! [`decode_token`] follows what the Hugging Face decoders do with one token, so that
//! concatenating the bytes of the tokens of a text gives back the text. The inverse,
//! [`encode_token_text`], produces a string form for bytes (used by vocabularies built from
//! bytes in tests).

use super::VocabKind;

/// The metaspace character `▁` (U+2581) that SentencePiece vocabularies use for a space.
pub const METASPACE: char = '\u{2581}';

/// Whether byte `b` is stored as itself by the GPT-2 byte-level table: the printable bytes
/// `33..=126`, `161..=172` and `174..=255`.
const fn is_byte_level_identity(b: u32) -> bool {
    matches!(b, 33..=126 | 161..=172 | 174..=255)
}

/// The number of characters of the byte-level table: 256 bytes, the largest being U+0143.
const BYTE_LEVEL_CHARS: usize = 0x144;

/// The GPT-2 table, byte → char: identity bytes map to themselves, the other 68 bytes map to
/// U+0100, U+0101, ... in increasing byte order.
const BYTE_TO_CHAR: [char; 256] = {
    let mut table = ['\0'; 256];
    let mut next = 0x100;
    let mut b = 0;
    while b < 256 {
        let code = if is_byte_level_identity(b as u32) {
            b as u32
        } else {
            next += 1;
            next - 1
        };
        table[b] = match char::from_u32(code) {
            Some(c) => c,
            None => '\0',
        };
        b += 1;
    }
    table
};

/// The inverse table, char (as `u32` below [`BYTE_LEVEL_CHARS`]) → byte, `-1` where no byte maps.
const CHAR_TO_BYTE: [i16; BYTE_LEVEL_CHARS] = {
    let mut table = [-1i16; BYTE_LEVEL_CHARS];
    let mut b = 0;
    while b < 256 {
        table[BYTE_TO_CHAR[b] as usize] = b as i16;
        b += 1;
    }
    table
};

/// The character that stands for byte `b` in a byte-level vocabulary (GPT-2 table).
///
/// ```
/// use maskforge::tokenizer::decode::byte_level_char;
/// assert_eq!(byte_level_char(b'a'), 'a');
/// assert_eq!(byte_level_char(b' '), 'Ġ'); // U+0120
/// assert_eq!(byte_level_char(b'\n'), 'Ċ'); // U+010A
/// ```
#[inline]
pub fn byte_level_char(b: u8) -> char {
    BYTE_TO_CHAR[b as usize]
}

/// The byte that character `c` stands for in a byte-level vocabulary, or `None` if `c` is not
/// one of the 256 characters of the GPT-2 table.
///
/// ```
/// use maskforge::tokenizer::decode::byte_level_byte;
/// assert_eq!(byte_level_byte('Ġ'), Some(b' '));
/// assert_eq!(byte_level_byte(' '), None);
/// ```
#[inline]
pub fn byte_level_byte(c: char) -> Option<u8> {
    match CHAR_TO_BYTE.get(c as usize) {
        Some(&b) if b >= 0 => Some(b as u8),
        _ => None,
    }
}

/// The byte of a byte-fallback token `<0xNN>` (exactly six characters, two hex digits of either
/// case), or `None` for any other string.
///
/// ```
/// use maskforge::tokenizer::decode::parse_byte_fallback;
/// assert_eq!(parse_byte_fallback("<0x0A>"), Some(b'\n'));
/// assert_eq!(parse_byte_fallback("<0xe4>"), Some(0xE4));
/// assert_eq!(parse_byte_fallback("<0x0A"), None);
/// ```
pub fn parse_byte_fallback(text: &str) -> Option<u8> {
    let b = text.as_bytes();
    if b.len() != 6 || !text.starts_with("<0x") || b[5] != b'>' {
        return None;
    }
    let (hi, lo) = (hex_digit(b[3])?, hex_digit(b[4])?);
    Some(hi << 4 | lo)
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends to `out` the bytes of the token whose string form is `text`, as the Hugging Face
/// decoder of a vocabulary of kind `kind` would produce them for a token in the middle of a text:
///
/// * [`VocabKind::ByteLevel`]: every character through the GPT-2 table; if some character is not
///   in the table (e.g. an added token holding a real space), the whole token is taken verbatim
///   as UTF-8, as the `ByteLevel` decoder does;
/// * [`VocabKind::ByteFallback`]: `<0xNN>` is the byte `NN`; otherwise the UTF-8 bytes with each
///   `▁` replaced by a space (the decoders' `Replace("▁", " ")` / `Metaspace`). The decoders also
///   strip one leading space of the whole *decoded text*; that belongs to detokenization, not to
///   a token, and is not done here;
/// * [`VocabKind::Raw`]: the UTF-8 bytes of `text`.
///
/// ```
/// use maskforge::tokenizer::{decode::decode_token, VocabKind};
/// let mut out = Vec::new();
/// decode_token(VocabKind::ByteLevel, "ĠhelloĊ", &mut out);
/// decode_token(VocabKind::ByteFallback, "▁world", &mut out);
/// decode_token(VocabKind::ByteFallback, "<0x21>", &mut out);
/// assert_eq!(out, b" hello\n world!");
/// ```
pub fn decode_token(kind: VocabKind, text: &str, out: &mut Vec<u8>) {
    match kind {
        VocabKind::Raw => out.extend_from_slice(text.as_bytes()),
        VocabKind::ByteLevel => {
            let start = out.len();
            for c in text.chars() {
                match byte_level_byte(c) {
                    Some(b) => out.push(b),
                    None => {
                        out.truncate(start);
                        out.extend_from_slice(text.as_bytes());
                        return;
                    }
                }
            }
        }
        VocabKind::ByteFallback => {
            if let Some(b) = parse_byte_fallback(text) {
                out.push(b);
                return;
            }
            let mut rest = text;
            while let Some(i) = rest.find(METASPACE) {
                out.extend_from_slice(&rest.as_bytes()[..i]);
                out.push(b' ');
                rest = &rest[i + METASPACE.len_utf8()..];
            }
            out.extend_from_slice(rest.as_bytes());
        }
    }
}

/// A string form for a token whose bytes are `bytes`, in the convention of `kind`: the exact
/// inverse of [`decode_token`] for [`VocabKind::ByteLevel`]; for [`VocabKind::ByteFallback`],
/// `<0xNN>` for a single byte that is not UTF-8 on its own, otherwise the text with spaces as
/// `▁`; for [`VocabKind::Raw`] the text. Bytes that are not UTF-8 are replaced by U+FFFD where
/// the convention cannot express them.
///
/// ```
/// use maskforge::tokenizer::{decode::encode_token_text, VocabKind};
/// assert_eq!(encode_token_text(VocabKind::ByteLevel, b" a\n"), "ĠaĊ");
/// assert_eq!(encode_token_text(VocabKind::ByteFallback, b" a"), "▁a");
/// assert_eq!(encode_token_text(VocabKind::ByteFallback, &[0xE4]), "<0xE4>");
/// ```
pub fn encode_token_text(kind: VocabKind, bytes: &[u8]) -> String {
    match kind {
        VocabKind::Raw => String::from_utf8_lossy(bytes).into_owned(),
        VocabKind::ByteLevel => bytes.iter().map(|&b| byte_level_char(b)).collect(),
        VocabKind::ByteFallback => match (bytes, std::str::from_utf8(bytes)) {
            ([b], Err(_)) => format!("<0x{b:02X}>"),
            _ => String::from_utf8_lossy(bytes).replace(' ', "▁"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table_is_a_bijection_onto_its_256_chars() {
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            let c = byte_level_char(b);
            assert!(seen.insert(c), "char {c:?} used twice");
            assert_eq!(byte_level_byte(c), Some(b));
        }
        // The 68 remapped bytes take U+0100..U+0143 in byte order.
        let remapped: Vec<u8> = (0..=255u8).filter(|&b| byte_level_char(b) as u32 >= 0x100).collect();
        assert_eq!(remapped.len(), 68);
        for (i, &b) in remapped.iter().enumerate() {
            assert_eq!(byte_level_char(b) as u32, 0x100 + i as u32);
        }
        assert_eq!(byte_level_char(0), '\u{100}');
        assert_eq!(byte_level_char(b' '), '\u{120}');
        assert_eq!(byte_level_char(0x7F), '\u{121}');
        assert_eq!(byte_level_char(0xAD), '\u{143}');
        assert_eq!(byte_level_byte('\u{144}'), None);
        assert_eq!(byte_level_byte('é'), Some(0xE9));
        assert_eq!(byte_level_byte('中'), None);
    }

    #[test]
    fn byte_fallback_tokens() {
        for b in 0..=255u8 {
            assert_eq!(parse_byte_fallback(&format!("<0x{b:02X}>")), Some(b));
            assert_eq!(parse_byte_fallback(&format!("<0x{b:02x}>")), Some(b));
        }
        for s in ["<0x>", "<0x0G>", "<0x+F>", "<0X0A>", "<0x0A>>", "0x0A", "<0x0Aa", "<0x中>", ""] {
            assert_eq!(parse_byte_fallback(s), None, "{s}");
        }
    }

    fn decoded(kind: VocabKind, text: &str) -> Vec<u8> {
        let mut out = b"keep".to_vec();
        decode_token(kind, text, &mut out);
        assert!(out.starts_with(b"keep"));
        out.split_off(4)
    }

    #[test]
    fn decode_each_kind() {
        assert_eq!(decoded(VocabKind::ByteLevel, "Ġä¸Ń"), " 中".as_bytes());
        assert_eq!(decoded(VocabKind::ByteLevel, "ä¸"), &[0xE4, 0xB8]);
        // A character outside the table: the whole token verbatim (HF `ByteLevel` decoder).
        assert_eq!(decoded(VocabKind::ByteLevel, "a b"), b"a b");
        assert_eq!(decoded(VocabKind::ByteLevel, "ĠĠ中"), "ĠĠ中".as_bytes());
        assert_eq!(decoded(VocabKind::ByteFallback, "<0xE4>"), &[0xE4]);
        assert_eq!(decoded(VocabKind::ByteFallback, "▁▁x▁"), b"  x ");
        assert_eq!(decoded(VocabKind::ByteFallback, "▁中"), " 中".as_bytes());
        assert_eq!(decoded(VocabKind::ByteFallback, "<s>"), b"<s>");
        assert_eq!(decoded(VocabKind::Raw, "▁<0x0A>"), "▁<0x0A>".as_bytes());
        assert_eq!(decoded(VocabKind::ByteLevel, ""), b"");
    }

    #[test]
    fn encode_inverts_decode() {
        let samples: [&[u8]; 6] = [b"", b" hello", b"\n\t\x00\xff", "中".as_bytes(), &[0xE4], b"a b"];
        for bytes in samples {
            let text = encode_token_text(VocabKind::ByteLevel, bytes);
            assert_eq!(decoded(VocabKind::ByteLevel, &text), bytes);
        }
        for bytes in [b" a  b".as_slice(), "中".as_bytes(), &[0x80], b"<"] {
            let text = encode_token_text(VocabKind::ByteFallback, bytes);
            assert_eq!(decoded(VocabKind::ByteFallback, &text), bytes);
        }
        assert_eq!(encode_token_text(VocabKind::Raw, &[b'a', 0xFF]), "a\u{FFFD}");
    }
}
