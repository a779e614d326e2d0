//! Hashers. In-memory maps use [`FastMap`]/[`FastSet`] (rustc-hash: fast, not DoS-resistant,
//! which is fine because keys are our own ids, never attacker-chosen strings). Keys that
//! must be identical across grammars, runs and machines (the cross-grammar cache key) use
//! [`StableHasher`], xxh3 over an explicit byte encoding.

/// A hash map with the fast in-memory hasher.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// A hash set with the fast in-memory hasher.
pub type FastSet<K> = rustc_hash::FxHashSet<K>;

/// A stable 64-bit hasher: the same sequence of writes gives the same value everywhere.
#[derive(Debug, Default, Clone)]
pub struct StableHasher {
    buf: Vec<u8>,
}

impl StableHasher {
    /// An empty hasher.
    pub fn new() -> Self {
        Self::default()
    }
    /// Feeds a `u64` (little endian).
    pub fn write_u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Feeds bytes, length-prefixed so that concatenations cannot collide.
    pub fn write_bytes(&mut self, b: &[u8]) -> &mut Self {
        self.write_u64(b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }
    /// The hash of everything fed so far.
    pub fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.buf)
    }
}

/// Feeds a JSON value to `h` without serializing it: a type tag per value, lengths before
/// strings, arrays and objects, object members in their order (property order is part of the
/// grammar). `1` and `1.0` hash differently (a missed share, never a wrong one). Iterative, so
/// deep values cannot overflow the stack.
pub fn hash_json(v: &serde_json::Value, h: &mut xxhash_rust::xxh3::Xxh3) {
    use serde_json::Value;
    let mut stack: Vec<(Option<&str>, &Value)> = vec![(None, v)];
    while let Some((key, v)) = stack.pop() {
        if let Some(k) = key {
            h.update(&(k.len() as u64).to_le_bytes());
            h.update(k.as_bytes());
        }
        match v {
            Value::Null => h.update(&[0]),
            Value::Bool(b) => h.update(&[1, *b as u8]),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    h.update(&[2]);
                    h.update(&u.to_le_bytes());
                } else if let Some(i) = n.as_i64() {
                    h.update(&[3]);
                    h.update(&i.to_le_bytes());
                } else {
                    h.update(&[4]);
                    h.update(&n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
                }
            }
            Value::String(s) => {
                h.update(&[5]);
                h.update(&(s.len() as u64).to_le_bytes());
                h.update(s.as_bytes());
            }
            Value::Array(items) => {
                h.update(&[6]);
                h.update(&(items.len() as u64).to_le_bytes());
                stack.extend(items.iter().rev().map(|x| (None, x)));
            }
            Value::Object(map) => {
                h.update(&[7]);
                h.update(&(map.len() as u64).to_le_bytes());
                let start = stack.len();
                stack.extend(map.iter().map(|(k, x)| (Some(k.as_str()), x)));
                stack[start..].reverse();
            }
        }
    }
}
