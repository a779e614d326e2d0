//! The metadata section of a GGUF file (the format of llama.cpp and candle's quantized models):
//! the header and the key/value pairs, read without the tensor infos or the tensor data.
//!
//! Layout (little-endian, versions 2 and 3): the magic `GGUF`, a `u32` version, a `u64` tensor
//! count, a `u64` key/value count, then per pair a string key (`u64` length + UTF-8 bytes), a `u32`
//! value type and the value. Arrays hold an element type, a `u64` count and the elements.
//!
//! A corrupt file must never make the reader panic or allocate without bound: every length and
//! count is checked against the bytes the file has left before anything is allocated, and arrays
//! may nest only a few levels deep.

use std::io::Read;

use rustc_hash::FxHashMap;

use crate::tokenizer::VocabError;

/// The first four bytes of every GGUF file.
pub(crate) const MAGIC: &[u8; 4] = b"GGUF";
/// The most key/value pairs accepted (real models have a few dozen).
const MAX_PAIRS: u64 = 1 << 16;
/// The deepest nesting of arrays accepted (real files nest none).
const MAX_DEPTH: u32 = 4;

/// One metadata value. Integers of every width are widened; arrays keep their elements.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    UInt(u64),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Array(Vec<Value>),
}

impl Value {
    /// The value as a non-negative integer (any integer type), if it is one.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(v) => Some(v),
            Value::Int(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// The metadata of a GGUF file: its key/value pairs.
#[derive(Debug)]
pub(crate) struct Metadata {
    pub(crate) pairs: FxHashMap<String, Value>,
}

/// Reads the metadata section from `input`, which holds `len` bytes in all; `origin` names the
/// data in error messages.
pub(crate) fn read_metadata(input: impl Read, len: u64, origin: &str) -> Result<Metadata, VocabError> {
    let mut reader = Reader { input, left: len, offset: 0, origin };
    let mut magic = [0u8; 4];
    if len < 4 || reader.fill(&mut magic).is_err() || &magic != MAGIC {
        return Err(VocabError::NotGguf { origin: origin.to_string() });
    }
    let version = reader.u32()?;
    if !(2..=3).contains(&version) {
        return Err(reader.error(format!("GGUF version {version} is not supported (only 2 and 3)")));
    }
    let _tensor_count = reader.u64()?;
    let pair_count = reader.u64()?;
    if pair_count > MAX_PAIRS {
        return Err(reader.error(format!("{pair_count} metadata pairs, the limit is {MAX_PAIRS}")));
    }
    let mut pairs = FxHashMap::default();
    for _ in 0..pair_count {
        let key = reader.string()?;
        let kind = reader.u32()?;
        let value = reader.value(kind, 0)?;
        pairs.insert(key, value);
    }
    Ok(Metadata { pairs })
}

/// A bounded little-endian reader that knows how many bytes the input has left.
struct Reader<'a, R> {
    input: R,
    left: u64,
    offset: u64,
    origin: &'a str,
}

impl<R: Read> Reader<'_, R> {
    fn error(&self, message: String) -> VocabError {
        VocabError::Gguf { origin: self.origin.to_string(), offset: self.offset, message }
    }

    /// Fails unless `count` items of `size` bytes each fit in what is left of the input.
    fn ensure(&self, count: u64, size: u64, what: &str) -> Result<(), VocabError> {
        match count.checked_mul(size) {
            Some(need) if need <= self.left => Ok(()),
            _ => {
                Err(self
                    .error(format!("truncated: {what} needs {count} x {size} bytes, the file has {} left", self.left)))
            }
        }
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<(), VocabError> {
        self.ensure(buf.len() as u64, 1, "a value")?;
        self.input.read_exact(buf).map_err(|e| self.error(format!("read error: {e}")))?;
        self.left -= buf.len() as u64;
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], VocabError> {
        let mut buf = [0u8; N];
        self.fill(&mut buf)?;
        Ok(buf)
    }

    fn u32(&mut self) -> Result<u32, VocabError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, VocabError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn string(&mut self) -> Result<String, VocabError> {
        let len = self.u64()?;
        self.ensure(len, 1, "a string")?;
        // `ensure` bounds `len` by the input length, so the allocation is bounded too.
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf)?;
        String::from_utf8(buf).map_err(|_| self.error("a string is not valid UTF-8".to_string()))
    }

    /// A value of GGUF type `kind`.
    fn value(&mut self, kind: u32, depth: u32) -> Result<Value, VocabError> {
        Ok(match kind {
            0 => Value::UInt(u8::from_le_bytes(self.array()?).into()),
            1 => Value::Int(i8::from_le_bytes(self.array()?).into()),
            2 => Value::UInt(u16::from_le_bytes(self.array()?).into()),
            3 => Value::Int(i16::from_le_bytes(self.array()?).into()),
            4 => Value::UInt(self.u32()?.into()),
            5 => Value::Int(i32::from_le_bytes(self.array()?).into()),
            6 => Value::Float(f32::from_le_bytes(self.array()?).into()),
            7 => match self.array::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(self.error(format!("invalid boolean byte {b}"))),
            },
            8 => Value::Str(self.string()?),
            9 => self.array_value(depth)?,
            10 => Value::UInt(self.u64()?),
            11 => Value::Int(i64::from_le_bytes(self.array()?)),
            12 => Value::Float(f64::from_le_bytes(self.array()?)),
            other => return Err(self.error(format!("unknown value type {other}"))),
        })
    }

    fn array_value(&mut self, depth: u32) -> Result<Value, VocabError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(format!("arrays nested deeper than {MAX_DEPTH} levels")));
        }
        let kind = self.u32()?;
        let count = self.u64()?;
        // Every element takes at least one byte (a string at least eight), so a count the rest of
        // the file cannot hold is rejected before the vector is allocated.
        let min_size = match kind {
            8 | 9 => 8,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            _ => 1,
        };
        self.ensure(count, min_size, "an array")?;
        let mut items = Vec::with_capacity(count as usize);
        for _ in 0..count {
            items.push(self.value(kind, depth + 1)?);
        }
        Ok(Value::Array(items))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes GGUF metadata (version 3, no tensors): the tests' files.
    #[derive(Default)]
    pub(crate) struct Writer {
        pairs: Vec<u8>,
        count: u64,
    }

    fn put_str(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    impl Writer {
        fn key(&mut self, key: &str, kind: u32) -> &mut Vec<u8> {
            self.count += 1;
            put_str(&mut self.pairs, key);
            self.pairs.extend_from_slice(&kind.to_le_bytes());
            &mut self.pairs
        }

        pub(crate) fn string(mut self, key: &str, value: &str) -> Self {
            put_str(self.key(key, 8), value);
            self
        }

        pub(crate) fn u32(mut self, key: &str, value: u32) -> Self {
            self.key(key, 4).extend_from_slice(&value.to_le_bytes());
            self
        }

        pub(crate) fn strings(mut self, key: &str, values: &[&str]) -> Self {
            let out = self.key(key, 9);
            out.extend_from_slice(&8u32.to_le_bytes());
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for v in values {
                put_str(out, v);
            }
            self
        }

        /// An array of fixed-size numbers of GGUF element type `kind`, given as their bytes.
        fn numbers<const N: usize>(
            mut self,
            key: &str,
            kind: u32,
            values: impl ExactSizeIterator<Item = [u8; N]>,
        ) -> Self {
            let out = self.key(key, 9);
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            values.for_each(|v| out.extend_from_slice(&v));
            self
        }

        pub(crate) fn i32s(self, key: &str, values: &[i32]) -> Self {
            self.numbers(key, 5, values.iter().map(|v| v.to_le_bytes()))
        }

        pub(crate) fn f32s(self, key: &str, values: &[f32]) -> Self {
            self.numbers(key, 6, values.iter().map(|v| v.to_le_bytes()))
        }

        pub(crate) fn finish(&self) -> Vec<u8> {
            let mut out = MAGIC.to_vec();
            out.extend_from_slice(&3u32.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes());
            out.extend_from_slice(&self.count.to_le_bytes());
            out.extend_from_slice(&self.pairs);
            out
        }
    }

    fn read(bytes: &[u8]) -> Result<Metadata, VocabError> {
        read_metadata(bytes, bytes.len() as u64, "test data")
    }

    #[test]
    fn reads_scalars_strings_and_arrays() {
        let bytes =
            Writer::default().string("general.architecture", "llama").u32("n", 7).i32s("ints", &[1, -2]).finish();
        let meta = read(&bytes).unwrap();
        assert_eq!(meta.pairs["general.architecture"], Value::Str("llama".into()));
        assert_eq!(meta.pairs["n"].as_u64(), Some(7));
        assert_eq!(meta.pairs["ints"], Value::Array(vec![Value::Int(1), Value::Int(-2)]));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = Writer::default().string("k", "value").strings("list", &["a", "bc"]).finish();
        for cut in 0..bytes.len() {
            let err = read(&bytes[..cut]).unwrap_err();
            assert!(matches!(err, VocabError::NotGguf { .. } | VocabError::Gguf { .. }), "cut {cut}: {err}");
        }
        assert!(read(&bytes).is_ok());
    }

    #[test]
    fn absurd_counts_are_rejected_before_allocating() {
        // An array claiming 2^60 strings in a file of a few dozen bytes.
        let mut bytes = Writer::default().strings("list", &[]).finish();
        let count_at = bytes.len() - 8;
        bytes[count_at..].copy_from_slice(&(1u64 << 60).to_le_bytes());
        let err = read(&bytes).unwrap_err().to_string();
        assert!(err.contains("truncated: an array needs 1152921504606846976 x 8 bytes"), "{err}");
        // A string claiming u64::MAX bytes.
        let mut bytes = Writer::default().string("k", "").finish();
        let len_at = bytes.len() - 8;
        bytes[len_at..].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read(&bytes).unwrap_err().to_string().contains("truncated: a string needs"));
    }

    #[test]
    fn wrong_magic_version_and_type_are_errors() {
        assert!(matches!(read(b"{\"not\": \"gguf\"}"), Err(VocabError::NotGguf { .. })));
        let mut bytes = Writer::default().finish();
        bytes[4] = 1;
        assert!(read(&bytes).unwrap_err().to_string().contains("GGUF version 1 is not supported"));
        let mut bytes = Writer::default().u32("k", 1).finish();
        let kind_at = bytes.len() - 8;
        bytes[kind_at..kind_at + 4].copy_from_slice(&99u32.to_le_bytes());
        assert!(read(&bytes).unwrap_err().to_string().contains("unknown value type 99"));
    }
}
