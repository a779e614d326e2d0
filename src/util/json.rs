//! Small helpers over `serde_json` values shared by the layers that read JSON (tokenizer files,
//! schemas, structural tags, cache keys).

use serde_json::Value;

/// The kind of `v` with its article, for error messages ("found a string").
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Feeds a JSON value to `h` without serializing it: a type tag per value, lengths before
/// strings, arrays and objects, object members in their order (property order is part of the
/// grammar). `1` and `1.0` hash differently (a missed share, never a wrong one). Iterative, so
/// deep values cannot overflow the stack.
pub fn hash_json(v: &Value, h: &mut xxhash_rust::xxh3::Xxh3) {
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
